//! The HTTP handlers: every request is authenticated on its head, before its body is read
//! ([`admit`]), classified by its path (`request_info`), authorized, routed to its resource (one load of the live routes per
//! request) and served by the handler of its verb (`resource`, `watch`, `subresources`,
//! `reviews`) or of its non-resource endpoint (`discovery`, `openapi`, `health`). Handlers do HTTP work
//! only: query parsing (`call`), negotiation (`crate::repr`), bodies (`body`) and responses
//! (`respond`); the registry below them does the rest.

mod apply;
mod body;
mod call;
mod discovery;
mod health;
mod openapi;
mod proxy;
pub mod request_info;
mod resource;
mod respond;
mod reviews;
mod snapshot;
mod subresources;
mod token_request;
mod watch;

pub use call::{FieldValidation, Query};
pub use discovery::version_json;

use crate::auth::{self, Attributes, User};
use crate::metrics::RequestLabels;
use crate::state::State;
use call::Call;
use keel_api::status::ApiError;
use keel_http::{Admitted, Request, RequestHead, Response};
use request_info::{ResourceRequest, Target};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

/// The HTTP layer's view of the server.
pub struct Handler(pub Arc<State>);

impl keel_http::Handler for Handler {
    fn admit(&self, head: &RequestHead<'_>) -> Result<Admitted, Response> {
        admit(&self.0, head)
    }

    fn handle(&self, req: Request) -> Pin<Box<dyn Future<Output = Response>>> {
        Box::pin(serve(self.0.clone(), req))
    }
}

/// Authenticates a request on its head, before its body is read (as kube-apiserver's
/// authentication filter runs before any handler reads the body): a request without valid
/// credentials is answered 401 and its body never read. Paths served without
/// authentication (`--authorization-always-allow-paths`, health) are admitted as they are.
/// Admitted requests carry their [`User`] to [`serve`].
pub fn admit(st: &State, head: &RequestHead<'_>) -> Result<Admitted, Response> {
    if is_public(st, head.path) {
        return Ok(Admitted::default());
    }
    match authenticate(st, head) {
        Ok(user) => {
            // An anonymous request is authorized on its head too: a refused one is answered
            // 403 with its body unread, as one without credentials is 401 when anonymous
            // requests are off.
            if user.name == auth::ANONYMOUS_USER {
                authorize_head(st, head, &user).map_err(|e| respond::error(&e))?;
            }
            Ok(Admitted::new(user))
        }
        Err(e) => Err(respond::error(&e)),
    }
}

/// The authorization of a request from its head alone (what it addresses and its verb).
fn authorize_head(st: &State, head: &RequestHead<'_>, user: &User) -> Result<(), ApiError> {
    let r = requested(head);
    authorize(st, &r.attributes(user, &r.verb))
}

