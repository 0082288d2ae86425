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
//!
//! Encryption at rest (`encryption`, `--encryption-provider-config`): for a resource whose
//! first provider encrypts, the value is built (revision included) and then sealed, inside
//! the backend's value builder, so the revision is known before the bytes are; every read
//! (get, list, watch events and their previous values) opens it again, one copy per value.
//! Without a configuration nothing here looks at values, and plaintext values of resources
//! that are not encrypted are still served as stored.

pub mod compactor;
pub mod encryption;
pub mod errors;
pub mod keys;

pub use errors::{read_error, storage_error};
pub use keys::Location;

use crate::limits::{FUTURE_RV_POLL, FUTURE_RV_WAIT};
use crate::objects::{self, Spliced};
use encryption::{Chain, Encryption};
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
    /// Encryption at rest, when configured.
    encryption: Option<Arc<Encryption>>,
}

impl Storage {
    pub fn new(backend: Arc<dyn Store>) -> Storage {
        let sealed = backend.capabilities().revision_before_seal;
        Storage {
            backend,
            sealed,
            encryption: None,
        }
    }

    /// Values are encrypted at rest as `encryption` says.
    pub fn with_encryption(mut self, encryption: Encryption) -> Storage {
        let encryption = Arc::new(encryption);
        encryption::report_metrics_of(&encryption);
        self.encryption = Some(encryption);
        self
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
        kv.map(|kv| self.readable(kv)).transpose()
    }

    pub fn get_latest(&self, key: &[u8]) -> Result<Option<KeyValue>, ApiError> {
        let kv = self
            .backend
            .get(key, StoreReadAt::Latest)
            .map_err(read_error)?;
        kv.map(|kv| self.readable(kv)).transpose()
    }

