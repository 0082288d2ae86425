//! Recovery: checks a shard directory against what the manifest says its log must be, then
//! rebuilds the index (see `FORMAT.md`, "Recovery").
//!
//! Two steps, so that a refused open changes nothing:
//! - `verify` (read only): which segment files there are, whether each is the one the manifest
//!   lists (header, length, data end, revisions), whether every batch verifies. Damage to
//!   anything acknowledged is an `Error::Corrupt` naming the file, the offset and the
//!   revisions; with `repair` it ends the shard's valid prefix instead. Only a torn last batch
//!   past what the manifest records as synced is the crash's to drop.
//! - `apply`: drops the torn tail, removes leftovers, carries out a repair (what is dropped is
//!   kept aside as `<file>.dropped`), and builds the index from the verified batches.

use super::ShardIndex;
use crate::format::{self, Op, ScanEnd, SEGMENT_HEADER_LEN};
use crate::index::{compact_chain, Chain, IndexKey, KeyMap, Loc, Version};
use crate::io::Io;
use crate::keeper::entry_of;
use crate::manifest::{Entry, ENTRY_ACTIVE, ENTRY_REMOVING, ENTRY_REWRITTEN};
use crate::report::{RecoveryNote, RecoveryReport, Revisions};
use crate::segment::{self, Segment};
use crate::{Error, Limits, Revision};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const HEADER_END: u64 = SEGMENT_HEADER_LEN as u64;

/// The state recovered from a shard directory.
pub struct Recovered {
    pub index: ShardIndex,
    pub active: Arc<Segment>,
    pub max_rev: Revision,
    /// The shard's manifest entries: its segments as recovered, the active one last.
    pub entries: Vec<Entry>,
    pub(super) next_seq: u64,
    pub(super) next_id: u32,
}

pub(super) fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
    Error::Corrupt {
        file: path.to_path_buf(),
        offset,
        revisions: None,
        reason: reason.into(),
    }
}

/// How recovery learns which segment files a shard's log consists of.
#[derive(Clone, Copy, Debug)]
pub enum Listing<'a> {
    /// The manifest's entries for the shard; `clean`: it was written by a clean close.
    Manifest { entries: &'a [Entry], clean: bool },
    /// No manifest: a version-1 store being upgraded, or a repair whose manifest was lost.
    /// Version 1's rules: every segment but the newest holding data must verify whole.
    Scan,
}

/// Damage that ends a shard's valid prefix.
#[derive(Clone, Debug)]
pub struct Problem {
    pub file: PathBuf,
    pub offset: u64,
    pub revisions: Revisions,
    pub reason: String,
}

impl From<Problem> for Error {
    fn from(p: Problem) -> Error {
        Error::Corrupt {
            file: p.file,
            offset: p.offset,
            revisions: p.revisions,
            reason: p.reason,
        }
    }
}

/// A verified batch.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: u64,
    end: u64,
    first: Revision,
    last: Revision,
    /// The segment's records up to the end of this batch (an index into `Kept::records`).
    records_end: usize,
}

/// A segment to keep, its verified batches and their records (no-ops left out), collected
/// while verifying so that building the index does not read the segment again.
struct Kept {
    seg: Arc<Segment>,
    batches: Vec<Span>,
    /// Each record's key length and version (whose location says where the key is).
    records: Vec<(u16, Version)>,
}

impl Kept {
    /// Keeps the batches that end at or before `end`, and their records.
    fn truncate(&mut self, end: u64) {
        self.batches.retain(|b| b.end <= end);
        self.records
            .truncate(self.batches.last().map_or(0, |b| b.records_end));
    }
}

/// Where a repair cuts the shard's log.
struct Cut {
    problem: Problem,
    /// `problem.file` is the last kept segment, kept up to this offset; `None`: dropped whole.
    keep_to: Option<u64>,
    /// The later segments of the log, dropped whole.
    rest: Vec<(PathBuf, Revisions)>,
}

