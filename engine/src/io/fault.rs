//! `FaultIo`: an `Io` for tests that fails chosen calls and models power loss.
//!
//! Files are real files under a root directory (so the engine's mappings and reads work as in
//! production); alongside, `FaultIo` keeps a model of what a disk would still hold after a
//! power cut, and every operation updates both under one lock.
//!
//! **Faults.** A `FaultRule` fails the `nth` matching call of one kind (`IoOp`), once or from
//! then on (`sticky`), optionally only on paths containing a string: with an errno (`EIO`,
//! `ENOSPC`, ...) and no effect, or for a write, after storing only a prefix of its bytes
//! (`Fault::Short`).
//!
//! **Power-loss model.**
//! - File data: bytes are durable once a `sync_data`/`sync_all` of the file returns `Ok` after
//!   they were written; so is the file's size (`fdatasync` flushes the size needed to read the
//!   data back).
//! - Names: a creation, rename or removal is durable once its directory's `sync_dir` returns
//!   `Ok`. A file whose name is not durable is gone, whatever was synced into it.
//! - A failed sync leaves the bytes it should have saved in limbo: they may or may not be on
//!   disk, and a later successful sync does not save them (Linux marks the pages clean after
//!   reporting the error). Only rewriting them makes them durable again.
//! - `CutMode::SyncedOnly`: the image holds exactly the durable state.
//!   `CutMode::Torn { seed }`: as a real disk may, it also keeps part of what was not synced:
//!   each unsynced or limbo 512-byte sector independently holds its new or its old content,
//!   an unsynced size change is kept or not, and each directory keeps a random prefix of its
//!   unsynced name changes (journaled file systems apply metadata in order). Sectors are the
//!   unit a disk writes atomically; nothing tears inside one.
//!
//! After a cut every call fails with `EIO` (the machine is off), so the engine cannot
//! acknowledge anything that the image lacks; the mappings it already holds keep working.

use super::{DirLock, FileIo, Io, Mapping, RealIo};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Granularity of the durable-content bookkeeping (a page-cache page).
const PAGE: u64 = 4096;
/// What a disk writes atomically: a torn write keeps or loses whole sectors.
pub const SECTOR_BYTES: u64 = 512;
const _: () = assert!(PAGE.is_multiple_of(SECTOR_BYTES));
/// Name changes a directory may hold unsynced. The engine syncs a directory right after each
/// change it must keep (only the removal of leftover `.tmp` files on open waits for a later
/// sync), so a longer log means it stopped doing so: the model stops the test.
pub const UNSYNCED_NAME_CHANGES_MAX: usize = 64;

/// The kinds of call a `FaultRule` can fail (reads, listings and mappings never fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoOp {
    Write,
    /// `sync_data` or `sync_all` of a file.
    Sync,
    SyncDir,
    /// Creating a file or a directory.
    Create,
    Rename,
    Remove,
    SetLen,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The call fails with this errno and has no effect.
    Errno(i32),
    /// A write stores its first `bytes` bytes, then fails with `errno` (a disk filling up
    /// in the middle of a write). Other calls fail with `errno` and no effect.
    Short { bytes: usize, errno: i32 },
}

impl Fault {
    fn errno(self) -> i32 {
        match self {
            Fault::Errno(e) | Fault::Short { errno: e, .. } => e,
        }
    }
}

/// Fails the `nth` call of kind `op` (counted from 1 when the rule is injected) that matches.
#[derive(Clone, Debug)]
pub struct FaultRule {
    pub op: IoOp,
    pub nth: u64,
    pub fault: Fault,
    /// Fail every matching call from the `nth` on (a dead disk), not just the `nth`.
    pub sticky: bool,
    /// Only calls on paths containing this string match.
    pub path_contains: Option<String>,
}

impl FaultRule {
    pub fn new(op: IoOp, nth: u64, fault: Fault) -> FaultRule {
        assert!(nth >= 1, "calls are counted from 1");
        FaultRule {
            op,
            nth,
            fault,
            sticky: false,
            path_contains: None,
        }
    }

    pub fn sticky(mut self) -> FaultRule {
        self.sticky = true;
        self
    }

    pub fn on_paths_containing(mut self, s: &str) -> FaultRule {
        self.path_contains = Some(s.to_string());
        self
    }
}

