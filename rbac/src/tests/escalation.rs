//! `Covers`/`BreakdownRule`/`ruleCovers` (component-helpers `auth/rbac/validation`),
//! `CompactRules`, `CompactString`, `ConfirmNoEscalation` and the policy-based storages'
//! checks (`pkg/registry/rbac/{escalation_check.go,*/policybased/storage.go}`).

use super::*;
use crate::escalation::*;
use crate::index::{PolicyIndex, ResolveError};
use crate::matching::Attributes;

#[test]
fn breakdown_order_and_shape() {
    let r = PolicyRule {
        verbs: strings(&["get", "list"]),
        api_groups: strings(&["", "apps"]),
        resources: strings(&["pods"]),
        resource_names: strings(&["a", "b"]),
        non_resource_urls: strings(&["/x"]),
    };
    let parts: Vec<String> = breakdown_rule(&r).iter().map(compact_string).collect();
    assert_eq!(
        parts,
        [
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["list"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["list"]}"#,
            r#"{APIGroups:["apps"], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}"#,
            r#"{APIGroups:["apps"], Resources:["pods"], ResourceNames:["b"], Verbs:["get"]}"#,
            r#"{APIGroups:["apps"], Resources:["pods"], ResourceNames:["a"], Verbs:["list"]}"#,
            r#"{APIGroups:["apps"], Resources:["pods"], ResourceNames:["b"], Verbs:["list"]}"#,
            r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#,
            r#"{NonResourceURLs:["/x"], Verbs:["list"]}"#,
        ]
    );
    // Resources without groups break down to nothing (and so are always covered).
    assert!(breakdown_rule(&rule(&["get"], &[], &["pods"])).is_empty());
}

