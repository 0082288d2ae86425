//! Damage to a closed store's segment files, and what `Engine::open` makes of it.
//!
//! - Damage to data that had been synced (a record or batch header in the middle of a
//!   segment, a segment header, anything in a segment that is not the newest of its shard)
//!   must fail the open with `Error::Corrupt` naming the segment file and an offset at or
//!   before the damaged byte.
//! - Damage confined to the last batch of the newest segment is a torn tail only if that batch
//!   was never synced: the manifest (rewritten on a timer, not per batch) records the shard's
//!   synced data as ending before it, and the store was not closed cleanly. The store then
//!   opens without that batch's writes, with everything before it, zeroes the tail, notes it
//!   (with its revisions), hands out no revision of it again, and keeps working across further
//!   writes and reopens. After a clean close the same damage is refused: it hit acknowledged
//!   data (`tests/damage.rs` has the whole matrix).
//! - `format::scan_segment` on thousands of randomly damaged segment images never panics and
//!   only ever reports a prefix of the original records, byte for byte.

use keel_engine::format::{self, Op, ScanEnd, SegmentHeader};
use keel_engine::manifest::{Manifest, ENTRY_ACTIVE};
use keel_engine::RecoveryNote;
use keel_engine::{
    Engine, Error, ListRequest, Options, ReadAt, Revision, Store, StoreExt, SyncMode,
};
use std::path::{Path, PathBuf};

const SEGMENT_BYTES: u64 = 64 * 1024;
/// Segments the fixture's shard spans.
const FIXTURE_SEGMENTS: usize = 3;

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.shards = 1;
    // Every write below is followed by a clean close; durability against power loss is not
    // what these tests are about.
    o.sync = SyncMode::None;
    o.maintenance_interval = None;
    o.limits.segment_bytes = SEGMENT_BYTES;
    o.limits.key_bytes_max = 1024;
    o.limits.value_bytes_max = 16 * 1024;
    o
}

/// Tiny deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi_inclusive: usize) -> usize {
        lo + self.below(hi_inclusive - lo + 1)
    }
    /// Between `lo` and `hi_inclusive` random bytes.
    fn bytes(&mut self, lo: usize, hi_inclusive: usize) -> Vec<u8> {
        let n = self.range(lo, hi_inclusive);
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn key_of(i: usize) -> Vec<u8> {
    format!("/corrupt/k{i:05}").into_bytes()
}

fn value_of(i: usize) -> Vec<u8> {
    let mut rng = Rng::new(i as u64 + 1);
    let len = 100 + rng.below(500);
    let mut v = format!("value-{i}:").into_bytes();
    v.extend((0..len).map(|_| b'a' + (rng.next() % 26) as u8));
    v
}

/// One write of the fixture: key index and the revision it got.
#[derive(Clone, Copy, Debug)]
struct Wrote {
    i: usize,
    rev: Revision,
}

struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    writes: Vec<Wrote>,
}

fn shard_dir(store: &Path) -> PathBuf {
    store.join("shard-000")
}