/// Serves one request. One that did not go through [`admit`] (in-process callers) is
/// admitted here first.
pub async fn serve(st: Arc<State>, mut req: Request) -> Response {
    let start = Instant::now();
    if st
        .lifecycle
        .rejects(&req.path, req.headers.get("user-agent"))
    {
        return respond::shutting_down();
    }
    let user = match req.admitted.take::<Arc<User>>() {
        Some(user) => Some(user),
        None if is_public(&st, &req.path) => None,
        None => match admit(&st, &req.head()) {
            Ok(mut admitted) => admitted.take::<Arc<User>>(),
            Err(refused) => return refused,
        },
    };
    let watch = !req.query.is_empty() && Query::from_request(&req).flag("watch");
    // What a draining shutdown waits for: every request but watches.
    let _in_flight = (!watch).then(|| st.lifecycle.track());
    let target = request_info::classify(req.method.as_str(), &req.path, watch);
    // Priority and fairness: the seat is held while the handler runs (a watch's until it is
    // established: its handler returns the stream).
    let ticket = match flow_control(&st, &req, &target, user.as_deref()).await {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    let (mut resp, labels) = match route(&st, &req, &target, user).await {
        Ok(r) => r,
        Err((e, labels)) => (respond::error_for(&e, req.headers.get("accept")), labels),
    };
    if pretty(&req) {
        resp = respond::indented(resp);
    }
    if let Some(t) = ticket {
        resp.headers
            .extend(flow_control_headers(t.schema_uid(), t.level_uid()));
        // A streamed list keeps its seat until its last chunk is written; a watch is
        // established once its handler has returned, and lets its seat go (as upstream).
        if !watch {
            resp.body = hold_seat(resp.body, t);
        }
    }
    if let Some(l) = &labels {
        deprecation_warning(&st, l, &mut resp);
    }
    if let Some(l) = labels {
        let code = resp.status;
        let dry_run = if req.query.contains("dryRun") {
            crate::metrics::dry_run_label(&Query::from_request(&req).dry_run_values())
        } else {
            ""
        };
        st.metrics.observe(
            &RequestLabels {
                verb: l.0,
                group: &l.1,
                version: &l.2,
                resource: &l.3,
                subresource: &l.4,
                scope: l.5,
                dry_run,
                system_client: crate::metrics::system_client(req.headers.get("user-agent")),
            },
            code,
            start.elapsed(),
        );
    }
    resp
}

type Labels = (&'static str, String, String, String, String, &'static str);

/// `?pretty=`: JSON answers indented, as upstream's `isPrettyPrint` reads the parameter (Go's
/// `strconv.ParseBool`: `1`, `t`, `T`, `TRUE`, `true` and `True` are true, anything else
/// false). Upstream also indents for `curl`, `Wget` and browser user agents; keel does not.
pub fn pretty(req: &Request) -> bool {
    !req.query.is_empty()
        && req.query.contains("pretty")
        && req
            .query_pairs()
            .into_iter()
            .find(|(k, _)| k == "pretty")
            .is_some_and(|(_, v)| matches!(v.as_str(), "1" | "t" | "T" | "TRUE" | "true" | "True"))
}

/// A request to a resource upstream deprecated (at the emulated release) is told so, as
/// upstream tells it, whatever its answer; the request is counted in
/// `apiserver_requested_deprecated_apis`.
fn deprecation_warning(st: &State, l: &Labels, resp: &mut Response) {
    // Most requests are for resources never deprecated: no routes lookup for them (custom
    // resources' groups have a dot; their definitions say whether a version is deprecated).
    if !keel_catalog::is_deprecated_anywhere(&l.1, &l.2, &l.3) {
        if l.1.contains('.') {
            custom_deprecation_warning(st, l, resp);
        }
        return;
    }
    let routes = st.routes.load();
    let Some(res) = routes.lookup(&l.1, &l.2, &l.3) else {
        return;
    };
    let Some(d) = keel_catalog::deprecation(&res.info, &st.emulation) else {
        return;
    };
    st.metrics
        .requested_deprecated(&res.info, &l.4, d.removed_release.as_deref());
    resp.headers.push((
        "Warning".into(),
        format!("299 - \"{}\"", d.warning.replace('"', "\\\"")),
    ));
}

/// A request to a custom resource version its definition deprecates: the definition's
/// warning (or upstream's default text), counted as upstream counts it (no removal release).
fn custom_deprecation_warning(st: &State, l: &Labels, resp: &mut Response) {
    let routes = st.routes.load();
    let Some(res) = routes.lookup(&l.1, &l.2, &l.3) else {
        return;
    };
    let Some(warning) = res
        .custom
        .as_ref()
        .and_then(|c| c.deprecation_warning.as_ref())
    else {
        return;
    };
    st.metrics.requested_deprecated(&res.info, &l.4, None);
    resp.headers.push((
        "Warning".into(),
        format!("299 - \"{}\"", warning.replace('"', "\\\"")),
    ));
}

/// Classifies the request and waits for its seat (`crate::flowcontrol`); `Ok(None)` when
/// priority and fairness is off. A refusal is upstream's: 429, plain text, `Retry-After`.
async fn flow_control(
    st: &State,
    req: &Request,
    target: &Target,
    user: Option<&User>,
) -> Result<Option<crate::flowcontrol::Ticket>, Response> {
    use crate::flowcontrol::classify::{Digest, ResourceAttrs};
    let fc = &st.flowcontrol;
    if !fc.enabled {
        return Ok(None);
    }
    // The lower-case method is the verb of a non-resource request only.
    let method: String;
    let (verb, resource) = match target {
        Target::Resource(rr) => (
            rr.verb,
            Some(ResourceAttrs {
                group: &rr.group,
                resource: &rr.resource,
                subresource: &rr.subresource,
                namespace: &rr.namespace,
            }),
        ),
        _ => {
            method = req.method.as_str().to_ascii_lowercase();
            (method.as_str(), None)
        }
    };
    let digest = Digest {
        user: user.map_or("", |u| u.name.as_str()),
        groups: user.map_or(&[], |u| u.groups.as_slice()),
        authenticated: user.is_some(),
        verb,
        resource,
        path: req.path.trim_end_matches('/'),
    };
    let never_reject = health::is_health_path(req.path.trim_end_matches('/'));
    let width = match target {
        Target::Resource(rr) if rr.verb == "list" => list_width(st, req, rr),
        Target::Resource(rr) if rr.verb == "watch" => watch_width(st, req, rr),
        _ => 1,
    };
    match fc.admit(&digest, never_reject, width).await {
        Ok(ticket) => Ok(Some(ticket)),
        Err(r) => {
            let mut resp = Response::full(
                429,
                "text/plain; charset=utf-8",
                b"Too many requests, please try again later.\n".to_vec(),
            );
            resp.headers
                .extend(flow_control_headers(&r.schema_uid, &r.level_uid));
            resp.headers.extend([
                ("X-Content-Type-Options".into(), "nosniff".into()),
                ("Retry-After".into(), r.retry_after_seconds.to_string()),
            ]);
            Err(resp)
        }
    }
}

/// How many objects of the request's resource are stored (all namespaces), from this
/// core's recent counts; `None` for a resource not served.
fn resource_count(st: &State, rr: &ResourceRequest) -> Option<u64> {
    crate::flowcontrol::estimate::object_count(&rr.group, &rr.resource, || {
        let routes = st.routes.load();
        let res = routes.lookup(&rr.group, &rr.version, &rr.resource)?;
        st.registry.count(res).ok()
    })
}

/// The seats a list takes by priority and fairness's work estimate, from the resource's
/// object count (`crate::flowcontrol::estimate`); one for a resource not served.
fn list_width(st: &State, req: &Request, rr: &ResourceRequest) -> u32 {
    use crate::flowcontrol::estimate::{list_seats, ListShape};
    let count = resource_count(st, rr);
    let Some(count) = count else {
        return 1;
    };
    let q = Query::from_request(req);
    let shape = ListShape::from_query(
        q.get("limit"),
        q.get("labelSelector"),
        q.get("fieldSelector"),
    );
    list_seats(count, shape)
}

/// The seats of a watch: one, or as a list of everything when it sends the state first
/// (`sendInitialEvents=true`, or no `sendInitialEvents` and `resourceVersion` unset or `0`),
/// as upstream's estimate of a watch; its seat is held until the state is read.
fn watch_width(st: &State, req: &Request, rr: &ResourceRequest) -> u32 {
    use crate::flowcontrol::estimate::{list_seats, ListShape};
    let q = Query::from_request(req);
    let rv = q.nonempty("resourceVersion");
    let initial = match q.get("sendInitialEvents") {
        Some(v) => call::query_bool(v),
        None => rv.is_none() || rv == Some("0"),
    };
    if !initial || !rr.name.is_empty() {
        return 1;
    }
    let count = resource_count(st, rr);
    count.map_or(1, |n| list_seats(n, ListShape::default()))
}

/// A streamed body that holds `ticket` (its seat) until the stream ends or is dropped.
fn hold_seat(body: keel_http::Body, ticket: crate::flowcontrol::Ticket) -> keel_http::Body {
    use keel_http::Body;
    match body {
        Body::Full(b) => Body::Full(b),
        Body::Stream(inner) => Body::Stream(Box::pin(Holding { inner, ticket })),
        Body::Chunks(inner) => Body::Chunks(Box::pin(Holding { inner, ticket })),
    }
}

/// A stream and the seat it holds.
struct Holding<S: ?Sized> {
    inner: Pin<Box<S>>,
    ticket: crate::flowcontrol::Ticket,
}

impl<S: futures_core::Stream + ?Sized> futures_core::Stream for Holding<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        let _held = &self.ticket;
        self.inner.as_mut().poll_next(cx)
    }
}

