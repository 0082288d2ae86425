//! Go renderings of decoded JSON values inside messages.
//!
//! Upstream decodes a custom resource into Go values: integral numbers that fit become `int64`,
//! every other number a `float64`. Messages print them with `%v` (`1e+06` for a large float),
//! `%q` for strings, and `encoding/json` (sorted keys, `<>&` escaped) for lists and maps.

use keel_api::gofmt::{self, JsonEscape, JsonStyle};
use serde_json::Value;

pub use keel_api::gofmt::{float as go_float, num as go_num, Num};

/// `encoding/json.Marshal` of a decoded value: map keys sorted, HTML characters escaped
/// (`\b`/`\f` as `\u0008`/`\u000c`, as these messages always printed them), nesting bounded
/// by [`crate::limits::VALUE_DEPTH_MAX`].
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    let style = JsonStyle {
        numbers: gofmt::json_number_to,
        sort_keys: true,
        escape: JsonEscape::PreGo122,
        depth_max: crate::limits::VALUE_DEPTH_MAX,
    };
    gofmt::json_to(&mut out, v, style);
    out
}

/// A field error's bad value as `field.Error.ErrorBody` prints it: numbers and booleans with
/// `%v`, strings with `%q`, anything else (null, lists, maps) as JSON. Not
/// [`keel_api::gofmt::bad_value`]: a custom resource's values are decoded into Go's
/// `interface{}` (numbers as `%v` of int64/float64, a string list as JSON), where the typed
/// objects' errors print a `[]string` with Go syntax.
pub fn bad_value(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_num(n),
        Value::String(s) => keel_api::gofmt::quote(s),
        other => go_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_values() {
        assert_eq!(bad_value(&json!("a")), "\"a\"");
        assert_eq!(bad_value(&json!(3)), "3");
        assert_eq!(bad_value(&json!(2.0)), "2");
        assert_eq!(bad_value(&json!(["a"])), "[\"a\"]");
        assert_eq!(bad_value(&json!(null)), "null");
    }
}
