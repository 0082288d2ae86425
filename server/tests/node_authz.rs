//! The `Node` authorization mode with kubectl as kubelets (`system:node:<name>` in
//! `system:nodes`, tokens of one token file) on a server started `--authorization-mode
//! Node,RBAC`: what a node's pods reference is readable by that node only, the relationship
//! follows binding and deletion, nodes read only their own Node, and what the Node mode has
//! no opinion on goes on to RBAC. Texts are upstream's (`node_authorizer.go`).

mod common;

use common::{eventually, Server};
use serde_json::json;
use std::process::Output;
use std::time::Duration;

/// How long the graph may take to follow a change (it follows the watch: milliseconds).
const WAIT: Duration = Duration::from_secs(20);

/// Users: `admin` (system:masters, first: the helpers' token), nodes `n1` and `n2`, and
/// `carol` (no groups).
fn node_server() -> Server {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("tokens.csv"),
        "admin-token,admin,1,system:masters\n\
         n1-token,system:node:n1,2,system:nodes\n\
         n2-token,system:node:n2,3,system:nodes\n\
         carol-token,carol,4\n",
    )
    .unwrap();
    Server::start_at(tmp, dir, &["--authorization-mode", "Node,RBAC"])
}

fn as_user(s: &Server, token: &str, args: &[&str]) -> Output {
    let mut all = vec![format!("--token={token}")];
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    s.kubectl(&all)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_owned()
}

/// `kubectl get <what> -n <ns>` as `token` succeeds.
fn can_read(s: &Server, token: &str, ns: &str, what: &[&str]) -> bool {
    let mut args = vec!["get"];
    args.extend(what);
    args.extend(["-n", ns]);
    as_user(s, token, &args).status.success()
}

/// `kubectl auth can-i ...` as `token`: `yes`, `no`, or `no - <reason>` (kubectl adds the
/// review's reason).
fn can_i(s: &Server, token: &str, args: &[&str]) -> String {
    let mut a = vec!["auth", "can-i"];
    a.extend(args);
    String::from_utf8_lossy(&as_user(s, token, &a).stdout)
        .trim()
        .to_owned()
}

/// A pod named `name` referencing secret `secret` (a volume) and configmap `cm` (envFrom),
/// bound to `node` when given.
fn pod(ns: &str, name: &str, node: Option<&str>, secret: &str, cm: &str) -> String {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "busybox",
                                 "envFrom": [{"configMapRef": {"name": cm}}]}],
                 "volumes": [{"name": "s", "secret": {"secretName": secret}}]}});
    if let Some(node) = node {
        p["spec"]["nodeName"] = json!(node);
    }
    p.to_string()
}

