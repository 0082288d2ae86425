//! ResourceClaims and ResourceClaimTemplates: defaulting of device requests, validation of
//! the claim spec (requests, constraints, config), spec immutability, and the status rules
//! (`reservedFor`, `allocation`, `devices`).

use super::common::{self as c, has, items, s};
use super::gojson;
use crate::errors::{Bad, FieldErr};
use crate::json;
use keel_api::jsonmap::JsonPointer;
use serde_json::{Map, Value};

const REQUEST_REF_MSG: &str =
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";
const ALLOCATION_MODES: &[&str] = &["All", "ExactCount"];
const CONFIG_SOURCES: &[&str] = &["FromClaim", "FromClass"];

// ---- defaulting ----

/// Go field order of the members defaulting adds to (so defaulted objects print as
/// upstream's do); members not listed keep their order after these.
const EXACT_ORDER: &[&str] = &[
    "name",
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
];
const DEVICE_STATUS_ORDER: &[&str] = &[
    "driver",
    "pool",
    "device",
    "shareID",
    "conditions",
    "data",
    "networkData",
];
const TOLERATION_ORDER: &[&str] = &["key", "operator", "value", "effect", "tolerationSeconds"];

/// Moves the members named in `order` to the front, in that order.
pub(super) fn reorder(m: &mut Map<String, Value>, order: &[&str]) {
    let mut rest = std::mem::take(m);
    for key in order {
        if let Some(v) = rest.shift_remove(*key) {
            m.insert((*key).to_string(), v);
        }
    }
    m.extend(rest);
}

/// `SetDefaults_ExactDeviceRequest` / `SetDefaults_DeviceSubRequest` and the tolerations'
/// `operator: Equal`.
pub(super) fn default_request(r: &mut Map<String, Value>) {
    json::default(r, "allocationMode", Value::from("ExactCount"));
    let exact_count = r.get("allocationMode").and_then(Value::as_str) == Some("ExactCount");
    let count_zero = r
        .get("count")
        .is_none_or(|n| n.is_null() || n.as_i64() == Some(0));
    if exact_count && count_zero {
        r.insert("count".into(), Value::from(1));
    }
    default_tolerations(r);
    reorder(r, EXACT_ORDER);
}

pub(super) fn default_tolerations(m: &mut Map<String, Value>) {
    for t in json::each_obj(m, "tolerations") {
        let empty = t.get("operator").is_none_or(|o| o.is_null() || o == "");
        if empty {
            t.insert("operator".into(), Value::from("Equal"));
            reorder(t, TOLERATION_ORDER);
        }
    }
}

/// Defaults the device requests of a claim spec (claims and templates' `spec.spec`).
/// `devices` and its `requests` (no `omitempty` upstream) always print, as Go prints them.
pub fn default_claim_spec(spec: &mut Value) {
    let Some(devices) = spec.as_object_mut().and_then(|m| json::child(m, "devices")) else {
        return;
    };
    if !devices.contains_key("requests") {
        devices.insert("requests".into(), Value::Null);
        reorder(devices, &["requests"]);
    }
    for req in json::each_obj(devices, "requests") {
        if let Some(exactly) = json::child_if(req, "exactly") {
            default_request(exactly);
        }
        for sub in json::each_obj(req, "firstAvailable") {
            default_request(sub);
        }
    }
}

/// A status write drops the device statuses of devices the new allocation no longer has
/// (upstream's `dropDeallocatedStatusDevices`); empty lists are dropped as Go's `omitempty`
/// does, and the members are put in Go order.
pub fn prepare_status(new: &mut Value, old: &Value) {
    let results = |v: &Value| -> Vec<DeviceId> {
        items(v.at("/status/allocation/devices/results"))
            .iter()
            .map(device_id)
            .collect()
    };
    let kept = results(new);
    let gone: Vec<DeviceId> = results(old)
        .into_iter()
        .filter(|id| !kept.contains(id))
        .collect();
    let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(devices) = status.get_mut("devices").and_then(Value::as_array_mut) {
        devices.retain(|d| !gone.contains(&device_id(d)));
        // `conditions` has no `omitempty`: Go prints an empty list as `null`.
        for d in devices.iter_mut().filter_map(Value::as_object_mut) {
            let empty = d
                .get("conditions")
                .is_none_or(|c| c.as_array().is_some_and(Vec::is_empty));
            if empty {
                d.insert("conditions".into(), Value::Null);
            }
            reorder(d, DEVICE_STATUS_ORDER);
        }
    }
    for key in ["reservedFor", "devices"] {
        if status
            .get(key)
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            status.remove(key);
        }
    }
    reorder(status, &["allocation", "reservedFor", "devices"]);
}

