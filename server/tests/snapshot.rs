//! `GET /keel/v1/snapshot` in process (the real handlers, registry and storage seam): who may
//! take one (the authorizer decides, as for every non-resource path), that the stream is the
//! state at the revision it began at while writes go on, and that a snapshot whose revision
//! is compacted away half-way ends with an abort frame, which every reader refuses.

mod in_process;

use futures_util::StreamExt;
use in_process::run;
use keel_engine::snapshot::SnapshotDecoder;
use keel_engine::{Limits, MemStore, Store};
use keel_http::{Body, Method, Response};
use keel_server::alloc::Allocators;
use keel_server::auth::{Attributes, Authorizer, Decision, TokenFile};
use keel_server::registry::Registry;
use keel_server::routes::LiveRoutes;
use keel_server::state::{State, StateParts};
use keel_server::storage::{Location, Storage};
use std::sync::Arc;

const ADMIN: &str = "admin-token";
const ALICE: &str = "alice-token";

/// Non-resource paths only for `system:masters`, everything else for everyone: RBAC's
/// default policy for a path no role grants.
struct MastersOnlyPaths;

impl Authorizer for MastersOnlyPaths {
    fn authorize(&self, a: &Attributes<'_>) -> Decision {
        if a.path.is_some() && !a.user.is_admin() {
            return Decision::NoOpinion("no role grants it".into());
        }
        Decision::Allow(String::new())
    }

    fn rules_for(&self, _user: &keel_server::auth::User, _namespace: &str) -> serde_json::Value {
        serde_json::json!({})
    }
}

fn state(backend: Arc<dyn Store>) -> Arc<State> {
    let catalog = keel_catalog::Catalog::new("").unwrap();
    let namespaces = Location::of(&catalog, catalog.lookup("", "v1", "namespaces").unwrap());
    let cidr = keel_server::options::Cidr::parse("10.0.0.0/24").unwrap();
    let st = Arc::new(State::new(StateParts {
        registry: Registry::new(
            Storage::new(backend),
            Allocators::new(vec![cidr], (30000, 32767)),
            namespaces,
        ),
        routes: LiveRoutes::new(catalog),
        tokens: TokenFile::parse(&format!(
            "{ADMIN},admin,admin,\"system:masters\"\n{ALICE},alice,alice\n"
        ))
        .unwrap(),
        authorizer: Box::new(MastersOnlyPaths),
        rbac: Default::default(),
        always_allow: vec!["/healthz".into()],
        min_request_timeout: 1800,
        bookmark_interval: std::time::Duration::from_secs(60),
        livez_grace: std::time::Duration::ZERO,
        flowcontrol: keel_server::flowcontrol::FlowControl::new(true, 600, 1),
        emulation: keel_catalog::Emulation::default(),
        disabled_metrics: Vec::new(),
        service_accounts: None,
        anonymous: false,
        request_header: None,
    }));
    run(keel_server::controllers::bootstrap::bootstrap(&st, 6443)).unwrap();
    st.mark_ready();
    st
}

fn request(st: &Arc<State>, method: Method, target: &str, token: &str, body: &str) -> Response {
    let token = (!token.is_empty()).then_some(token);
    let req = in_process::json_request(method, target, token, body, &[]);
    run(keel_server::handlers::serve(st.clone(), req))
}

fn full(resp: Response) -> (u16, String) {
    let status = resp.status;
    match resp.body {
        Body::Full(b) => (status, String::from_utf8_lossy(&b).into_owned()),
        _ => panic!("expected a full body, status {status}"),
    }
}

