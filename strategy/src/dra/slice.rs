//! ResourceSlices: taint defaulting, dropping the fields of features that are off by
//! default, and validation of the spec (driver, pool, node selection, devices, counters),
//! with the fields an update may not change.

use super::common::{self as c, has, items, s};
use super::gojson;
use crate::errors::{Bad, FieldErr};
use keel_api::jsonmap::JsonPointer;
use serde_json::{Map, Value};

const DEVICES_MAX: usize = 128;
/// Devices per slice when any uses taints, counters or list attributes.
const DEVICES_ADVANCED_MAX: usize = 64;
const COUNTER_SETS_MAX: usize = 8;
const COUNTERS_PER_SET_MAX: usize = 32;
const COUNTER_CONSUMPTIONS_MAX: usize = 2;
const ATTRIBUTES_AND_CAPACITIES_MAX: usize = 32;
const ATTRIBUTE_VALUES_MAX: usize = 48;
const ATTRIBUTE_VALUE_BYTES_MAX: usize = 64;
/// Longest map key printed whole in a path (`<domain>/<id>`), upstream's truncation bound.
const KEY_PRINT_MAX: usize = 63 + 1 + 32;
const NODE_FIELDS_MSG: &str =
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
const DEVICE_NODE_FIELDS_MSG: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";

/// Devices' taints get `timeAdded` (the request time) when they have none; the fields of
/// features off by default (list-type attributes, node-allocatable mappings) are dropped.
pub fn default_slice(obj: &mut Value, now: &str) {
    let Some(devices) = obj.at_mut("/spec/devices").and_then(Value::as_array_mut) else {
        return;
    };
    for d in devices.iter_mut().filter_map(Value::as_object_mut) {
        for t in crate::json::each_obj(d, "taints") {
            crate::json::default(t, "timeAdded", Value::from(now));
        }
    }
}

/// `spec.pool.generation` has no `omitempty`: Go prints 0.
pub fn default_pool_generation(obj: &mut Value) {
    if let Some(pool) = obj.at_mut("/spec/pool").and_then(Value::as_object_mut) {
        if !pool.contains_key("generation") {
            pool.insert("generation".into(), Value::from(0));
            super::claim::reorder(pool, &["name", "generation", "resourceSliceCount"]);
        }
    }
}

/// Upstream's `dropDisabledFields` on create and on update where the stored slice does not
/// use the feature (DRAListTypeAttributes, DRANodeAllocatableResources are off by default).
pub fn drop_disabled(obj: &mut Value, old: Option<&Value>) {
    let uses = |key: &str| {
        old.is_some_and(|o| {
            items(o.at("/spec/devices")).iter().any(|d| match key {
                "lists" => d
                    .get("attributes")
                    .and_then(Value::as_object)
                    .is_some_and(|m| {
                        m.values().any(|a| {
                            ["bools", "ints", "strings", "versions"]
                                .iter()
                                .any(|k| has(a, k))
                        })
                    }),
                _ => has(d, key),
            })
        })
    };
    let keep_lists = uses("lists");
    let keep_mappings = uses("nodeAllocatableResourceMappings");
    let Some(devices) = obj.at_mut("/spec/devices").and_then(Value::as_array_mut) else {
        return;
    };
    for d in devices.iter_mut().filter_map(Value::as_object_mut) {
        if !keep_mappings {
            d.remove("nodeAllocatableResourceMappings");
        }
        if !keep_lists {
            if let Some(attrs) = d.get_mut("attributes").and_then(Value::as_object_mut) {
                for a in attrs.values_mut().filter_map(Value::as_object_mut) {
                    for k in ["bools", "ints", "strings", "versions"] {
                        a.remove(k);
                    }
                }
            }
        }
    }
}

fn opt_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn immutable(path: &str, new: Bad) -> FieldErr {
    FieldErr::invalid(path, new, "field is immutable")
}

