//! Type-independent policy: status reset on create, the spec/status split on update,
//! and `metadata.generation` tracking: what every strategy (custom resources' too) does.

use keel_api::jsonmap::JsonPointer;
use serde_json::{Map, Value};

/// Top-level members that are not "spec": a change to anything else bumps the generation.
const NON_SPEC_MEMBERS: &[&str] = &["apiVersion", "kind", "metadata", "status"];

/// Metadata members a status write cannot change (taken from the stored object).
const STATUS_WRITE_KEEPS_META: &[&str] = &[
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
];

/// On create: drop user-supplied status (when the type splits status) and start the generation.
pub fn prepare_create(obj: &mut Value, drop_status: bool, tracks_generation: bool) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if drop_status {
        map.remove("status");
    }
    if tracks_generation {
        if let Some(meta) = crate::json::child(map, "metadata") {
            meta.insert("generation".into(), Value::from(1));
        }
    }
}

/// On update of the main resource: keep the stored status (when the type splits status), keep
/// the stored generation, and bump it when the spec changed.
pub fn prepare_update(
    new: &mut Value,
    old: &Value,
    status_subresource: bool,
    tracks_generation: bool,
) {
    let Some(map) = new.as_object_mut() else {
        return;
    };
    if status_subresource {
        copy_member(map, old, "status");
    }
    let old_gen = old.at("/metadata/generation").and_then(Value::as_i64);
    let Some(meta) = crate::json::child(map, "metadata") else {
        return;
    };
    match old_gen {
        Some(g) => meta.insert("generation".into(), Value::from(g)),
        None => meta.remove("generation"),
    };
    if tracks_generation && spec_changed(new, old) {
        bump_generation(new, old_gen.unwrap_or(0));
    }
}

/// Sets `metadata.generation = old + 1`.
pub fn bump_generation(obj: &mut Value, old_generation: i64) {
    if let Some(meta) = obj
        .as_object_mut()
        .and_then(|m| crate::json::child(m, "metadata"))
    {
        meta.insert(
            "generation".into(),
            Value::from(old_generation.saturating_add(1)),
        );
    }
}

/// Whether anything outside metadata and status differs (upstream compares `Spec`).
pub fn spec_changed(new: &Value, old: &Value) -> bool {
    let empty = Map::new();
    let n = new.as_object().unwrap_or(&empty);
    let o = old.as_object().unwrap_or(&empty);
    let differs = |k: &String| {
        !NON_SPEC_MEMBERS.contains(&k.as_str()) && !same_ignoring_null(n.get(k), o.get(k))
    };
    n.keys().any(differs) || o.keys().any(differs)
}

fn same_ignoring_null(a: Option<&Value>, b: Option<&Value>) -> bool {
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    a == b
}

/// On a write to the `/status` subresource: everything but status comes from the stored object,
/// except the metadata a status writer may change (labels, annotations, finalizers, ...).
pub fn prepare_status_update(new: &mut Value, old: &Value) {
    let new_status = new.get("status").cloned();
    let new_meta = new.get("metadata").cloned();
    let mut merged = old.clone();
    let Some(map) = merged.as_object_mut() else {
        return;
    };
    match new_status {
        Some(s) => map.insert("status".into(), s),
        None => map.remove("status"),
    };
    if let Some(mut meta) = new_meta.filter(Value::is_object) {
        if let Some(m) = meta.as_object_mut() {
            for key in STATUS_WRITE_KEEPS_META {
                m.remove(*key);
                if let Some(v) = old.at(&format!("/metadata/{key}")) {
                    m.insert((*key).into(), v.clone());
                }
            }
        }
        map.insert("metadata".into(), meta);
    }
    *new = merged;
}

/// `new[key] = old[key]`, or removes it when the old object has none.
pub fn copy_member(map: &mut Map<String, Value>, old: &Value, key: &str) {
    match old.get(key) {
        Some(v) => map.insert(key.into(), v.clone()),
        None => map.remove(key),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_drops_status_and_starts_generation() {
        let mut obj =
            json!({"metadata": {"name": "a", "generation": 7}, "spec": {}, "status": {"x": 1}});
        prepare_create(&mut obj, true, true);
        assert_eq!(
            obj,
            json!({"metadata": {"name": "a", "generation": 1}, "spec": {}})
        );
    }

    #[test]
    fn update_keeps_status_and_bumps_only_on_spec_change() {
        let old = json!({"metadata": {"generation": 3}, "spec": {"a": 1}, "status": {"s": 1}});
        let cases = [
            // (new, expected generation, expected status)
            (
                json!({"metadata": {"generation": 9}, "spec": {"a": 1}, "status": {"s": 2}}),
                3,
            ),
            (
                json!({"metadata": {"labels": {"x": "y"}}, "spec": {"a": 1}}),
                3,
            ),
            (json!({"metadata": {}, "spec": {"a": 2}}), 4),
            (json!({"metadata": {}, "spec": {"a": 1}, "template": {}}), 4),
        ];
        for (mut new, gen) in cases {
            prepare_update(&mut new, &old, true, true);
            assert_eq!(new["metadata"]["generation"], json!(gen), "{new}");
            assert_eq!(new["status"], json!({"s": 1}));
        }
    }

    #[test]
    fn status_update_takes_everything_else_from_old() {
        let old = json!({"metadata": {"name": "a", "generation": 2, "labels": {"a": "1"}},
                          "spec": {"replicas": 1}, "status": {"ready": 0}});
        let mut new = json!({"metadata": {"name": "a", "generation": 5, "labels": {"a": "2"}},
                              "spec": {"replicas": 9}, "status": {"ready": 1}});
        prepare_status_update(&mut new, &old);
        assert_eq!(
            new,
            json!({"metadata": {"name": "a", "generation": 2, "labels": {"a": "2"}},
                   "spec": {"replicas": 1}, "status": {"ready": 1}})
        );
    }
}
