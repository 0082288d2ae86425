//! Watch streams: synthetic ADDED events for the initial state, then every change from the
//! engine's watcher, filtered by namespace, name and selectors, with bookmarks and a timeout.
//!
//! Live events come from this core's shared feed of the prefix (`watch_feed`): each event is
//! pulled from the engine once per core, parsed at most once (for selections), encoded at most
//! once per representation and event type, and its bytes shared by every stream that sends
//! them. A stream whose start lies before what the feed still holds reads an engine watcher
//! of its own and filters and encodes alone.
//!
//! State machine of one stream: `Initial` (draining the listed state) -> `Live` (engine events)
//! -> `Ended` (timeout, client gone, or an ERROR event was sent: lagging or compacted history).

use crate::app::App;
use crate::call::Call;
use crate::objects;
use crate::registry::{Filter, Indexed};
use crate::respond::{self, Format};
use crate::store::ReadPoint;
use crate::watch_feed::Subscription;
use futures_core::Stream;
use keel_api::rv::{self, WatchStart};
use keel_api::status::ApiError;
use keel_engine::{Event, EventKind, KeyValue, Revision, Store, Watcher};
use keel_http::{Body, Chunk, Response};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// Bytes gathered into one chunk before it is handed to the connection.
pub const WATCH_CHUNK_BYTES: usize = 256 * 1024;
/// How often an idle stream with `allowWatchBookmarks` gets a BOOKMARK, unless configured.
pub const WATCH_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// How events are written.
pub(crate) struct Encoder {
    format: Format,
    api_version: String,
    kind: &'static str,
    info: &'static keel_catalog::ResourceInfo,
}

impl Encoder {
    pub(crate) fn new(
        format: Format,
        api_version: String,
        info: &'static keel_catalog::ResourceInfo,
    ) -> Encoder {
        Encoder {
            format,
            api_version,
            kind: info.kind,
            info,
        }
    }

    pub(crate) fn format(&self) -> Format {
        self.format
    }

    /// Appends the event of type `kind` for the stored object `bytes`.
    pub(crate) fn event(&self, out: &mut Vec<u8>, kind: &str, bytes: &[u8]) {
        match self.format {
            Format::Json => json_event_line(out, kind, bytes),
            Format::Protobuf => {
                if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
                    if let Ok(frame) = keel_proto::encode_watch_event(kind, &v) {
                        out.extend_from_slice(&frame);
                    }
                }
            }
            Format::Table => {
                if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
                    let t = keel_catalog::table(
                        self.info,
                        &[&v],
                        keel_catalog::IncludeObject::Metadata,
                        json!({"resourceVersion": objects::meta_str(&v, "resourceVersion").unwrap_or("")}),
                        std::time::SystemTime::now(),
                    );
                    out.extend_from_slice(b"{\"type\":\"");
                    out.extend_from_slice(kind.as_bytes());
                    out.extend_from_slice(b"\",\"object\":");
                    serde_json::to_writer(&mut *out, &t).expect("JSON");
                    out.extend_from_slice(b"}\n");
                }
            }
        }
    }

    fn value_event(&self, out: &mut Vec<u8>, kind: &str, v: &Value) {
        match self.format {
            Format::Protobuf => {
                if let Ok(frame) = keel_proto::encode_watch_event(kind, v) {
                    out.extend_from_slice(&frame);
                }
            }
            _ => {
                out.extend_from_slice(b"{\"type\":\"");
                out.extend_from_slice(kind.as_bytes());
                out.extend_from_slice(b"\",\"object\":");
                serde_json::to_writer(&mut *out, v).expect("JSON");
                out.extend_from_slice(b"}\n");
            }
        }
    }

    fn bookmark(&self, out: &mut Vec<u8>, rev: u64) {
        let v = json!({
            "kind": self.kind,
            "apiVersion": self.api_version,
            "metadata": {"resourceVersion": rev.to_string(), "creationTimestamp": null}
        });
        self.value_event(out, "BOOKMARK", &v);
    }

    fn error(&self, out: &mut Vec<u8>, e: &ApiError) {
        self.value_event(out, "ERROR", &e.to_value());
    }
}

/// What one watch sends: the objects it selects (selectors, a single name) and how.
pub(crate) struct Selection {
    filter: Filter,
    name: Option<String>,
    enc: Encoder,
}

