//! JSON -> protobuf. Fields are written in field-number order, only when the JSON carries a
//! non-null value (Go decoders read an absent field as its zero value, so nothing is lost);
//! embedded structs and the small special types are written the way Go's generated code
//! writes them. JSON keys that are not fields are ignored, as Go's decoder ignores them.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::schema::{Card, Field, Message, MsgId, Scalar, Schema, Special, Ty};
use crate::timefmt::{parse_duration, parse_rfc3339};
use crate::wire::{put_bytes, put_nested, put_tag, put_varint_field, WT_FIXED64};
use crate::{ProtoError, MAX_NESTING_DEPTH};

/// Appends the encoding of `v` as message `id` (without tag or length).
pub(crate) fn message(
    s: &Schema,
    id: MsgId,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtoError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(ProtoError::Encode(format!(
            "objects nested deeper than {MAX_NESTING_DEPTH}"
        )));
    }
    let msg = s.msg(id);
    match (msg.special, v) {
        (Special::None, Value::Object(obj)) => object(s, msg, obj, out, depth),
        (Special::None, other) => Err(expected("an object", other)),
        (special, v) => special_value(s, msg, special, v, out, depth),
    }
}

fn expected(what: &str, got: &Value) -> ProtoError {
    ProtoError::Encode(format!("expected {what}, got {}", json_kind(got)))
}

/// A JSON value's kind as error messages name it ("a string", "null", ...).
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object(
    s: &Schema,
    msg: &Message,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtoError> {
    for &idx in &msg.encode_order {
        let field = &msg.fields[idx as usize];
        if field.hidden {
            continue;
        }
        let Ty::Message(sub) = field.ty else {
            if let Some(v) = obj.get(&*field.json).filter(|v| !v.is_null()) {
                self::field(s, field, v, out, depth).map_err(|e| e.within(field.label()))?;
            }
            continue;
        };
        if field.inline {
            // The embedded struct's keys live in this object; Go always writes it.
            let inner = s.msg(sub);
            if inner.special != Special::None {
                return Err(ProtoError::Encode(format!(
                    "inline field of special type {}",
                    inner.name
                )));
            }
            put_nested(out, field.number, |o| object(s, inner, obj, o, depth + 1))?;
        } else if let Some(v) = obj.get(&*field.json).filter(|v| !v.is_null()) {
            self::field(s, field, v, out, depth).map_err(|e| e.within(field.label()))?;
        }
    }
    Ok(())
}

fn field(
    s: &Schema,
    f: &Field,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtoError> {
    match f.card {
        Card::Single => single(s, f.number, f.ty, v, out, depth),
        Card::Repeated => {
            let Value::Array(items) = v else {
                return Err(expected("an array", v));
            };
            for (i, item) in items.iter().enumerate() {
                single(s, f.number, f.ty, item, out, depth)
                    .map_err(|e| e.within(format!("[{i}]")))?;
            }
            Ok(())
        }
        Card::Map(value_ty) => {
            let Value::Object(entries) = v else {
                return Err(expected("an object", v));
            };
            for (key, val) in entries {
                put_nested(out, f.number, |o| {
                    put_bytes(o, 1, key.as_bytes());
                    if !val.is_null() {
                        single(s, 2, value_ty, val, o, depth)?;
                    }
                    Ok(())
                })
                .map_err(|e: ProtoError| e.within(key.clone()))?;
            }
            Ok(())
        }
    }
}

/// Writes one value of type `ty` as field `number`.
fn single(
    s: &Schema,
    number: u32,
    ty: Ty,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtoError> {
    match ty {
        Ty::Message(id) => put_nested(out, number, |o| message(s, id, v, o, depth + 1)),
        Ty::Scalar(sc) => scalar(sc, number, v, out),
    }
}

fn scalar(sc: Scalar, number: u32, v: &Value, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    match (sc, v) {
        (Scalar::Bool, Value::Bool(b)) => put_varint_field(out, number, u64::from(*b)),
        (Scalar::Int32, v) => {
            let n = integer(v)?;
            let n = i32::try_from(n)
                .map_err(|_| ProtoError::Encode(format!("{n} does not fit in int32")))?;
            // Negative int32 values are sign-extended to 64 bits on the wire.
            put_varint_field(out, number, i64::from(n) as u64);
        }
        (Scalar::Int64, v) => put_varint_field(out, number, integer(v)? as u64),
        (Scalar::Double, Value::Number(n)) => {
            put_tag(out, number, WT_FIXED64);
            out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
        }
        (Scalar::String, Value::String(text)) => put_bytes(out, number, text.as_bytes()),
        (Scalar::Bytes, Value::String(text)) => {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| ProtoError::Encode(format!("invalid base64: {e}")))?;
            put_bytes(out, number, &raw);
        }
        (Scalar::Bool, v) => return Err(expected("a boolean", v)),
        (Scalar::Double, v) => return Err(expected("a number", v)),
        (Scalar::String | Scalar::Bytes, v) => return Err(expected("a string", v)),
    }
    Ok(())
}

/// A JSON integer (Go rejects fractions when decoding into integer fields).
fn integer(v: &Value) -> Result<i64, ProtoError> {
    let Value::Number(n) = v else {
        return Err(expected("an integer", v));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
        _ => Err(ProtoError::Encode(format!("{n} is not an int64"))),
    }
}

fn text<'a>(v: &'a Value, what: &str) -> Result<&'a str, ProtoError> {
    v.as_str().ok_or_else(|| expected(what, v))
}