/// The shard's segment files, oldest first.
fn segments(store: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(shard_dir(store))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

/// A batch and its records, as `scan_segment` reports them on an undamaged segment.
#[derive(Clone, Debug)]
struct Batch {
    start: usize,
    end: usize,
    records: Vec<Rec>,
}

#[derive(Clone, Debug)]
struct Rec {
    offset: usize,
    revision: Revision,
    /// Offset of the value within the segment, and its length.
    value_at: usize,
    value_len: usize,
}

fn layout(path: &Path) -> (Vec<Batch>, ScanEnd) {
    let bytes = std::fs::read(path).unwrap();
    let mut batches: Vec<Batch> = Vec::new();
    let mut records: Vec<Rec> = Vec::new();
    let base = bytes.as_ptr() as usize;
    let end = format::scan_segment(
        &bytes,
        |off, h| {
            batches.push(Batch {
                start: off as usize,
                end: off as usize + format::BATCH_HEADER_LEN + h.len as usize,
                records: Vec::new(),
            })
        },
        |r| {
            records.push(Rec {
                offset: r.offset as usize,
                revision: r.revision,
                value_at: r.value.as_ptr() as usize - base,
                value_len: r.value.len(),
            })
        },
    );
    for r in records {
        let b = batches
            .iter_mut()
            .find(|b| b.start < r.offset && r.offset < b.end)
            .unwrap();
        b.records.push(r);
    }
    (batches, end)
}

/// A closed one-shard store spanning `FIXTURE_SEGMENTS` segments, the newest holding several
/// batches, in a fresh temporary directory (removed when the `TempDir` drops). The writes are
/// sequential from an empty store, so every fixture is the same.
fn fixture() -> Fixture {
    {
        let tmp = tempfile::Builder::new()
            .prefix("keel-corruption")
            .tempdir()
            .unwrap();
        let dir = tmp.path().join("store");
        let engine = Engine::open(options(&dir)).expect("create fixture store");
        let mut writes = Vec::new();
        let mut extra = None;
        for i in 0.. {
            let w = engine
                .create(&key_of(i), &value_of(i))
                .wait()
                .expect("fixture write");
            writes.push(Wrote { i, rev: w.revision });
            match extra {
                None if segments(&dir).len() >= FIXTURE_SEGMENTS => extra = Some(12),
                Some(0) => break,
                Some(n) => extra = Some(n - 1),
                None => assert!(i < 5000, "no segment rollover after {i} writes"),
            }
        }
        engine.close().expect("close fixture store");
        let segs = segments(&dir);
        assert!(
            segs.len() >= FIXTURE_SEGMENTS,
            "fixture has {} segments",
            segs.len()
        );
        for s in &segs {
            let (batches, end) = layout(s);
            assert!(
                matches!(end, ScanEnd::Clean { .. }),
                "fixture segment {s:?} scans as {end:?}"
            );
            assert!(
                batches.len() >= 3,
                "fixture segment {s:?} holds {} batches",
                batches.len()
            );
        }
        Fixture {
            _tmp: tmp,
            dir,
            writes,
        }
    }
}

fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut b = std::fs::read(path).unwrap();
    let len = b.len();
    f(&mut b);
    assert_eq!(b.len(), len, "edits keep the segment's size");
    std::fs::write(path, &b).unwrap();
}

fn flip(path: &Path, at: usize) {
    edit(path, |b| b[at] ^= 0x5a);
}

/// Opens the store, expecting `Error::Corrupt` in `segment` at an offset in `[min, max]`.
fn expect_corrupt(store: &Path, segment: &Path, min: usize, max: usize) {
    let expected_name = Path::new("shard-000").join(segment.file_name().unwrap());
    match Engine::open(options(store)) {
        Ok(e) => {
            let revision = e.current_revision();
            let _ = e.close();
            panic!(
                "opened a store with damage in {} between offsets {min} and {max} (revision {revision})",
                expected_name.display()
            );
        }
        Err(Error::Corrupt {
            file: named,
            offset,
            reason,
            ..
        }) => {
            assert!(
                named.ends_with(&expected_name),
                "corruption reported in {} ({reason} at {offset}), damage is in {}",
                named.display(),
                expected_name.display()
            );
            assert!(
                (min as u64..=max as u64).contains(&offset),
                "corruption in {} reported at offset {offset} ({reason}); damage at {max}, \
                 its batch or record starts at {min}",
                expected_name.display()
            );
        }
        Err(e) => panic!(
            "expected Error::Corrupt in {}, got {e:?}",
            expected_name.display()
        ),
    }
}

fn middle_batch(batches: &[Batch]) -> &Batch {
    assert!(batches.len() >= 3);
    &batches[batches.len() / 2]
}

#[test]
fn value_byte_in_middle_of_newest_segment_is_corruption() {
    let fx = fixture();
    let store = fx.dir.as_path();
    let segs = segments(store);
    let seg = segs.last().unwrap();
    let (batches, _) = layout(seg);
    let b = middle_batch(&batches);
    let r = &b.records[0];
    let at = r.value_at + r.value_len / 2;
    flip(seg, at);
    expect_corrupt(store, seg, b.start, at);
}

