//! `keel-admin` end to end, against the real API server binary: a snapshot saved while a
//! writer creates ConfigMaps, restored into a new data directory, served by a new server,
//! checked with kubectl; `snapshot status`; `check` on a clean and a damaged directory; the
//! endpoint refusing an unauthenticated client.

mod common;

use common::Keel;
use keel_client::{KubeClient, Method, JSON};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn admin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keel-admin"))
        .args(args)
        .output()
        .expect("run keel-admin")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "keel-admin failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One acknowledged create: name, resourceVersion, when the response arrived.
type Acked = (String, u64, Instant);

async fn create(c: &KubeClient, name: &str) -> Result<u64, String> {
    let body = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"payload": "x".repeat(200)},
    });
    let resp = c
        .request(
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            Some((JSON, serde_json::to_vec(&body).unwrap().into())),
        )
        .await?
        .ok()?;
    let v = resp.json()?;
    Ok(v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap())
}

/// A server on `dir` (a restored data directory); stops when dropped (stdin closes).
struct Restarted {
    child: std::process::Child,
    kubeconfig: PathBuf,
}

impl Drop for Restarted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_at(dir: &Path) -> Restarted {
    let mut child = Command::new(env!("CARGO_BIN_EXE_keel-apiserver-under-test"))
        .args(["--data-dir", dir.to_str().unwrap(), "--secure-port", "0"])
        .args(["--exit-on-stdin-close", "--sync", "none"])
        .arg(common::CONTROLLERS)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("start apiserver");
    let kubeconfig = dir.join("admin.kubeconfig");
    let deadline = Instant::now() + common::START_TIMEOUT;
    while !(dir.join("port").exists() && kubeconfig.exists()) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("apiserver exited during start on the restored directory: {status}");
        }
        assert!(Instant::now() < deadline, "restored server not ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    Restarted { child, kubeconfig }
}

