//! RBAC with kubectl as several users (tokens of one token file): upstream's bootstrap
//! policy, 403 texts, `auth can-i`, roles and bindings taking effect and ceasing to while
//! requests run, escalation and bind checks, and ClusterRole aggregation. Texts are those a
//! v1.36.2 server gave for the same requests.

mod common;

use common::{eventually, Server};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// A server with `--authorization-mode RBAC` and three users: `admin` (system:masters),
/// `carol` (no groups) and `bob` (group `dev`).
fn rbac_server() -> Server {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("tokens.csv"),
        "admin-token,admin,1,system:masters\ncarol-token,carol,2\nbob-token,bob,3,dev\n",
    )
    .unwrap();
    Server::start_at(tmp, dir, &["--authorization-mode", "RBAC"])
}

/// kubectl as the user of `token`.
fn as_user(s: &Server, token: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![format!("--token={token}")];
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    s.kubectl(&all)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn users_get_what_their_roles_grant() {
    let s = rbac_server();
    // Upstream's bootstrap policy is there, aggregated.
    let admin_role = s.json(&["get", "clusterrole", "admin"]);
    assert!(
        admin_role["rules"].as_array().is_some_and(|r| r.len() > 10),
        "{admin_role}"
    );
    for name in [
        "cluster-admin",
        "system:discovery",
        "system:kube-scheduler",
        "view",
    ] {
        s.ok(&["get", "clusterrole", name]);
    }
    s.ok(&["get", "clusterrolebinding", "system:public-info-viewer"]);

    let ns = s.namespace("rbac1");
    let denied = as_user(&s, "carol-token", &["get", "pods", "-n", &ns]);
    assert_eq!(
        stderr(&denied).trim(),
        r#"Error from server (Forbidden): pods is forbidden: User "carol" cannot list resource "pods" in API group "" in the namespace "rbac1""#
    );
    let denied = as_user(&s, "carol-token", &["get", "--raw", "/foo"]);
    assert_eq!(
        stderr(&denied).trim(),
        r#"Error from server (Forbidden): forbidden: User "carol" cannot get path "/foo""#
    );
    // What every authenticated user may do (system:basic-user, system:discovery, ...).
    let version = as_user(&s, "carol-token", &["get", "--raw", "/version"]);
    assert!(version.status.success(), "{}", stderr(&version));
    let list = stdout(&as_user(&s, "carol-token", &["auth", "can-i", "--list"]));
    assert!(
        list.contains("selfsubjectaccessreviews.authorization.k8s.io")
            && list.contains("[/version]"),
        "{list}"
    );
    let can = |user: &str, args: &[&str]| {
        let mut a = vec!["auth", "can-i"];
        a.extend(args);
        a.extend(["-n", ns.as_str()]);
        stdout(&as_user(&s, user, &a)).trim().to_owned()
    };
    assert_eq!(can("carol-token", &["list", "pods"]), "no");

    s.ok(&[
        "-n",
        &ns,
        "create",
        "role",
        "reader",
        "--verb=get,list",
        "--resource=pods",
    ]);
    s.ok(&[
        "-n",
        &ns,
        "create",
        "rolebinding",
        "carol-reader",
        "--role=reader",
        "--user=carol",
    ]);
    assert!(
        eventually(WAIT, || as_user(
            &s,
            "carol-token",
            &["get", "pods", "-n", &ns]
        )
        .status
        .success()),
        "the binding did not take effect"
    );
    assert_eq!(can("carol-token", &["list", "pods"]), "yes");
    assert_eq!(can("carol-token", &["delete", "pods"]), "no");
    assert_eq!(
        can("carol-token", &["get", "pods", "--subresource=log"]),
        "no"
    );

    // A SubjectAccessReview is answered by the same policy, with RBAC's reason.
    let review = s.kubectl_stdin(
        &["create", "-f", "-", "-o", "json"],
        &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": "carol", "resourceAttributes":
                         {"namespace": ns, "verb": "get", "resource": "pods"}}})
        .to_string(),
    );
    let review: Value = serde_json::from_slice(&review.stdout).unwrap();
    assert_eq!(
        review["status"],
        json!({"allowed": true,
               "reason": format!("RBAC: allowed by RoleBinding \"carol-reader/{ns}\" of Role \"reader\" to User \"carol\"")})
    );

    // Impersonation: the admin acts as carol (and `auth can-i` answers for her); carol may
    // not act as anyone.
    let as_carol = s.kubectl(&["--as=carol", "get", "pods", "-n", &ns]);
    assert!(as_carol.status.success(), "{}", stderr(&as_carol));
    let as_carol = s.kubectl(&["--as=carol", "auth", "can-i", "delete", "pods", "-n", &ns]);
    assert_eq!(stdout(&as_carol).trim(), "no");
    let whoami = s.kubectl(&[
        "--as=carol",
        "--as-group=devs",
        "auth",
        "whoami",
        "-o",
        "json",
    ]);
    let whoami: Value = serde_json::from_slice(&whoami.stdout).unwrap();
    assert_eq!(
        whoami["status"]["userInfo"],
        json!({"username": "carol", "groups": ["devs", "system:authenticated"]})
    );
    let refused = as_user(&s, "carol-token", &["--as=admin", "get", "pods", "-n", &ns]);
    // v1.36's constrained impersonation answers with the first mode made for the identity
    // asked for (user-info, for a plain user), asked about the request itself.
    assert_eq!(
        stderr(&refused).trim(),
        format!(
            r#"Error from server (Forbidden): pods is forbidden: User "carol" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "{ns}""#
        )
    );

    // Removing the binding takes the permission away again.
    s.ok(&["-n", &ns, "delete", "rolebinding", "carol-reader"]);
    assert!(
        eventually(WAIT, || !as_user(
            &s,
            "carol-token",
            &["get", "pods", "-n", &ns]
        )
        .status
        .success()),
        "the binding's removal did not take effect"
    );
}

