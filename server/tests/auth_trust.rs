//! The `extension-apiserver-authentication` ConfigMap, as components read it at start: it
//! exists in `kube-system` with the server's client CA under `client-ca-file`, comes back when
//! deleted, and keeps the certificates other API servers put in the bundle (ours is added
//! after them), all seen through kubectl; and the other ConfigMap components read at start,
//! the legacy token tracking date.

mod common;

use common::{eventually, server, Server};
use std::time::Duration;

const CM: &[&str] = &[
    "get",
    "configmap",
    "-n",
    "kube-system",
    "extension-apiserver-authentication",
];

/// Another CA's certificate block (its bytes do not matter: the bundle is text).
const OTHER: &str = "-----BEGIN CERTIFICATE-----\nT1RIRVI=\n-----END CERTIFICATE-----\n";

fn bundle(s: &Server) -> Option<String> {
    let mut args = CM.to_vec();
    args.extend(["-o", "jsonpath={.data.client-ca-file}"]);
    let out = s.kubectl(&args);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ca(s: &Server) -> String {
    std::fs::read_to_string(s.ca_file()).unwrap()
}

#[test]
fn client_ca_is_published_and_kept() {
    let s = server();
    let ours = ca(s);
    assert!(ours.contains("-----BEGIN CERTIFICATE-----"));
    assert!(
        eventually(Duration::from_secs(10), || bundle(s).as_deref()
            == Some(ours.as_str())),
        "bundle: {:?}",
        bundle(s)
    );

    // Deleted: recreated.
    let mut del = CM.to_vec();
    del[0] = "delete";
    s.ok(&del);
    assert!(
        eventually(Duration::from_secs(10), || bundle(s).as_deref()
            == Some(ours.as_str())),
        "not recreated: {:?}",
        bundle(s)
    );

    // Replaced by a bundle with another server's CA only: ours is added after it.
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
        "data": {"client-ca-file": OTHER}
    });
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &cm.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = format!("{OTHER}{ours}");
    assert!(
        eventually(Duration::from_secs(10), || bundle(s).as_deref()
            == Some(want.as_str())),
        "merged: {:?}",
        bundle(s)
    );
}

/// The day legacy service-account token tracking began, as upstream's apiserver records it
/// for the controller manager (`since: YYYY-MM-DD`), created once.
#[test]
fn legacy_token_tracking_date_exists() {
    let s = server();
    let since = s.ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "kube-apiserver-legacy-service-account-token-tracking",
        "-o",
        "jsonpath={.data.since}",
    ]);
    let parts: Vec<&str> = since.split('-').collect();
    assert!(
        parts.len() == 3
            && parts[0].len() == 4
            && parts[1].len() == 2
            && parts[2].len() == 2
            && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())),
        "{since:?}"
    );
}
