//! Command-line options. Names follow kube-apiserver's where one exists.

use clap::Parser;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

/// keel's Kubernetes-compatible API server.
///
/// Starts on the embedded storage engine by default. On first start it creates a CA, a serving
/// certificate, an admin bearer token and `<data-dir>/admin.kubeconfig`, so
/// `KUBECONFIG=<data-dir>/admin.kubeconfig kubectl get ns` works at once.
#[derive(Parser, Debug, Clone)]
#[command(name = "apiserver", version, about, long_about = None)]
pub struct Options {
    /// Directory for the store, certificates, tokens and the admin kubeconfig.
    #[arg(long, default_value = "./data")]
    pub data_dir: PathBuf,

    /// Address to serve HTTPS on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    /// The address this server is reached at from the cluster: the `kubernetes` service's
    /// Endpoints and EndpointSlice point at it. Default: --bind-address (a loopback or
    /// unspecified address gives the service no endpoints).
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,

    /// HTTPS port (0 picks a free port; the chosen port is written to `<data-dir>/port`).
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,

    /// Serve plain HTTP on this loopback port as well (0 = off). Requests on it still need a
    /// bearer token. For load tests.
    #[arg(long, default_value_t = 0)]
    pub insecure_port: u16,

    /// Serving certificate (PEM). Default: `<data-dir>/pki/apiserver.crt`, created on first start.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,

    /// Serving key (PEM), with --tls-cert-file.
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,

    /// CA bundle to verify client certificates (x509 authentication: CN = user, O = groups).
    /// Default: the CA keel creates in `<data-dir>/pki`.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// Client certificate (PEM) the server presents when it proxies a request to an aggregated
    /// API server (an APIService with a service). Default: `<data-dir>/pki/front-proxy-client.crt`,
    /// issued on first start by a front-proxy CA of its own.
    #[arg(long)]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// Key (PEM) of --proxy-client-cert-file.
    #[arg(long)]
    pub proxy_client_key_file: Option<PathBuf>,

