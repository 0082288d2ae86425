//! Watches: where a watch starts (the listed state for synthetic ADDED events, or a
//! revision) and where its events come from: this core's shared feed of the collection
//! (`watch_feed`), or a store watcher of its own when the feed no longer reaches back to the
//! start.

use super::Registry;
use crate::routes::Resource;
use crate::selection::Selection;
use crate::storage::{read_error, ReadPoint};
use crate::watch_feed::Subscription;
use keel_api::rv::WatchStart;
use keel_api::status::ApiError;
use keel_engine::{Event, EventStream, KeyValue, Revision, WatchError};
use keel_http::Chunk;
use std::sync::Arc;
use std::task::{Context, Poll};

/// An open watch: the state to send first (synthetic ADDED events), then every change after
/// `from` from `source`.
pub struct Watch {
    pub initial: Vec<KeyValue>,
    pub from: Revision,
    pub source: Source,
}

/// Where a watch's live events come from.
pub enum Source {
    /// This core's shared feed for the prefix: lines encoded once for every watch.
    Feed(Subscription),
    /// A store watcher of its own; events are filtered and encoded by the watch.
    Own {
        events: Box<dyn EventStream>,
        buf: Vec<Arc<Event>>,
        storage: crate::storage::Storage,
    },
}

/// What one poll of a source gave.
pub enum Step {
    /// Encoded events, every event up to the revision having been looked at.
    Chunk(Chunk, Revision),
    /// Events arrived up to the revision, none of them for this watch.
    Nothing(Revision),
    /// The watch is over (lagged, compacted, closed).
    Ended(WatchError),
    /// Nothing available; `Some(rev)`: every event up to `rev` has been sent.
    Pending(Option<Revision>),
}

impl Source {
    /// Polls for the next events `sel` selects, encoded (at most about `max_bytes`).
    pub fn poll(&mut self, cx: &mut Context<'_>, sel: &Selection, max_bytes: usize) -> Step {
        match self {
            Source::Feed(sub) => {
                let mut chunk = Chunk::new();
                match sub.poll_chunk(cx, &mut chunk, max_bytes, sel) {
                    Poll::Ready(Ok(rev)) => Step::Chunk(chunk, rev),
                    Poll::Ready(Err(e)) => Step::Ended(e),
                    Poll::Pending => Step::Pending(sub.caught_up_to()),
                }
            }
            Source::Own {
                events,
                buf,
                storage,
            } => {
                let visible = storage.current();
                buf.clear();
                match events.poll_batch(cx, buf) {
                    Poll::Ready(Ok(())) => {
                        let mut out = Vec::new();
                        let mut last = Revision::ZERO;
                        for ev in buf.iter() {
                            last = ev.revision();
                            sel.encode(ev, &mut out);
                        }
                        buf.clear();
                        if out.is_empty() {
                            Step::Nothing(last)
                        } else {
                            Step::Chunk(out.into(), last)
                        }
                    }
                    Poll::Ready(Err(e)) => Step::Ended(e),
                    // Everything up to `visible` for this prefix has been delivered.
                    Poll::Pending => Step::Pending(Some(visible)),
                }
            }
        }
    }
}

impl Registry {
    /// Opens a watch of `res` in `namespace` (all namespaces when empty) from `start`, for
    /// the selection `sel` (its single name and selectors index it in the feed). A start
    /// older than the store's history is 410 Expired (the handlers send it as an ERROR
    /// event); too many watches is 429.
    pub async fn watch(
        &self,
        res: &Resource,
        namespace: &str,
        start: WatchStart,
        sel: &Selection,
    ) -> Result<Watch, ApiError> {
        let prefix = res.loc.list_prefix(namespace);
        let (initial, from) = match start {
            WatchStart::After(n) => {
                self.storage.wait_visible(n).await?;
                (Vec::new(), n)
            }
            WatchStart::Now => (Vec::new(), self.storage.current()),
            WatchStart::StateAtAny | WatchStart::StateAtMostRecent => {
                let r = self
                    .storage
                    .list(&prefix, None, 0, ReadPoint::Latest)
                    .await?;
                (r.items, r.revision)
            }
            WatchStart::StateNotOlderThan(n) => {
                self.storage.wait_visible(n).await?;
                let r = self
                    .storage
                    .list(&prefix, None, 0, ReadPoint::Latest)
                    .await?;
                (r.items, r.revision)
            }
        };
        let source = self.open_source(&prefix, from, sel).map_err(|e| match e {
            keel_engine::Error::TooManyWatchers { max } => {
                ApiError::too_many_requests_with(format!("too many watches open (limit {max})"), 1)
            }
            other => read_error(other),
        })?;
        Ok(Watch {
            initial,
            from,
            source,
        })
    }

    /// The core's shared feed of the prefix, or a store watcher of the watch's own if the
    /// feed no longer reaches back to `from`.
    fn open_source(
        &self,
        prefix: &[u8],
        from: Revision,
        sel: &Selection,
    ) -> Result<Source, keel_engine::Error> {
        if let Some(sub) = Subscription::join(&self.storage, prefix, from, sel.index_key())? {
            return Ok(Source::Feed(sub));
        }
        Ok(Source::Own {
            events: self.storage.watch(prefix, from)?,
            buf: Vec::new(),
            storage: self.storage.clone(),
        })
    }
}