/// What a power cut keeps of what was not synced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutMode {
    /// Nothing: only synced bytes and synced names.
    SyncedOnly,
    /// A seeded random part, torn at sector granularity (see the module docs).
    Torn { seed: u64 },
}

/// The directory tree a power cut left: relative paths, file contents as sparse pages.
#[derive(Clone, Debug, Default)]
pub struct Image {
    pub dirs: BTreeSet<PathBuf>,
    files: BTreeMap<PathBuf, FileImage>,
}

#[derive(Clone, Debug, Default)]
struct FileImage {
    len: u64,
    /// Non-zero pages by page number.
    pages: BTreeMap<u64, Box<[u8]>>,
}

impl Image {
    /// The relative paths of the files in the image.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(|p| p.as_path())
    }

    /// A file's content.
    pub fn read(&self, rel: &Path) -> Option<Vec<u8>> {
        let f = self.files.get(rel)?;
        let mut b = vec![0u8; f.len as usize];
        for (&p, page) in &f.pages {
            let at = (p * PAGE) as usize;
            let n = page.len().min(b.len().saturating_sub(at));
            b[at..at + n].copy_from_slice(&page[..n]);
        }
        Some(b)
    }

    /// Materializes the image under `dir` (which must not hold a store already), with the
    /// modes the engine gives its files (the model keeps no modes).
    pub fn write_to(&self, dir: &Path) -> io::Result<()> {
        super::create_private_dir_all(dir)?;
        for d in &self.dirs {
            super::create_private_dir_all(&dir.join(d))?;
        }
        for (rel, f) in &self.files {
            let file = super::create_private_file(&dir.join(rel), false)?;
            file.set_len(f.len)?;
            for (&p, page) in &f.pages {
                let n = (page.len() as u64).min(f.len.saturating_sub(p * PAGE)) as usize;
                file.write_all_at(&page[..n], p * PAGE)?;
            }
        }
        Ok(())
    }
}

type NodeId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    File(NodeId),
    Dir,
}

#[derive(Clone, Debug)]
enum NameOp {
    Link(String, Entry),
    Unlink(String),
    Rename(String, String),
}

#[derive(Default)]
struct DirState {
    durable: BTreeMap<String, Entry>,
    live: BTreeMap<String, Entry>,
    /// Name changes since the last `sync_dir`, oldest first.
    unsynced: Vec<NameOp>,
}

impl DirState {
    fn change(&mut self, op: NameOp) {
        assert!(
            self.unsynced.len() < UNSYNCED_NAME_CHANGES_MAX,
            "FaultIo: {} name changes and no directory sync; the latest: {op:?}",
            self.unsynced.len()
        );
        self.unsynced.push(op);
    }
}

struct Node {
    /// Current path (relative), for rule filters and messages.
    path: PathBuf,
    /// A handle on the live file, for reading what it holds now.
    file: File,
    durable: BTreeMap<u64, Box<[u8]>>,
    durable_len: u64,
    live_len: u64,
    /// Pages written since the last sync.
    dirty: BTreeSet<u64>,
    /// Pages a failed sync should have saved: on disk or not, unknown.
    limbo: BTreeSet<u64>,
}

impl Node {
    fn live_page(&self, p: u64) -> Box<[u8]> {
        let mut b = vec![0u8; PAGE as usize].into_boxed_slice();
        let want = (self.live_len.saturating_sub(p * PAGE)).min(PAGE) as usize;
        let mut got = 0;
        while got < want {
            match self.file.read_at(&mut b[got..want], p * PAGE + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("FaultIo: reading back {}: {e}", self.path.display()),
            }
        }
        b
    }

    fn durable_page(&self, p: u64) -> Box<[u8]> {
        self.durable
            .get(&p)
            .cloned()
            .unwrap_or_else(|| vec![0u8; PAGE as usize].into_boxed_slice())
    }

    fn sync(&mut self) {
        for p in std::mem::take(&mut self.dirty) {
            let page = self.live_page(p);
            store_page(&mut self.durable, p, page);
        }
        self.durable_len = self.live_len;
        let pages = self.durable_len.div_ceil(PAGE);
        self.durable.retain(|&p, _| p < pages);
    }
}