fn create_configmap(st: &Arc<State>, name: &str) -> u64 {
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"{name}"}}}}"#
    );
    let (code, text) = full(request(
        st,
        Method::Post,
        "/api/v1/namespaces/default/configmaps",
        ADMIN,
        &body,
    ));
    assert_eq!(code, 201, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn only_users_the_authorizer_allows_get_a_snapshot() {
    let st = state(Arc::new(MemStore::new(Limits::default())));
    let (code, text) = full(request(&st, Method::Get, "/keel/v1/snapshot", ALICE, ""));
    assert_eq!(code, 403, "{text}");
    let status: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Forbidden");
    assert!(
        status["message"].as_str().unwrap().contains("alice"),
        "{status}"
    );
    let (code, _) = full(request(&st, Method::Get, "/keel/v1/snapshot", "", ""));
    assert_eq!(code, 401);
    let (code, text) = full(request(&st, Method::Post, "/keel/v1/snapshot", ADMIN, ""));
    assert_eq!(code, 405, "{text}");
    let resp = request(&st, Method::Get, "/keel/v1/snapshot", ADMIN, "");
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.headers
            .iter()
            .find(|(k, _)| k == "Content-Type")
            .map(|h| h.1.as_str()),
        Some("application/octet-stream")
    );
}

/// Decodes a streamed snapshot, polling the stream `before_each` chunk (to write between
/// chunks); the records (key, mod revision) or the decoder's refusal.
fn drain(
    resp: Response,
    mut before_each: impl FnMut(usize),
) -> Result<(u64, Vec<(String, u64)>), String> {
    let Body::Stream(mut stream) = resp.body else {
        panic!("expected a streamed body");
    };
    let mut dec = SnapshotDecoder::new();
    let mut recs = Vec::new();
    let mut n = 0;
    // One chunk at a time, each polled on its own runtime, so that `before_each` can make
    // requests (which run their own) between chunks.
    while let Some(chunk) = run(stream.next()) {
        before_each(n);
        n += 1;
        dec.feed(&chunk, &mut |r| {
            recs.push((
                String::from_utf8_lossy(r.key).into_owned(),
                r.mod_revision.0,
            ));
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    }
    let s = dec.finish().map_err(|e| e.to_string())?;
    Ok((s.header.revision.0, recs))
}

#[test]
fn the_stream_is_the_state_at_its_revision_while_writes_go_on() {
    let st = state(Arc::new(MemStore::new(Limits::default())));
    let mut before = Vec::new();
    for i in 0..1500 {
        let name = format!("before-{i:04}");
        let rv = create_configmap(&st, &name);
        before.push((format!("/default/{name}"), rv));
    }
    let resp = request(&st, Method::Get, "/keel/v1/snapshot", ADMIN, "");
    let r: u64 = resp
        .headers
        .iter()
        .find(|(k, _)| k == "X-Keel-Snapshot-Revision")
        .unwrap()
        .1
        .parse()
        .unwrap();
    let mut after = 0;
    let (rev, recs) = drain(resp, |_| {
        for _ in 0..50 {
            create_configmap(&st, &format!("during-{after:05}"));
            after += 1;
        }
    })
    .unwrap();
    assert!(after >= 100, "writes went on during the snapshot: {after}");
    assert_eq!(rev, r);
    assert!(recs.iter().all(|(_, m)| *m <= r), "a record above R");
    assert!(
        !recs.iter().any(|(k, _)| k.contains("during-")),
        "a write after R is in the snapshot"
    );
    for (key, rv) in &before {
        let found = recs.iter().find(|(k, _)| k.ends_with(key.as_str()));
        assert_eq!(found.map(|f| f.1), Some(*rv), "{key}");
    }
}

#[test]
fn a_revision_compacted_half_way_ends_the_stream_with_an_abort() {
    let mem = Arc::new(MemStore::new(Limits::default()));
    let st = state(mem.clone());
    for i in 0..3000 {
        create_configmap(&st, &format!("cm-{i:04}"));
    }
    let resp = request(&st, Method::Get, "/keel/v1/snapshot", ADMIN, "");
    let e = drain(resp, |n| {
        if n == 2 {
            create_configmap(&st, "after");
            mem.compact(mem.current_revision()).unwrap();
        }
    })
    .unwrap_err();
    assert!(
        e.contains("aborted") && e.contains("compacted"),
        "the reader is told why: {e}"
    );
}
