//! Checks the constants in `src/snapshot.rs` against the byte tables in `SNAPSHOT.md`, so the
//! document and the code cannot drift apart.

use keel_engine::snapshot::*;
mod doc_tables;

use doc_tables::{check, table};

fn doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/SNAPSHOT.md"))
        .expect("SNAPSHOT.md")
}

#[test]
fn header_matches_doc() {
    let d = doc();
    assert!(d.contains(&format!("## Header ({SNAP_HEADER_LEN} bytes)")));
    assert!(d.contains(&format!(
        "ASCII `{}`",
        std::str::from_utf8(&SNAPSHOT_MAGIC).unwrap()
    )));
    assert!(d.contains(&format!("currently `{SNAPSHOT_VERSION}`")));
    let t = table(&d, "## Header");
    check(&t, "magic", SNAP_OFF_MAGIC, 8);
    check(&t, "version", SNAP_OFF_VERSION, 4);
    check(&t, "flags", SNAP_OFF_FLAGS, 4);
    check(&t, "revision", SNAP_OFF_REVISION, 8);
    check(&t, "compacted", SNAP_OFF_COMPACTED, 8);
    check(&t, "created_ms", SNAP_OFF_CREATED_MS, 8);
    check(&t, "reserved", SNAP_OFF_RESERVED, 8);
}

#[test]
fn record_end_and_abort_match_doc() {
    let d = doc();
    assert!(d.contains(&format!(
        "## Record ({SNAP_RECORD_HEAD_LEN} bytes, key, value)"
    )));
    let t = table(&d, "## Record");
    check(&t, "tag", 0, 1);
    check(&t, "key_len", 1, 4);
    check(&t, "value_len", 5, 4);
    check(&t, "mod_revision", 9, 8);
    assert!(d.contains(&format!("| 0 | 1 | tag | `{TAG_RECORD}` |")));
    assert!(d.contains(&format!("## End ({SNAP_END_LEN} bytes)")));
    let t = table(&d, "## End");
    check(&t, "tag", 0, 1);
    check(&t, "count", 1, 8);
    check(&t, "sha256", 9, 32);
    assert!(d.contains(&format!("| 0 | 1 | tag | `{TAG_END}` |")));
    assert!(d.contains(&format!("| 0 | 1 | tag | `{TAG_ABORT}` |")));
    assert!(d.contains(&format!("at most {ABORT_MESSAGE_BYTES_MAX}")));
}
