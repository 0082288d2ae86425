//! The node graph controller: keeps the `Node` mode's graph (`nodeauthz::NodeGraph`) as
//! upstream's graph populator keeps its own from informers: pods (bound ones), persistent
//! volumes, VolumeAttachments and ResourceSlices, read through the registry. It loads them
//! all before the server reports ready (so a kubelet's first reads are decided on the whole
//! graph), then follows their watches from the revisions read, and reads everything again
//! when a watch ends and every `NODE_GRAPH_RESYNC`.
//!
//! A watch step's events are parsed first and applied under one write lock, so decisions
//! wait for the graph only while a step's changes are applied, never while it parses.

use crate::limits::{
    NODE_GRAPH_EDGES_MAX, NODE_GRAPH_RESYNC, NODE_GRAPH_REWATCH_WAIT, NODE_GRAPH_WATCH_STEP_BYTES,
};
use crate::nodeauthz::graph::{Change, Graph};
use crate::nodeauthz::objects::{change_from_event, change_from_object, Followed};
use crate::nodeauthz::NodeGraph;
use crate::registry::{Source, Step};
use crate::selection::Selection;
use crate::state::State;
use keel_api::status::ApiError;
use keel_engine::Revision;
use std::sync::Arc;

/// Revisions the watches continue from, one per followed resource.
pub type Revisions = [Revision; Followed::ALL.len()];

/// Before the server reports ready: the graph loaded. Returns the revisions the watches
/// continue from.
pub async fn start(st: &State, graph: &NodeGraph) -> Revisions {
    match load(st, graph).await {
        Ok(revs) => revs,
        Err(e) => {
            eprintln!("node graph controller: loading the graph: {}", e.message);
            [Revision::ZERO; Followed::ALL.len()]
        }
    }
}

/// Keeps the graph current from the watches, on its own thread.
pub fn spawn(
    st: Arc<State>,
    graph: Arc<NodeGraph>,
    from: Revisions,
) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-node-graph", move || run(st, graph, from))
}

async fn run(st: Arc<State>, graph: Arc<NodeGraph>, mut from: Revisions) {
    loop {
        let mut watches: Vec<(Followed, Source, Selection)> = Vec::new();
        for (i, what) in Followed::ALL.into_iter().enumerate() {
            let routes = st.routes.load();
            let (group, version, plural) = what.gvr();
            let Some(res) = routes.lookup(group, version, plural) else {
                continue;
            };
            if let Some((source, sel)) = super::watch_all_after(&st, res, from[i]).await {
                watches.push((what, source, sel));
            }
        }
        if follow(&graph, &mut watches).await {
            tokio::time::sleep(NODE_GRAPH_REWATCH_WAIT).await;
        }
        // A watch ended (or the resync came): read everything again.
        match load(&st, &graph).await {
            Ok(revs) => from = revs,
            Err(e) => eprintln!("node graph controller: loading the graph: {}", e.message),
        }
    }
}

/// Applies the watches' events until one ends (true) or the resync is due.
async fn follow(graph: &NodeGraph, watches: &mut [(Followed, Source, Selection)]) -> bool {
    let deadline = tokio::time::Instant::now() + NODE_GRAPH_RESYNC;
    loop {
        let step = std::future::poll_fn(|cx| {
            for (what, source, sel) in watches.iter_mut() {
                match source.poll(cx, sel, NODE_GRAPH_WATCH_STEP_BYTES) {
                    Step::Pending(_) | Step::Nothing(_) => {}
                    step => return std::task::Poll::Ready((*what, step)),
                }
            }
            std::task::Poll::Pending
        });
        let (what, step) = match tokio::time::timeout_at(deadline, step).await {
            Ok(step) => step,
            Err(_) => return false,
        };
        match step {
            Step::Chunk(chunk, _) => {
                let mut bytes = Vec::with_capacity(chunk.len());
                for p in chunk.pieces() {
                    bytes.extend_from_slice(p);
                }
                let changes = changes_of_lines(what, &bytes);
                apply_all(&mut graph.graph.write(), changes);
            }
            Step::Ended(_) => return true,
            _ => {}
        }
    }
}

/// The changes JSON watch lines make (lines not understood are logged and skipped).
fn changes_of_lines(what: Followed, lines: &[u8]) -> Vec<Change> {
    let mut changes = Vec::new();
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match change_from_event(what, line) {
            Ok(Some(c)) => changes.push(c),
            Ok(None) => {}
            Err(e) => eprintln!("node graph controller: {}", e.0),
        }
    }
    changes
}

/// Applies `changes`; one that passes the graph's bound is logged (its object then relates
/// nothing).
fn apply_all(graph: &mut Graph, changes: Vec<Change>) {
    for c in changes {
        if let Err(full) = graph.apply(c) {
            eprintln!(
                "node graph controller: the graph holds {} edges of at most {}: an object was left out (its nodes are refused what it relates)",
                full.edges, full.edges_max
            );
        }
    }
}

/// Reads every followed object into a fresh graph and puts it in place; the revision each
/// resource was read at.
async fn load(st: &State, graph: &NodeGraph) -> Result<Revisions, ApiError> {
    let mut fresh = Graph::new(NODE_GRAPH_EDGES_MAX);
    let mut revs = [Revision::ZERO; Followed::ALL.len()];
    for (i, what) in Followed::ALL.into_iter().enumerate() {
        let routes = st.routes.load();
        let (group, version, plural) = what.gvr();
        let Some(res) = routes.lookup(group, version, plural) else {
            continue;
        };
        let (items, rev) = st.registry.list_all(res, "").await?;
        revs[i] = rev;
        let mut changes = Vec::new();
        for kv in items {
            match change_from_object(what, kv.value(), false) {
                Ok(Some(c)) => changes.push(c),
                Ok(None) => {}
                Err(e) => eprintln!("node graph controller: {}", e.0),
            }
        }
        apply_all(&mut fresh, changes);
    }
    // The old graph is dropped after the lock is released.
    let old = std::mem::replace(&mut *graph.graph.write(), fresh);
    drop(old);
    Ok(revs)
}
