//! `--disabled-metrics` and `--show-hidden-metrics-for-version` against the real binary: a
//! disabled metric is left out of `/metrics` (HELP, TYPE and samples), and a hidden-metrics
//! version other than the previous minor stops the server with upstream's text.

mod common;

use common::Server;
use std::process::{Command, Stdio};

#[test]
fn a_hidden_metrics_version_other_than_the_previous_minor_stops_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(["--data-dir", data.to_str().unwrap(), "--secure-port", "0"])
        .arg("--show-hidden-metrics-for-version=1.30")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("metrics.showHiddenMetricsForVersion: Invalid value: \"1.30\": must be omitted or have the value '1.35'; only the previous minor version is allowed"),
        "{err}"
    );
    assert!(!data.exists(), "the data directory was touched");
}

#[test]
fn disabled_metrics_are_left_out() {
    let s = Server::start(&[
        "--disabled-metrics=apiserver_request_total,apiserver_request_duration_seconds",
        "--show-hidden-metrics-for-version=1.35",
    ]);
    s.ok(&["get", "namespaces"]);
    let text = s.get("/metrics").text();
    assert!(!text.contains("apiserver_request_total"), "{text}");
    assert!(
        !text.contains("apiserver_request_duration_seconds"),
        "{text}"
    );
    // Others stay.
    assert!(
        text.contains("# HELP apiserver_longrunning_requests [STABLE]"),
        "{text}"
    );
    assert!(text.contains("\napiserver_resource_objects{"), "{text}");
}
