//! kubectl 1.32 against the real apiserver binary.

mod common;

use common::{eventually, server, write};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn default_namespaces_and_version() {
    let s = server();
    let out = s.ok(&["get", "ns", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(out.contains(&format!("namespace/{ns}")), "{out}");
    }
    let v = s.ok(&["version", "-o", "json"]);
    let v: Value = serde_json::from_str(&v).unwrap();
    assert_eq!(v["serverVersion"]["major"], "1");
    // The kubernetes service holds the first address of the service range.
    let svc = s.json(&["get", "svc", "kubernetes", "-n", "default"]);
    assert_eq!(svc["spec"]["clusterIP"], "10.0.0.1");
}

#[test]
fn create_generators_speak_protobuf() {
    let s = server();
    let ns = s.namespace("gen");
    s.ok(&["create", "configmap", "c1", "-n", &ns, "--from-literal=a=b"]);
    let cm = s.json(&["get", "cm", "c1", "-n", &ns]);
    assert_eq!(cm["data"]["a"], "b");
    assert!(cm["metadata"]["uid"].as_str().unwrap().len() >= 32);
    assert!(cm["metadata"]["creationTimestamp"].is_string());
    s.ok(&[
        "create",
        "deployment",
        "d1",
        "-n",
        &ns,
        "--image=nginx:1.25",
        "--replicas=2",
    ]);
    let d = s.json(&["get", "deploy", "d1", "-n", &ns]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    s.ok(&[
        "create",
        "service",
        "clusterip",
        "s1",
        "-n",
        &ns,
        "--tcp=80:8080",
    ]);
    let svc = s.json(&["get", "svc", "s1", "-n", &ns]);
    let ip = svc["spec"]["clusterIP"].as_str().unwrap();
    assert!(ip.starts_with("10.0.0."), "{ip}");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "sec",
        "-n",
        &ns,
        "--from-literal=k=v",
    ]);
    let sec = s.json(&["get", "secret", "sec", "-n", &ns]);
    assert_eq!(sec["data"]["k"], "dg==");
    assert_eq!(sec["type"], "Opaque");
}

#[test]
fn create_from_file_apply_and_reapply() {
    let s = server();
    let ns = s.namespace("apply");
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {tier: web}\ndata:\n  a: \"1\"\n  b: \"2\"\n");
    s.ok(&["create", "-f", f.to_str().unwrap(), "-n", &ns]);
    assert!(s
        .fails(&["create", "-f", f.to_str().unwrap(), "-n", &ns])
        .contains("AlreadyExists"));
    let f2 = write(dir.path(), "cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n  b: \"2\"\n");
    let out = s.ok(&["apply", "-f", f2.to_str().unwrap(), "-n", &ns]);
    assert!(out.contains("configmap/applied created"), "{out}");
    let f3 = write(
        dir.path(),
        "cm3.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"10\"\n",
    );
    let out = s.ok(&["apply", "-f", f3.to_str().unwrap(), "-n", &ns]);
    assert!(out.contains("configmap/applied configured"), "{out}");
    let cm = s.json(&["get", "cm", "applied", "-n", &ns]);
    assert_eq!(cm["data"]["a"], "10");
    assert!(
        cm["data"].get("b").is_none(),
        "apply removes fields dropped from the config: {cm}"
    );
    let out = s.ok(&["apply", "-f", f3.to_str().unwrap(), "-n", &ns]);
    assert!(out.contains("unchanged"), "{out}");
}

#[test]
fn get_output_formats() {
    let s = server();
    let ns = s.namespace("formats");
    s.ok(&[
        "create",
        "configmap",
        "fmt",
        "-n",
        &ns,
        "--from-literal=x=hello",
    ]);
    let table = s.ok(&["get", "cm", "-n", &ns]);
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("NAME") && header.contains("DATA") && header.contains("AGE"),
        "{table}"
    );
    assert!(table.contains("fmt"));
    let yaml = s.ok(&["get", "cm", "fmt", "-n", &ns, "-o", "yaml"]);
    assert!(
        yaml.contains("kind: ConfigMap") && yaml.contains("x: hello"),
        "{yaml}"
    );
    assert_eq!(
        s.ok(&["get", "cm", "fmt", "-n", &ns, "-o", "name"]).trim(),
        "configmap/fmt"
    );
    assert_eq!(
        s.ok(&["get", "cm", "fmt", "-n", &ns, "-o", "jsonpath={.data.x}"]),
        "hello"
    );
    let cc = s.ok(&[
        "get",
        "cm",
        "-n",
        &ns,
        "-o",
        "custom-columns=N:.metadata.name,X:.data.x",
    ]);
    assert!(cc.contains("fmt") && cc.contains(" hello"), "{cc}");
    let wide = s.ok(&["get", "ns", ns.as_str(), "-o", "wide"]);
    assert!(wide.contains("Active"), "{wide}");
    let list = s.json(&["get", "cm", "-n", &ns]);
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "fmt");
}

