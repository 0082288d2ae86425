//! Protobuf -> JSON, producing what Go's `encoding/json` would print for the decoded struct:
//! absent non-pointer fields render as their zero value unless `omitempty`, pointers and
//! slices render only when set (or `null` without `omitempty`), embedded structs are
//! flattened, maps are sorted by key, and the special types use their Go MarshalJSON form.
//!
//! Also decodes whole envelopes (`decode_at`): a RawExtension inside a message may hold a
//! nested envelope, so envelope decoding and message decoding recurse into each other and
//! live together here; the `envelope` module only reads and writes the envelope's fields.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use crate::envelope;
use crate::schema::{Card, Field, Message, MsgId, Scalar, Schema, Special, Ty, SCHEMA};
use crate::timefmt::{format_duration, format_rfc3339, GO_ZERO_TIME_UNIX};
use crate::wire::{Reader, WireValue};
use crate::{ProtoError, MAGIC, MAX_NESTING_DEPTH, MEDIA_TYPE};

/// [`crate::decode`] at a nesting depth (envelopes nest inside RawExtensions).
pub(crate) fn decode_at(body: &[u8], depth: usize) -> Result<Value, ProtoError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(ProtoError::Decode(format!(
            "objects nested deeper than {MAX_NESTING_DEPTH}"
        )));
    }
    let u = envelope::parse_unknown(envelope::strip_magic(body)?)?;
    if !u.content_encoding.is_empty() {
        return Err(ProtoError::Decode(format!(
            "unsupported contentEncoding {:?}",
            u.content_encoding
        )));
    }
    if !u.content_type.is_empty() && u.content_type != MEDIA_TYPE {
        return Err(ProtoError::Decode(format!(
            "unsupported contentType {:?}",
            u.content_type
        )));
    }
    let schema = &*SCHEMA;
    let id = schema
        .kind(&u.api_version, &u.kind)
        .ok_or_else(|| ProtoError::UnknownKind {
            api_version: u.api_version.clone(),
            kind: u.kind.clone(),
        })?;
    let Value::Object(fields) = message(schema, id, u.raw, depth)? else {
        return Err(ProtoError::Decode(format!(
            "{} is not an object kind",
            u.kind
        )));
    };
    // Go prints the embedded TypeMeta first: kind, then apiVersion.
    let mut out = Map::with_capacity(fields.len() + 2);
    out.insert("kind".into(), Value::String(u.kind));
    out.insert("apiVersion".into(), Value::String(u.api_version));
    out.extend(fields);
    Ok(Value::Object(out))
}

/// Decodes the bytes of message `id` into its JSON form.
pub(crate) fn message(
    s: &Schema,
    id: MsgId,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, ProtoError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(ProtoError::Decode(format!(
            "objects nested deeper than {MAX_NESTING_DEPTH}"
        )));
    }
    let msg = s.msg(id);
    match msg.special {
        Special::None => Ok(Value::Object(object(s, msg, bytes, depth)?)),
        special => special_value(s, msg, special, bytes, depth),
    }
}

/// Values collected for one field while reading the wire.
enum Slot {
    Absent,
    One(Value),
    Many(Vec<Value>),
    Entries(Map<String, Value>),
}