/// What `verify` found in one shard directory: what `apply` does.
pub struct Plan {
    id: usize,
    dir: PathBuf,
    kept: Vec<Kept>,
    /// `.tmp` leftovers (silently) and unused segments (noted) to delete.
    remove: Vec<(PathBuf, bool)>,
    /// A kept segment (by index: the newest holding data) ends with a torn, unacknowledged
    /// batch at this offset.
    torn: Option<(usize, u64, Revisions)>,
    /// Repair: kept segments (by index) whose length must be restored.
    resize: Vec<(usize, u64, Problem)>,
    cut: Option<Cut>,
    /// Files that are no part of the log (a repair sets them aside).
    aside: Vec<Problem>,
    /// The highest revision seen anywhere in the shard, dropped data included.
    pub max_seen: Revision,
    /// The manifest was written by a clean close: every segment's data was synced.
    synced: bool,
}

/// What a plan found, for the read-only check (`check.rs`): everything an open would refuse,
/// drop or tidy, without doing it.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Damage to acknowledged data, in the order found: a wrong length, the first damage in
    /// the log, segment files the manifest does not list.
    pub damage: Vec<Problem>,
    /// A torn, never acknowledged last batch an open would drop.
    pub torn: Option<Problem>,
    /// The segments after the first damage in the shard's log: not judged here.
    pub after_damage: Vec<(PathBuf, Revisions)>,
    /// Files an open would delete: unfinished rewrites, segments that never received data.
    pub leftovers: Vec<PathBuf>,
}

impl Plan {
    pub fn findings(&self) -> Findings {
        let mut f = Findings::default();
        f.damage.extend(self.resize.iter().map(|r| r.2.clone()));
        if let Some(c) = &self.cut {
            f.damage.push(c.problem.clone());
            f.after_damage.clone_from(&c.rest);
        }
        f.damage.extend(self.aside.iter().cloned());
        f.torn = self.torn.as_ref().map(|(i, offset, revisions)| Problem {
            file: self.kept[*i].seg.path.clone(),
            offset: *offset,
            revisions: revisions.clone(),
            reason: "a torn last batch past what the manifest records as synced: written by \
                     a crash, never acknowledged; the next open drops it"
                .into(),
        });
        f.leftovers = self.remove.iter().map(|r| r.0.clone()).collect();
        f
    }
}

