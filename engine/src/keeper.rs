//! The keeper: the live `MANIFEST` (`manifest.rs`) and the revision ceiling.
//!
//! **The manifest** is rewritten (atomically: `MANIFEST.tmp`, `fsync`, rename, directory
//! `fsync`) only when
//! - a shard's flusher is about to write the first batch into a new segment (`roll`): the
//!   previous segment is synced, then recorded as sealed at its exact length, and the new one
//!   as active, before it receives data;
//! - a segment rewrite or removal starts and ends (`rewrite_begin`/`rewrite_end`,
//!   `remove_begin`/`remove_end`), so that the file is one of the states the manifest allows
//!   at every moment;
//! - the compacted revision moves (`set_compacted`, after `COMPACTED` is written);
//! - the revision ceiling is raised (below);
//! - on a timer, when an active segment's synced end moved (`refresh`, at most every
//!   `MANIFEST_REFRESH_INTERVAL`): after an unclean shutdown, batches synced before the last
//!   write cannot vanish unnoticed;
//! - at a clean close (`close`), with every active segment's exact end.
//!
//! None of these is on a write's path: no batch waits for a manifest write, except the first
//! batch of a new segment (every `segment_bytes`), and the first write after an open that kept
//! a clean close's manifest as it was (it waits for the first raise).
//!
//! **The revision ceiling**: every revision the sequencer hands out is at or below the ceiling
//! recorded in the durable manifest. A revision is admitted only below the durable ceiling; when
//! half of the reserve is used the keeper's thread raises it by `Limits::revision_reserve` (one
//! manifest write), so writers never wait for it unless they outrun a raise. After any loss
//! (a crash, a torn tail, a repair dropping acknowledged batches) the next revision is the
//! ceiling plus one: no revision is handed out twice, whatever was lost. A clean close records
//! the last revision handed out as the ceiling, so a clean restart skips nothing.
//!
//! Fail-stop: a failed manifest write stops the engine (`Health`), like a failed `fdatasync`:
//! without it the ceiling or a sealed length might not be durable.
//!
//! With `SyncMode::None` nothing is synced, the manifest and the segments it seals included:
//! it survives a process crash (the rename is atomic in the page cache), not a power loss,
//! after which the store may need a repair (`FORMAT.md`, "What is assumed of the medium").

use crate::health::{Failure, Health};
use crate::io::Io;
use crate::manifest::{Entry, Manifest, ENTRY_ACTIVE, ENTRY_PENDING, ENTRY_REMOVING};
use crate::segment::Segment;
use crate::{Error, Revision, SyncMode};
use parking_lot::{Condvar, Mutex};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const MANIFEST_FILE: &str = "MANIFEST";

/// Writes `bytes` to `<dir>/<name>` atomically: `<name>.tmp`, `fsync`, rename, directory
/// `fsync`.
pub fn write_atomically(io: &dyn Io, dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    replace_file(io, dir, name, bytes, true)
}

/// `write_atomically`, without the two `fsync`s unless `sync`: atomic against a process crash
/// (the rename), not against a power loss.
fn replace_file(
    io: &dyn Io,
    dir: &Path,
    name: &str,
    bytes: &[u8],
    sync: bool,
) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let f = io.create(&tmp, false)?;
    f.write_all_at(bytes, 0)?;
    if sync {
        f.sync_all()?;
    }
    io.rename(&tmp, &dir.join(name))?;
    if sync {
        io.sync_dir(dir)?;
    }
    Ok(())
}

/// The durable revision ceiling, shared by the sequencer (which admits revisions below it)
/// and the keeper's thread (which raises it).
pub struct Ceiling {
    /// The ceiling in the durable manifest.
    value: AtomicU64,
    /// Raise by this much; ask for a raise when less than half of it is left.
    step: u64,
    /// A raise was asked for and has not happened yet.
    asked: AtomicBool,
    wait: Mutex<CeilingWait>,
    changed: Condvar,
}

#[derive(Default)]
struct CeilingWait {
    /// The highest revision a writer wants admitted.
    wanted: u64,
    stop: bool,
    /// Why raising failed: the engine stopped.
    failed: Option<String>,
}

