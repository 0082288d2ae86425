//! `loadgen compare`: keel and etcd side by side in one run. Starts etcd (durable, on
//! loopback, in a temporary directory) and keel (`--sync always`, the embedded engine), runs
//! the same workloads against both, one target right after the other for each workload,
//! samples each server's resident memory and CPU time from `/proc` during each workload, and
//! appends a markdown section (machine, date, commit, figures, keel/etcd ratios) to a report.
//! Optionally a third API server, given by kubeconfig, runs the same API workloads.

use crate::driver::Plan;
use crate::etcd::Etcd;
use crate::kube::{self, crud::CreateSpec};
use crate::objects::{Kind, Naming};
use crate::procstat::{Monitor, Usage};
use crate::report::Report;
use clap::Args;
use keel_client::kubeconfig::{self, Endpoint};
use keel_client::KubeClient;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to start.
pub const SERVER_START_TIMEOUT: Duration = Duration::from_secs(60);

/// Options of `compare`.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Tiny sizes (CI): the whole run takes seconds.
    #[arg(long)]
    pub smoke: bool,
    /// Markdown report to add the section to (created if missing; new sections go first).
    #[arg(long, default_value = "benches/REPORT.md")]
    pub out: PathBuf,
    /// keel's apiserver binary (default: `apiserver` next to loadgen).
    #[arg(long)]
    pub apiserver: Option<PathBuf>,
    /// etcd binary.
    #[arg(long, default_value = "etcd")]
    pub etcd_bin: PathBuf,
    /// Directory for both servers' data (default: a temporary directory under /tmp).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A third API server to run the API workloads against, by kubeconfig.
    #[arg(long)]
    pub third_kubeconfig: Option<PathBuf>,
    /// Its name in the report.
    #[arg(long, default_value = "third")]
    pub third_name: String,
    /// Its process id, for memory and CPU figures (only if it runs on this machine).
    #[arg(long)]
    pub third_pid: Option<u32>,
    /// ConfigMaps for the create/get/update/list workloads (default 50,000; smoke 300).
    #[arg(long)]
    pub objects: Option<u64>,
    /// Pods for the list workload (default 100,000; smoke 500).
    #[arg(long)]
    pub pods: Option<u64>,
    /// Watchers (default 1,000; smoke 10).
    #[arg(long)]
    pub watchers: Option<usize>,
    /// Writes during the watch workload (default 1,000; smoke 50).
    #[arg(long)]
    pub watch_writes: Option<u64>,
    /// Write rate of the paced watch workload, per second (default 1,200; smoke 100).
    #[arg(long)]
    pub watch_rate: Option<f64>,
    /// Duration of the paced watch workload's writes, seconds (default 10; smoke 1).
    #[arg(long)]
    pub watch_secs: Option<f64>,
    /// CRDs `crd-latency` creates (default 20; smoke 3).
    #[arg(long)]
    pub crds: Option<u64>,
    /// Concurrency of writes and reads (connections to keel).
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// etcd client connections (requests are multiplexed over them).
    #[arg(long, default_value_t = 4)]
    pub etcd_connections: usize,
    /// keel's HTTP ceiling server (default: `keel-ceiling` next to loadgen, if built):
    /// keel's own HTTP/TLS stack answering with no API work. When given, the create and get
    /// workloads also run against it, over HTTP and HTTPS, and the report shows keel's share
    /// of that ceiling: what the machine, the kernel's loopback TCP, TLS and this load
    /// generator leave for the API itself.
    #[arg(long)]
    pub ceiling_server: Option<PathBuf>,
}

/// Sizes of one run.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    objects: u64,
    gets: u64,
    pods: u64,
    lists: u64,
    cm_lists: u64,
    paginations: u64,
    watchers: usize,
    watch_writes: u64,
    watch_writers: usize,
    watch_rate: f64,
    watch_secs: f64,
    crds: u64,
}

/// Page size of the paginated list workload.
const PAGE_LIMIT: u64 = 500;

impl CompareArgs {
    fn sizes(&self) -> Sizes {
        let (objects, pods, watchers, writes) = if self.smoke {
            (300, 500, 10, 50)
        } else {
            (50_000, 100_000, 1_000, 1_000)
        };
        let objects = self.objects.unwrap_or(objects);
        Sizes {
            objects,
            gets: objects * 2,
            pods: self.pods.unwrap_or(pods),
            lists: if self.smoke { 2 } else { 3 },
            cm_lists: if self.smoke { 2 } else { 5 },
            paginations: if self.smoke { 1 } else { 3 },
            watchers: self.watchers.unwrap_or(watchers),
            watch_writes: self.watch_writes.unwrap_or(writes),
            watch_writers: 16,
            watch_rate: self
                .watch_rate
                .unwrap_or(if self.smoke { 100.0 } else { 1_200.0 }),
            watch_secs: self
                .watch_secs
                .unwrap_or(if self.smoke { 1.0 } else { 10.0 }),
            crds: self.crds.unwrap_or(if self.smoke { 3 } else { 20 }),
        }
    }
}

/// A server process this run started; killed when dropped.
struct Proc {
    child: Child,
    _stdin: Option<ChildStdin>,
}

