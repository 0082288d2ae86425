//! The generic registry: get, list, create, update, patch, delete and deletecollection for every
//! resource type, with the per-type policy delegated to keel-strategy.

use crate::app::App;
use crate::call::{Call, FieldValidation};
use crate::objects::{self, Spliced};
use crate::respond::{self, Format};
use crate::store::{storage_error, ReadPoint};
use keel_api::rv;
use keel_api::selectors::{FieldSelector, LabelSelector};
use keel_api::status::{ApiError, StatusCause};
use keel_engine::Error as EngineError;
use keel_http::Response;
use serde_json::{json, Value};

/// Attempts of an optimistic read-modify-write before giving up with 409.
pub const UPDATE_RETRIES_MAX: usize = 16;
/// Objects fetched per engine call while filtering a list by selectors.
pub const LIST_FILTER_BATCH: usize = 1000;
/// Items of one deletecollection request.
pub const DELETE_COLLECTION_MAX: usize = 100_000;

fn strategy_ctx() -> keel_strategy::Ctx {
    keel_strategy::Ctx {
        now_rfc3339: objects::now_rfc3339(),
    }
}

// ---------------------------------------------------------------- reads

pub async fn get(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let at = rv::plan_get(c.query.nonempty("resourceVersion"))?;
    let key = c.key(&c.rr.name);
    let kv = app
        .storage
        .get(&key, ReadPoint::from(at))
        .await?
        .ok_or_else(|| c.not_found(&c.rr.name))?;
    let info = c.info;
    let include = include_object(c)?;
    respond::object(200, format, kv.value().to_vec(), |obj| {
        keel_catalog::table(
            info,
            &[obj],
            include,
            json!({"resourceVersion": objects::meta_str(obj, "resourceVersion").unwrap_or("")}),
            std::time::SystemTime::now(),
        )
    })
}

pub fn include_object(c: &Call<'_>) -> Result<keel_catalog::IncludeObject, ApiError> {
    use keel_catalog::IncludeObject as I;
    match c.query.nonempty("includeObject") {
        None | Some("Metadata") => Ok(I::Metadata),
        Some("None") => Ok(I::None),
        Some("Object") => Ok(I::Object),
        Some(v) => Err(ApiError::bad_request(format!(
            "includeObject: unsupported value {v:?}: supported values: \"None\", \"Metadata\", \"Object\""
        ))),
    }
}

/// Label and field selectors of a list, watch or deletecollection.
pub struct Filter {
    pub labels: Option<LabelSelector>,
    pub fields: Option<FieldSelector>,
    group: &'static str,
    resource: &'static str,
}

impl Filter {
    pub fn from_call(c: &Call<'_>) -> Result<Filter, ApiError> {
        Filter::parse(
            c.query.nonempty("labelSelector"),
            c.query.nonempty("fieldSelector"),
            c.info,
        )
    }

    /// The filter of a `labelSelector` and a `fieldSelector` of `info`'s resource.
    pub fn parse(
        labels: Option<&str>,
        fields: Option<&str>,
        info: &keel_catalog::ResourceInfo,
    ) -> Result<Filter, ApiError> {
        let labels = match labels {
            Some(s) => Some(LabelSelector::parse(s)?).filter(|l| !l.is_empty()),
            None => None,
        };
        let fields = match fields {
            Some(s) => Some(FieldSelector::parse(s)?),
            None => None,
        };
        if let Some(f) = &fields {
            let supported = keel_strategy::selectable_fields(info.group, info.plural);
            for field in f.fields() {
                if !supported.contains(&field) {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {field}"
                    )));
                }
            }
        }
        Ok(Filter {
            labels,
            fields,
            group: info.group,
            resource: info.plural,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels {
            if !l.matches(objects::labels(obj)) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            let (g, r) = (self.group, self.resource);
            if !f.matches(&|field: &str| keel_strategy::field_value(g, r, obj, field)) {
                return false;
            }
        }
        true
    }

    /// A field whose exact value every object this filter selects has, with that value (the
    /// first non-negated field term, else the first label requirement naming one value), so
    /// that watches can be indexed by it. `None` when no requirement pins a value.
    pub fn exact_requirement(&self) -> Option<(Indexed, String)> {
        if let Some(t) = self
            .fields
            .as_ref()
            .and_then(|f| f.terms().iter().find(|t| !t.negated))
        {
            let field = Indexed::Field {
                group: self.group,
                resource: self.resource,
                path: t.field.clone(),
            };
            return Some((field, t.value.clone()));
        }
        use keel_api::selectors::Operator;
        self.labels.as_ref()?.requirements().iter().find_map(|r| {
            match (r.operator, r.values.as_slice()) {
                (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => {
                    Some((Indexed::Label(r.key.clone()), v.clone()))
                }
                _ => None,
            }
        })
    }

    /// Filters stored bytes: parses only when a selector is set.
    pub fn matches_bytes(&self, bytes: &[u8]) -> bool {
        if self.is_empty() {
            return true;
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.matches(&v),
            Err(_) => false,
        }
    }
}

/// A value an object can be found by: its name, a label or a selectable field. What
/// `value_of` gives is what the selectors compare (`Filter::matches`, a single-name watch).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Indexed {
    /// `metadata.name`, as a single-name watch compares it.
    Name,
    /// A label (a non-string value reads as `""`, as label selectors read it).
    Label(String),
    /// A selectable field of a resource (absent reads as `""`, as field selectors read it).
    Field {
        group: &'static str,
        resource: &'static str,
        path: String,
    },
}

