//! `loadgen apf-flood`: one user floods the server with lists while another user's GETs,
//! `/readyz` (anonymous) and a `system:masters` client are measured: what priority and
//! fairness is for. Run it against a server with `--enable-priority-and-fairness` on and off
//! to compare. Each client class reports its rate, latency percentiles (of answered requests)
//! and how many requests were refused with 429; a 429 is counted, not an error.

use crate::limits;
use crate::report::{Recorder, Report};
use clap::Args;
use keel_client::kubeconfig::Endpoint;
use keel_client::{KubeClient, Method};
use keel_server::options::parse_duration;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `apf-flood` flags.
#[derive(Args, Debug, Clone)]
pub struct ApfFloodArgs {
    /// Bearer token of the flooding user (user A).
    #[arg(long)]
    pub flood_token: String,
    /// Bearer token of the victim user (user B).
    #[arg(long)]
    pub victim_token: String,
    /// Flooding clients (each one list in flight at a time, back to back).
    #[arg(long, default_value_t = 64)]
    pub flood_concurrency: usize,
    /// Victim clients (each one GET in flight at a time, back to back).
    #[arg(long, default_value_t = 4)]
    pub victim_concurrency: usize,
    /// What the flood lists.
    #[arg(long, default_value = "/api/v1/configmaps")]
    pub flood_path: String,
    /// What the victim and the admin GET.
    #[arg(long, default_value = "/api/v1/namespaces/default")]
    pub victim_path: String,
    /// How long the flood runs before the measured clients start.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// How long the measured clients run.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub duration: Duration,
}

/// What one client class measured.
struct Class {
    rec: Recorder,
    refused: u64,
}

impl Class {
    fn new() -> Class {
        Class {
            rec: Recorder::default(),
            refused: 0,
        }
    }

    fn merge(&mut self, o: &Class) {
        self.rec.merge(&o.rec);
        self.refused += o.refused;
    }
}

/// Requests `path` back to back until `stop`.
async fn client(c: KubeClient, path: Arc<str>, stop: Arc<AtomicBool>) -> Class {
    let mut class = Class::new();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        match c.request(Method::GET, &path, None).await {
            Ok(r) if (200..300).contains(&r.status) => {
                class
                    .rec
                    .ok(started.elapsed().as_micros() as u64, r.body.len() as u64, 1)
            }
            Ok(r) if r.status == 429 => class.refused += 1,
            Ok(r) => class.rec.error(format!("HTTP {}", r.status)),
            Err(e) => class.rec.error(e),
        }
    }
    class
}

fn spawn_class(
    c: &KubeClient,
    path: &str,
    n: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Class>> {
    let path: Arc<str> = Arc::from(path);
    (0..n)
        .map(|_| tokio::spawn(client(c.clone(), path.clone(), stop.clone())))
        .collect()
}

async fn join(handles: Vec<tokio::task::JoinHandle<Class>>) -> Class {
    let mut all = Class::new();
    for h in handles {
        if let Ok(c) = h.await {
            all.merge(&c);
        }
    }
    all
}

/// Runs the workload; `ep` is the admin's endpoint (kubeconfig or --url/--token).
pub async fn apf_flood(ep: &Endpoint, a: &ApfFloodArgs) -> Result<Report, String> {
    for (flag, n) in [
        ("--flood-concurrency", a.flood_concurrency),
        ("--victim-concurrency", a.victim_concurrency),
    ] {
        if n == 0 || n > limits::CONCURRENCY_MAX {
            return Err(format!("{flag} must be 1..={}", limits::CONCURRENCY_MAX));
        }
    }
    let as_user = |token: Option<&str>, pool: usize| {
        let mut e = ep.clone();
        e.token = token.map(str::to_string);
        e.client_cert_pem = None;
        e.client_key_pem = None;
        crate::kube_client(&e, pool)
    };
    let flooder = as_user(Some(&a.flood_token), a.flood_concurrency)?;
    let victim = as_user(Some(&a.victim_token), a.victim_concurrency)?;
    let anonymous = as_user(None, 1)?;
    let admin = crate::kube_client(ep, 1)?;

    let stop_flood = Arc::new(AtomicBool::new(false));
    let flood = spawn_class(&flooder, &a.flood_path, a.flood_concurrency, &stop_flood);
    tokio::time::sleep(a.warmup).await;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let victims = spawn_class(&victim, &a.victim_path, a.victim_concurrency, &stop);
    let readyz = spawn_class(&anonymous, "/readyz", 1, &stop);
    let admins = spawn_class(&admin, &a.victim_path, 1, &stop);
    tokio::time::sleep(a.duration).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let (victims, readyz, admins) = (join(victims).await, join(readyz).await, join(admins).await);
    stop_flood.store(true, Ordering::Relaxed);
    let flood = join(flood).await;
    let flood_elapsed = elapsed + a.warmup.as_secs_f64();

    let mut r = Report::new("apf-flood", "kube");
    r.ops.push(flood.rec.summary("flood-list", flood_elapsed));
    r.ops.push(victims.rec.summary("victim-get", elapsed));
    r.ops.push(readyz.rec.summary("readyz", elapsed));
    r.ops.push(admins.rec.summary("admin-get", elapsed));
    let d = &mut r.details;
    d.insert("flood_429".into(), json!(flood.refused));
    d.insert("victim_429".into(), json!(victims.refused));
    d.insert("readyz_429".into(), json!(readyz.refused));
    d.insert("admin_429".into(), json!(admins.refused));
    d.insert("flood_concurrency".into(), json!(a.flood_concurrency));
    d.insert("victim_concurrency".into(), json!(a.victim_concurrency));
    Ok(r)
}
