//! autoscaling/v2 <-> autoscaling/v1 HorizontalPodAutoscalers (stored as v2).
//!
//! v1 has one metric, `targetCPUUtilizationPercentage`: the first v2 `Resource` metric named
//! `cpu`, when its target is a utilization. Everything else v2 holds travels through v1 in
//! annotations, so that a v2 object read as v1, changed and written back as v1 keeps it:
//! - `autoscaling.alpha.kubernetes.io/metrics`: the other metrics (all but the `cpu`
//!   utilization ones), in v1's metric layout (`metricName`, `targetAverageValue`, ...);
//! - `autoscaling.alpha.kubernetes.io/behavior`: `spec.behavior`, encoded as upstream's
//!   *internal* type (Go field names, unset fields `null`);
//! - `autoscaling.alpha.kubernetes.io/current-metrics`: every `status.currentMetrics` entry,
//!   v1 layout (v1's `currentCPUUtilizationPercentage` is the last `cpu` one's utilization);
//! - `autoscaling.alpha.kubernetes.io/conditions`: `status.conditions`.
//!
//! Back to v2, the annotations are decoded and removed: the annotated metrics come first and
//! the CPU target last; no metric at all becomes a CPU utilization target of 80 %. The four
//! annotations are also dropped from any v2 object converted (a v2 write never stores them).
//!
//! Defaulting: upstream's autoscaling/v1 defaults only `minReplicas`; it does not default
//! `targetCPUUtilizationPercentage` (the 80 % comes from this conversion, and only when no
//! metric is annotated either). A v1 object converted here should get the v2 defaults
//! afterwards (upstream applies them when it decodes the stored v2 object: a `behavior`
//! carried in the annotation gets its missing `selectPolicy`/`policies`).
//!
//! Quantities are carried as given (upstream canonicalizes them when decoding, e.g. a
//! tolerance `0.05` reads back as `50m`).

use super::gojson::{self, marshal};
use serde_json::{json, Map, Value};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const ROUND_TRIP: [&str; 4] = [METRICS, BEHAVIOR, CURRENT_METRICS, CONDITIONS];

/// The CPU utilization target a v1 object without any metric stands for, percent.
const CPU_UTILIZATION_DEFAULT: i64 = 80;

const V1: &str = "autoscaling/v1";
const V2: &str = "autoscaling/v2";

/// The metric source members, in Go's field order (v1 and v2 alike).
const SOURCES: [&str; 5] = [
    "object",
    "pods",
    "resource",
    "containerResource",
    "external",
];

pub(super) fn convert(obj: Value, from: &str, to: &str) -> Result<Value, String> {
    match (from, to) {
        (V2, V1) => Ok(to_v1(obj)),
        (V1, V2) => to_v2(obj),
        _ => Err(format!(
            "no conversion of horizontalpodautoscalers.autoscaling from {from:?} to {to:?}"
        )),
    }
}

// ---- shared helpers -------------------------------------------------------------------

fn obj_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `v[key]` unless absent or null.
fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// Like [`get`], matching the key as Go's decoder does: exact, else ignoring ASCII case.
fn get_ci<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    let map = v.as_object()?;
    map.get(key)
        .or_else(|| {
            map.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, x)| x)
        })
        .filter(|x| !x.is_null())
}

fn text(v: Option<&Value>) -> Value {
    Value::String(v.and_then(Value::as_str).unwrap_or("").into())
}

/// A quantity member: its text (Go accepts a JSON number too).
fn quantity(v: Option<&Value>) -> Option<Value> {
    match v? {
        Value::String(s) => Some(Value::String(s.clone())),
        Value::Number(n) => Some(Value::String(n.to_string())),
        _ => None,
    }
}

/// A non-pointer quantity: zero prints `"0"`.
fn quantity_or_zero(v: Option<&Value>) -> Value {
    quantity(v).unwrap_or_else(|| json!("0"))
}

fn put(out: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        out.insert(key.into(), v);
    }
}

fn int(v: Option<&Value>) -> Option<Value> {
    v.filter(|x| x.is_i64() || x.is_u64()).cloned()
}

