//! The policy index: every Role, ClusterRole, RoleBinding and ClusterRoleBinding, with the
//! bindings indexed by subject, and upstream's rule resolver and authorizer over it.
//!
//! Upstream (`pkg/registry/rbac/validation/rule.go` `VisitRulesFor`) walks every
//! ClusterRoleBinding, then every RoleBinding of the request's namespace, and keeps those
//! with a subject that applies to the user. Here a binding is filed under each subject it
//! names, as a user name (`User`; a `ServiceAccount` as the user name it authenticates as,
//! `system:serviceaccount:<ns>:<name>`, its namespace defaulting to the binding's for a
//! RoleBinding) or a group name (`Group`), so a request looks up its user and each of its
//! groups and visits only those bindings: O(bindings of the user and its groups) plus one
//! hash look-up per group.
//!
//! Order: upstream visits bindings in its informer cache's order, which is a Go map's (so
//! unspecified, varying between runs); here ClusterRoleBindings by name, then the
//! namespace's RoleBindings by name, each role's rules in order. Only the wording of an
//! allowed reason (which binding is named when several allow) and the order of rules and
//! errors depend on it; decisions do not.
//!
//! Worked example: ClusterRoleBindings `a` (Group `dev`) and `b` (User `alice`, Group
//! `dev`), RoleBinding `r` in `ns1` (ServiceAccount `bot`, no namespace). Filed as:
//! cluster groups `dev` → {a, b}, cluster users `alice` → {b}, `ns1` users
//! `system:serviceaccount:ns1:bot` → {r}. Alice in group `dev` asking in `ns1` visits a, b
//! (merged by name, `b` once, described as `User "alice"`, its first subject that applies),
//! then nothing in `ns1`.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use foldhash::HashMap;
use serde::Serialize;
use serde_json::Value;

use crate::gofmt;
use crate::matching::{rule_allows, Attributes};
use crate::types::{
    ClusterRole, ClusterRoleBinding, Kind, PolicyRule, Role, RoleBinding, RoleRef, Subject,
    GROUP_KIND, SERVICE_ACCOUNT_KIND, SERVICE_ACCOUNT_USER_PREFIX, USER_KIND,
};

/// An authorization decision. RBAC only allows: `allowed: false` is upstream's
/// `DecisionNoOpinion` (the next authorizer, if any, decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "u"` when allowed;
    /// when not, `RBAC: ` and the errors met resolving the user's bindings (a missing role),
    /// or empty.
    pub reason: String,
}

/// How a missing role is worded. The authorizer reads roles from informer listers, whose
/// not-found errors name the singular resource; the escalation checks of the RBAC registry
/// read them from storage, whose errors name the resource of the request being served (the
/// store qualifies errors from the request's `RequestInfo`), whatever the role's kind:
/// a RoleBinding naming a missing ClusterRole `x` fails with
/// `rolebindings.rbac.authorization.k8s.io "x" not found` (seen on v1.36.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorStyle {
    /// `clusterrole.rbac.authorization.k8s.io "x" not found`, `role.rbac...` (authorizer,
    /// rules reviews).
    Lister,
    /// `<resource>.rbac.authorization.k8s.io "x" not found`, `resource` that of the write
    /// (`roles`, `clusterroles`, `rolebindings`, `clusterrolebindings`).
    Registry(&'static str),
}

/// A binding whose role could not be resolved (`GetRoleReferenceRules`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResolveError {
    /// `roleRef` names a Role (in the binding's namespace) or ClusterRole that does not
    /// exist.
    NotFound {
        cluster_role: bool,
        namespace: String,
        name: String,
    },
    /// `roleRef.kind` is neither `Role` nor `ClusterRole`.
    UnsupportedKind(String),
}

