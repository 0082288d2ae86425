//! `watch` against a Kubernetes API server: W watchers on one collection, starting at the
//! collection's current resourceVersion, while writers create ConfigMaps carrying their send
//! time.

use super::{current_rv, ensure_namespaces, response_rv};
use crate::driver::{self, Outcome, Plan};
use crate::jsonscan::EventScanner;
use crate::objects::{self, Naming, SENT_ANNOTATION};
use crate::report::Report;
use crate::watchrun::{self, Receipt, WatcherCtx, WatcherOut};
use keel_client::watch::LineSplitter;
use keel_client::Method;
use keel_client::{KubeClient, JSON};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    object: EventObject,
}

#[derive(Deserialize)]
struct EventObject {
    #[serde(default)]
    metadata: EventMeta,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct EventMeta {
    #[serde(rename = "resourceVersion", default)]
    rv: String,
    #[serde(default)]
    annotations: HashMap<String, String>,
}

/// One parsed watch event: its type, revision and the writer's send time if stamped.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub kind: Cow<'a, str>,
    pub rv: u64,
    pub sent_unix_nanos: Option<u128>,
}

/// Parses one watch event line; an ERROR event is an error carrying its message. Lines of the
/// usual shape are read by a scan of the object's metadata (`jsonscan::EventScanner`, built
/// for `SENT_ANNOTATION`), others by a full parse.
pub fn parse_event<'a>(scan: &EventScanner, line: &'a [u8]) -> Result<Parsed<'a>, String> {
    if let Some(f) = scan.scan(line) {
        if f.kind != "ERROR" {
            let rv = f.rv.unwrap_or_default();
            return Ok(Parsed {
                kind: Cow::Borrowed(f.kind),
                rv: rv
                    .parse()
                    .map_err(|_| format!("event resourceVersion {rv:?} is not a number"))?,
                sent_unix_nanos: f.annotation.and_then(|s| s.parse().ok()),
            });
        }
    }
    parse_event_slow(line)
}

fn parse_event_slow(line: &[u8]) -> Result<Parsed<'static>, String> {
    let e: Event = serde_json::from_slice(line).map_err(|e| format!("bad watch event: {e}"))?;
    if e.kind == "ERROR" {
        return Err(format!(
            "watch ERROR: {}",
            e.object.message.unwrap_or_default()
        ));
    }
    let rv = e.object.metadata.rv.parse().map_err(|_| {
        format!(
            "event resourceVersion {:?} is not a number",
            e.object.metadata.rv
        )
    })?;
    let sent = e
        .object
        .metadata
        .annotations
        .get(SENT_ANNOTATION)
        .and_then(|s| s.parse().ok());
    Ok(Parsed {
        kind: Cow::Owned(e.kind),
        rv,
        sent_unix_nanos: sent,
    })
}

/// Label that puts an object in a watch group (`--selectors`).
pub const WATCH_GROUP_LABEL: &str = "loadgen.keel.dev/watch-group";

/// Runs `watch`: `watchers` watches on `naming`'s collection in namespace `naming.namespace(0)`
/// while the plan's writes create objects `first..`. With `selectors` K > 0, object i is
/// labelled `WATCH_GROUP_LABEL=i mod K` and watcher w selects `WATCH_GROUP_LABEL=w mod K`: each
/// write goes to a K-th of the watchers and the server evaluates K different selectors.
pub async fn watch(
    c: &KubeClient,
    naming: &Naming,
    size: usize,
    first: u64,
    watchers: usize,
    selectors: u32,
    plan: &Plan,
) -> Result<Report, String> {
    let ns = naming.namespace(0);
    super::crd::ensure_kind(c, naming.kind).await?;
    ensure_namespaces(c, std::slice::from_ref(&ns)).await?;
    let collection = naming.collection_path(&ns);
    let rv = current_rv(c, &collection).await?;
    let watch_path = format!(
        "{collection}?watch=1&resourceVersion={rv}&allowWatchBookmarks=false&timeoutSeconds=3600"
    );
    let one_ns = Naming {
        namespaces: 1,
        ns_prefix: ns,
        ..naming.clone()
    };
    let open = |w: usize, ctx: WatcherCtx| {
        let mut path = watch_path.clone();
        if selectors > 0 {
            let group = w as u64 % u64::from(selectors);
            path.push_str(&format!("&labelSelector={WATCH_GROUP_LABEL}%3D{group}"));
        }
        tokio::spawn(watcher(c.clone(), path, ctx))
    };
    let writes = writer(c, one_ns, size, first, selectors, plan);
    watchrun::run("kube", watchers, selectors.max(1), open, writes).await
}