impl Ceiling {
    pub fn new(durable: Revision, step: u64) -> Ceiling {
        assert!(step >= 2, "revision reserve of {step}");
        Ceiling {
            value: AtomicU64::new(durable.0),
            step,
            asked: AtomicBool::new(false),
            wait: Mutex::new(CeilingWait::default()),
            changed: Condvar::new(),
        }
    }

    pub fn value(&self) -> Revision {
        Revision(self.value.load(Ordering::Acquire))
    }

    /// Whether `rev` may be handed out now. Asks for a raise once half the reserve is used.
    pub fn admit(&self, rev: Revision) -> bool {
        let c = self.value.load(Ordering::Acquire);
        if rev.0 + self.step / 2 > c && !self.asked.swap(true, Ordering::AcqRel) {
            let mut w = self.wait.lock();
            w.wanted = w.wanted.max(rev.0);
            self.changed.notify_all();
        }
        rev.0 <= c
    }

    /// Waits until `rev` is admitted (the keeper's thread raises the ceiling).
    pub fn wait_for(&self, rev: Revision) -> Result<(), Error> {
        let mut w = self.wait.lock();
        w.wanted = w.wanted.max(rev.0);
        self.changed.notify_all();
        loop {
            if self.value.load(Ordering::Acquire) >= rev.0 {
                return Ok(());
            }
            if let Some(why) = &w.failed {
                return Err(Error::Failed(why.clone()));
            }
            if w.stop {
                return Err(Error::Closed);
            }
            self.changed.wait(&mut w);
        }
    }

    fn stop(&self) {
        self.wait.lock().stop = true;
        self.changed.notify_all();
    }
}

struct State {
    m: Manifest,
    /// Per shard, the segment its manifest entry marks active.
    active: Vec<Option<Arc<Segment>>>,
    /// The manifest on disk is a clean close's and nothing changed since: the store has not
    /// been written to (a write needs a revision, which needs a raise, which writes).
    clean_on_disk: bool,
    /// A write failed: the engine stopped, nothing more is written.
    failed: bool,
}

/// Where and how a `Keeper` writes.
pub struct KeeperSetup {
    pub io: Arc<dyn Io>,
    /// The store directory.
    pub dir: PathBuf,
    pub health: Arc<Health>,
    /// `Limits::revision_reserve`.
    pub reserve: u64,
    pub sync: SyncMode,
}

/// See the module docs.
pub struct Keeper {
    io: Arc<dyn Io>,
    dir: PathBuf,
    /// `SyncMode::Always`: manifest writes and sealed segments are synced.
    sync: bool,
    health: Arc<Health>,
    pub ceiling: Arc<Ceiling>,
    state: Mutex<State>,
}

impl Keeper {
    /// Keeps `m` as the store's manifest, writing it (with the `active` segments' synced
    /// ends) unless `on_disk`: it is what a clean close wrote, and the open changed nothing
    /// (the first write's raise of the ceiling rewrites it, as not clean). `m.ceiling` is the
    /// ceiling writers are admitted below.
    pub fn create(
        setup: KeeperSetup,
        m: Manifest,
        active: Vec<Option<Arc<Segment>>>,
        on_disk: bool,
    ) -> Result<Keeper, Error> {
        assert_eq!(m.shards.len(), active.len());
        assert!(
            !on_disk || m.clean,
            "only a clean manifest is kept as it is"
        );
        let k = Keeper {
            io: setup.io,
            dir: setup.dir,
            sync: setup.sync == SyncMode::Always,
            health: setup.health,
            ceiling: Arc::new(Ceiling::new(m.ceiling, setup.reserve)),
            state: Mutex::new(State {
                m,
                active,
                clean_on_disk: on_disk,
                failed: false,
            }),
        };
        if !on_disk {
            k.write(&mut k.state.lock(), false)?;
        }
        Ok(k)
    }