#[test]
fn value_byte_in_middle_of_oldest_segment_is_corruption() {
    let fx = fixture();
    let store = fx.dir.as_path();
    let seg = segments(store)[0].clone();
    let (batches, _) = layout(&seg);
    let b = middle_batch(&batches);
    let r = b.records.last().unwrap();
    let at = r.value_at + r.value_len - 1;
    flip(&seg, at);
    expect_corrupt(store, &seg, b.start, at);
}

#[test]
fn record_header_in_middle_of_segment_is_corruption() {
    for field in [
        format::REC_OFF_CRC,
        format::REC_OFF_LEN,
        format::REC_OFF_REV,
        format::REC_OFF_OP,
    ] {
        let fx = fixture();
        let store = fx.dir.as_path();
        let seg = segments(store).last().unwrap().clone();
        let (batches, _) = layout(&seg);
        let b = middle_batch(&batches);
        let at = b.records[0].offset + field;
        flip(&seg, at);
        expect_corrupt(store, &seg, b.start, at);
    }
}

#[test]
fn batch_header_in_middle_of_segment_is_corruption() {
    let fields = [
        format::BATCH_OFF_MAGIC,
        format::BATCH_OFF_CRC,
        format::BATCH_OFF_LEN,
        format::BATCH_OFF_COUNT,
        format::BATCH_OFF_FIRST_REV,
        format::BATCH_OFF_LAST_REV + 7,
    ];
    for (n, field) in fields.into_iter().enumerate() {
        let fx = fixture();
        let store = fx.dir.as_path();
        let segs = segments(store);
        // Alternate between the newest segment and an older one.
        let seg = if n % 2 == 0 {
            segs.last().unwrap().clone()
        } else {
            segs[1].clone()
        };
        let (batches, _) = layout(&seg);
        let b = middle_batch(&batches);
        let at = b.start + field;
        flip(&seg, at);
        expect_corrupt(store, &seg, b.start, at);
    }
}

#[test]
fn zeroed_batch_in_middle_of_segment_is_corruption() {
    let fx = fixture();
    let store = fx.dir.as_path();
    let segs = segments(store);
    let seg = segs.last().unwrap();
    let (batches, _) = layout(seg);
    let b = middle_batch(&batches);
    edit(seg, |bytes| bytes[b.start..b.end].fill(0));
    expect_corrupt(store, seg, b.start, b.end - 1);
}

#[test]
fn segment_header_damage_is_corruption() {
    let fields = [
        format::SEG_OFF_MAGIC,
        format::SEG_OFF_VERSION,
        format::SEG_OFF_SEQ,
        format::SEG_OFF_COMPACTED + 3,
        format::SEG_OFF_CRC + 1,
    ];
    for (n, field) in fields.into_iter().enumerate() {
        let fx = fixture();
        let store = fx.dir.as_path();
        let segs = segments(store);
        // Oldest, middle and newest segments in turn (every one holds batches).
        let seg = segs[n % segs.len()].clone();
        flip(&seg, field);
        expect_corrupt(store, &seg, 0, field);
    }
}

#[test]
fn damaged_last_batch_of_older_segment_is_corruption() {
    // The last batch of a segment that is not the newest was synced before the next segment
    // was started: damage there is never a torn tail, whatever it looks like.
    type Damage = fn(&mut Vec<u8>, &Batch) -> usize;
    let damages: [(&str, Damage); 3] = [
        ("flipped value byte", |b, batch| {
            let r = batch.records.last().unwrap();
            let at = r.value_at + r.value_len / 2;
            b[at] ^= 0x01;
            at
        }),
        ("flipped batch checksum", |b, batch| {
            let at = batch.start + format::BATCH_OFF_CRC;
            b[at] ^= 0x80;
            at
        }),
        ("zeroed second half", |b, batch| {
            let mid = format::align_up(batch.start + (batch.end - batch.start) / 2);
            b[mid..batch.end].fill(0);
            mid
        }),
    ];
    for (what, damage) in damages {
        for which in [0, 1] {
            let fx = fixture();
            let store = fx.dir.as_path();
            let seg = segments(store)[which].clone();
            let (batches, _) = layout(&seg);
            let last = batches.last().unwrap().clone();
            let mut at = 0;
            edit(&seg, |b| at = damage(b, &last));
            eprintln!("{what} in the last batch of {}", seg.display());
            expect_corrupt(store, &seg, last.start, at);
        }
    }
}

