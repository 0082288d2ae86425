//! API aggregation, as upstream's kube-aggregator does it: an `APIService` naming a Service
//! (`spec.service`) hands its group and version to another API server (metrics-server, custom
//! API servers). This module holds what is known of them (published by the availability
//! controller, read by the proxy and discovery). keel
//! - checks each such APIService and keeps its `Available` condition as upstream words it
//!   (the `apiservices` controller: the Service, its port and endpoints, then a discovery GET
//!   of the version through the proxy's transport), and `Local` for the APIServices without a
//!   service;
//! - proxies every request for the group and version to the Service (the handlers' `proxy`), once keel has
//!   authenticated and authorized it, over TLS verified with the APIService's `caBundle` (or
//!   not at all with `insecureSkipTLSVerify`), presenting the front-proxy client certificate
//!   and naming the user in `X-Remote-User`, `X-Remote-Group` and `X-Remote-Extra-` headers;
//! - lists the aggregated groups in discovery (`/apis`, aggregated discovery and
//!   `/apis/<group>`), their resources from the last successful discovery check, every group
//!   (local or remote) in upstream's priority order (`discovery`);
//! - includes their OpenAPI documents in `/openapi/v2` (merged) and `/openapi/v3` (listed and
//!   served as last fetched in the background; `openapi`).
//!
//! The Service is reached as upstream's resolver reaches it (the controller's `resolve`): its
//! cluster IP (or, with `--enable-aggregator-routing`, a ready endpoint of its
//! EndpointSlices), or the host an `ExternalName` Service names. The availability check
//! resolves it and the address is kept in the [`Remote`] for the proxy, until a change of an
//! APIService, Service or EndpointSlice makes the controller forget it.
//!
//! Every group version served here has its local APIService (no service), registered by the
//! controller's `autoregister`.
//!
//! Not done: upgrade requests (exec, port-forward) through the proxy; an aggregated server
//! without OpenAPI v3 gets no `/openapi/v3` entry (upstream converts its v2 document).

pub mod discovery;
pub mod openapi;

pub use crate::service_ref::ServiceRef;
use crate::service_ref::ServiceResolver;
use keel_client::KubeClient;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// The group whose resources the aggregator serves itself: upstream registers no APIService
/// for it.
pub const AGGREGATOR_GROUP: &str = "apiregistration.k8s.io";

/// What the proxy presents to aggregated API servers: the front-proxy client certificate and
/// key (PEM).
#[derive(Clone, Debug, Default)]
pub struct Identity {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

/// The aggregated APIs this server proxies to, as the availability controller last saw them.
#[derive(Default)]
pub struct Aggregator {
    identity: OnceLock<Identity>,
    /// `--enable-aggregator-routing`: reach a Service through its endpoints.
    endpoint_routing: AtomicBool,
    /// Any APIService with a service is known (a request for a built-in group checks only
    /// this).
    any: AtomicBool,
    remotes: RwLock<Arc<Remotes>>,
    /// Resolves Services for other callers (conversion webhooks named by `service`).
    resolver: OnceLock<ServiceResolver>,
    /// The aggregated servers' OpenAPI documents.
    pub openapi: openapi::Specs,
    /// Woken when the group versions served change (custom resources): their local
    /// APIServices follow.
    pub served_changed: tokio::sync::Notify,
}

/// The APIServices with a service, by group.
#[derive(Default)]
pub struct Remotes {
    by_group: HashMap<String, Vec<Arc<Remote>>>,
}

impl Remotes {
    /// Every remote, grouped (groups by priority, then name; versions by priority).
    pub fn groups(&self) -> Vec<(&str, &[Arc<Remote>])> {
        let mut out: Vec<(&str, &[Arc<Remote>])> = self
            .by_group
            .iter()
            .map(|(g, v)| (g.as_str(), v.as_slice()))
            .collect();
        out.sort_by_key(|(g, v)| (std::cmp::Reverse(v[0].group_priority), *g));
        out
    }

    pub fn group(&self, group: &str) -> Option<&[Arc<Remote>]> {
        self.by_group.get(group).map(Vec::as_slice)
    }

    /// The remote serving `group`/`version`.
    pub fn find(&self, group: &str, version: &str) -> Option<&Arc<Remote>> {
        self.group(group)?.iter().find(|r| r.version == version)
    }
}

/// How a remote's server certificate is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trust {
    pub ca_pem: Option<Vec<u8>>,
    pub insecure: bool,
}

/// One APIService with a service.
pub struct Remote {
    /// `<version>.<group>`.
    pub name: String,
    pub group: String,
    pub version: String,
    pub service: ServiceRef,
    pub trust: Trust,
    pub group_priority: i64,
    pub version_priority: i64,
    /// Its `Available` condition is True.
    pub available: bool,
    /// The `APIResourceList` its last successful discovery check answered.
    pub resources: Option<Value>,
    /// A client per address the service resolved to (the last one), shared with the remote
    /// of the next pass while the service and trust stay the same.
    pub client: Arc<Mutex<Option<(String, KubeClient)>>>,
    /// Where its Service resolves (`host:port`): set by the availability check that read the
    /// Service (or by the proxy when unset), cleared when an APIService, Service or
    /// EndpointSlice changes, so a proxied request does not read the store.
    pub address: parking_lot::RwLock<Option<Arc<str>>>,
}

