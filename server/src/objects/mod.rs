//! Small helpers over JSON objects: metadata access, timestamps, and the resourceVersion splice
//! that lets the engine's value builder write the revision into stored bytes without
//! re-serializing the object.

use keel_engine::Revision;
use serde_json::{Map, Value};
use std::sync::OnceLock;

mod raw_fields;
pub use raw_fields::{has_raw, materialize, parse_stored_raw_fields};

/// RFC 3339 UTC timestamp with second precision, as `metav1.Time` serializes.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A random (version 4) UUID, from the thread's CSPRNG (no system call per UID).
pub fn new_uid() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    keel_api::jsonmap::field(obj, "metadata")?.as_object()
}

/// The object's metadata map, created when absent or not an object.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let root = obj.as_object_mut().expect("object checked by caller");
    let m = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut().unwrap()
}

/// The object's labels, if it has a labels map.
pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    keel_api::jsonmap::get(meta(obj)?, "labels")?.as_object()
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)?.get(field)?.as_str()
}

pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `is_deleting` of stored JSON bytes, decoding only `metadata.deletionTimestamp`.
pub fn stored_is_deleting(bytes: &[u8]) -> Result<bool, keel_api::status::ApiError> {
    #[derive(serde::Deserialize)]
    struct Obj {
        metadata: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "deletionTimestamp")]
        deletion_timestamp: Option<serde::de::IgnoredAny>,
    }
    match serde_json::from_slice::<Obj>(bytes) {
        Ok(o) => Ok(o.metadata.is_some_and(|m| m.deletion_timestamp.is_some())),
        // Anything unusual (metadata not an object, ...): the general path decides.
        Err(_) => Ok(is_deleting(&parse_stored(bytes)?)),
    }
}