impl Indexed {
    /// The object's value of this field, if it has one.
    pub fn value_of<'a>(&self, obj: &'a Value) -> Option<std::borrow::Cow<'a, str>> {
        use std::borrow::Cow;
        match self {
            Indexed::Name => Some(Cow::Borrowed(objects::name(obj))),
            Indexed::Label(key) => {
                keel_api::selectors::label_value(objects::labels(obj), key).map(Cow::Borrowed)
            }
            Indexed::Field {
                group,
                resource,
                path,
            } => Some(Cow::Owned(
                keel_strategy::field_value(group, resource, obj, path).unwrap_or_default(),
            )),
        }
    }
}

/// One page of a list, as stored bytes.
pub struct Page {
    pub items: Vec<keel_engine::KeyValue>,
    pub revision: u64,
    pub continue_token: String,
    pub remaining: Option<u64>,
}

/// Reads one page per the resourceVersion rules, filtering by selectors.
pub async fn read_page(app: &App, c: &Call<'_>, filter: &Filter) -> Result<Page, ApiError> {
    let limit = c.query.int("limit")?;
    let plan = rv::plan_list(&rv::ListRequest {
        resource_version: c.query.get("resourceVersion"),
        resource_version_match: c.query.nonempty("resourceVersionMatch"),
        limit,
        continue_token: c.query.nonempty("continue"),
    })?;
    let prefix = c.loc.list_prefix(&c.rr.namespace);
    let mut at = ReadPoint::from(plan.read);
    let mut start: Option<Vec<u8>> = plan.start_after.as_ref().map(|s| {
        let mut k = prefix.clone();
        k.extend_from_slice(s.as_bytes());
        k
    });
    let want = plan.limit.unwrap_or(0);
    let mut items = Vec::new();
    let mut revision;
    let mut more;
    let mut remaining;
    loop {
        let batch = if filter.is_empty() {
            want
        } else {
            LIST_FILTER_BATCH
        };
        let r = app
            .storage
            .list(&prefix, start.as_deref(), batch, at)
            .await
            .map_err(|e| continue_expired(e, plan.start_after.is_some()))?;
        revision = r.revision.get();
        at = ReadPoint::Exact(revision);
        more = r.more;
        remaining = r.remaining;
        let mut last_seen = None;
        let mut taken_all = true;
        let n = r.items.len();
        for (i, kv) in r.items.into_iter().enumerate() {
            if want > 0 && items.len() == want {
                taken_all = false;
                // Keys remain after the last item we return.
                remaining += (n - i) as u64;
                more = true;
                break;
            }
            if filter.matches_bytes(kv.value()) {
                items.push(kv);
                last_seen = None;
            } else {
                last_seen = Some(kv);
            }
        }
        // The last key examined: the newest kept item, or a later one the filter dropped.
        let last_key = match n {
            0 => None,
            _ => last_seen
                .as_ref()
                .or(items.last())
                .map(|kv| kv.key().to_vec()),
        };
        if !more || (want > 0 && items.len() == want) || !taken_all {
            break;
        }
        start = last_key;
        if start.is_none() {
            break;
        }
    }
    let continue_token = if more && want > 0 {
        let last = items
            .last()
            .map(|kv| kv.key()[prefix.len()..].to_vec())
            .unwrap_or_default();
        rv::encode_continue(revision, &String::from_utf8_lossy(&last))
    } else {
        String::new()
    };
    let remaining = (more && want > 0 && filter.is_empty()).then_some(remaining);
    Ok(Page {
        items,
        revision,
        continue_token,
        remaining,
    })
}

fn continue_expired(e: ApiError, with_token: bool) -> ApiError {
    if with_token && e.code == 410 {
        ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter.",
        )
    } else {
        e
    }
}

pub async fn list(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let filter = Filter::from_call(c)?;
    let page = read_page(app, c, &filter).await?;
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), page.revision.to_string().into());
    if !page.continue_token.is_empty() {
        meta.insert("continue".into(), page.continue_token.clone().into());
    }
    if let Some(r) = page.remaining {
        meta.insert("remainingItemCount".into(), r.into());
    }
    let meta = Value::Object(meta);
    let list_kind = format!("{}List", c.info.kind);
    match format {
        Format::Json => {
            let size: usize = page.items.iter().map(|kv| kv.value().len() + 1).sum();
            if size > respond::LIST_STREAM_THRESHOLD_BYTES {
                return Ok(respond::json_list_stream(
                    &c.api_version(),
                    &list_kind,
                    &meta,
                    page.items,
                ));
            }
            let body = respond::json_list(
                &c.api_version(),
                &list_kind,
                &meta,
                page.items.iter().map(|kv| kv.value()),
                size,
            );
            Ok(respond::response(200, respond::JSON, body))
        }
        Format::Protobuf => {
            let items = parse_all(&page.items)?;
            let list = json!({"kind": list_kind, "apiVersion": c.api_version(), "metadata": meta, "items": items});
            let out = keel_proto::encode(&list)
                .map_err(|e| ApiError::internal(format!("protobuf encoding: {e}")))?;
            Ok(respond::response(200, keel_proto::MEDIA_TYPE, out))
        }
        Format::Table => {
            let items = parse_all(&page.items)?;
            let refs: Vec<&Value> = items.iter().collect();
            let t = keel_catalog::table(
                c.info,
                &refs,
                include_object(c)?,
                meta,
                std::time::SystemTime::now(),
            );
            Ok(respond::response(
                200,
                respond::TABLE_MEDIA,
                serde_json::to_vec(&t).expect("JSON"),
            ))
        }
    }
}

