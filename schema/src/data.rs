//! The embedded upstream definitions: gzip-compressed OpenAPI v2 `definitions`, decoded once.

use std::io::Read;

use serde_json::{Map, Value};

/// `data/definitions.json.gz`, produced by `data/regen.py` (see README.md).
const DEFINITIONS_GZ: &[u8] = include_bytes!("../data/definitions.json.gz");
/// Upper bound on the decompressed size; the v1.36 data is about 1.2 MB.
const DEFINITIONS_JSON_BYTES_MAX: u64 = 16 << 20;

/// Definition name → schema, in upstream's OpenAPI v2 form, plus the upstream version.
pub(crate) struct Definitions {
    defs: Map<String, Value>,
    /// `info` of the upstream document (`{"title": "Kubernetes", "version": "v1.36.0"}`).
    pub(crate) info: Value,
}

impl Definitions {
    /// Decode the embedded data. The bytes are part of the build, so a failure here is a
    /// programmer error (a broken regeneration), not an operating error.
    pub(crate) fn decode() -> Definitions {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(DEFINITIONS_GZ)
            .take(DEFINITIONS_JSON_BYTES_MAX)
            .read_to_end(&mut json)
            .expect("embedded definitions.json.gz must decompress");
        let mut doc: Value =
            serde_json::from_slice(&json).expect("embedded definitions must be JSON");
        let info = doc["info"].take();
        let defs = match doc["definitions"].take() {
            Value::Object(defs) => defs,
            other => panic!("embedded definitions must be an object, got {other}"),
        };
        Definitions { defs, info }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.defs.get(name)
    }

    pub(crate) fn len(&self) -> usize {
        self.defs.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.defs.iter()
    }

    /// Upstream Kubernetes version of the data (`v1.36.0`).
    pub(crate) fn version(&self) -> &str {
        self.info["version"].as_str().unwrap_or("")
    }
}
