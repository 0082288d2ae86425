//! `churn`: a ClusterLoader2-style mix for a fixed time at a target request rate. Objects come
//! in deployment-sized groups (a ConfigMap and `group_size` Pods sharing a label) spread over
//! namespaces; each action creates, updates (ConfigMap PUT, Pod patches), lists (by label,
//! checking the count) or deletes one group. Every group is used by one action at a time, so
//! the live set is known exactly at the end.

use super::{ensure_namespaces, json_body};
use crate::driver::{self, Outcome, Plan};
use crate::kube::list::parse_page;
use crate::objects::{self, SENT_ANNOTATION};
use crate::report::{Recorder, Report};
use bytes::Bytes;
use keel_client::Method;
use keel_client::{KubeClient, MERGE_PATCH};
use rand::Rng;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Label naming the churn run (its namespace prefix) on every object it writes.
pub const CHURN_LABEL: &str = "loadgen.keel.dev/churn";
/// Label naming an object's group.
pub const GROUP_LABEL: &str = "loadgen.keel.dev/group";

#[derive(Clone, Debug)]
pub struct ChurnSpec {
    /// Namespaces are `<prefix>-<n>`.
    pub prefix: String,
    pub namespaces: u32,
    /// Pods per group.
    pub group_size: u32,
    /// Groups the run keeps alive on average.
    pub groups_target: u64,
    /// Target API requests per second.
    pub qps: f64,
    pub duration: Duration,
    pub concurrency: usize,
    pub configmap_bytes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Create,
    Update,
    List,
    Delete,
}

const ACTIONS: [Action; 4] = [Action::Create, Action::Update, Action::List, Action::Delete];

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Create => "group-create",
        Action::Update => "group-update",
        Action::List => "group-list",
        Action::Delete => "group-delete",
    }
}

#[derive(Default)]
struct State {
    /// Groups no action is using.
    idle: Vec<u64>,
    /// Groups whose every object exists (idle or in use by a non-delete action).
    live: u64,
    next_id: u64,
    /// Groups left half-written by a failed action (not counted as live).
    broken: u64,
}

/// Chooses the next action: grow to the target, then a mix that keeps it there. Pure.
fn choose(live: u64, idle: usize, target: u64, roll: u32) -> Action {
    if live < target || idle == 0 {
        return Action::Create;
    }
    match roll % 100 {
        0..=24 => Action::Create,
        25..=54 => Action::Update,
        55..=74 => Action::List,
        _ => Action::Delete,
    }
}

struct Churn {
    c: KubeClient,
    spec: ChurnSpec,
    state: Mutex<State>,
    recs: Mutex<Vec<Recorder>>,
    requests: std::sync::atomic::AtomicU64,
}

/// Runs the mix; the report's details give the live groups, pods and ConfigMaps at the end.
pub async fn churn(c: &KubeClient, spec: &ChurnSpec) -> Result<Report, String> {
    let namespaces: Vec<String> = (0..spec.namespaces.max(1))
        .map(|n| format!("{}-{n}", spec.prefix))
        .collect();
    ensure_namespaces(c, &namespaces).await?;
    let me = Arc::new(Churn {
        c: c.clone(),
        spec: spec.clone(),
        state: Mutex::new(State::default()),
        recs: Mutex::new(vec![Recorder::default(); ACTIONS.len()]),
        requests: Default::default(),
    });
    let rate = spec.qps / f64::from(spec.group_size + 1);
    let plan = Plan {
        concurrency: spec.concurrency,
        ops: None,
        duration: Some(spec.duration),
        rate_per_s: Some(rate),
    };
    let m2 = me.clone();
    let overall = driver::run("churn", &plan, move |_| {
        let me = m2.clone();
        async move { me.step().await }
    })
    .await?;
    let mut r = Report::new("churn", "kube");
    let secs = overall.elapsed_s;
    let st = me.state.lock().map_err(|_| "poisoned")?;
    let recs = me.recs.lock().map_err(|_| "poisoned")?;
    for (a, rec) in ACTIONS.iter().zip(recs.iter()) {
        r.ops.push(rec.summary(action_name(*a), secs));
    }
    let d = &mut r.details;
    let requests = me.requests.load(std::sync::atomic::Ordering::Relaxed);
    d.insert("requests".into(), requests.into());
    d.insert(
        "requests_per_s".into(),
        json!(requests as f64 / secs.max(1e-9)),
    );
    d.insert("groups_live".into(), st.live.into());
    d.insert("groups_broken".into(), st.broken.into());
    d.insert(
        "pods_live".into(),
        (st.live * u64::from(spec.group_size)).into(),
    );
    d.insert("configmaps_live".into(), st.live.into());
    r.ops.insert(0, overall);
    Ok(r)
}

