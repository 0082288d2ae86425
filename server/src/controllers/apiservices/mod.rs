//! The availability controller: each pass reads every APIService, decides its `Available`
//! condition as upstream's does (with upstream's reasons and messages) and publishes the
//! ones with a service to the proxy and discovery. A local APIService (no service) is
//! `Local`; one with a service is checked in upstream's order: the Service exists
//! (`ServiceNotFound`), and for a `ClusterIP` Service it listens on the port
//! (`ServicePortError`) and has EndpointSlices (`EndpointsNotFound`) with a ready endpoint on
//! that port (`MissingEndpoints`); then a discovery GET of `/apis/<group>/<version>` through
//! the proxy's transport as `system:kube-aggregator` in `system:masters` must answer 2xx
//! within `APISERVICE_CHECK_TIMEOUT` (`FailedDiscoveryCheck`), else `Passed`. The condition's
//! `lastTransitionTime` moves only when its status changes; nothing is written when nothing
//! changed. A change of any APIService, Service or EndpointSlice wakes it; it also checks
//! every `APISERVICE_RESYNC` (a server that went away is seen within that). The address its
//! check resolved is published for the proxy; after each pass the `openapi` fetcher fetches
//! the OpenAPI documents of the available remotes that are due.

use keel_api::jsonmap::JsonPointer;
pub mod autoregister;
pub mod openapi;
pub mod resolve;

use crate::aggregator::{user_headers, Remote, ServiceRef, Trust};
use crate::limits::{APISERVICE_CHECK_TIMEOUT, APISERVICE_PASS_INTERVAL_MIN, APISERVICE_RESYNC};
use crate::objects;
use crate::registry::UpdateOptions;
use crate::routes::Resource;
use crate::service_ref::ServiceResolver;
use crate::state::State;
use base64::Engine;
use keel_api::status::ApiError;
use keel_client::{Forward, Method};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

pub const GROUP: &str = "apiregistration.k8s.io";
pub const PLURAL: &str = "apiservices";

/// Installs the Service resolver of `st` in its aggregator (it holds the state weakly): what
/// conversion webhooks named by a Service use.
pub fn install_resolver(st: &Arc<State>) {
    let weak = Arc::downgrade(st);
    let resolver: ServiceResolver = Arc::new(move |svc: ServiceRef| {
        let weak = weak.clone();
        Box::pin(async move {
            let st = weak.upgrade().ok_or("the server is stopping")?;
            let routing = st.aggregator.endpoint_routing();
            resolve::resolve(&st, &svc, routing).await
        })
    });
    st.aggregator.set_resolver(resolver);
}

/// Runs the controller on its own thread with its own single-threaded runtime.
/// `first`: its first pass syncs the built-in local APIServices (the start-up pass,
/// [`start`], did not).
pub fn spawn(st: Arc<State>, first: bool) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-apiservice-availability", move || run(st, first))
}

/// The start-up pass, before the server is ready (as upstream's readiness waits for its
/// autoregistration): the local APIServices registered and available. Aggregated ones are
/// left to the controller (their checks can take `APISERVICE_CHECK_TIMEOUT`). True when it
/// succeeded.
pub async fn start(st: &State) -> bool {
    match pass(st, true, false).await {
        Ok(()) => true,
        Err(e) => {
            eprintln!("apiservice availability controller: {}", e.message);
            false
        }
    }
}

async fn run(st: Arc<State>, mut first: bool) {
    let mut watches = [None, None, None];
    let fetches = openapi::Schedule::default();
    loop {
        let pass_started = tokio::time::Instant::now();
        match reconcile(&st, first).await {
            Ok(()) => first = false,
            Err(e) => eprintln!("apiservice availability controller: {}", e.message),
        }
        openapi::schedule(&st, &fetches);
        tokio::time::sleep_until(pass_started + APISERVICE_PASS_INTERVAL_MIN).await;
        if watches.iter().any(Option::is_none) {
            watches = open_watches(&st).await;
        }
        // A change of what is served (custom resources) wakes it too.
        let waiting = tokio::time::Instant::now();
        let ended = tokio::select! {
            ended = super::wait_for_change(&mut watches, APISERVICE_RESYNC) => ended,
            () = st.aggregator.served_changed.notified() => false,
        };
        // Woken before the resync: something changed, so a Service may resolve elsewhere.
        if waiting.elapsed() < APISERVICE_RESYNC {
            st.aggregator.forget_addresses();
        }
        if ended {
            watches = [None, None, None];
        }
    }
}