/// Verifies a shard directory (read only). `Err` on damage to acknowledged data unless
/// `repair`, which plans to keep the valid prefix instead.
pub fn verify(
    io: &dyn Io,
    id: usize,
    dir: &Path,
    listing: Listing<'_>,
    repair: bool,
) -> Result<Plan, Error> {
    let mut plan = Plan {
        id,
        dir: dir.to_path_buf(),
        kept: Vec::new(),
        remove: Vec::new(),
        torn: None,
        resize: Vec::new(),
        cut: None,
        aside: Vec::new(),
        max_seen: Revision::ZERO,
        synced: matches!(listing, Listing::Manifest { clean: true, .. }),
    };
    let mut files: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let names = match io.list_dir(dir) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    for name in names {
        if name.ends_with(".tmp") {
            // An unfinished segment rewrite: the original is still in place.
            plan.remove.push((dir.join(&name), false));
        } else if let Some(seq) = segment::parse_segment_file_name(&name) {
            files.insert(seq, dir.join(&name));
        }
    }
    // The segments the log consists of, in order, with the manifest entries each may match.
    let mut expected: Vec<(u64, PathBuf, &[Entry])> = Vec::new();
    let (clean, listed) = match listing {
        Listing::Manifest { entries, clean } => (clean, Some(entries)),
        Listing::Scan => (false, None),
    };
    if let Some(entries) = listed {
        let mut i = 0;
        while i < entries.len() {
            let seq = entries[i].seq;
            let n = entries[i..].iter().take_while(|e| e.seq == seq).count();
            let group = &entries[i..i + n];
            i += n;
            let present = files.remove(&seq);
            let path = present
                .clone()
                .unwrap_or_else(|| dir.join(segment::segment_file_name(seq)));
            if group[0].is(ENTRY_REMOVING) {
                if let Some(p) = present {
                    plan.remove.push((p, true));
                }
                continue;
            }
            expected.push((seq, path, group));
        }
        let max_listed = entries.last().map_or(0, |e| e.seq);
        for (seq, path) in std::mem::take(&mut files) {
            if seq > max_listed && segment_unused(io, &path, id, seq)? {
                // Created for a rollover the crash interrupted: the manifest lists a segment
                // before anything is written into it.
                plan.remove.push((path, true));
                continue;
            }
            let revisions = file_revisions(io, &path);
            let p = Problem {
                file: path,
                offset: 0,
                revisions,
                reason: "a segment file the manifest does not list".into(),
            };
            if !repair {
                return Err(p.into());
            }
            plan.aside.push(p);
        }
    } else {
        expected = files.into_iter().map(|(s, p)| (s, p, &[][..])).collect();
    }

    if listed.is_none() {
        if let Some((_, path, _)) = expected.last() {
            if file_is_zero(io, path)? {
                // Version 1: crashed while creating the segment, before its header was synced.
                plan.remove.push((path.clone(), true));
                expected.pop();
            }
        }
    }
    // Open every expected segment (header checks), then verify them in log order.
    let mut opened: Vec<Result<Arc<Segment>, Problem>> = Vec::with_capacity(expected.len());
    for (i, (seq, path, cands)) in expected.iter().enumerate() {
        let problem = |offset, reason: String| Problem {
            file: path.clone(),
            offset,
            revisions: cands.first().and_then(Entry::revisions),
            reason,
        };
        opened.push(match Segment::open(io, i as u32, path) {
            Ok(s) if s.header.seq != *seq || s.header.shard as usize != id => Err(problem(
                format::SEG_OFF_SHARD as u64,
                format!(
                    "header says shard {} segment {}, file is shard {id} segment {seq}",
                    s.header.shard, s.header.seq
                ),
            )),
            Ok(s) => Ok(Arc::new(s)),
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(problem(0, "missing: the manifest lists it".into()))
            }
            Err(Error::Corrupt { offset, reason, .. }) => Err(problem(offset, reason)),
            Err(e) => return Err(e),
        });
    }

    let mut max_rev = Revision::ZERO;
    for (i, (_, _, cands)) in expected.iter().enumerate() {
        let judged = match &opened[i] {
            Err(p) => Err((p.clone(), None)),
            Ok(seg) => {
                let scanned = scan(seg, &mut max_rev);
                plan.max_seen = plan.max_seen.max(scanned.max_seen);
                let later_empty = || {
                    opened[i + 1..]
                        .iter()
                        .all(|s| s.as_ref().is_ok_and(|s| segment_is_empty(s)))
                };
                let verdict = if cands.is_empty() {
                    judge_unlisted(seg, &scanned, later_empty)
                } else {
                    judge_listed(seg, &scanned, cands, clean)
                };
                match verdict {
                    Ok(j) => {
                        if let Some((size, p)) = j.resize {
                            if !repair {
                                return Err(p.into());
                            }
                            plan.resize.push((plan.kept.len(), size, p));
                        }
                        if let Some((at, revs)) = j.torn {
                            plan.torn = Some((plan.kept.len(), at, revs));
                        }
                        plan.kept.push(scanned.kept);
                        Ok(())
                    }
                    Err((p, keep_to)) => {
                        let keep = keep_to.filter(|&k| k > HEADER_END).map(|k| {
                            let mut kept = scanned.kept;
                            kept.truncate(k);
                            kept
                        });
                        Err((p, keep))
                    }
                }
            }
        };
        if let Err((problem, keep)) = judged {
            if !repair {
                return Err(problem.into());
            }
            let keep_to = keep
                .as_ref()
                .map(|k| k.batches.last().map_or(HEADER_END, |b| b.end));
            plan.kept.extend(keep);
            plan.torn = None;
            let rest = expected[i + 1..]
                .iter()
                .map(|(_, p, c)| (p.clone(), c.first().and_then(Entry::revisions)))
                .collect();
            plan.cut = Some(Cut {
                problem,
                keep_to,
                rest,
            });
            break;
        }
    }
    Ok(plan)
}