/// Every fixture write that precedes `torn_from` (a revision) is present with its value; every
/// write at or after it is absent.
fn check_contents(engine: &Engine, writes: &[Wrote], torn_from: Revision) {
    for w in writes {
        let got = engine.get(&key_of(w.i), ReadAt::Latest).unwrap();
        if w.rev < torn_from {
            let kv = got.unwrap_or_else(|| panic!("write {w:?} before the torn tail is missing"));
            assert_eq!(kv.mod_revision, w.rev, "write {w:?}");
            assert_eq!(kv.value(), value_of(w.i).as_slice(), "value of write {w:?}");
        } else {
            assert!(
                got.is_none(),
                "write {w:?} of the torn batch survived: {got:?}"
            );
        }
    }
}

/// The manifest as a crash leaves it when the newest segment's last batch (`last`) was being
/// written: the last manifest write recorded the shard's synced data as ending where that batch
/// starts, and no clean close followed.
fn crash_during_last_batch(store: &Path, last: &Batch, before: Revision) {
    let path = store.join("MANIFEST");
    let mut m = Manifest::decode(&std::fs::read(&path).unwrap()).unwrap();
    assert!(m.clean, "the fixture was closed cleanly");
    m.clean = false;
    let e = m.shards[0].last_mut().unwrap();
    assert!(
        e.is(ENTRY_ACTIVE) && e.end == last.end as u64,
        "{e:?} {last:?}"
    );
    e.end = last.start as u64;
    e.last = before;
    std::fs::write(&path, m.encode()).unwrap();
}

