//! Pods: what defaulting and the default admission chain (ServiceAccount, Priority,
//! DefaultTolerationSeconds) add on create, the initial status, QoS, and the update rules.

use crate::errors::FieldErr;
use crate::json::{arr_at, child, default, each_obj, str_at};
use crate::podspec_defaults::default_pod_spec;
use crate::podspec_validation::quantity_text;
use crate::quantity::{self, Nanos};
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Map, Value};

/// Seconds a pod tolerates `not-ready` / `unreachable` nodes (DefaultTolerationSeconds plugin).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;
/// Priority of `system-cluster-critical`.
pub const SYSTEM_CLUSTER_CRITICAL_PRIORITY: i64 = 2_000_000_000;
/// Priority of `system-node-critical`.
pub const SYSTEM_NODE_CRITICAL_PRIORITY: i64 = 2_000_001_000;

const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// Defaults of a Pod object (`SetDefaults_Pod` + `SetDefaults_PodSpec`).
pub fn default_pod(pod: &mut Value) {
    let Some(spec) = pod.as_object_mut().and_then(|m| child(m, "spec")) else {
        return;
    };
    for list in ["initContainers", "containers"] {
        for c in each_obj(spec, list) {
            requests_from_limits(c);
        }
    }
    default(spec, "enableServiceLinks", json!(true));
    if let Some(s) = pod.get_mut("spec") {
        default_pod_spec(s);
    }
}

/// Upstream copies a limit into requests when the request for that resource is missing.
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(res) = child(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    let Some(requests) = child(res, "requests") else {
        return;
    };
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
}

/// What the default admission plugins add to a new pod.
pub fn admit_pod(pod: &mut Value) {
    let Some(spec) = pod.as_object_mut().and_then(|m| child(m, "spec")) else {
        return;
    };
    let named = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let sa = named("serviceAccountName")
        .or_else(|| named("serviceAccount"))
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), json!(sa));
    let sa = spec.get("serviceAccountName").cloned().unwrap_or_default();
    spec.insert("serviceAccount".into(), sa);
    admit_priority(spec);
    admit_tolerations(spec);
}

fn admit_priority(spec: &mut Map<String, Value>) {
    let class = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let priority = match class {
        "system-node-critical" => SYSTEM_NODE_CRITICAL_PRIORITY,
        "system-cluster-critical" => SYSTEM_CLUSTER_CRITICAL_PRIORITY,
        _ => 0,
    };
    default(spec, "priority", json!(priority));
    default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
}

fn tolerates(tolerations: &[Value], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let effect = str_at(t, "effect");
        let op = str_at(t, "operator");
        let key_matches =
            str_at(t, "key") == key || (str_at(t, "key").is_empty() && op == "Exists");
        key_matches && (effect.is_empty() || effect == "NoExecute")
    })
}

fn admit_tolerations(spec: &mut Map<String, Value>) {
    let existing: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = existing.clone();
    for key in [NOT_READY_TAINT, UNREACHABLE_TAINT] {
        if !tolerates(&existing, key) {
            out.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}),
            );
        }
    }
    spec.insert("tolerations".into(), Value::Array(out));
}

/// Status of a newly created pod: `Pending`, its QoS class, and the scheduling-gated condition.
pub fn initial_status(pod: &Value, now_rfc3339: &str) -> Value {
    let mut status = json!({"phase": "Pending", "qosClass": qos_class(pod)});
    if !arr_at(pod, "spec.schedulingGates").is_empty() {
        status["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "lastProbeTime": null, "lastTransitionTime": now_rfc3339,
        }]);
    }
    status
}

const QOS_RESOURCES: &[&str] = &["cpu", "memory"];