/// What `scan_segment` found in one segment.
struct Scanned {
    /// The segment with its verified batches and their records.
    kept: Kept,
    end: ScanEnd,
    /// A record whose revision is not above the shard's previous one: (offset, revision,
    /// previous). The batches from the one holding it on are not in `batches`.
    disorder: Option<(u64, Revision, Revision)>,
    max_seen: Revision,
}

fn scan(seg: &Arc<Segment>, max_rev: &mut Revision) -> Scanned {
    let mut batches: Vec<Span> = Vec::new();
    let mut records: Vec<(u16, Version)> = Vec::new();
    let mut disorder = None;
    let mut max_seen = Revision::ZERO;
    let mut prev = *max_rev;
    let end = format::scan_segment(
        seg.bytes(),
        |off, h| {
            batches.push(Span {
                start: off,
                end: off + (format::BATCH_HEADER_LEN as u64) + h.len as u64,
                first: h.first,
                last: h.last,
                records_end: 0,
            })
        },
        |r| {
            max_seen = max_seen.max(r.revision);
            if disorder.is_some() {
                return;
            }
            if r.revision <= prev {
                disorder = Some((r.offset, r.revision, prev));
                return;
            }
            prev = r.revision;
            if r.op != Op::Nop {
                let loc = Loc {
                    seg: seg.id,
                    off: r.offset as u32,
                    value_len: r.value.len() as u32,
                    tombstone: r.op == Op::Delete,
                };
                records.push((r.key.len() as u16, Version::new(r.revision, loc)));
            }
        },
    );
    // Which records each batch ends after (both are in offset order).
    let mut n = 0;
    for b in &mut batches {
        while n < records.len() && (records[n].1.loc().off as u64) < b.end {
            n += 1;
        }
        b.records_end = n;
    }
    let mut kept = Kept {
        seg: seg.clone(),
        batches,
        records,
    };
    if let Some((off, _, _)) = disorder {
        kept.truncate(off);
    }
    *max_rev = kept
        .batches
        .last()
        .map_or(*max_rev, |b| b.last.max(*max_rev));
    Scanned {
        kept,
        end,
        disorder,
        max_seen,
    }
}

/// The verdict on one segment: `Ok` with the torn tail to drop, if any; or the problem and
/// how far the segment's data can be kept (`None`: not at all).
type Verdict = Result<Judged, (Problem, Option<u64>)>;

/// A segment whose data is whole.
#[derive(Default)]
struct Judged {
    /// The torn last batch to drop: its offset and revisions.
    torn: Option<(u64, Revisions)>,
    /// The file's length is wrong though every byte of data is there (cut or extended in
    /// the zeros after it): the length it must have. Damage all the same; a repair restores
    /// the length instead of cutting the log there.
    resize: Option<(u64, Problem)>,
}

/// The revisions of the batch whose header is at `at`, if it decodes.
fn batch_revisions(b: &[u8], at: u64) -> Revisions {
    let h = format::decode_batch_header(b.get(at as usize..)?)?;
    Some(h.first..=h.last)
}

/// First to last revision of `batches`.
fn span_revisions(batches: &[Span]) -> Revisions {
    Some(batches.first()?.first..=batches.last()?.last)
}

/// Checks a segment the manifest lists against its entries (two when a rewrite was being
/// renamed into place: the file may be either).
fn judge_listed(seg: &Segment, s: &Scanned, cands: &[Entry], clean: bool) -> Verdict {
    let matching: Vec<&Entry> = cands
        .iter()
        .filter(|c| c.is(ENTRY_REWRITTEN) == seg.is_rewritten())
        .collect();
    let Some(first) = matching.first() else {
        return Err((
            Problem {
                file: seg.path.clone(),
                offset: format::SEG_OFF_FLAGS as u64,
                revisions: cands[0].revisions(),
                reason: format!(
                    "header flags {:#x} differ from the manifest's segment",
                    seg.header.flags
                ),
            },
            None,
        ));
    };
    let mut verdict = judge_entry(seg, s, first, clean);
    for c in &matching[1..] {
        if verdict.is_ok() {
            break;
        }
        if let ok @ Ok(_) = judge_entry(seg, s, c, clean) {
            verdict = ok;
        }
    }
    verdict
}

