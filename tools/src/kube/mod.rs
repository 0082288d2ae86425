//! Workloads against a Kubernetes API server over HTTP.

pub mod apply;
pub mod churn;
pub mod crd;
pub mod crud;
pub mod list;
pub mod nodes;
pub mod slowbodies;
pub mod watch;

use crate::driver::Outcome;
use bytes::Bytes;
use keel_client::Method;
use keel_client::{KubeClient, Response, JSON};
use serde_json::Value;

/// Creates each namespace unless it exists.
pub async fn ensure_namespaces(c: &KubeClient, names: &[String]) -> Result<(), String> {
    for ns in names {
        create_if_absent(c, "/api/v1/namespaces", &crate::objects::namespace(ns)).await?;
    }
    Ok(())
}

/// POSTs `obj` to `collection`; an existing object (409) is fine. Returns the response.
pub async fn create_if_absent(
    c: &KubeClient,
    collection: &str,
    obj: &Value,
) -> Result<Response, String> {
    let resp = c
        .request(Method::POST, collection, Some(json_body(obj)))
        .await?;
    match resp.status {
        200..=299 | 409 => Ok(resp),
        _ => resp.ok(),
    }
}

/// A JSON request body.
pub fn json_body(v: &Value) -> (&'static str, Bytes) {
    (JSON, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
}

/// What a successful response moved (its bytes, one object).
pub fn one_object(resp: &Response) -> Outcome {
    Outcome {
        bytes: resp.body.len() as u64,
        objects: 1,
    }
}

/// `metadata.resourceVersion` of an object or list, as a number.
pub fn resource_version(v: &Value) -> Option<u64> {
    v.get("metadata")?
        .get("resourceVersion")?
        .as_str()?
        .parse()
        .ok()
}

/// `resourceVersion` of the response body (an object or a list).
pub fn response_rv(resp: &Response) -> Result<u64, String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "resourceVersion")]
        rv: String,
    }
    #[derive(serde::Deserialize)]
    struct Doc {
        metadata: Meta,
    }
    let d: Doc =
        serde_json::from_slice(&resp.body).map_err(|e| format!("no resourceVersion: {e}"))?;
    d.metadata
        .rv
        .parse()
        .map_err(|_| format!("resourceVersion {:?} is not a number", d.metadata.rv))
}

/// The collection's current resourceVersion (from a one-item list).
pub async fn current_rv(c: &KubeClient, collection: &str) -> Result<u64, String> {
    let resp = c
        .request(Method::GET, &format!("{collection}?limit=1"), None)
        .await?
        .ok()?;
    response_rv(&resp)
}
