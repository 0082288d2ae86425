//! Watches as streams of decoded events. A watch body is one JSON event per line,
//! `{"type":"ADDED","object":{...}}`; lines are split as bytes arrive (an event may span many
//! reads, a read may hold many events) and each line is bounded (`WATCH_LINE_BYTES_MAX`), so a
//! server cannot make the client buffer without limit. `ERROR` events carry the server's
//! `Status` (a 410 means: list again).

use crate::error::{Error, Status};
use crate::limits;
use crate::resource::{ResourcePath, WatchParams};
use crate::transport::{BodyStream, KubeClient};
use serde_json::Value;
use std::collections::VecDeque;
use std::time::Duration;

/// Splits a byte stream into lines, each at most `max` bytes. Pure.
pub struct LineSplitter {
    buf: Vec<u8>,
    max: usize,
}

impl LineSplitter {
    pub fn new(max: usize) -> LineSplitter {
        LineSplitter {
            buf: Vec::new(),
            max,
        }
    }

    /// Appends `data` and calls `each` with every complete line (without `\n`; empty lines
    /// skipped), in order; an error if a line exceeds the bound or `each` fails. Lines that
    /// lie whole inside `data` are passed in place, without copying.
    pub fn each_line(
        &mut self,
        mut data: &[u8],
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        while let Some(nl) = memchr::memchr(b'\n', data) {
            let (line, rest) = (&data[..nl], &data[nl + 1..]);
            if self.buf.is_empty() {
                if !line.is_empty() {
                    each(line)?;
                }
            } else {
                self.buf.extend_from_slice(line);
                let whole = std::mem::take(&mut self.buf);
                self.check()?;
                each(&whole)?;
                self.buf = whole;
                self.buf.clear();
            }
            data = rest;
        }
        self.buf.extend_from_slice(data);
        self.check()
    }

    fn check(&self) -> Result<(), String> {
        if self.buf.len() > self.max {
            return Err(format!("watch event longer than {} bytes", self.max));
        }
        Ok(())
    }

    /// Appends `data`; returns the complete lines (without `\n`), or an error if a line
    /// exceeds the bound.
    pub fn push(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut lines = Vec::new();
        self.each_line(data, |l| {
            lines.push(l.to_vec());
            Ok(())
        })?;
        Ok(lines)
    }
}

/// One watch event.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Added(Value),
    Modified(Value),
    /// The object as it was last (with the deletion's resourceVersion).
    Deleted(Value),
    /// The server's progress: an object holding only `metadata.resourceVersion` (and, at the
    /// end of initial events, an annotation). Watching again from it skips nothing.
    Bookmark(Value),
    /// The watch failed; the server ends it after this event. Code 410: the version watched
    /// from is older than the server's history (list again).
    Error(Status),
}

impl WatchEvent {
    /// `metadata.resourceVersion` of the event's object (not for ERROR).
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            WatchEvent::Added(o)
            | WatchEvent::Modified(o)
            | WatchEvent::Deleted(o)
            | WatchEvent::Bookmark(o) => o.get("metadata")?.get("resourceVersion")?.as_str(),
            WatchEvent::Error(_) => None,
        }
    }
}

/// Decodes one event line.
pub fn decode_event(line: &[u8]) -> Result<WatchEvent, Error> {
    #[derive(serde::Deserialize)]
    struct Line {
        #[serde(rename = "type")]
        kind: String,
        object: Value,
    }
    let l: Line =
        serde_json::from_slice(line).map_err(|e| Error::Decode(format!("bad watch event: {e}")))?;
    Ok(match l.kind.as_str() {
        "ADDED" => WatchEvent::Added(l.object),
        "MODIFIED" => WatchEvent::Modified(l.object),
        "DELETED" => WatchEvent::Deleted(l.object),
        "BOOKMARK" => WatchEvent::Bookmark(l.object),
        "ERROR" => WatchEvent::Error(Status::from_value(&l.object).ok_or_else(|| {
            Error::Decode(format!("watch ERROR event without a Status: {}", l.object))
        })?),
        other => return Err(Error::Decode(format!("unknown watch event type {other:?}"))),
    })
}

