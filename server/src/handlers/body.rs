//! Request bodies: decoding by `Content-Type` (JSON, YAML, protobuf), the object's
//! `apiVersion` and `kind` against the endpoint, and field validation (`fieldValidation`:
//! unknown, duplicate and mistyped fields as errors or warnings; unknown fields pruned). A YAML
//! body is turned into JSON first (bounded: `YAML_BODY_VALUES_MAX`) and takes the JSON path
//! from there, as upstream's YAML serializer hands the JSON serializer `YAMLToJSON`'s output.

use super::call::{Call, FieldValidation};
use crate::limits::{BODY_SUMMARY_BYTES, YAML_BODY_VALUES_MAX};
use crate::repr::{self, JSON, PROTOBUF, YAML};
use keel_api::status::ApiError;
use serde_json::Value;

/// The body media types accepted (the 415's list).
pub const BODY_TYPES: [&str; 3] = [JSON, YAML, PROTOBUF];

/// Decodes a request body by its `Content-Type` into a JSON value.
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    match repr::media_of(content_type).as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}"))),
        YAML => keel_api::yaml::decode(body, YAML_BODY_VALUES_MAX)
            .map(|d| d.value)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}"))),
        PROTOBUF => keel_proto::decode(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding protobuf body: {e}"))),
        _ => Err(ApiError::unsupported_media_type(&BODY_TYPES)),
    }
}

/// Decodes a create/update body, applies field validation and checks the type.
pub fn decode_object(c: &mut Call<'_>) -> Result<Value, ApiError> {
    let req = c.req;
    match repr::media_of(c.content_type()).as_str() {
        "" | "application/json" | "*/*" => decode_json_object(c, &req.body, None),
        YAML => {
            let (json, duplicate) = yaml_as_json(c.info().kind, &req.body)?;
            decode_json_object(c, &json, duplicate)
        }
        PROTOBUF => {
            if !req.body.starts_with(&keel_proto::MAGIC) {
                return Err(unrecognized_body(c.info().kind, &req.body));
            }
            let mut obj = decode_body(c.content_type(), &req.body)?;
            if !obj.is_object() {
                return Err(not_an_object(c.info().kind, &obj, &req.body));
            }
            check_type(c, &mut obj)?;
            c.res.strategy.canonicalize_input(&mut obj);
            Ok(obj)
        }
        _ => Err(ApiError::unsupported_media_type(&BODY_TYPES)),
    }
}

/// A YAML body as the JSON body it stands for, and the first key it sets twice (go-yaml's
/// `line N: key "k" already set in map`, a strict-decoding finding).
fn yaml_as_json(kind: &str, body: &[u8]) -> Result<(Vec<u8>, Option<String>), ApiError> {
    let doc = keel_api::yaml::decode(body, YAML_BODY_VALUES_MAX).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {e} ({})",
            summary(body)
        ))
    })?;
    let json = serde_json::to_vec(&doc.value).expect("JSON");
    Ok((json, doc.duplicate))
}

