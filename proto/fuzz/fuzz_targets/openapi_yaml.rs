//! The YAML keel writes: gnostic's `Any.yaml`, the text of every default, enum, example and
//! `x-` extension in the protobuf form of `/openapi/v2` (module `yaml`, reached through the
//! public `openapi_v2::encode_document`). The input is a JSON value placed as the document's
//! `x-fuzz` extension. Checks: no panic, and the YAML reads back (with serde_yaml_ng, a YAML
//! 1.2 core-schema reader) as the same JSON value: a string is never read back as a number,
//! boolean or null, nor a key as anything but its string.
#![no_main]

use keel_proto::openapi_v2::{encode_document, gnostic::Document};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use serde_json::Value;

/// Values equal as JSON data: numbers compare by value (YAML has no 1.0 vs 1 distinction).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let doc = serde_json::json!({
        "swagger": "2.0",
        "info": {"title": "fuzz", "version": "v0"},
        "paths": {},
        "x-fuzz": value,
    });
    let bytes = encode_document(doc.to_string().as_bytes()).expect("a minimal document encodes");
    let doc = Document::decode(bytes.as_slice()).expect("our own encoding decodes");
    let ext = &doc.vendor_extension[0];
    assert_eq!(ext.name, "x-fuzz");
    let yaml = &ext.value.as_ref().expect("extension value").yaml;
    assert!(yaml.ends_with('\n'), "{yaml:?}");
    let back: Value = match serde_yaml_ng::from_str(yaml) {
        Ok(v) => v,
        // A string such as "0o1722222222222222222222" is written plain, as Go's YAML writes
        // it: Go resolves a plain scalar whose integer does not fit 64 bits as a string.
        // serde_yaml_ng refuses such a scalar instead; Go's reading is the one that counts.
        Err(e) if e.to_string().contains("out of range") => return,
        Err(e) => panic!("YAML of {value} does not parse: {e}\n{yaml}"),
    };
    assert!(
        same(&value, &back),
        "YAML of {value} reads back as {back}\n{yaml}"
    );
});
