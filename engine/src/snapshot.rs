//! The snapshot file: every live key of a store at one revision, in one file, checksummed
//! whole (`SNAPSHOT.md` documents every byte; `tests/snapshot_doc.rs` checks the constants).
//! Pure encoding and decoding, no I/O: the server encodes a snapshot chunk by chunk while it
//! streams it (`SnapshotEncoder`), `keel-admin` decodes one as it arrives or from a file
//! (`SnapshotDecoder`, a push parser that holds at most one record).
//!
//! ```text
//! header (48)  | record | record | ... | end: tag, count, SHA-256 of everything before it
//! ```
//!
//! A snapshot that was cut short (no end), has a byte changed anywhere (the hash), holds a
//! record count other than its end says, or ends in an abort frame (the server failed half-way,
//! e.g. the revision was compacted) is refused by the decoder.

use crate::format::{get_u32, get_u64};
use crate::Revision;
use sha2::{Digest, Sha256};

pub const SNAPSHOT_MAGIC: [u8; 8] = *b"KEELSNAP";
pub const SNAPSHOT_VERSION: u32 = 1;
pub const SNAP_HEADER_LEN: usize = 48;
pub const SNAP_OFF_MAGIC: usize = 0;
pub const SNAP_OFF_VERSION: usize = SNAP_OFF_MAGIC + 8;
pub const SNAP_OFF_FLAGS: usize = SNAP_OFF_VERSION + 4;
pub const SNAP_OFF_REVISION: usize = SNAP_OFF_FLAGS + 4;
pub const SNAP_OFF_COMPACTED: usize = SNAP_OFF_REVISION + 8;
pub const SNAP_OFF_CREATED_MS: usize = SNAP_OFF_COMPACTED + 8;
pub const SNAP_OFF_RESERVED: usize = SNAP_OFF_CREATED_MS + 8;
const _: () = assert!(SNAP_OFF_RESERVED + 8 == SNAP_HEADER_LEN);

/// A record: tag, key length (u32), value length (u32), mod revision (u64), key, value.
pub const TAG_RECORD: u8 = 1;
pub const SNAP_RECORD_HEAD_LEN: usize = 17;
/// The end: tag, record count (u64), SHA-256 of every byte before the hash.
pub const TAG_END: u8 = 2;
pub const SNAP_END_LEN: usize = 1 + 8 + 32;
/// An abort: tag, message length (u32), UTF-8 message. The snapshot is invalid.
pub const TAG_ABORT: u8 = 3;
/// Bound on an abort message a decoder accepts.
pub const ABORT_MESSAGE_BYTES_MAX: usize = 4096;
/// Bound on a record's key a decoder accepts: the format of a segment record (u16).
pub const SNAP_KEY_BYTES_MAX: usize = u16::MAX as usize;
/// Bound on a record's value a decoder accepts: what a segment can hold.
pub const SNAP_VALUE_BYTES_MAX: usize = crate::index::VALUE_BYTES_MAX;

/// What the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// Every record is the key's latest version at this revision.
    pub revision: Revision,
    /// The store's compacted revision when the snapshot began (0 if unknown).
    pub compacted: Revision,
    /// When the snapshot began, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
}

