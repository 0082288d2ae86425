//! Starts the real `apiserver` binary once per test binary and drives it with kubectl.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long the server may take to become ready.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Server {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub port: u16,
    pub insecure_port: u16,
    pub token: String,
    _child: Mutex<Child>,
    // Closing this pipe (when the test process exits) stops the server.
    _stdin: Mutex<ChildStdin>,
    _tmp: tempfile::TempDir,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The shared server of this test binary.
pub fn server() -> &'static Server {
    SERVER.get_or_init(|| Server::start(&[]))
}

/// `KEEL_TEST_STORAGE_BACKEND=memory` runs the suites on the in-memory store without
/// revisions in its stored values (the path a backend such as etcd takes) instead of the
/// embedded engine: the test command runs them both ways.
fn backend_args() -> &'static [&'static str] {
    match std::env::var("KEEL_TEST_STORAGE_BACKEND").as_deref() {
        Ok("memory") => &[
            "--storage-backend",
            "memory",
            "--memory-store-without-revisions",
        ],
        Ok("") | Err(_) => &[],
        Ok(other) => panic!("KEEL_TEST_STORAGE_BACKEND={other:?}: expected \"memory\" or unset"),
    }
}

/// Without `--controllers` of its own, a test's server runs without the two controllers
/// that put objects in every namespace (the `default` ServiceAccount, `kube-root-ca.crt`), as
/// upstream's integration tests run kube-apiserver without kube-controller-manager: suites
/// that count what a namespace holds see only what they wrote. `server/tests/authentication.rs`
/// runs them (`--controllers=*`).
fn fixture_controllers(extra: &[&str]) -> &'static [&'static str] {
    if extra.iter().any(|a| a.starts_with("--controllers")) {
        return &[];
    }
    &["--controllers=-serviceaccount-controller,-root-ca-certificate-publisher-controller,*"]
}

/// Whether the suites run on a store that outlives the process (the embedded engine; the
/// in-memory store of `KEEL_TEST_STORAGE_BACKEND=memory` starts empty on every start).
pub fn persistent_backend() -> bool {
    backend_args().is_empty()
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        Server::start_at(tmp, dir, extra)
    }

    /// Starts a server on the data directory `dir` (inside `tmp`, which it keeps alive): a
    /// restart on the data of an earlier one.
    pub fn start_at(tmp: tempfile::TempDir, dir: PathBuf, extra: &[&str]) -> Server {
        Server::start_at_env(tmp, dir, extra, &[])
    }

    /// A server of its own started with `env` added to its environment.
    pub fn start_env(extra: &[&str], env: &[(&str, &Path)]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        Server::start_at_env(tmp, dir, extra, env)
    }

    fn start_at_env(
        tmp: tempfile::TempDir,
        dir: PathBuf,
        extra: &[&str],
        env: &[(&str, &Path)],
    ) -> Server {
        for stale in ["port", "admin.kubeconfig"] {
            let _ = std::fs::remove_file(dir.join(stale));
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_apiserver"))
            .args([
                "--data-dir",
                dir.to_str().unwrap(),
                "--secure-port",
                "0",
                "--insecure-port",
                "0",
                "--exit-on-stdin-close",
                "--sync",
                "none",
            ])
            .args(backend_args())
            .args(fixture_controllers(extra))
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start apiserver");
        let stdin = child.stdin.take().unwrap();
        let deadline = Instant::now() + START_TIMEOUT;
        let port_file = dir.join("port");
        let kubeconfig = dir.join("admin.kubeconfig");
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
        let token_text = std::fs::read_to_string(dir.join("tokens.csv")).unwrap();
        let token = token_text.split(',').next().unwrap().to_string();
        Server {
            dir,
            kubeconfig,
            port,
            insecure_port: 0,
            token,
            _child: Mutex::new(child),
            _stdin: Mutex::new(stdin),
            _tmp: tmp,
        }
    }

    /// Sends `signal` (`TERM`, `INT`, ...) to the server process.
    pub fn signal(&self, signal: &str) {
        let pid = self.pid();
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{signal} {pid}");
    }

    /// Waits up to `timeout` for the server process to exit; its status if it did.
    pub fn wait_exit(&self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self._child.lock().unwrap().try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the process and hands back its data directory, for [`Server::start_at`].
    pub fn into_data(self) -> (tempfile::TempDir, PathBuf) {
        let _ = self._child.lock().unwrap().kill();
        let _ = self._child.lock().unwrap().wait();
        (self._tmp, self.dir)
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self._child.lock().unwrap().id()
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.parent().unwrap())
            .args(args)
            .output()
            .expect("run kubectl")
    }

    /// Runs kubectl with `stdin` as input.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new("kubectl")
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.parent().unwrap())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// kubectl that must succeed; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// kubectl that must fail; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} unexpectedly succeeded: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).unwrap()
    }

    /// Creates a namespace for one test.
    pub fn namespace(&self, name: &str) -> String {
        self.ok(&["create", "namespace", name]);
        name.to_string()
    }

    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("pki").join("ca.crt")
    }
}

