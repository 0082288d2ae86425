//! `keel-admin`: backup, restore and an offline check of a keel data directory (the etcd
//! operator's `etcdctl snapshot save`, `etcdutl snapshot restore`, `etcdutl snapshot status`,
//! and a `check` of what `Engine::open` would refuse). Command-line parsing in
//! `src/bin/keel-admin.rs`; the engine knowledge (snapshot format, restore, check) lives in
//! `keel_engine::{snapshot, restore, check}`; this module does files, the network and output.

use keel_client::kubeconfig::{self, Endpoint};
use keel_engine::check::{check, CheckReport, Severity};
use keel_engine::restore::{restore, RestoreOptions, Restored};
use keel_engine::snapshot::{read_snapshot, SnapshotDecoder, SnapshotSummary};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// User-Agent of keel-admin's requests.
pub const USER_AGENT: &str = "keel-admin";
/// The server's snapshot endpoint (`server/src/handlers/snapshot.rs`).
pub const SNAPSHOT_PATH: &str = "/keel/v1/snapshot";

/// Where to connect for `snapshot save`.
#[derive(Clone, Debug, Default)]
pub struct Conn {
    pub server: Option<String>,
    pub token: Option<String>,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub certificate_authority: Option<PathBuf>,
}

impl Conn {
    /// `--server` with `--token` (and `--certificate-authority`), or a kubeconfig whose
    /// server, token and CA the flags override (as kubectl's flags do).
    pub fn endpoint(&self) -> Result<Endpoint, String> {
        let mut ep = match (&self.kubeconfig, &self.server) {
            (Some(path), _) => kubeconfig::load(path, self.context.as_deref())?,
            (None, Some(server)) => Endpoint {
                server: server.clone(),
                ..Default::default()
            },
            (None, None) => return Err("give --server with --token, or --kubeconfig".into()),
        };
        if let Some(s) = &self.server {
            ep.server = s.trim_end_matches('/').to_string();
        }
        if let Some(t) = &self.token {
            ep.token = Some(t.clone());
        }
        if let Some(p) = &self.certificate_authority {
            ep.ca_pem = Some(std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?);
        }
        if ep.token.is_none() && ep.client_cert_pem.is_none() {
            return Err("no credentials: give --token, or a kubeconfig with a user".into());
        }
        Ok(ep)
    }
}

/// What `save` did.
#[derive(Debug)]
pub struct Saved {
    pub summary: SnapshotSummary,
    pub seconds: f64,
}

