//! The Kubernetes protobuf envelope (`MAGIC` + `runtime.Unknown`) and watch-stream frames.
//!
//! `Unknown` fields: typeMeta (1) {apiVersion (1), kind (2)}, raw (2) = the object's own
//! message, contentEncoding (3), contentType (4). Go writes 3 and 4 even when empty; so do we.
//! A watch frame is a 4-byte big-endian length followed by a `metav1.WatchEvent`
//! {type (1), object (2) = RawExtension {raw (1) = the object's envelope}} with no envelope
//! of its own (upstream's protobuf StreamSerializer is the raw serializer).

use serde_json::{Map, Value};

use crate::schema::SCHEMA;
use crate::wire::{put_bytes, put_nested, Reader, WireValue};
use crate::{
    decode, encode as encode_json, ProtoError, MAGIC, MAX_NESTING_DEPTH, MEDIA_TYPE,
    WATCH_FRAME_LEN_MAX,
};

/// The parsed fields of an `Unknown`.
#[derive(Default)]
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
    content_type: String,
}

fn text(w: WireValue<'_>) -> Result<String, ProtoError> {
    match w {
        WireValue::Len(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        _ => Err(ProtoError::Decode(
            "wrong wire type for a string in the envelope".into(),
        )),
    }
}

fn parse_unknown(bytes: &[u8]) -> Result<Unknown<'_>, ProtoError> {
    let mut u = Unknown::default();
    let mut r = Reader::new(bytes);
    while let Some((number, w)) = r.field()? {
        match (number, w) {
            (1, WireValue::Len(meta)) => {
                let mut m = Reader::new(meta);
                while let Some((n, w)) = m.field()? {
                    match n {
                        1 => u.api_version = text(w)?,
                        2 => u.kind = text(w)?,
                        _ => {}
                    }
                }
            }
            (2, WireValue::Len(raw)) => u.raw = raw,
            (3, w) => u.content_encoding = text(w)?,
            (4, w) => u.content_type = text(w)?,
            (1 | 2, _) => return Err(ProtoError::Decode("wrong wire type in the envelope".into())),
            _ => {}
        }
    }
    Ok(u)
}

/// Checks the 4-byte prefix and returns what follows it.
fn strip_magic(body: &[u8]) -> Result<&[u8], ProtoError> {
    match body.strip_prefix(&MAGIC) {
        Some(rest) => Ok(rest),
        None if body.len() < MAGIC.len() && MAGIC.starts_with(body) => Err(ProtoError::Truncated),
        None => Err(ProtoError::BadMagic),
    }
}

/// [`crate::decode`] at a nesting depth (envelopes nest inside RawExtensions).
pub(crate) fn decode_at(body: &[u8], depth: usize) -> Result<Value, ProtoError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(ProtoError::Decode(format!(
            "objects nested deeper than {MAX_NESTING_DEPTH}"
        )));
    }
    let u = parse_unknown(strip_magic(body)?)?;
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
    let Value::Object(fields) = decode::message(schema, id, u.raw, depth)? else {
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

/// [`crate::encode`].
pub(crate) fn encode(obj: &Value) -> Result<Vec<u8>, ProtoError> {
    let field = |name: &str| {
        obj.get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(api_version), Some(kind)) = (field("apiVersion"), field("kind")) else {
        return Err(ProtoError::Encode(
            "object must carry apiVersion and kind".into(),
        ));
    };
    let schema = &*SCHEMA;
    let id = schema
        .kind(api_version, kind)
        .ok_or_else(|| ProtoError::UnknownKind {
            api_version: api_version.into(),
            kind: kind.into(),
        })?;
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&MAGIC);
    put_nested::<ProtoError>(&mut out, 1, |o| {
        put_bytes(o, 1, api_version.as_bytes());
        put_bytes(o, 2, kind.as_bytes());
        Ok(())
    })?;
    put_nested(&mut out, 2, |o| encode_json::message(schema, id, obj, o, 0))?;
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Ok(out)
}

/// [`crate::encode_watch_event`].
pub(crate) fn encode_watch_event(event_type: &str, obj: &Value) -> Result<Vec<u8>, ProtoError> {
    let object = encode(obj)?;
    let mut out = Vec::with_capacity(object.len() + event_type.len() + 16);
    out.extend_from_slice(&[0; 4]);
    put_bytes(&mut out, 1, event_type.as_bytes());
    put_nested::<ProtoError>(&mut out, 2, |o| {
        put_bytes(o, 1, &object);
        Ok(())
    })?;
    let len = out.len() - 4;
    if len > WATCH_FRAME_LEN_MAX {
        return Err(ProtoError::Encode(format!(
            "watch event of {len} bytes exceeds {WATCH_FRAME_LEN_MAX}"
        )));
    }
    out[..4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(out)
}

/// [`crate::decode_watch_event`].
pub(crate) fn decode_watch_event(frame: &[u8]) -> Result<(String, Value), ProtoError> {
    let header: [u8; 4] = frame
        .get(..4)
        .ok_or(ProtoError::Truncated)?
        .try_into()
        .expect("4 bytes");
    let len = u32::from_be_bytes(header) as usize;
    let body = frame.get(4..4 + len).ok_or(ProtoError::Truncated)?;
    let (mut event_type, mut raw) = (String::new(), &[][..]);
    let mut r = Reader::new(body);
    while let Some((number, w)) = r.field()? {
        match (number, w) {
            (1, w) => event_type = text(w)?,
            (2, WireValue::Len(ext)) => {
                let mut e = Reader::new(ext);
                while let Some((n, w)) = e.field()? {
                    if let (1, WireValue::Len(b)) = (n, w) {
                        raw = b;
                    }
                }
            }
            _ => {}
        }
    }
    let object = if raw.starts_with(&MAGIC) {
        decode_at(raw, 1)?
    } else {
        serde_json::from_slice(raw)
            .map_err(|e| ProtoError::Decode(format!("watch event object: {e}")))?
    };
    Ok((event_type, object))
}
