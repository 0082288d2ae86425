//! Process start-up: validate options, open the storage backend, build the layers (storage,
//! registry, routes, state, handlers), serve, bootstrap, start the controllers.

use crate::alloc::Allocators;
use crate::auth::TokenFile;
use crate::handlers::Handler;
use crate::limits::{BOOKMARK_INTERVAL_MIN, MAINTENANCE_INTERVAL_MIN, SHUTDOWN_DRAIN_MAX};
use crate::options::{self, Cidr, Options};
use crate::registry::Registry;
use crate::routes::LiveRoutes;
use crate::state::{State, StateParts};
use crate::storage::{Location, Storage};
use keel_engine::Store;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

/// The client certificate the aggregator's proxy presents and the request-header trust
/// published for aggregated API servers: the given files, or the front-proxy CA and client
/// certificate made in `pki` on first start.
fn front_proxy(
    opts: &Options,
    pki: &std::path::Path,
) -> Result<
    (
        crate::aggregator::Identity,
        crate::controllers::authtrust::RequestHeader,
        std::path::PathBuf,
    ),
    String,
> {
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let (cert, key, ca, names) = match (
        &opts.proxy_client_cert_file,
        &opts.proxy_client_key_file,
        &opts.requestheader_client_ca_file,
    ) {
        (Some(c), Some(k), Some(ca)) => (
            c.clone(),
            k.clone(),
            ca.clone(),
            opts.requestheader_allowed_names.clone(),
        ),
        (None, None, None) => {
            let f = keel_http::tls::load_or_create_front_proxy(pki)
                .map_err(|e| format!("front-proxy certificates in {}: {e}", pki.display()))?;
            make_private(&f.client_key, false)?;
            let names = if opts.requestheader_allowed_names.is_empty() {
                vec![keel_http::tls::FRONT_PROXY_CLIENT_NAME.to_string()]
            } else {
                opts.requestheader_allowed_names.clone()
            };
            (f.client_cert, f.client_key, f.ca_cert, names)
        }
        _ => {
            return Err("--proxy-client-cert-file, --proxy-client-key-file and \
                 --requestheader-client-ca-file go together"
                .into())
        }
    };
    let ca_pem = String::from_utf8(read(&ca)?).map_err(|e| format!("{}: {e}", ca.display()))?;
    Ok((
        crate::aggregator::Identity {
            cert_pem: read(&cert)?,
            key_pem: read(&key)?,
        },
        crate::controllers::authtrust::RequestHeader {
            ca_pem,
            auth: crate::auth::RequestHeaderAuth {
                allowed_names: names,
                username_headers: opts.requestheader_username_headers.clone(),
                uid_headers: opts.requestheader_uid_headers.clone(),
                group_headers: opts.requestheader_group_headers.clone(),
                extra_prefixes: opts.requestheader_extra_headers_prefix.clone(),
            },
        },
        ca,
    ))
}

/// Checks everything that can be checked before touching the data directory.
/// What the flags resolve to, checked before anything starts.
pub struct Validated {
    /// The service ranges: one, or two of different families (primary first).
    pub cidrs: Vec<Cidr>,
    pub ports: (u16, u16),
    pub catalog: keel_catalog::Catalog,
    pub emulation: keel_catalog::Emulation,
    /// `--controllers`: which of kube-controller-manager's controllers keel runs.
    pub controllers: crate::controllers::enabled::Enabled,
    /// `--feature-gates`, checked against the v1.36 gate lifecycle. Nothing consults it yet.
    pub feature_gates: crate::feature_gates::FeatureGates,
    /// What start-up should log before serving (setting GA, deprecated or alpha gates).
    pub warnings: Vec<String>,
}

