//! Privilege-escalation prevention of the RBAC registry: a user may write a Role or
//! ClusterRole only with rules it already holds (or the `escalate` verb on it), and a
//! binding only to a role whose rules it holds (or the `bind` verb on it); members of
//! `system:masters` skip both checks.
//!
//! Upstream: `Covers`/`BreakdownRule` (component-helpers `auth/rbac/validation`),
//! `CompactRules` (`pkg/registry/rbac/validation/policy_compact.go`), `CompactString`
//! (`pkg/apis/rbac/v1/evaluation_helpers.go`), `ConfirmNoEscalation`
//! (`pkg/registry/rbac/validation/rule.go`), `EscalationAllowed`,
//! `RoleEscalationAuthorized`, `BindingAuthorized` (`pkg/registry/rbac/escalation_check.go`)
//! and the four `policybased` storages that call them.

use std::collections::BTreeSet;
use std::fmt;

use crate::gofmt;
use crate::index::{ErrorStyle, PolicyIndex, ResolveError};
use crate::matching::Attributes;
use crate::types::{PolicyRule, RoleRef, ALL, GROUP};

/// The group whose members may write any RBAC object (`user.SystemPrivilegedGroup`).
pub const SYSTEM_MASTERS: &str = "system:masters";

/// `Covers`: whether `owner` covers every action of `servant`, and the actions it does not
/// (each servant rule broken down to one group, resource, verb and name).
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// `BreakdownRule`: one rule per (group, resource, verb[, name]) in that nesting order,
/// then one per (non-resource URL, verb). A rule without groups yields no resource rules.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let one = |names: Vec<String>| PolicyRule {
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    verbs: vec![verb.clone()],
                    resource_names: names,
                    non_resource_urls: Vec::new(),
                };
                if rule.resource_names.is_empty() {
                    out.push(one(Vec::new()));
                } else {
                    for name in &rule.resource_names {
                        out.push(one(vec![name.clone()]));
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule::non_resource(&[verb], &[url]));
        }
    }
    out
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

/// `resourceCoversAll`: `*`, every resource listed, or for each subresource `*/<sub>`.
fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        has(set, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

/// `nonResourceURLCovers`.
fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

/// `ruleCovers`: `owner` (any rule) covers `sub` (a broken-down rule).
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|path| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| non_resource_url_covers(o, path))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// `CompactRules`: rules with exactly one group, one resource, at most one name and no
/// URLs that differ only in verbs become one rule with the verbs appended in order
/// (duplicates kept); the others stay as they are. Upstream returns the merged rules after
/// the others in Go map order; here in order of first appearance (the escalation message
/// sorts them anyway).
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut compacted = Vec::with_capacity(rules.len());
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            compacted.push(rule.clone());
            continue;
        }
        let same = simple.iter_mut().find(|s| {
            s.api_groups == rule.api_groups
                && s.resources == rule.resources
                && s.resource_names == rule.resource_names
        });
        match same {
            Some(s) => s.verbs.extend(rule.verbs.iter().cloned()),
            None => simple.push(rule.clone()),
        }
    }
    compacted.extend(simple);
    compacted
}

/// `CompactString`: `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`, the
/// non-empty fields in the order APIGroups, Resources, NonResourceURLs, ResourceNames,
/// Verbs, each as Go's `%q` of a `[]string`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, list) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{label}:{}", gofmt::quote_list(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// `ConfirmNoEscalation`'s message when `missing` (the uncovered rules [`covers`] gave) is
/// not empty: the compacted rules' compact strings, sorted and each once, one per line;
/// `resolution_error`, the aggregate of the errors met resolving the user's own rules, is
/// appended as upstream prints a `[]error` of it.
pub fn escalation_message(
    user: &str,
    groups: &[String],
    missing: &[PolicyRule],
    resolution_error: Option<&str>,
) -> String {
    let descriptions: BTreeSet<String> =
        compact_rules(missing).iter().map(compact_string).collect();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        gofmt::quote(user),
        gofmt::quote_list(groups),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if let Some(e) = resolution_error {
        msg.push_str(&format!("; resolution errors: [{e}]"));
    }
    msg
}

