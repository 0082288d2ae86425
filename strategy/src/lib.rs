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

mod api_defaults;
mod autoscaling;
mod binding;
mod config;
mod convert;
mod core_defaults;
mod crd;
mod cron;
mod ctx;
mod deletion;
mod diff;
mod dra;
mod endpoints;
mod errors;
mod fields;
mod flowcontrol;
mod generic;
mod gojson;
mod ipaddress;
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
mod service_families;
mod strategy;
mod validation;
mod workload_defaults;
mod workload_validation;

pub use convert::{convert, shared_storage_resource, storage_api_version};
pub use core_defaults::{
    PVC_PROTECTION_FINALIZER, PV_PROTECTION_FINALIZER, VAC_PROTECTION_FINALIZER,
};
pub use ctx::{Ctx, Requester};
pub use deletion::{
    set_crd_condition, DeletionPlan, GcPolicy, Propagation, CRD_CLEANUP_FINALIZER,
    FINALIZER_FOREGROUND, FINALIZER_ORPHAN,
};
pub use dra::{admin_access_forbidden, ADMIN_ACCESS_LABEL};
pub use errors::FieldErr;
pub use kind::Kind;
pub use registry::{custom_resource, strategy, Strategy, Traits};
pub use service_alloc::{
    AllocError, FailedNeed, IpNeed, NodePortNeed, Request, ServiceHeld, ServiceNeeds,
};
pub use service_families::{family_of, IPV4, IPV6};

#[cfg(test)]
mod tests;
