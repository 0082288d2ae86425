//! Version conversion of built-in resources served in more than one version, as upstream's
//! v1.36 apiserver converts them: pure functions over versioned JSON objects, for the
//! server's seam that converts to the storage version on write and to the requested version
//! on read.
//!
//! What each multi-version resource needs, and the version upstream stores it as (read from
//! the raw bytes in upstream's etcd, `--runtime-config=api/all=true`):
//!
//! | group/resource | served | stored as | conversion |
//! |---|---|---|---|
//! | autoscaling/horizontalpodautoscalers | v2, v1 | autoscaling/v2 | field mapping ([`hpa`]) |
//! | core events, events.k8s.io/events | v1, events.k8s.io/v1 | v1 (one object set) | field mapping ([`event`]) |
//! | networking.k8s.io/ipaddresses, servicecidrs | v1, v1beta1 | networking.k8s.io/v1 | apiVersion only |
//! | storage.k8s.io/volumeattributesclasses | v1, v1beta1 | storage.k8s.io/v1 | apiVersion only |
//! | coordination.k8s.io/leasecandidates | v1beta1, v1alpha2 | coordination.k8s.io/v1beta1 | apiVersion only |
//! | admissionregistration.k8s.io/mutatingadmissionpolicies, …bindings | v1, v1beta1, v1alpha1 | admissionregistration.k8s.io/v1beta1 | apiVersion only |
//! | resource.k8s.io/deviceclasses | v1, v1beta2, v1beta1 | resource.k8s.io/v1 | apiVersion only |
//! | resource.k8s.io/resourceclaims, resourceclaimtemplates, resourceslices | v1, v1beta2, v1beta1 | resource.k8s.io/v1 | v1 <-> v1beta2 apiVersion only; v1beta1 field mapping ([`dra`]) |
//! | resource.k8s.io/devicetaintrules | v1beta2, v1alpha3 | resource.k8s.io/v1alpha3 | apiVersion only |
//!
//! "apiVersion only": upstream's OpenAPI schemas of the versions are the same tree (compared
//! with descriptions, defaults and enum lists left out; the admission policies differ only in
//! enum lists), so converting is renaming the apiVersion. Note that the storage version is not
//! always the most preferred one (mutating admission policies are stored as v1beta1, device
//! taint rules as v1alpha3).
//!
//! Not done (convert returns an error):
//! - certificates.k8s.io ClusterTrustBundle (v1beta1, v1alpha1): keel's catalog knows both,
//!   upstream does not serve them here (feature gate off), so neither schemas nor the
//!   storage version could be checked.
//!
//! Invariants: pure, no I/O; malformed input never panics (a member of the wrong JSON type is
//! treated as absent, except where upstream fails the request: an annotation that does not
//! decode). Object member order follows upstream's output but is not significant, except
//! inside the annotation values that carry v2-only data through autoscaling/v1, which are
//! byte-for-byte what upstream writes.

pub(crate) mod dra;
mod event;
mod gojson;
mod hpa;

use serde_json::Value;

/// Resources converted by renaming the apiVersion: `(group, resource, served versions)`. All
/// versions listed share one schema, except resource.k8s.io v1beta1 of claims, claim templates
/// and slices, which [`dra`] maps on top.
const IDENTICAL: &[(&str, &str, &[&str])] = &[
    ("networking.k8s.io", "ipaddresses", &["v1", "v1beta1"]),
    ("networking.k8s.io", "servicecidrs", &["v1", "v1beta1"]),
    (
        "storage.k8s.io",
        "volumeattributesclasses",
        &["v1", "v1beta1"],
    ),
    (
        "coordination.k8s.io",
        "leasecandidates",
        &["v1beta1", "v1alpha2"],
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicies",
        &["v1", "v1beta1", "v1alpha1"],
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
        &["v1", "v1beta1", "v1alpha1"],
    ),
    (
        "resource.k8s.io",
        "deviceclasses",
        &["v1", "v1beta2", "v1beta1"],
    ),
    (
        "resource.k8s.io",
        "resourceclaims",
        &["v1", "v1beta2", "v1beta1"],
    ),
    (
        "resource.k8s.io",
        "resourceclaimtemplates",
        &["v1", "v1beta2", "v1beta1"],
    ),
    (
        "resource.k8s.io",
        "resourceslices",
        &["v1", "v1beta2", "v1beta1"],
    ),
    (
        "resource.k8s.io",
        "devicetaintrules",
        &["v1beta2", "v1alpha3"],
    ),
];

