//! `RBACAuthorizer.Authorize` / `RulesFor` (`plugin/pkg/auth/authorizer/rbac/rbac.go`),
//! `DefaultRuleResolver.VisitRulesFor` / `GetRoleReferenceRules` and the describers
//! (`pkg/registry/rbac/validation/rule.go`), the SelfSubjectRulesReview status
//! (`pkg/registry/authorization/selfsubjectrulesreview/rest.go`), and incremental updates.

use serde_json::json;

use super::*;
use crate::index::{ErrorStyle, PolicyIndex, ResolveError};
use crate::matching::Attributes;
use crate::types::Kind;

fn index() -> PolicyIndex {
    let mut i = PolicyIndex::new();
    i.upsert_cluster_role(cluster_role(
        "pod-reader",
        vec![rule(&["get", "list"], &[""], &["pods"])],
    ));
    i.upsert_cluster_role(cluster_role(
        "health",
        vec![
            url_rule(&["get"], &["/healthz", "/healthz/*"]),
            rule(&["get"], &[""], &["nodes"]),
        ],
    ));
    i.upsert_role(role(
        "ns1",
        "secret-reader",
        vec![rule(&["get"], &[""], &["secrets"])],
    ));
    i.upsert_cluster_role_binding(cluster_binding(
        "alice-pods",
        "pod-reader",
        vec![user("alice")],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-secrets",
        RoleRef::role("secret-reader"),
        vec![user("bob")],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-pods",
        RoleRef::cluster_role("pod-reader"),
        vec![user("bob")],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-health",
        RoleRef::cluster_role("health"),
        vec![user("bob")],
    ));
    i
}

fn get(index: &PolicyIndex, user: &str, resource: &str, ns: &str) -> (bool, String) {
    let groups = strings(&["system:authenticated"]);
    let d = index.authorize(&Attributes::resource(
        user, &groups, "get", "", resource, ns,
    ));
    (d.allowed, d.reason)
}

#[test]
fn cluster_role_bindings_apply_everywhere() {
    let i = index();
    let reason = r#"RBAC: allowed by ClusterRoleBinding "alice-pods" of ClusterRole "pod-reader" to User "alice""#;
    for ns in ["", "ns1", "ns2"] {
        assert_eq!(
            get(&i, "alice", "pods", ns),
            (true, reason.to_string()),
            "{ns:?}"
        );
    }
    assert_eq!(get(&i, "alice", "secrets", "ns1"), (false, String::new()));
}

#[test]
fn role_bindings_apply_only_in_their_namespace() {
    let i = index();
    assert_eq!(
        get(&i, "bob", "secrets", "ns1"),
        (
            true,
            r#"RBAC: allowed by RoleBinding "bob-secrets/ns1" of Role "secret-reader" to User "bob""#
                .to_string()
        )
    );
    // A RoleBinding to a ClusterRole grants it in the binding's namespace only.
    assert_eq!(
        get(&i, "bob", "pods", "ns1"),
        (
            true,
            r#"RBAC: allowed by RoleBinding "bob-pods/ns1" of ClusterRole "pod-reader" to User "bob""#
                .to_string()
        )
    );
    for ns in ["", "ns2"] {
        assert_eq!(get(&i, "bob", "pods", ns), (false, String::new()), "{ns:?}");
        assert_eq!(
            get(&i, "bob", "secrets", ns),
            (false, String::new()),
            "{ns:?}"
        );
    }
}

/// Non-resource requests are cluster-wide (no namespace), so only ClusterRoleBindings'
/// non-resource rules can allow them.
#[test]
fn non_resource_rules_only_from_cluster_role_bindings() {
    let mut i = index();
    let groups = strings(&[]);
    let healthz = Attributes::non_resource("bob", &groups, "get", "/healthz/etcd");
    assert!(!i.authorize(&healthz).allowed);
    // Bob's RoleBinding to `health` still grants its resource rule in ns1.
    assert!(get(&i, "bob", "nodes", "ns1").0);
    i.upsert_cluster_role_binding(cluster_binding("bob-health", "health", vec![user("bob")]));
    assert_eq!(
        i.authorize(&healthz).reason,
        r#"RBAC: allowed by ClusterRoleBinding "bob-health" of ClusterRole "health" to User "bob""#
    );
    assert!(
        !i.authorize(&Attributes::non_resource(
            "bob", &groups, "post", "/healthz"
        ))
        .allowed
    );
}