pub fn validate(opts: &Options) -> Result<Validated, String> {
    match opts.storage_backend.as_str() {
        "keel" if opts.memory_store_without_revisions => {
            return Err("--memory-store-without-revisions needs --storage-backend=memory".into())
        }
        "keel" | "memory" => {}
        "etcd3" => {
            return Err(
                "--storage-backend=etcd3 is not implemented yet; use the embedded store (keel)"
                    .into(),
            )
        }
        other => {
            return Err(format!(
                "--storage-backend: unknown backend {other:?} (expected \"keel\" or \"memory\")"
            ))
        }
    }
    crate::authz::build(&opts.authorization_mode)?;
    if opts.sync.parse::<keel_engine::SyncMode>().is_err() {
        return Err(format!(
            "--sync: expected \"always\" or \"none\", got {:?}",
            opts.sync
        ));
    }
    // Upstream's own texts, unprefixed, so a refusal reads as kube-apiserver's does.
    let crate::feature_gates::Parsed {
        gates: feature_gates,
        warnings,
    } = crate::feature_gates::FeatureGates::parse(&opts.feature_gates)?;
    options::check_show_hidden_metrics(&opts.show_hidden_metrics_for_version)?;
    let cidrs = options::parse_service_ranges(&opts.service_cluster_ip_range)?;
    let ports = options::parse_port_range(&opts.service_node_port_range)
        .map_err(|e| format!("--service-node-port-range: {e}"))?;
    let emulation =
        keel_catalog::Emulation::parse(&opts.emulated_version, &opts.min_compatibility_version)?
            .forward_compatible(
                opts.emulation_forward_compatible,
                opts.runtime_config_emulation_forward_compatible,
            )?;
    let catalog = keel_catalog::Catalog::emulating(&opts.runtime_config, emulation)
        .map_err(|e| format!("--runtime-config: {e}"))?;
    let controllers = crate::controllers::enabled::Enabled::parse(&opts.controllers)
        .map_err(|e| format!("--controllers: {e}"))?;
    if opts.tls_cert_file.is_some() != opts.tls_private_key_file.is_some() {
        return Err("--tls-cert-file and --tls-private-key-file must be given together".into());
    }
    Ok(Validated {
        cidrs,
        ports,
        catalog,
        emulation,
        controllers,
        feature_gates,
        warnings,
    })
}

