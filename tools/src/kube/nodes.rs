//! `nodes`: a kwok-style simulator of K kubelets. Each node registers (Node + status + a
//! Lease in `kube-node-lease`), renews its Lease every `lease_interval` (conditional PUT, as
//! the kubelet does), patches its status every `status_interval`, moves pods bound to it to
//! `Running`, and finishes graceful deletions of its pods with a grace-0 delete.

use super::{create_if_absent, current_rv, json_body, resource_version};
use crate::driver::{self, Outcome, Plan};
use crate::limits;
use crate::objects;
use crate::report::{Recorder, Report};
use bytes::Bytes;
use keel_client::Method;
use keel_client::{KubeClient, STRATEGIC_MERGE_PATCH};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Pod actions waiting for a worker.
pub const POD_QUEUE_MAX: usize = 100_000;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct NodesSpec {
    pub count: usize,
    /// Nodes are `<prefix>-<k>`.
    pub prefix: String,
    pub lease_interval: Duration,
    pub status_interval: Duration,
    pub duration: Duration,
    /// Requests in flight at once for each activity.
    pub concurrency: usize,
}

impl NodesSpec {
    pub fn node_name(&self, k: u64) -> String {
        format!("{}-{k}", self.prefix)
    }
}

enum PodAction {
    Start {
        ns: String,
        name: String,
        node_index: u64,
        containers: Vec<(String, String)>,
    },
    Finish {
        ns: String,
        name: String,
        uid: String,
    },
}

/// Runs the simulator for `spec.duration` after registering every node.
pub async fn nodes(c: &KubeClient, spec: &NodesSpec) -> Result<Report, String> {
    if spec.count == 0 || spec.count > limits::NODES_MAX {
        return Err(format!("nodes must be 1..={}", limits::NODES_MAX));
    }
    let spec = Arc::new(spec.clone());
    let lease_rvs: Arc<Vec<AtomicU64>> =
        Arc::new((0..spec.count).map(|_| AtomicU64::new(0)).collect());
    let reg = register(c, &spec, &lease_rvs).await?;
    let deadline = Instant::now() + spec.duration;
    let pods = PodController::new(c.clone(), spec.clone());
    let (lease, status, pod_rec) = tokio::join!(
        renew_leases(c, &spec, &lease_rvs),
        update_status(c, &spec),
        pods.run(deadline),
    );
    let (lease, status, (start, finish, watch_error)) = (lease?, status?, pod_rec?);
    let mut r = Report::new("nodes", "kube");
    let d = &mut r.details;
    d.insert("nodes".into(), spec.count.into());
    d.insert("leases_renewed".into(), lease.ops.into());
    d.insert("node_status_updates".into(), status.ops.into());
    d.insert("pods_started".into(), start.ops.into());
    d.insert("pods_deleted".into(), finish.ops.into());
    if let Some(e) = watch_error {
        d.insert("pod_watch_error".into(), e.into());
    }
    let secs = spec.duration.as_secs_f64();
    r.ops.push(reg);
    r.ops.push(lease);
    r.ops.push(status);
    r.ops.push(start.summary("pod-start", secs));
    r.ops.push(finish.summary("pod-delete", secs));
    Ok(r)
}

async fn register(
    c: &KubeClient,
    spec: &Arc<NodesSpec>,
    lease_rvs: &Arc<Vec<AtomicU64>>,
) -> Result<crate::report::OpSummary, String> {
    let plan = Plan {
        concurrency: spec.concurrency,
        ops: Some(spec.count as u64),
        duration: None,
        rate_per_s: None,
    };
    let (c2, s2, rvs) = (c.clone(), spec.clone(), lease_rvs.clone());
    driver::run("register", &plan, move |k| {
        let (c, spec, rvs) = (c2.clone(), s2.clone(), rvs.clone());
        async move {
            let name = spec.node_name(k);
            create_if_absent(&c, "/api/v1/nodes", &objects::node(&name)).await?;
            let status = json!({"status": objects::node_status(&name, k)});
            let path = format!("/api/v1/nodes/{name}/status");
            let body = (STRATEGIC_MERGE_PATCH, Bytes::from(status.to_string()));
            c.request(Method::PATCH, &path, Some(body)).await?.ok()?;
            let leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
            let resp = create_if_absent(&c, leases, &objects::lease(&name)).await?;
            let rv = if resp.status == 409 {
                let got = c
                    .request(Method::GET, &format!("{leases}/{name}"), None)
                    .await?
                    .ok()?;
                resource_version(&got.json()?)
            } else {
                resource_version(&resp.json()?)
            };
            rvs[k as usize].store(rv.unwrap_or(0), Ordering::Relaxed);
            Ok(Outcome {
                bytes: 0,
                objects: 1,
            })
        }
    })
    .await
}

