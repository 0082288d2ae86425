//! `MemStore`: the in-memory reference model of the `Store` contract.
//!
//! Deliberately simple (one mutex, a `BTreeMap` of version chains, an unbounded event log) so
//! that it is obviously right; the contract suite and the randomized tests hold the engine to
//! it. Writes are "durable" at once.

use crate::store::{Capabilities, EventStream, ValueBuilder, WriteContext};
use crate::watch::{HistorySource, Hub};
use crate::{
    Error, Event, EventKind, KeyValue, Limits, ListRequest, ListResult, Pending, Precondition,
    ReadAt, Revision, Store, WatchError, WriteOp, Written,
};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One version: `None` is a tombstone.
type Version = (Revision, Option<KeyValue>);

struct Model {
    revision: Revision,
    /// The next write gets a revision above this one too (`MemStore::skip_revisions_below`).
    floor: Revision,
    compacted: Revision,
    keys: BTreeMap<Vec<u8>, Vec<Version>>,
    log: Vec<Arc<Event>>,
}

struct Shared {
    model: Mutex<Model>,
}

pub struct MemStore {
    shared: Arc<Shared>,
    hub: Arc<Hub>,
    limits: Limits,
    /// Whether value builders are told their revision (`Capabilities::revision_before_seal`).
    revision_before_seal: bool,
}

impl Default for MemStore {
    fn default() -> Self {
        MemStore::new(Limits::default())
    }
}

impl MemStore {
    pub fn new(limits: Limits) -> MemStore {
        MemStore {
            shared: Arc::new(Shared {
                model: Mutex::new(Model {
                    revision: Revision::ZERO,
                    floor: Revision::ZERO,
                    compacted: Revision::ZERO,
                    keys: BTreeMap::new(),
                    log: Vec::new(),
                }),
            }),
            hub: Arc::new(Hub::new(&limits, Revision::ZERO)),
            limits,
            revision_before_seal: true,
        }
    }

    /// The next write gets `next` or a later revision; the current revision stays. This is
    /// what the engine does after an unclean shutdown (it skips every revision the previous run
    /// may have handed out, `keel_engine::keeper`): tests call it to follow the engine.
    pub fn skip_revisions_below(&self, next: Revision) {
        let mut m = self.shared.model.lock();
        m.floor = m.floor.max(Revision(next.0.saturating_sub(1)));
    }

    /// The revision the next write gets (as `Engine::next_revision`).
    pub fn next_revision(&self) -> Revision {
        let m = self.shared.model.lock();
        m.revision.max(m.floor).next()
    }

    /// A model whose value builders are not told their revision, as a backend that learns it
    /// only once the bytes are stored (etcd): what the server's fallback for such backends is
    /// tested against.
    pub fn without_revision_before_seal(mut self) -> MemStore {
        self.revision_before_seal = false;
        self
    }
}

fn latest_at(chain: &[Version], at: Revision) -> Option<&Version> {
    chain.iter().rev().find(|(r, _)| *r <= at)
}

impl Model {
    fn snapshot(&self, at: ReadAt) -> Result<Revision, Error> {
        match at {
            ReadAt::Latest => Ok(self.revision),
            ReadAt::NotOlderThan(r) | ReadAt::Exact(r) if r > self.revision => {
                Err(Error::FutureRevision {
                    requested: r,
                    current: self.revision,
                })
            }
            ReadAt::NotOlderThan(_) => Ok(self.revision),
            ReadAt::Exact(r) if r < self.compacted => Err(Error::Compacted {
                requested: r,
                compacted: self.compacted,
            }),
            ReadAt::Exact(r) => Ok(r),
        }
    }

    fn current(&self, key: &[u8]) -> Option<&KeyValue> {
        self.keys
            .get(key)
            .and_then(|c| c.last())
            .and_then(|(_, v)| v.as_ref())
    }
}

impl HistorySource for Shared {
    fn read_history(
        &self,
        prefix: &[u8],
        after: Revision,
        upto: Revision,
        max: usize,
        out: &mut Vec<Arc<Event>>,
    ) -> Result<Revision, WatchError> {
        let m = self.model.lock();
        let start = m.log.partition_point(|e| e.revision() <= after);
        let mut n = 0;
        for e in &m.log[start..] {
            if e.revision() > upto {
                break;
            }
            if e.kv.key().starts_with(prefix) {
                out.push(e.clone());
                n += 1;
                if n == max {
                    return Ok(e.revision());
                }
            }
        }
        Ok(upto)
    }

    fn compacted_revision(&self) -> Revision {
        self.model.lock().compacted
    }
}

impl Store for MemStore {
    fn current_revision(&self) -> Revision {
        self.shared.model.lock().revision
    }

    fn compacted_revision(&self) -> Revision {
        self.shared.model.lock().compacted
    }

    fn get(&self, key: &[u8], at: ReadAt) -> Result<Option<KeyValue>, Error> {
        let m = self.shared.model.lock();
        let s = m.snapshot(at)?;
        Ok(m.keys
            .get(key)
            .and_then(|c| latest_at(c, s))
            .and_then(|(_, v)| v.clone()))
    }

