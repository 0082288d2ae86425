//! The byte tables of the engine's format documents (`FORMAT.md`, `SNAPSHOT.md`), for the
//! tests that check the code's constants against them.

use std::collections::HashMap;

/// Rows `| offset | size | field | ...` of the first table after `heading` (up to the next
/// heading of the same or a higher level): field -> (offset, size as written).
pub fn table(doc: &str, heading: &str) -> HashMap<String, (usize, String)> {
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    let level = heading.chars().take_while(|c| *c == '#').count();
    let ends = |line: &str| {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        hashes > 0 && hashes <= level && line[hashes..].starts_with(' ')
    };
    let mut rows = HashMap::new();
    let mut in_table = false;
    for line in doc[start..].lines().skip(1) {
        if ends(line) {
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

/// The documented offset and size of `field` are `off` and `size`.
pub fn check(rows: &HashMap<String, (usize, String)>, field: &str, off: usize, size: usize) {
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
