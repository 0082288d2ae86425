//! Command line: connection flags, one subcommand per workload, dispatch to the Kubernetes or
//! etcd form of the workload.

use crate::driver::Plan;
use crate::etcd::Etcd;
use crate::kube::{self, churn::ChurnSpec, crud::CreateSpec, nodes::NodesSpec};
use crate::limits;
use crate::objects::{Kind, Naming};
use crate::report::Report;
use clap::{Args, Parser, Subcommand};
use keel_client::kubeconfig::{self, Endpoint};
use keel_client::KubeClient;
use keel_server::options::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

/// Load generator for Kubernetes API servers (and for etcd, shaped as kube-apiserver uses it).
///
/// Connects through a kubeconfig (`--kubeconfig`, `$KUBECONFIG`, `--context`) or `--url` with
/// `--token`; `--etcd` targets an etcd v3 endpoint instead. Prints throughput and latency
/// percentiles (p50, p90, p99, p99.9, max) as a table and, with `--json FILE`, as JSON.
/// Exits 3 when any operation failed or a watch missed events.
#[derive(Parser, Debug)]
#[command(name = "loadgen", version, about, long_about)]
pub struct Cli {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Also write the report as JSON to this file.
    #[arg(long, global = true)]
    pub json: Option<PathBuf>,
    /// No progress lines.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Where to connect.
#[derive(Args, Debug, Clone, Default)]
pub struct ConnArgs {
    /// kubeconfig file (default: $KUBECONFIG, first entry).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context (default: current-context).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// API server URL instead of a kubeconfig (http:// or https://).
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// Bearer token, with --url.
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// CA bundle (PEM) to verify the server, with --url.
    #[arg(long, global = true)]
    pub ca_file: Option<PathBuf>,
    /// etcd endpoints (comma-separated, e.g. http://127.0.0.1:2379): run the workload against
    /// etcd instead of an API server.
    #[arg(long, global = true, value_delimiter = ',')]
    pub etcd: Vec<String>,
    /// Key prefix in etcd (kube-apiserver's --etcd-prefix).
    #[arg(long, global = true, default_value = "/registry")]
    pub etcd_prefix: String,
    /// etcd client connections (HTTP/2, requests multiplexed over them).
    #[arg(long, global = true, default_value_t = 4)]
    pub etcd_connections: usize,
}

/// What objects a workload touches.
#[derive(Args, Debug, Clone)]
pub struct ObjArgs {
    /// Kind of object.
    #[arg(long, value_enum, default_value = "configmaps")]
    pub kind: Kind,
    /// Objects are named `<prefix>-<i>`.
    #[arg(long, default_value = "lg")]
    pub prefix: String,
    /// Namespace, or namespace prefix with --namespaces > 1 (`<namespace>-<i mod n>`).
    #[arg(long, default_value = "loadgen")]
    pub namespace: String,
    /// Spread objects over this many namespaces.
    #[arg(long, default_value_t = 1)]
    pub namespaces: u32,
    /// ConfigMap payload bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Payload size spread: 0.5 varies sizes uniformly by +-50%.
    #[arg(long, default_value_t = 0.0)]
    pub size_spread: f64,
    /// Index of the first object.
    #[arg(long, default_value_t = 0)]
    pub first: u64,
}

/// How hard and how long.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Requests in flight at once (one keep-alive connection each).
    #[arg(long, short = 'c', default_value_t = 16)]
    pub concurrency: usize,
    /// Stop after this long (e.g. 30s, 5m), even if operations remain.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Target operations per second (default: as fast as possible).
    #[arg(long)]
    pub rate: Option<f64>,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Create N objects (ConfigMaps of --size bytes, or ~2 KiB Pods).
    Create {
        #[command(flatten)]
        obj: ObjArgs,
        #[command(flatten)]
        run: RunArgs,
        /// Objects to create.
        #[arg(long, short = 'n', default_value_t = 1000)]
        count: u64,
    },
    /// GET existing objects (indices first..first+count, round robin).
    Get(ExistingArgs),
    /// Replace existing objects with a new version (PUT; etcd: GuaranteedUpdate txn).
    Update(ExistingArgs),
    /// Merge-patch the annotations of existing objects (API servers only).
    Patch(ExistingArgs),
    /// Server-side apply of ~10 KiB apps/v1 Deployments, a few values changed every round;
    /// with --update the same Deployments as plain PUTs (API servers only).
    Apply(ApplyArgs),
    /// Delete existing objects first..first+count, each once.
    Delete {
        #[command(flatten)]
        obj: ObjArgs,
        #[command(flatten)]
        run: RunArgs,
        #[arg(long, short = 'n', default_value_t = 1000)]
        count: u64,
    },
    /// List a whole collection (all namespaces unless --in-namespace), in full or in pages.
    List {
        #[command(flatten)]
        obj: ObjArgs,
        #[command(flatten)]
        run: RunArgs,
        /// Lists to run.
        #[arg(long, default_value_t = 10)]
        ops: u64,
        /// Page size (limit/continue); default: one full list.
        #[arg(long, conflicts_with = "streaming")]
        page_size: Option<u64>,
        /// Streaming list instead (client-go's WatchList): a watch with
        /// `sendInitialEvents=true` read until the bookmark that ends the initial events
        /// (API servers only).
        #[arg(long)]
        streaming: bool,
        /// List only this namespace.
        #[arg(long)]
        in_namespace: Option<String>,
    },
    /// W watchers on one collection while writers create objects; checks every watcher got
    /// every event exactly once, in order, and measures delivery latency.
    Watch {
        #[command(flatten)]
        obj: ObjArgs,
        /// Writers (the --concurrency of the writes), --rate and --duration apply to writes.
        #[command(flatten)]
        run: RunArgs,
        /// Watchers (one connection or stream each).
        #[arg(long, short = 'w', default_value_t = 10)]
        watchers: usize,
        /// Objects to write.
        #[arg(long, short = 'n', default_value_t = 1000)]
        count: u64,
        /// Give the watchers K different label selectors (API servers only): object i is
        /// labelled loadgen.keel.dev/watch-group=i mod K and watcher w selects group w mod K,
        /// so each write reaches a K-th of the watchers. 0: every watcher sees every write.
        #[arg(long, default_value_t = 0)]
        selectors: u32,
    },
    /// Simulate K kubelets: Nodes, Leases renewed every --lease-interval, status updates,
    /// pods bound to them started, graceful deletions finished (API servers only).
    Nodes {
        /// Nodes to simulate.
        #[arg(long, short = 'k', default_value_t = 100)]
        nodes: usize,
        /// Node names are `<prefix>-<k>`.
        #[arg(long, default_value = "kwok-node")]
        prefix: String,
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        lease_interval: Duration,
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        status_interval: Duration,
        /// How long to run.
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        duration: Duration,
        #[arg(long, short = 'c', default_value_t = 16)]
        concurrency: usize,
    },
    /// ClusterLoader2-style mix of group creates, updates, lists and deletes at a target
    /// request rate for a fixed time (API servers only).
    Churn {
        /// Namespaces are `<prefix>-<n>`.
        #[arg(long, default_value = "churn")]
        prefix: String,
        #[arg(long, default_value_t = 10)]
        namespaces: u32,
        /// Pods per group (a Deployment's replicas).
        #[arg(long, default_value_t = 5)]
        group_size: u32,
        /// Groups kept alive on average.
        #[arg(long, default_value_t = 100)]
        groups: u64,
        /// Target API requests per second.
        #[arg(long, default_value_t = 100.0)]
        qps: f64,
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        duration: Duration,
        #[arg(long, short = 'c', default_value_t = 16)]
        concurrency: usize,
        /// ConfigMap payload bytes.
        #[arg(long, default_value_t = 512)]
        configmap_size: usize,
    },
    /// Slow clients without credentials announcing large bodies and trickling them a byte at a
    /// time, while authenticated GETs measure latency; reports the server's resident memory
    /// per slow connection (needs the server's pid) and GET p99 idle vs during (API servers
    /// only).
    SlowBodies(SlowBodiesArgs),
    /// N times: create a fresh CustomResourceDefinition (a group and plural of its own), then
    /// try to create one object of it until that succeeds; reports CRD create -> first
    /// successful custom-resource create (p50/p90/p99/max), then deletes the CRD (API servers
    /// only).
    CrdLatency(CrdLatencyArgs),
    /// Measure keel and etcd side by side and write a markdown report (see tools/README.md).
    Compare(crate::compare::CompareArgs),
    /// One user floods lists while another user's GETs, /readyz and a system:masters client
    /// are measured (rate, p50/p99, 429s): priority and fairness on vs off (API servers only).
    ApfFlood(crate::apfflood::ApfFloodArgs),
}

