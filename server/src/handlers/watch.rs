//! Watch streams over HTTP: synthetic ADDED events for the initial state, then every change
//! the registry's watch source gives (this core's shared feed, or a store watcher of the
//! stream's own), with bookmarks and a timeout, as a chunked response.
//!
//! State machine of one stream: `Initial` (draining the listed state) -> `Live` (store
//! events) -> `Ended` (timeout, client gone, or an ERROR event was sent: lagging or compacted
//! history).
//!
//! A resource whose objects a conversion webhook converts is watched as stored (JSON lines)
//! and each event converted after selection, then encoded as asked (`webhook_converted`): a
//! feed's encodings are made without waiting, a webhook's answer is waited for.

use super::call::Call;
use super::resource::filter;
use crate::limits::WATCH_CHUNK_BYTES;
use crate::metrics::WatchGuard;
use crate::registry::{Source, Step};
use crate::repr::{self, Encoder, Format};
use crate::selection::Selection;
use crate::state::State;
use futures_core::Stream;
use keel_api::rv;
use keel_api::status::ApiError;
use keel_engine::{KeyValue, Revision};
use keel_http::{Body, Chunk, Response};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

enum Phase {
    Initial(std::vec::IntoIter<KeyValue>),
    Live,
    Ended,
}

struct WatchStream {
    source: Source,
    phase: Phase,
    sel: Selection,
    deadline: Pin<Box<Sleep>>,
    bookmarks: Option<Pin<Box<Sleep>>>,
    bookmark_interval: Duration,
    last_sent: Revision,
    /// A streaming list: once the initial events are out, a bookmark at this revision (the
    /// state's) annotated `k8s.io/initial-events-end`.
    initial_end: Option<Revision>,
    /// A custom resource's watch: completes when its definition is retired, which ends the
    /// watch at once (upstream ends it within about a second).
    retirement: Option<Pin<Box<tokio::sync::futures::OwnedNotified>>>,
    _guard: WatchGuard,
}

impl WatchStream {
    fn poll_initial(&mut self) -> Option<Vec<u8>> {
        let Phase::Initial(items) = &mut self.phase else {
            return None;
        };
        let mut out = Vec::new();
        let mut batch = Vec::new();
        for kv in items.by_ref() {
            batch.push(kv);
            if batch.iter().map(|k| k.value().len()).sum::<usize>() >= WATCH_CHUNK_BYTES {
                break;
            }
        }
        if batch.is_empty() {
            self.phase = Phase::Live;
            if let Some(rev) = self.initial_end.take() {
                self.last_sent = self.last_sent.max(rev);
                self.sel.encoder().initial_events_end(&mut out, rev);
                return Some(out);
            }
            return None;
        }
        for kv in &batch {
            if self.sel.matches_bytes(kv.value()) {
                self.sel
                    .encoder()
                    .event_at(&mut out, "ADDED", kv.value(), kv.mod_revision);
            }
        }
        Some(out)
    }

    /// A bookmark if one is due; `caught_up`: every event up to it has been sent.
    fn poll_bookmark(
        &mut self,
        cx: &mut Context<'_>,
        caught_up: Option<Revision>,
    ) -> Option<Chunk> {
        let b = self.bookmarks.as_mut()?;
        if b.as_mut().poll(cx).is_pending() {
            return None;
        }
        let deadline = tokio::time::Instant::now() + self.bookmark_interval;
        b.as_mut().reset(deadline);
        let _ = b.as_mut().poll(cx);
        self.last_sent = self.last_sent.max(caught_up.unwrap_or(Revision::ZERO));
        let mut out = Vec::new();
        self.sel.encoder().bookmark(&mut out, self.last_sent);
        Some(out.into())
    }
}