impl SnapshotHeader {
    pub fn encode(&self) -> [u8; SNAP_HEADER_LEN] {
        let mut b = [0u8; SNAP_HEADER_LEN];
        b[..8].copy_from_slice(&SNAPSHOT_MAGIC);
        b[SNAP_OFF_VERSION..SNAP_OFF_VERSION + 4].copy_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        b[SNAP_OFF_REVISION..SNAP_OFF_REVISION + 8].copy_from_slice(&self.revision.0.to_le_bytes());
        b[SNAP_OFF_COMPACTED..SNAP_OFF_COMPACTED + 8]
            .copy_from_slice(&self.compacted.0.to_le_bytes());
        b[SNAP_OFF_CREATED_MS..SNAP_OFF_CREATED_MS + 8]
            .copy_from_slice(&self.created_unix_ms.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<SnapshotHeader, String> {
        if b.len() < SNAP_HEADER_LEN {
            return Err(format!("{} bytes, shorter than a header", b.len()));
        }
        if b[..8] != SNAPSHOT_MAGIC {
            return Err("not a keel snapshot (bad magic)".into());
        }
        let version = get_u32(b, SNAP_OFF_VERSION);
        if version != SNAPSHOT_VERSION {
            return Err(format!("unsupported snapshot version {version}"));
        }
        let flags = get_u32(b, SNAP_OFF_FLAGS);
        if flags != 0 || get_u64(b, SNAP_OFF_RESERVED) != 0 {
            return Err(format!("unknown flags {flags:#x} or reserved bytes set"));
        }
        let h = SnapshotHeader {
            revision: Revision(get_u64(b, SNAP_OFF_REVISION)),
            compacted: Revision(get_u64(b, SNAP_OFF_COMPACTED)),
            created_unix_ms: get_u64(b, SNAP_OFF_CREATED_MS),
        };
        if h.compacted > h.revision {
            return Err(format!(
                "compacted revision {} above the snapshot's revision {}",
                h.compacted, h.revision
            ));
        }
        Ok(h)
    }
}

/// Encodes a snapshot into caller-provided buffers, hashing as it goes: `new` appends the
/// header, `record` one record each, `finish` the end. The caller sends or writes each
/// buffer as it likes (the server streams a chunk at a time).
pub struct SnapshotEncoder {
    hash: Sha256,
    count: u64,
    last_key: Vec<u8>,
    revision: Revision,
}

impl SnapshotEncoder {
    pub fn new(header: &SnapshotHeader, out: &mut Vec<u8>) -> SnapshotEncoder {
        let mut e = SnapshotEncoder {
            hash: Sha256::new(),
            count: 0,
            last_key: Vec::new(),
            revision: header.revision,
        };
        e.put(out, &header.encode());
        e
    }

    fn put(&mut self, out: &mut Vec<u8>, b: &[u8]) {
        self.hash.update(b);
        out.extend_from_slice(b);
    }

    /// Appends one record. Keys come in strictly increasing order, each version at or below
    /// the header's revision (programmer errors otherwise).
    pub fn record(&mut self, out: &mut Vec<u8>, key: &[u8], value: &[u8], mod_revision: Revision) {
        assert!(
            self.count == 0 || key > &self.last_key[..],
            "snapshot keys out of order: {:?} after {:?}",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(&self.last_key)
        );
        assert!(
            mod_revision <= self.revision && mod_revision > Revision::ZERO,
            "record revision {mod_revision} outside 1..={}",
            self.revision
        );
        let mut head = [0u8; SNAP_RECORD_HEAD_LEN];
        head[0] = TAG_RECORD;
        head[1..5].copy_from_slice(&(key.len() as u32).to_le_bytes());
        head[5..9].copy_from_slice(&(value.len() as u32).to_le_bytes());
        head[9..17].copy_from_slice(&mod_revision.0.to_le_bytes());
        self.put(out, &head);
        self.put(out, key);
        self.put(out, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Appends the end: the count, then the hash of everything before the hash.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        let mut tail = [0u8; 9];
        tail[0] = TAG_END;
        tail[1..].copy_from_slice(&self.count.to_le_bytes());
        self.put(out, &tail);
        out.extend_from_slice(&self.hash.finalize());
    }

    /// Appends an abort frame: whoever reads the snapshot is told why it is incomplete.
    pub fn abort(self, out: &mut Vec<u8>, why: &str) {
        let msg = &why.as_bytes()[..why.len().min(ABORT_MESSAGE_BYTES_MAX)];
        out.push(TAG_ABORT);
        out.extend_from_slice(&(msg.len() as u32).to_le_bytes());
        out.extend_from_slice(msg);
    }
}

/// One record as the decoder hands it out: borrowed from its input or its buffer.
#[derive(Clone, Copy, Debug)]
pub struct SnapRecord<'a> {
    /// Offset of the record's tag in the snapshot.
    pub offset: u64,
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub mod_revision: Revision,
}

/// What a complete, verified snapshot held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotSummary {
    pub header: SnapshotHeader,
    pub records: u64,
    pub bytes: u64,
    pub sha256: [u8; 32],
    /// The highest mod revision among the records.
    pub max_mod_revision: Revision,
}

/// Why a snapshot was refused: at which offset, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotError {
    pub offset: u64,
    pub reason: String,
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad snapshot at offset {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for SnapshotError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Header,
    Tag,
    RecordHead,
    RecordBody {
        key: usize,
        value: usize,
        rev: Revision,
    },
    EndBody,
    AbortLen,
    AbortBody(usize),
    Done,
}

/// A push decoder: `feed` it bytes in pieces of any size (as they arrive from the network or
/// a file); it verifies the framing, the order of keys, the revisions, the count and the
/// hash, and hands each record to a callback. Holds at most one record (bounded by
/// `SNAP_KEY_BYTES_MAX` + `SNAP_VALUE_BYTES_MAX`).
pub struct SnapshotDecoder {
    want: Want,
    buf: Vec<u8>,
    /// Bytes consumed so far (the offset of the next byte).
    at: u64,
    /// Where the item being assembled began.
    item_at: u64,
    hash: Sha256,
    header: Option<SnapshotHeader>,
    count: u64,
    last_key: Vec<u8>,
    max_rev: Revision,
    summary: Option<SnapshotSummary>,
}

impl Default for SnapshotDecoder {
    fn default() -> Self {
        SnapshotDecoder::new()
    }
}

impl SnapshotDecoder {
    pub fn new() -> SnapshotDecoder {
        SnapshotDecoder {
            want: Want::Header,
            buf: Vec::new(),
            at: 0,
            item_at: 0,
            hash: Sha256::new(),
            header: None,
            count: 0,
            last_key: Vec::new(),
            max_rev: Revision::ZERO,
            summary: None,
        }
    }