/// `crd-latency` flags.
#[derive(Args, Debug, Clone)]
pub struct CrdLatencyArgs {
    /// CRDs to create, one after the other.
    #[arg(long, short = 'n', default_value_t = 20)]
    pub count: u64,
    /// Each CRD's group is `r<run>i<k>.<group-suffix>` (a DNS subdomain).
    #[arg(long, default_value = "crdlat.bench.keel.dev")]
    pub group_suffix: String,
    /// Namespace of the objects created.
    #[arg(long, default_value = "loadgen")]
    pub namespace: String,
}

impl CrdLatencyArgs {
    pub fn spec(&self) -> Result<crate::kube::crd::CrdLatencySpec, String> {
        if self.count == 0 || self.count > limits::CRD_LATENCY_RUNS_MAX {
            return Err(format!(
                "--count must be 1..={}",
                limits::CRD_LATENCY_RUNS_MAX
            ));
        }
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if !self.group_suffix.contains('.') || !self.group_suffix.split('.').all(label_ok) {
            return Err(format!(
                "--group-suffix {:?} is not a DNS subdomain with a dot (e.g. crdlat.bench.keel.dev)",
                self.group_suffix
            ));
        }
        Ok(crate::kube::crd::CrdLatencySpec {
            count: self.count,
            group_suffix: self.group_suffix.clone(),
            namespace: self.namespace.clone(),
        })
    }
}

