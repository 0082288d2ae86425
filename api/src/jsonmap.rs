//! Field lookups in the small JSON objects that metadata is made of.
//!
//! `serde_json::Map` (insertion-ordered here) hashes every key it is asked for with SipHash.
//! Labels, metadata and most objects' top levels have a handful of keys, and comparing those
//! directly is several times cheaper than hashing; selectors test them once per watch per
//! event, so the difference shows.

use serde_json::{Map, Value};

/// Maps with at most this many keys are searched by comparing keys in turn.
pub const LINEAR_LOOKUP_KEYS_MAX: usize = 12;

/// `map[key]`.
pub fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= LINEAR_LOOKUP_KEYS_MAX {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// `value[key]` when `value` is an object.
pub fn field<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    get(value.as_object()?, key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_and_large_maps_answer_alike() {
        for n in [0, 1, LINEAR_LOOKUP_KEYS_MAX, LINEAR_LOOKUP_KEYS_MAX + 1, 40] {
            let obj: Map<String, Value> = (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
            for i in 0..n + 2 {
                let key = format!("k{i}");
                assert_eq!(get(&obj, &key), obj.get(&key), "{n} keys, {key}");
            }
            assert_eq!(get(&obj, ""), None);
        }
        assert_eq!(field(&json!({"a": {"b": 1}}), "a"), Some(&json!({"b": 1})));
        assert_eq!(field(&json!([1]), "a"), None);
    }
}
