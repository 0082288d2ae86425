//! `autoscaling` HorizontalPodAutoscalers (v1 and v2): defaults, the zero status a new one
//! starts with, and validation, as upstream's v1.36 apiserver answers them (observed side by
//! side). keel stores each version as written (no conversion), so the rules here read the
//! object's own `apiVersion`; an autoscaling/v1 object is validated with the paths upstream
//! reports for it, which are those of the version it converts to (its CPU target is
//! `spec.metrics[0].resource.target.averageUtilization`).

use crate::errors::FieldErr;
use crate::json::{child, child_if, default};
use crate::quantity;
use keel_api::jsonmap::JsonPointer;
use keel_api::names;
use serde_json::{json, Value};

/// Default `minReplicas`.
pub const MIN_REPLICAS_DEFAULT: i64 = 1;
/// Default CPU utilization target, percent (v1 `targetCPUUtilizationPercentage`, v2's metric).
pub const CPU_UTILIZATION_DEFAULT: i64 = 80;
/// Longest `stabilizationWindowSeconds` (one hour).
pub const STABILIZATION_WINDOW_MAX_SECONDS: i64 = 3600;
/// Longest scaling policy `periodSeconds` (30 minutes).
pub const POLICY_PERIOD_MAX_SECONDS: i64 = 1800;

const METRIC_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const TARGET_TYPES_MSG: &str = "must be either Utilization, Value, or AverageValue";
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];

fn is_v1(obj: &Value) -> bool {
    obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1")
}

/// Applies upstream's defaults: `minReplicas` 1; for v2, a CPU target of 80 % when no metric
/// is set, and a `behavior` given gets its missing directions' and fields' defaults.
///
/// Upstream's autoscaling/v1 defaulting sets only `minReplicas`: a v1 object's 80 % CPU target
/// comes from its conversion to v2 for storage (`convert`), and only when the
/// `autoscaling.alpha.kubernetes.io/metrics` annotation carries no metric either; the v2
/// defaults are applied to what that conversion makes.
pub fn apply_defaults(obj: &mut Value) {
    let v1 = is_v1(obj);
    let Some(spec) = obj.as_object_mut().and_then(|m| child(m, "spec")) else {
        return;
    };
    default(spec, "minReplicas", json!(MIN_REPLICAS_DEFAULT));
    if v1 {
        return;
    }
    let no_metrics = match spec.get("metrics") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if no_metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": CPU_UTILIZATION_DEFAULT}}}]),
        );
    }
    if let Some(behavior) = child_if(spec, "behavior") {
        // A direction left out gets its default rules whole; one given gets the fields it
        // lacks (a `policies` given empty stays empty, and is refused).
        let up_policies = json!([
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]);
        if let Some(up) = child(behavior, "scaleUp") {
            default(up, "stabilizationWindowSeconds", json!(0));
            default(up, "selectPolicy", json!("Max"));
            default(up, "policies", up_policies);
        }
        if let Some(down) = child(behavior, "scaleDown") {
            default(down, "selectPolicy", json!("Max"));
            default(
                down,
                "policies",
                json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
            );
        }
    }
}