fn store_page(pages: &mut BTreeMap<u64, Box<[u8]>>, p: u64, page: Box<[u8]>) {
    if page.iter().all(|&b| b == 0) {
        pages.remove(&p);
    } else {
        pages.insert(p, page);
    }
}

struct Rule {
    rule: FaultRule,
    seen: u64,
}

struct State {
    root: PathBuf,
    nodes: Vec<Node>,
    /// Directories by relative path ("" is the root).
    dirs: HashMap<PathBuf, DirState>,
    rules: Vec<Rule>,
    /// Calls that can fail (every `IoOp`), for `cut_after`.
    calls: u64,
    cut_at: Option<(u64, CutMode)>,
    /// Set by the cut: from then on everything fails.
    image: Option<Image>,
    counts: HashMap<IoOp, u64>,
}

/// See the module docs. Share it as `Arc<FaultIo>` (`Options::io` takes an `Arc<dyn Io>`).
pub struct FaultIo {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for FaultIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FaultIo({})", self.state.lock().root.display())
    }
}

fn err(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

/// What every call answers once the power is cut (a dead disk).
fn powered_off() -> io::Error {
    err(libc::EIO)
}

/// SplitMix64: the tear decisions of a `CutMode::Torn` cut.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

impl State {
    fn rel(&self, path: &Path) -> io::Result<PathBuf> {
        path.strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "FaultIo: {} is outside {}",
                        path.display(),
                        self.root.display()
                    ),
                )
            })
    }

    /// The parent directory's state and the entry name of `rel`.
    fn parent(&mut self, rel: &Path) -> io::Result<(&mut DirState, String)> {
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "FaultIo: no file name"))?;
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let dir = self
            .dirs
            .get_mut(&parent)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok((dir, name))
    }

    fn live_node(&mut self, rel: &Path) -> io::Result<NodeId> {
        let (dir, name) = self.parent(rel)?;
        match dir.live.get(&name) {
            Some(Entry::File(id)) => Ok(*id),
            _ => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    /// Counts a call that can fail, cuts the power if a cut is due, and returns the fault a
    /// rule injects into it, if any.
    fn call(&mut self, op: IoOp, rel: &Path) -> io::Result<Option<Fault>> {
        if self.image.is_some() {
            return Err(powered_off());
        }
        self.calls += 1;
        *self.counts.entry(op).or_default() += 1;
        if let Some((at, mode)) = self.cut_at {
            if self.calls >= at {
                self.cut(mode);
                return Err(powered_off());
            }
        }
        let path = rel.to_string_lossy();
        for r in &mut self.rules {
            if r.rule.op != op
                || r.rule
                    .path_contains
                    .as_ref()
                    .is_some_and(|s| !path.contains(s.as_str()))
            {
                continue;
            }
            r.seen += 1;
            if r.seen == r.rule.nth || (r.rule.sticky && r.seen > r.rule.nth) {
                return Ok(Some(r.rule.fault));
            }
        }
        Ok(None)
    }

    fn cut(&mut self, mode: CutMode) {
        if self.image.is_some() {
            return;
        }
        let mut rng = match mode {
            CutMode::SyncedOnly => None,
            CutMode::Torn { seed } => Some(Rng(seed)),
        };
        let mut image = Image::default();
        self.image_dir(Path::new(""), &mut rng, &mut image);
        self.cut_at = None;
        self.image = Some(image);
    }

    fn image_dir(&self, rel: &Path, rng: &mut Option<Rng>, image: &mut Image) {
        let Some(d) = self.dirs.get(rel) else {
            return;
        };
        let mut entries = d.durable.clone();
        if let Some(rng) = rng {
            let keep = rng.below(d.unsynced.len() as u64 + 1) as usize;
            for op in &d.unsynced[..keep] {
                match op {
                    NameOp::Link(n, e) => {
                        entries.insert(n.clone(), *e);
                    }
                    NameOp::Unlink(n) => {
                        entries.remove(n);
                    }
                    NameOp::Rename(from, to) => {
                        if let Some(e) = entries.remove(from) {
                            entries.insert(to.clone(), e);
                        }
                    }
                }
            }
        }
        for (name, e) in entries {
            let path = rel.join(&name);
            match e {
                Entry::Dir => {
                    image.dirs.insert(path.clone());
                    self.image_dir(&path, rng, image);
                }
                Entry::File(id) => {
                    let f = self.image_file(&self.nodes[id], rng);
                    image.files.insert(path, f);
                }
            }
        }
    }

    fn image_file(&self, n: &Node, rng: &mut Option<Rng>) -> FileImage {
        let mut f = FileImage {
            len: n.durable_len,
            pages: n.durable.clone(),
        };
        if let Some(rng) = rng {
            if n.live_len != n.durable_len && rng.coin() {
                f.len = n.live_len;
            }
            for &p in n.dirty.union(&n.limbo) {
                let new = n.live_page(p);
                let mut page = n.durable_page(p);
                for s in 0..(PAGE / SECTOR_BYTES) as usize {
                    if rng.coin() {
                        let r = s * SECTOR_BYTES as usize..(s + 1) * SECTOR_BYTES as usize;
                        page[r.clone()].copy_from_slice(&new[r]);
                    }
                }
                store_page(&mut f.pages, p, page);
            }
        }
        // Bytes past the size read back as zeros.
        let pages = f.len.div_ceil(PAGE);
        f.pages.retain(|&p, _| p < pages);
        if let Some(last) = f.pages.get_mut(&(f.len / PAGE)) {
            last[(f.len % PAGE) as usize..].fill(0);
        }
        f
    }

    fn new_node(&mut self, rel: &Path, file: File, len: u64) -> NodeId {
        self.nodes.push(Node {
            path: rel.to_path_buf(),
            file,
            durable: BTreeMap::new(),
            durable_len: 0,
            live_len: len,
            dirty: BTreeSet::new(),
            limbo: BTreeSet::new(),
        });
        self.nodes.len() - 1
    }

    /// Takes over what is under `rel` on the real disk as durable.
    fn adopt(&mut self, rel: &Path) -> io::Result<()> {
        let mut dir = DirState::default();
        for e in std::fs::read_dir(self.root.join(rel))? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let path = rel.join(&name);
            let entry = if e.file_type()?.is_dir() {
                self.adopt(&path)?;
                Entry::Dir
            } else {
                let file = File::open(self.root.join(&path))?;
                let len = file.metadata()?.len();
                let id = self.new_node(&path, file, len);
                let n = &mut self.nodes[id];
                for p in 0..len.div_ceil(PAGE) {
                    let page = n.live_page(p);
                    store_page(&mut n.durable, p, page);
                }
                n.durable_len = len;
                Entry::File(id)
            };
            dir.live.insert(name, entry);
        }
        dir.durable = dir.live.clone();
        self.dirs.insert(rel.to_path_buf(), dir);
        Ok(())
    }
}

