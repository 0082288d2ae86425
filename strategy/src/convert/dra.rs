//! resource.k8s.io v1beta1 <-> v1 (and v1beta2, whose schemas are v1's) for the three
//! resources whose v1beta1 layout differs:
//! - ResourceClaim (`spec`) and ResourceClaimTemplate (`spec.spec`): a v1beta1 request holds
//!   the exact-request fields (`deviceClassName`, `selectors`, `allocationMode`, `count`,
//!   `adminAccess`, `tolerations`, `capacity`) flat, where v1 nests them under `exactly`.
//!   Back to v1, `exactly` is made when any of them is set (even an empty `selectors` list);
//!   v1beta1 always prints `deviceClassName`, `""` when the request has no `exactly`.
//! - ResourceSlice: a v1beta1 device keeps everything but its `name` under `basic` (always
//!   printed, `{}` when empty); v1's `spec.nodeName` and `spec.allNodes` are pointers, so an
//!   empty name and `false` are left out in both directions.
//!
//! Empty maps and lists moved between the layouts are left out, as Go's `omitempty` does.

use serde_json::{json, Map, Value};

/// The exact-request fields, flat in v1beta1, under `exactly` in v1 (also the layout
/// the DRA strategy's validation view of v1beta1 objects nests).
pub(crate) const EXACT: [&str; 7] = [
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
];

/// Converts `obj` between layouts: `to_beta` true for v1/v1beta2 -> v1beta1.
pub(super) fn convert(resource: &str, obj: &mut Value, to_beta: bool) {
    let spec = match resource {
        "resourceclaims" => obj.get_mut("spec"),
        "resourceclaimtemplates" => obj.get_mut("spec").and_then(|s| s.get_mut("spec")),
        _ => {
            slice(obj, to_beta);
            return;
        }
    };
    let requests = spec
        .and_then(|s| s.get_mut("devices"))
        .and_then(|d| d.get_mut("requests"))
        .and_then(Value::as_array_mut);
    for request in requests.into_iter().flatten() {
        if let Some(r) = request.as_object_mut() {
            if to_beta {
                flatten(r);
            } else {
                nest(r);
            }
        }
    }
}

/// What Go's `omitempty` leaves out.
fn empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// An exact-request field Go leaves out: pointers (`adminAccess`, `capacity`) only when
/// null, the rest when empty (`omitempty`).
fn exact_field_empty(key: &str, v: &Value) -> bool {
    match key {
        "adminAccess" | "capacity" => v.is_null(),
        _ => empty(v),
    }
}

/// v1 request -> v1beta1.
fn flatten(r: &mut Map<String, Value>) {
    let exactly = r.remove("exactly").unwrap_or(Value::Null);
    let class = exactly.get("deviceClassName").cloned().unwrap_or(json!(""));
    r.insert("deviceClassName".into(), class);
    for key in &EXACT[1..] {
        match exactly.get(*key) {
            Some(v) if !exact_field_empty(key, v) => {
                r.insert((*key).into(), v.clone());
            }
            _ => {}
        }
    }
}

/// Whether a flat exact-request field makes a v1beta1 request an exact one in v1 (Go:
/// non-zero; a list given, even empty, is a non-nil slice).
pub(crate) fn exact_field_set(key: &str, v: &Value) -> bool {
    match key {
        "selectors" | "tolerations" => !v.is_null(),
        _ => !exact_field_empty(key, v),
    }
}

/// v1beta1 request -> v1.
fn nest(r: &mut Map<String, Value>) {
    let set = exact_field_set;
    let flat: Vec<(&str, Value)> = EXACT
        .iter()
        .filter_map(|k| r.remove(*k).map(|v| (*k, v)))
        .collect();
    if !flat.iter().any(|(k, v)| set(k, v)) {
        return;
    }
    let mut exactly = Map::new();
    exactly.insert("deviceClassName".into(), json!(""));
    for (k, v) in flat {
        if !exact_field_empty(k, &v) {
            exactly.insert(k.into(), v);
        }
    }
    r.insert("exactly".into(), Value::Object(exactly));
}

/// A device field Go's conversion leaves unset: null, an empty list, or an empty
/// `attributes`/`capacity` map (other fields are pointers copied as they are, so `false`
/// and `""` stay).
fn device_field_empty(key: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty() && matches!(key, "attributes" | "capacity"),
        _ => false,
    }
}

fn slice(obj: &mut Value, to_beta: bool) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["nodeName", "allNodes"] {
        if spec.get(key).is_some_and(empty) {
            spec.remove(key);
        }
    }
    let devices = spec.get_mut("devices").and_then(Value::as_array_mut);
    for device in devices.into_iter().flatten() {
        let Some(d) = device.as_object_mut() else {
            continue;
        };
        if to_beta {
            let name = d.remove("name");
            let basic: Map<String, Value> = std::mem::take(d)
                .into_iter()
                .filter(|(k, v)| !device_field_empty(k, v))
                .collect();
            if let Some(name) = name {
                d.insert("name".into(), name);
            }
            d.insert("basic".into(), Value::Object(basic));
        } else if let Some(Value::Object(basic)) = d.remove("basic") {
            for (k, v) in basic {
                if !device_field_empty(&k, &v) && k != "name" {
                    d.insert(k, v);
                }
            }
        }
    }
}