impl Stream for WatchStream {
    type Item = Chunk;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        let this = &mut *self;
        loop {
            if matches!(this.phase, Phase::Ended) {
                return Poll::Ready(None);
            }
            if matches!(this.phase, Phase::Initial(_)) {
                match this.poll_initial() {
                    Some(chunk) if !chunk.is_empty() => return Poll::Ready(Some(chunk.into())),
                    _ => continue,
                }
            }
            if this.deadline.as_mut().poll(cx).is_ready() {
                this.phase = Phase::Ended;
                if this.bookmarks.is_some() {
                    let mut out = Vec::new();
                    this.sel.encoder().bookmark(&mut out, this.last_sent);
                    return Poll::Ready(Some(out.into()));
                }
                return Poll::Ready(None);
            }
            if this.sel.encoder().retired() {
                // Its definition changed: the client watches again through the new one.
                this.phase = Phase::Ended;
                return Poll::Ready(None);
            }
            match this.source.poll(cx, &this.sel, WATCH_CHUNK_BYTES) {
                Step::Chunk(chunk, rev) => {
                    this.last_sent = rev;
                    return Poll::Ready(Some(chunk));
                }
                Step::Nothing(rev) => this.last_sent = rev,
                Step::Ended(e) => {
                    this.phase = Phase::Ended;
                    let err = ApiError::expired(format!("watch ended: {e}"));
                    let mut out = Vec::new();
                    this.sel.encoder().error(&mut out, &err);
                    return Poll::Ready(Some(out.into()));
                }
                Step::Pending(caught_up) => {
                    if let Some(r) = this.retirement.as_mut() {
                        if r.as_mut().poll(cx).is_ready() {
                            this.retirement = None;
                            continue; // retired: ends above
                        }
                    }
                    return match this.poll_bookmark(cx, caught_up) {
                        Some(chunk) => Poll::Ready(Some(chunk)),
                        None => Poll::Pending,
                    };
                }
            }
        }
    }
}

/// Starts a watch; the response streams until the timeout or the client leaves.
pub async fn watch(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    let format = c.format()?;
    if format == Format::Yaml {
        // As upstream: YAML has no stream framing.
        return Err(ApiError::not_acceptable(&[
            repr::JSON_STREAM,
            keel_proto::STREAM_MEDIA_TYPE,
        ]));
    }
    let filter = filter(c)?;
    // Present (even empty) counts as given, as upstream's pointer.
    let send_initial_events = c.query.get("sendInitialEvents");
    rv::validate_watch_match(&rv::WatchRequest {
        resource_version_match: c.query.nonempty("resourceVersionMatch"),
        continue_token: c.query.nonempty("continue"),
        send_initial_events,
    })?;
    let send_initial_events = send_initial_events.map(super::call::query_bool);
    let resource_version = c.query.nonempty("resourceVersion");
    let start = rv::plan_watch(resource_version, send_initial_events)?;
    // The initial events end with a bookmark that says so, for a client that takes
    // bookmarks: on a streaming list, and (as upstream since 1.36 defaults
    // `sendInitialEvents` for it) on a watch that sends the state because its
    // resourceVersion is unset or 0.
    let allow_bookmarks = c.query.flag("allowWatchBookmarks");
    let sends_state = match send_initial_events {
        Some(s) => s,
        None => matches!(resource_version, None | Some("0")),
    };
    let end_bookmark = allow_bookmarks && sends_state;
    // As upstream: a positive timeout is taken as given, a negative one has already passed
    // (the watch ends once its initial events are out), 0 or none picks one at random
    // between the minimum request timeout and twice it.
    let timeout = match c.query.int("timeoutSeconds")? {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        Some(s) if s < 0 => Duration::ZERO,
        _ => {
            let min = st.min_request_timeout.max(1);
            Duration::from_secs(min + rand::random::<u64>() % min)
        }
    };
    let name = (!c.name().is_empty()).then(|| c.name().to_string());
    // A webhook's conversion: objects are selected as stored, then converted and encoded.
    let webhook = c.res.versions.clone().filter(|v| !v.converts_at_once());
    let (enc, webhook) = match webhook {
        Some(v) => (
            Encoder::new(Format::Json, c.res.info.clone()),
            Some((v, Encoder::of(format, c.res))),
        ),
        None => (Encoder::of(format, c.res), None),
    };
    let sel = Selection::new(filter, name, enc);
    let content_type = match format {
        Format::Protobuf | Format::Metadata(repr::MetadataAs { protobuf: true, .. }) => {
            keel_proto::STREAM_MEDIA_TYPE
        }
        _ => repr::JSON,
    };
    let watch = match st.registry.watch(c.res, c.namespace(), start, &sel).await {
        Ok(w) => w,
        // Upstream answers a start older than the history with 200 and one ERROR event.
        Err(e) if e.code == 410 => {
            let mut out = Vec::new();
            sel.encoder().error(&mut out, &e);
            return Ok(stream_response(
                content_type,
                futures_util::stream::iter([Chunk::from(out)]),
            ));
        }
        Err(e) => return Err(e),
    };
    let bookmarks = allow_bookmarks.then(|| Box::pin(tokio::time::sleep(st.bookmark_interval)));
    // Made before the stream first checks `retired`.
    let retirement = sel.encoder().retirement().map(Box::pin);
    let s = WatchStream {
        retirement,
        _guard: st.metrics.watch_opened(c.info().group, c.info().plural),
        source: watch.source,
        phase: Phase::Initial(watch.initial.into_iter()),
        initial_end: end_bookmark.then_some(watch.from),
        sel,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        bookmarks,
        bookmark_interval: st.bookmark_interval,
        last_sent: watch.from,
    };
    match webhook {
        Some((versions, enc)) => Ok(stream_response(
            content_type,
            webhook_converted(s, versions, enc),
        )),
        None => Ok(stream_response(content_type, s)),
    }
}

