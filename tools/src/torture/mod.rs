//! `keel-torture`: kill a server under write load, damage its files, restart it, and check
//! every acknowledged write and every revision against the run's own record (issue 22's
//! fault campaign, as a tool).
//!
//! One iteration: start the API server on the run's data directory (if it refuses, note
//! whether its message names the damaged file, then start it with `--storage-repair`); list
//! every object and compare with the [`model`]: after a start that did not refuse, every
//! acknowledged write must be there (a write cut by the kill may or may not be); after a
//! repair, acknowledged writes may be missing (that is what a refusal warned of) but nothing
//! may be invented. Then `writers` clients create, replace and delete ConfigMaps, each on its
//! own keys, one write at a time, for a random time; the server is killed (`SIGKILL`) while
//! they write; then, with probability `damage_probability`, one [`damage`] is done to the
//! store. Every acknowledged revision must be above every revision acknowledged by earlier
//! server processes and never acknowledged twice, in every cell, repaired ones included.

pub mod damage;
pub mod model;

use crate::limits;
use damage::Damage;
use keel_client::{KubeClient, Method};
use model::{Key, Model, Value, Verdict, Violation};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Namespace of the run's objects.
const NAMESPACE: &str = "torture";
/// Objects per page when listing them back.
const LIST_PAGE: usize = 500;

/// What to run.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The API server binary.
    pub apiserver: PathBuf,
    /// Working directory: the server's data directory and logs go under it.
    pub dir: PathBuf,
    pub iterations: usize,
    pub writers: u32,
    pub keys_per_writer: u32,
    /// Load time before each kill: uniform in [min, max].
    pub load_min: Duration,
    pub load_max: Duration,
    /// Damages to choose from, and how often one is done after a kill.
    pub damages: Vec<Damage>,
    pub damage_probability: f64,
    pub value_bytes: usize,
    pub seed: u64,
    /// Extra flags for the server.
    pub server_args: Vec<String>,
}

/// Per damage kind: what the restarts after it did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cell {
    pub iterations: u64,
    /// Started without refusing, every acknowledged write found.
    pub opened_intact: u64,
    /// Started without refusing but an acknowledged write was missing: a broken promise.
    pub opened_with_loss: u64,
    pub refused: u64,
    /// Refusals whose message named the damaged file.
    pub refused_naming_file: u64,
    /// Acknowledged writes missing after the repair that followed a refusal.
    pub lost_after_repair: u64,
}

/// The run's outcome.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub iterations: u64,
    pub seed: u64,
    pub writes_acknowledged: u64,
    pub writes_cut: u64,
    pub restarts: u64,
    pub repairs: u64,
    pub seconds: f64,
    pub start_seconds_max: f64,
    pub cells: BTreeMap<String, Cell>,
    /// Acknowledged writes missing after a start that did not refuse.
    pub lost_outside_refusals: u64,
    pub violations: Vec<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.lost_outside_refusals == 0 && self.violations.is_empty()
    }

    pub fn table(&self) -> String {
        let mut s = format!(
            "keel-torture: {} iterations (seed {}), {} restarts, {} repairs, {:.0} s\n\
             acknowledged writes: {}, cut by a kill: {}, slowest start: {:.2} s\n\n\
             {:<15} {:>6} {:>8} {:>6} {:>8} {:>7} {:>9}\n",
            self.iterations,
            self.seed,
            self.restarts,
            self.repairs,
            self.seconds,
            self.writes_acknowledged,
            self.writes_cut,
            self.start_seconds_max,
            "damage",
            "iters",
            "intact",
            "lost",
            "refused",
            "named",
            "repaired-lost",
        );
        for (name, c) in &self.cells {
            s += &format!(
                "{:<15} {:>6} {:>8} {:>6} {:>8} {:>7} {:>9}\n",
                name,
                c.iterations,
                c.opened_intact,
                c.opened_with_loss,
                c.refused,
                c.refused_naming_file,
                c.lost_after_repair
            );
        }
        s += &format!(
            "\nacknowledged writes lost outside refusals: {}\nviolations: {}\n",
            self.lost_outside_refusals,
            self.violations.len()
        );
        for v in self.violations.iter().take(limits::ERROR_SAMPLES_MAX) {
            s += &format!("  {v}\n");
        }
        s
    }
}

