//! The `scale` subresource: an autoscaling/v1 `Scale` view of a replicated workload.

use crate::errors::FieldErr;
use crate::json::{at, child};
use serde_json::{json, Value};

/// Builds the `Scale` for deployments, replicasets, statefulsets and replicationcontrollers.
pub fn scale_from(group: &str, resource: &str, obj: &Value) -> Option<Value> {
    let selector = match (group, resource) {
        ("apps", "deployments" | "replicasets" | "statefulsets") => {
            at(obj, "spec.selector").map(crate::selector::to_string)
        }
        ("", "replicationcontrollers") => {
            let matchers =
                json!({"matchLabels": at(obj, "spec.selector").cloned().unwrap_or_default()});
            Some(crate::selector::to_string(&matchers))
        }
        _ => return None,
    };
    let mut meta = serde_json::Map::new();
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = obj.pointer(&format!("/metadata/{key}")) {
            meta.insert(key.into(), v.clone());
        }
    }
    let replicas = at(obj, "spec.replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let current = at(obj, "status.replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": current});
    if let Some(s) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(s);
    }
    Some(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas},
        "status": status,
    }))
}

/// Sets `spec.replicas` of a workload.
pub fn apply_scale(obj: &mut Value, replicas: i64) {
    if let Some(spec) = obj.as_object_mut().and_then(|m| child(m, "spec")) {
        spec.insert("replicas".into(), json!(replicas));
    }
}

/// Validates a `Scale` body: `spec.replicas >= 0`.
pub fn validate_scale(scale: &Value) -> Vec<FieldErr> {
    match at(scale, "spec.replicas").and_then(Value::as_i64) {
        Some(n) if n < 0 => vec![FieldErr::invalid(
            "spec.replicas",
            n,
            "must be greater than or equal to 0",
        )],
        _ => Vec::new(),
    }
}
