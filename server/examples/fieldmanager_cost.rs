//! What tracking `metadata.managedFields` costs per write, in process: time and heap
//! allocations of `fieldmanager::record_update` (creates and updates) and
//! `fieldmanager::apply`, beside a JSON parse of the same object for scale.
//!
//! `cargo run --release -p keel-server --example fieldmanager_cost`

use keel_server::fieldmanager::{self, Apply, Write};
use serde_json::{json, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

struct Counting;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout)
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.realloc(p, layout, size)
    }
}

#[global_allocator]
static A: Counting = Counting;

const NOW: &str = "2026-11-27T00:00:00Z";

fn container(i: usize, round: usize) -> Value {
    json!({
        "name": format!("c{i}"),
        "image": format!("registry.example/app{i}:v{round}"),
        "args": ["--port=8080", "--verbose", format!("--round={round}")],
        "env": (0..8).map(|e| json!({"name": format!("ENV_{e}"), "value": format!("value-{e}-{round}")})).collect::<Vec<_>>(),
        "ports": [{"name": "http", "containerPort": 8080 + i, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090 + i, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080 + i, "scheme": "HTTP"}, "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080 + i, "scheme": "HTTP"}, "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "data", "mountPath": "/var/lib/app"}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"
    })
}

/// A Deployment of about 10 KiB (the apply benchmark's object).
fn deployment(round: usize) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default",
            "labels": {"app": "d", "tier": "backend", "round": round.to_string()},
            "annotations": {"example.com/owner": "team-a", "example.com/round": round.to_string()}},
        "spec": {
            "replicas": 3 + round % 3,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": {"app": "d", "tier": "backend"}, "annotations": {"example.com/round": round.to_string()}},
                "spec": {
                    "containers": (0..4).map(|i| container(i, round)).collect::<Vec<_>>(),
                    "volumes": [{"name": "config", "configMap": {"name": "d-config", "defaultMode": 420}}, {"name": "data", "emptyDir": {}}],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                    "tolerations": [{"key": "example.com/dedicated", "operator": "Equal", "value": "backend", "effect": "NoSchedule"}]
                }
            }
        }
    })
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "labels": {"app": "p"}},
        "spec": {"containers": [container(0, 0)], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}})
}

fn configmap(round: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default", "labels": {"app": "c"}},
        "data": {"payload": "x".repeat(1000), "round": round.to_string()}})
}

/// Measures `f` on `iters` objects made beforehand by `make` (not measured).
fn measure_on(
    name: &str,
    iters: usize,
    make: impl Fn(usize) -> Value,
    mut f: impl FnMut(usize, Value),
) {
    if let Some(only) = std::env::args().nth(2) {
        if !name.contains(&only) {
            return;
        }
    }
    for i in 0..iters / 10 {
        f(i, make(i));
    }
    let objects: Vec<Value> = (0..iters).map(&make).collect();
    let a0 = ALLOCATIONS.load(Relaxed);
    let t0 = Instant::now();
    for (i, o) in objects.into_iter().enumerate() {
        f(i, o);
    }
    let us = t0.elapsed().as_secs_f64() * 1e6 / iters as f64;
    // Dropping the objects is part of the cost; their making is not.
    let allocs = (ALLOCATIONS.load(Relaxed) - a0) as f64 / iters as f64;
    println!("{name:<44} {us:>9.2} us {allocs:>9.0} allocations");
}

fn measure(name: &str, iters: usize, mut f: impl FnMut(usize)) {
    if let Some(only) = std::env::args().nth(2) {
        if !name.contains(&only) {
            return;
        }
    }
    for i in 0..iters / 10 {
        f(i);
    }
    let a0 = ALLOCATIONS.load(Relaxed);
    let t0 = Instant::now();
    for i in 0..iters {
        f(i);
    }
    let us = t0.elapsed().as_secs_f64() * 1e6 / iters as f64;
    let allocs = (ALLOCATIONS.load(Relaxed) - a0) as f64 / iters as f64;
    println!("{name:<44} {us:>9.2} us {allocs:>9.0} allocations");
}

fn write<'a>(group: &'a str, version: &'a str, kind: &'a str, manager: &'a str) -> Write<'a> {
    Write {
        group,
        version,
        kind,
        subresource: "",
        manager: Some(manager),
        custom: None,
    }
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let cm_w = write("", "v1", "ConfigMap", "kubectl-create");
    let pod_w = write("", "v1", "Pod", "kubectl-create");
    let dep_w = write("apps", "v1", "Deployment", "kubectl-client-side-apply");

    for (name, obj) in [
        ("ConfigMap", configmap(0)),
        ("Pod", pod()),
        ("Deployment", deployment(0)),
    ] {
        let text = obj.to_string();
        measure(
            &format!("parse {name} ({} bytes)", text.len()),
            iters,
            |_| {
                std::hint::black_box(serde_json::from_str::<Value>(&text).unwrap());
            },
        );
    }
    measure_on(
        "record_update: create ConfigMap",
        iters,
        |_| configmap(0),
        |_, mut o| {
            fieldmanager::record_update(&cm_w, None, &mut o, NOW);
        },
    );
    measure_on(
        "record_update: create Pod",
        iters,
        |_| pod(),
        |_, mut o| {
            fieldmanager::record_update(&pod_w, None, &mut o, NOW);
        },
    );
    measure_on(
        "record_update: create Deployment",
        iters,
        |_| deployment(0),
        |_, mut o| {
            fieldmanager::record_update(&dep_w, None, &mut o, NOW);
        },
    );
    measure_on(
        "drop: Pod (the create's object, for scale)",
        iters,
        |_| pod(),
        |_, o| {
            drop(o);
        },
    );
    // Updates: the live object carries its creator's entry; the writer changes one value.
    let mut live_cm = configmap(0);
    fieldmanager::record_update(&cm_w, None, &mut live_cm, NOW);
    let cm_up = write("", "v1", "ConfigMap", "kubectl-replace");
    let cm_put = |i: usize| {
        let mut o = configmap(i + 1);
        o["metadata"]["managedFields"] = live_cm["metadata"]["managedFields"].clone();
        o
    };
    measure_on(
        "record_update: update ConfigMap (PUT)",
        iters,
        cm_put,
        |_, mut o| {
            fieldmanager::record_update(&cm_up, Some(&live_cm), &mut o, NOW);
        },
    );
    let mut live_dep = deployment(0);
    fieldmanager::record_update(&dep_w, None, &mut live_dep, NOW);
    let dep_put = |i: usize| {
        let mut o = deployment(i + 1);
        o["metadata"]["managedFields"] = live_dep["metadata"]["managedFields"].clone();
        o
    };
    measure_on(
        "record_update: update Deployment (PUT)",
        iters,
        dep_put,
        |_, mut o| {
            fieldmanager::record_update(&dep_w, Some(&live_dep), &mut o, NOW);
        },
    );
    let a = Apply {
        write: write("apps", "v1", "Deployment", "loadgen"),
        force: true,
    };
    let applied = fieldmanager::apply(&a, None, &deployment(0), NOW).unwrap();
    measure("apply: Deployment, changed values", iters, |i| {
        std::hint::black_box(
            fieldmanager::apply(&a, Some(&applied), &deployment(i + 1), NOW).unwrap(),
        );
    });
    measure("apply: Deployment, create", iters, |_| {
        std::hint::black_box(fieldmanager::apply(&a, None, &deployment(0), NOW).unwrap());
    });
}