/// Validates a slice's spec; with `old`, also what an update may not change.
pub fn validate_slice_spec(spec: &Value, old: Option<&Value>) -> Vec<FieldErr> {
    let mut errs = c::driver_name(s(spec, "driver"), "spec.driver");
    let pool = spec.get("pool").unwrap_or(&Value::Null);
    errs.extend(c::pool_name(s(pool, "name"), "spec.pool.name"));
    let count = pool
        .get("resourceSliceCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if count <= 0 {
        errs.push(FieldErr::invalid(
            "spec.pool.resourceSliceCount",
            count,
            "must be greater than zero",
        ));
    }
    let generation = pool.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if generation < 0 {
        errs.push(FieldErr::invalid(
            "spec.pool.generation",
            generation,
            "must be greater than or equal to zero",
        ));
    }
    if let Some(old) = old {
        let old_pool = old.get("pool").unwrap_or(&Value::Null);
        if s(pool, "name") != s(old_pool, "name") {
            errs.push(immutable("spec.pool.name", Bad::from(s(pool, "name"))));
        }
        if s(spec, "driver") != s(old, "driver") {
            errs.push(immutable("spec.driver", Bad::from(s(spec, "driver"))));
        }
        if opt_str(spec, "nodeName") != opt_str(old, "nodeName") {
            errs.push(immutable(
                "spec.nodeName",
                Bad::Raw(gojson::value(spec.get("nodeName"))),
            ));
        }
    }
    errs.extend(node_selection(spec));
    if has(spec, "sharedCounters") && has(spec, "devices") {
        errs.push(FieldErr::invalid(
            "spec",
            "",
            "only one of `sharedCounters` or `devices` is allowed",
        ));
    }
    let devices = items(spec.get("devices"));
    let advanced = devices.iter().any(|d| {
        !items(d.get("taints")).is_empty() || !items(d.get("consumesCounters")).is_empty()
    });
    let max = if advanced {
        DEVICES_ADVANCED_MAX
    } else {
        DEVICES_MAX
    };
    let per_device = spec.get("perDeviceNodeSelection").and_then(Value::as_bool) == Some(true);
    let old_devices = old.map(|o| items(o.get("devices"))).unwrap_or(&[]);
    errs.extend(c::set(
        spec.get("devices"),
        Some(max),
        "spec.devices",
        |d, p| {
            let old_device = old_devices.iter().find(|o| s(o, "name") == s(d, "name"));
            device(d, old.map(|_| old_device), p, per_device)
        },
        |d| Bad::Str(s(d, "name").to_string()),
    ));
    errs.extend(c::set(
        spec.get("sharedCounters"),
        Some(COUNTER_SETS_MAX),
        "spec.sharedCounters",
        |set, p| {
            let mut errs = name_required(s(set, "name"), &format!("{p}.name"));
            errs.extend(counters(set.get("counters"), COUNTERS_PER_SET_MAX, p));
            errs
        },
        |set| Bad::Str(s(set, "name").to_string()),
    ));
    errs
}

fn name_required(name: &str, path: &str) -> Vec<FieldErr> {
    if name.is_empty() {
        vec![FieldErr::required(path, "")]
    } else {
        c::dns_label(name, path)
    }
}

/// The `counters` map of a counter set or a device's consumption.
fn counters(v: Option<&Value>, max: usize, path: &str) -> Vec<FieldErr> {
    let cp = format!("{path}.counters");
    let map = v.and_then(Value::as_object).filter(|m| !m.is_empty());
    let Some(map) = map else {
        return vec![FieldErr::required(&cp, "")];
    };
    if map.len() > max {
        return vec![c::too_many(&cp, map.len(), max)];
    }
    let mut errs = Vec::new();
    for key in sorted_keys(map) {
        errs.extend(c::dns_label(key, &cp));
    }
    errs
}

fn sorted_keys(m: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    keys
}

/// Exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`.
fn node_selection(spec: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let mut set = Vec::new();
    if let Some(name) = spec.get("nodeName").and_then(Value::as_str) {
        if name.is_empty() {
            errs.push(FieldErr::invalid(
                "spec.nodeName",
                name,
                "must be either unset or set to a non-empty string",
            ));
        } else {
            set.push("`nodeName`");
            errs.extend(c::node_name(name, "spec.nodeName"));
        }
    }
    if let Some(sel) = spec.get("nodeSelector").filter(|v| !v.is_null()) {
        set.push("`nodeSelector`");
        errs.extend(c::node_selector(sel, "spec.nodeSelector"));
        let terms = sel.get("nodeSelectorTerms").filter(|v| !v.is_null());
        if items(terms).len() != 1 {
            let shown = Bad::Raw(gojson::node_terms(terms));
            errs.push(FieldErr::invalid(
                "spec.nodeSelector.nodeSelectorTerms",
                shown,
                "must have exactly one node selector term",
            ));
        }
    }
    for (key, word) in [
        ("allNodes", "`allNodes`"),
        ("perDeviceNodeSelection", "`perDeviceNodeSelection`"),
    ] {
        match spec.get(key).and_then(Value::as_bool) {
            Some(true) => set.push(word),
            Some(false) => errs.push(FieldErr::invalid(
                &format!("spec.{key}"),
                false,
                "must be either unset or set to true",
            )),
            None => {}
        }
    }
    match set.len() {
        0 => errs.push(FieldErr::required("spec", NODE_FIELDS_MSG)),
        1 => {}
        _ => errs.push(FieldErr::invalid(
            "spec",
            format!("{{{}}}", set.join(", ")),
            &format!("{NODE_FIELDS_MSG}, but multiple fields are set"),
        )),
    }
    errs
}