    /// Writes the manifest as `st` holds it, with each active segment's synced end.
    fn write(&self, st: &mut State, clean: bool) -> std::io::Result<()> {
        if st.failed || self.health.check().is_err() {
            return Err(std::io::Error::other(
                "the engine stopped after an I/O error",
            ));
        }
        for (shard, seg) in st.active.iter().enumerate() {
            let Some(seg) = seg else { continue };
            let e = st.m.shards[shard]
                .last_mut()
                .expect("an active segment has an entry");
            assert!(
                e.is(ENTRY_ACTIVE) && e.seq == seg.header.seq,
                "shard {shard}: active segment {} is not the manifest's last entry {e:?}",
                seg.header.seq
            );
            let d = seg.durable();
            (e.end, e.first, e.last) = (d.end, d.first, d.last);
        }
        st.m.clean = clean;
        st.m.generation += 1;
        let r = replace_file(
            &*self.io,
            &self.dir,
            MANIFEST_FILE,
            &st.m.encode(),
            self.sync,
        );
        st.clean_on_disk = clean && r.is_ok();
        if let Err(e) = &r {
            st.failed = true;
            self.health.fail(Failure::io(
                None,
                "writing MANIFEST",
                Some(self.dir.join(MANIFEST_FILE)),
                e,
            ));
        }
        r
    }

    /// The flusher of `shard` is about to write into `new` for the first time: syncs `old`
    /// (the active segment so far), records it sealed at its end and `new` as active.
    pub fn roll(
        &self,
        shard: usize,
        old: &Arc<Segment>,
        new: &Arc<Segment>,
    ) -> std::io::Result<()> {
        old.seal(self.sync)?;
        let mut st = self.state.lock();
        let entries = &mut st.m.shards[shard];
        let e = entries.last_mut().expect("the old segment has an entry");
        assert!(
            e.is(ENTRY_ACTIVE) && e.seq == old.header.seq && new.header.seq > old.header.seq,
            "shard {shard}: rolling from {} to {}, manifest's active is {e:?}",
            old.header.seq,
            new.header.seq
        );
        let d = old.durable();
        *e = Entry {
            flags: e.flags & !ENTRY_ACTIVE,
            end: d.end,
            size: old.capacity(),
            first: d.first,
            last: d.last,
            seq: e.seq,
        };
        entries.push(entry_of(new, ENTRY_ACTIVE));
        st.active[shard] = Some(new.clone());
        self.write(&mut st, false)
    }

    /// Whether `seg` is `shard`'s active segment in the manifest (never rewritten).
    pub fn is_active(&self, shard: usize, seg: &Segment) -> bool {
        self.state.lock().active[shard]
            .as_ref()
            .is_some_and(|a| a.header.seq == seg.header.seq)
    }

    /// A rewrite of segment `seq` is about to be renamed into place: the file may be either.
    pub fn rewrite_begin(&self, shard: usize, seq: u64, new: Entry) -> std::io::Result<()> {
        let mut st = self.state.lock();
        let entries = &mut st.m.shards[shard];
        entries.retain(|e| !(e.seq == seq && e.is(ENTRY_PENDING)));
        let i = index_of(entries, seq, shard);
        entries.insert(
            i + 1,
            Entry {
                flags: new.flags | ENTRY_PENDING,
                ..new
            },
        );
        self.write(&mut st, false)
    }

    /// The rewrite of `seq` is in place: only its new state is allowed.
    pub fn rewrite_end(&self, shard: usize, seq: u64) -> std::io::Result<()> {
        let mut st = self.state.lock();
        let entries = &mut st.m.shards[shard];
        let i = index_of(entries, seq, shard);
        assert!(entries[i + 1].seq == seq && entries[i + 1].is(ENTRY_PENDING));
        entries.remove(i);
        entries[i].flags &= !ENTRY_PENDING;
        self.write(&mut st, false)
    }

    /// Segment `seq` is about to be deleted.
    pub fn remove_begin(&self, shard: usize, seq: u64) -> std::io::Result<()> {
        let mut st = self.state.lock();
        let entries = &mut st.m.shards[shard];
        entries.retain(|e| !(e.seq == seq && e.is(ENTRY_PENDING)));
        let i = index_of(entries, seq, shard);
        entries[i].flags |= ENTRY_REMOVING;
        self.write(&mut st, false)
    }

    /// Segment `seq` is deleted (and its directory synced).
    pub fn remove_end(&self, shard: usize, seq: u64) -> std::io::Result<()> {
        let mut st = self.state.lock();
        let entries = &mut st.m.shards[shard];
        let i = index_of(entries, seq, shard);
        entries.remove(i);
        self.write(&mut st, false)
    }