/// The status a new HorizontalPodAutoscaler starts with: Go's zero status of its version.
pub fn initial_status(obj: &Value) -> Value {
    if is_v1(obj) {
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    } else {
        json!({"desiredReplicas": 0, "currentMetrics": null})
    }
}

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// The spec's rules (creates and updates alike).
pub fn validate(obj: &Value) -> Vec<FieldErr> {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let mut errs = Vec::new();
    let min = int(spec, "minReplicas");
    if let Some(min) = min.filter(|m| *m < MIN_REPLICAS_DEFAULT) {
        errs.push(FieldErr::invalid(
            "spec.minReplicas",
            min,
            "must be greater than or equal to 1",
        ));
    }
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if max == 0 {
        errs.push(FieldErr::required(
            "spec.maxReplicas",
            "must be set and greater than 0",
        ));
    } else if max < 1 {
        errs.push(FieldErr::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to 1",
        ));
    }
    if max < min.unwrap_or(0) {
        errs.push(FieldErr::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target_ref = spec.get("scaleTargetRef").unwrap_or(&null);
    errs.extend(object_reference(target_ref, "spec.scaleTargetRef"));
    let api_version = text(target_ref, "apiVersion");
    match api_version.split('/').count() {
        1 => errs.push(FieldErr::invalid(
            "spec.scaleTargetRef.apiVersion",
            api_version,
            "apiVersion must specify API group",
        )),
        2 => {}
        _ => errs.push(FieldErr::invalid(
            "spec.scaleTargetRef.apiVersion",
            api_version,
            &format!("unexpected GroupVersion string: {api_version}"),
        )),
    }
    if is_v1(obj) {
        if let Some(cpu) = int(spec, "targetCPUUtilizationPercentage").filter(|c| *c < 1) {
            errs.push(FieldErr::invalid(
                "spec.metrics[0].resource.target.averageUtilization",
                cpu,
                "must be greater than 0",
            ));
        }
    } else {
        let metrics = spec.get("metrics").and_then(Value::as_array);
        for (i, m) in metrics.into_iter().flatten().enumerate() {
            errs.extend(metric(m, &format!("spec.metrics[{i}]")));
        }
        if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
            for dir in ["scaleUp", "scaleDown"] {
                if let Some(rules) = b.get(dir).filter(|r| !r.is_null()) {
                    errs.extend(scaling_rules(rules, &format!("spec.behavior.{dir}")));
                }
            }
        }
    }
    if min == Some(0) && !scales_on_object_or_external(obj) {
        errs.push(FieldErr::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    errs
}

fn scales_on_object_or_external(obj: &Value) -> bool {
    if is_v1(obj) {
        return false;
    }
    let metrics = obj.at("/spec/metrics").and_then(Value::as_array);
    metrics
        .into_iter()
        .flatten()
        .any(|m| matches!(text(m, "type"), "Object" | "External"))
}

/// A `CrossVersionObjectReference`: kind and name required, each usable as a path segment.
fn object_reference(r: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    for key in ["kind", "name"] {
        let value = text(r, key);
        let field = format!("{path}.{key}");
        if value.is_empty() {
            errs.push(FieldErr::required(&field, ""));
        }
        for msg in names::is_valid_path_segment_name(value) {
            errs.push(FieldErr::invalid(&field, value, &msg));
        }
    }
    errs
}

/// The source field each metric type is described by.
fn source_field(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "External" => "external",
        _ => return None,
    })
}

