//! `--emulated-version` against the real binary: a server emulating 1.33 does not serve what
//! 1.34-1.36 introduced (kubectl's discovery, the routes, `/version`), the default serves it,
//! and flags upstream refuses stop the server before it touches its data.

mod common;

use common::{server, Server};
use std::process::{Command, Stdio};

fn resources(s: &Server) -> String {
    s.ok(&["api-resources", "-o", "name"])
}

#[test]
fn emulating_1_33_hides_what_came_later() {
    let s = Server::start(&["--emulated-version", "1.33"]);
    let names = resources(&s);
    assert!(
        names.contains("servicecidrs.networking.k8s.io"),
        "GA in 1.33: {names}"
    );
    for later in [
        "resourceclaims.resource.k8s.io",
        "volumeattributesclasses.storage.k8s.io",
        "mutatingadmissionpolicies.admissionregistration.k8s.io",
    ] {
        assert!(!names.contains(later), "{later} came after 1.33: {names}");
    }
    assert_eq!(s.get("/apis/resource.k8s.io/v1/resourceclaims").status, 404);
    let v = s.get("/version").json();
    assert_eq!(
        (v["minor"].as_str(), v["emulationMinor"].as_str()),
        (Some("36"), Some("33"))
    );
    assert_eq!(v["minCompatibilityMinor"], "33");
    // A beta that existed in 1.33 can still be switched on.
    let beta = Server::start(&[
        "--emulated-version",
        "kube=1.33",
        "--runtime-config",
        "resource.k8s.io/v1beta1=true",
    ]);
    assert_eq!(
        beta.get("/apis/resource.k8s.io/v1beta1/resourceclaims")
            .status,
        200
    );
    assert_eq!(
        beta.get("/apis/resource.k8s.io/v1/resourceclaims").status,
        404
    );
    // With --emulation-forward-compatible the beta brings the GA version introduced later;
    // with --runtime-config-emulation-forward-compatible a later version named is served.
    let forward = Server::start(&[
        "--emulated-version=1.33",
        "--emulation-forward-compatible",
        "--runtime-config=resource.k8s.io/v1beta1=true",
    ]);
    assert_eq!(
        forward
            .get("/apis/resource.k8s.io/v1/resourceclaims")
            .status,
        200
    );
    let named = Server::start(&[
        "--emulated-version=1.33",
        "--runtime-config-emulation-forward-compatible=true",
        "--runtime-config=resource.k8s.io/v1=true",
    ]);
    assert_eq!(
        named.get("/apis/resource.k8s.io/v1/deviceclasses").status,
        200
    );
    assert_eq!(
        named
            .get("/apis/storage.k8s.io/v1/volumeattributesclasses")
            .status,
        404
    );
}

#[test]
fn the_default_serves_the_current_release() {
    let s = server();
    let names = resources(s);
    for current in [
        "resourceclaims.resource.k8s.io",
        "deviceclasses.resource.k8s.io",
        "volumeattributesclasses.storage.k8s.io",
        "ipaddresses.networking.k8s.io",
    ] {
        assert!(names.contains(current), "{current}: {names}");
    }
    let v = s.get("/version").json();
    assert_eq!(
        (
            v["emulationMinor"].as_str(),
            v["minCompatibilityMinor"].as_str()
        ),
        (Some("36"), Some("35"))
    );
}

#[test]
fn refused_flags_stop_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for (args, want) in [
        (vec!["--emulated-version", "1.32"], "emulation version 1.32 is not between [1.33, 1.36.0]"),
        (vec!["--emulated-version", "1.35", "--min-compatibility-version", "1.36"],
         "minCompatibilityVersion version 1.36 is not between [1.33, 1.35]"),
        (vec!["--emulated-version", "1.33", "--runtime-config", "resource.k8s.io/v1=true"],
         "cannot enable version resource.k8s.io/v1 in runtime-config because all the resources have been introduced after the current version 1.33"),
        (vec!["--emulation-forward-compatible"],
         "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_apiserver"))
            .args(["--data-dir", data.to_str().unwrap(), "--secure-port", "0"])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "started with {args:?}");
        assert!(err.contains(want), "{err}");
        assert!(!data.exists(), "the data directory was touched");
    }
}

#[test]
fn deprecated_apis_warn_as_upstream() {
    let s = server();
    // kubectl prints the server's warning; a current API gets none.
    let out = s.kubectl(&["get", "endpoints", "-n", "default"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
        ),
        "{err}"
    );
    let out = s.kubectl(&["get", "deployments", "-n", "default"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("Warning"),
        "{out:?}"
    );
    // Errors carry it too, and the request is counted.
    let missing = s.get("/api/v1/namespaces/default/endpoints/missing");
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.header("warning"),
        Some(
            "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\""
        )
    );
    let metrics = s.get("/metrics").text();
    assert!(
        metrics.contains("apiserver_requested_deprecated_apis{group=\"\",removed_release=\"\",resource=\"endpoints\",subresource=\"\",version=\"v1\"} 1"),
        "{metrics}"
    );
}
