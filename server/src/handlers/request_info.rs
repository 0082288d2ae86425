//! Turns a request path and method into what is being asked (as upstream's RequestInfo).

/// A resource request: `/api/v1/namespaces/ns/pods/name/status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRequest {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    /// Empty for cluster-wide paths.
    pub namespace: String,
    pub resource: String,
    /// Empty on collection paths.
    pub name: String,
    pub subresource: String,
    /// get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: &'static str,
}

/// What a path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/api`, `/api/v1`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`.
    Discovery {
        core: bool,
        group: Option<String>,
        version: Option<String>,
    },
    Resource(ResourceRequest),
    /// Anything else (`/version`, `/healthz`, `/openapi/v2`...).
    NonResource,
}

/// Classifies a path. `watch` is the `watch` query flag.
pub fn classify(method: &str, path: &str, watch: bool) -> Target {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.split('/').skip(1).collect();
    let (core, rest) = match parts.first() {
        Some(&"api") => (true, &parts[1..]),
        Some(&"apis") => (false, &parts[1..]),
        _ => return Target::NonResource,
    };
    let (group, rest) = if core {
        (String::new(), rest)
    } else {
        match rest.split_first() {
            None => {
                return Target::Discovery {
                    core,
                    group: None,
                    version: None,
                }
            }
            Some((g, r)) => (g.to_string(), r),
        }
    };
    let (version, rest) = match rest.split_first() {
        None => {
            return Target::Discovery {
                core,
                group: (!core).then_some(group),
                version: None,
            }
        }
        Some((v, r)) => (v.to_string(), r),
    };
    if rest.is_empty() {
        return Target::Discovery {
            core,
            group: (!core).then_some(group),
            version: Some(version),
        };
    }
    let mut rr = ResourceRequest {
        group,
        version,
        ..Default::default()
    };
    let mut rest = rest;
    // `namespaces/<ns>/<resource>...`; `namespaces/<name>` alone is the namespace itself.
    // (`namespaces/<name>/status` and `/finalize` are the namespace's own subresources.)
    if rest.len() >= 3 && rest[0] == "namespaces" && !matches!(rest[2], "status" | "finalize") {
        rr.namespace = rest[1].to_string();
        rest = &rest[2..];
    }
    rr.resource = rest[0].to_string();
    if let Some(n) = rest.get(1) {
        rr.name = n.to_string();
    }
    if rest.len() >= 3 {
        rr.subresource = rest[2..].join("/");
    }
    if rr.resource == "namespaces" && rr.namespace.is_empty() && !rr.name.is_empty() {
        // A namespace is its own namespace for authorization purposes.
        rr.namespace = rr.name.clone();
    }
    rr.verb = verb(method, !rr.name.is_empty(), watch);
    Target::Resource(rr)
}

fn verb(method: &str, has_name: bool, watch: bool) -> &'static str {
    match (method, has_name) {
        ("GET" | "HEAD", _) if watch => "watch",
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(method: &str, path: &str, watch: bool) -> ResourceRequest {
        match classify(method, path, watch) {
            Target::Resource(r) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn resource_paths() {
        let r = res("GET", "/api/v1/namespaces/ns1/pods/p1/status", false);
        assert_eq!(
            (
                r.group.as_str(),
                r.version.as_str(),
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str(),
                r.subresource.as_str(),
                r.verb
            ),
            ("", "v1", "ns1", "pods", "p1", "status", "get")
        );
        let r = res("GET", "/apis/apps/v1/deployments", true);
        assert_eq!(
            (r.group.as_str(), r.resource.as_str(), r.verb),
            ("apps", "deployments", "watch")
        );
        let r = res("GET", "/api/v1/namespaces/kube-system", false);
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.namespace.as_str()),
            ("namespaces", "kube-system", "kube-system")
        );
        let r = res("DELETE", "/api/v1/namespaces/a/configmaps", false);
        assert_eq!(r.verb, "deletecollection");
        let r = res("PUT", "/api/v1/namespaces/a/finalize", false);
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.subresource.as_str()),
            ("namespaces", "a", "finalize")
        );
        let r = res("POST", "/api/v1/namespaces/a/pods", false);
        assert_eq!(
            (r.namespace.as_str(), r.resource.as_str(), r.verb),
            ("a", "pods", "create")
        );
    }

    #[test]
    fn discovery_and_other_paths() {
        assert_eq!(
            classify("GET", "/apis/apps/v1", false),
            Target::Discovery {
                core: false,
                group: Some("apps".into()),
                version: Some("v1".into())
            }
        );
        assert_eq!(
            classify("GET", "/api", false),
            Target::Discovery {
                core: true,
                group: None,
                version: None
            }
        );
        assert_eq!(classify("GET", "/version", false), Target::NonResource);
        assert_eq!(classify("GET", "/openapi/v2", false), Target::NonResource);
    }
}
