//! keel's resource catalog: every resource type the server serves (the built-in types of a
//! Kubernetes v1.36 API server, and resources added at run time such as CRDs), the discovery
//! documents describing them, and server-side Table (`kubectl get`) rendering: built-in
//! printers, and custom resources' `additionalPrinterColumns` through client-go's JSONPath
//! (`jsonpath`, `table::custom`).
//!
//! A [`Catalog`] is one immutable snapshot; [`Catalog::with_changes`] builds the next one
//! (resources added or removed). The server keeps the current snapshot behind an atomically
//! swapped pointer shared by every core (`keel_server::routes::LiveRoutes`).
//!
//! Pure logic: no I/O, no async runtime. May depend only on serde/serde_json, the `k8s-openapi`
//! type bindings (group/version/kind/plural/scope of each type), hashing/encoding crates,
//! keel-api (its timestamps) and keel-schema (the OpenAPI field descriptions Table columns
//! carry; keel-schema depends on no keel crate that uses the catalog).
//!
//! Invariants:
//! - Kind, plural and scope of every built-in resource come from `k8s-openapi`'s `Resource`
//!   impls; the discovery-only data (verbs, short names, categories, singular names,
//!   subresources, group and version priorities) lives in one table, `data.rs`.
//! - A snapshot is immutable; its discovery documents are built once, when it is built. A
//!   snapshot someone holds stays valid and unchanged while newer ones are served.
//! - Every snapshot has a generation, unique in the process and higher than that of any
//!   snapshot built before it, so caches derived from a snapshot can be keyed by it.
//! - Built-in resources (served or disabled by `--runtime-config`) cannot be added or removed
//!   at run time; run-time resources never collide with a served group/version/plural or
//!   group/version/kind, and all served versions of one group/resource agree on kind, scope
//!   and storage version (they share one storage prefix).
//! - Names known only at run time are interned: each distinct string is leaked once, ever,
//!   and at most [`INTERNED_BYTES_MAX`] bytes in all. Every bound is in `limits.rs`.

mod builtin;
mod catalog;
mod change;
mod data;
mod deprecation;
mod deprecations;
mod discovery;
mod emulation;
mod error;
mod groups;
mod intern;
mod introduced;
pub mod jsonpath;
mod limits;
mod runtime_config;
mod spec;
mod storage;
pub mod table;
mod types;
mod versions;

pub use catalog::{Catalog, LocalApiService, DEFAULT_SERVER_ADDRESS};
pub use change::CatalogChange;
pub use deprecation::{deprecation, is_deprecated_anywhere, Deprecation};
pub use emulation::{Emulation, BINARY_VERSION_MINOR, EMULATION_MINOR_MIN};
pub use error::CatalogError;
pub use intern::interned_bytes;
pub use limits::{
    GROUP_BYTES_MAX, INTERNED_BYTES_MAX, NAMES_PER_LIST_MAX, NAME_BYTES_MAX,
    RUNTIME_CONFIG_BYTES_MAX, SERVED_RESOURCES_MAX,
};
pub use spec::{ResourceId, ResourceSpec, SubresourceSpec, CUSTOM_RESOURCE_VERBS};
pub use storage::StorageVersion;
pub use table::{custom_table, table, ColumnError, CustomColumns, IncludeObject};
pub use types::{ResourceInfo, SubresourceInfo};

#[cfg(test)]
mod tests;