fn object(
    s: &Schema,
    msg: &Message,
    bytes: &[u8],
    depth: usize,
) -> Result<Map<String, Value>, ProtoError> {
    let mut slots: Vec<Slot> = msg.fields.iter().map(|_| Slot::Absent).collect();
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.field()? {
        let Some((idx, field)) = msg.field_by_number(number) else {
            continue;
        };
        collect(s, field, wire, &mut slots[idx], depth).map_err(|e| e.within(field.label()))?;
    }
    let mut out = Map::new();
    for (field, slot) in msg.fields.iter().zip(slots) {
        if field.hidden {
            continue;
        }
        let value = match slot {
            Slot::Absent => absent(s, field, depth)?,
            Slot::One(v) => present_single(field, v),
            Slot::Many(items) => Some(Value::Array(items)),
            Slot::Entries(entries) => Some(Value::Object(sorted(entries))),
        };
        match value {
            Some(Value::Object(inner)) if field.inline => out.extend(inner),
            Some(v) if !field.inline => {
                out.insert(field.json.to_string(), v);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Go's JSON output sorts map keys.
fn sorted(entries: Map<String, Value>) -> Map<String, Value> {
    let mut pairs: Vec<(String, Value)> = entries.into_iter().collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    pairs.into_iter().collect()
}

fn collect(
    s: &Schema,
    field: &Field,
    wire: WireValue<'_>,
    slot: &mut Slot,
    depth: usize,
) -> Result<(), ProtoError> {
    match field.card {
        Card::Single => *slot = Slot::One(value(s, field.ty, wire, depth)?),
        Card::Repeated => {
            if !matches!(slot, Slot::Many(_)) {
                *slot = Slot::Many(Vec::new());
            }
            let Slot::Many(items) = slot else {
                unreachable!("just set")
            };
            match (field.ty, wire) {
                // Packed encoding of repeated numbers (proto3 style; Go writes unpacked).
                (Ty::Scalar(sc), WireValue::Len(bytes))
                    if sc != Scalar::String && sc != Scalar::Bytes =>
                {
                    let mut r = Reader::new(bytes);
                    while !r.is_done() {
                        items.push(packed_item(sc, &mut r)?);
                    }
                }
                _ => items.push(value(s, field.ty, wire, depth)?),
            }
        }
        Card::Map(value_ty) => {
            if !matches!(slot, Slot::Entries(_)) {
                *slot = Slot::Entries(Map::new());
            }
            let Slot::Entries(entries) = slot else {
                unreachable!("just set")
            };
            let (key, v) = map_entry(s, value_ty, wire, depth)?;
            entries.insert(key, v);
        }
    }
    Ok(())
}

fn packed_item(sc: Scalar, r: &mut Reader<'_>) -> Result<Value, ProtoError> {
    let wire = match sc {
        Scalar::Double => WireValue::Fixed64(r.fixed64()?),
        _ => WireValue::Varint(r.varint()?),
    };
    scalar(sc, wire)
}

fn map_entry(
    s: &Schema,
    value_ty: Ty,
    wire: WireValue<'_>,
    depth: usize,
) -> Result<(String, Value), ProtoError> {
    let WireValue::Len(bytes) = wire else {
        return Err(wire_mismatch("map entry"));
    };
    let (mut key, mut val) = (String::new(), None);
    let mut r = Reader::new(bytes);
    while let Some((number, w)) = r.field()? {
        match number {
            1 => key = as_string(w)?,
            2 => val = Some(value(s, value_ty, w, depth)?),
            _ => {}
        }
    }
    let val = match val {
        Some(v) => v,
        None => zero_of(s, value_ty, depth)?,
    };
    Ok((key, val))
}

fn value(s: &Schema, ty: Ty, wire: WireValue<'_>, depth: usize) -> Result<Value, ProtoError> {
    match ty {
        Ty::Scalar(sc) => scalar(sc, wire),
        Ty::Message(id) => match wire {
            WireValue::Len(bytes) => message(s, id, bytes, depth + 1),
            _ => Err(wire_mismatch("message")),
        },
    }
}

fn scalar(sc: Scalar, wire: WireValue<'_>) -> Result<Value, ProtoError> {
    Ok(match (sc, wire) {
        (Scalar::Bool, WireValue::Varint(v)) => Value::Bool(v != 0),
        (Scalar::Int32, WireValue::Varint(v)) => Value::from(v as i32),
        (Scalar::Int64, WireValue::Varint(v)) => Value::from(v as i64),
        (Scalar::Double, WireValue::Fixed64(v)) => double(f64::from_bits(v))?,
        (Scalar::String, w) => Value::String(as_string(w)?),
        (Scalar::Bytes, WireValue::Len(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (sc, _) => return Err(wire_mismatch(&format!("{sc:?}"))),
    })
}

/// Go prints integral float64 values without a fraction (`1`, not `1.0`).
fn double(f: f64) -> Result<Value, ProtoError> {
    const EXACT_INT_MAX: f64 = 9_007_199_254_740_992.0; // 2^53
    if f.fract() == 0.0 && f.abs() <= EXACT_INT_MAX {
        return Ok(Value::from(f as i64));
    }
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| ProtoError::Decode("double is not a finite number".into()))
}

fn as_string(wire: WireValue<'_>) -> Result<String, ProtoError> {
    match wire {
        // Go's JSON encoder replaces invalid UTF-8 with U+FFFD as well.
        WireValue::Len(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        _ => Err(wire_mismatch("string")),
    }
}

fn wire_mismatch(what: &str) -> ProtoError {
    ProtoError::Decode(format!("wrong wire type for {what}"))
}

/// A set singular field: Go omits zero scalars under `omitempty` unless they are pointers.
fn present_single(field: &Field, v: Value) -> Option<Value> {
    let omit = field.omitempty
        && !field.nilable
        && matches!(field.ty, Ty::Scalar(_))
        && is_zero_scalar(&v);
    // A zero `metav1.Time` prints as null; under `omitzero` it is left out.
    let omit_zero = field.omitzero && v.is_null();
    (!omit && !omit_zero).then_some(v)
}

/// `""`, `0` or `false`: what `omitempty` leaves out of a non-pointer scalar.
pub(crate) fn is_zero_scalar(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// What Go prints for a field that was not on the wire.
fn absent(s: &Schema, field: &Field, depth: usize) -> Result<Option<Value>, ProtoError> {
    if field.nilable {
        return Ok((!field.omitempty).then_some(Value::Null));
    }
    match field.ty {
        Ty::Scalar(_) if field.omitempty => Ok(None),
        _ if field.omitzero => Ok(None),
        Ty::Message(id) if field.omitempty && s.msg(id).special == Special::Wrapper => Ok(None),
        ty => zero_of(s, ty, depth).map(Some),
    }
}

/// Go's JSON of a zero value of `ty`.
fn zero_of(s: &Schema, ty: Ty, depth: usize) -> Result<Value, ProtoError> {
    Ok(match ty {
        Ty::Scalar(Scalar::Bool) => Value::Bool(false),
        Ty::Scalar(Scalar::Int32 | Scalar::Int64) => Value::from(0),
        Ty::Scalar(Scalar::Double) => Value::from(0.0),
        Ty::Scalar(Scalar::String) => Value::String(String::new()),
        Ty::Scalar(Scalar::Bytes) => Value::Null,
        Ty::Message(id) => message(s, id, &[], depth + 1)?,
    })
}

/// Reads the fields of a small special message as (number, wire value) pairs.
fn fields_of(bytes: &[u8]) -> Result<Vec<(u32, WireValue<'_>)>, ProtoError> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    while let Some(f) = r.field()? {
        out.push(f);
    }
    Ok(out)
}

fn last<'a>(fields: &[(u32, WireValue<'a>)], number: u32) -> Option<WireValue<'a>> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| *n == number)
        .map(|(_, w)| *w)
}

fn varint_of(fields: &[(u32, WireValue<'_>)], number: u32) -> Result<u64, ProtoError> {
    match last(fields, number) {
        None => Ok(0),
        Some(WireValue::Varint(v)) => Ok(v),
        Some(_) => Err(wire_mismatch("integer")),
    }
}

fn bytes_of<'a>(fields: &[(u32, WireValue<'a>)], number: u32) -> Result<&'a [u8], ProtoError> {
    match last(fields, number) {
        None => Ok(&[]),
        Some(WireValue::Len(b)) => Ok(b),
        Some(_) => Err(wire_mismatch("bytes")),
    }
}

