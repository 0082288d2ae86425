//! keel's API server: the HTTP handlers, generic registry and controllers on top of the
//! storage engine. Layers: `app` (routing, auth, non-resource endpoints) -> `registry`,
//! `watch`, `subresources` (verbs) -> `store` (engine glue). Pure API semantics live in
//! keel-api, keel-schema, keel-catalog and keel-strategy; protobuf in keel-proto; HTTP in
//! keel-http.

// `ApiError` mirrors metav1.Status (160 bytes); errors are the cold path of every handler.
#![allow(clippy::result_large_err)]

/// The global allocator of every binary that runs this server (`apiserver`, and the load
/// tool's copy of it for tests): per-thread free lists suit the thread-per-core runtimes' many
/// short-lived request allocations (JSON trees) better than glibc malloc, which was about a
/// quarter of create CPU in profiles.
pub type Allocator = mimalloc::MiMalloc;

pub mod alloc;
pub mod app;
pub mod auth;
pub mod bootstrap;
pub mod call;
pub mod health;
pub mod metrics;
pub mod nsctl;
pub mod objects;
pub mod options;
pub mod registry;
pub mod request_info;
pub mod respond;
pub mod reviews;
pub mod run;
pub mod schema_meta;
pub mod store;
pub mod subresources;
pub mod watch;
pub mod watch_feed;