impl FaultIo {
    /// A `FaultIo` over `root` (created if missing): whatever is there already is durable.
    /// Every path the engine uses must lie under `root`.
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Arc<FaultIo>> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        let mut st = State {
            root,
            nodes: Vec::new(),
            dirs: HashMap::new(),
            rules: Vec::new(),
            calls: 0,
            cut_at: None,
            image: None,
            counts: HashMap::new(),
        };
        st.adopt(Path::new(""))?;
        Ok(Arc::new(FaultIo {
            state: Arc::new(Mutex::new(st)),
        }))
    }

    pub fn inject(&self, rule: FaultRule) {
        self.state.lock().rules.push(Rule { rule, seen: 0 });
    }

    /// Removes every injected rule (a cut stays cut).
    pub fn clear_faults(&self) {
        self.state.lock().rules.clear();
    }

    /// Cuts the power when the `calls`-th call that can fail (any `IoOp`, counted from now) is
    /// made, before it takes effect. `calls` = 1: at the next one.
    pub fn cut_after(&self, calls: u64, mode: CutMode) {
        let mut st = self.state.lock();
        let at = st.calls + calls.max(1);
        st.cut_at = Some((at, mode));
    }

    /// Cuts the power now unless it is already cut, and returns what the disk holds.
    pub fn cut(&self, mode: CutMode) -> Image {
        let mut st = self.state.lock();
        st.cut(mode);
        st.image.clone().expect("cut")
    }

    pub fn is_cut(&self) -> bool {
        self.state.lock().image.is_some()
    }

    /// Calls of kind `op` so far (failed ones included).
    pub fn count(&self, op: IoOp) -> u64 {
        self.state.lock().counts.get(&op).copied().unwrap_or(0)
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> io::Result<T>) -> io::Result<T> {
        f(&mut self.state.lock())
    }
}