/// Decodes a watch body fed in pieces as they arrive. Pure.
///
/// Events are decoded a read at a time: `push` is only called once the events of the previous
/// read were taken, so at most one read's events (a read is at most `READ_BUFFER_BYTES`, and
/// every event line at least a few bytes) wait here, plus the partial line carried to the
/// next read (at most `WATCH_LINE_BYTES_MAX`).
pub struct EventDecoder {
    lines: LineSplitter,
    ready: VecDeque<WatchEvent>,
}

impl Default for EventDecoder {
    fn default() -> Self {
        EventDecoder::new(limits::WATCH_LINE_BYTES_MAX)
    }
}

impl EventDecoder {
    /// A decoder refusing event lines longer than `line_bytes_max`.
    pub fn new(line_bytes_max: usize) -> EventDecoder {
        EventDecoder {
            lines: LineSplitter::new(line_bytes_max),
            ready: VecDeque::new(),
        }
    }

    /// Decodes the whole lines `data` completes. Call only when `next_event` has nothing left.
    pub fn push(&mut self, data: &[u8]) -> Result<(), Error> {
        assert!(
            self.ready.is_empty(),
            "push with {} events not taken",
            self.ready.len()
        );
        let mut failed = None;
        let ready = &mut self.ready;
        let split = self.lines.each_line(data, |line| match decode_event(line) {
            Ok(e) => {
                ready.push_back(e);
                Ok(())
            }
            Err(e) => {
                let msg = e.to_string();
                failed = Some(e);
                Err(msg)
            }
        });
        match (split, failed) {
            (Ok(()), _) => Ok(()),
            (Err(_), Some(e)) => Err(e),
            (Err(msg), None) => Err(Error::Decode(msg)),
        }
    }

    /// The next decoded event, if any.
    pub fn next_event(&mut self) -> Option<WatchEvent> {
        self.ready.pop_front()
    }
}

/// An open watch.
pub struct WatchStream {
    body: BodyStream,
    events: EventDecoder,
    /// Longest wait for the next bytes before the connection counts as dead.
    idle_max: Duration,
    /// A decoding failure, returned once the events before it were taken.
    failed: Option<Error>,
    ended: bool,
}

impl WatchStream {
    /// The next event; `None` once the server ended the watch (its `timeoutSeconds`, or it
    /// closed the stream). Events received before a failure are handed out first; after an
    /// error the stream is over (`None`). A
    /// connection silent for longer than the watch's timeout plus `WATCH_IDLE_GRACE` is an
    /// error. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<WatchEvent>, Error> {
        loop {
            if let Some(e) = self.events.next_event() {
                return Ok(Some(e));
            }
            if let Some(e) = self.failed.take() {
                self.ended = true;
                return Err(e);
            }
            if self.ended {
                return Ok(None);
            }
            let chunk = tokio::time::timeout(self.idle_max, self.body.next_chunk())
                .await
                .map_err(|_| Error::Transport(format!("watch silent for {:?}", self.idle_max)))?
                .map_err(Error::Transport)?;
            match chunk {
                Some(data) => {
                    if let Err(e) = self.events.push(data) {
                        self.failed = Some(e);
                    }
                }
                None => self.ended = true,
            }
        }
    }
}