async fn open_watches(
    st: &State,
) -> [Option<(crate::registry::Source, crate::selection::Selection)>; 3] {
    let routes = st.routes.load();
    let mut out = [None, None, None];
    let resources = [
        routes.lookup(GROUP, "v1", PLURAL),
        Some(routes.core("services")),
        routes.lookup("discovery.k8s.io", "v1", "endpointslices"),
    ];
    for (slot, res) in out.iter_mut().zip(resources) {
        if let Some(res) = res {
            *slot = super::watch_all(st, res).await;
        }
    }
    out
}

/// Every APIService.
async fn list(st: &State, res: &Resource) -> Result<Vec<Value>, ApiError> {
    let (items, _) = st.registry.list_all(res, "").await?;
    items
        .iter()
        .map(|kv| objects::parse_stored(kv.value()))
        .collect()
}

/// One pass: the local APIServices synced (`autoregister`; the built-in ones when `first`),
/// then every APIService's availability.
pub async fn reconcile(st: &State, first: bool) -> Result<(), ApiError> {
    pass(st, first, true).await
}

/// A pass; `remotes`: check the APIServices with a service (and publish them).
async fn pass(st: &State, first: bool, remotes_too: bool) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let Some(res) = routes.lookup(GROUP, "v1", PLURAL) else {
        return Ok(());
    };
    let mut items = list(st, res).await?;
    if autoregister::sync(st, res, &items, first).await? {
        items = list(st, res).await?;
    }
    // Clients already made are kept for an APIService whose service and trust are the same.
    let before = st.aggregator.snapshot();
    let mut remotes = Vec::new();
    for api in items {
        let spec = api.get("spec").cloned().unwrap_or(Value::Null);
        let name = objects::name(&api).to_owned();
        let Some(svc) = service_ref(&spec) else {
            let cond = condition("True", "Local", "Local APIServices are always available");
            write_if_changed(st, res, &api, cond).await;
            continue;
        };
        if !remotes_too {
            continue;
        }
        let remote = remote_of(&name, &spec, svc, &before);
        let Checked {
            condition: cond,
            resources: checked,
            address,
        } = check(st, &remote).await;
        // A failed check keeps what the last successful one found (discovery lists it as
        // stale).
        let resources = checked.or_else(|| {
            before
                .group(&remote.group)
                .and_then(|rs| rs.iter().find(|r| r.name == remote.name))
                .and_then(|r| r.resources.clone())
        });
        let available = cond.status == "True";
        write_if_changed(st, res, &api, cond).await;
        remote.set_address(address);
        remotes.push(Remote {
            available,
            resources,
            ..remote
        });
    }
    if remotes_too {
        st.aggregator.publish(remotes);
    }
    Ok(())
}

fn service_ref(spec: &Value) -> Option<ServiceRef> {
    let svc = spec.get("service").filter(|s| s.is_object())?;
    let text = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    Some(ServiceRef {
        namespace: text("namespace"),
        name: text("name"),
        port: svc.get("port").and_then(Value::as_i64).unwrap_or(443),
    })
}

fn remote_of(
    name: &str,
    spec: &Value,
    service: ServiceRef,
    before: &crate::aggregator::Remotes,
) -> Remote {
    let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let int = |k: &str| spec.get(k).and_then(Value::as_i64).unwrap_or(0);
    let trust = Trust {
        ca_pem: spec
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok()),
        insecure: spec
            .get("insecureSkipTLSVerify")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    let (group, version) = (text("group"), text("version"));
    let client = before
        .group(&group)
        .and_then(|rs| rs.iter().find(|r| r.name == name))
        .filter(|r| r.service == service && r.trust == trust)
        .map(|r| r.client.clone())
        .unwrap_or_else(|| Arc::new(Mutex::new(None)));
    Remote {
        name: name.to_owned(),
        group,
        version,
        service,
        trust,
        group_priority: int("groupPriorityMinimum"),
        version_priority: int("versionPriority"),
        available: false,
        resources: None,
        client,
        address: Default::default(),
    }
}