#[test]
fn snapshot_while_writing_then_restore_and_serve() {
    let keel = Keel::start_with(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let client = keel.client();
    // Some objects first, then a writer that keeps creating through the snapshot.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 0..300 {
            let name = format!("pre-{i:04}");
            let rv = create(&client, &name).await.unwrap();
            acked.lock().unwrap().push((name, rv, Instant::now()));
        }
    });
    let writer = {
        let (acked, stop) = (acked.clone(), stop.clone());
        let kubeconfig = keel.kubeconfig.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            // A client of this runtime: pooled connections belong to the runtime that made
            // them, and the first one is no longer driven.
            let ep = keel_client::kubeconfig::load(&kubeconfig, None).unwrap();
            let client = keel_tools::kube_client(&ep, 1).unwrap();
            rt.block_on(async {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let name = format!("w-{i:06}");
                    let rv = create(&client, &name).await.unwrap();
                    acked.lock().unwrap().push((name, rv, Instant::now()));
                    i += 1;
                }
            });
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let snap = tmp.path().join("backup.snap");
    let began = Instant::now();
    let out = admin(&[
        "snapshot",
        "save",
        "--kubeconfig",
        keel.kubeconfig.to_str().unwrap(),
        "--out",
        snap.to_str().unwrap(),
    ]);
    let ended = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    eprintln!("{}", ok(&out));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&snap).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "snapshot file mode");
    assert!(!tmp.path().join(".backup.snap.part").exists());

    let status = ok(&admin(&[
        "snapshot",
        "status",
        snap.to_str().unwrap(),
        "--json",
    ]));
    let status: serde_json::Value = serde_json::from_str(status.trim()).unwrap();
    let r = status["revision"].as_u64().unwrap();
    assert_eq!(status["checksumOk"], true);
    let table = ok(&admin(&["snapshot", "status", snap.to_str().unwrap()]));
    assert!(
        table.contains(&format!("REVISION            {r}")),
        "{table}"
    );

    let acked = acked.lock().unwrap().clone();
    let before: Vec<&Acked> = acked.iter().filter(|a| a.2 < began).collect();
    let during_or_after = acked.iter().filter(|a| a.2 > ended).count();
    assert!(
        before.len() > 300,
        "writes acknowledged before the snapshot"
    );
    assert!(
        during_or_after > 0,
        "the writer kept writing after the snapshot"
    );
    assert!(
        acked.iter().any(|a| a.1 > r),
        "some acknowledged writes came after R = {r}"
    );

    // Restore into a new data directory; a used one is refused.
    let used = tmp.path().join("used");
    std::fs::create_dir(&used).unwrap();
    std::fs::write(used.join("x"), b"x").unwrap();
    let refused = admin(&[
        "snapshot",
        "restore",
        snap.to_str().unwrap(),
        "--data-dir",
        used.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not empty"));
    let data = tmp.path().join("restored");
    eprintln!(
        "{}",
        ok(&admin(&[
            "snapshot",
            "restore",
            snap.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ]))
    );
    let check = ok(&admin(&["check", "--data-dir", data.to_str().unwrap()]));
    assert!(check.contains("clean"), "{check}");

    let server = start_at(&data);
    let list = kubectl(
        &server.kubeconfig,
        &["get", "configmaps", "-n", "default", "-o", "json"],
    );
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let items = list["items"].as_array().unwrap();
    let restored: std::collections::HashMap<String, u64> = items
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
            )
        })
        .collect();
    // Every write acknowledged before the snapshot began, with its resourceVersion.
    for (name, rv, _) in &before {
        assert_eq!(
            restored.get(name),
            Some(rv),
            "{name}: acknowledged before the snapshot"
        );
    }
    // Exactly the acknowledged writes at or below R; nothing above R.
    for (name, rv, _) in &acked {
        if *rv <= r {
            assert_eq!(restored.get(name), Some(rv), "{name} at {rv} <= R {r}");
        } else {
            assert!(
                !restored.contains_key(name),
                "{name} at {rv} > R {r} was restored"
            );
        }
    }
    assert!(restored.values().all(|rv| *rv <= r));
    // A new write gets a revision above R.
    let created = kubectl(
        &server.kubeconfig,
        &[
            "create",
            "configmap",
            "after-restore",
            "-n",
            "default",
            "-o",
            "json",
        ],
    );
    let created: serde_json::Value = serde_json::from_str(&created).unwrap();
    let rv: u64 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        rv > r,
        "a write after the restore got {rv}, not above R = {r}"
    );
    drop(server);

    // The restored directory, stopped and damaged: check names the file and the offset.
    // The first segment holds the restored data: one batch from offset 64 (after the
    // segment header) whose first record starts at 96. The check names the record (96)
    // when later batches follow it, or the batch (64) when it is the segment's last, which
    // depends on the shard the writes after the restore went to.
    let seg = std::fs::read_dir(data.join("store/shard-000"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .min()
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[64 + 32 + 8] ^= 0x01; // the first record's revision, inside the first batch
    std::fs::write(&seg, &bytes).unwrap();
    let out = admin(&["check", "--data-dir", data.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "damage is exit code 1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("DAMAGE")
            && text.contains(&seg.display().to_string())
            && (text.contains("offset 64") || text.contains("offset 96")),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&seg).unwrap(),
        bytes,
        "check changed the file"
    );
}

#[test]
fn save_refuses_bad_credentials_and_leaves_nothing() {
    let keel = Keel::start_with(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("s.snap");
    // The server's CA, for --certificate-authority.
    let ca = keel.dir.join("pki").join("ca.crt");
    let server = format!("https://127.0.0.1:{}", keel.port);
    let out = admin(&[
        "snapshot",
        "save",
        "--server",
        &server,
        "--token",
        "not-a-token",
        "--certificate-authority",
        ca.to_str().unwrap(),
        "--out",
        out_file.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401"), "{err}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
    // The right token with the same flags works.
    let saved = ok(&admin(&[
        "snapshot",
        "save",
        "--server",
        &server,
        "--token",
        &keel.token,
        "--certificate-authority",
        ca.to_str().unwrap(),
        "--out",
        out_file.to_str().unwrap(),
    ]));
    assert!(saved.contains("Snapshot saved"), "{saved}");
}
