//! `resource.k8s.io/v1beta1` objects, which keel stores as written: their defaults in their
//! own (flattened) shape, and the v1-shaped view upstream validates after converting them to
//! its internal types (so errors carry the internal paths: `requests[i].exactly.count`,
//! `devices[i].attributes` without `basic`). The exact-request layout is the conversion's
//! (`crate::convert::dra`); this view keeps every member written, empty or not.

use super::claim;
use crate::convert::dra::{exact_field_set, EXACT as EXACT_MEMBERS};
use keel_api::jsonmap::JsonPointer;
use serde_json::{Map, Value};

/// Whether `obj` is written in `resource.k8s.io/v1beta1`.
pub fn is_v1beta1(obj: &Value) -> bool {
    obj.get("apiVersion").and_then(Value::as_str) == Some("resource.k8s.io/v1beta1")
}

/// Go field order of a v1beta1 request.
const REQUEST_ORDER: &[&str] = &[
    "name",
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "firstAvailable",
    "tolerations",
    "capacity",
];

/// v1beta1 defaults of a claim spec: a request with a device class defaults its allocation
/// mode and count (one without is a `firstAvailable` request); `deviceClassName` (no
/// `omitempty`) always prints.
pub fn default_claim_spec(spec: &mut Value) {
    let Some(devices) = spec
        .as_object_mut()
        .and_then(|m| crate::json::child(m, "devices"))
    else {
        return;
    };
    if !devices.contains_key("requests") {
        devices.insert("requests".into(), Value::Null);
    }
    for req in crate::json::each_obj(devices, "requests") {
        let has_class = req
            .get("deviceClassName")
            .and_then(Value::as_str)
            .is_some_and(|c| !c.is_empty());
        crate::json::default(req, "deviceClassName", Value::from(""));
        let tolerations = req.remove("tolerations");
        let first = req.remove("firstAvailable");
        if has_class {
            claim::default_request(req);
        }
        if let Some(t) = tolerations {
            req.insert("tolerations".into(), t);
            claim::default_tolerations(req);
        }
        if let Some(f) = first {
            req.insert("firstAvailable".into(), f);
            for sub in crate::json::each_obj(req, "firstAvailable") {
                claim::default_request(sub);
            }
        }
        claim::reorder(req, REQUEST_ORDER);
    }
}

fn request_to_v1(req: &mut Map<String, Value>) {
    let set = EXACT_MEMBERS
        .iter()
        .any(|k| req.get(*k).is_some_and(|v| exact_field_set(k, v)));
    let mut exactly = Map::new();
    for key in &EXACT_MEMBERS {
        if let Some(v) = req.remove(*key) {
            exactly.insert((*key).to_string(), v);
        }
    }
    if set {
        req.insert("exactly".into(), Value::Object(exactly));
    }
}

fn claim_spec_to_v1(spec: Option<&mut Value>) {
    let Some(devices) = spec
        .and_then(|s| s.get_mut("devices"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for req in crate::json::each_obj(devices, "requests") {
        request_to_v1(req);
    }
}

/// The object as upstream's internal (v1-shaped) form sees it.
pub fn to_v1(obj: &Value) -> Value {
    let mut v = obj.clone();
    claim_spec_to_v1(v.get_mut("spec"));
    claim_spec_to_v1(v.at_mut("/spec/spec"));
    if let Some(devices) = v.at_mut("/spec/devices").and_then(Value::as_array_mut) {
        for d in devices.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(Value::Object(basic)) = d.remove("basic") {
                d.extend(basic);
            }
        }
    }
    v
}

/// Taints of v1beta1 slices sit in `devices[].basic`.
pub fn default_slice_taints(obj: &mut Value, now: &str) {
    let Some(devices) = obj.at_mut("/spec/devices").and_then(Value::as_array_mut) else {
        return;
    };
    for d in devices.iter_mut().filter_map(Value::as_object_mut) {
        let Some(basic) = crate::json::child_if(d, "basic") else {
            continue;
        };
        for t in crate::json::each_obj(basic, "taints") {
            crate::json::default(t, "timeAdded", Value::from(now));
        }
    }
}