impl Selection {
    pub(crate) fn new(filter: Filter, name: Option<String>, enc: Encoder) -> Selection {
        Selection { filter, name, enc }
    }

    /// Every object of the collection, as JSON: the feed's precomputed lines serve it.
    pub(crate) fn is_plain_json(&self) -> bool {
        self.enc.format == Format::Json && self.selects_all()
    }

    /// No selector and no single name.
    pub(crate) fn selects_all(&self) -> bool {
        self.filter.is_empty() && self.name.is_none()
    }

    pub(crate) fn encoder(&self) -> &Encoder {
        &self.enc
    }

    /// A field and the exact value every object it selects has (the name of a single-name
    /// watch, else the filter's `exact_requirement`): the feed's index of watches.
    pub(crate) fn index_key(&self) -> Option<(Indexed, String)> {
        match &self.name {
            Some(n) => Some((Indexed::Name, n.clone())),
            None => self.filter.exact_requirement(),
        }
    }

    /// Whether the (parsed) object is selected.
    pub(crate) fn matches(&self, v: &Value) -> bool {
        self.name.as_ref().is_none_or(|n| objects::name(v) == n) && self.filter.matches(v)
    }

    /// Whether the stored object is selected (parsing it only if something is to be checked).
    fn matches_bytes(&self, bytes: &[u8]) -> bool {
        if self.selects_all() {
            return true;
        }
        serde_json::from_slice::<Value>(bytes).is_ok_and(|v| self.matches(&v))
    }
}

/// Appends the JSON watch line `{"type":kind,"object":object}\n` for the stored `object`.
pub(crate) fn json_event_line(out: &mut Vec<u8>, kind: &str, object: &[u8]) {
    out.reserve(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
}

/// The type of a change as it happened, for a watch that selects everything (`None` for the
/// delete of an unknown previous value).
pub(crate) fn as_happened(ev: &Event) -> Option<&'static str> {
    event_type(ev.kind, ev.prev.is_some(), ev.kind == EventKind::Put)
}

/// The event a watch sends for a change, from whether the object was selected before
/// (`old_ok`) and after (`new_ok`): an object entering the selection is ADDED, one leaving it
/// (or deleted while selected) DELETED.
pub(crate) fn event_type(kind: EventKind, old_ok: bool, new_ok: bool) -> Option<&'static str> {
    match (kind, old_ok, new_ok) {
        (EventKind::Put, false, true) => Some("ADDED"),
        (EventKind::Put, true, true) => Some("MODIFIED"),
        (EventKind::Put, true, false) | (EventKind::Delete, true, _) => Some("DELETED"),
        _ => None,
    }
}

/// The stored bytes an event of type `kind` carries: the new object, or for DELETED the last
/// one with the deletion's revision.
pub(crate) fn event_object<'a>(ev: &'a Event, kind: &str) -> std::borrow::Cow<'a, [u8]> {
    match (kind, &ev.prev) {
        ("DELETED", Some(p)) => with_resource_version(p.value(), ev.revision().get()).into(),
        _ => ev.kv.value().into(),
    }
}

/// Rewrites the first `"resourceVersion":"..."` of stored bytes (the object's own, since
/// metadata is stored before any other field that could hold that key).
pub fn with_resource_version(bytes: &[u8], rev: u64) -> Vec<u8> {
    const NEEDLE: &[u8] = b"\"resourceVersion\":\"";
    let Some(at) = bytes.windows(NEEDLE.len()).position(|w| w == NEEDLE) else {
        return bytes.to_vec();
    };
    let start = at + NEEDLE.len();
    let Some(len) = bytes[start..].iter().position(|&b| b == b'"') else {
        return bytes.to_vec();
    };
    let mut out = Vec::with_capacity(bytes.len() + 4);
    out.extend_from_slice(&bytes[..start]);
    out.extend_from_slice(rev.to_string().as_bytes());
    out.extend_from_slice(&bytes[start + len..]);
    out
}

enum State {
    Initial(std::vec::IntoIter<KeyValue>),
    Live,
    Ended,
}

/// Where a live stream's events come from.
enum Source {
    /// Its own engine watcher; events are filtered and encoded by the stream.
    Own {
        watcher: Watcher,
        buf: Vec<Arc<Event>>,
    },
    /// This core's shared feed for the prefix: lines encoded once for all plain JSON watches.
    Feed(Subscription),
}

