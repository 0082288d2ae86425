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

/// `value[key]` when `value` is an object (mutable).
pub fn field_mut<'a>(value: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let map = value.as_object_mut()?;
    if map.len() <= LINEAR_LOOKUP_KEYS_MAX {
        map.iter_mut()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    } else {
        map.get_mut(key)
    }
}

/// `serde_json::Value::pointer` and `pointer_mut` (RFC 6901) without their cost: theirs
/// copies every token twice to unescape it (allocating) and hashes it into each map; this
/// unescapes only tokens that hold `~` and finds members as [`get`] does. A `/spec/x`
/// lookup was about 700 instructions there, several of them on every write.
pub trait JsonPointer {
    /// The value at `pointer`, as `serde_json::Value::pointer`.
    fn at(&self, pointer: &str) -> Option<&Value>;
    /// The value at `pointer`, as `serde_json::Value::pointer_mut`.
    fn at_mut(&mut self, pointer: &str) -> Option<&mut Value>;
}

impl JsonPointer for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        let mut target = self;
        for token in tokens(pointer)? {
            target = match target {
                Value::Object(map) => get(map, &token)?,
                Value::Array(list) => list.get(index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }

    fn at_mut(&mut self, pointer: &str) -> Option<&mut Value> {
        let mut target = self;
        for token in tokens(pointer)? {
            target = match target {
                Value::Object(_) => field_mut(target, &token)?,
                Value::Array(list) => list.get_mut(index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }
}

/// A pointer's reference tokens, unescaped (`~1` is `/`, `~0` is `~`); `None` when it is
/// neither empty nor starts with `/`.
fn tokens(pointer: &str) -> Option<impl Iterator<Item = std::borrow::Cow<'_, str>>> {
    let rest = match pointer {
        "" => None,
        p => Some(p.strip_prefix('/')?),
    };
    Some(rest.into_iter().flat_map(|r| r.split('/')).map(|t| {
        if t.contains('~') {
            std::borrow::Cow::Owned(t.replace("~1", "/").replace("~0", "~"))
        } else {
            std::borrow::Cow::Borrowed(t)
        }
    }))
}

/// An array index token as serde_json reads one: digits, no sign, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
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

    /// The pointer lookups answer as serde_json's, escapes and indexes included.
    #[test]
    fn pointers_answer_as_serde_json() {
        let big: Map<String, Value> = (0..20).map(|i| (format!("k{i}"), json!(i))).collect();
        let mut doc = json!({"a": {"b/c": [10, {"d~e": 1}], "": {"x": true}}, "big": big,
            "n": null, "s": "t"});
        for p in [
            "",
            "/",
            "/a",
            "/a/b~1c",
            "/a/b~1c/0",
            "/a/b~1c/1/d~0e",
            "/a/b~1c/01",
            "/a/b~1c/+1",
            "/a/b~1c/2",
            "/a/b~1c/-1",
            "/a//x",
            "/big/k19",
            "/big/k20",
            "/n",
            "/n/x",
            "/s/0",
            "a",
            "/a/b/c",
            "/a/b~1c/1/d~e",
            "/~",
            "/a/b~1c/ 1",
        ] {
            assert_eq!(doc.at(p), doc.pointer(p), "{p}");
            let want = doc.clone().pointer_mut(p).cloned();
            assert_eq!(doc.at_mut(p).cloned(), want, "{p} (mutable)");
        }
        *doc.at_mut("/a/b~1c/1/d~0e").unwrap() = json!(2);
        assert_eq!(doc["a"]["b/c"][1]["d~e"], json!(2));
    }
}
