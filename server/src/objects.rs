//! Small helpers over JSON objects: metadata access, timestamps, and the resourceVersion splice
//! that lets the engine's value builder write the revision into stored bytes without
//! re-serializing the object.

use serde_json::{Map, Value};
use std::sync::OnceLock;

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
    obj.get("metadata")?.as_object()
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
        Err(_) => Ok(is_deleting(&crate::respond::parse_stored(bytes)?)),
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

/// Drops empty metadata maps and lists (e.g. `annotations: {}` left by a patch that removed
/// the last key), as upstream never stores or prints them.
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
}

pub fn set_meta(obj: &mut Value, field: &str, value: Value) {
    meta_mut(obj).insert(field.to_string(), value);
}

/// Metadata keys in the order upstream serializes `ObjectMeta`, so `kubectl get -o yaml`
/// output reads the same.
const META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
/// Top-level keys upstream writes first; the rest follow in the object's order.
const TOP_ORDER: &[&str] = &["kind", "apiVersion", "metadata"];

/// An object serialized in upstream's key order (see `TOP_ORDER`, `META_ORDER`), without
/// reordering the parsed map itself.
struct Canonical<'a>(&'a Value);
/// `metadata` in upstream's key order.
struct CanonicalMeta<'a>(&'a Value);

fn serialize_ordered<S: serde::Serializer>(
    s: S,
    m: &Map<String, Value>,
    order: &[&str],
    nested: impl Fn(&str, &Value, &mut S::SerializeMap) -> Result<(), S::Error>,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut out = s.serialize_map(Some(m.len()))?;
    for k in order {
        if let Some(v) = m.get(*k) {
            nested(k, v, &mut out)?;
        }
    }
    for (k, v) in m {
        if !order.contains(&k.as_str()) {
            out.serialize_entry(k, v)?;
        }
    }
    out.end()
}

impl serde::Serialize for Canonical<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some(root) = self.0.as_object() else {
            return self.0.serialize(s);
        };
        serialize_ordered(s, root, TOP_ORDER, |k, v, out| {
            if k == "metadata" {
                out.serialize_entry(k, &CanonicalMeta(v))
            } else {
                out.serialize_entry(k, v)
            }
        })
    }
}

impl serde::Serialize for CanonicalMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some(m) = self.0.as_object() else {
            return self.0.serialize(s);
        };
        serialize_ordered(s, m, META_ORDER, |k, v, out| out.serialize_entry(k, v))
    }
}

/// `obj` as JSON in upstream's key order: kind, apiVersion, metadata (as `ObjectMeta`), then
/// the rest as they are.
pub fn to_canonical_json(obj: &Value) -> Vec<u8> {
    serde_json::to_vec(&Canonical(obj)).expect("JSON values serialize")
}

/// A per-process marker no client can predict; stands in for the resourceVersion while the
/// object is serialized.
fn rv_marker() -> &'static str {
    static M: OnceLock<String> = OnceLock::new();
    M.get_or_init(|| {
        format!(
            "keel-rv-{:016x}{:016x}",
            rand::random::<u64>(),
            rand::random::<u64>()
        )
    })
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
        let bytes = to_canonical_json(obj);
        let at = memchr::memmem::find(&bytes, rv_marker().as_bytes()).expect("marker present");
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

    /// Appends the object with `revision` as its resourceVersion.
    pub fn write(&self, revision: u64, out: &mut Vec<u8>) {
        out.reserve(self.bytes.len());
        out.extend_from_slice(&self.bytes[..self.split]);
        out.extend_from_slice(revision.to_string().as_bytes());
        out.extend_from_slice(&self.bytes[self.tail..]);
    }
}

/// Replaces `metadata.resourceVersion` in a parsed object.
pub fn set_rv(obj: &mut Value, rv: u64) {
    set_meta(obj, "resourceVersion", Value::String(rv.to_string()));
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
    fn splice_writes_revision() {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}});
        let s = Spliced::new(&mut o);
        let mut out = Vec::new();
        s.write(1234, &mut out);
        let back: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "1234");
        assert_eq!(back["data"]["k"], "v");
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1234\""), "{text}");
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
