//! The namespace controller: empties a terminating namespace of every namespaced object, then
//! removes the `kubernetes` finalizer so the namespace itself goes away.

use crate::app::App;
use crate::objects::{self, Spliced};
use crate::registry::{self, DeleteOptions};
use crate::respond;
use crate::store::{Location, ReadPoint};
use keel_engine::{Revision, Store};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// How often terminating namespaces are re-examined when nothing changes.
pub const RESYNC: Duration = Duration::from_millis(500);
/// Least time between two passes: a pass lists and parses every namespace, so a burst of
/// namespace changes (a simulated cluster creating thousands) is handled a pass per 20 ms,
/// not a pass per change.
pub const PASS_INTERVAL_MIN: Duration = Duration::from_millis(20);

/// Runs the controller on its own thread with its own single-threaded runtime.
pub fn spawn(app: Arc<App>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("keel-namespace-controller".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("controller runtime");
            rt.block_on(run(app));
        })
        .expect("spawn namespace controller")
}

async fn run(app: Arc<App>) {
    let ns_info = app.namespaces();
    let loc = Location::of(app.catalog, ns_info);
    let prefix = loc.list_prefix("");
    let mut watcher = app
        .storage
        .engine
        .watch(&prefix, Revision(app.storage.current()))
        .ok();
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = reconcile_all(&app, &prefix).await {
            eprintln!("namespace controller: {}", e.message);
        }
        // Changes during this wait are seen by the next pass, which reads every namespace.
        tokio::time::sleep_until(pass_started + PASS_INTERVAL_MIN).await;
        // Wake on any namespace change, or after RESYNC.
        match watcher.as_mut() {
            Some(w) => {
                let mut buf = Vec::new();
                let wait = std::future::poll_fn(|cx| w.poll_batch(cx, &mut buf));
                if let Ok(Err(_)) = tokio::time::timeout(RESYNC, wait).await {
                    watcher = app
                        .storage
                        .engine
                        .watch(&prefix, Revision(app.storage.current()))
                        .ok();
                }
            }
            None => {
                tokio::time::sleep(RESYNC).await;
                watcher = app
                    .storage
                    .engine
                    .watch(&prefix, Revision(app.storage.current()))
                    .ok();
            }
        }
    }
}

async fn reconcile_all(app: &App, prefix: &[u8]) -> Result<(), keel_api::status::ApiError> {
    let list = app.storage.list(prefix, None, 0, ReadPoint::Latest).await?;
    for kv in list.items {
        let ns = respond::parse_stored(kv.value())?;
        if objects::is_deleting(&ns) {
            finish(app, &ns, kv.mod_revision.get()).await?;
        }
    }
    Ok(())
}

/// Deletes the namespace's contents; once empty, drops the `kubernetes` finalizer.
async fn finish(app: &App, ns: &Value, ns_rev: u64) -> Result<(), keel_api::status::ApiError> {
    let name = objects::name(ns).to_string();
    let remaining = delete_contents(app, &name).await?;
    if remaining > 0 {
        return Ok(());
    }
    let mut new = ns.clone();
    if let Some(f) = new
        .pointer_mut("/spec/finalizers")
        .and_then(Value::as_array_mut)
    {
        f.retain(|x| x != "kubernetes");
    }
    let ns_info = app.namespaces();
    let key = Location::of(app.catalog, ns_info).key("", &name);
    let spec_empty = new
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_none_or(|a| a.is_empty());
    if spec_empty && objects::finalizers(&new).is_empty() {
        let _ = app.storage.delete(&key, ns_rev).await;
    } else if new != *ns {
        let spliced = Spliced::new(&mut new);
        let _ = app.storage.update(&key, ns_rev, &spliced).await;
    }
    Ok(())
}

/// Deletes every namespaced object of `ns`; returns how many are still there.
async fn delete_contents(app: &App, ns: &str) -> Result<usize, keel_api::status::ApiError> {
    let mut seen = HashSet::new();
    let mut remaining = 0;
    let nodes = app.catalog.lookup("", "v1", "nodes");
    for info in app.catalog.resources() {
        if !info.namespaced || !info.verbs.contains(&"delete") {
            continue;
        }
        let loc = Location::of(app.catalog, info);
        if !seen.insert(loc.prefix.clone()) {
            continue;
        }
        let items = app
            .storage
            .list(&loc.list_prefix(ns), None, 0, ReadPoint::Latest)
            .await?;
        for kv in items.items {
            remaining += 1;
            let obj = respond::parse_stored(kv.value())?;
            if objects::is_deleting(&obj) && !objects::finalizers(&obj).is_empty() {
                continue;
            }
            let mut opts = DeleteOptions::default();
            // A pod bound to a node that does not exist has no kubelet to finish its graceful
            // deletion (upstream's pod garbage collector force-deletes such pods).
            if info.group.is_empty() && info.plural == "pods" {
                let node = obj
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let node_exists = !node.is_empty()
                    && nodes.is_some_and(|n| {
                        app.storage
                            .get_latest(&Location::of(app.catalog, n).key("", node))
                            .ok()
                            .flatten()
                            .is_some()
                    });
                if !node_exists {
                    opts.grace_period = Some(0);
                }
            }
            let _ = registry::delete_one(app, info, &loc, ns, objects::name(&obj), &opts).await;
        }
    }
    Ok(remaining)
}
