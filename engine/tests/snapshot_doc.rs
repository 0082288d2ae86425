//! Checks the constants in `src/snapshot.rs` against the byte tables in `SNAPSHOT.md`, so the
//! document and the code cannot drift apart.

use keel_engine::snapshot::*;
use std::collections::HashMap;

fn doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/SNAPSHOT.md"))
        .expect("SNAPSHOT.md")
}

/// Rows `| offset | size | field | ...` of the first table after `heading`: field -> (offset,
/// size as written).
fn table(doc: &str, heading: &str) -> HashMap<String, (usize, String)> {
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    let mut rows = HashMap::new();
    let mut in_table = false;
    for line in doc[start..].lines().skip(1) {
        if line.starts_with("## ") {
            break;
        }
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if let Ok(off) = cells[0].parse::<usize>() {
            rows.insert(cells[2].to_string(), (off, cells[1].to_string()));
        }
    }
    assert!(!rows.is_empty(), "empty table under {heading:?}");
    rows
}

fn check(rows: &HashMap<String, (usize, String)>, field: &str, off: usize, size: usize) {
    let (doc_off, doc_size) = rows
        .get(field)
        .unwrap_or_else(|| panic!("field {field} not documented"));
    assert_eq!(*doc_off, off, "offset of {field}");
    assert_eq!(
        doc_size.parse::<usize>().ok(),
        Some(size),
        "size of {field}"
    );
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
