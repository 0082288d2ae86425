//! `rbac.authorization.k8s.io/v1` objects as stored, reduced to what RBAC evaluates.
//!
//! Parsed from the JSON objects as stored (`T::from_value`, which borrows the value and
//! ignores every member RBAC does not read). A JSON `null` list or map is an empty one, as
//! Go's decoder gives a nil slice that every upstream function treats as empty. Serialized
//! back with upstream's `omitempty` choices (a rule's `verbs` always, its other lists only
//! when non-empty), so rules computed here (aggregation) can be written as they are.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// `verbs: ["*"]`, `apiGroups: ["*"]`, `resources: ["*"]`, `nonResourceURLs: ["*"]`.
pub const ALL: &str = "*";

/// One rule of a Role or ClusterRole (`rbacv1.PolicyRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PolicyRule {
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    #[serde(
        rename = "apiGroups",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub api_groups: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<String>,
    #[serde(
        rename = "resourceNames",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_names: Vec<String>,
    #[serde(
        rename = "nonResourceURLs",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A resource rule: `verbs` on `resources` of `api_groups`.
    pub fn resource(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(api_groups),
            resources: strings(resources),
            ..PolicyRule::default()
        }
    }

    /// A non-resource rule: `verbs` on `urls`.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            non_resource_urls: strings(urls),
            ..PolicyRule::default()
        }
    }

    /// The same rule limited to `names`.
    pub fn with_names(mut self, names: &[&str]) -> PolicyRule {
        self.resource_names = strings(names);
        self
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Who a binding grants to (`rbacv1.Subject`): `kind` is `User`, `Group` or
/// `ServiceAccount` (any other kind matches no one, as upstream).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    #[serde(default)]
    pub kind: String,
    #[serde(rename = "apiGroup", default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// Subject kinds.
pub const USER_KIND: &str = "User";
pub const GROUP_KIND: &str = "Group";
pub const SERVICE_ACCOUNT_KIND: &str = "ServiceAccount";

/// The prefix of a service account's user name: `system:serviceaccount:<ns>:<name>`.
pub const SERVICE_ACCOUNT_USER_PREFIX: &str = "system:serviceaccount:";

/// The user name a service account authenticates as.
pub fn service_account_user_name(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}")
}

/// The role a binding grants (`rbacv1.RoleRef`): `kind` is `Role` or `ClusterRole`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleRef {
    #[serde(rename = "apiGroup", default)]
    pub api_group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

impl RoleRef {
    pub fn cluster_role(name: &str) -> RoleRef {
        RoleRef {
            api_group: GROUP.into(),
            kind: "ClusterRole".into(),
            name: name.into(),
        }
    }

    pub fn role(name: &str) -> RoleRef {
        RoleRef {
            api_group: GROUP.into(),
            kind: "Role".into(),
            name: name.into(),
        }
    }
}

/// The part of `metadata` RBAC reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
}

impl Meta {
    pub fn named(name: &str) -> Meta {
        Meta {
            name: name.into(),
            ..Meta::default()
        }
    }

    pub fn namespaced(namespace: &str, name: &str) -> Meta {
        Meta {
            name: name.into(),
            namespace: namespace.into(),
            ..Meta::default()
        }
    }
}

/// `metav1.LabelSelectorRequirement`: `operator` is `In`, `NotIn`, `Exists` or
/// `DoesNotExist`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSelectorRequirement {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub operator: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

/// `metav1.LabelSelector`; the empty selector selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSelector {
    #[serde(
        rename = "matchLabels",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    #[serde(
        rename = "matchExpressions",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// A ClusterRole's `aggregationRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AggregationRule {
    #[serde(
        rename = "clusterRoleSelectors",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default, deserialize_with = "null_as_default")]
    pub rules: Vec<PolicyRule>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRole {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default, deserialize_with = "null_as_default")]
    pub rules: Vec<PolicyRule>,
    #[serde(
        rename = "aggregationRule",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub aggregation_rule: Option<AggregationRule>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleBinding {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub subjects: Vec<Subject>,
    #[serde(rename = "roleRef", default)]
    pub role_ref: RoleRef,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRoleBinding {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub subjects: Vec<Subject>,
    #[serde(rename = "roleRef", default)]
    pub role_ref: RoleRef,
}

macro_rules! from_value {
    ($($t:ty),*) => {$(
        impl $t {
            /// Reads the stored JSON object (unknown members ignored; nothing is copied
            /// but the members RBAC reads).
            pub fn from_value(value: &Value) -> Result<Self, serde_json::Error> {
                <$t>::deserialize(value)
            }
        }
    )*};
}
from_value!(
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    PolicyRule
);

/// The four kinds the policy is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    /// From an object's `kind`.
    pub fn parse(kind: &str) -> Option<Kind> {
        Some(match kind {
            "Role" => Kind::Role,
            "ClusterRole" => Kind::ClusterRole,
            "RoleBinding" => Kind::RoleBinding,
            "ClusterRoleBinding" => Kind::ClusterRoleBinding,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Role => "Role",
            Kind::ClusterRole => "ClusterRole",
            Kind::RoleBinding => "RoleBinding",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    pub fn namespaced(self) -> bool {
        matches!(self, Kind::Role | Kind::RoleBinding)
    }
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
