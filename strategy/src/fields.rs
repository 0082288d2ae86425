//! Field selectors: which fields each type supports and their values for an object.

use crate::json::str_at;
use crate::kind::Kind;
use keel_api::jsonmap::JsonPointer;
use serde_json::Value;

/// Fields every namespaced type supports.
pub const NAMESPACED_META: &[&str] = &["metadata.name", "metadata.namespace"];
/// Fields every cluster-scoped type supports.
pub const CLUSTER_META: &[&str] = &["metadata.name"];

/// Pods.
pub const POD: &[&str] = &[
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
/// Namespaces.
pub const NAMESPACE: &[&str] = &["metadata.name", "status.phase"];
/// Nodes.
pub const NODE: &[&str] = &["metadata.name", "spec.unschedulable"];
/// Secrets.
pub const SECRET: &[&str] = &["metadata.name", "metadata.namespace", "type"];
/// Services.
pub const SERVICE: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.clusterIP",
    "spec.type",
];
/// core/v1 Events.
pub const EVENT: &[&str] = &[
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
/// ReplicaSets and ReplicationControllers.
pub const REPLICATED: &[&str] = &["metadata.name", "metadata.namespace", "status.replicas"];
/// Jobs.
pub const JOB: &[&str] = &["metadata.name", "metadata.namespace", "status.successful"];
/// ResourceSlices (kubelets select their node's slices).
pub const RESOURCE_SLICE: &[&str] = &["metadata.name", "spec.nodeName", "spec.driver"];
/// CertificateSigningRequests.
pub const CSR: &[&str] = &["metadata.name", "spec.signerName"];

/// The value of `field` for an object of `kind`, given that the type supports the field.
/// Booleans and counters read as upstream's field sets print them (`false`, `0` when absent).
pub fn value(kind: Kind, obj: &Value, field: &str) -> String {
    match (kind, field) {
        (Kind::Pod, "spec.hostNetwork") | (Kind::Node, "spec.unschedulable") => {
            let flag = crate::json::at(obj, field).and_then(Value::as_bool);
            flag.unwrap_or(false).to_string()
        }
        (Kind::Pod, "status.podIP") => {
            let first = obj.at("/status/podIPs/0/ip").and_then(Value::as_str);
            first
                .unwrap_or_else(|| str_at(obj, "status.podIP"))
                .to_string()
        }
        (Kind::Event, "source") => str_at(obj, "source.component").to_string(),
        (_, "status.replicas") | (_, "status.successful") => {
            let n = crate::json::at(obj, field).and_then(Value::as_i64);
            n.unwrap_or(0).to_string()
        }
        _ => str_at(obj, field).to_string(),
    }
}