/// A `CrossVersionObjectReference` (`kind`, `name`, `apiVersion` when set).
fn reference(v: Option<&Value>, lookup: for<'a> fn(&'a Value, &str) -> Option<&'a Value>) -> Value {
    let v = v.unwrap_or(&Value::Null);
    let mut out = Map::new();
    out.insert("kind".into(), text(lookup(v, "kind")));
    out.insert("name".into(), text(lookup(v, "name")));
    if let Some(av) = lookup(v, "apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        out.insert("apiVersion".into(), json!(av));
    }
    Value::Object(out)
}

fn annotations_mut(obj: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    obj.get_mut("metadata")?
        .as_object_mut()?
        .get_mut("annotations")?
        .as_object_mut()
}

/// Removes the round-trip annotations; an annotation map left empty goes too (Go omits it).
fn drop_round_trip(obj: &mut Map<String, Value>) {
    let Some(ann) = annotations_mut(obj) else {
        return;
    };
    if !ROUND_TRIP.iter().any(|k| ann.contains_key(*k)) {
        return;
    }
    for k in ROUND_TRIP {
        ann.remove(k);
    }
    if ann.is_empty() {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("annotations");
        }
    }
}

fn is_cpu_resource(m: &Value) -> Option<&Value> {
    (get(m, "type").and_then(Value::as_str) == Some("Resource"))
        .then(|| get(m, "resource"))
        .flatten()
        .filter(|r| get(r, "name").and_then(Value::as_str) == Some("cpu"))
}

// ---- v2 -> v1 -------------------------------------------------------------------------

