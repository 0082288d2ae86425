//! Dynamic Resource Allocation (`resource.k8s.io`): the defaulting, validation and write
//! policy of DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice and
//! DeviceTaintRule, as a v1.36 kube-apiserver applies them with its default feature gates
//! (prioritized lists, admin access, consumable capacity, device taints, partitionable
//! devices, binding conditions and extended resources on; list-type attributes, node
//! allocatable mappings and device taint rules off).
//!
//! Error paths, reasons and messages are upstream's. CEL selector expressions are compiled
//! and type-checked by `keel-cel` in upstream's device environment (not cost-estimated).
//!
//! Objects are checked in v1's shape; `resource.k8s.io/v1beta1` objects (stored as written)
//! are defaulted in their own shape and validated through a v1-shaped view, as upstream
//! validates its internal form. Not done: CEL cost estimation, the `adminAccess` namespace-label
//! check (needs the namespace), canonical printing of quantities in messages.
//!
//! Submodules: `common` (shared checks and list rules), `claim` (claims, templates, claim
//! status), `slice` (ResourceSlices), `policy` (consumable capacity request policies),
//! `class` (DeviceClasses and DeviceTaintRules), `v1beta1` (the flattened beta shape),
//! `gojson` (how upstream prints an immutable value).

use keel_api::jsonmap::JsonPointer;
mod claim;
mod class;
mod common;
mod gojson;
mod policy;
mod slice;
#[cfg(test)]
mod tests;
mod v1beta1;

use crate::errors::FieldErr;
use crate::kind::Kind;
use serde_json::Value;

/// Whether `kind` is one of the DRA kinds this module owns.
pub fn owns(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::DeviceClass
            | Kind::ResourceClaim
            | Kind::ResourceClaimTemplate
            | Kind::ResourceSlice
            | Kind::DeviceTaintRule
    )
}

/// Schema defaults (upstream's `SetObjectDefaults_*`, applied to every decoded body) that
/// need no clock.
pub fn apply_defaults(kind: Kind, obj: &mut Value) {
    match kind {
        Kind::ResourceClaim if v1beta1::is_v1beta1(obj) => {
            if let Some(spec) = obj.get_mut("spec") {
                v1beta1::default_claim_spec(spec);
            }
            if let Some(results) = obj.at_mut("/status/allocation/devices/results") {
                claim::default_results(results);
            }
        }
        Kind::ResourceClaimTemplate if v1beta1::is_v1beta1(obj) => {
            if let Some(spec) = obj.at_mut("/spec/spec") {
                v1beta1::default_claim_spec(spec);
            }
        }
        Kind::ResourceClaim => {
            if let Some(spec) = obj.get_mut("spec") {
                claim::default_claim_spec(spec);
            }
            if let Some(results) = obj.at_mut("/status/allocation/devices/results") {
                claim::default_results(results);
            }
        }
        Kind::ResourceClaimTemplate => {
            // The template's `ObjectMeta` and claim spec are struct values: always printed.
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                crate::json::default(spec, "metadata", Value::Object(Default::default()));
                if let Some(inner) = crate::json::child(spec, "spec") {
                    let mut inner_value = Value::Object(std::mem::take(inner));
                    claim::default_claim_spec(&mut inner_value);
                    if let Value::Object(m) = inner_value {
                        *inner = m;
                    }
                }
                claim::reorder(spec, &["metadata", "spec"]);
            }
        }
        Kind::ResourceSlice => slice::default_pool_generation(obj),
        _ => {}
    }
}

/// A create: taints without `timeAdded` get `now` (RFC 3339, whole seconds); slices lose
/// the fields of features that are off.
pub fn prepare_create(kind: Kind, obj: &mut Value, now: &str) {
    match kind {
        Kind::ResourceSlice => {
            slice::default_slice(obj, now);
            v1beta1::default_slice_taints(obj, now);
            slice::drop_disabled(obj, None);
        }
        Kind::DeviceTaintRule => class::default_taint_rule(obj, now),
        _ => {}
    }
}

/// An update of the main resource: as [`prepare_create`], keeping fields the stored object
/// already uses; a DeviceTaintRule's `timeAdded` follows changes of its effect.
pub fn prepare_update(kind: Kind, new: &mut Value, old: &Value, now: &str) {
    match kind {
        Kind::ResourceSlice => {
            slice::default_slice(new, now);
            v1beta1::default_slice_taints(new, now);
            slice::drop_disabled(new, Some(old));
        }
        Kind::DeviceTaintRule => {
            class::taint_rule_time_added(new, old, now);
            class::default_taint_rule(new, now);
        }
        _ => {}
    }
}

/// After the generic status write (everything but status from the stored object): upstream's
/// `ResetObjectMetaForStatus` also keeps the stored labels, annotations and finalizers.
pub fn prepare_status_update(kind: Kind, new: &mut Value, old: &Value) {
    if !matches!(kind, Kind::ResourceClaim | Kind::DeviceTaintRule) {
        return;
    }
    if kind == Kind::ResourceClaim {
        claim::prepare_status(new, old);
    }
    let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["labels", "annotations", "finalizers"] {
        match old.at(&format!("/metadata/{key}")) {
            Some(v) => meta.insert(key.into(), v.clone()),
            None => meta.remove(key),
        };
    }
}

