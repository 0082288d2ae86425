//! Checks the constants in `src/format.rs` against the byte tables in `FORMAT.md`, so the
//! document and the code cannot drift apart.

use keel_engine::format::*;
use keel_engine::manifest::*;
mod doc_tables;

use doc_tables::{check, table};

fn doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md")).expect("FORMAT.md")
}

#[test]
fn segment_header_matches_doc() {
    let d = doc();
    assert!(d.contains(&format!("### Segment header ({SEGMENT_HEADER_LEN} bytes)")));
    let t = table(&d, "### Segment header");
    check(&t, "magic", SEG_OFF_MAGIC, 8);
    check(&t, "version", SEG_OFF_VERSION, 4);
    check(&t, "shard", SEG_OFF_SHARD, 4);
    check(&t, "seq", SEG_OFF_SEQ, 8);
    check(&t, "flags", SEG_OFF_FLAGS, 4);
    check(&t, "compacted", SEG_OFF_COMPACTED, 8);
    check(&t, "size", SEG_OFF_SIZE, 8);
    check(
        &t,
        "reserved",
        SEG_OFF_RESERVED,
        SEG_OFF_CRC - SEG_OFF_RESERVED,
    );
    check(&t, "crc", SEG_OFF_CRC, 4);
    assert_eq!(&SEGMENT_MAGIC, b"KEELSEG\0");
    assert!(d.contains(&format!("format version, currently `{FORMAT_VERSION}`")));
    assert!(
        d.contains(&format!("| {FORMAT_VERSION} | ")),
        "version {FORMAT_VERSION} in the version log"
    );
    assert!(d.contains("bit 0 `REWRITTEN`") && SEG_FLAG_REWRITTEN == 1);
}

#[test]
fn batch_header_matches_doc() {
    let d = doc();
    assert!(d.contains(&format!("### Batch header ({BATCH_HEADER_LEN} bytes)")));
    let t = table(&d, "### Batch header");
    check(&t, "magic", BATCH_OFF_MAGIC, 4);
    check(&t, "crc", BATCH_OFF_CRC, 4);
    check(&t, "len", BATCH_OFF_LEN, 4);
    check(&t, "count", BATCH_OFF_COUNT, 4);
    check(&t, "first_rev", BATCH_OFF_FIRST_REV, 8);
    check(&t, "last_rev", BATCH_OFF_LAST_REV, 8);
    assert_eq!(BATCH_MAGIC.to_le_bytes(), *b"KLB1");
    assert!(
        d.contains(&format!("`{BATCH_MAGIC:#010x}`")),
        "magic value documented"
    );
}

#[test]
fn record_matches_doc() {
    let d = doc();
    assert!(d.contains(&format!("### Record ({RECORD_HEADER_LEN}-byte header")));
    let t = table(&d, "### Record");
    check(&t, "crc", REC_OFF_CRC, 4);
    check(&t, "len", REC_OFF_LEN, 4);
    check(&t, "rev", REC_OFF_REV, 8);
    check(&t, "prev_rev", REC_OFF_PREV_REV, 8);
    check(&t, "key_len", REC_OFF_KEY_LEN, 2);
    check(&t, "op", REC_OFF_OP, 1);
    check(&t, "flags", REC_OFF_FLAGS, 1);
    check(&t, "value_len", REC_OFF_VALUE_LEN, 4);
    check(&t, "reserved", REC_OFF_RESERVED, 8);
    assert_eq!(t["key"].0, RECORD_HEADER_LEN);
    assert!(d.contains(&format!(
        "`{}` put, `{}` delete",
        Op::Put as u8,
        Op::Delete as u8
    )));
    assert!(d.contains(&format!("multiples of\n**{ALIGN}**")));
}

#[test]
fn manifest_matches_doc() {
    let d = doc();
    assert!(d.contains(&format!(
        "### MANIFEST header ({MANIFEST_HEADER_LEN} bytes)"
    )));
    let t = table(&d, "### MANIFEST header");
    check(&t, "magic", MAN_OFF_MAGIC, 8);
    check(&t, "version", MAN_OFF_VERSION, 4);
    check(&t, "shards", MAN_OFF_SHARDS, 4);
    check(&t, "generation", MAN_OFF_GENERATION, 8);
    check(&t, "ceiling", MAN_OFF_CEILING, 8);
    check(&t, "compacted", MAN_OFF_COMPACTED, 8);
    check(&t, "flags", MAN_OFF_FLAGS, 4);
    check(&t, "entries", MAN_OFF_ENTRIES, 4);
    assert_eq!(&MANIFEST_MAGIC, b"KEELMAN\0");
    assert!(d.contains("bit 0 `CLEAN`") && MAN_FLAG_CLEAN == 1);
    assert!(d.contains(&format!(
        "`{MANIFEST_HEADER_LEN} + {ENTRY_LEN} × entries + {MANIFEST_TRAILER_LEN}`"
    )));

    assert!(d.contains(&format!("### MANIFEST entry ({ENTRY_LEN} bytes)")));
    let t = table(&d, "### MANIFEST entry");
    check(&t, "shard", ENT_OFF_SHARD, 4);
    check(&t, "flags", ENT_OFF_FLAGS, 4);
    check(&t, "seq", ENT_OFF_SEQ, 8);
    check(&t, "end", ENT_OFF_END, 8);
    check(&t, "size", ENT_OFF_SIZE, 8);
    check(&t, "first_rev", ENT_OFF_FIRST_REV, 8);
    check(&t, "last_rev", ENT_OFF_LAST_REV, 8);
    let flags = [
        (0, "ACTIVE", ENTRY_ACTIVE),
        (1, "REWRITTEN", ENTRY_REWRITTEN),
        (2, "PENDING", ENTRY_PENDING),
        (3, "REMOVING", ENTRY_REMOVING),
    ];
    for (bit, name, value) in flags {
        assert_eq!(value, 1 << bit, "{name}");
        assert!(
            d.contains(&format!("bit {bit} `{name}`")),
            "{name} documented"
        );
    }
}

/// `SHARDS` is documented as the count, a newline, and `crc32 ` with the CRC-32 of that line.
#[test]
fn shards_file_matches_doc() {
    let d = doc();
    assert!(d.contains("\"N\\ncrc32 XXXXXXXX\\n\""));
    let dir = tempfile::tempdir().unwrap();
    let mut o = keel_engine::Options::new(dir.path());
    o.shards = 3;
    keel_engine::Engine::open(o).unwrap().close().unwrap();
    let got = std::fs::read_to_string(dir.path().join("SHARDS")).unwrap();
    let crc = crc32fast_hash(b"3\n");
    assert_eq!(got, format!("3\ncrc32 {crc:08x}\n"));
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit: the document's
/// definition, independent of the engine's implementation.
fn crc32fast_hash(b: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &x in b {
        crc ^= x as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
