//! The key index: for every key, its chain of versions, oldest first.
//!
//! A `Version` is 16 bytes: the revision and a packed location (segment id, offset, value
//! length, tombstone bit), so a scan builds `KeyValue`s without touching the mapping.
//!
//! Worked example (one key, history compacted at C):
//!
//! ```text
//! put@5  put@9  del@12  put@20          chain: [5, 9, 12(t), 20]
//! compact(C=10)  → keep the newest version <= 10 and everything after it: [9, 12(t), 20]
//! compact(C=15)  → newest <= 15 is the tombstone 12; it hides nothing older: [20]
//! compact(C=25)  → [20]  (the live version always stays)
//! del@30, compact(C=30) → newest <= 30 is a tombstone and nothing follows: key removed
//! ```

use crate::Revision;
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// Offsets are stored in units of `format::ALIGN` in 24 bits: segments up to 128 MiB.
pub const SEGMENT_BYTES_MAX: u64 = (1 << 24) * crate::format::ALIGN as u64;
/// Value lengths are stored in 23 bits.
pub const VALUE_BYTES_MAX: usize = (1 << 23) - 1;
/// Segment ids are stored in 16 bits.
pub const SEGMENT_IDS_MAX: u32 = 1 << 16;

const _: () = assert!(crate::limits::SEGMENT_BYTES_DEFAULT <= SEGMENT_BYTES_MAX);
const _: () = assert!(crate::limits::VALUE_BYTES_MAX_DEFAULT <= VALUE_BYTES_MAX);

/// Where one version's record lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub seg: u32,
    /// Offset of the record header within the segment.
    pub off: u32,
    pub value_len: u32,
    pub tombstone: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub rev: Revision,
    packed: u64,
}

impl Version {
    pub fn new(rev: Revision, loc: Loc) -> Version {
        assert!(
            loc.seg < SEGMENT_IDS_MAX,
            "segment id {} out of range",
            loc.seg
        );
        assert!(
            (loc.off as usize).is_multiple_of(crate::format::ALIGN),
            "unaligned offset {}",
            loc.off
        );
        assert!(
            (loc.off as u64) < SEGMENT_BYTES_MAX,
            "offset {} out of range",
            loc.off
        );
        assert!(
            loc.value_len as usize <= VALUE_BYTES_MAX,
            "value length {}",
            loc.value_len
        );
        let packed = (loc.seg as u64) << 48
            | ((loc.off as u64 / crate::format::ALIGN as u64) << 24)
            | (loc.value_len as u64) << 1
            | loc.tombstone as u64;
        Version { rev, packed }
    }

    pub fn loc(&self) -> Loc {
        Loc {
            seg: (self.packed >> 48) as u32,
            off: ((self.packed >> 24) & 0xff_ffff) as u32 * crate::format::ALIGN as u32,
            value_len: ((self.packed >> 1) & 0x7f_ffff) as u32,
            tombstone: self.packed & 1 == 1,
        }
    }

    pub fn is_tombstone(&self) -> bool {
        self.packed & 1 == 1
    }

    pub fn with_loc(self, loc: Loc) -> Version {
        Version::new(self.rev, loc)
    }
}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Version({}, {:?})", self.rev, self.loc())
    }
}

/// Versions of one key, oldest first. Most keys have one version: it is stored inline.
pub type Chain = SmallVec<[Version; 1]>;

/// The newest version with revision <= `at`.
pub fn version_at(chain: &Chain, at: Revision) -> Option<&Version> {
    // Chains are short; the newest versions are at the end.
    chain.iter().rev().find(|v| v.rev <= at)
}

/// Compacts one chain at `c`: drops every version older than the newest one <= `c`, and that
/// one too if it is a tombstone. Pushes dropped versions to `dropped`. Returns whether the
/// chain is now empty (the key can be removed).
pub fn compact_chain(chain: &mut Chain, c: Revision, dropped: &mut Vec<Version>) -> bool {
    let Some(pos) = chain.iter().rposition(|v| v.rev <= c) else {
        return false;
    };
    let cut = if chain[pos].is_tombstone() {
        pos + 1
    } else {
        pos
    };
    if cut == 0 {
        return chain.is_empty();
    }
    dropped.extend(chain.drain(..cut));
    if chain.spilled() && chain.len() <= 1 {
        chain.shrink_to_fit();
    }
    chain.is_empty()
}

/// Index keys up to `KEY_INLINE_BYTES` long live inside the tree's nodes (most Kubernetes keys
/// are shorter): a scan in key order then reads nodes, not one scattered allocation per key.
pub const KEY_INLINE_BYTES: usize = 40;

/// A key as the index stores it.
pub type IndexKey = SmallVec<[u8; KEY_INLINE_BYTES]>;

/// One shard's key index.
pub type KeyMap = BTreeMap<IndexKey, Chain>;

#[cfg(test)]
mod tests {
    use super::*;

    fn v(rev: u64, tomb: bool) -> Version {
        Version::new(
            Revision(rev),
            Loc {
                seg: 3,
                off: 64,
                value_len: if tomb { 0 } else { 10 },
                tombstone: tomb,
            },
        )
    }

    fn revs(c: &Chain) -> Vec<u64> {
        c.iter().map(|v| v.rev.0).collect()
    }

    #[test]
    fn packing_round_trips() {
        let loc = Loc {
            seg: 65535,
            off: (SEGMENT_BYTES_MAX - 8) as u32,
            value_len: VALUE_BYTES_MAX as u32,
            tombstone: true,
        };
        let ver = Version::new(Revision(u64::MAX), loc);
        assert_eq!(ver.loc(), loc);
        assert_eq!(ver.rev, Revision(u64::MAX));
        assert_eq!(std::mem::size_of::<Version>(), 16);
    }

    #[test]
    fn worked_example() {
        let mut c: Chain = [v(5, false), v(9, false), v(12, true), v(20, false)]
            .into_iter()
            .collect();
        let mut dropped = Vec::new();
        assert!(!compact_chain(&mut c, Revision(10), &mut dropped));
        assert_eq!(revs(&c), vec![9, 12, 20]);
        assert!(!compact_chain(&mut c, Revision(15), &mut dropped));
        assert_eq!(revs(&c), vec![20]);
        assert!(!compact_chain(&mut c, Revision(25), &mut dropped));
        assert_eq!(revs(&c), vec![20]);
        c.push(v(30, true));
        assert!(compact_chain(&mut c, Revision(30), &mut dropped));
        assert_eq!(
            dropped.iter().map(|v| v.rev.0).collect::<Vec<_>>(),
            vec![5, 9, 12, 20, 30]
        );
        assert_eq!(
            version_at(
                &[v(1, false), v(4, false)].into_iter().collect(),
                Revision(3)
            )
            .unwrap()
            .rev,
            Revision(1)
        );
    }
}
