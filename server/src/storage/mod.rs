//! The server's view of storage: a backend behind `dyn keel_engine::Store` (the embedded
//! engine, the in-memory model, later etcd), keys for objects (`keys`), reads at a resolved
//! resourceVersion, writes whose stored bytes carry their own `metadata.resourceVersion`, and
//! store errors as API errors (`errors`). Nothing else in the server names a backend.
//!
//! Revision in the stored bytes: a backend with `Capabilities::revision_before_seal` (the
//! engine, the model) tells the value builder the revision its write will get, so the stored
//! JSON already says `"resourceVersion":"<rev>"` and every read (get, list, watch) is served
//! as stored, without a copy or a re-encoding. A backend without it (etcd assigns revisions
//! after the bytes are sent) stores `"resourceVersion":""`, and this module writes each
//! value's `mod_revision` into it on the way out (one copy per value read), so that callers
//! never see the difference. The in-memory model can be run without the capability
//! (`--storage-backend=memory-unsealed`), which is how that path is tested.

pub mod compactor;
pub mod errors;
pub mod keys;

pub use errors::{read_error, storage_error};
pub use keys::Location;

use crate::limits::{FUTURE_RV_POLL, FUTURE_RV_WAIT};
use crate::objects::{self, Spliced};
use keel_api::status::ApiError;
use keel_engine::{
    Error as StoreError, Event, EventStream, KeyValue, ListRequest, ListResult, Precondition,
    ReadAt as StoreReadAt, Revision, Stats, Store, StoreExt, WatchError, WriteOp,
};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// What a handler asks the store for: the resolved read point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPoint {
    Latest,
    Exact(Revision),
    NotOlderThan(Revision),
}

impl From<keel_api::rv::ReadAt> for ReadPoint {
    fn from(r: keel_api::rv::ReadAt) -> Self {
        use keel_api::rv::ReadAt as R;
        match r {
            R::MostRecent | R::Any => ReadPoint::Latest,
            R::NotOlderThan(n) => ReadPoint::NotOlderThan(n),
            R::Exact(n) => ReadPoint::Exact(n),
        }
    }
}

/// The storage handle of the registry; cheap to clone.
#[derive(Clone)]
pub struct Storage {
    backend: Arc<dyn Store>,
    /// Values are stored with their own revision (`Capabilities::revision_before_seal`).
    sealed: bool,
}

impl Storage {
    pub fn new(backend: Arc<dyn Store>) -> Storage {
        let sealed = backend.capabilities().revision_before_seal;
        Storage { backend, sealed }
    }