struct FaultFile {
    state: Arc<Mutex<State>>,
    node: NodeId,
    file: File,
}

impl FaultFile {
    fn call(&self, st: &mut State, op: IoOp) -> io::Result<Option<Fault>> {
        let path = st.nodes[self.node].path.clone();
        st.call(op, &path)
    }

    fn sync(&self) -> io::Result<()> {
        let mut st = self.state.lock();
        let fault = self.call(&mut st, IoOp::Sync)?;
        let n = &mut st.nodes[self.node];
        if let Some(f) = fault {
            let dirty = std::mem::take(&mut n.dirty);
            n.limbo.extend(dirty);
            return Err(err(f.errno()));
        }
        n.sync();
        Ok(())
    }
}

impl FileIo for FaultFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        let fault = self.call(&mut st, IoOp::Write)?;
        let len = match fault {
            None => buf.len(),
            Some(Fault::Short { bytes, .. }) => bytes.min(buf.len()),
            Some(Fault::Errno(e)) => return Err(err(e)),
        };
        if len > 0 {
            self.file.write_all_at(&buf[..len], offset)?;
            let n = &mut st.nodes[self.node];
            let end = offset + len as u64;
            for p in offset / PAGE..end.div_ceil(PAGE) {
                n.dirty.insert(p);
                n.limbo.remove(&p);
            }
            n.live_len = n.live_len.max(end);
        }
        match fault {
            Some(f) => Err(err(f.errno())),
            None => Ok(()),
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        self.sync()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        if let Some(f) = self.call(&mut st, IoOp::SetLen)? {
            return Err(err(f.errno()));
        }
        self.file.set_len(len)?;
        let n = &mut st.nodes[self.node];
        // Shrinking changes the pages it cuts into; growing adds zeros, which is what a
        // missing durable page holds already.
        for p in len / PAGE..n.live_len.div_ceil(PAGE) {
            n.dirty.insert(p);
        }
        n.live_len = len;
        Ok(())
    }

    fn map(&self) -> io::Result<Mapping> {
        if self.state.lock().image.is_some() {
            return Err(powered_off());
        }
        Mapping::of_file(&self.file)
    }
}