    /// CA bundle that signs the proxy client certificate, published in `kube-system/
    /// extension-apiserver-authentication` for aggregated API servers to trust. Default:
    /// `<data-dir>/pki/front-proxy-ca.crt` (with the default client certificate).
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Common names the proxy client certificate may carry, published with the CA (empty:
    /// any name). Default with the generated certificate: `front-proxy-client`. A client
    /// certificate signed by --requestheader-client-ca-file with one of these names is a
    /// front proxy: the request is made as the user its headers name.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,

    /// Request headers naming the user a front proxy authenticated (the first present).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-User")]
    pub requestheader_username_headers: Vec<String>,

    /// Request headers naming the user's UID (the first present; none by default).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_uid_headers: Vec<String>,

    /// Request headers naming the user's groups (every value).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Group")]
    pub requestheader_group_headers: Vec<String>,

    /// Prefixes of request headers carrying the user's extras (the rest of the name is the
    /// key).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Extra-")]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// Reach an aggregated API server at a ready endpoint of its Service's EndpointSlices
    /// instead of the Service's cluster IP.
    #[arg(long, default_value_t = false)]
    pub enable_aggregator_routing: bool,

    /// Static bearer tokens, kube-apiserver format: `token,user,uid,"group1,group2"` per line.
    /// Default: `<data-dir>/tokens.csv`, created on first start with an admin token.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,

    /// Service account token issuer identifiers (`iss`): the first is written into the
    /// tokens keel issues, every one is accepted; the first is published at
    /// `/.well-known/openid-configuration` (it must then be an https URL).
    #[arg(long, default_value = crate::serviceaccount::DEFAULT_ISSUER)]
    pub service_account_issuer: Vec<String>,

    /// PEM private key (RSA, or EC P-256/P-384) that signs service account tokens.
    /// Default `<data-dir>/pki/sa.key`, made (an EC P-256 key) on first start when absent.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// PEM files of the public keys (or certificates, or private keys) that verify service
    /// account tokens; repeatable. Default: the signing key's public half.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,

    /// Identifiers of the API: a token must be meant for one of them (`aud`). Default: the
    /// issuers.
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// The longest validity a TokenRequest gets (longer requests are shortened, with a
    /// warning); `0s`: no maximum.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub service_account_max_token_expiration: Duration,

    /// Pod-bound tokens requested for 3607 seconds (what a kubelet asks for) are valid for
    /// a year and carry a `warnafter` claim, as upstream's safe roll-out of bound tokens.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub service_account_extend_token_expiration: bool,

    /// The `jwks_uri` of the discovery document. Default
    /// `https://<this server's address>/openid/v1/jwks`.
    #[arg(long, default_value = "")]
    pub service_account_jwks_uri: String,

    /// The CA bundle published as `ca.crt` in every namespace's `kube-root-ca.crt` ConfigMap
    /// (what in-cluster clients verify this server with). Default: keel's own CA, which
    /// signs its serving certificate.
    #[arg(long)]
    pub root_ca_file: Option<PathBuf>,

    /// Requests without credentials are made as `system:anonymous` (group
    /// `system:unauthenticated`) and authorized as such; `false`: they get 401. Forced off
    /// when the only authorization mode is `AlwaysAllow`, as upstream does.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub anonymous_auth: bool,

    /// Authorization modes, a comma-separated chain asked in order (members of
    /// `system:masters` are allowed first): `AlwaysAllow` (any authenticated user),
    /// `AlwaysDeny`, `Node` (kubelets, `system:node:<name>` in `system:nodes`: what their
    /// pods need and upstream's node rules), `RBAC` (Roles, ClusterRoles and their bindings).
    /// `Webhook` is not implemented yet (refused at start).
    #[arg(long, default_value = "AlwaysAllow")]
    pub authorization_mode: String,

    /// Paths served without authentication or authorization.
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    pub authorization_always_allow_paths: Vec<String>,

    /// CIDR range from which Service cluster IPs are allocated.
    #[arg(long, default_value = "10.0.0.0/24")]
    pub service_cluster_ip_range: String,

    /// Port range for NodePort services, `low-high` inclusive.
    #[arg(long, default_value = "30000-32767")]
    pub service_node_port_range: String,

    /// Storage backend: `keel` (the embedded engine, in `<data-dir>/store`) or `memory` (the
    /// in-memory reference model of the store: nothing survives a restart; for tests).
    /// `etcd3` is not implemented yet.
    #[arg(long, default_value = "keel")]
    pub storage_backend: String,

    /// With `--storage-backend=memory`: store objects without their resourceVersion, as a
    /// backend that learns revisions only after a write (etcd) must, so that reads fill it
    /// in. For testing that path.
    #[arg(long, hide = true)]
    pub memory_store_without_revisions: bool,

    /// etcd endpoints for `--storage-backend=etcd3` (not implemented yet).
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// When a write is durable: `always` (fdatasync, group commit) or `none` (page cache only).
    #[arg(long, default_value = "always")]
    pub sync: String,

    /// With `--sync always`: how long a busy shard waits for more writes before an
    /// fdatasync, so that concurrent writes share it (`0` syncs at once). A lone writer is
    /// never delayed; concurrent writers wait at most this much longer for more throughput.
    #[arg(long, default_value = "500us", value_parser = parse_duration)]
    pub commit_linger: Duration,

    /// Storage shards (default: one per core). Fixed when the store is created.
    #[arg(long)]
    pub shards: Option<usize>,

    /// Encryption at rest: an `apiserver.config.k8s.io/v1` `EncryptionConfiguration` file
    /// (YAML or JSON) naming, per resource, the providers (`aesgcm`, `aescbc`, `secretbox`,
    /// `identity`; `kms` is refused) and their keys. Writes use the first provider's first
    /// key; reads accept every listed one. A bad file stops the start.
    #[arg(long)]
    pub encryption_provider_config: Option<PathBuf>,

    /// Start on a damaged store anyway. Without it, damage to acknowledged data in
    /// `<data-dir>/store` (a cut, erased or overwritten segment, a missing or extra segment
    /// file, a bad SHARDS, COMPACTED or MANIFEST) stops the start with an error naming the
    /// file, the offset and the revisions affected, and changes nothing. With it, each shard
    /// keeps the data before the first damage, the rest is set aside as `<file>.dropped`,
    /// every drop is logged (file, offset, revisions), and the server starts; objects in the
    /// dropped ranges are gone, or back to an older version. Copy the data directory first.
    #[arg(long)]
    pub storage_repair: bool,

    /// Serving threads, one pinned runtime per core (default: number of cores).
    #[arg(long)]
    pub cores: Option<usize>,

    /// How long change history is kept for watches and exact-revision reads.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub watch_history: Duration,

    /// Enable or disable API group versions: `batch/v1=false,api/beta=true`.
    #[arg(long, default_value = "")]
    pub runtime_config: String,

    /// The release whose APIs the server serves: `1.N` or `kube=1.N`, the binary's own
    /// (1.36) or one of the three before it. Kinds introduced later are not served.
    #[arg(long, default_value = "")]
    pub emulated_version: String,

    /// The oldest release of control-plane components the server stays compatible with
    /// (`/version`): at most the emulated one; by default one minor before it.
    #[arg(long, default_value = "")]
    pub min_compatibility_version: String,

    /// While emulating an earlier release: a beta or GA resource served at it is also served
    /// in its group's higher-priority versions introduced after it.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false)]
    pub emulation_forward_compatible: bool,

    /// While emulating an earlier release: resources and versions introduced after it are
    /// served when `--runtime-config` names them (instead of refusing to start).
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false)]
    pub runtime_config_emulation_forward_compatible: bool,

    /// Feature gates, `Name=true|false,...`, checked against kube-apiserver v1.36's gates
    /// (`feature_gates`): an unknown gate or a locked one set off refuses start. Keel has no
    /// gated behaviour yet.
    #[arg(long, default_value = "")]
    pub feature_gates: String,

    /// Metrics `/metrics` leaves out (fully qualified names, comma-separated), as upstream's
    /// `--disabled-metrics`.
    #[arg(long, value_delimiter = ',')]
    pub disabled_metrics: Vec<String>,

    /// Shows the metrics hidden in this release (deprecated since the one before last): only
    /// the previous minor version is accepted, as upstream. keel serves no hidden metric.
    #[arg(long, default_value = "")]
    pub show_hidden_metrics_for_version: String,

    /// Maximum non-mutating requests in flight. With priority and fairness it is part of the
    /// server's concurrency limit (with --max-mutating-requests-inflight) that the priority
    /// levels share; without it, the per-core in-flight cap (then 429).
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// Maximum mutating requests in flight: the rest of the concurrency limit that priority
    /// and fairness shares among the priority levels.
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// API Priority and Fairness: classify requests by the FlowSchemas, queue them fairly
    /// per priority level, exempt `system:masters` and health probes. `false` keeps the
    /// per-core in-flight cap for every request alike.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_priority_and_fairness: bool,

    /// A list of controllers to enable, as kube-controller-manager's flag: '*' enables all
    /// on-by-default controllers, 'foo' enables the controller named 'foo', '-foo' disables
    /// the controller named 'foo'. Keel runs these of kube-controller-manager's controllers
    /// in-process: namespace-controller, garbage-collector-controller,
    /// persistentvolumeclaim-protection-controller, persistentvolume-protection-controller,
    /// volumeattributesclass-protection-controller, clusterrole-aggregation-controller,
    /// serviceaccount-controller, root-ca-certificate-publisher-controller; turn them off when an external
    /// kube-controller-manager runs them (e.g.
    /// `--controllers=-garbage-collector-controller,-namespace-controller,*`). Every other
    /// kube-controller-manager name is accepted and changes nothing; the controllers
    /// upstream runs inside kube-apiserver (bootstrap, priority and fairness, authentication
    /// trust, service IP repair) always run.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// Maximum request body size in bytes (then 413).
    #[arg(long, default_value_t = 3 * 1024 * 1024)]
    pub max_request_bytes: usize,

    /// Minimum watch timeout: a watch without timeoutSeconds lasts between this and twice it.
    #[arg(long, default_value_t = 1800)]
    pub min_request_timeout: u64,

    /// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK (tests shorten it).
    #[arg(long, hide = true, default_value = "1m", value_parser = parse_duration)]
    pub watch_bookmark_interval: Duration,

    /// How often the store compacts history older than --watch-history (tests shorten it).
    #[arg(long, hide = true, default_value = "10s", value_parser = parse_duration)]
    pub storage_maintenance_interval: Duration,

    /// On SIGTERM, how long `/readyz` reports the shutdown while requests are still served
    /// as before, so load balancers stop sending new ones first.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub shutdown_delay_duration: Duration,

    /// After the shutdown delay, keep listening until the requests in flight have drained,
    /// answering new ones 429 with `Retry-After: 5` and `Connection: close`.
    #[arg(long)]
    pub shutdown_send_retry_after: bool,

    /// How long after start `/livez` assumes unfinished start-up hooks will finish.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub livez_grace_period: Duration,

    /// Exit when standard input reaches end of file (for test harnesses that own the
    /// process through a pipe).
    #[arg(long, hide = true)]
    pub exit_on_stdin_close: bool,

    /// Log verbosity (0-4).
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    pub verbosity: u8,
}

