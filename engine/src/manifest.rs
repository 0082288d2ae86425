//! The `MANIFEST` file: which segment files each shard's log consists of, how long each is,
//! which revisions it holds, and the revision ceiling. Pure encoding and decoding, no I/O
//! (`keeper.rs` keeps it up to date on disk; `FORMAT.md` documents every byte and
//! `tests/format_doc.rs` checks these constants against it).
//!
//! Why it exists: a segment's own checksums catch a damaged record, but not a file that is
//! missing, extra, shorter than it was, or whose last batches were cleanly erased. The manifest
//! is the store's record of what must be there, written (atomically, synced) at the rare
//! moments the set of segments changes, when the revision ceiling is raised, on a timer, and at
//! a clean close, never once per batch:
//!
//! ```text
//! open        shard 0: 1 sealed end 65480 revs 1..=700 | 2 ACTIVE end 64 (empty)   ceiling 1000700
//! (writes)    segment 2's data grows; the manifest is not rewritten per batch
//! refresh     shard 0: 1 sealed ...                    | 2 ACTIVE end 30112 revs 701..=960
//! rollover    shard 0: 1 sealed ... | 2 sealed end 65496 revs 701..=1399 | 3 ACTIVE end 64
//! close       same, CLEAN: every active end is exact; ceiling = the last revision handed out
//! ```
//!
//! A sealed segment's `end` is exact: recovery requires the file to end there. An active
//! segment's `end` is a lower bound on what was synced: recovery requires data up to it and
//! accepts verified batches after it, and only after it a torn last batch (`FORMAT.md`,
//! "Recovery").

use crate::format::{get_u32, get_u64};
use crate::Revision;

pub const MANIFEST_MAGIC: [u8; 8] = *b"KEELMAN\0";
/// The manifest appeared with format version 2 and carries the store's format version.
pub const MANIFEST_VERSION: u32 = crate::format::FORMAT_VERSION;
pub const MANIFEST_HEADER_LEN: usize = 48;
pub const MAN_OFF_MAGIC: usize = 0;
pub const MAN_OFF_VERSION: usize = MAN_OFF_MAGIC + 8;
pub const MAN_OFF_SHARDS: usize = MAN_OFF_VERSION + 4;
pub const MAN_OFF_GENERATION: usize = MAN_OFF_SHARDS + 4;
pub const MAN_OFF_CEILING: usize = MAN_OFF_GENERATION + 8;
pub const MAN_OFF_COMPACTED: usize = MAN_OFF_CEILING + 8;
pub const MAN_OFF_FLAGS: usize = MAN_OFF_COMPACTED + 8;
pub const MAN_OFF_ENTRIES: usize = MAN_OFF_FLAGS + 4;
/// Manifest flag: written by a clean close; every active segment's `end` is exact.
pub const MAN_FLAG_CLEAN: u32 = 1;

pub const ENTRY_LEN: usize = 48;
pub const ENT_OFF_SHARD: usize = 0;
pub const ENT_OFF_FLAGS: usize = ENT_OFF_SHARD + 4;
pub const ENT_OFF_SEQ: usize = ENT_OFF_FLAGS + 4;
pub const ENT_OFF_END: usize = ENT_OFF_SEQ + 8;
pub const ENT_OFF_SIZE: usize = ENT_OFF_END + 8;
pub const ENT_OFF_FIRST_REV: usize = ENT_OFF_SIZE + 8;
pub const ENT_OFF_LAST_REV: usize = ENT_OFF_FIRST_REV + 8;
/// Entry flag: the shard's segment being appended to (its last entry); `end` is a lower bound.
pub const ENTRY_ACTIVE: u32 = 1;
/// Entry flag: the segment's header has the `REWRITTEN` flag.
pub const ENTRY_REWRITTEN: u32 = 2;
/// Entry flag: a rewrite of this segment is being renamed into place: the file is either the
/// entry before this one (same seq) or this one.
pub const ENTRY_PENDING: u32 = 4;
/// Entry flag: the segment is being deleted (all of it compacted away); the file may be gone.
pub const ENTRY_REMOVING: u32 = 8;
const ENTRY_FLAGS_KNOWN: u32 = ENTRY_ACTIVE | ENTRY_REWRITTEN | ENTRY_PENDING | ENTRY_REMOVING;
/// The CRC-32 of everything before it.
pub const MANIFEST_TRAILER_LEN: usize = 4;

const _: () = assert!(MAN_OFF_ENTRIES + 4 == MANIFEST_HEADER_LEN);
const _: () = assert!(ENT_OFF_LAST_REV + 8 == ENTRY_LEN);

/// One segment of a shard's log, as the manifest records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub flags: u32,
    pub seq: u64,
    /// End of the data: exact for a sealed segment, a synced lower bound for an active one.
    pub end: u64,
    /// The file's length.
    pub size: u64,
    /// Lowest and highest revision in `[header, end)`; 0 when there is none.
    pub first: Revision,
    pub last: Revision,
}