/// Upstream's QoS class: `Guaranteed`, `Burstable` or `BestEffort`.
pub fn qos_class(pod: &Value) -> &'static str {
    let mut requests: [Nanos; 2] = Default::default();
    let mut limits: [Nanos; 2] = Default::default();
    let (mut any_request, mut any_limit, mut guaranteed) = (false, false, true);
    let containers = arr_at(pod, "spec.initContainers")
        .iter()
        .chain(arr_at(pod, "spec.containers"));
    for c in containers {
        let mut limited = [false; 2];
        for (i, r) in QOS_RESOURCES.iter().enumerate() {
            if let Some(q) = positive(c.at(&format!("/resources/requests/{r}"))) {
                any_request = true;
                requests[i] = Nanos(requests[i].0.saturating_add(q.0));
            }
            if let Some(q) = positive(c.at(&format!("/resources/limits/{r}"))) {
                any_limit = true;
                limited[i] = true;
                limits[i] = Nanos(limits[i].0.saturating_add(q.0));
            }
        }
        guaranteed &= limited.iter().all(|l| *l);
    }
    if !any_request && !any_limit {
        "BestEffort"
    } else if guaranteed && requests == limits {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn positive(v: Option<&Value>) -> Option<Nanos> {
    quantity::parse(&quantity_text(v?)).filter(|q| q.0 > 0)
}

const UPDATABLE_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Upstream's pod update rules: the spec is immutable except for the listed fields.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let new_spec = new.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    validate_deadline_update(new_spec, old_spec, &mut errs);
    validate_tolerations_update(new_spec, old_spec, &mut errs);
    validate_gates_update(new_spec, old_spec, &mut errs);
    let munged = munge_allowed(old_spec, new_spec);
    if munged != *new_spec {
        let diff = crate::diff::describe(old_spec, new_spec, "spec");
        let msg =
            format!("pod updates may not change fields other than {UPDATABLE_FIELDS}\n{diff}");
        errs.push(FieldErr::forbidden("spec", &msg));
    }
    errs
}

/// The old spec with every mutation upstream allows taken from the new spec.
/// The container lists whose `resources` and `resizePolicy` a `resize` write may change.
const RESIZABLE_LISTS: &[&str] = &["initContainers", "containers"];