/// Upstream's storage version of each multi-version resource (observed in its etcd).
const STORAGE: &[(&str, &str, &str)] = &[
    ("autoscaling", "horizontalpodautoscalers", "autoscaling/v2"),
    ("", "events", "v1"),
    ("events.k8s.io", "events", "v1"),
    ("networking.k8s.io", "ipaddresses", "networking.k8s.io/v1"),
    ("networking.k8s.io", "servicecidrs", "networking.k8s.io/v1"),
    (
        "storage.k8s.io",
        "volumeattributesclasses",
        "storage.k8s.io/v1",
    ),
    (
        "coordination.k8s.io",
        "leasecandidates",
        "coordination.k8s.io/v1beta1",
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicies",
        "admissionregistration.k8s.io/v1beta1",
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
        "admissionregistration.k8s.io/v1beta1",
    ),
    ("resource.k8s.io", "deviceclasses", "resource.k8s.io/v1"),
    ("resource.k8s.io", "resourceclaims", "resource.k8s.io/v1"),
    (
        "resource.k8s.io",
        "resourceclaimtemplates",
        "resource.k8s.io/v1",
    ),
    ("resource.k8s.io", "resourceslices", "resource.k8s.io/v1"),
    (
        "resource.k8s.io",
        "devicetaintrules",
        "resource.k8s.io/v1alpha3",
    ),
];

/// The version upstream stores objects of `group`/`resource` in, if the resource is served in
/// more than one version and converts between them (e.g. ("autoscaling",
/// "horizontalpodautoscalers") -> "autoscaling/v2").
///
/// Both event groups answer `"v1"`: upstream keeps core and events.k8s.io Events as one object
/// set, stored as core `v1` Events (see [`shared_storage_resource`]).
pub fn storage_api_version(group: &str, resource: &str) -> Option<&'static str> {
    STORAGE
        .iter()
        .find(|(g, r, _)| *g == group && *r == resource)
        .map(|(_, _, v)| *v)
}

/// The `(group, resource)` whose stored objects `group`/`resource` shares, when that is
/// another resource: events.k8s.io `events` are core (`""`) `events`, one object set under one
/// key prefix, stored as apiVersion `v1`. A core Event created is listed and watched through
/// events.k8s.io/v1 and the other way round, with the same uid and resourceVersion.
pub fn shared_storage_resource(
    group: &str,
    resource: &str,
) -> Option<(&'static str, &'static str)> {
    (group == "events.k8s.io" && resource == "events").then_some(("", "events"))
}

/// `obj` (any served apiVersion of that resource) converted to `to` (an apiVersion such as
/// "autoscaling/v1"); a no-op when it is already `to`.
///
/// Errors: a resource or version this module does not convert, or (autoscaling/v1) a
/// round-trip annotation that does not decode, where upstream fails the request too.
pub fn convert(group: &str, resource: &str, obj: Value, to: &str) -> Result<Value, String> {
    let from = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if from == to {
        return Ok(obj);
    }
    match (group, resource) {
        // What a v1 object becomes gets the v2 defaults (upstream defaults the v2 object it
        // decodes from storage).
        ("autoscaling", "horizontalpodautoscalers") => {
            let mut obj = hpa::convert(obj, &from, to)?;
            if to == "autoscaling/v2" {
                crate::autoscaling::apply_defaults(&mut obj);
            }
            Ok(obj)
        }
        ("" | "events.k8s.io", "events") => event::convert(obj, &from, to),
        ("resource.k8s.io", "resourceclaims" | "resourceclaimtemplates" | "resourceslices") => {
            let mut obj = identical(group, resource, obj, &from, to)?;
            let beta = |v: &str| v == "resource.k8s.io/v1beta1";
            if beta(&from) != beta(to) {
                dra::convert(resource, &mut obj, beta(to));
            }
            Ok(obj)
        }
        _ => identical(group, resource, obj, &from, to),
    }
}

/// The version part of `api_version` when it belongs to `group` (`"v1"` for the core group).
fn version_in<'a>(group: &str, api_version: &'a str) -> Option<&'a str> {
    match api_version.split_once('/') {
        Some((g, v)) if g == group && !group.is_empty() => Some(v),
        None if group.is_empty() => Some(api_version),
        _ => None,
    }
}

fn unconvertible(group: &str, resource: &str, from: &str, to: &str) -> String {
    let resource = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    format!("no conversion of {resource} from {from:?} to {to:?}")
}

fn identical(
    group: &str,
    resource: &str,
    mut obj: Value,
    from: &str,
    to: &str,
) -> Result<Value, String> {
    let versions = IDENTICAL
        .iter()
        .find(|(g, r, _)| *g == group && *r == resource)
        .map(|(_, _, vs)| *vs)
        .unwrap_or(&[]);
    let served =
        |api_version: &str| version_in(group, api_version).is_some_and(|v| versions.contains(&v));
    if !served(from) || !served(to) {
        return Err(unconvertible(group, resource, from, to));
    }
    set_api_version(&mut obj, to);
    Ok(obj)
}

/// Sets `apiVersion`, keeping its place among the members.
fn set_api_version(obj: &mut Value, to: &str) {
    if let Some(map) = obj.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(to.into()));
    }
}

#[cfg(test)]
mod tests;
