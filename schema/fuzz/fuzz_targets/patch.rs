//! The server's PATCH path (`apply_patch` in `server/src/handlers/resource.rs`): a JSON merge
//! patch, a JSON patch and a strategic merge patch (with the merge keys and strategies of the
//! published schemas, as `server/src/schema_meta.rs` reads them) applied to the stored
//! object. Input: the endpoint's kind (first byte), the stored object's JSON, a NUL byte (never
//! valid inside JSON), the patch document's JSON; all three patch types run on each input.
//!
//! Checks, beyond no panic:
//! - merge patch: applying the same patch again changes nothing (RFC 7386 is idempotent), and
//!   the result is no larger than the object and the patch together;
//! - JSON patch: errors are 400/413/422 and leave the object untouched (the operation is
//!   atomic); a result is no larger than the object, the patch and the copy budget together;
//! - strategic merge patch: errors are 400/422 or upstream's plain 500 with a message; a patch
//!   with no list and no directive anywhere merges exactly as a JSON merge patch does. (A
//!   result may hold `$` keys: an atomic list is taken verbatim, directives and all, as
//!   upstream's `mergeSliceHandler` does; field validation then reports or prunes them.)
#![no_main]

#[path = "kinds.rs"]
mod kinds;

use keel_api::patch::{
    json_patch, merge_patch, strategic_merge_patch, ListStrategy, MergeMeta,
    JSON_PATCH_COPY_BYTES_MAX,
};
use keel_schema::Gvk;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// `server/src/schema_meta.rs`'s `SchemaMerge`, which lives in the server crate (too heavy to
/// build here): the same two lookups in the published schemas.
struct SchemaMerge(Gvk<'static>);

impl MergeMeta for SchemaMerge {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match keel_schema::schemas().list_strategy(&self.0, path) {
            keel_schema::ListStrategy::Atomic => ListStrategy::Atomic,
            keel_schema::ListStrategy::MergeByKey(k) => ListStrategy::MergeByKey(k),
            keel_schema::ListStrategy::MergePrimitives => ListStrategy::MergePrimitives,
        }
    }

    fn retain_keys(&self, path: &[&str]) -> bool {
        keel_schema::schemas().retain_keys(&self.0, path)
    }
}

fn json_len(v: &Value) -> usize {
    serde_json::to_vec(v).unwrap().len()
}

/// Whether `v` holds a list or a `$`-prefixed key anywhere.
fn has_list_or_directive(v: &Value) -> bool {
    match v {
        Value::Array(_) => true,
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.starts_with('$') || has_list_or_directive(v)),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((gvk, rest)) = kinds::split(data) else {
        return;
    };
    let Some(nul) = rest.iter().position(|&b| b == 0) else {
        return;
    };
    // The stored object is always a JSON object; a patch body that is not JSON is a 400
    // before any patching.
    let Ok(current @ Value::Object(_)) = serde_json::from_slice::<Value>(&rest[..nul]) else {
        return;
    };
    let Ok(patch) = serde_json::from_slice::<Value>(&rest[nul + 1..]) else {
        return;
    };
    let (current_len, patch_len) = (json_len(&current), json_len(&patch));

    let mut merged = current.clone();
    merge_patch(&mut merged, &patch);
    let mut twice = merged.clone();
    merge_patch(&mut twice, &patch);
    assert_eq!(merged, twice, "merge patch is not idempotent");
    assert!(json_len(&merged) <= current_len + patch_len);

    let mut patched = current.clone();
    match json_patch(&mut patched, &patch) {
        Ok(()) => assert!(
            json_len(&patched) <= current_len + 2 * patch_len + JSON_PATCH_COPY_BYTES_MAX,
            "JSON patch grew {current_len} bytes to {}",
            json_len(&patched)
        ),
        Err(e) => {
            assert!([400, 413, 422].contains(&e.code), "JSON patch error {e:?}");
            assert_eq!(patched, current, "a failed JSON patch changed the object");
        }
    }

    match strategic_merge_patch(&current, &patch, &SchemaMerge(gvk)) {
        Ok(out) => {
            if !has_list_or_directive(&patch) {
                assert_eq!(
                    out, merged,
                    "strategic merge of a plain map patch is not a merge patch"
                );
            }
        }
        Err(e) => {
            assert!(
                [400, 422, 500].contains(&e.code),
                "strategic merge error {e:?}"
            );
            assert!(!e.message.is_empty());
        }
    }
});
