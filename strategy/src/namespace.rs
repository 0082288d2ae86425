//! Namespaces: the `kubernetes` finalizer, the `kubernetes.io/metadata.name` label, phases.

use crate::json::{child, str_at};
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};

/// The finalizer the namespace controller removes after emptying the namespace.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
/// Label every namespace carries with its own name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Defaults applied on every write: the name label.
pub fn default_namespace(ns: &mut Value) {
    let name = str_at(ns, "metadata.name").to_string();
    if name.is_empty() {
        return;
    }
    if let Some(labels) = ns
        .as_object_mut()
        .and_then(|m| child(m, "metadata"))
        .and_then(|m| child(m, "labels"))
    {
        labels.insert(NAME_LABEL.into(), json!(name));
    }
}

/// On create: phase `Active` and the `kubernetes` finalizer in `spec.finalizers`.
pub fn prepare_create(ns: &mut Value) {
    let Some(map) = ns.as_object_mut() else {
        return;
    };
    map.insert("status".into(), json!({"phase": "Active"}));
    let Some(spec) = child(map, "spec") else {
        return;
    };
    let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
    if let Some(list) = finalizers.as_array_mut() {
        if !list.iter().any(|f| f == FINALIZER_KUBERNETES) {
            list.push(json!(FINALIZER_KUBERNETES));
        }
    } else {
        *finalizers = json!([FINALIZER_KUBERNETES]);
    }
}

/// On update of the main resource: `spec.finalizers` changes only through `/finalize`.
pub fn prepare_update(new: &mut Value, old: &Value) {
    let old_finalizers = old.at("/spec/finalizers").cloned();
    let Some(spec) = new.as_object_mut().and_then(|m| child(m, "spec")) else {
        return;
    };
    match old_finalizers {
        Some(f) => spec.insert("finalizers".into(), f),
        None => spec.remove("finalizers"),
    };
}

/// On a delete of a namespace: its phase becomes `Terminating`.
pub fn mark_terminating(ns: &mut Value) {
    if let Some(status) = ns.as_object_mut().and_then(|m| child(m, "status")) {
        status.insert("phase".into(), json!("Terminating"));
    }
}

/// On a write to `/finalize` (upstream's finalize strategy): everything but the status comes
/// from the new object, `spec.finalizers` included.
pub fn prepare_finalize(new: &mut Value, old: &Value) {
    let Some(map) = new.as_object_mut() else {
        return;
    };
    match old.get("status") {
        Some(s) => map.insert("status".into(), s.clone()),
        None => map.remove("status"),
    };
}