impl Proc {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Polls `GET path` on plain HTTP `127.0.0.1:port` every millisecond until it answers 200.
fn wait_http_ok(
    port: u16,
    path: &str,
    token: Option<&str>,
    child: &mut Child,
    what: &str,
) -> Result<(), String> {
    use std::io::{Read, Write};
    let deadline = Instant::now() + SERVER_START_TIMEOUT;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n");
    loop {
        let ok = std::net::TcpStream::connect(("127.0.0.1", port)).and_then(|mut c| {
            c.write_all(req.as_bytes())?;
            let mut head = [0u8; 12];
            c.read_exact(&mut head)?;
            Ok(head.ends_with(b" 200"))
        });
        if matches!(ok, Ok(true)) {
            return Ok(());
        }
        if let Ok(Some(s)) = child.try_wait() {
            return Err(format!("{what} exited during start: {s}"));
        }
        if Instant::now() > deadline {
            return Err(format!("{what} not ready after {SERVER_START_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A started server: the process and the seconds from spawn to its first healthy answer.
struct Started {
    proc: Proc,
    ready_s: f64,
}

fn start_etcd(bin: &Path, dir: &Path) -> Result<(Started, String), String> {
    let (client, peer) = (free_port()?, free_port()?);
    let url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let log = std::fs::File::create(dir.join("etcd.log")).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let mut child = Command::new(bin)
        .args(["--data-dir", &dir.join("etcd").to_string_lossy()])
        .args([
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
        ])
        .args([
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
        ])
        .args(["--initial-cluster", &format!("default={peer_url}")])
        // kube-apiserver's recommended quota is 8 GiB; the default 2 GiB fills up with 100,000 pods
        // and their history.
        .args(["--quota-backend-bytes", "8589934592"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| {
            format!(
                "{}: {e} (Debian: apt-get install -y etcd-server)",
                bin.display()
            )
        })?;
    wait_http_ok(client, "/health", None, &mut child, "etcd")?;
    let ready_s = t0.elapsed().as_secs_f64();
    Ok((
        Started {
            proc: Proc {
                child,
                _stdin: None,
            },
            ready_s,
        },
        url,
    ))
}

/// keel's two endpoints: plain HTTP (insecure port) and HTTPS (its admin kubeconfig).
struct KeelEndpoints {
    http: Endpoint,
    https: Endpoint,
}

fn start_keel(bin: &Path, dir: &Path) -> Result<(Started, KeelEndpoints), String> {
    let data = dir.join("keel");
    let (http_port, https_port) = (free_port()?, free_port()?);
    let log = std::fs::File::create(dir.join("keel.log")).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let mut child = Command::new(bin)
        .args(["--data-dir", &data.to_string_lossy()])
        .args(["--secure-port", &https_port.to_string()])
        .args([
            "--insecure-port",
            &http_port.to_string(),
            "--sync",
            "always",
            "--exit-on-stdin-close",
            // As the kube-apiserver it is compared with, without a controller manager: the
            // pods written name a ReplicaSet that does not exist, which a garbage collector
            // would delete during the measurements, and the namespace defaults (a service
            // account and `kube-root-ca.crt` in each new namespace) are writes the
            // kube-apiserver alone does not make.
            "--controllers=-garbage-collector-controller,-serviceaccount-controller,\
             -root-ca-certificate-publisher-controller,*",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let stdin = child.stdin.take();
    // /readyz answers unauthenticated requests, as kube-apiserver's does.
    wait_http_ok(http_port, "/readyz", None, &mut child, "keel")
        .map_err(|e| format!("{e} (see {}/keel.log)", dir.display()))?;
    let ready_s = t0.elapsed().as_secs_f64();
    let https = kubeconfig::load(&data.join("admin.kubeconfig"), None)?;
    // Plain HTTP on loopback, as etcd is reached here: both sides without TLS.
    let mut http = https.clone();
    http.server = format!("http://127.0.0.1:{http_port}");
    Ok((
        Started {
            proc: Proc {
                child,
                _stdin: stdin,
            },
            ready_s,
        },
        KeelEndpoints { http, https },
    ))
}

/// The ceiling server's two endpoints (no credentials: it does not authenticate).
fn start_ceiling(bin: &Path, dir: &Path) -> Result<(Proc, KeelEndpoints), String> {
    let pki = dir.join("ceiling");
    let (http_port, https_port) = (free_port()?, free_port()?);
    let log = std::fs::File::create(dir.join("ceiling.log")).map_err(|e| e.to_string())?;
    let mut child = Command::new(bin)
        .args(["--pki", &pki.to_string_lossy()])
        .args(["--https", &format!("127.0.0.1:{https_port}")])
        .args(["--http", &format!("127.0.0.1:{http_port}")])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    wait_http_ok(http_port, "/healthz", None, &mut child, "ceiling server")?;
    let ca = std::fs::read(pki.join("ca.crt")).map_err(|e| format!("ceiling CA: {e}"))?;
    let endpoint = |server: String, ca_pem: Option<Vec<u8>>| Endpoint {
        server,
        ca_pem,
        token: None,
        client_cert_pem: None,
        client_key_pem: None,
        tls_server_name: None,
        insecure_skip_tls_verify: false,
        namespace: None,
    };
    Ok((
        Proc {
            child,
            _stdin: None,
        },
        KeelEndpoints {
            http: endpoint(format!("http://127.0.0.1:{http_port}"), None),
            https: endpoint(format!("https://127.0.0.1:{https_port}"), Some(ca)),
        },
    ))
}

/// `name` next to this executable, if it is there.
fn sibling(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join(name)).filter(|p| p.exists())
}

fn default_apiserver() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("no directory for loadgen")?;
    ["apiserver", "keel-apiserver-under-test"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.exists())
        .ok_or_else(|| format!("no apiserver next to {} (cargo build --release -p keel-server), or give --apiserver", exe.display()))
}

/// One target's figures for one workload.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Measured {
    pub report: Report,
    pub server: Option<Usage>,
    pub client: Usage,
    pub wall_s: f64,
}

/// Window over which `settle` measures a server's CPU.
const SETTLE_WINDOW: Duration = Duration::from_millis(200);
/// CPU share of one core under which a server counts as idle.
const SETTLE_CPU_MAX: f64 = 0.1;
/// Longest `settle` waits before measuring anyway.
const SETTLE_MAX: Duration = Duration::from_secs(10);

/// Waits until every server this run started is idle (each used under `SETTLE_CPU_MAX` of a
/// core over `SETTLE_WINDOW`), at most `SETTLE_MAX`. A server still busy after its own
/// workload (etcd tidying up after a million watch events, say) would otherwise take CPU
/// from the next target's measurement on the same cores. Returns how long it waited.
fn settle(pids: &[u32]) -> Duration {
    let start = Instant::now();
    let ticks_per_s = crate::procstat::ticks_per_s() as f64;
    let cpu = |pid: u32| crate::procstat::sample(pid).map_or(0, |s| s.cpu_ticks);
    while start.elapsed() < SETTLE_MAX {
        let before: Vec<u64> = pids.iter().map(|&p| cpu(p)).collect();
        std::thread::sleep(SETTLE_WINDOW);
        let busiest = pids
            .iter()
            .zip(&before)
            .map(|(&p, &b)| cpu(p).saturating_sub(b) as f64 / ticks_per_s)
            .fold(0.0, f64::max);
        if busiest / SETTLE_WINDOW.as_secs_f64() < SETTLE_CPU_MAX {
            break;
        }
    }
    start.elapsed()
}

/// Runs `work` while sampling the server `pid` and this process.
fn measure<F>(rt: &tokio::runtime::Runtime, pid: Option<u32>, work: F) -> Result<Measured, String>
where
    F: std::future::Future<Output = Result<Report, String>>,
{
    let server = pid.map(Monitor::start);
    let client = Monitor::start(std::process::id());
    let t0 = Instant::now();
    let result = rt.block_on(work);
    let wall_s = t0.elapsed().as_secs_f64();
    let server = server.map(Monitor::finish);
    let client = client.finish();
    Ok(Measured {
        report: result?,
        server,
        client,
        wall_s,
    })
}

/// The API workloads on one API server; `tag` keeps each target's objects apart on a server
/// that is measured twice (keel over HTTP and over HTTPS).
struct Api<'a> {
    c: &'a KubeClient,
    sizes: Sizes,
    conc: usize,
    tag: &'a str,
}

fn naming(kind: Kind, prefix: &str, ns: &str, namespaces: u32) -> Naming {
    Naming {
        kind,
        prefix: prefix.into(),
        ns_prefix: ns.into(),
        namespaces,
    }
}

fn plan(concurrency: usize, ops: u64) -> Plan {
    Plan {
        concurrency,
        ops: Some(ops),
        duration: None,
        rate_per_s: None,
    }
}

/// The ConfigMaps of the create/get/update/list workloads: all in one namespace, so that
/// the full list is exactly them.
fn cm_spec(tag: &str) -> CreateSpec {
    CreateSpec {
        naming: naming(Kind::Configmaps, "cm", &format!("cmp{tag}"), 1),
        size: 1024,
        size_spread: 0.0,
        first: 0,
    }
}

/// The Widgets (custom resources) compared with `cm_spec`'s ConfigMaps: as many, as long
/// (`widgets::description_bytes`), in one namespace of their own.
fn widget_spec(tag: &str) -> CreateSpec {
    CreateSpec {
        naming: naming(Kind::Widgets, "wd", &format!("cmpwd{tag}"), 1),
        ..cm_spec(tag)
    }
}

/// Group suffix of the CRDs `crd-latency` creates and deletes.
const CRD_LATENCY_GROUP_SUFFIX: &str = "crdlat.bench.keel.dev";

fn crd_latency_spec(s: Sizes) -> crate::kube::crd::CrdLatencySpec {
    crate::kube::crd::CrdLatencySpec {
        count: s.crds,
        group_suffix: CRD_LATENCY_GROUP_SUFFIX.into(),
        namespace: "cmpcrdlat".into(),
    }
}

fn pod_spec() -> CreateSpec {
    CreateSpec {
        naming: naming(Kind::Pods, "pod", "cmppods", 100),
        size: 0,
        size_spread: 0.0,
        first: 0,
    }
}

fn watch_naming(tag: &str, paced: bool) -> Naming {
    let ns = if paced { "cmpwatchp" } else { "cmpwatch" };
    naming(Kind::Configmaps, "w", &format!("{ns}{tag}"), 1)
}

/// The unpaced watch's objects as Widgets, in a namespace of their own.
fn widget_watch_naming(tag: &str) -> Naming {
    naming(Kind::Widgets, "w", &format!("cmpwatchwd{tag}"), 1)
}

fn paced_plan(s: Sizes) -> Plan {
    Plan {
        concurrency: s.watch_writers,
        ops: Some((s.watch_rate * s.watch_secs).ceil() as u64),
        duration: None,
        rate_per_s: Some(s.watch_rate),
    }
}

/// Workload names, in run order, with how each is described in the report.
const WORKLOADS: &[(&str, &str)] = &[
    ("create", "create 1 KiB ConfigMaps"),
    ("create-widgets", "create 1 KiB Widgets (custom resources)"),
    ("get", "get ConfigMaps"),
    ("get-widgets", "get Widgets"),
    ("update", "update ConfigMaps"),
    ("list-cm", "full list of the ConfigMaps"),
    ("pages", "paginated list of the ConfigMaps (limit=500)"),
    ("create-pods", "create ~2 KiB Pods"),
    ("list", "full list of all Pods"),
    ("watch", "watch delivery, writes as fast as they go"),
    (
        "watch-widgets",
        "watch delivery of Widgets, writes as fast as they go",
    ),
    ("watch-paced", "watch delivery, paced writes"),
    ("crd-latency", "CRD create to first custom-resource create"),
];

/// Workloads that run once per server, not once per keel endpoint: their objects are shared
/// (Pods), or what they measure is the server's, not the connection's (CRD latency).
const ONCE_PER_SERVER: &[&str] = &["create-pods", "crd-latency"];

/// Workloads of custom resources: run only against API servers that serve
/// CustomResourceDefinitions (`kube::crd::serves_crds`).
const CUSTOM_WORKLOADS: &[&str] = &[
    "create-widgets",
    "get-widgets",
    "watch-widgets",
    "crd-latency",
];

/// Workloads with no etcd form: etcd has no CRDs. (Its Widget rows are the same key/value
/// workload with keys shaped as kube-apiserver stores custom resources.)
const NOT_ON_ETCD: &[&str] = &["crd-latency"];

/// The custom-resource rows beside their ConfigMap rows: (label, ConfigMap workload, Widget
/// workload, figure).
type CustomRow = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Measured) -> f64,
);
const CUSTOM_ROWS: &[CustomRow] = &[
    ("creates/s", "create", "create-widgets", |m| op(m, "create")),
    ("GETs/s", "get", "get-widgets", |m| op(m, "get")),
    (
        "watch delivery, events/s (unpaced writes)",
        "watch",
        "watch-widgets",
        |m| op(m, "deliver"),
    ),
];

/// Custom resources' rates relative to ConfigMaps' of the same size: the issue's target.
const CUSTOM_RATE_TARGET: f64 = 0.8;

/// Workloads also run against the ceiling server.
const CEILING_WORKLOADS: &[&str] = &["create", "get", "watch-paced"];

/// What the ceiling table shows of each workload it ran: (workload, row label, figure).
type CeilingRow = (&'static str, &'static str, fn(&Measured) -> f64);
const CEILING_ROWS: &[CeilingRow] = &[
    ("create", "create ops/s", |m| op(m, "create")),
    ("get", "get ops/s", |m| op(m, "get")),
    ("watch-paced", "paced watch: writes/s achieved", |m| {
        op(m, "write")
    }),
    ("watch-paced", "paced watch: delivery p99 ms", |m| {
        p(m, "deliver", |l| l.p99)
    }),
];

impl Api<'_> {
    async fn run(&self, w: &str) -> Result<Report, String> {
        let (s, cm) = (self.sizes, cm_spec(self.tag));
        let cm_list = cm.naming.collection_path(&cm.naming.namespace(0));
        match w {
            "create" => kube::crud::create(self.c, &cm, &plan(self.conc, s.objects)).await,
            "create-widgets" => {
                let wd = widget_spec(self.tag);
                kube::crud::create(self.c, &wd, &plan(self.conc, s.objects)).await
            }
            "get" => {
                kube::crud::get(self.c, &cm.naming, 0, s.objects, &plan(self.conc, s.gets)).await
            }
            "get-widgets" => {
                let n = widget_spec(self.tag).naming;
                kube::crud::get(self.c, &n, 0, s.objects, &plan(self.conc, s.gets)).await
            }
            "watch-widgets" => {
                let (n, p) = (
                    widget_watch_naming(self.tag),
                    plan(s.watch_writers, s.watch_writes),
                );
                kube::watch::watch(self.c, &n, 1024, 0, s.watchers, 0, &p).await
            }
            "crd-latency" => kube::crd::crd_latency(self.c, &crd_latency_spec(s)).await,
            "update" => {
                kube::crud::update(self.c, &cm, s.objects, &plan(self.conc, s.objects)).await
            }
            "list-cm" => kube::list::list(self.c, &cm_list, None, &plan(1, s.cm_lists)).await,
            "pages" => {
                let p = plan(1, s.paginations);
                kube::list::list(self.c, &cm_list, Some(PAGE_LIMIT), &p).await
            }
            "create-pods" => {
                kube::crud::create(self.c, &pod_spec(), &plan(self.conc, s.pods)).await
            }
            "list" => kube::list::list(self.c, "/api/v1/pods", None, &plan(1, s.lists)).await,
            "watch" | "watch-paced" => {
                let paced = w == "watch-paced";
                let p = if paced {
                    paced_plan(s)
                } else {
                    plan(s.watch_writers, s.watch_writes)
                };
                let n = watch_naming(self.tag, paced);
                kube::watch::watch(self.c, &n, 1024, 0, s.watchers, 0, &p).await
            }
            other => Err(format!("unknown workload {other}")),
        }
    }
}

async fn run_etcd(e: &Etcd, w: &str, s: Sizes, conc: usize) -> Result<Report, String> {
    let cm = cm_spec("");
    let ns = cm.naming.namespace(0);
    match w {
        "create" => crate::etcd::create(e, &cm, &plan(conc, s.objects)).await,
        "create-widgets" => crate::etcd::create(e, &widget_spec(""), &plan(conc, s.objects)).await,
        "get" => crate::etcd::get(e, &cm.naming, 0, s.objects, &plan(conc, s.gets)).await,
        "get-widgets" => {
            let n = widget_spec("").naming;
            crate::etcd::get(e, &n, 0, s.objects, &plan(conc, s.gets)).await
        }
        "watch-widgets" => {
            let p = plan(s.watch_writers, s.watch_writes);
            crate::etcd::watch(e, &widget_watch_naming(""), 1024, 0, s.watchers, &p).await
        }
        "update" => crate::etcd::update(e, &cm, s.objects, &plan(conc, s.objects)).await,
        "list-cm" => crate::etcd::list(e, &cm.naming, Some(&ns), None, &plan(1, s.cm_lists)).await,
        "pages" => {
            let p = plan(1, s.paginations);
            crate::etcd::list(e, &cm.naming, Some(&ns), Some(PAGE_LIMIT), &p).await
        }
        "create-pods" => crate::etcd::create(e, &pod_spec(), &plan(conc, s.pods)).await,
        "list" => crate::etcd::list(e, &pod_spec().naming, None, None, &plan(1, s.lists)).await,
        "watch" | "watch-paced" => {
            let paced = w == "watch-paced";
            let p = if paced {
                paced_plan(s)
            } else {
                plan(s.watch_writers, s.watch_writes)
            };
            crate::etcd::watch(e, &watch_naming("", paced), 1024, 0, s.watchers, &p).await
        }
        other => Err(format!("unknown workload {other}")),
    }
}

/// Everything one run measured.
#[derive(Default, serde::Serialize)]
pub struct Results {
    pub workloads: Vec<(String, Vec<(String, Measured)>)>,
    pub load_before: String,
    pub load_after: String,
    pub total_s: f64,
    pub smoke: bool,
    pub end_rss: Vec<(String, u64)>,
    /// Seconds from spawning each server to its first healthy answer.
    pub ready_s: Vec<(String, f64)>,
    /// API servers whose custom-resource rows were skipped: they do not serve custom
    /// resources (`kube::crd::widgets_served`).
    pub no_crds: Vec<String>,
}

/// Target names in the report.
pub const KEEL_HTTP: &str = "keel";
pub const KEEL_HTTPS: &str = "keel-https";
pub const ETCD: &str = "etcd";
pub const CEILING_HTTP: &str = "ceiling";
pub const CEILING_HTTPS: &str = "ceiling-https";

/// Runs the comparison and writes the report.
pub fn run(args: &CompareArgs) -> Result<(), String> {
    crate::driver::raise_fd_limit();
    let started = Instant::now();
    let tmp = match &args.dir {
        Some(d) => tempfile::Builder::new()
            .prefix("loadgen-compare-")
            .tempdir_in(d),
        None => tempfile::Builder::new()
            .prefix("loadgen-compare-")
            .tempdir(),
    }
    .map_err(|e| format!("temporary directory: {e}"))?;
    let apiserver = match &args.apiserver {
        Some(p) => p.clone(),
        None => default_apiserver()?,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (etcd_srv, etcd_url) = start_etcd(&args.etcd_bin, tmp.path())?;
    let (keel_srv, keel_ep) = start_keel(&apiserver, tmp.path())?;
    let (keel_pid, etcd_pid) = (keel_srv.proc.pid(), etcd_srv.proc.pid());
    let sizes = args.sizes();
    let keel = crate::kube_client(&keel_ep.http, args.concurrency)?;
    let keel_tls = crate::kube_client(&keel_ep.https, args.concurrency)?;
    let etcd = rt.block_on(Etcd::connect(
        std::slice::from_ref(&etcd_url),
        args.etcd_connections,
        "/registry",
    ))?;
    let ceiling_bin = match &args.ceiling_server {
        Some(p) => Some(p.clone()),
        None => sibling("keel-ceiling"),
    };
    let ceiling = match &ceiling_bin {
        Some(bin) => {
            let (proc, ep) = start_ceiling(bin, tmp.path())?;
            let http = crate::kube_client(&ep.http, args.concurrency)?;
            let https = crate::kube_client(&ep.https, args.concurrency)?;
            Some((proc, http, https))
        }
        None => None,
    };
    let third = match &args.third_kubeconfig {
        Some(p) => Some(crate::kube_client(
            &kubeconfig::load(p, None)?,
            args.concurrency,
        )?),
        None => None,
    };
    // Custom resources only on servers that serve CRDs (this repo's server before it had them,
    // a third server without apiextensions); the Widget CRD is made and waited for here,
    // before anything is measured.
    let crd_wait = if args.smoke {
        crate::limits::COMPARE_SMOKE_CRD_ESTABLISHED_MAX
    } else {
        crate::limits::COMPARE_CRD_ESTABLISHED_MAX
    };
    let (keel_crds, third_crds) = rt.block_on(async {
        let third = async {
            match &third {
                Some(t) => kube::crd::widgets_served(t, crd_wait).await,
                None => Ok(false),
            }
        };
        tokio::join!(kube::crd::widgets_served(&keel, crd_wait), third)
    });
    let (keel_crds, third_crds) = (keel_crds?, third_crds?);
    let mut no_crds = Vec::new();
    if !keel_crds {
        no_crds.extend([KEEL_HTTP.to_string(), KEEL_HTTPS.to_string()]);
    }
    if third.is_some() && !third_crds {
        no_crds.push(args.third_name.clone());
    }
    let mut res = Results {
        no_crds,
        load_before: loadavg(),
        smoke: args.smoke,
        ready_s: vec![
            (KEEL_HTTP.into(), keel_srv.ready_s),
            (ETCD.into(), etcd_srv.ready_s),
        ],
        ..Default::default()
    };
    let api = |c, tag| Api {
        c,
        sizes,
        conc: args.concurrency,
        tag,
    };
    let mut servers = vec![keel_pid, etcd_pid];
    servers.extend(ceiling.as_ref().map(|(proc, _, _)| proc.pid()));
    servers.extend(args.third_pid);
    let quiet = || {
        if args.smoke {
            return; // tiny sizes measure nothing worth waiting for
        }
        let waited = settle(&servers);
        if waited > SETTLE_WINDOW * 2 {
            eprintln!("compare: waited {waited:.1?} for the servers to go idle");
        }
    };
    for (w, label) in WORKLOADS {
        let custom = CUSTOM_WORKLOADS.contains(w);
        if custom && !keel_crds && !third_crds {
            eprintln!("compare: {label}: skipped, no API server here serves CRDs");
            continue;
        }
        eprintln!("compare: {label}");
        let mut row = Vec::new();
        if !custom || keel_crds {
            quiet();
            row.push((
                KEEL_HTTP.to_string(),
                measure(&rt, Some(keel_pid), api(&keel, "").run(w))?,
            ));
            if !ONCE_PER_SERVER.contains(w) {
                quiet();
                row.push((
                    KEEL_HTTPS.to_string(),
                    measure(&rt, Some(keel_pid), api(&keel_tls, "s").run(w))?,
                ));
            }
        }
        if !NOT_ON_ETCD.contains(w) {
            quiet();
            row.push((
                ETCD.to_string(),
                measure(
                    &rt,
                    Some(etcd_pid),
                    run_etcd(&etcd, w, sizes, args.concurrency),
                )?,
            ));
        }
        if let Some(t) = third.as_ref().filter(|_| !custom || third_crds) {
            quiet();
            row.push((
                args.third_name.clone(),
                measure(&rt, args.third_pid, api(t, "").run(w))?,
            ));
        }
        if let Some((proc, http, https)) =
            ceiling.as_ref().filter(|_| CEILING_WORKLOADS.contains(w))
        {
            let pid = Some(proc.pid());
            quiet();
            row.push((
                CEILING_HTTP.to_string(),
                measure(&rt, pid, api(http, "c").run(w))?,
            ));
            quiet();
            row.push((
                CEILING_HTTPS.to_string(),
                measure(&rt, pid, api(https, "cs").run(w))?,
            ));
        }
        res.workloads.push((w.to_string(), row));
    }
    for (name, pid) in [
        (KEEL_HTTP, Some(keel_pid)),
        (ETCD, Some(etcd_pid)),
        (args.third_name.as_str(), args.third_pid),
    ] {
        if let Some(s) = pid.and_then(|p| crate::procstat::sample(p).ok()) {
            res.end_rss.push((name.to_string(), s.rss_bytes));
        }
    }
    res.load_after = loadavg();
    res.total_s = started.elapsed().as_secs_f64();
    drop((keel_srv, etcd_srv, ceiling));
    let section = markdown(&res, args, sizes, &etcd_version(&args.etcd_bin));
    print!("{section}");
    write_report(&args.out, &section)?;
    eprintln!("compare: wrote {}", args.out.display());
    let failed: Vec<String> = res
        .workloads
        .iter()
        .flat_map(|(w, row)| row.iter().map(move |(t, m)| (w, t, m)))
        .filter(|(_, _, m)| {
            m.report.errors() > 0 || m.report.details.get("exact") == Some(&false.into())
        })
        .map(|(w, t, _)| format!("{w} on {t}"))
        .collect();
    if !failed.is_empty() {
        return Err(format!(
            "operations failed or watch events were missed: {}",
            failed.join(", ")
        ));
    }
    Ok(())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn etcd_version(bin: &Path) -> String {
    Command::new(bin)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|t| {
            t.lines()
                .next()
                .map(|l| l.trim_start_matches("etcd Version: ").to_string())
        })
        .unwrap_or_else(|| "?".into())
}

fn command_out(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!(
        "{cores} cores ({model}), {mem:.1} GiB RAM, Linux {}",
        command_out("uname", &["-r"])
    )
}

fn commit() -> String {
    let head = command_out("git", &["rev-parse", "--short", "HEAD"]);
    if head.is_empty() {
        return "unknown".into();
    }
    let dirty = !command_out("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    if dirty {
        format!("{head} (+uncommitted changes)")
    } else {
        head
    }
}

/// keel / etcd, formatted.
fn ratio(k: f64, e: f64) -> String {
    if e > 0.0 && k > 0.0 {
        format!("{:.2}×", k / e)
    } else {
        "–".into()
    }
}

fn num(v: f64) -> String {
    if v >= 100.0 || (v.fract() == 0.0 && v.abs() < 1e15) {
        let s = format!("{:.0}", v);
        let mut out = String::new();
        for (i, ch) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(ch);
        }
        out
    } else {
        format!("{v:.2}")
    }
}

fn mib(b: u64) -> String {
    format!("{:.0} MiB", b as f64 / (1024.0 * 1024.0))
}

/// A headline figure of the report.
struct Figure {
    workload: &'static str,
    label: String,
    unit: &'static str,
    value: fn(&Measured) -> f64,
    target: &'static str,
    /// Whether a keel/etcd ratio means anything for it.
    ratio: bool,
}

fn op(m: &Measured, name: &str) -> f64 {
    m.report.op(name).map_or(0.0, |o| o.ops_per_s)
}

fn p(m: &Measured, name: &str, q: fn(&crate::report::Latency) -> u64) -> f64 {
    m.report
        .op(name)
        .map_or(0.0, |o| q(&o.latency_us) as f64 / 1000.0)
}

fn pages_per_s(m: &Measured) -> f64 {
    let elapsed = m.report.ops.first().map_or(0.0, |o| o.elapsed_s);
    if elapsed > 0.0 {
        m.report.detail_u64("pages") as f64 / elapsed
    } else {
        0.0
    }
}

fn watch_faults(m: &Measured) -> f64 {
    (m.report.detail_u64("missing_events")
        + m.report.detail_u64("duplicate_events")
        + m.report.detail_u64("out_of_order_events")
        + m.report.detail_u64("watcher_errors")) as f64
}

fn figures(s: Sizes) -> Vec<Figure> {
    let f = |workload, label: &str, unit, value, target, ratio| Figure {
        workload,
        label: label.to_string(),
        unit,
        value,
        target,
        ratio,
    };
    let paced = format!(
        "paced watch: {} watchers, {} writes/s for {} s: events/s",
        s.watchers, s.watch_rate, s.watch_secs
    );
    vec![
        f(
            "create",
            "creates/s, 1 KiB ConfigMaps",
            "/s",
            |m| op(m, "create"),
            "≥ 1.0× etcd; HTTPS ≥ 30,000/s",
            true,
        ),
        f(
            "create",
            "create p99",
            "ms",
            |m| p(m, "create", |l| l.p99),
            "",
            true,
        ),
        f(
            "create-widgets",
            "creates/s, 1 KiB Widgets (custom resource)",
            "/s",
            |m| op(m, "create"),
            "≥ 0.8× ConfigMaps",
            true,
        ),
        f(
            "create-widgets",
            "Widget create p99",
            "ms",
            |m| p(m, "create", |l| l.p99),
            "",
            true,
        ),
        f(
            "get",
            "GETs/s of one object",
            "/s",
            |m| op(m, "get"),
            "HTTPS ≥ 60,000/s",
            true,
        ),
        f("get", "GET p99", "ms", |m| p(m, "get", |l| l.p99), "", true),
        f(
            "get-widgets",
            "GETs/s of one Widget",
            "/s",
            |m| op(m, "get"),
            "≥ 0.8× ConfigMaps",
            true,
        ),
        f(
            "get-widgets",
            "Widget GET p99",
            "ms",
            |m| p(m, "get", |l| l.p99),
            "",
            true,
        ),
        f("update", "updates/s", "/s", |m| op(m, "update"), "", true),
        f(
            "update",
            "update p99",
            "ms",
            |m| p(m, "update", |l| l.p99),
            "",
            true,
        ),
        f(
            "list-cm",
            &format!("full list of the {} ConfigMaps, p50", s.objects),
            "ms",
            |m| p(m, "list", |l| l.p50),
            "≤ 100 ms",
            true,
        ),
        f(
            "list-cm",
            "full list of the ConfigMaps, MB/s",
            "MB/s",
            |m| m.report.op("list").map_or(0.0, |o| o.bytes_per_s / 1e6),
            "",
            true,
        ),
        f(
            "pages",
            "pages/s of limit=500",
            "/s",
            pages_per_s,
            "≥ 1,000/s",
            true,
        ),
        f(
            "create-pods",
            "creates/s, ~2 KiB Pods",
            "/s",
            |m| op(m, "create"),
            "",
            true,
        ),
        f(
            "list",
            &format!("full list of all {} Pods", s.pods),
            "objects/s",
            |m| m.report.op("list").map_or(0.0, |o| o.objects_per_s),
            "≥ 3× etcd",
            true,
        ),
        f(
            "list",
            "full list of all Pods, p50",
            "ms",
            |m| p(m, "list", |l| l.p50),
            "",
            true,
        ),
        f(
            "watch",
            &format!("watch delivery, {} watchers, unpaced writes", s.watchers),
            "events/s",
            |m| op(m, "deliver"),
            "≥ 1.0× etcd",
            true,
        ),
        f(
            "watch",
            "watch delivery p99",
            "ms",
            |m| p(m, "deliver", |l| l.p99),
            "",
            true,
        ),
        f(
            "watch",
            "missed + duplicated + reordered events, watchers ended",
            "",
            watch_faults,
            "0",
            false,
        ),
        f(
            "watch-widgets",
            &format!(
                "Widget watch delivery, {} watchers, unpaced writes",
                s.watchers
            ),
            "events/s",
            |m| op(m, "deliver"),
            "≥ 0.8× ConfigMaps",
            true,
        ),
        f(
            "watch-widgets",
            "Widget watch delivery p99",
            "ms",
            |m| p(m, "deliver", |l| l.p99),
            "",
            true,
        ),
        f(
            "watch-widgets",
            "Widgets: missed + duplicated + reordered events, watchers ended",
            "",
            watch_faults,
            "0",
            false,
        ),
        f(
            "watch-paced",
            "paced watch: writes/s achieved",
            "/s",
            |m| op(m, "write"),
            "",
            true,
        ),
        f(
            "watch-paced",
            &paced,
            "events/s",
            |m| op(m, "deliver"),
            "",
            true,
        ),
        f(
            "watch-paced",
            "paced watch: delivery p99",
            "ms",
            |m| p(m, "deliver", |l| l.p99),
            "≤ 50 ms",
            true,
        ),
        f(
            "watch-paced",
            "paced watch: missed + duplicated + reordered, watchers ended",
            "",
            watch_faults,
            "0",
            false,
        ),
        f(
            "crd-latency",
            &format!(
                "CRD create → first custom-resource create, p50 ({} CRDs)",
                s.crds
            ),
            "ms",
            |m| p(m, "first-create", |l| l.p50),
            "",
            false,
        ),
        f(
            "crd-latency",
            "CRD create → first custom-resource create, p99",
            "ms",
            |m| p(m, "first-create", |l| l.p99),
            "",
            false,
        ),
    ]
}

fn markdown(res: &Results, args: &CompareArgs, s: Sizes, etcd_version: &str) -> String {
    let mut out = String::new();
    let date = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC");
    let kind = if res.smoke {
        " (smoke: tiny sizes, figures mean nothing)"
    } else {
        ""
    };
    let _ = writeln!(out, "## keel vs etcd — {date} — {}{kind}\n", commit());
    let _ = writeln!(out, "- Machine: {}", machine());
    let _ = writeln!(
        out,
        "- Load average (1/5/15 min): {} at start, {} at end; total {:.0} s",
        res.load_before, res.load_after, res.total_s
    );
    let _ = writeln!(
        out,
        "- keel: `apiserver --sync always` (durable, group commit), HTTP/1.1 on loopback, plain (`{KEEL_HTTP}`, the insecure port) and TLS (`{KEEL_HTTPS}`, the secure port; TLS 1.3, rustls), {} keep-alive connections; etcd {etcd_version}: default durable settings (fsync per commit), plain gRPC on loopback, {} client connections, requests shaped as kube-apiserver's (txn with mod_revision compares; range, later pages at the first page's revision; watch on the prefix)",
        args.concurrency, args.etcd_connections
    );
    let _ = writeln!(
        out,
        "- Sizes: {} ConfigMaps of 1 KiB in one namespace per target (create, {} GETs, {} updates, {} in flight; {} full lists, {} paginations of limit={PAGE_LIMIT}); {} Pods in 100 namespaces ({} full lists); watches: {} watchers on one namespace while {} writers create {} ConfigMaps unpaced, then {:.0}/s for {} s",
        s.objects, s.gets, s.objects, args.concurrency, s.cm_lists, s.paginations, s.pods, s.lists, s.watchers, s.watch_writers, s.watch_writes, s.watch_rate, s.watch_secs
    );
    let _ = writeln!(
        out,
        "- Custom resources: {} 1 KiB-sized Widgets (`bench.keel.dev/v1`, 20-property schema, one CEL rule) created, {} GETs, the unpaced watch again with Widgets; {} CRDs created one after the other for the CRD latency (keel over HTTP and the third server only)",
        s.objects, s.gets, s.crds
    );
    let _ = writeln!(out, "- Each workload runs against keel over HTTP, keel over HTTPS, then etcd, before the next workload: ratios are measured side by side, seconds apart; before each, the run waits (up to 10 s) until every server it started is idle (under 10 % of a core over 200 ms). Pods are created once per server. The load generator shares the 2 cores with the server under test.\n");
    let third = args
        .third_kubeconfig
        .as_ref()
        .map(|_| args.third_name.as_str());
    let mut head = format!(
        "| Figure | {KEEL_HTTP} | {KEEL_HTTPS} | {ETCD} | {KEEL_HTTP}/{ETCD} | {KEEL_HTTPS}/{ETCD} | Target |"
    );
    let mut rule = "| --- | ---: | ---: | ---: | ---: | ---: | --- |".to_string();
    if let Some(t) = third {
        let _ = write!(head, " {t} | {KEEL_HTTP}/{t} |");
        rule.push_str(" ---: | ---: |");
    }
    let _ = writeln!(out, "{head}\n{rule}");
    for fig in figures(s) {
        let Some((_, row)) = res.workloads.iter().find(|(n, _)| n == fig.workload) else {
            continue;
        };
        let get = |t: &str| {
            row.iter()
                .find(|(n, _)| n == t)
                .map(|(_, m)| (fig.value)(m))
        };
        let show =
            |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{} {}", num(v), fig.unit));
        let rat = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if fig.ratio => ratio(a, b),
            _ => "–".into(),
        };
        let (k, ks, e) = (get(KEEL_HTTP), get(KEEL_HTTPS), get(ETCD));
        let _ = write!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            fig.label,
            show(k),
            show(ks),
            show(e),
            rat(k, e),
            rat(ks, e),
            fig.target
        );
        if let Some(t) = third {
            let x = get(t);
            let _ = write!(out, " {} | {} |", show(x), rat(k, x));
        }
        out.push('\n');
    }
    let ready = |n: &str| {
        res.ready_s
            .iter()
            .find(|(t, _)| t == n)
            .map(|(_, v)| *v * 1000.0)
    };
    let (kr, er) = (ready(KEEL_HTTP), ready(ETCD));
    let _ = writeln!(
        out,
        "| start to ready (spawn → first 200 from /readyz, etcd /health) | {} ms | (same process) | {} ms | {} | | ≤ 50 ms |",
        kr.map_or("–".into(), num),
        er.map_or("–".into(), num),
        match (kr, er) { (Some(a), Some(b)) => ratio(a, b), _ => "–".into() }
    );
    let rss = |n: &str| {
        res.end_rss
            .iter()
            .find(|(t, _)| t == n)
            .map_or(0, |(_, b)| *b)
    };
    let peak = |n: &str| {
        res.workloads
            .iter()
            .filter_map(|(_, row)| row.iter().find(|(t, _)| t == n).and_then(|(_, m)| m.server))
            .map(|u| u.peak_rss_bytes)
            .max()
            .unwrap_or(0)
    };
    let kpeak = peak(KEEL_HTTP).max(peak(KEEL_HTTPS));
    let _ = writeln!(
        out,
        "| peak RSS over the run | {} | (same process) | {} | {} | | ≤ 1.0× etcd |",
        mib(kpeak),
        mib(peak(ETCD)),
        ratio(kpeak as f64, peak(ETCD) as f64)
    );
    let _ = writeln!(
        out,
        "| RSS at the end (same data set) | {} | (same process) | {} | {} | | |\n",
        mib(rss(KEEL_HTTP)),
        mib(rss(ETCD)),
        ratio(rss(KEEL_HTTP) as f64, rss(ETCD) as f64)
    );
    custom_table(&mut out, res, s);
    ceiling_table(&mut out, res);
    let _ = writeln!(out, "Memory and CPU per workload (server process, from `/proc`; client = the load generator):\n");
    let _ = writeln!(out, "| Workload | target | ops | wall s | server peak RSS | server CPU s | server CPU µs/op | client CPU s | errors |");
    let _ = writeln!(
        out,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for (w, row) in &res.workloads {
        let label = WORKLOADS
            .iter()
            .find(|(n, _)| n == w)
            .map_or(w.as_str(), |(_, l)| l);
        for (t, m) in row {
            let ops: u64 = match w.as_str() {
                "watch" | "watch-paced" | "watch-widgets" => {
                    m.report.op("deliver").map_or(0, |o| o.ops)
                }
                "crd-latency" => m.report.op("first-create").map_or(0, |o| o.ops),
                "list" | "list-cm" | "pages" => m.report.ops.first().map_or(0, |o| o.objects),
                _ => m.report.ops.iter().map(|o| o.ops).sum(),
            };
            let (peak, cpu) = m.server.map_or(("–".to_string(), "–".to_string()), |u| {
                (mib(u.peak_rss_bytes), format!("{:.2}", u.cpu_s))
            });
            let per_op = m.server.filter(|_| ops > 0).map_or("–".to_string(), |u| {
                format!("{:.1}", u.cpu_s * 1e6 / ops as f64)
            });
            let _ = writeln!(
                out,
                "| {label} | {t} | {ops} | {:.1} | {peak} | {cpu} | {per_op} | {:.2} | {} |",
                m.wall_s,
                m.client.cpu_s,
                m.report.errors()
            );
        }
    }
    let _ = writeln!(
        out,
        "\n(lists: ops = objects listed; watches: ops = events delivered to all watchers.)\n"
    );
    out
}

/// Custom resources beside ConfigMaps of the same size, per target, with the issue's target
/// (≥ 0.8× the built-in rates), and the CRD latency; says which servers were skipped.
fn custom_table(out: &mut String, res: &Results, s: Sizes) {
    let row_of = |w: &str| res.workloads.iter().find(|(n, _)| n == w).map(|(_, r)| r);
    let ran = |w: &str| row_of(w).is_some();
    if !CUSTOM_WORKLOADS.iter().any(|w| ran(w)) {
        if !res.no_crds.is_empty() {
            let _ = writeln!(out, "Custom resources: not measured, no API server here serves custom resources ({}: no Widget CRD Established in time).\n", res.no_crds.join(", "));
        }
        return;
    }
    let _ = writeln!(out, "Custom resources vs ConfigMaps of the same size, same run: `Widget` (`bench.keel.dev/v1`, a {}-property structural schema with one CEL rule, `{}`), each as long as its 1 KiB ConfigMap, as many, at the same concurrency. etcd has no CRDs: its Widget rows are the same key/value workload with keys as kube-apiserver stores custom resources (`/registry/bench.keel.dev/widgets/<ns>/<name>`, JSON values of the same bytes), so its ratio shows what the bytes alone cost; it has no CRD-latency row.\n", crate::objects::widgets::WIDGET_SPEC_PROPERTIES, crate::objects::widgets::WIDGET_RULE);
    let _ = writeln!(
        out,
        "| Figure | target | ConfigMaps | Widgets | Widgets/ConfigMaps | Target |"
    );
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | --- |");
    for (label, cm_w, wd_w, figure) in CUSTOM_ROWS {
        let (Some(cm), Some(wd)) = (row_of(cm_w), row_of(wd_w)) else {
            continue;
        };
        for (t, m) in wd {
            let Some((_, c)) = cm.iter().find(|(n, _)| n == t) else {
                continue;
            };
            let (a, b) = (figure(c), figure(m));
            let verdict = if a > 0.0 && b / a >= CUSTOM_RATE_TARGET {
                "met"
            } else {
                "not met"
            };
            let _ = writeln!(
                out,
                "| {label} | {t} | {} | {} | {} | ≥ {CUSTOM_RATE_TARGET:.2}× ({verdict}) |",
                num(a),
                num(b),
                ratio(b, a)
            );
        }
    }
    if let Some(row) = row_of("crd-latency") {
        for (t, m) in row {
            let Some(o) = m.report.op("first-create") else {
                continue;
            };
            let ms = |us: u64| format!("{:.2}", us as f64 / 1000.0);
            let l = &o.latency_us;
            let _ = writeln!(
                out,
                "| CRD create → first custom-resource create ({} of {} CRDs; p50 / p90 / p99 / max) | {t} | | {} / {} / {} / {} ms | | |",
                o.ops,
                s.crds,
                ms(l.p50),
                ms(l.p90),
                ms(l.p99),
                ms(l.max)
            );
        }
    }
    if !res.no_crds.is_empty() {
        let _ = writeln!(
            out,
            "\nNot measured on {}: the server does not serve custom resources (no Widget CRD Established in time).",
            res.no_crds.join(", ")
        );
    }
    out.push('\n');
}

/// keel beside the ceiling server (keel's HTTP/TLS stack with no API work, same load
/// generator, same run), when it ran.
fn ceiling_table(out: &mut String, res: &Results) {
    let ran = |w: &str| {
        res.workloads
            .iter()
            .find(|(name, row)| name == w && row.iter().any(|(t, _)| t == CEILING_HTTP))
            .map(|(_, row)| row)
    };
    if !CEILING_WORKLOADS.iter().any(|w| ran(w).is_some()) {
        return;
    }
    let _ = writeln!(out, "The machine's ceiling for the same load: keel's HTTP/1.1 and TLS stack with no API work behind it (`keel-ceiling`: a create is given the next resourceVersion and echoed back with 201, a GET gets a stored-ConfigMap-sized body, a watch gets every create as a shared `ADDED` line, paced as keel's watches are), driven by the same load generator in the same run. keel's share of it is what is left to win in the API path; the rest is loopback TCP, TLS and the load generator on the same 2 cores.\n");
    let _ = writeln!(out, "| Workload | {KEEL_HTTP} | {CEILING_HTTP} | {KEEL_HTTP}/{CEILING_HTTP} | {KEEL_HTTPS} | {CEILING_HTTPS} | {KEEL_HTTPS}/{CEILING_HTTPS} |");
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (w, label, figure) in CEILING_ROWS {
        let Some(row) = ran(w) else { continue };
        let get = |t: &str| {
            row.iter()
                .find(|(n, _)| n == t)
                .map_or(0.0, |(_, m)| figure(m))
        };
        let (k, c, ks, cs) = (
            get(KEEL_HTTP),
            get(CEILING_HTTP),
            get(KEEL_HTTPS),
            get(CEILING_HTTPS),
        );
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} | {} |",
            num(k),
            num(c),
            ratio(k, c),
            num(ks),
            num(cs),
            ratio(ks, cs)
        );
    }
    out.push('\n');
}

