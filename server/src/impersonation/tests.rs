use super::*;
use crate::authz::build;

fn user(name: &str, groups: &[&str]) -> Arc<User> {
    Arc::new(User {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    })
}

fn list_pods() -> Requested {
    Requested {
        verb: "list".into(),
        resource: "pods".into(),
        namespace: "ns".into(),
        ..Default::default()
    }
}

/// The chain of `--authorization-mode RBAC` with `rules` granted to carol cluster-wide.
fn chain_granting(rules: serde_json::Value) -> crate::authz::Chain {
    let built = build("RBAC").unwrap();
    {
        let mut index = built.rbac.index.write();
        index
            .upsert_value(&serde_json::json!({"kind": "ClusterRole",
                "metadata": {"name": "imp"}, "rules": rules}))
            .unwrap();
        index
            .upsert_value(&serde_json::json!({"kind": "ClusterRoleBinding",
                "metadata": {"name": "imp"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "imp"},
                "subjects": [{"kind": "User", "name": "carol"}]}))
            .unwrap();
    }
    built.chain
}

fn imp(
    chain: &crate::authz::Chain,
    headers: &[(&str, &str)],
    requester: &Arc<User>,
) -> Result<Arc<User>, ApiError> {
    impersonate(chain, headers.iter().copied(), requester.clone(), list_pods)
}

#[test]
fn no_headers_is_the_requester_itself() {
    let chain = build("RBAC").unwrap().chain;
    let carol = user("carol", &["system:authenticated"]);
    let same = imp(&chain, &[("Accept", "application/json")], &carol).unwrap();
    assert!(Arc::ptr_eq(&same, &carol));
}

