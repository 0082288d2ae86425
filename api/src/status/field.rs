//! Field-level validation errors (`field.Error` upstream), as [`StatusCause`] values.
//!
//! A cause's `message` is the error body without the field path (what upstream puts into
//! `details.causes[].message`); [`super::ApiError::invalid`] joins path and body into the
//! aggregated message.

use super::StatusCause;
use crate::gofmt;
use serde_json::Value;

/// Cause reason: a value that is required is missing.
pub const REASON_REQUIRED: &str = "FieldValueRequired";
/// Cause reason: a malformed value.
pub const REASON_INVALID: &str = "FieldValueInvalid";
/// Cause reason: a value outside an enumeration.
pub const REASON_NOT_SUPPORTED: &str = "FieldValueNotSupported";
/// Cause reason: a value that must be unique is repeated.
pub const REASON_DUPLICATE: &str = "FieldValueDuplicate";
/// Cause reason: a value not permitted under the current conditions.
pub const REASON_FORBIDDEN: &str = "FieldValueForbidden";
/// Cause reason: a value longer than allowed.
pub const REASON_TOO_LONG: &str = "FieldValueTooLong";
/// Cause reason: a list with too many items.
pub const REASON_TOO_MANY: &str = "FieldValueTooMany";
/// Cause reason: a referenced value was not found.
pub const REASON_NOT_FOUND: &str = "FieldValueNotFound";
/// Cause reason: a value of the wrong type.
pub const REASON_TYPE_INVALID: &str = "FieldValueTypeInvalid";
/// Cause reason: a server-side failure while validating.
pub const REASON_INTERNAL: &str = "InternalError";

fn cause(reason: &str, path: &str, body: String) -> StatusCause {
    StatusCause {
        reason: reason.to_string(),
        message: body,
        field: path.to_string(),
    }
}

fn with_detail(mut body: String, detail: &str) -> String {
    if !detail.is_empty() {
        body.push_str(": ");
        body.push_str(detail);
    }
    body
}

/// `Required value[: detail]`.
pub fn required(path: &str, detail: &str) -> StatusCause {
    cause(
        REASON_REQUIRED,
        path,
        with_detail("Required value".into(), detail),
    )
}

/// `Invalid value: <value>[: detail]`.
pub fn invalid(path: &str, value: &Value, detail: &str) -> StatusCause {
    let body = format!("Invalid value: {}", gofmt::bad_value(value));
    cause(REASON_INVALID, path, with_detail(body, detail))
}

/// [`invalid`] for a string value, the common case.
pub fn invalid_str(path: &str, value: &str, detail: &str) -> StatusCause {
    invalid(path, &Value::String(value.to_string()), detail)
}

/// `Unsupported value: <value>: supported values: "a", "b"`.
pub fn not_supported(path: &str, value: &Value, valid: &[&str]) -> StatusCause {
    let body = format!("Unsupported value: {}", gofmt::bad_value(value));
    let detail = if valid.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = valid.iter().map(|v| gofmt::quote(v)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    cause(REASON_NOT_SUPPORTED, path, with_detail(body, &detail))
}

/// `Duplicate value: <value>`.
pub fn duplicate(path: &str, value: &Value) -> StatusCause {
    let body = format!("Duplicate value: {}", gofmt::bad_value(value));
    cause(REASON_DUPLICATE, path, body)
}

/// `Forbidden[: detail]`.
pub fn forbidden(path: &str, detail: &str) -> StatusCause {
    cause(
        REASON_FORBIDDEN,
        path,
        with_detail("Forbidden".into(), detail),
    )
}

/// `Too long: must have at most <max> bytes` (the value itself is never echoed).
pub fn too_long(path: &str, max_bytes: usize) -> StatusCause {
    let detail = format!("must have at most {max_bytes} bytes");
    cause(
        REASON_TOO_LONG,
        path,
        with_detail("Too long".into(), &detail),
    )
}

/// `Too many: <actual>: must have at most <max> items`.
pub fn too_many(path: &str, actual: usize, max: usize) -> StatusCause {
    let body = format!("Too many: {actual}: must have at most {max} items");
    cause(REASON_TOO_MANY, path, body)
}

/// `Not found: <value>`.
pub fn not_found(path: &str, value: &Value) -> StatusCause {
    let body = format!("Not found: {}", gofmt::bad_value(value));
    cause(REASON_NOT_FOUND, path, body)
}

/// `Invalid value: <value>[: detail]` with reason `FieldValueTypeInvalid`.
pub fn type_invalid(path: &str, value: &Value, detail: &str) -> StatusCause {
    let body = format!("Invalid value: {}", gofmt::bad_value(value));
    cause(REASON_TYPE_INVALID, path, with_detail(body, detail))
}

/// `Internal error: <detail>`.
pub fn internal(path: &str, detail: &str) -> StatusCause {
    cause(
        REASON_INTERNAL,
        path,
        with_detail("Internal error".into(), detail),
    )
}

/// The full error text of a cause as upstream prints a field error: `<field>: <body>`.
pub fn error_text(cause: &StatusCause) -> String {
    format!("{}: {}", cause.field, cause.message)
}

/// Upstream's error aggregate over field errors (`ErrorList.ToAggregate().Error()`): texts
/// deduplicated, one printed alone, several as `[a, b]`; `None` for none.
pub fn aggregate(causes: &[StatusCause]) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for c in causes {
        let text = error_text(c);
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_match_upstream() {
        let rows: Vec<(StatusCause, &str, &str)> =
            vec![
            (
                required("metadata.name", "name or generateName is required"),
                REASON_REQUIRED,
                "Required value: name or generateName is required",
            ),
            (required("spec", ""), REASON_REQUIRED, "Required value"),
            (
                invalid_str("metadata.name", "A", "bad"),
                REASON_INVALID,
                "Invalid value: \"A\": bad",
            ),
            (
                invalid("spec.replicas", &json!(-1), "must be greater than or equal to 0"),
                REASON_INVALID,
                "Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                not_supported("x", &json!("foo"), &["Exact", "NotOlderThan", ""]),
                REASON_NOT_SUPPORTED,
                "Unsupported value: \"foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
            ),
            (
                duplicate("spec.ports[1]", &json!("a")),
                REASON_DUPLICATE,
                "Duplicate value: \"a\"",
            ),
            (
                forbidden("metadata.namespace", "not allowed on this type"),
                REASON_FORBIDDEN,
                "Forbidden: not allowed on this type",
            ),
            (
                too_long("metadata.annotations", 262144),
                REASON_TOO_LONG,
                "Too long: must have at most 262144 bytes",
            ),
            (
                too_many("spec.items", 5, 3),
                REASON_TOO_MANY,
                "Too many: 5: must have at most 3 items",
            ),
            (
                not_found("x", &json!("y")),
                REASON_NOT_FOUND,
                "Not found: \"y\"",
            ),
            (
                type_invalid("x", &json!("y"), "must be integer"),
                REASON_TYPE_INVALID,
                "Invalid value: \"y\": must be integer",
            ),
            (
                internal("x", "boom"),
                REASON_INTERNAL,
                "Internal error: boom",
            ),
        ];
        for (cause, reason, body) in rows {
            assert_eq!(cause.reason, reason);
            assert_eq!(cause.message, body);
        }
    }

    #[test]
    fn error_text_prefixes_field() {
        let c = forbidden("metadata.namespace", "not allowed on this type");
        assert_eq!(
            error_text(&c),
            "metadata.namespace: Forbidden: not allowed on this type"
        );
    }
}
