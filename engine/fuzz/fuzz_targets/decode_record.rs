//! `format::decode_record` and `format::decode_batch_header` on arbitrary bytes: never panic,
//! and whatever they accept is self-consistent (lengths add up, the record lies inside the
//! buffer, re-encoding the decoded fields reproduces the checksummed bytes).
#![no_main]

use keel_engine::format::{self, Op, RECORD_HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(h) = format::decode_batch_header(data) {
        assert!(data.len() >= format::BATCH_HEADER_LEN);
        assert_eq!(h.len as usize % format::ALIGN, 0);
        assert!(h.first <= h.last);
    }
    // Decode at offset 0 and at an offset taken from the input itself (possibly past the end).
    let mut offsets = vec![0usize];
    if let Some(&b) = data.first() {
        offsets.push(b as usize);
        offsets.push(format::align_up(b as usize));
    }
    for at in offsets {
        let Ok((rec, span)) = format::decode_record(data, at) else {
            continue;
        };
        let len = RECORD_HEADER_LEN + rec.key.len() + rec.value.len();
        assert_eq!(rec.offset, at as u64);
        assert!(
            at + len <= data.len(),
            "record at {at} of {len} bytes past {}",
            data.len()
        );
        assert_eq!(span, format::align_up(len));
        let base = data.as_ptr() as usize;
        let key_at = rec.key.as_ptr() as usize - base;
        let value_at = rec.value.as_ptr() as usize - base;
        assert_eq!(key_at, at + RECORD_HEADER_LEN);
        assert_eq!(value_at, key_at + rec.key.len());
        assert!(matches!(rec.op, Op::Put | Op::Delete));
        // Re-encoding the decoded fields gives the same bytes wherever the encoder writes
        // something fixed (the flags byte and the reserved word are covered by the checksum
        // but not interpreted, so they may differ).
        let mut buf = Vec::new();
        format::encode_record::<()>(
            &mut buf,
            rec.revision,
            rec.prev_revision,
            rec.op,
            rec.key,
            |b| {
                b.extend_from_slice(rec.value);
                Ok(())
            },
        )
        .unwrap();
        let orig = &data[at..at + len];
        assert_eq!(
            buf[format::REC_OFF_LEN..format::REC_OFF_FLAGS],
            orig[format::REC_OFF_LEN..format::REC_OFF_FLAGS]
        );
        assert_eq!(
            buf[format::REC_OFF_VALUE_LEN..format::REC_OFF_RESERVED],
            orig[format::REC_OFF_VALUE_LEN..format::REC_OFF_RESERVED]
        );
        assert_eq!(buf[RECORD_HEADER_LEN..len], orig[RECORD_HEADER_LEN..]);
    }
});
