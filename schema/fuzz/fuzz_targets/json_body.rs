//! The server's JSON request body path (`server/src/handlers/body.rs`): a create/update body
//! of a kind with a schema is decoded and field-checked in one pass by
//! `Schemas::decode_checked`; a patched object is checked by `Schemas::check`; unknown fields
//! are dropped by `Schemas::prune` (fieldValidation Ignore/Warn). The first byte picks the
//! endpoint's kind, the rest is the body.
//!
//! Checks, beyond no panic: `decode_checked` accepts exactly what `serde_json::from_slice`
//! accepts, with the same error text, and yields exactly its value (same key order) and exactly
//! `check`'s report; the report is bounded (`STRICT_ERRORS_MAX`) and its strict list holds only
//! unknown and duplicate messages; pruning is idempotent and leaves nothing `check` calls unknown.
#![no_main]

#[path = "kinds.rs"]
mod kinds;

use keel_schema::{schemas, STRICT_ERRORS_MAX};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((gvk, body)) = kinds::split(data) else {
        return;
    };
    let s = schemas();
    let plain = serde_json::from_slice::<Value>(body);
    let checked = s.decode_checked(&gvk, body);
    let report = s.check(&gvk, body);
    let (value, found) = match (plain, checked) {
        (Ok(plain), Ok((value, found))) => {
            assert_eq!(
                serde_json::to_string(&plain).unwrap(),
                serde_json::to_string(&value).unwrap(),
                "decode_checked's value is not serde_json's"
            );
            (value, found)
        }
        (Err(p), Err(c)) => {
            assert_eq!(
                p.to_string(),
                c,
                "decode_checked's error is not serde_json's"
            );
            assert!(report.is_err(), "check accepts what serde_json refuses");
            return;
        }
        (p, c) => panic!("serde_json says {p:?}, decode_checked says {c:?}"),
    };
    let report = report.expect("check accepts what serde_json accepts");
    assert_eq!(found, report, "decode_checked's report is not check's");
    assert!(
        report.strict.len() <= STRICT_ERRORS_MAX,
        "{}",
        report.strict.len()
    );
    for m in &report.strict {
        assert!(
            report.unknown.contains(m) || report.duplicate.contains(m),
            "strict message {m:?} is neither unknown nor duplicate"
        );
    }
    if !s.knows(&gvk) {
        assert!(report.is_clean(), "a kind without a schema has findings");
    }
    let mut pruned = value;
    s.prune(&gvk, &mut pruned);
    let once = pruned.clone();
    s.prune(&gvk, &mut pruned);
    assert_eq!(once, pruned, "pruning twice differs from pruning once");
    let bytes = serde_json::to_vec(&pruned).unwrap();
    let after = s.check(&gvk, &bytes).expect("our own JSON parses");
    assert!(
        after.unknown.is_empty(),
        "unknown fields survive pruning: {:?}",
        after.unknown
    );
});