fn parse_all(items: &[keel_engine::KeyValue]) -> Result<Vec<Value>, ApiError> {
    items
        .iter()
        .map(|kv| respond::parse_stored(kv.value()))
        .collect()
}

// ---------------------------------------------------------------- body handling

/// Decodes a create/update body, applies field validation and checks the type.
pub fn decode_object(c: &mut Call<'_>) -> Result<Value, ApiError> {
    let is_proto = c
        .content_type()
        .is_some_and(|t| t.starts_with(keel_proto::MEDIA_TYPE));
    if is_proto && !c.req.body.starts_with(&keel_proto::MAGIC) {
        return Err(unrecognized_body(c.info.kind, &c.req.body));
    }
    // A JSON body of a kind with a schema is decoded and field-checked in one pass.
    let one_pass = respond::is_json_media(c.content_type()) && schemas_know(c);
    let (mut obj, report) = if one_pass {
        let (v, r) = keel_schema::schemas()
            .decode_checked(&gvk_of(c), &c.req.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?;
        (v, Some(r))
    } else {
        (respond::decode_body(c.content_type(), &c.req.body)?, None)
    };
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    check_type(c, &mut obj)?;
    if c.info.group.is_empty() && c.info.plural == "secrets" {
        merge_string_data(&mut obj);
    }
    if let Some(report) = report {
        apply_field_report(c, &report, &mut obj)?;
        return Ok(obj);
    }
    let is_json = !c
        .content_type()
        .is_some_and(|t| t.starts_with("application/vnd.kubernetes.protobuf"));
    if is_json {
        let body = c.req.body.clone();
        validate_fields(c, &body, &mut obj)?;
    }
    Ok(obj)
}

fn gvk_of<'c>(c: &'c Call<'_>) -> keel_schema::Gvk<'c> {
    keel_schema::Gvk {
        group: c.info.group,
        version: c.info.version,
        kind: c.info.kind,
    }
}

fn schemas_know(c: &Call<'_>) -> bool {
    keel_schema::schemas().knows(&gvk_of(c))
}

/// Bytes of a body quoted in a decoding error.
const BODY_SUMMARY_BYTES: usize = 30;

/// Upstream's 400 for a protobuf body without the `k8s\0` prefix.
fn unrecognized_body(kind: &str, body: &[u8]) -> ApiError {
    let summary = match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => {
            let n = body.len().min(BODY_SUMMARY_BYTES);
            let more = if body.len() > n { " ..." } else { "" };
            format!("{}{more}", String::from_utf8_lossy(&body[..n]))
        }
        Some(_) => {
            let n = body.len().min(BODY_SUMMARY_BYTES);
            let more = if body.len() > n { " ..." } else { "" };
            format!("{}{more}", hex::encode(&body[..n]))
        }
    };
    let prefix: Vec<String> = keel_proto::MAGIC.iter().map(u8::to_string).collect();
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): provided data does not \
         appear to be a protobuf message, expected prefix [{}] ({summary})",
        prefix.join(" ")
    ))
}

/// A Secret's write-only `stringData` is merged into `data` (base64), as upstream converts it.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(sd)) = root.shift_remove("stringData") else {
        return;
    };
    let data = root.entry("data").or_insert_with(|| json!({}));
    if let Some(data) = data.as_object_mut() {
        for (k, v) in sd {
            if let Some(s) = v.as_str() {
                data.insert(
                    k,
                    base64::engine::general_purpose::STANDARD.encode(s).into(),
                );
            }
        }
    }
}

/// Checks `apiVersion`/`kind` against the endpoint, filling them in when absent.
pub fn check_type(c: &Call<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let want_av = c.api_version();
    let kind = c.info.kind;
    let root = obj.as_object_mut().expect("object");
    match root.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            root.insert("apiVersion".into(), want_av.clone().into());
        }
        Some(av) if av != want_av => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({want_av})"
            )))
        }
        _ => {}
    }
    match root.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            root.insert("kind".into(), kind.into());
        }
        Some(k) if k != kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({kind})"
            )))
        }
        _ => {}
    }
    Ok(())
}

/// Unknown, duplicate and mistyped fields per `fieldValidation`; prunes unknown fields.
pub fn validate_fields(c: &mut Call<'_>, body: &[u8], obj: &mut Value) -> Result<(), ApiError> {
    let mode = FieldValidation::from_query(&c.query)?;
    let gvk = gvk_of(c);
    let schemas = keel_schema::schemas();
    if !schemas.knows(&gvk) {
        return Ok(());
    }
    let report = schemas
        .check(&gvk, body)
        .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?;
    report_fields(c, mode, &report, obj)
}

/// `validate_fields` for a report made while decoding (the kind has a schema).
fn apply_field_report(
    c: &mut Call<'_>,
    report: &keel_schema::FieldReport,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let mode = FieldValidation::from_query(&c.query)?;
    report_fields(c, mode, report, obj)
}

/// Type errors and strict errors as 400s, warnings, and pruning of unknown fields.
fn report_fields(
    c: &mut Call<'_>,
    mode: FieldValidation,
    report: &keel_schema::FieldReport,
    obj: &mut Value,
) -> Result<(), ApiError> {
    if let Some(first) = report.type_errors.first() {
        // Upstream reports the first type error, at every validation level.
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {first}",
            kind = c.info.kind,
            version = c.info.version
        )));
    }
    match mode {
        FieldValidation::Strict if !report.strict.is_empty() => {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                report.strict.join(", "),
                kind = c.info.kind,
                version = c.info.version
            )))
        }
        FieldValidation::Warn => c.warnings.extend(report.strict.iter().cloned()),
        _ => {}
    }
    if !report.unknown.is_empty() {
        keel_schema::schemas().prune(&gvk_of(c), obj);
    }
    Ok(())
}