/// An `Available` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

fn condition(status: &'static str, reason: &'static str, message: impl Into<String>) -> Condition {
    Condition {
        status,
        reason,
        message: message.into(),
    }
}

/// What a check of a remote found.
struct Checked {
    condition: Condition,
    /// The APIResourceList its discovery check answered.
    resources: Option<Value>,
    /// Where its Service was resolved to.
    address: Option<String>,
}

fn failed(condition: Condition) -> Checked {
    Checked {
        condition,
        resources: None,
        address: None,
    }
}

/// The availability of a remote. The Service and its EndpointSlices are read once: the
/// address comes from them too.
async fn check(st: &State, remote: &Remote) -> Checked {
    let svc = &remote.service;
    let service = match resolve::service(st, svc).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            let msg = format!("service/{} in {:?} is not present", svc.name, svc.namespace);
            return failed(condition("False", "ServiceNotFound", msg));
        }
        Err(e) => {
            let msg = format!(
                "service/{} in {:?} cannot be checked due to: {e}",
                svc.name, svc.namespace
            );
            return failed(condition("Unknown", "ServiceAccessError", msg));
        }
    };
    let kind = service
        .at("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let mut slices = None;
    if kind == "ClusterIP" {
        let Some(port) = resolve::service_port(&service, svc.port) else {
            let msg = format!(
                "service/{} in {:?} is not listening on port {}",
                svc.name, svc.namespace, svc.port
            );
            return failed(condition("False", "ServicePortError", msg));
        };
        let port_name = port
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let found = match resolve::endpoint_slices(st, svc).await {
            Ok(s) => s,
            Err(e) => {
                let msg = format!(
                    "service/{} in {:?} cannot be checked due to: {e}",
                    svc.name, svc.namespace
                );
                return failed(condition("Unknown", "EndpointsAccessError", msg));
            }
        };
        if found.is_empty() {
            let msg = format!(
                "cannot find endpointslices for service/{} in {:?}",
                svc.name, svc.namespace
            );
            return failed(condition("False", "EndpointsNotFound", msg));
        }
        if !resolve::has_ready_endpoint(&port_name, &found) {
            let msg = format!(
                "endpointslices for service/{} in {:?} have no addresses with port name {port_name:?}",
                svc.name, svc.namespace
            );
            return failed(condition("False", "MissingEndpoints", msg));
        }
        slices = Some(found);
    }
    let routing = st.aggregator.endpoint_routing() && resolve::needs_endpoints(&service);
    let slices = match (routing, slices) {
        (false, _) => Ok(None),
        (true, Some(found)) => Ok(Some(found)),
        (true, None) => resolve::endpoint_slices(st, svc).await.map(Some),
    };
    let address = slices.and_then(|sl| resolve::address(&service, svc, sl.as_deref()));
    match discovery_check(st, remote, &address).await {
        Ok(resources) => Checked {
            condition: condition("True", "Passed", "all checks passed"),
            resources,
            address: address.ok(),
        },
        Err(msg) => Checked {
            address: address.ok(),
            ..failed(condition("False", "FailedDiscoveryCheck", msg))
        },
    }
}

