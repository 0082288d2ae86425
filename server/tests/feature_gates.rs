//! `--feature-gates` against the real binary: gates kube-apiserver v1.36 refuses (an unknown
//! name, a locked gate set off, a dependency of an enabled gate set off) stop the server with upstream's text and exit code 1 before it
//! touches its data; known gates, including the two the documents keep, start it.

mod common;

use common::Server;
use std::process::{Command, Stdio};

#[test]
fn refused_gates_stop_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for (gates, want) in [
        ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        (
            "AnyVolumeDataSource=false",
            "cannot set feature gate AnyVolumeDataSource to false, feature is locked to true",
        ),
        ("Foo", "missing bool value for Foo"),
        (
            "GracefulNodeShutdown=false",
            "GracefulNodeShutdownBasedOnPodPriority is enabled, but depends on features that are \
             disabled: [GracefulNodeShutdown]",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_apiserver"))
            .args(["--data-dir", data.to_str().unwrap(), "--secure-port", "0"])
            .arg(format!("--feature-gates={gates}"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{gates}: {err}");
        assert!(err.contains(want), "{gates}: {err}");
        assert!(!data.exists(), "{gates}: the data directory was touched");
    }
}

#[test]
fn known_gates_start_the_server() {
    let s = Server::start(&[
        "--feature-gates=AnyVolumeDataSource=true,AllowDNSOnlyNodeCSR=true,AllAlpha=true,\
         APIListChunking=false,ServerSideFieldValidation=false",
    ]);
    assert_eq!(s.get("/readyz").status, 200);
}
