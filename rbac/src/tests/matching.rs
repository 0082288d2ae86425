//! `pkg/apis/rbac/v1/evaluation_helpers.go` matchers and `RuleAllows`
//! (`plugin/pkg/auth/authorizer/rbac/rbac.go`).

use super::{rule, strings, url_rule};
use crate::matching::*;
use crate::types::PolicyRule;

#[test]
fn verbs() {
    let cases: &[(&[&str], &str, bool)] = &[
        (&["*"], "get", true),
        (&["*"], "escalate", true),
        (&["get"], "get", true),
        (&["get", "list"], "list", true),
        (&["get"], "list", false),
        (&["get"], "GET", false),
        (&[], "get", false),
    ];
    for (verbs, verb, want) in cases {
        let r = rule(verbs, &[""], &["pods"]);
        assert_eq!(verb_matches(&r, verb), *want, "{verbs:?} {verb}");
    }
}

#[test]
fn api_groups() {
    let cases: &[(&[&str], &str, bool)] = &[
        (&["*"], "", true),
        (&["*"], "apps", true),
        (&[""], "", true),
        (&[""], "apps", false),
        (&["apps"], "", false),
        (&["apps", "batch"], "batch", true),
        (&[], "", false),
    ];
    for (groups, group, want) in cases {
        let r = rule(&["get"], groups, &["pods"]);
        assert_eq!(api_group_matches(&r, group), *want, "{groups:?} {group:?}");
    }
}

#[test]
fn resources_and_subresources() {
    // (rule resources, resource, subresource, matches)
    let cases: &[(&[&str], &str, &str, bool)] = &[
        (&["*"], "pods", "", true),
        (&["*"], "pods", "log", true),
        (&["pods"], "pods", "", true),
        (&["pods"], "pods", "log", false),
        (&["pods/log"], "pods", "log", true),
        (&["pods/log"], "pods", "", false),
        (&["pods/log"], "pods", "exec", false),
        // `pods/*` is no wildcard: only a subresource literally named `*`.
        (&["pods/*"], "pods", "log", false),
        (&["pods/*"], "pods", "*", true),
        (&["*/scale"], "deployments", "scale", true),
        (&["*/scale"], "replicasets", "scale", true),
        (&["*/scale"], "deployments", "", false),
        (&["*/scale"], "deployments", "status", false),
        (&["*/scale"], "deployments", "xscale", false),
        (&["*/scale"], "scale", "", false),
        (&["deployments"], "deployments", "scale", false),
        (&["services", "pods"], "pods", "", true),
        (&[], "pods", "", false),
    ];
    for (resources, resource, sub, want) in cases {
        let r = rule(&["get"], &[""], resources);
        let combined = if sub.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{sub}")
        };
        assert_eq!(
            resource_matches(&r, &combined, sub),
            *want,
            "{resources:?} {combined}"
        );
        assert_eq!(
            resource_matches_split(&r, resource, sub),
            *want,
            "split {resources:?} {combined}"
        );
    }
}

#[test]
fn resource_names() {
    let cases: &[(&[&str], &str, bool)] = &[
        (&[], "", true),
        (&[], "anything", true),
        (&["a"], "a", true),
        (&["a", "b"], "b", true),
        (&["a"], "b", false),
        // A named rule allows no unnamed request (list, create, deletecollection).
        (&["a"], "", false),
    ];
    for (names, name, want) in cases {
        let r = rule(&["get"], &[""], &["pods"]).with_names(names);
        assert_eq!(resource_name_matches(&r, name), *want, "{names:?} {name:?}");
    }
}

#[test]
fn non_resource_urls() {
    let cases: &[(&[&str], &str, bool)] = &[
        (&["/healthz"], "/healthz", true),
        (&["/healthz"], "/healthz/etcd", false),
        (&["/healthz"], "/healthz/", false),
        (&["/healthz/*"], "/healthz/etcd", true),
        (&["/apis/*"], "/apis/apps/v1", true),
        (&["/apis/*"], "/apis/", true),
        (&["/apis/*"], "/apis", false),
        (&["/apis/*"], "/api", false),
        // The star is a plain prefix match, not a path segment.
        (&["/healthz*"], "/healthzfoo", true),
        (&["/api**"], "/apifoo", true),
        (&["*"], "/anything/at/all", true),
        (&["*"], "", true),
        (&["/*"], "/", true),
        (&["/*"], "", false),
        (&["/version", "/api"], "/api", true),
        (&[], "/healthz", false),
    ];
    for (urls, path, want) in cases {
        let r = url_rule(&["get"], urls);
        assert_eq!(
            non_resource_url_matches(&r, path),
            *want,
            "{urls:?} {path:?}"
        );
    }
}

#[test]
fn rule_allows_resource_requests() {
    let groups = strings(&[]);
    let pods_get = Attributes::resource("u", &groups, "get", "", "pods", "ns").with_name("p1");
    let cases: &[(PolicyRule, Attributes<'_>, bool)] = &[
        (rule(&["get"], &[""], &["pods"]), pods_get, true),
        (rule(&["*"], &["*"], &["*"]), pods_get, true),
        (rule(&["get"], &["apps"], &["pods"]), pods_get, false),
        (rule(&["list"], &[""], &["pods"]), pods_get, false),
        (
            rule(&["get"], &[""], &["pods"]).with_names(&["p1"]),
            pods_get,
            true,
        ),
        (
            rule(&["get"], &[""], &["pods"]).with_names(&["p2"]),
            pods_get,
            false,
        ),
        (
            rule(&["get"], &[""], &["pods/log"]),
            pods_get.with_subresource("log"),
            true,
        ),
        (
            rule(&["get"], &[""], &["pods"]),
            pods_get.with_subresource("log"),
            false,
        ),
        (
            rule(&["update"], &["*"], &["*/scale"]),
            Attributes::resource("u", &groups, "update", "apps", "deployments", "ns")
                .with_subresource("scale"),
            true,
        ),
        // A non-resource rule never allows a resource request.
        (url_rule(&["*"], &["*"]), pods_get, false),
    ];
    for (r, attrs, want) in cases {
        assert_eq!(rule_allows(attrs, r), *want, "{r:?} {attrs:?}");
    }
}

#[test]
fn rule_allows_non_resource_requests() {
    let groups = strings(&[]);
    let healthz = Attributes::non_resource("u", &groups, "get", "/healthz");
    assert!(rule_allows(&healthz, &url_rule(&["get"], &["/healthz"])));
    assert!(!rule_allows(&healthz, &url_rule(&["post"], &["/healthz"])));
    assert!(rule_allows(&healthz, &url_rule(&["*"], &["*"])));
    // A resource rule, even `*` on everything, never allows a non-resource request.
    assert!(!rule_allows(&healthz, &rule(&["*"], &["*"], &["*"])));
    assert!(rules_allow(
        &healthz,
        &[
            rule(&["*"], &["*"], &["*"]),
            url_rule(&["get"], &["/healthz"])
        ]
    ));
    assert!(!rules_allow(&healthz, &[]));
}