#[test]
fn get_watch_streams_changes() {
    let s = server();
    let ns = s.namespace("watching");
    let mut child = Command::new("kubectl")
        .env("KUBECONFIG", &s.kubeconfig)
        .args([
            "get",
            "cm",
            "-n",
            &ns,
            "-w",
            "--output-watch-events",
            "--no-headers",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    s.ok(&["create", "configmap", "w1", "-n", &ns]);
    s.ok(&["label", "configmap", "w1", "-n", &ns, "x=1"]);
    s.ok(&["delete", "configmap", "w1", "-n", &ns]);
    let mut lines = Vec::new();
    while lines.len() < 3 {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(l) => lines.push(l),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    // Table rows rendered by the server, one per event: EVENT NAME DATA AGE.
    let events: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            let mut f = l.split_whitespace();
            let event = f.next().unwrap_or("").to_string();
            (event, f.next().unwrap_or("").to_string())
        })
        .collect();
    let want: Vec<(String, String)> = ["ADDED", "MODIFIED", "DELETED"]
        .iter()
        .map(|e| (e.to_string(), "w1".to_string()))
        .collect();
    assert_eq!(events, want, "{lines:?}");
}

#[test]
fn explain_reads_openapi() {
    let s = server();
    let out = s.ok(&["explain", "pods.spec.containers"]);
    assert!(
        out.contains("image") && out.contains("KIND:") && out.contains("Pod"),
        "{out}"
    );
    let out = s.ok(&["explain", "deployments.spec.replicas"]);
    assert!(out.contains("integer"), "{out}");
}

#[test]
fn field_validation_strict_and_warn() {
    let s = server();
    let ns = s.namespace("validation");
    let manifest =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strict\nbogus: 1\ndata:\n  a: b\n";
    let out = s.kubectl_stdin(
        &["create", "-n", &ns, "-f", "-", "--validate=strict"],
        manifest,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown field \"bogus\""), "{err}");
    let out = s.kubectl_stdin(
        &["create", "-n", &ns, "-f", "-", "--validate=warn"],
        manifest,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("Warning") && err.contains("unknown field \"bogus\""),
        "{err}"
    );
    let cm = s.json(&["get", "cm", "strict", "-n", &ns]);
    assert!(cm.get("bogus").is_none(), "unknown fields are dropped");
}

#[test]
fn chunked_lists() {
    let s = server();
    let ns = s.namespace("chunks");
    for i in 0..7 {
        s.ok(&["create", "configmap", &format!("c{i}"), "-n", &ns]);
    }
    let out = s.ok(&["get", "cm", "-n", &ns, "--chunk-size=2", "-o", "name"]);
    let names: Vec<&str> = out.lines().filter(|l| l.contains("/c")).collect();
    assert_eq!(names.len(), 7, "{out}");
    // Raw pages: a continue token and remainingItemCount, then the rest at the same version.
    let page = s.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{ns}/configmaps?limit=3"),
    ]);
    let page: Value = serde_json::from_str(&page).unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 3);
    let remaining = page["metadata"]["remainingItemCount"].as_u64().unwrap();
    assert!(remaining >= 4, "{page}");
    let token = page["metadata"]["continue"].as_str().unwrap();
    let rv = page["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok(&["create", "configmap", "late", "-n", &ns]);
    let next = s.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{ns}/configmaps?limit=100&continue={token}"),
    ]);
    let next: Value = serde_json::from_str(&next).unwrap();
    assert_eq!(next["metadata"]["resourceVersion"], rv.as_str());
    let names: Vec<&str> = next["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.contains(&"late"),
        "a continued list stays at its snapshot: {names:?}"
    );
}