/// The events of `s` (JSON lines of objects as stored), each converted by the webhook and
/// encoded by `enc`. A conversion that fails ends the watch with its error, as upstream's.
fn webhook_converted(
    s: WatchStream,
    versions: std::sync::Arc<crate::versions::Versions>,
    enc: Encoder,
) -> impl Stream<Item = Chunk> + 'static {
    use futures_util::StreamExt;
    let enc = std::rc::Rc::new(enc);
    s.then(move |chunk| {
        let (versions, enc) = (versions.clone(), enc.clone());
        async move { convert_events(chunk, &versions, &enc).await }
    })
    .scan(false, |ended, (chunk, failed)| {
        let out = (!*ended).then_some(chunk);
        *ended |= failed;
        std::future::ready(out)
    })
}

/// One chunk of JSON watch lines converted and encoded; `true` if a conversion failed (its
/// ERROR event is the chunk's last).
async fn convert_events(
    chunk: Chunk,
    versions: &crate::versions::Versions,
    enc: &Encoder,
) -> (Chunk, bool) {
    use serde_json::Value;
    let mut lines = Vec::with_capacity(chunk.len());
    for p in chunk.pieces() {
        lines.extend_from_slice(p);
    }
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(Value::Object(mut ev)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let kind = ev
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut obj = ev.remove("object").unwrap_or_default();
        match kind.as_str() {
            "BOOKMARK" => enc.bookmark_with(&mut out, obj["metadata"].take()),
            "ERROR" => enc.value_event(&mut out, "ERROR", &obj),
            _ => match versions.to_request(&mut obj).await {
                Ok(()) => {
                    enc.decode(&mut obj);
                    enc.event(&mut out, &kind, &crate::objects::to_canonical_json(&obj))
                }
                Err(e) => {
                    enc.error(&mut out, &e);
                    return (out.into(), true);
                }
            },
        }
    }
    (out.into(), false)
}

fn stream_response(content_type: &str, s: impl Stream<Item = Chunk> + 'static) -> Response {
    Response {
        status: 200,
        headers: vec![
            ("Content-Type".into(), content_type.into()),
            ("Cache-Control".into(), "no-cache, private".into()),
        ],
        body: Body::Chunks(Box::pin(s)),
    }
}
