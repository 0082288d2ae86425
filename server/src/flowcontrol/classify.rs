//! Classification: which FlowSchema a request matches (the first by `matchingPrecedence`,
//! then name, whose priority level exists and one of whose rules matches), and its flow.
//!
//! A rule matches when one of its subjects matches the user and one of its resource rules
//! (for a resource request) or non-resource rules (otherwise) matches the request, as
//! upstream's `matchesPolicyRule`: `*` matches any verb, group, resource, namespace or URL;
//! `resources` entries name `resource` or `resource/subresource`; a request without a
//! namespace needs `clusterScope: true`; a non-resource URL pattern ending in `/*` matches
//! the paths under its prefix. Every authenticated user is in `system:authenticated`, every
//! other one in `system:unauthenticated`.

use super::config::{Distinguisher, NonResourceRule, ResourceRule, Rule, Schema, Subject};

/// What classification looks at.
#[derive(Clone, Debug)]
pub struct Digest<'a> {
    /// Empty for an unauthenticated request (`system:anonymous`).
    pub user: &'a str,
    pub groups: &'a [String],
    pub authenticated: bool,
    /// The API verb for a resource request (`list`, `watch`...); the lower-case HTTP method
    /// otherwise.
    pub verb: &'a str,
    pub resource: Option<ResourceAttrs<'a>>,
    pub path: &'a str,
}

#[derive(Clone, Copy, Debug)]
pub struct ResourceAttrs<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
}

fn any_or(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

fn subject_matches(s: &Subject, d: &Digest<'_>) -> bool {
    let user = if d.authenticated {
        d.user
    } else {
        "system:anonymous"
    };
    match s {
        Subject::User(name) => name == "*" || name == user,
        Subject::Group(name) => {
            name == "*"
                || d.groups.iter().any(|g| g == name)
                || (d.authenticated && name == "system:authenticated")
                || (!d.authenticated && name == "system:unauthenticated")
        }
        Subject::ServiceAccount { namespace, name } => {
            let Some(rest) = user.strip_prefix("system:serviceaccount:") else {
                return false;
            };
            let Some((ns, sa)) = rest.split_once(':') else {
                return false;
            };
            ns == namespace && (name == "*" || name == sa)
        }
    }
}

fn resource_rule_matches(r: &ResourceRule, verb: &str, a: &ResourceAttrs<'_>) -> bool {
    if !any_or(&r.verbs, verb) || !any_or(&r.api_groups, a.group) {
        return false;
    }
    let resource_ok = r.resources.iter().any(|x| {
        x == "*"
            || (a.subresource.is_empty() && x == a.resource)
            || (!a.subresource.is_empty() && x.split_once('/') == Some((a.resource, a.subresource)))
    });
    if !resource_ok {
        return false;
    }
    if a.namespace.is_empty() {
        r.cluster_scope
    } else {
        any_or(&r.namespaces, a.namespace)
    }
}

fn url_matches(pattern: &str, path: &str) -> bool {
    if pattern == "*" || pattern == path {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('/') => path.starts_with(prefix),
        _ => false,
    }
}

fn non_resource_rule_matches(r: &NonResourceRule, verb: &str, path: &str) -> bool {
    any_or(&r.verbs, verb) && r.urls.iter().any(|u| url_matches(u, path))
}

/// Whether one of `rule`'s subjects is the request's user or one of its groups: what depends
/// on who asks alone.
pub fn subjects_match(rule: &Rule, d: &Digest<'_>) -> bool {
    rule.subjects.iter().any(|s| subject_matches(s, d))
}

/// Whether one of `rule`'s resource rules (for a resource request) or non-resource rules
/// (otherwise) matches what the request asks.
pub fn request_matches(rule: &Rule, d: &Digest<'_>) -> bool {
    match &d.resource {
        Some(a) => rule
            .resource_rules
            .iter()
            .any(|r| resource_rule_matches(r, d.verb, a)),
        None => rule
            .non_resource_rules
            .iter()
            .any(|r| non_resource_rule_matches(r, d.verb, d.path)),
    }
}

/// Sorts schemas in matching order: precedence, then name.
pub fn sort_schemas(schemas: &mut [Schema]) {
    schemas.sort_by(|a, b| {
        a.matching_precedence
            .cmp(&b.matching_precedence)
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// The rules of `schemas` (in matching order) whose subjects match the user of `d`, as
/// (schema index, rule index) in that order: the part of classification that depends on the
/// user alone, worked out once per user and configuration (most users match few schemas'
/// subjects: a service account's GET compared its groups with every subject of ten schemas
/// before its own, 1,500 instructions).
pub fn user_rules(schemas: &[Schema], d: &Digest<'_>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (si, s) in schemas.iter().enumerate() {
        for (ri, r) in s.rules.iter().enumerate() {
            if subjects_match(r, d) {
                out.push((si, ri));
            }
        }
    }
    out
}

/// The index of the first schema (of `schemas`, in matching order) whose level exists
/// (`level_exists` is asked by schema index) and one of whose rules matches the request:
/// among `user_rules`, what [`user_rules`] gave for the request's user.
pub fn classify(
    schemas: &[Schema],
    level_exists: impl Fn(usize) -> bool,
    user_rules: &[(usize, usize)],
    d: &Digest<'_>,
) -> Option<usize> {
    user_rules
        .iter()
        .find(|&&(si, ri)| level_exists(si) && request_matches(&schemas[si].rules[ri], d))
        .map(|&(si, _)| si)
}

/// The flow distinguisher of a request under `schema`.
pub fn distinguisher<'a>(schema: &Schema, d: &Digest<'a>) -> &'a str {
    match schema.distinguisher {
        Distinguisher::None => "",
        Distinguisher::ByUser => {
            if d.authenticated {
                d.user
            } else {
                "system:anonymous"
            }
        }
        Distinguisher::ByNamespace => d.resource.map_or("", |a| a.namespace),
    }
}

/// The hash a flow is dealt its queues by: of the schema's name and the distinguisher
/// (each with its length, so `("a", "b")` and `("ab", "")` differ), with a fixed seed, so
/// every core deals a flow the same hand. (foldhash, not FNV-1a byte by byte: a service
/// account's flow, ~55 bytes, cost 250 instructions a request that way.)
pub fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    use std::hash::BuildHasher;
    const SEED: u64 = 0x6b65_656c_5f61_7066;
    foldhash::fast::FixedState::with_seed(SEED).hash_one((schema, distinguisher))
}

