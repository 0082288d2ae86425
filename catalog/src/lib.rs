//! keel's built-in resource catalog: the table of every built-in resource type a Kubernetes
//! v1.32 API server serves, the discovery documents describing them, and server-side Table
//! (`kubectl get`) rendering.
//!
//! Pure logic: no I/O, no async runtime. May depend only on serde/serde_json, the `k8s-openapi`
//! type bindings (group/version/kind/plural/scope of each type), and hashing/encoding crates.
//!
//! Invariants:
//! - Kind, plural and scope of every resource come from `k8s-openapi`'s `Resource` impls; the
//!   discovery-only data (verbs, short names, categories, singular names, subresources, group
//!   and version priorities) lives in one table, `data.rs`.
//! - A `Catalog` is immutable once built; its discovery documents are built once, in `new`.

mod builtin;
mod catalog;
mod data;
mod discovery;
mod groups;
mod runtime_config;
mod storage;
pub mod table;
mod types;
mod versions;

pub use catalog::{Catalog, DEFAULT_SERVER_ADDRESS};
pub use runtime_config::RUNTIME_CONFIG_BYTES_MAX;
pub use storage::StorageVersion;
pub use table::{table, IncludeObject};
pub use types::{ResourceInfo, SubresourceInfo};

#[cfg(test)]
#[cfg(test)]
mod tests;
