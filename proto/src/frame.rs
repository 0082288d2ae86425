//! Protobuf watch-stream frames: a 4-byte big-endian length followed by a `metav1.WatchEvent`
//! {type (1), object (2) = RawExtension {raw (1) = the object's envelope}} with no envelope
//! of its own (upstream's protobuf StreamSerializer is the raw serializer).

use serde_json::Value;

use crate::decode::decode_at;
use crate::envelope::{self, text};
use crate::wire::{put_bytes, put_nested, Reader, WireValue};
use crate::{ProtoError, MAGIC, WATCH_FRAME_LEN_MAX};

/// [`crate::encode_watch_event`].
pub(crate) fn encode_watch_event(event_type: &str, obj: &Value) -> Result<Vec<u8>, ProtoError> {
    let object = envelope::encode(obj)?;
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