#[test]
fn legacy_and_constrained_verbs_each_allow() {
    let carol = user("carol", &["system:authenticated"]);
    let admin = user("admin", &["system:masters"]);
    // The legacy verb, as since v1.3.
    let legacy = chain_granting(serde_json::json!([
        {"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"], "verbs": ["impersonate"]}]));
    let alice = imp(
        &legacy,
        &[("Impersonate-User", "alice"), ("impersonate-group", "devs")],
        &carol,
    )
    .unwrap();
    assert_eq!(alice.groups, ["devs", "system:authenticated"]);
    let robot = imp(
        &legacy,
        &[("Impersonate-User", "system:serviceaccount:ns1:robot")],
        &carol,
    )
    .unwrap();
    assert_eq!(
        robot.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:ns1",
            "system:authenticated"
        ]
    );
    // Constrained: what may be done as whom (impersonate-on), then who (impersonate:<mode>).
    let constrained = chain_granting(serde_json::json!([
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate-on:user-info:list"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["users"], "verbs": ["impersonate:user-info"]}]));
    assert_eq!(
        imp(&constrained, &[("Impersonate-User", "alice")], &carol)
            .unwrap()
            .name,
        "alice"
    );
    // Not for another verb of the request, nor for groups it may not impersonate.
    let e = impersonate(
        &constrained,
        [("Impersonate-User", "alice")].into_iter(),
        carol.clone(),
        || Requested {
            verb: "delete".into(),
            ..list_pods()
        },
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        r#"pods is forbidden: User "carol" cannot impersonate-on:user-info:delete resource "pods" in API group "" in the namespace "ns""#
    );
    let e = imp(
        &constrained,
        &[("Impersonate-User", "alice"), ("Impersonate-Group", "devs")],
        &carol,
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        r#"groups.authentication.k8s.io "devs" is forbidden: User "carol" cannot impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the cluster scope"#
    );
    // A node impersonated through its mode is in system:nodes only.
    let nodes = chain_granting(serde_json::json!([
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate-on:arbitrary-node:list"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["nodes"], "verbs": ["impersonate:arbitrary-node"]}]));
    let node = imp(&nodes, &[("Impersonate-User", "system:node:n1")], &carol).unwrap();
    assert_eq!(node.groups, ["system:nodes", "system:authenticated"]);
    // The anonymous user is unauthenticated.
    let anon = imp(
        &chain_granting(serde_json::json!([])),
        &[("Impersonate-User", "system:anonymous")],
        &admin,
    )
    .unwrap();
    assert_eq!(anon.groups, ["system:unauthenticated"]);
}

/// When no mode allows, the answer is the first refusal: the constrained mode made for the
/// identity, asked about the request itself. (Each text as v1.36.2's kube-apiserver gave it
/// on 2026-12-03, there for a service account as the requester.)
#[test]
fn the_first_refusal_is_the_answer() {
    let chain = build("RBAC").unwrap().chain;
    let carol = user("carol", &["system:authenticated"]);
    let cases = [
        (
            &[("Impersonate-User", "admin")][..],
            r#"pods is forbidden: User "carol" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "ns""#,
        ),
        (
            &[("Impersonate-User", "system:serviceaccount:ns:sa")][..],
            r#"pods is forbidden: User "carol" cannot impersonate-on:serviceaccount:list resource "pods" in API group "" in the namespace "ns""#,
        ),
        (
            &[("Impersonate-User", "system:node:n1")][..],
            r#"pods is forbidden: User "carol" cannot impersonate-on:arbitrary-node:list resource "pods" in API group "" in the namespace "ns""#,
        ),
        // A service account with groups: only the legacy mode is made for it.
        (
            &[
                ("Impersonate-User", "system:serviceaccount:ns:sa"),
                ("Impersonate-Group", "g"),
            ][..],
            r#"serviceaccounts "sa" is forbidden: User "carol" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns""#,
        ),
        // A node with groups: legacy, where a node is a user like any other.
        (
            &[
                ("Impersonate-User", "system:node:n1"),
                ("Impersonate-Group", "g"),
            ][..],
            r#"users "system:node:n1" is forbidden: User "carol" cannot impersonate resource "users" in API group "" at the cluster scope"#,
        ),
    ];
    for (headers, want) in cases {
        let e = imp(&chain, headers, &carol).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (403, want), "{headers:?}");
    }
    // system:masters is never impersonated through a constrained mode, whatever is granted.
    let all = chain_granting(
        serde_json::json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["impersonate-on:user-info:list", "impersonate:user-info"]}]),
    );
    let e = imp(
        &all,
        &[
            ("Impersonate-User", "x"),
            ("Impersonate-Group", "system:masters"),
        ],
        &carol,
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        r#"groups.authentication.k8s.io "system:masters" is forbidden: User "carol" cannot impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the cluster scope: impersonating the system:masters group is not allowed"#
    );
    let e = imp(
        &all,
        &[("Impersonate-User", "x"), ("Impersonate-Extra-scopes", "v")],
        &carol,
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        r#"userextras.authentication.k8s.io is forbidden: User "carol" cannot impersonate:user-info resource "userextras" in API group "authentication.k8s.io" at the cluster scope: impersonating an invalid key in extra is not allowed: extra.key: Invalid value: "scopes": must be a domain-prefixed path (such as "acme.io/foo")"#
    );
}

#[test]
fn groups_a_uid_or_extras_without_a_user_are_a_bad_request() {
    let chain = build("RBAC").unwrap().chain;
    let admin = user("admin", &["system:masters"]);
    let e = imp(
        &chain,
        &[
            ("Impersonate-Group", "devs"),
            ("Impersonate-Extra-Acme.io%2Fk", "v"),
        ],
        &admin,
    )
    .unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        r#"requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"devs"}, Extra:map[string][]string{"acme.io/k":[]string{"v"}}} without impersonating a user name"#
    );
    let e = imp(&chain, &[("Impersonate-Uid", "u1")], &admin).unwrap_err();
    assert_eq!(
        e.message,
        r#"requested &user.DefaultInfo{Name:"", UID:"u1", Groups:[]string(nil), Extra:map[string][]string(nil)} without impersonating a user name"#
    );
}

#[test]
fn extra_keys_are_domain_prefixed_paths() {
    assert!(domain_prefixed_path_errors("acme.io/foo").is_empty());
    assert_eq!(
        domain_prefixed_path_errors("scopes"),
        [
            r#"extra.key: Invalid value: "scopes": must be a domain-prefixed path (such as "acme.io/foo")"#
        ]
    );
    assert_eq!(domain_prefixed_path_errors("Acme/x").len(), 1);
    assert_eq!(domain_prefixed_path_errors("acme.io/a b").len(), 1);
    assert_eq!(crate::auth::percent_decoded("scopes%2fa%zz"), "scopes/a%zz");
}
