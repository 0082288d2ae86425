//! A store written in format version 1 (no `MANIFEST`, `SHARDS` of one line, segment headers
//! of version 1) opens, keeps everything, and is upgraded: the manifest is written, `SHARDS`
//! gets its checksum, the version-1 segments stay as they are, and from then on the store is
//! checked like any other. The version-1 directory is built byte by byte here with the format
//! module (version 1's layout is version 2's with `version` = 1 and no `size`).

use keel_engine::format::{
    self, Op, SegmentHeader, SEGMENT_HEADER_LEN, SEG_OFF_CRC, SEG_OFF_VERSION,
};
use keel_engine::manifest::Manifest;
use keel_engine::shard::shard_for_key;
use keel_engine::{
    Engine, Error, ListRequest, Options, ReadAt, RecoveryNote, Revision, Store, StoreExt, SyncMode,
};
use std::collections::BTreeMap;
use std::path::Path;

const SEGMENT_BYTES: usize = 64 * 1024;
const SHARDS: usize = 2;

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.shards = 4; // ignored: the store says 2
    o.sync = SyncMode::Always;
    o.maintenance_interval = None;
    o.limits.segment_bytes = SEGMENT_BYTES as u64;
    o
}

/// Key → (value, mod revision).
type Contents = BTreeMap<Vec<u8>, (Vec<u8>, Revision)>;

fn v1_header(shard: u32, seq: u64) -> Vec<u8> {
    let mut h = SegmentHeader {
        shard,
        seq,
        flags: 0,
        compacted: Revision::ZERO,
        size: 0,
    }
    .encode();
    h[SEG_OFF_VERSION..SEG_OFF_VERSION + 4].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32fast::hash(&h[..SEG_OFF_CRC]);
    h[SEG_OFF_CRC..].copy_from_slice(&crc.to_le_bytes());
    h.to_vec()
}