fn judge_entry(seg: &Segment, s: &Scanned, c: &Entry, clean: bool) -> Verdict {
    let bytes = seg.bytes();
    let data_end = s.kept.batches.last().map_or(HEADER_END, |b| b.end);
    let kept_last = s.kept.batches.last().map_or(Revision::ZERO, |b| b.last);
    // Revisions the manifest names beyond what verified.
    let lost = || (c.last > kept_last).then(|| Revision(kept_last.0 + 1)..=c.last);
    let problem = |offset: u64, revisions: Revisions, reason: String| Problem {
        file: seg.path.clone(),
        offset,
        revisions,
        reason,
    };
    if let Some((off, rev, prev)) = s.disorder {
        return Err((
            problem(
                off,
                lost(),
                format!("revision {rev} is not above the shard's previous {prev}"),
            ),
            Some(data_end),
        ));
    }
    let torn = match &s.end {
        ScanEnd::Corrupt { offset, reason } => {
            let revs = batch_revisions(bytes, data_end).or_else(lost);
            return Err((problem(*offset, revs, reason.clone()), Some(data_end)));
        }
        ScanEnd::TornTail { .. } => true,
        ScanEnd::Clean { .. } => false,
    };
    let len = seg.capacity();
    if data_end < c.end {
        let what = if torn {
            "a batch there is damaged"
        } else if len < c.end {
            "the file is cut short"
        } else {
            "the data ends there (erased)"
        };
        return Err((
            problem(
                data_end,
                lost(),
                format!(
                    "acknowledged data up to offset {} is missing: {what}",
                    c.end
                ),
            ),
            Some(data_end),
        ));
    }
    // The batches up to the recorded end.
    let upto_len = match c.end {
        HEADER_END => Some(0),
        end => s
            .kept
            .batches
            .iter()
            .position(|b| b.end == end)
            .map(|p| p + 1),
    };
    let Some(upto_len) = upto_len else {
        let keep = s.kept.batches.iter().rfind(|b| b.end <= c.end);
        return Err((
            problem(
                c.end,
                None,
                "no batch ends where the manifest records the end of the data".into(),
            ),
            Some(keep.map_or(HEADER_END, |b| b.end)),
        ));
    };
    let upto = &s.kept.batches[..upto_len];
    let (first, last) = (
        upto.first().map_or(Revision::ZERO, |b| b.first),
        upto.last().map_or(Revision::ZERO, |b| b.last),
    );
    if (first, last) != (c.first, c.last) {
        return Err((
            problem(
                HEADER_END,
                c.revisions(),
                format!(
                    "holds revisions {first}..={last} up to offset {}, the manifest says {}..={}",
                    c.end, c.first, c.last
                ),
            ),
            None,
        ));
    }
    let after = &s.kept.batches[upto.len()..];
    if !c.is(ENTRY_ACTIVE) || clean {
        // The end is exact: nothing may follow.
        if !after.is_empty() {
            return Err((
                problem(
                    c.end,
                    span_revisions(after),
                    if clean {
                        "data after the end recorded at a clean close".into()
                    } else {
                        "data after the end of a sealed segment".into()
                    },
                ),
                Some(c.end),
            ));
        }
        if torn {
            return Err((
                problem(
                    data_end,
                    batch_revisions(bytes, data_end),
                    "damaged bytes after the end of the data".into(),
                ),
                Some(data_end),
            ));
        }
    }
    let resize = (len != c.size).then(|| {
        let why = format!("the file is {len} bytes, the manifest says {}", c.size);
        (c.size, problem(len.min(c.size), None, why))
    });
    Ok(Judged {
        torn: torn.then(|| (data_end, batch_revisions(bytes, data_end))),
        resize,
    })
}