impl Spec {
    pub fn validate(&self) -> Result<(), String> {
        if self.writers == 0 || self.keys_per_writer == 0 {
            return Err("--writers and --keys-per-writer must be at least 1".into());
        }
        if self.writers as usize > limits::TORTURE_WRITERS_MAX {
            return Err(format!(
                "--writers must be at most {}",
                limits::TORTURE_WRITERS_MAX
            ));
        }
        if self.load_min > self.load_max {
            return Err("--load-min must not exceed --load-max".into());
        }
        if self.damages.is_empty() {
            return Err("--damage needs at least one kind".into());
        }
        if !(0.0..=1.0).contains(&self.damage_probability) {
            return Err("--damage-probability must be within 0..=1".into());
        }
        Ok(())
    }
}

/// A running server process.
struct Server {
    child: Child,
    _stdin: std::process::ChildStdin,
    client: KubeClient,
}

enum Started {
    Up(Server, Duration),
    /// Exited before becoming ready, with its log.
    Refused(String),
}

fn log_path(spec: &Spec) -> PathBuf {
    spec.dir.join("server.log")
}

fn data_dir(spec: &Spec) -> PathBuf {
    spec.dir.join("data")
}

/// Starts the server on the run's data directory and waits until `/readyz` answers 200.
async fn start(spec: &Spec, repair: bool) -> Result<Started, String> {
    let data = data_dir(spec);
    for stale in ["port", "admin.kubeconfig"] {
        let _ = std::fs::remove_file(data.join(stale));
    }
    let log = std::fs::File::create(log_path(spec)).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&spec.apiserver);
    cmd.arg("--data-dir")
        .arg(&data)
        .args(["--secure-port", "0", "--exit-on-stdin-close"])
        .args(&spec.server_args);
    if repair {
        cmd.arg("--storage-repair");
    }
    let began = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("{}: {e}", spec.apiserver.display()))?;
    let stdin = child.stdin.take().expect("piped");
    let deadline = began + limits::TORTURE_START_TIMEOUT;
    let kubeconfig = data.join("admin.kubeconfig");
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let text = std::fs::read_to_string(log_path(spec)).unwrap_or_default();
            if status.success() {
                return Err(format!("the server exited 0 during start:\n{text}"));
            }
            return Ok(Started::Refused(text));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!(
                "the server was not ready after {:?}",
                limits::TORTURE_START_TIMEOUT
            ));
        }
        if data.join("port").exists() && kubeconfig.exists() {
            if let Ok(ep) = keel_client::kubeconfig::load(&kubeconfig, None) {
                if let Ok(client) = crate::kube_client(&ep, spec.writers as usize + 1) {
                    let ready = client.request(Method::GET, "/readyz", None).await;
                    if matches!(ready, Ok(ref r) if r.status == 200) {
                        return Ok(Started::Up(
                            Server {
                                child,
                                _stdin: stdin,
                                client,
                            },
                            began.elapsed(),
                        ));
                    }
                }
            }
        }
        tokio::time::sleep(limits::TORTURE_START_POLL).await;
    }
}

/// The CA bundle the server's root-ca-certificate-publisher-controller writes into every
/// namespace, as upstream's controller manager does: the server's object, none of the writers'.
const SERVER_PUBLISHED: &str = "kube-root-ca.crt";

/// Every object of the run's namespace: key → (seq, rv), and names no writer uses (other than
/// `SERVER_PUBLISHED`).
async fn list_all(c: &KubeClient) -> Result<(HashMap<Key, (u64, u64)>, Vec<String>), String> {
    let mut found = HashMap::new();
    let mut strangers = Vec::new();
    let mut cont = String::new();
    loop {
        let mut path = format!("/api/v1/namespaces/{NAMESPACE}/configmaps?limit={LIST_PAGE}");
        if !cont.is_empty() {
            path += &format!("&continue={cont}");
        }
        let list = c.request(Method::GET, &path, None).await?.ok()?.json()?;
        for item in list["items"].as_array().into_iter().flatten() {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            if name == SERVER_PUBLISHED {
                continue;
            }
            let rv = item["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|s| s.parse().ok());
            let seq = item["data"]["seq"].as_str().and_then(|s| s.parse().ok());
            match (model::parse_name(name), seq, rv) {
                (Some(k), Some(seq), Some(rv)) => {
                    found.insert(k, (seq, rv));
                }
                _ => strangers.push(name.to_string()),
            }
        }
        cont = list["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if cont.is_empty() {
            return Ok((found, strangers));
        }
    }
}

fn body(key: Key, seq: u64, rv: Option<u64>, pad: &str) -> (&'static str, bytes::Bytes) {
    let mut meta = serde_json::json!({ "name": model::name(key), "namespace": NAMESPACE });
    if let Some(rv) = rv {
        meta["resourceVersion"] = rv.to_string().into();
    }
    crate::kube::json_body(&serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": { "seq": seq.to_string(), "pad": pad },
    }))
}

