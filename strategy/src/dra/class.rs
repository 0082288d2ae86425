//! DeviceClasses (selectors, config, extended resource name) and DeviceTaintRules (device
//! selector, taint, `timeAdded`, status conditions).

use super::common as c;
use crate::errors::FieldErr;
use keel_api::jsonmap::JsonPointer;
use serde_json::Value;

/// Validates a class's spec; on update (`old`), unchanged selectors and config count as
/// stored (no size bound on stored parameters).
pub fn validate_class_spec(spec: &Value, old: Option<&Value>) -> Vec<FieldErr> {
    let unchanged = |key: &str| old.is_some_and(|o| o.get(key) == spec.get(key));
    let mut errs = c::selectors(spec.get("selectors"), "spec.selectors");
    let stored = unchanged("config");
    errs.extend(c::list(
        spec.get("config"),
        Some(c::CONFIG_MAX),
        "spec.config",
        |k, p| c::device_configuration(k, p, stored),
    ));
    if let Some(name) = spec.get("extendedResourceName").and_then(Value::as_str) {
        if !is_extended_resource_name(name) {
            errs.push(FieldErr::invalid(
                "spec.extendedResourceName",
                name,
                "must be a valid extended resource name",
            ));
        }
    }
    errs
}

/// core/v1 `IsExtendedResourceName`: a domain-prefixed name outside `kubernetes.io`, that
/// stays a qualified name behind the quota prefix `requests.`.
fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return false;
    }
    keel_api::names::is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// DeviceTaintRules of v1alpha3/v1beta2: the taint gets the request time as `timeAdded`.
pub fn default_taint_rule(obj: &mut Value, now: &str) {
    if let Some(taint) = obj.at_mut("/spec/taint").and_then(Value::as_object_mut) {
        crate::json::default(taint, "timeAdded", Value::from(now));
    }
}

/// An update that changes the effect but not `timeAdded` moves `timeAdded` to now.
pub fn taint_rule_time_added(new: &mut Value, old: &Value, now: &str) {
    let effect = |v: &Value| v.at("/spec/taint/effect").cloned();
    let added = |v: &Value| v.at("/spec/taint/timeAdded").cloned();
    if effect(new) != effect(old) && added(new) == added(old) {
        if let Some(t) = new.at_mut("/spec/taint").and_then(Value::as_object_mut) {
            t.insert("timeAdded".into(), Value::from(now));
        }
    }
}

/// A rule's device selector and taint; on update the effect is checked only when it changed.
pub fn validate_taint_rule_spec(spec: &Value, old: Option<&Value>) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if let Some(sel) = spec.get("deviceSelector").filter(|v| !v.is_null()) {
        let p = "spec.deviceSelector";
        if let Some(d) = sel.get("driver").and_then(Value::as_str) {
            errs.extend(c::driver_name(d, &format!("{p}.driver")));
        }
        if let Some(pool) = sel.get("pool").and_then(Value::as_str) {
            errs.extend(c::pool_name(pool, &format!("{p}.pool")));
        }
        if let Some(dev) = sel.get("device").and_then(Value::as_str) {
            errs.extend(c::dns_label(dev, &format!("{p}.device")));
        }
    }
    let taint = spec.get("taint").unwrap_or(&Value::Null);
    let old_taint = old.map(|o| o.get("taint").unwrap_or(&Value::Null));
    errs.extend(c::device_taint(taint, old_taint, "spec.taint"));
    errs
}

/// A rule's status write: valid conditions, at most 8.
pub fn validate_taint_rule_status(new: &Value) -> Vec<FieldErr> {
    let conditions = new.at("/status/conditions");
    let mut errs = c::conditions(conditions, "status.conditions");
    let n = c::items(conditions).len();
    if n > c::TAINT_RULE_CONDITIONS_MAX {
        errs.push(c::too_many(
            "status.conditions",
            n,
            c::TAINT_RULE_CONDITIONS_MAX,
        ));
    }
    errs
}
