//! Per-type policy of built-in Kubernetes resources ("strategies", as in `k8s.io/apiserver`'s
//! registry): defaulting, what create/update/status writes may change, validation, the
//! status/spec split, generation tracking, and field-selector values.
//!
//! Every function here is pure: objects are `serde_json::Value`s in their versioned JSON form
//! (apiVersion/kind/metadata/...), there is no I/O and no clock (the caller passes `Ctx`).
//! Malformed input never panics: defaulting skips members of the wrong JSON type and
//! validation reports what it can.
//!
//! Resources are identified by `(group, plural resource)`; the core group is `""`.
//! Depends only on `serde`/`serde_json`.

mod config;
mod cron;
mod diff;
mod errors;
mod fields;
pub mod generic;
mod json;
mod meta;
mod names;
mod namespace;
mod node;
mod pod;
mod podspec_defaults;
mod podspec_validation;
mod quantity;
mod registry;
mod scale;
mod selector;
mod service;
mod workload_defaults;
mod workload_validation;

pub use errors::FieldErr;
pub use fields::{field_value, selectable_fields};
pub use namespace::mark_terminating;
pub use registry::{Kind, Traits};
pub use scale::{apply_scale, scale_from, validate_scale};
pub use workload_defaults::job_generate_selector;

use registry::Kind as K;
use serde_json::Value;

/// Request context the policy needs (the server's clock).
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    /// Current time, RFC 3339 (`2024-01-02T03:04:05Z`), used for condition timestamps.
    pub now_rfc3339: String,
}

/// The per-type flags of a resource (status subresource, generation, create-on-update, ...).
pub fn traits(group: &str, resource: &str) -> Traits {
    registry::traits(group, resource)
}

/// Applies the schema defaults of a type (what upstream does when decoding any request body).
pub fn apply_defaults(group: &str, resource: &str, obj: &mut Value) {
    match registry::kind(group, resource) {
        K::Pod => pod::default_pod(obj),
        K::Namespace => namespace::default_namespace(obj),
        K::Service => service::default_service(obj),
        K::Node => node::default_node(obj),
        K::Secret => config::default_secret(obj),
        kind => workload_defaults::apply(kind, obj),
    }
}

fn set_status(obj: &mut Value, status: Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), status);
    }
}

/// Prepares a new object for creation: defaults, admission-plugin additions (pods), initial
/// status, `metadata.generation`. Call after the server assigned name and uid.
pub fn prepare_for_create(group: &str, resource: &str, obj: &mut Value, ctx: &Ctx) {
    let tr = registry::traits(group, resource);
    let kind = registry::kind(group, resource);
    generic::prepare_create(
        obj,
        tr.status_subresource && !tr.keep_status_on_create,
        tr.tracks_generation,
    );
    apply_defaults(group, resource, obj);
    match kind {
        K::Pod => {
            pod::admit_pod(obj);
            let status = pod::initial_status(obj, &ctx.now_rfc3339);
            set_status(obj, status);
        }
        K::Namespace => namespace::prepare_create(obj),
        K::Service => set_status(obj, service::initial_status()),
        K::Job => {
            job_generate_selector(obj);
            // Upstream re-defaults when the stored object is read back: Job labels then
            // come from the (now labelled) template.
            apply_defaults(group, resource, obj);
        }
        _ => {}
    }
    if let Some(status) = workload_defaults::initial_status(kind) {
        set_status(obj, status);
    }
}

/// Prepares an update of the main resource: defaults the new object, keeps the stored status
/// (types with a status subresource) and generation, bumps the generation on spec changes, and
/// carries over what only the server may change.
pub fn prepare_for_update(group: &str, resource: &str, new: &mut Value, old: &Value, _ctx: &Ctx) {
    let tr = registry::traits(group, resource);
    apply_defaults(group, resource, new);
    match registry::kind(group, resource) {
        K::Namespace => namespace::prepare_update(new, old),
        K::Service => service::keep_allocated(new, old),
        _ => {}
    }
    generic::prepare_update(new, old, tr.status_subresource, tr.tracks_generation);
    let is_deployment = registry::kind(group, resource) == K::Deployment;
    let old_gen = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let bumped = new.pointer("/metadata/generation").and_then(Value::as_i64) != Some(old_gen);
    let annotations_changed =
        new.pointer("/metadata/annotations") != old.pointer("/metadata/annotations");
    if is_deployment && !bumped && annotations_changed {
        generic::bump_generation(new, old_gen);
    }
}

/// Prepares a write to a subresource: `status` (everything but status from the stored object),
/// `finalize` (namespaces: only `spec.finalizers`), `ephemeralcontainers` (pods: only
/// `spec.ephemeralContainers`). Unknown subresources leave `new` unchanged.
pub fn prepare_for_subresource_update(
    group: &str,
    resource: &str,
    subresource: &str,
    new: &mut Value,
    old: &Value,
) {
    let kind = registry::kind(group, resource);
    match (kind, subresource) {
        (_, "status") => {
            apply_defaults(group, resource, new);
            generic::prepare_status_update(new, old);
        }
        (K::Namespace, "finalize") => namespace::prepare_finalize(new, old),
        (K::Pod, "ephemeralcontainers") => {
            apply_defaults(group, resource, new);
            let ephemeral = new.pointer("/spec/ephemeralContainers").cloned();
            let mut merged = old.clone();
            if let Some(spec) = merged.get_mut("spec").and_then(Value::as_object_mut) {
                match ephemeral {
                    Some(e) => spec.insert("ephemeralContainers".into(), e),
                    None => spec.remove("ephemeralContainers"),
                };
            }
            *new = merged;
        }
        _ => {}
    }
}