fn special_value(
    s: &Schema,
    msg: &Message,
    special: Special,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtoError> {
    match special {
        Special::Time | Special::MicroTime => {
            let t = text(v, "an RFC 3339 time string")?;
            let (secs, nanos) = parse_rfc3339(t)
                .ok_or_else(|| ProtoError::Encode(format!("invalid RFC 3339 time {t:?}")))?;
            // metav1.Time keeps whole seconds only; MicroTime keeps microseconds.
            let nanos = if special == Special::MicroTime {
                nanos / 1000 * 1000
            } else {
                0
            };
            put_varint_field(out, 1, secs as u64);
            put_varint_field(out, 2, nanos as u64);
        }
        Special::Duration => {
            let d = text(v, "a duration string")?;
            let nanos = parse_duration(d)
                .ok_or_else(|| ProtoError::Encode(format!("invalid duration {d:?}")))?;
            put_varint_field(out, 1, nanos as u64);
        }
        Special::Quantity => match v {
            Value::String(q) => put_bytes(out, 1, q.as_bytes()),
            Value::Number(n) => put_bytes(out, 1, n.to_string().as_bytes()),
            other => return Err(expected("a quantity string", other)),
        },
        Special::IntOrString => {
            let (kind, int, string) = match v {
                Value::String(t) => (1, 0, t.as_str()),
                other => (0, integer(other).and_then(int32)?, ""),
            };
            put_varint_field(out, 1, kind);
            put_varint_field(out, 2, i64::from(int) as u64);
            put_bytes(out, 3, string.as_bytes());
        }
        Special::RawExtension | Special::RawJson => {
            let raw = serde_json::to_vec(v).map_err(|e| ProtoError::Encode(e.to_string()))?;
            put_bytes(out, 1, &raw);
        }
        Special::Wrapper => {
            let items = msg
                .fields
                .first()
                .ok_or_else(|| ProtoError::Encode("empty wrapper".into()))?;
            let Value::Array(values) = v else {
                return Err(expected("an array", v));
            };
            for item in values {
                single(s, items.number, items.ty, item, out, depth)?;
            }
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            schema_or(s, msg, special, v, out, depth)?;
        }
        Special::None => unreachable!("plain messages are objects"),
    }
    Ok(())
}

fn int32(n: i64) -> Result<i32, ProtoError> {
    i32::try_from(n).map_err(|_| ProtoError::Encode(format!("{n} does not fit in int32")))
}

/// apiextensions' `JSONSchemaPropsOr*`: an object is the schema (field 1, or 2 for OrBool
/// with `allows` set), an array the alternatives (field 2), a bool `allows` (field 1).
fn schema_or(
    s: &Schema,
    msg: &Message,
    special: Special,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtoError> {
    let field = |n: u32| {
        msg.field_by_number(n)
            .map(|(_, f)| f)
            .ok_or_else(|| ProtoError::Encode(format!("{} lacks field {n}", msg.name)))
    };
    match (special, v) {
        (Special::SchemaOrBool, Value::Bool(b)) => put_varint_field(out, 1, u64::from(*b)),
        (Special::SchemaOrBool, Value::Object(_)) => {
            put_varint_field(out, 1, 1);
            single(s, 2, field(2)?.ty, v, out, depth)?;
        }
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Object(_)) => {
            single(s, 1, field(1)?.ty, v, out, depth)?;
        }
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Array(items)) => {
            let ty = field(2)?.ty;
            for item in items {
                single(s, 2, ty, item, out, depth)?;
            }
        }
        (_, other) => return Err(expected("a schema object, array or boolean", other)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::schema::SCHEMA;

    /// Special messages against bytes derived by hand from the protobuf encoding rules.
    #[test]
    fn special_types_match_hand_derived_bytes() {
        const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
        let secs_2024_05_01_noon = [0xc0, 0xdd, 0xc8, 0xb1, 0x06];
        let time = [&[0x08][..], &secs_2024_05_01_noon, &[0x10, 0x00]].concat();
        let micro = [
            &[0x08][..],
            &secs_2024_05_01_noon,
            &[0x10, 0x80, 0x94, 0xef, 0x3a],
        ]
        .concat();
        let cases: Vec<(String, Value, Vec<u8>)> = vec![
            (format!("{META}.Time"), json!("2024-05-01T12:00:00Z"), time),
            (
                format!("{META}.MicroTime"),
                json!("2024-05-01T12:00:00.123456Z"),
                micro,
            ),
            (
                format!("{META}.Duration"),
                json!("1m30s"),
                vec![0x08, 0x80, 0x88, 0xac, 0xa3, 0xcf, 0x02],
            ),
            (
                "k8s.io.apimachinery.pkg.api.resource.Quantity".into(),
                json!("500m"),
                b"\x0a\x04500m".to_vec(),
            ),
            (
                "k8s.io.apimachinery.pkg.util.intstr.IntOrString".into(),
                json!(8080),
                vec![0x08, 0x00, 0x10, 0x90, 0x3f, 0x1a, 0x00],
            ),
            (
                "k8s.io.apimachinery.pkg.util.intstr.IntOrString".into(),
                json!(-1),
                [&[0x08, 0x00, 0x10][..], &[0xff; 9], &[0x01, 0x1a, 0x00]].concat(),
            ),
            (
                "k8s.io.apimachinery.pkg.util.intstr.IntOrString".into(),
                json!("http"),
                b"\x08\x01\x10\x00\x1a\x04http".to_vec(),
            ),
            (
                "k8s.io.apimachinery.pkg.runtime.RawExtension".into(),
                json!({"a": 1}),
                b"\x0a\x07{\"a\":1}".to_vec(),
            ),
            (
                format!("{META}.FieldsV1"),
                json!({"f:a": {}}),
                b"\x0a\x0a{\"f:a\":{}}".to_vec(),
            ),
            (
                format!("{META}.Verbs"),
                json!(["get", "list"]),
                b"\x0a\x03get\x0a\x04list".to_vec(),
            ),
            (
                "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool"
                    .into(),
                json!(false),
                vec![0x08, 0x00],
            ),
            (
                "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool"
                    .into(),
                json!({"type": "string"}),
                b"\x08\x01\x12\x08\x2a\x06string".to_vec(),
            ),
        ];
        let s = &*SCHEMA;
        for (name, value, bytes) in cases {
            let id = s.id(&name).expect(&name);
            let mut out = Vec::new();
            super::message(s, id, &value, &mut out, 0).expect("encodes");
            assert_eq!(out, bytes, "encoding {name} {value}");
            let back = crate::decode::message(s, id, &bytes, 0).expect("decodes");
            assert_eq!(back, value, "decoding {name}");
        }
    }

    #[test]
    fn empty_special_messages_decode_to_go_zero_json() {
        let s = &*SCHEMA;
        let cases = [
            ("k8s.io.apimachinery.pkg.apis.meta.v1.Time", Value::Null),
            (
                "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
                Value::Null,
            ),
            ("k8s.io.apimachinery.pkg.apis.meta.v1.Duration", json!("0s")),
            ("k8s.io.apimachinery.pkg.api.resource.Quantity", json!("0")),
            ("k8s.io.apimachinery.pkg.util.intstr.IntOrString", json!(0)),
            ("k8s.io.apimachinery.pkg.runtime.RawExtension", Value::Null),
            ("k8s.io.apimachinery.pkg.apis.meta.v1.Verbs", Value::Null),
        ];
        for (name, want) in cases {
            let got = crate::decode::message(s, s.id(name).expect(name), &[], 0).expect("decodes");
            assert_eq!(got, want, "{name}");
        }
    }
}