fn to_v1(obj: Value) -> Value {
    let mut inp = obj_map(obj);
    drop_round_trip(&mut inp);
    let spec = inp.remove("spec").unwrap_or(Value::Null);
    let status = inp.remove("status").unwrap_or(Value::Null);
    let metrics = get(&spec, "metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current = get(&status, "currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let conditions = get(&status, "conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();

    let mut notes: Vec<(&str, String)> = Vec::new();
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| is_cpu_resource(m).is_none_or(|r| utilization_target(r).is_none()))
        .map(metric_spec_to_v1)
        .collect();
    if !others.is_empty() {
        notes.push((METRICS, marshal(&Value::Array(others))));
    }
    if !current.is_empty() {
        let v1: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
        notes.push((CURRENT_METRICS, marshal(&Value::Array(v1))));
    }
    if !conditions.is_empty() {
        let v1: Vec<Value> = conditions.iter().map(condition).collect();
        notes.push((CONDITIONS, marshal(&Value::Array(v1))));
    }
    if let Some(behavior) = get(&spec, "behavior") {
        notes.push((BEHAVIOR, behavior_internal(behavior)));
    }

    let mut out = Map::new();
    out.insert(
        "kind".into(),
        inp.remove("kind")
            .unwrap_or(json!("HorizontalPodAutoscaler")),
    );
    out.insert("apiVersion".into(), json!(V1));
    let mut meta = obj_map(inp.remove("metadata").unwrap_or(Value::Null));
    if !notes.is_empty() {
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !ann.is_object() {
            *ann = Value::Object(Map::new());
        }
        let ann = ann.as_object_mut().expect("made an object above");
        for (k, v) in notes {
            ann.insert(k.into(), Value::String(v));
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), spec_to_v1(&spec, &metrics));
    out.insert("status".into(), status_to_v1(&status, &current));
    Value::Object(out)
}

/// A v2 resource source's utilization target, if its target has one.
fn utilization_target(r: &Value) -> Option<&Value> {
    get(r, "target").and_then(|t| get(t, "averageUtilization"))
}

fn spec_to_v1(spec: &Value, metrics: &[Value]) -> Value {
    let mut out = Map::new();
    out.insert(
        "scaleTargetRef".into(),
        reference(get(spec, "scaleTargetRef"), get),
    );
    put(&mut out, "minReplicas", int(get(spec, "minReplicas")));
    out.insert(
        "maxReplicas".into(),
        int(get(spec, "maxReplicas")).unwrap_or(json!(0)),
    );
    // The first cpu resource metric decides, utilization or not.
    let cpu = metrics.iter().find_map(is_cpu_resource);
    put(
        &mut out,
        "targetCPUUtilizationPercentage",
        cpu.and_then(utilization_target).cloned(),
    );
    Value::Object(out)
}

fn status_to_v1(status: &Value, current: &[Value]) -> Value {
    let mut out = Map::new();
    put(
        &mut out,
        "observedGeneration",
        int(get(status, "observedGeneration")),
    );
    put(
        &mut out,
        "lastScaleTime",
        get(status, "lastScaleTime").cloned(),
    );
    out.insert(
        "currentReplicas".into(),
        int(get(status, "currentReplicas")).unwrap_or(json!(0)),
    );
    out.insert(
        "desiredReplicas".into(),
        int(get(status, "desiredReplicas")).unwrap_or(json!(0)),
    );
    // Every cpu resource status with a utilization overwrites: the last one wins.
    let cpu = current
        .iter()
        .filter_map(is_cpu_resource)
        .filter_map(|r| get(r, "current").and_then(|c| get(c, "averageUtilization")))
        .next_back();
    put(&mut out, "currentCPUUtilizationPercentage", cpu.cloned());
    Value::Object(out)
}

/// A v2 `MetricSpec` in v1's layout (the annotation's), Go's member order.
fn metric_spec_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), text(get(m, "type")));
    for source in SOURCES {
        let Some(s) = get(m, source) else { continue };
        let target = get(s, "target").unwrap_or(&Value::Null);
        let metric = get(s, "metric").unwrap_or(&Value::Null);
        let mut v = Map::new();
        match source {
            "object" => {
                v.insert("target".into(), reference(get(s, "describedObject"), get));
                v.insert("metricName".into(), text(get(metric, "name")));
                v.insert("targetValue".into(), quantity_or_zero(get(target, "value")));
                put(
                    &mut v,
                    "selector",
                    get(metric, "selector").map(gojson::selector),
                );
                put(
                    &mut v,
                    "averageValue",
                    quantity(get(target, "averageValue")),
                );
            }
            "pods" => {
                v.insert("metricName".into(), text(get(metric, "name")));
                v.insert(
                    "targetAverageValue".into(),
                    quantity_or_zero(get(target, "averageValue")),
                );
                put(
                    &mut v,
                    "selector",
                    get(metric, "selector").map(gojson::selector),
                );
            }
            "external" => {
                v.insert("metricName".into(), text(get(metric, "name")));
                put(
                    &mut v,
                    "metricSelector",
                    get(metric, "selector").map(gojson::selector),
                );
                put(&mut v, "targetValue", quantity(get(target, "value")));
                put(
                    &mut v,
                    "targetAverageValue",
                    quantity(get(target, "averageValue")),
                );
            }
            _ => {
                v.insert("name".into(), text(get(s, "name")));
                put(
                    &mut v,
                    "targetAverageUtilization",
                    int(get(target, "averageUtilization")),
                );
                put(
                    &mut v,
                    "targetAverageValue",
                    quantity(get(target, "averageValue")),
                );
                if source == "containerResource" {
                    v.insert("container".into(), text(get(s, "container")));
                }
            }
        }
        out.insert(source.into(), Value::Object(v));
    }
    Value::Object(out)
}

/// A v2 `MetricStatus` in v1's layout, Go's member order.
fn metric_status_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), text(get(m, "type")));
    for source in SOURCES {
        let Some(s) = get(m, source) else { continue };
        let current = get(s, "current").unwrap_or(&Value::Null);
        let metric = get(s, "metric").unwrap_or(&Value::Null);
        let mut v = Map::new();
        match source {
            "object" => {
                v.insert("target".into(), reference(get(s, "describedObject"), get));
                v.insert("metricName".into(), text(get(metric, "name")));
                v.insert(
                    "currentValue".into(),
                    quantity_or_zero(get(current, "value")),
                );
                put(
                    &mut v,
                    "selector",
                    get(metric, "selector").map(gojson::selector),
                );
                put(
                    &mut v,
                    "averageValue",
                    quantity(get(current, "averageValue")),
                );
            }
            "pods" => {
                v.insert("metricName".into(), text(get(metric, "name")));
                v.insert(
                    "currentAverageValue".into(),
                    quantity_or_zero(get(current, "averageValue")),
                );
                put(
                    &mut v,
                    "selector",
                    get(metric, "selector").map(gojson::selector),
                );
            }
            "external" => {
                v.insert("metricName".into(), text(get(metric, "name")));
                put(
                    &mut v,
                    "metricSelector",
                    get(metric, "selector").map(gojson::selector),
                );
                v.insert(
                    "currentValue".into(),
                    quantity_or_zero(get(current, "value")),
                );
                put(
                    &mut v,
                    "currentAverageValue",
                    quantity(get(current, "averageValue")),
                );
            }
            _ => {
                v.insert("name".into(), text(get(s, "name")));
                put(
                    &mut v,
                    "currentAverageUtilization",
                    int(get(current, "averageUtilization")),
                );
                v.insert(
                    "currentAverageValue".into(),
                    quantity_or_zero(get(current, "averageValue")),
                );
                if source == "containerResource" {
                    v.insert("container".into(), text(get(s, "container")));
                }
            }
        }
        out.insert(source.into(), Value::Object(v));
    }
    Value::Object(out)
}

