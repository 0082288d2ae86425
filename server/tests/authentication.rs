//! Authentication beyond static tokens. Service accounts with kubectl and the Python client:
//! every namespace's `default`
//! ServiceAccount and `kube-root-ca.crt`, `kubectl create token` (audiences, durations,
//! bound objects), the token's user (`kubectl auth whoami`, TokenReview), RBAC deciding for
//! it, tokens ceasing to work when their service account or bound pod goes, forged and
//! wrong-audience tokens refused, the issuer discovery documents, anonymous requests, the
//! `kubernetes` service's endpoints, and a pod's in-cluster client. Front proxies
//! (request-header authentication).

mod common;

use base64::Engine as _;
use common::{eventually, Server};
use serde_json::{json, Value};
use std::time::Duration;

/// Longer than the token cache keeps a success (10 s), for a token to stop working.
const WAIT: Duration = Duration::from_secs(30);

/// With every controller that runs by default (the test harness turns off the ones that fill
/// namespaces unless asked).
const ALL_CONTROLLERS: &str = "--controllers=*";

fn rbac_server(extra: &[&str]) -> Server {
    let mut args = vec!["--authorization-mode", "RBAC", ALL_CONTROLLERS];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn as_token(s: &Server, token: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![format!("--token={token}")];
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    s.kubectl(&all)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A raw HTTPS request with `token` (none: anonymous).
fn curl(s: &Server, path: &str, token: Option<&str>) -> (u16, Value) {
    let url = format!("https://127.0.0.1:{}{path}", s.port);
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-s", "-w", "\n%{http_code}", "--max-time", "20"])
        .args(["--cacert", s.ca_file().to_str().unwrap()]);
    if let Some(t) = token {
        cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd.arg(&url).output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (
        code.parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::String(body.to_string())),
    )
}

fn whoami(s: &Server, token: &str) -> Value {
    let o = as_token(s, token, &["auth", "whoami", "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn unauthorized(o: &std::process::Output) -> bool {
    !o.status.success() && stderr(o).contains("Unauthorized")
}

#[test]
fn namespaces_get_their_service_account_and_root_ca() {
    let s = Server::start(&[ALL_CONTROLLERS]);
    let ns = s.namespace("sa-defaults");
    let ca = std::fs::read_to_string(s.ca_file()).unwrap();
    assert!(eventually(WAIT, || s
        .kubectl(&["get", "serviceaccount", "default", "-n", &ns])
        .status
        .success()));
    let mut cm = Value::Null;
    assert!(eventually(WAIT, || {
        let o = s.kubectl(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        cm = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        o.status.success()
    }));
    assert_eq!(cm["data"], json!({"ca.crt": ca}));
    assert!(cm["metadata"]["annotations"]["kubernetes.io/description"]
        .as_str()
        .unwrap()
        .starts_with("Contains a CA bundle"));
    // Both come back when deleted; a changed bundle is put back.
    s.ok(&["delete", "serviceaccount", "default", "-n", &ns]);
    s.ok(&[
        "patch",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        &ns,
        "--type",
        "merge",
        "-p",
        r#"{"data":{"ca.crt":"x"}}"#,
    ]);
    assert!(eventually(WAIT, || s
        .kubectl(&["get", "serviceaccount", "default", "-n", &ns])
        .status
        .success()));
    assert!(eventually(WAIT, || {
        let o = s.kubectl(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        serde_json::from_slice::<Value>(&o.stdout).is_ok_and(|v| v["data"]["ca.crt"] == json!(ca))
    }));
    // The kubernetes service points nowhere from a loopback-only server.
    assert!(!s
        .kubectl(&["get", "endpoints", "kubernetes", "-n", "default"])
        .status
        .success());
}

#[test]
fn the_kubernetes_service_points_at_the_advertised_address() {
    // Written as data only: nothing is sent to the benchmark-range address.
    let s = Server::start(&["--advertise-address", "198.18.0.1"]);
    let ep = s.json(&["get", "endpoints", "kubernetes", "-n", "default"]);
    assert_eq!(
        ep["subsets"],
        json!([{"addresses": [{"ip": "198.18.0.1"}], "ports": [{"name": "https", "port": s.port, "protocol": "TCP"}]}])
    );
    let slice = s.json(&[
        "get",
        "endpointslices.discovery.k8s.io",
        "kubernetes",
        "-n",
        "default",
    ]);
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(slice["endpoints"][0]["addresses"], json!(["198.18.0.1"]));
    assert_eq!(slice["ports"][0]["port"], json!(s.port));
}

#[test]
fn tokens_authenticate_their_service_account() {
    let s = rbac_server(&[]);
    let ns = s.namespace("sa-tokens");
    s.ok(&["create", "serviceaccount", "robot", "-n", &ns]);
    let sa_uid = s.json(&["get", "serviceaccount", "robot", "-n", &ns])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let token = s
        .ok(&["create", "token", "robot", "-n", &ns])
        .trim()
        .to_string();

    // The token's claims, as upstream writes them.
    let payload = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        claims["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(claims["sub"], format!("system:serviceaccount:{ns}:robot"));
    assert_eq!(
        claims["kubernetes.io"]["serviceaccount"]["uid"],
        json!(sa_uid)
    );
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );

    let me = whoami(&s, &token);
    assert!(me["metadata"]["creationTimestamp"].is_string(), "{me}");
    let info = &me["status"]["userInfo"];
    assert_eq!(
        info["username"],
        format!("system:serviceaccount:{ns}:robot")
    );
    assert_eq!(info["uid"], json!(sa_uid));
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated"
        ])
    );
    assert_eq!(
        info["extra"]["authentication.kubernetes.io/credential-id"][0],
        format!("JTI={}", claims["jti"].as_str().unwrap())
    );

    // RBAC decides for the service account.
    let denied = as_token(&s, &token, &["get", "pods", "-n", &ns]);
    assert_eq!(
        stderr(&denied),
        format!(
            r#"Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:{ns}:robot" cannot list resource "pods" in API group "" in the namespace "{ns}""#
        )
    );
    s.ok(&[
        "create",
        "rolebinding",
        "robot-view",
        "--clusterrole=view",
        &format!("--serviceaccount={ns}:robot"),
        "-n",
        &ns,
    ]);
    assert!(eventually(WAIT, || as_token(
        &s,
        &token,
        &["get", "pods", "-n", &ns]
    )
    .status
    .success()));
    assert_eq!(
        stdout(&as_token(
            &s,
            &token,
            &["auth", "can-i", "list", "secrets", "-n", &ns]
        )),
        "no"
    );
    // Service accounts may read the issuer's discovery documents; anonymous users may not.
    let (code, config) = curl(&s, "/.well-known/openid-configuration", Some(&token));
    assert_eq!(code, 200, "{config}");
    assert_eq!(
        config["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(
        config["jwks_uri"],
        format!("https://127.0.0.1:{}/openid/v1/jwks", s.port)
    );
    let (code, jwks) = curl(&s, "/openid/v1/jwks", Some(&token));
    assert_eq!(code, 200);
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(jwks["keys"][0]["kid"], header["kid"]);
    assert_eq!(jwks["keys"][0]["alg"], header["alg"]);
    let (code, _) = curl(&s, "/openid/v1/jwks", None);
    assert_eq!(code, 403);

    // TokenReview of the token, for the API and for another audience.
    let review = |token: &str, audiences: Value| -> Value {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, "audiences": audiences}});
        let o = s.kubectl_stdin(&["create", "-f", "-", "-o", "json"], &body.to_string());
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let r = review(&token, Value::Null);
    assert_eq!(r["status"]["authenticated"], true);
    assert_eq!(
        r["status"]["user"]["username"],
        format!("system:serviceaccount:{ns}:robot")
    );
    assert_eq!(
        r["status"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let r = review(&token, json!(["vault"]));
    assert_eq!(r["status"].get("authenticated"), None);
    assert_eq!(
        r["status"]["error"],
        r#"[invalid bearer token, token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["vault"]]"#
    );

    // A token for another audience is no credential here, but its audience's reviewer
    // accepts it.
    let vault = s.ok(&["create", "token", "robot", "-n", &ns, "--audience", "vault"]);
    let vault = vault.trim();
    assert!(unauthorized(&as_token(
        &s,
        vault,
        &["get", "pods", "-n", &ns]
    )));
    let r = review(vault, json!(["vault"]));
    assert_eq!(r["status"]["authenticated"], true);
    assert_eq!(r["status"]["audiences"], json!(["vault"]));

    // Forged: another subject in the payload, the signature kept.
    let mut parts: Vec<String> = token.split('.').map(String::from).collect();
    let mut forged = claims.clone();
    forged["sub"] = json!("system:serviceaccount:kube-system:admin");
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged.to_string());
    assert!(unauthorized(&as_token(
        &s,
        &parts.join("."),
        &["get", "pods", "-n", &ns]
    )));
    assert!(unauthorized(&as_token(
        &s,
        "not-a-token",
        &["get", "pods", "-n", &ns]
    )));
    let r = review(&format!("{token}x"), Value::Null);
    assert_eq!(
        r["status"]["error"],
        "[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]"
    );

    // Durations: validated and kept.
    let short = s.kubectl(&["create", "token", "robot", "-n", &ns, "--duration", "5m"]);
    assert!(
        stderr(&short).contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{}",
        stderr(&short)
    );
    let long = s.ok(&["create", "token", "robot", "-n", &ns, "--duration", "2h"]);
    let c: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(long.trim().split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        7200
    );
    let missing = s.kubectl(&["create", "token", "nobody", "-n", &ns]);
    assert!(
        stderr(&missing).contains(r#"serviceaccounts "nobody" not found"#),
        "{}",
        stderr(&missing)
    );

    // The service account deleted: its tokens stop working.
    s.ok(&["delete", "serviceaccount", "robot", "-n", &ns]);
    assert!(eventually(WAIT, || unauthorized(&as_token(
        &s,
        &token,
        &["get", "pods", "-n", &ns]
    ))));
    let r = review(&token, Value::Null);
    assert_eq!(
        r["status"]["error"],
        r#"[invalid bearer token, serviceaccounts "robot" not found]"#
    );
}

#[test]
fn pod_bound_tokens_and_the_in_cluster_python_client() {
    let s = rbac_server(&[]);
    let ns = s.namespace("sa-pods");
    s.ok(&["create", "serviceaccount", "app", "-n", &ns]);
    s.ok(&[
        "create",
        "rolebinding",
        "app-view",
        "--clusterrole=view",
        &format!("--serviceaccount={ns}:app"),
        "-n",
        &ns,
    ]);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": ns},
        "spec": {"serviceAccountName": "app", "containers": [{"name": "c", "image": "nginx"}]}});
    s.kubectl_stdin(&["create", "-f", "-"], &pod.to_string());
    let pod_uid = s.json(&["get", "pod", "web", "-n", &ns])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let token = s.ok(&[
        "create",
        "token",
        "app",
        "-n",
        &ns,
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "web",
    ]);
    let token = token.trim().to_string();
    // A pod of another service account cannot hold the token.
    let other = s.kubectl(&[
        "create",
        "token",
        "default",
        "-n",
        &ns,
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "web",
    ]);
    assert!(
        stderr(&other).contains(r#"cannot bind token for serviceaccount "default" to pod running with different serviceaccount name."#),
        "{}",
        stderr(&other)
    );

    // What a kubelet mounts: the token, and ca.crt from kube-root-ca.crt.
    let mut ca = String::new();
    assert!(eventually(WAIT, || {
        let o = s.kubectl(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            &ns,
            "-o",
            "jsonpath={.data.ca\\.crt}",
        ]);
        ca = String::from_utf8_lossy(&o.stdout).to_string();
        o.status.success() && !ca.is_empty()
    }));
    let mount = tempfile::tempdir().unwrap();
    std::fs::write(mount.path().join("token"), &token).unwrap();
    std::fs::write(mount.path().join("ca.crt"), &ca).unwrap();
    let script = format!(
        "{}/tests/python/service_account.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = std::process::Command::new("python3")
        .args([
            &script,
            mount.path().to_str().unwrap(),
            &s.port.to_string(),
            &ns,
        ])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["username"], format!("system:serviceaccount:{ns}:app"));
    assert_eq!(
        seen["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["web"])
    );
    assert_eq!(
        seen["extra"]["authentication.kubernetes.io/pod-uid"],
        json!([pod_uid])
    );
    assert_eq!(seen["pods"], json!(["web"]));
    assert_eq!(seen["secrets"], json!(403));

    // The pod deleted: its token stops working.
    s.ok(&[
        "delete",
        "pod",
        "web",
        "-n",
        &ns,
        "--grace-period=0",
        "--force",
    ]);
    assert!(eventually(WAIT, || unauthorized(&as_token(
        &s,
        &token,
        &["get", "pods", "-n", &ns]
    ))));
}

#[test]
fn anonymous_requests_are_authorized_as_system_anonymous() {
    let s = rbac_server(&[]);
    let (code, _) = curl(&s, "/version", None);
    assert_eq!(code, 200);
    let (code, body) = curl(&s, "/api", None);
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/api""#
    );
    // Refused on its head (its body unread), with upstream's text.
    let url = format!(
        "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps",
        s.port
    );
    let out = std::process::Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "20",
            "--cacert",
            s.ca_file().to_str().unwrap(),
        ])
        .args(["-X", "POST", "-H", "Content-Type: application/json"])
        .args(["-d", r#"{"metadata":{"name":"x"}}"#, &url])
        .output()
        .unwrap();
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        body["message"],
        r#"configmaps is forbidden: User "system:anonymous" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );
    // A bad token is not anonymous.
    let (code, body) = curl(&s, "/version", Some("bad"));
    assert_eq!((code, body["reason"].as_str()), (401, Some("Unauthorized")));
    // Off: no credentials, no access.
    let off = rbac_server(&["--anonymous-auth=false"]);
    assert_eq!(curl(&off, "/version", None).0, 401);
    // Under AlwaysAllow alone anonymous access is forced off, as upstream.
    let open = Server::start(&["--authorization-mode", "AlwaysAllow", ALL_CONTROLLERS]);
    assert_eq!(curl(&open, "/api", None).0, 401);
}

/// SelfSubjectReview over curl with a client certificate and extra headers.
fn whoami_with_cert(
    s: &Server,
    cert: &std::path::Path,
    key: &std::path::Path,
    headers: &[&str],
) -> (u16, Value) {
    let url = format!(
        "https://127.0.0.1:{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        s.port
    );
    let mut cmd = std::process::Command::new("curl");
    cmd.args([
        "-s",
        "-w",
        "\n%{http_code}",
        "--max-time",
        "20",
        "-X",
        "POST",
    ])
    .args(["--cacert", s.ca_file().to_str().unwrap()])
    .args([
        "--cert",
        cert.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ])
    .args([
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
    ]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(&url).output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (
        code.parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::String(body.to_string())),
    )
}

#[test]
fn front_proxies_name_the_user_in_headers() {
    let s = rbac_server(&["--anonymous-auth=false"]);
    let pki = s.dir.join("pki");
    let (cert, key) = (
        pki.join("front-proxy-client.crt"),
        pki.join("front-proxy-client.key"),
    );
    let (code, r) = whoami_with_cert(
        &s,
        &cert,
        &key,
        &[
            "X-Remote-User: alice",
            "X-Remote-Group: dev",
            "X-Remote-Group: ops",
            "X-Remote-Extra-Scopes%2fA: read",
            "X-Remote-Extra-scopes%2Fa: write",
        ],
    );
    assert_eq!(code, 201, "{r}");
    assert_eq!(
        r["status"]["userInfo"],
        json!({"username": "alice", "groups": ["dev", "ops", "system:authenticated"], "extra": {"scopes/a": ["read", "write"]}})
    );
    // No user header: the proxy's certificate is no identity of its own.
    assert_eq!(whoami_with_cert(&s, &cert, &key, &[]).0, 401);
    // A certificate of the request-header CA with a name not allowed is no proxy.
    let dir = tempfile::tempdir().unwrap();
    let (other, other_key) = keel_http::tls::issue_client_cert(
        &pki.join("front-proxy-ca.crt"),
        &pki.join("front-proxy-ca.key"),
        "intruder",
        &[],
    )
    .unwrap();
    let (oc, ok) = (dir.path().join("o.crt"), dir.path().join("o.key"));
    std::fs::write(&oc, other).unwrap();
    std::fs::write(&ok, other_key).unwrap();
    assert_eq!(
        whoami_with_cert(&s, &oc, &ok, &["X-Remote-User: alice"]).0,
        401
    );
    // A client certificate of the client CA is its own subject: headers change nothing.
    let (mine, mine_key) = keel_http::tls::issue_client_cert(
        &pki.join("ca.crt"),
        &pki.join("ca.key"),
        "carol",
        &["team".to_string()],
    )
    .unwrap();
    let (mc, mk) = (dir.path().join("m.crt"), dir.path().join("m.key"));
    std::fs::write(&mc, mine).unwrap();
    std::fs::write(&mk, mine_key).unwrap();
    let (code, r) = whoami_with_cert(&s, &mc, &mk, &["X-Remote-User: alice"]);
    assert_eq!(code, 201, "{r}");
    assert_eq!(r["status"]["userInfo"]["username"], "carol");
}
