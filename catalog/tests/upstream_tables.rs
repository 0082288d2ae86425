//! keel's Table column definitions against upstream's: the `columnDefinitions` a Kubernetes
//! v1.36.2 API server (every API and feature on) answered for every resource it lists, recorded
//! with `upstream-v1.36.2/record-table-columns.py` (see `upstream-v1.36.2/README.md`), compared
//! as JSON values (name, type, format, description, priority) in upstream's order, for every
//! listable resource keel serves with every API enabled.

use std::collections::BTreeMap;
use std::time::SystemTime;

use keel_catalog::{table, Catalog, IncludeObject};
use serde_json::Value;

/// `"<group>/<version>/<resource>"` → upstream's column definitions.
fn recorded() -> BTreeMap<String, Value> {
    let path = format!(
        "{}/tests/upstream-v1.36.2/table-columns.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// keel's column definitions of every listable resource served with every API enabled.
fn keel() -> BTreeMap<String, Value> {
    let catalog = Catalog::new("api/all=true").unwrap();
    catalog
        .resources()
        .filter(|info| info.supports("list"))
        .map(|info| {
            let t = table(
                info,
                &[],
                IncludeObject::None,
                Value::Null,
                SystemTime::UNIX_EPOCH,
            );
            let key = format!("{}/{}/{}", info.group, info.version, info.plural);
            (key, t["columnDefinitions"].clone())
        })
        .collect()
}

#[test]
fn column_definitions_are_upstreams() {
    let (ours, theirs) = (keel(), recorded());
    let unrecorded: Vec<&String> = ours.keys().filter(|k| !theirs.contains_key(*k)).collect();
    assert!(
        unrecorded.is_empty(),
        "served, not recorded: {unrecorded:?}"
    );
    let mut differ = Vec::new();
    for (key, upstream) in &theirs {
        let Some(mine) = ours.get(key) else {
            differ.push(format!("{key}: not served by keel"));
            continue;
        };
        let (mine, upstream) = (mine.as_array().unwrap(), upstream.as_array().unwrap());
        if mine.len() != upstream.len() {
            differ.push(format!(
                "{key}: {} columns, upstream {}",
                mine.len(),
                upstream.len()
            ));
            continue;
        }
        for (a, b) in mine.iter().zip(upstream) {
            if a != b {
                differ.push(format!(
                    "{key}: column {}\n  keel:     {a}\n  upstream: {b}",
                    b["name"]
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} differences:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
