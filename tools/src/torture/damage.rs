//! Damage done to a stopped server's store between a kill and the restart: the ways a disk, a
//! filesystem or an operator breaks files (issue 22's list). Each names the file it touched
//! so that the run can check that a refusal names it too.

use rand::Rng;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Bytes zeroed or overwritten at most by one damage.
const RANGE_BYTES_MAX: u64 = 4096;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Damage {
    /// None: the kill alone.
    None,
    /// The newest segment of a shard cut short at a random length.
    Truncate,
    /// A random range (up to 4 KiB) of a segment zeroed.
    ZeroRange,
    /// A random range (up to 4 KiB) of a segment overwritten with random bytes.
    Overwrite,
    /// One bit flipped in a segment, `MANIFEST`, `SHARDS` or `COMPACTED`.
    FlipBit,
    /// A segment file deleted.
    DeleteSegment,
    /// A copy of a segment under a sequence number nothing lists.
    ExtraSegment,
}

impl Damage {
    pub const ALL: [Damage; 7] = [
        Damage::None,
        Damage::Truncate,
        Damage::ZeroRange,
        Damage::Overwrite,
        Damage::FlipBit,
        Damage::DeleteSegment,
        Damage::ExtraSegment,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Damage::None => "none",
            Damage::Truncate => "truncate",
            Damage::ZeroRange => "zero-range",
            Damage::Overwrite => "overwrite",
            Damage::FlipBit => "flip-bit",
            Damage::DeleteSegment => "delete-segment",
            Damage::ExtraSegment => "extra-segment",
        }
    }
}

/// What was done: the file and a description (offset, length).
#[derive(Clone, Debug, Serialize)]
pub struct Done {
    pub file: PathBuf,
    pub what: String,
}

/// Segment files of the store at `store`, per shard, in sequence order.
fn segments(store: &Path) -> Result<Vec<Vec<PathBuf>>, String> {
    let mut shards = Vec::new();
    let rd = std::fs::read_dir(store).map_err(|e| format!("{}: {e}", store.display()))?;
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("shard-"))
        })
        .collect();
    dirs.sort();
    for d in dirs {
        let mut segs: Vec<PathBuf> = std::fs::read_dir(&d)
            .map_err(|e| format!("{}: {e}", d.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "seg"))
            .collect();
        segs.sort();
        shards.push(segs);
    }
    Ok(shards)
}

fn io(p: &Path, e: std::io::Error) -> String {
    format!("{}: {e}", p.display())
}

/// Writes `bytes` at `offset` of `p` in place.
fn write_at(p: &Path, offset: u64, bytes: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .map_err(|e| io(p, e))?;
    f.write_all_at(bytes, offset).map_err(|e| io(p, e))
}

/// Applies `d` to the store directory `store`. `Ok(None)` when there was nothing to damage.
pub fn apply(d: Damage, store: &Path, rng: &mut impl Rng) -> Result<Option<Done>, String> {
    let shards = segments(store)?;
    let all: Vec<&PathBuf> = shards.iter().flatten().collect();
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).map_err(|e| io(p, e));
    let pick_segment = |rng: &mut dyn rand::RngCore| -> Option<PathBuf> {
        (!all.is_empty()).then(|| all[rng.random_range(0..all.len())].clone())
    };
    match d {
        Damage::None => Ok(None),
        Damage::Truncate => {
            let nonempty: Vec<&Vec<PathBuf>> = shards.iter().filter(|s| !s.is_empty()).collect();
            if nonempty.is_empty() {
                return Ok(None);
            }
            let seg = nonempty[rng.random_range(0..nonempty.len())]
                .last()
                .expect("nonempty")
                .clone();
            let n = len(&seg)?;
            if n == 0 {
                return Ok(None);
            }
            let to = rng.random_range(0..n);
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&seg)
                .map_err(|e| io(&seg, e))?;
            f.set_len(to).map_err(|e| io(&seg, e))?;
            Ok(Some(Done {
                what: format!("cut from {n} to {to} bytes"),
                file: seg,
            }))
        }
        Damage::ZeroRange | Damage::Overwrite => {
            let Some(seg) = pick_segment(rng) else {
                return Ok(None);
            };
            let n = len(&seg)?;
            if n == 0 {
                return Ok(None);
            }
            let off = rng.random_range(0..n);
            let count = rng.random_range(1..=RANGE_BYTES_MAX).min(n - off);
            let bytes: Vec<u8> = if d == Damage::ZeroRange {
                vec![0; count as usize]
            } else {
                (0..count).map(|_| rng.random()).collect()
            };
            write_at(&seg, off, &bytes)?;
            Ok(Some(Done {
                what: format!(
                    "{} {count} bytes at offset {off}",
                    if d == Damage::ZeroRange {
                        "zeroed"
                    } else {
                        "overwrote"
                    }
                ),
                file: seg,
            }))
        }
        Damage::FlipBit => {
            let mut files: Vec<PathBuf> = all.iter().map(|p| (*p).clone()).collect();
            for meta in ["MANIFEST", "SHARDS", "COMPACTED"] {
                let p = store.join(meta);
                if p.exists() {
                    files.push(p);
                }
            }
            if files.is_empty() {
                return Ok(None);
            }
            let f = files[rng.random_range(0..files.len())].clone();
            let n = len(&f)?;
            if n == 0 {
                return Ok(None);
            }
            let off = rng.random_range(0..n);
            let bit = rng.random_range(0..8u8);
            let old = std::fs::read(&f).map_err(|e| io(&f, e))?[off as usize];
            write_at(&f, off, &[old ^ (1 << bit)])?;
            Ok(Some(Done {
                what: format!("flipped bit {bit} at offset {off}"),
                file: f,
            }))
        }
        Damage::DeleteSegment => {
            let Some(seg) = pick_segment(rng) else {
                return Ok(None);
            };
            std::fs::remove_file(&seg).map_err(|e| io(&seg, e))?;
            Ok(Some(Done {
                what: "deleted".into(),
                file: seg,
            }))
        }
        Damage::ExtraSegment => {
            let Some(seg) = pick_segment(rng) else {
                return Ok(None);
            };
            let dir = seg.parent().expect("in a shard directory");
            let newest = shards
                .iter()
                .find(|s| s.first().is_some_and(|f| f.parent() == Some(dir)))
                .and_then(|s| s.last())
                .and_then(|p| p.file_stem()?.to_str())
                .and_then(|s| u64::from_str_radix(s, 16).ok())
                .unwrap_or(0);
            // Above the newest, or in a gap below it.
            let seq = if rng.random_bool(0.5) {
                newest + rng.random_range(1..4)
            } else {
                rng.random_range(0..=newest)
            };
            let to = dir.join(format!("{seq:016x}.seg"));
            if to.exists() {
                return Ok(None);
            }
            std::fs::copy(&seg, &to).map_err(|e| io(&to, e))?;
            Ok(Some(Done {
                what: format!("copy of {}", seg.display()),
                file: to,
            }))
        }
    }
}