#[cfg(test)]
mod tests {
    use super::super::bootstrap;
    use super::super::config::parse_schema;
    use super::*;

    /// Classification by its definition: the first schema whose level exists with a rule
    /// that matches both who asks and what is asked.
    fn reference(
        schemas: &[Schema],
        level_exists: impl Fn(usize) -> bool,
        d: &Digest<'_>,
    ) -> Option<usize> {
        schemas.iter().enumerate().position(|(i, s)| {
            level_exists(i)
                && s.rules
                    .iter()
                    .any(|r| subjects_match(r, d) && request_matches(r, d))
        })
    }

    /// Classification as the server does it (the user's rules, then the request), checked
    /// against the definition.
    fn classified(
        schemas: &[Schema],
        level_exists: impl Fn(usize) -> bool + Copy,
        d: &Digest<'_>,
    ) -> Option<usize> {
        let got = classify(schemas, level_exists, &user_rules(schemas, d), d);
        assert_eq!(got, reference(schemas, level_exists, d), "{d:?}");
        got
    }

    fn schemas() -> Vec<Schema> {
        let mut s: Vec<Schema> = bootstrap::flow_schemas()
            .iter()
            .map(|v| parse_schema(v).unwrap())
            .collect();
        sort_schemas(&mut s);
        s
    }

