//! The real handlers, registry and storage seam in process (no binary, no sockets): for
//! what a test must reach below the HTTP surface, such as the engine's I/O or the live
//! routes. Requests go through `keel_server::handlers::serve`, as the HTTP layer sends them.
#![allow(dead_code)]

use keel_http::{Headers, Method, Request, Response};
use keel_server::alloc::Allocators;
use keel_server::auth::TokenFile;
use keel_server::registry::Registry;
use keel_server::routes::LiveRoutes;
use keel_server::state::{State, StateParts};
use keel_server::storage::{Location, Storage};
use std::sync::Arc;

pub const TOKEN: &str = "in-process-test-token";

/// A bootstrapped server over `backend`.
pub fn state(backend: Arc<dyn keel_engine::Store>) -> Arc<State> {
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
        tokens: TokenFile::parse(&format!("{TOKEN},admin,admin,\"system:masters\"\n")).unwrap(),
        authorizer: Box::new(keel_server::authz::build("AlwaysAllow").unwrap().chain),
        rbac: Default::default(),
        always_allow: vec!["/healthz".into(), "/readyz".into(), "/livez".into()],
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

/// Runs `f` to completion as a serving core would (a current-thread runtime with a local
/// set, where watch feeds run).
pub fn run<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

/// One request as the admin; the status and the whole body.
pub fn request(st: &Arc<State>, method: Method, target: &str, body: &str) -> (u16, String) {
    request_with(st, method, target, body, &[])
}

/// `request` with more header fields.
pub fn request_with(
    st: &Arc<State>,
    method: Method,
    target: &str,
    body: &str,
    extra: &[(&str, &str)],
) -> (u16, String) {
    let req = json_request(method, target, Some(TOKEN), body, extra);
    let resp: Response = run(keel_server::handlers::serve(st.clone(), req));
    let body = match resp.body {
        keel_http::Body::Full(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    (resp.status, body)
}

/// A request from 127.0.0.1 with a JSON `body`, the bearer `token` (none: anonymous) and
/// `extra` header fields.
pub fn json_request(
    method: Method,
    target: &str,
    token: Option<&str>,
    body: &str,
    extra: &[(&str, &str)],
) -> Request {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Headers::new();
    if let Some(token) = token {
        headers.push("Authorization", format!("Bearer {token}"));
    }
    headers.push("Content-Type", "application/json");
    for (k, v) in extra {
        headers.push(k, v);
    }
    Request {
        method,
        target: target.into(),
        path: path.into(),
        query: query.into(),
        headers,
        body: body.as_bytes().to_vec(),
        peer: "127.0.0.1:1".parse().unwrap(),
        tls: false,
        client_cert: None,
        client_cert_error: None,
        admitted: Default::default(),
    }
}