/// Counts shared by the writers of one phase.
#[derive(Default)]
struct Phase {
    acked: AtomicU64,
    cut: AtomicU64,
    violations: Mutex<Vec<Violation>>,
    diverged: Mutex<Vec<String>>,
}

/// What the writers of one phase share.
struct Shared {
    model: Arc<Mutex<Model>>,
    phase: Phase,
    stop: AtomicBool,
    keys: u32,
    pad: String,
}

/// One writer: its keys, one write at a time, until a request fails (the kill) or `stop`.
async fn writer(c: KubeClient, sh: Arc<Shared>, w: u32, seed: u64) {
    let (model, phase, stop, keys, pad) = (&sh.model, &sh.phase, &sh.stop, sh.keys, &sh.pad);
    let mut rng = StdRng::seed_from_u64(seed);
    let coll = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    while !stop.load(Ordering::Relaxed) {
        let key = Key {
            w,
            k: rng.random_range(0..keys),
        };
        let (acked, delete) = {
            let m = model.lock().expect("model");
            let a = m.acked(key);
            (
                a,
                matches!(a, Value::Present { .. }) && rng.random_bool(0.25),
            )
        };
        let seq = model.lock().expect("model").begin(key, delete);
        let one = format!("{coll}/{}", model::name(key));
        let sent = match acked {
            Value::Absent => {
                c.request(Method::POST, &coll, Some(body(key, seq, None, pad)))
                    .await
            }
            Value::Present { rv, .. } if delete => {
                let pre = serde_json::json!({
                    "kind": "DeleteOptions", "apiVersion": "v1",
                    "preconditions": { "resourceVersion": rv.to_string() },
                });
                c.request(Method::DELETE, &one, Some(crate::kube::json_body(&pre)))
                    .await
            }
            Value::Present { rv, .. } => {
                c.request(Method::PUT, &one, Some(body(key, seq, Some(rv), pad)))
                    .await
            }
        };
        let resp = match sent {
            Ok(r) => r,
            Err(_) => {
                // Cut by the kill: applied or not, the next listing says.
                phase.cut.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        match resp.status {
            200 | 201 if delete => {
                model.lock().expect("model").ack_delete(key);
                phase.acked.fetch_add(1, Ordering::Relaxed);
            }
            200 | 201 => {
                let rv = crate::kube::response_rv(&resp).unwrap_or(0);
                let v = model.lock().expect("model").ack_put(key, seq, rv);
                phase.acked.fetch_add(1, Ordering::Relaxed);
                if !v.is_empty() {
                    phase.violations.lock().expect("violations").extend(v);
                }
            }
            429 => {
                model.lock().expect("model").refused(key);
                tokio::time::sleep(limits::TORTURE_RETRY_BACKOFF).await;
            }
            s if s >= 500 => {
                // Not answered as refused: maybe applied.
                phase.cut.fetch_add(1, Ordering::Relaxed);
                return;
            }
            s => {
                // The server disagrees with what it acknowledged (a conflict or a missing
                // object this writer alone writes).
                model.lock().expect("model").refused(key);
                phase.diverged.lock().expect("diverged").push(format!(
                    "{} {} answered {s}: {}",
                    if delete { "DELETE" } else { "write" },
                    model::name(key),
                    String::from_utf8_lossy(&resp.body)
                        .chars()
                        .take(200)
                        .collect::<String>()
                ));
                return;
            }
        }
    }
}

/// Does what a refusal's log says name the damaged file?
fn names_file(log: &str, done: Option<&damage::Done>) -> bool {
    let Some(d) = done else { return false };
    let Some(name) = d.file.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    log.contains(name)
}

/// Runs the campaign; `progress` is called after each iteration with the report so far.
pub async fn run(spec: &Spec, mut progress: impl FnMut(&Report)) -> Result<Report, String> {
    spec.validate()?;
    std::fs::create_dir_all(&spec.dir).map_err(|e| format!("{}: {e}", spec.dir.display()))?;
    let began = Instant::now();
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let model = Arc::new(Mutex::new(Model::new(spec.writers, spec.keys_per_writer)));
    let mut report = Report {
        seed: spec.seed,
        ..Report::default()
    };
    // The damage done after the previous kill, judged by the next start.
    let mut last: (Damage, Option<damage::Done>) = (Damage::None, None);
    for i in 0..=spec.iterations {
        let (kind, done) = std::mem::replace(&mut last, (Damage::None, None));
        // A damage that found nothing to damage is a plain kill.
        let kind = if done.is_none() { Damage::None } else { kind };
        let mut repaired = false;
        let mut refused_log = None;
        let (server, took) = match start(spec, false).await? {
            Started::Up(s, took) => (s, took),
            Started::Refused(log) => {
                repaired = true;
                refused_log = Some(log);
                match start(spec, true).await? {
                    Started::Up(s, took) => (s, took),
                    Started::Refused(log) => {
                        return Err(format!(
                            "iteration {i}: the server did not start even with \
                             --storage-repair after {} ({:?}):\n{log}",
                            kind.label(),
                            done
                        ))
                    }
                }
            }
        };
        report.restarts += 1;
        report.start_seconds_max = report.start_seconds_max.max(took.as_secs_f64());
        let mut server = server;
        // Every start: a repair may have dropped the namespace itself.
        crate::kube::ensure_namespaces(&server.client, &[NAMESPACE.to_string()]).await?;
        let (found, strangers) = list_all(&server.client).await?;
        let verdict: Verdict = model.lock().expect("model").reconcile(&found, &strangers);
        if i > 0 {
            report.iterations += 1;
            let cell = report.cells.entry(kind.label().to_string()).or_default();
            cell.iterations += 1;
            if repaired {
                report.repairs += 1;
                if kind == Damage::None {
                    report.violations.push(format!(
                        "iteration {i}: the server refused to start after a plain kill:\n{}",
                        refused_log.as_deref().unwrap_or("")
                    ));
                }
                cell.refused += 1;
                if names_file(refused_log.as_deref().unwrap_or(""), done.as_ref()) {
                    cell.refused_naming_file += 1;
                }
                cell.lost_after_repair += verdict.lost.len() as u64;
            } else if verdict.lost.is_empty() {
                cell.opened_intact += 1;
            } else {
                cell.opened_with_loss += 1;
                report.lost_outside_refusals += verdict.lost.len() as u64;
                report.violations.push(format!(
                    "iteration {i}: after {} ({done:?}) the server started and {} \
                     acknowledged writes were missing: {:?}",
                    kind.label(),
                    verdict.lost.len(),
                    verdict.lost.iter().take(5).collect::<Vec<_>>()
                ));
            }
        }
        for v in &verdict.violations {
            report.violations.push(format!("iteration {i}: {v:?}"));
        }
        if i == spec.iterations {
            let _ = server.child.kill();
            let _ = server.child.wait();
            break;
        }
        // Load, then the kill in the middle of it.
        let sh = Arc::new(Shared {
            model: model.clone(),
            phase: Phase::default(),
            stop: AtomicBool::new(false),
            keys: spec.keys_per_writer,
            pad: "x".repeat(spec.value_bytes),
        });
        let mut tasks = Vec::new();
        for w in 0..spec.writers {
            tasks.push(tokio::spawn(writer(
                server.client.clone(),
                sh.clone(),
                w,
                rng.random(),
            )));
        }
        let load = rng.random_range(spec.load_min..=spec.load_max);
        tokio::time::sleep(load).await;
        let _ = server.child.kill();
        let _ = server.child.wait();
        sh.stop.store(true, Ordering::Relaxed);
        let phase = &sh.phase;
        for t in tasks {
            let _ = t.await;
        }
        report.writes_acknowledged += phase.acked.load(Ordering::Relaxed);
        report.writes_cut += phase.cut.load(Ordering::Relaxed);
        for v in phase.violations.lock().expect("violations").drain(..) {
            report.violations.push(format!("iteration {i}: {v:?}"));
        }
        for d in phase.diverged.lock().expect("diverged").drain(..) {
            report.violations.push(format!("iteration {i}: {d}"));
        }
        // Damage, maybe.
        if rng.random_bool(spec.damage_probability) {
            let kind = spec.damages[rng.random_range(0..spec.damages.len())];
            let done = damage::apply(kind, &data_dir(spec).join("store"), &mut rng)?;
            last = (kind, done);
        }
        report.seconds = began.elapsed().as_secs_f64();
        progress(&report);
    }
    report.seconds = began.elapsed().as_secs_f64();
    Ok(report)
}
