//! Field-level validation errors in the shape of upstream's `field.Error`.
//!
//! The message is what upstream's `Error()` prints: `<field>: <body>`, where the body starts
//! with the error type's canonical text (`Required value`, `Invalid value: "x"`, ...). At the
//! crate's boundary an error becomes a [`StatusCause`] whose message is the body alone, as
//! upstream puts it into `details.causes`.

use keel_api::status::{field, StatusCause};
use serde_json::Value;

/// One validation failure; becomes one `StatusCause` of a 422 Invalid response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldErr {
    /// Cause type: `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`,
    /// `FieldValueForbidden`, `FieldValueDuplicate` or `FieldValueTooLong`.
    pub reason: &'static str,
    /// Field path, e.g. `spec.containers[0].image`.
    pub field: String,
    /// Upstream's full error text, e.g. `spec.containers[0].image: Required value`.
    pub message: String,
}

/// A rejected value as upstream prints it: strings quoted, numbers and booleans plain,
/// anything else already rendered (Go-like) by the caller.
#[derive(Clone, Debug)]
pub enum Bad {
    /// Printed with Go's `%q`.
    Str(String),
    /// Printed plainly.
    Int(i64),
    /// Printed plainly.
    Bool(bool),
    /// Printed as given.
    Raw(String),
}

impl From<&str> for Bad {
    fn from(s: &str) -> Self {
        Bad::Str(s.to_string())
    }
}
impl From<String> for Bad {
    fn from(s: String) -> Self {
        Bad::Str(s)
    }
}
impl From<i64> for Bad {
    fn from(n: i64) -> Self {
        Bad::Int(n)
    }
}
impl From<bool> for Bad {
    fn from(b: bool) -> Self {
        Bad::Bool(b)
    }
}
impl From<&Value> for Bad {
    fn from(v: &Value) -> Self {
        match v {
            Value::String(s) => Bad::Str(s.clone()),
            Value::Bool(b) => Bad::Bool(*b),
            Value::Number(n) => n
                .as_i64()
                .map(Bad::Int)
                .unwrap_or_else(|| Bad::Raw(n.to_string())),
            Value::Null => Bad::Raw("null".into()),
            other => Bad::Raw(other.to_string()),
        }
    }
}

impl Bad {
    fn render(&self) -> String {
        match self {
            Bad::Str(s) => quote(s),
            Bad::Int(n) => n.to_string(),
            Bad::Bool(b) => b.to_string(),
            Bad::Raw(s) => s.clone(),
        }
    }
}

/// Go's `%q`, as upstream renders strings inside messages.
pub(crate) fn quote(s: &str) -> String {
    keel_api::gofmt::quote(s)
}

fn with_detail(body: String, detail: &str) -> String {
    if detail.is_empty() {
        body
    } else {
        format!("{body}: {detail}")
    }
}

fn make(reason: &'static str, field: &str, body: String) -> FieldErr {
    FieldErr {
        reason,
        field: field.to_string(),
        message: format!("{field}: {body}"),
    }
}

impl FieldErr {
    /// The message without its `<field>: ` prefix (upstream's `ErrorBody()`).
    pub fn body(&self) -> &str {
        let prefix_len = self.field.len() + 2;
        self.message.get(prefix_len..).unwrap_or(&self.message)
    }

    /// The `details.causes[]` entry of this error.
    pub fn into_cause(self) -> StatusCause {
        StatusCause {
            reason: self.reason.to_string(),
            message: self.body().to_string(),
            field: self.field,
        }
    }

    /// An error made by keel-api's validators (labels of a selector, ...), in this crate's
    /// shape, so a type's rules can mix both.
    pub(crate) fn from_cause(c: StatusCause) -> Self {
        const REASONS: &[&str] = &[
            field::REASON_REQUIRED,
            field::REASON_INVALID,
            field::REASON_NOT_SUPPORTED,
            field::REASON_DUPLICATE,
            field::REASON_FORBIDDEN,
            field::REASON_TOO_LONG,
            field::REASON_TOO_MANY,
            field::REASON_NOT_FOUND,
            field::REASON_TYPE_INVALID,
            field::REASON_INTERNAL,
        ];
        let reason = REASONS
            .iter()
            .find(|r| **r == c.reason)
            .copied()
            .unwrap_or(field::REASON_INVALID);
        make(reason, &c.field, c.message)
    }