    /// The header, once decoded.
    pub fn header(&self) -> Option<SnapshotHeader> {
        self.header
    }

    fn need(&self) -> usize {
        match self.want {
            Want::Header => SNAP_HEADER_LEN,
            Want::Tag => 1,
            Want::RecordHead => SNAP_RECORD_HEAD_LEN - 1,
            Want::RecordBody { key, value, .. } => key + value,
            Want::EndBody => SNAP_END_LEN - 1,
            Want::AbortLen => 4,
            Want::AbortBody(n) => n,
            Want::Done => 0,
        }
    }

    fn fail<T>(&self, offset: u64, reason: impl Into<String>) -> Result<T, SnapshotError> {
        Err(SnapshotError {
            offset,
            reason: reason.into(),
        })
    }

    /// Consumes `input`, calling `each` for every complete record.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        each: &mut dyn FnMut(SnapRecord<'_>) -> Result<(), String>,
    ) -> Result<(), SnapshotError> {
        while !input.is_empty() {
            if self.want == Want::Done {
                return self.fail(self.at, "bytes after the end of the snapshot");
            }
            let need = self.need();
            // Whole items straight from the input when the buffer is empty: no copy.
            let item: &[u8] = if self.buf.is_empty() && input.len() >= need {
                let (item, rest) = input.split_at(need);
                input = rest;
                item
            } else {
                let take = (need - self.buf.len()).min(input.len());
                self.buf.extend_from_slice(&input[..take]);
                input = &input[take..];
                if self.buf.len() < need {
                    self.at += take as u64;
                    continue;
                }
                // The buffer's earlier part was already counted in `at`.
                self.at -= (self.buf.len() - take) as u64;
                &[]
            };
            let owned;
            let item = if item.is_empty() && need > 0 {
                owned = std::mem::take(&mut self.buf);
                &owned[..]
            } else {
                item
            };
            self.step(item, each)?;
            self.at += need as u64;
        }
        Ok(())
    }