async fn writer(
    c: &KubeClient,
    naming: Naming,
    size: usize,
    first: u64,
    selectors: u32,
    plan: &Plan,
) -> Result<watchrun::WriterOut, String> {
    let written = Arc::new(Mutex::new(Vec::new()));
    let (c2, n, w2) = (c.clone(), Arc::new(naming), written.clone());
    let sum = driver::run("write", plan, move |i| {
        let (c, n, written) = (c2.clone(), n.clone(), w2.clone());
        async move {
            let i = first + i;
            let mut obj = objects::object_json(&n, i, size, 0);
            let group = if selectors > 0 {
                let g = i % u64::from(selectors);
                let label = format!(r#""{WATCH_GROUP_LABEL}":"{g}""#);
                obj = objects::with_first_member(&obj, "labels", &label)?;
                g as u32
            } else {
                0
            };
            let path = n.collection_path(&n.namespace(i));
            let resp = c
                .request(Method::POST, &path, Some((JSON, obj.into())))
                .await?
                .ok()?;
            written
                .lock()
                .map_err(|_| "poisoned")?
                .push((response_rv(&resp)?, group));
            Ok(Outcome {
                bytes: resp.body.len() as u64,
                objects: 1,
            })
        }
    })
    .await?;
    let written = std::mem::take(&mut *written.lock().map_err(|_| "poisoned")?);
    Ok((sum, written))
}

async fn watcher(c: KubeClient, path: String, ctx: WatcherCtx) -> WatcherOut {
    let mut out = WatcherOut::default();
    let mut stop = ctx.stop.clone();
    let mut body = match c.stream(&path).await {
        Ok(b) => b,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    ctx.connected
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut lines = LineSplitter::new(keel_client::limits::WATCH_LINE_BYTES_MAX);
    let scan = EventScanner::new(SENT_ANNOTATION);
    // Registered once for the whole stream rather than once per read.
    let stopped = stop.changed();
    tokio::pin!(stopped);
    loop {
        let more = tokio::select! {
            biased;
            more = body.fill() => more,
            _ = &mut stopped => break,
        };
        match more {
            Ok(true) => {}
            Ok(false) => {
                out.error = Some("watch ended by the server".into());
                break;
            }
            Err(e) => {
                out.error = Some(format!("watch stream: {e}"));
                break;
            }
        }
        // Every event of one read arrived at the same time.
        let at = Receipt::now();
        let before = out.stamped();
        let parsed = body
            .drain(|data| {
                lines.each_line(data, |l| {
                    let e = parse_event(&scan, l)?;
                    if e.kind != "BOOKMARK" {
                        out.record_at(&ctx, &at, e.rv, e.sent_unix_nanos);
                    }
                    Ok(())
                })
            })
            .await;
        ctx.events
            .fetch_add(out.stamped() - before, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = parsed {
            out.error = Some(e);
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse() {
        let scan = EventScanner::new(SENT_ANNOTATION);
        let ok = br#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"42","annotations":{"loadgen.keel.dev/sent-unix-nanos":"1000"}}}}"#;
        assert_eq!(
            parse_event(&scan, ok).unwrap(),
            Parsed {
                kind: "ADDED".into(),
                rv: 42,
                sent_unix_nanos: Some(1000)
            }
        );
        let plain = br#"{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"7"}}}"#;
        assert_eq!(parse_event(&scan, plain).unwrap().sent_unix_nanos, None);
        let err = br#"{"type":"ERROR","object":{"kind":"Status","message":"too old resource version","code":410}}"#;
        assert!(parse_event(&scan, err).unwrap_err().contains("too old"));
        assert!(parse_event(
            &scan,
            br#"{"type":"ADDED","object":{"metadata":{"resourceVersion":"x"}}}"#
        )
        .is_err());
        assert!(parse_event(&scan, b"{").is_err());
    }
}