    /// Records the compacted revision (`COMPACTED` is written first).
    pub fn set_compacted(&self, c: Revision) -> std::io::Result<()> {
        let mut st = self.state.lock();
        st.m.compacted = c;
        self.write(&mut st, false)
    }

    /// Rewrites the manifest if an active segment's synced end moved since the last write.
    fn refresh(&self) {
        let mut st = self.state.lock();
        let moved = st.active.iter().enumerate().any(|(shard, seg)| {
            seg.as_ref()
                .is_some_and(|s| st.m.shards[shard].last().map(|e| e.end) != Some(s.durable().end))
        });
        if moved && !st.failed {
            let _ = self.write(&mut st, false);
        }
    }

    /// Raises the durable ceiling to `to`.
    fn raise(&self, to: Revision) -> Result<(), String> {
        let mut st = self.state.lock();
        let before = st.m.ceiling;
        st.m.ceiling = st.m.ceiling.max(to);
        match self.write(&mut st, false) {
            Ok(()) => Ok(()),
            Err(e) => {
                st.m.ceiling = before;
                Err(match self.health.check() {
                    Err(f) => f.to_string(),
                    Ok(()) => e.to_string(),
                })
            }
        }
    }

    /// The keeper's thread: raises the ceiling when asked, refreshes the manifest every
    /// `every`. Returns once `stop` is called (or a write failed).
    pub fn run(&self, every: Duration) {
        let c = &self.ceiling;
        let mut w = c.wait.lock();
        loop {
            if w.stop {
                return;
            }
            let value = c.value.load(Ordering::Acquire);
            if w.wanted + c.step / 2 <= value {
                let idle = c.changed.wait_for(&mut w, every).timed_out();
                if idle && !w.stop {
                    drop(w);
                    self.refresh();
                    w = c.wait.lock();
                }
                continue;
            }
            let to = Revision(value.max(w.wanted) + c.step);
            drop(w);
            let r = self.raise(to);
            w = c.wait.lock();
            match r {
                Ok(()) => {
                    c.value.store(to.0, Ordering::Release);
                    c.asked.store(false, Ordering::Release);
                }
                Err(why) => w.failed = Some(why),
            }
            c.changed.notify_all();
            if w.failed.is_some() {
                return;
            }
        }
    }

    /// Ends `run` and fails writers waiting for a raise (`Error::Closed`).
    pub fn stop(&self) {
        self.ceiling.stop();
    }

    /// A clean close: every flusher has stopped. Syncs the active segments and records their
    /// exact ends, and `last` (the last revision handed out) as the ceiling.
    pub fn close(&self, last: Revision) -> std::io::Result<()> {
        let mut st = self.state.lock();
        if st.failed || self.health.check().is_err() {
            // Fail-stop: what a failed flush left on disk is recovery's to judge.
            return Ok(());
        }
        if st.clean_on_disk {
            return Ok(());
        }
        for seg in st.active.iter().flatten() {
            if seg.durable().end != seg.data_end.load(Ordering::Acquire) {
                seg.seal(self.sync)?;
            }
        }
        assert!(last <= st.m.ceiling, "revision {last} above the ceiling");
        st.m.ceiling = last;
        self.write(&mut st, true)
    }

    /// The manifest as last written (tests and diagnostics).
    pub fn manifest(&self) -> Manifest {
        self.state.lock().m.clone()
    }
}

/// A manifest entry describing `seg` as it is now.
pub fn entry_of(seg: &Segment, flags: u32) -> Entry {
    let d = seg.durable();
    let rewritten = if seg.is_rewritten() {
        crate::manifest::ENTRY_REWRITTEN
    } else {
        0
    };
    Entry {
        flags: flags | rewritten,
        seq: seg.header.seq,
        end: d.end,
        size: seg.capacity(),
        first: d.first,
        last: d.last,
    }
}

fn index_of(entries: &[Entry], seq: u64, shard: usize) -> usize {
    entries
        .iter()
        .position(|e| e.seq == seq && !e.is(ENTRY_PENDING))
        .unwrap_or_else(|| panic!("shard {shard}: segment {seq} is not in the manifest"))
}