    /// Identifies the backend (per-core watch feeds are kept per backend and prefix).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.backend) as *const () as usize
    }

    pub fn current(&self) -> Revision {
        self.backend.current_revision()
    }

    /// `Err(reason)` once the backend can no longer accept writes.
    pub fn health(&self) -> Result<(), String> {
        self.backend.health()
    }

    /// At shutdown: no more writes; the backend flushes what is pending.
    pub fn stop_writes(&self) {
        self.backend.stop_writes()
    }

    pub fn stats(&self) -> Option<Stats> {
        self.backend.stats()
    }

    /// Whether the backend forgets old history by itself (else `compactor` does it).
    pub fn compacts_itself(&self) -> bool {
        self.backend.capabilities().compacts_itself
    }

    /// Forgets history older than `rev` (reads and watches before it answer 410).
    pub fn compact(&self, rev: Revision) -> Result<(), StoreError> {
        self.backend.compact(rev)
    }

    /// Waits (asynchronously) until `rev` is visible, or answers `Too large resource version`.
    pub async fn wait_visible(&self, rev: Revision) -> Result<(), ApiError> {
        let deadline = Instant::now() + FUTURE_RV_WAIT;
        while self.current() < rev {
            if Instant::now() >= deadline {
                return Err(ApiError::too_large_resource_version(rev, self.current()));
            }
            tokio::time::sleep(FUTURE_RV_POLL).await;
        }
        Ok(())
    }

    async fn backend_at(&self, at: ReadPoint) -> Result<StoreReadAt, ApiError> {
        Ok(match at {
            ReadPoint::Latest => StoreReadAt::Latest,
            ReadPoint::Exact(n) => {
                self.wait_visible(n).await?;
                StoreReadAt::Exact(n)
            }
            ReadPoint::NotOlderThan(n) => {
                self.wait_visible(n).await?;
                StoreReadAt::Latest
            }
        })
    }

    pub async fn get(&self, key: &[u8], at: ReadPoint) -> Result<Option<KeyValue>, ApiError> {
        let at = self.backend_at(at).await?;
        let kv = self.backend.get(key, at).map_err(read_error)?;
        Ok(kv.map(|kv| self.versioned(kv)))
    }

    pub fn get_latest(&self, key: &[u8]) -> Result<Option<KeyValue>, ApiError> {
        let kv = self
            .backend
            .get(key, StoreReadAt::Latest)
            .map_err(read_error)?;
        Ok(kv.map(|kv| self.versioned(kv)))
    }

    pub async fn list(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        limit: usize,
        at: ReadPoint,
    ) -> Result<ListResult, ApiError> {
        let at = self.backend_at(at).await?;
        let mut r = self
            .backend
            .list(&ListRequest {
                prefix,
                start_after,
                limit,
                at,
            })
            .map_err(read_error)?;
        if !self.sealed {
            r.items = r.items.into_iter().map(|kv| self.versioned(kv)).collect();
        }
        Ok(r)
    }

    /// How many objects live under `prefix` now (one list of one item: the store counts the
    /// rest without reading it).
    pub fn count(&self, prefix: &[u8]) -> Result<u64, ApiError> {
        let l = self
            .backend
            .list(&ListRequest {
                prefix,
                start_after: None,
                limit: 1,
                at: StoreReadAt::Latest,
            })
            .map_err(read_error)?;
        Ok(l.items.len() as u64 + l.remaining)
    }

    /// Creates `key` from `obj`, returning the stored bytes (as a reader sees them) and the
    /// revision.
    pub async fn create(
        &self,
        key: &[u8],
        obj: &Spliced,
    ) -> Result<(Vec<u8>, Revision), StoreError> {
        self.put(key, WriteOp::Create, obj).await
    }

    /// Replaces `key` if its mod revision is still `expected`.
    pub async fn update(
        &self,
        key: &[u8],
        expected: Revision,
        obj: &Spliced,
    ) -> Result<(Vec<u8>, Revision), StoreError> {
        let op = WriteOp::Update(Precondition::ModRevision(expected));
        self.put(key, op, obj).await
    }

    async fn put(
        &self,
        key: &[u8],
        op: WriteOp,
        obj: &Spliced,
    ) -> Result<(Vec<u8>, Revision), StoreError> {
        let w = self
            .backend
            .write(key, op, |ctx, out| {
                obj.write(ctx.revision, out);
                Ok(())
            })
            .await?;
        let mut out = Vec::with_capacity(obj.len() + 20);
        obj.write(Some(w.revision), &mut out);
        Ok((out, w.revision))
    }

    /// Deletes `key` if its mod revision is still `expected`; returns the deletion revision.
    pub async fn delete(&self, key: &[u8], expected: Revision) -> Result<Revision, StoreError> {
        let pre = Precondition::ModRevision(expected);
        let w = self.backend.delete(key, pre).await?;
        Ok(w.revision)
    }

    /// Every change after `after` to keys under `prefix`.
    pub fn watch(
        &self,
        prefix: &[u8],
        after: Revision,
    ) -> Result<Box<dyn EventStream>, StoreError> {
        let inner = self.backend.watch(prefix, after)?;
        Ok(if self.sealed {
            inner
        } else {
            Box::new(Versioned { inner })
        })
    }

    /// `kv` with its revision in its bytes (a copy, for a backend that does not store it).
    fn versioned(&self, kv: KeyValue) -> KeyValue {
        if self.sealed {
            return kv;
        }
        versioned(&kv)
    }
}

