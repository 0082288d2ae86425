//! The Kubernetes protobuf envelope: `MAGIC` + `runtime.Unknown`, read into its fields and
//! written around an object's message.
//!
//! `Unknown` fields: typeMeta (1) {apiVersion (1), kind (2)}, raw (2) = the object's own
//! message, contentEncoding (3), contentType (4). Go writes 3 and 4 even when empty; so do we.
//!
//! Turning `raw` into JSON is the `decode` module's job (`decode::decode_at`), because
//! decoding recurses: a RawExtension inside a message may hold another envelope. Keeping that
//! step there is what lets this module stay below `decode` (no import cycle).

use serde_json::Value;

use crate::encode as encode_json;
use crate::schema::SCHEMA;
use crate::wire::{put_bytes, put_nested, Reader, WireValue};
use crate::{ProtoError, MAGIC};

/// The parsed fields of an `Unknown`.
#[derive(Default)]
pub(crate) struct Unknown<'a> {
    pub api_version: String,
    pub kind: String,
    pub raw: &'a [u8],
    pub content_encoding: String,
    pub content_type: String,
}

pub(crate) fn text(w: WireValue<'_>) -> Result<String, ProtoError> {
    match w {
        WireValue::Len(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        _ => Err(ProtoError::Decode(
            "wrong wire type for a string in the envelope".into(),
        )),
    }
}

pub(crate) fn parse_unknown(bytes: &[u8]) -> Result<Unknown<'_>, ProtoError> {
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
pub(crate) fn strip_magic(body: &[u8]) -> Result<&[u8], ProtoError> {
    match body.strip_prefix(&MAGIC) {
        Some(rest) => Ok(rest),
        None if body.len() < MAGIC.len() && MAGIC.starts_with(body) => Err(ProtoError::Truncated),
        None => Err(ProtoError::BadMagic),
    }
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