/// Parses durations of the Go form kube-apiserver flags use: `300ms`, `5s`, `5m`, `1h30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let mut total = Duration::ZERO;
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err("empty duration".into());
    }
    if rest == "0" {
        return Ok(Duration::ZERO); // Go's one unitless duration
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(|| format!("missing unit in duration {s:?}"))?;
        let (num, tail) = rest.split_at(digits);
        let value: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let secs = match unit {
            "ns" => value / 1e9,
            "us" | "µs" => value / 1e6,
            "ms" => value / 1e3,
            "s" => value,
            "m" => value * 60.0,
            "h" => value * 3600.0,
            _ => return Err(format!("unknown unit {unit:?} in duration {s:?}")),
        };
        total += Duration::from_secs_f64(secs);
        rest = next;
    }
    Ok(total)
}

/// The longest IPv4 range keel serves (upstream has no bound since v1.33; keel's dynamic
/// allocation scans at most [`IP_SCAN_MAX`] addresses, the whole of such a range).
pub const IPV4_PREFIX_MIN: u8 = 8;
/// The longest IPv6 range, as upstream's allocator (`shortest allowed prefix length for
/// service CIDR is 64`).
pub const IPV6_PREFIX_MIN: u8 = 64;
/// The fewest addresses a `--service-cluster-ip-range` holds, as upstream.
pub const SERVICE_RANGE_ADDRESSES_MIN: u128 = 8;
/// How many addresses one dynamic cluster-IP allocation looks at, from a random one, before
/// it calls the range full: all of the longest IPv4 range; an IPv6 /64 is never scanned
/// whole (upstream starts at a random 64-bit offset and walks on; a window of 2^24 from a
/// random start finds a free address unless the range is nearly full near it).
pub const IP_SCAN_MAX: u128 = 1 << 24;
const _: () = assert!(IP_SCAN_MAX >= 1 << (32 - IPV4_PREFIX_MIN));