fn apply(s: &Server, text: &str) {
    let out = s.kubectl_stdin(&["apply", "-f", "-"], text);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_node_reads_what_its_pods_reference_and_nothing_else() {
    let s = node_server();
    let ns = s.namespace("node-authz");
    for i in 1..=2 {
        s.ok(&[
            "-n",
            &ns,
            "create",
            "secret",
            "generic",
            &format!("s{i}"),
            "--from-literal=k=v",
        ]);
        s.ok(&[
            "-n",
            &ns,
            "create",
            "configmap",
            &format!("c{i}"),
            "--from-literal=k=v",
        ]);
    }
    apply(&s, &pod(&ns, "p1", Some("n1"), "s1", "c1"));
    apply(&s, &pod(&ns, "p2", Some("n2"), "s2", "c2"));

    assert!(
        eventually(WAIT, || can_read(&s, "n1-token", &ns, &["secret", "s1"])),
        "n1 never got the secret its pod mounts: {}",
        stderr(&as_user(
            &s,
            "n1-token",
            &["get", "secret", "s1", "-n", &ns]
        ))
    );
    assert!(can_read(&s, "n1-token", &ns, &["configmap", "c1"]));
    assert!(can_read(&s, "n2-token", &ns, &["secret", "s2"]));

    // What only n2's pod references: upstream's 403, the Node mode's reason last.
    let denied = as_user(&s, "n1-token", &["get", "secret", "s2", "-n", &ns]);
    assert_eq!(
        stderr(&denied),
        format!(
            r#"Error from server (Forbidden): secrets "s2" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "{ns}": no relationship found between node 'n1' and this object"#
        )
    );
    let denied = as_user(&s, "n1-token", &["get", "configmap", "c2", "-n", &ns]);
    assert_eq!(
        stderr(&denied),
        format!(
            r#"Error from server (Forbidden): configmaps "c2" is forbidden: User "system:node:n1" cannot get resource "configmaps" in API group "" in the namespace "{ns}": no relationship found between node 'n1' and this object"#
        )
    );
    // A list names no object.
    let denied = as_user(&s, "n1-token", &["get", "secrets", "-n", &ns]);
    assert_eq!(
        stderr(&denied),
        format!(
            r#"Error from server (Forbidden): secrets is forbidden: User "system:node:n1" cannot list resource "secrets" in API group "" in the namespace "{ns}": No Object name found"#
        )
    );
    // Someone who is not a node: the Node mode says nothing, RBAC refuses without a reason.
    let denied = as_user(&s, "carol-token", &["get", "secret", "s1", "-n", &ns]);
    assert_eq!(
        stderr(&denied),
        format!(
            r#"Error from server (Forbidden): secrets "s1" is forbidden: User "carol" cannot get resource "secrets" in API group "" in the namespace "{ns}""#
        )
    );

    // kubectl auth can-i (SelfSubjectAccessReview) agrees.
    assert_eq!(
        can_i(&s, "n1-token", &["get", "secret/s1", "-n", &ns]),
        "yes"
    );
    assert_eq!(
        can_i(&s, "n1-token", &["get", "configmap/c1", "-n", &ns]),
        "yes"
    );
    assert_eq!(
        can_i(&s, "n1-token", &["get", "secret/s2", "-n", &ns]),
        "no - no relationship found between node 'n1' and this object"
    );
    assert_eq!(
        can_i(&s, "n1-token", &["list", "secrets", "-n", &ns]),
        "no - No Object name found"
    );
    assert_eq!(can_i(&s, "n1-token", &["get", "node/n1"]), "yes");
    assert_eq!(
        can_i(&s, "n1-token", &["get", "node/n2"]),
        "no - node 'n1' cannot read 'n2', only its own Node object"
    );
    // What the node rules (the system:node ClusterRole) allow every node.
    assert_eq!(
        can_i(&s, "n1-token", &["list", "services", "-n", &ns]),
        "yes"
    );
    assert_eq!(
        can_i(&s, "n1-token", &["create", "events", "-n", &ns]),
        "yes"
    );
    assert_eq!(
        can_i(&s, "n1-token", &["delete", "services", "-n", &ns]),
        "no"
    );
    assert_eq!(can_i(&s, "carol-token", &["get", "node/n1"]), "no");

    // What a kubelet lists and watches: its pods by `spec.nodeName`, single objects by
    // `metadata.name` (authorized as a request for that object, as upstream's request info).
    let pods = as_user(
        &s,
        "n1-token",
        &[
            "get",
            "pods",
            "-A",
            "--field-selector",
            "spec.nodeName=n1",
            "-o",
            "name",
        ],
    );
    assert!(pods.status.success(), "{}", stderr(&pods));
    assert_eq!(String::from_utf8_lossy(&pods.stdout).trim(), "pod/p1");
    let others = as_user(
        &s,
        "n1-token",
        &["get", "pods", "-A", "--field-selector", "spec.nodeName=n2"],
    );
    assert!(
        stderr(&others).ends_with("can only list/watch pods with spec.nodeName field selector"),
        "{}",
        stderr(&others)
    );
    let one = as_user(
        &s,
        "n1-token",
        &[
            "get",
            "secrets",
            "-n",
            &ns,
            "--field-selector",
            "metadata.name=s1",
            "-o",
            "name",
        ],
    );
    assert!(one.status.success(), "{}", stderr(&one));
    assert_eq!(String::from_utf8_lossy(&one.stdout).trim(), "secret/s1");
    let not_ours = as_user(
        &s,
        "n1-token",
        &[
            "get",
            "secrets",
            "-n",
            &ns,
            "--field-selector",
            "metadata.name=s2",
        ],
    );
    assert!(
        stderr(&not_ours).ends_with("no relationship found between node 'n1' and this object"),
        "{}",
        stderr(&not_ours)
    );
}

#[test]
fn a_node_reads_its_own_node_object_only() {
    let s = node_server();
    for n in ["n1", "n2"] {
        apply(
            &s,
            &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}}).to_string(),
        );
    }
    let own = as_user(&s, "n1-token", &["get", "node", "n1", "-o", "name"]);
    assert!(own.status.success(), "{}", stderr(&own));
    assert_eq!(String::from_utf8_lossy(&own.stdout).trim(), "node/n1");
    assert_eq!(
        stderr(&as_user(&s, "n1-token", &["get", "node", "n2"])),
        r#"Error from server (Forbidden): nodes "n2" is forbidden: User "system:node:n1" cannot get resource "nodes" in API group "" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object"#
    );
    assert_eq!(
        stderr(&as_user(&s, "n1-token", &["get", "nodes"])),
        r#"Error from server (Forbidden): nodes is forbidden: User "system:node:n1" cannot list resource "nodes" in API group "" at the cluster scope: node 'n1' cannot read all nodes, only its own Node object"#
    );
    // Its status is the node's to write (NodeRestriction, not here, narrows it to its own);
    // deleting it is not (the Node mode has no opinion, RBAC grants nothing).
    assert_eq!(
        can_i(
            &s,
            "n1-token",
            &["patch", "node/n1", "--subresource=status"]
        ),
        "yes"
    );
    assert_eq!(can_i(&s, "n1-token", &["delete", "node/n1"]), "no");
}