/// Defaults the tolerations of allocation results.
pub fn default_results(results: &mut Value) {
    for r in results.as_array_mut().into_iter().flatten() {
        if let Some(m) = r.as_object_mut() {
            default_tolerations(m);
        }
    }
}

// ---- request names ----

/// The requests of a claim and, for `firstAvailable` requests, their subrequests.
struct RequestNames(Vec<(String, Option<Vec<String>>)>);

impl RequestNames {
    fn of(spec: &Value) -> Self {
        let reqs = items(spec.at("/devices/requests"));
        RequestNames(
            reqs.iter()
                .map(|r| {
                    let subs = items(r.get("firstAvailable"));
                    let names = (!subs.is_empty())
                        .then(|| subs.iter().map(|x| s(x, "name").to_string()).collect());
                    (s(r, "name").to_string(), names)
                })
                .collect(),
        )
    }

    fn has(&self, reference: &str) -> bool {
        let segs: Vec<&str> = reference.split('/').collect();
        if segs.len() > 2 {
            return false;
        }
        // Upstream keeps the requests in a map: a later request of the same name wins.
        let Some((_, subs)) = self.0.iter().rev().find(|(n, _)| n == segs[0]) else {
            return false;
        };
        match (segs.get(1), subs) {
            (None, _) => true,
            (Some(sub), Some(subs)) => subs.iter().any(|x| x == sub),
            (Some(_), None) => false,
        }
    }
}

fn request_ref(name: &str, path: &str, names: &RequestNames) -> Vec<FieldErr> {
    let segs: Vec<&str> = name.split('/').collect();
    if segs.len() > 2 {
        return vec![FieldErr::invalid(path, name, REQUEST_REF_MSG)];
    }
    let mut errs = Vec::new();
    for seg in segs {
        errs.extend(c::dns_label(seg, path));
    }
    if !names.has(name) {
        errs.push(FieldErr::invalid(path, name, REQUEST_REF_MSG));
    }
    errs
}

fn request_refs(v: Option<&Value>, path: &str, names: &RequestNames) -> Vec<FieldErr> {
    c::set(
        v,
        Some(c::REQUESTS_MAX),
        path,
        |n, p| request_ref(n.as_str().unwrap_or(""), p, names),
        c::string_key,
    )
}

// ---- spec ----

/// Validates a claim spec at `path` (`spec` of a claim, `spec.spec` of a template).
pub fn validate_claim_spec(spec: &Value, path: &str, stored: bool) -> Vec<FieldErr> {
    let devices = spec.get("devices").unwrap_or(&Value::Null);
    let dp = format!("{path}.devices");
    let names = RequestNames::of(spec);
    let mut errs = c::set(
        devices.get("requests"),
        Some(c::REQUESTS_MAX),
        &format!("{dp}.requests"),
        |r, p| device_request(r, p, stored),
        |r| Bad::Str(s(r, "name").to_string()),
    );
    errs.extend(c::list(
        devices.get("constraints"),
        Some(c::CONSTRAINTS_MAX),
        &format!("{dp}.constraints"),
        |k, p| constraint(k, p, &names),
    ));
    errs.extend(c::list(
        devices.get("config"),
        Some(c::CONFIG_MAX),
        &format!("{dp}.config"),
        |k, p| {
            let mut errs = request_refs(k.get("requests"), &format!("{p}.requests"), &names);
            errs.extend(c::device_configuration(k, p, stored));
            errs
        },
    ));
    errs
}