#[test]
fn patch_types() {
    let s = server();
    let ns = s.namespace("patching");
    s.ok(&["create", "deployment", "web", "-n", &ns, "--image=nginx:1"]);
    s.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    assert_eq!(
        s.json(&["get", "deploy", "web", "-n", &ns])["spec"]["replicas"],
        3
    );
    s.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        &ns,
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":4}]"#,
    ]);
    assert_eq!(
        s.json(&["get", "deploy", "web", "-n", &ns])["spec"]["replicas"],
        4
    );
    // Strategic merge: containers merge by name.
    s.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        &ns,
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:2"}]}}}}"#,
    ]);
    let d = s.json(&["get", "deploy", "web", "-n", &ns]);
    let cs = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0]["image"], "nginx:2");
    assert_eq!(
        d["metadata"]["generation"], 4,
        "each spec change bumps generation: {d}"
    );
    let err = s.fails(&[
        "patch",
        "deploy",
        "web",
        "-n",
        &ns,
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":99}]"#,
    ]);
    assert!(!err.is_empty());
}

#[test]
fn label_annotate_and_selectors() {
    let s = server();
    let ns = s.namespace("selectors");
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web")] {
        s.ok(&["create", "configmap", name, "-n", &ns]);
        s.ok(&["label", "cm", name, "-n", &ns, &format!("tier={tier}")]);
    }
    s.ok(&["annotate", "cm", "a", "-n", &ns, "note=hello"]);
    assert_eq!(
        s.json(&["get", "cm", "a", "-n", &ns])["metadata"]["annotations"]["note"],
        "hello"
    );
    let web = s.ok(&["get", "cm", "-n", &ns, "-l", "tier=web", "-o", "name"]);
    assert_eq!(
        web.lines().collect::<Vec<_>>(),
        vec!["configmap/a", "configmap/c"]
    );
    let notweb = s.ok(&["get", "cm", "-n", &ns, "-l", "tier!=web,tier", "-o", "name"]);
    assert_eq!(notweb.trim(), "configmap/b");
    let byname = s.ok(&[
        "get",
        "cm",
        "-n",
        &ns,
        "--field-selector",
        "metadata.name=c",
        "-o",
        "name",
    ]);
    assert_eq!(byname.trim(), "configmap/c");
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p1\nspec:\n  nodeName: node-a\n  containers:\n  - name: c\n    image: busybox\n";
    let out = s.kubectl_stdin(&["create", "-n", &ns, "-f", "-"], pod);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let on_a = s.ok(&[
        "get",
        "pods",
        "-n",
        &ns,
        "--field-selector",
        "spec.nodeName=node-a",
        "-o",
        "name",
    ]);
    assert_eq!(on_a.trim(), "pod/p1");
    let on_b = s.ok(&[
        "get",
        "pods",
        "-n",
        &ns,
        "--field-selector",
        "spec.nodeName=node-b",
        "-o",
        "name",
    ]);
    assert!(on_b.trim().is_empty());
    let bad = s.fails(&["get", "pods", "-n", &ns, "--field-selector", "spec.bogus=x"]);
    assert!(bad.contains("field label not supported"), "{bad}");
    let err = s.fails(&["get", "cm", "-n", &ns, "-l", "a in (b"]);
    assert!(!err.is_empty());
}