/// Metadata rules for a new object: namespace, name or generateName, server-set fields.
fn prepare_meta_for_create(c: &Call<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let ns = c.rr.namespace.clone();
    let m = objects::meta_mut(obj);
    if c.info.namespaced {
        match m.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                m.insert("namespace".into(), ns.into());
            }
            Some(n) if n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ))
            }
            _ => {}
        }
    } else {
        m.shift_remove("namespace");
    }
    let has_name = m
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !has_name {
        if let Some(prefix) = m
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        {
            let name = keel_api::names::generate_name(prefix);
            m.insert("name".into(), name.into());
        }
    }
    if let Some(rv) = m.get("resourceVersion").and_then(Value::as_str) {
        if !rv.is_empty() {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
    }
    m.insert("uid".into(), objects::new_uid().into());
    m.insert("creationTimestamp".into(), objects::now_rfc3339().into());
    m.shift_remove("deletionTimestamp");
    m.shift_remove("deletionGracePeriodSeconds");
    m.shift_remove("selfLink");
    Ok(())
}

/// Field errors of metadata and of the type's own rules.
fn validation_errors(c: &Call<'_>, obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut causes: Vec<StatusCause> = keel_api::names::validate_object_meta(
        obj.get("metadata").unwrap_or(&Value::Null),
        c.info.namespaced,
        name_rule(c.info),
    );
    // Object metadata was validated just above; the strategy adds the type's own rules.
    let errs = match old {
        None => keel_strategy::validate_type(c.info.group, c.info.plural, obj),
        Some(old) => keel_strategy::validate_update_type(c.info.group, c.info.plural, obj, old),
    };
    for e in errs {
        let cause = StatusCause {
            reason: e.reason.to_string(),
            message: error_body(&e.field, &e.message).to_string(),
            field: e.field,
        };
        if !causes.contains(&cause) {
            causes.push(cause);
        }
    }
    causes
}

/// A cause's message is upstream's `ErrorBody()`: the error text without its field path.
fn error_body<'m>(field: &str, message: &'m str) -> &'m str {
    message
        .strip_prefix(field)
        .and_then(|m| m.strip_prefix(": "))
        .filter(|_| !field.is_empty())
        .unwrap_or(message)
}

/// Which name format a type requires, as upstream's per-type validation.
fn name_rule(info: &keel_catalog::ResourceInfo) -> keel_api::names::NameRule {
    use keel_api::names::NameRule;
    match (info.group, info.plural) {
        ("", "namespaces") => NameRule::Dns1123Label,
        ("", "services") => NameRule::Dns1035Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

fn invalid(c: &Call<'_>, obj: &Value, causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid(c.info.group, c.info.kind, objects::name(obj), causes)
}

/// NamespaceLifecycle: the namespace must exist and not be terminating.
fn check_namespace(app: &App, c: &Call<'_>, name: &str) -> Result<(), ApiError> {
    if !c.info.namespaced || c.rr.namespace.is_empty() {
        return Ok(());
    }
    let key = app.namespace_key(&c.rr.namespace);
    let kv = app
        .storage
        .get_latest(&key)?
        .ok_or_else(|| ApiError::not_found("", "namespaces", &c.rr.namespace))?;
    if namespace_is_deleting(&key, &kv)? {
        let mut e = ApiError::forbidden_with(
            c.info.group,
            c.info.plural,
            name,
            &format!(
                "unable to create new content in namespace {} because it is being terminated",
                c.rr.namespace
            ),
        );
        e.causes.push(StatusCause {
            reason: "NamespaceTerminating".into(),
            message: format!("namespace {} is being terminated", c.rr.namespace),
            field: "metadata.namespace".into(),
        });
        return Err(e);
    }
    Ok(())
}

/// Whether the stored namespace `kv` (at `key`) is being deleted. A create reads its
/// namespace every time; the answer is remembered per thread for the version last read (a
/// version's bytes never change), so a run of creates in one namespace parses it once.
fn namespace_is_deleting(key: &[u8], kv: &keel_engine::KeyValue) -> Result<bool, ApiError> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(Vec<u8>, u64, bool)>> =
            const { std::cell::RefCell::new(None) };
    }
    let rev = kv.mod_revision.get();
    let cached = LAST.with_borrow(|last| match last {
        Some((k, r, deleting)) if *r == rev && k.as_slice() == key => Some(*deleting),
        _ => None,
    });
    if let Some(deleting) = cached {
        return Ok(deleting);
    }
    let deleting = objects::stored_is_deleting(kv.value())?;
    LAST.with_borrow_mut(|last| *last = Some((key.to_vec(), rev, deleting)));
    Ok(deleting)
}

fn with_warnings(mut r: Response, c: &Call<'_>) -> Response {
    for w in &c.warnings {
        r.headers.push((
            "Warning".into(),
            format!("299 - \"{}\"", w.replace('"', "\\\"")),
        ));
    }
    r
}

// ---------------------------------------------------------------- create

pub async fn create(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let dry_run = c.query.dry_run()?;
    let mut obj = decode_object(c)?;
    let r = create_object(app, c, &mut obj, dry_run).await?;
    let (bytes, _) = r;
    let resp = respond::object(201, format, bytes, |o| table_of(c, o))?;
    Ok(with_warnings(resp, c))
}

