//! Kubernetes `metav1.Status` errors: the single mapping from API failures to the status object
//! clients decode. Constructors reproduce upstream's codes, reasons and message shapes, which
//! clients (kubectl, client-go, the Python client) match on.

pub mod field;

use crate::gofmt;
use keel_revision::Revision;
use serde_json::{json, Map, Value};

/// One entry of `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCause {
    /// Machine-readable cause (`FieldValueInvalid`, ...); serialized as `reason`.
    pub reason: String,
    /// Human-readable description, without the field path.
    pub message: String,
    /// Field path the cause refers to (`metadata.name`), may be empty.
    pub field: String,
}

/// A failed API call, rendered as a `Status` object with `status: Failure`.
///
/// `group`, `kind`, `name` and `retry_after_seconds` are `Some` exactly when upstream sets a
/// `details` object; empty strings inside it are omitted on output, like Go's `omitempty`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `StatusReason`; empty for upstream's `StatusReasonUnknown` (then omitted on output).
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (upstream puts the *resource* here for most errors).
    pub kind: Option<String>,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.causes`.
    pub causes: Vec<StatusCause>,
    /// `details.retryAfterSeconds`; also what the `Retry-After` header should carry.
    pub retry_after_seconds: Option<u64>,
}

/// `group` and `resource` joined as upstream's `GroupResource.String()`: `pods`, `deployments.apps`.
pub fn group_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    fn plain(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            group: None,
            kind: None,
            name: None,
            causes: Vec::new(),
            retry_after_seconds: None,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.group = Some(group.to_string());
        self.kind = Some(kind.to_string());
        self.name = Some(name.to_string());
        self
    }

    /// 404 NotFound: `pods "x" not found`, `deployments.apps "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let msg = format!(
            "{} {} not found",
            group_resource(group, resource),
            gofmt::quote(name)
        );
        Self::plain(404, "NotFound", msg).with_details(group, resource, name)
    }

    /// 409 AlreadyExists: `pods "x" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let msg = format!(
            "{} {} already exists",
            group_resource(group, resource),
            gofmt::quote(name)
        );
        Self::plain(409, "AlreadyExists", msg).with_details(group, resource, name)
    }

    /// 409 Conflict: `Operation cannot be fulfilled on pods "x": <detail>`.
    pub fn conflict(group: &str, resource: &str, name: &str, detail: &str) -> Self {
        let msg = format!(
            "Operation cannot be fulfilled on {} {}: {detail}",
            group_resource(group, resource),
            gofmt::quote(name)
        );
        Self::plain(409, "Conflict", msg).with_details(group, resource, name)
    }

    /// The optimistic-concurrency conflict every update with a stale `resourceVersion` gets.
    pub fn stale_update(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid: `Pod "x" is invalid: <field>: <body>` (several causes are joined as
    /// `[a, b]` after dropping duplicate texts, as upstream's error aggregate does).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let qualified_kind = group_resource(group, kind);
        let msg = match field::aggregate(&causes) {
            None => format!("{qualified_kind} {} is invalid", gofmt::quote(name)),
            Some(agg) => format!("{qualified_kind} {} is invalid: {agg}", gofmt::quote(name)),
        };
        let mut err = Self::plain(422, "Invalid", msg).with_details(group, kind, name);
        err.causes = causes;
        err
    }

    /// 422 for an update without `metadata.resourceVersion` of a type that requires one.
    /// Upstream names the *resource* where the kind belongs
    /// (`customresourcedefinitions.apiextensions.k8s.io "x" is invalid: ...`) and prints the
    /// missing version as Go's `%#v` of a `uint64` zero (`0x0`).
    pub fn resource_version_required(group: &str, resource: &str, name: &str) -> Self {
        let cause = StatusCause {
            reason: field::REASON_INVALID.into(),
            message: "Invalid value: 0x0: must be specified for an update".into(),
            field: "metadata.resourceVersion".into(),
        };
        Self::invalid(group, resource, name, vec![cause])
    }

    /// 400 BadRequest with `msg` as message.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::plain(400, "BadRequest", msg)
    }

    /// 410 Gone (deprecated upstream in favour of [`ApiError::expired`]).
    pub fn gone(msg: impl Into<String>) -> Self {
        Self::plain(410, "Gone", msg)
    }

    /// 410 Expired: requested content is no longer held (too old resource version).
    pub fn expired(msg: impl Into<String>) -> Self {
        Self::plain(410, "Expired", msg)
    }

    /// 410 Expired for a watch older than the retained history, as upstream's watch cache
    /// words it: `too old resource version: <requested> (<oldest_start>)`, where
    /// `oldest_start` is the oldest resourceVersion a watch can still start from (upstream
    /// prints its oldest buffered event's version minus one; keel's engine reports exactly
    /// that revision as `Compacted { compacted, .. }`).
    pub fn too_old_resource_version(requested: Revision, oldest_start: Revision) -> Self {
        Self::expired(format!(
            "too old resource version: {requested} ({oldest_start})"
        ))
    }

    /// 410 Expired for a list at an exact (or paged) resourceVersion whose snapshot was
    /// compacted away: what upstream's storage answers for such a list.
    pub fn list_resource_version_expired() -> Self {
        Self::expired("The resourceVersion for the provided list is too old.")
    }

    /// 410 Expired for a continue token whose snapshot was compacted away. This is upstream's
    /// text for a compacted continue token when it hands out no fresh token; upstream also
    /// has a longer text for the case where it returns a token that resumes at the latest
    /// state (`rv: -1`), which keel's tokens do not support yet.
    pub fn continue_token_expired() -> Self {
        Self::expired(
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter.",
        )
    }

    /// 405 MethodNotAllowed: `<action> is not supported on resources of kind "pods/log"`.
    pub fn method_not_supported(group: &str, resource: &str, action: &str) -> Self {
        let msg = format!(
            "{action} is not supported on resources of kind {}",
            gofmt::quote(&group_resource(group, resource))
        );
        let mut err = Self::plain(405, "MethodNotAllowed", msg);
        err.group = Some(group.to_string());
        err.kind = Some(resource.to_string());
        err
    }

    /// What upstream's router answers for a path or method no route takes: a fixed text per
    /// code and an empty (but present) `details` object.
    fn unmatched_route(code: u16, reason: &'static str, message: &str) -> Self {
        let mut err = Self::plain(code, reason, message);
        err.group = Some(String::new());
        err.kind = Some(String::new());
        err.name = Some(String::new());
        err
    }

    /// 405 MethodNotAllowed for a path whose routes do not take the request's method.
    pub fn method_not_allowed() -> Self {
        Self::unmatched_route(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 404 NotFound for a path under a served API group version that names no resource.
    /// (Paths outside every served group get upstream's plain-text `404 page not found`.)
    pub fn route_not_found() -> Self {
        Self::unmatched_route(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 406 NotAcceptable: `only the following media types are accepted: a, b`.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        let msg = format!(
            "only the following media types are accepted: {}",
            accepted.join(", ")
        );
        Self::plain(406, "NotAcceptable", msg)
    }

    /// 406 NotAcceptable with a message of its own (a representation that cannot be given for
    /// this response).
    pub fn not_acceptable_message(message: impl Into<String>) -> Self {
        Self::plain(406, "NotAcceptable", message)
    }

    /// 415 UnsupportedMediaType. Upstream's message lists what *is* accepted:
    /// `the body of the request was in an unknown format - accepted media types include: a, b`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        let msg = format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        );
        Self::plain(415, "UnsupportedMediaType", msg)
    }

    /// 429 TooManyRequests with `details.retryAfterSeconds` (and the `Retry-After` header).
    pub fn too_many_requests(retry_after_seconds: u64) -> Self {
        let mut err = Self::plain(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        );
        err.retry_after_seconds = Some(retry_after_seconds);
        err
    }

    /// 429 TooManyRequests with a caller-supplied message (upstream's `NewTooManyRequests`),
    /// e.g. for a limit other than the in-flight request limit.
    pub fn too_many_requests_with(message: impl Into<String>, retry_after_seconds: u64) -> Self {
        let mut err = Self::plain(429, "TooManyRequests", message);
        err.retry_after_seconds = Some(retry_after_seconds);
        err
    }

    /// 503 ServiceUnavailable with `msg` as message and no details.
    pub fn service_unavailable(msg: impl Into<String>) -> Self {
        Self::plain(503, "ServiceUnavailable", msg)
    }

    /// 413 RequestEntityTooLarge: `Request entity too large: <msg>`.
    pub fn request_entity_too_large(msg: impl AsRef<str>) -> Self {
        Self::plain(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {}", msg.as_ref()),
        )
    }

    /// 401 Unauthorized, as the authentication filter answers.
    pub fn unauthorized() -> Self {
        Self::plain(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden as the authorization filter answers, e.g.
    /// `pods "x" is forbidden: User "bob" cannot get resource "pods" in API group "" in the
    /// namespace "default"`. `resource` may carry a subresource (`pods/log`).
    pub fn forbidden(
        user: &str,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        let scope = match namespace.filter(|ns| !ns.is_empty()) {
            Some(ns) => format!("in the namespace {}", gofmt::quote(ns)),
            None => "at the cluster scope".to_string(),
        };
        let reason = format!(
            "User {} cannot {verb} resource {} in API group {} {scope}",
            gofmt::quote(user),
            gofmt::quote(resource),
            gofmt::quote(group)
        );
        let name = name.unwrap_or("");
        Self::forbidden_with(group, resource, name, &reason)
    }

    /// 403 Forbidden with a caller-supplied reason: `<gr> "<name>" is forbidden: <reason>`.
    pub fn forbidden_with(group: &str, resource: &str, name: &str, reason: &str) -> Self {
        let gr = group_resource(group, resource);
        let msg = match (gr.is_empty(), name.is_empty()) {
            (true, _) => format!("forbidden: {reason}"),
            (false, true) => format!("{gr} is forbidden: {reason}"),
            (false, false) => format!("{gr} {} is forbidden: {reason}", gofmt::quote(name)),
        };
        Self::plain(403, "Forbidden", msg).with_details(group, resource, name)
    }

    /// 403 Forbidden from the NamespaceLifecycle admission plugin: a create in a namespace
    /// that is being deleted, with the `NamespaceTerminating` cause clients look for.
    pub fn namespace_terminating(group: &str, resource: &str, name: &str, namespace: &str) -> Self {
        let mut err = Self::forbidden_with(
            group,
            resource,
            name,
            &format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
        );
        err.causes.push(StatusCause {
            reason: NAMESPACE_TERMINATING_CAUSE.into(),
            message: format!("namespace {namespace} is being terminated"),
            field: "metadata.namespace".into(),
        });
        err
    }

    /// 500 InternalError: `Internal error occurred: <msg>`, with the message as a cause.
    pub fn internal(msg: impl AsRef<str>) -> Self {
        let msg = msg.as_ref();
        let mut err = Self::plain(
            500,
            "InternalError",
            format!("Internal error occurred: {msg}"),
        );
        err.causes.push(StatusCause {
            reason: String::new(),
            message: msg.to_string(),
            field: String::new(),
        });
        err
    }

    /// A status with upstream's `StatusReasonUnknown` (no `reason` on the wire): what upstream
    /// answers for plain (non-status) Go errors, e.g. code 500 with the error text.
    pub fn unknown(code: u16, msg: impl Into<String>) -> Self {
        Self::plain(code, "", msg)
    }

    /// 504 Timeout: `Timeout: <msg>`.
    pub fn timeout(msg: impl AsRef<str>) -> Self {
        let mut err = Self::plain(504, "Timeout", format!("Timeout: {}", msg.as_ref()));
        err.retry_after_seconds = Some(0);
        err
    }

    /// 504 Timeout for a resource version the server has not reached yet:
    /// `Timeout: Too large resource version: <requested>, current: <current>`, cause
    /// `ResourceVersionTooLarge`, `retryAfterSeconds: 1`.
    pub fn too_large_resource_version(requested: Revision, current: Revision) -> Self {
        let mut err = Self::timeout(format!(
            "Too large resource version: {requested}, current: {current}"
        ));
        err.retry_after_seconds = Some(TOO_LARGE_RESOURCE_VERSION_RETRY_SECONDS);
        err.causes.push(StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        });
        err
    }

    /// 422 with upstream's generic "rejected" message and an empty `details` object, as the
    /// patch handler answers when a JSON patch cannot be applied.
    pub fn unprocessable_generic() -> Self {
        let mut err = Self::plain(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        );
        err.group = Some(String::new());
        err.kind = Some(String::new());
        err.name = Some(String::new());
        err
    }

    fn has_details(&self) -> bool {
        self.group.is_some()
            || self.kind.is_some()
            || self.name.is_some()
            || !self.causes.is_empty()
            || self.retry_after_seconds.is_some()
    }

    fn details_value(&self) -> Value {
        let mut d = Map::new();
        put_nonempty(&mut d, "name", self.name.as_deref());
        put_nonempty(&mut d, "group", self.group.as_deref());
        put_nonempty(&mut d, "kind", self.kind.as_deref());
        if !self.causes.is_empty() {
            let causes = self.causes.iter().map(cause_value).collect();
            d.insert("causes".into(), Value::Array(causes));
        }
        if let Some(secs) = self.retry_after_seconds.filter(|s| *s > 0) {
            d.insert("retryAfterSeconds".into(), json!(secs));
        }
        Value::Object(d)
    }

    /// The `Status` object as a JSON value.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), json!("Status"));
        m.insert("apiVersion".into(), json!("v1"));
        m.insert("metadata".into(), json!({}));
        m.insert("status".into(), json!("Failure"));
        put_nonempty(&mut m, "message", Some(&self.message));
        put_nonempty(&mut m, "reason", Some(self.reason));
        if self.has_details() {
            m.insert("details".into(), self.details_value());
        }
        m.insert("code".into(), json!(self.code));
        Value::Object(m)
    }

    /// The `Status` object serialized with upstream's field order
    /// (kind, apiVersion, metadata, status, message, reason, details, code).
    pub fn to_json(&self) -> Vec<u8> {
        let mut out =
            String::from(r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure""#);
        if !self.message.is_empty() {
            out.push_str(",\"message\":");
            out.push_str(&json_string(&self.message));
        }
        if !self.reason.is_empty() {
            out.push_str(",\"reason\":");
            out.push_str(&json_string(self.reason));
        }
        if self.has_details() {
            out.push_str(",\"details\":");
            out.push_str(&self.details_json());
        }
        out.push_str(&format!(",\"code\":{}}}", self.code));
        out.into_bytes()
    }

    fn details_json(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        for (key, val) in [
            ("name", &self.name),
            ("group", &self.group),
            ("kind", &self.kind),
        ] {
            if let Some(v) = val.as_deref().filter(|v| !v.is_empty()) {
                parts.push(format!("\"{key}\":{}", json_string(v)));
            }
        }
        if !self.causes.is_empty() {
            let causes: Vec<String> = self.causes.iter().map(cause_json).collect();
            parts.push(format!("\"causes\":[{}]", causes.join(",")));
        }
        if let Some(secs) = self.retry_after_seconds.filter(|s| *s > 0) {
            parts.push(format!("\"retryAfterSeconds\":{secs}"));
        }
        format!("{{{}}}", parts.join(","))
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// Cause reason of a create refused because its namespace is being deleted.
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// Seconds upstream asks clients to wait after a "Too large resource version" answer.
pub const TOO_LARGE_RESOURCE_VERSION_RETRY_SECONDS: u64 = 1;

fn put_nonempty(m: &mut Map<String, Value>, key: &str, val: Option<&str>) {
    if let Some(v) = val.filter(|v| !v.is_empty()) {
        m.insert(key.to_string(), Value::String(v.to_string()));
    }
}

fn cause_value(c: &StatusCause) -> Value {
    let mut m = Map::new();
    put_nonempty(&mut m, "reason", Some(&c.reason));
    put_nonempty(&mut m, "message", Some(&c.message));
    put_nonempty(&mut m, "field", Some(&c.field));
    Value::Object(m)
}

fn cause_json(c: &StatusCause) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (key, val) in [
        ("reason", &c.reason),
        ("message", &c.message),
        ("field", &c.field),
    ] {
        if !val.is_empty() {
            parts.push(format!("\"{key}\":{}", json_string(val)));
        }
    }
    format!("{{{}}}", parts.join(","))
}

fn json_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// The `Status` with `status: Success` that upstream's generic store returns from a delete of a
/// type that does not return the deleted object (details carry the *resource* as `kind`).
pub fn success_status(group: &str, resource: &str, name: &str, uid: Option<&str>) -> Value {
    let mut details = Map::new();
    put_nonempty(&mut details, "name", Some(name));
    put_nonempty(&mut details, "group", Some(group));
    put_nonempty(&mut details, "kind", Some(resource));
    put_nonempty(&mut details, "uid", uid);
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": Value::Object(details),
    })
}

#[cfg(test)]
mod tests;