#[test]
fn missing_roles_are_reported_and_evaluation_continues() {
    let mut i = PolicyIndex::new();
    let groups = strings(&["dev"]);
    let ask = |i: &PolicyIndex, ns: &str| {
        i.authorize(&Attributes::resource(
            "carol", &groups, "get", "", "pods", ns,
        ))
    };
    i.upsert_cluster_role_binding(cluster_binding("a", "gone", vec![user("carol")]));
    let d = ask(&i, "");
    assert!(!d.allowed);
    assert_eq!(
        d.reason,
        r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );

    // The same missing role twice: one message, no brackets (the aggregate dedupes).
    i.upsert_cluster_role_binding(cluster_binding("b", "gone", vec![group("dev")]));
    assert_eq!(
        ask(&i, "").reason,
        r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );

    // Distinct errors: bracketed, in visiting order (cluster bindings, then the namespace's).
    i.upsert_role_binding(binding(
        "ns1",
        "r",
        RoleRef::role("nope"),
        vec![user("carol")],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "s",
        RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Roll".into(),
            name: "x".into(),
        },
        vec![user("carol")],
    ));
    assert_eq!(
        ask(&i, "ns1").reason,
        r#"RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "nope" not found, unsupported role reference kind: "Roll"]"#
    );

    // A binding that allows wins over the errors met before it.
    i.upsert_role_binding(binding(
        "ns1",
        "t",
        RoleRef::cluster_role("reader"),
        vec![user("carol")],
    ));
    i.upsert_cluster_role(cluster_role("reader", vec![rule(&["*"], &[""], &["pods"])]));
    let d = ask(&i, "ns1");
    assert!(d.allowed);
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by RoleBinding "t/ns1" of ClusterRole "reader" to User "carol""#
    );
}

/// A RoleBinding's `Role` is looked up in the binding's namespace only.
#[test]
fn role_of_another_namespace_is_not_found() {
    let mut i = PolicyIndex::new();
    i.upsert_role(role("ns2", "r", vec![rule(&["get"], &[""], &["pods"])]));
    i.upsert_role_binding(binding("ns1", "b", RoleRef::role("r"), vec![user("u")]));
    let (allowed, reason) = get(&i, "u", "pods", "ns1");
    assert!(!allowed);
    assert_eq!(
        reason,
        r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#
    );
    assert_eq!(
        i.role_ref_rules(&RoleRef::role("r"), "ns1"),
        Err(ResolveError::NotFound {
            cluster_role: false,
            namespace: "ns1".into(),
            name: "r".into()
        })
    );
    // A ClusterRoleBinding naming a Role finds none, even one stored without a namespace.
    i.upsert_role(role("", "r", vec![rule(&["get"], &[""], &["pods"])]));
    i.upsert_cluster_role_binding(cluster_binding("c", "r", vec![user("u")]));
    let mut crb = i.cluster_role_binding("c").unwrap().clone();
    crb.role_ref = RoleRef::role("r");
    i.upsert_cluster_role_binding(crb);
    assert_eq!(
        get(&i, "u", "pods", ""),
        (
            false,
            r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#.into()
        )
    );
    let e = i
        .role_ref_rules(&RoleRef::cluster_role("x"), "")
        .unwrap_err();
    assert_eq!(
        e.message(ErrorStyle::Registry("rolebindings")),
        r#"rolebindings.rbac.authorization.k8s.io "x" not found"#
    );
    assert_eq!(
        e.to_string(),
        r#"clusterrole.rbac.authorization.k8s.io "x" not found"#
    );
}

#[test]
fn allowed_reason_names_the_first_binding_by_name() {
    let mut i = PolicyIndex::new();
    i.upsert_cluster_role(cluster_role("all", vec![rule(&["*"], &["*"], &["*"])]));
    i.upsert_cluster_role_binding(cluster_binding("zz", "all", vec![user("u")]));
    i.upsert_cluster_role_binding(cluster_binding("mm", "all", vec![group("g")]));
    i.upsert_role_binding(binding(
        "ns",
        "aa",
        RoleRef::cluster_role("all"),
        vec![user("u")],
    ));
    let groups = strings(&["g"]);
    let d = i.authorize(&Attributes::resource("u", &groups, "get", "", "pods", "ns"));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "mm" of ClusterRole "all" to Group "g""#
    );
}

