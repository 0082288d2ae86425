//! Upstream's default RBAC policy (kube-apiserver's `rbac/bootstrap-roles` post-start hook
//! writes it): the objects of `data/*.json`, made by `scripts/regen-bootstrap-policy` from
//! upstream's published `bootstrappolicy/testdata` (see `data/README.md` for the release).
//!
//! The `*_json` functions give the objects as upstream writes them (labels
//! `kubernetes.io/bootstrapping: rbac-defaults`, annotation
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`, `aggregationRule`, `rules: null`
//! of aggregated roles); the others the same objects parsed. Upstream writes
//! cluster-roles and controller-roles as ClusterRoles, the two binding files as
//! ClusterRoleBindings, namespace-roles/-role-bindings in `kube-system` and `kube-public`.

use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::index::PolicyIndex;
use crate::types::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};

const CLUSTER_ROLES: &str = include_str!("../data/cluster-roles.json");
const CLUSTER_ROLE_BINDINGS: &str = include_str!("../data/cluster-role-bindings.json");
const NAMESPACE_ROLES: &str = include_str!("../data/namespace-roles.json");
const NAMESPACE_ROLE_BINDINGS: &str = include_str!("../data/namespace-role-bindings.json");
const CONTROLLER_ROLES: &str = include_str!("../data/controller-roles.json");
const CONTROLLER_ROLE_BINDINGS: &str = include_str!("../data/controller-role-bindings.json");

fn parse_json(text: &str, file: &str) -> Vec<Value> {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("rbac/data/{file}.json: {e}"))
}

fn typed<T: DeserializeOwned>(items: &[Value], file: &str) -> Vec<T> {
    items
        .iter()
        .map(|v| T::deserialize(v).unwrap_or_else(|e| panic!("rbac/data/{file}.json: {e}: {v}")))
        .collect()
}

macro_rules! data {
    ($json:ident, $typed:ident, $t:ty, $text:ident, $file:literal) => {
        #[doc = concat!("The objects of `data/", $file, ".json` as upstream writes them.")]
        pub fn $json() -> &'static [Value] {
            static CELL: OnceLock<Vec<Value>> = OnceLock::new();
            CELL.get_or_init(|| parse_json($text, $file))
        }

        #[doc = concat!("The objects of `data/", $file, ".json`, parsed.")]
        pub fn $typed() -> &'static [$t] {
            static CELL: OnceLock<Vec<$t>> = OnceLock::new();
            CELL.get_or_init(|| typed($json(), $file))
        }
    };
}

data!(
    cluster_roles_json,
    cluster_roles,
    ClusterRole,
    CLUSTER_ROLES,
    "cluster-roles"
);
data!(
    cluster_role_bindings_json,
    cluster_role_bindings,
    ClusterRoleBinding,
    CLUSTER_ROLE_BINDINGS,
    "cluster-role-bindings"
);
data!(
    namespace_roles_json,
    namespace_roles,
    Role,
    NAMESPACE_ROLES,
    "namespace-roles"
);
data!(
    namespace_role_bindings_json,
    namespace_role_bindings,
    RoleBinding,
    NAMESPACE_ROLE_BINDINGS,
    "namespace-role-bindings"
);
data!(
    controller_roles_json,
    controller_roles,
    ClusterRole,
    CONTROLLER_ROLES,
    "controller-roles"
);
data!(
    controller_role_bindings_json,
    controller_role_bindings,
    ClusterRoleBinding,
    CONTROLLER_ROLE_BINDINGS,
    "controller-role-bindings"
);

/// Every bootstrap object as upstream writes it: ClusterRoles (cluster then controller
/// roles), ClusterRoleBindings, Roles, RoleBindings.
pub fn all_json() -> impl Iterator<Item = &'static Value> {
    cluster_roles_json()
        .iter()
        .chain(controller_roles_json())
        .chain(cluster_role_bindings_json())
        .chain(controller_role_bindings_json())
        .chain(namespace_roles_json())
        .chain(namespace_role_bindings_json())
}

/// An index holding the whole bootstrap policy, aggregated roles as written (without
/// rules: see [`crate::aggregation`]).
pub fn policy() -> PolicyIndex {
    let mut index = PolicyIndex::new();
    for r in cluster_roles().iter().chain(controller_roles()) {
        index.upsert_cluster_role(r.clone());
    }
    for b in cluster_role_bindings()
        .iter()
        .chain(controller_role_bindings())
    {
        index.upsert_cluster_role_binding(b.clone());
    }
    for r in namespace_roles() {
        index.upsert_role(r.clone());
    }
    for b in namespace_role_bindings() {
        index.upsert_role_binding(b.clone());
    }
    index
}