/// A condition in Go's order (the same layout in v1 and v2): an unset transition time is
/// `null`, empty reason and message are left out.
fn condition(c: &Value) -> Value {
    let lookup = |k: &str| get_ci(c, k);
    let mut out = Map::new();
    out.insert("type".into(), text(lookup("type")));
    out.insert("status".into(), text(lookup("status")));
    out.insert(
        "lastTransitionTime".into(),
        lookup("lastTransitionTime").cloned().unwrap_or(Value::Null),
    );
    for k in ["reason", "message"] {
        if let Some(s) = lookup(k).and_then(Value::as_str).filter(|s| !s.is_empty()) {
            out.insert(k.into(), json!(s));
        }
    }
    Value::Object(out)
}

/// `spec.behavior` as Go marshals upstream's internal type: Go field names, every field
/// printed, unset ones `null`.
fn behavior_internal(b: &Value) -> String {
    let mut out = Map::new();
    for (go, member) in [("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")] {
        let rules = get(b, member).map(|r| {
            let policies = get(r, "policies").and_then(Value::as_array).map(|ps| {
                let ps = ps.iter().map(|p| {
                    json!({"Type": text(get(p, "type")),
                           "Value": int(get(p, "value")).unwrap_or(json!(0)),
                           "PeriodSeconds": int(get(p, "periodSeconds")).unwrap_or(json!(0))})
                });
                Value::Array(ps.collect())
            });
            json!({
                "StabilizationWindowSeconds": int(get(r, "stabilizationWindowSeconds")),
                "SelectPolicy": get(r, "selectPolicy").cloned(),
                "Policies": policies,
                "Tolerance": quantity(get(r, "tolerance")),
            })
        });
        out.insert(go.into(), rules.unwrap_or(Value::Null));
    }
    marshal(&Value::Object(out))
}

// ---- v1 -> v2 -------------------------------------------------------------------------