pub fn run(opts: Options) -> Result<(), String> {
    if opts.exit_on_stdin_close {
        std::thread::spawn(|| {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
            std::process::exit(0);
        });
    }
    let Validated {
        cidrs,
        ports,
        catalog,
        emulation,
        controllers,
        feature_gates: _feature_gates,
        warnings,
    } = validate(&opts)?;
    for warning in &warnings {
        eprintln!("apiserver: {warning}");
    }
    // Before the data directory is touched: a bad file must not leave a half-started server.
    let encryption = opts
        .encryption_provider_config
        .as_deref()
        .map(crate::storage::encryption::Encryption::load)
        .transpose()?;
    let data = opts.data_dir.clone();
    // Private: the data directory holds the store (Secrets), keys, tokens, a kubeconfig.
    make_private(&data, true)?;

    // Credentials.
    let pki = data.join("pki");
    make_private(&pki, true)?;
    let tls = keel_http::tls::load_or_create(&pki, &[opts.bind_address.to_string()])
        .map_err(|e| format!("certificates in {}: {e}", pki.display()))?;
    for key in [&tls.ca_key, &tls.key] {
        make_private(key, false)?;
    }
    let (cert, key) = match (&opts.tls_cert_file, &opts.tls_private_key_file) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        _ => (tls.cert.clone(), tls.key.clone()),
    };
    let client_ca = opts
        .client_ca_file
        .clone()
        .unwrap_or_else(|| tls.ca_cert.clone());
    let (proxy_identity, request_header, request_header_ca) = front_proxy(&opts, &pki)?;
    let server_tls = keel_http::tls::server_config_trusting(
        &cert,
        &key,
        Some(&client_ca),
        Some(&request_header_ca),
    )?;
    let token_path = match &opts.token_auth_file {
        Some(p) => p.clone(),
        None => {
            let p = crate::controllers::bootstrap::ensure_token_file(&data)
                .map_err(|e| format!("token file: {e}"))?;
            make_private(&p, false)?;
            p
        }
    };
    let tokens = TokenFile::load(&token_path)?;
    let service_accounts = service_account_issuer(&opts, &pki)?;
    // As upstream: anonymous requests are never let through AlwaysAllow alone.
    let anonymous = opts.anonymous_auth && opts.authorization_mode.trim() != "AlwaysAllow";
    if opts.anonymous_auth && !anonymous {
        eprintln!(
            "apiserver: AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer"
        );
    }

    // Layers: storage backend, registry, routes, shared state.
    let backend = open_backend(&opts, &data)?;
    let namespaces = catalog
        .lookup("", "v1", "namespaces")
        .map(|ns| Location::of(&catalog, ns))
        .ok_or("namespaces are always served")?;
    let mut storage = Storage::new(backend);
    if let Some(encryption) = encryption {
        storage = storage.with_encryption(encryption);
    }
    crate::storage::compactor::spawn_if_needed(
        storage.clone(),
        opts.storage_maintenance_interval
            .max(MAINTENANCE_INTERVAL_MIN),
        opts.watch_history,
    );
    let registry = Registry::new(storage, Allocators::new(cidrs, ports), namespaces);
    let cores = opts.cores.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let crate::authz::Built {
        chain,
        rbac,
        node_graph,
    } = crate::authz::build(&opts.authorization_mode)?;
    let st = Arc::new(State::new(StateParts {
        registry,
        routes: LiveRoutes::new(catalog),
        tokens,
        authorizer: Box::new(chain),
        rbac: rbac.clone(),
        always_allow: opts.authorization_always_allow_paths.clone(),
        min_request_timeout: opts.min_request_timeout,
        bookmark_interval: opts.watch_bookmark_interval.max(BOOKMARK_INTERVAL_MIN),
        livez_grace: opts.livez_grace_period,
        flowcontrol: crate::flowcontrol::FlowControl::new(
            opts.enable_priority_and_fairness,
            opts.max_requests_inflight + opts.max_mutating_requests_inflight,
            cores,
        ),
        emulation,
        disabled_metrics: opts.disabled_metrics.clone(),
        service_accounts: Some(service_accounts),
        anonymous,
        request_header: Some(request_header.auth.clone()),
    }));

    // Serve.
    let mut listeners = vec![keel_http::Listener {
        addr: SocketAddr::new(opts.bind_address, opts.secure_port),
        tls: Some(server_tls),
    }];
    if opts.insecure_port != 0 {
        listeners.push(keel_http::Listener {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), opts.insecure_port),
            tls: None,
        });
    }
    let limits = keel_http::Limits {
        body_bytes_max: opts.max_request_bytes,
        body_bytes_in_flight_per_core_max: opts
            .max_request_bytes
            .saturating_mul(crate::limits::LARGEST_BODIES_IN_FLIGHT_PER_CORE),
        // With priority and fairness the levels' seats and queues bound the work; the HTTP
        // layer's cap then only backs them up (one request per connection), so that it never
        // refuses what APF exempts (health probes, system:masters).
        in_flight_per_core_max: if opts.enable_priority_and_fairness {
            keel_http::Limits::default().connections_per_core_max
        } else {
            opts.max_requests_inflight
        },
        ..Default::default()
    };
    let server = keel_http::serve(
        keel_http::ServeConfig {
            listeners,
            cores,
            pin: true,
            limits,
        },
        Arc::new(Handler(st.clone())),
    )
    .map_err(|e| format!("listening: {e}"))?;
    let addrs = server.local_addrs();
    let secure = addrs[0];

    // Bootstrap on a helper runtime, then report readiness.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let synced = rt.block_on(crate::controllers::bootstrap::bootstrap(&st, secure.port()))?;
    let advertise = opts.advertise_address.unwrap_or(opts.bind_address);
    if let Err(e) = rt.block_on(crate::controllers::bootstrap::endpoints(
        &st,
        advertise,
        secure.port(),
    )) {
        eprintln!("apiserver: {e}");
    }
    if st.flowcontrol.enabled {
        // Errors are logged and retried by the controller; the built-in bootstrap applies.
        if let Err(e) = rt.block_on(crate::controllers::flowcontrol::reconcile(&st)) {
            eprintln!("flow-control controller: {e}");
        }
    }
    let client_ca_pem =
        std::fs::read_to_string(&client_ca).map_err(|e| format!("{}: {e}", client_ca.display()))?;
    if let Err(e) = rt.block_on(crate::controllers::authtrust::reconcile(
        &st,
        &client_ca_pem,
        Some(&request_header),
    )) {
        eprintln!("auth trust controller: {}", e.message);
    }
    crate::controllers::authtrust::spawn(st.clone(), client_ca_pem, Some(request_header));
    st.aggregator
        .configure(proxy_identity, opts.enable_aggregator_routing);
    crate::controllers::apiservices::install_resolver(&st);
    // As upstream's readiness waits for its bootstrap roles and RBAC informers.
    let aggregate = controllers.is_enabled(crate::controllers::enabled::CLUSTERROLE_AGGREGATION);
    let from = rt.block_on(crate::controllers::rbac::start(&st, &rbac, aggregate));
    crate::controllers::rbac::spawn(st.clone(), rbac, from, aggregate);
    // The Node mode's graph, loaded before ready as upstream waits for its informers.
    if let Some(graph) = node_graph {
        let from = rt.block_on(crate::controllers::nodegraph::start(&st, &graph));
        crate::controllers::nodegraph::spawn(st.clone(), graph, from);
    }
    let served = rt.block_on(crate::controllers::crd::start(&st));
    crate::controllers::crd::spawn(st.clone(), served);
    let registered = rt.block_on(crate::controllers::apiservices::start(&st));
    crate::controllers::apiservices::spawn(st.clone(), !registered);
    spawn_manager_controllers(&st, &controllers);
    let defaults = crate::controllers::namespacedefaults::Parts {
        service_accounts: controllers.is_enabled(crate::controllers::enabled::SERVICE_ACCOUNT),
        root_ca: match controllers.is_enabled(crate::controllers::enabled::ROOT_CA_PUBLISHER) {
            true => {
                let p = opts.root_ca_file.as_ref().unwrap_or(&tls.ca_cert);
                Some(std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?)
            }
            false => None,
        },
    };
    if defaults.service_accounts || defaults.root_ca.is_some() {
        // Once before serving, so a namespace's defaults are there when the server is ready.
        if let Err(e) = rt.block_on(crate::controllers::namespacedefaults::pass(&st, &defaults)) {
            eprintln!("namespace defaults controller: {}", e.message);
        }
        crate::controllers::namespacedefaults::spawn(st.clone(), defaults);
    }
    crate::controllers::ipallocator::spawn(st.clone(), Some(synced));
    if st.flowcontrol.enabled {
        crate::controllers::flowcontrol::spawn(st.clone());
    }
    let host = match secure.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".to_string(),
        IpAddr::V6(ip) if ip.is_unspecified() => "127.0.0.1".to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    let server_url = format!("https://{host}:{}", secure.port());
    if let Some(sa) = &st.service_accounts {
        // Upstream's default names the advertised address.
        let external = match opts.advertise_address {
            Some(IpAddr::V6(ip)) => format!("[{ip}]"),
            Some(ip) => ip.to_string(),
            None => host.clone(),
        };
        sa.publish(
            &opts.service_account_jwks_uri,
            &format!("{external}:{}", secure.port()),
        )?;
    }
    let ca_pem =
        std::fs::read(&tls.ca_cert).map_err(|e| format!("{}: {e}", tls.ca_cert.display()))?;
    if let Some(token) = crate::controllers::bootstrap::admin_token(&token_path) {
        let kc =
            crate::controllers::bootstrap::write_kubeconfig(&data, &server_url, &ca_pem, &token)
                .map_err(|e| format!("kubeconfig: {e}"))?;
        eprintln!("apiserver: wrote {}", kc.display());
    }
    if let Some(p) = addrs.get(1) {
        write_whole(&data.join("insecure-port"), &p.port().to_string())?;
    }
    // Last: tools and tests wait for this file to know the server is up.
    write_whole(&data.join("port"), &secure.port().to_string())?;
    st.mark_ready();
    eprintln!("apiserver: serving on {server_url} ({cores} cores)");
    let signal = crate::lifecycle::wait_for_termination()?;
    shut_down(&st, &opts, server, signal);
    Ok(())
}