pub fn is_deleting(obj: &Value) -> bool {
    meta(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// Sets a metadata field, keeping upstream's field order for the fields the server owns.
/// Metadata fields Go's encoder omits when empty (`omitempty` on maps and slices).
const OMIT_EMPTY_META: [&str; 5] = [
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "managedFields",
];

/// Scalar metadata fields Go's encoder omits at their zero value (`omitempty` on a string, an
/// integer or a pointer): `""`, `0` or `null`.
const OMIT_ZERO_META: [&str; 9] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Drops what upstream's typed ObjectMeta would not keep: empty metadata maps and lists
/// (e.g. `annotations: {}` left by a patch that removed the last key) and scalar members at
/// their zero value (`generateName: ""`, `generation: 0`), as upstream decodes every object's
/// metadata, a custom resource's too, into ObjectMeta and never stores or prints them.
/// (`deletionGracePeriodSeconds` is a pointer: its `0` is a value and stays.)
pub fn drop_empty_meta(obj: &mut Value) {
    let m = meta_mut(obj);
    for k in OMIT_EMPTY_META {
        let empty = match m.get(k) {
            Some(Value::Object(o)) => o.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            m.shift_remove(k);
        }
    }
    for k in OMIT_ZERO_META {
        let zero = match m.get(k) {
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Number(n)) => k == "generation" && n.as_i64() == Some(0),
            Some(Value::Null) => true,
            _ => false,
        };
        if zero {
            m.shift_remove(k);
        }
    }
}

pub fn set_meta(obj: &mut Value, field: &str, value: Value) {
    meta_mut(obj).insert(field.to_string(), value);
}

/// Top-level keys upstream writes first; the rest follow in the object's order.
const TOP_ORDER: &[&str] = &["kind", "apiVersion", "metadata"];

/// `obj` as JSON in upstream's key order: kind, apiVersion, metadata (as `ObjectMeta`), then
/// the rest as they are. The bytes are exactly what `serde_json` writes for the reordered
/// object (same escapes, same numbers); a writer of its own because this runs on every write
/// and `serde_json`'s per-byte string escaping and the map lookups of reordering were a
/// tenth of a create's instructions (measured with callgrind: see `write_json_str`).
pub fn to_canonical_json(obj: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    match obj.as_object() {
        Some(root) => write_ordered(&mut out, root, TOP_ORDER, |out, k, v| match (k, v) {
            ("metadata", Value::Object(m)) => write_ordered(
                out,
                m,
                keel_api::meta::OBJECT_META_ORDER,
                |out, k, v| match k {
                    "managedFields" => write_managed_fields(out, v),
                    _ => write_json(out, v),
                },
            ),
            _ => write_json(out, v),
        }),
        None => write_json(&mut out, obj),
    }
    out
}

/// Writes a map with the keys of `order` first (in that order), then the others in the
/// map's order; `value` writes each value. One pass over the map: each key's place is found
/// by comparing it with the (short) order list, not by hashing it into the map.
fn write_ordered(
    out: &mut Vec<u8>,
    m: &Map<String, Value>,
    order: &[&str],
    value: impl Fn(&mut Vec<u8>, &str, &Value),
) {
    const ORDER_MAX: usize = 16;
    debug_assert!(order.len() <= ORDER_MAX);
    let mut ordered: [Option<(&str, &Value)>; ORDER_MAX] = [None; ORDER_MAX];
    let mut rest = false;
    for (k, v) in m {
        match order.iter().position(|o| *o == k) {
            Some(i) => ordered[i] = Some((k, v)),
            None => rest = true,
        }
    }
    out.push(b'{');
    let mut first = true;
    let mut entry = |out: &mut Vec<u8>, k: &str, v: &Value| {
        if !first {
            out.push(b',');
        }
        first = false;
        write_json_str(out, k);
        out.push(b':');
        value(out, k, v);
    };
    for (k, v) in ordered.iter().flatten() {
        entry(out, k, v);
    }
    if rest {
        for (k, v) in m {
            if !order.contains(&k.as_str()) {
                entry(out, k, v);
            }
        }
    }
    out.push(b'}');
}

/// Compact JSON of a map, in its own order, as `serde_json::to_vec` writes it.
pub fn object_json(m: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::new();
    write_map(&mut out, m, |out, _, v| write_json(out, v));
    out
}

/// A per-process prefix no client can predict: marks a string as JSON text to write as it
/// is (see [`raw_json`]).
fn raw_marker() -> &'static str {
    static M: OnceLock<String> = OnceLock::new();
    M.get_or_init(|| format!("\u{0}{}\u{0}", unpredictable("keel-raw")))
}

/// `label` and 128 random bits, in hex: a marker string no client can predict.
fn unpredictable(label: &str) -> String {
    format!(
        "{label}-{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

/// A `managedFields` entry's `fieldsV1` given as its JSON text (`json`: what
/// [`object_json`] wrote), which [`to_canonical_json`] writes as it is. A write path puts one
/// in (`fieldmanager::record_new`) where it knows the object goes to that encoder next and
/// nowhere else: any other reader would see a string.
pub fn raw_json(json: &str) -> Value {
    let marker = raw_marker();
    let mut s = String::with_capacity(marker.len() + json.len());
    s.push_str(marker);
    s.push_str(json);
    Value::String(s)
}

/// The JSON text a string made by [`raw_json`] holds.
pub fn raw_json_text(s: &str) -> Option<&str> {
    s.strip_prefix(raw_marker())
}

/// `metadata.managedFields`: as [`write_json`], but the entries, or an entry's `fieldsV1`,
/// made by [`raw_json`] are written as the JSON text they hold.
fn write_managed_fields(out: &mut Vec<u8>, v: &Value) {
    let Value::Array(entries) = v else {
        return match v {
            Value::String(s) => match raw_json_text(s) {
                Some(json) => out.extend_from_slice(json.as_bytes()),
                None => write_json_str(out, s),
            },
            _ => write_json(out, v),
        };
    };
    out.push(b'[');
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let Value::Object(m) = e else {
            write_json(out, e);
            continue;
        };
        write_map(out, m, |out, k, v| match v {
            Value::String(s) if k == "fieldsV1" => match raw_json_text(s) {
                Some(json) => out.extend_from_slice(json.as_bytes()),
                None => write_json_str(out, s),
            },
            _ => write_json(out, v),
        });
    }
    out.push(b']');
}

/// A map in its own order, `value` writing each value (given its key).
fn write_map(
    out: &mut Vec<u8>,
    m: &Map<String, Value>,
    mut value: impl FnMut(&mut Vec<u8>, &str, &Value),
) {
    out.push(b'{');
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json_str(out, k);
        out.push(b':');
        value(out, k, v);
    }
    out.push(b'}');
}