#[test]
fn names_are_quoted_as_go_does() {
    let mut i = PolicyIndex::new();
    i.upsert_cluster_role(cluster_role("r\"1", vec![rule(&["get"], &[""], &["pods"])]));
    i.upsert_cluster_role_binding(cluster_binding("b\\1", "r\"1", vec![user("we\tird")]));
    let (allowed, reason) = get(&i, "we\tird", "pods", "");
    assert!(allowed);
    assert_eq!(
        reason,
        r#"RBAC: allowed by ClusterRoleBinding "b\\1" of ClusterRole "r\"1" to User "we\tird""#
    );
}

#[test]
fn upserts_and_removals_keep_the_index_current() {
    let mut i = index();
    assert!(get(&i, "alice", "pods", "").0);

    // Replacing a binding refiles it under its new subjects.
    i.upsert_cluster_role_binding(cluster_binding(
        "alice-pods",
        "pod-reader",
        vec![user("dave")],
    ));
    assert!(!get(&i, "alice", "pods", "").0);
    assert!(get(&i, "dave", "pods", "").0);

    // Changing a role changes what its bindings grant.
    i.upsert_cluster_role(cluster_role(
        "pod-reader",
        vec![rule(&["get"], &[""], &["services"])],
    ));
    assert!(!get(&i, "dave", "pods", "").0);
    assert!(get(&i, "dave", "services", "").0);

    // Removing the role leaves the binding with an error; removing the binding, nothing.
    assert!(i.remove(Kind::ClusterRole, "", "pod-reader"));
    assert_eq!(
        get(&i, "dave", "services", ""),
        (
            false,
            r#"RBAC: clusterrole.rbac.authorization.k8s.io "pod-reader" not found"#.into()
        )
    );
    assert!(i.remove(Kind::ClusterRoleBinding, "", "alice-pods"));
    assert_eq!(get(&i, "dave", "services", ""), (false, String::new()));
    assert!(!i.remove(Kind::ClusterRoleBinding, "", "alice-pods"));

    assert!(i.remove(Kind::RoleBinding, "ns1", "bob-secrets"));
    assert!(!get(&i, "bob", "secrets", "ns1").0);
    assert!(!i.remove(Kind::RoleBinding, "ns2", "bob-pods"));
    assert!(i.remove(Kind::Role, "ns1", "secret-reader"));
    assert_eq!(
        i.counts(),
        crate::index::Counts {
            roles: 0,
            cluster_roles: 1,
            role_bindings: 2,
            cluster_role_bindings: 0
        }
    );
}

/// Every change makes a generation no index had; a copy keeps its original's. Grants
/// resolved before a change are those of the old generation (the caller's to drop).
#[test]
fn every_change_is_a_new_generation() {
    let mut i = index();
    let copy = i.clone();
    assert_eq!(copy.generation(), i.generation());
    let alice_pods = Attributes::resource("alice", &[], "get", "", "pods", "");
    let before = i.grants("alice", &[], "");
    assert!(before.allows(&alice_pods));
    let mut seen = vec![i.generation()];
    i.upsert_cluster_role_binding(cluster_binding(
        "alice-pods",
        "pod-reader",
        vec![user("dave")],
    ));
    seen.push(i.generation());
    assert!(!i.grants("alice", &[], "").allows(&alice_pods));
    assert!(before.allows(&alice_pods), "resolved grants are a snapshot");
    i.upsert_cluster_role(cluster_role("x", vec![]));
    seen.push(i.generation());
    i.upsert_role(role("ns1", "x", vec![]));
    seen.push(i.generation());
    i.upsert_role_binding(binding("ns1", "x", RoleRef::role("x"), vec![user("x")]));
    seen.push(i.generation());
    i.remove(Kind::Role, "ns9", "none");
    seen.push(i.generation());
    let mut other = copy.clone();
    other.upsert_cluster_role(cluster_role("y", vec![]));
    seen.push(other.generation());
    let mut distinct = seen.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), seen.len(), "{seen:?}");
}