fn versioned(kv: &KeyValue) -> KeyValue {
    let value = objects::with_resource_version(kv.value(), kv.mod_revision);
    KeyValue::from_parts(kv.key(), &value, kv.mod_revision)
}

/// The events of a backend that does not store revisions in values, with each value's
/// `mod_revision` written into it (deletions carry an empty value, untouched).
struct Versioned {
    inner: Box<dyn EventStream>,
}

impl Versioned {
    fn event(ev: &Event) -> Arc<Event> {
        let kv = match ev.kind {
            keel_engine::EventKind::Put => versioned(&ev.kv),
            keel_engine::EventKind::Delete => ev.kv.clone(),
        };
        Arc::new(Event::new(ev.kind, kv, ev.prev.as_ref().map(versioned)))
    }
}

impl EventStream for Versioned {
    fn poll_visit(
        &mut self,
        cx: &mut Context<'_>,
        visit: &mut dyn FnMut(&Arc<Event>),
    ) -> Poll<Result<usize, WatchError>> {
        self.inner
            .poll_visit(cx, &mut |ev| visit(&Versioned::event(ev)))
    }

    fn try_batch(&mut self, out: &mut Vec<Arc<Event>>) -> Result<usize, WatchError> {
        let start = out.len();
        let n = self.inner.try_batch(out)?;
        for ev in &mut out[start..] {
            *ev = Versioned::event(ev);
        }
        Ok(n)
    }

    fn next_batch_timeout(
        &mut self,
        out: &mut Vec<Arc<Event>>,
        timeout: Duration,
    ) -> Result<bool, WatchError> {
        let start = out.len();
        let got = self.inner.next_batch_timeout(out, timeout)?;
        for ev in &mut out[start..] {
            *ev = Versioned::event(ev);
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_engine::{Limits, MemStore};
    use serde_json::json;

    fn stores() -> [Storage; 2] {
        [
            Storage::new(Arc::new(MemStore::new(Limits::default()))),
            Storage::new(Arc::new(
                MemStore::new(Limits::default()).without_revision_before_seal(),
            )),
        ]
    }

    fn rv_of(bytes: &[u8]) -> String {
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Whether or not the backend stores revisions, every read shows the object's own.
    #[test]
    fn every_read_carries_the_revision_with_or_without_the_capability() {
        for s in stores() {
            let mut obj =
                json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
            let sp = Spliced::new(&mut obj);
            let (bytes, rev) = futures_executor::block_on(s.create(b"/core/configmaps/ns/a", &sp))
                .expect("create");
            assert_eq!(rv_of(&bytes), rev.to_string());
            let mut w = s
                .watch(b"/core/configmaps/", Revision::ZERO)
                .expect("watch");
            let got = s.get_latest(b"/core/configmaps/ns/a").unwrap().unwrap();
            assert_eq!(rv_of(got.value()), rev.to_string());
            let l = futures_executor::block_on(s.list(
                b"/core/configmaps/",
                None,
                0,
                ReadPoint::Latest,
            ))
            .unwrap();
            assert_eq!(rv_of(l.items[0].value()), rev.to_string());
            let (_, rev2) =
                futures_executor::block_on(s.update(b"/core/configmaps/ns/a", rev, &sp)).unwrap();
            let mut evs = Vec::new();
            while evs.len() < 2 {
                assert!(w
                    .next_batch_timeout(&mut evs, Duration::from_secs(5))
                    .unwrap());
            }
            assert_eq!(rv_of(evs[0].kv.value()), rev.to_string());
            assert_eq!(rv_of(evs[1].kv.value()), rev2.to_string());
            assert_eq!(
                rv_of(evs[1].prev.as_ref().unwrap().value()),
                rev.to_string()
            );
            assert_eq!(s.count(b"/core/configmaps/").unwrap(), 1);
        }
    }
}