/// Longest a raw HTTP exchange through curl may take.
pub const CURL_TIMEOUT_SECS: &str = "30";

/// One raw HTTPS exchange: status, headers (names lowercased) and body bytes.
#[derive(Debug)]
pub struct Http {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Http {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Parses `curl -i` output; skips interim `100 Continue` responses.
    fn parse(mut raw: &[u8]) -> Http {
        loop {
            let end = raw
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .unwrap_or_else(|| panic!("no header end: {}", String::from_utf8_lossy(raw)));
            let head = String::from_utf8_lossy(&raw[..end]).into_owned();
            let body = &raw[end + 4..];
            let mut lines = head.split("\r\n");
            let status: u16 = lines
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("no status line: {head}"));
            if status == 100 {
                raw = body;
                continue;
            }
            let headers = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            return Http {
                status,
                headers,
                body: body.to_vec(),
            };
        }
    }
}

impl Server {
    /// A raw HTTPS request with the admin token; `headers` are `Name: value` lines.
    pub fn http(&self, method: &str, path: &str, headers: &[&str], body: Option<&[u8]>) -> Http {
        self.try_http(method, path, headers, body)
            .unwrap_or_else(|e| panic!("curl {method} {path}: {e}"))
    }

    /// Like [`Server::http`], with curl's failure (connection refused, a stream cut short)
    /// as an error instead of a panic.
    pub fn try_http(
        &self,
        method: &str,
        path: &str,
        headers: &[&str],
        body: Option<&[u8]>,
    ) -> Result<Http, String> {
        let url = format!("https://127.0.0.1:{}{path}", self.port);
        let auth = format!("Authorization: Bearer {}", self.token);
        let mut cmd = Command::new("curl");
        cmd.args(["-s", "-i", "--max-time", CURL_TIMEOUT_SECS, "-X", method])
            .args(["--cacert", self.ca_file().to_str().unwrap(), "-H", &auth]);
        for h in headers {
            cmd.args(["-H", h]);
        }
        if body.is_some() {
            cmd.args(["--data-binary", "@-"]);
        }
        let mut child = cmd
            .arg(&url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run curl");
        let mut stdin = child.stdin.take().unwrap();
        if let Some(b) = body {
            stdin.write_all(b).unwrap();
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        if !out.status.success() {
            return Err(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Http::parse(&out.stdout))
    }

    pub fn get(&self, path: &str) -> Http {
        self.http("GET", path, &[], None)
    }

    /// Sends a JSON body.
    pub fn send_json(&self, method: &str, path: &str, body: &serde_json::Value) -> Http {
        let ct = if method == "PATCH" {
            "Content-Type: application/merge-patch+json"
        } else {
            "Content-Type: application/json"
        };
        self.http(method, path, &[ct], Some(body.to_string().as_bytes()))
    }
}

/// Polls `f` until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Splits a protobuf watch stream into (type, object) frames (4-byte big-endian length, then
/// the `k8s\0` envelope of a WatchEvent).
pub fn proto_watch_frames(mut body: &[u8]) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    while body.len() >= 4 {
        let len = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
        assert!(body.len() >= 4 + len, "truncated frame");
        out.push(keel_proto::decode_watch_event(&body[..4 + len]).expect("frame"));
        body = &body[4 + len..];
    }
    assert!(body.is_empty(), "trailing bytes");
    out
}

/// Splits a JSON watch stream into (type, object) events, one per line.
pub fn json_watch_events(body: &[u8]) -> Vec<(String, serde_json::Value)> {
    String::from_utf8_lossy(body)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            (v["type"].as_str().unwrap().to_string(), v["object"].clone())
        })
        .collect()
}

/// Starts the test server `tests/python/<script>` with `args`: it prints its port on its
/// first line, then serves until its standard input closes (or it is killed). Returns the
/// process and the port.
pub fn python_server(script: &str, args: &[&Path]) -> (Child, u16) {
    use std::io::BufRead;
    let path = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("python3")
        .arg(path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{script} printed no port: {line:?}"));
    (child, port)
}