    fn list(&self, req: &ListRequest<'_>) -> Result<ListResult, Error> {
        let m = self.shared.model.lock();
        let s = m.snapshot(req.at)?;
        let mut items = Vec::new();
        let mut remaining = 0u64;
        for (k, chain) in m.keys.range(req.prefix.to_vec()..) {
            if !k.starts_with(req.prefix) {
                break;
            }
            if let Some(after) = req.start_after {
                if k.as_slice() <= after {
                    continue;
                }
            }
            if let Some((_, Some(kv))) = latest_at(chain, s) {
                if req.limit == 0 || items.len() < req.limit {
                    items.push(kv.clone());
                } else {
                    remaining += 1;
                }
            }
        }
        Ok(ListResult {
            items,
            revision: s,
            more: remaining > 0,
            remaining,
        })
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            revision_before_seal: self.revision_before_seal,
            compacts_itself: false,
        }
    }

    fn write_with(
        &self,
        key: &[u8],
        op: WriteOp,
        build: &mut ValueBuilder<'_>,
    ) -> Pending<Result<Written, Error>> {
        Pending::ready(self.write_now(key, op, build))
    }

    fn watch(&self, prefix: &[u8], after: Revision) -> Result<Box<dyn EventStream>, Error> {
        let current = self.current_revision();
        if after > current {
            return Err(Error::FutureRevision {
                requested: after,
                current,
            });
        }
        Ok(Box::new(self.hub.watch(
            self.shared.clone(),
            prefix,
            after,
        )?))
    }

    fn compact(&self, revision: Revision) -> Result<(), Error> {
        let mut m = self.shared.model.lock();
        if revision > m.revision {
            return Err(Error::FutureRevision {
                requested: revision,
                current: m.revision,
            });
        }
        if revision <= m.compacted {
            return Ok(());
        }
        m.compacted = revision;
        m.keys.retain(|_, chain| {
            let keep_from = chain.iter().rposition(|(r, _)| *r <= revision).unwrap_or(0);
            chain.drain(..keep_from);
            !(chain.len() == 1 && chain[0].0 <= revision && chain[0].1.is_none())
        });
        let cut = m.log.partition_point(|e| e.revision() <= revision);
        m.log.drain(..cut);
        Ok(())
    }
}

impl MemStore {
    fn write_now(
        &self,
        key: &[u8],
        op: WriteOp,
        build: &mut ValueBuilder<'_>,
    ) -> Result<Written, Error> {
        if key.is_empty() {
            return Err(Error::EmptyKey);
        }
        if key.len() > self.limits.key_bytes_max {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: self.limits.key_bytes_max,
            });
        }
        let mut m = self.shared.model.lock();
        let current = m.current(key).cloned();
        match (op, &current) {
            (WriteOp::Create, Some(kv)) => {
                return Err(Error::AlreadyExists {
                    revision: kv.mod_revision,
                })
            }
            (WriteOp::Update(_) | WriteOp::Delete(_), None) => return Err(Error::NotFound),
            (
                WriteOp::Update(Precondition::ModRevision(r))
                | WriteOp::Delete(Precondition::ModRevision(r)),
                Some(kv),
            ) if kv.mod_revision != r => {
                return Err(Error::Conflict {
                    expected: r,
                    actual: kv.mod_revision,
                })
            }
            _ => {}
        }
        let revision = m.revision.max(m.floor).next();
        let new = match op {
            WriteOp::Delete(_) => None,
            _ => {
                let mut buf = Vec::new();
                let ctx = WriteContext {
                    revision: self.revision_before_seal.then_some(revision),
                    current: current.as_ref().map(|kv| kv.value()),
                    current_revision: current.as_ref().map(|kv| kv.mod_revision),
                };
                // Like the engine, a write that reached the value builder has consumed its
                // revision even if it writes nothing: the next write gets a later one.
                if let Err(e) = build(&ctx, &mut buf) {
                    m.revision = revision;
                    return Err(Error::Aborted(e));
                }
                if buf.len() > self.limits.value_bytes_max {
                    m.revision = revision;
                    return Err(Error::ValueTooLarge {
                        len: buf.len(),
                        max: self.limits.value_bytes_max,
                    });
                }
                Some(KeyValue::from_parts(key, &buf, revision))
            }
        };
        m.revision = revision;
        let kind = if new.is_some() {
            EventKind::Put
        } else {
            EventKind::Delete
        };
        let kv = new
            .clone()
            .unwrap_or_else(|| KeyValue::from_parts(key, &[], revision));
        let event = Arc::new(Event::new(kind, kv, current.clone()));
        m.keys
            .entry(key.to_vec())
            .or_default()
            .push((revision, new));
        m.log.push(event.clone());
        // Published under the model lock so events reach the ring in revision order.
        self.hub.publish([event]);
        Ok(Written {
            revision,
            prev_revision: current.map(|kv| kv.mod_revision),
        })
    }
}