/// The type's own rules for a new object (without its metadata).
pub fn validate_create(kind: Kind, obj: &Value) -> Vec<FieldErr> {
    if v1beta1::is_v1beta1(obj) {
        return validate_create(kind, &v1beta1::to_v1(obj).with_api_version());
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match kind {
        Kind::ResourceClaim => claim::validate_claim_spec(spec, "spec", false),
        Kind::ResourceClaimTemplate => claim::validate_template_spec(spec),
        Kind::DeviceClass => class::validate_class_spec(spec, None),
        Kind::ResourceSlice => slice::validate_slice_spec(spec, None),
        Kind::DeviceTaintRule => class::validate_taint_rule_spec(spec, None),
        _ => Vec::new(),
    }
}

/// The type's rules for an update of the resource (`subresource` empty) or its status.
pub fn validate_update(kind: Kind, subresource: &str, new: &Value, old: &Value) -> Vec<FieldErr> {
    // Upstream defaults what it reads from storage: an object stored before these defaults
    // (by an earlier keel) compares as its defaulted form, so an unchanged spec stays equal.
    let mut defaulted = old.clone();
    apply_defaults(kind, &mut defaulted);
    let old = &defaulted;
    if v1beta1::is_v1beta1(new) || v1beta1::is_v1beta1(old) {
        let (new, old) = (
            v1beta1::to_v1(new).with_api_version(),
            v1beta1::to_v1(old).with_api_version(),
        );
        return validate_update(kind, subresource, &new, &old);
    }
    let spec = new.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    match (kind, subresource) {
        (Kind::ResourceClaim, "status") => claim::validate_status_update(new, old),
        (Kind::ResourceClaim, _) => claim::validate_spec_immutable(spec, old_spec, false),
        (Kind::ResourceClaimTemplate, _) => claim::validate_spec_immutable(spec, old_spec, true),
        (Kind::DeviceClass, _) => class::validate_class_spec(spec, Some(old_spec)),
        (Kind::ResourceSlice, _) => slice::validate_slice_spec(spec, Some(old_spec)),
        (Kind::DeviceTaintRule, "status") => class::validate_taint_rule_status(new),
        (Kind::DeviceTaintRule, _) => class::validate_taint_rule_spec(spec, Some(old_spec)),
        _ => Vec::new(),
    }
}

/// Marks a converted view as v1 (so it is not converted again).
trait V1View {
    fn with_api_version(self) -> Value;
}

impl V1View for Value {
    fn with_api_version(mut self) -> Value {
        if let Some(m) = self.as_object_mut() {
            m.insert("apiVersion".into(), Value::from("resource.k8s.io/v1"));
        }
        self
    }
}

/// The namespace label that lets claims in the namespace ask for admin access to devices.
pub const ADMIN_ACCESS_LABEL: &str = "resource.kubernetes.io/admin-access";

/// Where `new` asks for admin access to devices, which only a namespace labelled
/// `resource.kubernetes.io/admin-access: "true"` may: a claim or claim template being created
/// with a request for it (upstream reports `spec.devices.requests[i].adminAccess` for both,
/// wherever the field lies), and a claim's status whose allocation first grants it
/// (`subresource` "status", `old` the stored claim). `None` when nothing asks.
pub fn admin_access_field(
    kind: Kind,
    subresource: &str,
    new: &Value,
    old: Option<&Value>,
) -> Option<String> {
    let v1 = |o: &Value| {
        if v1beta1::is_v1beta1(o) {
            v1beta1::to_v1(o)
        } else {
            o.clone()
        }
    };
    let new = v1(new);
    let granted = |o: &Value| {
        crate::json::arr_at(o, "status.allocation.devices.results")
            .iter()
            .position(|r| r.get("adminAccess") == Some(&Value::Bool(true)))
    };
    match (kind, subresource, old) {
        (Kind::ResourceClaim | Kind::ResourceClaimTemplate, "", None) => {
            let spec = if kind == Kind::ResourceClaim {
                "spec.devices.requests"
            } else {
                "spec.spec.devices.requests"
            };
            crate::json::arr_at(&new, spec)
                .iter()
                .position(|r| r.at("/exactly/adminAccess") == Some(&Value::Bool(true)))
                .map(|i| format!("spec.devices.requests[{i}].adminAccess"))
        }
        (Kind::ResourceClaim, "status", Some(old)) if granted(&v1(old)).is_none() => {
            granted(&new).map(|i| format!("status.allocation.devices.results[{i}].adminAccess"))
        }
        _ => None,
    }
}

/// The refusal of admin access in a namespace without the label.
pub fn admin_access_forbidden(path: &str) -> FieldErr {
    FieldErr::forbidden(
        path,
        &format!("admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"),
    )
}