    /// The current version of `key` for a read-modify-write, and whether its stored value
    /// must be rewritten even if the object does not change: it was encrypted with other
    /// than the provider and key writes use now (or stored as plaintext where writes now
    /// encrypt), as upstream's `GuaranteedUpdate` does for a "stale" value. That is what
    /// makes `kubectl get secrets -A -o json | kubectl replace -f -` re-encrypt.
    pub fn get_latest_for_update(&self, key: &[u8]) -> Result<Option<(KeyValue, bool)>, ApiError> {
        let Some(enc) = &self.encryption else {
            return Ok(self.get_latest(key)?.map(|kv| (kv, false)));
        };
        let kv = self
            .backend
            .get(key, StoreReadAt::Latest)
            .map_err(read_error)?;
        let Some(kv) = kv else { return Ok(None) };
        let (kv, stale) = match enc.chain(key) {
            Some(chain) => match chain
                .open_with_staleness(key, kv.value())
                .map_err(ApiError::internal)?
            {
                (None, stale) => (kv, stale),
                (Some(plain), stale) => (
                    KeyValue::from_parts(kv.key(), &plain, kv.mod_revision),
                    stale,
                ),
            },
            None => (kv, false),
        };
        Ok(Some((self.versioned(kv), stale)))
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
        if let Some(enc) = &self.encryption {
            let by_prefix = enc.chain(prefix);
            r.items = std::mem::take(&mut r.items)
                .into_iter()
                .map(|kv| match by_prefix.or_else(|| enc.chain(kv.key())) {
                    None => Ok(kv),
                    Some(chain) => match chain.open(kv.key(), kv.value()) {
                        Ok(None) => Ok(kv),
                        Ok(Some(plain)) => {
                            Ok(KeyValue::from_parts(kv.key(), &plain, kv.mod_revision))
                        }
                        Err(e) => Err(transform_error(kv.key(), &e)),
                    },
                })
                .collect::<Result<_, _>>()
                .map_err(ApiError::internal)?;
        }
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
        let chain = self
            .encryption
            .as_ref()
            .and_then(|e| e.chain(key))
            .filter(|c| !c.writes_plaintext());
        let w = self
            .backend
            .write(key, op, |ctx, out| {
                let Some(chain) = chain else {
                    obj.write(ctx.revision, out);
                    return Ok(());
                };
                // Built with its revision, then sealed: the revision is in the ciphertext.
                let mut plain = Vec::with_capacity(obj.len() + 20);
                obj.write(ctx.revision, &mut plain);
                chain.seal(key, &plain, out).map_err(|e| e.into())
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
        Ok(if self.sealed && self.encryption.is_none() {
            inner
        } else {
            Box::new(Readable {
                inner,
                view: View {
                    encryption: self.encryption.clone(),
                    sealed: self.sealed,
                },
                failed: None,
            })
        })
    }

    /// `kv` as readers see it: opened if encrypted, with its revision in its bytes.
    fn readable(&self, kv: KeyValue) -> Result<KeyValue, ApiError> {
        let kv = match self.encryption.as_ref().and_then(|e| e.chain(kv.key())) {
            Some(chain) => opened(chain, kv).map_err(ApiError::internal)?,
            None => kv,
        };
        Ok(self.versioned(kv))
    }

    /// `kv` with its revision in its bytes (a copy, for a backend that does not store it).
    fn versioned(&self, kv: KeyValue) -> KeyValue {
        if self.sealed {
            return kv;
        }
        versioned(&kv)
    }
}

/// `kv` with its value opened by `chain` (the same `kv`, no copy, when stored as plaintext).
fn opened(chain: &Chain, kv: KeyValue) -> Result<KeyValue, String> {
    match chain.open(kv.key(), kv.value())? {
        None => Ok(kv),
        Some(plain) => Ok(KeyValue::from_parts(kv.key(), &plain, kv.mod_revision)),
    }
}

/// Upstream's text for a listed or watched value that does not open (a 500 on lists).
fn transform_error(key: &[u8], e: &str) -> String {
    format!(
        "unable to transform key {:?}: {e}",
        String::from_utf8_lossy(key)
    )
}

fn versioned(kv: &KeyValue) -> KeyValue {
    let value = objects::with_resource_version(kv.value(), kv.mod_revision);
    KeyValue::from_parts(kv.key(), &value, kv.mod_revision)
}

/// The events as readers see them: values opened when encryption is configured, and (for a
/// backend that does not store revisions in values) each value's `mod_revision` written into
/// it. Deletions carry an empty value, untouched. A value that does not open ends the watch
/// with the reason (upstream ends it with an error event too); the client re-lists and gets
/// the 500.
struct Readable {
    inner: Box<dyn EventStream>,
    view: View,
    /// Why the watch ended, once a value did not open.
    failed: Option<String>,
}

struct View {
    encryption: Option<Arc<Encryption>>,
    sealed: bool,
}

impl View {
    /// `kv` as readers see it, or `None` when that is `kv` itself.
    fn kv(&self, kv: &KeyValue) -> Result<Option<KeyValue>, String> {
        let chain = self.encryption.as_ref().and_then(|e| e.chain(kv.key()));
        let opened = match chain {
            Some(chain) => chain
                .open(kv.key(), kv.value())
                .map_err(|e| transform_error(kv.key(), &e))?
                .map(|plain| KeyValue::from_parts(kv.key(), &plain, kv.mod_revision)),
            None => None,
        };
        if self.sealed {
            return Ok(opened);
        }
        Ok(Some(versioned(opened.as_ref().unwrap_or(kv))))
    }

    /// The event as readers see it: the same `Arc` (publish stamp included) when nothing in
    /// it changes, as for every plaintext value on a backend that stores revisions.
    fn event(&self, ev: &Arc<Event>) -> Result<Arc<Event>, String> {
        let kv = match ev.kind {
            keel_engine::EventKind::Put => self.kv(&ev.kv)?,
            keel_engine::EventKind::Delete => None,
        };
        let prev = match &ev.prev {
            Some(p) => self.kv(p)?.map(Some),
            None => None,
        };
        if kv.is_none() && prev.is_none() {
            return Ok(ev.clone());
        }
        Ok(Arc::new(Event::new(
            ev.kind,
            kv.unwrap_or_else(|| ev.kv.clone()),
            prev.unwrap_or_else(|| ev.prev.clone()),
        )))
    }
}

impl Readable {
    fn map_batch(&mut self, out: &mut [Arc<Event>]) -> Result<(), WatchError> {
        for ev in out {
            *ev = self.view.event(ev).map_err(WatchError::Io)?;
        }
        Ok(())
    }
}

impl EventStream for Readable {
    fn poll_visit(
        &mut self,
        cx: &mut Context<'_>,
        visit: &mut dyn FnMut(&Arc<Event>),
    ) -> Poll<Result<usize, WatchError>> {
        if let Some(e) = &self.failed {
            return Poll::Ready(Err(WatchError::Io(e.clone())));
        }
        let mut failed = None;
        let view = &self.view;
        let r = self.inner.poll_visit(cx, &mut |ev| {
            if failed.is_some() {
                return;
            }
            match view.event(ev) {
                Ok(ev) => visit(&ev),
                Err(e) => failed = Some(e),
            }
        });
        if let Some(e) = failed {
            self.failed = Some(e.clone());
            return Poll::Ready(Err(WatchError::Io(e)));
        }
        r
    }

    fn try_batch(&mut self, out: &mut Vec<Arc<Event>>) -> Result<usize, WatchError> {
        let start = out.len();
        let n = self.inner.try_batch(out)?;
        self.map_batch(&mut out[start..])?;
        Ok(n)
    }

    fn next_batch_timeout(
        &mut self,
        out: &mut Vec<Arc<Event>>,
        timeout: Duration,
    ) -> Result<bool, WatchError> {
        let start = out.len();
        let got = self.inner.next_batch_timeout(out, timeout)?;
        self.map_batch(&mut out[start..])?;
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

    fn encrypted(s: Storage) -> Storage {
        let yaml = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n\
                    resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n\
                    \x20     - name: key1\n        secret: MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=\n";
        s.with_encryption(Encryption::parse(yaml.as_bytes()).expect("config"))
    }

    /// Every path that hands stored bytes out (get, the update read, list, watch events and
    /// their previous values) opens encrypted values, on backends with and without revisions
    /// in values, while the backend holds only ciphertext; other resources stay plaintext.
    #[test]
    fn every_read_path_decrypts_and_the_backend_holds_ciphertext() {
        for (backend, sealed) in [
            (
                Arc::new(MemStore::new(Limits::default())) as Arc<dyn Store>,
                true,
            ),
            (
                Arc::new(MemStore::new(Limits::default()).without_revision_before_seal()),
                false,
            ),
        ] {
            let s = encrypted(Storage::new(backend.clone()));
            assert_eq!(s.sealed, sealed);
            let key = b"/core/secrets/ns/a";
            let mut obj =
                json!({"kind": "Secret", "metadata": {"name": "a"}, "data": {"k": "djE="}});
            let sp = Spliced::new(&mut obj);
            let mut w = s.watch(b"/core/secrets/", Revision::ZERO).expect("watch");
            let (bytes, rev) = futures_executor::block_on(s.create(key, &sp)).expect("create");
            assert_eq!(
                rv_of(&bytes),
                rev.to_string(),
                "what create returns is plaintext"
            );
            let raw = backend.get(key, StoreReadAt::Latest).unwrap().unwrap();
            assert!(raw.value().starts_with(b"k8s:enc:aesgcm:v1:key1:"));
            assert!(!raw.value().windows(4).any(|w| w == b"djE="));
            assert_eq!(
                rv_of(s.get_latest(key).unwrap().unwrap().value()),
                rev.to_string()
            );
            let (cur, stale) = s.get_latest_for_update(key).unwrap().unwrap();
            assert!(!stale);
            assert_eq!(rv_of(cur.value()), rev.to_string());
            let l =
                futures_executor::block_on(s.list(b"/core/secrets/", None, 0, ReadPoint::Latest))
                    .unwrap();
            assert_eq!(rv_of(l.items[0].value()), rev.to_string());
            let (_, rev2) = futures_executor::block_on(s.update(key, rev, &sp)).unwrap();
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
            // A ConfigMap is not in the configuration: stored and served as plaintext.
            let mut cm = json!({"kind": "ConfigMap", "metadata": {"name": "c"}});
            let cm = Spliced::new(&mut cm);
            futures_executor::block_on(s.create(b"/core/configmaps/ns/c", &cm)).unwrap();
            let raw = backend
                .get(b"/core/configmaps/ns/c", StoreReadAt::Latest)
                .unwrap()
                .unwrap();
            assert!(raw.value().starts_with(b"{"));
            // The same store read without the key: a 500 on get, the watch ends.
            let plain = Storage::new(backend.clone()).with_encryption(
                Encryption::parse(
                    b"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n",
                )
                .unwrap(),
            );
            let e = plain.get_latest(key).unwrap_err();
            assert_eq!(e.code, 500);
            let mut w = plain.watch(b"/core/secrets/", Revision::ZERO).unwrap();
            let mut evs = Vec::new();
            let err = w
                .next_batch_timeout(&mut evs, Duration::from_secs(5))
                .unwrap_err();
            assert!(
                err.to_string()
                    .contains("identity transformer tried to read encrypted data"),
                "{err}"
            );
        }
    }
}