#[test]
fn covers_table() {
    let names = |r: PolicyRule, n: &[&str]| r.with_names(n);
    // (owner, servant, covered, uncovered as compact strings)
    type Case = (Vec<PolicyRule>, Vec<PolicyRule>, bool, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            vec![rule(&["get"], &["v1"], &["builds"])],
            vec![rule(&["get"], &["v1"], &["builds"])],
            true,
            vec![],
        ),
        (
            vec![rule(&["*"], &["*"], &["*"])],
            vec![rule(&["get", "escalate"], &["x", "y"], &["a", "b/c"])],
            true,
            vec![],
        ),
        (
            vec![rule(&["get"], &["v1"], &["*/scale"])],
            vec![rule(&["get"], &["v1"], &["foo/scale"])],
            true,
            vec![],
        ),
        (
            vec![rule(&["get"], &["v1"], &["pods"])],
            vec![rule(&["get"], &["v1"], &["pods/log"])],
            false,
            vec![r#"{APIGroups:["v1"], Resources:["pods/log"], Verbs:["get"]}"#],
        ),
        (
            // Split owners cover a combined servant.
            vec![
                rule(&["delete"], &["v1"], &["deployments"]),
                rule(&["delete"], &["v1"], &["builds"]),
                rule(&["update"], &["v1"], &["builds", "deployments"]),
            ],
            vec![rule(
                &["delete", "update"],
                &["v1"],
                &["builds", "deployments"],
            )],
            true,
            vec![],
        ),
        (
            vec![rule(
                &["delete", "update"],
                &["v1"],
                &["builds", "deployments"],
            )],
            vec![rule(&["delete", "update"], &["v1"], &["builds", "pods"])],
            false,
            vec![
                r#"{APIGroups:["v1"], Resources:["pods"], Verbs:["delete"]}"#,
                r#"{APIGroups:["v1"], Resources:["pods"], Verbs:["update"]}"#,
            ],
        ),
        (
            vec![rule(&["get"], &["group1"], &["roles"])],
            vec![rule(&["get"], &["*"], &["roles"])],
            false,
            vec![r#"{APIGroups:["*"], Resources:["roles"], Verbs:["get"]}"#],
        ),
        (
            vec![rule(&["get"], &["v1"], &["pods"])],
            vec![names(rule(&["get"], &["v1"], &["pods"]), &["foo"])],
            true,
            vec![],
        ),
        (
            vec![names(rule(&["get"], &["v1"], &["pods"]), &["foo", "bar"])],
            vec![rule(&["get"], &["v1"], &["pods"])],
            false,
            vec![r#"{APIGroups:["v1"], Resources:["pods"], Verbs:["get"]}"#],
        ),
        (
            vec![names(rule(&["get"], &["v1"], &["pods"]), &["foo", "bar"])],
            vec![names(rule(&["get"], &["v1"], &["pods"]), &["bar", "baz"])],
            false,
            vec![r#"{APIGroups:["v1"], Resources:["pods"], ResourceNames:["baz"], Verbs:["get"]}"#],
        ),
        (
            vec![url_rule(&["*"], &["/apis/*"])],
            vec![url_rule(&["get"], &["/apis/v1", "/apis"])],
            false,
            vec![r#"{NonResourceURLs:["/apis"], Verbs:["get"]}"#],
        ),
        (
            vec![url_rule(&["*"], &["*"])],
            vec![url_rule(&["get", "post"], &["/", "/healthz"])],
            true,
            vec![],
        ),
        (
            // Any verb-matching owner covers a resource-less URL rule only through its URLs.
            vec![rule(&["get"], &["v1"], &["builds"])],
            vec![PolicyRule {
                non_resource_urls: strings(&["/apis"]),
                ..rule(&["get"], &["v1"], &["builds"])
            }],
            false,
            vec![r#"{NonResourceURLs:["/apis"], Verbs:["get"]}"#],
        ),
    ];
    for (owner, servant, want, want_uncovered) in cases {
        let (ok, uncovered) = covers(&owner, &servant);
        let got: Vec<String> = uncovered.iter().map(compact_string).collect();
        assert_eq!(
            (ok, got),
            (want, strings(&want_uncovered)),
            "{owner:?} / {servant:?}"
        );
    }
}

#[test]
fn compact_string_format() {
    assert_eq!(compact_string(&PolicyRule::default()), "{}");
    assert_eq!(
        compact_string(&rule(&["get", "list"], &[""], &["pods"])),
        r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}"#
    );
    let all = PolicyRule {
        verbs: strings(&["get"]),
        api_groups: strings(&["a"]),
        resources: strings(&["r"]),
        resource_names: strings(&["n\"q"]),
        non_resource_urls: strings(&["/u"]),
    };
    assert_eq!(
        compact_string(&all),
        r#"{APIGroups:["a"], Resources:["r"], NonResourceURLs:["/u"], ResourceNames:["n\"q"], Verbs:["get"]}"#
    );
}

#[test]
fn compact_rules_merges_verbs_of_simple_rules() {
    let rules = vec![
        rule(&["get"], &[""], &["pods"]),
        rule(&["get"], &[""], &["pods", "services"]),
        rule(&["list"], &[""], &["pods"]),
        rule(&["get"], &[""], &["pods"]).with_names(&["a"]),
        rule(&["list"], &[""], &["pods"]).with_names(&["a"]),
        rule(&["get"], &[""], &["pods"]),
        url_rule(&["get"], &["/x"]),
    ];
    let got: Vec<String> = compact_rules(&rules).iter().map(compact_string).collect();
    assert_eq!(
        got,
        [
            r#"{APIGroups:[""], Resources:["pods" "services"], Verbs:["get"]}"#,
            r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "get"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "list"]}"#,
        ]
    );
}

#[test]
fn escalation_message_text() {
    let groups = strings(&["dev", "system:authenticated"]);
    let (_, missing) = covers(
        &[rule(&["get"], &[""], &["configmaps"])],
        &[
            rule(&["list", "get"], &[""], &["pods"]),
            rule(&["get"], &[""], &["secrets"]).with_names(&["x"]),
            rule(&["get"], &[""], &["pods"]),
        ],
    );
    assert_eq!(
        escalation_message("bob", &groups, &missing, None),
        "user \"bob\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\" \"get\" \"get\"]}\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], ResourceNames:[\"x\"], Verbs:[\"get\"]}"
    );
    assert_eq!(
        escalation_message("", &[], &missing[..1], Some("e1")),
        "user \"\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\"]}; resolution errors: [e1]"
    );
}

fn policy() -> PolicyIndex {
    let mut i = PolicyIndex::new();
    i.upsert_cluster_role(cluster_role(
        "cm-admin",
        vec![rule(&["*"], &[""], &["configmaps"])],
    ));
    i.upsert_cluster_role(cluster_role(
        "cm-reader",
        vec![rule(&["get"], &[""], &["configmaps"])],
    ));
    i.upsert_cluster_role(cluster_role(
        "secret-reader",
        vec![rule(&["get"], &[""], &["secrets"])],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-cm",
        RoleRef::cluster_role("cm-admin"),
        vec![user("bob")],
    ));
    i
}

#[test]
fn confirm_no_escalation_with_resolution_errors() {
    let mut i = policy();
    let groups = strings(&["system:authenticated"]);
    let cm = [rule(&["get", "update"], &[""], &["configmaps"])];
    assert_eq!(
        i.confirm_no_escalation("bob", &groups, "ns1", &cm, "roles"),
        Ok(())
    );
    // Cluster-wide bob holds nothing.
    assert!(i
        .confirm_no_escalation("bob", &groups, "", &cm, "clusterroles")
        .is_err());
    i.upsert_role_binding(binding(
        "ns1",
        "bob-x",
        RoleRef::cluster_role("gone"),
        vec![user("bob")],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-y",
        RoleRef::role("gone2"),
        vec![user("bob")],
    ));
    assert_eq!(
        i.confirm_no_escalation(
            "bob",
            &groups,
            "ns1",
            &[rule(&["get"], &[""], &["secrets"])],
            "roles"
        ),
        Err("user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}; resolution errors: \
             [[roles.rbac.authorization.k8s.io \"gone\" not found, roles.rbac.authorization.k8s.io \"gone2\" not found]]"
            .to_string())
    );
}

#[test]
fn role_writes() {
    let mut i = policy();
    let groups = strings(&["system:authenticated"]);
    let held = [rule(&["get"], &[""], &["configmaps"])];
    let more = [rule(&["get"], &[""], &["secrets"])];
    fn write<'a>(rules: &'a [PolicyRule], request_name: &'a str) -> Write<'a> {
        Write::Role {
            namespace: "ns1",
            name: "r",
            request_name,
            rules,
        }
    }
    let (held, more) = (&held[..], &more[..]);
    assert_eq!(i.check_write("bob", &groups, &write(held, "")), Ok(()));
    let denied = i.check_write("bob", &groups, &write(more, "")).unwrap_err();
    assert_eq!(denied.code(), 403);
    assert_eq!(
        denied.message(),
        "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) \
         is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    // system:masters skips every check.
    let masters = strings(&["system:masters"]);
    assert_eq!(i.check_write("root", &masters, &write(more, "")), Ok(()));

    // `escalate` on roles named r: only when the request names it (an update), since a
    // create's request has no name.
    i.upsert_cluster_role(cluster_role(
        "escalate-r",
        vec![rule(&["escalate"], &["rbac.authorization.k8s.io"], &["roles"]).with_names(&["r"])],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-escalate",
        RoleRef::cluster_role("escalate-r"),
        vec![user("bob")],
    ));
    assert!(i.check_write("bob", &groups, &write(more, "")).is_err());
    assert_eq!(i.check_write("bob", &groups, &write(more, "r")), Ok(()));
}

#[test]
fn cluster_role_writes_and_aggregation() {
    let mut i = policy();
    let groups = strings(&[]);
    // Everything but `escalate` (and `bind`, `impersonate`...), URLs included.
    i.upsert_cluster_role(cluster_role(
        "almost-all",
        vec![
            rule(
                &[
                    "get", "list", "watch", "create", "update", "patch", "delete",
                ],
                &["*"],
                &["*"],
            ),
            url_rule(&["*"], &["*"]),
        ],
    ));
    i.upsert_cluster_role_binding(cluster_binding("carol", "almost-all", vec![user("carol")]));
    let rules = [rule(&["get"], &[""], &["pods"])];
    let w = |aggregation| Write::ClusterRole {
        name: "agg",
        request_name: "",
        rules: &rules,
        aggregation,
    };
    assert_eq!(i.check_write("carol", &groups, &w(false)), Ok(()));
    let denied = i.check_write("carol", &groups, &w(true)).unwrap_err();
    assert_eq!(
        denied.message(),
        "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
    );
    // `*` on everything includes `escalate` on clusterroles: no further check.
    i.upsert_cluster_role(cluster_role("star", vec![rule(&["*"], &["*"], &["*"])]));
    i.upsert_cluster_role_binding(cluster_binding("dave", "star", vec![user("dave")]));
    assert_eq!(i.check_write("dave", &groups, &w(true)), Ok(()));
    // A RoleBinding's rules do not count for cluster-scoped writes.
    let err = i.check_write("bob", &groups, &w(false)).unwrap_err();
    assert!(err.message().starts_with(
        "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: user \"bob\" (groups=[]) is attempting"
    ));
}

#[test]
fn binding_writes() {
    let mut i = policy();
    let groups = strings(&["system:authenticated"]);
    let cm_reader = RoleRef::cluster_role("cm-reader");
    let secrets = RoleRef::cluster_role("secret-reader");
    let rb = |role_ref| Write::RoleBinding {
        namespace: "ns1",
        name: "b",
        role_ref,
    };
    // Bob holds cm-reader's rules in ns1, not secret-reader's.
    assert_eq!(i.check_write("bob", &groups, &rb(&cm_reader)), Ok(()));
    let denied = i.check_write("bob", &groups, &rb(&secrets)).unwrap_err();
    assert_eq!(
        denied.message(),
        "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) \
         is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    let crb = Write::ClusterRoleBinding {
        name: "c",
        role_ref: &cm_reader,
    };
    assert!(i
        .check_write("bob", &groups, &crb)
        .unwrap_err()
        .message()
        .starts_with("clusterrolebindings.rbac.authorization.k8s.io \"c\" is forbidden: "));

    // `bind` on the referenced ClusterRole (by name) in the binding's namespace.
    i.upsert_cluster_role(cluster_role(
        "binder",
        vec![
            rule(&["bind"], &["rbac.authorization.k8s.io"], &["clusterroles"])
                .with_names(&["secret-reader"]),
        ],
    ));
    i.upsert_role_binding(binding(
        "ns1",
        "bob-bind",
        RoleRef::cluster_role("binder"),
        vec![user("bob")],
    ));
    assert_eq!(i.check_write("bob", &groups, &rb(&secrets)), Ok(()));
    let elsewhere = Write::RoleBinding {
        namespace: "ns2",
        name: "b",
        role_ref: &secrets,
    };
    assert!(i.check_write("bob", &groups, &elsewhere).is_err());

    // A missing role: the storage's NotFound, as it is, qualified by the request's
    // resource (as v1.36.2 answers).
    let gone = RoleRef::cluster_role("gone");
    let denied = i.check_write("bob", &groups, &rb(&gone)).unwrap_err();
    assert_eq!(denied.code(), 404);
    assert_eq!(
        denied.message(),
        "rolebindings.rbac.authorization.k8s.io \"gone\" not found"
    );
    let odd = RoleRef {
        kind: "Roll".into(),
        ..RoleRef::role("x")
    };
    let denied = i.check_write("bob", &groups, &rb(&odd)).unwrap_err();
    assert_eq!(
        denied,
        WriteDenied::RoleRef {
            resource: "rolebindings",
            error: ResolveError::UnsupportedKind("Roll".into())
        }
    );
    assert_eq!(denied.code(), 500);
}

#[test]
fn binding_authorized_asks_bind_on_the_role() {
    let groups = strings(&["g"]);
    let seen = std::cell::RefCell::new(Vec::new());
    let record = |a: &Attributes<'_>| {
        seen.borrow_mut().push(format!(
            "{} {} {}/{} {:?} {} {}",
            a.user,
            a.verb,
            a.api_group,
            a.resource,
            a.namespace,
            a.name,
            a.is_resource_request()
        ));
        false
    };
    assert!(!binding_authorized(
        "u",
        &groups,
        &RoleRef::role("r"),
        "ns1",
        record
    ));
    assert!(!binding_authorized(
        "u",
        &groups,
        &RoleRef::cluster_role("c"),
        "",
        record
    ));
    let odd = RoleRef {
        kind: "Other".into(),
        ..RoleRef::role("x")
    };
    assert!(!binding_authorized("u", &groups, &odd, "", record));
    assert_eq!(
        seen.into_inner(),
        [
            "u bind rbac.authorization.k8s.io/roles \"ns1\" r true",
            "u bind rbac.authorization.k8s.io/clusterroles \"\" c true",
        ]
    );
    assert!(escalation_allowed(&strings(&["a", "system:masters"])));
    assert!(!escalation_allowed(&strings(&["system:master"])));
}

/// Recorded from kube-apiserver v1.36.2 (the upstream kit): a server-side dry-run update of
/// the Role `kube-system/extension-apiserver-authentication-reader`, adding rules, by the
/// garbage collector's service account (which may update anything but holds only get,
/// list, watch, patch, update and delete).
#[test]
fn escalation_message_as_recorded_upstream() {
    let index = crate::bootstrap::policy();
    let user = "system:serviceaccount:kube-system:generic-garbage-collector";
    let groups = strings(&[
        "system:serviceaccounts",
        "system:serviceaccounts:kube-system",
        "system:authenticated",
    ]);
    let mut rules = index
        .role("kube-system", "extension-apiserver-authentication-reader")
        .unwrap()
        .rules
        .clone();
    rules.push(rule(&["create", "get"], &[""], &["secrets", "pods/exec"]));
    rules.push(rule(&["create"], &["apps"], &["deployments"]).with_names(&["x", "y"]));
    rules.push(url_rule(&["get"], &["/foo"]));
    let write = Write::Role {
        namespace: "kube-system",
        name: "extension-apiserver-authentication-reader",
        request_name: "extension-apiserver-authentication-reader",
        rules: &rules,
    };
    let denied = index.check_write(user, &groups, &write).unwrap_err();
    assert_eq!(denied.code(), 403);
    assert_eq!(
        denied.message(),
        r#"roles.rbac.authorization.k8s.io "extension-apiserver-authentication-reader" is forbidden: user "system:serviceaccount:kube-system:generic-garbage-collector" (groups=["system:serviceaccounts" "system:serviceaccounts:kube-system" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods/exec"], Verbs:["create"]}
{APIGroups:[""], Resources:["secrets"], Verbs:["create"]}
{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["x"], Verbs:["create"]}
{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["y"], Verbs:["create"]}
{NonResourceURLs:["/foo"], Verbs:["get"]}"#
    );

    // The same account changing a RoleBinding's roleRef to a missing ClusterRole.
    let gone = RoleRef::cluster_role("nope");
    let write = Write::RoleBinding {
        namespace: "kube-system",
        name: "system::leader-locking-kube-scheduler",
        role_ref: &gone,
    };
    let denied = index.check_write(user, &groups, &write).unwrap_err();
    assert_eq!(
        (denied.code(), denied.message()),
        (
            404,
            r#"rolebindings.rbac.authorization.k8s.io "nope" not found"#.to_string()
        )
    );

    // And relabelling the aggregated ClusterRole `view`.
    let write = Write::ClusterRole {
        name: "view",
        request_name: "view",
        rules: &[],
        aggregation: true,
    };
    assert_eq!(
        index
            .check_write(user, &groups, &write)
            .unwrap_err()
            .message(),
        r#"clusterroles.rbac.authorization.k8s.io "view" is forbidden: must have cluster-admin privileges to use the aggregationRule"#
    );
}
