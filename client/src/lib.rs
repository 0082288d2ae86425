//! keel-client: a Kubernetes API client (placeholder docs, completed below).

pub mod kubeconfig;
pub mod limits;
mod transport;

pub use transport::{
    status_error, BodyStream, KubeClient, Method, Response, JSON, JSON_PATCH, MERGE_PATCH,
    STRATEGIC_MERGE_PATCH, USER_AGENT_DEFAULT,
};
