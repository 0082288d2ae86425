//! The server's view of storage: keys for objects, reads at a resourceVersion, writes that
//! splice the revision into the stored bytes, and engine errors as API errors.

use crate::objects::Spliced;
use keel_api::status::ApiError;
use keel_catalog::ResourceInfo;
use keel_engine::{
    Engine, Error as EngineError, KeyValue, ListResult, Precondition, Revision, Store,
};
use keel_engine::{ListRequest, ReadAt as EngineReadAt, WriteOp};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a read for a resourceVersion newer than the store's waits before answering 504.
pub const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);

/// What a handler asks the store for: the resolved read point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPoint {
    Latest,
    Exact(u64),
    NotOlderThan(u64),
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

/// Names the storage location of one resource type.
#[derive(Clone, Debug)]
pub struct Location {
    /// `/<group>/<plural>/`, shared by every version of the resource.
    pub prefix: String,
    pub namespaced: bool,
}

impl Location {
    pub fn of(catalog: &keel_catalog::Catalog, info: &ResourceInfo) -> Location {
        Location {
            prefix: catalog.storage_prefix(info),
            namespaced: info.namespaced,
        }
    }

    pub fn key(&self, namespace: &str, name: &str) -> Vec<u8> {
        let mut k = String::with_capacity(self.prefix.len() + namespace.len() + name.len() + 1);
        k.push_str(&self.prefix);
        if self.namespaced {
            k.push_str(namespace);
            k.push('/');
        }
        k.push_str(name);
        k.into_bytes()
    }

    /// The list prefix: one namespace, or all of them when `namespace` is empty.
    pub fn list_prefix(&self, namespace: &str) -> Vec<u8> {
        let mut k = self.prefix.clone();
        if self.namespaced && !namespace.is_empty() {
            k.push_str(namespace);
            k.push('/');
        }
        k.into_bytes()
    }
}

/// The storage handle the handlers use.
#[derive(Clone)]
pub struct Storage {
    pub engine: Arc<Engine>,
}

impl Storage {
    pub fn current(&self) -> u64 {
        self.engine.current_revision().get()
    }

    /// Waits (asynchronously) until `rev` is visible, or answers `Too large resource version`.
    pub async fn wait_visible(&self, rev: u64) -> Result<(), ApiError> {
        let deadline = Instant::now() + FUTURE_RV_WAIT;
        while self.current() < rev {
            if Instant::now() >= deadline {
                return Err(ApiError::too_large_resource_version(rev, self.current()));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    async fn engine_at(&self, at: ReadPoint) -> Result<EngineReadAt, ApiError> {
        Ok(match at {
            ReadPoint::Latest => EngineReadAt::Latest,
            ReadPoint::Exact(n) => {
                self.wait_visible(n).await?;
                EngineReadAt::Exact(Revision(n))
            }
            ReadPoint::NotOlderThan(n) => {
                self.wait_visible(n).await?;
                EngineReadAt::Latest
            }
        })
    }

    pub async fn get(&self, key: &[u8], at: ReadPoint) -> Result<Option<KeyValue>, ApiError> {
        let at = self.engine_at(at).await?;
        self.engine.get(key, at).map_err(read_error)
    }

    pub fn get_latest(&self, key: &[u8]) -> Result<Option<KeyValue>, ApiError> {
        self.engine
            .get(key, EngineReadAt::Latest)
            .map_err(read_error)
    }

    pub async fn list(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        limit: usize,
        at: ReadPoint,
    ) -> Result<ListResult, ApiError> {
        let at = self.engine_at(at).await?;
        self.engine
            .list(&ListRequest {
                prefix,
                start_after,
                limit,
                at,
            })
            .map_err(read_error)
    }

    /// Creates `key` from `obj`, returning the stored bytes and revision.
    pub async fn create(&self, key: &[u8], obj: &Spliced) -> Result<(Vec<u8>, u64), EngineError> {
        let w = self
            .engine
            .write(key, WriteOp::Create, |ctx, out| {
                obj.write(ctx.revision.get(), out);
                Ok(())
            })
            .await?;
        let rev = w.revision.get();
        let mut out = Vec::with_capacity(obj.len() + 20);
        obj.write(rev, &mut out);
        Ok((out, rev))
    }

    /// Replaces `key` if its mod revision is still `expected`.
    pub async fn update(
        &self,
        key: &[u8],
        expected: u64,
        obj: &Spliced,
    ) -> Result<(Vec<u8>, u64), EngineError> {
        let pre = Precondition::ModRevision(Revision(expected));
        let w = self
            .engine
            .write(key, WriteOp::Update(pre), |ctx, out| {
                obj.write(ctx.revision.get(), out);
                Ok(())
            })
            .await?;
        let rev = w.revision.get();
        let mut out = Vec::with_capacity(obj.len() + 20);
        obj.write(rev, &mut out);
        Ok((out, rev))
    }

    /// Deletes `key` if its mod revision is still `expected`; returns the deletion revision.
    pub async fn delete(&self, key: &[u8], expected: u64) -> Result<u64, EngineError> {
        let pre = Precondition::ModRevision(Revision(expected));
        let w = self
            .engine
            .write(key, WriteOp::Delete(pre), |_, _| Ok(()))
            .await?;
        Ok(w.revision.get())
    }
}

/// Engine errors on reads.
pub fn read_error(e: EngineError) -> ApiError {
    match e {
        EngineError::Compacted {
            requested,
            compacted,
        } => ApiError::expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        EngineError::FutureRevision { requested, current } => {
            ApiError::too_large_resource_version(requested.get(), current.get())
        }
        other => storage_error(other),
    }
}

/// Engine errors not specific to one verb.
pub fn storage_error(e: EngineError) -> ApiError {
    match e {
        EngineError::KeyTooLarge { len, max } => {
            ApiError::bad_request(format!("object key of {len} bytes exceeds {max}"))
        }
        EngineError::ValueTooLarge { .. } => {
            ApiError::request_entity_too_large("etcdserver: request is too large")
        }
        EngineError::Busy => ApiError::too_many_requests(1),
        other => ApiError::internal(other.to_string()),
    }
}
