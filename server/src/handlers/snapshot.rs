//! `GET /keel/v1/snapshot`: an online backup (`keel-admin snapshot save`, as `etcdctl snapshot
//! save` is for etcd). The response is a snapshot file (`keel_engine::snapshot`,
//! `engine/SNAPSHOT.md`): every key of the store at the revision R current when the request
//! began, streamed as chunks while writes go on.
//!
//! Consistent at R: every page is read at exactly R (`ReadPoint::Exact`), which the store
//! serves from its history, so writes after R are not in it and writes at or below R all are.
//! Bounded memory: one page of key-value handles (views, not copies) and one chunk of
//! `SNAPSHOT_CHUNK_BYTES` are held at a time; the next page is read only once the connection
//! took the last chunk (a slow reader slows the snapshot, never grows it).
//!
//! Failure half-way (R compacted away because the snapshot outlived the store's history
//! window, or a read error): the status line is long sent, so the stream ends with an abort
//! frame naming the reason, which `keel-admin` reports; a snapshot without its end is refused
//! by every reader anyway.
//!
//! Authorization: a non-resource `get` of this path through the server's authorizer (with
//! the default `AlwaysAllow` everyone authenticated; with RBAC, whoever is granted the path,
//! which `system:masters` always is).

use super::discovery::authorize_path;
use crate::auth::User;
use crate::limits::{SNAPSHOT_CHUNK_BYTES, SNAPSHOT_PAGE_KEYS};
use crate::state::State;
use crate::storage::{ReadPoint, Storage};
use keel_api::status::ApiError;
use keel_engine::snapshot::{SnapshotEncoder, SnapshotHeader};
use keel_engine::{KeyValue, Revision};
use keel_http::{Request, Response};
use std::collections::VecDeque;

pub const SNAPSHOT_PATH: &str = "/keel/v1/snapshot";

/// The response header carrying R, so a client knows it before the body.
pub const REVISION_HEADER: &str = "X-Keel-Snapshot-Revision";

pub fn is_snapshot_path(path: &str) -> bool {
    path.trim_end_matches('/') == SNAPSHOT_PATH
}

/// Serves `GET /keel/v1/snapshot`.
pub fn serve(st: &State, req: &Request, user: &User) -> Result<Response, ApiError> {
    authorize_path(st, user, SNAPSHOT_PATH)?;
    if req.method.as_str() != "GET" {
        return Err(ApiError::method_not_allowed());
    }
    let storage = st.registry.storage().clone();
    let header = SnapshotHeader {
        revision: storage.current(),
        compacted: storage.stats().map_or(Revision::ZERO, |s| s.compacted),
        created_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    };
    let mut first = Vec::new();
    let enc = SnapshotEncoder::new(&header, &mut first);
    let state = Snap {
        storage,
        revision: header.revision,
        enc: Some(enc),
        pending: VecDeque::new(),
        after: None,
        more: true,
        first: Some(first),
    };
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        let chunk = s.next_chunk().await?;
        Some((chunk, s))
    });
    let mut resp = Response::stream(200, "application/octet-stream", Box::pin(stream));
    resp.headers
        .push((REVISION_HEADER.to_string(), header.revision.0.to_string()));
    Ok(resp)
}

/// One snapshot being streamed: `Reading` pages until the last one, then the end; after an
/// error, the abort frame and nothing more (`enc` is `None` once finished or aborted).
struct Snap {
    storage: Storage,
    revision: Revision,
    enc: Option<SnapshotEncoder>,
    /// The current page's items not yet encoded.
    pending: VecDeque<KeyValue>,
    /// The last key read: the next page starts after it.
    after: Option<Vec<u8>>,
    /// Whether keys remain after the pages read so far.
    more: bool,
    /// The header, sent as the first chunk.
    first: Option<Vec<u8>>,
}

impl Snap {
    /// The next chunk: at least `SNAPSHOT_CHUNK_BYTES` unless it is the last; `None` after
    /// the end (or the abort frame) was sent.
    async fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if let Some(h) = self.first.take() {
            return Some(h);
        }
        let enc = self.enc.as_mut()?;
        let mut out = Vec::with_capacity(SNAPSHOT_CHUNK_BYTES);
        while out.len() < SNAPSHOT_CHUNK_BYTES {
            if let Some(kv) = self.pending.pop_front() {
                enc.record(&mut out, kv.key(), kv.value(), kv.mod_revision);
                continue;
            }
            if !self.more {
                self.enc.take().expect("present").finish(&mut out);
                return Some(out);
            }
            let page = self
                .storage
                .list(
                    b"",
                    self.after.as_deref(),
                    SNAPSHOT_PAGE_KEYS,
                    ReadPoint::Exact(self.revision),
                )
                .await;
            match page {
                Ok(p) => {
                    self.more = p.more;
                    self.after = p.items.last().map(|kv| kv.key().to_vec());
                    self.more &= self.after.is_some();
                    self.pending.extend(p.items);
                }
                Err(e) => {
                    let why = if e.code == 410 {
                        format!(
                            "revision {} was compacted while the snapshot was read (it took \
                             longer than the history the store keeps, --watch-history); take \
                             it again ({})",
                            self.revision, e.message
                        )
                    } else {
                        format!(
                            "reading revision {} failed (HTTP {} {}): {}",
                            self.revision, e.code, e.reason, e.message
                        )
                    };
                    eprintln!("apiserver: snapshot aborted: {why}");
                    self.enc.take().expect("present").abort(&mut out, &why);
                    return Some(out);
                }
            }
        }
        Some(out)
    }
}
