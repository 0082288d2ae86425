//! Pods against the real binary: upstream's defaults and initial status, the `binding`,
//! `eviction` and `log` subresources, `get -o wide`, and graceful vs immediate deletion.

mod common;

use common::{server, Server};
use serde_json::{json, Value};

const GUARANTEED: &str = "apiVersion: v1
kind: Pod
metadata:
  name: sized
spec:
  containers:
  - name: app
    image: registry.example/app:1.0
    resources:
      limits: {cpu: 100m, memory: 64Mi}
";

fn create_pod(s: &Server, ns: &str, manifest: &str) {
    let out = s.kubectl_stdin(&["create", "-n", ns, "-f", "-"], manifest);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn bind(s: &Server, ns: &str, pod: &str, node: &str) -> common::Http {
    s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods/{pod}/binding"),
        &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}),
    )
}

#[test]
fn run_and_create_apply_upstream_defaults() {
    let s = server();
    let ns = s.namespace("pod-defaults");
    s.ok(&["run", "web", "-n", &ns, "--image=nginx"]);
    let yaml = s.ok(&["get", "pod", "web", "-n", &ns, "-o", "yaml"]);
    for line in [
        "restartPolicy: Always",
        "dnsPolicy: ClusterFirst",
        "terminationGracePeriodSeconds: 30",
        "schedulerName: default-scheduler",
        "imagePullPolicy: Always",
        "terminationMessagePath: /dev/termination-log",
        "terminationMessagePolicy: File",
        "serviceAccountName: default",
        "key: node.kubernetes.io/not-ready",
        "key: node.kubernetes.io/unreachable",
        "tolerationSeconds: 300",
        "phase: Pending",
        "qosClass: BestEffort",
    ] {
        assert!(yaml.contains(line), "missing {line:?} in\n{yaml}");
    }
    let pod = s.json(&["get", "pod", "web", "-n", &ns]);
    assert_eq!(pod["metadata"]["labels"]["run"], "web");
    assert_eq!(pod["spec"]["tolerations"].as_array().unwrap().len(), 2);
    assert!(pod["spec"].get("nodeName").is_none(), "{pod}");

    create_pod(s, &ns, GUARANTEED);
    let pod = s.json(&["get", "pod", "sized", "-n", &ns]);
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent", "tagged image: {c}");
    assert_eq!(
        c["resources"]["requests"],
        json!({"cpu": "100m", "memory": "64Mi"}),
        "requests default to limits"
    );
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");
    assert_eq!(pod["status"]["phase"], "Pending");
}

#[test]
fn binding_assigns_a_node_once() {
    let s = server();
    let ns = s.namespace("pod-binding");
    s.ok(&["run", "p", "-n", &ns, "--image=nginx"]);
    let r = bind(s, &ns, "p", "node-1");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], "Success");
    let pod = s.json(&["get", "pod", "p", "-n", &ns]);
    assert_eq!(pod["spec"]["nodeName"], "node-1");
    let conds = pod["status"]["conditions"].as_array().unwrap();
    let sched = conds
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap_or_else(|| panic!("no PodScheduled: {pod}"));
    assert_eq!(sched["status"], "True");
    assert!(sched["lastTransitionTime"].is_string());

    let again = bind(s, &ns, "p", "node-2");
    assert_eq!(again.status, 409, "{}", again.text());
    let st = again.json();
    assert_eq!(st["reason"], "Conflict");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("is already assigned to node \"node-1\""),
        "{st}"
    );
    let missing = bind(s, &ns, "nope", "node-1");
    assert_eq!(missing.status, 404, "{}", missing.text());

    // The wide table shows the node; the header is upstream's.
    let wide = s.ok(&["get", "pods", "-n", &ns, "-o", "wide"]);
    let mut lines = wide.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap()
        .split("  ")
        .filter(|c| !c.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        [row[0], row[1], row[2], row[3], row[5], row[6], row[7], row[8]],
        ["p", "0/1", "Pending", "0", "<none>", "node-1", "<none>", "<none>"],
        "{wide}"
    );
}

