//! The store directory's own files (`SHARDS`, `COMPACTED`, `MANIFEST`) and what `Engine::open`
//! concludes from them, read only: a fresh store, a version-1 store to upgrade, a store the
//! manifest describes, or damage (`Error::Corrupt`, or with `repair` what to rebuild).

use crate::io::Io;
use crate::keeper::{write_atomically, MANIFEST_FILE};
use crate::manifest::Manifest;
use crate::report::RecoveryNote;
use crate::{segment, shard, Error, Revision};
use std::path::{Path, PathBuf};

pub const COMPACTED_FILE: &str = "COMPACTED";
pub const SHARDS_FILE: &str = "SHARDS";

/// `SHARDS` in format version 2: the count, then the CRC-32 of the first line (its newline
/// included) as 8 hex digits. Version 1 had the first line only.
pub fn shards_bytes(n: usize) -> Vec<u8> {
    let line = format!("{n}\n");
    format!("{line}crc32 {:08x}\n", crc32fast::hash(line.as_bytes())).into_bytes()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shards {
    Missing,
    V1(usize),
    V2(usize),
}

pub(crate) fn read_shards(io: &dyn Io, dir: &Path) -> Result<Shards, Error> {
    let path = dir.join(SHARDS_FILE);
    let b = match io.read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Shards::Missing),
        Err(e) => return Err(e.into()),
    };
    let bad = || {
        corrupt(
            &path,
            format!("bad SHARDS file {:?}", String::from_utf8_lossy(&b)),
        )
    };
    let text = std::str::from_utf8(&b).map_err(|_| bad())?;
    let count = |s: &str| {
        s.parse::<usize>()
            .ok()
            .filter(|n| (1..=crate::limits::SHARDS_MAX).contains(n))
    };
    match text.split_once('\n') {
        Some((n, "")) => count(n.trim()).map(Shards::V1).ok_or_else(bad),
        Some((n, _)) => match count(n) {
            Some(n) if b == shards_bytes(n) => Ok(Shards::V2(n)),
            _ => Err(bad()),
        },
        // Version 1 accepted any surrounding white space.
        None => count(text.trim()).map(Shards::V1).ok_or_else(bad),
    }
}