/// What one poll of the source gave.
enum Step {
    Chunk(Chunk),
    /// Events arrived, none of them for this stream.
    Nothing,
    Ended(keel_engine::WatchError),
    /// Nothing available; `Some(rev)`: every event up to `rev` has been sent.
    Pending(Option<u64>),
}

struct WatchStream {
    app: Arc<App>,
    source: Source,
    state: State,
    sel: Selection,
    deadline: Pin<Box<Sleep>>,
    bookmarks: Option<Pin<Box<Sleep>>>,
    last_sent: u64,
    _guard: crate::metrics::WatchGuard,
}

impl WatchStream {
    /// Appends the event's encoding for this stream alone, applying selector transitions.
    fn encode(&mut self, ev: &Event, out: &mut Vec<u8>) {
        self.last_sent = ev.revision().get();
        let new_ok = ev.kind == EventKind::Put && self.sel.matches_bytes(ev.kv.value());
        let old_ok = ev
            .prev
            .as_ref()
            .is_some_and(|p| self.sel.matches_bytes(p.value()));
        if let Some(kind) = event_type(ev.kind, old_ok, new_ok) {
            self.sel.enc.event(out, kind, &event_object(ev, kind));
        }
    }

    fn poll_initial(&mut self) -> Option<Vec<u8>> {
        let State::Initial(items) = &mut self.state else {
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
            self.state = State::Live;
            return None;
        }
        for kv in &batch {
            if self.sel.matches_bytes(kv.value()) {
                self.sel.enc.event(&mut out, "ADDED", kv.value());
            }
        }
        Some(out)
    }

    /// Polls the source for the next chunk of live events.
    fn poll_source(&mut self, cx: &mut Context<'_>) -> Step {
        match &mut self.source {
            Source::Feed(sub) => {
                let mut chunk = Chunk::new();
                match sub.poll_chunk(cx, &mut chunk, WATCH_CHUNK_BYTES, &self.sel) {
                    Poll::Ready(Ok(rev)) => {
                        self.last_sent = rev;
                        Step::Chunk(chunk)
                    }
                    Poll::Ready(Err(e)) => Step::Ended(e),
                    Poll::Pending => Step::Pending(sub.caught_up_to()),
                }
            }
            Source::Own { watcher, buf } => {
                let visible = self.app.storage.current();
                buf.clear();
                let mut events = std::mem::take(buf);
                let step = match watcher.poll_batch(cx, &mut events) {
                    Poll::Ready(Ok(())) => {
                        let mut out = Vec::new();
                        for ev in &events {
                            self.encode(ev, &mut out);
                        }
                        if out.is_empty() {
                            Step::Nothing
                        } else {
                            Step::Chunk(out.into())
                        }
                    }
                    Poll::Ready(Err(e)) => Step::Ended(e),
                    // Everything up to `visible` for this prefix has been delivered.
                    Poll::Pending => Step::Pending(Some(visible)),
                };
                events.clear();
                if let Source::Own { buf, .. } = &mut self.source {
                    *buf = events;
                }
                step
            }
        }
    }

    /// A bookmark if one is due; `caught_up`: every event up to it has been sent.
    fn poll_bookmark(&mut self, cx: &mut Context<'_>, caught_up: Option<u64>) -> Option<Chunk> {
        let b = self.bookmarks.as_mut()?;
        if b.as_mut().poll(cx).is_pending() {
            return None;
        }
        let deadline = tokio::time::Instant::now() + self.app.bookmark_interval;
        b.as_mut().reset(deadline);
        let _ = b.as_mut().poll(cx);
        self.last_sent = self.last_sent.max(caught_up.unwrap_or(0));
        let mut out = Vec::new();
        self.sel.enc.bookmark(&mut out, self.last_sent);
        Some(out.into())
    }
}