#[test]
fn eviction_deletes_the_pod() {
    let s = server();
    let ns = s.namespace("pod-eviction");
    s.ok(&["run", "victim", "-n", &ns, "--image=nginx"]);
    let r = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods/victim/eviction"),
        &json!({"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "victim", "namespace": ns}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], "Success");
    let err = s.fails(&["get", "pod", "victim", "-n", &ns]);
    assert!(err.contains("pods \"victim\" not found"), "{err}");
}

#[test]
fn logs_answer_as_upstream_before_a_pod_runs() {
    let s = server();
    let ns = s.namespace("pod-logs");
    s.ok(&["run", "waiting", "-n", &ns, "--image=nginx"]);
    // Not on a node: an empty log, no error.
    assert_eq!(s.ok(&["logs", "waiting", "-n", &ns]), "");
    let err = s.fails(&["logs", "waiting", "-n", &ns, "-c", "other"]);
    assert!(
        err.contains("container other is not valid for pod waiting"),
        "{err}"
    );
    // On a node that has no Node object: the node lookup fails as upstream's does.
    assert_eq!(bind(s, &ns, "waiting", "ghost").status, 201);
    let err = s.fails(&["logs", "waiting", "-n", &ns]);
    assert!(err.contains("nodes \"ghost\" not found"), "{err}");

    let two = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: two\nspec:\n  containers:\n  - {name: a, image: busybox}\n  - {name: b, image: busybox}\n";
    create_pod(s, &ns, two);
    let r = s.get(&format!("/api/v1/namespaces/{ns}/pods/two/log"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "a container name must be specified for pod two, choose one of: [a b]"
    );
}

#[test]
fn deletion_is_graceful_only_for_pods_on_a_node() {
    let s = server();
    let ns = s.namespace("pod-delete");
    s.ok(&["run", "loose", "-n", &ns, "--image=nginx"]);
    s.ok(&["run", "bound", "-n", &ns, "--image=nginx"]);
    assert_eq!(bind(s, &ns, "bound", "node-1").status, 201);

    // Unbound: removed at once.
    s.ok(&["delete", "pod", "loose", "-n", &ns, "--wait=false"]);
    assert!(s
        .fails(&["get", "pod", "loose", "-n", &ns])
        .contains("NotFound"));

    // Bound: marked with the grace period; it stays until a kubelet (or a forced delete)
    // finishes the deletion.
    s.ok(&["delete", "pod", "bound", "-n", &ns, "--wait=false"]);
    let pod = s.json(&["get", "pod", "bound", "-n", &ns]);
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30, "{pod}");
    let ts = pod["metadata"]["deletionTimestamp"].as_str().unwrap();
    let created = pod["metadata"]["creationTimestamp"].as_str().unwrap();
    assert!(
        ts > created,
        "deletion is scheduled after the grace period: {pod}"
    );
    let table = s.ok(&["get", "pod", "bound", "-n", &ns, "--no-headers"]);
    assert!(table.contains("Terminating"), "{table}");
    // A second graceful delete with a shorter period shortens it.
    s.ok(&[
        "delete",
        "pod",
        "bound",
        "-n",
        &ns,
        "--wait=false",
        "--grace-period=5",
    ]);
    let pod: Value = s.json(&["get", "pod", "bound", "-n", &ns]);
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 5, "{pod}");

    let out = s.kubectl(&[
        "delete",
        "pod",
        "bound",
        "-n",
        &ns,
        "--grace-period=0",
        "--force",
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Immediate deletion"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("force deleted"));
    assert!(s
        .fails(&["get", "pod", "bound", "-n", &ns])
        .contains("NotFound"));
}

const BURSTABLE: &str = "apiVersion: v1
kind: Pod
metadata:
  name: resizable
spec:
  containers:
  - name: app
    image: registry.example/app:1.0
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
";

#[test]
fn resize_changes_only_cpu_and_memory() {
    let s = server();
    let ns = s.namespace("pod-resize");
    create_pod(s, &ns, BURSTABLE);
    let pod = s.json(&["get", "pod", "resizable", "-n", &ns]);
    assert_eq!(pod["metadata"]["generation"], 1);
    let resize_as = |patch_type: &str, patch: &str| {
        s.kubectl(&[
            "patch",
            "pod",
            "resizable",
            "-n",
            &ns,
            "--subresource",
            "resize",
            "--type",
            patch_type,
            "-p",
            patch,
            "-o",
            "json",
        ])
    };
    let resize = |patch: &str| resize_as("strategic", patch);
    // The image in the body is ignored; cpu changes and the generation follows.
    let out = resize(
        r#"{"spec":{"containers":[{"name":"app","image":"other:2","resources":{"requests":{"cpu":"150m"}}}]}}"#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pod: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["resources"]["requests"]["cpu"], "150m");
    assert_eq!(c["image"], "registry.example/app:1.0");
    assert_eq!(pod["metadata"]["generation"], 2);
    let got = s.get(&format!("/api/v1/namespaces/{ns}/pods/resizable/resize"));
    assert_eq!(got.status, 200);
    assert_eq!(
        got.json()["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "150m"
    );

    // Upstream's refusals (recorded from kube-apiserver v1.36.2).
    let refused = |patch: &str, want: &str| {
        let out = resize(patch);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err}");
    };
    refused(
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}"#,
        r#"The Pod "resizable" is invalid: spec: Forbidden: only cpu and memory resources are mutable"#,
    );
    refused(
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m","memory":"128Mi"}}}]}}"#,
        r#"spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing"#,
    );
    let out = resize_as(
        "json",
        r#"[{"op":"remove","path":"/spec/containers/0/resources/limits/cpu"}]"#,
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"
    ));
    // A plain update still may not change resources.
    let err = s.fails(&[
        "patch",
        "pod",
        "resizable",
        "-n",
        &ns,
        "-p",
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"170m"}}}]}}"#,
    ]);
    assert!(
        err.contains("pod updates may not change fields other than"),
        "{err}"
    );
}