#[test]
fn generate_name_and_finalizers() {
    let s = server();
    let ns = s.namespace("finalizing");
    let out = s.kubectl_stdin(
        &["create", "-n", &ns, "-f", "-", "-o", "name"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let name = String::from_utf8(out.stdout).unwrap();
    assert!(
        name.trim().starts_with("configmap/gen-")
            && name.trim().len() == "configmap/gen-".len() + 5,
        "{name}"
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n";
    assert!(s
        .kubectl_stdin(&["create", "-n", &ns, "-f", "-"], cm)
        .status
        .success());
    s.ok(&["delete", "cm", "held", "-n", &ns, "--wait=false"]);
    let held = s.json(&["get", "cm", "held", "-n", &ns]);
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    // New content cannot be added while it is being deleted, but finalizers can be removed.
    s.ok(&[
        "patch",
        "cm",
        "held",
        "-n",
        &ns,
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let gone = s.fails(&["get", "cm", "held", "-n", &ns]);
    assert!(gone.contains("NotFound"), "{gone}");
}

#[test]
fn namespace_deletion_removes_contents() {
    let s = server();
    let ns = s.namespace("doomed");
    s.ok(&["create", "configmap", "x", "-n", &ns]);
    let set_finalizers = |patch: &str| {
        s.ok(&[
            "patch",
            "configmap",
            "x",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            patch,
        ]);
    };
    // A finalizer nobody removes holds the ConfigMap, and so the namespace, in deletion: the
    // namespace stays Terminating (observably, however fast the controller is) until it goes.
    set_finalizers(r#"{"metadata":{"finalizers":["example.com/hold"]}}"#);
    s.ok(&["create", "deployment", "d", "-n", &ns, "--image=nginx"]);
    s.ok(&[
        "create",
        "service",
        "clusterip",
        "svc",
        "-n",
        &ns,
        "--tcp=80",
    ]);
    s.ok(&["delete", "namespace", &ns, "--wait=false"]);
    let phase = s.json(&["get", "ns", &ns]);
    assert_eq!(phase["status"]["phase"], "Terminating", "{phase}");
    assert!(
        eventually(Duration::from_secs(15), || {
            !s.kubectl(&["get", "deployment", "d", "-n", &ns])
                .status
                .success()
                && !s
                    .kubectl(&["get", "service", "svc", "-n", &ns])
                    .status
                    .success()
        }),
        "the namespace's contents were not deleted"
    );
    let held = s.json(&["get", "configmap", "x", "-n", &ns]);
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert_eq!(
        s.json(&["get", "ns", &ns])["status"]["phase"],
        "Terminating"
    );
    let err = s.fails(&["create", "configmap", "y", "-n", &ns]);
    assert!(err.contains("is being terminated"), "{err}");
    set_finalizers(r#"{"metadata":{"finalizers":null}}"#);
    assert!(
        eventually(Duration::from_secs(15), || !s
            .kubectl(&["get", "ns", &ns])
            .status
            .success()),
        "namespace was not removed"
    );
    let err = s.fails(&["create", "configmap", "y", "-n", &ns]);
    assert!(
        err.contains(&format!("namespaces \"{ns}\" not found")),
        "{err}"
    );
}

#[test]
fn service_ips_are_unique_and_released() {
    let s = server();
    let ns = s.namespace("services");
    s.ok(&["create", "service", "clusterip", "a", "-n", &ns, "--tcp=80"]);
    s.ok(&["create", "service", "nodeport", "b", "-n", &ns, "--tcp=80"]);
    let a = s.json(&["get", "svc", "a", "-n", &ns]);
    let b = s.json(&["get", "svc", "b", "-n", &ns]);
    assert_ne!(a["spec"]["clusterIP"], b["spec"]["clusterIP"]);
    let np = b["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&np), "{np}");
    let ip = a["spec"]["clusterIP"].as_str().unwrap().to_string();
    s.ok(&["delete", "svc", "a", "-n", &ns]);
    // The released address can be taken explicitly again.
    let manifest = format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: c\nspec:\n  clusterIP: {ip}\n  ports:\n  - port: 80\n");
    let out = s.kubectl_stdin(&["create", "-n", &ns, "-f", "-"], &manifest);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dup = format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: d\nspec:\n  clusterIP: {ip}\n  ports:\n  - port: 80\n");
    let out = s.kubectl_stdin(&["create", "-n", &ns, "-f", "-"], &dup);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already allocated"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn scale_and_server_dry_run() {
    let s = server();
    let ns = s.namespace("scaling");
    s.ok(&["create", "deployment", "web", "-n", &ns, "--image=nginx"]);
    s.ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=5"]);
    assert_eq!(
        s.json(&["get", "deploy", "web", "-n", &ns])["spec"]["replicas"],
        5
    );
    let scale = s.ok(&[
        "get",
        "--raw",
        &format!("/apis/apps/v1/namespaces/{ns}/deployments/web/scale"),
    ]);
    let scale: Value = serde_json::from_str(&scale).unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);
    let out = s.ok(&[
        "create",
        "configmap",
        "dry",
        "-n",
        &ns,
        "--dry-run=server",
        "-o",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metadata"]["name"], "dry");
    assert!(s
        .fails(&["get", "cm", "dry", "-n", &ns])
        .contains("NotFound"));
}

#[test]
fn error_cases() {
    let s = server();
    let ns = s.namespace("errors");
    assert!(s
        .fails(&["get", "cm", "missing", "-n", &ns])
        .contains("configmaps \"missing\" not found"));
    s.ok(&["create", "configmap", "dup", "-n", &ns]);
    let err = s.fails(&["create", "configmap", "dup", "-n", &ns]);
    assert!(err.contains("configmaps \"dup\" already exists"), "{err}");
    let err = s.fails(&["create", "configmap", "Bad_Name", "-n", &ns]);
    assert!(
        err.contains("Invalid value") && err.contains("metadata.name"),
        "{err}"
    );
    // Stale resourceVersion: replace with an old copy conflicts.
    let old = s.ok(&["get", "cm", "dup", "-n", &ns, "-o", "json"]);
    s.ok(&["label", "cm", "dup", "-n", &ns, "v=2"]);
    let out = s.kubectl_stdin(&["replace", "-n", &ns, "-f", "-"], &old);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("the object has been modified"),
        "{err}"
    );
    let err = s.fails(&["get", "nosuchthings"]);
    assert!(err.contains("doesn't have a resource type"), "{err}");
}

#[test]
fn unauthenticated_requests_get_401() {
    let s = server();
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--cacert",
            s.ca_file().to_str().unwrap(),
            &format!("https://127.0.0.1:{}/api/v1/namespaces", s.port),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "401");
    let out = Command::new("curl")
        .args([
            "-s",
            "--cacert",
            s.ca_file().to_str().unwrap(),
            &format!("https://127.0.0.1:{}/readyz?verbose", s.port),
        ])
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(
        body.contains("[+]ping ok") && body.contains("readyz check passed"),
        "{body}"
    );
    let out = Command::new("curl")
        .args([
            "-s",
            "--cacert",
            s.ca_file().to_str().unwrap(),
            "-H",
            &format!("Authorization: Bearer {}", s.token),
            &format!("https://127.0.0.1:{}/metrics", s.port),
        ])
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(body.contains("apiserver_request_total{"), "{body}");
}

#[test]
fn edit_replace_and_status_patch() {
    let s = server();
    let ns = s.namespace("editing");
    s.ok(&["create", "deployment", "web", "-n", &ns, "--image=nginx"]);
    let dir = tempfile::tempdir().unwrap();
    let editor = write(
        dir.path(),
        "editor.sh",
        "#!/bin/sh\nsed -i 's/replicas: 1/replicas: 4/' \"$1\"\n",
    );
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = Command::new("kubectl")
        .env("KUBECONFIG", &s.kubeconfig)
        .env("EDITOR", &editor)
        .args(["edit", "deploy", "web", "-n", &ns])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("deployment.apps/web edited"));
    let d = s.json(&["get", "deploy", "web", "-n", &ns]);
    assert_eq!(d["spec"]["replicas"], 4);
    assert_eq!(d["metadata"]["generation"], 2);

    // replace with the current object (its resourceVersion is a precondition).
    let mut cur = d.clone();
    cur["spec"]["replicas"] = 6.into();
    let out = s.kubectl_stdin(&["replace", "-n", &ns, "-f", "-"], &cur.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.json(&["get", "deploy", "web", "-n", &ns])["spec"]["replicas"],
        6
    );

    // Status through the subresource; the main resource ignores status.
    s.ok(&[
        "patch", "deploy", "web", "-n", &ns, "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"replicas":6,"readyReplicas":2,"availableReplicas":2,"updatedReplicas":6},"spec":{"replicas":1}}"#,
    ]);
    let d = s.json(&["get", "deploy", "web", "-n", &ns]);
    assert_eq!(d["status"]["readyReplicas"], 2);
    assert_eq!(d["spec"]["replicas"], 6, "status patches leave spec alone");
    let row = s.ok(&["get", "deploy", "web", "-n", &ns, "--no-headers"]);
    assert!(row.split_whitespace().nth(1) == Some("2/6"), "{row}");
    s.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"status":{"readyReplicas":5}}"#,
    ]);
    assert_eq!(
        s.json(&["get", "deploy", "web", "-n", &ns])["status"]["readyReplicas"],
        2
    );

    // A client-side diff of the live object shows only the real change.
    let mut changed = s.json(&["get", "deploy", "web", "-n", &ns]);
    changed["spec"]["replicas"] = 7.into();
    let f = write(dir.path(), "d.json", &changed.to_string());
    let out = s.kubectl(&["diff", "-n", &ns, "-f", f.to_str().unwrap()]);
    let diff = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "differences found: {diff}");
    assert!(diff.contains("+  replicas: 7"), "{diff}");
    assert!(!diff.contains("annotations: {}"), "{diff}");
}

#[test]
fn wait_for_delete_and_conditions() {
    let s = server();
    let ns = s.namespace("waiting");
    s.ok(&["create", "configmap", "doomed", "-n", &ns]);
    s.ok(&["run", "p", "-n", &ns, "--image=nginx"]);
    let waiter = Command::new("kubectl")
        .env("KUBECONFIG", &s.kubeconfig)
        .args([
            "wait",
            "--for=delete",
            "cm/doomed",
            "-n",
            &ns,
            "--timeout=20s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    s.ok(&["delete", "cm", "doomed", "-n", &ns]);
    let out = waiter.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("condition met"));
    let out = s.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Pending",
        "pod/p",
        "-n",
        &ns,
        "--timeout=5s",
    ]);
    assert!(out.contains("condition met"), "{out}");
    let err = s.fails(&[
        "wait",
        "--for=condition=Ready",
        "pod/p",
        "-n",
        &ns,
        "--timeout=1s",
    ]);
    assert!(err.contains("timed out waiting for the condition"), "{err}");
}

#[test]
fn auth_can_i_and_whoami() {
    let s = server();
    assert_eq!(s.ok(&["auth", "can-i", "create", "pods"]).trim(), "yes");
    assert_eq!(s.ok(&["auth", "can-i", "get", "/healthz"]).trim(), "yes");
    let list = s.ok(&["auth", "can-i", "--list", "-n", "default"]);
    assert!(list.contains("*.*"), "{list}");
    let who = s.json(&["auth", "whoami"]);
    assert_eq!(who["kind"], "SelfSubjectReview");
    let groups = who["status"]["userInfo"]["groups"].as_array().unwrap();
    assert!(groups.contains(&"system:masters".into()), "{who}");
    assert!(groups.contains(&"system:authenticated".into()), "{who}");
}

#[test]
fn large_lists_stream_whole() {
    let s = server();
    let ns = s.namespace("biglist");
    let dir = tempfile::tempdir().unwrap();
    let value = "v".repeat(100_000);
    let f = write(dir.path(), "big.txt", &value);
    for i in 0..14 {
        s.ok(&[
            "create",
            "configmap",
            &format!("big{i}"),
            "-n",
            &ns,
            &format!("--from-file=data={}", f.display()),
        ]);
    }
    // 1.4 MB of items: above the streaming threshold, sent with chunked transfer coding.
    let out = s.ok(&["get", "cm", "-n", &ns, "--chunk-size=0", "-o", "name"]);
    assert_eq!(out.lines().count(), 14, "{out}");
    let raw = s.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
    ]);
    let list: Value = serde_json::from_str(&raw).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 14);
    assert!(items
        .iter()
        .all(|i| i["data"]["data"].as_str().unwrap().len() == 100_000));
    assert_eq!(list["kind"], "ConfigMapList");
}