    struct Case {
        user: &'static str,
        groups: &'static [&'static str],
        verb: &'static str,
        /// (group, resource, subresource, namespace)
        resource: Option<(&'static str, &'static str, &'static str, &'static str)>,
        path: &'static str,
        schema: &'static str,
        flow: &'static str,
    }

    fn run(c: &Case, schemas: &[Schema]) -> (String, String) {
        let groups: Vec<String> = c.groups.iter().map(|g| g.to_string()).collect();
        let d = Digest {
            user: c.user,
            groups: &groups,
            authenticated: !c.user.is_empty(),
            verb: c.verb,
            resource: c.resource.map(|(g, r, s, n)| ResourceAttrs {
                group: g,
                resource: r,
                subresource: s,
                namespace: n,
            }),
            path: c.path,
        };
        let i = classified(schemas, |_| true, &d).expect("catch-all matches everything");
        (
            schemas[i].name.clone(),
            distinguisher(&schemas[i], &d).to_string(),
        )
    }

    /// The bootstrap schemas route requests as upstream's do.
    #[test]
    fn bootstrap_classification_table() {
        let s = schemas();
        let cases = [
            Case {
                user: "admin",
                groups: &["system:masters"],
                verb: "list",
                resource: Some(("", "pods", "", "default")),
                path: "/api/v1/namespaces/default/pods",
                schema: "exempt",
                flow: "",
            },
            Case {
                user: "",
                groups: &[],
                verb: "get",
                resource: None,
                path: "/readyz",
                schema: "probes",
                flow: "",
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "get",
                resource: None,
                path: "/livez",
                schema: "probes",
                flow: "",
            },
            // Sub-paths of probes are not in the probes schema (keel exempts them anyway).
            Case {
                user: "alice",
                groups: &[],
                verb: "get",
                resource: None,
                path: "/readyz/ping",
                schema: "global-default",
                flow: "alice",
            },
            Case {
                user: "alice",
                groups: &[],
                verb: "list",
                resource: Some(("", "configmaps", "", "default")),
                path: "",
                schema: "global-default",
                flow: "alice",
            },
            Case {
                user: "",
                groups: &[],
                verb: "get",
                resource: None,
                path: "/version",
                schema: "global-default",
                flow: "system:anonymous",
            },
            Case {
                user: "system:node:n1",
                groups: &["system:nodes"],
                verb: "update",
                resource: Some(("", "nodes", "status", "")),
                path: "",
                schema: "system-node-high",
                flow: "system:node:n1",
            },
            Case {
                user: "system:node:n1",
                groups: &["system:nodes"],
                verb: "update",
                resource: Some(("coordination.k8s.io", "leases", "", "kube-node-lease")),
                path: "",
                schema: "system-node-high",
                flow: "system:node:n1",
            },
            Case {
                user: "system:node:n1",
                groups: &["system:nodes"],
                verb: "get",
                resource: Some(("", "pods", "", "default")),
                path: "",
                schema: "system-nodes",
                flow: "system:node:n1",
            },
            Case {
                user: "system:kube-controller-manager",
                groups: &[],
                verb: "update",
                resource: Some(("coordination.k8s.io", "leases", "", "kube-system")),
                path: "",
                schema: "system-leader-election",
                flow: "system:kube-controller-manager",
            },
            Case {
                user: "system:kube-controller-manager",
                groups: &[],
                verb: "update",
                resource: Some(("", "endpoints", "", "default")),
                path: "",
                schema: "endpoint-controller",
                flow: "system:kube-controller-manager",
            },
            Case {
                user: "system:kube-controller-manager",
                groups: &[],
                verb: "list",
                resource: Some(("apps", "deployments", "", "web")),
                path: "",
                schema: "kube-controller-manager",
                flow: "web",
            },
            Case {
                user: "system:kube-scheduler",
                groups: &[],
                verb: "create",
                resource: Some(("", "pods", "binding", "web")),
                path: "",
                schema: "kube-scheduler",
                flow: "web",
            },
            Case {
                user: "system:serviceaccount:kube-system:foo",
                groups: &["system:serviceaccounts"],
                verb: "get",
                resource: Some(("", "configmaps", "", "team")),
                path: "",
                schema: "workload-leader-election",
                flow: "system:serviceaccount:kube-system:foo",
            },
            Case {
                user: "system:serviceaccount:kube-system:foo",
                groups: &["system:serviceaccounts"],
                verb: "list",
                resource: Some(("", "pods", "", "team")),
                path: "",
                schema: "kube-system-service-accounts",
                flow: "team",
            },
            Case {
                user: "system:serviceaccount:team:bot",
                groups: &["system:serviceaccounts"],
                verb: "list",
                resource: Some(("", "pods", "", "")),
                path: "",
                schema: "service-accounts",
                flow: "system:serviceaccount:team:bot",
            },
        ];
        for c in &cases {
            let (schema, flow) = run(c, &s);
            assert_eq!(
                (schema.as_str(), flow.as_str()),
                (c.schema, c.flow),
                "{} {} {:?} {}",
                c.user,
                c.verb,
                c.resource,
                c.path
            );
        }
    }

    /// A schema whose level does not exist is skipped (dangling); catch-all is the last
    /// resort.
    #[test]
    fn dangling_schemas_are_skipped() {
        let s = schemas();
        let groups = vec![];
        let d = Digest {
            user: "alice",
            groups: &groups,
            authenticated: true,
            verb: "get",
            resource: None,
            path: "/version",
        };
        let i = classified(&s, |i| s[i].level != "global-default", &d).unwrap();
        assert_eq!(s[i].name, "catch-all");
    }

    #[test]
    fn rule_details() {
        let r = ResourceRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["pods/log".into()],
            cluster_scope: false,
            namespaces: vec!["a".into()],
        };
        let a = |sub, ns| ResourceAttrs {
            group: "",
            resource: "pods",
            subresource: sub,
            namespace: ns,
        };
        assert!(resource_rule_matches(&r, "get", &a("log", "a")));
        assert!(!resource_rule_matches(&r, "get", &a("", "a")));
        assert!(!resource_rule_matches(&r, "get", &a("log", "b")));
        assert!(!resource_rule_matches(&r, "list", &a("log", "a")));
        assert!(!resource_rule_matches(&r, "get", &a("log", "")));
        assert!(url_matches("/healthz/*", "/healthz/etcd"));
        assert!(!url_matches("/healthz/*", "/healthzx"));
        assert!(url_matches("*", "/anything"));
        assert!(!url_matches("/api*", "/apis"));
        let sa = Subject::ServiceAccount {
            namespace: "ns".into(),
            name: "*".into(),
        };
        let d = |user| Digest {
            user,
            groups: &[],
            authenticated: true,
            verb: "get",
            resource: None,
            path: "/",
        };
        assert!(subject_matches(&sa, &d("system:serviceaccount:ns:x")));
        assert!(!subject_matches(&sa, &d("system:serviceaccount:other:x")));
        assert!(!subject_matches(&sa, &d("ns:x")));
    }

    #[test]
    fn flows_hash_apart() {
        assert_ne!(flow_hash("a", "b"), flow_hash("ab", ""));
        assert_ne!(flow_hash("fs", "alice"), flow_hash("fs", "bob"));
        assert_eq!(flow_hash("fs", "alice"), flow_hash("fs", "alice"));
    }
}