/// Upstream's response headers naming the schema and level a request was classified into.
fn flow_control_headers(schema_uid: &str, level_uid: &str) -> [(String, String); 2] {
    [
        (
            "X-Kubernetes-PF-FlowSchema-UID".into(),
            schema_uid.to_string(),
        ),
        (
            "X-Kubernetes-PF-PriorityLevel-UID".into(),
            level_uid.to_string(),
        ),
    ]
}

/// Whether `path` is served without authentication or authorization.
fn is_public(st: &State, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    st.always_allow
        .iter()
        .any(|p| p.trim_end_matches('/') == path)
        || health::is_health_path(path)
}

/// Routes an admitted request: `user` is who [`admit`] authenticated (`None` only on
/// public paths).
async fn route(
    st: &State,
    req: &Request,
    target: &Target,
    user: Option<Arc<User>>,
) -> Result<(Response, Option<Labels>), (ApiError, Option<Labels>)> {
    if is_public(st, &req.path) {
        return Ok((health::serve(st, req), None));
    }
    let user = user.ok_or((ApiError::unauthorized(), None))?;
    match target {
        Target::Resource(rr) => {
            let labels = labels_of(rr);
            match resource(st, req, rr, &user).await {
                Ok(r) => Ok((r, Some(labels))),
                Err(e) => Err((e, Some(labels))),
            }
        }
        Target::Discovery {
            core,
            group,
            version,
        } => Box::pin(discovery::discovery(
            st,
            req,
            &user,
            *core,
            group.as_deref(),
            version.as_deref(),
        ))
        .await
        .map(|r| (r, None))
        .map_err(|e| (e, None)),
        Target::NonResource if snapshot::is_snapshot_path(&req.path) => {
            snapshot::serve(st, req, &user)
                .map(|r| (r, None))
                .map_err(|e| (e, None))
        }
        Target::NonResource => discovery::non_resource(st, req, &user)
            .map(|r| (r, None))
            .map_err(|e| (e, None)),
    }
}

