//! The engine's I/O seam: every operation the engine performs on its directory and segment
//! files goes through `Io` and `FileIo`, so tests can fail chosen calls and cut the power
//! (`fault::FaultIo`). `RealIo`, the default, is a thin pass-through to the system calls the
//! engine always made: one `pwrite` per batch, `fdatasync`, `mmap`, `rename`, directory
//! `fsync`. It adds no copy and no system call; the only cost is one indirect call per batch
//! written and per sync.
//!
//! Reads stay zero-copy: values are served straight out of a read-only `MAP_SHARED` mapping of
//! each segment (`Mapping`). The mapping is a concrete type, not a trait object, so a read costs
//! no dynamic call; every implementation therefore backs files with real files (the fault
//! injector intercepts writes, syncs and the namespace, never the bytes readers see).
//!
//! Everything the engine creates is private: files mode `FILE_MODE` (0600), directories
//! `DIR_MODE` (0700), set explicitly after creation so the process's umask cannot widen (or
//! narrow) them; `restrict_mode` tightens what an older version or an operator left looser.
//!
//! This module holds the engine's one `unsafe` mapping call.

pub mod fault;

use memmap2::Mmap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of every file the engine creates: the store holds Secrets.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every directory the engine creates.
pub const DIR_MODE: u32 = 0o700;

/// A read-only, shared mapping of a whole file, as long as the file was when mapped.
///
/// Writes made through the file's `FileIo::write_all_at` are visible in the mapping at once
/// (Linux page-cache coherence, see `FORMAT.md`). Its bytes keep their address and length for
/// as long as it lives, which `Value` relies on.
pub struct Mapping(Mmap);

impl Mapping {
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Maps `file`, which must have been opened for reading.
    pub fn of_file(file: &File) -> io::Result<Mapping> {
        // SAFETY: the file is owned by this engine (the store directory is locked with flock)
        // and only ever grows by pwrite into ranges no reader has been pointed at yet; it is
        // never truncated while mapped (torn tails are zeroed, not truncated). Readers
        // therefore never observe a byte change under them or a mapping shorter than the file.
        unsafe { Mmap::map(file) }.map(Mapping)
    }
}

/// An open segment or metadata file.
pub trait FileIo: Send + Sync {
    /// Writes all of `buf` at `offset` (`pwrite`, continued after short writes).
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// `fdatasync`: the data written so far, and the size needed to read it back, survive a
    /// power loss once this returns `Ok`.
    fn sync_data(&self) -> io::Result<()>;
    /// `fsync`.
    fn sync_all(&self) -> io::Result<()>;
    /// `ftruncate`: pre-sizes a new segment.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Maps the whole file read-only and shared.
    fn map(&self) -> io::Result<Mapping>;
}

/// Holds a store directory's lock until dropped.
pub trait DirLock: Send + Sync {}

impl DirLock for File {}

/// The directory operations the engine performs. Paths are absolute or relative to the
/// process's working directory, as the engine's `Options::dir` gives them. Files are created
/// with mode `FILE_MODE` and directories with `DIR_MODE`, whatever the umask.
pub trait Io: Send + Sync + fmt::Debug {
    /// Creates `dir` and its missing parents, each `DIR_MODE`.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Clears the permission bits of `path` outside `max` (`chmod`); returns the mode it had
    /// when it changed it. A symbolic link is followed.
    fn restrict_mode(&self, path: &Path, max: u32) -> io::Result<Option<u32>>;
    /// The names of the entries of `dir` (files and directories).
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// The whole content of a (small) file: `SHARDS`, `COMPACTED`, a segment being checked.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates a file opened for reading and writing: fails if it exists when `exclusive`,
    /// else truncates an existing one. Its name is durable once its directory is synced.
    fn create(&self, path: &Path, exclusive: bool) -> io::Result<Box<dyn FileIo>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn FileIo>>;
    /// Renames within one directory, atomically replacing `to`; durable once the directory
    /// is synced.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// `fsync` of a directory: makes its entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes `<dir>/LOCK` exclusively (`flock`), failing at once if another engine holds it.
    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn DirLock>>;
}

/// The operating system, as the engine has always used it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealIo;

struct RealFile(File);

impl FileIo for RealFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn map(&self) -> io::Result<Mapping> {
        Mapping::of_file(&self.0)
    }
}

/// `create_dir_all` with `DIR_MODE` for every directory it creates, set explicitly.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir_all(parent)?;
    }
    match create_private_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        r => r,
    }
}

/// Creates the directory `dir` (its parent must exist), mode exactly `DIR_MODE`.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(DIR_MODE).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
}

/// `Io::restrict_mode` on the real file system.
pub fn restrict_mode(path: &Path, max: u32) -> io::Result<Option<u32>> {
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    if mode & !max == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & max))?;
    Ok(Some(mode))
}

/// Opens `path` for reading and writing as `Io::create` does, mode `FILE_MODE`.
pub fn create_private_file(path: &Path, exclusive: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).mode(FILE_MODE);
    if exclusive {
        o.create_new(true);
    } else {
        o.create(true).truncate(true);
    }
    let f = o.open(path)?;
    // The umask may have cleared bits of FILE_MODE; an existing file keeps its old mode.
    f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    Ok(f)
}

impl Io for RealIo {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        create_private_dir_all(dir)
    }

    fn restrict_mode(&self, path: &Path, max: u32) -> io::Result<Option<u32>> {
        restrict_mode(path, max)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn create(&self, path: &Path, exclusive: bool) -> io::Result<Box<dyn FileIo>> {
        Ok(Box::new(RealFile(create_private_file(path, exclusive)?)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FileIo>> {
        let f = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(RealFile(f)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn DirLock>> {
        let path = dir.join("LOCK");
        let f = match create_private_file(&path, true) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                OpenOptions::new().write(true).open(&path)?
            }
            r => r?,
        };
        // SAFETY: flock on a file descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is in use by another engine", dir.display()),
            ));
        }
        Ok(Box::new(f))
    }
}