impl Churn {
    async fn step(&self) -> Result<Outcome, String> {
        let roll = rand::rng().random::<u32>();
        let (action, group) = {
            let mut st = self.state.lock().map_err(|_| "poisoned")?;
            let action = choose(st.live, st.idle.len(), self.spec.groups_target, roll);
            let group = if action == Action::Create {
                st.next_id += 1;
                st.next_id - 1
            } else {
                let at = (roll as usize / 100) % st.idle.len();
                st.idle.swap_remove(at)
            };
            (action, group)
        };
        let t0 = Instant::now();
        let result = self.act(action, group).await;
        let mut st = self.state.lock().map_err(|_| "poisoned")?;
        match (&result, action) {
            (Ok(_), Action::Delete) => st.live -= 1,
            (Ok(_), Action::Create) => {
                st.live += 1;
                st.idle.push(group);
            }
            (Ok(_), _) => st.idle.push(group),
            (Err(_), Action::Create) => st.broken += 1,
            (Err(_), _) => {
                st.live -= 1;
                st.broken += 1;
            }
        }
        drop(st);
        let mut recs = self.recs.lock().map_err(|_| "poisoned")?;
        let rec = &mut recs[ACTIONS.iter().position(|a| *a == action).unwrap_or(0)];
        match &result {
            Ok(o) => rec.ok(t0.elapsed().as_micros() as u64, o.bytes, o.objects),
            Err(e) => rec.error(e.clone()),
        }
        result
    }

    fn namespace(&self, group: u64) -> String {
        format!(
            "{}-{}",
            self.spec.prefix,
            group % u64::from(self.spec.namespaces.max(1))
        )
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<u64, String> {
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let resp = self.c.request(method, path, body).await?.ok()?;
        Ok(resp.body.len() as u64)
    }

    async fn act(&self, action: Action, group: u64) -> Result<Outcome, String> {
        let ns = self.namespace(group);
        let g = format!("g{group}");
        let pods = format!("/api/v1/namespaces/{ns}/pods");
        let cms = format!("/api/v1/namespaces/{ns}/configmaps");
        let mut out = Outcome::default();
        let labels =
            json!({CHURN_LABEL: self.spec.prefix, GROUP_LABEL: g, objects::LOADGEN_LABEL: "1"});
        match action {
            Action::Create | Action::Update => {
                let mut cm = objects::configmap(
                    &ns,
                    &format!("{g}-config"),
                    self.spec.configmap_bytes,
                    group,
                );
                cm["metadata"]["labels"] = labels.clone();
                out.bytes += if action == Action::Create {
                    self.send(Method::POST, &cms, Some(json_body(&cm))).await?
                } else {
                    self.send(
                        Method::PUT,
                        &format!("{cms}/{g}-config"),
                        Some(json_body(&cm)),
                    )
                    .await?
                };
                for j in 0..self.spec.group_size {
                    let name = format!("{g}-{j}");
                    out.bytes += if action == Action::Create {
                        let mut p = objects::pod(&ns, &name, None, 0);
                        p["metadata"]["labels"] = labels.clone();
                        self.send(Method::POST, &pods, Some(json_body(&p))).await?
                    } else {
                        let patch = json!({"metadata": {"annotations": {SENT_ANNOTATION: objects::now_unix_nanos().to_string()}}});
                        let body = (MERGE_PATCH, Bytes::from(patch.to_string()));
                        self.send(Method::PATCH, &format!("{pods}/{name}"), Some(body))
                            .await?
                    };
                }
                out.objects = u64::from(self.spec.group_size) + 1;
            }
            Action::List => {
                self.requests
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let path = format!("{pods}?labelSelector={GROUP_LABEL}%3D{g}");
                let resp = self.c.request(Method::GET, &path, None).await?.ok()?;
                let (n, _) = parse_page(&resp.body)?;
                if n != u64::from(self.spec.group_size) {
                    return Err(format!(
                        "group {g} in {ns}: listed {n} pods, expected {}",
                        self.spec.group_size
                    ));
                }
                out = Outcome {
                    bytes: resp.body.len() as u64,
                    objects: n,
                };
            }
            Action::Delete => {
                for j in 0..self.spec.group_size {
                    out.bytes += self
                        .send(Method::DELETE, &format!("{pods}/{g}-{j}"), None)
                        .await?;
                }
                out.bytes += self
                    .send(Method::DELETE, &format!("{cms}/{g}-config"), None)
                    .await?;
                out.objects = u64::from(self.spec.group_size) + 1;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_grows_then_mixes() {
        let cases = [
            (0, 0, 10, 99, Action::Create),
            (9, 9, 10, 60, Action::Create),
            (10, 0, 10, 60, Action::Create),
            (10, 10, 10, 10, Action::Create),
            (10, 10, 10, 30, Action::Update),
            (10, 10, 10, 60, Action::List),
            (10, 10, 10, 99, Action::Delete),
        ];
        for (live, idle, target, roll, want) in cases {
            assert_eq!(
                choose(live, idle, target, roll),
                want,
                "{live} {idle} {target} {roll}"
            );
        }
    }
}