/// A map key in a path: keys longer than `max` are shortened in the middle.
fn key_in_path(key: &str, max: usize) -> String {
    let max = max.max(16);
    if key.len() <= max {
        return key.to_string();
    }
    let remaining = max - 3;
    let head = remaining.div_ceil(2);
    let tail = remaining / 2;
    match (key.get(..head), key.get(key.len() - tail..)) {
        (Some(h), Some(t)) => format!("{h}...{t}"),
        _ => key.to_string(),
    }
}

fn device(d: &Value, old: Option<Option<&Value>>, path: &str, per_device: bool) -> Vec<FieldErr> {
    let mut errs = c::dns_label(s(d, "name"), &format!("{path}.name"));
    let attrs = d.get("attributes").and_then(Value::as_object);
    let caps = d.get("capacity").and_then(Value::as_object);
    let total = attrs.map_or(0, Map::len) + caps.map_or(0, Map::len);
    if total > ATTRIBUTES_AND_CAPACITIES_MAX {
        errs.push(FieldErr::invalid(
            path,
            total as i64,
            &format!("the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}"),
        ));
    }
    let values: usize = attrs.map_or(0, |m| m.values().map(attribute_values).sum());
    if values > ATTRIBUTE_VALUES_MAX {
        errs.push(FieldErr::invalid(
            path,
            values as i64,
            &format!("the total number of attribute values must not exceed {ATTRIBUTE_VALUES_MAX}"),
        ));
    }
    let ap = format!("{path}.attributes");
    if let Some(m) = attrs {
        for key in sorted_keys(m) {
            errs.extend(c::qualified_name(key, &ap));
            let kp = format!("{ap}[{}]", key_in_path(key, KEY_PRINT_MAX));
            errs.extend(attribute(&m[key.as_str()], &kp));
        }
    }
    let multi = d.get("allowMultipleAllocations").and_then(Value::as_bool) == Some(true);
    let cp = format!("{path}.capacity");
    if let Some(m) = caps {
        for key in sorted_keys(m) {
            errs.extend(c::qualified_name(key, &cp));
            let cap = &m[key.as_str()];
            let pp = format!("{cp}[{}].requestPolicy", key_in_path(key, KEY_PRINT_MAX));
            match cap.get("requestPolicy").filter(|p| !p.is_null()) {
                Some(policy) if multi => {
                    errs.extend(super::policy::request_policy(cap, policy, &pp))
                }
                Some(_) => errs.push(FieldErr::forbidden(
                    &pp,
                    "allowMultipleAllocations must be true",
                )),
                None => {}
            }
        }
    }
    let taints_changed = match old {
        Some(Some(o)) => o.get("taints") != d.get("taints"),
        _ => true,
    };
    if taints_changed {
        errs.extend(c::list(
            d.get("taints"),
            Some(c::DEVICE_TAINTS_MAX),
            &format!("{path}.taints"),
            |t, p| c::device_taint(t, None, p),
        ));
    }
    errs.extend(c::set(
        d.get("consumesCounters"),
        Some(COUNTER_CONSUMPTIONS_MAX),
        &format!("{path}.consumesCounters"),
        |k, p| {
            let mut errs = name_required(s(k, "counterSet"), &format!("{p}.counterSet"));
            errs.extend(counters(k.get("counters"), COUNTERS_PER_SET_MAX, p));
            errs
        },
        |k| Bad::Str(s(k, "counterSet").to_string()),
    ));
    errs.extend(device_node_selection(d, path, per_device));
    errs.extend(c::binding_parameters(d, path));
    errs
}

fn attribute_values(a: &Value) -> usize {
    let lists: usize = ["bools", "ints", "strings", "versions"]
        .iter()
        .map(|k| items(a.get(*k)).len())
        .sum();
    if lists == 0 {
        1
    } else {
        lists
    }
}