fn device_request(r: &Value, path: &str, stored: bool) -> Vec<FieldErr> {
    let mut errs = c::dns_label(s(r, "name"), &format!("{path}.name"));
    let first = !items(r.get("firstAvailable")).is_empty();
    let exactly = has(r, "exactly");
    match (exactly, first) {
        (false, false) => errs.push(FieldErr::required(
            path,
            "exactly one of `exactly` or `firstAvailable` is required",
        )),
        (true, true) => errs.push(FieldErr::invalid(
            path,
            Bad::Raw("null".into()),
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        )),
        (false, true) => errs.extend(c::set(
            r.get("firstAvailable"),
            Some(c::FIRST_AVAILABLE_MAX),
            &format!("{path}.firstAvailable"),
            |sub, p| {
                let mut errs = c::dns_label(s(sub, "name"), &format!("{p}.name"));
                errs.extend(request_body(sub, p, stored));
                errs
            },
            |sub| Bad::Str(s(sub, "name").to_string()),
        )),
        (true, false) => errs.extend(request_body(
            &r["exactly"],
            &format!("{path}.exactly"),
            stored,
        )),
    }
    errs
}

/// What an exact request and a subrequest share: class, selectors, allocation mode and
/// count, tolerations.
fn request_body(r: &Value, path: &str, _stored: bool) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let class = s(r, "deviceClassName");
    let class_path = format!("{path}.deviceClassName");
    if class.is_empty() {
        errs.push(FieldErr::required(&class_path, ""));
    } else {
        errs.extend(c::dns_subdomain(class, &class_path));
    }
    errs.extend(c::selectors(
        r.get("selectors"),
        &format!("{path}.selectors"),
    ));
    let count = r.get("count").and_then(Value::as_i64).unwrap_or(0);
    let count_path = format!("{path}.count");
    match s(r, "allocationMode") {
        "All" if count != 0 => errs.push(FieldErr::invalid(
            &count_path,
            count,
            "must not be specified when allocationMode is 'All'",
        )),
        "ExactCount" if count <= 0 => errs.push(FieldErr::invalid(
            &count_path,
            count,
            "must be greater than zero",
        )),
        "All" | "ExactCount" => {}
        mode => errs.push(FieldErr::not_supported(
            &format!("{path}.allocationMode"),
            mode,
            ALLOCATION_MODES,
        )),
    }
    errs.extend(c::tolerations(
        r.get("tolerations"),
        &format!("{path}.tolerations"),
    ));
    errs
}

fn constraint(k: &Value, path: &str, names: &RequestNames) -> Vec<FieldErr> {
    let mut errs = request_refs(k.get("requests"), &format!("{path}.requests"), names);
    if has(k, "matchAttribute") {
        errs.extend(c::fully_qualified_name(
            s(k, "matchAttribute"),
            &format!("{path}.matchAttribute"),
        ));
    } else if has(k, "distinctAttribute") {
        errs.extend(c::fully_qualified_name(
            s(k, "distinctAttribute"),
            &format!("{path}.distinctAttribute"),
        ));
    } else {
        // Upstream's wording (with DRAConsumableCapacity on) for neither field set.
        errs.push(FieldErr::required(
            path,
            "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set",
        ));
    }
    errs
}

/// `ObjectMeta` members a template may not set: JSON name and the path upstream reports
/// (its Go field name with the first letter lowercased).
const TEMPLATE_META_FORBIDDEN: &[(&str, &str)] = &[
    ("name", "name"),
    ("generateName", "generateName"),
    ("namespace", "namespace"),
    ("selfLink", "selfLink"),
    ("uid", "uID"),
    ("resourceVersion", "resourceVersion"),
    ("generation", "generation"),
    ("creationTimestamp", "creationTimestamp"),
    ("deletionTimestamp", "deletionTimestamp"),
    ("deletionGracePeriodSeconds", "deletionGracePeriodSeconds"),
    ("ownerReferences", "ownerReferences"),
    ("finalizers", "finalizers"),
    ("managedFields", "managedFields"),
];

/// Whether a JSON value is Go's zero value of its field.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        Value::Array(_) | Value::Object(_) => false,
    }
}

