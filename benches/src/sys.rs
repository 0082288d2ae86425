//! Facts about the machine and the process: CPU, memory, kernel, the data directory's
//! filesystem, RSS, the git commit, the UTC date, directory sizes.

use serde::Serialize;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total_gib: f64,
    pub kernel: String,
    /// Filesystem type of the data directory's mount (from /proc/self/mounts).
    pub fs_type: String,
    pub fs_device: String,
    pub fs_mount: String,
    pub data_dir: String,
    /// /proc/loadavg (1, 5, 15 minutes) when the run started: other work on the machine.
    pub load_avg_at_start: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim())
}

pub fn machine(data_dir: &Path) -> Machine {
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let mem_kib: f64 = field(&meminfo, "MemTotal")
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let (fs_type, fs_device, fs_mount) = filesystem_of(data_dir);
    Machine {
        nproc: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        cpu_model: field(&cpuinfo, "model name")
            .unwrap_or("unknown")
            .to_string(),
        mem_total_gib: mem_kib / (1024.0 * 1024.0),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        fs_type,
        fs_device,
        fs_mount,
        data_dir: data_dir.display().to_string(),
        load_avg_at_start: read("/proc/loadavg")
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn unescape_mount(s: &str) -> String {
    // /proc/self/mounts escapes space, tab, newline and backslash as \ooo.
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// (fstype, device, mount point) of the mount holding `dir` (longest matching mount point).
pub fn filesystem_of(dir: &Path) -> (String, String, String) {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut best: Option<(usize, String, String, String)> = None;
    for line in read("/proc/self/mounts").lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let mnt = unescape_mount(f[1]);
        if dir.starts_with(&mnt) {
            let len = mnt.len();
            if best.as_ref().is_none_or(|b| len >= b.0) {
                best = Some((len, f[2].to_string(), f[0].to_string(), mnt));
            }
        }
    }
    best.map(|(_, t, d, m)| (t, d, m))
        .unwrap_or_else(|| ("unknown".into(), "?".into(), "?".into()))
}

/// Resident set figures from /proc/self/status, in KiB.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Rss {
    pub vm_rss_kib: u64,
    pub rss_anon_kib: u64,
    pub rss_file_kib: u64,
}

pub fn rss() -> Rss {
    let status = read("/proc/self/status");
    let kib = |name: &str| -> u64 {
        field(&status, name)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Rss {
        vm_rss_kib: kib("VmRSS"),
        rss_anon_kib: kib("RssAnon"),
        rss_file_kib: kib("RssFile"),
    }
}

/// The workspace root (the parent of this crate's manifest directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `git rev-parse --short HEAD`, with ` (+uncommitted changes)` when the tree is dirty.
pub fn git_commit() -> String {
    let root = workspace_root();
    let run = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    match run(&["rev-parse", "--short", "HEAD"]) {
        Some(c) => match run(&["status", "--porcelain"]) {
            Some(s) if !s.is_empty() => format!("{c} (+uncommitted changes)"),
            _ => c,
        },
        None => "unknown".to_string(),
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = (z - era * 146_097) as u64;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe as i64 + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Total (apparent length, allocated bytes, files) under `dir`.
pub fn dir_size(dir: &Path) -> (u64, u64, u64) {
    let mut apparent = 0;
    let mut allocated = 0;
    let mut files = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(md) = e.metadata() else { continue };
            if md.is_dir() {
                stack.push(e.path());
            } else {
                apparent += md.len();
                allocated += md.blocks() * 512;
                files += 1;
            }
        }
    }
    (apparent, allocated, files)
}

/// User + system CPU seconds used by the whole process so far.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid initial value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn mount_escapes() {
        assert_eq!(unescape_mount("/a\\040b"), "/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
    }
}