fn table_of(c: &Call<'_>, o: &Value) -> Value {
    keel_catalog::table(
        c.info,
        &[o],
        keel_catalog::IncludeObject::Metadata,
        json!({}),
        std::time::SystemTime::now(),
    )
}

/// The create pipeline after decoding; returns the stored bytes and revision (0 on dry run).
pub async fn create_object(
    app: &App,
    c: &Call<'_>,
    obj: &mut Value,
    dry_run: bool,
) -> Result<(Vec<u8>, u64), ApiError> {
    prepare_meta_for_create(c, obj)?;
    objects::drop_empty_meta(obj);
    let generated = objects::meta_str(obj, "name").is_none()
        || objects::meta(obj).is_some_and(|m| m.contains_key("generateName"));
    keel_strategy::prepare_for_create(c.info.group, c.info.plural, obj, &strategy_ctx());
    let causes = validation_errors(c, obj, None);
    if !causes.is_empty() {
        return Err(invalid(c, obj, causes));
    }
    check_namespace(app, c, objects::name(obj))?;
    let allocation = app.alloc.allocate(c.info, obj, dry_run)?;
    if dry_run {
        return Ok((objects::to_canonical_json(obj), 0));
    }
    let mut attempts = 0;
    loop {
        let name = objects::name(obj).to_string();
        let key = c.key(&name);
        let spliced = Spliced::new(obj);
        match app.storage.create(&key, &spliced).await {
            Ok(r) => return Ok(r),
            Err(EngineError::AlreadyExists { .. }) if generated && attempts < 8 => {
                attempts += 1;
                let prefix = objects::meta_str(obj, "generateName")
                    .unwrap_or("")
                    .to_string();
                objects::set_meta(obj, "name", keel_api::names::generate_name(&prefix).into());
            }
            Err(e) => {
                app.alloc.release(&allocation);
                return Err(match e {
                    EngineError::AlreadyExists { .. } => {
                        ApiError::already_exists(c.info.group, c.info.plural, &name)
                    }
                    other => storage_error(other),
                });
            }
        }
    }
}

// ---------------------------------------------------------------- update and patch

/// Patch media types keel accepts (server-side apply is not implemented yet).
pub const PATCH_TYPES: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// What produces the new object from the current one.
pub enum Change<'b> {
    /// PUT: a whole new object (already decoded and validated for fields).
    Replace(&'b Value),
    /// PATCH: a patch document of this media type.
    Patch { media: &'b str, body: &'b [u8] },
}

pub async fn update(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let obj = decode_object(c)?;
    if objects::name(&obj) != c.rr.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({})",
            objects::name(&obj),
            c.rr.name
        )));
    }
    if c.info.namespaced {
        if let Some(ns) = objects::meta_str(&obj, "namespace").filter(|n| !n.is_empty()) {
            if ns != c.rr.namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
    }
    let (status, bytes) = apply_change(app, c, Change::Replace(&obj)).await?;
    let resp = respond::object(status, format, bytes, |o| table_of(c, o))?;
    Ok(with_warnings(resp, c))
}

pub async fn patch(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let media = c
        .content_type()
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    match media.as_str() {
        "application/merge-patch+json"
        | "application/json-patch+json"
        | "application/strategic-merge-patch+json" => {}
        "application/apply-patch+yaml" => {
            return Err(ApiError::unsupported_media_type(&PATCH_TYPES))
        }
        _ => return Err(ApiError::unsupported_media_type(&PATCH_TYPES)),
    }
    let body = c.req.body.clone();
    let (status, bytes) = apply_change(
        app,
        c,
        Change::Patch {
            media: &media,
            body: &body,
        },
    )
    .await?;
    let resp = respond::object(status, format, bytes, |o| table_of(c, o))?;
    Ok(with_warnings(resp, c))
}

/// Applies a patch document to `current`.
fn apply_patch(c: &Call<'_>, current: &Value, media: &str, body: &[u8]) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    match media {
        "application/merge-patch+json" => {
            let mut out = current.clone();
            keel_api::patch::merge_patch(&mut out, &patch);
            Ok(out)
        }
        "application/json-patch+json" => {
            let mut out = current.clone();
            keel_api::patch::json_patch(&mut out, &patch)?;
            Ok(out)
        }
        _ => {
            let meta = crate::schema_meta::SchemaMerge {
                gvk: (c.info.group, c.info.version, c.info.kind),
            };
            keel_api::patch::strategic_merge_patch(current, &patch, &meta)
        }
    }
}

