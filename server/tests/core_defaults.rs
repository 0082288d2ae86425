//! Core kinds' defaults and admission additions through kubectl, as kube-apiserver v1.36.2
//! answers them: claim protection finalizer and volume mode, the not-ready taint of new
//! Nodes, pod template defaults, the DaemonSet template generation, and events whose
//! involved object is in another namespace refused; an unused claim being deleted goes.
//! VolumeAttributesClasses get their protection finalizer too, and a class being deleted
//! goes once no claim names it.

mod common;

use common::server;
use serde_json::{json, Value};
use std::time::Duration;

/// Creates `obj` in `ns` and returns the server's answer.
fn create(ns: &str, obj: &Value) -> Value {
    let out = common::server().kubectl_stdin(
        &["create", "-n", ns, "-f", "-", "-o", "json"],
        &obj.to_string(),
    );
    assert!(
        out.status.success(),
        "create {obj}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn claim_gets_protection_finalizer_and_filesystem_mode() {
    let s = server();
    let ns = s.namespace("core-defaults-pvc");
    let pvc = create(
        &ns,
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "c"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    assert_eq!(
        pvc["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"], json!({"phase": "Pending"}));
    // The in-process pvc-protection controller releases an unused claim being deleted.
    s.ok(&["delete", "pvc", "c", "-n", &ns, "--wait=false"]);
    let gone = common::eventually(Duration::from_secs(20), || {
        !s.kubectl(&["get", "pvc", "c", "-n", &ns]).status.success()
    });
    assert!(gone, "claim still there");
}

#[test]
fn new_node_is_tainted_not_ready_once() {
    let s = server();
    let node = create(
        "default",
        &json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": "core-defaults-node"},
                "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}),
    );
    let want = json!([{"key": "a", "effect": "NoSchedule"},
                      {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]);
    assert_eq!(node["spec"]["taints"], want);
    // Only on create: an update that drops the taint keeps it dropped.
    s.ok(&[
        "patch",
        "node",
        "core-defaults-node",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/taints/1"}]"#,
    ]);
    let node = s.json(&["get", "node", "core-defaults-node"]);
    assert_eq!(
        node["spec"]["taints"],
        json!([{"key": "a", "effect": "NoSchedule"}])
    );
    // Removing the last taint leaves `taints: []`, which upstream (Go's omitempty) drops.
    s.ok(&["taint", "node", "core-defaults-node", "a:NoSchedule-"]);
    let node = s.json(&["get", "node", "core-defaults-node"]);
    assert_eq!(node["spec"], json!({}), "{node}");
}

/// A scaleIO PersistentVolume needs its `volumeName` (upstream's
/// `validateScaleIOPersistentVolumeSource`).
#[test]
fn scaleio_volume_needs_volume_name() {
    let s = server();
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "core-defaults-scaleio"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "scaleIO": {"gateway": "https://gw", "system": "sys",
                             "secretRef": {"name": "s"}}}});
    let out = s.kubectl_stdin(&["create", "-f", "-"], &pv.to_string());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"The PersistentVolume "core-defaults-scaleio" is invalid: spec.scaleIO.volumeName: Required value"#
        ),
        "{stderr}"
    );
}

