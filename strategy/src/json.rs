//! Small helpers over `serde_json::Value` that tolerate malformed input (never panic).

use serde_json::{Map, Value};

/// Sets `map[key] = value` when the key is absent or null.
pub fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map.get(key) {
        None | Some(Value::Null) => {
            map.insert(key.to_string(), value);
        }
        Some(_) => {}
    }
}

/// The object at `map[key]`, created empty when absent or null; `None` when it is not an object.
pub fn child<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    default(map, key, Value::Object(Map::new()));
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// The existing object at `map[key]` (not created).
pub fn child_if<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// Every object element of the array at `map[key]`.
pub fn each_obj<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flat_map(|a| a.iter_mut())
        .filter_map(Value::as_object_mut)
}

/// The value at a dotted path (`spec.template.spec`).
pub fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |cur, key| keel_api::jsonmap::field(cur, key))
}

/// The string at a dotted path, or `""`.
pub fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

/// The array at a dotted path, or an empty slice.
pub fn arr_at<'a>(v: &'a Value, path: &str) -> &'a [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_only_fill_missing_or_null() {
        let mut v = json!({"a": 1, "b": null});
        let m = v.as_object_mut().unwrap();
        default(m, "a", json!(2));
        default(m, "b", json!(3));
        default(m, "c", json!(4));
        assert_eq!(v, json!({"a": 1, "b": 3, "c": 4}));
    }

    #[test]
    fn child_refuses_non_objects() {
        let mut v = json!({"spec": 5});
        assert!(child(v.as_object_mut().unwrap(), "spec").is_none());
        assert_eq!(str_at(&json!({"a": {"b": "x"}}), "a.b"), "x");
        assert_eq!(str_at(&json!({"a": 1}), "a.b"), "");
    }
}