impl ResolveError {
    pub fn message(&self, style: ErrorStyle) -> String {
        match self {
            ResolveError::NotFound {
                cluster_role, name, ..
            } => {
                let resource = match (cluster_role, style) {
                    (true, ErrorStyle::Lister) => "clusterrole",
                    (false, ErrorStyle::Lister) => "role",
                    (_, ErrorStyle::Registry(resource)) => resource,
                };
                format!(
                    "{resource}.{} {} not found",
                    crate::types::GROUP,
                    gofmt::quote(name)
                )
            }
            ResolveError::UnsupportedKind(kind) => {
                format!("unsupported role reference kind: {}", gofmt::quote(kind))
            }
        }
    }
}

impl fmt::Display for ResolveError {
    /// The authorizer's wording ([`ErrorStyle::Lister`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(ErrorStyle::Lister))
    }
}

/// Where a rule came from: the binding and its first subject that applies to the user.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    ClusterRoleBinding {
        binding: &'a ClusterRoleBinding,
        subject: &'a Subject,
    },
    RoleBinding {
        binding: &'a RoleBinding,
        subject: &'a Subject,
    },
}

impl fmt::Display for Source<'_> {
    /// Upstream's describers: `ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`,
    /// `RoleBinding "b/ns" of Role "r" to ServiceAccount "name/ns"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, binding, role_ref, subject, namespace) = match self {
            Source::ClusterRoleBinding { binding, subject } => (
                "ClusterRoleBinding",
                binding.metadata.name.clone(),
                &binding.role_ref,
                *subject,
                "",
            ),
            Source::RoleBinding { binding, subject } => (
                "RoleBinding",
                format!("{}/{}", binding.metadata.name, binding.metadata.namespace),
                &binding.role_ref,
                *subject,
                binding.metadata.namespace.as_str(),
            ),
        };
        let subject_name = if subject.kind == SERVICE_ACCOUNT_KIND {
            let ns = if subject.namespace.is_empty() {
                namespace
            } else {
                &subject.namespace
            };
            format!("{}/{}", subject.name, ns)
        } else {
            subject.name.clone()
        };
        write!(
            f,
            "{what} {} of {} {} to {} {}",
            gofmt::quote(&binding),
            role_ref.kind,
            gofmt::quote(&role_ref.name),
            subject.kind,
            gofmt::quote(&subject_name)
        )
    }
}

/// One step of [`PolicyIndex::visit_rules_for`].
#[derive(Clone, Debug)]
pub enum Visit<'a> {
    Rule(Source<'a>, &'a PolicyRule),
    Error(ResolveError),
}

/// A SelfSubjectRulesReview's `status.resourceRules[]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    #[serde(rename = "apiGroups", skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(rename = "resourceNames", skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

/// A SelfSubjectRulesReview's `status.nonResourceRules[]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

/// RBAC's answer to a SelfSubjectRulesReview: its `status` (`SubjectRulesReviewStatus`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RulesReview {
    #[serde(rename = "resourceRules")]
    pub resource_rules: Vec<ResourceRule>,
    #[serde(rename = "nonResourceRules")]
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Always false from RBAC (other authorizers, such as Node, set it).
    pub incomplete: bool,
    #[serde(rename = "evaluationError", skip_serializing_if = "String::is_empty")]
    pub evaluation_error: String,
}

impl RulesReview {
    /// The `status` object as upstream serializes it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a rules review serializes")
    }
}

/// Why an object could not be taken into the index.
#[derive(Debug)]
pub enum PolicyError {
    /// `kind` is not one of the four RBAC kinds.
    UnknownKind(String),
    Decode(serde_json::Error),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnknownKind(k) => write!(f, "not an RBAC kind: {k:?}"),
            PolicyError::Decode(e) => write!(f, "decoding an RBAC object: {e}"),
        }
    }
}

impl std::error::Error for PolicyError {}

/// How many objects the index holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub roles: usize,
    pub cluster_roles: usize,
    pub role_bindings: usize,
    pub cluster_role_bindings: usize,
}

/// Bindings filed by the user and group names their subjects match. Each set is ordered by
/// binding name (the visiting order).
#[derive(Clone, Debug)]
struct SubjectIndex<B> {
    users: HashMap<Box<str>, BTreeMap<Box<str>, Arc<B>>>,
    groups: HashMap<Box<str>, BTreeMap<Box<str>, Arc<B>>>,
}