/// `EscalationAllowed`: the user is in `system:masters`.
pub fn escalation_allowed(groups: &[String]) -> bool {
    groups.iter().any(|g| g == SYSTEM_MASTERS)
}

/// What a writer of an `aggregationRule` must hold (upstream's `fullAuthority`): `*` on
/// everything.
pub fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&[ALL], &[ALL], &[ALL]),
        PolicyRule::non_resource(&[ALL], &[ALL]),
    ]
}

/// A write to an RBAC object, as the escalation checks see it.
#[derive(Clone, Copy, Debug)]
pub enum Write<'a> {
    /// A Role's create or update. `request_name` is the name in the request path: empty
    /// for a create (POST to the collection), which upstream's `escalate` check then asks
    /// about with no name.
    Role {
        namespace: &'a str,
        name: &'a str,
        request_name: &'a str,
        rules: &'a [PolicyRule],
    },
    /// A ClusterRole's create or update; `aggregation` when the new object (or, on update,
    /// the old one) has an `aggregationRule` with selectors.
    ClusterRole {
        name: &'a str,
        request_name: &'a str,
        rules: &'a [PolicyRule],
        aggregation: bool,
    },
    /// A RoleBinding's create or update, in the request's namespace.
    RoleBinding {
        namespace: &'a str,
        name: &'a str,
        role_ref: &'a RoleRef,
    },
    ClusterRoleBinding {
        name: &'a str,
        role_ref: &'a RoleRef,
    },
}

/// Why a write was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteDenied {
    /// 403 Forbidden (`apierrors.NewForbidden`): [`WriteDenied::message`] is
    /// `<resource>.rbac.authorization.k8s.io "<name>" is forbidden: <cause>`.
    Forbidden {
        /// `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`.
        resource: &'static str,
        name: String,
        cause: String,
    },
    /// The binding's role could not be read; upstream returns the storage error as it is:
    /// 404 NotFound qualified by the binding's resource
    /// (`rolebindings.rbac.authorization.k8s.io "x" not found` for a missing role `x`), or
    /// for an unsupported `roleRef.kind` a plain error (500).
    RoleRef {
        /// `rolebindings` or `clusterrolebindings`.
        resource: &'static str,
        error: ResolveError,
    },
}

impl WriteDenied {
    pub fn message(&self) -> String {
        match self {
            WriteDenied::Forbidden {
                resource,
                name,
                cause,
            } => {
                if name.is_empty() {
                    format!("{resource}.{GROUP} is forbidden: {cause}")
                } else {
                    format!(
                        "{resource}.{GROUP} {} is forbidden: {cause}",
                        gofmt::quote(name)
                    )
                }
            }
            WriteDenied::RoleRef { resource, error } => {
                error.message(ErrorStyle::Registry(resource))
            }
        }
    }

    /// The HTTP status upstream answers with.
    pub fn code(&self) -> u16 {
        match self {
            WriteDenied::Forbidden { .. } => 403,
            WriteDenied::RoleRef {
                error: ResolveError::NotFound { .. },
                ..
            } => 404,
            WriteDenied::RoleRef {
                error: ResolveError::UnsupportedKind(_),
                ..
            } => 500,
        }
    }
}

impl fmt::Display for WriteDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl PolicyIndex {
    /// `ConfirmNoEscalation`: the user's rules in `namespace` (empty: cluster-wide) cover
    /// `rules`; otherwise [`escalation_message`], its resolution errors worded as the
    /// registry serving a write to `request_resource` words them ([`ErrorStyle::Registry`]).
    pub fn confirm_no_escalation(
        &self,
        user: &str,
        groups: &[String],
        namespace: &str,
        rules: &[PolicyRule],
        request_resource: &'static str,
    ) -> Result<(), String> {
        let (owner, errors) = self.rules_for(user, groups, namespace);
        let (ok, missing) = covers(&owner, rules);
        if ok {
            return Ok(());
        }
        let messages: Vec<String> = errors
            .iter()
            .map(|e| e.message(ErrorStyle::Registry(request_resource)))
            .collect();
        let resolution = gofmt::aggregate(&messages);
        Err(escalation_message(
            user,
            groups,
            &missing,
            resolution.as_deref(),
        ))
    }

