//! `format::scan_segment` (what recovery runs on every segment) on arbitrary bytes.
//!
//! The first input byte picks a mode:
//! - `0..=63`: the rest of the input is the whole segment image;
//! - `64..=191`: a valid segment header followed by the rest of the input;
//! - `192..=255`: a valid segment built from the input (records cut from it), then damaged by
//!   edits described by the input's tail, so the fuzzer gets past the checksums.
//!
//! Whatever the image, the scan must not panic, every reported record must lie inside the
//! buffer, revisions must strictly increase, batches must be reported in order, and the end
//! it reports must lie inside the buffer.
#![no_main]

mod common;

use common::{build_segment, damage, header};
use keel_engine::format::{self, ScanEnd};
use keel_engine::Revision;
use libfuzzer_sys::fuzz_target;

fn check(b: &[u8]) {
    let base = b.as_ptr() as usize;
    let mut last_rev = Revision(0);
    let mut last_batch: Option<u64> = None;
    let mut batch_end = 0u64;
    let end = format::scan_segment(
        b,
        |off, h| {
            assert!(
                last_batch.is_none_or(|p| off > p),
                "batch at {off} after {last_batch:?}"
            );
            assert!(
                off >= batch_end,
                "batch at {off} overlaps the previous one (ends {batch_end})"
            );
            assert!(off as usize + format::BATCH_HEADER_LEN + h.len as usize <= b.len());
            last_batch = Some(off);
            batch_end = off + format::BATCH_HEADER_LEN as u64 + h.len as u64;
        },
        |r| {
            let off = r.offset as usize;
            let len = format::RECORD_HEADER_LEN + r.key.len() + r.value.len();
            assert!(
                off + len <= b.len(),
                "record at {off} of {len} bytes past {}",
                b.len()
            );
            let key_at = r.key.as_ptr() as usize - base;
            let value_at = r.value.as_ptr() as usize - base;
            assert!(key_at == off + format::RECORD_HEADER_LEN && value_at == key_at + r.key.len());
            assert!(value_at + r.value.len() <= b.len());
            assert!(
                r.revision > last_rev,
                "record at {off}: revision {} after {last_rev}",
                r.revision
            );
            last_rev = r.revision;
        },
    );
    let end_at = match end {
        ScanEnd::Clean { end } => end,
        ScanEnd::TornTail { valid_end } => valid_end,
        ScanEnd::Corrupt { offset, .. } => offset,
    };
    if b.len() >= format::SEGMENT_HEADER_LEN {
        assert!(end_at <= b.len() as u64, "{end:?} past {} bytes", b.len());
        assert!(
            end_at >= format::SEGMENT_HEADER_LEN as u64,
            "{end:?} inside the header"
        );
    }
    if let ScanEnd::Clean { end } | ScanEnd::TornTail { valid_end: end } = end {
        assert!(
            end >= batch_end,
            "{end:?} before the last verified batch end {batch_end}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode {
        0..=63 => check(rest),
        64..=191 => {
            let mut b = header().to_vec();
            b.extend_from_slice(rest);
            check(&b);
        }
        _ => {
            let (mut seg, used) = build_segment(rest);
            check(&seg);
            damage(&mut seg, &rest[used..]);
            check(&seg);
        }
    }
});