/// The service account token issuer `--service-account-*` and `--api-audiences` configure;
/// the signing key made in `pki` on first start when none is given.
fn service_account_issuer(
    opts: &Options,
    pki: &Path,
) -> Result<crate::serviceaccount::Issuer, String> {
    use crate::serviceaccount::keys;
    let read = |p: &Path| -> Result<String, String> {
        let fail = |e: std::io::Error| format!("{}: {e}", p.display());
        let len = std::fs::metadata(p).map_err(fail)?.len();
        if len > crate::limits::KEY_FILE_BYTES_MAX {
            return Err(format!(
                "{}: larger than {} bytes",
                p.display(),
                crate::limits::KEY_FILE_BYTES_MAX
            ));
        }
        std::fs::read_to_string(p).map_err(fail)
    };
    let signing_path = match &opts.service_account_signing_key_file {
        Some(p) => p.clone(),
        None => {
            let p = pki.join("sa.key");
            if !p.exists() {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                let pem = keys::SigningKey::generate_pem()?;
                let tmp = p.with_extension("tmp");
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&tmp)
                    .map_err(|e| format!("{}: {e}", tmp.display()))?;
                f.write_all(pem.as_bytes())
                    .and_then(|_| f.sync_all())
                    .map_err(|e| format!("{}: {e}", tmp.display()))?;
                std::fs::rename(&tmp, &p).map_err(|e| format!("{}: {e}", p.display()))?;
            }
            make_private(&p, false)?;
            p
        }
    };
    let signing = keys::SigningKey::from_pem(&read(&signing_path)?).map_err(|e| {
        format!(
            "--service-account-signing-key-file {}: {e}",
            signing_path.display()
        )
    })?;
    let mut verify = Vec::new();
    for p in &opts.service_account_key_file {
        verify.extend(
            keys::public_keys_from_pem(&read(p)?)
                .map_err(|e| format!("--service-account-key-file {}: {e}", p.display()))?,
        );
    }
    let issuers: Vec<String> = opts
        .service_account_issuer
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    crate::serviceaccount::Issuer::new(
        issuers,
        opts.api_audiences.clone(),
        signing,
        verify,
        opts.service_account_max_token_expiration.as_secs() as i64,
        opts.service_account_extend_token_expiration,
    )
}

