//! A list-then-watch cache (client-go's reflector and informer store): lists a collection in
//! pages, then watches it from the list's resourceVersion with bookmarks, keeping every
//! object by `namespace/name` and the last resourceVersion seen, and tells its consumer each
//! change through a bounded channel.
//!
//! Recovery, by how an attempt ended (`next_step`):
//! - the server ended the watch (`timeoutSeconds`, a close): watch again from the last
//!   resourceVersion, at once (after a backoff delay if it ended at once with nothing);
//! - 410 Gone (HTTP 410, or an `ERROR` event with code 410: the version is older than the
//!   server's history): list again and deliver the differences, objects deleted meanwhile as
//!   deletions;
//! - any other failure (connection refused or reset, timeouts, 5xx, 429): wait a bounded
//!   exponential backoff (`REFLECTOR_BACKOFF_*`), then resume from the last resourceVersion
//!   (a list that failed is started again); a watch body that cannot be decoded is followed
//!   by a list, which skips past the event the watch could not carry.
//!
//! The cache is updated before the change is sent; a consumer that falls behind stops the
//! reflector reading (the channel holds `REFLECTOR_CHANGES_QUEUED_MAX` changes). The reflector
//! stops when it is dropped or stopped, or when its receiver is dropped.

mod backoff;
mod store;

pub use backoff::Backoff;
pub use store::{object_key, Cache, Change, Object, Store};

use crate::error::Error;
use crate::limits;
use crate::resource::{ListParams, ResourcePath, WatchParams};
use crate::transport::KubeClient;
use crate::watch::WatchEvent;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What a reflector mirrors and how.
#[derive(Debug, Clone)]
pub struct ReflectorConfig {
    /// The collection (a namespace narrows it; name and subresource are ignored).
    pub resource: ResourcePath,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// Items per list page.
    pub page_size: u64,
    /// `timeoutSeconds` of each watch.
    pub watch_timeout_s: u32,
}

impl ReflectorConfig {
    /// Every object of `resource`, with the default page size and watch timeout.
    pub fn new(resource: ResourcePath) -> ReflectorConfig {
        ReflectorConfig {
            resource: resource.collection(),
            label_selector: None,
            field_selector: None,
            page_size: limits::REFLECTOR_PAGE_SIZE,
            watch_timeout_s: limits::REFLECTOR_WATCH_TIMEOUT_S,
        }
    }
}

/// What the reflector has done (for metrics, logs and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReflectorStats {
    /// Completed lists: the first, then one per re-list.
    pub lists: u64,
    /// Watches opened (the server answered 200).
    pub watches: u64,
    /// 410s met: the cache's version was older than the server's history.
    pub gone: u64,
    /// Attempts that failed and were retried after a backoff delay.
    pub retries: u64,
    /// The last failure.
    pub last_error: Option<String>,
}

/// The step after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// List every object (in pages) and make the cache hold exactly them.
    List,
    /// Watch from the cache's resourceVersion.
    Watch,
}

/// How a list or watch attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// The list completed and its differences were delivered.
    Listed,
    /// The server ended the watch; `healthy` when it delivered an event or lasted
    /// `REFLECTOR_WATCH_HEALTHY_AFTER`.
    WatchClosed { healthy: bool },
    /// 410 during a list (its continue token expired) or a watch.
    Gone { during: Step },
    /// Anything else.
    Failed { error: Error, during: Step },
}

/// What follows `ended`: the next step, and whether a backoff delay comes first. Pure.
pub fn next_step(ended: &Ended) -> (Step, bool) {
    match ended {
        Ended::Listed => (Step::Watch, false),
        Ended::WatchClosed { healthy } => (Step::Watch, !healthy),
        Ended::Gone {
            during: Step::Watch,
        } => (Step::List, false),
        // A list whose continue token expired starts again; paced, in case each page is too
        // slow for the server's history.
        Ended::Gone { during: Step::List } => (Step::List, true),
        Ended::Failed {
            error: Error::Decode(_),
            ..
        } => (Step::List, true),
        Ended::Failed { during, .. } => (*during, true),
    }
}

/// A running reflector. Dropping it stops it.
pub struct Reflector {
    task: JoinHandle<()>,
    store: Store,
    stats: Arc<Mutex<ReflectorStats>>,
}

impl Reflector {
    /// Starts mirroring on the current tokio runtime. Changes arrive on the receiver: the
    /// first list's objects as `Added`, then `Synced`, then every change as it is seen.
    pub fn start(
        client: KubeClient,
        config: ReflectorConfig,
    ) -> (Reflector, mpsc::Receiver<Change>) {
        let (tx, rx) = mpsc::channel(limits::REFLECTOR_CHANGES_QUEUED_MAX);
        let store = Store::default();
        let stats = Arc::new(Mutex::new(ReflectorStats::default()));
        let task = Task {
            client,
            config,
            store: store.clone(),
            tx,
            stats: stats.clone(),
        };
        let task = tokio::spawn(task.run());
        (Reflector { task, store, stats }, rx)
    }

    /// The cache, for reads.
    pub fn store(&self) -> Store {
        self.store.clone()
    }

