//! Nodes: the zero status upstream serializes for a bare node, and `podCIDRs`.

use crate::json::{child, default};
use serde_json::{json, Value};

/// Defaults of a Node: `spec.podCIDRs` from `spec.podCIDR`, `status.allocatable` from capacity,
/// and the non-omitempty members of the status that upstream always serializes.
pub fn default_node(node: &mut Value) {
    let Some(map) = node.as_object_mut() else {
        return;
    };
    if let Some(spec) = child(map, "spec") {
        if let Some(cidr) = spec
            .get("podCIDR")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            let cidrs = json!([cidr]);
            default(spec, "podCIDRs", cidrs);
        }
    }
    let Some(status) = child(map, "status") else {
        return;
    };
    if let Some(cap) = status.get("capacity").cloned() {
        default(status, "allocatable", cap);
    }
    if let Some(kubelet) =
        child(status, "daemonEndpoints").and_then(|d| child(d, "kubeletEndpoint"))
    {
        default(kubelet, "Port", json!(0));
    }
    if let Some(info) = child(status, "nodeInfo") {
        for key in [
            "architecture",
            "bootID",
            "containerRuntimeVersion",
            "kernelVersion",
            "kubeProxyVersion",
            "kubeletVersion",
            "machineID",
            "operatingSystem",
            "osImage",
            "systemUUID",
        ] {
            default(info, key, json!(""));
        }
    }
}

/// Drops the members of a Node's spec (and of its taints) that Go omits when zero: every
/// `NodeSpec` field is `omitempty`, so upstream, which decodes a body into Go structs, never
/// stores or returns `taints: []`, `podCIDRs: []`, `unschedulable: false`, `providerID: ""`
/// and the like; a taint's `value` and `timeAdded` are `omitempty` too (its `key` and `effect` are not).
pub fn drop_zero_spec_members(node: &mut Value) {
    let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.retain(|_, v| !omitted_when_zero(v));
    for taint in crate::json::each_obj(spec, "taints") {
        taint.retain(|key, v| key == "key" || key == "effect" || !omitted_when_zero(v));
    }
}

/// Whether Go's `omitempty` drops `v` (a struct value, here `configSource: {}`, is kept).
fn omitted_when_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Node-specific validation: taint effects and keys.
pub fn validate(node: &Value) -> Vec<crate::errors::FieldErr> {
    const EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "PreferNoSchedule"];
    let mut errs = Vec::new();
    for (i, t) in crate::json::arr_at(node, "spec.taints").iter().enumerate() {
        let path = format!("spec.taints[{i}]");
        let key = crate::json::str_at(t, "key");
        for msg in crate::names::is_qualified_name(key) {
            errs.push(crate::errors::FieldErr::invalid(
                &format!("{path}.key"),
                key,
                &msg,
            ));
        }
        let effect = crate::json::str_at(t, "effect");
        if effect.is_empty() {
            errs.push(crate::errors::FieldErr::required(
                &format!("{path}.effect"),
                "",
            ));
        } else if !EFFECTS.contains(&effect) {
            errs.push(crate::errors::FieldErr::not_supported(
                &format!("{path}.effect"),
                effect,
                EFFECTS,
            ));
        }
    }
    errs
}