fn write_json(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => serde_json::to_writer(&mut *out, n).expect("numbers serialize"),
        Value::String(s) => write_json_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(out, item);
            }
            out.push(b']');
        }
        Value::Object(m) => write_map(out, m, |out, _, v| write_json(out, v)),
    }
}

/// `s` as a JSON string, escaped as `serde_json` escapes (what the encoder writes).
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    write_json_str(out, s)
}

/// Whether `serde_json` escapes this byte in a string: `"`, `\` and control characters.
#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether some byte of the 8 in `x` is one [`needs_escape`] (exact: the borrow tricks of
/// "has a byte below n" and "has a zero byte" never miss one; a word they flag is looked at
/// byte by byte).
#[inline]
fn word_needs_escape(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH != 0;
    let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH != 0;
    below_space || has_zero(x ^ (ONES * u64::from(b'"'))) || has_zero(x ^ (ONES * u64::from(b'\\')))
}

/// A JSON string with `serde_json`'s escapes (`\"`, `\\`, `\b \f \n \r \t`, other
/// control characters as `\u00xx`; everything else, non-ASCII included, as is). Runs without
/// escapes are found 16 bytes at a time, then 8 (one machine word, the last one padded), and
/// copied whole: `serde_json` looks each byte up in a table and was ~15 instructions a byte
/// on a ConfigMap's data, and a byte-by-byte tail was most of what a custom resource's many
/// short keys and values cost (~9k instructions of a 20-property Widget's stored bytes).
fn write_json_str(out: &mut Vec<u8>, s: &str) {
    const BLOCK: usize = 16;
    const WORD: usize = 8;
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let rest = b.len() - i;
        if rest >= BLOCK
            && !b[i..i + BLOCK]
                .iter()
                .fold(false, |any, &c| any | needs_escape(c))
        {
            i += BLOCK;
            continue;
        }
        let step = rest.min(WORD);
        let word = match b[i..].first_chunk::<WORD>() {
            Some(w) => *w,
            None => {
                // A short tail is padded with a byte that needs no escape.
                let mut w = [b'a'; WORD];
                w[..step].copy_from_slice(&b[i..]);
                w
            }
        };
        if !word_needs_escape(u64::from_le_bytes(word)) {
            i += step;
            continue;
        }
        for _ in 0..step {
            let c = b[i];
            i += 1;
            if !needs_escape(c) {
                continue;
            }
            out.extend_from_slice(&b[start..i - 1]);
            match c {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                _ => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    out.extend_from_slice(b"\\u00");
                    out.push(HEX[usize::from(c >> 4)]);
                    out.push(HEX[usize::from(c & 0xf)]);
                }
            }
            start = i;
        }
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// A per-process marker no client can predict; stands in for the resourceVersion while the
/// object is serialized.
fn rv_marker() -> &'static str {
    static M: OnceLock<String> = OnceLock::new();
    M.get_or_init(|| unpredictable("keel-rv"))
}

/// An object serialized around its resourceVersion: `bytes[..split]` + revision digits +
/// `bytes[tail..]`.
pub struct Spliced {
    bytes: Vec<u8>,
    split: usize,
    tail: usize,
}

