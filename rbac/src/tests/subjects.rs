//! `appliesTo` / `appliesToUser` (`pkg/registry/rbac/validation/rule.go`) and
//! `serviceaccount.MatchesUsername`, directly and through the index's subject filing.

use super::*;
use crate::index::{applies_to, applies_to_user, PolicyIndex};
use crate::matching::Attributes;

const SA_USER: &str = "system:serviceaccount:ns1:bot";

#[test]
fn applies_to_user_table() {
    let groups = strings(&["dev", "system:authenticated"]);
    // (subject, binding namespace, user, applies)
    let cases: &[(Subject, &str, &str, bool)] = &[
        (user("alice"), "", "alice", true),
        (user("alice"), "", "Alice", false),
        (user("alice"), "", "bob", false),
        (group("dev"), "", "anyone", true),
        (group("ops"), "", "anyone", false),
        (group("system:authenticated"), "ns1", "x", true),
        (service_account("ns1", "bot"), "", SA_USER, true),
        (service_account("ns1", "bot"), "ns2", SA_USER, true),
        (service_account("ns2", "bot"), "", SA_USER, false),
        (service_account("ns1", "bo"), "", SA_USER, false),
        (service_account("ns", "1:bot"), "", SA_USER, false),
        // MatchesUsername is the concatenation `<prefix><ns>:<name>`, colons and all.
        (
            service_account("a:b", "c"),
            "",
            "system:serviceaccount:a:b:c",
            true,
        ),
        (
            service_account("a", "b:c"),
            "",
            "system:serviceaccount:a:b:c",
            true,
        ),
        // No namespace: the binding's; none at all (a ClusterRoleBinding) matches no one.
        (service_account("", "bot"), "ns1", SA_USER, true),
        (service_account("", "bot"), "ns2", SA_USER, false),
        (service_account("", "bot"), "", SA_USER, false),
        (service_account("ns1", "bot"), "", "bot", false),
        // A service account's user name is also a plain user name.
        (user(SA_USER), "", SA_USER, true),
        // Kinds are case-sensitive; unknown kinds match no one.
        (subject("user", "alice", ""), "", "alice", false),
        (subject("Team", "dev", ""), "", "dev", false),
    ];
    for (s, ns, u, want) in cases {
        assert_eq!(
            applies_to_user(u, &groups, s, ns),
            *want,
            "{s:?} in {ns:?} for {u}"
        );
    }
}

#[test]
fn first_applying_subject_is_reported() {
    let groups = strings(&["dev"]);
    let subjects = vec![user("bob"), group("dev"), user("alice")];
    assert_eq!(applies_to("alice", &groups, &subjects, ""), Some(1));
    assert_eq!(applies_to("carol", &strings(&[]), &subjects, ""), None);

    let mut index = PolicyIndex::new();
    index.upsert_cluster_role(cluster_role(
        "reader",
        vec![rule(&["get"], &[""], &["pods"])],
    ));
    index.upsert_cluster_role_binding(cluster_binding("b", "reader", subjects));
    let d = index.authorize(&Attributes::resource(
        "alice", &groups, "get", "", "pods", "",
    ));
    assert!(d.allowed);
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "reader" to Group "dev""#
    );
}

/// The `system:serviceaccounts` and `system:serviceaccounts:<ns>` groups come from
/// authentication: a Group subject naming them applies only when the caller's groups list
/// them.
#[test]
fn service_account_groups_come_from_authentication() {
    let mut index = PolicyIndex::new();
    index.upsert_cluster_role(cluster_role(
        "reader",
        vec![rule(&["list"], &[""], &["pods"])],
    ));
    index.upsert_cluster_role_binding(cluster_binding(
        "all-sas",
        "reader",
        vec![group("system:serviceaccounts")],
    ));
    index.upsert_role_binding(binding(
        "ns1",
        "ns1-sas",
        RoleRef::cluster_role("reader"),
        vec![group("system:serviceaccounts:ns1")],
    ));

    let none = strings(&[]);
    let ask = |groups: &[String], ns: &str| {
        index
            .authorize(&Attributes::resource(
                SA_USER, groups, "list", "", "pods", ns,
            ))
            .reason
    };
    assert_eq!(ask(&none, "ns1"), "");
    let ns_only = strings(&["system:serviceaccounts:ns1"]);
    assert_eq!(
        ask(&ns_only, "ns1"),
        r#"RBAC: allowed by RoleBinding "ns1-sas/ns1" of ClusterRole "reader" to Group "system:serviceaccounts:ns1""#
    );
    assert_eq!(ask(&ns_only, "ns2"), "");
    let all = strings(&["system:serviceaccounts", "system:serviceaccounts:ns1"]);
    assert_eq!(
        ask(&all, "ns2"),
        r#"RBAC: allowed by ClusterRoleBinding "all-sas" of ClusterRole "reader" to Group "system:serviceaccounts""#
    );
}

#[test]
fn service_account_subjects_through_the_index() {
    let mut index = PolicyIndex::new();
    index.upsert_cluster_role(cluster_role(
        "reader",
        vec![rule(&["get"], &[""], &["pods"])],
    ));
    // In a ClusterRoleBinding a service account needs its namespace.
    index.upsert_cluster_role_binding(cluster_binding(
        "no-ns",
        "reader",
        vec![service_account("", "bot")],
    ));
    index.upsert_role_binding(binding(
        "ns1",
        "local",
        RoleRef::cluster_role("reader"),
        vec![service_account("", "bot")],
    ));
    index.upsert_role_binding(binding(
        "ns2",
        "remote",
        RoleRef::cluster_role("reader"),
        vec![service_account("ns1", "bot")],
    ));
    let none = strings(&[]);
    let ask = |ns: &str| {
        index
            .authorize(&Attributes::resource(SA_USER, &none, "get", "", "pods", ns))
            .reason
    };
    assert_eq!(ask(""), "");
    assert_eq!(
        ask("ns1"),
        r#"RBAC: allowed by RoleBinding "local/ns1" of ClusterRole "reader" to ServiceAccount "bot/ns1""#
    );
    assert_eq!(
        ask("ns2"),
        r#"RBAC: allowed by RoleBinding "remote/ns2" of ClusterRole "reader" to ServiceAccount "bot/ns1""#
    );
    assert_eq!(ask("ns3"), "");
    // The same binding does not apply to another namespace's account of that name.
    let other = index.authorize(&Attributes::resource(
        "system:serviceaccount:ns3:bot",
        &none,
        "get",
        "",
        "pods",
        "ns1",
    ));
    assert!(!other.allowed);
}
