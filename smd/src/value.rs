//! JSON value helpers with structured-merge-diff's semantics: the total order of values
//! (floats < ints < strings < bools < lists < maps < null; ints and floats compare
//! numerically), equality derived from it, and Go's text forms of values (the JSON that
//! Go's `encoding/json`-compatible encoder writes with HTML escaping, and `%v`/`%q`).

use serde_json::{Map, Number, Value};
use std::cmp::Ordering;

fn rank(v: &Value) -> u8 {
    match v {
        Value::Number(n) if n.is_f64() => 0,
        Value::Number(_) => 1,
        Value::String(_) => 2,
        Value::Bool(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
        Value::Null => 6,
    }
}

fn num_cmp(a: &Number, b: &Number) -> Ordering {
    match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
        (Some(x), Some(y), _, _) => x.cmp(&y),
        (_, _, Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let x = a.as_f64().unwrap_or(f64::NAN);
            let y = b.as_f64().unwrap_or(f64::NAN);
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

/// Upstream's `value.Compare`: a total order over values of any type.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        // Ints and floats compare numerically with each other.
        (Value::Number(x), Value::Number(y)) => num_cmp(x, y),
        _ if rank(a) != rank(b) => rank(a).cmp(&rank(b)),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let c = compare(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => map_compare(x, y),
        _ => Ordering::Equal,
    }
}

/// Maps compare by walking the union of their keys in lexical order: at the first key
/// where they differ, a map that ran out of keys or lacks the key sorts as upstream's
/// `MapCompareUsing` decides.
fn map_compare(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
    keys.sort();
    keys.dedup();
    for (i, k) in keys.into_iter().enumerate() {
        let c = if i == x.len() {
            Ordering::Less
        } else if i == y.len() {
            Ordering::Greater
        } else {
            match (x.get(k), y.get(k)) {
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(l), Some(r)) => compare(l, r),
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// Deep equality as upstream's `value.Equals` (1 and 1.0 are equal).
pub fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_cmp(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(l, r)| equals(l, r))
        }
        (Value::Object(x), Value::Object(y)) => {
            // Objects compared are mostly one object before and after a change, keys in the
            // same order: pairs are compared in place, and keys are looked up (hashed) only
            // from the first pair whose keys differ.
            x.len() == y.len() && {
                let mut rest = 0;
                for ((xk, xv), (yk, yv)) in x.iter().zip(y) {
                    if xk != yk {
                        break;
                    }
                    if !equals(xv, yv) {
                        return false;
                    }
                    rest += 1;
                }
                x.iter()
                    .skip(rest)
                    .all(|(k, l)| y.get(k).is_some_and(|r| equals(l, r)))
            }
        }
        _ => a == b,
    }
}

/// Writes `s` as a JSON string the way Go's standard-library-compatible encoder does:
/// `"`, `\` and `\n`, `\r`, `\t` short-escaped, other control characters as `\u00xx`, and
/// HTML-sensitive `<`, `>`, `&` plus U+2028/U+2029 as `\uXXXX`.
pub fn write_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Go's JSON encoder writes it: shortest form, exponent only below 1e-6 or from
/// 1e21 on (`1e+21`, `1e-7`).
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(u) = n.as_u64() {
        push_decimal(out, u);
    } else if let Some(i) = n.as_i64() {
        out.push('-');
        push_decimal(out, i.unsigned_abs());
    } else {
        out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0)));
    }
}

/// Appends `n` in decimal (without `fmt`'s machinery: signatures write one per map key).
pub fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
}

/// Writes `v` as Go's encoder does for an `interface{}`: maps with sorted keys, no spaces.
pub fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_go_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(out, k);
                out.push(':');
                write_go_json(out, &m[k]);
            }
            out.push('}');
        }
    }
}

/// Go's `%q` of a string (`strconv.Quote`): printable characters as they are, `"` and `\`
/// escaped, the usual C escapes, other control characters as `\x..`/`\u....`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Upstream's `value.ToString`, used in path strings: strings quoted, numbers and bools
/// bare, lists bracketed, maps as `k=v` pairs.
pub fn to_go_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => go_v_float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(to_go_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", to_go_string(v)))
            .collect::<Vec<_>>()
            .join(""),
    }
}

/// Go's `%v` of a float64: `%g` with the shortest precision, exponent from 1e21 on.
fn go_v_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = match e.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', e),
                };
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn order_across_types() {
        let ordered = [
            json!(1.5),
            json!(2),
            json!("a"),
            json!(false),
            json!([1]),
            json!({"a": 1}),
            Value::Null,
        ];
        for w in ordered.windows(2) {
            assert_eq!(compare(&w[0], &w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
        }
        assert_eq!(compare(&json!(1), &json!(1.0)), Ordering::Equal);
        assert!(equals(&json!({"a": [1, 2]}), &json!({"a": [1.0, 2]})));
        // Key order does not matter, wherever it starts to differ.
        let a = json!({"p": 1, "q": {"x": 1, "y": 2}, "r": 3, "s": 4});
        for (b, same) in [
            (json!({"p": 1, "q": {"y": 2, "x": 1}, "s": 4, "r": 3}), true),
            (json!({"s": 4, "r": 3, "q": {"x": 1, "y": 2}, "p": 1}), true),
            (
                json!({"p": 1, "q": {"x": 1, "y": 2}, "s": 4, "t": 3}),
                false,
            ),
            (
                json!({"p": 1, "q": {"x": 1, "y": 2}, "s": 4, "r": 5}),
                false,
            ),
            (
                json!({"p": 1, "r": 3, "q": {"x": 1, "y": 3}, "s": 4}),
                false,
            ),
            (json!({"p": 1, "q": {"x": 1, "y": 2}, "r": 3}), false),
        ] {
            assert_eq!(equals(&a, &b), same, "{b}");
            assert_eq!(equals(&b, &a), same, "{b}");
        }
    }

    #[test]
    fn integers_are_written_as_go_writes_them() {
        for n in [
            0i128,
            7,
            10,
            99,
            100,
            -1,
            -10,
            i64::MIN as i128,
            i64::MAX as i128,
            u64::MAX as i128,
        ] {
            let v: Value = serde_json::from_str(&n.to_string()).unwrap();
            let mut out = String::new();
            write_go_json(&mut out, &v);
            assert_eq!(out, n.to_string());
        }
    }

    #[test]
    fn go_json_forms() {
        let mut s = String::new();
        write_go_json(&mut s, &json!({"z": 1, "a": "<x>&", "f": 1e21, "g": 2.5}));
        assert_eq!(s, r#"{"a":"\u003cx\u003e\u0026","f":1e+21,"g":2.5,"z":1}"#);
        assert_eq!(to_go_string(&json!("a\"b")), r#""a\"b""#);
        assert_eq!(to_go_string(&json!(1e21)), "1e+21");
        assert_eq!(to_go_string(&json!(0.5)), "0.5");
    }
}