fn name_rule(kind: K) -> meta::NameRule {
    match kind {
        K::Namespace => meta::NameRule::Label,
        K::Service => meta::NameRule::Label1035,
        K::Other => meta::NameRule::PathSegment,
        _ => meta::NameRule::Subdomain,
    }
}

/// Validates an object for create (metadata and the type's rules).
pub fn validate(group: &str, resource: &str, obj: &Value) -> Vec<FieldErr> {
    let tr = registry::traits(group, resource);
    let kind = registry::kind(group, resource);
    let mut errs = meta::validate(obj, tr.namespaced, name_rule(kind));
    errs.extend(validate_type(group, resource, obj));
    errs
}

/// The type's own rules for create, without the object's metadata: for callers that validate
/// `ObjectMeta` themselves (the API server does, for every type), so it is not checked twice.
pub fn validate_type(group: &str, resource: &str, obj: &Value) -> Vec<FieldErr> {
    match registry::kind(group, resource) {
        K::Pod => {
            let spec = obj.get("spec").unwrap_or(&Value::Null);
            podspec_validation::validate_pod_spec(spec, "spec")
        }
        K::Service => service::validate(obj),
        K::Node => node::validate(obj),
        K::ConfigMap => config::validate_config_map(obj),
        K::Secret => config::validate_secret(obj),
        K::Namespace | K::Event | K::Other => Vec::new(),
        workload => workload_validation::validate(workload, obj),
    }
}

/// Validates an update: the new object as for create, plus the type's update rules.
pub fn validate_update(group: &str, resource: &str, new: &Value, old: &Value) -> Vec<FieldErr> {
    let mut errs = validate(group, resource, new);
    errs.extend(update_rules(group, resource, new, old));
    errs
}

/// `validate_update` without the new object's metadata (see `validate_type`).
pub fn validate_update_type(
    group: &str,
    resource: &str,
    new: &Value,
    old: &Value,
) -> Vec<FieldErr> {
    let mut errs = validate_type(group, resource, new);
    errs.extend(update_rules(group, resource, new, old));
    errs
}

/// The type's rules on what an update may change.
fn update_rules(group: &str, resource: &str, new: &Value, old: &Value) -> Vec<FieldErr> {
    match registry::kind(group, resource) {
        K::Pod => pod::validate_update(new, old),
        K::Service => service::validate_update(new, old),
        K::ConfigMap => config::validate_update(new, old, &["data", "binaryData"]),
        K::Secret => {
            let mut errs = config::validate_update(new, old, &["data"]);
            errs.extend(config::validate_secret_type_update(new, old));
            errs
        }
        kind => workload_validation::validate_update(kind, new, old),
    }
}

/// Upstream `AllowCreateOnUpdate`: whether PUT to a missing object creates it.
pub fn allow_create_on_update(group: &str, resource: &str) -> bool {
    registry::traits(group, resource).create_on_update
}

/// Upstream `AllowUnconditionalUpdate`: whether PUT without `metadata.resourceVersion` is allowed.
pub fn allow_unconditional_update(group: &str, resource: &str) -> bool {
    registry::traits(group, resource).unconditional_update
}

/// Whether the type is served with a `/status` subresource.
pub fn has_status_subresource(group: &str, resource: &str) -> bool {
    registry::traits(group, resource).status_subresource
}

/// Whether the type starts `metadata.generation` at 1 and bumps it on spec changes.
pub fn tracks_generation(group: &str, resource: &str) -> bool {
    registry::traits(group, resource).tracks_generation
}

/// A pod's QoS class: `Guaranteed`, `Burstable` or `BestEffort`.
pub fn qos_class(pod: &Value) -> &'static str {
    pod::qos_class(pod)
}

/// Whether the server must allocate a cluster IP for this Service.
pub fn service_needs_cluster_ip(svc: &Value) -> bool {
    service::needs_cluster_ip(svc)
}

/// Indexes of the Service's ports that need a node port allocated.
pub fn service_node_ports_needed(svc: &Value) -> Vec<usize> {
    service::node_ports_needed(svc)
}

/// Whether the Service needs a `healthCheckNodePort` allocated.
pub fn service_needs_health_check_node_port(svc: &Value) -> bool {
    service::needs_health_check_node_port(svc)
}

/// Checks user-given node ports against the server's node port range (inclusive).
pub fn validate_service_node_ports(svc: &Value, range: (u16, u16)) -> Vec<FieldErr> {
    service::validate_node_ports(svc, range)
}

#[cfg(test)]
mod tests;