/// A JSON create/update body (or a YAML one turned into JSON): a kind with a schema is
/// decoded and field-checked in one pass.
fn decode_json_object(
    c: &mut Call<'_>,
    body: &[u8],
    yaml_duplicate: Option<String>,
) -> Result<Value, ApiError> {
    let gvk = gvk_of(c);
    let schemas = keel_schema::schemas();
    let (mut obj, report) = if schemas.knows(&gvk) {
        schemas
            .decode_checked(&gvk, body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?
    } else {
        let v = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?;
        (v, keel_schema::FieldReport::default())
    };
    if obj.is_null() {
        // As upstream: `null` (or an empty YAML document) decodes to an empty object.
        obj = Value::Object(Default::default());
    }
    if !obj.is_object() {
        // Quoted as the client sent it (YAML too).
        return Err(not_an_object(c.info().kind, &obj, &c.req.body));
    }
    check_type(c, &mut obj)?;
    c.res.strategy.canonicalize_input(&mut obj);
    let mode = FieldValidation::from_query(&c.query)?;
    report_fields(c, mode, &report, yaml_duplicate, &mut obj, Decoding::Body)?;
    custom_fields(c, mode, &mut obj, Decoding::Body)?;
    // What upstream's decoding into its Go structs leaves out is not stored.
    keel_proto::drop_go_omitted(&mut obj);
    Ok(obj)
}

/// A custom resource as upstream decodes it: what its schema does not know is pruned (an
/// error under `fieldValidation=Strict`, a warning each under `Warn`, as upstream's strict
/// decoding reports it) and its schema's defaults are applied.
fn custom_fields(
    c: &mut Call<'_>,
    mode: FieldValidation,
    obj: &mut Value,
    decoding: Decoding,
) -> Result<(), ApiError> {
    let Some(custom) = c.res.custom.clone() else {
        return Ok(());
    };
    check_custom_metadata(c, obj, decoding)?;
    let unknown: Vec<String> = custom
        .decode(obj)
        .into_iter()
        .map(|path| format!("unknown field {}", keel_api::gofmt::quote(&path)))
        .collect();
    match mode {
        FieldValidation::Strict if !unknown.is_empty() => Err(strict_decoding_error(c, &unknown)),
        FieldValidation::Warn => {
            c.warnings.extend(unknown);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The ObjectMeta upstream decodes a custom resource's `metadata` into, on its own.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A custom resource's `metadata` must decode as an ObjectMeta (a label that is a number is
/// upstream's 400, with Go's paths from ObjectMeta: `ObjectMeta.labels`).
fn check_custom_metadata(c: &Call<'_>, obj: &Value, decoding: Decoding) -> Result<(), ApiError> {
    let Some(meta) = obj.get("metadata") else {
        return Ok(());
    };
    if !meta.is_object() && !meta.is_null() {
        let why = format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            json_kind(meta)
        );
        return Err(decoding.type_error(c, obj, &why));
    }
    match keel_schema::schemas()
        .type_errors_as(OBJECT_META, meta)
        .first()
    {
        Some(first) => Err(decoding.type_error(c, obj, first)),
        None => Ok(()),
    }
}

/// What an object being field-checked came from, which decides how a value that does not
/// decode into its Go type is answered.
#[derive(Clone, Copy)]
pub enum Decoding {
    /// A request body: 400, `<Kind> in version "v1" cannot be handled as a <Kind>: ...`.
    Body,
    /// The result of a patch: upstream's 422 on the field `patch`, quoting the patched
    /// object as Go's `encoding/json` writes a map (keys sorted, HTML characters escaped).
    Patch,
}

impl Decoding {
    fn type_error(self, c: &Call<'_>, obj: &Value, why: &str) -> ApiError {
        match self {
            Decoding::Body => cannot_handle(c, why),
            Decoding::Patch => {
                let mut patched = String::new();
                keel_api::gofmt::json_to(
                    &mut patched,
                    obj,
                    keel_api::gofmt::JsonStyle {
                        numbers: keel_api::gofmt::json_stored_number_to,
                        escape: keel_api::gofmt::JsonEscape::Go122,
                        sort_keys: true,
                        depth_max: usize::MAX,
                    },
                );
                let cause = keel_api::status::field::invalid_str("patch", &patched, why);
                ApiError::invalid("", "", "", vec![cause])
            }
        }
    }
}

/// Upstream's 400 for a body its decoder could not take as the endpoint's kind.
fn cannot_handle(c: &Call<'_>, why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {why}",
        kind = c.info().kind,
        version = c.info().version
    ))
}

/// [`cannot_handle`] for strict decoding's findings (unknown and duplicate fields).
fn strict_decoding_error(c: &Call<'_>, findings: &[String]) -> ApiError {
    cannot_handle(
        c,
        &format!("strict decoding error: {}", findings.join(", ")),
    )
}

/// How Go's decoder names a JSON value's kind in its errors (`cannot unmarshal array`).
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        _ => "object",
    }
}

/// Upstream's 400 for a body that is JSON (or YAML) but not an object: it could not read
/// the `apiVersion` and `kind` out of it.
fn not_an_object(kind: &str, v: &Value, body: &[u8]) -> ApiError {
    let what = json_kind(v);
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): couldn't get \
         version/kind; json parse error: json: cannot unmarshal {what} into Go value of type \
         struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \
         \"json:\\\"kind,omitempty\\\"\" }} ({})",
        summary(body)
    ))
}

fn gvk_of<'c>(c: &'c Call<'_>) -> keel_schema::Gvk<'c> {
    keel_schema::Gvk {
        group: c.info().group,
        version: c.info().version,
        kind: c.info().kind,
    }
}

/// Upstream's 400 for a protobuf body without the `k8s\0` prefix.
fn unrecognized_body(kind: &str, body: &[u8]) -> ApiError {
    let summary = summary(body);
    let prefix: Vec<String> = keel_proto::MAGIC.iter().map(u8::to_string).collect();
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): provided data does not \
         appear to be a protobuf message, expected prefix [{}] ({summary})",
        prefix.join(" ")
    ))
}