#[test]
fn roles_grant_only_what_their_writer_holds() {
    let s = rbac_server();
    let ns = s.namespace("rbac2");
    s.ok(&[
        "-n",
        &ns,
        "create",
        "rolebinding",
        "bob-admin",
        "--clusterrole=admin",
        "--user=bob",
    ]);
    assert!(
        eventually(WAIT, || as_user(
            &s,
            "bob-token",
            &["get", "pods", "-n", &ns]
        )
        .status
        .success()),
        "the binding did not take effect"
    );
    // Within what `admin` holds in the namespace: allowed.
    let ok = as_user(
        &s,
        "bob-token",
        &[
            "-n",
            &ns,
            "create",
            "role",
            "pod-reader",
            "--verb=get",
            "--resource=pods",
        ],
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
    // Nodes are not the namespace admin's to grant.
    let escalate = as_user(
        &s,
        "bob-token",
        &[
            "-n",
            &ns,
            "create",
            "role",
            "node-reader",
            "--verb=get",
            "--resource=nodes",
        ],
    );
    assert_eq!(
        stderr(&escalate).trim(),
        "Error from server (Forbidden): roles.rbac.authorization.k8s.io \"node-reader\" is forbidden: \
         user \"bob\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC \
         permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\"]}"
    );
    let bind = as_user(
        &s,
        "bob-token",
        &[
            "-n",
            &ns,
            "create",
            "rolebinding",
            "x",
            "--clusterrole=cluster-admin",
            "--user=bob",
        ],
    );
    assert!(
        stderr(&bind).contains(
            "rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"bob\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"
        ),
        "{}",
        stderr(&bind)
    );
    let missing = as_user(
        &s,
        "bob-token",
        &[
            "-n",
            &ns,
            "create",
            "rolebinding",
            "y",
            "--clusterrole=nope",
            "--user=bob",
        ],
    );
    assert!(
        stderr(&missing).contains("rolebindings.rbac.authorization.k8s.io \"nope\" not found"),
        "{}",
        stderr(&missing)
    );
    // The admin may grant anything (system:masters).
    s.ok(&[
        "-n",
        &ns,
        "create",
        "role",
        "node-reader",
        "--verb=get",
        "--resource=nodes",
    ]);
}

#[test]
fn aggregated_roles_take_the_rules_of_the_roles_they_select() {
    let s = rbac_server();
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widget-view",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}]});
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &role.to_string());
    assert!(out.status.success(), "{}", stderr(&out));
    let has_widgets = |name: &str| {
        s.json(&["get", "clusterrole", name])["rules"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["resources"] == json!(["widgets"])))
    };
    assert!(eventually(WAIT, || has_widgets("view")), "not aggregated");
    s.ok(&["delete", "clusterrole", "widget-view"]);
    assert!(eventually(WAIT, || !has_widgets("view")));
}
