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

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
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
            .args(extra)
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