/// Checks a segment without a manifest entry (version-1 rules): it must verify whole, except
/// that the newest segment holding data may end with a torn batch.
fn judge_unlisted(seg: &Segment, s: &Scanned, later_empty: impl FnOnce() -> bool) -> Verdict {
    let bytes = seg.bytes();
    let data_end = s.kept.batches.last().map_or(HEADER_END, |b| b.end);
    let problem = |offset: u64, revisions: Revisions, reason: String| Problem {
        file: seg.path.clone(),
        offset,
        revisions,
        reason,
    };
    if let Some((off, rev, prev)) = s.disorder {
        return Err((
            problem(
                off,
                None,
                format!("revision {rev} is not above the shard's previous {prev}"),
            ),
            Some(data_end),
        ));
    }
    let torn = match &s.end {
        ScanEnd::Corrupt { offset, reason } => {
            let revs = batch_revisions(bytes, data_end);
            return Err((problem(*offset, revs, reason.clone()), Some(data_end)));
        }
        ScanEnd::TornTail { valid_end } if !later_empty() => {
            return Err((
                problem(
                    *valid_end,
                    batch_revisions(bytes, *valid_end),
                    "bad batch in a sealed segment".into(),
                ),
                Some(data_end),
            ))
        }
        ScanEnd::TornTail { .. } => true,
        ScanEnd::Clean { .. } => false,
    };
    let len = seg.capacity();
    let size = seg.header.size;
    let resize = (size != 0 && len != size).then(|| {
        let why = format!("the file is {len} bytes, its header says {size}");
        (size, problem(len.min(size), None, why))
    });
    Ok(Judged {
        torn: torn.then(|| (data_end, batch_revisions(bytes, data_end))),
        resize,
    })
}

