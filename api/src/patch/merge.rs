//! JSON merge patch (RFC 7386).

use serde_json::{Map, Value};

/// Applies `patch` to `target` in place: objects merge recursively, `null` deletes a member,
/// anything else (including arrays) replaces the target value.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(members) = target else {
        return;
    };
    for (key, value) in patch_members {
        if value.is_null() {
            members.remove(key);
        } else {
            merge_patch(members.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}