impl Spliced {
    /// Serializes `obj` (in upstream's key order) with a marker in `metadata.resourceVersion`.
    pub fn new(obj: &mut Value) -> Spliced {
        set_meta(
            obj,
            "resourceVersion",
            Value::String(rv_marker().to_string()),
        );
        static FINDER: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
        let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(rv_marker()));
        let bytes = to_canonical_json(obj);
        let at = finder.find(&bytes).expect("marker present");
        Spliced {
            bytes,
            split: at,
            tail: at + rv_marker().len(),
        }
    }

    /// Size of the result, give or take the revision's digits.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Appends the object with `revision` as its resourceVersion (`""` for `None`: a store
    /// that learns the revision only after the bytes are sealed).
    pub fn write(&self, revision: Option<Revision>, out: &mut Vec<u8>) {
        out.reserve(self.bytes.len());
        out.extend_from_slice(&self.bytes[..self.split]);
        if let Some(r) = revision {
            out.extend_from_slice(r.to_string().as_bytes());
        }
        out.extend_from_slice(&self.bytes[self.tail..]);
    }
}

/// Replaces `metadata.resourceVersion` in a parsed object.
pub fn set_rv(obj: &mut Value, rv: Revision) {
    set_meta(obj, "resourceVersion", Value::String(rv.to_string()));
}

/// Rewrites the first `"resourceVersion":"..."` of stored bytes (the object's own, since
/// metadata is stored before any other field that could hold that key, and a string value
/// cannot hold the unescaped quotes).
pub fn with_resource_version(bytes: &[u8], rev: Revision) -> Vec<u8> {
    const NEEDLE: &[u8] = b"\"resourceVersion\":\"";
    let Some(at) = memchr::memmem::find(bytes, NEEDLE) else {
        return bytes.to_vec();
    };
    let start = at + NEEDLE.len();
    let Some(len) = bytes[start..].iter().position(|&b| b == b'"') else {
        return bytes.to_vec();
    };
    let mut out = Vec::with_capacity(bytes.len() + 20);
    out.extend_from_slice(&bytes[..start]);
    out.extend_from_slice(rev.to_string().as_bytes());
    out.extend_from_slice(&bytes[start + len..]);
    out
}