/// `pods/resize` writes: the stored pod with only each container's `resources` and
/// `resizePolicy` taken from the body (containers matched by position and name); anything
/// else in the body is ignored, as upstream's resize strategy does. The generation follows
/// the spec (bumped when the resize changed it).
pub fn prepare_resize(new: &mut Value, old: &Value) {
    let mut merged = old.clone();
    for list in RESIZABLE_LISTS {
        let pointer = format!("/spec/{list}");
        let Some(new_list) = new.at(&pointer).and_then(Value::as_array) else {
            continue;
        };
        let Some(out) = merged.at_mut(&pointer).and_then(Value::as_array_mut) else {
            continue;
        };
        for (c, n) in out.iter_mut().zip(new_list) {
            let (Some(c), Some(n)) = (c.as_object_mut(), n.as_object()) else {
                continue;
            };
            if c.get("name") != n.get("name") {
                continue;
            }
            for field in ["resources", "resizePolicy"] {
                match n.get(field) {
                    Some(v) => c.insert(field.into(), v.clone()),
                    None => c.remove(field),
                };
            }
        }
    }
    if merged.get("spec") != old.get("spec") {
        let generation = old
            .at("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        crate::generic::bump_generation(&mut merged, generation);
    }
    *new = merged;
}

/// Upstream's rules for a `resize`: requests and limits may not be removed, only cpu and
/// memory may change, and the pod's QoS class must stay.
pub fn validate_resize(new: &Value, old: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let mut other_resource_changed = false;
    for list in RESIZABLE_LISTS {
        let pointer = format!("/spec/{list}");
        let empty = Vec::new();
        let olds = old.at(&pointer).and_then(Value::as_array).unwrap_or(&empty);
        let news = new.at(&pointer).and_then(Value::as_array).unwrap_or(&empty);
        for (i, (o, n)) in olds.iter().zip(news).enumerate() {
            for (kind, what) in [("requests", "requests"), ("limits", "limits")] {
                let field = |c: &Value| {
                    c.at(&format!("/resources/{kind}"))
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default()
                };
                let (before, after) = (field(o), field(n));
                if before.keys().any(|k| !after.contains_key(k)) {
                    errs.push(FieldErr::forbidden(
                        &format!("spec.{list}[{i}].resources.{kind}"),
                        &format!("resource {what} cannot be removed"),
                    ));
                }
                let keys: std::collections::BTreeSet<&String> =
                    before.keys().chain(after.keys()).collect();
                other_resource_changed |= keys
                    .into_iter()
                    .any(|k| k != "cpu" && k != "memory" && before.get(k) != after.get(k));
            }
        }
    }
    if other_resource_changed {
        errs.push(FieldErr::forbidden(
            "spec",
            "only cpu and memory resources are mutable",
        ));
    }
    // Upstream names the class the pod had.
    let qos = qos_class(old);
    if errs.is_empty() && qos != qos_class(new) {
        errs.push(FieldErr::invalid(
            "spec",
            qos,
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    errs
}

fn munge_allowed(old: &Value, new: &Value) -> Value {
    let mut munged = old.clone();
    let Some(m) = munged.as_object_mut() else {
        return munged;
    };
    for list in ["containers", "initContainers"] {
        let Some(items) = m.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for (i, c) in items.iter_mut().enumerate() {
            if let (Some(c), Some(img)) = (c.as_object_mut(), new.at(&format!("/{list}/{i}/image")))
            {
                c.insert("image".into(), img.clone());
            }
        }
    }
    for key in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
        crate::generic::copy_member(m, new, key);
    }
    let old_grace = old
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    let new_grace = new
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if old_grace.is_some_and(|g| g < 0) && new_grace == Some(1) {
        m.insert("terminationGracePeriodSeconds".into(), json!(1));
    }
    munged
}

fn validate_deadline_update(new: &Value, old: &Value, errs: &mut Vec<FieldErr>) {
    let field = "spec.activeDeadlineSeconds";
    let Some(old_ads) = old.get("activeDeadlineSeconds").and_then(Value::as_i64) else {
        return;
    };
    match new.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        None => errs.push(FieldErr::invalid(
            field,
            crate::errors::Bad::Raw("null".into()),
            "must not update from a positive integer to nil value",
        )),
        Some(n) if n > old_ads => errs.push(FieldErr::invalid(
            field,
            n,
            "must be less than or equal to previous value",
        )),
        Some(_) => {}
    }
}

fn toleration_identity(t: &Value) -> (String, String, String, String) {
    let op = match str_at(t, "operator") {
        "" => "Equal",
        o => o,
    };
    (
        str_at(t, "key").into(),
        op.into(),
        str_at(t, "value").into(),
        str_at(t, "effect").into(),
    )
}

fn validate_tolerations_update(new: &Value, old: &Value, errs: &mut Vec<FieldErr>) {
    let new_ids: Vec<_> = arr_at(new, "tolerations")
        .iter()
        .map(toleration_identity)
        .collect();
    let all_kept = arr_at(old, "tolerations")
        .iter()
        .all(|t| new_ids.contains(&toleration_identity(t)));
    if !all_kept {
        errs.push(FieldErr::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
}

fn validate_gates_update(new: &Value, old: &Value, errs: &mut Vec<FieldErr>) {
    let old_gates = arr_at(old, "schedulingGates");
    for gate in arr_at(new, "schedulingGates") {
        if !old_gates.contains(gate) {
            let msg = format!(
                "only deletion is allowed, but found new scheduling gate '{}'",
                str_at(gate, "name")
            );
            errs.push(FieldErr::forbidden("spec.schedulingGates", &msg));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_table() {
        let pod = |containers: Value| json!({"spec": {"containers": containers}});
        let cases = [
            (pod(json!([{"name": "a"}])), "BestEffort"),
            (
                pod(json!([{"resources": {"requests": {"cpu": "0"}}}])),
                "BestEffort",
            ),
            (
                pod(json!([{"resources": {"requests": {"cpu": "1"}}}])),
                "Burstable",
            ),
            (
                pod(
                    json!([{"resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                           "limits": {"cpu": "1000m", "memory": "1Gi"}}}]),
                ),
                "Guaranteed",
            ),
            (
                pod(json!([{"resources": {"limits": {"cpu": "1"}}}])),
                "Burstable",
            ),
            (
                pod(
                    json!([{"resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                           "limits": {"cpu": "2", "memory": "1Gi"}}}]),
                ),
                "Burstable",
            ),
            (
                pod(
                    json!([{"resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                           "limits": {"cpu": "1", "memory": "1Gi"}}},
                           {"name": "b"}]),
                ),
                "Burstable",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(qos_class(&p), want, "{p}");
        }
    }

    #[test]
    fn tolerations_added_only_when_missing() {
        let mut pod = json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
        ]}});
        admit_pod(&mut pod);
        let t = pod["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0]["tolerationSeconds"], json!(5));
        assert_eq!(t[1]["key"], json!(UNREACHABLE_TAINT));
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        admit_pod(&mut all);
        assert_eq!(all["spec"]["tolerations"].as_array().unwrap().len(), 1);
    }
}