fn to_v2(obj: Value) -> Result<Value, String> {
    let mut inp = obj_map(obj);
    let spec = inp.remove("spec").unwrap_or(Value::Null);
    let status = inp.remove("status").unwrap_or(Value::Null);
    let ann = inp
        .get("metadata")
        .and_then(|m| get(m, "annotations"))
        .cloned()
        .unwrap_or(Value::Null);
    let note = |k: &str| get(&ann, k).and_then(Value::as_str).map(str::to_string);

    let mut metrics = match note(METRICS) {
        Some(enc) => decode_list(&enc, METRICS)?
            .iter()
            .map(metric_spec_to_v2)
            .collect(),
        None => Vec::new(),
    };
    if let Some(cpu) = int(get(&spec, "targetCPUUtilizationPercentage")) {
        metrics.push(cpu_target(cpu));
    }
    if metrics.is_empty() {
        metrics.push(cpu_target(json!(CPU_UTILIZATION_DEFAULT)));
    }
    let behavior = note(BEHAVIOR).and_then(|enc| behavior_from_internal(&enc));

    let mut current = match int(get(&status, "currentCPUUtilizationPercentage")) {
        Some(u) => vec![json!({"type": "Resource",
                               "resource": {"name": "cpu", "current": {"averageUtilization": u}}})],
        None => Vec::new(),
    };
    if let Some(enc) = note(CURRENT_METRICS) {
        current = decode_list(&enc, CURRENT_METRICS)?
            .iter()
            .map(metric_status_to_v2)
            .collect();
    }
    let conditions = match note(CONDITIONS) {
        Some(enc) => Some(
            decode_list(&enc, CONDITIONS)?
                .iter()
                .map(condition)
                .collect(),
        ),
        None => None,
    };

    drop_round_trip(&mut inp);
    let mut out = Map::new();
    out.insert(
        "kind".into(),
        inp.remove("kind")
            .unwrap_or(json!("HorizontalPodAutoscaler")),
    );
    out.insert("apiVersion".into(), json!(V2));
    out.insert(
        "metadata".into(),
        inp.remove("metadata").unwrap_or_else(|| json!({})),
    );

    let mut s = Map::new();
    s.insert(
        "scaleTargetRef".into(),
        reference(get(&spec, "scaleTargetRef"), get),
    );
    put(&mut s, "minReplicas", int(get(&spec, "minReplicas")));
    s.insert(
        "maxReplicas".into(),
        int(get(&spec, "maxReplicas")).unwrap_or(json!(0)),
    );
    s.insert("metrics".into(), Value::Array(metrics));
    put(&mut s, "behavior", behavior);
    out.insert("spec".into(), Value::Object(s));

    let mut st = Map::new();
    put(
        &mut st,
        "observedGeneration",
        int(get(&status, "observedGeneration")),
    );
    put(
        &mut st,
        "lastScaleTime",
        get(&status, "lastScaleTime").cloned(),
    );
    put(
        &mut st,
        "currentReplicas",
        int(get(&status, "currentReplicas")).filter(|n| n.as_i64() != Some(0)),
    );
    st.insert(
        "desiredReplicas".into(),
        int(get(&status, "desiredReplicas")).unwrap_or(json!(0)),
    );
    let current = if current.is_empty() {
        Value::Null
    } else {
        Value::Array(current)
    };
    st.insert("currentMetrics".into(), current);
    put(
        &mut st,
        "conditions",
        conditions
            .filter(|c: &Vec<Value>| !c.is_empty())
            .map(Value::Array),
    );
    out.insert("status".into(), Value::Object(st));
    Ok(Value::Object(out))
}

/// An annotation holding a JSON list; upstream fails the conversion when it does not decode.
fn decode_list(enc: &str, name: &str) -> Result<Vec<Value>, String> {
    match serde_json::from_str::<Value>(enc) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(Value::Null) => Ok(Vec::new()),
        _ => Err(format!("annotation {name} does not decode as a list")),
    }
}

fn cpu_target(utilization: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

fn identifier(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), text(name));
    put(&mut out, "selector", selector.cloned());
    Value::Object(out)
}

/// A v2 `MetricTarget`/`MetricValueStatus`: `type` (targets only) then the values set.
fn values(
    kind: Option<&str>,
    value: Option<Value>,
    average: Option<Value>,
    util: Option<Value>,
) -> Value {
    let mut out = Map::new();
    if let Some(kind) = kind {
        out.insert("type".into(), json!(kind));
    }
    put(&mut out, "value", value);
    put(&mut out, "averageValue", average);
    put(&mut out, "averageUtilization", util);
    Value::Object(out)
}

/// A v1 metric (the annotation's layout) in v2's.
fn metric_spec_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), text(get_ci(m, "type")));
    for source in SOURCES {
        let Some(s) = get_ci(m, source) else { continue };
        let f = |k: &str| get_ci(s, k);
        let mut v = Map::new();
        match source {
            "object" => {
                let average = quantity(f("averageValue"));
                let kind = if average.is_some() {
                    "AverageValue"
                } else {
                    "Value"
                };
                v.insert("describedObject".into(), reference(f("target"), get_ci));
                let value = Some(quantity_or_zero(f("targetValue")));
                v.insert("target".into(), values(Some(kind), value, average, None));
                v.insert("metric".into(), identifier(f("metricName"), f("selector")));
            }
            "pods" => {
                v.insert("metric".into(), identifier(f("metricName"), f("selector")));
                let average = Some(quantity_or_zero(f("targetAverageValue")));
                v.insert(
                    "target".into(),
                    values(Some("AverageValue"), None, average, None),
                );
            }
            "external" => {
                v.insert(
                    "metric".into(),
                    identifier(f("metricName"), f("metricSelector")),
                );
                let value = quantity(f("targetValue"));
                let kind = if value.is_some() {
                    "Value"
                } else {
                    "AverageValue"
                };
                let average = quantity(f("targetAverageValue"));
                v.insert("target".into(), values(Some(kind), value, average, None));
            }
            _ => {
                v.insert("name".into(), text(f("name")));
                let util = int(f("targetAverageUtilization"));
                let kind = if util.is_some() {
                    "Utilization"
                } else {
                    "AverageValue"
                };
                let average = quantity(f("targetAverageValue"));
                v.insert("target".into(), values(Some(kind), None, average, util));
                if source == "containerResource" {
                    v.insert("container".into(), text(f("container")));
                }
            }
        }
        out.insert(source.into(), Value::Object(v));
    }
    Value::Object(out)
}