    /// `Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Self {
        make(
            "FieldValueRequired",
            field,
            with_detail("Required value".into(), detail),
        )
    }

    /// `Invalid value: <value>[: detail]`.
    pub fn invalid(field: &str, value: impl Into<Bad>, detail: &str) -> Self {
        let body = format!("Invalid value: {}", value.into().render());
        make("FieldValueInvalid", field, with_detail(body, detail))
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: impl Into<Bad>, supported: &[&str]) -> Self {
        let body = format!("Unsupported value: {}", value.into().render());
        let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        let detail = if list.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", list.join(", "))
        };
        make("FieldValueNotSupported", field, with_detail(body, &detail))
    }

    /// `Forbidden: detail`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        make(
            "FieldValueForbidden",
            field,
            with_detail("Forbidden".into(), detail),
        )
    }

    /// `Duplicate value: <value>`.
    pub fn duplicate(field: &str, value: impl Into<Bad>) -> Self {
        let body = format!("Duplicate value: {}", value.into().render());
        make("FieldValueDuplicate", field, body)
    }

    /// `Too long: must have at most <max> bytes`.
    pub fn too_long(field: &str, max_bytes: usize) -> Self {
        let body = format!("Too long: must have at most {max_bytes} bytes");
        make("FieldValueTooLong", field, body)
    }
}

/// Go's `%#v` of a `map[string]string`, as upstream prints label maps in messages.
pub(crate) fn go_string_map(v: Option<&Value>) -> String {
    let Some(map) = v.and_then(Value::as_object) else {
        return "map[string]string(nil)".into();
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let parts: Vec<String> = keys
        .iter()
        .map(|k| {
            let val = map[k.as_str()].as_str().unwrap_or_default();
            format!("{}:{}", quote(k), quote(val))
        })
        .collect();
    format!("map[string]string{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_upstream_shapes() {
        let cases = [
            (
                FieldErr::required("spec.containers", ""),
                "spec.containers: Required value",
            ),
            (
                FieldErr::required("metadata.name", "name or generateName is required"),
                "metadata.name: Required value: name or generateName is required",
            ),
            (
                FieldErr::invalid("spec.replicas", -1i64, "must be greater than or equal to 0"),
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                FieldErr::not_supported("spec.restartPolicy", "X", &["Always", "Never"]),
                "spec.restartPolicy: Unsupported value: \"X\": supported values: \"Always\", \"Never\"",
            ),
            (FieldErr::forbidden("spec", "nope"), "spec: Forbidden: nope"),
            (
                FieldErr::duplicate("spec.volumes[1].name", "v"),
                "spec.volumes[1].name: Duplicate value: \"v\"",
            ),
            (
                FieldErr::too_long("data", 1048576),
                "data: Too long: must have at most 1048576 bytes",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.message, want);
        }
    }

    #[test]
    fn causes_carry_the_body_without_the_field_path() {
        let rows = [
            (FieldErr::required("metadata.name", ""), "Required value"),
            (
                FieldErr::invalid("data[a b]", "a b", "bad"),
                "Invalid value: \"a b\": bad",
            ),
            (
                FieldErr::too_long("", 3),
                "Too long: must have at most 3 bytes",
            ),
        ];
        for (err, body) in rows {
            let field = err.field.clone();
            let reason = err.reason;
            assert_eq!(err.body(), body);
            let cause = err.into_cause();
            assert_eq!(
                (cause.reason.as_str(), cause.message.as_str()),
                (reason, body)
            );
            assert_eq!(cause.field, field);
        }
        let back = FieldErr::from_cause(field::forbidden("spec", "no"));
        assert_eq!(back, FieldErr::forbidden("spec", "no"));
    }

    /// Values are quoted as Go's `%q` does, not as JSON: control characters use Go's escapes.
    #[test]
    fn values_are_quoted_like_go() {
        let err = FieldErr::invalid("metadata.name", "a\u{1}b\u{7f}", "bad");
        assert_eq!(
            err.message,
            "metadata.name: Invalid value: \"a\\x01b\\x7f\": bad"
        );
    }

    #[test]
    fn go_renderings() {
        let m = serde_json::json!({"b": "2", "a": "1"});
        assert_eq!(
            go_string_map(Some(&m)),
            "map[string]string{\"a\":\"1\", \"b\":\"2\"}"
        );
        assert_eq!(go_string_map(None), "map[string]string(nil)");
    }
}
