//! The server's YAML request body path (`server/src/handlers/body.rs`): a YAML body is read by
//! `keel_api::yaml::decode` (bounded: values expanded, nesting) into the JSON value it stands
//! for, which then takes the JSON bodies' path (`Schemas::decode_checked`). Responses asked for
//! in YAML are written by `keel_api::yaml::encode`. The first byte picks the endpoint's kind,
//! the rest is the body.
//!
//! Checks, beyond no panic and no runaway expansion (alias bombs end at the bound): a decoded
//! value never holds more values than the bound; its JSON is accepted by `decode_checked`
//! with the same value; and the YAML `encode` writes for it reads back as the same value
//! (numbers by value; values with strings holding NEL, LS or PS excepted, which upstream's
//! YAML does not keep either, and may not even read back).
#![no_main]

#[path = "kinds.rs"]
mod kinds;

use keel_schema::schemas;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Small, so that alias expansion reaches it quickly.
const VALUES_MAX: usize = 10_000;

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(m) => m.values().map(count).sum(),
        _ => 0,
    }
}

/// Whether `v` holds a string with NEL, LS or PS: go-yaml writes them unescaped in single
/// quotes and literal blocks, where YAML 1.1 readers (go-yaml itself) take them for line
/// breaks, so upstream's YAML does not read back the same either.
fn has_unicode_breaks(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(['\u{85}', '\u{2028}', '\u{2029}']),
        Value::Array(a) => a.iter().any(has_unicode_breaks),
        Value::Object(m) => m.iter().any(|(k, v)| {
            has_unicode_breaks(&Value::String(k.clone())) || has_unicode_breaks(v)
        }),
        _ => false,
    }
}

/// Equal as upstream's round trip can keep them: a float with an integral value is written as
/// an integer (`1.0` as `1`, as Go's `%g`), so numbers compare by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((gvk, body)) = kinds::split(data) else {
        return;
    };
    let doc = match keel_api::yaml::decode(body, VALUES_MAX) {
        Ok(doc) => doc,
        Err(e) => {
            assert!(e.starts_with("yaml: "), "not go-yaml's wording: {e}");
            return;
        }
    };
    // Keys count as part of their mapping, so the bound is on the values.
    assert!(count(&doc.value) <= VALUES_MAX, "{} values", count(&doc.value));
    let json = serde_json::to_vec(&doc.value).unwrap();
    let (value, _report) = schemas()
        .decode_checked(&gvk, &json)
        .expect("the JSON of a YAML body decodes");
    assert_eq!(value, doc.value, "decode_checked's value is not the YAML's");
    let text = keel_api::yaml::encode(&doc.value);
    if has_unicode_breaks(&doc.value) {
        // Written as go-yaml writes them (unescaped in single quotes or literal blocks), such
        // strings need not read back at all: a NEL that starts a literal block's line is a
        // line break to the reader, and can end the block early.
        return;
    }
    let back = keel_api::yaml::decode(&text, usize::MAX)
        .unwrap_or_else(|e| panic!("our YAML does not read back ({e}): {}", String::from_utf8_lossy(&text)));
    assert!(
        same(&back.value, &doc.value),
        "our YAML reads back differently: {}\n{:?}\n{:?}",
        String::from_utf8_lossy(&text),
        back.value,
        doc.value
    );
    assert_eq!(back.duplicate, None, "our YAML repeats a key");
});
