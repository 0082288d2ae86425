//! Go renderings of decoded JSON values inside messages.
//!
//! Upstream decodes a custom resource into Go values: integral numbers that fit become `int64`,
//! every other number a `float64`. Messages print them with `%v` (`1e+06` for a large float),
//! `%q` for strings, and `encoding/json` (sorted keys, `<>&` escaped) for lists and maps.

use serde_json::{Number, Value};
use std::fmt::Write as _;

/// A JSON number as upstream's decoder types it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn of(n: &Number) -> Num {
        match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(0.0)),
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (neg, digits, exp) = shortest_digits(f);
    // %g with the shortest precision switches to exponent form below 1e-4 and from 1e6.
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        push_exponent_form(&mut out, &digits, exp);
    } else {
        push_decimal_form(&mut out, &digits, exp);
    }
    out
}

/// Go's `encoding/json` rendering of a float64.
fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (neg, digits, exp) = shortest_digits(f);
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        push_exponent_form(&mut out, &digits, exp);
        // encoding/json writes e-07 as e-7.
        if let Some(pos) = out.find("e-0") {
            out.remove(pos + 2);
        }
    } else {
        push_decimal_form(&mut out, &digits, exp);
    }
    out
}

/// The shortest round-tripping decimal digits of `f` and its decimal exponent (`d.ddd × 10^exp`).
fn shortest_digits(f: f64) -> (bool, String, i32) {
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    (f < 0.0, digits, exp.parse().unwrap_or(0))
}

fn push_exponent_form(out: &mut String, digits: &str, exp: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let sign = if exp < 0 { '-' } else { '+' };
    let _ = write!(out, "e{sign}{:02}", exp.abs());
}

fn push_decimal_form(out: &mut String, digits: &str, exp: i32) {
    if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits);
        return;
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        out.push_str(digits);
        for _ in digits.len()..int_len {
            out.push('0');
        }
    } else {
        out.push_str(&digits[..int_len]);
        out.push('.');
        out.push_str(&digits[int_len..]);
    }
}

/// Go's `%v` of a decoded number.
pub fn go_num(n: &Number) -> String {
    match Num::of(n) {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => go_float(f),
    }
}

/// `encoding/json.Marshal` of a decoded value: map keys sorted, HTML characters escaped.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, 0);
    out
}

fn write_json(out: &mut String, v: &Value, depth: usize) {
    if depth > crate::limits::VALUE_DEPTH_MAX {
        out.push_str("null");
        return;
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match Num::of(n) {
            Num::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Num::Float(f) => out.push_str(&json_float(f)),
        },
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_json(out, &map[k], depth + 1);
            }
            out.push('}');
        }
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A field error's bad value as `field.Error.ErrorBody` prints it: numbers and booleans with
/// `%v`, strings with `%q`, anything else (null, lists, maps) as JSON.
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
    fn floats_print_as_go_percent_v() {
        let rows = [
            (1.5, "1.5"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
            (100000.5, "100000.5"),
        ];
        for (f, want) in rows {
            assert_eq!(go_float(f), want, "{f}");
        }
    }

    #[test]
    fn json_matches_go_encoding() {
        let rows = [
            (
                json!({"b": 1, "a": [1.5, "x<y"]}),
                r#"{"a":[1.5,"x\u003cy"],"b":1}"#,
            ),
            (
                json!([1e21, 1e20, 0.0000001]),
                "[1e+21,100000000000000000000,1e-7]",
            ),
            (json!(null), "null"),
        ];
        for (v, want) in rows {
            assert_eq!(go_json(&v), want);
        }
    }

    #[test]
    fn bad_values() {
        assert_eq!(bad_value(&json!("a")), "\"a\"");
        assert_eq!(bad_value(&json!(3)), "3");
        assert_eq!(bad_value(&json!(2.0)), "2");
        assert_eq!(bad_value(&json!(["a"])), "[\"a\"]");
        assert_eq!(bad_value(&json!(null)), "null");
    }
}
