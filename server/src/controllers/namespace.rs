//! The namespace controller: empties a terminating namespace of every namespaced object, then
//! removes the `kubernetes` finalizer so the namespace itself goes away. It works through the
//! registry like any client: it watches namespaces (this thread's own feed of them) to wake
//! on changes, lists, deletes and updates.

use crate::limits::{NAMESPACE_PASS_INTERVAL_MIN, NAMESPACE_RESYNC};
use crate::objects;
use crate::registry::{DeleteOptions, Source, UpdateOptions};
use crate::routes::Routes;
use crate::selection::Selection;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// Runs the controller on its own thread with its own single-threaded runtime.
pub fn spawn(st: Arc<State>) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-namespace-controller", move || run(st))
}

/// A watch of every namespace from now on (only its wake-ups are used).
async fn watch_namespaces(st: &State) -> Option<(Source, Selection)> {
    super::watch_all(st, st.routes.load().core("namespaces")).await
}

async fn run(st: Arc<State>) {
    let mut watch = watch_namespaces(&st).await;
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = reconcile_all(&st).await {
            eprintln!("namespace controller: {}", e.message);
        }
        // Changes during this wait are seen by the next pass, which reads every namespace.
        tokio::time::sleep_until(pass_started + NAMESPACE_PASS_INTERVAL_MIN).await;
        // Wake on any namespace change, or after the resync interval.
        let mut watches = [watch.take()];
        let ended = super::wait_for_change(&mut watches, NAMESPACE_RESYNC).await;
        let [w] = watches;
        watch = if ended {
            watch_namespaces(&st).await
        } else {
            w
        };
    }
}

async fn reconcile_all(st: &State) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let (items, _) = st.registry.list_all(routes.core("namespaces"), "").await?;
    for kv in items {
        let ns = objects::parse_stored(kv.value())?;
        if objects::is_deleting(&ns) {
            finish(st, &routes, &ns).await?;
        }
    }
    Ok(())
}

/// Deletes the namespace's contents; once empty, drops the `kubernetes` finalizer (the
/// registry removes a terminating namespace whose last finalizer goes).
async fn finish(st: &State, routes: &Routes, ns: &Value) -> Result<(), ApiError> {
    let name = objects::name(ns).to_string();
    let remaining = delete_contents(st, routes, &name).await?;
    if remaining > 0 {
        return Ok(());
    }
    let opts = UpdateOptions {
        dry_run: false,
        subresource: "finalize",
        replace: false,
        strategy: false,
    };
    // Races with other writers of the namespace are retried; errors wait for the next pass.
    let _ = st
        .registry
        .guaranteed_update(
            routes.core("namespaces"),
            "",
            &name,
            &opts,
            &mut |current| {
                let mut new = current
                    .ok_or_else(|| ApiError::not_found("", "namespaces", &name))?
                    .clone();
                if let Some(f) = new.at_mut("/spec/finalizers").and_then(Value::as_array_mut) {
                    f.retain(|x| x != "kubernetes");
                }
                Ok(new)
            },
        )
        .await;
    Ok(())
}

/// Deletes every namespaced object of `ns`; returns how many are still there.
async fn delete_contents(st: &State, routes: &Routes, ns: &str) -> Result<usize, ApiError> {
    let mut seen = HashSet::new();
    let mut remaining = 0;
    let nodes = routes.core("nodes");
    for res in routes.resources() {
        let info = &res.info;
        if !info.namespaced || !info.supports("delete") {
            continue;
        }
        if !seen.insert(res.loc.prefix.clone()) {
            continue;
        }
        let items = st.registry.list_all_stored(res, ns).await?;
        for kv in items {
            remaining += 1;
            let obj = objects::parse_stored(kv.value())?;
            if objects::is_deleting(&obj) && !objects::finalizers(&obj).is_empty() {
                continue;
            }
            let node_exists = |node: &str| st.registry.exists(nodes, "", node).unwrap_or(false);
            // Background, as upstream's namespace deleter: a type that orphans by default
            // (ReplicationControllers, Jobs) would otherwise wait for the collector.
            let opts = DeleteOptions {
                grace_period: res.strategy.cleanup_delete_grace(&obj, &node_exists),
                propagation: Some("Background".into()),
                ..Default::default()
            };
            let _ = st
                .registry
                .delete(res, ns, objects::name(&obj), &opts)
                .await;
        }
    }
    Ok(remaining)
}