fn attribute(a: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let mut n = 0;
    for key in ["bool", "int"] {
        if has(a, key) {
            n += 1;
        }
    }
    if let Some(v) = a.get("string").filter(|v| !v.is_null()) {
        n += 1;
        errs.extend(string_value(
            v.as_str().unwrap_or(""),
            &format!("{path}.string"),
        ));
    }
    if let Some(v) = a.get("version").filter(|v| !v.is_null()) {
        n += 1;
        errs.extend(version_value(
            v.as_str().unwrap_or(""),
            &format!("{path}.version"),
        ));
    }
    for key in ["bools", "ints", "strings", "versions"] {
        let Some(list) = a.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        n += 1;
        let lp = format!("{path}.{key}");
        let all = items(Some(list));
        if all.is_empty() {
            errs.push(FieldErr::invalid(
                &lp,
                Bad::Raw("[]".into()),
                "must not be empty if specified",
            ));
        }
        for (i, item) in all.iter().enumerate() {
            let ip = format!("{lp}[{i}]");
            let text = item.as_str().unwrap_or("");
            match key {
                "strings" => errs.extend(string_value(text, &ip)),
                "versions" => errs.extend(version_value(text, &ip)),
                _ => {}
            }
        }
    }
    match n {
        0 => errs.push(FieldErr::invalid(
            path,
            "",
            "exactly one value must be specified",
        )),
        1 => {}
        _ => errs.push(FieldErr::invalid(
            path,
            Bad::Raw(gojson::attribute(a)),
            "exactly one value must be specified",
        )),
    }
    errs
}

fn string_value(v: &str, path: &str) -> Vec<FieldErr> {
    if v.len() > ATTRIBUTE_VALUE_BYTES_MAX {
        vec![c::too_long(path, ATTRIBUTE_VALUE_BYTES_MAX)]
    } else {
        Vec::new()
    }
}

fn version_value(v: &str, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if !is_semver(v) {
        errs.push(FieldErr::invalid(
            path,
            v,
            "must be a string compatible with semver.org spec 2.0.0",
        ));
    }
    errs.extend(string_value(v, path));
    errs
}

/// semver.org 2.0.0: `MAJOR.MINOR.PATCH[-pre.release][+build.meta]`.
fn is_semver(v: &str) -> bool {
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let numeric = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    let ident_chars =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 || !parts.iter().all(|p| numeric(p)) {
        return false;
    }
    if let Some(pre) = pre {
        let ok = pre
            .split('.')
            .all(|id| ident_chars(id) && (!id.bytes().all(|b| b.is_ascii_digit()) || numeric(id)));
        if !ok {
            return false;
        }
    }
    build.is_none_or(|b| b.split('.').all(ident_chars))
}

fn device_node_selection(d: &Value, path: &str, per_device: bool) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if !per_device {
        if has(d, "nodeName") || has(d, "nodeSelector") || has(d, "allNodes") {
            errs.push(FieldErr::invalid(path, Bad::Raw("null".into()), "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"));
        }
        return errs;
    }
    let mut set = Vec::new();
    if let Some(name) = d.get("nodeName").and_then(Value::as_str) {
        if name.is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{path}.nodeName"),
                name,
                "must not be empty",
            ));
        } else {
            set.push("`nodeName`");
            errs.extend(c::node_name(name, &format!("{path}.nodeName")));
        }
    }
    if let Some(sel) = d.get("nodeSelector").filter(|v| !v.is_null()) {
        set.push("`nodeSelector`");
        errs.extend(c::node_selector(sel, &format!("{path}.nodeSelector")));
    }
    match d.get("allNodes").and_then(Value::as_bool) {
        Some(true) => set.push("`allNodes`"),
        Some(false) => errs.push(FieldErr::invalid(
            &format!("{path}.allNodes"),
            false,
            "must be either unset or set to true",
        )),
        None => {}
    }
    match set.len() {
        0 => errs.push(FieldErr::required(path, DEVICE_NODE_FIELDS_MSG)),
        1 => {}
        _ => errs.push(FieldErr::invalid(
            path,
            format!("{{{}}}", set.join(", ")),
            DEVICE_NODE_FIELDS_MSG,
        )),
    }
    errs
}

#[cfg(test)]
pub(super) fn semver(v: &str) -> bool {
    is_semver(v)
}
