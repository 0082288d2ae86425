//! Whether one rule allows one request: upstream's `RuleAllows` and the matchers of
//! `pkg/apis/rbac/v1/evaluation_helpers.go`.

use crate::types::{PolicyRule, ALL};

/// What is being asked, as upstream's `authorizer.Attributes` (for RBAC's purposes).
#[derive(Clone, Copy, Debug, Default)]
pub struct Attributes<'a> {
    /// The authenticated user name (`system:serviceaccount:<ns>:<name>` for a service
    /// account).
    pub user: &'a str,
    /// The user's groups as authentication reported them (`system:authenticated`,
    /// `system:serviceaccounts`, `system:serviceaccounts:<ns>` are added there, not here).
    pub groups: &'a [String],
    pub verb: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    /// Empty for a cluster-scoped request (and for every non-resource request).
    pub namespace: &'a str,
    pub name: &'a str,
    /// `Some(path)` for a non-resource request (`/healthz`, `/version`...): the resource
    /// fields are then not looked at.
    pub path: Option<&'a str>,
}

impl<'a> Attributes<'a> {
    /// A resource request.
    pub fn resource(
        user: &'a str,
        groups: &'a [String],
        verb: &'a str,
        api_group: &'a str,
        resource: &'a str,
        namespace: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            groups,
            verb,
            api_group,
            resource,
            namespace,
            ..Attributes::default()
        }
    }

    /// A non-resource request.
    pub fn non_resource(
        user: &'a str,
        groups: &'a [String],
        verb: &'a str,
        path: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            groups,
            verb,
            path: Some(path),
            ..Attributes::default()
        }
    }

    pub fn with_subresource(mut self, subresource: &'a str) -> Attributes<'a> {
        self.subresource = subresource;
        self
    }

    pub fn with_name(mut self, name: &'a str) -> Attributes<'a> {
        self.name = name;
        self
    }

    pub fn is_resource_request(&self) -> bool {
        self.path.is_none()
    }
}

/// `VerbMatches`: `*` or the verb itself.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `APIGroupMatches`: `*` or the group itself (`""` is the core group).
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/<subresource>` for a
/// subresource request. `pods/*` is not a wildcard (it matches only a subresource named
/// `*`), as upstream.
pub fn resource_matches(rule: &PolicyRule, combined_resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == ALL
            || r == combined_resource
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// [`resource_matches`] of `resource/subresource` (or `resource` alone when `subresource` is
/// empty) without building the combined string: a rule entry equals the combined name when
/// it is `resource`, `/`, `subresource` end to end.
pub fn resource_matches_split(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    if subresource.is_empty() {
        return resource_matches(rule, resource, "");
    }
    rule.resources.iter().any(|r| {
        r == ALL
            || (r.len() == resource.len() + 1 + subresource.len()
                && r.starts_with(resource)
                && r.as_bytes()[resource.len()] == b'/'
                && r.ends_with(subresource))
            || (r.len() == subresource.len() + 2 && r.starts_with("*/") && r.ends_with(subresource))
    })
}

/// `ResourceNameMatches`: no names means every name (and unnamed requests: list, create);
/// otherwise the request's name must be listed.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// `NonResourceURLMatches`: `*`, the exact path, or a prefix when the rule's URL ends in
/// `*` (`/apis/*` matches `/apis/` and everything under it, not `/apis`).
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == ALL || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
    })
}

/// `RuleAllows`.
pub fn rule_allows(attrs: &Attributes<'_>, rule: &PolicyRule) -> bool {
    let Some(path) = attrs.path else {
        if !verb_matches(rule, attrs.verb) || !api_group_matches(rule, attrs.api_group) {
            return false;
        }
        return resource_matches_split(rule, attrs.resource, attrs.subresource)
            && resource_name_matches(rule, attrs.name);
    };
    verb_matches(rule, attrs.verb) && non_resource_url_matches(rule, path)
}

/// `RulesAllow`: any of `rules`.
pub fn rules_allow(attrs: &Attributes<'_>, rules: &[PolicyRule]) -> bool {
    rules.iter().any(|r| rule_allows(attrs, r))
}
