//! The API server: request routing, authentication and authorization, and the non-resource
//! endpoints (discovery, OpenAPI, version, health, metrics).

use crate::alloc::Allocators;
use crate::auth::{self, Attributes, Authorizer, TokenFile, User};
use crate::call::{Call, Query};
use crate::metrics::{Metrics, RequestLabels};
use crate::request_info::{self, ResourceRequest, Target};
use crate::respond::{self, JSON};
use crate::store::{Location, Storage};
use crate::{health, registry, reviews, subresources, watch};
use keel_api::status::ApiError;
use keel_catalog::{Catalog, ResourceInfo};
use keel_engine::Store;
use keel_http::{Request, Response};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The server's shared state; one per process, used from every core.
pub struct App {
    pub storage: Storage,
    pub catalog: &'static Catalog,
    pub tokens: TokenFile,
    pub authorizer: Box<dyn Authorizer>,
    pub always_allow: Vec<String>,
    pub alloc: Allocators,
    pub metrics: Metrics,
    pub min_request_timeout: u64,
    /// How often idle watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: std::time::Duration,
    pub ready: AtomicBool,
    pub started: Instant,
    descs: std::sync::OnceLock<Vec<keel_schema::ResourceDesc>>,
}

/// What `App::new` needs.
pub struct AppParts {
    pub storage: Storage,
    pub catalog: &'static Catalog,
    pub tokens: TokenFile,
    pub authorizer: Box<dyn Authorizer>,
    pub always_allow: Vec<String>,
    pub alloc: Allocators,
    pub min_request_timeout: u64,
    pub bookmark_interval: std::time::Duration,
}

impl App {
    pub fn new(p: AppParts) -> App {
        App {
            storage: p.storage,
            catalog: p.catalog,
            tokens: p.tokens,
            authorizer: p.authorizer,
            always_allow: p.always_allow,
            alloc: p.alloc,
            metrics: Metrics::default(),
            min_request_timeout: p.min_request_timeout,
            bookmark_interval: p.bookmark_interval,
            ready: AtomicBool::new(false),
            started: Instant::now(),
            descs: std::sync::OnceLock::new(),
        }
    }