impl KubeClient {
    /// Opens a watch of the collection of `at`. A refusal (400 for a bad selector, 410 for a
    /// version that is too old on some servers) is an error with the server's Status.
    pub async fn watch(
        &self,
        at: &ResourcePath,
        params: &WatchParams,
    ) -> Result<WatchStream, Error> {
        let path = at.collection().path()? + &params.query();
        let body = self
            .stream_or_refusal(&path)
            .await
            .map_err(Error::Transport)?
            .map_err(|r| Error::from_response(r.status, &r.body))?;
        // A watch without a timeout lasts as long as the server likes; 3,600 s is the
        // longest keel and kube-apiserver pick (twice `--min-request-timeout`).
        let timeout_s = params.timeout_seconds.unwrap_or(3600);
        Ok(WatchStream {
            body,
            events: EventDecoder::default(),
            idle_max: Duration::from_secs(u64::from(timeout_s)) + limits::WATCH_IDLE_GRACE,
            failed: None,
            ended: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{client, server, Act, CHUNKED_HEAD};
    use serde_json::json;

    fn chunk(data: &[u8]) -> Vec<u8> {
        [format!("{:x}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat()
    }

    #[tokio::test]
    async fn a_watch_streams_decoded_events_until_the_server_ends_it() {
        let s = server(|_| {
            let (a, b) = ADDED.split_at(40);
            Act::Reply(vec![
                [CHUNKED_HEAD, &chunk(a)].concat(),
                chunk(&[b, b"\n", BOOKMARK].concat()),
                chunk(b"\n"),
                b"0\r\n\r\n".to_vec(),
            ])
        })
        .await;
        let c = client(s.port);
        let params = WatchParams {
            resource_version: Some("4".into()),
            allow_bookmarks: true,
            timeout_seconds: Some(60),
            label_selector: Some("app=x".into()),
            field_selector: None,
        };
        let at = ResourcePath::new("", "v1", "configmaps")
            .in_namespace("n")
            .named("ignored");
        let mut w = c.watch(&at, &params).await.unwrap();
        let first = w.next().await.unwrap().unwrap();
        assert!(matches!(&first, WatchEvent::Added(o) if o["metadata"]["name"] == "a"));
        let second = w.next().await.unwrap().unwrap();
        assert_eq!(second.resource_version(), Some("9"));
        assert!(matches!(second, WatchEvent::Bookmark(_)));
        assert_eq!(w.next().await.unwrap(), None);
        assert_eq!(w.next().await.unwrap(), None);
        let req = s.requests.lock().unwrap()[0].clone();
        assert!(
            req.starts_with("GET /prefix/api/v1/namespaces/n/configmaps?watch=1&resourceVersion=4&allowWatchBookmarks=true&timeoutSeconds=60&labelSelector=app%3Dx HTTP/1.1"),
            "{req}"
        );
    }

    #[tokio::test]
    async fn a_refused_watch_carries_the_status() {
        let s = server(|_| {
            let body = r#"{"kind":"Status","reason":"Expired","message":"too old","code":410}"#;
            Act::Reply(vec![format!(
                "HTTP/1.1 410 Gone\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()])
        })
        .await;
        let c = client(s.port);
        let at = ResourcePath::new("", "v1", "pods");
        let err = c.watch(&at, &WatchParams::default()).await.err().unwrap();
        assert!(err.is_gone(), "{err:?}");
        assert_eq!(err.status().unwrap().message, "too old");
    }

    #[tokio::test]
    async fn events_before_a_bad_line_come_out_before_the_error() {
        let s = server(|_| {
            Act::Reply(vec![[
                CHUNKED_HEAD,
                &chunk(&[ADDED, b"\n{not json\n", BOOKMARK, b"\n"].concat()),
                b"0\r\n\r\n",
            ]
            .concat()])
        })
        .await;
        let c = client(s.port);
        let mut w = c
            .watch(
                &ResourcePath::new("", "v1", "pods"),
                &WatchParams::default(),
            )
            .await
            .unwrap();
        assert!(matches!(w.next().await, Ok(Some(WatchEvent::Added(_)))));
        assert!(matches!(w.next().await, Err(Error::Decode(_))));
        assert_eq!(
            w.next().await,
            Ok(None),
            "the stream is over after an error"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_watch_connection_is_an_error() {
        // The head, then nothing: the peer is gone without closing.
        let s = server(|_| Act::Reply(vec![CHUNKED_HEAD.to_vec()])).await;
        let c = client(s.port);
        let params = WatchParams {
            timeout_seconds: Some(1),
            ..Default::default()
        };
        let mut w = c
            .watch(&ResourcePath::new("", "v1", "pods"), &params)
            .await
            .unwrap();
        let started = tokio::time::Instant::now();
        let err = w.next().await.unwrap_err();
        assert!(
            matches!(&err, Error::Transport(m) if m.contains("silent")),
            "{err:?}"
        );
        assert!(started.elapsed() >= Duration::from_secs(1) + limits::WATCH_IDLE_GRACE);
    }

    #[test]
    fn lines_split_across_chunks() {
        let mut s = LineSplitter::new(10);
        assert_eq!(s.push(b"ab").unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(
            s.push(b"c\nde\n\nf").unwrap(),
            vec![b"abc".to_vec(), b"de".to_vec()]
        );
        assert_eq!(s.push(b"g\n").unwrap(), vec![b"fg".to_vec()]);
        assert!(s.push(b"0123456789ab").is_err());
    }

    const ADDED: &[u8] = br#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"data":{"k":"line\nbreak"}}}"#;
    const BOOKMARK: &[u8] =
        br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"9"}}}"#;
    const GONE: &[u8] = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 3 (7)","reason":"Expired","code":410}}"#;

    /// The events of `wire` fed to a decoder in pieces cut at `cuts`.
    fn decode_all(wire: &[u8], cuts: &[usize]) -> Result<Vec<WatchEvent>, Error> {
        let mut d = EventDecoder::new(1024);
        let mut out = Vec::new();
        let mut at = 0;
        for end in cuts.iter().copied().chain([wire.len()]) {
            d.push(&wire[at..end])?;
            while let Some(e) = d.next_event() {
                out.push(e);
            }
            at = end;
        }
        Ok(out)
    }

    #[test]
    fn events_decode_from_raw_bytes_split_anywhere() {
        let wire = [ADDED, b"\n", BOOKMARK, b"\n\n", GONE, b"\n"].concat();
        let want = vec![
            WatchEvent::Added(serde_json::from_slice::<Value>(ADDED).unwrap()["object"].clone()),
            WatchEvent::Bookmark(json!({"kind":"ConfigMap","metadata":{"resourceVersion":"9"}})),
            WatchEvent::Error(Status {
                code: 410,
                reason: "Expired".into(),
                message: "too old resource version: 3 (7)".into(),
                details: None,
            }),
        ];
        assert_eq!(decode_all(&wire, &[]).unwrap(), want);
        for cut in 1..wire.len() {
            assert_eq!(decode_all(&wire, &[cut]).unwrap(), want, "cut at {cut}");
        }
        let every_byte: Vec<usize> = (1..wire.len()).collect();
        assert_eq!(decode_all(&wire, &every_byte).unwrap(), want);
        assert_eq!(want[0].resource_version(), Some("5"));
        assert_eq!(want[1].resource_version(), Some("9"));
        assert_eq!(want[2].resource_version(), None);
    }

    #[test]
    fn oversized_and_malformed_events_are_refused() {
        // A line over the bound is refused before its end arrives.
        let long = format!(
            r#"{{"type":"ADDED","object":{{"data":"{}"}}}}"#,
            "x".repeat(2000)
        );
        let err = decode_all(long.as_bytes(), &[600, 1200]).unwrap_err();
        assert!(
            matches!(&err, Error::Decode(m) if m.contains("longer than 1024")),
            "{err:?}"
        );
        let cases: &[&[u8]] = &[
            b"{\n",
            br#"{"type":"ADDED"}"#,
            br#"{"type":"RENAMED","object":{}}"#,
            br#"{"type":"ERROR","object":{"kind":"ConfigMap"}}"#,
        ];
        for line in cases {
            let wire = [*line, b"\n"].concat();
            let err = decode_all(&wire, &[]).unwrap_err();
            assert!(matches!(err, Error::Decode(_)), "{line:?}: {err:?}");
        }
        // Events before a bad line are handed out by the caller's loop before the error.
        let mut d = EventDecoder::new(1024);
        let wire = [ADDED, b"\n{bad\n"].concat();
        assert!(d.push(&wire).is_err());
        assert!(matches!(d.next_event(), Some(WatchEvent::Added(_))));
    }
}