impl<B> Default for SubjectIndex<B> {
    fn default() -> Self {
        SubjectIndex {
            users: HashMap::default(),
            groups: HashMap::default(),
        }
    }
}

/// Under which names a binding is filed.
enum SubjectKey {
    User(String),
    Group(String),
}

/// The keys of `subjects` in a binding of `namespace` (empty for a ClusterRoleBinding),
/// mirroring `appliesToUser`: a ServiceAccount without a namespace takes the binding's,
/// and with none (in a ClusterRoleBinding) matches no one; unknown kinds match no one.
fn subject_keys(subjects: &[Subject], namespace: &str) -> Vec<SubjectKey> {
    let mut keys = Vec::with_capacity(subjects.len());
    for s in subjects {
        match s.kind.as_str() {
            USER_KIND => keys.push(SubjectKey::User(s.name.clone())),
            GROUP_KIND => keys.push(SubjectKey::Group(s.name.clone())),
            SERVICE_ACCOUNT_KIND => {
                let ns = if s.namespace.is_empty() {
                    namespace
                } else {
                    &s.namespace
                };
                if !ns.is_empty() {
                    keys.push(SubjectKey::User(crate::types::service_account_user_name(
                        ns, &s.name,
                    )));
                }
            }
            _ => {}
        }
    }
    keys
}

impl<B> SubjectIndex<B> {
    fn insert(&mut self, name: &str, subjects: &[Subject], namespace: &str, binding: &Arc<B>) {
        for key in subject_keys(subjects, namespace) {
            let (map, key) = match key {
                SubjectKey::User(k) => (&mut self.users, k),
                SubjectKey::Group(k) => (&mut self.groups, k),
            };
            map.entry(key.into_boxed_str())
                .or_default()
                .insert(name.into(), Arc::clone(binding));
        }
    }

    fn remove(&mut self, name: &str, subjects: &[Subject], namespace: &str) {
        for key in subject_keys(subjects, namespace) {
            let (map, key) = match key {
                SubjectKey::User(k) => (&mut self.users, k),
                SubjectKey::Group(k) => (&mut self.groups, k),
            };
            if let Some(set) = map.get_mut(key.as_str()) {
                set.remove(name);
                if set.is_empty() {
                    map.remove(key.as_str());
                }
            }
        }
    }

    /// Whether `f` holds for a binding filed under `user` or any of `groups`, asked in no
    /// particular order and perhaps more than once per binding: what an allow-or-not
    /// decision needs, without gathering the bindings (as [`SubjectIndex::candidates`] does).
    fn any_candidate(
        &self,
        user: &str,
        groups: &[String],
        mut f: impl FnMut(&Arc<B>) -> bool,
    ) -> bool {
        if let Some(set) = self.users.get(user) {
            if set.values().any(&mut f) {
                return true;
            }
        }
        groups.iter().any(|g| {
            self.groups
                .get(g.as_str())
                .is_some_and(|set| set.values().any(&mut f))
        })
    }

    /// The bindings filed under `user` or any of `groups`, by name, each once.
    fn candidates(&self, user: &str, groups: &[String]) -> Vec<&Arc<B>> {
        let mut out: Vec<(&str, &Arc<B>)> = Vec::new();
        let mut sources = 0;
        if let Some(set) = self.users.get(user) {
            out.extend(set.iter().map(|(k, v)| (&**k, v)));
            sources += 1;
        }
        for g in groups {
            if let Some(set) = self.groups.get(g.as_str()) {
                out.extend(set.iter().map(|(k, v)| (&**k, v)));
                sources += 1;
            }
        }
        if sources > 1 {
            out.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.dedup_by(|a, b| Arc::ptr_eq(a.1, b.1));
        }
        out.into_iter().map(|(_, b)| b).collect()
    }

    fn is_empty(&self) -> bool {
        self.users.is_empty() && self.groups.is_empty()
    }
}

