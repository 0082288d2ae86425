//! Shared by the fuzz targets: valid segment images built from fuzz input, and damage to them.

use keel_engine::format::{self, Op, SegmentHeader};
use keel_engine::Revision;

pub fn header() -> [u8; format::SEGMENT_HEADER_LEN] {
    SegmentHeader {
        shard: 0,
        seq: 1,
        flags: 0,
        compacted: Revision(0),
        size: 0,
    }
    .encode()
}

/// A valid segment from `input`: each record takes a length byte and that many bytes of key
/// and value; batches hold 1..=4 records. Returns the image and the number of input bytes used.
pub fn build_segment(input: &[u8]) -> (Vec<u8>, usize) {
    let mut seg = header().to_vec();
    let mut i = 0;
    let mut rev = 1u64;
    while i + 2 <= input.len() && seg.len() < 48 << 10 {
        let nrec = 1 + (input[i] % 4) as usize;
        i += 1;
        let mut batch = vec![0u8; format::BATCH_HEADER_LEN];
        let first = rev;
        let mut n = 0;
        let mut last = rev;
        for _ in 0..nrec {
            if i >= input.len() {
                break;
            }
            let len = (input[i] % 64) as usize;
            i += 1;
            let body = &input[i..(i + len).min(input.len())];
            i += body.len();
            let split = body.len().min(1 + body.len() / 3);
            let (key, value) = body.split_at(split);
            let op = if value.is_empty() {
                Op::Delete
            } else {
                Op::Put
            };
            let key: &[u8] = if key.is_empty() { b"k" } else { key };
            last = rev;
            format::encode_record::<()>(
                &mut batch,
                Revision(rev),
                Revision(rev / 2),
                op,
                key,
                |b| {
                    b.extend_from_slice(value);
                    Ok(())
                },
            )
            .unwrap();
            rev += 1 + (len as u64 % 3);
            n += 1;
        }
        if n == 0 {
            break;
        }
        format::seal_batch(&mut batch, n, Revision(first), Revision(last));
        seg.extend_from_slice(&batch);
    }
    seg.resize(seg.len() + 64 + (i % 200), 0);
    (seg, i)
}

/// Damages `seg` as `edits` says: each edit is 4 bytes (kind, position hi, position lo, arg).
pub fn damage(seg: &mut Vec<u8>, edits: &[u8]) {
    for e in edits.chunks_exact(4) {
        if seg.is_empty() {
            return;
        }
        let pos = ((e[1] as usize) << 8 | e[2] as usize) % seg.len();
        match e[0] % 5 {
            0 => seg[pos] ^= 1 << (e[3] % 8),
            1 => seg[pos] = e[3],
            2 => {
                let end = (pos + e[3] as usize).min(seg.len());
                seg[pos..end].fill(0);
            }
            3 => seg.truncate(pos),
            _ => {
                // Copy a run of bytes from elsewhere in the image.
                let src = (pos * 7 + e[3] as usize) % seg.len();
                let n = (e[3] as usize).min(seg.len() - pos).min(seg.len() - src);
                let chunk = seg[src..src + n].to_vec();
                seg[pos..pos + n].copy_from_slice(&chunk);
            }
        }
    }
}