/// `slow-bodies` flags.
#[derive(Args, Debug, Clone)]
pub struct SlowBodiesArgs {
    /// Slow clients (one connection each).
    #[arg(long, short = 'n', default_value_t = 1000)]
    pub connections: usize,
    /// Body length each announces.
    #[arg(long, default_value_t = 3 * 1024 * 1024)]
    pub announce_bytes: u64,
    /// What is trickled: the body after a whole head, or the head itself.
    #[arg(long, value_enum, default_value = "body")]
    pub trickle: crate::kube::slowbodies::Trickle,
    /// Time between two trickled bytes.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub trickle_interval: Duration,
    /// GETs alone first, for the baseline.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub idle: Duration,
    /// How long the slow clients are held (GETs go on).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub hold: Duration,
    /// GETs after the slow clients are dropped, before the memory is read again.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub settle: Duration,
    /// Open a slow client's connection again when the server closes it.
    #[arg(long)]
    pub reconnect: bool,
    /// TLS handshakes in progress at once while opening.
    #[arg(long, default_value_t = 64)]
    pub open_concurrency: usize,
    /// Authenticated GETs per second.
    #[arg(long, default_value_t = 50.0)]
    pub probe_rate: f64,
    /// What the GETs read.
    #[arg(long, default_value = "/api/v1/namespaces/default")]
    pub probe_path: String,
    /// The server's process id (its memory is read from /proc).
    #[arg(long)]
    pub server_pid: u32,
}

impl SlowBodiesArgs {
    pub fn spec(&self) -> Result<crate::kube::slowbodies::SlowSpec, String> {
        if self.connections == 0 || self.connections > limits::SLOW_CONNECTIONS_MAX {
            return Err(format!(
                "--connections must be 1..={}",
                limits::SLOW_CONNECTIONS_MAX
            ));
        }
        if self.open_concurrency == 0 || self.open_concurrency > limits::SLOW_OPEN_CONCURRENCY_MAX {
            return Err(format!(
                "--open-concurrency must be 1..={}",
                limits::SLOW_OPEN_CONCURRENCY_MAX
            ));
        }
        if self.trickle_interval.is_zero() || self.probe_rate.is_nan() || self.probe_rate <= 0.0 {
            return Err("--trickle-interval and --probe-rate must be positive".into());
        }
        Ok(crate::kube::slowbodies::SlowSpec {
            connections: self.connections,
            announce_bytes: self.announce_bytes,
            trickle: self.trickle,
            trickle_interval: self.trickle_interval,
            idle: self.idle,
            hold: self.hold,
            settle: self.settle,
            reconnect: self.reconnect,
            open_concurrency: self.open_concurrency,
            probe_rate: self.probe_rate,
            probe_path: self.probe_path.clone(),
            server_pid: self.server_pid,
        })
    }
}