/// The relationship is the graph's, kept from the watches: it appears when the pod is bound
/// (not when it is created) and goes when the pod is deleted.
#[test]
fn the_relationship_follows_binding_and_deletion() {
    let s = node_server();
    let ns = s.namespace("node-authz-bind");
    s.ok(&[
        "-n",
        &ns,
        "create",
        "secret",
        "generic",
        "s3",
        "--from-literal=k=v",
    ]);
    s.ok(&["-n", &ns, "create", "configmap", "c3", "--from-literal=k=v"]);
    apply(&s, &pod(&ns, "p3", None, "s3", "c3"));
    // Unbound: nothing relates n1 to s3, however long the graph has had to see the pod
    // (a bound pod created after it is seen first, so the graph has caught up).
    s.ok(&[
        "-n",
        &ns,
        "create",
        "secret",
        "generic",
        "marker",
        "--from-literal=k=v",
    ]);
    apply(&s, &pod(&ns, "marker-pod", Some("n1"), "marker", "c3"));
    assert!(eventually(WAIT, || can_read(
        &s,
        "n1-token",
        &ns,
        &["secret", "marker"]
    )));
    assert!(!can_read(&s, "n1-token", &ns, &["secret", "s3"]));

    let bound = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods/p3/binding"),
        &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p3"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}),
    );
    assert_eq!(bound.status, 201, "{}", bound.text());
    assert!(
        eventually(WAIT, || can_read(&s, "n1-token", &ns, &["secret", "s3"])),
        "the binding did not relate n1 to the pod's secret"
    );
    assert!(!can_read(&s, "n2-token", &ns, &["secret", "s3"]));

    s.ok(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "p3",
        "--grace-period=0",
        "--force",
    ]);
    assert!(
        eventually(WAIT, || !can_read(&s, "n1-token", &ns, &["secret", "s3"])),
        "the deleted pod still relates n1 to its secret"
    );
    // The configmap marker-pod shares with the deleted pod is still n1's.
    assert!(can_read(&s, "n1-token", &ns, &["configmap", "c3"]));
}