impl Entry {
    pub fn is(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// The revisions it holds, for error messages and reports.
    pub fn revisions(&self) -> Option<std::ops::RangeInclusive<Revision>> {
        (self.last > Revision::ZERO).then_some(self.first..=self.last)
    }
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Manifest {
    /// Counts writes, for diagnostics (a newer manifest has a larger one).
    pub generation: u64,
    /// Every revision ever handed out is at or below it (`keeper.rs`, "revision ceiling").
    pub ceiling: Revision,
    /// The compacted revision when it was written (`COMPACTED` holds this or a later one).
    pub compacted: Revision,
    pub clean: bool,
    /// Per shard (the index is the shard number), its segments in log order.
    pub shards: Vec<Vec<Entry>>,
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        let n: usize = self.shards.iter().map(Vec::len).sum();
        let mut b = vec![0u8; MANIFEST_HEADER_LEN + n * ENTRY_LEN + MANIFEST_TRAILER_LEN];
        b[..8].copy_from_slice(&MANIFEST_MAGIC);
        put32(&mut b, MAN_OFF_VERSION, MANIFEST_VERSION);
        put32(&mut b, MAN_OFF_SHARDS, self.shards.len() as u32);
        put64(&mut b, MAN_OFF_GENERATION, self.generation);
        put64(&mut b, MAN_OFF_CEILING, self.ceiling.0);
        put64(&mut b, MAN_OFF_COMPACTED, self.compacted.0);
        put32(
            &mut b,
            MAN_OFF_FLAGS,
            if self.clean { MAN_FLAG_CLEAN } else { 0 },
        );
        put32(&mut b, MAN_OFF_ENTRIES, n as u32);
        let mut at = MANIFEST_HEADER_LEN;
        for (shard, entries) in self.shards.iter().enumerate() {
            for e in entries {
                put32(&mut b, at + ENT_OFF_SHARD, shard as u32);
                put32(&mut b, at + ENT_OFF_FLAGS, e.flags);
                put64(&mut b, at + ENT_OFF_SEQ, e.seq);
                put64(&mut b, at + ENT_OFF_END, e.end);
                put64(&mut b, at + ENT_OFF_SIZE, e.size);
                put64(&mut b, at + ENT_OFF_FIRST_REV, e.first.0);
                put64(&mut b, at + ENT_OFF_LAST_REV, e.last.0);
                at += ENTRY_LEN;
            }
        }
        let crc = crc32fast::hash(&b[..at]);
        put32(&mut b, at, crc);
        debug_assert_eq!(Manifest::decode(&b).as_ref(), Ok(self));
        b
    }

    /// Decodes and validates a manifest; the error is the offset and what is wrong there.
    pub fn decode(b: &[u8]) -> Result<Manifest, (u64, String)> {
        let bad = |at: usize, why: String| Err((at as u64, why));
        if b.len() < MANIFEST_HEADER_LEN + MANIFEST_TRAILER_LEN {
            return bad(0, format!("{} bytes, shorter than a header", b.len()));
        }
        if b[..8] != MANIFEST_MAGIC {
            return bad(0, "bad magic".into());
        }
        let n = get_u32(b, MAN_OFF_ENTRIES) as usize;
        let len = MANIFEST_HEADER_LEN + n.saturating_mul(ENTRY_LEN) + MANIFEST_TRAILER_LEN;
        if b.len() != len {
            return bad(0, format!("{} bytes, {n} entries need {len}", b.len()));
        }
        let crc_at = len - MANIFEST_TRAILER_LEN;
        if crc32fast::hash(&b[..crc_at]) != get_u32(b, crc_at) {
            return bad(crc_at, "checksum mismatch".into());
        }
        let version = get_u32(b, MAN_OFF_VERSION);
        if version != MANIFEST_VERSION {
            return bad(MAN_OFF_VERSION, format!("unsupported version {version}"));
        }
        let flags = get_u32(b, MAN_OFF_FLAGS);
        if flags & !MAN_FLAG_CLEAN != 0 {
            return bad(MAN_OFF_FLAGS, format!("unknown flags {flags:#x}"));
        }
        let shards = get_u32(b, MAN_OFF_SHARDS) as usize;
        if shards == 0 || shards > crate::limits::SHARDS_MAX {
            return bad(MAN_OFF_SHARDS, format!("{shards} shards"));
        }
        let mut m = Manifest {
            generation: get_u64(b, MAN_OFF_GENERATION),
            ceiling: Revision(get_u64(b, MAN_OFF_CEILING)),
            compacted: Revision(get_u64(b, MAN_OFF_COMPACTED)),
            clean: flags & MAN_FLAG_CLEAN != 0,
            shards: vec![Vec::new(); shards],
        };
        for i in 0..n {
            let at = MANIFEST_HEADER_LEN + i * ENTRY_LEN;
            let shard = get_u32(b, at + ENT_OFF_SHARD) as usize;
            let e = Entry {
                flags: get_u32(b, at + ENT_OFF_FLAGS),
                seq: get_u64(b, at + ENT_OFF_SEQ),
                end: get_u64(b, at + ENT_OFF_END),
                size: get_u64(b, at + ENT_OFF_SIZE),
                first: Revision(get_u64(b, at + ENT_OFF_FIRST_REV)),
                last: Revision(get_u64(b, at + ENT_OFF_LAST_REV)),
            };
            let why = if shard >= shards {
                Some(format!("shard {shard} of {shards}"))
            } else {
                check_entry(&m.shards[shard], &e).err()
            };
            if let Some(why) = why {
                return bad(at, format!("entry {i}: {why}"));
            }
            m.shards[shard].push(e);
        }
        Ok(m)
    }
}

/// Whether `e` may follow `prev` (a shard's entries so far).
fn check_entry(prev: &[Entry], e: &Entry) -> Result<(), String> {
    if e.flags & !ENTRY_FLAGS_KNOWN != 0 {
        return Err(format!("unknown flags {:#x}", e.flags));
    }
    if e.end > e.size || e.end < crate::format::SEGMENT_HEADER_LEN as u64 || e.first > e.last {
        return Err(format!(
            "end {} size {} revisions {}..={}",
            e.end, e.size, e.first, e.last
        ));
    }
    if e.is(ENTRY_ACTIVE) && e.flags != ENTRY_ACTIVE {
        return Err("an active segment being rewritten or removed".into());
    }
    match prev.last() {
        Some(p) if p.is(ENTRY_ACTIVE) => Err("an entry after the active segment".into()),
        Some(p) if e.seq == p.seq && (p.is(ENTRY_PENDING) || !e.is(ENTRY_PENDING)) => {
            Err(format!("segment {} twice", e.seq))
        }
        Some(p) if e.seq < p.seq => Err(format!("segment {} after {}", e.seq, p.seq)),
        _ if e.is(ENTRY_PENDING) && prev.last().is_none_or(|p| p.seq != e.seq) => {
            Err("a pending rewrite without its original".into())
        }
        _ => Ok(()),
    }
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, flags: u32) -> Entry {
        Entry {
            flags,
            seq,
            end: 640,
            size: 4096,
            first: Revision(seq * 10),
            last: Revision(seq * 10 + 5),
        }
    }

