//! Cascading deletion and the in-process garbage collector, driven with kubectl
//! (`kubectl delete --cascade=background|foreground|orphan`) on owners and dependents made
//! by hand (keel has no workload controllers): ConfigMaps, and a ReplicaSet owning Pods.

mod common;

use common::{eventually, server, Server};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// Longest the collector may take to act (it is woken by deletions; passes are 200 ms apart).
const GC_TIMEOUT: Duration = Duration::from_secs(10);
/// A finalizer of the test's own that holds an object.
const HOLD: &str = "example.com/hold";

fn uid(s: &Server, kind: &str, name: &str, ns: &str) -> String {
    s.json(&["get", kind, name, "-n", ns])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string()
}

fn owner_ref(kind: &str, api_version: &str, name: &str, uid: &str, block: bool) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
           "controller": false, "blockOwnerDeletion": block})
}

/// Creates ConfigMap `name` in `ns` with these owner references and finalizers.
fn configmap(s: &Server, ns: &str, name: &str, owners: &[Value], finalizers: &[&str]) {
    let mut meta = json!({"name": name, "namespace": ns});
    if !owners.is_empty() {
        meta["ownerReferences"] = json!(owners);
    }
    if !finalizers.is_empty() {
        meta["finalizers"] = json!(finalizers);
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "b"}});
    let out = s.kubectl_stdin(&["create", "-f", "-"], &cm.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn cm_owner(s: &Server, ns: &str, name: &str, block: bool) -> Value {
    owner_ref("ConfigMap", "v1", name, &uid(s, "cm", name, ns), block)
}

fn exists(s: &Server, kind: &str, name: &str, ns: &str) -> bool {
    s.kubectl(&["get", kind, name, "-n", ns]).status.success()
}

fn get(s: &Server, kind: &str, name: &str, ns: &str) -> Value {
    s.json(&["get", kind, name, "-n", ns])
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| a.iter().map(|f| f.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Watches one object with kubectl, a line of its finalizers per version seen; returns once
/// the first (current) version is printed.
fn watch_finalizers(s: &Server, kind: &str, name: &str, ns: &str) -> (Child, Receiver<String>) {
    let mut child = Command::new("kubectl")
        .env("KUBECONFIG", &s.kubeconfig)
        .args(["get", kind, name, "-n", ns, "-w"])
        .arg("-o=jsonpath={.metadata.finalizers}{\"\\n\"}")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx.recv_timeout(GC_TIMEOUT)
        .expect("the watch prints the object");
    (child, rx)
}

/// The lines a watch printed after its first, once it is stopped.
fn seen(mut child: Child, rx: Receiver<String>) -> Vec<String> {
    std::thread::sleep(Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    rx.try_iter().collect()
}

/// Takes the test's finalizer off an object.
fn release(s: &Server, kind: &str, name: &str, ns: &str) {
    // The collector may drop its own finalizer between the read and the write: the patch is
    // conditional on the version read, and read again when that version is gone.
    for _ in 0..20 {
        let obj = get(s, kind, name, ns);
        let rest: Vec<String> = finalizers(&obj).into_iter().filter(|f| f != HOLD).collect();
        let rv = obj["metadata"]["resourceVersion"].clone();
        let patch = json!({"metadata": {"finalizers": rest, "resourceVersion": rv}}).to_string();
        let out = s.kubectl(&["patch", kind, name, "-n", ns, "--type=merge", "-p", &patch]);
        if out.status.success() {
            return;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("the object has been modified"), "{err}");
    }
    panic!("{kind}/{name} kept changing");
}

/// Background (kubectl's default): the owner goes at once; its dependents follow, except one
/// that another (live) owner still holds, which only loses the reference.
#[test]
fn background_deletes_dependents_whose_owners_are_gone() {
    let s = server();
    let ns = s.namespace("gc-background");
    configmap(s, &ns, "owner", &[], &[]);
    configmap(s, &ns, "other", &[], &[]);
    let owner = cm_owner(s, &ns, "owner", false);
    let other = cm_owner(s, &ns, "other", false);
    configmap(s, &ns, "dep1", std::slice::from_ref(&owner), &[]);
    configmap(s, &ns, "dep2", std::slice::from_ref(&owner), &[]);
    configmap(s, &ns, "shared", &[owner.clone(), other.clone()], &[]);
    s.ok(&["delete", "cm", "owner", "-n", &ns, "--cascade=background"]);
    assert!(!exists(s, "cm", "owner", &ns));
    assert!(
        eventually(GC_TIMEOUT, || !exists(s, "cm", "dep1", &ns)
            && !exists(s, "cm", "dep2", &ns)),
        "dependents of a deleted owner stay"
    );
    let shared = get(s, "cm", "shared", &ns);
    assert_eq!(shared["metadata"]["ownerReferences"], json!([other]));
    // A dependent created naming an owner that is gone is collected too (on the resync).
    configmap(s, &ns, "late", std::slice::from_ref(&owner), &[]);
    assert!(eventually(Duration::from_secs(20), || !exists(
        s, "cm", "late", &ns
    )));
}

/// Foreground: the owner stays with `foregroundDeletion` while its dependents are deleted,
/// and goes once no dependent with `blockOwnerDeletion` is left; a non-blocking dependent
/// does not hold it.
#[test]
fn foreground_waits_for_blocking_dependents() {
    let s = server();
    let ns = s.namespace("gc-foreground");
    configmap(s, &ns, "owner", &[], &[]);
    let blocking = cm_owner(s, &ns, "owner", true);
    let free = cm_owner(s, &ns, "owner", false);
    configmap(s, &ns, "blocker", &[blocking], &[HOLD]);
    configmap(s, &ns, "free", &[free], &[HOLD]);
    s.ok(&[
        "delete",
        "cm",
        "owner",
        "-n",
        &ns,
        "--cascade=foreground",
        "--wait=false",
    ]);
    let o = get(s, "cm", "owner", &ns);
    assert!(o["metadata"]["deletionTimestamp"].is_string(), "{o}");
    assert_eq!(finalizers(&o), vec!["foregroundDeletion"]);
    // Both dependents are being deleted (held by the test's finalizer); the owner waits.
    assert!(eventually(GC_TIMEOUT, || {
        ["blocker", "free"]
            .iter()
            .all(|d| get(s, "cm", d, &ns)["metadata"]["deletionTimestamp"].is_string())
    }));
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        exists(s, "cm", "owner", &ns),
        "owner gone before its blocking dependent"
    );
    release(s, "cm", "blocker", &ns);
    assert!(
        eventually(GC_TIMEOUT, || !exists(s, "cm", "owner", &ns)),
        "owner stays after its blocking dependent went"
    );
    assert!(exists(s, "cm", "free", &ns));
    release(s, "cm", "free", &ns);
    assert!(eventually(GC_TIMEOUT, || !exists(s, "cm", "free", &ns)));
}

/// Foreground through two levels: a ReplicaSet owning Pods that are deleted first.
#[test]
fn foreground_replicaset_and_pods() {
    let s = server();
    let ns = s.namespace("gc-rs");
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert!(s
        .kubectl_stdin(&["create", "-f", "-"], &rs.to_string())
        .status
        .success());
    let rs_ref = owner_ref(
        "ReplicaSet",
        "apps/v1",
        "web",
        &uid(s, "rs", "web", &ns),
        true,
    );
    for p in ["web-1", "web-2"] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": p, "namespace": ns, "labels": {"app": "web"},
                         "ownerReferences": [rs_ref], "finalizers": [HOLD]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        assert!(s
            .kubectl_stdin(&["create", "-f", "-"], &pod.to_string())
            .status
            .success());
    }
    s.ok(&[
        "delete",
        "rs",
        "web",
        "-n",
        &ns,
        "--cascade=foreground",
        "--wait=false",
    ]);
    assert!(eventually(GC_TIMEOUT, || {
        ["web-1", "web-2"]
            .iter()
            .all(|p| get(s, "pod", p, &ns)["metadata"]["deletionTimestamp"].is_string())
    }));
    assert_eq!(
        finalizers(&get(s, "rs", "web", &ns)),
        vec!["foregroundDeletion"]
    );
    release(s, "pod", "web-1", &ns);
    std::thread::sleep(Duration::from_millis(600));
    assert!(exists(s, "rs", "web", &ns));
    release(s, "pod", "web-2", &ns);
    assert!(eventually(GC_TIMEOUT, || !exists(s, "rs", "web", &ns)));
    assert!(!exists(s, "pod", "web-1", &ns) && !exists(s, "pod", "web-2", &ns));
}

/// Orphan: the owner gets the `orphan` finalizer, its dependents lose the reference and stay,
/// then the finalizer goes (here another finalizer keeps the owner, so each step is seen).
#[test]
fn orphan_keeps_dependents_and_removes_references() {
    let s = server();
    let ns = s.namespace("gc-orphan");
    configmap(s, &ns, "owner", &[], &[HOLD]);
    let owner = cm_owner(s, &ns, "owner", true);
    configmap(s, &ns, "dep1", std::slice::from_ref(&owner), &[]);
    configmap(s, &ns, "dep2", std::slice::from_ref(&owner), &[]);
    let (watch, lines) = watch_finalizers(s, "cm", "owner", &ns);
    s.ok(&[
        "delete",
        "cm",
        "owner",
        "-n",
        &ns,
        "--cascade=orphan",
        "--wait=false",
    ]);
    let o = get(s, "cm", "owner", &ns);
    assert!(o["metadata"]["deletionTimestamp"].is_string(), "{o}");
    assert!(eventually(GC_TIMEOUT, || finalizers(&get(
        s, "cm", "owner", &ns
    )) == vec![HOLD]));
    // The collector took `orphan` off only after the delete had put it on.
    assert_eq!(
        seen(watch, lines),
        vec![format!("[\"{HOLD}\",\"orphan\"]"), format!("[\"{HOLD}\"]")]
    );
    for d in ["dep1", "dep2"] {
        let dep = get(s, "cm", d, &ns);
        assert!(dep["metadata"]["ownerReferences"].is_null(), "{dep}");
        assert!(dep["metadata"]["deletionTimestamp"].is_null(), "{dep}");
    }
    release(s, "cm", "owner", &ns);
    assert!(eventually(GC_TIMEOUT, || !exists(s, "cm", "owner", &ns)));
    assert!(exists(s, "cm", "dep1", &ns) && exists(s, "cm", "dep2", &ns));
}

/// The API as upstream answers it: a foreground delete returns the object (200) with its
/// finalizer; the deprecated `orphanDependents` orphans, and may not be sent with a policy;
/// a background delete of an owner waiting for its dependents drops `foregroundDeletion`.
#[test]
fn delete_options_on_the_wire() {
    let s = server();
    let ns = s.namespace("gc-wire");
    configmap(s, &ns, "a", &[], &[HOLD]);
    let path = format!("/api/v1/namespaces/{ns}/configmaps/a");
    let r = s.send_json(
        "DELETE",
        &path,
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(finalizers(&r.json()), vec![HOLD, "foregroundDeletion"]);
    // Deleting again in the background takes the collector's finalizer back off.
    let r = s.send_json("DELETE", &path, &json!({"propagationPolicy": "Background"}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(finalizers(&r.json()), vec![HOLD]);
    let r = s.send_json(
        "DELETE",
        &path,
        &json!({"orphanDependents": true, "propagationPolicy": "Orphan"}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("cannot be both set"), "{}", r.text());
    let r = s.http(
        "DELETE",
        &format!("{path}?orphanDependents=true"),
        &[],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(finalizers(&r.json()), vec![HOLD, "orphan"]);
    release(s, "cm", "a", &ns);
    assert!(eventually(GC_TIMEOUT, || !exists(s, "cm", "a", &ns)));
}

/// `--controllers=-garbagecollector,*` (an external kube-controller-manager collects): the
/// API still sets the finalizers, but nothing acts on them or on dangling dependents.
#[test]
fn controllers_flag_turns_the_collector_off() {
    let s = Server::start(&["--controllers=-garbagecollector,*"]);
    let ns = s.namespace("gc-off");
    configmap(&s, &ns, "owner", &[], &[]);
    let owner = cm_owner(&s, &ns, "owner", true);
    configmap(&s, &ns, "dep", std::slice::from_ref(&owner), &[]);
    configmap(&s, &ns, "owner2", &[], &[]);
    let owner2 = cm_owner(&s, &ns, "owner2", true);
    configmap(&s, &ns, "dep2", std::slice::from_ref(&owner2), &[]);
    s.ok(&["delete", "cm", "owner", "-n", &ns, "--cascade=background"]);
    s.ok(&[
        "delete",
        "cm",
        "owner2",
        "-n",
        &ns,
        "--cascade=foreground",
        "--wait=false",
    ]);
    std::thread::sleep(Duration::from_secs(2));
    assert!(exists(&s, "cm", "dep", &ns));
    assert!(exists(&s, "cm", "dep2", &ns));
    assert_eq!(
        finalizers(&get(&s, "cm", "owner2", &ns)),
        vec!["foregroundDeletion"]
    );
    // The namespace controller still runs.
    let other = s.namespace("gc-off-other");
    configmap(&s, &other, "c", &[], &[]);
    s.ok(&["delete", "ns", &other, "--wait=false"]);
    assert!(eventually(GC_TIMEOUT, || !s
        .kubectl(&["get", "ns", &other])
        .status
        .success()));
}

/// An unknown controller name stops the start, as kube-controller-manager refuses it.
#[test]
fn unknown_controller_names_are_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args([
            "--controllers=*,-garbage-collection",
            "--data-dir",
            "/nonexistent/x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"garbage-collection\" is not in the list of known controllers"),
        "{err}"
    );
}