impl Stream for WatchStream {
    type Item = Chunk;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        let this = &mut *self;
        loop {
            if matches!(this.state, State::Ended) {
                return Poll::Ready(None);
            }
            if matches!(this.state, State::Initial(_)) {
                match this.poll_initial() {
                    Some(chunk) if !chunk.is_empty() => return Poll::Ready(Some(chunk.into())),
                    _ => continue,
                }
            }
            if this.deadline.as_mut().poll(cx).is_ready() {
                this.state = State::Ended;
                if this.bookmarks.is_some() {
                    let mut out = Vec::new();
                    this.sel.enc.bookmark(&mut out, this.last_sent);
                    return Poll::Ready(Some(out.into()));
                }
                return Poll::Ready(None);
            }
            match this.poll_source(cx) {
                Step::Chunk(chunk) => return Poll::Ready(Some(chunk)),
                Step::Nothing => {}
                Step::Ended(e) => {
                    this.state = State::Ended;
                    let err = ApiError::expired(format!("watch ended: {e}"));
                    let mut out = Vec::new();
                    this.sel.enc.error(&mut out, &err);
                    return Poll::Ready(Some(out.into()));
                }
                Step::Pending(caught_up) => {
                    return match this.poll_bookmark(cx, caught_up) {
                        Some(chunk) => Poll::Ready(Some(chunk)),
                        None => Poll::Pending,
                    };
                }
            }
        }
    }
}

/// Opens the stream's event source: the core's shared feed of the prefix (indexed by `index`,
/// the selection's exact requirement, if it has one), or an engine watcher of its own if the
/// feed no longer reaches back to `from`.
fn open_source(
    app: &Arc<App>,
    prefix: &[u8],
    from: u64,
    index: Option<(Indexed, String)>,
) -> Result<Source, keel_engine::Error> {
    if let Some(sub) = Subscription::join(app, prefix, from, index)? {
        return Ok(Source::Feed(sub));
    }
    let watcher = app.storage.engine.watch(prefix, Revision(from))?;
    Ok(Source::Own {
        watcher,
        buf: Vec::new(),
    })
}

/// Starts a watch; the response streams until the timeout or the client leaves.
pub async fn watch(app: Arc<App>, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let filter = Filter::from_call(c)?;
    let start = rv::plan_watch(c.query.nonempty("resourceVersion"))?;
    let timeout = match c.query.int("timeoutSeconds")? {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => {
            let min = app.min_request_timeout.max(1);
            Duration::from_secs(min + rand::random::<u64>() % min)
        }
    };
    let prefix = c.loc.list_prefix(&c.rr.namespace);
    let name = (!c.rr.name.is_empty()).then(|| c.rr.name.clone());
    let enc = Encoder::new(format, c.api_version(), c.info);
    let (initial, from) = match start {
        WatchStart::After(n) => {
            app.storage.wait_visible(n).await?;
            (Vec::new(), n)
        }
        WatchStart::StateAtAny | WatchStart::StateAtMostRecent => {
            let r = app
                .storage
                .list(&prefix, None, 0, ReadPoint::Latest)
                .await?;
            (r.items, r.revision.get())
        }
    };
    let content_type = match format {
        Format::Protobuf => keel_proto::STREAM_MEDIA_TYPE,
        _ => respond::JSON,
    };
    let sel = Selection::new(filter, name, enc);
    let source = match open_source(&app, &prefix, from, sel.index_key()) {
        Ok(s) => s,
        Err(keel_engine::Error::Compacted {
            requested,
            compacted,
        }) => {
            // Upstream answers 200 with one ERROR event carrying 410.
            let err = ApiError::expired(format!(
                "too old resource version: {requested} ({compacted})"
            ));
            let mut out = Vec::new();
            sel.enc.error(&mut out, &err);
            return Ok(stream_response(
                content_type,
                futures_util::stream::iter([Chunk::from(out)]),
            ));
        }
        Err(keel_engine::Error::TooManyWatchers { max }) => {
            let mut e = ApiError::too_many_requests(1);
            e.message = format!("too many watches open (limit {max})");
            return Err(e);
        }
        Err(e) => return Err(crate::store::read_error(e)),
    };
    let bookmarks = c
        .query
        .flag("allowWatchBookmarks")
        .then(|| Box::pin(tokio::time::sleep(app.bookmark_interval)));
    let s = WatchStream {
        _guard: app.metrics.watch_opened(c.info.group, c.info.plural),
        app: app.clone(),
        source,
        state: State::Initial(initial.into_iter()),
        sel,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        bookmarks,
        last_sent: from,
    };
    Ok(stream_response(content_type, s))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_objects_carry_the_deletion_revision() {
        let b = br#"{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"12","labels":{"resourceVersion":"x"}}}"#;
        let out = with_resource_version(b, 40);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "40");
        assert_eq!(v["metadata"]["labels"]["resourceVersion"], "x");
    }
}