    pub fn stats(&self) -> ReflectorStats {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stops the reflector and waits until it has (its connection closed).
    pub async fn stop(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for Reflector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The consumer dropped its receiver.
struct Stopped;

struct Task {
    client: KubeClient,
    config: ReflectorConfig,
    store: Store,
    tx: mpsc::Sender<Change>,
    stats: Arc<Mutex<ReflectorStats>>,
}

impl Task {
    async fn run(self) {
        let mut backoff = Backoff::new(
            limits::REFLECTOR_BACKOFF_INITIAL,
            limits::REFLECTOR_BACKOFF_MAX,
        );
        let mut step = Step::List;
        loop {
            let attempt = match step {
                Step::List => self.list().await,
                Step::Watch => self.watch().await,
            };
            let Ok((ended, healthy)) = attempt else {
                return;
            };
            if healthy {
                backoff.reset();
            }
            let (next, wait) = next_step(&ended);
            self.note(&ended, wait);
            if wait {
                tokio::time::sleep(backoff.next_delay()).await;
            }
            step = next;
        }
    }

    fn note(&self, ended: &Ended, retried: bool) {
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        match ended {
            Ended::Gone { .. } => s.gone += 1,
            Ended::Failed { error, .. } => s.last_error = Some(error.to_string()),
            _ => {}
        }
        if retried {
            s.retries += 1;
        }
    }

    async fn send(&self, change: Change) -> Result<(), Stopped> {
        self.tx.send(change).await.map_err(|_| Stopped)
    }

    /// Lists in pages and makes the cache hold the result; returns how it ended and whether
    /// it counts as a success (for the backoff).
    async fn list(&self) -> Result<(Ended, bool), Stopped> {
        let params = ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            ..Default::default()
        };
        let page_size = self.config.page_size;
        let list = match self
            .client
            .list_all(&self.config.resource, &params, page_size)
            .await
        {
            Ok(l) => l,
            Err(e) if e.is_gone() => return Ok((Ended::Gone { during: Step::List }, false)),
            Err(error) => {
                let during = Step::List;
                return Ok((Ended::Failed { error, during }, false));
            }
        };
        let changes = self
            .store
            .update(|c| c.replace(list.items, list.resource_version));
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).lists += 1;
        for change in changes {
            self.send(change).await?;
        }
        self.send(Change::Synced).await?;
        Ok((Ended::Listed, true))
    }

    /// Watches from the cache's version until the watch ends; returns how it ended and
    /// whether it was healthy.
    async fn watch(&self) -> Result<(Ended, bool), Stopped> {
        let params = WatchParams {
            resource_version: Some(self.store.resource_version()),
            allow_bookmarks: true,
            timeout_seconds: Some(self.config.watch_timeout_s),
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
        };
        let during = Step::Watch;
        let started = Instant::now();
        let mut stream = match self.client.watch(&self.config.resource, &params).await {
            Ok(s) => s,
            Err(e) if e.is_gone() => return Ok((Ended::Gone { during }, false)),
            Err(error) => return Ok((Ended::Failed { error, during }, false)),
        };
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).watches += 1;
        let mut events = 0u64;
        loop {
            let next = stream.next().await;
            let healthy = events > 0 || started.elapsed() >= limits::REFLECTOR_WATCH_HEALTHY_AFTER;
            let event = match next {
                Ok(Some(WatchEvent::Error(status))) => {
                    let error = Error::Api(Box::new(status));
                    let ended = if error.is_gone() {
                        Ended::Gone { during }
                    } else {
                        Ended::Failed { error, during }
                    };
                    return Ok((ended, healthy));
                }
                Ok(Some(event)) => event,
                Ok(None) => return Ok((Ended::WatchClosed { healthy }, healthy)),
                Err(error) => return Ok((Ended::Failed { error, during }, healthy)),
            };
            events += 1;
            if let Some(change) = self.store.update(|c| c.apply(event)) {
                self.send(change).await?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn each_ending_has_its_resume_point() {
        let gone = Error::Api(Box::new(Status {
            code: 410,
            ..Default::default()
        }));
        let cases = [
            (Ended::Listed, (Step::Watch, false)),
            (Ended::WatchClosed { healthy: true }, (Step::Watch, false)),
            (Ended::WatchClosed { healthy: false }, (Step::Watch, true)),
            (
                Ended::Gone {
                    during: Step::Watch,
                },
                (Step::List, false),
            ),
            (Ended::Gone { during: Step::List }, (Step::List, true)),
            (
                Ended::Failed {
                    error: Error::Transport("connection refused".into()),
                    during: Step::Watch,
                },
                (Step::Watch, true),
            ),
            (
                Ended::Failed {
                    error: Error::Http {
                        code: 503,
                        body: String::new(),
                    },
                    during: Step::List,
                },
                (Step::List, true),
            ),
            (
                Ended::Failed {
                    error: Error::Decode("watch event longer than 16777216 bytes".into()),
                    during: Step::Watch,
                },
                (Step::List, true),
            ),
            // A 410 reaches next_step as Gone; were it a failure, it would still be retried.
            (
                Ended::Failed {
                    error: gone,
                    during: Step::Watch,
                },
                (Step::Watch, true),
            ),
        ];
        for (ended, want) in cases {
            assert_eq!(next_step(&ended), want, "{ended:?}");
        }
    }
}
