//! keel-client: a Kubernetes API client (placeholder docs, completed below).

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
    status_error, BodyStream, KubeClient, Method, Response, JSON, JSON_PATCH, MERGE_PATCH,
    STRATEGIC_MERGE_PATCH, USER_AGENT_DEFAULT,
};
pub use watch::{WatchEvent, WatchStream};
