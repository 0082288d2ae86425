//! `pods/binding`: assigning a pod to a node, as upstream's binding storage does it.

use crate::errors::FieldErr;
use crate::json::{child, str_at};
use crate::Ctx;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::StatusCause;
use serde_json::{json, Value};

/// Upstream's `ValidatePodBinding`: a target node name, and a target kind that is empty or
/// `Node`. (Upstream returns these as a plain error aggregate, i.e. a 500 without a reason;
/// keel answers them as the causes of a 422 `Binding` Invalid.)
pub fn validate_binding(binding: &Value) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    let kind = str_at(binding, "target.kind");
    if !kind.is_empty() && kind != "Node" {
        errs.push(FieldErr::not_supported(
            "target.kind",
            kind,
            &["Node", "<empty>"],
        ));
    }
    if str_at(binding, "target.name").is_empty() {
        errs.push(FieldErr::required("target.name", ""));
    }
    errs.into_iter().map(FieldErr::into_cause).collect()
}

/// Assigns `pod` to the binding's node: `spec.nodeName`, the binding's annotations, and the
/// `PodScheduled` condition. `Err` carries the detail of upstream's 409 Conflict on
/// `pods/binding` (`ApiError::conflict("", "pods/binding", name, detail)`).
pub fn bind(pod: &mut Value, binding: &Value, ctx: &Ctx) -> Result<(), String> {
    let name = str_at(pod, "metadata.name").to_string();
    if pod
        .at("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Err(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        ));
    }
    let current = str_at(pod, "spec.nodeName");
    if !current.is_empty() {
        return Err(format!(
            "pod {name} is already assigned to node {}",
            keel_api::gofmt::quote(current)
        ));
    }
    let gated = pod
        .at("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    if gated {
        return Err(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    let node = str_at(binding, "target.name").to_string();
    let annotations = binding
        .at("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let Some(root) = pod.as_object_mut() else {
        return Ok(());
    };
    if let Some(spec) = child(root, "spec") {
        spec.insert("nodeName".into(), json!(node));
    }
    if !annotations.is_empty() {
        if let Some(a) = child(root, "metadata").and_then(|m| child(m, "annotations")) {
            a.extend(annotations);
        }
    }
    if let Some(status) = child(root, "status") {
        set_scheduled(status, ctx);
    }
    Ok(())
}

/// Upstream's `UpdatePodCondition` with `PodScheduled: True`: the condition is replaced in
/// place (reason and message cleared); its transition time moves only when the status
/// changes.
fn set_scheduled(status: &mut serde_json::Map<String, Value>, ctx: &Ctx) {
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let existing = list
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"));
    let transition = match existing.map(|i| &list[i]) {
        Some(old) if old.get("status").and_then(Value::as_str) == Some("True") => old
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or(Value::Null),
        _ => json!(ctx.now_rfc3339),
    };
    let condition = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                           "lastTransitionTime": transition});
    match existing {
        Some(i) => list[i] = condition,
        None => list.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx::at_unix_seconds(1_704_067_200)
    }

    fn binding(node: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": node}})
    }

    #[test]
    fn binding_validation_rows() {
        let rows: Vec<(Value, Vec<(&str, &str)>)> = vec![
            (binding("n1"), vec![]),
            (json!({"target": {"name": "n1"}}), vec![]),
            (
                json!({"target": {}}),
                vec![("target.name", "Required value")],
            ),
            (
                json!({"target": {"kind": "Pod", "name": "x"}}),
                vec![(
                    "target.kind",
                    "Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"",
                )],
            ),
        ];
        for (b, want) in rows {
            let got: Vec<(String, String)> = validate_binding(&b)
                .into_iter()
                .map(|c| (c.field, c.message))
                .collect();
            let want: Vec<(String, String)> = want
                .into_iter()
                .map(|(f, m)| (f.to_string(), m.to_string()))
                .collect();
            assert_eq!(got, want, "{b}");
        }
    }

    #[test]
    fn bind_sets_node_annotations_and_condition_in_place() {
        let mut pod = json!({"metadata": {"name": "p", "annotations": {"a": "1"}},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/1 nodes", "lastProbeTime": null, "lastTransitionTime": "2023-01-01T00:00:00Z"},
                {"type": "Other", "status": "True"}]}});
        let mut b = binding("n1");
        b["metadata"]["annotations"] = json!({"scheduler/decision": "x"});
        bind(&mut pod, &b, &ctx()).expect("binds");
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(
            pod["metadata"]["annotations"],
            json!({"a": "1", "scheduler/decision": "x"})
        );
        assert_eq!(
            pod["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2024-01-01T00:00:00Z"},
                   {"type": "Other", "status": "True"}])
        );
        let mut fresh = json!({"metadata": {"name": "q"}, "spec": {}});
        bind(&mut fresh, &binding("n2"), &ctx()).expect("binds");
        assert_eq!(
            fresh["status"]["conditions"][0]["lastTransitionTime"],
            "2024-01-01T00:00:00Z"
        );
        assert!(fresh["metadata"].get("annotations").is_none());
    }

    #[test]
    fn bind_refusals_are_upstream_conflict_details() {
        let rows = [
            (
                json!({"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "spec": {}}),
                "pod p is being deleted, cannot be assigned to a host",
            ),
            (
                json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n0"}}),
                "pod p is already assigned to node \"n0\"",
            ),
            (
                json!({"metadata": {"name": "p"}, "spec": {"schedulingGates": [{"name": "g"}]}}),
                "pod p has non-empty .spec.schedulingGates",
            ),
        ];
        for (mut pod, want) in rows {
            let before = pod.clone();
            assert_eq!(
                bind(&mut pod, &binding("n1"), &ctx()),
                Err(want.to_string())
            );
            assert_eq!(pod, before, "a refused binding changes nothing");
        }
    }
}
