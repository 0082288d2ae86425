//! Go-compatible rendering of values inside messages.
//!
//! Upstream builds many user-visible messages with Go's `%q` and `%v`, and echoes values with
//! `encoding/json`; clients and users match on them, so the few renderings keel needs are
//! reproduced here, once, for every crate (apiext, catalog, strategy). keel-smd keeps its own
//! copy of the number formatting because it depends on no keel crate.
//!
//! Numbers: upstream decodes JSON into `int64` (integral and fitting) or `float64` ([`Num`]).
//! A float64 prints two ways that differ on purpose, as Go's do: `%v` ([`float`], exponent
//! form below 1e-4 and from 1e6, `1e+06`) and `encoding/json` ([`json_float`], exponent form
//! below 1e-6 and from 1e21, `1e-7`).

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

/// A list of strings as Go's `%q` prints a `[]string`: `["a" "b"]`.
pub fn quote_list<S: AsRef<str>>(items: &[S]) -> String {
    let q: Vec<String> = items.iter().map(|s| quote(s.as_ref())).collect();
    format!("[{}]", q.join(" "))
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

/// A JSON number as upstream's decoder types it: `int64` when integral and fitting, else
/// `float64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    /// How `encoding/json` into `interface{}`-as-unstructured types a number in a request body:
    /// an `int64` only when the text was an integer that fits (`2.0` stays a float).
    pub fn of(n: &serde_json::Number) -> Num {
        match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(0.0)),
        }
    }

    /// How upstream holds `n` in a stored object: Go's encoder wrote it and its unstructured
    /// decoder read it back, which makes an `int64` of every number written without a
    /// fraction or exponent that fits. So an integral float below 1e21 is an integer (`2.0`
    /// is `2`, `2^60` is written and read back as `1152921504606847000`). Differs from
    /// [`Num::of`] on purpose: this is the value a reader of stored objects (JSONPath) sees.
    pub fn of_stored(n: &serde_json::Number) -> Num {
        if let Some(i) = n.as_i64() {
            return Num::Int(i);
        }
        let f = n.as_f64().unwrap_or(0.0);
        match json_integer(f) {
            Some(i) => Num::Int(i),
            None => Num::Float(f),
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// The integer Go's JSON encoder writes for `f` (no fraction, no exponent), if it fits an
/// `int64`: `f` is integral and below 1e21, and the digits are its shortest ones padded with
/// zeros (`2^60` is written `1152921504606847000`).
pub fn json_integer(f: f64) -> Option<i64> {
    if !f.is_finite() || f.fract() != 0.0 || f.abs() >= 1e21 {
        return None;
    }
    json_float(f).parse().ok()
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): shortest digits, exponent
/// form when the decimal exponent is below -4 or at least 6 (`1e+06`, `1e-05`, `123456`).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let (digits, exp) = shortest_digits(f);
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        push_exponent_form(&mut out, &digits, exp);
    } else {
        push_decimal_form(&mut out, &digits, exp);
    }
    out
}

/// `encoding/json`'s encoding of a float64: decimal form from 1e-6 up to 1e21, else exponent
/// form with a short exponent (`1e-7`, `1e+21`). Go refuses NaN and ±Inf; they render as
/// `null` here. Not [`float`]: `encoding/json` switches forms at other bounds than `%v`.
pub fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let (digits, exp) = shortest_digits(f);
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
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

/// Go's `%v` of a decoded number ([`Num::of`]).
pub fn num(n: &serde_json::Number) -> String {
    match Num::of(n) {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => float(f),
    }
}

/// The shortest round-tripping decimal digits of finite `f` and its decimal exponent
/// (`d.ddd × 10^exp`). Rust's `{:e}` prints the shortest representation that round-trips,
/// like Go's `strconv` with precision -1. Zero is `("0", 0)`.
fn shortest_digits(f: f64) -> (String, i32) {
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Go's `%e` body with shortest digits: `d.ddde±XX`.
fn push_exponent_form(out: &mut String, digits: &str, exp: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let sign = if exp < 0 { '-' } else { '+' };
    let _ = write!(out, "e{sign}{:02}", exp.abs());
}

/// Go's `%f` body with shortest digits.
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

/// How `encoding/json` escapes a string: which Go release's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonEscape {
    /// Go 1.22 and later: `\b` and `\f` as such (the catalog's JSONPath printing).
    Go122,
    /// Before Go 1.22: `\b` and `\f` as `\u0008` and `\u000c`. The apiext and strategy
    /// renderings were written this way; kept so that no message changes (a follow-up may
    /// move them to [`JsonEscape::Go122`], which upstream v1.36's Go prints).
    PreGo122,
}

/// `encoding/json`'s string encoding, HTML-safe: `<`, `>`, `&` and U+2028/9 escaped, other
/// control characters as `\u00XX` (`\b`/`\f` per `escape`).
pub fn json_string_to(out: &mut String, s: &str, escape: JsonEscape) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' if escape == JsonEscape::Go122 => out.push_str("\\b"),
            '\u{c}' if escape == JsonEscape::Go122 => out.push_str("\\f"),
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