fn special_value(
    s: &Schema,
    msg: &Message,
    special: Special,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, ProtoError> {
    let f = fields_of(bytes)?;
    Ok(match special {
        Special::Time | Special::MicroTime => {
            let micro = special == Special::MicroTime;
            // Go reads an empty message as the zero time, printed as null.
            let secs = varint_of(&f, 1)? as i64;
            let nanos = if micro { varint_of(&f, 2)? as i32 } else { 0 };
            if f.is_empty() || (secs == GO_ZERO_TIME_UNIX && nanos == 0) {
                Value::Null
            } else {
                Value::String(format_rfc3339(secs, i64::from(nanos), micro))
            }
        }
        Special::Duration => Value::String(format_duration(varint_of(&f, 1)? as i64)),
        Special::Quantity => {
            let text = String::from_utf8_lossy(bytes_of(&f, 1)?).into_owned();
            Value::String(if text.is_empty() { "0".into() } else { text })
        }
        Special::IntOrString => match varint_of(&f, 1)? {
            0 => Value::from(varint_of(&f, 2)? as i32),
            _ => Value::String(String::from_utf8_lossy(bytes_of(&f, 3)?).into_owned()),
        },
        Special::RawExtension | Special::RawJson => raw_json(bytes_of(&f, 1)?, depth)?,
        Special::Wrapper => {
            let items = msg
                .fields
                .first()
                .ok_or_else(|| ProtoError::Decode("empty wrapper".into()))?;
            let values: Result<Vec<Value>, ProtoError> = f
                .iter()
                .filter(|(n, _)| *n == items.number)
                .map(|(_, w)| value(s, items.ty, *w, depth))
                .collect();
            let values = values?;
            if values.is_empty() {
                Value::Null
            } else {
                Value::Array(values)
            }
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            schema_or(s, msg, special, &f, depth)?
        }
        Special::None => unreachable!("plain messages are objects"),
    })
}

/// RawExtension / FieldsV1 / JSON bytes: JSON text, or (inside watch events and Lists) a
/// nested protobuf envelope.
fn raw_json(raw: &[u8], depth: usize) -> Result<Value, ProtoError> {
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    if raw.starts_with(&MAGIC) {
        return decode_at(raw, depth + 1);
    }
    serde_json::from_slice(raw).map_err(|e| ProtoError::Decode(format!("embedded JSON: {e}")))
}

/// apiextensions' `JSONSchemaPropsOr{Array,Bool,StringArray}`: field 1 is the schema (or,
/// for OrBool, `allows`), the rest the alternative.
fn schema_or(
    s: &Schema,
    msg: &Message,
    special: Special,
    f: &[(u32, WireValue<'_>)],
    depth: usize,
) -> Result<Value, ProtoError> {
    let field = |n: u32| msg.field_by_number(n).map(|(_, fd)| fd);
    let sub = |n: u32| -> Result<Option<Value>, ProtoError> {
        match (field(n), last(f, n)) {
            (Some(fd), Some(w)) => value(s, fd.ty, w, depth).map(Some),
            _ => Ok(None),
        }
    };
    let list = |n: u32| -> Result<Vec<Value>, ProtoError> {
        let Some(fd) = field(n) else {
            return Ok(Vec::new());
        };
        f.iter()
            .filter(|(m, _)| *m == n)
            .map(|(_, w)| value(s, fd.ty, *w, depth))
            .collect()
    };
    Ok(match special {
        Special::SchemaOrBool => match sub(2)? {
            Some(schema) => schema,
            None => Value::Bool(varint_of(f, 1)? != 0),
        },
        _ => {
            let alternatives = list(2)?;
            if !alternatives.is_empty() {
                Value::Array(alternatives)
            } else {
                sub(1)?.unwrap_or(Value::Null)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::schema::SCHEMA;
    use crate::wire::put_bytes;
    use crate::{ProtoError, MAX_NESTING_DEPTH};

    /// JSONSchemaProps nested through its `not` field `levels` times.
    fn nested_schema(levels: usize) -> Vec<u8> {
        const NOT_FIELD: u32 = 28;
        (0..levels).fold(Vec::new(), |inner, _| {
            let mut out = Vec::new();
            put_bytes(&mut out, NOT_FIELD, &inner);
            out
        })
    }

    #[test]
    fn nesting_is_bounded_in_both_directions() {
        let s = &*SCHEMA;
        let id = s
            .id("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
            .expect("schema props");
        let ok = super::message(s, id, &nested_schema(MAX_NESTING_DEPTH / 2), 0)
            .expect("moderate depth decodes");
        let mut back = Vec::new();
        crate::encode::message(s, id, &ok, &mut back, 0).expect("moderate depth encodes");
        assert_eq!(back, nested_schema(MAX_NESTING_DEPTH / 2));
        let err =
            super::message(s, id, &nested_schema(MAX_NESTING_DEPTH + 5), 0).expect_err("too deep");
        assert!(
            matches!(&err, ProtoError::Decode(m) if m.contains("nested deeper")),
            "{err:?}"
        );
        let mut deep = serde_json::json!({});
        for _ in 0..MAX_NESTING_DEPTH + 5 {
            deep = serde_json::json!({ "not": deep });
        }
        let err = crate::encode::message(s, id, &deep, &mut Vec::new(), 0).expect_err("too deep");
        assert!(
            matches!(&err, ProtoError::Encode(m) if m.contains("nested deeper")),
            "{err:?}"
        );
    }
}
