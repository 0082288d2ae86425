//! keel's API server: HTTP handlers over a typed registry over a storage backend, with the
//! per-type policy in keel-strategy.
//!
//! Layers, each importing only the ones below it (no module imports one that imports it back):
//!
//! ```text
//!   run                 start-up: options, backend, layers, serving, controllers
//!   handlers/           HTTP: routing, authn/authz, query, negotiation, bodies, responses,
//!                       watch streams, subresources, reviews, discovery, OpenAPI, health
//!   controllers/        bootstrap, the namespace, CRD and flow-control controllers (registry
//!                       clients)
//!   state               the shared state: registry, live routes, auth, metrics, settings
//!   fieldmanager        managedFields and server-side apply (keel-smd over keel-schema)
//!   registry/           typed get/list/watch/create/guaranteed_update/delete/deletecollection
//!   routes              live resource table: catalog snapshot + storage location per resource
//!   watch_feed/         per-core shared watch fan-out (log, pacing, task, subscription)
//!   selection, repr     selectors and watch-event rules; media types and encodings
//!   storage/            the backend seam: `dyn keel_engine::Store`, keys, errors
//!   flowcontrol/        priority and fairness: classification, fair queuing, per-core seats
//!   authz               the authorization modes and their chain (RBAC over keel-rbac, Node
//!                       over nodeauthz)
//!   nodeauthz           the Node authorizer: its graph and decisions, pure (no I/O)
//!   objects, alloc, auth, metrics, options, limits, schema_meta, custom, versions  (leaves)
//! ```
//!
//! Pure API semantics live in keel-api, keel-schema, keel-catalog and keel-strategy; protobuf
//! in keel-proto; HTTP in keel-http. The server holds its store as `Arc<dyn Store>` and never
//! names a backend outside `run` (which opens the one `--storage-backend` names).

// `ApiError` mirrors metav1.Status (160 bytes); errors are the cold path of every handler.
#![allow(clippy::result_large_err)]

/// The global allocator of every binary that runs this server (`apiserver`, and the load
/// tool's copy of it for tests): per-thread free lists suit the thread-per-core runtimes' many
/// short-lived request allocations (JSON trees) better than glibc malloc, which was about a
/// quarter of create CPU in profiles.
pub type Allocator = mimalloc::MiMalloc;

pub mod aggregator;
pub mod alloc;
pub mod auth;
pub mod authz;
pub mod controllers;
pub mod custom;
pub mod feature_gates;
pub mod fieldmanager;
pub mod flowcontrol;
pub mod handlers;
pub mod impersonation;
pub mod lifecycle;
pub mod limits;
pub mod metrics;
pub mod nodeauthz;
pub mod objects;
pub mod options;
pub mod registry;
pub mod repr;
pub mod routes;
pub mod run;
pub mod schema_meta;
pub mod selection;
pub mod service_ref;
pub mod serviceaccount;
pub mod state;
pub mod storage;
pub mod versions;
pub mod watch_feed;