/// How [`json_to`] renders a value.
#[derive(Clone, Copy)]
pub struct JsonStyle {
    /// How a number prints: [`json_number_to`] (decoded from a request body) or
    /// [`json_stored_number_to`] (a stored object; the two print alike except `-0.0`, which a
    /// stored object holds as integer `0`).
    pub numbers: fn(&mut String, &serde_json::Number),
    pub escape: JsonEscape,
    /// Go sorts a map's keys; a `runtime.RawExtension` is echoed in its own order (`false`).
    pub sort_keys: bool,
    /// Deeper than this renders as `null` (a bound on recursion; callers whose input is
    /// already bounded pass `usize::MAX`).
    pub depth_max: usize,
}

/// `encoding/json` of a number decoded by [`Num::of`]: integers plain, floats by
/// [`json_float`].
pub fn json_number_to(out: &mut String, n: &serde_json::Number) {
    push_json_num(out, Num::of(n));
}

/// `encoding/json` of a number as a stored object holds it ([`Num::of_stored`]).
pub fn json_stored_number_to(out: &mut String, n: &serde_json::Number) {
    push_json_num(out, Num::of_stored(n));
}

fn push_json_num(out: &mut String, n: Num) {
    match n {
        Num::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Num::Float(f) => out.push_str(&json_float(f)),
    }
}

/// A JSON object as `encoding/json` writes a map (`sort_keys`) or echoes raw JSON: keys by
/// [`json_string_to`], each member's value by `value` (callers that print Go structs inside
/// maps bring their own).
pub fn json_object_to(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    escape: JsonEscape,
    sort_keys: bool,
    mut value: impl FnMut(&mut String, &Value),
) {
    let mut keys: Vec<&String> = map.keys().collect();
    if sort_keys {
        keys.sort();
    }
    out.push('{');
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string_to(out, k, escape);
        out.push(':');
        value(out, &map[k.as_str()]);
    }
    out.push('}');
}

/// `encoding/json.Marshal` of a decoded value: numbers, strings, key order and depth per
/// `style`.
pub fn json_to(out: &mut String, v: &Value, style: JsonStyle) {
    write_json(out, v, style, 0);
}

fn write_json(out: &mut String, v: &Value, style: JsonStyle, depth: usize) {
    let escape = style.escape;
    if depth > style.depth_max {
        out.push_str("null");
        return;
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => (style.numbers)(out, n),
        Value::String(s) => json_string_to(out, s, escape),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item, style, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => json_object_to(out, map, escape, style.sort_keys, |out, v| {
            write_json(out, v, style, depth + 1)
        }),
    }
}

#[cfg(test)]
mod tests {

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
            (0.5, "0.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ];
        for (f, want) in rows {
            assert_eq!(float(f), want, "{f}");
        }
    }

    #[test]
    fn floats_encode_as_go_json() {
        let rows = [
            (1.5, "1.5"),
            (1e6, "1000000"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (0.0000001, "1e-7"),
            (0.000001, "0.000001"),
            (-0.0, "-0"),
            (1152921504606846976.0, "1152921504606847000"),
            (f64::NAN, "null"),
        ];
        for (f, want) in rows {
            assert_eq!(json_float(f), want, "{f}");
        }
    }

    #[test]
    fn stored_numbers_are_integers_when_go_writes_them_so() {
        let n = |v: Value| match v {
            Value::Number(n) => n,
            _ => unreachable!(),
        };
        assert_eq!(Num::of(&n(json!(2.0))), Num::Float(2.0));
        assert_eq!(Num::of_stored(&n(json!(2.0))), Num::Int(2));
        assert_eq!(
            Num::of_stored(&n(json!(1152921504606846976.0))),
            Num::Int(1152921504606847000)
        );
        assert_eq!(Num::of_stored(&n(json!(1e21))), Num::Float(1e21));
        assert_eq!(Num::of_stored(&n(json!(1e20))), Num::Float(1e20));
        assert_eq!(Num::of_stored(&n(json!(0.5))), Num::Float(0.5));
        assert_eq!(num(&n(json!(2.0))), "2");
        assert_eq!(num(&n(json!(1e6))), "1e+06");
    }

    #[test]
    fn json_matches_go_encoding() {
        let json_of = |v: &Value, escape| {
            let mut out = String::new();
            let style = JsonStyle {
                numbers: json_number_to,
                sort_keys: true,
                escape,
                depth_max: usize::MAX,
            };
            json_to(&mut out, v, style);
            out
        };
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
            assert_eq!(json_of(&v, JsonEscape::PreGo122), want);
            assert_eq!(json_of(&v, JsonEscape::Go122), want);
        }
        assert_eq!(
            json_of(&json!("\u{8}\u{c}\u{1}"), JsonEscape::Go122),
            r#""\b\f\u0001""#
        );
        assert_eq!(
            json_of(&json!("\u{8}\u{c}\u{1}"), JsonEscape::PreGo122),
            r#""\u0008\u000c\u0001""#
        );
        let mut deep = String::new();
        let style = JsonStyle {
            numbers: json_number_to,
            escape: JsonEscape::Go122,
            sort_keys: true,
            depth_max: 1,
        };
        json_to(&mut deep, &json!([[1]]), style);
        assert_eq!(deep, "[[null]]");
        let mut stored = String::new();
        let style = JsonStyle {
            numbers: json_stored_number_to,
            ..style
        };
        json_to(&mut stored, &json!([-0.0, 2.0]), style);
        assert_eq!(stored, "[0,2]");
    }
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