pub fn compacted_bytes(rev: Revision) -> Vec<u8> {
    let mut b = rev.0.to_le_bytes().to_vec();
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

pub(crate) fn read_compacted(io: &dyn Io, dir: &Path) -> Result<Option<Revision>, Error> {
    let path = dir.join(COMPACTED_FILE);
    match io.read(&path) {
        Ok(b) if b.len() == 12 && crc32fast::hash(&b[..8]) == crate::format::get_u32(&b, 8) => {
            Ok(Some(Revision(crate::format::get_u64(&b, 0))))
        }
        Ok(_) => Err(corrupt(&path, "bad COMPACTED file (length or checksum)")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub fn write_compacted(io: &dyn Io, dir: &Path, rev: Revision) -> std::io::Result<()> {
    write_atomically(io, dir, COMPACTED_FILE, &compacted_bytes(rev))
}

pub(crate) fn read_manifest(io: &dyn Io, dir: &Path) -> Result<Option<Manifest>, Error> {
    let path = dir.join(MANIFEST_FILE);
    match io.read(&path) {
        Ok(b) => Manifest::decode(&b)
            .map(Some)
            .map_err(|(offset, why)| Error::Corrupt {
                file: path,
                offset,
                revisions: None,
                reason: format!("bad MANIFEST: {why}"),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What is wrong, without the error's advice (for a note that says what was done about it).
fn reason_of(e: &Error) -> String {
    match e {
        Error::Corrupt { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> Error {
    Error::Corrupt {
        file: path.to_path_buf(),
        offset: 0,
        revisions: None,
        reason: reason.into(),
    }
}

/// How the shards' segment lists are known.
#[derive(Clone, Debug)]
pub enum Layout {
    /// A new store (or one whose creation a crash interrupted before any data).
    Fresh,
    /// The manifest lists every shard's segments.
    Listed(Manifest),
    /// A version-1 store: no manifest yet.
    Upgrade,
    /// A repair whose manifest is lost: the segment files are taken as they are.
    Rebuild,
}

/// What the store directory's files say, before anything is changed.
#[derive(Debug)]
pub struct Loaded {
    pub shards: usize,
    pub layout: Layout,
    pub compacted: Revision,
    /// Files to (re)write once the open succeeds: (name, bytes, note). `SHARDS` of a new or
    /// version-1 store, metadata a repair rebuilds.
    pub rewrite: Rewrites,
}

type Rewrites = Vec<(&'static str, Vec<u8>, Option<RecoveryNote>)>;

/// With `repair`, plans to replace a damaged file by `bytes` (what the other files say) and
/// notes it; without, `e` is the error.
fn replace(
    rewrite: &mut Rewrites,
    dir: &Path,
    repair: bool,
    file: &'static str,
    bytes: Vec<u8>,
    e: Error,
) -> Result<(), Error> {
    if !repair {
        return Err(e);
    }
    let why = reason_of(&e);
    let note = RecoveryNote::Rebuilt {
        file: dir.join(file),
        reason: format!("it was damaged ({why}); rewritten from what the store's other files say"),
    };
    rewrite.push((file, bytes, Some(note)));
    Ok(())
}

/// Reads `SHARDS`, `COMPACTED` and `MANIFEST` and checks them against each other.
/// `wanted`: the shard count for a new store. In `rewrite`, an empty `MANIFEST` entry only
/// carries its note: the keeper writes the manifest on every open.
pub fn load(io: &dyn Io, dir: &Path, wanted: usize, repair: bool) -> Result<Loaded, Error> {
    let shards = read_shards(io, dir);
    let compacted = read_compacted(io, dir);
    let mut rewrite = Rewrites::new();
    let m = match read_manifest(io, dir) {
        Ok(Some(m)) => m,
        Ok(None) => return without_manifest(io, dir, wanted, repair, shards, compacted, rewrite),
        Err(e) => {
            replace(&mut rewrite, dir, repair, MANIFEST_FILE, Vec::new(), e)?;
            return rebuild(io, dir, shards.ok(), compacted, rewrite);
        }
    };
    let n = m.shards.len();
    let shards_file = dir.join(SHARDS_FILE);
    match shards {
        Ok(Shards::V2(s)) if s == n => {}
        Ok(Shards::V1(s)) if s == n => rewrite.push((SHARDS_FILE, shards_bytes(n), None)),
        Ok(Shards::Missing) => {
            let e = corrupt(&shards_file, "missing, but MANIFEST exists");
            replace(&mut rewrite, dir, repair, SHARDS_FILE, shards_bytes(n), e)?
        }
        Ok(Shards::V1(s) | Shards::V2(s)) => {
            let e = corrupt(&shards_file, format!("says {s} shards, MANIFEST says {n}"));
            replace(&mut rewrite, dir, repair, SHARDS_FILE, shards_bytes(n), e)?
        }
        Err(e) => replace(&mut rewrite, dir, repair, SHARDS_FILE, shards_bytes(n), e)?,
    }
    let compacted = match compacted {
        Ok(Some(c)) if c >= m.compacted => c,
        Ok(None) if m.compacted == Revision::ZERO => Revision::ZERO,
        other => {
            let e = other.err().unwrap_or_else(|| {
                corrupt(
                    &dir.join(COMPACTED_FILE),
                    format!(
                        "missing or behind the compacted revision {} in MANIFEST",
                        m.compacted
                    ),
                )
            });
            let bytes = compacted_bytes(m.compacted);
            replace(&mut rewrite, dir, repair, COMPACTED_FILE, bytes, e)?;
            m.compacted
        }
    };
    Ok(Loaded {
        shards: n,
        layout: Layout::Listed(m),
        compacted,
        rewrite,
    })
}

fn without_manifest(
    io: &dyn Io,
    dir: &Path,
    wanted: usize,
    repair: bool,
    shards: Result<Shards, Error>,
    compacted: Result<Option<Revision>, Error>,
    mut rewrite: Rewrites,
) -> Result<Loaded, Error> {
    let with_data = segment_with_data(io, dir)?;
    let compacted_or = |c: Result<Option<Revision>, Error>, rewrite: &mut Rewrites| match c {
        Ok(c) => Ok(c.unwrap_or_default()),
        Err(e) if repair => {
            rewrite.push((
                COMPACTED_FILE,
                compacted_bytes(Revision::ZERO),
                Some(RecoveryNote::Rebuilt {
                    file: dir.join(COMPACTED_FILE),
                    reason: format!(
                        "it was damaged ({}); history is kept from revision 0",
                        reason_of(&e)
                    ),
                }),
            ));
            Ok(Revision::ZERO)
        }
        Err(e) => Err(e),
    };
    match (shards, with_data) {
        (Ok(Shards::V1(n)), _) => {
            rewrite.push((SHARDS_FILE, shards_bytes(n), None));
            let compacted = compacted_or(compacted, &mut rewrite)?;
            Ok(Loaded {
                shards: n,
                layout: Layout::Upgrade,
                compacted,
                rewrite,
            })
        }
        (Ok(Shards::Missing), None) => {
            rewrite.push((SHARDS_FILE, shards_bytes(wanted), None));
            Ok(Loaded {
                shards: wanted,
                layout: Layout::Fresh,
                compacted: compacted_or(compacted, &mut rewrite)?,
                rewrite,
            })
        }
        (Ok(Shards::V2(n)), None) => Ok(Loaded {
            shards: n,
            layout: Layout::Fresh,
            compacted: compacted_or(compacted, &mut rewrite)?,
            rewrite,
        }),
        (shards, Some(seg)) if repair => {
            rewrite.push((
                MANIFEST_FILE,
                Vec::new(),
                Some(RecoveryNote::Rebuilt {
                    file: dir.join(MANIFEST_FILE),
                    reason: format!("it was missing while {} holds data", seg.display()),
                }),
            ));
            rebuild(io, dir, shards.ok(), compacted, rewrite)
        }
        (Ok(Shards::V2(_)), Some(seg)) => Err(corrupt(
            &dir.join(MANIFEST_FILE),
            format!("missing, but {} holds data", seg.display()),
        )),
        (Ok(Shards::Missing), Some(seg)) => Err(corrupt(
            &dir.join(SHARDS_FILE),
            format!("missing, but {} holds data", seg.display()),
        )),
        (Err(e), Some(_)) => Err(e),
        (Err(e), None) if !repair => Err(e),
        (Err(_), None) => {
            rewrite.push((
                SHARDS_FILE,
                shards_bytes(wanted),
                Some(RecoveryNote::Rebuilt {
                    file: dir.join(SHARDS_FILE),
                    reason: "it was damaged, and the store holds no data".into(),
                }),
            ));
            Ok(Loaded {
                shards: wanted,
                layout: Layout::Fresh,
                compacted: compacted_or(compacted, &mut rewrite)?,
                rewrite,
            })
        }
    }
}

/// A repair without a usable manifest: the shard count from `SHARDS` or the shard
/// directories, the segment files as they are.
fn rebuild(
    io: &dyn Io,
    dir: &Path,
    shards: Option<Shards>,
    compacted: Result<Option<Revision>, Error>,
    mut rewrite: Rewrites,
) -> Result<Loaded, Error> {
    let n = match shards {
        Some(Shards::V1(n) | Shards::V2(n)) => n,
        _ => {
            let n = shard_dirs(io, dir)?.len().max(1);
            rewrite.push((
                SHARDS_FILE,
                shards_bytes(n),
                Some(RecoveryNote::Rebuilt {
                    file: dir.join(SHARDS_FILE),
                    reason: format!("it was damaged or missing; {n} shard directories found"),
                }),
            ));
            n
        }
    };
    if !matches!(shards, Some(Shards::V2(_))) && !rewrite.iter().any(|r| r.0 == SHARDS_FILE) {
        rewrite.push((SHARDS_FILE, shards_bytes(n), None));
    }
    let compacted = match compacted {
        Ok(c) => c.unwrap_or_default(),
        Err(e) => {
            let why = reason_of(&e);
            rewrite.push((
                COMPACTED_FILE,
                compacted_bytes(Revision::ZERO),
                Some(RecoveryNote::Rebuilt {
                    file: dir.join(COMPACTED_FILE),
                    reason: format!("it was damaged too ({why}): history is kept from revision 0"),
                }),
            ));
            Revision::ZERO
        }
    };
    Ok(Loaded {
        shards: n,
        layout: Layout::Rebuild,
        compacted,
        rewrite,
    })
}

/// The `shard-NNN` directories under `dir`, by number.
fn shard_dirs(io: &dyn Io, dir: &Path) -> Result<Vec<(usize, PathBuf)>, Error> {
    let mut v: Vec<(usize, PathBuf)> = io
        .list_dir(dir)?
        .into_iter()
        .filter_map(|name| {
            let n = name.strip_prefix("shard-")?.parse::<usize>().ok()?;
            (shard::shard_dir_name(n) == name).then(|| (n, dir.join(name)))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// A segment file that holds data (anything but zeros after a header), if there is one.
fn segment_with_data(io: &dyn Io, dir: &Path) -> Result<Option<PathBuf>, Error> {
    for (_, d) in shard_dirs(io, dir)? {
        for name in io.list_dir(&d)? {
            if segment::parse_segment_file_name(&name).is_none() {
                continue;
            }
            let path = d.join(&name);
            let b = io.read(&path)?;
            let start = if crate::format::SegmentHeader::decode(&b).is_ok() {
                crate::format::SEGMENT_HEADER_LEN
            } else {
                0
            };
            if b[start..].iter().any(|&x| x != 0) {
                return Ok(Some(path));
            }
        }
    }
    Ok(None)
}