/// GETs the version's discovery document from the remote; its APIResourceList when it is
/// JSON.
async fn discovery_check(
    st: &State,
    remote: &Remote,
    address: &Result<String, String>,
) -> Result<Option<Value>, String> {
    let path = if remote.group.is_empty() {
        format!("/api/{}", remote.version)
    } else {
        format!("/apis/{}/{}", remote.group, remote.version)
    };
    let authority = address.as_deref().map_err(|e| {
        format!(
            "failing or missing response from https://{}.{}.svc:{}{path}: {e}",
            remote.service.name, remote.service.namespace, remote.service.port
        )
    })?;
    let url = format!("https://{authority}{path}");
    let failing = |e: String| format!("failing or missing response from {url}: {e}");
    let client = remote
        .client(authority, st.aggregator.identity())
        .map_err(failing)?;
    let headers = user_headers("system:kube-aggregator", "", &["system:masters".into()]);
    let (status, _, body) = get_bounded(
        &client,
        &Get {
            path: &path,
            url: &url,
            user: &headers,
            extra: &[],
            timeout: APISERVICE_CHECK_TIMEOUT,
            bytes_max: crate::limits::APISERVICE_DISCOVERY_BYTES_MAX,
            what: "discovery document",
        },
    )
    .await
    .map_err(failing)?;
    if !(200..300).contains(&status) {
        return Err(failing(format!("bad status from {url}: {status}")));
    }
    Ok(serde_json::from_slice::<Value>(&body)
        .ok()
        .filter(|v| v.get("resources").is_some_and(Value::is_array)))
}

/// A bounded GET of an aggregated API server.
pub(crate) struct Get<'a> {
    /// Path and query.
    pub path: &'a str,
    /// The URL, for errors.
    pub url: &'a str,
    /// The user headers it is sent with.
    pub user: &'a [(String, String)],
    /// Other headers.
    pub extra: &'a [(&'a str, &'a str)],
    /// Bound of the whole exchange, body included.
    pub timeout: std::time::Duration,
    /// Bound of the body: a larger one is an error.
    pub bytes_max: usize,
    /// What the body is, for errors.
    pub what: &'a str,
}

/// Does `get`: the status, header fields and body; errors as Go's client words them.
pub(crate) async fn get_bounded(
    client: &keel_client::KubeClient,
    get: &Get<'_>,
) -> Result<(u16, Vec<(String, String)>, Vec<u8>), String> {
    let url = get.url;
    let mut refs: Vec<(&str, &str)> = get
        .user
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    refs.extend_from_slice(get.extra);
    let exchange = async {
        let mut answer = client
            .forward(Forward {
                method: Method::GET,
                path: get.path,
                accept: "application/json, */*",
                headers: &refs,
                body: None,
            })
            .await
            .map_err(|e| format!("Get \"{url}\": {e}"))?;
        let mut body = Vec::new();
        while let Some(chunk) = answer.body.next_chunk().await? {
            if body.len() + chunk.len() > get.bytes_max {
                return Err(format!("Get \"{url}\": {} too large", get.what));
            }
            body.extend_from_slice(chunk);
        }
        Ok((answer.status, answer.headers, body))
    };
    match tokio::time::timeout(get.timeout, exchange).await {
        Err(_) => Err(format!(
            "Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
        Ok(r) => r,
    }
}

/// Writes the `Available` condition when its status, reason or message differ from the
/// stored one (its time moves only with its status).
async fn write_if_changed(st: &State, res: &Resource, api: &Value, cond: Condition) {
    if let Some(now) = available_condition(api) {
        let same = |k: &str, want: &str| now.get(k).and_then(Value::as_str) == Some(want);
        if same("status", cond.status)
            && same("reason", cond.reason)
            && same("message", &cond.message)
        {
            return;
        }
    }
    let name = objects::name(api).to_owned();
    let opts = UpdateOptions {
        subresource: "status",
        strategy: true,
        ..Default::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, "", &name, &opts, &mut |cur| {
            let mut new = cur.cloned().ok_or_else(|| res.not_found(&name))?;
            objects::meta_mut(&mut new).shift_remove("resourceVersion");
            let since = available_condition(&new)
                .filter(|c| c.get("status").and_then(Value::as_str) == Some(cond.status))
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| Value::String(objects::now_rfc3339()));
            let c = json!({
                "type": "Available",
                "status": cond.status,
                "lastTransitionTime": since,
                "reason": cond.reason,
                "message": cond.message,
            });
            let mut conditions: Vec<Value> = new
                .at("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("Available"));
            conditions.insert(0, c);
            new["status"] = json!({"conditions": conditions});
            Ok(new)
        })
        .await;
    if let Err(e) = super::gone_ok(r) {
        eprintln!(
            "apiservice availability controller: status of {name}: {}",
            e.message
        );
    }
}

fn available_condition(api: &Value) -> Option<&Value> {
    api.at("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
}