/// A template: its `spec.metadata` (annotations, labels, nothing else) and claim spec.
pub fn validate_template_spec(spec: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let meta = spec.get("metadata").unwrap_or(&Value::Null);
    if let Some(ann) = meta.get("annotations").and_then(Value::as_object) {
        let causes = keel_api::names::validate_annotations(ann, "spec.metadata.annotations");
        errs.extend(causes.into_iter().map(FieldErr::from_cause));
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        let causes = keel_api::names::validate_labels(labels, "spec.metadata.labels");
        errs.extend(causes.into_iter().map(FieldErr::from_cause));
    }
    for (key, go_name) in TEMPLATE_META_FORBIDDEN {
        if meta.get(*key).is_some_and(|v| !is_zero(v)) {
            errs.push(FieldErr::forbidden(
                &format!("spec.metadata.{go_name}"),
                "cannot be set",
            ));
        }
    }
    let inner = spec.get("spec").unwrap_or(&Value::Null);
    errs.extend(validate_claim_spec(inner, "spec.spec", false));
    errs
}

/// Claims and templates: the spec may not change (and is not validated again).
pub fn validate_spec_immutable(spec: &Value, old: &Value, template: bool) -> Vec<FieldErr> {
    let (new_go, old_go) = if template {
        (gojson::template_spec(spec), gojson::template_spec(old))
    } else {
        (gojson::claim_spec(spec), gojson::claim_spec(old))
    };
    if new_go == old_go {
        return Vec::new();
    }
    vec![FieldErr::invalid(
        "spec",
        Bad::Raw(new_go),
        "field is immutable",
    )]
}

// ---- status ----

/// A device a result or status entry names: driver, pool, device and share id.
fn device_id(v: &Value) -> (String, String, String, Option<String>) {
    (
        s(v, "driver").to_string(),
        s(v, "pool").to_string(),
        s(v, "device").to_string(),
        v.get("shareID").and_then(Value::as_str).map(str::to_string),
    )
}

/// How upstream prints a `SharedDeviceID` in a message: the JSON of its Go struct.
fn device_id_text(id: &DeviceId) -> String {
    let fields = serde_json::json!({
        "Driver": id.0, "Pool": id.1, "Device": id.2,
        "ShareID": id.3.clone().unwrap_or_default(),
    });
    gojson::value(Some(&fields))
}

/// A status write: `reservedFor`, `devices`, and `allocation` (set once, then immutable).
pub fn validate_status_update(new: &Value, old: &Value) -> Vec<FieldErr> {
    let status = new.get("status").unwrap_or(&Value::Null);
    let old_status = old.get("status").unwrap_or(&Value::Null);
    let names = RequestNames::of(new.get("spec").unwrap_or(&Value::Null));
    let mut errs = c::set(
        status.get("reservedFor"),
        Some(c::RESERVED_FOR_MAX),
        "status.reservedFor",
        |r, p| {
            let mut errs = Vec::new();
            for key in ["resource", "name", "uid"] {
                if s(r, key).is_empty() {
                    errs.push(FieldErr::required(&format!("{p}.{key}"), ""));
                }
            }
            errs
        },
        |r| Bad::Str(s(r, "uid").to_string()),
    );
    let allocation = status.get("allocation").filter(|a| !a.is_null());
    let allocated: Vec<_> = allocation
        .map(|a| items(a.at("/devices/results")))
        .unwrap_or(&[])
        .iter()
        .map(device_id)
        .collect();
    errs.extend(c::set(
        status.get("devices"),
        None,
        "status.devices",
        |d, p| device_status(d, p, &allocated),
        |d| Bad::Raw(device_id_text(&device_id(d))),
    ));
    let reserved = items(status.get("reservedFor"));
    if !reserved.is_empty() {
        if allocation.is_none() {
            errs.push(FieldErr::forbidden(
                "status.reservedFor",
                "may not be specified when `allocated` is not set",
            ));
        } else if has(
            new.get("metadata").unwrap_or(&Value::Null),
            "deletionTimestamp",
        ) {
            let before = items(old_status.get("reservedFor"));
            if reserved.iter().any(|r| !before.contains(r)) {
                errs.push(FieldErr::forbidden(
                    "status.reservedFor",
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                ));
            }
        }
    }
    let old_allocation = old_status.get("allocation").filter(|a| !a.is_null());
    match (allocation, old_allocation) {
        (Some(new_a), Some(old_a)) => {
            let (n, o) = (gojson::allocation(new_a), gojson::allocation(old_a));
            if n != o {
                errs.push(FieldErr::invalid(
                    "status.allocation",
                    Bad::Raw(n),
                    "field is immutable",
                ));
            }
        }
        (Some(new_a), None) => errs.extend(allocation_result(new_a, &names)),
        _ => {}
    }
    errs
}