    pub fn namespaces(&self) -> &'static ResourceInfo {
        self.catalog
            .lookup("", "v1", "namespaces")
            .expect("namespaces are always served")
    }

    pub fn namespace_key(&self, name: &str) -> Vec<u8> {
        Location::of(self.catalog, self.namespaces()).key("", name)
    }

    /// Resource descriptions for the OpenAPI documents.
    pub fn resource_descs(&self) -> &[keel_schema::ResourceDesc] {
        self.descs.get_or_init(|| {
            self.catalog
                .resources()
                .map(|r| keel_schema::ResourceDesc {
                    group: r.group.into(),
                    version: r.version.into(),
                    kind: r.kind.into(),
                    plural: r.plural.into(),
                    namespaced: r.namespaced,
                    verbs: r.verbs.iter().map(|v| v.to_string()).collect(),
                    subresources: r
                        .subresources
                        .iter()
                        .map(|s| {
                            let kind = if s.group == r.group && s.version == r.version {
                                s.kind.to_string()
                            } else {
                                format!("{}/{}/{}", s.group, s.version, s.kind)
                            };
                            (
                                s.name.to_string(),
                                kind,
                                s.verbs.iter().map(|v| v.to_string()).collect(),
                            )
                        })
                        .collect(),
                })
                .collect()
        })
    }

    /// Serves one request.
    pub async fn serve(self: Arc<Self>, req: Request) -> Response {
        let start = Instant::now();
        let watch = !req.query.is_empty() && Query::from_request(&req).flag("watch");
        let target = request_info::classify(req.method.as_str(), &req.path, watch);
        let (resp, labels) = match self.clone().route(&req, &target).await {
            Ok(r) => r,
            Err((e, labels)) => (respond::error(&e), labels),
        };
        if let Some(l) = labels {
            let code = resp.status;
            self.metrics.observe(
                &RequestLabels {
                    verb: l.0,
                    group: &l.1,
                    version: &l.2,
                    resource: &l.3,
                    subresource: &l.4,
                    scope: l.5,
                },
                code,
                start.elapsed(),
            );
        }
        resp
    }

    async fn route(
        self: Arc<Self>,
        req: &Request,
        target: &Target,
    ) -> Result<(Response, Option<Labels>), (ApiError, Option<Labels>)> {
        let path = req.path.trim_end_matches('/');
        if self
            .always_allow
            .iter()
            .any(|p| p.trim_end_matches('/') == path)
            || health::is_health_path(&self.always_allow, path)
        {
            return Ok((health::serve(&self, req), None));
        }
        let user = self.authenticate(req).map_err(|e| (e, None))?;
        match target {
            Target::Resource(rr) => {
                let labels = labels_of(rr);
                match self.clone().resource(req, rr, &user).await {
                    Ok(r) => Ok((r, Some(labels))),
                    Err(e) => Err((e, Some(labels))),
                }
            }
            Target::Discovery {
                core,
                group,
                version,
            } => self
                .discovery(req, &user, *core, group.as_deref(), version.as_deref())
                .map(|r| (r, None))
                .map_err(|e| (e, None)),
            Target::NonResource => self
                .non_resource(req, &user)
                .map(|r| (r, None))
                .map_err(|e| (e, None)),
        }
    }

    fn authenticate(&self, req: &Request) -> Result<User, ApiError> {
        let cert = req
            .client_cert
            .as_ref()
            .map(|c| (c.common_name.as_str(), c.organizations.as_slice()));
        auth::authenticate(&self.tokens, req.headers.get("authorization"), cert)
            .ok_or_else(ApiError::unauthorized)
    }

    fn authorize(&self, attrs: &Attributes<'_>) -> Result<(), ApiError> {
        self.authorizer.authorize(attrs).map_err(|_| {
            ApiError::forbidden(
                &attrs.user.name,
                attrs.verb,
                attrs.group,
                attrs.resource,
                (!attrs.namespace.is_empty()).then_some(attrs.namespace),
                (!attrs.name.is_empty()).then_some(attrs.name),
            )
        })
    }

    async fn resource(
        self: Arc<Self>,
        req: &Request,
        rr: &ResourceRequest,
        user: &User,
    ) -> Result<Response, ApiError> {
        self.authorize(&Attributes {
            user,
            verb: rr.verb,
            group: &rr.group,
            resource: &rr.resource,
            subresource: &rr.subresource,
            namespace: &rr.namespace,
            name: &rr.name,
            path: None,
        })?;
        let info = self
            .catalog
            .lookup(&rr.group, &rr.version, &rr.resource)
            .ok_or_else(|| not_found_path(&req.path))?;
        if !rr.subresource.is_empty() && !info.subresources.iter().any(|s| s.name == rr.subresource)
        {
            return Err(not_found_path(&req.path));
        }
        if !info.namespaced && !rr.namespace.is_empty() && rr.resource != "namespaces" {
            return Err(not_found_path(&req.path));
        }
        let verb_ok = if rr.subresource.is_empty() {
            info.verbs.contains(&rr.verb) || (rr.verb == "watch" && info.verbs.contains(&"watch"))
        } else {
            let sub = info
                .subresources
                .iter()
                .find(|s| s.name == rr.subresource)
                .expect("checked");
            sub.verbs.contains(&rr.verb)
        };
        if !verb_ok || !route_exists(rr) {
            return Err(method_not_allowed());
        }
        let mut c = Call {
            req,
            rr,
            info,
            loc: Location::of(self.catalog, info),
            user,
            query: Query::from_request(req),
            warnings: Vec::new(),
        };
        let app = &*self;
        match (rr.subresource.as_str(), rr.verb) {
            ("", "get") | ("status", "get") => registry::get(app, &mut c).await,
            ("", "list") => registry::list(app, &mut c).await,
            ("", "watch") => watch::watch(self.clone(), &mut c).await,
            ("", "create") if info.group.is_empty() && info.plural == "bindings" => {
                let body = respond::decode_body(c.content_type(), &req.body)?;
                let pod = crate::objects::name(&body).to_string();
                let pods = self.catalog.lookup("", "v1", "pods").expect("pods");
                c.info = pods;
                c.loc = Location::of(self.catalog, pods);
                subresources::binding(app, &mut c, &pod).await
            }
            ("", "create") if reviews::is_review(info.group, info.plural) => {
                reviews::create(app, &mut c).await
            }
            ("", "create") => registry::create(app, &mut c).await,
            ("" | "status", "update") => registry::update(app, &mut c).await,
            ("" | "status", "patch") => registry::patch(app, &mut c).await,
            ("", "delete") => registry::delete(app, &mut c).await,
            ("", "deletecollection") => registry::delete_collection(app, &mut c).await,
            ("scale", _) => subresources::scale(app, &mut c).await,
            ("binding", "create") => {
                let name = rr.name.clone();
                subresources::binding(app, &mut c, &name).await
            }
            ("eviction", "create") => subresources::eviction(app, &mut c).await,
            ("log", "get") => subresources::log(app, &mut c).await,
            ("finalize", "update") => subresources::finalize(app, &mut c).await,
            _ => Err(method_not_allowed()),
        }
    }

    fn discovery(
        &self,
        req: &Request,
        user: &User,
        core: bool,
        group: Option<&str>,
        version: Option<&str>,
    ) -> Result<Response, ApiError> {
        self.authorize(&Attributes {
            user,
            verb: "get",
            group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path: Some(&req.path),
        })?;
        let accept = req.headers.get("accept").unwrap_or("");
        match (group, version) {
            (None, None) => {
                if let Some(v) = aggregated_version(accept) {
                    let body = self.catalog.aggregated(core, v);
                    let ct = format!(
                        "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
                    );
                    return Ok(respond::response(200, &ct, body));
                }
                let body = if core {
                    self.catalog.api_versions()
                } else {
                    self.catalog.api_group_list()
                };
                Ok(respond::response(200, JSON, body))
            }
            (Some(g), None) => self
                .catalog
                .api_group(g)
                .map(|b| respond::response(200, JSON, b))
                .ok_or_else(|| not_found_path(&req.path)),
            (g, Some(v)) => self
                .catalog
                .resource_list(g.unwrap_or(""), v)
                .map(|b| respond::response(200, JSON, b))
                .ok_or_else(|| not_found_path(&req.path)),
        }
    }

    fn non_resource(&self, req: &Request, user: &User) -> Result<Response, ApiError> {
        let path = req.path.trim_end_matches('/');
        self.authorize(&Attributes {
            user,
            verb: "get",
            group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path: Some(path),
        })?;
        if req.method.as_str() != "GET" && req.method.as_str() != "HEAD" {
            return Err(method_not_allowed());
        }
        match path {
            "/version" => Ok(respond::response(200, JSON, version_json())),
            "/metrics" => Ok(respond::response(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                {
                    let mut text = self.metrics.render(&self.object_counts());
                    crate::metrics::render_store(&mut text, &self.storage.engine.stats());
                    text.into_bytes()
                },
            )),
            "/openapi/v2" => {
                let accept = req.headers.get("accept").unwrap_or("");
                if !accept.is_empty() && !accept.contains("json") && !accept.contains("*/*") {
                    return Err(ApiError::not_acceptable(&[JSON]));
                }
                Ok(respond::response(
                    200,
                    JSON,
                    keel_schema::schemas().openapi_v2(self.resource_descs()),
                ))
            }
            "/openapi/v3" => {
                let doc = keel_schema::schemas().openapi_v3_root_doc(self.resource_descs());
                Ok(openapi_response(doc, None, ""))
            }
            p if p.starts_with("/openapi/v3/") => {
                let rest = &p["/openapi/v3/".len()..];
                let (group, version) = match rest.split('/').collect::<Vec<_>>().as_slice() {
                    ["api", v] => ("", *v),
                    ["apis", g, v] => (*g, *v),
                    _ => return Err(not_found_path(p)),
                };
                let doc = keel_schema::schemas()
                    .openapi_v3_group_version_doc(group, version, self.resource_descs())
                    .ok_or_else(|| not_found_path(p))?;
                let hash = Query::from_request(req).nonempty("hash").map(String::from);
                Ok(openapi_response(doc, hash.as_deref(), p))
            }
            p if health::is_health_path(&[], p) => Ok(health::serve(self, req)),
            _ => Err(not_found_path(path)),
        }
    }

    /// Stored objects per resource, for `/metrics`.
    fn object_counts(&self) -> Vec<(String, String, u64)> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for r in self.catalog.resources() {
            let prefix = self.catalog.storage_prefix(r);
            if !seen.insert(prefix.clone()) {
                continue;
            }
            if let Ok(l) = self.storage.engine.list(&keel_engine::ListRequest {
                prefix: prefix.as_bytes(),
                start_after: None,
                limit: 1,
                at: keel_engine::ReadAt::Latest,
            }) {
                let n = l.items.len() as u64 + l.remaining;
                if n > 0 {
                    out.push((r.group.to_string(), r.plural.to_string(), n));
                }
            }
        }
        out
    }

    pub fn mark_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
    }
}

