//! Per-resource policy ("strategies", as in `k8s.io/apiserver`'s registry): all the
//! type-specific decisions a generic registry leaves to the type. One [`Strategy`] per
//! resource, resolved once ([`strategy`], [`custom_resource`]) and carried with the
//! resource's info:
//! - writes: defaulting and admission defaults, what create/update/subresource writes may
//!   change, the status/spec split, generation tracking, `stringData` canonicalization;
//! - validation: `ObjectMeta` with the type's name rule (keel-api's validator, the only one)
//!   and the type's own rules, returned as the `details.causes` of a 422;
//! - deletion: graceful deletion of pods, namespace termination, finalizers;
//! - field selectors, the `scale` and `binding` subresources, namespace `finalize`;
//! - what a Service needs from the server's allocators (the allocators stay in the server).
//!
//! Invariants: every function is pure. Objects are `serde_json::Value`s in their versioned
//! JSON form (apiVersion/kind/metadata/...); there is no I/O and no clock (the caller passes
//! [`Ctx`]); whatever reads storage (namespace lifecycle, node existence) is the caller's and
//! enters as a value or a closure. Malformed input never panics: defaulting skips members of
//! the wrong JSON type and validation reports what it can. Messages follow upstream's
//! wording, which clients match on.
//!
//! Resources are identified by `(group, plural resource)`; the core group is `""`.
//! May depend on: keel-api (Status causes, names, ObjectMeta validation), serde/serde_json,
//! base64.

mod binding;
mod config;
mod cron;
mod ctx;
mod deletion;
mod diff;
mod errors;
mod fields;
mod generic;
mod json;
mod kind;
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
mod service_alloc;
mod strategy;
mod validation;
mod workload_defaults;
mod workload_validation;

pub use ctx::Ctx;
pub use deletion::DeletionPlan;
pub use errors::FieldErr;
pub use kind::Kind;
pub use registry::{custom_resource, strategy, Strategy, Traits};
pub use service_alloc::{
    AllocError, ClusterIpNeed, FailedNeed, NodePortNeed, Request, ServiceHeld, ServiceNeeds,
};

use serde_json::Value;

// ------------------------------------------------------------------------------------------
// Per-call entry points the server uses until it resolves a `Strategy` per resource at
// routing time. Each looks the strategy up and delegates; remove them once nothing calls
// them.

/// [`Strategy::prepare_for_create`] of `group/resource`.
pub fn prepare_for_create(group: &str, resource: &str, obj: &mut Value, ctx: &Ctx) {
    strategy(group, resource).prepare_for_create(obj, ctx)
}

/// [`Strategy::prepare_for_update`] of `group/resource`.
pub fn prepare_for_update(group: &str, resource: &str, new: &mut Value, old: &Value, ctx: &Ctx) {
    strategy(group, resource).prepare_for_update(new, old, ctx)
}

/// [`Strategy::prepare_for_subresource_update`] of `group/resource`.
pub fn prepare_for_subresource_update(
    group: &str,
    resource: &str,
    subresource: &str,
    new: &mut Value,
    old: &Value,
) {
    strategy(group, resource).prepare_for_subresource_update(subresource, new, old)
}

/// The type's own rules for create, without the object's metadata (for a caller that
/// validates `ObjectMeta` itself; [`Strategy::validate_create`] does both).
pub fn validate_type(group: &str, resource: &str, obj: &Value) -> Vec<FieldErr> {
    validation::type_rules(strategy(group, resource).kind, obj)
}

/// [`validate_type`] plus the type's rules on what an update may change.
pub fn validate_update_type(
    group: &str,
    resource: &str,
    new: &Value,
    old: &Value,
) -> Vec<FieldErr> {
    let kind = strategy(group, resource).kind;
    let mut errs = validation::type_rules(kind, new);
    errs.extend(validation::update_rules(kind, new, old));
    errs
}

/// [`Strategy::allow_create_on_update`] of `group/resource`.
pub fn allow_create_on_update(group: &str, resource: &str) -> bool {
    strategy(group, resource).allow_create_on_update()
}

/// [`Strategy::allow_unconditional_update`] of `group/resource`.
pub fn allow_unconditional_update(group: &str, resource: &str) -> bool {
    strategy(group, resource).allow_unconditional_update()
}

/// [`Strategy::selectable_fields`] of `group/resource`.
pub fn selectable_fields(group: &str, resource: &str) -> &'static [&'static str] {
    strategy(group, resource).selectable_fields()
}

/// [`Strategy::field_value`] of `group/resource`.
pub fn field_value(group: &str, resource: &str, obj: &Value, field: &str) -> Option<String> {
    strategy(group, resource).field_value(obj, field)
}

/// [`Strategy::scale_from`] of `group/resource`.
pub fn scale_from(group: &str, resource: &str, obj: &Value) -> Option<Value> {
    strategy(group, resource).scale_from(obj)
}

/// Sets a workload's `spec.replicas` ([`Strategy::apply_scale`]).
pub fn apply_scale(obj: &mut Value, replicas: i64) {
    scale::apply_scale(obj, replicas)
}

/// A namespace's phase becomes `Terminating` (part of [`Strategy::mark_deleting`]).
pub fn mark_terminating(ns: &mut Value) {
    namespace::mark_terminating(ns)
}

#[cfg(test)]
mod tests;