/// One namespace's Roles and RoleBindings.
#[derive(Clone, Debug, Default)]
struct NamespacePolicy {
    roles: HashMap<Box<str>, Arc<Role>>,
    role_bindings: HashMap<Box<str>, Arc<RoleBinding>>,
    subjects: SubjectIndex<RoleBinding>,
}

impl NamespacePolicy {
    fn is_empty(&self) -> bool {
        self.roles.is_empty() && self.role_bindings.is_empty() && self.subjects.is_empty()
    }
}

/// The whole RBAC policy, kept current object by object (a watch feed's events), and
/// upstream's `DefaultRuleResolver` and `RBACAuthorizer` over it.
///
/// Invariant: every binding held is filed in its scope's `SubjectIndex` under exactly the
/// keys `subject_keys` gives for its subjects, and nowhere else.
#[derive(Clone, Debug, Default)]
pub struct PolicyIndex {
    /// Which state of the policy this is: every change takes a number never used before
    /// (by any index of the process), so a decision cached with it is current while it is
    /// (see [`PolicyIndex::generation`]).
    generation: u64,
    cluster_roles: HashMap<Box<str>, Arc<ClusterRole>>,
    cluster_role_bindings: HashMap<Box<str>, Arc<ClusterRoleBinding>>,
    cluster_subjects: SubjectIndex<ClusterRoleBinding>,
    namespaces: HashMap<Box<str>, NamespacePolicy>,
}

/// The roles whose rules apply to one user in one namespace ([`PolicyIndex::grants`]), each
/// with the positions of its rules that name resources and of those that name URLs (a rule
/// with both is in both): a resource request looks only at the first, a non-resource request
/// only at the second. The roles are shared with the index, not copied: a server keeps
/// thousands of these.
#[derive(Clone, Debug, Default)]
pub struct Grants {
    roles: Vec<GrantedRole>,
}

#[derive(Clone, Debug)]
struct GrantedRole {
    role: Granted,
    resource: Box<[u32]>,
    non_resource: Box<[u32]>,
}

#[derive(Clone, Debug)]
enum Granted {
    ClusterRole(Arc<ClusterRole>),
    Role(Arc<Role>),
}

impl Granted {
    fn rules(&self) -> &[PolicyRule] {
        match self {
            Granted::ClusterRole(r) => &r.rules,
            Granted::Role(r) => &r.rules,
        }
    }

