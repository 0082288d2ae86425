//! Object metadata as upstream serializes it.

use serde_json::{Map, Value};

/// Since v1.35 `ObjectMeta.creationTimestamp` is `omitzero`: a zero (unset) timestamp is left
/// out of the JSON instead of being written as `null`. Removes a `null` one from `meta`.
pub fn drop_zero_creation_timestamp(meta: &mut Map<String, Value>) {
    if meta.get("creationTimestamp").is_some_and(Value::is_null) {
        meta.remove("creationTimestamp");
    }
}

/// `ObjectMeta`'s members in Go field order: how upstream serializes them.
pub const OBJECT_META_ORDER: &[&str] = &[
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_null_timestamp_goes() {
        let drop = |mut v: Value| {
            drop_zero_creation_timestamp(v.as_object_mut().unwrap());
            v
        };
        assert_eq!(
            drop(json!({"name": "a", "creationTimestamp": null})),
            json!({"name": "a"})
        );
        let set = json!({"creationTimestamp": "2026-01-01T00:00:00Z"});
        assert_eq!(drop(set.clone()), set);
    }
}