/// A body as upstream quotes it in a decoding error: its first bytes, as text when it looks
/// like JSON, in hex otherwise.
fn summary(body: &[u8]) -> String {
    let n = body.len().min(BODY_SUMMARY_BYTES);
    let more = if body.len() > n { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(&body[..n])),
        Some(_) => format!("{}{more}", hex::encode(&body[..n])),
    }
}

/// Checks `apiVersion`/`kind` against the endpoint, filling them in when absent.
pub fn check_type(c: &Call<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let want_av = c.api_version();
    let kind = c.info().kind;
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
/// `body` is `obj` as JSON; `decoding` says where it came from.
pub fn validate_fields(
    c: &mut Call<'_>,
    body: &[u8],
    obj: &mut Value,
    decoding: Decoding,
) -> Result<(), ApiError> {
    let mode = FieldValidation::from_query(&c.query)?;
    if c.res.custom.is_some() {
        return custom_fields(c, mode, obj, decoding);
    }
    let gvk = gvk_of(c);
    let schemas = keel_schema::schemas();
    if !schemas.knows(&gvk) {
        return Ok(());
    }
    let report = schemas
        .check(&gvk, body)
        .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?;
    report_fields(c, mode, &report, None, obj, decoding)
}

/// A JSON body of a kind with a published schema, decoded and field-checked in one pass:
/// the object, and whether field validation would report nothing in it (no unknown or
/// duplicate field, no type error). `None` when the body is not a JSON object or the kind
/// has no published schema (the caller decodes it as it otherwise would, and cannot tell).
/// The schema-directed check of a second pass was a ninth of a 10 KiB apply's instructions.
pub fn decode_clean_json(c: &Call<'_>, body: &[u8]) -> Option<(Value, bool)> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let schemas = keel_schema::schemas();
    let gvk = gvk_of(c);
    if !schemas.knows(&gvk) {
        return None;
    }
    match schemas.decode_checked(&gvk, body) {
        Ok((v @ Value::Object(_), report)) => Some((v, report.is_clean())),
        _ => None,
    }
}

/// Type errors and strict errors as 400s, warnings, and pruning of unknown fields.
/// `yaml_duplicate` is a YAML body's key set twice, which upstream's YAML decoder reports
/// before the JSON findings (`yaml: unmarshal errors:\n  line 7: key "a" already set in map`).
fn report_fields(
    c: &mut Call<'_>,
    mode: FieldValidation,
    report: &keel_schema::FieldReport,
    yaml_duplicate: Option<String>,
    obj: &mut Value,
    decoding: Decoding,
) -> Result<(), ApiError> {
    if let Some(first) = report.type_errors.first() {
        // Upstream reports the first type error, at every validation level.
        return Err(decoding.type_error(c, obj, first));
    }
    match mode {
        FieldValidation::Strict if !report.strict.is_empty() || yaml_duplicate.is_some() => {
            let mut findings: Vec<String> = yaml_duplicate
                .map(|d| format!("yaml: unmarshal errors:\n  {d}"))
                .into_iter()
                .collect();
            findings.extend(report.strict.iter().cloned());
            return Err(strict_decoding_error(c, &findings));
        }
        FieldValidation::Warn => {
            c.warnings.extend(yaml_duplicate);
            c.warnings.extend(report.strict.iter().cloned())
        }
        _ => {}
    }
    if !report.unknown.is_empty() {
        keel_schema::schemas().prune(&gvk_of(c), obj);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_decoding() {
        assert!(decode_body(Some("application/json"), b"{\"a\":1}").is_ok());
        assert_eq!(
            decode_body(Some("application/json"), b"{")
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(decode_body(Some("text/plain"), b"x").unwrap_err().code, 415);
        assert_eq!(
            decode_body(Some("application/vnd.kubernetes.protobuf"), b"nope")
                .unwrap_err()
                .code,
            400
        );
    }

    /// serde_json's `from_slice` (vendored: valid UTF-8 read as a `str`) still refuses a
    /// string that is not UTF-8, at that byte, and reads non-ASCII text and escapes as
    /// before.
    #[test]
    fn json_bodies_are_checked_for_utf8() {
        let e = decode_body(Some("application/json"), b"{\"a\":\"x\xff\"}").unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .contains("invalid unicode code point at line 1 column 8"),
            "{}",
            e.message
        );
        let v = decode_body(
            Some("application/json"),
            "{\"a\":\"日本\\u00e9\\n\",\"é\":[\"\\ud83d\\ude00\"]}".as_bytes(),
        )
        .unwrap();
        assert_eq!(v, serde_json::json!({"a": "日本é\n", "é": ["😀"]}));
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