/// Every node renews its Lease once per interval, spread evenly over the interval.
async fn renew_leases(
    c: &KubeClient,
    spec: &Arc<NodesSpec>,
    lease_rvs: &Arc<Vec<AtomicU64>>,
) -> Result<crate::report::OpSummary, String> {
    let rate = spec.count as f64 / spec.lease_interval.as_secs_f64();
    let plan = Plan {
        concurrency: spec.concurrency,
        ops: None,
        duration: Some(spec.duration),
        rate_per_s: Some(rate),
    };
    let (c2, s2, rvs) = (c.clone(), spec.clone(), lease_rvs.clone());
    driver::run("lease-renew", &plan, move |i| {
        let (c, spec, rvs) = (c2.clone(), s2.clone(), rvs.clone());
        async move {
            let k = (i % spec.count as u64) as usize;
            let name = spec.node_name(k as u64);
            let path =
                format!("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}");
            for _attempt in 0..2 {
                let mut lease = objects::lease(&name);
                lease["metadata"]["resourceVersion"] =
                    json!(rvs[k].load(Ordering::Relaxed).to_string());
                let resp = c
                    .request(Method::PUT, &path, Some(json_body(&lease)))
                    .await?;
                if resp.status == 409 {
                    // Someone else wrote it: re-read, as the kubelet does, and try again.
                    let got = c.request(Method::GET, &path, None).await?.ok()?;
                    rvs[k].store(
                        resource_version(&got.json()?).unwrap_or(0),
                        Ordering::Relaxed,
                    );
                    continue;
                }
                let resp = resp.ok()?;
                rvs[k].store(
                    resource_version(&resp.json()?).unwrap_or(0),
                    Ordering::Relaxed,
                );
                return Ok(Outcome {
                    bytes: resp.body.len() as u64,
                    objects: 1,
                });
            }
            Err(format!("lease {name}: conflict twice"))
        }
    })
    .await
}

/// Every node patches its status (heartbeat times) once per interval.
async fn update_status(
    c: &KubeClient,
    spec: &Arc<NodesSpec>,
) -> Result<crate::report::OpSummary, String> {
    let rate = spec.count as f64 / spec.status_interval.as_secs_f64();
    let plan = Plan {
        concurrency: spec.concurrency,
        ops: None,
        duration: Some(spec.duration),
        rate_per_s: Some(rate),
    };
    let (c2, s2) = (c.clone(), spec.clone());
    driver::run("node-status", &plan, move |i| {
        let (c, spec) = (c2.clone(), s2.clone());
        async move {
            let k = i % spec.count as u64;
            let name = spec.node_name(k);
            let status = objects::node_status(&name, k);
            let body = json!({"status": {"conditions": status["conditions"]}});
            let path = format!("/api/v1/nodes/{name}/status");
            let body = (STRATEGIC_MERGE_PATCH, Bytes::from(body.to_string()));
            let resp = c.request(Method::PATCH, &path, Some(body)).await?.ok()?;
            Ok(Outcome {
                bytes: resp.body.len() as u64,
                objects: 1,
            })
        }
    })
    .await
}

/// Watches all pods and acts for those bound to simulated nodes.
struct PodController {
    c: KubeClient,
    spec: Arc<NodesSpec>,
    /// Node name -> index.
    nodes: HashMap<String, u64>,
    /// Pods already started or finished (by uid), so each is handled once.
    handled: Mutex<HashSet<(String, bool)>>,
    /// Pods started so far (gives each a distinct IP).
    started: AtomicU64,
}

type PodResult = (Recorder, Recorder, Option<String>);

impl PodController {
    fn new(c: KubeClient, spec: Arc<NodesSpec>) -> Arc<PodController> {
        let nodes = (0..spec.count as u64)
            .map(|k| (spec.node_name(k), k))
            .collect();
        Arc::new(PodController {
            c,
            spec,
            nodes,
            handled: Mutex::new(HashSet::new()),
            started: AtomicU64::new(0),
        })
    }

    async fn run(self: Arc<Self>, deadline: Instant) -> Result<PodResult, String> {
        let (tx, rx) = mpsc::channel::<PodAction>(POD_QUEUE_MAX);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let mut workers = Vec::new();
        for _ in 0..self.spec.concurrency.max(1) {
            let (me, rx) = (self.clone(), rx.clone());
            workers.push(tokio::spawn(async move {
                let (mut start, mut finish) = (Recorder::default(), Recorder::default());
                loop {
                    let action = rx.lock().await.recv().await;
                    match action {
                        Some(a) => me.act(a, &mut start, &mut finish).await,
                        None => return (start, finish),
                    }
                }
            }));
        }
        let watch_error = tokio::time::timeout_at(deadline.into(), self.clone().feed(tx))
            .await
            .ok()
            .and_then(|r| r.err());
        let (mut start, mut finish) = (Recorder::default(), Recorder::default());
        for w in workers {
            let (s, f) = w.await.map_err(|e| format!("pod worker: {e}"))?;
            start.merge(&s);
            finish.merge(&f);
        }
        Ok((start, finish, watch_error))
    }