/// `snapshot save`: streams the server's snapshot into `<out>` (mode 0600) through a temporary
/// file beside it, verifying it as it arrives (framing, order, count, SHA-256); only a
/// complete, verified snapshot is synced and renamed into place. On any failure the
/// temporary file is removed and `out` is untouched.
pub fn save(conn: &Conn, out: &Path) -> Result<Saved, String> {
    let ep = conn.endpoint()?;
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let part = part_path(out)?;
    let result = rt.block_on(async {
        let client = keel_client::KubeClient::with_user_agent(&ep, 1, USER_AGENT)?;
        let mut body = client
            .stream(SNAPSHOT_PATH)
            .await
            .map_err(|e| format!("GET {SNAPSHOT_PATH}: {e}"))?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&part)
            .map_err(|e| format!("{}: {e}", part.display()))?;
        let mut dec = SnapshotDecoder::new();
        while let Some(chunk) = body.next_chunk().await? {
            dec.feed(chunk, &mut |_| Ok(()))
                .map_err(|e| format!("the server sent a bad snapshot: {e}"))?;
            file.write_all(chunk)
                .map_err(|e| format!("{}: {e}", part.display()))?;
        }
        let summary = dec
            .finish()
            .map_err(|e| format!("the snapshot stream ended early: {e}"))?;
        file.sync_all()
            .map_err(|e| format!("{}: {e}", part.display()))?;
        Ok::<_, String>(summary)
    });
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    std::fs::rename(&part, out).map_err(|e| {
        let _ = std::fs::remove_file(&part);
        format!("{}: {e}", out.display())
    })?;
    sync_parent(out)?;
    Ok(Saved {
        summary,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// `.<name>.part` beside `out`.
fn part_path(out: &Path) -> Result<PathBuf, String> {
    let name = out
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", out.display()))?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let dir = parent.unwrap_or(Path::new("."));
    Ok(dir.join(format!(".{}.part", name.to_string_lossy())))
}

fn sync_parent(path: &Path) -> Result<(), String> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let dir = parent.unwrap_or(Path::new("."));
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// `snapshot status`: reads and verifies the whole file.
pub fn status(file: &Path) -> Result<SnapshotSummary, String> {
    let mut f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    read_snapshot(&mut f, &mut |_| Ok(())).map_err(|e| format!("{}: {e}", file.display()))
}

/// The status as `etcdutl snapshot status` shows it (a table), or as JSON.
pub fn render_status(s: &SnapshotSummary, json: bool) -> String {
    let hash = hex(&s.sha256);
    let created = chrono::DateTime::from_timestamp_millis(s.header.created_unix_ms as i64)
        .map(|t| t.to_rfc3339())
        .unwrap_or_default();
    if json {
        return serde_json::json!({
            "revision": s.header.revision.0,
            "compactedRevision": s.header.compacted.0,
            "totalKeys": s.records,
            "totalSize": s.bytes,
            "sha256": hash,
            "created": created,
            "checksumOk": true,
        })
        .to_string();
    }
    let rows = [
        ("REVISION", s.header.revision.0.to_string()),
        ("COMPACTED REVISION", s.header.compacted.0.to_string()),
        ("TOTAL KEYS", s.records.to_string()),
        (
            "TOTAL SIZE",
            format!("{} ({} bytes)", human(s.bytes), s.bytes),
        ),
        ("SHA-256", hash),
        ("CREATED", created),
        ("CHECKSUM", "ok".to_string()),
    ];
    let mut out = String::new();
    for (k, v) in rows {
        out.push_str(&format!("{k:<20}{v}\n"));
    }
    out
}

/// The engine's directory inside the server's `--data-dir` (`server/src/run.rs`).
pub const STORE_SUBDIR: &str = "store";

/// `snapshot restore`: a new server data directory whose store (`<data-dir>/store`) holds
/// the snapshot. `data_dir` must not exist or be empty (created 0700); the server creates
/// its certificates, tokens and kubeconfig there on its first start.
pub fn restore_to(file: &Path, data_dir: &Path, shards: Option<usize>) -> Result<Restored, String> {
    match std::fs::read_dir(data_dir) {
        Ok(mut d) => {
            if d.next().is_some() {
                return Err(format!(
                    "{} exists and is not empty: restore writes a new data directory",
                    data_dir.display()
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            keel_engine::io::create_private_dir(data_dir)
                .map_err(|e| format!("{}: {e}", data_dir.display()))?;
        }
        Err(e) => return Err(format!("{}: {e}", data_dir.display())),
    }
    let mut o = RestoreOptions::new(file, data_dir.join(STORE_SUBDIR));
    if let Some(n) = shards {
        o.shards = n;
    }
    restore(&o).map_err(|e| e.to_string())
}

/// The store a `--data-dir` names: `<dir>/store` when there is one (a server's data
/// directory), else `dir` itself (the store directory given directly).
pub fn store_dir(dir: &Path) -> PathBuf {
    let sub = dir.join(STORE_SUBDIR);
    if sub.is_dir() {
        sub
    } else {
        dir.to_path_buf()
    }
}

/// `check`: the report, or why the directory could not be checked.
pub fn check_dir(dir: &Path) -> Result<CheckReport, String> {
    check(&store_dir(dir)).map_err(|e| format!("cannot check {}: {e}", dir.display()))
}

pub fn render_check(dir: &Path, r: &CheckReport) -> String {
    let mut out = String::new();
    for f in &r.findings {
        out.push_str(&format!("{f}\n"));
    }
    let damage = r.damage().count();
    let notes = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Note)
        .count();
    if damage == 0 {
        out.push_str(&format!(
            "{}: clean ({} shards, {} segments, {notes} notes)\n",
            dir.display(),
            r.shards,
            r.segments
        ));
    } else {
        out.push_str(&format!(
            "{}: DAMAGED: {damage} problems ({} shards, {} segments, {notes} notes); the server \
             refuses to start on it; --storage-repair keeps each shard's valid prefix and \
             reports what it drops, or restore a snapshot\n",
            dir.display(),
            r.shards,
            r.segments
        ));
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn human(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_file_is_beside_the_target() {
        assert_eq!(
            part_path(Path::new("/a/b/snap.db")).unwrap(),
            Path::new("/a/b/.snap.db.part")
        );
        assert_eq!(
            part_path(Path::new("snap.db")).unwrap(),
            Path::new("./.snap.db.part")
        );
    }

    #[test]
    fn sizes_read_as_etcdutl_shows_them() {
        assert_eq!(human(999), "999 B");
        assert_eq!(human(1_500_000), "1.5 MB");
    }

    #[test]
    fn credentials_are_required() {
        let c = Conn {
            server: Some("https://127.0.0.1:6443".into()),
            ..Default::default()
        };
        assert!(c.endpoint().unwrap_err().contains("credentials"));
        let c = Conn {
            token: Some("t".into()),
            ..c
        };
        assert_eq!(c.endpoint().unwrap().server, "https://127.0.0.1:6443");
    }
}