/// The controllers upstream runs in kube-controller-manager, as `--controllers` enables them.
fn spawn_manager_controllers(st: &Arc<State>, enabled: &crate::controllers::enabled::Enabled) {
    use crate::controllers::{enabled as names, garbagecollector, namespace, volumeprotection};
    if enabled.is_enabled(names::NAMESPACE) {
        namespace::spawn(st.clone());
    }
    if enabled.is_enabled(names::GARBAGE_COLLECTOR) {
        garbagecollector::spawn(st.clone());
    }
    let parts = volumeprotection::Parts {
        claims: enabled.is_enabled(names::PVC_PROTECTION),
        volumes: enabled.is_enabled(names::PV_PROTECTION),
        classes: enabled.is_enabled(names::VAC_PROTECTION),
    };
    if parts.claims || parts.volumes || parts.classes {
        volumeprotection::spawn(st.clone(), parts);
    }
}

/// Writes `text` to `path` whole: readers never see the file empty or half written (a
/// temporary file renamed over it).
fn write_whole(path: &std::path::Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Graceful shutdown (see `crate::lifecycle`): readiness fails, the delay passes with requests
/// served, the requests in flight drain, the listener closes, watches end, writes stop.
fn shut_down(st: &State, opts: &Options, server: keel_http::ServerHandle, signal: &str) {
    eprintln!(
        "apiserver: {signal}: shutting down (readyz fails now; delay {:?})",
        opts.shutdown_delay_duration
    );
    st.lifecycle.initiate_shutdown();
    std::thread::sleep(opts.shutdown_delay_duration);
    if opts.shutdown_send_retry_after {
        st.lifecycle.start_rejecting();
        if !st.lifecycle.wait_drained(SHUTDOWN_DRAIN_MAX) {
            eprintln!(
                "apiserver: requests still in flight after {SHUTDOWN_DRAIN_MAX:?}; closing anyway"
            );
        }
    }
    server.shutdown();
    st.registry.storage().stop_writes();
    eprintln!("apiserver: shut down");
}

/// The storage backend `--storage-backend` names.
fn open_backend(opts: &Options, data: &Path) -> Result<Arc<dyn Store>, String> {
    if opts.storage_backend == "memory" {
        let mut limits = keel_engine::Limits::default();
        limits.value_bytes_max = opts.max_request_bytes.max(limits.value_bytes_max);
        let model = keel_engine::MemStore::new(limits);
        return Ok(Arc::new(if opts.memory_store_without_revisions {
            model.without_revision_before_seal()
        } else {
            model
        }));
    }
    let mut eo = keel_engine::Options::new(data.join("store"));
    if let Some(n) = opts.shards {
        eo.shards = n.max(1);
    }
    eo.sync = opts.sync.parse().expect("validated");
    eo.commit_linger = opts.commit_linger;
    eo.commit_linger_gate = Some(keel_http::load::saturated);
    eo.history = opts.watch_history;
    eo.maintenance_interval = Some(
        opts.storage_maintenance_interval
            .max(MAINTENANCE_INTERVAL_MIN),
    );
    eo.limits.value_bytes_max = opts.max_request_bytes.max(eo.limits.value_bytes_max);
    eo.repair = opts.storage_repair;
    let dir = eo.dir.clone();
    let engine = keel_engine::Engine::open(eo).map_err(|e| match e {
        keel_engine::Error::Corrupt { .. } => format!(
            "opening the store: {e}\nTo start anyway with the data before the damage, copy {} \
             and start with --storage-repair: what it drops is logged and kept aside as \
             *.dropped.",
            data.display()
        ),
        e => format!("opening the store in {}: {e}", dir.display()),
    })?;
    if engine.recovery_report().dropped_data() {
        eprintln!(
            "apiserver: --storage-repair dropped acknowledged data from {} (the keel-engine \
             lines above say which files, offsets and revisions)",
            dir.display()
        );
    }
    Ok(Arc::new(engine))
}

/// Makes `path` private to its owner: a directory (created if missing) 0700, a file 0600.
/// A looser mode left by an older version or an operator is reduced, and logged.
fn make_private(path: &Path, dir: bool) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    if dir {
        keel_engine::io::create_private_dir_all(path).map_err(fail)?;
    }
    let max = if dir {
        keel_engine::io::DIR_MODE
    } else {
        keel_engine::io::FILE_MODE
    };
    if let Some(was) = keel_engine::io::restrict_mode(path, max).map_err(fail)? {
        eprintln!(
            "apiserver: {} had mode {:04o}; set to {:04o} (it holds secrets)",
            path.display(),
            was & 0o7777,
            was & max
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn make_private_creates_0700_and_reduces_looser_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("a/data");
        make_private(&data, true).unwrap();
        assert_eq!(mode(&data), 0o700);
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = data.join("key");
        std::fs::write(&key, "secret").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        make_private(&data, true).unwrap();
        make_private(&key, false).unwrap();
        assert_eq!((mode(&data), mode(&key)), (0o700, 0o600));
    }

    /// A damaged store stops the start with the error and how to get past it; with
    /// `--storage-repair` it opens.
    #[test]
    fn a_damaged_store_needs_storage_repair() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path();
        let args = |repair: bool| {
            let mut a = vec!["apiserver", "--data-dir", data.to_str().unwrap()];
            if repair {
                a.push("--storage-repair");
            }
            Options::parse_from(a)
        };
        drop(open_backend(&args(false), data).unwrap());
        let manifest = data.join("store/MANIFEST");
        let mut b = std::fs::read(&manifest).unwrap();
        b[20] ^= 1;
        std::fs::write(&manifest, b).unwrap();
        let e = open_backend(&args(false), data).err().expect("refused");
        assert!(
            e.contains("MANIFEST") && e.contains("--storage-repair"),
            "{e}"
        );
        drop(open_backend(&args(true), data).expect("repaired"));
        drop(open_backend(&args(false), data).expect("whole again"));
    }
}