/// A parsed IPv4 or IPv6 CIDR range (the base masked to the prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    pub base: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n` or `x:y::/n` (bits beyond the prefix are dropped, as upstream's
    /// flag parsing does). Ranges the allocator cannot serve are refused.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let c = Cidr::parse_any(s)?;
        let min = if c.base.is_ipv4() {
            IPV4_PREFIX_MIN
        } else {
            IPV6_PREFIX_MIN
        };
        if c.prefix < min {
            return Err(if c.base.is_ipv4() {
                format!("invalid CIDR {s:?}: prefix length must be at least {min}")
            } else {
                format!(
                    "shortest allowed prefix length for service CIDR is {min}, got {}",
                    c.prefix
                )
            });
        }
        Ok(c)
    }

    /// Parses any well-formed CIDR.
    pub fn parse_any(s: &str) -> Result<Cidr, String> {
        let (ip, len) = s
            .split_once('/')
            .ok_or_else(|| format!("invalid CIDR {s:?}: expected address/prefix"))?;
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| format!("invalid CIDR {s:?}: bad IP address"))?;
        let prefix: u8 = len
            .parse()
            .ok()
            .filter(|p| *p <= bits(ip))
            .ok_or_else(|| format!("invalid CIDR {s:?}: bad prefix length"))?;
        let c = Cidr { base: ip, prefix };
        Ok(Cidr {
            base: c.at(0),
            prefix,
        })
    }

    fn host_bits(&self) -> u32 {
        u32::from(bits(self.base) - self.prefix)
    }

    /// Number of addresses in the range (saturating at `u128::MAX`).
    pub fn size(&self) -> u128 {
        1u128.checked_shl(self.host_bits()).unwrap_or(u128::MAX)
    }

    pub fn is_ipv4(&self) -> bool {
        self.base.is_ipv4()
    }

    /// `IPv4` or `IPv6`.
    pub fn family(&self) -> &'static str {
        if self.is_ipv4() {
            "IPv4"
        } else {
            "IPv6"
        }
    }

    fn mask(&self) -> u128 {
        let host = u128::MAX.checked_shr(u32::from(self.prefix) + 128 - u32::from(bits(self.base)));
        !host.unwrap_or(0)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.is_ipv4()
            && to_u128(ip) & self.mask() == to_u128(self.base) & self.mask()
    }

    /// The address `n` after the base (masked into the range).
    pub fn nth(&self, n: u128) -> IpAddr {
        self.at(n)
    }

    fn at(&self, n: u128) -> IpAddr {
        let host_mask = !self.mask() & (u128::MAX >> (128 - u32::from(bits(self.base))));
        let v = (to_u128(self.base) & self.mask()) | (n & host_mask);
        from_u128(v, self.is_ipv4())
    }

    /// The offset of `ip` from the base.
    pub fn offset(&self, ip: IpAddr) -> u128 {
        to_u128(ip).wrapping_sub(to_u128(self.base))
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

fn bits(ip: IpAddr) -> u8 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v) => u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