fn allocation_result(a: &Value, names: &RequestNames) -> Vec<FieldErr> {
    let path = "status.allocation";
    let mut errs = c::list(
        a.at("/devices/results"),
        Some(c::ALLOCATION_RESULTS_MAX),
        &format!("{path}.devices.results"),
        |r, p| {
            let mut errs = request_ref(s(r, "request"), &format!("{p}.request"), names);
            errs.extend(c::driver_name(s(r, "driver"), &format!("{p}.driver")));
            errs.extend(c::pool_name(s(r, "pool"), &format!("{p}.pool")));
            errs.extend(c::dns_label(s(r, "device"), &format!("{p}.device")));
            errs.extend(c::binding_parameters(r, p));
            if let Some(share) = r.get("shareID").and_then(Value::as_str) {
                errs.extend(c::uid(share, &format!("{p}.shareID")));
            }
            errs
        },
    );
    errs.extend(c::list(
        a.at("/devices/config"),
        Some(2 * c::CONFIG_MAX),
        &format!("{path}.devices.config"),
        |k, p| {
            let sp = format!("{p}.source");
            let mut errs = match s(k, "source") {
                "" => vec![FieldErr::required(&sp, "")],
                "FromClaim" | "FromClass" => Vec::new(),
                other => vec![FieldErr::not_supported(&sp, other, CONFIG_SOURCES)],
            };
            errs.extend(request_refs(
                k.get("requests"),
                &format!("{p}.requests"),
                names,
            ));
            errs.extend(c::device_configuration(k, p, false));
            errs
        },
    ));
    if let Some(sel) = a.get("nodeSelector").filter(|v| !v.is_null()) {
        errs.extend(c::node_selector(sel, &format!("{path}.nodeSelector")));
    }
    errs
}

type DeviceId = (String, String, String, Option<String>);

fn device_status(d: &Value, path: &str, allocated: &[DeviceId]) -> Vec<FieldErr> {
    let mut errs = c::driver_name(s(d, "driver"), &format!("{path}.driver"));
    errs.extend(c::pool_name(s(d, "pool"), &format!("{path}.pool")));
    errs.extend(c::dns_label(s(d, "device"), &format!("{path}.device")));
    if let Some(share) = d.get("shareID").and_then(Value::as_str) {
        errs.extend(c::uid(share, &format!("{path}.shareID")));
    }
    let id = device_id(d);
    if !allocated.contains(&id) {
        errs.push(FieldErr::invalid(
            path,
            Bad::Raw(device_id_text(&id)),
            "must be an allocated device in the claim",
        ));
    }
    let conditions = items(d.get("conditions"));
    if conditions.len() > c::DEVICE_STATUS_CONDITIONS_MAX {
        errs.push(c::too_many(
            &format!("{path}.conditions"),
            conditions.len(),
            c::DEVICE_STATUS_CONDITIONS_MAX,
        ));
    }
    errs.extend(c::conditions(
        d.get("conditions"),
        &format!("{path}.conditions"),
    ));
    if let Some(data) = d.get("data").filter(|v| !v.is_null()) {
        errs.extend(c::raw_object(
            Some(data),
            &format!("{path}.data"),
            false,
            c::OPAQUE_PARAMETERS_BYTES_MAX,
        ));
    }
    if let Some(net) = d.get("networkData").filter(|v| !v.is_null()) {
        let np = format!("{path}.networkData");
        if s(net, "interfaceName").len() > 256 {
            errs.push(c::too_long(&format!("{np}.interfaceName"), 256));
        }
        if s(net, "hardwareAddress").len() > 128 {
            errs.push(c::too_long(&format!("{np}.hardwareAddress"), 128));
        }
        errs.extend(c::set(
            net.get("ips"),
            Some(16),
            &format!("{np}.ips"),
            |ip, p| c::interface_address(ip.as_str().unwrap_or(""), p),
            c::string_key,
        ));
    }
    errs
}
