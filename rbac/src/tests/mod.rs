//! Table tests of keel-rbac against upstream's behaviour; each module names the upstream
//! function or file whose behaviour it pins down.

mod aggregation;
mod bootstrap;
mod escalation;
mod gofmt;
mod index;
mod matching;
mod scale;
mod subjects;

use crate::types::{
    ClusterRole, ClusterRoleBinding, Meta, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

pub(crate) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule::resource(verbs, groups, resources)
}

pub(crate) fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule::non_resource(verbs, urls)
}

pub(crate) fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: Meta::named(name),
        rules,
        aggregation_rule: None,
    }
}

pub(crate) fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
    Role {
        metadata: Meta::namespaced(namespace, name),
        rules,
    }
}

pub(crate) fn user(name: &str) -> Subject {
    subject("User", name, "")
}

pub(crate) fn group(name: &str) -> Subject {
    subject("Group", name, "")
}

pub(crate) fn service_account(namespace: &str, name: &str) -> Subject {
    subject("ServiceAccount", name, namespace)
}

pub(crate) fn subject(kind: &str, name: &str, namespace: &str) -> Subject {
    Subject {
        kind: kind.into(),
        api_group: if kind == "ServiceAccount" {
            String::new()
        } else {
            crate::types::GROUP.into()
        },
        name: name.into(),
        namespace: namespace.into(),
    }
}

pub(crate) fn cluster_binding(
    name: &str,
    role: &str,
    subjects: Vec<Subject>,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: Meta::named(name),
        subjects,
        role_ref: RoleRef::cluster_role(role),
    }
}

pub(crate) fn binding(
    namespace: &str,
    name: &str,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
) -> RoleBinding {
    RoleBinding {
        metadata: Meta::namespaced(namespace, name),
        subjects,
        role_ref,
    }
}