fn from_u128(v: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(v as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(v))
    }
}

/// `--service-cluster-ip-range`: one CIDR, or two of different families (dual-stack, the
/// first the primary), validated with upstream's messages.
pub fn parse_service_ranges(s: &str) -> Result<Vec<Cidr>, String> {
    let texts: Vec<&str> = s.split(',').collect();
    if texts.len() > 2 {
        return Err("--service-cluster-ip-range must not contain more than two entries".into());
    }
    let primary = Cidr::parse_any(texts[0].trim())
        .map_err(|_| "service-cluster-ip-range[0] is not a valid cidr".to_string())?;
    if primary.size() < SERVICE_RANGE_ADDRESSES_MIN {
        return Err(format!("error determining service IP ranges for primary service cidr: the service cluster IP range must be at least {SERVICE_RANGE_ADDRESSES_MIN} IP addresses"));
    }
    let mut out = vec![primary];
    if let Some(t) = texts.get(1) {
        let secondary = Cidr::parse_any(t.trim())
            .map_err(|_| "service-cluster-ip-range[1] is not an ip net".to_string())?;
        if secondary.is_ipv4() == primary.is_ipv4() {
            return Err("--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family".into());
        }
        out.push(secondary);
    }
    for c in &out {
        Cidr::parse(&c.to_string()).map_err(|e| format!("--service-cluster-ip-range: {e}"))?;
    }
    Ok(out)
}

/// Parses `low-high`.
pub fn parse_port_range(s: &str) -> Result<(u16, u16), String> {
    let (lo, hi) = s
        .split_once('-')
        .ok_or_else(|| format!("invalid port range {s:?}: expected low-high"))?;
    let lo: u16 = lo
        .trim()
        .parse()
        .map_err(|_| format!("invalid port range {s:?}"))?;
    let hi: u16 = hi
        .trim()
        .parse()
        .map_err(|_| format!("invalid port range {s:?}"))?;
    if lo == 0 || lo > hi {
        return Err(format!("invalid port range {s:?}: need 0 < low <= high"));
    }
    Ok((lo, hi))
}