/// `apply` flags.
#[derive(Args, Debug, Clone)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Deployments are named `<prefix>-<i>`.
    #[arg(long, default_value = "lg")]
    pub prefix: String,
    /// Namespace, or namespace prefix with --namespaces > 1 (`<namespace>-<i mod n>`).
    #[arg(long, default_value = "loadgen")]
    pub namespace: String,
    /// Spread the Deployments over this many namespaces.
    #[arg(long, default_value_t = 1)]
    pub namespaces: u32,
    /// Index of the first Deployment.
    #[arg(long, default_value_t = 0)]
    pub first: u64,
    /// Deployments (indices first..first+count); operation i writes `first + i mod count`.
    #[arg(long, short = 'n', default_value_t = 100)]
    pub count: u64,
    /// Operations to run.
    #[arg(long, default_value_t = 1000)]
    pub ops: u64,
    /// Operation i writes round `first-round + i / count` (each round changes replicas, an
    /// annotation, an image tag and an env var); give later runs a later round so that every
    /// write changes the object.
    #[arg(long, default_value_t = 0)]
    pub first_round: u64,
    /// `fieldManager` of the applies.
    #[arg(long, default_value = "loadgen")]
    pub field_manager: String,
    /// Plain unconditional PUT (JSON, no resourceVersion) of the same Deployments instead of
    /// apply: the baseline an apply's cost is compared with. Missing Deployments are created
    /// first (POST, not measured) unless --assume-exist.
    #[arg(long)]
    pub update: bool,
    /// With --update: skip creating missing Deployments (an earlier apply run made them).
    #[arg(long, requires = "update")]
    pub assume_exist: bool,
}

impl ApplyArgs {
    pub fn spec(&self) -> Result<crate::kube::apply::ApplySpec, String> {
        check_count(self.count)?;
        if self.count == 0 {
            return Err("--count must be at least 1".into());
        }
        if self.field_manager.is_empty() {
            return Err("--field-manager must not be empty".into());
        }
        Ok(crate::kube::apply::ApplySpec {
            naming: Naming {
                kind: Kind::Pods,
                prefix: self.prefix.clone(),
                ns_prefix: self.namespace.clone(),
                namespaces: self.namespaces.max(1),
            },
            first: self.first,
            count: self.count,
            first_round: self.first_round,
            field_manager: self.field_manager.clone(),
            update: self.update,
            assume_exist: self.assume_exist,
        })
    }
}

/// Objects that already exist.
#[derive(Args, Debug, Clone)]
pub struct ExistingArgs {
    #[command(flatten)]
    pub obj: ObjArgs,
    #[command(flatten)]
    pub run: RunArgs,
    /// How many objects exist (indices first..first+count).
    #[arg(long, short = 'n', default_value_t = 1000)]
    pub count: u64,
    /// Operations to run (default: one per object).
    #[arg(long)]
    pub ops: Option<u64>,
}

impl ObjArgs {
    pub fn naming(&self) -> Naming {
        Naming {
            kind: self.kind,
            prefix: self.prefix.clone(),
            ns_prefix: self.namespace.clone(),
            namespaces: self.namespaces.max(1),
        }
    }

    pub fn create_spec(&self) -> Result<CreateSpec, String> {
        if self.size > limits::OBJECT_BYTES_MAX {
            return Err(format!("--size at most {}", limits::OBJECT_BYTES_MAX));
        }
        Ok(CreateSpec {
            naming: self.naming(),
            size: self.size,
            size_spread: self.size_spread,
            first: self.first,
        })
    }
}

impl RunArgs {
    pub fn plan(&self, ops: Option<u64>) -> Plan {
        Plan {
            concurrency: self.concurrency,
            ops,
            duration: self.duration,
            rate_per_s: self.rate,
        }
    }
}

/// Where a workload runs.
pub enum Target {
    Kube(Box<KubeClient>),
    Etcd(Etcd),
}

impl ConnArgs {
    /// The API server endpoint from --url/--token/--ca-file or the kubeconfig.
    pub fn endpoint(&self) -> Result<Endpoint, String> {
        if let Some(url) = &self.url {
            let ca_pem = match &self.ca_file {
                Some(p) => Some(std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?),
                None => None,
            };
            return Ok(Endpoint {
                server: url.clone(),
                ca_pem,
                token: self.token.clone(),
                ..Default::default()
            });
        }
        let path = match &self.kubeconfig {
            Some(p) => p.clone(),
            None => std::env::var_os("KUBECONFIG")
                .and_then(|v| std::env::split_paths(&v).next())
                .ok_or("no --kubeconfig, --url or $KUBECONFIG given")?,
        };
        let mut ep = kubeconfig::load(&path, self.context.as_deref())?;
        if self.token.is_some() {
            ep.token = self.token.clone();
        }
        Ok(ep)
    }