fn torn_tail_case(what: &str, damage: impl FnOnce(&mut Vec<u8>, &Batch)) {
    let fx = fixture();
    let store = fx.dir.as_path();
    let seg = segments(store).last().unwrap().clone();
    let (batches, _) = layout(&seg);
    let last = batches.last().unwrap().clone();
    let before = batches[batches.len() - 2].records.last().unwrap().revision;
    crash_during_last_batch(store, &last, before);
    edit(&seg, |b| damage(b, &last));
    let torn_from = last.records[0].revision;
    let writes = &fx.writes;
    let survived = writes
        .iter()
        .filter(|w| w.rev < torn_from)
        .map(|w| w.rev)
        .max()
        .unwrap();

    let engine = Engine::open(options(store))
        .unwrap_or_else(|e| panic!("{what}: torn tail in {} not recovered: {e}", seg.display()));
    assert!(
        engine.current_revision() >= survived,
        "{what}: current revision {} below the last surviving write {survived}",
        engine.current_revision()
    );
    check_contents(&engine, writes, torn_from);
    // The drop is noted, with the batch's revisions when its header survived.
    let torn: Vec<_> = engine
        .recovery_report()
        .notes
        .iter()
        .filter_map(|n| match n {
            RecoveryNote::TornTail {
                segment,
                offset,
                revisions,
            } => Some((segment.clone(), *offset, revisions.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(torn.len(), 1, "{what}: {:?}", engine.recovery_report());
    assert_eq!((&torn[0].0, torn[0].1), (&seg, last.start as u64), "{what}");
    if let Some(r) = &torn[0].2 {
        assert_eq!(*r.start(), torn_from, "{what}: revisions of the torn batch");
    }
    // Its revisions are never handed out again, although nothing of it is left.
    let newest = writes.last().unwrap().rev;
    assert!(
        engine.next_revision() > newest,
        "{what}: next revision {} would reuse the torn batch's {newest}",
        engine.next_revision()
    );
    engine.close().unwrap();

    // Recovery zeroed the torn bytes: the segment now scans clean, ending where the torn
    // batch started.
    let (after, end) = layout(&seg);
    assert_eq!(
        end,
        ScanEnd::Clean {
            end: last.start as u64
        },
        "{what}: segment after recovery"
    );
    assert_eq!(
        after.len(),
        batches.len() - 1,
        "{what}: batches after recovery"
    );
    let bytes = std::fs::read(&seg).unwrap();
    assert!(
        bytes[last.start..].iter().all(|&b| b == 0),
        "{what}: torn bytes left behind"
    );

    // The store keeps working: new writes get revisions above every revision ever handed out,
    // and they, and the old data, survive another reopen.
    let engine = Engine::open(options(store)).unwrap();
    check_contents(&engine, writes, torn_from);
    let mut prev = engine.current_revision().max(writes.last().unwrap().rev);
    let mut new = Vec::new();
    for n in 0..20 {
        let i = 100_000 + n;
        let w = engine.create(&key_of(i), &value_of(i)).wait().unwrap();
        assert!(
            w.revision > prev,
            "{what}: new write got {} after {prev}",
            w.revision
        );
        prev = w.revision;
        new.push(Wrote { i, rev: w.revision });
    }
    // Rewriting a key whose create was torn works as a create.
    let torn_key = writes.iter().find(|w| w.rev >= torn_from).unwrap().i;
    let w = engine
        .create(&key_of(torn_key), b"rewritten")
        .wait()
        .unwrap();
    assert!(w.revision > prev);
    engine.close().unwrap();

    let engine = Engine::open(options(store)).unwrap();
    for w in writes.iter().filter(|w| w.rev < torn_from).chain(&new) {
        let kv = engine.get(&key_of(w.i), ReadAt::Latest).unwrap().unwrap();
        assert_eq!(
            (kv.mod_revision, kv.value()),
            (w.rev, value_of(w.i).as_slice()),
            "{what}: {w:?}"
        );
    }
    let kv = engine
        .get(&key_of(torn_key), ReadAt::Latest)
        .unwrap()
        .unwrap();
    assert_eq!(kv.value(), b"rewritten");
    let listed = engine.list(&ListRequest::prefix(b"/corrupt/")).unwrap();
    let expected = writes.iter().filter(|w| w.rev < torn_from).count() + new.len() + 1;
    assert_eq!(
        listed.items.len(),
        expected,
        "{what}: keys listed after the second reopen"
    );
    let w = engine.create(b"/corrupt/last", b"x").wait().unwrap();
    assert!(w.revision > kv.mod_revision);
    engine.close().unwrap();
}

#[test]
fn torn_tail_flipped_value_byte() {
    torn_tail_case("flipped value byte", |b, last| {
        let r = last.records.last().unwrap();
        b[r.value_at + r.value_len - 1] ^= 0x10;
    });
}

#[test]
fn torn_tail_flipped_batch_header() {
    torn_tail_case("flipped batch length", |b, last| {
        b[last.start + format::BATCH_OFF_LEN] ^= 0x08
    });
}

#[test]
fn torn_tail_zeroed_second_half() {
    torn_tail_case("zeroed second half", |b, last| {
        let mid = format::align_up(last.start + (last.end - last.start) / 2);
        b[mid..].fill(0);
    });
}

#[test]
fn torn_tail_only_header_written() {
    torn_tail_case("only the batch header written", |b, last| {
        b[last.start + format::BATCH_HEADER_LEN..].fill(0);
    });
}

#[test]
fn torn_tail_records_without_header() {
    // The records reached the disk but the page holding the batch header did not.
    torn_tail_case("zeroed batch header", |b, last| {
        b[last.start..last.start + format::BATCH_HEADER_LEN].fill(0);
    });
}

#[test]
fn torn_tail_garbage_after_batch() {
    // A half-written batch whose later page holds stale garbage past the batch's end.
    torn_tail_case("garbage after a torn batch", |b, last| {
        let r = last.records.last().unwrap();
        b[r.value_at] ^= 0xff;
        let mut rng = Rng::new(7);
        let from = last.end + 4096;
        let garbage = rng.bytes(600, 600);
        b[from..from + garbage.len()].copy_from_slice(&garbage);
    });
}

// ---------------------------------------------------------------------------------------------
// `scan_segment` on randomly damaged images.

#[derive(Clone, Debug, PartialEq, Eq)]
struct OwnedRecord {
    offset: u64,
    revision: Revision,
    prev_revision: Revision,
    op: Op,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// A valid segment image and the records in it, with each batch's end offset.
fn random_segment(rng: &mut Rng) -> (Vec<u8>, Vec<OwnedRecord>, Vec<usize>) {
    let mut img = SegmentHeader {
        shard: rng.below(4) as u32,
        seq: 1 + rng.below(100) as u64,
        flags: 0,
        compacted: Revision(0),
        size: 0,
    }
    .encode()
    .to_vec();
    let mut records = Vec::new();
    let mut ends = Vec::new();
    let mut rev = 1 + rng.below(1000) as u64;
    for _ in 0..rng.range(0, 12) {
        let start = img.len();
        let mut batch = vec![0u8; format::BATCH_HEADER_LEN];
        let n = rng.range(1, 4);
        let first = rev;
        let mut last = rev;
        for _ in 0..n {
            let key = rng.bytes(1, 40);
            let op = if rng.below(5) == 0 {
                Op::Delete
            } else {
                Op::Put
            };
            let value = if op == Op::Delete {
                Vec::new()
            } else {
                rng.bytes(0, 400)
            };
            let prev = Revision(rng.below(rev as usize) as u64);
            let (at, _) =
                format::encode_record::<()>(&mut batch, Revision(rev), prev, op, &key, |b| {
                    b.extend_from_slice(&value);
                    Ok(())
                })
                .unwrap();
            records.push(OwnedRecord {
                offset: (start + at) as u64,
                revision: Revision(rev),
                prev_revision: prev,
                op,
                key,
                value,
            });
            last = rev;
            rev += rng.range(1, 3) as u64;
        }
        format::seal_batch(&mut batch, n as u32, Revision(first), Revision(last));
        img.extend_from_slice(&batch);
        ends.push(img.len());
    }
    // Usually zeros after the data (a pre-sized segment), sometimes a segment filled exactly.
    if rng.below(8) != 0 {
        let pad = rng.range(1, 3000);
        img.resize(img.len() + pad, 0);
    }
    (img, records, ends)
}

fn scan_owned(img: &[u8]) -> (Vec<OwnedRecord>, ScanEnd) {
    let mut out = Vec::new();
    let end = format::scan_segment(
        img,
        |_, _| {},
        |r| {
            out.push(OwnedRecord {
                offset: r.offset,
                revision: r.revision,
                prev_revision: r.prev_revision,
                op: r.op,
                key: r.key.to_vec(),
                value: r.value.to_vec(),
            })
        },
    );
    (out, end)
}

/// Applies one random kind of damage; returns the lowest offset it may have changed.
fn damage(rng: &mut Rng, img: &mut Vec<u8>) -> usize {
    let len = img.len();
    if len == 0 {
        return 0;
    }
    let at = rng.below(len);
    match rng.below(8) {
        0 => {
            img[at] ^= 1 << rng.below(8);
            at
        }
        1 => {
            img[at] = rng.next() as u8;
            at
        }
        2 => {
            let end = (at + rng.range(1, 128)).min(len);
            img[at..end].fill(0);
            at
        }
        3 => {
            let g = rng.bytes(1, 64.min(len - at));
            img[at..at + g.len()].copy_from_slice(&g);
            at
        }
        4 => {
            img.truncate(at);
            at
        }
        5 => {
            // A torn write of the tail: everything from an aligned offset on is zero.
            let at = at & !(format::ALIGN - 1);
            img[at..].fill(0);
            at
        }
        6 => {
            let end = (at + rng.range(1, 16)).min(len);
            img[at..end].fill(0xff);
            at
        }
        _ => {
            // Cut down to a few bytes around the header.
            let at = rng
                .below(format::SEGMENT_HEADER_LEN + format::BATCH_HEADER_LEN + 8)
                .min(len);
            img.truncate(at);
            at
        }
    }
}

#[test]
fn scan_segment_on_damaged_images_reports_a_prefix() {
    let iters: usize = std::env::var("KEEL_SCAN_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let seed: u64 = std::env::var("KEEL_SCAN_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5ca7);
    let mut rng = Rng::new(seed);
    let (mut torn, mut corrupt, mut clean) = (0, 0, 0);
    for iter in 0..iters {
        let (orig, records, ends) = random_segment(&mut rng);
        let (all, end) = scan_owned(&orig);
        assert_eq!(all, records, "iteration {iter}: undamaged image");
        let data_end = ends.last().copied().unwrap_or(format::SEGMENT_HEADER_LEN);
        assert_eq!(
            end,
            ScanEnd::Clean {
                end: data_end as u64
            },
            "iteration {iter}: undamaged image"
        );

        let mut img = orig.clone();
        let mut lowest = usize::MAX;
        for _ in 0..rng.range(1, 3) {
            lowest = lowest.min(damage(&mut rng, &mut img));
        }
        let (got, end) = scan_owned(&img);
        let ctx = || {
            format!("seed {seed} iteration {iter}: damage from offset {lowest}, scan ended {end:?}")
        };
        assert!(
            got.len() <= records.len(),
            "{}: {} records reported, {} written",
            ctx(),
            got.len(),
            records.len()
        );
        for (i, (g, r)) in got.iter().zip(&records).enumerate() {
            assert_eq!(g, r, "{}: record {i} differs from the one written", ctx());
        }
        // Batches wholly before the first damaged byte are always reported.
        let intact_end = ends
            .iter()
            .copied()
            .filter(|&e| e <= lowest)
            .max()
            .unwrap_or(0);
        let intact = records
            .iter()
            .filter(|r| (r.offset as usize) < intact_end)
            .count();
        assert!(
            got.len() >= intact,
            "{}: {} records reported, {intact} intact",
            ctx(),
            got.len()
        );
        if img.len() >= format::SEGMENT_HEADER_LEN {
            let at = match &end {
                ScanEnd::Clean { end } => *end,
                ScanEnd::TornTail { valid_end } => *valid_end,
                ScanEnd::Corrupt { offset, .. } => *offset,
            };
            assert!(
                at as usize <= img.len(),
                "{}: end past the image ({} bytes)",
                ctx(),
                img.len()
            );
        }
        if let (ScanEnd::Clean { end } | ScanEnd::TornTail { valid_end: end }, Some(r)) =
            (&end, got.last())
        {
            // The data ends after the batch of the last record reported.
            let batch_end = ends
                .iter()
                .copied()
                .find(|&e| e > r.offset as usize)
                .unwrap();
            assert!(
                *end as usize >= batch_end,
                "{}: ends before batch ending at {batch_end}",
                ctx()
            );
        }
        match end {
            ScanEnd::Clean { .. } => clean += 1,
            ScanEnd::TornTail { .. } => torn += 1,
            ScanEnd::Corrupt { .. } => corrupt += 1,
        }
    }
    eprintln!("{iters} damaged images: {clean} clean, {torn} torn tails, {corrupt} corrupt");
    assert!(
        torn > 0 && corrupt > 0,
        "damage did not exercise both outcomes"
    );
}

/// A crash while a segment file was being created leaves an empty or all-zero newest file
/// (created, maybe sized, header not yet written): not corruption, the store opens as it was.
#[test]
fn unwritten_newest_segment_file_is_not_corruption() {
    for size in [0, SEGMENT_BYTES as usize] {
        let fx = fixture();
        let store = fx.dir.as_path();
        let newest = segments(store).last().unwrap().clone();
        let name = newest.file_name().unwrap().to_str().unwrap();
        let seq = u64::from_str_radix(name.trim_end_matches(".seg"), 16).unwrap();
        let extra = shard_dir(store).join(format!("{:016x}.seg", seq + 1));
        std::fs::write(&extra, vec![0u8; size]).unwrap();
        let engine = Engine::open(options(store))
            .unwrap_or_else(|e| panic!("store with a {size}-byte zero newest segment: {e}"));
        let writes = &fx.writes;
        check_contents(&engine, writes, Revision(u64::MAX));
        let last = writes.last().unwrap().rev;
        let w = engine.create(b"/corrupt/after", b"x").wait().unwrap();
        assert!(
            w.revision > last,
            "write after recovery got {} <= {last}",
            w.revision
        );
        engine.close().unwrap();
        let engine = Engine::open(options(store)).unwrap();
        check_contents(&engine, writes, Revision(u64::MAX));
        assert_eq!(
            engine
                .get(b"/corrupt/after", ReadAt::Latest)
                .unwrap()
                .unwrap()
                .mod_revision,
            w.revision
        );
        engine.close().unwrap();
    }
}

/// The same zero file anywhere but at the end of the shard is corruption: segments after it
/// were written once it existed.
#[test]
fn zeroed_older_segment_file_is_corruption() {
    let fx = fixture();
    let store = fx.dir.as_path();
    let seg = segments(store)[1].clone();
    edit(&seg, |b| b.fill(0));
    expect_corrupt(store, &seg, 0, 0);
}

/// The state a SIGKILL leaves when it lands while the flusher is still `pwrite`-ing the last
/// batch of segment N and a writer has already rolled over to segment N+1 (created, header
/// written and synced, no batch yet): N's last batch is torn and N+1 is empty. Nothing in it
/// was acknowledged, so it is a torn tail, and the store must open without that batch.
///
/// `tests/crash.rs` reaches exactly this state (`KEEL_CRASH_KIND=big KEEL_CRASH_SEED=11
/// KEEL_CRASH_ITERS=1000`, iteration 225: `shard-000/…1d.seg` torn at 44936, `…1e.seg` a bare
/// header) and the engine then refuses to open with "bad batch in a sealed segment".
#[test]
fn torn_tail_followed_by_an_empty_new_segment_is_a_torn_tail() {
    let fx = fixture();
    let store = fx.dir.as_path();
    let seg = segments(store).last().unwrap().clone();
    let (batches, _) = layout(&seg);
    let last = batches.last().unwrap().clone();
    let before = batches[batches.len() - 2].records.last().unwrap().revision;
    crash_during_last_batch(store, &last, before);
    // The torn batch: its first half reached the file, the rest did not.
    let mid = format::align_up(last.start + (last.end - last.start) / 2);
    edit(&seg, |b| b[mid..].fill(0));
    // The next segment, as `Segment::create` leaves it: pre-sized, header only.
    let name = seg.file_name().unwrap().to_str().unwrap();
    let seq = u64::from_str_radix(name.trim_end_matches(".seg"), 16).unwrap();
    let mut next = SegmentHeader {
        shard: 0,
        seq: seq + 1,
        flags: 0,
        compacted: Revision(0),
        size: SEGMENT_BYTES,
    }
    .encode()
    .to_vec();
    next.resize(SEGMENT_BYTES as usize, 0);
    std::fs::write(
        shard_dir(store).join(format!("{:016x}.seg", seq + 1)),
        &next,
    )
    .unwrap();

    let torn_from = last.records[0].revision;
    let engine = Engine::open(options(store)).unwrap_or_else(|e| {
        panic!("a crash during the last write before a rollover left an unopenable store: {e}")
    });
    check_contents(&engine, &fx.writes, torn_from);
    let w = engine.create(b"/corrupt/after", b"x").wait().unwrap();
    assert!(w.revision > fx.writes.last().unwrap().rev);
    engine.close().unwrap();
    let engine = Engine::open(options(store)).unwrap();
    check_contents(&engine, &fx.writes, torn_from);
    engine.close().unwrap();
}