/// Carries out a plan: drops the torn tail, removes leftovers, sets aside what a repair
/// drops, and builds the index (compacted at `compacted`).
pub fn apply(
    plan: Plan,
    io: &dyn Io,
    limits: &Limits,
    compacted: Revision,
    report: &mut RecoveryReport,
) -> Result<Recovered, Error> {
    let Plan {
        id,
        dir,
        mut kept,
        remove,
        torn,
        resize,
        cut,
        aside,
        synced,
        ..
    } = plan;
    for (i, size, p) in resize {
        let k = &mut kept[i];
        let f = io.open(&k.seg.path)?;
        f.set_len(size)?;
        f.sync_all()?;
        drop(f);
        // A new mapping, as long as the file now is.
        k.seg = Arc::new(Segment::open(io, k.seg.id, &k.seg.path)?);
        report.note(RecoveryNote::Rebuilt {
            file: p.file,
            reason: format!(
                "{}: its length is restored to {size} bytes, no data was lost",
                p.reason
            ),
        });
    }
    let mut dir_changed = false;
    for (path, noted) in remove {
        match io.remove_file(&path) {
            Ok(()) => dir_changed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        if noted {
            report.note(RecoveryNote::RemovedUnused { segment: path });
        }
    }
    if let Some(cut) = cut {
        dir_changed = true;
        let Problem {
            file,
            offset,
            revisions,
            reason,
        } = cut.problem;
        match cut.keep_to {
            Some(keep_to) => {
                let k = kept.last_mut().expect("the cut segment is kept");
                assert_eq!(k.seg.path, file);
                let kept_as = Some(copy_aside(io, &dir, &file)?);
                k.seg.zero_tail(keep_to)?;
                report.note(RecoveryNote::Dropped {
                    file,
                    offset: keep_to,
                    revisions,
                    reason: format!("at offset {offset}: {reason}"),
                    kept_as,
                });
            }
            None => {
                let kept_as = set_aside(io, &dir, &file)?;
                report.note(RecoveryNote::Dropped {
                    file,
                    offset: 0,
                    revisions,
                    reason: format!("at offset {offset}: {reason}"),
                    kept_as,
                });
            }
        }
        for (path, revisions) in cut.rest {
            let kept_as = set_aside(io, &dir, &path)?;
            report.note(RecoveryNote::Dropped {
                file: path,
                offset: 0,
                revisions,
                reason: "it follows damaged data in the shard's log".into(),
                kept_as,
            });
        }
    }
    for p in aside {
        dir_changed = true;
        let kept_as = set_aside(io, &dir, &p.file)?;
        report.note(RecoveryNote::Dropped {
            file: p.file,
            offset: 0,
            revisions: p.revisions,
            reason: p.reason,
            kept_as,
        });
    }
    if let Some((i, from, revisions)) = torn {
        let k = &kept[i];
        k.seg.zero_tail(from)?;
        report.note(RecoveryNote::TornTail {
            segment: k.seg.path.clone(),
            offset: from,
            revisions,
        });
    }
    if dir_changed {
        io.sync_dir(&dir)?;
    }
    build(id, &dir, io, limits, compacted, kept, synced)
}

/// Builds the shard's index from the verified batches of `kept`, and picks (or creates) the
/// active segment.
fn build(
    id: usize,
    dir: &Path,
    io: &dyn Io,
    limits: &Limits,
    compacted: Revision,
    kept: Vec<Kept>,
    synced: bool,
) -> Result<Recovered, Error> {
    let mut max_rev = Revision::ZERO;
    for (i, k) in kept.iter().enumerate() {
        let seg = &k.seg;
        assert_eq!(
            seg.id as usize, i,
            "kept segments are numbered in log order"
        );
        for b in &k.batches {
            seg.note_batch(b.start, b.first, b.last, b.end);
            max_rev = max_rev.max(b.last);
        }
        let end = k.batches.last().map_or(HEADER_END, |b| b.end);
        seg.data_end.store(end, Ordering::Release);
    }
    // The records' keys, straight from the mappings (their locations are their segments' ids).
    let mut entries: Vec<(&[u8], Version)> =
        Vec::with_capacity(kept.iter().map(|k| k.records.len()).sum());
    for k in &kept {
        let bytes = k.seg.bytes();
        entries.extend(k.records.iter().map(|&(key_len, v)| {
            let at = v.loc().off as usize + format::RECORD_HEADER_LEN;
            (&bytes[at..at + key_len as usize], v)
        }));
    }
    // Stable sort by key keeps each key's versions in revision order; building the map from
    // sorted input packs its nodes.
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut keys = KeyMap::new();
    let mut versions = 0u64;
    let mut live_keys = 0u64;
    let mut dropped = Vec::new();
    let mut i = 0;
    let mut built: Vec<(IndexKey, Chain)> = Vec::new();
    while i < entries.len() {
        let key = entries[i].0;
        let mut chain = Chain::new();
        while i < entries.len() && entries[i].0 == key {
            chain.push(entries[i].1);
            i += 1;
        }
        dropped.clear();
        let empty = compact_chain(&mut chain, compacted, &mut dropped);
        for v in chain.iter() {
            let loc = v.loc();
            let span = format::record_span(key.len(), loc.value_len as usize) as u64;
            kept[loc.seg as usize]
                .seg
                .live_bytes
                .fetch_add(span, Ordering::Relaxed);
        }
        if empty {
            continue;
        }
        versions += chain.len() as u64;
        if !chain.last().expect("non-empty").is_tombstone() {
            live_keys += 1;
        }
        built.push((IndexKey::from_slice(key), chain));
    }
    drop(entries);
    keys.extend(built);
    let mut next_id = kept.len() as u32;
    let last_seq = kept.last().map_or(0, |k| k.seg.header.seq);
    let mut index = ShardIndex {
        keys,
        segs: Vec::new(),
        order: BTreeMap::new(),
        live_keys,
        versions,
    };
    for k in &kept {
        index.add_segment(k.seg.clone());
    }
    let reusable = kept.last().map(|k| &k.seg).filter(|s| {
        !s.is_rewritten() && s.data_end.load(Ordering::Acquire) + 64 * 1024 < s.capacity()
    });
    let (active, next_seq) = match reusable {
        Some(s) => (s.clone(), last_seq + 1),
        None => {
            let seg = Arc::new(new_segment(
                io,
                id,
                dir,
                next_id,
                last_seq + 1,
                limits.segment_bytes,
            )?);
            next_id += 1;
            index.add_segment(seg.clone());
            (seg, last_seq + 2)
        }
    };
    // What the manifest records: every kept segment's data is on disk (read back just now;
    // unless a clean close synced it, the active one is synced so that a power cut cannot take
    // back what the manifest will record).
    let mut listed = Vec::with_capacity(kept.len() + 1);
    for k in &kept {
        if Arc::ptr_eq(&k.seg, &active) {
            if synced {
                k.seg.assume_durable();
            } else {
                k.seg.seal(true)?;
            }
        } else {
            k.seg.assume_durable();
            listed.push(entry_of(&k.seg, 0));
        }
    }
    listed.push(entry_of(&active, ENTRY_ACTIVE));
    Ok(Recovered {
        index,
        active,
        max_rev,
        entries: listed,
        next_seq,
        next_id,
    })
}

/// Whether a segment holds no batch at all (header, then zeros).
fn segment_is_empty(seg: &Segment) -> bool {
    let b = seg.bytes();
    b[SEGMENT_HEADER_LEN..].iter().all(|&x| x == 0)
}

fn file_is_zero(io: &dyn Io, path: &Path) -> std::io::Result<bool> {
    let b = io.read(path)?;
    Ok(b.iter().all(|&x| x == 0))
}

/// Whether `path` is a segment that never received data: zeros, or this shard's header for
/// `seq` followed by zeros (created for a rollover, or left by an interrupted removal).
fn segment_unused(io: &dyn Io, path: &Path, shard: usize, seq: u64) -> std::io::Result<bool> {
    let b = io.read(path)?;
    if b.iter().all(|&x| x == 0) {
        return Ok(true);
    }
    Ok(match format::SegmentHeader::decode(&b) {
        Ok(h) => {
            h.seq == seq
                && h.shard as usize == shard
                && b[SEGMENT_HEADER_LEN..].iter().all(|&x| x == 0)
        }
        Err(_) => false,
    })
}

/// The revisions the verifiable batches of a segment file hold (for reports).
fn file_revisions(io: &dyn Io, path: &Path) -> Revisions {
    let b = io.read(path).ok()?;
    let (mut first, mut last) = (None, Revision::ZERO);
    format::scan_segment(
        &b,
        |_, h| {
            first.get_or_insert(h.first);
            last = last.max(h.last);
        },
        |_| {},
    );
    Some(first?..=last)
}

/// A name for `<file>.dropped` that is not taken yet.
fn aside_name(io: &dyn Io, dir: &Path, file: &Path) -> std::io::Result<PathBuf> {
    let names = io.list_dir(dir)?;
    let base = format!(
        "{}.dropped",
        file.file_name().unwrap_or_default().to_string_lossy()
    );
    let mut name = base.clone();
    let mut n = 1;
    while names.contains(&name) {
        name = format!("{base}.{n}");
        n += 1;
    }
    Ok(dir.join(name))
}

/// Renames `file` to `<file>.dropped` (if it exists); returns the new name.
fn set_aside(io: &dyn Io, dir: &Path, file: &Path) -> Result<Option<PathBuf>, Error> {
    let to = aside_name(io, dir, file)?;
    match io.rename(file, &to) {
        Ok(()) => Ok(Some(to)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Copies `file` to `<file>.dropped` before a repair zeroes part of it.
fn copy_aside(io: &dyn Io, dir: &Path, file: &Path) -> Result<PathBuf, Error> {
    let to = aside_name(io, dir, file)?;
    let bytes = io.read(file)?;
    let f = io.create(&to, true)?;
    f.write_all_at(&bytes, 0)?;
    f.sync_all()?;
    io.sync_dir(dir)?;
    Ok(to)
}

pub(super) fn new_segment(
    io: &dyn Io,
    shard: usize,
    dir: &Path,
    id: u32,
    seq: u64,
    size: u64,
) -> Result<Segment, Error> {
    if id >= crate::index::SEGMENT_IDS_MAX {
        return Err(Error::Failed(format!(
            "shard {shard} ran out of segment ids"
        )));
    }
    let header = format::SegmentHeader {
        shard: shard as u32,
        seq,
        flags: 0,
        compacted: Revision::ZERO,
        size,
    };
    Ok(Segment::create(io, id, dir, header, size, None)?)
}