/// An OpenAPI v3 document with upstream's caching headers: a `hash` query naming the current
/// document is immutable; a stale one is redirected to the current URL.
fn openapi_response(doc: keel_schema::OpenApiDoc, hash: Option<&str>, path: &str) -> Response {
    if let Some(h) = hash {
        if h != doc.etag {
            let mut r = respond::response(301, JSON, Vec::new());
            r.headers
                .push(("Location".into(), format!("{path}?hash={}", doc.etag)));
            return r;
        }
    }
    let mut r = respond::response(200, JSON, doc.body.to_vec());
    r.headers.push(("ETag".into(), format!("\"{}\"", doc.etag)));
    r.headers.push(("Vary".into(), "Accept".into()));
    if hash.is_some() {
        r.headers
            .push(("Cache-Control".into(), "public, immutable".into()));
        let expires = chrono::Utc::now() + chrono::Duration::days(365);
        r.headers.push((
            "Expires".into(),
            expires.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
        ));
    } else {
        r.headers
            .push(("Cache-Control".into(), "no-cache, private".into()));
    }
    r
}

type Labels = (&'static str, String, String, String, String, &'static str);

fn labels_of(rr: &ResourceRequest) -> Labels {
    let scope = if !rr.name.is_empty() || rr.verb == "create" {
        "resource"
    } else if !rr.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    };
    (
        rr.verb,
        rr.group.clone(),
        rr.version.clone(),
        rr.resource.clone(),
        rr.subresource.clone(),
        scope,
    )
}