/// Who sent the request, as kube-apiserver's authenticators decide in turn: a front proxy's
/// headers (request-header authentication), a verified client certificate, a static token, a service account token; none presented, the
/// anonymous user when `--anonymous-auth` allows; then impersonation. A bearer token no
/// authenticator accepts is 401 even where anonymous requests are allowed.
fn authenticate(st: &State, head: &RequestHead<'_>) -> Result<Arc<User>, ApiError> {
    // A front proxy's certificate: the user its headers name (none named: the other
    // authenticators are asked).
    let proxied = head
        .client_cert
        .filter(|c| c.by_request_header_ca)
        .zip(st.request_header.as_ref())
        .filter(|(c, rh)| rh.allows(&c.common_name))
        .and_then(|(_, rh)| rh.user(head.headers.iter()));
    if let Some(mut user) = proxied {
        if !user.groups.iter().any(|g| g == auth::AUTHENTICATED_GROUP) {
            user.groups.push(auth::AUTHENTICATED_GROUP.into());
        }
        return crate::impersonation::impersonate(
            &*st.authorizer,
            head.headers.iter(),
            Arc::new(user),
            || requested(head),
        );
    }
    let cert = head
        .client_cert
        .filter(|c| c.by_client_ca)
        .map(|c| (c.common_name.as_str(), c.organizations.as_slice()));
    let bearer = auth::bearer_token(head.headers.get("authorization"));
    let user = match auth::authenticate_bearer(&st.tokens, bearer, cert) {
        Some(user) => user,
        None => match bearer {
            Some(token) => service_account_user(st, token)
                .ok()
                .flatten()
                .ok_or_else(ApiError::unauthorized)?,
            None if st.anonymous => Arc::new(auth::anonymous()),
            None => return Err(ApiError::unauthorized()),
        },
    };
    crate::impersonation::impersonate(&*st.authorizer, head.headers.iter(), user, || {
        requested(head)
    })
}

