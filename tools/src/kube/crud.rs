//! create, get, update, patch and delete of objects named by a `Naming`.

use super::{ensure_namespaces, one_object};
use crate::driver::{self, Plan};
use crate::objects::{self, Naming, SENT_ANNOTATION};
use crate::report::Report;
use bytes::Bytes;
use keel_client::Method;
use keel_client::{KubeClient, JSON, MERGE_PATCH};
use serde_json::json;
use std::sync::Arc;

/// What `create` writes.
#[derive(Clone, Debug)]
pub struct CreateSpec {
    pub naming: Naming,
    /// ConfigMap payload bytes (Pods: ignored).
    pub size: usize,
    /// Payload size spread, 0..1 (0.5 = +-50%).
    pub size_spread: f64,
    /// First object index (objects first..first+count).
    pub first: u64,
}

/// Creates objects `first..first+ops` (the plan's count) after creating their namespaces (and,
/// for custom resources, their CRD: `crd::ensure_kind`).
pub async fn create(c: &KubeClient, spec: &CreateSpec, plan: &Plan) -> Result<Report, String> {
    super::crd::ensure_kind(c, spec.naming.kind).await?;
    ensure_namespaces(c, &spec.naming.all_namespaces()).await?;
    let (c2, spec2) = (c.clone(), Arc::new(spec.clone()));
    let sum = driver::run("create", plan, move |i| {
        let (c, spec) = (c2.clone(), spec2.clone());
        async move {
            let i = spec.first + i;
            let size = objects::spread_size(spec.size, spec.size_spread, i);
            let obj = objects::object_json(&spec.naming, i, size, 0);
            let path = spec.naming.collection_path(&spec.naming.namespace(i));
            let resp = c
                .request(Method::POST, &path, Some((JSON, obj.into())))
                .await?
                .ok()?;
            Ok(one_object(&resp))
        }
    })
    .await?;
    let mut r = Report::new("create", "kube");
    r.ops.push(sum);
    Ok(r)
}

/// GETs objects `first + i mod count` for the plan's operations.
pub async fn get(
    c: &KubeClient,
    naming: &Naming,
    first: u64,
    count: u64,
    plan: &Plan,
) -> Result<Report, String> {
    let (c2, n) = (c.clone(), Arc::new(naming.clone()));
    let count = count.max(1);
    let sum = driver::run("get", plan, move |i| {
        let (c, n) = (c2.clone(), n.clone());
        async move {
            let resp = c
                .request(Method::GET, &n.item_path(first + i % count), None)
                .await?
                .ok()?;
            Ok(one_object(&resp))
        }
    })
    .await?;
    Ok(single("get", sum))
}

/// PUTs a new version of object `i mod count` (unconditional update: no resourceVersion, so
/// the server does the read-modify-write, as for `kubectl replace`).
pub async fn update(
    c: &KubeClient,
    spec: &CreateSpec,
    count: u64,
    plan: &Plan,
) -> Result<Report, String> {
    let (c2, spec2) = (c.clone(), Arc::new(spec.clone()));
    let count = count.max(1);
    let sum = driver::run("update", plan, move |i| {
        let (c, spec) = (c2.clone(), spec2.clone());
        async move {
            let idx = spec.first + i % count;
            let size = objects::spread_size(spec.size, spec.size_spread, idx);
            let obj = objects::object_json(&spec.naming, idx, size, i / count + 1);
            let path = spec.naming.item_path(idx);
            let resp = c
                .request(Method::PUT, &path, Some((JSON, obj.into())))
                .await?
                .ok()?;
            Ok(one_object(&resp))
        }
    })
    .await?;
    Ok(single("update", sum))
}

/// Merge-patches the annotations of object `first + i mod count`.
pub async fn patch(
    c: &KubeClient,
    naming: &Naming,
    first: u64,
    count: u64,
    plan: &Plan,
) -> Result<Report, String> {
    let (c2, n) = (c.clone(), Arc::new(naming.clone()));
    let count = count.max(1);
    let sum = driver::run("patch", plan, move |i| {
        let (c, n) = (c2.clone(), n.clone());
        async move {
            let body = json!({"metadata": {"annotations": {
                SENT_ANNOTATION: objects::now_unix_nanos().to_string(),
                "loadgen.keel.dev/patched": i.to_string(),
            }}});
            let body = (MERGE_PATCH, Bytes::from(body.to_string()));
            let resp = c
                .request(Method::PATCH, &n.item_path(first + i % count), Some(body))
                .await?
                .ok()?;
            Ok(one_object(&resp))
        }
    })
    .await?;
    Ok(single("patch", sum))
}

/// Deletes objects `first..first+ops` (each once).
pub async fn delete(
    c: &KubeClient,
    naming: &Naming,
    first: u64,
    plan: &Plan,
) -> Result<Report, String> {
    let (c2, n) = (c.clone(), Arc::new(naming.clone()));
    let sum = driver::run("delete", plan, move |i| {
        let (c, n) = (c2.clone(), n.clone());
        async move {
            let resp = c
                .request(Method::DELETE, &n.item_path(first + i), None)
                .await?
                .ok()?;
            Ok(one_object(&resp))
        }
    })
    .await?;
    Ok(single("delete", sum))
}

fn single(name: &str, sum: crate::report::OpSummary) -> Report {
    let mut r = Report::new(name, "kube");
    r.ops.push(sum);
    r
}