    fn step(
        &mut self,
        item: &[u8],
        each: &mut dyn FnMut(SnapRecord<'_>) -> Result<(), String>,
    ) -> Result<(), SnapshotError> {
        let at = self.at;
        match self.want {
            Want::Header => {
                let h = SnapshotHeader::decode(item).or_else(|e| self.fail(0, e))?;
                self.hash.update(item);
                self.header = Some(h);
                self.want = Want::Tag;
            }
            Want::Tag => {
                self.item_at = at;
                self.want = match item[0] {
                    TAG_RECORD => Want::RecordHead,
                    TAG_END => Want::EndBody,
                    TAG_ABORT => Want::AbortLen,
                    t => return self.fail(at, format!("unknown tag {t}")),
                };
                if item[0] != TAG_ABORT {
                    self.hash.update(item);
                }
            }
            Want::RecordHead => {
                self.hash.update(item);
                let key = get_u32(item, 0) as usize;
                let value = get_u32(item, 4) as usize;
                let rev = Revision(get_u64(item, 8));
                let top = self.header.expect("header first").revision;
                if key == 0 || key > SNAP_KEY_BYTES_MAX || value > SNAP_VALUE_BYTES_MAX {
                    return self.fail(
                        self.item_at,
                        format!("record of a {key}-byte key and a {value}-byte value"),
                    );
                }
                if rev == Revision::ZERO || rev > top {
                    return self.fail(
                        self.item_at,
                        format!("record revision {rev} outside 1..={top}"),
                    );
                }
                self.want = Want::RecordBody { key, value, rev };
            }
            Want::RecordBody { key, rev, .. } => {
                self.hash.update(item);
                let (k, v) = item.split_at(key);
                if self.count > 0 && k <= &self.last_key[..] {
                    return self.fail(self.item_at, "keys out of order or repeated");
                }
                self.last_key.clear();
                self.last_key.extend_from_slice(k);
                self.count += 1;
                self.max_rev = self.max_rev.max(rev);
                let r = SnapRecord {
                    offset: self.item_at,
                    key: k,
                    value: v,
                    mod_revision: rev,
                };
                let item_at = self.item_at;
                each(r).or_else(|e| self.fail(item_at, e))?;
                self.want = Want::Tag;
            }
            Want::EndBody => {
                let count = get_u64(item, 0);
                self.hash.update(&item[..8]);
                if count != self.count {
                    return self.fail(
                        self.item_at,
                        format!(
                            "the end says {count} records, the snapshot holds {}",
                            self.count
                        ),
                    );
                }
                let digest: [u8; 32] = std::mem::take(&mut self.hash).finalize().into();
                if digest[..] != item[8..] {
                    return self.fail(
                        self.item_at + 9,
                        "SHA-256 mismatch: the snapshot is damaged",
                    );
                }
                self.summary = Some(SnapshotSummary {
                    header: self.header.expect("header first"),
                    records: count,
                    bytes: at + item.len() as u64,
                    sha256: digest,
                    max_mod_revision: self.max_rev,
                });
                self.want = Want::Done;
            }
            Want::AbortLen => {
                let n = get_u32(item, 0) as usize;
                if n > ABORT_MESSAGE_BYTES_MAX {
                    return self.fail(self.item_at, "the server aborted the snapshot");
                }
                self.want = Want::AbortBody(n);
                if n == 0 {
                    return self.fail(self.item_at, "the server aborted the snapshot");
                }
            }
            Want::AbortBody(_) => {
                return self.fail(
                    self.item_at,
                    format!(
                        "the server aborted the snapshot: {}",
                        String::from_utf8_lossy(item)
                    ),
                )
            }
            Want::Done => unreachable!("checked by feed"),
        }
        Ok(())
    }

    /// At the end of the input: the summary of a complete, verified snapshot, or why not.
    pub fn finish(self) -> Result<SnapshotSummary, SnapshotError> {
        match self.summary {
            Some(s) => Ok(s),
            None => self.fail(
                self.at,
                format!(
                    "cut short after {} bytes ({} records): no end",
                    self.at, self.count
                ),
            ),
        }
    }
}

/// Decodes a whole snapshot from `r` (a file), `each` seeing every record.
pub fn read_snapshot(
    r: &mut dyn std::io::Read,
    each: &mut dyn FnMut(SnapRecord<'_>) -> Result<(), String>,
) -> Result<SnapshotSummary, ReadError> {
    let mut d = SnapshotDecoder::new();
    let mut buf = vec![0u8; crate::limits::SNAPSHOT_READ_BYTES];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        d.feed(&buf[..n], each).map_err(ReadError::Bad)?;
    }
    d.finish().map_err(ReadError::Bad)
}

/// Why reading a snapshot failed.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    Bad(SnapshotError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "reading the snapshot: {e}"),
            ReadError::Bad(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ReadError {}

/// Keys a `save` reads per page: a page's values are views (no copy), so memory is one page
/// of key-value handles and one encoded record.
pub const SAVE_PAGE_KEYS: usize = 500;

/// Writes a snapshot of every key of `store` at its current revision R to `out`, reading it
/// in pages at `ReadAt::Exact(R)` while writes go on (any backend: the engine, the model).
/// If R is compacted away before the last page, the snapshot ends with an abort frame and the
/// error is returned. `created_unix_ms`: the header's timestamp.
pub fn save(
    store: &dyn crate::Store,
    out: &mut dyn std::io::Write,
    created_unix_ms: u64,
) -> Result<(Revision, u64), crate::Error> {
    let header = SnapshotHeader {
        revision: store.current_revision(),
        compacted: store.compacted_revision(),
        created_unix_ms,
    };
    let mut buf = Vec::new();
    let mut enc = SnapshotEncoder::new(&header, &mut buf);
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = store.list(&crate::ListRequest {
            prefix: b"",
            start_after: after.as_deref(),
            limit: SAVE_PAGE_KEYS,
            at: crate::ReadAt::Exact(header.revision),
        });
        let page = match page {
            Ok(p) => p,
            Err(e) => {
                enc.abort(&mut buf, &e.to_string());
                out.write_all(&buf)?;
                return Err(e);
            }
        };
        for kv in &page.items {
            enc.record(&mut buf, kv.key(), kv.value(), kv.mod_revision);
            out.write_all(&buf)?;
            buf.clear();
        }
        match page.items.last() {
            Some(last) if page.more => after = Some(last.key().to_vec()),
            _ => break,
        }
    }
    let n = enc.count();
    enc.finish(&mut buf);
    out.write_all(&buf)?;
    out.flush()?;
    Ok((header.revision, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let h = SnapshotHeader {
            revision: Revision(100),
            compacted: Revision(3),
            created_unix_ms: 1,
        };
        let mut e = SnapshotEncoder::new(&h, &mut out);
        for i in 0..n {
            let key = format!("/k/{i:04}");
            e.record(
                &mut out,
                key.as_bytes(),
                &vec![b'v'; i as usize],
                Revision(i + 1),
            );
        }
        e.finish(&mut out);
        out
    }

    fn decode_in(b: &[u8], piece: usize) -> Result<(SnapshotSummary, Vec<Vec<u8>>), SnapshotError> {
        let mut d = SnapshotDecoder::new();
        let mut keys = Vec::new();
        for p in b.chunks(piece) {
            d.feed(p, &mut |r| {
                keys.push(r.key.to_vec());
                Ok(())
            })?;
        }
        Ok((d.finish()?, keys))
    }

    #[test]
    fn round_trip_in_any_pieces() {
        let b = sample(50);
        for piece in [1, 2, 7, 17, 64, 1000, b.len()] {
            let (s, keys) = decode_in(&b, piece).unwrap();
            assert_eq!(s.records, 50, "piece {piece}");
            assert_eq!(s.bytes, b.len() as u64);
            assert_eq!(s.max_mod_revision, Revision(50));
            assert_eq!(keys.len(), 50);
            assert_eq!(keys[7], b"/k/0007");
        }
    }

    /// Every flipped bit and every truncation is refused.
    #[test]
    fn every_flip_and_cut_is_refused() {
        let b = sample(5);
        for bit in 0..b.len() * 8 {
            let mut d = b.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(
                decode_in(&d, 13).is_err(),
                "bit {bit} flipped went unnoticed"
            );
        }
        for len in 0..b.len() {
            assert!(decode_in(&b[..len], 13).is_err(), "cut at {len} unnoticed");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(decode_in(&longer, 13).is_err());
    }

    #[test]
    fn abort_is_refused_with_its_reason() {
        let mut out = Vec::new();
        let h = SnapshotHeader {
            revision: Revision(9),
            compacted: Revision::ZERO,
            created_unix_ms: 0,
        };
        let mut e = SnapshotEncoder::new(&h, &mut out);
        e.record(&mut out, b"/a", b"x", Revision(2));
        e.abort(&mut out, "revision 9 was compacted");
        let err = decode_in(&out, 5).unwrap_err();
        assert!(err.reason.contains("revision 9 was compacted"), "{err}");
    }
}