/// What a request asks, as its head says it: the attributes it is authorized for there
/// ([`authorize_head`]) and impersonation asks about.
fn requested(head: &RequestHead<'_>) -> auth::Requested {
    let watch = head.query.split('&').any(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        k == "watch" && call::query_bool(v)
    });
    let method = head.method.as_str();
    match request_info::classify(method, head.path, watch) {
        Target::Resource(rr) => auth::Requested {
            verb: rr.verb.to_owned(),
            group: rr.group.clone(),
            resource: rr.resource.clone(),
            subresource: rr.subresource.clone(),
            namespace: rr.namespace.clone(),
            name: rr.name.clone(),
            path: None,
        },
        target => auth::Requested {
            verb: method.to_ascii_lowercase(),
            path: Some(match target {
                Target::Discovery { .. } => head.path.to_owned(),
                _ => head.path.trim_end_matches('/').to_owned(),
            }),
            ..Default::default()
        },
    }
}

/// The service account a request's bearer token stands for (see
/// `crate::serviceaccount`); `Ok(None)`: not a service account token; `Err`: one that is
/// not valid, and why.
fn service_account_user(st: &State, token: &str) -> Result<Option<Arc<User>>, String> {
    let Some(issuer) = &st.service_accounts else {
        return Ok(None);
    };
    issuer.authenticate(token, &StoredObjects(st), chrono::Utc::now().timestamp())
}

/// A TokenReview's check of a service account token against `audiences`, with the
/// audiences in common.
pub(crate) fn review_service_account_token(
    st: &State,
    token: &str,
    audiences: &[String],
) -> Result<Option<(User, Vec<String>)>, String> {
    let Some(issuer) = &st.service_accounts else {
        return Ok(None);
    };
    issuer.review(
        token,
        audiences,
        &StoredObjects(st),
        chrono::Utc::now().timestamp(),
    )
}

/// The registry's latest stored objects, for token checks.
struct StoredObjects<'a>(&'a State);

impl crate::serviceaccount::Lookup for StoredObjects<'_> {
    fn stored(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<crate::serviceaccount::Stored> {
        let routes = self.0.routes.load();
        let obj = self
            .0
            .registry
            .get_latest_metadata(routes.core(resource), namespace, name)
            .ok()?;
        let meta = obj.get("metadata")?;
        Some(crate::serviceaccount::Stored {
            uid: meta
                .get("uid")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .to_string(),
            deleted_at: meta
                .get("deletionTimestamp")
                .and_then(serde_json::Value::as_str)
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.timestamp()),
        })
    }
}

fn authorize(st: &State, attrs: &Attributes<'_>) -> Result<(), ApiError> {
    match st.authorizer.authorize_request(attrs) {
        crate::auth::Decision::Allow(_) => Ok(()),
        d => Err(crate::authz::forbidden(attrs, d.reason())),
    }
}