#[test]
fn objects_as_stored() {
    let mut i = PolicyIndex::new();
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "cm", "namespace": "ns1", "uid": "x", "resourceVersion": "5",
                     "labels": null},
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                   "resourceNames": null}]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "cm", "namespace": "ns1"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "ns1"}]
    });
    assert_eq!(i.upsert_value(&role).unwrap(), Kind::Role);
    assert_eq!(i.upsert_value(&binding).unwrap(), Kind::RoleBinding);
    let none = strings(&[]);
    let attrs = Attributes::resource(
        "system:serviceaccount:ns1:default",
        &none,
        "get",
        "",
        "configmaps",
        "ns1",
    )
    .with_name("anything");
    assert_eq!(
        i.authorize(&attrs).reason,
        r#"RBAC: allowed by RoleBinding "cm/ns1" of Role "cm" to ServiceAccount "default/ns1""#
    );
    assert!(i.remove_value(&binding).unwrap());
    assert!(!i.authorize(&attrs).allowed);
    assert!(matches!(
        i.upsert_value(&json!({"kind": "Pod", "metadata": {"name": "p"}})),
        Err(crate::index::PolicyError::UnknownKind(k)) if k == "Pod"
    ));
    assert!(matches!(
        i.upsert_value(&json!({"kind": "Role", "metadata": {"name": 3}})),
        Err(crate::index::PolicyError::Decode(_))
    ));
}

#[test]
fn rules_for_in_visiting_order() {
    let mut i = index();
    i.upsert_cluster_role_binding(cluster_binding(
        "bob-cluster",
        "pod-reader",
        vec![user("bob")],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-gone",
        RoleRef::role("gone"),
        vec![user("bob")],
    ));
    let none = strings(&[]);
    let (rules, errors) = i.rules_for("bob", &none, "ns1");
    assert_eq!(
        rules,
        vec![
            // ClusterRoleBinding bob-cluster
            rule(&["get", "list"], &[""], &["pods"]),
            // RoleBindings by name: bob-health, bob-pods, bob-secrets (bob-gone: error)
            url_rule(&["get"], &["/healthz", "/healthz/*"]),
            rule(&["get"], &[""], &["nodes"]),
            rule(&["get", "list"], &[""], &["pods"]),
            rule(&["get"], &[""], &["secrets"]),
        ]
    );
    assert_eq!(errors.len(), 1);
    let (cluster_only, _) = i.rules_for("bob", &none, "");
    assert_eq!(cluster_only, vec![rule(&["get", "list"], &[""], &["pods"])]);
}

#[test]
fn rules_review_status() {
    let mut i = PolicyIndex::new();
    let mixed = PolicyRule {
        verbs: strings(&["get"]),
        api_groups: strings(&[""]),
        resources: strings(&["pods"]),
        resource_names: strings(&["p"]),
        non_resource_urls: strings(&["/logs"]),
    };
    i.upsert_cluster_role(cluster_role("mixed", vec![mixed]));
    i.upsert_cluster_role(cluster_role(
        "urls",
        vec![url_rule(&["get"], &["/version"])],
    ));
    i.upsert_cluster_role_binding(cluster_binding("a", "mixed", vec![group("g")]));
    i.upsert_cluster_role_binding(cluster_binding("b", "urls", vec![group("g")]));
    i.upsert_cluster_role_binding(cluster_binding("c", "gone", vec![group("g")]));
    let groups = strings(&["g"]);
    let review = i.rules_review("u", &groups, "default");
    assert_eq!(
        review.to_value(),
        json!({
            "resourceRules": [
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"]}
            ],
            "nonResourceRules": [
                {"verbs": ["get"], "nonResourceURLs": ["/logs"]},
                {"verbs": ["get"], "nonResourceURLs": ["/version"]}
            ],
            "incomplete": false,
            "evaluationError": "clusterrole.rbac.authorization.k8s.io \"gone\" not found"
        })
    );
    let empty = PolicyIndex::new().rules_review("u", &groups, "default");
    assert_eq!(
        empty.to_value(),
        json!({"resourceRules": [], "nonResourceRules": [], "incomplete": false})
    );
}

/// Recorded from kube-apiserver v1.36.2 (the upstream kit): a SelfSubjectRulesReview in
/// `default` by an authenticated user with no bindings of its own.
#[test]
fn rules_review_of_a_plain_user_as_recorded_upstream() {
    let index = crate::bootstrap::policy();
    let groups = strings(&["system:authenticated"]);
    assert_eq!(
        index.rules_review("nobody", &groups, "default").to_value(),
        json!({
            "incomplete": false,
            "nonResourceRules": [
                {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                    "/openapi", "/openapi/*", "/readyz", "/version", "/version/"],
                 "verbs": ["get"]},
                {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                 "verbs": ["get"]}
            ],
            "resourceRules": [
                {"apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                 "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
                 "verbs": ["create"]}
            ]
        })
    );
}