/// Marker after which sections are inserted, newest first.
pub const REPORT_MARKER: &str =
    "<!-- loadgen compare: runs are inserted below this line, newest first -->";

fn write_report(path: &Path, section: &str) -> Result<(), String> {
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let text = match existing.find(REPORT_MARKER) {
        Some(at) => {
            let cut = at + REPORT_MARKER.len();
            format!("{}\n\n{}{}", &existing[..cut], section, existing[cut..].trim_start_matches('\n'))
        }
        None if existing.is_empty() => format!(
            "# keel vs etcd: side-by-side load figures\n\nWritten by `loadgen compare` (see tools/README.md).\n\n{REPORT_MARKER}\n\n{section}"
        ),
        None => format!("{existing}\n{REPORT_MARKER}\n\n{section}"),
    };
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[test]
    fn numbers_and_ratios() {
        assert_eq!(num(1234567.4), "1,234,567");
        assert_eq!(num(123.0), "123");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(4.5678), "4.57");
        assert_eq!(ratio(3.0, 1.5), "2.00×");
        assert_eq!(ratio(3.0, 0.0), "–");
    }

    fn measured(op_name: &str, ops_per_s: f64, p50_us: u64, p99_us: u64) -> Measured {
        let mut report = Report::new(op_name, "t");
        report.ops.push(crate::report::OpSummary {
            name: op_name.into(),
            ops: 3,
            ops_per_s,
            latency_us: crate::report::Latency {
                p50: p50_us,
                p90: p99_us,
                p99: p99_us,
                max: p99_us,
                ..Default::default()
            },
            ..Default::default()
        });
        Measured {
            report,
            ..Default::default()
        }
    }

    #[test]
    fn custom_resources_are_shown_beside_their_configmaps() {
        let row = |name: &str, figures: &[(&str, f64)]| {
            (
                name.to_string(),
                figures
                    .iter()
                    .map(|(t, v)| (t.to_string(), measured(name_op(name), *v, 0, 0)))
                    .collect::<Vec<_>>(),
            )
        };
        fn name_op(w: &str) -> &'static str {
            match w {
                "create" | "create-widgets" => "create",
                "get" | "get-widgets" => "get",
                _ => "deliver",
            }
        }
        let mut res = Results {
            workloads: vec![
                row("create", &[(KEEL_HTTP, 1000.0), (ETCD, 800.0)]),
                row("create-widgets", &[(KEEL_HTTP, 850.0), (ETCD, 800.0)]),
                row("get", &[(KEEL_HTTP, 2000.0)]),
                row("get-widgets", &[(KEEL_HTTP, 1000.0)]),
            ],
            ..Default::default()
        };
        res.workloads.push((
            "crd-latency".into(),
            vec![(
                KEEL_HTTP.into(),
                measured("first-create", 1.0, 4_000, 12_500),
            )],
        ));
        #[derive(clap::Parser)]
        struct Cmd {
            #[command(flatten)]
            args: CompareArgs,
        }
        let s = Cmd::parse_from(["compare", "--smoke"]).args.sizes();
        let mut out = String::new();
        custom_table(&mut out, &res, s);
        for want in [
            "| creates/s | keel | 1,000 | 850 | 0.85× | ≥ 0.80× (met) |",
            "| creates/s | etcd | 800 | 800 | 1.00× | ≥ 0.80× (met) |",
            "| GETs/s | keel | 2,000 | 1,000 | 0.50× | ≥ 0.80× (not met) |",
            "| CRD create → first custom-resource create (3 of 3 CRDs; p50 / p90 / p99 / max) | keel | | 4.00 / 12.50 / 12.50 / 12.50 ms | | |",
        ] {
            assert!(out.contains(want), "missing {want:?} in\n{out}");
        }
        // No watch rows ran: no watch line.
        assert!(!out.contains("watch delivery"), "{out}");
        // Nothing custom ran: only the reason, when a server was skipped.
        let mut none = Results {
            no_crds: vec![KEEL_HTTP.into()],
            ..Default::default()
        };
        let mut out = String::new();
        custom_table(&mut out, &none, s);
        assert!(out.starts_with("Custom resources: not measured"), "{out}");
        none.no_crds.clear();
        let mut out = String::new();
        custom_table(&mut out, &none, s);
        assert!(out.is_empty(), "{out}");
    }

    #[test]
    fn report_sections_go_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("R.md");
        write_report(&p, "## one\n").unwrap();
        write_report(&p, "## two\n").unwrap();
        let t = std::fs::read_to_string(&p).unwrap();
        let (m, two, one) = (
            t.find(REPORT_MARKER).unwrap(),
            t.find("## two").unwrap(),
            t.find("## one").unwrap(),
        );
        assert!(m < two && two < one, "{t}");
        assert!(t.starts_with("# keel vs etcd"));
    }
}