    /// Connects, with a connection pool of `pool`.
    pub async fn target(&self, pool: usize) -> Result<Target, String> {
        if !self.etcd.is_empty() {
            return Ok(Target::Etcd(
                Etcd::connect(&self.etcd, self.etcd_connections, &self.etcd_prefix).await?,
            ));
        }
        Ok(Target::Kube(Box::new(crate::kube_client(
            &self.endpoint()?,
            pool,
        )?)))
    }
}

fn kube_only(what: &str) -> String {
    format!("{what} has no etcd form: it exercises API server semantics (drop --etcd)")
}

/// Runs the subcommand (not `compare`) and returns its report.
pub async fn execute(conn: &ConnArgs, cmd: &Cmd) -> Result<Report, String> {
    let run = match cmd {
        Cmd::Create { run, .. }
        | Cmd::Delete { run, .. }
        | Cmd::List { run, .. }
        | Cmd::Watch { run, .. } => Some(run),
        Cmd::Get(a) | Cmd::Update(a) | Cmd::Patch(a) => Some(&a.run),
        Cmd::Apply(a) => Some(&a.run),
        Cmd::Nodes { .. }
        | Cmd::Churn { .. }
        | Cmd::SlowBodies(_)
        | Cmd::ApfFlood(_)
        | Cmd::CrdLatency(_) => None,
        Cmd::Compare(_) => return Err("compare is run by main".into()),
    };
    if let Cmd::SlowBodies(a) = cmd {
        a.spec()?;
    }
    if let Cmd::Apply(a) = cmd {
        a.spec()?;
    }
    if let Cmd::CrdLatency(a) = cmd {
        a.spec()?;
    }
    // Check the flags before touching the server.
    if let Some(run) = run {
        run.plan(Some(1)).validate()?;
    }
    let pool = match cmd {
        Cmd::Nodes { concurrency, .. } | Cmd::Churn { concurrency, .. } => *concurrency * 3,
        Cmd::SlowBodies(_) => crate::kube::slowbodies::PROBE_CONCURRENCY,
        _ => run.map_or(1, |r| r.concurrency),
    };
    if let Cmd::ApfFlood(a) = cmd {
        return crate::apfflood::apf_flood(&conn.endpoint()?, a).await;
    }
    let target = conn.target(pool).await?;
    match (cmd, &target) {
        (Cmd::Create { obj, run, count }, t) => {
            check_count(*count)?;
            let (spec, plan) = (obj.create_spec()?, run.plan(Some(*count)));
            match t {
                Target::Kube(c) => kube::crud::create(c, &spec, &plan).await,
                Target::Etcd(e) => crate::etcd::create(e, &spec, &plan).await,
            }
        }
        (Cmd::Get(a), t) => {
            let plan = a.run.plan(Some(a.ops.unwrap_or(a.count)));
            let n = a.obj.naming();
            match t {
                Target::Kube(c) => kube::crud::get(c, &n, a.obj.first, a.count, &plan).await,
                Target::Etcd(e) => crate::etcd::get(e, &n, a.obj.first, a.count, &plan).await,
            }
        }
        (Cmd::Update(a), t) => {
            let (spec, plan) = (
                a.obj.create_spec()?,
                a.run.plan(Some(a.ops.unwrap_or(a.count))),
            );
            match t {
                Target::Kube(c) => kube::crud::update(c, &spec, a.count, &plan).await,
                Target::Etcd(e) => crate::etcd::update(e, &spec, a.count, &plan).await,
            }
        }
        (Cmd::Patch(a), Target::Kube(c)) => {
            let plan = a.run.plan(Some(a.ops.unwrap_or(a.count)));
            kube::crud::patch(c, &a.obj.naming(), a.obj.first, a.count, &plan).await
        }
        (Cmd::Apply(a), Target::Kube(c)) => {
            kube::apply::apply(c, &a.spec()?, &a.run.plan(Some(a.ops))).await
        }
        (Cmd::Delete { obj, run, count }, t) => {
            let plan = run.plan(Some(*count));
            match t {
                Target::Kube(c) => kube::crud::delete(c, &obj.naming(), obj.first, &plan).await,
                Target::Etcd(e) => crate::etcd::delete(e, &obj.naming(), obj.first, &plan).await,
            }
        }
        (
            Cmd::List {
                obj,
                run,
                ops,
                page_size,
                streaming,
                in_namespace,
            },
            t,
        ) => {
            let plan = run.plan(Some(*ops));
            match t {
                Target::Kube(c) => {
                    let (api, plural) = (obj.kind.api_prefix(), obj.kind.plural());
                    let coll = match in_namespace {
                        Some(ns) => format!("{api}/namespaces/{ns}/{plural}"),
                        None => format!("{api}/{plural}"),
                    };
                    if *streaming {
                        kube::list::streaming_list(c, &coll, &plan).await
                    } else {
                        kube::list::list(c, &coll, *page_size, &plan).await
                    }
                }
                Target::Etcd(_) if *streaming => {
                    Err("--streaming needs an API server (a watch with sendInitialEvents)".into())
                }
                Target::Etcd(e) => {
                    crate::etcd::list(e, &obj.naming(), in_namespace.as_deref(), *page_size, &plan)
                        .await
                }
            }
        }
        (
            Cmd::Watch {
                obj,
                run,
                watchers,
                count,
                selectors,
            },
            t,
        ) => {
            check_count(*count)?;
            let plan = run.plan(Some(*count));
            match t {
                Target::Kube(c) => {
                    let n = obj.naming();
                    let (size, first, w) = (obj.size, obj.first, *watchers);
                    kube::watch::watch(c, &n, size, first, w, *selectors, &plan).await
                }
                Target::Etcd(_) if *selectors > 0 => {
                    Err("--selectors applies to API servers only".into())
                }
                Target::Etcd(e) => {
                    crate::etcd::watch(e, &obj.naming(), obj.size, obj.first, *watchers, &plan)
                        .await
                }
            }
        }
        (
            Cmd::Nodes {
                nodes,
                prefix,
                lease_interval,
                status_interval,
                duration,
                concurrency,
            },
            Target::Kube(c),
        ) => {
            let spec = NodesSpec {
                count: *nodes,
                prefix: prefix.clone(),
                lease_interval: *lease_interval,
                status_interval: *status_interval,
                duration: *duration,
                concurrency: *concurrency,
            };
            kube::nodes::nodes(c, &spec).await
        }
        (
            Cmd::Churn {
                prefix,
                namespaces,
                group_size,
                groups,
                qps,
                duration,
                concurrency,
                configmap_size,
            },
            Target::Kube(c),
        ) => {
            let spec = ChurnSpec {
                prefix: prefix.clone(),
                namespaces: *namespaces,
                group_size: (*group_size).max(1),
                groups_target: *groups,
                qps: *qps,
                duration: *duration,
                concurrency: *concurrency,
                configmap_bytes: *configmap_size,
            };
            kube::churn::churn(c, &spec).await
        }
        (Cmd::SlowBodies(a), Target::Kube(c)) => {
            kube::slowbodies::slow_bodies(&conn.endpoint()?, c, &a.spec()?).await
        }
        (Cmd::CrdLatency(a), Target::Kube(c)) => kube::crd::crd_latency(c, &a.spec()?).await,
        (Cmd::CrdLatency(_), Target::Etcd(_)) => Err(kube_only("crd-latency")),
        (Cmd::SlowBodies(_), Target::Etcd(_)) => Err(kube_only("slow-bodies")),
        (Cmd::Patch(_), Target::Etcd(_)) => Err(kube_only("patch")),
        (Cmd::Apply(_), Target::Etcd(_)) => Err(kube_only("apply")),
        (Cmd::Nodes { .. }, Target::Etcd(_)) => Err(kube_only("nodes")),
        (Cmd::Churn { .. }, Target::Etcd(_)) => Err(kube_only("churn")),
        (Cmd::Compare(_), _) => Err("compare is run by main".into()),
        (Cmd::ApfFlood(_), _) => Err("apf-flood is run above".into()),
    }
}

fn check_count(n: u64) -> Result<(), String> {
    if n > limits::OBJECTS_MAX {
        return Err(format!("--count at most {}", limits::OBJECTS_MAX));
    }
    Ok(())
}