/// `--show-hidden-metrics-for-version`: empty or the previous minor version (`1.35` for
/// v1.36), with upstream's refusal text otherwise.
pub fn check_show_hidden_metrics(v: &str) -> Result<(), String> {
    let previous = format!("1.{}", keel_catalog::BINARY_VERSION_MINOR - 1);
    if v.is_empty() || v == previous {
        return Ok(());
    }
    Err(format!(
        "metrics.showHiddenMetricsForVersion: Invalid value: {v:?}: must be omitted or have the value '{previous}'; only the previous minor version is allowed"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hidden_metrics_version_is_the_previous_minor_only() {
        assert_eq!(check_show_hidden_metrics(""), Ok(()));
        assert_eq!(check_show_hidden_metrics("1.35"), Ok(()));
        for v in ["1.36", "1.30", "abc"] {
            assert_eq!(
                check_show_hidden_metrics(v).unwrap_err(),
                format!("metrics.showHiddenMetricsForVersion: Invalid value: \"{v}\": must be omitted or have the value '1.35'; only the previous minor version is allowed")
            );
        }
    }

    use super::*;

    #[test]
    fn storage_repair_is_off_unless_asked_for() {
        use clap::Parser;
        assert!(!Options::parse_from(["apiserver"]).storage_repair);
        assert!(Options::parse_from(["apiserver", "--storage-repair"]).storage_repair);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("500us").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn cidrs() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let c = Cidr::parse("10.0.0.7/24").unwrap();
        assert_eq!(c.base, ip("10.0.0.0"));
        assert_eq!(c.size(), 256);
        assert!(c.contains(ip("10.0.0.200")));
        assert!(!c.contains(ip("10.0.1.1")));
        assert!(!c.contains(ip("::a00:1")));
        assert_eq!(c.nth(255), ip("10.0.0.255"));
        assert!(Cidr::parse("10.0.0.0").is_err());
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        let v6 = Cidr::parse("fd00:10:96::7/112").unwrap();
        assert_eq!(v6.to_string(), "fd00:10:96::/112");
        assert_eq!(v6.size(), 65536);
        assert_eq!(v6.nth(0xffff), ip("fd00:10:96::ffff"));
        assert!(!v6.contains(ip("fd00:10:96::1:0")));
        assert_eq!(Cidr::parse("fd00::/64").unwrap().size(), 1 << 64);
        assert_eq!(
            Cidr::parse("::/0").err().unwrap(),
            "shortest allowed prefix length for service CIDR is 64, got 0"
        );
    }

    /// `--service-cluster-ip-range` as upstream's kube-apiserver checks it (messages from
    /// its options' completion and validation).
    #[test]
    fn service_ranges_as_upstream() {
        let ok = |s: &str| -> Vec<String> {
            parse_service_ranges(s)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(ok("10.0.0.0/24"), ["10.0.0.0/24"]);
        assert_eq!(ok("fd00:10:96::/112"), ["fd00:10:96::/112"]);
        assert_eq!(
            ok("10.0.0.0/24,fd00:10:96::/112"),
            ["10.0.0.0/24", "fd00:10:96::/112"]
        );
        assert_eq!(
            ok("fd00:10:96::/112,10.0.0.0/24"),
            ["fd00:10:96::/112", "10.0.0.0/24"]
        );
        let rows = [
            ("10.0.0.0/24,fd00::/112,10.1.0.0/24", "--service-cluster-ip-range must not contain more than two entries"),
            ("nope", "service-cluster-ip-range[0] is not a valid cidr"),
            ("10.0.0.0/24,nope", "service-cluster-ip-range[1] is not an ip net"),
            ("10.0.0.0/24,10.1.0.0/24", "--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family"),
            ("10.0.0.0/30", "error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses"),
            ("fd00::/48", "--service-cluster-ip-range: shortest allowed prefix length for service CIDR is 64, got 48"),
        ];
        for (flag, want) in rows {
            assert_eq!(
                parse_service_ranges(flag).err().as_deref(),
                Some(want),
                "{flag}"
            );
        }
    }

    #[test]
    fn port_ranges() {
        assert_eq!(parse_port_range("30000-32767").unwrap(), (30000, 32767));
        assert!(parse_port_range("5-1").is_err());
    }
}
