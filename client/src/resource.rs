//! Where a request goes and what it asks: resource paths (group, version, plural, namespace,
//! name, subresource), the query parameters of lists and watches, and patch bodies. Pure.

use crate::error::Error;
use serde_json::Value;

/// A resource type, optionally narrowed to a namespace, one object and a subresource:
/// `/api/v1/namespaces/ns/pods/p/status`, `/apis/apps/v1/deployments`, ...
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourcePath {
    /// API group; empty for the core group (`/api/v1`).
    pub group: String,
    pub version: String,
    /// Resource name in the URL: `pods`, `deployments`, `configmaps`.
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl ResourcePath {
    /// Every object of a resource type (in every namespace, for a namespaced type).
    pub fn new(group: &str, version: &str, plural: &str) -> ResourcePath {
        ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            namespace: None,
            name: None,
            subresource: None,
        }
    }

    /// Narrowed to namespace `ns`.
    pub fn in_namespace(mut self, ns: &str) -> ResourcePath {
        self.namespace = Some(ns.to_string());
        self
    }

    /// Narrowed to the object `name`.
    pub fn named(mut self, name: &str) -> ResourcePath {
        self.name = Some(name.to_string());
        self
    }

    /// The object's subresource `sub` (`status`, `scale`, `binding`...).
    pub fn subresource(mut self, sub: &str) -> ResourcePath {
        self.subresource = Some(sub.to_string());
        self
    }

    /// The collection this path is in (without name and subresource).
    pub fn collection(&self) -> ResourcePath {
        ResourcePath {
            name: None,
            subresource: None,
            ..self.clone()
        }
    }

    /// The URL path. Each segment must be printable ASCII without `/`, `%`, `?` or `#`, and
    /// not `.` or `..` (what the API server accepts as a name in a path); a subresource needs
    /// a name.
    pub fn path(&self) -> Result<String, Error> {
        let mut out = String::new();
        if self.group.is_empty() {
            out.push_str("/api");
        } else {
            push_segment(&mut out, "group", &self.group)?;
            out.insert_str(0, "/apis");
        }
        push_segment(&mut out, "version", &self.version)?;
        if let Some(ns) = &self.namespace {
            out.push_str("/namespaces");
            push_segment(&mut out, "namespace", ns)?;
        }
        push_segment(&mut out, "resource", &self.plural)?;
        if let Some(name) = &self.name {
            push_segment(&mut out, "name", name)?;
        }
        if let Some(sub) = &self.subresource {
            if self.name.is_none() {
                return Err(Error::Request(format!(
                    "subresource {sub:?} without a name"
                )));
            }
            push_segment(&mut out, "subresource", sub)?;
        }
        Ok(out)
    }
}

fn push_segment(out: &mut String, what: &str, s: &str) -> Result<(), Error> {
    let bad = s.is_empty()
        || s == "."
        || s == ".."
        || s.bytes()
            .any(|b| !b.is_ascii_graphic() || matches!(b, b'/' | b'%' | b'?' | b'#'));
    if bad {
        return Err(Error::Request(format!(
            "{what} {s:?} cannot be a path segment"
        )));
    }
    out.push('/');
    out.push_str(s);
    Ok(())
}

/// Percent-encodes a query value: everything but RFC 3986's unreserved characters (selectors
/// hold `=`, `,`, `!` and spaces; continue tokens are base64 with `+`, `/`, `=`).
pub fn encode_query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Builds `?k=v&...` from the parameters that are set.
#[derive(Default)]
struct Query(String);

impl Query {
    fn put(&mut self, key: &str, value: Option<&str>) {
        let Some(v) = value else { return };
        self.0.push(if self.0.is_empty() { '?' } else { '&' });
        self.0.push_str(key);
        self.0.push('=');
        self.0.push_str(&encode_query_value(v));
    }
}

/// Parameters of a list (`GET` of a collection).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// Most items in this page; the server then returns a continue token if more remain.
    pub limit: Option<u64>,
    /// The token of the previous page.
    pub continue_token: Option<String>,
    /// Unset: the latest state (a consistent read). See `resource_version_match`.
    pub resource_version: Option<String>,
    /// `NotOlderThan` or `Exact`, with `resource_version`.
    pub resource_version_match: Option<String>,
    pub timeout_seconds: Option<u32>,
}

impl ListParams {
    /// The query string (`""` when nothing is set).
    pub fn query(&self) -> String {
        let mut q = Query::default();
        q.put("labelSelector", self.label_selector.as_deref());
        q.put("fieldSelector", self.field_selector.as_deref());
        q.put("limit", self.limit.map(|l| l.to_string()).as_deref());
        q.put("continue", self.continue_token.as_deref());
        q.put("resourceVersion", self.resource_version.as_deref());
        q.put(
            "resourceVersionMatch",
            self.resource_version_match.as_deref(),
        );
        q.put(
            "timeoutSeconds",
            self.timeout_seconds.map(|t| t.to_string()).as_deref(),
        );
        q.0
    }
}

/// Parameters of a watch (`GET` of a collection with `watch=1`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// Changes after this version; unset: synthetic `ADDED` events for the current state
    /// first, then changes.
    pub resource_version: Option<String>,
    /// Ask for `BOOKMARK` events (the server's progress, carrying only a resourceVersion).
    pub allow_bookmarks: bool,
    /// The server ends the watch after this long (unset: its own choice, 30-60 minutes for
    /// keel and kube-apiserver).
    pub timeout_seconds: Option<u32>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

