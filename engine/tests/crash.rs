//! Crash tests: a child process writes to the store and is killed with SIGKILL at a random
//! moment; the store is then reopened in this process and checked.
//!
//! The test binary re-executes itself as the child (`crash_child_entry`, an ignored test that
//! does nothing unless `KEEL_CRASH_DIR` is set). The child opens the engine (2 shards,
//! `SyncMode::Always`, small segments so rollovers happen) and runs writer threads doing
//! creates, updates with and without preconditions and deletes over a small key space. Every
//! value is self-verifying: it names its key, its revision and its length, its filler is
//! derived from them, and it ends with a checksum. Before each write the child prints a `TRY`
//! line, after it an `ACK` line (the write is durable and acknowledged) or a `NAK` line (it was
//! refused); each line is written and flushed as one `write(2)`.
//!
//! After the kill, the reopened store must hold, for every key, the effect of its latest
//! acknowledged write or of a write that was in flight when the child died (never an older
//! state, never a value the child did not write at that revision, never a half-written one);
//! every acknowledged version must still be readable at its revision; the current revision
//! must cover everything present; and new writes must get revisions above all of it and
//! survive. Directories are reused for several crash/reopen rounds so torn tails in later
//! segments, and crashes during recovery itself, are exercised.
//!
//! Environment: `KEEL_CRASH_ITERS` (default 200), `KEEL_CRASH_SEED` (default fixed),
//! `KEEL_CRASH_KIND` (`small`, `reuse` or `big`: only that kind of directory streak).

use keel_engine::{
    Engine, Error, ListRequest, Options, Precondition, ReadAt, Revision, Store, StoreExt, SyncMode,
    WriteOp,
};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const DIR_ENV: &str = "KEEL_CRASH_DIR";
const SEED_ENV: &str = "KEEL_CRASH_CHILD_SEED";
const SEGMENT_ENV: &str = "KEEL_CRASH_SEGMENT_BYTES";
const BIG_ENV: &str = "KEEL_CRASH_BIG";
const KEYS: usize = 40;
const WRITERS: usize = 3;
/// Writers in a "big" streak: large values from more threads make multi-page batches (which a
/// kill can tear mid-`pwrite`) and a rollover every few writes.
const BIG_WRITERS: usize = 6;
const PREFIX: &str = "/crash/";
/// Shortest value: room for the header (key, revision, length) and the checksum.
const VALUE_MIN: usize = 64;

fn options(dir: &Path, segment_bytes: u64) -> Options {
    let mut o = Options::new(dir);
    o.shards = 2;
    o.sync = SyncMode::Always;
    o.maintenance_interval = None;
    o.limits.segment_bytes = segment_bytes;
    o.limits.key_bytes_max = 256;
    o.limits.value_bytes_max = 16 * 1024;
    o
}

/// Tiny deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi_inclusive: u64) -> u64 {
        lo + self.below(hi_inclusive - lo + 1)
    }
}

fn fnv64(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn key(i: usize) -> String {
    format!("{PREFIX}k{i:03}")
}

fn key_index(k: &[u8]) -> Option<usize> {
    let s = std::str::from_utf8(k)
        .ok()?
        .strip_prefix(PREFIX)?
        .strip_prefix('k')?;
    let i: usize = s.parse().ok()?;
    (i < KEYS && key(i).as_bytes() == k).then_some(i)
}

/// The only value ever written for `key` at `rev` with length `len`: a header naming all
/// three, filler derived from them, and the FNV-1a checksum of everything before it.
fn make_value(key: &str, rev: u64, len: usize) -> Vec<u8> {
    assert!(len >= VALUE_MIN);
    let mut v = format!("{key}@{rev}#{len};").into_bytes();
    let mut rng = Rng::new(fnv64(key.as_bytes()) ^ rev.rotate_left(17) ^ len as u64);
    while v.len() < len - 16 {
        v.push(b'a' + (rng.next() % 26) as u8);
    }
    let sum = fnv64(&v);
    v.extend_from_slice(format!("{sum:016x}").as_bytes());
    debug_assert_eq!(v.len(), len);
    v
}

/// Whether `v` is exactly the value the child writes for `key` at `rev`.
fn is_value_of(key: &str, rev: u64, v: &[u8]) -> bool {
    v.len() >= VALUE_MIN && v == make_value(key, rev, v.len()).as_slice()
}

// ---------------------------------------------------------------------------------------------
// The child.

#[test]
#[ignore = "child process of the crash tests; does nothing unless KEEL_CRASH_DIR is set"]
fn crash_child_entry() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let segment_bytes: u64 = std::env::var(SEGMENT_ENV).unwrap().parse().unwrap();
    let big = std::env::var(BIG_ENV).is_ok_and(|v| v == "1");
    child_main(Path::new(&dir), seed, segment_bytes, big);
}

