//! CustomResourceDefinitions against an API server: making sure the Widget CRD is served
//! before a widgets workload (`ensure_kind`), and `crd-latency`, the time from creating a CRD
//! to the first successful create of one of its custom resources.

use super::ensure_namespaces;
use crate::limits::{
    CRD_DELETE_TIMEOUT, CRD_ESTABLISHED_TIMEOUT, CRD_POLL_INTERVAL, CRD_READY_TIMEOUT,
};
use crate::objects::widgets::{self, CrdNames, CRD_COLLECTION};
use crate::objects::Kind;
use crate::report::{Recorder, Report};
use keel_client::{KubeClient, Method, JSON};
use std::time::{Duration, Instant};

/// Whether the server serves CustomResourceDefinitions at all (`apiextensions.k8s.io/v1`):
/// false when the collection answers 404. A server may store CRDs without serving their
/// custom resources (no controller establishes them): `widgets_served` tells.
pub async fn serves_crds(c: &KubeClient) -> Result<bool, String> {
    let resp = c
        .request(Method::GET, &format!("{CRD_COLLECTION}?limit=1"), None)
        .await?;
    match resp.status {
        404 => Ok(false),
        _ => resp.ok().map(|_| true),
    }
}

/// Before a workload writes objects of `kind`: for `Widgets`, creates the CRD
/// `widgets.bench.keel.dev` unless it exists and waits until it is served (`ensure_crd`).
/// Other kinds are built in: nothing to do.
pub async fn ensure_kind(c: &KubeClient, kind: Kind) -> Result<(), String> {
    match kind {
        Kind::Configmaps | Kind::Pods => Ok(()),
        Kind::Widgets => ensure_crd(c, &CrdNames::widgets()).await,
    }
}

/// Creates the CRD of `names` unless it exists (an existing one is left as it is), waits
/// until its `Established` condition is `True` (at most `CRD_ESTABLISHED_TIMEOUT`), then until
/// its collection answers a list (at most `CRD_READY_TIMEOUT`: an established CRD's handler
/// may still be on its way).
pub async fn ensure_crd(c: &KubeClient, names: &CrdNames) -> Result<(), String> {
    match create_and_establish(c, names, CRD_ESTABLISHED_TIMEOUT).await? {
        Established::Yes => Ok(()),
        Established::No { conditions, .. } => Err(format!(
            "CRD {} not Established within {CRD_ESTABLISHED_TIMEOUT:?} (conditions: {conditions})",
            names.crd_name()
        )),
    }
}

/// Whether the server serves custom resources: it serves CRDs, and the Widget CRD (created
/// unless it exists) is established within `within` and its collection answers. When it is
/// not, a CRD this call created is deleted again (not waited for), so that the server is left
/// as it was.
pub async fn widgets_served(c: &KubeClient, within: Duration) -> Result<bool, String> {
    if !serves_crds(c).await? {
        return Ok(false);
    }
    let names = CrdNames::widgets();
    match create_and_establish(c, &names, within).await? {
        Established::Yes => Ok(true),
        Established::No { created, .. } => {
            if created {
                let resp = c.request(Method::DELETE, &names.crd_path(), None).await?;
                if resp.status != 404 {
                    resp.ok()?;
                }
            }
            Ok(false)
        }
    }
}

/// What `create_and_establish` found.
enum Established {
    /// Established, and its collection answers a list.
    Yes,
    /// Not established in time.
    No {
        /// This call created the CRD (it did not exist).
        created: bool,
        /// Its last conditions seen.
        conditions: String,
    },
}

async fn create_and_establish(
    c: &KubeClient,
    names: &CrdNames,
    within: Duration,
) -> Result<Established, String> {
    let body = serde_json::to_vec(&widgets::crd(names)).unwrap_or_default();
    let resp = c
        .request(Method::POST, CRD_COLLECTION, Some((JSON, body.into())))
        .await?;
    let created = match resp.status {
        200..=299 => true,
        409 => false,
        404 => {
            return Err(format!(
            "the server does not serve {CRD_COLLECTION} (no custom resources): cannot create {}",
            names.crd_name()
        ))
        }
        _ => {
            let e = resp.ok().err().unwrap_or_default();
            return Err(format!("creating CRD {}: {e}", names.crd_name()));
        }
    };
    if let Some(conditions) = wait_established(c, names, within).await? {
        return Ok(Established::No {
            created,
            conditions,
        });
    }
    let list = format!("{}?limit=1", names.collection_path("default"));
    poll(CRD_READY_TIMEOUT, || async {
        let r = c.request(Method::GET, &list, None).await?;
        Ok((r.status == 200).then_some(()))
    })
    .await?
    .ok_or_else(|| {
        format!(
            "CRD {} is established but {list} did not answer 200 within {CRD_READY_TIMEOUT:?}",
            names.crd_name()
        )
    })?;
    Ok(Established::Yes)
}