impl Io for FaultIo {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.with(|st| {
            let rel = st.rel(dir)?;
            let mut at = PathBuf::new();
            for c in rel.components() {
                let parent = at.clone();
                at.push(c);
                if st.dirs.contains_key(&at) {
                    continue;
                }
                if let Some(f) = st.call(IoOp::Create, &at)? {
                    return Err(err(f.errno()));
                }
                super::create_private_dir(&st.root.join(&at))?;
                let name = c.as_os_str().to_string_lossy().into_owned();
                let p = st.dirs.get_mut(&parent).expect("parents come first");
                p.live.insert(name.clone(), Entry::Dir);
                p.change(NameOp::Link(name, Entry::Dir));
                st.dirs.insert(at.clone(), DirState::default());
            }
            Ok(())
        })
    }

    fn restrict_mode(&self, path: &Path, max: u32) -> io::Result<Option<u32>> {
        // Permissions are not part of the power-loss model: the real file's.
        if self.state.lock().image.is_some() {
            return Err(powered_off());
        }
        super::restrict_mode(path, max)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.with(|st| {
            if st.image.is_some() {
                return Err(powered_off());
            }
            let rel = st.rel(dir)?;
            let d = st.dirs.get(&rel).ok_or(io::ErrorKind::NotFound)?;
            Ok(d.live.keys().cloned().collect())
        })
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if self.state.lock().image.is_some() {
            return Err(powered_off());
        }
        std::fs::read(path)
    }

    fn create(&self, path: &Path, exclusive: bool) -> io::Result<Box<dyn FileIo>> {
        self.with(|st| {
            let rel = st.rel(path)?;
            if let Some(f) = st.call(IoOp::Create, &rel)? {
                return Err(err(f.errno()));
            }
            let file = super::create_private_file(path, exclusive)?;
            // Truncating an existing file is modelled as replacing it with a new one.
            let id = st.new_node(&rel, file.try_clone()?, 0);
            let (dir, name) = st.parent(&rel)?;
            dir.live.insert(name.clone(), Entry::File(id));
            dir.change(NameOp::Link(name, Entry::File(id)));
            Ok(Box::new(FaultFile {
                state: self.state.clone(),
                node: id,
                file,
            }) as Box<dyn FileIo>)
        })
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FileIo>> {
        self.with(|st| {
            if st.image.is_some() {
                return Err(powered_off());
            }
            let rel = st.rel(path)?;
            let id = st.live_node(&rel)?;
            let file = OpenOptions::new().read(true).write(true).open(path)?;
            Ok(Box::new(FaultFile {
                state: self.state.clone(),
                node: id,
                file,
            }) as Box<dyn FileIo>)
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.with(|st| {
            let (rf, rt) = (st.rel(from)?, st.rel(to)?);
            if rf.parent() != rt.parent() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "FaultIo: renames across directories are not modelled",
                ));
            }
            if let Some(f) = st.call(IoOp::Rename, &rf)? {
                return Err(err(f.errno()));
            }
            let id = st.live_node(&rf)?;
            std::fs::rename(from, to)?;
            st.nodes[id].path = rt.clone();
            let (dir, from_name) = st.parent(&rf)?;
            let to_name = rt
                .file_name()
                .expect("named")
                .to_string_lossy()
                .into_owned();
            let e = dir.live.remove(&from_name).expect("looked up above");
            dir.live.insert(to_name.clone(), e);
            dir.change(NameOp::Rename(from_name, to_name));
            Ok(())
        })
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.with(|st| {
            let rel = st.rel(path)?;
            if let Some(f) = st.call(IoOp::Remove, &rel)? {
                return Err(err(f.errno()));
            }
            st.live_node(&rel)?;
            std::fs::remove_file(path)?;
            let (dir, name) = st.parent(&rel)?;
            dir.live.remove(&name);
            dir.change(NameOp::Unlink(name));
            Ok(())
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.with(|st| {
            let rel = st.rel(dir)?;
            if let Some(f) = st.call(IoOp::SyncDir, &rel)? {
                return Err(err(f.errno()));
            }
            let d = st.dirs.get_mut(&rel).ok_or(io::ErrorKind::NotFound)?;
            d.durable = d.live.clone();
            d.unsynced.clear();
            Ok(())
        })
    }

    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn DirLock>> {
        // The lock is process coordination, not data: the real one, outside the model.
        RealIo.lock_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Arc<FaultIo>) {
        let dir = tempfile::tempdir().unwrap();
        let io = FaultIo::new(dir.path()).unwrap();
        (dir, io)
    }

    #[test]
    fn only_synced_bytes_and_synced_names_survive_a_cut() {
        let (dir, io) = setup();
        let root = dir.path();
        let a = io.create(&root.join("a"), true).unwrap();
        a.write_all_at(b"synced", 0).unwrap();
        a.sync_data().unwrap();
        io.sync_dir(root).unwrap();
        a.write_all_at(b"lost", 8192).unwrap();
        let b = io.create(&root.join("b"), true).unwrap();
        b.write_all_at(b"synced data, unsynced name", 0).unwrap();
        b.sync_all().unwrap();
        let img = io.cut(CutMode::SyncedOnly);
        assert_eq!(img.read(Path::new("a")).unwrap(), b"synced");
        assert!(img.read(Path::new("b")).is_none());
        // The machine is off.
        assert!(a.write_all_at(b"x", 0).is_err());
        assert!(a.sync_data().is_err());
        assert!(io.create(&root.join("c"), true).is_err());
        let out = tempfile::tempdir().unwrap();
        img.write_to(out.path()).unwrap();
        assert_eq!(std::fs::read(out.path().join("a")).unwrap(), b"synced");
    }

    #[test]
    fn a_failed_sync_loses_its_pages_even_after_a_later_sync() {
        let (dir, io) = setup();
        let f = io.create(&dir.path().join("f"), true).unwrap();
        io.sync_dir(dir.path()).unwrap();
        f.set_len(PAGE * 2).unwrap();
        f.sync_data().unwrap();
        io.inject(FaultRule::new(IoOp::Sync, 1, Fault::Errno(libc::EIO)));
        f.write_all_at(&[7u8; 100], 0).unwrap();
        let e = f.sync_data().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        f.sync_data().unwrap();
        f.write_all_at(&[9u8; 100], PAGE).unwrap();
        f.sync_data().unwrap();
        let img = io.cut(CutMode::SyncedOnly).read(Path::new("f")).unwrap();
        assert_eq!(img.len() as u64, PAGE * 2);
        assert!(img[..100].iter().all(|&b| b == 0), "limbo page was saved");
        assert!(img[PAGE as usize..PAGE as usize + 100]
            .iter()
            .all(|&b| b == 9));
    }

    #[test]
    fn torn_cuts_keep_whole_sectors_of_old_or_new_content() {
        let mut kept_some = false;
        let mut lost_some = false;
        for seed in 0..16 {
            let (dir, io) = setup();
            let f = io.create(&dir.path().join("f"), true).unwrap();
            f.write_all_at(&[1u8; PAGE as usize], 0).unwrap();
            f.sync_data().unwrap();
            io.sync_dir(dir.path()).unwrap();
            f.write_all_at(&[2u8; PAGE as usize], 0).unwrap();
            let img = io.cut(CutMode::Torn { seed }).read(Path::new("f")).unwrap();
            for s in img.chunks(SECTOR_BYTES as usize) {
                assert!(
                    s.iter().all(|&b| b == 1) || s.iter().all(|&b| b == 2),
                    "a sector tore inside"
                );
                kept_some |= s[0] == 2;
                lost_some |= s[0] == 1;
            }
        }
        assert!(kept_some && lost_some);
    }

    #[test]
    fn rules_fail_the_nth_matching_call_once_or_from_then_on() {
        let (dir, io) = setup();
        let f = io.create(&dir.path().join("x.seg"), true).unwrap();
        let g = io.create(&dir.path().join("y.tmp"), true).unwrap();
        io.inject(
            FaultRule::new(
                IoOp::Write,
                2,
                Fault::Short {
                    bytes: 3,
                    errno: libc::ENOSPC,
                },
            )
            .on_paths_containing(".seg"),
        );
        io.inject(FaultRule::new(IoOp::Sync, 1, Fault::Errno(libc::EIO)).sticky());
        f.write_all_at(b"first", 0).unwrap();
        g.write_all_at(b"other file", 0).unwrap();
        let e = f.write_all_at(b"second", 8).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        f.write_all_at(b"third", 16).unwrap();
        let live = std::fs::read(dir.path().join("x.seg")).unwrap();
        assert_eq!(&live[..11], b"first\0\0\0sec");
        assert_eq!(&live[16..], b"third");
        assert!(f.sync_data().is_err() && g.sync_all().is_err());
        assert_eq!(io.count(IoOp::Sync), 2);
    }

    #[test]
    fn torn_cuts_keep_a_prefix_of_unsynced_name_changes() {
        let mut seen = BTreeSet::new();
        for seed in 0..32 {
            let (dir, io) = setup();
            let root = dir.path();
            io.create(&root.join("tmp"), true)
                .unwrap()
                .sync_all()
                .unwrap();
            io.rename(&root.join("tmp"), &root.join("final")).unwrap();
            let img = io.cut(CutMode::Torn { seed });
            let names: Vec<_> = img.files().map(|p| p.display().to_string()).collect();
            // Never both names, never "final" without "tmp" having been created first.
            assert!(names.is_empty() || names == ["tmp"] || names == ["final"]);
            seen.insert(names);
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
    }

    #[test]
    fn cut_after_counts_calls_and_cuts_before_the_due_one() {
        let (dir, io) = setup();
        let f = io.create(&dir.path().join("f"), true).unwrap();
        io.sync_dir(dir.path()).unwrap();
        io.cut_after(2, CutMode::SyncedOnly);
        f.write_all_at(b"one", 0).unwrap();
        assert!(f.sync_data().is_err());
        assert!(io.is_cut());
        assert_eq!(
            io.cut(CutMode::SyncedOnly).read(Path::new("f")).unwrap(),
            b""
        );
    }

    #[test]
    fn existing_files_are_adopted_as_durable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/f"), b"before").unwrap();
        let io = FaultIo::new(dir.path()).unwrap();
        let img = io.cut(CutMode::SyncedOnly);
        assert_eq!(img.read(Path::new("d/f")).unwrap(), b"before");
    }
}