fn metric(m: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let kind = text(m, "type");
    if kind.is_empty() {
        errs.push(FieldErr::required(
            &format!("{path}.type"),
            "must specify a metric source type",
        ));
    }
    let Some(field) = source_field(kind) else {
        errs.push(FieldErr::not_supported(
            &format!("{path}.type"),
            kind,
            METRIC_TYPES,
        ));
        return errs;
    };
    for other in METRIC_TYPES.iter().filter_map(|t| source_field(t)) {
        if other != field && present(m, other) {
            errs.push(FieldErr::forbidden(
                &format!("{path}.{other}"),
                "must populate the given metric source only",
            ));
        }
    }
    let Some(source) = m.get(field).filter(|s| !s.is_null()) else {
        errs.push(FieldErr::required(
            &format!("{path}.{field}"),
            "must populate information for the given metric source",
        ));
        return errs;
    };
    let path = format!("{path}.{field}");
    let null = Value::Null;
    let target = source.get("target").unwrap_or(&null);
    let tpath = format!("{path}.target");
    match field {
        "resource" | "containerResource" => {
            if text(source, "name").is_empty() {
                errs.push(FieldErr::required(
                    &format!("{path}.name"),
                    "must specify a resource name",
                ));
            }
            if field == "containerResource" {
                let container = text(source, "container");
                let cpath = format!("{path}.container");
                if container.is_empty() {
                    errs.push(FieldErr::required(&cpath, "must specify a container"));
                } else {
                    for msg in names::is_dns1123_label(container) {
                        errs.push(FieldErr::invalid(&cpath, container, &msg));
                    }
                }
            }
            errs.extend(metric_target(target, &tpath));
            match (
                present(target, "averageUtilization"),
                present(target, "averageValue"),
            ) {
                (false, false) => errs.push(FieldErr::required(
                    &format!("{tpath}.averageUtilization"),
                    "must set either a target raw value or a target utilization",
                )),
                (true, true) => errs.push(FieldErr::forbidden(
                    &format!("{tpath}.averageValue"),
                    "may not set both a target raw value and a target utilization",
                )),
                _ => {}
            }
        }
        "pods" => {
            errs.extend(metric_identifier(source, &format!("{path}.metric")));
            errs.extend(metric_target(target, &tpath));
            if !present(target, "averageValue") {
                errs.push(FieldErr::required(
                    &format!("{tpath}.averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        "object" => {
            let described = source.get("describedObject").unwrap_or(&null);
            errs.extend(object_reference(
                described,
                &format!("{path}.describedObject"),
            ));
            errs.extend(metric_identifier(source, &format!("{path}.metric")));
            errs.extend(metric_target(target, &tpath));
            if !present(target, "value") && !present(target, "averageValue") {
                errs.push(FieldErr::required(
                    &format!("{tpath}.averageValue"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        _ => {
            errs.extend(metric_identifier(source, &format!("{path}.metric")));
            errs.extend(metric_target(target, &tpath));
            match (present(target, "value"), present(target, "averageValue")) {
                (false, false) => errs.push(FieldErr::required(
                    &format!("{tpath}.averageValue"),
                    "must set either a target value for metric or a per-pod target",
                )),
                (true, true) => errs.push(FieldErr::forbidden(
                    &format!("{tpath}.value"),
                    "may not set both a target value for metric and a per-pod target",
                )),
                _ => {}
            }
        }
    }
    errs
}

/// A metric's name: required, usable as a path segment.
fn metric_identifier(source: &Value, path: &str) -> Vec<FieldErr> {
    let name = source.get("metric").map(|m| text(m, "name")).unwrap_or("");
    let field = format!("{path}.name");
    if name.is_empty() {
        return vec![FieldErr::required(&field, "must specify a metric name")];
    }
    names::is_valid_path_segment_name(name)
        .into_iter()
        .map(|msg| FieldErr::invalid(&field, name, &msg))
        .collect()
}

/// A `MetricTarget`: a known type; values and utilization positive.
fn metric_target(t: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let kind = text(t, "type");
    if kind.is_empty() {
        errs.push(FieldErr::required(
            &format!("{path}.type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        errs.push(FieldErr::invalid(
            &format!("{path}.type"),
            kind,
            TARGET_TYPES_MSG,
        ));
    }
    for key in ["value", "averageValue"] {
        if let Some(q) = t.get(key).and_then(Value::as_str) {
            if quantity::parse(q).is_some_and(|n| n.0 <= 0) {
                errs.push(FieldErr::invalid(
                    &format!("{path}.{key}"),
                    q,
                    "must be positive",
                ));
            }
        }
    }
    if let Some(u) = int(t, "averageUtilization").filter(|u| *u < 1) {
        errs.push(FieldErr::invalid(
            &format!("{path}.averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    errs
}

/// One direction's `HPAScalingRules`.
fn scaling_rules(rules: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if let Some(w) = int(rules, "stabilizationWindowSeconds") {
        let field = format!("{path}.stabilizationWindowSeconds");
        if w < 0 {
            errs.push(FieldErr::invalid(
                &field,
                w,
                "must be greater than or equal to zero",
            ));
        } else if w > STABILIZATION_WINDOW_MAX_SECONDS {
            errs.push(FieldErr::invalid(
                &field,
                w,
                &format!("must be less than or equal to {STABILIZATION_WINDOW_MAX_SECONDS}"),
            ));
        }
    }
    if let Some(p) = rules.get("selectPolicy").and_then(Value::as_str) {
        if !SELECT_POLICIES.contains(&p) {
            errs.push(FieldErr::not_supported(
                &format!("{path}.selectPolicy"),
                p,
                SELECT_POLICIES,
            ));
        }
    }
    let policies = rules.get("policies").and_then(Value::as_array);
    if policies.is_none_or(|p| p.is_empty()) {
        errs.push(FieldErr::required(
            &format!("{path}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, p) in policies.into_iter().flatten().enumerate() {
        let ppath = format!("{path}.policies[{i}]");
        let kind = text(p, "type");
        if !POLICY_TYPES.contains(&kind) {
            errs.push(FieldErr::not_supported(
                &format!("{ppath}.type"),
                kind,
                POLICY_TYPES,
            ));
        }
        let value = int(p, "value").unwrap_or(0);
        if value <= 0 {
            errs.push(FieldErr::invalid(
                &format!("{ppath}.value"),
                value,
                "must be greater than zero",
            ));
        }
        let period = int(p, "periodSeconds").unwrap_or(0);
        let field = format!("{ppath}.periodSeconds");
        if period <= 0 {
            errs.push(FieldErr::invalid(
                &field,
                period,
                "must be greater than zero",
            ));
        } else if period > POLICY_PERIOD_MAX_SECONDS {
            errs.push(FieldErr::invalid(
                &field,
                period,
                &format!("must be less than or equal to {POLICY_PERIOD_MAX_SECONDS}"),
            ));
        }
    }
    if let Some(t) = rules.get("tolerance").and_then(Value::as_str) {
        if quantity::parse(t).is_some_and(|n| n.0 < 0) {
            errs.push(FieldErr::invalid(
                &format!("{path}.tolerance"),
                t,
                "must be greater than or equal to 0",
            ));
        }
    }
    errs
}

#[cfg(test)]
fn spec_of(obj: &Value) -> &serde_json::Map<String, Value> {
    obj["spec"].as_object().expect("spec")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hpa(version: &str, spec: Value) -> Value {
        json!({"apiVersion": format!("autoscaling/{version}"), "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "h"}, "spec": spec})
    }

    fn messages(obj: &Value) -> Vec<String> {
        validate(obj).into_iter().map(|e| e.message).collect()
    }

    fn base() -> Value {
        json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"},
               "maxReplicas": 3})
    }

    fn with(key: &str, value: Value) -> Value {
        let mut spec = base();
        spec[key] = value;
        spec
    }

    #[test]
    fn defaults_by_version() {
        let mut v1 = hpa("v1", base());
        apply_defaults(&mut v1);
        assert_eq!(spec_of(&v1)["minReplicas"], json!(1));
        // v1's CPU target comes from its conversion to v2 (the convert module), not defaulting.
        assert_eq!(spec_of(&v1).get("targetCPUUtilizationPercentage"), None);

        let mut v2 = hpa("v2", with("behavior", json!({})));
        apply_defaults(&mut v2);
        let spec = spec_of(&v2);
        assert_eq!(spec["minReplicas"], json!(1));
        assert_eq!(
            spec["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        assert_eq!(
            spec["behavior"],
            json!({"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                   "scaleDown": {"selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}})
        );

        // A direction given keeps its policies and gains only the missing fields.
        let policies = json!([{"type": "Pods", "value": 1, "periodSeconds": 60}]);
        let mut v2 = hpa(
            "v2",
            with("behavior", json!({"scaleDown": {"policies": policies}})),
        );
        apply_defaults(&mut v2);
        assert_eq!(
            spec_of(&v2)["behavior"]["scaleDown"],
            json!({"policies": policies, "selectPolicy": "Max"})
        );

        // No behavior: none is added; metrics given are kept.
        let metrics = json!([{"type": "External", "external": {"metric": {"name": "m"},
            "target": {"type": "Value", "value": "1"}}}]);
        let mut v2 = hpa("v2", with("metrics", metrics.clone()));
        apply_defaults(&mut v2);
        assert!(spec_of(&v2).get("behavior").is_none());
        assert_eq!(spec_of(&v2)["metrics"], metrics);
    }

    #[test]
    fn zero_status_by_version() {
        assert_eq!(
            initial_status(&hpa("v1", base())),
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
        assert_eq!(
            initial_status(&hpa("v2", base())),
            json!({"desiredReplicas": 0, "currentMetrics": null})
        );
    }

    /// Each row: (version, spec after defaulting, upstream v1.36.2's messages in order).
    #[test]
    fn validation_rows() {
        let ref_ = |r: Value| with("scaleTargetRef", r);
        let metric = |m: Value| with("metrics", json!([m]));
        let rows: Vec<(&str, Value, Vec<&str>)> = vec![
            ("v2", base(), vec![]),
            (
                "v2",
                with("minReplicas", json!(0)),
                vec![
                    "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                    "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
                ],
            ),
            (
                "v2",
                with("maxReplicas", json!(0)),
                vec![
                    "spec.maxReplicas: Required value: must be set and greater than 0",
                    "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
                ],
            ),
            (
                "v2",
                with("maxReplicas", json!(-1)),
                vec![
                    "spec.maxReplicas: Invalid value: -1: must be greater than or equal to 1",
                    "spec.maxReplicas: Invalid value: -1: must be greater than or equal to `minReplicas`",
                ],
            ),
            (
                "v2",
                with("minReplicas", json!(5)),
                vec!["spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"],
            ),
            (
                "v2",
                ref_(json!({})),
                vec![
                    "spec.scaleTargetRef.kind: Required value",
                    "spec.scaleTargetRef.name: Required value",
                    "spec.scaleTargetRef.apiVersion: Invalid value: \"\": apiVersion must specify API group",
                ],
            ),
            (
                "v2",
                ref_(json!({"apiVersion": "apps/v1", "kind": "De/p", "name": "a/b"})),
                vec![
                    "spec.scaleTargetRef.kind: Invalid value: \"De/p\": may not contain '/'",
                    "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
                ],
            ),
            (
                "v2",
                ref_(json!({"apiVersion": "a/b/c", "kind": "D", "name": "x"})),
                vec!["spec.scaleTargetRef.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c"],
            ),
            (
                "v2",
                metric(json!({})),
                vec![
                    "spec.metrics[0].type: Required value: must specify a metric source type",
                    "spec.metrics[0].type: Unsupported value: \"\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                ],
            ),
            (
                "v2",
                metric(json!({"type": "Resource"})),
                vec!["spec.metrics[0].resource: Required value: must populate information for the given metric source"],
            ),
            (
                "v2",
                metric(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Value"}}})),
                vec!["spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization"],
            ),
            (
                "v2",
                metric(json!({"type": "Resource", "resource": {"name": "cpu",
                    "target": {"averageUtilization": 5, "averageValue": "1"}}})),
                vec![
                    "spec.metrics[0].resource.target.type: Required value: must specify a metric target type",
                    "spec.metrics[0].resource.target.type: Invalid value: \"\": must be either Utilization, Value, or AverageValue",
                    "spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization",
                ],
            ),
            (
                "v2",
                metric(json!({"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 5}},
                    "pods": {"metric": {"name": "m"}, "target": {"type": "AverageValue", "averageValue": "1"}}})),
                vec!["spec.metrics[0].pods: Forbidden: must populate the given metric source only"],
            ),
            (
                "v2",
                metric(json!({"type": "Pods", "pods": {"metric": {"name": "a/b"},
                    "target": {"type": "Bogus", "averageValue": "0"}}})),
                vec![
                    "spec.metrics[0].pods.metric.name: Invalid value: \"a/b\": may not contain '/'",
                    "spec.metrics[0].pods.target.type: Invalid value: \"Bogus\": must be either Utilization, Value, or AverageValue",
                    "spec.metrics[0].pods.target.averageValue: Invalid value: \"0\": must be positive",
                ],
            ),
            (
                "v2",
                metric(json!({"type": "Object", "object": {"metric": {"name": "m"}, "describedObject": {},
                    "target": {"type": "Value", "value": "-1"}}})),
                vec![
                    "spec.metrics[0].object.describedObject.kind: Required value",
                    "spec.metrics[0].object.describedObject.name: Required value",
                    "spec.metrics[0].object.target.value: Invalid value: \"-1\": must be positive",
                ],
            ),
            (
                "v2",
                metric(json!({"type": "External", "external": {"metric": {"name": "m"},
                    "target": {"type": "Value", "value": "1", "averageValue": "2"}}})),
                vec!["spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a per-pod target"],
            ),
            (
                "v2",
                metric(json!({"type": "ContainerResource", "containerResource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 10}}})),
                vec!["spec.metrics[0].containerResource.container: Required value: must specify a container"],
            ),
            (
                "v2",
                with("behavior", json!({"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Foo",
                    "policies": [{"type": "X", "value": 0, "periodSeconds": 0}]},
                    "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}})),
                vec![
                    "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                    "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Foo\": supported values: \"Disabled\", \"Max\", \"Min\"",
                    "spec.behavior.scaleUp.policies[0].type: Unsupported value: \"X\": supported values: \"Percent\", \"Pods\"",
                    "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
                    "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 0: must be greater than zero",
                    "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
                ],
            ),
            (
                "v2",
                with("behavior", json!({"scaleUp": {"policies": []}})),
                vec!["spec.behavior.scaleUp.policies: Required value: must specify at least one Policy"],
            ),
            (
                "v2",
                with("behavior", json!({"scaleUp": {"tolerance": "-1"}})),
                vec!["spec.behavior.scaleUp.tolerance: Invalid value: \"-1\": must be greater than or equal to 0"],
            ),
            (
                "v1",
                with("targetCPUUtilizationPercentage", json!(0)),
                vec!["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"],
            ),
            (
                "v1",
                with("minReplicas", json!(0)),
                vec![
                    "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                    "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
                ],
            ),
        ];
        for (version, spec, want) in rows {
            let mut obj = hpa(version, spec);
            apply_defaults(&mut obj);
            // Defaults fill a scaleUp/scaleDown that a row left out; the rows state the
            // messages of what they wrote.
            assert_eq!(messages(&obj), want, "{version} {}", obj["spec"]);
        }
    }
}