/// Polls the CRD until `Established` is `True`, at most `within`; `Some(last conditions
/// seen)` when it was not.
async fn wait_established(
    c: &KubeClient,
    names: &CrdNames,
    within: Duration,
) -> Result<Option<String>, String> {
    let path = names.crd_path();
    let deadline = Instant::now() + within;
    loop {
        let crd = c.request(Method::GET, &path, None).await?.ok()?.json()?;
        if widgets::established(&crd) {
            return Ok(None);
        }
        if Instant::now() >= deadline {
            let conditions = crd
                .pointer("/status/conditions")
                .map_or("no conditions".into(), |v| v.to_string());
            return Ok(Some(conditions));
        }
        tokio::time::sleep(CRD_POLL_INTERVAL).await;
    }
}

/// Calls `probe` every `CRD_POLL_INTERVAL` until it gives `Some` or `timeout` has passed
/// (then `None`); an error ends the polling.
async fn poll<T, F, Fut>(timeout: Duration, mut probe: F) -> Result<Option<T>, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe().await? {
            return Ok(Some(v));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(CRD_POLL_INTERVAL).await;
    }
}

/// What `crd_latency` does.
#[derive(Clone, Debug)]
pub struct CrdLatencySpec {
    /// CRDs to create, one after the other.
    pub count: u64,
    /// Each CRD's group is `r<run>i<k>.<group_suffix>`.
    pub group_suffix: String,
    /// Where the probe object is created.
    pub namespace: String,
}

/// The names of the k-th CRD of run `run`: a group and a plural of its own, so that no CRD
/// reuses names a previous one (maybe still being deleted) had.
pub fn latency_crd_names(suffix: &str, run: &str, k: u64) -> CrdNames {
    CrdNames {
        group: format!("r{run}i{k}.{suffix}"),
        plural: format!("widgets{k}"),
        kind: format!("Widget{k}"),
    }
}

/// A probe object's create answered with one of these: the custom resource is not served yet
/// (404 before its handler exists, 503 while it starts, 429 when the server sheds load).
fn not_served_yet(status: u16) -> bool {
    matches!(status, 404 | 429 | 503)
}