fn emit(line: String) {
    let mut out = std::io::stdout().lock();
    // One write per line: a kill never leaves half a line followed by another line.
    out.write_all(line.as_bytes()).unwrap();
    out.flush().unwrap();
}

fn child_fail(msg: String) -> ! {
    eprintln!("crash child: {msg}");
    std::process::exit(3);
}

fn child_main(dir: &Path, seed: u64, segment_bytes: u64, big: bool) {
    let engine = match Engine::open(options(dir, segment_bytes)) {
        Ok(e) => e,
        Err(e) => child_fail(format!("open failed: {e}")),
    };
    // Leading newline: libtest may have printed "test crash_child_entry ... " without one.
    emit(format!("\nREADY {}\n", engine.current_revision()));
    let engine = &engine;
    std::thread::scope(|s| {
        for tid in 0..if big { BIG_WRITERS } else { WRITERS } {
            s.spawn(move || child_writer(engine, tid, seed ^ (tid as u64 + 1) << 32, big));
        }
    });
}

fn child_writer(engine: &Engine, tid: usize, seed: u64, big: bool) {
    let mut rng = Rng::new(seed);
    let deadline = Instant::now() + Duration::from_secs(60);
    for seq in 0u64.. {
        if Instant::now() > deadline {
            child_fail("not killed within 60 s".into());
        }
        let k = key(rng.below(KEYS as u64) as usize);
        let current = match engine.get(k.as_bytes(), ReadAt::Latest) {
            Ok(c) => c,
            Err(e) => child_fail(format!("get {k}: {e}")),
        };
        let len = if big {
            rng.range(8000, 15_000)
        } else if rng.below(4) == 0 {
            rng.range(4096, 15_000)
        } else {
            rng.range(VALUE_MIN as u64, 2500)
        } as usize;
        let roll = rng.below(100);
        let (tag, op) = match &current {
            None if roll < 90 => ('C', WriteOp::Create),
            None => ('U', WriteOp::Update(Precondition::None)),
            Some(kv) if roll < 55 => (
                'U',
                WriteOp::Update(Precondition::ModRevision(kv.mod_revision)),
            ),
            Some(_) if roll < 65 => ('U', WriteOp::Update(Precondition::None)),
            Some(kv) if roll < 90 => (
                'D',
                WriteOp::Delete(Precondition::ModRevision(kv.mod_revision)),
            ),
            Some(_) if roll < 95 => ('D', WriteOp::Delete(Precondition::None)),
            Some(_) => ('C', WriteOp::Create),
        };
        emit(format!("TRY {tid} {seq} {tag} {k}\n"));
        let built = std::cell::Cell::new(None);
        let res = engine
            .write(k.as_bytes(), op, |ctx, out| {
                let rev = ctx
                    .revision
                    .expect("the engine tells builders their revision");
                built.set(Some(rev));
                out.extend_from_slice(&make_value(&k, rev.0, len));
                Ok(())
            })
            .wait();
        match res {
            Ok(w) => {
                let (len, digest) = if tag == 'D' {
                    (0, 0)
                } else {
                    if built.get() != Some(w.revision) {
                        child_fail(format!(
                            "{k}: value built for {:?}, written at {}",
                            built.get(),
                            w.revision
                        ));
                    }
                    (len, fnv64(&make_value(&k, w.revision.0, len)))
                };
                emit(format!(
                    "ACK {tid} {seq} {tag} {k} {} {len} {digest:016x}\n",
                    w.revision
                ));
            }
            Err(
                e @ (Error::AlreadyExists { .. }
                | Error::NotFound
                | Error::Conflict { .. }
                | Error::Busy),
            ) => {
                emit(format!("NAK {tid} {seq} {e}\n"));
                if matches!(e, Error::Busy) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Err(e) => child_fail(format!("{tag} {k}: {e}")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parent.

/// What the child reported.
#[derive(Debug, Clone)]
struct Ack {
    tid: usize,
    seq: u64,
    tag: char,
    key: usize,
    rev: u64,
    len: usize,
    digest: u64,
}

#[derive(Default)]
struct ChildLog {
    ready: Option<u64>,
    acks: Vec<Ack>,
    /// Writes begun (tid, seq) -> (tag, key), and which of them got an answer.
    tries: HashMap<(usize, u64), (char, usize)>,
    answered: std::collections::HashSet<(usize, u64)>,
    lines: Vec<String>,
}

impl ChildLog {
    fn parse(&mut self, line: &str) -> Result<(), String> {
        let line = line.trim();
        let f: Vec<&str> = line.split(' ').collect();
        let bad = || format!("unparseable child line {line:?}");
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let key_of = |s: &str| key_index(s.as_bytes()).ok_or_else(bad);
        let tag_of = |s: &str| s.chars().next().ok_or_else(bad);
        match f[0] {
            "READY" => self.ready = Some(num(f[1])?),
            "TRY" if f.len() == 5 => {
                self.tries.insert(
                    (num(f[1])? as usize, num(f[2])?),
                    (tag_of(f[3])?, key_of(f[4])?),
                );
            }
            "ACK" if f.len() == 8 => {
                let ack = Ack {
                    tid: num(f[1])? as usize,
                    seq: num(f[2])?,
                    tag: tag_of(f[3])?,
                    key: key_of(f[4])?,
                    rev: num(f[5])?,
                    len: num(f[6])? as usize,
                    digest: u64::from_str_radix(f[7], 16).map_err(|_| bad())?,
                };
                self.answered.insert((ack.tid, ack.seq));
                self.acks.push(ack);
            }
            "NAK" if f.len() >= 3 => {
                self.answered.insert((num(f[1])? as usize, num(f[2])?));
            }
            "TRY" | "ACK" | "NAK" => return Err(bad()),
            _ => {}
        }
        self.lines.push(line.to_string());
        Ok(())
    }

    /// Writes that had begun and got no answer: at most one per writer thread.
    fn in_flight(&self) -> Vec<(char, usize)> {
        self.tries
            .iter()
            .filter(|(id, _)| !self.answered.contains(id))
            .map(|(_, &t)| t)
            .collect()
    }
}

/// The latest state of a key the parent knows to be committed.
#[derive(Clone, Debug, Default)]
struct Known {
    rev: u64,
    value: Option<Vec<u8>>,
}

/// One store directory across several crash/reopen rounds.
struct Streak {
    dir: PathBuf,
    segment_bytes: u64,
    big: bool,
    known: Vec<Known>,
    /// Every revision at or below this one was committed before the child started.
    floor: u64,
    rounds: usize,
}

#[derive(Default)]
struct Totals {
    acks: usize,
    unacked_landed: usize,
    in_flight: usize,
    early_kills: usize,
    max_segments: usize,
    history_checked: usize,
    torn_tails: usize,
    corrupt_scans: usize,
}

fn run_child(
    streak: &Streak,
    seed: u64,
    rng: &mut Rng,
    totals: &mut Totals,
) -> Result<ChildLog, String> {
    // `/proc/self/exe` still execs this binary if a concurrent `cargo test` replaced the file.
    let proc_exe = Path::new("/proc/self/exe");
    let exe = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe().unwrap()
    };
    let mut child = Command::new(exe)
        .args([
            "crash_child_entry",
            "--exact",
            "--nocapture",
            "--ignored",
            "--test-threads=1",
        ])
        .env(DIR_ENV, &streak.dir)
        .env(SEED_ENV, seed.to_string())
        .env(SEGMENT_ENV, streak.segment_bytes.to_string())
        .env(BIG_ENV, if streak.big { "1" } else { "0" })
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn child: {e}"))?;
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                // A line without its newline was cut by the kill: it was never acknowledged.
                Ok(0) | Err(_) => return,
                Ok(_) if buf.last() != Some(&b'\n') => return,
                Ok(_) => {
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    let mut log = ChildLog::default();
    // Usually kill a while after the child is writing; sometimes kill it while it may still
    // be recovering (a crash during recovery must be survivable too).
    let early = streak.rounds > 0 && rng.below(6) == 0;
    let mut problem = None;
    if early {
        totals.early_kills += 1;
        std::thread::sleep(Duration::from_millis(rng.range(0, 8)));
    } else {
        let deadline = Instant::now() + Duration::from_secs(30);
        while log.ready.is_none() {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    if let Err(e) = log.parse(&line) {
                        problem = Some(e);
                        break;
                    }
                }
                Err(_) => {
                    problem = Some("child not ready within 30 s (or it exited)".to_string());
                    break;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(rng.range(5, 60)));
    }
    let exited = child.try_wait().map_err(|e| e.to_string())?;
    let _ = child.kill();
    let status = child.wait().map_err(|e| e.to_string())?;
    reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    for line in rx.try_iter() {
        log.parse(&line)?;
    }
    if let Some(status) = exited {
        return Err(format!(
            "child exited by itself ({status}) before the kill; stderr:\n{stderr}"
        ));
    }
    use std::os::unix::process::ExitStatusExt;
    if status.signal() != Some(libc::SIGKILL) {
        return Err(format!(
            "child ended with {status}, not SIGKILL; stderr:\n{stderr}"
        ));
    }
    if let Some(p) = problem {
        return Err(format!("{p}; stderr:\n{stderr}"));
    }
    Ok(log)
}

/// Reopens the store after a crash and checks it against what the child reported; then
/// writes a little and closes. Updates the streak's knowledge.
fn verify(
    streak: &mut Streak,
    log: &ChildLog,
    rng: &mut Rng,
    totals: &mut Totals,
) -> Result<(), String> {
    count_scan_outcomes(&streak.dir, totals);
    let before = describe_segments(&streak.dir);
    let engine = Engine::open(options(&streak.dir, streak.segment_bytes)).map_err(|e| {
        format!("reopen after the kill failed: {e}\nsegments as the kill left them:\n{before}")
    })?;
    let r = check_reopened(&engine, streak, log, rng, totals);
    let closed = engine.close().map_err(|e| format!("close: {e}"));
    r.and(closed)
}

fn check_reopened(
    engine: &Engine,
    streak: &mut Streak,
    log: &ChildLog,
    rng: &mut Rng,
    totals: &mut Totals,
) -> Result<(), String> {
    let current = engine.current_revision().0;
    let compacted = engine.compacted_revision().0;
    let mut acks = log.acks.clone();
    acks.sort_by_key(|a| a.rev);
    for w in acks.windows(2) {
        if w[0].rev == w[1].rev {
            return Err(format!(
                "two acknowledged writes got revision {}: {w:?}",
                w[0].rev
            ));
        }
    }
    if let Some(a) = acks.first() {
        if a.rev <= streak.floor {
            return Err(format!(
                "child's write {a:?} got revision {} but revision {} was committed before it started",
                a.rev, streak.floor
            ));
        }
    }
    if let Some(ready) = log.ready {
        if ready < streak.floor {
            return Err(format!(
                "child opened at revision {ready}, below the committed {}",
                streak.floor
            ));
        }
    }
    let max_acked = acks.last().map_or(0, |a| a.rev);
    if current < max_acked.max(streak.floor) {
        return Err(format!(
            "revision after reopen is {current}, below acknowledged {max_acked} / committed {}",
            streak.floor
        ));
    }

    // Every acknowledged version is readable at its revision, byte for byte.
    for a in &acks {
        let k = key(a.key);
        let expected = (a.tag != 'D').then(|| make_value(&k, a.rev, a.len));
        if let Some(v) = &expected {
            if fnv64(v) != a.digest {
                return Err(format!(
                    "child reported digest {:016x} for {a:?}, value has {:016x}",
                    a.digest,
                    fnv64(v)
                ));
            }
        }
        if known_rev(streak, a.key) >= a.rev {
            return Err(format!(
                "acknowledged {a:?} is not newer than {:?}",
                streak.known[a.key]
            ));
        }
        streak.known[a.key] = Known {
            rev: a.rev,
            value: expected.clone(),
        };
        if a.rev < compacted {
            continue;
        }
        let got = engine
            .get(k.as_bytes(), ReadAt::Exact(Revision(a.rev)))
            .map_err(|e| format!("get {k} at acknowledged revision {}: {e}", a.rev))?;
        totals.history_checked += 1;
        match (&got, &expected) {
            (None, None) => {}
            (Some(kv), Some(v)) if kv.mod_revision.0 == a.rev && kv.value() == v.as_slice() => {}
            _ => {
                return Err(format!(
                    "acknowledged {a:?} reads back at its revision as {got:?} (value intact: {})",
                    got.as_ref()
                        .is_some_and(|kv| expected.as_deref() == Some(kv.value()))
                ))
            }
        }
    }
    totals.acks += acks.len();

    // The latest state of every key: the latest acknowledged one, or an in-flight write's.
    let in_flight = log.in_flight();
    let mut present = 0;
    let mut max_present = 0;
    for i in 0..KEYS {
        let k = key(i);
        let kv = engine
            .get(k.as_bytes(), ReadAt::Latest)
            .map_err(|e| format!("get {k}: {e}"))?;
        let known = streak.known[i].clone();
        let flight = |tags: &[char]| {
            in_flight
                .iter()
                .any(|&(t, key)| key == i && tags.contains(&t))
        };
        match (&kv, &known.value) {
            (Some(kv), Some(v)) if kv.mod_revision.0 == known.rev => {
                if kv.value() != v.as_slice() {
                    return Err(format!(
                        "{k}: acknowledged value at {} damaged ({} bytes, intact: {})",
                        known.rev,
                        kv.value().len(),
                        is_value_of(&k, known.rev, kv.value())
                    ));
                }
            }
            (Some(kv), _) if kv.mod_revision.0 > known.rev && kv.mod_revision.0 > streak.floor => {
                // An unacknowledged write that reached the disk.
                if !flight(&['C', 'U']) {
                    return Err(format!(
                        "{k}: holds revision {} newer than its last acknowledged {known:?}, but no \
                         write of it was in flight ({in_flight:?})",
                        kv.mod_revision
                    ));
                }
                if !is_value_of(&k, kv.mod_revision.0, kv.value()) {
                    return Err(format!(
                        "{k}: unacknowledged value at {} is not one the child wrote ({} bytes: {:?}...)",
                        kv.mod_revision,
                        kv.value().len(),
                        String::from_utf8_lossy(&kv.value()[..kv.value().len().min(48)])
                    ));
                }
                totals.unacked_landed += 1;
                streak.known[i] = Known {
                    rev: kv.mod_revision.0,
                    value: Some(kv.value().to_vec()),
                };
            }
            (Some(kv), _) => {
                return Err(format!(
                    "{k}: holds revision {} but its latest acknowledged state is {} at {}: an \
                     acknowledged write was lost",
                    kv.mod_revision,
                    if known.value.is_some() {
                        "a value"
                    } else {
                        "deleted"
                    },
                    known.rev
                ))
            }
            (None, None) => {}
            (None, Some(_)) => {
                if !flight(&['D']) {
                    return Err(format!(
                        "{k}: missing, but its acknowledged value at {} was never deleted \
                         (in flight: {in_flight:?})",
                        known.rev
                    ));
                }
                totals.unacked_landed += 1;
                streak.known[i] = Known {
                    rev: current,
                    value: None,
                };
            }
        }
        if let Some(kv) = &kv {
            present += 1;
            max_present = max_present.max(kv.mod_revision.0);
        }
    }
    totals.in_flight += in_flight.len();
    if max_present > current {
        return Err(format!(
            "key at revision {max_present} above the current revision {current}"
        ));
    }
    let listed = engine
        .list(&ListRequest::prefix(PREFIX.as_bytes()))
        .map_err(|e| format!("list: {e}"))?;
    if listed.items.len() != present || listed.items.iter().any(|kv| key_index(kv.key()).is_none())
    {
        return Err(format!(
            "list shows {} keys, gets show {present}: {:?}",
            listed.items.len(),
            listed.items
        ));
    }

    // The store keeps working, with revisions above everything seen.
    let mut prev = current.max(max_acked).max(max_present);
    for _ in 0..4 {
        let i = rng.below(KEYS as u64) as usize;
        let k = key(i);
        let len = rng.range(VALUE_MIN as u64, 3000) as usize;
        let known = streak.known[i].clone();
        let (op, deletes) = match &known.value {
            None => (WriteOp::Create, false),
            Some(_) if rng.below(3) == 0 => (
                WriteOp::Delete(Precondition::ModRevision(Revision(known.rev))),
                true,
            ),
            Some(_) => (
                WriteOp::Update(Precondition::ModRevision(Revision(known.rev))),
                false,
            ),
        };
        let w = engine
            .write(k.as_bytes(), op, |ctx, out| {
                let rev = ctx
                    .revision
                    .expect("the engine tells builders their revision");
                out.extend_from_slice(&make_value(&k, rev.0, len));
                Ok(())
            })
            .wait()
            .map_err(|e| format!("write {op:?} to {k} after reopen (known {known:?}): {e}"))?;
        if w.revision.0 <= prev {
            return Err(format!(
                "write after reopen got revision {} not above {prev}",
                w.revision
            ));
        }
        prev = w.revision.0;
        let value = (!deletes).then(|| make_value(&k, w.revision.0, len));
        let got = engine
            .get(k.as_bytes(), ReadAt::Latest)
            .map_err(|e| e.to_string())?;
        if got
            .as_ref()
            .map(|kv| (kv.mod_revision.0, kv.value().to_vec()))
            != value.clone().map(|v| (w.revision.0, v))
        {
            return Err(format!(
                "{k}: write after reopen at {} reads back as {got:?}",
                w.revision
            ));
        }
        streak.known[i] = Known {
            rev: w.revision.0,
            value,
        };
    }
    streak.floor = prev;
    totals.max_segments = totals.max_segments.max(engine.stats().segments);
    Ok(())
}

/// Notes how the newest segment of each shard looks to `scan_segment` before recovery (a kill
/// between a batch's `pwrite` calls leaves a torn tail; a kill between whole writes does not).
fn count_scan_outcomes(dir: &Path, totals: &mut Totals) {
    for shard in ["shard-000", "shard-001"] {
        let Ok(rd) = std::fs::read_dir(dir.join(shard)) else {
            continue;
        };
        let newest = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "seg"))
            .max();
        let Some(bytes) = newest.and_then(|p| std::fs::read(p).ok()) else {
            continue;
        };
        match keel_engine::format::scan_segment(&bytes, |_, _| {}, |_| {}) {
            keel_engine::format::ScanEnd::TornTail { .. } => totals.torn_tails += 1,
            keel_engine::format::ScanEnd::Corrupt { .. } => totals.corrupt_scans += 1,
            keel_engine::format::ScanEnd::Clean { .. } => {}
        }
    }
}

/// Every segment file of the store and how `scan_segment` sees it.
fn describe_segments(dir: &Path) -> String {
    let mut out = String::new();
    for shard in ["shard-000", "shard-001"] {
        let Ok(rd) = std::fs::read_dir(dir.join(shard)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).unwrap_or_default();
            let mut batches = 0;
            let end = keel_engine::format::scan_segment(&bytes, |_, _| batches += 1, |_| {});
            let header = keel_engine::format::SegmentHeader::decode(&bytes);
            out += &format!(
                "  {shard}/{}: {} bytes, header {:?}, {batches} batches, {end:?}\n",
                f.file_name().unwrap().to_string_lossy(),
                bytes.len(),
                header.map(|h| h.seq)
            );
        }
    }
    out
}

fn known_rev(streak: &Streak, i: usize) -> u64 {
    streak.known[i].rev
}

#[test]
fn crash_recovery_keeps_every_acknowledged_write() {
    let iters: usize = std::env::var("KEEL_CRASH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("KEEL_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xc7a5);
    eprintln!("crash test: {iters} iterations, KEEL_CRASH_SEED={seed}");
    let mut rng = Rng::new(seed);
    let mut totals = Totals::default();
    let started = Instant::now();
    let mut streak: Option<(tempfile::TempDir, Streak, usize)> = None;
    for iter in 0..iters {
        if streak.as_ref().is_none_or(|(_, s, len)| s.rounds >= *len) {
            let tmp = tempfile::Builder::new()
                .prefix("keel-crash")
                .tempdir()
                .unwrap();
            // 64 KiB segments: every open starts a new segment and rollovers are frequent;
            // 256 KiB: the newest segment is reused after a reopen, so torn tails are zeroed
            // and then written over; "big": 64 KiB segments filled by large values from more
            // writers, a rollover every few writes.
            let kind = match std::env::var("KEEL_CRASH_KIND").as_deref() {
                Ok("small") => 0,
                Ok("reuse") => 1,
                Ok("big") => 2,
                _ => rng.below(3),
            };
            let s = Streak {
                dir: tmp.path().join("store"),
                segment_bytes: if kind == 1 { 256 << 10 } else { 64 << 10 },
                big: kind == 2,
                known: vec![Known::default(); KEYS],
                floor: 0,
                rounds: 0,
            };
            let len = rng.range(1, 8) as usize;
            streak = Some((tmp, s, len));
        }
        let (_, s, _) = streak.as_mut().unwrap();
        let child_seed = rng.next();
        let result = run_child(s, child_seed, &mut rng, &mut totals).and_then(|log| {
            verify(s, &log, &mut rng, &mut totals)
                .map_err(|e| (e, log))
                .map_err(|(e, log)| {
                    let tail: Vec<&String> = log.lines.iter().rev().take(12).collect();
                    format!("{e}\nlast child lines (newest first): {tail:#?}")
                })
        });
        s.rounds += 1;
        if let Err(e) = result {
            let (tmp, s, _) = streak.take().unwrap();
            let kept = tmp.keep();
            panic!(
                "crash iteration {iter} (round {} of its directory, segments of {} bytes, big \
                 values: {}, KEEL_CRASH_SEED={seed}, child seed {child_seed}): {e}\nstore kept \
                 at {}",
                s.rounds,
                s.segment_bytes,
                s.big,
                kept.display()
            );
        }
    }
    let t = &totals;
    eprintln!(
        "crash test: {iters} iterations in {:.1?}: {} acknowledged writes checked ({} at their \
         revision), {} writes in flight at a kill, {} of them landed, {} early kills, up to {} \
         segments; newest segments found torn {} times, corrupt {} times",
        started.elapsed(),
        t.acks,
        t.history_checked,
        t.in_flight,
        t.unacked_landed,
        t.early_kills,
        t.max_segments,
        t.torn_tails,
        t.corrupt_scans
    );
    assert!(
        t.acks > iters,
        "too few acknowledged writes ({}) to mean anything",
        t.acks
    );
    assert!(
        t.max_segments > 4,
        "segments never rolled over (at most {})",
        t.max_segments
    );
}