/// The read-modify-write loop shared by PUT, PATCH and subresource writes. Returns the HTTP
/// status (200, or 201 when PUT created the object) and the object's bytes.
pub async fn apply_change(
    app: &App,
    c: &mut Call<'_>,
    change: Change<'_>,
) -> Result<(u16, Vec<u8>), ApiError> {
    let dry_run = c.query.dry_run()?;
    let key = c.key(&c.rr.name);
    for _ in 0..UPDATE_RETRIES_MAX {
        let current = app.storage.get_latest(&key)?;
        let Some(current) = current else {
            return create_on_update(app, c, &change, dry_run).await;
        };
        let cur_rev = current.mod_revision.get();
        let old = respond::parse_stored(current.value())?;
        let mut new = match &change {
            Change::Replace(v) => (*v).clone(),
            Change::Patch { media, body } => {
                let mut v = apply_patch(c, &old, media, body)?;
                check_type(c, &mut v)?;
                let bytes = serde_json::to_vec(&v).expect("JSON");
                validate_fields(c, &bytes, &mut v)?;
                v
            }
        };
        // An explicit resourceVersion is a precondition.
        let wanted = objects::meta_str(&new, "resourceVersion")
            .filter(|s| !s.is_empty())
            .map(String::from);
        if let Some(w) = &wanted {
            if w != &cur_rev.to_string() {
                return Err(conflict(c));
            }
        } else if matches!(change, Change::Replace(_))
            && !keel_strategy::allow_unconditional_update(c.info.group, c.info.plural)
        {
            return Err(invalid(
                c,
                &new,
                vec![StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update".into(),
                    field: "metadata.resourceVersion".into(),
                }],
            ));
        }
        carry_server_fields(&mut new, &old);
        objects::drop_empty_meta(&mut new);
        if c.rr.subresource.is_empty() {
            keel_strategy::prepare_for_update(
                c.info.group,
                c.info.plural,
                &mut new,
                &old,
                &strategy_ctx(),
            );
        } else {
            keel_strategy::prepare_for_subresource_update(
                c.info.group,
                c.info.plural,
                &c.rr.subresource,
                &mut new,
                &old,
            );
        }
        let causes = validation_errors(c, &new, Some(&old));
        if !causes.is_empty() {
            return Err(invalid(c, &new, causes));
        }
        // No change: nothing is written and the current object is returned.
        if same_object(&new, &old) {
            return Ok((200, current.value().to_vec()));
        }
        if dry_run {
            objects::set_rv(&mut new, cur_rev);
            return Ok((200, serde_json::to_vec(&new).expect("JSON")));
        }
        // Removing the last finalizer of an object being deleted removes it.
        if objects::is_deleting(&new)
            && objects::finalizers(&new).is_empty()
            && !has_spec_finalizers(c, &new)
        {
            let spliced = Spliced::new(&mut new);
            let mut out = Vec::new();
            match app.storage.delete(&key, cur_rev).await {
                Ok(rev) => {
                    spliced.write(rev, &mut out);
                    app.alloc.release_object(c.info, &old);
                    return Ok((200, out));
                }
                Err(EngineError::Conflict { .. }) if wanted.is_none() => continue,
                Err(EngineError::Conflict { .. }) => return Err(conflict(c)),
                Err(e) => return Err(storage_error(e)),
            }
        }
        let spliced = Spliced::new(&mut new);
        match app.storage.update(&key, cur_rev, &spliced).await {
            Ok((bytes, _)) => return Ok((200, bytes)),
            Err(EngineError::Conflict { .. } | EngineError::NotFound) if wanted.is_none() => {
                continue
            }
            Err(EngineError::Conflict { .. }) => return Err(conflict(c)),
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(conflict(c))
}

fn has_spec_finalizers(c: &Call<'_>, obj: &Value) -> bool {
    c.info.group.is_empty()
        && c.info.plural == "namespaces"
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

fn conflict(c: &Call<'_>) -> ApiError {
    ApiError::conflict(
        c.info.group,
        c.info.plural,
        &c.rr.name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// Fields only the server sets are kept from the stored object.
fn carry_server_fields(new: &mut Value, old: &Value) {
    let Some(old_meta) = objects::meta(old) else {
        return;
    };
    let keep: Vec<(String, Value)> = [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ]
    .iter()
    .map(|k| (k.to_string(), old_meta.get(*k).cloned()))
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let m = objects::meta_mut(new);
    for k in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        m.shift_remove(k);
    }
    for (k, v) in keep {
        m.insert(k, v);
    }
    m.shift_remove("resourceVersion");
}

/// Equal but for `metadata.resourceVersion` and `metadata.managedFields` (compared in place,
/// without copying either object).
fn same_object(a: &Value, b: &Value) -> bool {
    const IGNORED: [&str; 2] = ["resourceVersion", "managedFields"];
    let (Some(ao), Some(bo)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    fn meta_of(o: &serde_json::Map<String, Value>) -> Option<&serde_json::Map<String, Value>> {
        o.get("metadata").and_then(Value::as_object)
    }
    let (Some(am), Some(bm)) = (meta_of(ao), meta_of(bo)) else {
        return a == b;
    };
    let kept = |m: &serde_json::Map<String, Value>| {
        m.iter()
            .filter(|(k, _)| !IGNORED.contains(&k.as_str()))
            .count()
    };
    ao.len() == bo.len()
        && ao
            .iter()
            .all(|(k, v)| k == "metadata" || bo.get(k) == Some(v))
        && kept(am) == kept(bm)
        && am
            .iter()
            .all(|(k, v)| IGNORED.contains(&k.as_str()) || bm.get(k) == Some(v))
}

async fn create_on_update(
    app: &App,
    c: &mut Call<'_>,
    change: &Change<'_>,
    dry_run: bool,
) -> Result<(u16, Vec<u8>), ApiError> {
    let Change::Replace(obj) = change else {
        return Err(c.not_found(&c.rr.name));
    };
    if !c.rr.subresource.is_empty()
        || !keel_strategy::allow_create_on_update(c.info.group, c.info.plural)
    {
        return Err(c.not_found(&c.rr.name));
    }
    let mut obj = (*obj).clone();
    objects::meta_mut(&mut obj).shift_remove("resourceVersion");
    let (bytes, _) = create_object(app, c, &mut obj, dry_run).await?;
    Ok((201, bytes))
}

// ---------------------------------------------------------------- delete

/// `DeleteOptions` from the body (JSON or protobuf) and the query.
#[derive(Debug, Default)]
pub struct DeleteOptions {
    pub grace_period: Option<i64>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub propagation: Option<String>,
    pub dry_run: bool,
}

impl DeleteOptions {
    pub fn from_call(c: &Call<'_>) -> Result<DeleteOptions, ApiError> {
        let mut o = DeleteOptions {
            grace_period: c.query.int("gracePeriodSeconds")?,
            propagation: c.query.nonempty("propagationPolicy").map(String::from),
            dry_run: c.query.dry_run()?,
            ..Default::default()
        };
        if !c.req.body.is_empty() {
            let v = respond::decode_body(c.content_type(), &c.req.body)?;
            o.merge_body(&v)?;
        }
        if let Some(p) = &o.propagation {
            if !matches!(p.as_str(), "Orphan" | "Background" | "Foreground") {
                return Err(ApiError::bad_request(format!(
                    "propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                )));
            }
        }
        Ok(o)
    }

    pub fn merge_body(&mut self, v: &Value) -> Result<(), ApiError> {
        if let Some(g) = v.get("gracePeriodSeconds").and_then(Value::as_i64) {
            self.grace_period = Some(g);
        }
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            self.propagation = Some(p.to_string());
        }
        if let Some(pre) = v.get("preconditions") {
            self.uid = pre.get("uid").and_then(Value::as_str).map(String::from);
            self.resource_version = pre
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
        }
        if let Some(d) = v.get("dryRun").and_then(Value::as_array) {
            self.dry_run |= d.iter().any(|x| x == "All");
        }
        Ok(())
    }
}

pub async fn delete(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let opts = DeleteOptions::from_call(c)?;
    let name = c.rr.name.clone();
    let bytes = delete_one(app, c.info, &c.loc, &c.rr.namespace, &name, &opts).await?;
    respond::object(200, format, bytes, |o| table_of(c, o))
}

/// Deletes one object per the two-phase rules; returns the object's last state.
pub async fn delete_one(
    app: &App,
    info: &keel_catalog::ResourceInfo,
    loc: &crate::store::Location,
    namespace: &str,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Vec<u8>, ApiError> {
    let key = loc.key(namespace, name);
    let conflict_err = |detail: String| ApiError::conflict(info.group, info.plural, name, &detail);
    for _ in 0..UPDATE_RETRIES_MAX {
        let current = app
            .storage
            .get_latest(&key)?
            .ok_or_else(|| ApiError::not_found(info.group, info.plural, name))?;
        let cur_rev = current.mod_revision.get();
        let mut obj = respond::parse_stored(current.value())?;
        if let Some(uid) = &opts.uid {
            let actual = objects::meta_str(&obj, "uid").unwrap_or("");
            if uid != actual {
                return Err(conflict_err(format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                )));
            }
        }
        if let Some(rv) = &opts.resource_version {
            if rv != &cur_rev.to_string() {
                return Err(conflict_err(format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {cur_rev}"
                )));
            }
        }
        let graceful = deletion_plan(info, &obj, opts);
        match graceful {
            Plan::Now => {
                if opts.dry_run {
                    return Ok(current.value().to_vec());
                }
                match app.storage.delete(&key, cur_rev).await {
                    Ok(_) => {
                        app.alloc.release_object(info, &obj);
                        return Ok(current.value().to_vec());
                    }
                    Err(EngineError::Conflict { .. }) => continue,
                    Err(EngineError::NotFound) => {
                        return Err(ApiError::not_found(info.group, info.plural, name))
                    }
                    Err(e) => return Err(storage_error(e)),
                }
            }
            Plan::AlreadyPending => return Ok(current.value().to_vec()),
            Plan::Mark { grace } => {
                mark_deleting(info, &mut obj, grace);
                if opts.dry_run {
                    return Ok(serde_json::to_vec(&obj).expect("JSON"));
                }
                let spliced = Spliced::new(&mut obj);
                match app.storage.update(&key, cur_rev, &spliced).await {
                    Ok((bytes, _)) => return Ok(bytes),
                    Err(EngineError::Conflict { .. } | EngineError::NotFound) => continue,
                    Err(e) => return Err(storage_error(e)),
                }
            }
        }
    }
    Err(conflict_err(
        "the object has been modified; please apply your changes to the latest version and try again".into(),
    ))
}

enum Plan {
    Now,
    AlreadyPending,
    Mark { grace: i64 },
}

fn deletion_plan(info: &keel_catalog::ResourceInfo, obj: &Value, opts: &DeleteOptions) -> Plan {
    let is_ns = info.group.is_empty() && info.plural == "namespaces";
    let is_pod = info.group.is_empty() && info.plural == "pods";
    let deleting = objects::is_deleting(obj);
    let mut finalizers = !objects::finalizers(obj).is_empty();
    if is_ns {
        finalizers |= obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
    }
    if is_pod && !finalizers {
        // A pod on a node is deleted gracefully: its kubelet finishes the deletion.
        let bound = obj
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let grace = opts.grace_period.unwrap_or_else(|| {
            obj.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(30)
        });
        let running = !matches!(
            obj.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded") | Some("Failed")
        );
        if bound && grace > 0 && running {
            let current = objects::meta(obj)
                .and_then(|m| m.get("deletionGracePeriodSeconds"))
                .and_then(Value::as_i64);
            return match current {
                Some(g) if g <= grace => Plan::AlreadyPending,
                _ => Plan::Mark { grace },
            };
        }
        return Plan::Now;
    }
    if !finalizers {
        return Plan::Now;
    }
    if deleting {
        Plan::AlreadyPending
    } else {
        Plan::Mark { grace: 0 }
    }
}

fn mark_deleting(info: &keel_catalog::ResourceInfo, obj: &mut Value, grace: i64) {
    let when = chrono::Utc::now() + chrono::Duration::seconds(grace);
    let ts = when.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let m = objects::meta_mut(obj);
    if !m.contains_key("deletionTimestamp") || grace > 0 {
        m.insert("deletionTimestamp".into(), ts.into());
    }
    m.insert("deletionGracePeriodSeconds".into(), grace.into());
    if info.group.is_empty() && info.plural == "namespaces" {
        keel_strategy::mark_terminating(obj);
    }
}

pub async fn delete_collection(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let opts = DeleteOptions::from_call(c)?;
    let filter = Filter::from_call(c)?;
    let prefix = c.loc.list_prefix(&c.rr.namespace);
    let page = app
        .storage
        .list(&prefix, None, 0, ReadPoint::Latest)
        .await?;
    if page.items.len() > DELETE_COLLECTION_MAX {
        return Err(ApiError::bad_request(format!(
            "deletecollection of more than {DELETE_COLLECTION_MAX} objects at once is refused; use a selector"
        )));
    }
    let mut deleted: Vec<Vec<u8>> = Vec::new();
    for kv in &page.items {
        if !filter.matches_bytes(kv.value()) {
            continue;
        }
        let obj = respond::parse_stored(kv.value())?;
        let ns = objects::meta_str(&obj, "namespace")
            .unwrap_or("")
            .to_string();
        match delete_one(app, c.info, &c.loc, &ns, objects::name(&obj), &opts).await {
            Ok(b) => deleted.push(b),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let meta = json!({"resourceVersion": app.storage.current().to_string()});
    let list_kind = format!("{}List", c.info.kind);
    match format {
        Format::Json => Ok(respond::response(
            200,
            respond::JSON,
            respond::json_list(
                &c.api_version(),
                &list_kind,
                &meta,
                deleted.iter().map(Vec::as_slice),
                0,
            ),
        )),
        _ => {
            let items: Result<Vec<Value>, ApiError> =
                deleted.iter().map(|b| respond::parse_stored(b)).collect();
            let list = json!({"kind": list_kind, "apiVersion": c.api_version(), "metadata": meta, "items": items?});
            respond::value(200, format, &list)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cause_messages_drop_the_field_path() {
        for (field, message, body) in [
            (
                "metadata.name",
                "metadata.name: Required value",
                "Required value",
            ),
            (
                "data[a b]",
                "data[a b]: Invalid value: \"a b\"",
                "Invalid value: \"a b\"",
            ),
            ("spec", "Invalid value: 1", "Invalid value: 1"),
            ("", ": odd", ": odd"),
            ("spec.x", "spec.xy: other field", "spec.xy: other field"),
        ] {
            assert_eq!(error_body(field, message), body, "{field} {message}");
        }
    }

    /// The comparison before it avoided copies: strip both, then compare.
    fn same_object_by_copy(a: &Value, b: &Value) -> bool {
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                m.shift_remove("resourceVersion");
                m.shift_remove("managedFields");
            }
            v
        };
        strip(a) == strip(b)
    }

    #[test]
    fn same_object_ignores_only_resource_version_and_managed_fields() {
        let base = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1",
            "labels": {"x": "y"}}, "data": {"k": "v"}});
        let cases = [
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "2",
                "labels": {"x": "y"}, "managedFields": [{}]}, "data": {"k": "v"}}),
                true,
            ),
            (
                json!({"data": {"k": "v"}, "metadata": {"labels": {"x": "y"}, "name": "a"},
                "kind": "ConfigMap"}),
                true,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "z"}},
                "data": {"k": "v"}}),
                false,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}},
                "data": {"k": "v"}, "extra": 1}),
                false,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"},
                "uid": "u"}, "data": {"k": "v"}}),
                false,
            ),
            (json!({"kind": "ConfigMap", "data": {"k": "v"}}), false),
            (
                json!({"kind": "ConfigMap", "metadata": "odd", "data": {"k": "v"}}),
                false,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}},
                "data": {"k": "w"}}),
                false,
            ),
            (json!([1]), false),
        ];
        for (other, want) in cases {
            assert_eq!(same_object(&base, &other), want, "{other}");
            assert_eq!(same_object(&other, &base), want, "{other}");
            assert_eq!(same_object_by_copy(&base, &other), want, "{other}");
        }
        let odd = json!({"metadata": "odd"});
        assert!(same_object(&odd, &odd.clone()));
        assert_eq!(
            same_object(&json!(1), &json!(1)),
            same_object_by_copy(&json!(1), &json!(1))
        );
    }

    #[test]
    fn protobuf_bodies_without_prefix_are_summarized() {
        let e = unrecognized_body("ConfigMap", b"");
        assert!(e
            .message
            .ends_with("expected prefix [107 56 115 0] (<empty>)"));
        let e = unrecognized_body("Pod", &[1, 2, 255]);
        assert!(e
            .message
            .starts_with("the object provided is unrecognized (must be of type Pod)"));
        assert!(e.message.ends_with("(0102ff)"), "{}", e.message);
        let long = vec![b'{'; 40];
        let e = unrecognized_body("Pod", &long);
        assert!(e.message.ends_with(&format!("({} ...)", "{".repeat(30))));
        assert_eq!(e.code, 400);
    }
}