/// `crd-latency`: `count` times, creates a fresh CRD, then tries to create one object of it
/// every `CRD_POLL_INTERVAL` until one succeeds (at most `CRD_READY_TIMEOUT`), measuring CRD
/// create → first successful custom-resource create (`first-create`); then deletes the CRD
/// and waits until it is gone (`crd-delete`, at most `CRD_DELETE_TIMEOUT`). Also reports the
/// CRD POST alone (`crd-create`) and how many object creates were tried.
pub async fn crd_latency(c: &KubeClient, spec: &CrdLatencySpec) -> Result<Report, String> {
    ensure_namespaces(c, std::slice::from_ref(&spec.namespace)).await?;
    let run = format!("{:x}", crate::objects::now_unix_nanos() % 0xff_ffff);
    let (mut post, mut first, mut delete) = (
        Recorder::default(),
        Recorder::default(),
        Recorder::default(),
    );
    let (mut attempts, mut attempts_max, mut not_yet) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    for k in 0..spec.count {
        let names = latency_crd_names(&spec.group_suffix, &run, k);
        match one_crd(c, &names, &spec.namespace).await {
            Ok(m) => {
                post.ok(m.post_us, 0, 1);
                first.ok(m.first_create_us, 0, 1);
                attempts += m.attempts;
                attempts_max = attempts_max.max(m.attempts);
                not_yet += m.attempts - 1;
            }
            Err(e) => {
                first.error(e);
            }
        }
        // Deleted whether or not its object was created: nothing is left behind.
        let t = Instant::now();
        match delete_crd(c, &names).await {
            Ok(()) => delete.ok(t.elapsed().as_micros() as u64, 0, 1),
            Err(e) => delete.error(e),
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let mut r = Report::new("crd-latency", "kube");
    r.ops.push(first.summary("first-create", elapsed));
    r.ops.push(post.summary("crd-create", elapsed));
    r.ops.push(delete.summary("crd-delete", elapsed));
    r.details.insert("crds".into(), spec.count.into());
    r.details
        .insert("object_creates_tried".into(), attempts.into());
    r.details
        .insert("object_creates_not_served_yet".into(), not_yet.into());
    r.details
        .insert("object_creates_per_crd_max".into(), attempts_max.into());
    r.details.insert(
        "poll_interval_ms".into(),
        (CRD_POLL_INTERVAL.as_secs_f64() * 1000.0).into(),
    );
    Ok(r)
}

/// What one CRD's measurement found.
struct OneCrd {
    post_us: u64,
    first_create_us: u64,
    attempts: u64,
}

async fn one_crd(c: &KubeClient, names: &CrdNames, ns: &str) -> Result<OneCrd, String> {
    let body = serde_json::to_vec(&widgets::crd(names)).unwrap_or_default();
    let t0 = Instant::now();
    c.request(Method::POST, CRD_COLLECTION, Some((JSON, body.into())))
        .await?
        .ok()
        .map_err(|e| format!("creating CRD {}: {e}", names.crd_name()))?;
    let post_us = t0.elapsed().as_micros() as u64;
    let coll = names.collection_path(ns);
    let mut attempts = 0u64;
    let deadline = t0 + CRD_READY_TIMEOUT;
    loop {
        attempts += 1;
        let obj = probe_object(names, ns);
        let resp = c
            .request(Method::POST, &coll, Some((JSON, obj.into())))
            .await?;
        if (200..300).contains(&resp.status) {
            return Ok(OneCrd {
                post_us,
                first_create_us: t0.elapsed().as_micros() as u64,
                attempts,
            });
        }
        if !not_served_yet(resp.status) {
            return Err(format!(
                "{coll}: {}",
                keel_client::status_error(resp.status, &resp.body)
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{coll}: still HTTP {} after {CRD_READY_TIMEOUT:?} ({attempts} creates tried)",
                resp.status
            ));
        }
        tokio::time::sleep(CRD_POLL_INTERVAL).await;
    }
}

/// The one object created of a fresh CRD: a Widget (under the CRD's kind) of 1 KiB.
fn probe_object(names: &CrdNames, ns: &str) -> Vec<u8> {
    let mut w = widgets::widget(ns, "probe", 0, widgets::description_bytes(1024), 0);
    w["apiVersion"] = format!("{}/{}", names.group, widgets::WIDGET_VERSION).into();
    w["kind"] = names.kind.clone().into();
    serde_json::to_vec(&w).unwrap_or_default()
}

/// Deletes the CRD of `names` and waits until a GET of it answers 404 (at most
/// `CRD_DELETE_TIMEOUT`): the server removes its objects first.
pub async fn delete_crd(c: &KubeClient, names: &CrdNames) -> Result<(), String> {
    let path = names.crd_path();
    let resp = c.request(Method::DELETE, &path, None).await?;
    if resp.status != 404 {
        resp.ok()
            .map_err(|e| format!("deleting CRD {}: {e}", names.crd_name()))?;
    }
    poll(CRD_DELETE_TIMEOUT, || async {
        let r = c.request(Method::GET, &path, None).await?;
        Ok((r.status == 404).then_some(()))
    })
    .await?
    .ok_or_else(|| {
        format!(
            "CRD {} still there {CRD_DELETE_TIMEOUT:?} after its delete",
            names.crd_name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_crds_have_names_of_their_own() {
        let a = latency_crd_names("bench.keel.dev", "1f", 0);
        let b = latency_crd_names("bench.keel.dev", "1f", 1);
        assert_eq!(a.crd_name(), "widgets0.r1fi0.bench.keel.dev");
        assert_ne!(a.group, b.group);
        assert_ne!(a.plural, b.plural);
        assert_eq!(b.kind, "Widget1");
        let crd = widgets::crd(&b);
        assert_eq!(crd["spec"]["names"]["listKind"], "Widget1List");
    }

    #[test]
    fn probe_object_is_of_the_crds_kind() {
        let n = latency_crd_names("x.example.com", "a", 3);
        let v: serde_json::Value = serde_json::from_slice(&probe_object(&n, "ns")).unwrap();
        assert_eq!(v["apiVersion"], "rai3.x.example.com/v1");
        assert_eq!(v["kind"], "Widget3");
        assert_eq!(v["metadata"]["namespace"], "ns");
        assert!(v["spec"]["minReplicas"].as_u64() <= v["spec"]["maxReplicas"].as_u64());
    }

    #[test]
    fn only_not_served_statuses_are_retried() {
        for s in [404, 429, 503] {
            assert!(not_served_yet(s), "{s}");
        }
        for s in [400, 401, 403, 409, 422, 500] {
            assert!(!not_served_yet(s), "{s}");
        }
    }
}