/// Parses stored JSON; a failure is the server's fault (500), not the client's.
pub fn parse_stored(bytes: &[u8]) -> Result<Value, keel_api::status::ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        keel_api::status::ApiError::internal(format!("stored object is not valid JSON: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_metadata_collections_are_dropped() {
        let mut v = serde_json::json!({"metadata": {"name": "a", "labels": {}, "annotations": {"k": "v"},
            "finalizers": [], "ownerReferences": null}});
        drop_empty_meta(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"metadata": {"name": "a", "annotations": {"k": "v"}}})
        );
    }

    #[test]
    fn zero_metadata_scalars_are_dropped_as_go_omits_them() {
        let mut v = serde_json::json!({"metadata": {"name": "a", "generateName": "", "uid": "",
            "selfLink": "", "generation": 0, "deletionTimestamp": null,
            "deletionGracePeriodSeconds": 0, "namespace": "ns", "resourceVersion": ""}});
        drop_empty_meta(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"metadata": {"name": "a", "deletionGracePeriodSeconds": 0,
                "namespace": "ns"}})
        );
        let mut v = serde_json::json!({"metadata": {"name": "a", "generation": 2}});
        drop_empty_meta(&mut v);
        assert_eq!(v["metadata"]["generation"], 2);
    }
    use serde_json::json;

    #[test]
    fn uids_are_random_version_4_uuids() {
        let a = uuid::Uuid::parse_str(&new_uid()).unwrap();
        let b = uuid::Uuid::parse_str(&new_uid()).unwrap();
        assert_eq!(a.get_version_num(), 4);
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
        assert_ne!(a, b);
    }

    #[test]
    fn canonical_json_orders_top_level_and_metadata_only() {
        let o = json!({"data": {"z": "1", "a": "2"}, "metadata": {"labels": {"b": "1", "a": "2"},
            "x-extra": 1, "uid": "u", "name": "n", "creationTimestamp": "t"},
            "apiVersion": "v1", "kind": "ConfigMap", "immutable": true});
        let text = String::from_utf8(to_canonical_json(&o)).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"n","uid":"u","creationTimestamp":"t","labels":{"b":"1","a":"2"},"x-extra":1},"data":{"z":"1","a":"2"},"immutable":true}"#
        );
        // Not an object, or metadata not an object: written as is.
        assert_eq!(to_canonical_json(&json!([1, 2])), b"[1,2]");
        assert_eq!(
            to_canonical_json(&json!({"metadata": 3, "kind": "K"})),
            br#"{"kind":"K","metadata":3}"#
        );
    }

    #[test]
    fn raw_fields_are_written_as_text_only_as_an_entry_fields_v1() {
        let fields = json!({"f:data": {".": {}, "f:k\"": {}}});
        let raw = raw_json(std::str::from_utf8(&object_json(fields.as_object().unwrap())).unwrap());
        let obj = |f: Value| {
            json!({"kind": "ConfigMap", "metadata": {"name": "n", "managedFields": [
                {"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": f},
                {"manager": "other", "fieldsV1": "plain"}]}, "data": {"k\"": "v"}})
        };
        // As the same object with the fields as a tree.
        assert_eq!(
            String::from_utf8(to_canonical_json(&obj(raw.clone()))).unwrap(),
            String::from_utf8(to_canonical_json(&obj(fields))).unwrap()
        );
        // Anywhere else it is a string (and a string is not raw text).
        let elsewhere = json!({"kind": "ConfigMap", "data": {"fieldsV1": raw.clone()}});
        let text = to_canonical_json(&elsewhere);
        let back: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(back["data"]["fieldsV1"], raw);
        let plain = to_canonical_json(&obj(json!("{}")));
        assert!(String::from_utf8(plain)
            .unwrap()
            .contains(r#""fieldsV1":"{}""#));
    }

    /// A random JSON value (seeded): every escape class in strings, non-ASCII, numbers of
    /// each kind, nesting.
    fn next(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    fn random_value(seed: &mut u64, depth: u32) -> Value {
        let pick = next(seed) % if depth > 3 { 5 } else { 7 };
        match pick {
            0 => Value::Null,
            1 => Value::Bool(next(seed).is_multiple_of(2)),
            2 => match next(seed) % 4 {
                0 => json!(next(seed) as i64 - (1 << 30)),
                1 => json!(u64::MAX - next(seed)),
                2 => json!((next(seed) as f64) / 7.0 - 1e6),
                _ => json!(1e300 * (next(seed) % 3) as f64),
            },
            3 | 4 => {
                const PIECES: [&str; 12] = [
                    "plain text ",
                    "\"",
                    "\\",
                    "\u{0}",
                    "\u{1f}",
                    "\n\r\t",
                    "\u{8}\u{c}",
                    "é",
                    "日本",
                    "\u{2028}",
                    "/",
                    "\u{7f}",
                ];
                let n = next(seed) % 40;
                (0..n)
                    .map(|_| PIECES[(next(seed) % 12) as usize])
                    .collect::<String>()
                    .into()
            }
            5 => Value::Array(
                (0..next(seed) % 5)
                    .map(|_| random_value(seed, depth + 1))
                    .collect(),
            ),
            _ => {
                let mut m = Map::new();
                for i in 0..next(seed) % 6 {
                    let key = ["name", "metadata", "kind", "k\"ey", "uid", "x"]
                        [(next(seed) % 6) as usize];
                    m.insert(format!("{key}{i}"), random_value(seed, depth + 1));
                    if next(seed).is_multiple_of(3) {
                        m.insert(key.to_string(), random_value(seed, depth + 1));
                    }
                }
                Value::Object(m)
            }
        }
    }

    /// The writer's output is `serde_json`'s, byte for byte, for any value (the canonical
    /// order only moves entries).
    #[test]
    fn json_writer_matches_serde_json() {
        let mut seed = 7;
        for _ in 0..3000 {
            let v = random_value(&mut seed, 0);
            let mut ours = Vec::new();
            write_json(&mut ours, &v);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                serde_json::to_string(&v).unwrap()
            );
        }
        // Short strings with every ASCII byte (and a two-byte character) at every offset of
        // the 8-byte words and their padded tail.
        for len in 0..20 {
            for at in 0..=len {
                for c in (0u8..0x80).map(char::from).chain(['é']) {
                    let mut text = "a".repeat(len);
                    text.insert(at, c);
                    let v = Value::String(text);
                    let mut ours = Vec::new();
                    write_json(&mut ours, &v);
                    assert_eq!(ours, serde_json::to_vec(&v).unwrap(), "{len} {at} {c:?}");
                }
            }
        }
        // Long runs with escapes at every offset of the 16-byte blocks.
        for at in 0..40 {
            for esc in ["\"", "\\", "\u{1}", "\n", "é"] {
                let mut text = "a".repeat(40);
                text.insert_str(at, esc);
                let v = Value::String(text);
                let mut ours = Vec::new();
                write_json(&mut ours, &v);
                assert_eq!(ours, serde_json::to_vec(&v).unwrap(), "{at} {esc:?}");
            }
        }
    }

    #[test]
    fn canonical_json_only_moves_entries() {
        let mut seed = 11;
        for _ in 0..500 {
            let mut v = random_value(&mut seed, 1);
            if let Value::Object(m) = &mut v {
                m.insert("metadata".into(), random_value(&mut seed, 1));
            }
            // Compared after the same parse (float parsing need not round-trip exactly).
            let ours: Value = serde_json::from_slice(&to_canonical_json(&v)).unwrap();
            let theirs: Value = serde_json::from_slice(&serde_json::to_vec(&v).unwrap()).unwrap();
            assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn splice_writes_revision() {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}});
        let s = Spliced::new(&mut o);
        let mut out = Vec::new();
        s.write(Some(Revision(1234)), &mut out);
        let back: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "1234");
        assert_eq!(back["data"]["k"], "v");
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1234\""), "{text}");
    }

    #[test]
    fn splice_without_revision_leaves_it_empty_for_readers_to_fill() {
        let mut o = json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"resourceVersion": "x"}}});
        let s = Spliced::new(&mut o);
        let mut out = Vec::new();
        s.write(None, &mut out);
        let back: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "");
        let filled: Value =
            serde_json::from_slice(&with_resource_version(&out, Revision(40))).unwrap();
        assert_eq!(filled["metadata"]["resourceVersion"], "40");
        assert_eq!(filled["metadata"]["labels"]["resourceVersion"], "x");
    }

    #[test]
    fn deleted_objects_carry_the_deletion_revision() {
        let b = br#"{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"12","labels":{"resourceVersion":"x"}}}"#;
        let out = with_resource_version(b, Revision(40));
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "40");
        assert_eq!(v["metadata"]["labels"]["resourceVersion"], "x");
    }

    #[test]
    fn stored_deletion_check_matches_full_parse() {
        for doc in [
            r#"{"metadata":{"name":"n"}}"#,
            r#"{"metadata":{"name":"n","deletionTimestamp":"2020-01-01T00:00:00Z"}}"#,
            r#"{"metadata":{"deletionTimestamp":null}}"#,
            r#"{"kind":"Namespace","spec":{"finalizers":["kubernetes"]}}"#,
            r#"{"metadata":"odd"}"#,
            r#"{"metadata":{"deletionTimestamp":{"a":1}},"status":{"phase":"Terminating"}}"#,
            r#"{"metadata":{"deletionTimestamp":1},"metadata":{"name":"x"}}"#,
            r#"[1]"#,
        ] {
            let full: Value = serde_json::from_str(doc).unwrap();
            let want = full.is_object() && is_deleting(&full);
            assert_eq!(stored_is_deleting(doc.as_bytes()).unwrap(), want, "{doc}");
        }
        assert!(stored_is_deleting(b"{").is_err());
    }

    #[test]
    fn finalizers_and_deleting() {
        let o = json!({"metadata": {"finalizers": ["a", "b"], "deletionTimestamp": "2020-01-01T00:00:00Z"}});
        assert_eq!(finalizers(&o), vec!["a", "b"]);
        assert!(is_deleting(&o));
        assert!(!is_deleting(&json!({"metadata": {}})));
    }
}