    fn same(&self, other: &Granted) -> bool {
        match (self, other) {
            (Granted::ClusterRole(a), Granted::ClusterRole(b)) => Arc::ptr_eq(a, b),
            (Granted::Role(a), Granted::Role(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Grants {
    /// [`PolicyIndex::allows`] for a request of the user and namespace these grants were
    /// resolved for, from the index they were resolved from.
    pub fn allows(&self, attrs: &Attributes<'_>) -> bool {
        self.roles.iter().any(|g| {
            let rules = g.role.rules();
            let at = match attrs.path {
                None => &g.resource,
                Some(_) => &g.non_resource,
            };
            at.iter().any(|&i| rule_allows(attrs, &rules[i as usize]))
        })
    }
}

/// A number no index state of this process has had.
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `appliesTo`: the index of the first subject that applies to the user.
pub fn applies_to(
    user: &str,
    groups: &[String],
    subjects: &[Subject],
    namespace: &str,
) -> Option<usize> {
    subjects
        .iter()
        .position(|s| applies_to_user(user, groups, s, namespace))
}

/// `appliesToUser`: a `User` by name, a `Group` by membership, a `ServiceAccount` by the
/// user name it authenticates as (its namespace defaulting to `namespace`, the binding's;
/// none at all matches no one). Subjects' `apiGroup` is not looked at, as upstream.
pub fn applies_to_user(user: &str, groups: &[String], subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        USER_KIND => user == subject.name,
        GROUP_KIND => groups.contains(&subject.name),
        SERVICE_ACCOUNT_KIND => {
            let ns = if subject.namespace.is_empty() {
                namespace
            } else {
                &subject.namespace
            };
            !ns.is_empty() && service_account_matches(ns, &subject.name, user)
        }
        _ => false,
    }
}

/// `serviceaccount.MatchesUsername`: `user` is `system:serviceaccount:<namespace>:<name>`.
fn service_account_matches(namespace: &str, name: &str, user: &str) -> bool {
    user.strip_prefix(SERVICE_ACCOUNT_USER_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        == Some(name)
}

impl PolicyIndex {
    pub fn new() -> PolicyIndex {
        PolicyIndex::default()
    }

    /// Adds or replaces (by kind, namespace and name) the stored object `value`.
    pub fn upsert_value(&mut self, value: &Value) -> Result<Kind, PolicyError> {
        let kind_name = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let kind =
            Kind::parse(kind_name).ok_or_else(|| PolicyError::UnknownKind(kind_name.into()))?;
        match kind {
            Kind::Role => self.upsert_role(Role::from_value(value).map_err(PolicyError::Decode)?),
            Kind::ClusterRole => self
                .upsert_cluster_role(ClusterRole::from_value(value).map_err(PolicyError::Decode)?),
            Kind::RoleBinding => self
                .upsert_role_binding(RoleBinding::from_value(value).map_err(PolicyError::Decode)?),
            Kind::ClusterRoleBinding => self.upsert_cluster_role_binding(
                ClusterRoleBinding::from_value(value).map_err(PolicyError::Decode)?,
            ),
        }
        Ok(kind)
    }

    pub fn upsert_role(&mut self, role: Role) {
        self.generation = next_generation();
        let ns = self
            .namespaces
            .entry(role.metadata.namespace.as_str().into())
            .or_default();
        ns.roles
            .insert(role.metadata.name.as_str().into(), Arc::new(role));
    }

    pub fn upsert_cluster_role(&mut self, role: ClusterRole) {
        self.generation = next_generation();
        self.cluster_roles
            .insert(role.metadata.name.as_str().into(), Arc::new(role));
    }

    pub fn upsert_role_binding(&mut self, binding: RoleBinding) {
        self.generation = next_generation();
        let namespace = binding.metadata.namespace.clone();
        let name = binding.metadata.name.clone();
        let ns = self
            .namespaces
            .entry(namespace.as_str().into())
            .or_default();
        if let Some(old) = ns.role_bindings.remove(name.as_str()) {
            ns.subjects.remove(&name, &old.subjects, &namespace);
        }
        let binding = Arc::new(binding);
        ns.subjects
            .insert(&name, &binding.subjects, &namespace, &binding);
        ns.role_bindings.insert(name.into(), binding);
    }

    pub fn upsert_cluster_role_binding(&mut self, binding: ClusterRoleBinding) {
        self.generation = next_generation();
        let name = binding.metadata.name.clone();
        if let Some(old) = self.cluster_role_bindings.remove(name.as_str()) {
            self.cluster_subjects.remove(&name, &old.subjects, "");
        }
        let binding = Arc::new(binding);
        self.cluster_subjects
            .insert(&name, &binding.subjects, "", &binding);
        self.cluster_role_bindings.insert(name.into(), binding);
    }

    /// Removes one object; `namespace` is ignored for the cluster-scoped kinds. Returns
    /// whether it was held.
    pub fn remove(&mut self, kind: Kind, namespace: &str, name: &str) -> bool {
        self.generation = next_generation();
        match kind {
            Kind::ClusterRole => self.cluster_roles.remove(name).is_some(),
            Kind::ClusterRoleBinding => match self.cluster_role_bindings.remove(name) {
                Some(old) => {
                    self.cluster_subjects.remove(name, &old.subjects, "");
                    true
                }
                None => false,
            },
            Kind::Role | Kind::RoleBinding => {
                let Some(ns) = self.namespaces.get_mut(namespace) else {
                    return false;
                };
                let removed = if kind == Kind::Role {
                    ns.roles.remove(name).is_some()
                } else {
                    match ns.role_bindings.remove(name) {
                        Some(old) => {
                            ns.subjects.remove(name, &old.subjects, namespace);
                            true
                        }
                        None => false,
                    }
                };
                if ns.is_empty() {
                    self.namespaces.remove(namespace);
                }
                removed
            }
        }
    }

    /// Removes the object `value` names (its kind, namespace and name).
    pub fn remove_value(&mut self, value: &Value) -> Result<bool, PolicyError> {
        let kind_name = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let kind =
            Kind::parse(kind_name).ok_or_else(|| PolicyError::UnknownKind(kind_name.into()))?;
        let meta = value.get("metadata");
        let field = |f: &str| {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        Ok(self.remove(kind, field("namespace"), field("name")))
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            cluster_roles: self.cluster_roles.len(),
            cluster_role_bindings: self.cluster_role_bindings.len(),
            ..Counts::default()
        };
        for ns in self.namespaces.values() {
            c.roles += ns.roles.len();
            c.role_bindings += ns.role_bindings.len();
        }
        c
    }

    pub fn cluster_role(&self, name: &str) -> Option<&ClusterRole> {
        self.cluster_roles.get(name).map(|r| &**r)
    }

    pub fn role(&self, namespace: &str, name: &str) -> Option<&Role> {
        self.namespaces
            .get(namespace)?
            .roles
            .get(name)
            .map(|r| &**r)
    }

    pub fn cluster_role_binding(&self, name: &str) -> Option<&ClusterRoleBinding> {
        self.cluster_role_bindings.get(name).map(|b| &**b)
    }

    pub fn role_binding(&self, namespace: &str, name: &str) -> Option<&RoleBinding> {
        self.namespaces
            .get(namespace)?
            .role_bindings
            .get(name)
            .map(|b| &**b)
    }

    /// Every ClusterRole, in no particular order (for [`crate::aggregation`]).
    pub fn cluster_roles(&self) -> impl Iterator<Item = &ClusterRole> {
        self.cluster_roles.values().map(|r| &**r)
    }

    /// `GetRoleReferenceRules`: the rules of the role `role_ref` names, a Role looked up in
    /// `binding_namespace` (empty for a ClusterRoleBinding, where no Role is found).
    pub fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<&[PolicyRule], ResolveError> {
        let not_found = |cluster_role| ResolveError::NotFound {
            cluster_role,
            namespace: binding_namespace.into(),
            name: role_ref.name.clone(),
        };
        match role_ref.kind.as_str() {
            // The lister's namespaced Get finds no Role for an empty namespace.
            "Role" if binding_namespace.is_empty() => Err(not_found(false)),
            "Role" => self
                .role(binding_namespace, &role_ref.name)
                .map(|r| r.rules.as_slice())
                .ok_or_else(|| not_found(false)),
            "ClusterRole" => self
                .cluster_role(&role_ref.name)
                .map(|r| r.rules.as_slice())
                .ok_or_else(|| not_found(true)),
            other => Err(ResolveError::UnsupportedKind(other.into())),
        }
    }

    /// `VisitRulesFor`: every rule that applies to the user in `namespace` (ClusterRoleBindings'
    /// everywhere, the namespace's RoleBindings' only there; a cluster-wide request, empty
    /// `namespace`, sees only ClusterRoleBindings), and every resolution error, until
    /// `visit` breaks.
    pub fn visit_rules_for<'s>(
        &'s self,
        user: &str,
        groups: &[String],
        namespace: &str,
        mut visit: impl FnMut(Visit<'s>) -> ControlFlow<()>,
    ) {
        for binding in self.cluster_subjects.candidates(user, groups) {
            let Some(i) = applies_to(user, groups, &binding.subjects, "") else {
                debug_assert!(
                    false,
                    "{binding:?} filed under a subject that does not apply"
                );
                continue;
            };
            match self.role_ref_rules(&binding.role_ref, "") {
                Err(e) => {
                    if visit(Visit::Error(e)).is_break() {
                        return;
                    }
                }
                Ok(rules) => {
                    let source = Source::ClusterRoleBinding {
                        binding,
                        subject: &binding.subjects[i],
                    };
                    for rule in rules {
                        if visit(Visit::Rule(source, rule)).is_break() {
                            return;
                        }
                    }
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        let Some(ns) = self.namespaces.get(namespace) else {
            return;
        };
        for binding in ns.subjects.candidates(user, groups) {
            let Some(i) = applies_to(user, groups, &binding.subjects, namespace) else {
                debug_assert!(
                    false,
                    "{binding:?} filed under a subject that does not apply"
                );
                continue;
            };
            match self.role_ref_rules(&binding.role_ref, namespace) {
                Err(e) => {
                    if visit(Visit::Error(e)).is_break() {
                        return;
                    }
                }
                Ok(rules) => {
                    let source = Source::RoleBinding {
                        binding,
                        subject: &binding.subjects[i],
                    };
                    for rule in rules {
                        if visit(Visit::Rule(source, rule)).is_break() {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// `RBACAuthorizer.Authorize`: allowed by the first rule (in visiting order) that
    /// allows the request, with upstream's reason naming its binding; otherwise no opinion,
    /// with the resolution errors met (`RBAC: ` and their aggregate) as the reason.
    pub fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let mut errors: Vec<String> = Vec::new();
        let mut allowed_by: Option<String> = None;
        self.visit_rules_for(attrs.user, attrs.groups, attrs.namespace, |v| match v {
            Visit::Rule(source, rule) if rule_allows(attrs, rule) => {
                allowed_by = Some(format!("RBAC: allowed by {source}"));
                ControlFlow::Break(())
            }
            Visit::Rule(..) => ControlFlow::Continue(()),
            Visit::Error(e) => {
                errors.push(e.message(ErrorStyle::Lister));
                ControlFlow::Continue(())
            }
        });
        match allowed_by {
            Some(reason) => Decision {
                allowed: true,
                reason,
            },
            None => Decision {
                allowed: false,
                reason: gofmt::aggregate(&errors)
                    .map(|e| format!("RBAC: {e}"))
                    .unwrap_or_default(),
            },
        }
    }

    /// Whether some rule allows the request: [`PolicyIndex::authorize`]'s `allowed`, without
    /// making its reason (what serving a request needs; the reason is for reviews).
    pub fn allows(&self, attrs: &Attributes<'_>) -> bool {
        // The rules `visit_rules_for` visits, in any order: whether one allows does not
        // depend on which binding is seen first (only the reason, which this leaves out).
        let (user, groups) = (attrs.user, attrs.groups);
        let grants = |subjects: &[Subject], role_ref: &RoleRef, namespace: &str| {
            applies_to(user, groups, subjects, namespace).is_some()
                && self
                    .role_ref_rules(role_ref, namespace)
                    .is_ok_and(|rules| rules.iter().any(|r| rule_allows(attrs, r)))
        };
        if self
            .cluster_subjects
            .any_candidate(user, groups, |b| grants(&b.subjects, &b.role_ref, ""))
        {
            return true;
        }
        if attrs.namespace.is_empty() {
            return false;
        }
        self.namespaces.get(attrs.namespace).is_some_and(|ns| {
            ns.subjects.any_candidate(user, groups, |b| {
                grants(&b.subjects, &b.role_ref, attrs.namespace)
            })
        })
    }

    /// Which state of the policy this is: two indexes (or one at two times) with the same
    /// generation hold the same policy, so whatever was derived from one holds for the
    /// other ([`PolicyIndex::grants`] cached by it, for instance). Every change gives a
    /// number no index of the process had before.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The roles whose rules [`PolicyIndex::allows`] looks at for `user` in `groups` asking
    /// in `namespace` (empty: cluster-wide or non-resource): those of the ClusterRoleBindings
    /// and the namespace's RoleBindings with a subject that applies, each once (missing roles
    /// grant nothing). `grants(u, g, ns).allows(a)` is `allows(a)` for every request `a` of
    /// that user in that namespace, while the index's [`PolicyIndex::generation`] is the
    /// same: what a server caches per user to decide without visiting bindings.
    pub fn grants(&self, user: &str, groups: &[String], namespace: &str) -> Grants {
        let mut grants = Grants::default();
        // Each role once (a binding may be filed under the user and a group, and several
        // bindings may name one role).
        let mut add = |subjects: &[Subject], role_ref: &RoleRef, binding_namespace: &str| {
            if applies_to(user, groups, subjects, binding_namespace).is_none() {
                return;
            }
            let Some(role) = self.granted(role_ref, binding_namespace) else {
                return;
            };
            if grants.roles.iter().any(|g| g.role.same(&role)) {
                return;
            }
            // A rule naming neither resources nor URLs allows nothing.
            let rules = role.rules();
            let positions = |keep: fn(&PolicyRule) -> bool| -> Box<[u32]> {
                (0..rules.len() as u32)
                    .filter(|&i| keep(&rules[i as usize]))
                    .collect()
            };
            let resource = positions(|r| !r.resources.is_empty());
            let non_resource = positions(|r| !r.non_resource_urls.is_empty());
            grants.roles.push(GrantedRole {
                role,
                resource,
                non_resource,
            });
        };
        self.cluster_subjects.any_candidate(user, groups, |b| {
            add(&b.subjects, &b.role_ref, "");
            false
        });
        if !namespace.is_empty() {
            if let Some(ns) = self.namespaces.get(namespace) {
                ns.subjects.any_candidate(user, groups, |b| {
                    add(&b.subjects, &b.role_ref, namespace);
                    false
                });
            }
        }
        grants
    }

    /// The role `role_ref` names, as [`PolicyIndex::role_ref_rules`] finds it.
    fn granted(&self, role_ref: &RoleRef, binding_namespace: &str) -> Option<Granted> {
        match role_ref.kind.as_str() {
            "Role" if binding_namespace.is_empty() => None,
            "Role" => self
                .namespaces
                .get(binding_namespace)?
                .roles
                .get(role_ref.name.as_str())
                .cloned()
                .map(Granted::Role),
            "ClusterRole" => self
                .cluster_roles
                .get(role_ref.name.as_str())
                .cloned()
                .map(Granted::ClusterRole),
            _ => None,
        }
    }

    /// `DefaultRuleResolver.RulesFor`: every rule that applies to the user in `namespace`,
    /// in visiting order (duplicates kept), and the resolution errors.
    pub fn rules_for(
        &self,
        user: &str,
        groups: &[String],
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<ResolveError>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit_rules_for(user, groups, namespace, |v| {
            match v {
                Visit::Rule(_, rule) => rules.push(rule.clone()),
                Visit::Error(e) => errors.push(e),
            }
            ControlFlow::Continue(())
        });
        (rules, errors)
    }

    /// `RBACAuthorizer.RulesFor` as a SelfSubjectRulesReview shows it: each rule with
    /// resources as a resource rule, each with non-resource URLs as a non-resource rule (a
    /// rule with both is in both lists), `evaluationError` the aggregate of the resolution
    /// errors.
    pub fn rules_review(&self, user: &str, groups: &[String], namespace: &str) -> RulesReview {
        let (rules, errors) = self.rules_for(user, groups, namespace);
        let mut review = RulesReview {
            resource_rules: Vec::new(),
            non_resource_rules: Vec::new(),
            incomplete: false,
            evaluation_error: String::new(),
        };
        for rule in rules {
            if !rule.resources.is_empty() {
                review.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.clone(),
                    resources: rule.resources.clone(),
                    resource_names: rule.resource_names.clone(),
                });
            }
            if !rule.non_resource_urls.is_empty() {
                review.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        let messages: Vec<String> = errors
            .iter()
            .map(|e| e.message(ErrorStyle::Lister))
            .collect();
        review.evaluation_error = gofmt::aggregate(&messages).unwrap_or_default();
        review
    }
}
