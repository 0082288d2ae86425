//! Starts real servers for the load tool's tests: keel's API server (the
//! `keel-apiserver-under-test` binary of this package, i.e. keel-server's `apiserver` built in
//! the same profile by the same `cargo test`) and, when installed, etcd.
#![allow(dead_code)]

use keel_client::kubeconfig;
use keel_client::KubeClient;
use keel_tools::cli::ConnArgs;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a server may take to start.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// loadgen's pods name a ReplicaSet that does not exist: a collector would delete them
/// under the counts the tests check. The namespace defaults (each namespace's
/// `kube-root-ca.crt` and `default` service account) are the server's own writes: a
/// restored directory gets a new CA and republishes it above the snapshot's revision.
pub const CONTROLLERS: &str = "--controllers=-garbage-collector-controller,\
    -serviceaccount-controller,-root-ca-certificate-publisher-controller,*";

pub struct Keel {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub port: u16,
    pub token: String,
    _child: Mutex<Child>,
    // Closing this pipe when the test process exits stops the server.
    _stdin: Mutex<ChildStdin>,
    _tmp: tempfile::TempDir,
}

static KEEL: OnceLock<Keel> = OnceLock::new();

/// The keel server shared by this test binary (`--sync none`).
pub fn keel() -> &'static Keel {
    keel_tools::driver::PROGRESS.store(false, std::sync::atomic::Ordering::Relaxed);
    KEEL.get_or_init(Keel::start)
}

impl Keel {
    fn start() -> Keel {
        Keel::start_with(&[])
    }

    /// A keel server of its own (`--sync none`) with `extra` flags; it exits when dropped.
    pub fn start_with(extra: &[&str]) -> Keel {
        keel_tools::driver::PROGRESS.store(false, std::sync::atomic::Ordering::Relaxed);
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let mut child = Command::new(env!("CARGO_BIN_EXE_keel-apiserver-under-test"))
            .args(["--data-dir", dir.to_str().unwrap(), "--secure-port", "0"])
            .args(["--exit-on-stdin-close", "--sync", "none"])
            .arg(CONTROLLERS)
            .args(extra)
            .stdin(Stdio::piped())
            .spawn()
            .expect("start apiserver");
        let stdin = child.stdin.take().unwrap();
        let (port_file, kubeconfig) = (dir.join("port"), dir.join("admin.kubeconfig"));
        let deadline = Instant::now() + START_TIMEOUT;
        while !(port_file.exists() && kubeconfig.exists()) {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("apiserver exited during start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "apiserver not ready after {START_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let port = std::fs::read_to_string(&port_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let tokens = std::fs::read_to_string(dir.join("tokens.csv")).unwrap();
        let token = tokens.split(',').next().unwrap().to_string();
        Keel {
            dir,
            kubeconfig,
            port,
            token,
            _child: Mutex::new(child),
            _stdin: Mutex::new(stdin),
            _tmp: tmp,
        }
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self._child.lock().unwrap().id()
    }

    pub fn conn(&self) -> ConnArgs {
        ConnArgs {
            kubeconfig: Some(self.kubeconfig.clone()),
            etcd_prefix: "/registry".into(),
            ..Default::default()
        }
    }

    pub fn client(&self) -> KubeClient {
        keel_tools::kube_client(&kubeconfig::load(&self.kubeconfig, None).unwrap(), 4).unwrap()
    }
}

/// Items of a list at `path` (a JSON list), read over HTTP.
pub async fn list_items(c: &KubeClient, path: &str) -> Vec<serde_json::Value> {
    let resp = c
        .request(keel_client::Method::GET, path, None)
        .await
        .unwrap()
        .ok()
        .unwrap();
    resp.json().unwrap()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Asserts that the server behind `c` serves custom resources (establishes the Widget CRD
/// within the time `compare --smoke` waits): this repo's server does.
pub async fn assert_serves_crds(c: &KubeClient) {
    let within = keel_tools::limits::COMPARE_SMOKE_CRD_ESTABLISHED_MAX;
    let serves = keel_tools::kube::crd::widgets_served(c, within)
        .await
        .expect("asking the server for custom resources");
    assert!(
        serves,
        "the server did not establish the Widget CRD within {within:?}"
    );
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An etcd started for one test; killed when dropped.
pub struct EtcdServer {
    pub endpoint: String,
    child: Child,
    _tmp: tempfile::TempDir,
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether etcd is on PATH; prints why the test is skipped if not.
pub fn etcd_installed() -> bool {
    let ok = Command::new("etcd").arg("--version").output().is_ok();
    // CI installs etcd and sets this, so the etcd tests can never silently skip there.
    if !ok && std::env::var_os("KEEL_REQUIRE_ETCD").is_some() {
        panic!("KEEL_REQUIRE_ETCD is set but etcd is not on PATH");
    }
    if !ok {
        eprintln!("SKIPPED: etcd is not on PATH (Debian: apt-get install etcd-server); the etcd target is untested here");
    }
    ok
}

/// Starts etcd on loopback if it is installed; None (with the reason printed) if not.
pub fn etcd() -> Option<EtcdServer> {
    if !etcd_installed() {
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (client, peer) = (free_port(), free_port());
    let endpoint = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .args(["--data-dir", tmp.path().join("data").to_str().unwrap()])
        .args([
            "--listen-client-urls",
            &endpoint,
            "--advertise-client-urls",
            &endpoint,
        ])
        .args([
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
        ])
        .args(["--initial-cluster", &format!("default={peer_url}")])
        .args(["--log-level", "error", "--logger", "zap"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start etcd");
    let server = EtcdServer {
        endpoint,
        child,
        _tmp: tmp,
    };
    let deadline = Instant::now() + START_TIMEOUT;
    while std::net::TcpStream::connect(("127.0.0.1", client)).is_err() {
        assert!(
            Instant::now() < deadline,
            "etcd not listening after {START_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}