/// Whether `name` may stand in a path segment (upstream's `IsValidPathSegmentName`).
fn is_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// A request for a resource: authorized, routed to its resource through the routes snapshot
/// loaded here, checked against the verbs and subresources it serves, then handled.
async fn resource(
    st: &State,
    req: &Request,
    rr: &ResourceRequest,
    user: &User,
) -> Result<Response, ApiError> {
    // As upstream's request info: a list or watch selecting one name by field is
    // authorized as a request for that object, and its field selector is an attribute.
    let field_selector = matches!(rr.verb, "list" | "watch")
        .then(|| Query::from_request(req))
        .and_then(|q| q.get("fieldSelector").map(str::to_string));
    let selected = field_selector
        .as_deref()
        .and_then(|f| keel_api::selectors::FieldSelector::parse(f).ok())
        .and_then(|f| f.requires_exact("metadata.name").map(str::to_string))
        .filter(|n| is_path_segment_name(n));
    authorize(
        st,
        &Attributes {
            user,
            verb: rr.verb,
            group: &rr.group,
            resource: &rr.resource,
            subresource: &rr.subresource,
            namespace: &rr.namespace,
            name: selected.as_deref().unwrap_or(&rr.name),
            path: None,
            field_selector: field_selector.as_deref(),
        },
    )?;
    if let Some(remote) = st.aggregator.remote(&rr.group, &rr.version) {
        return Ok(Box::pin(proxy::proxy(st, req, user, &remote)).await);
    }
    let routes = st.routes.load();
    let res = routes
        .lookup(&rr.group, &rr.version, &rr.resource)
        .ok_or_else(ApiError::route_not_found)?;
    let info = &res.info;
    if !rr.subresource.is_empty() && info.subresource(&rr.subresource).is_none() {
        return Err(ApiError::route_not_found());
    }
    if !info.namespaced && !rr.namespace.is_empty() && rr.resource != "namespaces" {
        return Err(ApiError::route_not_found());
    }
    let verb_ok = match info.subresource(&rr.subresource) {
        None => info.supports(rr.verb),
        Some(sub) => sub.verbs.contains(&rr.verb),
    };
    if !verb_ok || !route_exists(rr) {
        return Err(ApiError::method_not_allowed());
    }
    let mut c = Call {
        req,
        rr,
        res,
        user,
        query: Query::from_request(req),
        warnings: Vec::new(),
    };
    let c = &mut c;
    let result = dispatch(c, st, &routes).await;
    // Warnings gathered before a failure go with its error, as upstream's do.
    match result {
        Err(e) if !c.warnings.is_empty() => Ok(respond::with_warnings(
            respond::error_for(&e, req.headers.get("accept")),
            c,
        )),
        r => r,
    }
}

/// The handler of a routed request. The handlers of requests other than the common verbs'
/// are boxed where they are awaited: a future is as large as its largest branch, and every
/// request's future is copied into place at each level.
async fn dispatch<'r>(
    c: &mut Call<'r>,
    st: &State,
    routes: &'r crate::routes::Routes,
) -> Result<Response, ApiError> {
    let (req, rr, info) = (c.req, c.rr, c.info());
    match (rr.subresource.as_str(), rr.verb) {
        ("" | "status" | "resize", "get") => resource::get(c, st).await,
        ("", "list") => resource::list(c, st).await,
        ("", "watch") => Box::pin(watch::watch(c, st)).await,
        ("", "create") if info.group.is_empty() && info.plural == "bindings" => {
            let body = body::decode_body(c.content_type(), &req.body)?;
            let pod = crate::objects::name(&body).to_string();
            c.res = routes.core("pods");
            Box::pin(subresources::binding(c, st, &pod)).await
        }
        ("", "create") if reviews::is_review(info.group, info.plural) => {
            Box::pin(reviews::create(c, st)).await
        }
        ("", "create") => resource::create(c, st).await,
        ("" | "status" | "resize", "update") => resource::update(c, st).await,
        ("" | "status" | "resize", "patch") => resource::patch(c, st).await,
        ("", "delete") => resource::delete(c, st).await,
        ("", "deletecollection") => Box::pin(resource::delete_collection(c, st)).await,
        ("scale", _) => Box::pin(subresources::scale(c, st)).await,
        ("binding", "create") => {
            let name = rr.name.clone();
            Box::pin(subresources::binding(c, st, &name)).await
        }
        ("eviction", "create") => Box::pin(subresources::eviction(c, st)).await,
        ("token", "create") => Box::pin(token_request::create(c, st)).await,
        ("log", "get") => Box::pin(subresources::log(c, st)).await,
        ("finalize", "update") => Box::pin(subresources::finalize(c, st)).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

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