impl Remote {
    /// Where its Service resolved, while that is known.
    pub fn address(&self) -> Option<Arc<str>> {
        self.address.read().clone()
    }

    /// Records where its Service resolves (`None`: not known).
    pub fn set_address(&self, address: Option<String>) {
        *self.address.write() = address.map(Arc::from);
    }

    /// Records where its Service resolved (the proxy, when it had to resolve it).
    pub fn remember_address(&self, address: Arc<str>) {
        *self.address.write() = Some(address);
    }

    /// A client for the remote at `authority` (`host:port`), made once per address.
    pub fn client(&self, authority: &str, identity: &Identity) -> Result<KubeClient, String> {
        let mut cached = self.client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, c)) = cached.as_ref() {
            if at == authority {
                return Ok(c.clone());
            }
        }
        let ep = keel_client::kubeconfig::Endpoint {
            server: format!("https://{authority}"),
            ca_pem: self.trust.ca_pem.clone(),
            client_cert_pem: Some(identity.cert_pem.clone()).filter(|c| !c.is_empty()),
            client_key_pem: Some(identity.key_pem.clone()).filter(|k| !k.is_empty()),
            // Upstream verifies the certificate for the service's DNS name.
            tls_server_name: Some(self.service.host()),
            insecure_skip_tls_verify: self.trust.insecure,
            ..Default::default()
        };
        // No User-Agent of its own: the proxied request's is passed on.
        let c = KubeClient::with_user_agent(&ep, crate::limits::APISERVICE_IDLE_CONNECTIONS, "")?;
        *cached = Some((authority.to_owned(), c.clone()));
        Ok(c)
    }
}

impl Aggregator {
    /// Sets what the proxy presents and how it reaches services (once, at start).
    pub fn configure(&self, identity: Identity, endpoint_routing: bool) {
        let _ = self.identity.set(identity);
        self.endpoint_routing
            .store(endpoint_routing, Ordering::Relaxed);
    }

    /// Installs the Service resolver (once, at start).
    pub fn set_resolver(&self, resolver: ServiceResolver) {
        let _ = self.resolver.set(resolver);
    }

    /// `--enable-aggregator-routing`.
    pub fn endpoint_routing(&self) -> bool {
        self.endpoint_routing.load(Ordering::Relaxed)
    }

    /// The Service resolver, once installed.
    pub fn resolver(&self) -> Option<ServiceResolver> {
        self.resolver.get().cloned()
    }

    /// What the proxy presents (none before `configure`).
    pub fn identity(&self) -> &Identity {
        static NONE: Identity = Identity {
            cert_pem: Vec::new(),
            key_pem: Vec::new(),
        };
        self.identity.get().unwrap_or(&NONE)
    }

    /// The remote serving `group`/`version`, if an APIService with a service names it.
    pub fn remote(&self, group: &str, version: &str) -> Option<Arc<Remote>> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        self.snapshot().find(group, version).cloned()
    }

    /// The remotes now.
    pub fn snapshot(&self) -> Arc<Remotes> {
        self.remotes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether any APIService with a service is known.
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// Forgets where every remote's Service resolved (an APIService, Service or
    /// EndpointSlice changed): until the next check, the proxy resolves it again.
    pub fn forget_addresses(&self) {
        for (_, rs) in self.snapshot().groups() {
            for r in rs {
                r.set_address(None);
            }
        }
    }

    /// Replaces what is known (the availability controller's pass).
    pub fn publish(&self, remotes: Vec<Remote>) {
        let mut by_group: HashMap<String, Vec<Arc<Remote>>> = HashMap::new();
        for r in remotes {
            by_group
                .entry(r.group.clone())
                .or_default()
                .push(Arc::new(r));
        }
        for v in by_group.values_mut() {
            // Upstream's version order: priority, highest first, then Kubernetes version order.
            v.sort_by(|a, b| {
                b.version_priority
                    .cmp(&a.version_priority)
                    .then_with(|| crate::custom::version_order(&b.version, &a.version))
            });
        }
        let any = !by_group.is_empty();
        *self.remotes.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(Remotes { by_group });
        self.any.store(any, Ordering::Relaxed);
    }
}

/// The user headers of a proxied request (upstream's `SetAuthProxyHeaders`).
pub fn user_headers(name: &str, uid: &str, groups: &[String]) -> Vec<(String, String)> {
    let mut out = vec![("X-Remote-User".to_string(), name.to_string())];
    if !uid.is_empty() {
        out.push(("X-Remote-Uid".into(), uid.to_string()));
    }
    for g in groups {
        out.push(("X-Remote-Group".into(), g.clone()));
    }
    out
}
