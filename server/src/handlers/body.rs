//! Request bodies: decoding by `Content-Type` (JSON, protobuf), the object's `apiVersion` and
//! `kind` against the endpoint, and field validation (`fieldValidation`: unknown, duplicate
//! and mistyped fields as errors or warnings; unknown fields pruned).

use super::call::{Call, FieldValidation};
use crate::limits::BODY_SUMMARY_BYTES;
use crate::repr::{self, JSON, PROTOBUF};
use keel_api::status::ApiError;
use serde_json::Value;

/// Decodes a request body by its `Content-Type` into a JSON value.
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    match repr::media_of(content_type).as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}"))),
        PROTOBUF => keel_proto::decode(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding protobuf body: {e}"))),
        _ => Err(ApiError::unsupported_media_type(&[
            JSON,
            "application/yaml",
            PROTOBUF,
        ])),
    }
}

/// Decodes a create/update body, applies field validation and checks the type.
pub fn decode_object(c: &mut Call<'_>) -> Result<Value, ApiError> {
    let is_proto = c
        .content_type()
        .is_some_and(|t| t.starts_with(keel_proto::MEDIA_TYPE));
    if is_proto && !c.req.body.starts_with(&keel_proto::MAGIC) {
        return Err(unrecognized_body(c.info().kind, &c.req.body));
    }
    // A JSON body of a kind with a schema is decoded and field-checked in one pass.
    let one_pass = repr::is_json_media(c.content_type()) && schemas_know(c);
    let (mut obj, report) = if one_pass {
        let (v, r) = keel_schema::schemas()
            .decode_checked(&gvk_of(c), &c.req.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?;
        (v, Some(r))
    } else {
        (decode_body(c.content_type(), &c.req.body)?, None)
    };
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    check_type(c, &mut obj)?;
    c.res.strategy.canonicalize_input(&mut obj);
    // What upstream's decoding into its Go structs leaves out is not stored.
    keel_proto::drop_go_omitted(&mut obj);
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
        group: c.info().group,
        version: c.info().version,
        kind: c.info().kind,
    }
}

fn schemas_know(c: &Call<'_>) -> bool {
    keel_schema::schemas().knows(&gvk_of(c))
}

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
            kind = c.info().kind,
            version = c.info().version
        )));
    }
    match mode {
        FieldValidation::Strict if !report.strict.is_empty() => {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                report.strict.join(", "),
                kind = c.info().kind,
                version = c.info().version
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
