//! Field selectors: which fields each type supports and their values for an object.

use crate::json::str_at;
use serde_json::Value;

const NAMESPACED_META: &[&str] = &["metadata.name", "metadata.namespace"];
const CLUSTER_META: &[&str] = &["metadata.name"];

const POD: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];
const NAMESPACE: &[&str] = &["metadata.name", "status.phase"];
const NODE: &[&str] = &["metadata.name", "spec.unschedulable"];
const SECRET: &[&str] = &["metadata.name", "metadata.namespace", "type"];
const SERVICE: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.clusterIP",
    "spec.type",
];
const EVENT: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];
const REPLICATED: &[&str] = &["metadata.name", "metadata.namespace", "status.replicas"];
const JOB: &[&str] = &["metadata.name", "metadata.namespace", "status.successful"];
const CSR: &[&str] = &["metadata.name", "spec.signerName"];

/// The field-selector fields upstream accepts for a resource.
pub fn selectable_fields(group: &str, resource: &str) -> &'static [&'static str] {
    match (group, resource) {
        ("", "pods") => POD,
        ("", "namespaces") => NAMESPACE,
        ("", "nodes") => NODE,
        ("", "secrets") => SECRET,
        ("", "services") => SERVICE,
        ("", "events") => EVENT,
        ("", "replicationcontrollers") | ("apps", "replicasets") => REPLICATED,
        ("batch", "jobs") => JOB,
        ("certificates.k8s.io", "certificatesigningrequests") => CSR,
        _ if crate::registry::traits(group, resource).namespaced => NAMESPACED_META,
        _ => CLUSTER_META,
    }
}

/// The value of a selectable field (`None` when the type does not support the field).
pub fn field_value(group: &str, resource: &str, obj: &Value, field: &str) -> Option<String> {
    if !selectable_fields(group, resource).contains(&field) {
        return None;
    }
    Some(match (resource, field) {
        ("pods", "spec.hostNetwork") | ("nodes", "spec.unschedulable") => {
            let flag = crate::json::at(obj, field).and_then(Value::as_bool);
            flag.unwrap_or(false).to_string()
        }
        ("pods", "status.podIP") => {
            let first = obj.pointer("/status/podIPs/0/ip").and_then(Value::as_str);
            first
                .unwrap_or_else(|| str_at(obj, "status.podIP"))
                .to_string()
        }
        ("events", "source") => str_at(obj, "source.component").to_string(),
        (_, "status.replicas") | (_, "status.successful") => {
            let n = crate::json::at(obj, field).and_then(Value::as_i64);
            n.unwrap_or(0).to_string()
        }
        _ => str_at(obj, field).to_string(),
    })
}