impl WatchParams {
    /// The query string, starting `?watch=1`.
    pub fn query(&self) -> String {
        let mut q = Query::default();
        q.put("watch", Some("1"));
        q.put("resourceVersion", self.resource_version.as_deref());
        q.put(
            "allowWatchBookmarks",
            self.allow_bookmarks.then_some("true"),
        );
        q.put(
            "timeoutSeconds",
            self.timeout_seconds.map(|t| t.to_string()).as_deref(),
        );
        q.put("labelSelector", self.label_selector.as_deref());
        q.put("fieldSelector", self.field_selector.as_deref());
        q.0
    }
}

/// A patch, by kind: the body and its content type.
#[derive(Clone, Debug, PartialEq)]
pub enum Patch {
    /// JSON merge patch (RFC 7386): `application/merge-patch+json`.
    Merge(Value),
    /// Kubernetes strategic merge patch (lists merged by their merge keys).
    Strategic(Value),
    /// JSON patch (RFC 6902): an array of operations.
    Json(Value),
}

impl Patch {
    pub fn content_type(&self) -> &'static str {
        match self {
            Patch::Merge(_) => crate::MERGE_PATCH,
            Patch::Strategic(_) => crate::STRATEGIC_MERGE_PATCH,
            Patch::Json(_) => crate::JSON_PATCH,
        }
    }

    pub fn body(&self) -> &Value {
        match self {
            Patch::Merge(v) | Patch::Strategic(v) | Patch::Json(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render() {
        let cm = ResourcePath::new("", "v1", "configmaps");
        let deploy = ResourcePath::new("apps", "v1", "deployments");
        let cases = [
            (cm.clone(), "/api/v1/configmaps"),
            (
                cm.clone().in_namespace("ns"),
                "/api/v1/namespaces/ns/configmaps",
            ),
            (
                cm.clone().in_namespace("ns").named("a.b-c"),
                "/api/v1/namespaces/ns/configmaps/a.b-c",
            ),
            (deploy.clone(), "/apis/apps/v1/deployments"),
            (
                deploy
                    .clone()
                    .in_namespace("x")
                    .named("web")
                    .subresource("scale"),
                "/apis/apps/v1/namespaces/x/deployments/web/scale",
            ),
            (
                ResourcePath::new("rbac.authorization.k8s.io", "v1", "clusterroles")
                    .named("system:controller:x"),
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:x",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(p.path().unwrap(), want);
        }
        let named = cm
            .clone()
            .in_namespace("ns")
            .named("a")
            .subresource("status");
        assert_eq!(named.collection(), cm.clone().in_namespace("ns"));
        for bad in [
            cm.clone().named(""),
            cm.clone().named(".."),
            cm.clone().named("a/b"),
            cm.clone().named("a%2Fb"),
            cm.clone().named("a b"),
            cm.clone().named("a?watch=1"),
            cm.clone().named("é"),
            cm.clone().in_namespace("."),
            cm.clone().subresource("status"),
            ResourcePath::new("", "", "pods"),
        ] {
            assert!(
                matches!(bad.path(), Err(Error::Request(_))),
                "{bad:?}: {:?}",
                bad.path()
            );
        }
    }

    #[test]
    fn queries_render() {
        assert_eq!(ListParams::default().query(), "");
        let l = ListParams {
            label_selector: Some("app in (a,b),!x".into()),
            field_selector: Some("metadata.name=n".into()),
            limit: Some(500),
            continue_token: Some("ab+/c==".into()),
            resource_version: Some("0".into()),
            resource_version_match: Some("NotOlderThan".into()),
            timeout_seconds: Some(5),
        };
        assert_eq!(
            l.query(),
            "?labelSelector=app%20in%20%28a%2Cb%29%2C%21x&fieldSelector=metadata.name%3Dn\
             &limit=500&continue=ab%2B%2Fc%3D%3D&resourceVersion=0\
             &resourceVersionMatch=NotOlderThan&timeoutSeconds=5"
        );
        assert_eq!(WatchParams::default().query(), "?watch=1");
        let w = WatchParams {
            resource_version: Some("42".into()),
            allow_bookmarks: true,
            timeout_seconds: Some(300),
            label_selector: Some("a=b".into()),
            field_selector: None,
        };
        assert_eq!(
            w.query(),
            "?watch=1&resourceVersion=42&allowWatchBookmarks=true&timeoutSeconds=300&labelSelector=a%3Db"
        );
        assert_eq!(encode_query_value("plain-_.~9"), "plain-_.~9");
    }

    #[test]
    fn patches_carry_their_content_type() {
        let v = serde_json::json!({"a": 1});
        assert_eq!(
            Patch::Merge(v.clone()).content_type(),
            "application/merge-patch+json"
        );
        assert_eq!(
            Patch::Strategic(v.clone()).content_type(),
            "application/strategic-merge-patch+json"
        );
        assert_eq!(
            Patch::Json(v.clone()).content_type(),
            "application/json-patch+json"
        );
        assert_eq!(Patch::Json(v.clone()).body(), &v);
    }
}
