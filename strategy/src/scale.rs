//! The `scale` subresource: an autoscaling/v1 `Scale` view of a replicated workload.

use crate::errors::FieldErr;
use crate::json::{at, child};
use crate::kind::Kind;
use keel_api::jsonmap::JsonPointer;
use keel_api::names::{validate_object_meta, NameRule};
use keel_api::status::StatusCause;
use serde_json::{json, Value};

/// Builds the `Scale` for deployments, replicasets, statefulsets and replicationcontrollers.
pub fn scale_from(kind: Kind, obj: &Value) -> Option<Value> {
    let selector = match kind {
        Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet => {
            at(obj, "spec.selector").map(crate::selector::to_string)
        }
        Kind::ReplicationController => {
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
        if let Some(v) = obj.at(&format!("/metadata/{key}")) {
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

/// Upstream's `ValidateScale`: the Scale's metadata (namespaced, DNS-1123 subdomain name)
/// and `spec.replicas >= 0`. Errors are a 422 on `Scale.autoscaling`.
pub fn validate_scale(scale: &Value) -> Vec<StatusCause> {
    let meta = scale.get("metadata").unwrap_or(&Value::Null);
    let mut causes = validate_object_meta(meta, true, NameRule::Dns1123Subdomain);
    if let Some(n) = at(scale, "spec.replicas")
        .and_then(Value::as_i64)
        .filter(|n| *n < 0)
    {
        let err = FieldErr::invalid("spec.replicas", n, "must be greater than or equal to 0");
        causes.push(err.into_cause());
    }
    causes
}
