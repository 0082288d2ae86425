//! Protobuf wire format: a bounds-checked field reader and the writing primitives.
//! Only the wire types Kubernetes uses exist here (no groups).

use crate::ProtoError;

/// Wire type numbers (the low 3 bits of a tag).
pub(crate) const WT_VARINT: u8 = 0;
pub(crate) const WT_FIXED64: u8 = 1;
pub(crate) const WT_LEN: u8 = 2;
pub(crate) const WT_FIXED32: u8 = 5;

/// Longest valid varint: 10 bytes carry 64 bits.
const VARINT_LEN_MAX: usize = 10;

/// One field value as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32(u32),
}

/// Reads `(field number, value)` pairs from one message's bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Whether every byte was consumed.
    pub fn is_done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut value = 0u64;
        for i in 0..VARINT_LEN_MAX {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(ProtoError::Truncated);
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtoError::Decode("varint longer than 10 bytes".into()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        let end = self.pos.checked_add(n).ok_or(ProtoError::Truncated)?;
        let bytes = self.buf.get(self.pos..end).ok_or(ProtoError::Truncated)?;
        self.pos = end;
        Ok(bytes)
    }

    /// The next field, or None at the end of the message.
    pub fn field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, ProtoError> {
        if self.is_done() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).map_err(|_| bad("field number out of range"))?;
        if number == 0 {
            return Err(bad("field number 0"));
        }
        let value = match (tag & 7) as u8 {
            WT_VARINT => WireValue::Varint(self.varint()?),
            WT_FIXED64 => WireValue::Fixed64(u64::from_le_bytes(self.fixed()?)),
            WT_LEN => {
                let len = usize::try_from(self.varint()?).map_err(|_| ProtoError::Truncated)?;
                WireValue::Len(self.take(len)?)
            }
            WT_FIXED32 => WireValue::Fixed32(u32::from_le_bytes(self.fixed()?)),
            other => return Err(bad(&format!("unsupported wire type {other}"))),
        };
        Ok(Some((number, value)))
    }

    /// A little-endian 8-byte word (packed doubles).
    pub fn fixed64(&mut self) -> Result<u64, ProtoError> {
        Ok(u64::from_le_bytes(self.fixed()?))
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], ProtoError> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }
}

fn bad(what: &str) -> ProtoError {
    ProtoError::Decode(format!("malformed protobuf: {what}"))
}

/// Appends `value` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a field tag.
pub(crate) fn put_tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field holding `bytes`.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, WT_LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field.
pub(crate) fn put_varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_tag(out, number, WT_VARINT);
    put_varint(out, value);
}

/// Appends a length-delimited field whose content `body` writes in place: one byte is
/// reserved for the length and the content is shifted only when it needs a longer varint.
pub(crate) fn put_nested<E>(
    out: &mut Vec<u8>,
    number: u32,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    put_tag(out, number, WT_LEN);
    let len_at = out.len();
    out.push(0);
    body(out)?;
    let len = out.len() - len_at - 1;
    if len < 0x80 {
        out[len_at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(VARINT_LEN_MAX);
        put_varint(&mut prefix, len as u64);
        out.splice(len_at..=len_at, prefix);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_boundaries() {
        for value in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            put_varint(&mut buf, value);
            assert_eq!(Reader::new(&buf).varint().expect("decodes"), value);
        }
    }

    #[test]
    fn reader_reports_truncation_and_bad_fields() {
        let cases: [(&[u8], &str); 5] = [
            (&[0x0a, 0x05, b'a'], "Truncated"),
            (&[0x08], "Truncated"),
            (
                &[
                    0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                ],
                "Decode",
            ),
            (&[0x00, 0x01], "Decode"),
            (&[0x0b], "Decode"),
        ];
        for (bytes, want) in cases {
            let err = Reader::new(bytes).field().expect_err("must fail");
            assert!(format!("{err:?}").starts_with(want), "{bytes:?}: {err:?}");
        }
    }

    #[test]
    fn nested_lengths_longer_than_one_byte_are_shifted() {
        for len in [0usize, 1, 127, 128, 300, 20_000] {
            let mut out = vec![0xAA];
            put_nested::<()>(&mut out, 2, |o| {
                o.extend(std::iter::repeat_n(7u8, len));
                Ok(())
            })
            .expect("no error");
            let mut r = Reader::new(&out[1..]);
            let (number, value) = r.field().expect("field").expect("some");
            assert_eq!(number, 2);
            assert_eq!(value, WireValue::Len(&vec![7u8; len]));
            assert!(r.is_done());
        }
    }
}