/// One batch of (revision, op, key, value) records.
fn batch(records: &[(u64, Op, Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut buf = vec![0u8; format::BATCH_HEADER_LEN];
    for (rev, op, k, v) in records {
        format::encode_record::<()>(&mut buf, Revision(*rev), Revision::ZERO, *op, k, |b| {
            b.extend_from_slice(v);
            Ok(())
        })
        .unwrap();
    }
    let (first, last) = (records[0].0, records[records.len() - 1].0);
    format::seal_batch(
        &mut buf,
        records.len() as u32,
        Revision(first),
        Revision(last),
    );
    buf
}

fn key_on(shard: usize, n: &mut usize) -> Vec<u8> {
    loop {
        let k = format!("/v1/k{:04}", *n).into_bytes();
        *n += 1;
        if shard_for_key(&k, SHARDS) == shard {
            return k;
        }
    }
}

/// The version-1 store: shard 0 spans two segments, shard 1 one segment whose last batch is
/// torn (version 1's crash). Returns what must survive: key → (value, revision).
fn write_v1_store(dir: &Path) -> (Contents, Revision) {
    std::fs::create_dir_all(dir.join("shard-000")).unwrap();
    std::fs::create_dir_all(dir.join("shard-001")).unwrap();
    std::fs::write(dir.join("SHARDS"), "2\n").unwrap();
    let mut compacted = 2u64.to_le_bytes().to_vec();
    compacted.extend_from_slice(&crc32fast::hash(&compacted.clone()).to_le_bytes());
    std::fs::write(dir.join("COMPACTED"), compacted).unwrap();

    let mut want = BTreeMap::new();
    let mut n = 0;
    let mut rev = 0u64;
    // (shard, seq) → segment image; revisions alternate between the shards.
    let mut images: BTreeMap<(usize, u64), Vec<u8>> = BTreeMap::new();
    for (shard, seq, batches) in [(0, 1, 6), (1, 1, 5), (0, 2, 4)] {
        let mut img = v1_header(shard as u32, seq);
        for _ in 0..batches {
            let mut recs = Vec::new();
            for _ in 0..3 {
                rev += 1;
                let k = key_on(shard, &mut n);
                let v = format!("v1 value at {rev}").into_bytes();
                want.insert(k.clone(), (v.clone(), Revision(rev)));
                recs.push((rev, Op::Put, k, v));
            }
            img.extend_from_slice(&batch(&recs));
        }
        images.insert((shard, seq), img);
    }
    // A delete in shard 0's newest segment.
    rev += 1;
    let (gone, _) = want
        .iter()
        .find(|(k, _)| shard_for_key(k, SHARDS) == 0)
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    want.remove(&gone);
    let img = images.get_mut(&(0, 2)).unwrap();
    img.extend_from_slice(&batch(&[(rev, Op::Delete, gone, vec![])]));
    let top_kept = rev;
    // The torn batch: written, its second half never reached the disk.
    rev += 1;
    let k = key_on(1, &mut n);
    let torn = batch(&[(rev, Op::Put, k, vec![b'x'; 200])]);
    let img = images.get_mut(&(1, 1)).unwrap();
    let half = torn.len() / 2;
    img.extend_from_slice(&torn[..half]);
    // Version 1 had created shard 1's next segment (a rollover) when the crash came.
    images.insert((1, 2), v1_header(1, 2));
    for ((shard, seq), mut img) in images {
        img.resize(SEGMENT_BYTES, 0);
        let path = dir
            .join(format!("shard-{shard:03}"))
            .join(format!("{seq:016x}.seg"));
        std::fs::write(path, img).unwrap();
    }
    (want, Revision(top_kept))
}

fn check(engine: &Engine, want: &Contents, what: &str) {
    for (k, (v, r)) in want {
        let kv = engine
            .get(k, ReadAt::Latest)
            .unwrap()
            .unwrap_or_else(|| panic!("{what}: {} missing", String::from_utf8_lossy(k)));
        assert_eq!((kv.value(), kv.mod_revision), (v.as_slice(), *r), "{what}");
    }
    let l = engine.list(&ListRequest::prefix(b"/v1/")).unwrap();
    assert_eq!(l.items.len(), want.len(), "{what}: listed");
}

#[test]
fn a_version_1_store_opens_and_is_upgraded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let (want, top) = write_v1_store(&dir);
    assert!(!dir.join("MANIFEST").exists());

    let engine = Engine::open(options(&dir)).expect("a version-1 store opens");
    let notes = engine.recovery_report().notes.clone();
    assert!(
        notes.contains(&RecoveryNote::Upgraded { from: 1, to: 2 }),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| matches!(n, RecoveryNote::TornTail { segment, .. }
            if segment.ends_with("shard-001/0000000000000001.seg"))),
        "version 1's torn tail is dropped and noted: {notes:?}"
    );
    assert_eq!(engine.stats().shards, SHARDS);
    assert_eq!(engine.compacted_revision(), Revision(2));
    assert_eq!(engine.current_revision(), top);
    check(&engine, &want, "upgraded");
    let w = engine.create(b"/after", b"after").wait().unwrap();
    assert!(w.revision > top);
    engine.close().unwrap();

    // The store's files are version 2's now; its version-1 segments are untouched.
    let shards = std::fs::read_to_string(dir.join("SHARDS")).unwrap();
    assert!(shards.starts_with("2\ncrc32 "), "{shards:?}");
    let m = Manifest::decode(&std::fs::read(dir.join("MANIFEST")).unwrap()).unwrap();
    assert!(m.clean);
    assert_eq!(m.shards.len(), SHARDS);
    // Both version-1 segments, then (64 KiB segments are never reused) a new active one.
    assert_eq!(
        m.shards[0].iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3],
        "{m:?}"
    );
    let old = std::fs::read(dir.join("shard-000/0000000000000001.seg")).unwrap();
    assert_eq!(&old[..SEGMENT_HEADER_LEN], v1_header(0, 1).as_slice());

    // From now on it is checked like any other store: whole, it opens without notes of an
    // upgrade; with an acknowledged batch erased, it is refused.
    let engine = Engine::open(options(&dir)).unwrap();
    assert!(
        !engine
            .recovery_report()
            .notes
            .iter()
            .any(|n| matches!(n, RecoveryNote::Upgraded { .. })),
        "{:?}",
        engine.recovery_report()
    );
    check(&engine, &want, "reopened");
    engine.close().unwrap();
    let seg = dir.join("shard-000/0000000000000001.seg");
    let mut b = std::fs::read(&seg).unwrap();
    let end = b.iter().rposition(|&x| x != 0).unwrap();
    b[end - 10..=end].fill(0);
    std::fs::write(&seg, b).unwrap();
    match Engine::open(options(&dir)) {
        Err(Error::Corrupt { file, .. }) => assert_eq!(file, seg),
        other => panic!("an erased batch of an upgraded store: {:?}", other.err()),
    }
}

/// A crash after the upgrade wrote `MANIFEST` but before it rewrote `SHARDS`: the next open
/// finishes the upgrade.
#[test]
fn an_interrupted_upgrade_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let (want, _) = write_v1_store(&dir);
    Engine::open(options(&dir)).unwrap().close().unwrap();
    std::fs::write(dir.join("SHARDS"), "2\n").unwrap();
    let engine = Engine::open(options(&dir)).unwrap();
    check(&engine, &want, "after the interrupted upgrade");
    engine.close().unwrap();
    let shards = std::fs::read_to_string(dir.join("SHARDS")).unwrap();
    assert!(shards.starts_with("2\ncrc32 "), "{shards:?}");
}

/// Version 1's rules still refuse what version 1 refused: a damaged batch in the middle.
#[test]
fn a_damaged_version_1_store_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    write_v1_store(&dir);
    let seg = dir.join("shard-000/0000000000000001.seg");
    let mut b = std::fs::read(&seg).unwrap();
    let at = SEGMENT_HEADER_LEN + format::BATCH_HEADER_LEN + format::RECORD_HEADER_LEN + 3;
    b[at] ^= 0x20;
    std::fs::write(&seg, b).unwrap();
    match Engine::open(options(&dir)) {
        Err(Error::Corrupt { file, offset, .. }) => {
            assert_eq!(file, seg);
            assert!((SEGMENT_HEADER_LEN as u64..=at as u64).contains(&offset));
        }
        other => panic!("{:?}", other.err()),
    }
    assert!(
        !dir.join("MANIFEST").exists(),
        "a refused open changes nothing"
    );
}