#[test]
fn pod_template_gets_pod_spec_defaults() {
    let s = server();
    let ns = s.namespace("core-defaults-pt");
    let pt = create(
        &ns,
        &json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                "template": {"metadata": {"labels": {"a": "b"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}),
    );
    let want = json!({"containers": [{"name": "c", "image": "nginx",
                                      "imagePullPolicy": "Always", "resources": {},
                                      "terminationMessagePath": "/dev/termination-log",
                                      "terminationMessagePolicy": "File"}],
                      "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                      "schedulerName": "default-scheduler", "securityContext": {},
                      "terminationGracePeriodSeconds": 30});
    assert_eq!(pt["template"]["spec"], want);
    assert_eq!(pt["metadata"]["generation"], 1);
}

#[test]
fn daemonset_template_generation_annotation() {
    let s = server();
    let ns = s.namespace("core-defaults-ds");
    let ds = create(
        &ns,
        &json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
                "spec": {"selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}},
                                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    let key = "deprecated.daemonset.template.generation";
    assert_eq!(ds["metadata"]["annotations"][key], "1");
    // A template change bumps it; a change elsewhere in the spec does not.
    s.ok(&[
        "patch",
        "ds",
        "d",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"minReadySeconds":5}}"#,
    ]);
    let ds = s.json(&["get", "ds", "d", "-n", &ns]);
    assert_eq!(ds["metadata"]["annotations"][key], "1");
    assert_eq!(ds["metadata"]["generation"], 2);
    s.ok(&["set", "image", "ds/d", "c=nginx:1.25", "-n", &ns]);
    let ds = s.json(&["get", "ds", "d", "-n", &ns]);
    assert_eq!(ds["metadata"]["annotations"][key], "2");
    assert_eq!(ds["metadata"]["generation"], 3);
}

#[test]
fn event_for_object_in_other_namespace_is_refused() {
    let s = server();
    let ns = s.namespace("core-defaults-ev");
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                       "involvedObject": {"kind": "Pod", "name": "p"},
                       "reason": "R", "message": "m"});
    let out = s.kubectl_stdin(&["create", "-n", &ns, "-f", "-"], &event.to_string());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"The Event "e" is invalid: involvedObject.namespace: Invalid value: "": does not match event.namespace"#
        ),
        "{stderr}"
    );
    // events.k8s.io reports the same (core) field.
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                       "metadata": {"name": "e2"},
                       "eventTime": "2024-01-01T00:00:00.000000Z",
                       "reportingController": "a.b/c", "reportingInstance": "i",
                       "action": "A", "reason": "R", "type": "Normal",
                       "regarding": {"kind": "Pod", "name": "p"}});
    let out = s.kubectl_stdin(&["create", "-n", &ns, "-f", "-"], &event.to_string());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"involvedObject.namespace: Invalid value: "": does not match event.namespace"#
        ),
        "{stderr}"
    );
    // With the namespace it is stored.
    let mut ok = event.clone();
    ok["regarding"]["namespace"] = json!(ns);
    let created = create(&ns, &ok);
    assert_eq!(created["regarding"]["namespace"], json!(ns));
    // What a new-style event was created with may not change (upstream's
    // ValidateEventUpdate), reported under the core field name.
    let out = s.kubectl(&[
        "patch",
        "events.v1.events.k8s.io",
        "e2",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"note":"changed"}"#,
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"message: Invalid value: "changed": field is immutable"#),
        "{stderr}"
    );
}

/// How long a class the protection controller must keep is watched for going wrongly: a
/// deletion wakes a pass at once, so one that would let it go has done so by then.
const HELD_CHECK: Duration = Duration::from_secs(1);
/// Longest the protection controller may take to act on a change (a pass is woken by it;
/// the resync is 2 s).
const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(10);

fn class(name: &str) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
           "metadata": {"name": name}, "driverName": "csi.example.com",
           "parameters": {"iops": "3000"}})
}

fn class_gone(name: &str) -> bool {
    common::eventually(CONTROLLER_TIMEOUT, || {
        !server()
            .kubectl(&["get", "volumeattributesclass", name])
            .status
            .success()
    })
}

#[test]
fn class_named_by_a_claim_stays_until_the_claim_goes() {
    let s = server();
    let ns = s.namespace("core-defaults-vac");
    let vac = create("default", &class("core-defaults-vac-used"));
    assert_eq!(
        vac["metadata"]["finalizers"],
        json!(["kubernetes.io/vac-protection"])
    );
    create(
        &ns,
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "c"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "volumeAttributesClassName": "core-defaults-vac-used",
                         "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    s.ok(&[
        "delete",
        "volumeattributesclass",
        "core-defaults-vac-used",
        "--wait=false",
    ]);
    std::thread::sleep(HELD_CHECK);
    let held = s.json(&["get", "volumeattributesclass", "core-defaults-vac-used"]);
    assert!(
        held["metadata"]["deletionTimestamp"].is_string(),
        "not being deleted: {held}"
    );
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kubernetes.io/vac-protection"])
    );
    // No pod uses the claim: the pvc-protection controller lets it go, and with it the class.
    s.ok(&["delete", "pvc", "c", "-n", &ns, "--wait=false"]);
    assert!(class_gone("core-defaults-vac-used"), "class still there");
}

#[test]
fn unused_class_goes_and_keeps_its_finalizer_until_then() {
    let s = server();
    create("default", &class("core-defaults-vac-unused"));
    // The controller puts back a finalizer a client took off (upstream does too).
    s.ok(&[
        "patch",
        "volumeattributesclass",
        "core-defaults-vac-unused",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let back = common::eventually(CONTROLLER_TIMEOUT, || {
        let vac = s.json(&["get", "volumeattributesclass", "core-defaults-vac-unused"]);
        vac["metadata"]["finalizers"] == json!(["kubernetes.io/vac-protection"])
    });
    assert!(back, "finalizer not put back");
    s.ok(&[
        "delete",
        "volumeattributesclass",
        "core-defaults-vac-unused",
        "--wait=false",
    ]);
    assert!(class_gone("core-defaults-vac-unused"), "class still there");
}
