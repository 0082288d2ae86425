//! keel-client: a Kubernetes API client for keel's own programs (the load generator now, the
//! scheduler and controllers next), usable against any Kubernetes API server.
//!
//! Layers, each using only those above it:
//! - `kubeconfig`: a kubeconfig context resolved to an `Endpoint` (URL, CA, token or client
//!   certificate). Pure (file reads through a callback).
//! - `transport` (private; `KubeClient`, `Response`, `BodyStream`, `Method`): pooled HTTP/1.1
//!   over TCP or rustls, requests rendered into reused buffers, responses parsed in place,
//!   bodies streamed as they arrive (`get_streamed`, `stream`). Built for the load generator's
//!   hot paths: it must stay as cheap per request as it is (see `client/README.md`).
//! - `error` (`Error`, `Status`) and `resource` (`ResourcePath`, `ListParams`, `WatchParams`,
//!   `Patch`): pure.
//! - `api`: `KubeClient::{get, list, list_all, create, update, patch, delete, call}` on any
//!   resource path, returning JSON (or bytes) or an `Error` carrying the server's Status.
//! - `watch`: `KubeClient::watch`, a `WatchStream` of decoded `WatchEvent`s.
//! - `reflector`: `Reflector`, a list-then-watch cache (`Store`) that delivers `Change`s and
//!   recovers by itself (re-watch, re-list on 410, backoff on failures).
//!
//! Invariants:
//! - every buffer and queue is bounded by a named constant in `limits` (response heads and
//!   bodies, chunk lines, trailers, watch event lines, list items, the reflector's change
//!   queue, backoff delays); a bound hit is an error, or for the change queue back-pressure;
//! - every request has a timeout (a watch: its head, then silence longer than its
//!   `timeoutSeconds` plus `WATCH_IDLE_GRACE`);
//! - a request is never sent twice unless it is idempotent and its kept-alive connection was
//!   closed before any byte of the answer;
//! - the reflector's cache is only written by its task, under a lock never held across an
//!   await, and is updated before the change announcing it is sent.
//!
//! Dependencies: tokio, rustls (ring), httparse, bytes, memchr, serde/serde_json,
//! serde_yaml_ng, base64, and of keel's crates only keel-chunked (the chunked-body decoder
//! it shares with keel-http): the client must build and work without the server
//! (keel-server, keel-http, keel-engine, keel-api are off limits).

pub mod api;
pub mod error;
pub mod kubeconfig;
pub mod limits;
pub mod reflector;
pub mod resource;
#[cfg(test)]
mod testing;
mod transport;
pub mod watch;

pub use api::ObjectList;
pub use error::{Error, Status};
pub use reflector::{Change, Reflector, ReflectorConfig, ReflectorStats, Store};
pub use resource::{encode_query_value, ListParams, Patch, ResourcePath, WatchParams};
pub use transport::{
    status_error, BodyStream, Forward, Forwarded, KubeClient, Method, Response, JSON, JSON_PATCH,
    MERGE_PATCH, STRATEGIC_MERGE_PATCH, USER_AGENT_DEFAULT,
};
pub use watch::{WatchEvent, WatchStream};