/// A v1 metric status (the annotation's layout) in v2's.
fn metric_status_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), text(get_ci(m, "type")));
    for source in SOURCES {
        let Some(s) = get_ci(m, source) else { continue };
        let f = |k: &str| get_ci(s, k);
        let mut v = Map::new();
        match source {
            "object" => {
                v.insert("metric".into(), identifier(f("metricName"), f("selector")));
                let value = Some(quantity_or_zero(f("currentValue")));
                let average = quantity(f("averageValue"));
                v.insert("current".into(), values(None, value, average, None));
                v.insert("describedObject".into(), reference(f("target"), get_ci));
            }
            "pods" => {
                v.insert("metric".into(), identifier(f("metricName"), f("selector")));
                let average = Some(quantity_or_zero(f("currentAverageValue")));
                v.insert("current".into(), values(None, None, average, None));
            }
            "external" => {
                v.insert(
                    "metric".into(),
                    identifier(f("metricName"), f("metricSelector")),
                );
                let value = Some(quantity_or_zero(f("currentValue")));
                let average = quantity(f("currentAverageValue"));
                v.insert("current".into(), values(None, value, average, None));
            }
            _ => {
                v.insert("name".into(), text(f("name")));
                let average = Some(quantity_or_zero(f("currentAverageValue")));
                let util = int(f("currentAverageUtilization"));
                v.insert("current".into(), values(None, None, average, util));
                if source == "containerResource" {
                    v.insert("container".into(), text(f("container")));
                }
            }
        }
        out.insert(source.into(), Value::Object(v));
    }
    Value::Object(out)
}

/// The behavior annotation (internal layout, Go names matched without case) in v2's layout;
/// `None` when it does not decode or sets neither direction: upstream then ignores it.
fn behavior_from_internal(enc: &str) -> Option<Value> {
    let b: Value = serde_json::from_str(enc).ok()?;
    if !b.is_object() {
        return None;
    }
    let mut out = Map::new();
    for member in ["scaleUp", "scaleDown"] {
        if let Some(r) = get_ci(&b, member) {
            out.insert(member.into(), rules_from_internal(r)?);
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// One direction's rules; `None` when a member has a type Go's decoder refuses.
fn rules_from_internal(r: &Value) -> Option<Value> {
    r.as_object()?;
    let mut out = Map::new();
    if let Some(w) = get_ci(r, "stabilizationWindowSeconds") {
        out.insert("stabilizationWindowSeconds".into(), int(Some(w))?);
    }
    if let Some(p) = get_ci(r, "selectPolicy") {
        out.insert("selectPolicy".into(), json!(p.as_str()?));
    }
    if let Some(ps) = get_ci(r, "policies") {
        let ps = ps.as_array()?.iter().map(|p| {
            let num = |k: &str| match get_ci(p, k) {
                None => Some(json!(0)),
                some => int(some),
            };
            let kind = match get_ci(p, "type") {
                None => "",
                Some(t) => t.as_str()?,
            };
            Some(json!({"type": kind, "value": num("value")?, "periodSeconds": num("periodSeconds")?}))
        });
        let ps: Option<Vec<Value>> = ps.collect();
        out.insert("policies".into(), Value::Array(ps?));
    }
    if let Some(t) = get_ci(r, "tolerance") {
        out.insert("tolerance".into(), quantity(Some(t))?);
    }
    Some(Value::Object(out))
}
