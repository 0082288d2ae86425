//! A disk that fails under the server: the real handlers, registry and engine in process, the
//! engine's I/O behind the fault-injecting implementation. A failed sync (EIO, or ENOSPC: a
//! full disk) must answer the write with a 5xx `Status`, fail `/readyz` and `/livez`, leave
//! reads working and never show the failed write.

mod in_process;

use in_process::request;
use keel_engine::io::fault::{Fault, FaultIo, FaultRule, IoOp};
use keel_engine::{Engine, Options, SyncMode};
use keel_http::Method;
use keel_server::state::State;
use std::sync::Arc;

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
    Server {
        st: in_process::state(Arc::new(engine)),
        fault,
        _dir: dir,
    }
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