    fn sample() -> Manifest {
        Manifest {
            generation: 7,
            ceiling: Revision(1 << 20),
            compacted: Revision(3),
            clean: true,
            shards: vec![
                vec![
                    entry(1, 0),
                    entry(2, ENTRY_REWRITTEN),
                    entry(3, ENTRY_ACTIVE),
                ],
                vec![
                    entry(4, 0),
                    entry(4, ENTRY_REWRITTEN | ENTRY_PENDING),
                    entry(5, ENTRY_REMOVING),
                ],
            ],
        }
    }

    #[test]
    fn round_trip() {
        let m = sample();
        assert_eq!(Manifest::decode(&m.encode()), Ok(m));
    }

    /// Every single-bit flip of an encoded manifest is refused (the checksum covers all).
    #[test]
    fn every_flipped_bit_is_refused() {
        let b = sample().encode();
        for bit in 0..b.len() * 8 {
            let mut d = b.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(
                Manifest::decode(&d).is_err(),
                "bit {bit} flipped went unnoticed"
            );
        }
        assert!(Manifest::decode(&b[..b.len() - 1]).is_err());
    }

    #[test]
    fn inconsistent_entries_are_refused() {
        let bad = [
            vec![entry(2, 0), entry(1, 0)],
            vec![entry(1, ENTRY_ACTIVE), entry(2, 0)],
            vec![entry(1, 0), entry(1, 0)],
            vec![entry(1, ENTRY_PENDING)],
            vec![entry(1, 64)],
            vec![entry(1, ENTRY_ACTIVE | ENTRY_REMOVING)],
        ];
        for shard in bad {
            let m = Manifest {
                shards: vec![shard.clone()],
                ..Manifest::default()
            };
            assert!(
                Manifest::decode(&m.encode_unchecked()).is_err(),
                "{shard:?}"
            );
        }
    }

    impl Manifest {
        /// `encode` without its self-check, to build invalid manifests.
        fn encode_unchecked(&self) -> Vec<u8> {
            let mut m = self.clone();
            let entries = std::mem::take(&mut m.shards[0]);
            let mut b = m.encode();
            b.truncate(MANIFEST_HEADER_LEN);
            put32(&mut b, MAN_OFF_ENTRIES, entries.len() as u32);
            for e in &entries {
                let at = b.len();
                b.resize(at + ENTRY_LEN, 0);
                put32(&mut b, at + ENT_OFF_FLAGS, e.flags);
                put64(&mut b, at + ENT_OFF_SEQ, e.seq);
                put64(&mut b, at + ENT_OFF_END, e.end);
                put64(&mut b, at + ENT_OFF_SIZE, e.size);
                put64(&mut b, at + ENT_OFF_FIRST_REV, e.first.0);
                put64(&mut b, at + ENT_OFF_LAST_REV, e.last.0);
            }
            let crc = crc32fast::hash(&b);
            b.extend_from_slice(&crc.to_le_bytes());
            b
        }
    }
}