#[test]
fn autoscalers_are_defaulted_and_validated() {
    let s = server();
    let ns = s.namespace("hpa");
    s.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        &ns,
        "--image=nginx:1.25",
    ]);
    // kubectl 1.32's autoscale writes autoscaling/v1 without a CPU target: the minimum is
    // defaulted, the 80 % target comes from its conversion to v2 for storage, and a new
    // autoscaler reads with Go's zero status of v1.
    s.ok(&["autoscale", "deployment", "web", "-n", &ns, "--max=4"]);
    // (The full name: kubectl expands the short name `hpa` to the preferred version, v2.)
    let v1 = s.json(&[
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "web",
        "-n",
        &ns,
    ]);
    assert_eq!(v1["spec"]["minReplicas"], 1, "{v1}");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 80, "{v1}");
    assert_eq!(
        v1["status"],
        serde_json::json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    // An autoscaling/v2 object gets v2's defaults (a CPU metric) and zero status.
    let v2 = r#"{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "new"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 2, "behavior": {}}}"#;
    let out = s.kubectl_stdin(&["create", "-n", &ns, "-f", "-"], v2);
    assert!(out.status.success(), "{out:?}");
    let v2 = s.json(&["get", "hpa.v2.autoscaling", "new", "-n", &ns]);
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 80,
        "{v2}"
    );
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max",
        "{v2}"
    );
    assert_eq!(v2["status"]["desiredReplicas"], 0, "{v2}");
    // Upstream's rules and messages.
    let bad = r#"{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 3,
                 "maxReplicas": 2,
                 "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}}}"#;
    let out = s.kubectl_stdin(&["create", "-n", &ns, "-f", "-"], bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    for want in [
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        "spec.scaleTargetRef.apiVersion: Invalid value: \"\": apiVersion must specify API group",
        "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
}
