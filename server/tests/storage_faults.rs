//! A disk that fails under the server: the real handlers, registry and engine in process, the
//! engine's I/O behind the fault-injecting implementation. A failed sync (EIO, or ENOSPC: a
//! full disk) must answer the write with a 5xx `Status`, fail `/readyz` and `/livez`, leave
//! reads working and never show the failed write.

use keel_engine::io::fault::{Fault, FaultIo, FaultRule, IoOp};
use keel_engine::{Engine, Options, SyncMode};
use keel_http::{Headers, Method, Request, Response};
use keel_server::alloc::Allocators;
use keel_server::auth::{AlwaysAllow, TokenFile};
use keel_server::registry::Registry;
use keel_server::routes::LiveRoutes;
use keel_server::state::{State, StateParts};
use keel_server::storage::{Location, Storage};
use std::sync::Arc;

const TOKEN: &str = "fault-test-token";

struct Server {
    st: Arc<State>,
    fault: Arc<FaultIo>,
    _dir: tempfile::TempDir,
}

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultIo::new(dir.path()).unwrap();
    let mut opts = Options::new(dir.path().join("store"));
    opts.sync = SyncMode::Always;
    opts.maintenance_interval = None;
    opts.io = fault.clone();
    let engine = Engine::open(opts).unwrap();
    let catalog = keel_catalog::Catalog::new("").unwrap();
    let namespaces = Location::of(&catalog, catalog.lookup("", "v1", "namespaces").unwrap());
    let cidr = keel_server::options::Cidr::parse("10.0.0.0/24").unwrap();
    let st = Arc::new(State::new(StateParts {
        registry: Registry::new(
            Storage::new(Arc::new(engine)),
            Allocators::new(cidr, (30000, 32767)),
            namespaces,
        ),
        routes: LiveRoutes::new(catalog),
        tokens: TokenFile::parse(&format!("{TOKEN},admin,admin,\"system:masters\"\n")).unwrap(),
        authorizer: Box::new(AlwaysAllow),
        always_allow: vec!["/healthz".into(), "/readyz".into(), "/livez".into()],
        min_request_timeout: 1800,
        bookmark_interval: std::time::Duration::from_secs(60),
    }));
    run(keel_server::controllers::bootstrap::bootstrap(&st, 6443)).unwrap();
    st.mark_ready();
    Server {
        st,
        fault,
        _dir: dir,
    }
}

fn run<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

fn request(st: &Arc<State>, method: Method, target: &str, body: &str) -> (u16, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Headers::new();
    headers.push("Authorization", format!("Bearer {TOKEN}"));
    headers.push("Content-Type", "application/json");
    let req = Request {
        method,
        target: target.into(),
        path: path.into(),
        query: query.into(),
        headers,
        body: body.as_bytes().to_vec(),
        peer: "127.0.0.1:1".parse().unwrap(),
        tls: false,
        client_cert: None,
    };
    let resp: Response = run(keel_server::handlers::serve(st.clone(), req));
    let body = match resp.body {
        keel_http::Body::Full(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    (resp.status, body)
}

fn configmap(name: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#
    )
}

fn check_failed_sync(errno: i32) {
    let s = start();
    let cms = "/api/v1/namespaces/default/configmaps";
    assert_eq!(
        request(&s.st, Method::Post, cms, &configmap("before")).0,
        201
    );
    assert_eq!(request(&s.st, Method::Get, "/readyz", "").0, 200);

    s.fault
        .inject(FaultRule::new(IoOp::Sync, 1, Fault::Errno(errno)).sticky());
    let (code, body) = request(&s.st, Method::Post, cms, &configmap("lost"));
    assert_eq!(code, 500, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 500);
    assert_eq!(status["reason"], "InternalError");

    // Writes stay refused (fail-stop) even once the disk answers again, until a restart.
    s.fault.clear_faults();
    let (code, _) = request(&s.st, Method::Post, cms, &configmap("after"));
    assert_eq!(code, 500);

    for endpoint in ["/readyz", "/livez", "/healthz"] {
        let (code, body) = request(&s.st, Method::Get, endpoint, "");
        assert_eq!(code, 500, "{endpoint}: {body}");
    }
    let (_, verbose) = request(&s.st, Method::Get, "/readyz?verbose", "");
    assert!(verbose.contains("[-]store failed"), "{verbose}");

    // Reads keep working, and the failed write is not visible.
    assert_eq!(
        request(&s.st, Method::Get, &format!("{cms}/before"), "").0,
        200
    );
    assert_eq!(
        request(&s.st, Method::Get, &format!("{cms}/lost"), "").0,
        404
    );
    let (code, list) = request(&s.st, Method::Get, cms, "");
    assert_eq!(code, 200);
    assert!(
        list.contains("\"before\"") && !list.contains("\"lost\""),
        "{list}"
    );
}

#[test]
fn a_failed_sync_eio_is_a_500_and_fails_readiness_and_liveness() {
    check_failed_sync(libc::EIO);
}

#[test]
fn a_full_disk_enospc_is_a_500_and_fails_readiness_and_liveness() {
    check_failed_sync(libc::ENOSPC);
}
