//! How upstream prints a struct value inside a field error (`spec: Invalid value: {...}`):
//! Go's `json.Marshal` of the *internal* type. Internal types have no JSON tags, so every
//! field appears under its Go name, unset ones as `""`, `0` or `null`, and strings are
//! HTML-escaped (`\u003c`). A layout ([`F`] rows in Go field order) maps the versioned JSON
//! member of each field to its Go name; callers declare the layouts of their types.
//!
//! (DRA's `dra/gojson.rs` predates this module and keeps its own copy of the layout
//! machinery; both encode strings with `keel_api::gofmt`.)

use serde_json::Value;

/// The shape of one internal field.
pub(crate) enum T {
    /// `string` (or a named string type).
    Str,
    /// `int32`/`int64`.
    Int,
    /// `*T` of a scalar: `null` when unset, else the scalar as given.
    Scalar,
    /// A struct value (never null).
    Struct(&'static [F]),
    /// `*Struct`.
    Ptr(&'static [F]),
    /// `metav1.Time`: `null` when zero, else RFC 3339 in seconds.
    Time,
    /// `metav1.MicroTime`: `null` when zero, else RFC 3339 with six fraction digits.
    MicroTime,
}

/// A field: Go name, versioned JSON member name, shape.
pub(crate) struct F(pub &'static str, pub &'static str, pub T);

/// Go's JSON string encoding (HTML-safe: `<`, `>`, `&` and U+2028/9 escaped; `\b`/`\f` as
/// `\u0008`/`\u000c`, as these messages always printed them).
pub(crate) fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    keel_api::gofmt::json_string_to(&mut out, s, keel_api::gofmt::JsonEscape::PreGo122);
    out
}

/// A timestamp with its fraction cut to `digits` (zero-padded; none when `digits` is 0),
/// as Go's `Format` with a fixed-width fraction prints it. Text that is not a timestamp is
/// returned unchanged.
pub(crate) fn time_with_fraction(t: &str, digits: usize) -> String {
    let Some(tz_at) = t.rfind(['Z', '+', '-']).filter(|i| *i >= 19) else {
        return t.to_string();
    };
    let (clock, zone) = t.split_at(tz_at);
    let (whole, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    if digits == 0 {
        return format!("{whole}{zone}");
    }
    let mut fraction: String = fraction.chars().take(digits).collect();
    while fraction.len() < digits {
        fraction.push('0');
    }
    format!("{whole}.{fraction}{zone}")
}

/// A scalar JSON value as Go prints it.
fn scalar(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => out.push_str(&string(s)),
        other => out.push_str(&other.to_string()),
    }
}

fn render(t: &T, v: Option<&Value>, out: &mut String) {
    let v = v.filter(|x| !x.is_null());
    match t {
        T::Str => out.push_str(&string(v.and_then(Value::as_str).unwrap_or(""))),
        T::Int => out.push_str(&v.and_then(Value::as_i64).unwrap_or(0).to_string()),
        T::Scalar => match v {
            Some(x) => scalar(x, out),
            None => out.push_str("null"),
        },
        T::Struct(fields) => fields_of(fields, v.unwrap_or(&Value::Null), out),
        T::Ptr(fields) => match v {
            Some(x) => fields_of(fields, x, out),
            None => out.push_str("null"),
        },
        T::Time | T::MicroTime => match v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            Some(s) => {
                let digits = if matches!(t, T::Time) { 0 } else { 6 };
                out.push_str(&string(&time_with_fraction(s, digits)));
            }
            None => out.push_str("null"),
        },
    }
}

fn fields_of(fields: &[F], v: &Value, out: &mut String) {
    out.push('{');
    for (i, F(go, json, t)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&string(go));
        out.push(':');
        render(t, v.get(*json), out);
    }
    out.push('}');
}

/// `v` (a versioned object, or null) as Go prints the internal struct of layout `fields`.
pub(crate) fn of(fields: &[F], v: &Value) -> String {
    let mut out = String::new();
    fields_of(fields, v, &mut out);
    out
}

/// `v` as Go prints an internal field of shape `t` (`None`: unset).
pub(crate) fn field(t: &T, v: Option<&Value>) -> String {
    let mut out = String::new();
    render(t, v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const INNER: &[F] = &[F("Count", "count", T::Int), F("At", "at", T::MicroTime)];
    const OUTER: &[F] = &[
        F("Name", "name", T::Str),
        F("Limit", "limit", T::Scalar),
        F("Inner", "inner", T::Ptr(INNER)),
        F("Fixed", "fixed", T::Struct(INNER)),
        F("When", "when", T::Time),
    ];

    #[test]
    fn renders_go_names_zero_values_and_escapes() {
        let rows = [
            (
                json!({}),
                r#"{"Name":"","Limit":null,"Inner":null,"Fixed":{"Count":0,"At":null},"When":null}"#,
            ),
            (
                json!({"name": "a<b&c>", "limit": 0, "inner": {"count": 2,
                       "at": "2026-01-02T03:04:05.1234567Z"},
                       "when": "2026-01-02T03:04:05Z"}),
                r#"{"Name":"a\u003cb\u0026c\u003e","Limit":0,"Inner":{"Count":2,"At":"2026-01-02T03:04:05.123456Z"},"Fixed":{"Count":0,"At":null},"When":"2026-01-02T03:04:05Z"}"#,
            ),
        ];
        for (v, want) in rows {
            assert_eq!(of(OUTER, &v), want);
        }
    }

    #[test]
    fn timestamps_take_a_fixed_fraction() {
        let rows = [
            ("2026-01-02T03:04:05Z", 6, "2026-01-02T03:04:05.000000Z"),
            ("2026-01-02T03:04:05.5Z", 6, "2026-01-02T03:04:05.500000Z"),
            (
                "2026-01-02T03:04:05.5+01:00",
                0,
                "2026-01-02T03:04:05+01:00",
            ),
            ("not a time", 6, "not a time"),
        ];
        for (t, digits, want) in rows {
            assert_eq!(time_with_fraction(t, digits), want, "{t}");
        }
    }
}