fn aggregated_version(accept: &str) -> Option<&'static str> {
    for range in accept.split(',') {
        let r = range.replace(' ', "");
        if !r.contains("as=APIGroupDiscoveryList") || !r.contains("g=apidiscovery.k8s.io") {
            if r.starts_with("application/json") && !r.contains("as=") {
                return None;
            }
            continue;
        }
        if r.contains("v=v2beta1") {
            return Some("v2beta1");
        }
        if r.contains("v=v2") {
            return Some("v2");
        }
    }
    None
}

/// Whether upstream registers a route for this verb on this kind of path: collections take
/// list, watch, create and deletecollection; named objects (and their subresources) take
/// get, watch, create (subresources only), update, patch and delete.
fn route_exists(rr: &ResourceRequest) -> bool {
    match (rr.name.is_empty(), rr.verb) {
        (true, v) => matches!(v, "list" | "watch" | "create" | "deletecollection"),
        (false, "create") => !rr.subresource.is_empty(),
        (false, v) => matches!(v, "get" | "watch" | "update" | "patch" | "delete"),
    }
}

/// The 405 upstream's router answers when no route takes the method on a path.
pub fn method_not_allowed() -> ApiError {
    let mut e = ApiError::method_not_supported("", "", "");
    e.message = "the server does not allow this method on the requested resource".into();
    e.group = Some(String::new());
    e.kind = Some(String::new());
    e
}

fn not_found_path(path: &str) -> ApiError {
    let mut e = ApiError::not_found("", "", "");
    e.message = "the server could not find the requested resource".into();
    e.name = None;
    e.kind = None;
    e.group = None;
    let _ = path;
    e
}

pub fn version_json() -> Vec<u8> {
    serde_json::to_vec_pretty(&serde_json::json!({
        "major": "1",
        "minor": "32",
        "gitVersion": concat!("v1.32.0-keel.", env!("CARGO_PKG_VERSION")),
        "gitCommit": option_env!("KEEL_GIT_COMMIT").unwrap_or("unknown"),
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (rust)",
        "compiler": "rustc",
        "platform": format!("linux/{}", std::env::consts::ARCH),
    }))
    .expect("JSON")
}

/// The HTTP layer's view of the app.
pub struct Handler(pub Arc<App>);

impl keel_http::Handler for Handler {
    fn handle(&self, req: Request) -> Pin<Box<dyn Future<Output = Response>>> {
        let app = self.0.clone();
        Box::pin(app.serve(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_discovery_negotiation() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_version(kubectl), Some("v2"));
        assert_eq!(
            aggregated_version(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            ),
            Some("v2beta1")
        );
        assert_eq!(aggregated_version("application/json"), None);
        assert_eq!(aggregated_version(""), None);
    }
}