    /// The policy-based storages' checks of `write` by the user, with this index as the
    /// authorizer of the `escalate` and `bind` verbs.
    pub fn check_write(
        &self,
        user: &str,
        groups: &[String],
        write: &Write<'_>,
    ) -> Result<(), WriteDenied> {
        self.check_write_with(user, groups, write, |attrs| self.authorize(attrs).allowed)
    }

    /// [`PolicyIndex::check_write`] with `authorize` deciding the `escalate` and `bind`
    /// checks (upstream asks the whole authorizer chain, not only RBAC).
    pub fn check_write_with(
        &self,
        user: &str,
        groups: &[String],
        write: &Write<'_>,
        authorize: impl Fn(&Attributes<'_>) -> bool,
    ) -> Result<(), WriteDenied> {
        if escalation_allowed(groups) {
            return Ok(());
        }
        let forbidden =
            |resource: &'static str, name: &str, cause: String| WriteDenied::Forbidden {
                resource,
                name: name.into(),
                cause,
            };
        match *write {
            Write::Role {
                namespace,
                name,
                request_name,
                rules,
            } => {
                let escalate =
                    Attributes::resource(user, groups, "escalate", GROUP, "roles", namespace)
                        .with_name(request_name);
                if authorize(&escalate) {
                    return Ok(());
                }
                self.confirm_no_escalation(user, groups, namespace, rules, "roles")
                    .map_err(|cause| forbidden("roles", name, cause))
            }
            Write::ClusterRole {
                name,
                request_name,
                rules,
                aggregation,
            } => {
                let escalate =
                    Attributes::resource(user, groups, "escalate", GROUP, "clusterroles", "")
                        .with_name(request_name);
                if authorize(&escalate) {
                    return Ok(());
                }
                self.confirm_no_escalation(user, groups, "", rules, "clusterroles")
                    .map_err(|cause| forbidden("clusterroles", name, cause))?;
                if aggregation
                    && self
                        .confirm_no_escalation(user, groups, "", &full_authority(), "clusterroles")
                        .is_err()
                {
                    return Err(forbidden(
                        "clusterroles",
                        name,
                        "must have cluster-admin privileges to use the aggregationRule".into(),
                    ));
                }
                Ok(())
            }
            Write::RoleBinding {
                namespace,
                name,
                role_ref,
            } => self.check_binding(
                user,
                groups,
                namespace,
                name,
                role_ref,
                "rolebindings",
                &authorize,
            ),
            Write::ClusterRoleBinding { name, role_ref } => self.check_binding(
                user,
                groups,
                "",
                name,
                role_ref,
                "clusterrolebindings",
                &authorize,
            ),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn check_binding(
        &self,
        user: &str,
        groups: &[String],
        namespace: &str,
        name: &str,
        role_ref: &RoleRef,
        resource: &'static str,
        authorize: &impl Fn(&Attributes<'_>) -> bool,
    ) -> Result<(), WriteDenied> {
        if binding_authorized(user, groups, role_ref, namespace, authorize) {
            return Ok(());
        }
        let rules = self
            .role_ref_rules(role_ref, namespace)
            .map_err(|error| WriteDenied::RoleRef { resource, error })?;
        self.confirm_no_escalation(user, groups, namespace, rules, resource)
            .map_err(|cause| WriteDenied::Forbidden {
                resource,
                name: name.into(),
                cause,
            })
    }
}

/// `BindingAuthorized`: `bind` on the referenced role (`roles` or `clusterroles` of the
/// roleRef's `apiGroup`, by name) in the binding's namespace (empty for a
/// ClusterRoleBinding). An unknown `roleRef.kind` is never authorized.
pub fn binding_authorized(
    user: &str,
    groups: &[String],
    role_ref: &RoleRef,
    binding_namespace: &str,
    authorize: impl Fn(&Attributes<'_>) -> bool,
) -> bool {
    let resource = match role_ref.kind.as_str() {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => return false,
    };
    let attrs = Attributes::resource(
        user,
        groups,
        "bind",
        &role_ref.api_group,
        resource,
        binding_namespace,
    )
    .with_name(&role_ref.name);
    authorize(&attrs)
}
