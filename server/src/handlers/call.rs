//! One resource request after routing: what the handlers work from (the request, what its
//! path addresses, the resource it routed to, the caller and the query).

use super::request_info::ResourceRequest;
use crate::auth::User;
use crate::repr::{self, Format};
use crate::routes::Resource;
use keel_api::status::ApiError;
use keel_catalog::ResourceInfo;
use keel_http::Request;
use std::collections::HashMap;

/// Query parameters, the first value of each (as Go's `url.Values.Get`), but `dryRun`, which
/// upstream reads as a list.
#[derive(Debug, Default)]
pub struct Query {
    values: HashMap<String, String>,
    dry_run: Vec<String>,
    /// The options kind these parameters decode into (`CreateOptions` for a POST, ...), as
    /// upstream names it in the 422 for a bad value.
    options_kind: &'static str,
}

impl Query {
    pub fn from_request(req: &Request) -> Query {
        let mut values = HashMap::new();
        let mut dry_run = Vec::new();
        for (k, v) in req.query_pairs() {
            if k == "dryRun" {
                dry_run.push(v.clone());
            }
            values.entry(k).or_insert(v);
        }
        let options_kind = match req.method.as_str() {
            "PUT" => "UpdateOptions",
            "PATCH" => "PatchOptions",
            "DELETE" => "DeleteOptions",
            _ => "CreateOptions",
        };
        Query {
            values,
            dry_run,
            options_kind,
        }
    }

    /// Every `dryRun` value given.
    pub fn dry_run_values(&self) -> Vec<String> {
        self.dry_run.clone()
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.values.get(k).map(String::as_str)
    }

    /// Upstream's 422 for a bad value of an options parameter:
    /// `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ...`.
    pub fn invalid_option(&self, cause: keel_api::StatusCause) -> ApiError {
        let kind = if self.options_kind.is_empty() {
            "CreateOptions"
        } else {
            self.options_kind
        };
        ApiError::invalid("meta.k8s.io", kind, "", vec![cause])
    }

    /// A non-empty value.
    pub fn nonempty(&self, k: &str) -> Option<&str> {
        self.get(k).filter(|v| !v.is_empty())
    }

    /// A boolean flag as upstream decodes boolean query parameters: absent is false; present,
    /// it is true unless its value is `0` or `false` in any case (so `watch`, `watch=yes`
    /// and `watch=t` are all true).
    pub fn flag(&self, k: &str) -> bool {
        self.get(k).is_some_and(query_bool)
    }

    pub fn int(&self, k: &str) -> Result<Option<i64>, ApiError> {
        match self.nonempty(k) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!("invalid value {v:?} for query parameter {k}"))
            }),
        }
    }

    /// `dryRun`: unset, or `All` (as upstream, any other value is a 422 naming them all).
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        if self.dry_run.iter().all(|v| v == "All") {
            return Ok(!self.dry_run.is_empty());
        }
        let given = serde_json::to_string(&self.dry_run).expect("JSON");
        Err(self.invalid_option(keel_api::StatusCause {
            reason: keel_api::status::field::REASON_NOT_SUPPORTED.into(),
            message: format!("Unsupported value: {given}: supported values: \"All\""),
            field: "dryRun".into(),
        }))
    }
}

/// A present boolean query value, as upstream's `Convert_Slice_string_To_bool`: false only
/// for `0` and `false` (any case).
pub fn query_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// How unknown and duplicate fields are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn from_query(q: &Query) -> Result<FieldValidation, ApiError> {
        match q.nonempty("fieldValidation") {
            None | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(v) => Err(q.invalid_option(keel_api::status::field::not_supported(
                "fieldValidation",
                &v.into(),
                &["", "Ignore", "Strict", "Warn"],
            ))),
        }
    }
}

/// A routed resource request.
pub struct Call<'a> {
    pub req: &'a Request,
    pub rr: &'a ResourceRequest,
    /// The resource the path routed to (in the routes snapshot the request loaded).
    pub res: &'a Resource,
    pub user: &'a User,
    pub query: Query,
    /// `Warning` header values to add to the response.
    pub warnings: Vec<String>,
}

impl<'a> Call<'a> {
    pub fn info(&self) -> &ResourceInfo {
        &self.res.info
    }

    pub fn accept(&self) -> Option<&str> {
        self.req.headers.get("accept")
    }

    pub fn content_type(&self) -> Option<&str> {
        self.req.headers.get("content-type")
    }

    /// Negotiated response format for object/list responses of this resource.
    pub fn format(&self) -> Result<Format, ApiError> {
        // The common cases answer JSON whatever else is offered: skip the protobuf lookup.
        if repr::plain_json_accept(self.accept()) {
            return Ok(Format::Json);
        }
        if self.res.custom.is_some() {
            // Custom resources answer JSON (no protobuf form), but their 406 lists what
            // upstream's serializers for them offer, protobuf included and Tables not.
            return repr::negotiate(self.accept(), true, false)
                .map_err(|_| ApiError::not_acceptable(&[repr::JSON, repr::YAML, repr::PROTOBUF]));
        }
        let proto = keel_proto::supports(&self.api_version(), self.info().kind);
        repr::negotiate(self.accept(), true, proto)
    }

    pub fn api_version(&self) -> String {
        self.info().api_version()
    }

    /// The namespace of the path (empty for cluster-wide paths).
    pub fn namespace(&self) -> &str {
        &self.rr.namespace
    }

    /// The name of the path (empty on collection paths).
    pub fn name(&self) -> &str {
        &self.rr.name
    }

    /// The group-qualified resource, as error messages name it (`deployments.apps`).
    pub fn not_found(&self, name: &str) -> ApiError {
        self.res.not_found(name)
    }
}

#[cfg(test)]
mod tests {
    use super::query_bool;

    /// Upstream's reading of a present boolean query value (checked against kube-apiserver
    /// 1.36: `watch=yes`, `sendInitialEvents=f` and `sendInitialEvents=` are true).
    #[test]
    fn query_booleans_read_as_upstream() {
        for v in ["", "true", "True", "1", "yes", "no", "t", "f", "abc"] {
            assert!(query_bool(v), "{v:?}");
        }
        for v in ["0", "false", "False", "FALSE", "fAlSe"] {
            assert!(!query_bool(v), "{v:?}");
        }
    }
}
