//! The embedded bootstrap policy (`data/`, from upstream's
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata`), loaded and checked against
//! what upstream's defaults are known to grant.

use super::strings;
use crate::aggregation::aggregate_until_stable;
use crate::bootstrap;
use crate::matching::Attributes;
use crate::types::{ClusterRole, PolicyRule};

#[test]
fn data_loads_with_upstream_metadata() {
    let counts = [
        bootstrap::cluster_roles_json().len(),
        bootstrap::cluster_role_bindings_json().len(),
        bootstrap::namespace_roles_json().len(),
        bootstrap::namespace_role_bindings_json().len(),
        bootstrap::controller_roles_json().len(),
        bootstrap::controller_role_bindings_json().len(),
    ];
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    assert_eq!(bootstrap::cluster_roles().len(), counts[0]);
    assert_eq!(bootstrap::controller_role_bindings().len(), counts[5]);
    // Every controller role has its binding to the controller's service account.
    assert_eq!(counts[4], counts[5]);

    for obj in bootstrap::all_json() {
        let keys: Vec<&str> = obj
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(&keys[..3], ["apiVersion", "kind", "metadata"], "{obj}");
        assert_eq!(obj["apiVersion"], "rbac.authorization.k8s.io/v1", "{obj}");
        let meta = &obj["metadata"];
        assert_eq!(
            meta["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults",
            "{obj}"
        );
        assert_eq!(
            meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true",
            "{obj}"
        );
        assert!(meta.get("creationTimestamp").is_none(), "{obj}");
        assert!(
            !obj.to_string().to_lowercase().contains("openshift"),
            "{obj}"
        );
    }
    for r in bootstrap::namespace_roles() {
        assert!(
            ["kube-system", "kube-public"].contains(&r.metadata.namespace.as_str()),
            "{r:?}"
        );
    }
}

/// Every binding of the default policy refers to a role the default policy has.
#[test]
fn every_binding_resolves() {
    let index = bootstrap::policy();
    for b in bootstrap::cluster_role_bindings()
        .iter()
        .chain(bootstrap::controller_role_bindings())
    {
        assert!(index.role_ref_rules(&b.role_ref, "").is_ok(), "{b:?}");
    }
    for b in bootstrap::namespace_role_bindings() {
        assert!(
            index
                .role_ref_rules(&b.role_ref, &b.metadata.namespace)
                .is_ok(),
            "{b:?}"
        );
    }
}

#[test]
fn cluster_admin_grants_everything_to_system_masters() {
    let index = bootstrap::policy();
    let masters = strings(&["system:masters", "system:authenticated"]);
    let reason = r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#;
    for attrs in [
        Attributes::resource("root", &masters, "delete", "apps", "deployments", "ns"),
        Attributes::resource(
            "root",
            &masters,
            "escalate",
            "rbac.authorization.k8s.io",
            "clusterroles",
            "",
        ),
        Attributes::resource("root", &masters, "get", "", "pods", "ns").with_subresource("exec"),
        Attributes::non_resource("root", &masters, "post", "/any/path"),
    ] {
        let d = index.authorize(&attrs);
        assert!(d.allowed, "{attrs:?}");
        assert_eq!(d.reason, reason);
    }
    let cluster_admin = bootstrap::cluster_roles()
        .iter()
        .find(|r| r.metadata.name == "cluster-admin")
        .unwrap();
    assert_eq!(
        cluster_admin.rules,
        vec![
            PolicyRule::resource(&["*"], &["*"], &["*"]),
            PolicyRule::non_resource(&["*"], &["*"]),
        ]
    );
}

#[test]
fn discovery_and_public_info() {
    let index = bootstrap::policy();
    let discovery = index.cluster_role_binding("system:discovery").unwrap();
    assert_eq!(discovery.role_ref.name, "system:discovery");
    assert_eq!(discovery.subjects.len(), 1);
    assert_eq!(discovery.subjects[0].kind, "Group");
    assert_eq!(discovery.subjects[0].name, "system:authenticated");

    let authenticated = strings(&["system:authenticated"]);
    let d = index.authorize(&Attributes::non_resource(
        "u",
        &authenticated,
        "get",
        "/apis/apps/v1",
    ));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
    );
    let anonymous = strings(&["system:unauthenticated"]);
    assert!(
        !index
            .authorize(&Attributes::non_resource(
                "system:anonymous",
                &anonymous,
                "get",
                "/apis"
            ))
            .allowed
    );
    let d = index.authorize(&Attributes::non_resource(
        "system:anonymous",
        &anonymous,
        "get",
        "/version",
    ));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated""#
    );
    // Authenticated users may ask what they may do, nothing more.
    assert!(
        index
            .authorize(&Attributes::resource(
                "u",
                &authenticated,
                "create",
                "authorization.k8s.io",
                "selfsubjectrulesreviews",
                ""
            ))
            .allowed
    );
    assert!(
        !index
            .authorize(&Attributes::resource(
                "u",
                &authenticated,
                "list",
                "",
                "pods",
                "default"
            ))
            .allowed
    );
}

fn aggregated() -> Vec<ClusterRole> {
    let mut roles: Vec<ClusterRole> = bootstrap::cluster_roles()
        .iter()
        .chain(bootstrap::controller_roles())
        .cloned()
        .collect();
    let rounds = aggregate_until_stable(&mut roles, 10);
    assert!(rounds < 10, "aggregation did not settle");
    roles
}

#[test]
fn view_edit_admin_aggregate() {
    let roles = bootstrap::cluster_roles();
    let view = roles.iter().find(|r| r.metadata.name == "view").unwrap();
    let selector = &view
        .aggregation_rule
        .as_ref()
        .unwrap()
        .cluster_role_selectors[0];
    assert_eq!(
        selector
            .match_labels
            .get("rbac.authorization.k8s.io/aggregate-to-view")
            .map(String::as_str),
        Some("true")
    );
    assert!(
        view.rules.is_empty(),
        "aggregated roles are written without rules"
    );

    let mut index = crate::bootstrap::policy();
    for r in aggregated() {
        index.upsert_cluster_role(r);
    }
    let none = strings(&[]);
    let allowed = |role: &str, verb: &str, group: &str, resource: &str| {
        let rules = index.cluster_role(role).unwrap().rules.clone();
        let attrs = Attributes::resource("u", &none, verb, group, resource, "ns");
        rules.iter().any(|r| crate::rule_allows(&attrs, r))
    };
    for role in ["view", "edit", "admin"] {
        assert!(allowed(role, "get", "", "pods"), "{role}");
        assert!(allowed(role, "watch", "apps", "deployments"), "{role}");
    }
    assert!(!allowed("view", "get", "", "secrets"));
    assert!(!allowed("view", "create", "", "pods"));
    assert!(allowed("edit", "get", "", "secrets"));
    assert!(allowed("edit", "create", "", "pods"));
    assert!(!allowed(
        "edit",
        "create",
        "rbac.authorization.k8s.io",
        "rolebindings"
    ));
    assert!(allowed(
        "admin",
        "create",
        "rbac.authorization.k8s.io",
        "rolebindings"
    ));
    assert!(allowed(
        "admin",
        "create",
        "authorization.k8s.io",
        "localsubjectaccessreviews"
    ));
    // cluster-admin has no aggregation rule and stays as written.
    assert_eq!(index.cluster_role("cluster-admin").unwrap().rules.len(), 2);

    // Through a RoleBinding, admin's aggregated rules grant in the namespace.
    index.upsert_role_binding(crate::types::RoleBinding {
        metadata: crate::types::Meta::namespaced("team", "team-admin"),
        subjects: vec![super::user("lead")],
        role_ref: crate::types::RoleRef::cluster_role("admin"),
    });
    let d = index.authorize(&Attributes::resource(
        "lead", &none, "get", "", "pods", "team",
    ));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by RoleBinding "team-admin/team" of ClusterRole "admin" to User "lead""#
    );
}

#[test]
fn controllers_and_components() {
    let index = bootstrap::policy();
    let none = strings(&[]);
    let sa = "system:serviceaccount:kube-system:deployment-controller";
    let d = index.authorize(&Attributes::resource(
        sa,
        &none,
        "update",
        "apps",
        "deployments",
        "ns",
    ));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "system:controller:deployment-controller" of ClusterRole "system:controller:deployment-controller" to ServiceAccount "deployment-controller/kube-system""#
    );
    assert!(
        !index
            .authorize(&Attributes::resource(sa, &none, "get", "", "secrets", "ns"))
            .allowed
    );

    let d = index.authorize(
        &Attributes::resource(
            "system:kube-scheduler",
            &none,
            "update",
            "coordination.k8s.io",
            "leases",
            "kube-system",
        )
        .with_name("kube-scheduler"),
    );
    assert!(d.allowed, "{d:?}");
    // The scheduler's own ClusterRole binding or its leader-locking RoleBinding.
    assert!(
        d.reason.contains("to User \"system:kube-scheduler\""),
        "{}",
        d.reason
    );

    // Nodes read their pods through the system:node role, granted by the Node authorizer in
    // upstream, not by a default binding to system:nodes (empty since 1.8).
    let nodes = strings(&["system:nodes"]);
    assert!(
        !index
            .authorize(&Attributes::resource(
                "system:node:n1",
                &nodes,
                "get",
                "",
                "pods",
                "ns"
            ))
            .allowed
    );
}