    /// Lists then watches pods, queueing actions; returns only on error.
    async fn feed(self: Arc<Self>, tx: mpsc::Sender<PodAction>) -> Result<(), String> {
        let list = self
            .c
            .request(Method::GET, "/api/v1/pods", None)
            .await?
            .ok()?
            .json()?;
        for p in list["items"].as_array().into_iter().flatten() {
            self.consider(p, &tx).await?;
        }
        let mut rv = resource_version(&list).unwrap_or(current_rv(&self.c, "/api/v1/pods").await?);
        loop {
            let path = format!("/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=600");
            let mut body = self.c.stream(&path).await?;
            let mut lines =
                keel_client::watch::LineSplitter::new(keel_client::limits::WATCH_LINE_BYTES_MAX);
            while let Some(data) = body
                .next_chunk()
                .await
                .map_err(|e| format!("pod watch: {e}"))?
            {
                for line in lines.push(data)? {
                    let ev: Value =
                        serde_json::from_slice(&line).map_err(|e| format!("pod watch: {e}"))?;
                    if ev["type"] == "ERROR" {
                        return Err(format!("pod watch: {}", ev["object"]["message"]));
                    }
                    rv = resource_version(&ev["object"]).unwrap_or(rv);
                    if ev["type"] == "ADDED" || ev["type"] == "MODIFIED" {
                        self.consider(&ev["object"], &tx).await?;
                    }
                }
            }
        }
    }

    async fn consider(&self, pod: &Value, tx: &mpsc::Sender<PodAction>) -> Result<(), String> {
        let Some(node_index) = pod["spec"]["nodeName"]
            .as_str()
            .and_then(|n| self.nodes.get(n))
        else {
            return Ok(());
        };
        let meta = &pod["metadata"];
        let (ns, name, uid) = (
            str_of(&meta["namespace"]),
            str_of(&meta["name"]),
            str_of(&meta["uid"]),
        );
        let deleting = !meta["deletionTimestamp"].is_null();
        if !deleting && pod["status"]["phase"] == "Running" {
            return Ok(());
        }
        if !self
            .handled
            .lock()
            .map_err(|_| "poisoned")?
            .insert((uid.clone(), deleting))
        {
            return Ok(());
        }
        let action = if deleting {
            PodAction::Finish { ns, name, uid }
        } else {
            let containers = pod["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| (str_of(&c["name"]), str_of(&c["image"])))
                .collect();
            PodAction::Start {
                ns,
                name,
                node_index: *node_index,
                containers,
            }
        };
        tx.send(action)
            .await
            .map_err(|_| "pod workers stopped".to_string())
    }

    async fn act(&self, action: PodAction, start: &mut Recorder, finish: &mut Recorder) {
        let t0 = Instant::now();
        let (rec, result) = match action {
            PodAction::Start {
                ns,
                name,
                node_index,
                containers,
            } => {
                let path = format!("/api/v1/namespaces/{ns}/pods/{name}/status");
                let seq = self.started.fetch_add(1, Ordering::Relaxed);
                let body = json!({"status": running_status(node_index, seq, &containers)});
                let body = (STRATEGIC_MERGE_PATCH, Bytes::from(body.to_string()));
                (
                    start,
                    self.c.request(Method::PATCH, &path, Some(body)).await,
                )
            }
            PodAction::Finish { ns, name, uid } => {
                let path = format!("/api/v1/namespaces/{ns}/pods/{name}");
                let opts = json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                                  "preconditions": {"uid": uid}});
                (
                    finish,
                    self.c
                        .request(Method::DELETE, &path, Some(json_body(&opts)))
                        .await,
                )
            }
        };
        match result.and_then(|r| r.ok()) {
            Ok(r) => rec.ok(t0.elapsed().as_micros() as u64, r.body.len() as u64, 1),
            Err(e) => rec.error(e),
        }
    }
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The status a kubelet reports once a pod's containers run.
/// `seq` numbers the pods this simulator started (their IPs are distinct).
pub fn running_status(node_index: u64, seq: u64, containers: &[(String, String)]) -> Value {
    let now = objects::time_now();
    let cond = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": now});
    let pod_ip = format!(
        "10.{}.{}.{}",
        128 + (seq >> 16) % 128,
        (seq >> 8) % 256,
        seq % 256
    );
    json!({
        "phase": "Running",
        "hostIP": objects::node_ip(node_index),
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": now,
        "conditions": [cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
        "containerStatuses": containers.iter().map(|(name, image)| json!({
            "name": name, "image": image, "imageID": "", "ready": true, "started": true,
            "restartCount": 0, "containerID": format!("kwok://{name}"),
            "state": {"running": {"startedAt": now}}
        })).collect::<Vec<_>>()
    })
}
