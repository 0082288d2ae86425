//! Go-compatible rendering of values inside messages.
//!
//! Upstream builds many user-visible messages with Go's `%q` and `%v`; clients and users match on
//! them, so the few renderings keel needs are reproduced here.

use serde_json::Value;
use std::fmt::Write as _;

/// Quotes `s` like Go's `strconv.Quote` (`%q`): double quotes, backslash escapes for `"`, `\`
/// and control characters, printable Unicode kept as is.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                if (c as u32) <= 0xffff {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders a bad value the way upstream's field errors do: strings quoted, numbers and booleans
/// plain, null as `null`, a list of strings as Go's `[]string{"a", "b"}`, anything else as JSON.
pub fn bad_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let quoted: Vec<String> = items
                .iter()
                .map(|i| quote(i.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quote_matches_go() {
        let rows = [
            ("abc", r#""abc""#),
            ("a\"b", r#""a\"b""#),
            ("a\\b", r#""a\\b""#),
            ("tab\there", r#""tab\there""#),
            ("nul\u{0}", r#""nul\x00""#),
            ("héllo", "\"héllo\""),
        ];
        for (input, want) in rows {
            assert_eq!(quote(input), want, "input {input:?}");
        }
    }

    #[test]
    fn bad_value_matches_go_verbs() {
        assert_eq!(bad_value(&json!("x")), "\"x\"");
        assert_eq!(bad_value(&json!(-1)), "-1");
        assert_eq!(bad_value(&json!(true)), "true");
        assert_eq!(bad_value(&Value::Null), "null");
        assert_eq!(bad_value(&json!(["a", "b"])), "[]string{\"a\", \"b\"}");
        assert_eq!(bad_value(&json!({"k": 1})), "{\"k\":1}");
    }
}
