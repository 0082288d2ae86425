//! The server's shared state: one per process, used from every core and controller. It holds
//! the layers below the handlers (the registry over the storage backend, the live routes with
//! the catalog), authentication and authorization, metrics, and the settings requests need.

use crate::auth::{Authorizer, TokenFile};
use crate::authz::Rbac;
use crate::flowcontrol::FlowControl;
use crate::lifecycle::Lifecycle;
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::routes::LiveRoutes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct State {
    pub registry: Registry,
    pub routes: LiveRoutes,
    pub tokens: TokenFile,
    pub authorizer: Box<dyn Authorizer>,
    /// The RBAC policy (kept by the RBAC controller; the RBAC mode and the RBAC storage's
    /// write checks decide by it).
    pub rbac: Arc<Rbac>,
    /// `--authorization-always-allow-paths`.
    pub always_allow: Vec<String>,
    pub metrics: Metrics,
    /// `--min-request-timeout` (seconds): watches without `timeoutSeconds` last between one
    /// and two of these.
    pub min_request_timeout: u64,
    /// How often idle watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Bootstrap has finished (`/readyz`).
    ready: AtomicBool,
    pub started: Instant,
    /// The livez grace period and graceful shutdown.
    pub lifecycle: Lifecycle,
    /// API Priority and Fairness (`--enable-priority-and-fairness`).
    pub flowcontrol: FlowControl,
    /// `--emulated-version`, `--min-compatibility-version` (`/version`).
    pub emulation: keel_catalog::Emulation,
    /// `--disabled-metrics`: metric names `/metrics` leaves out.
    pub disabled_metrics: Vec<String>,
    /// The aggregated APIs (APIServices with a service) and how to reach them.
    pub aggregator: crate::aggregator::Aggregator,
    /// Service account tokens: issued, checked, their issuer's discovery documents (`None`:
    /// no service account tokens, for in-process callers).
    pub service_accounts: Option<crate::serviceaccount::Issuer>,
    /// `--anonymous-auth` as it applies: requests without credentials are `system:anonymous`.
    pub anonymous: bool,
    /// Request-header (front-proxy) authentication, for certificates the request-header CA
    /// signed (`None`: off).
    pub request_header: Option<crate::auth::RequestHeaderAuth>,
}

/// What `State::new` needs.
pub struct StateParts {
    pub registry: Registry,
    pub routes: LiveRoutes,
    pub tokens: TokenFile,
    pub authorizer: Box<dyn Authorizer>,
    pub rbac: Arc<Rbac>,
    pub always_allow: Vec<String>,
    pub min_request_timeout: u64,
    pub bookmark_interval: Duration,
    /// `--livez-grace-period`.
    pub livez_grace: Duration,
    pub flowcontrol: FlowControl,
    pub emulation: keel_catalog::Emulation,
    /// `--disabled-metrics`: metric names `/metrics` leaves out.
    pub disabled_metrics: Vec<String>,
    pub service_accounts: Option<crate::serviceaccount::Issuer>,
    pub anonymous: bool,
    pub request_header: Option<crate::auth::RequestHeaderAuth>,
}

impl State {
    pub fn new(p: StateParts) -> State {
        State {
            registry: p.registry,
            routes: p.routes,
            tokens: p.tokens,
            authorizer: p.authorizer,
            rbac: p.rbac,
            always_allow: p.always_allow,
            metrics: Metrics::default(),
            min_request_timeout: p.min_request_timeout,
            bookmark_interval: p.bookmark_interval,
            ready: AtomicBool::new(false),
            started: Instant::now(),
            lifecycle: Lifecycle::new(p.livez_grace),
            flowcontrol: p.flowcontrol,
            emulation: p.emulation,
            disabled_metrics: p.disabled_metrics,
            aggregator: Default::default(),
            service_accounts: p.service_accounts,
            anonymous: p.anonymous,
            request_header: p.request_header,
        }
    }

    pub fn mark_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}
