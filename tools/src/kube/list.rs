//! Full and paginated lists of a collection.

use crate::driver::{self, Outcome, Plan};
use crate::jsonscan::ListScan;
use crate::report::Report;
use keel_client::{encode_query_value, KubeClient};
use std::sync::Arc;

/// Items and the continue token of one list page (a JSON `*List`). Counted by a structural
/// scan (`jsonscan`): a full parse of a 100 MB list costs the load generator more CPU than the
/// server spends producing it. (The `list` workload scans each body as it arrives.)
pub fn parse_page(body: &[u8]) -> Result<(u64, Option<String>), String> {
    crate::jsonscan::list_page(body)
}

/// Lists `collection` (e.g. `/api/v1/pods`) in full per operation, or in pages of
/// `page_size` following continue tokens; every object of every page is counted.
pub async fn list(
    c: &KubeClient,
    collection: &str,
    page_size: Option<u64>,
    plan: &Plan,
) -> Result<Report, String> {
    let (c2, coll) = (c.clone(), Arc::<str>::from(collection));
    let pages = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let pages2 = pages.clone();
    let name = if page_size.is_some() {
        "list-paged"
    } else {
        "list"
    };
    let sum = driver::run(name, plan, move |_| {
        let (c, coll, pages) = (c2.clone(), coll.clone(), pages2.clone());
        async move {
            let mut out = Outcome::default();
            let mut cont: Option<String> = None;
            loop {
                let sep = if coll.contains('?') { '&' } else { '?' };
                let path = match (page_size, &cont) {
                    (None, _) => coll.to_string(),
                    (Some(l), None) => format!("{coll}{sep}limit={l}"),
                    (Some(l), Some(t)) => {
                        format!("{coll}{sep}limit={l}&continue={}", encode_query_value(t))
                    }
                };
                let mut scan = ListScan::new();
                out.bytes += c.get_streamed(&path, |chunk| scan.push(chunk)).await?;
                let (n, next) = scan.finish()?;
                out.objects += n;
                pages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match next {
                    Some(t) if page_size.is_some() => cont = Some(t),
                    _ => return Ok(out),
                }
            }
        }
    })
    .await?;
    let mut r = Report::new(name, "kube");
    let objects_per_list = sum.objects.checked_div(sum.ops).unwrap_or(0);
    r.details
        .insert("objects_per_list".into(), objects_per_list.into());
    r.details.insert(
        "pages".into(),
        pages.load(std::sync::atomic::Ordering::Relaxed).into(),
    );
    r.ops.push(sum);
    Ok(r)
}

/// The query of a streaming list (client-go's WatchList).
pub const STREAMING_QUERY: &str =
    "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

/// Counts a JSON watch stream's events line by line without parsing the objects: ADDED
/// events, until the BOOKMARK annotated `k8s.io/initial-events-end`.
#[derive(Default)]
pub struct InitialEvents {
    line: Vec<u8>,
    pub added: u64,
    pub ended: bool,
}

impl InitialEvents {
    /// Takes the next bytes of the stream; an ERROR event is an error.
    pub fn push(&mut self, mut chunk: &[u8]) -> Result<(), String> {
        while !chunk.is_empty() && !self.ended {
            match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    self.line.extend_from_slice(&chunk[..i]);
                    chunk = &chunk[i + 1..];
                    let line = std::mem::take(&mut self.line);
                    self.event(&line)?;
                }
                None => {
                    self.line.extend_from_slice(chunk);
                    chunk = &[];
                }
            }
        }
        Ok(())
    }

    fn event(&mut self, line: &[u8]) -> Result<(), String> {
        let kind = |k: &str| line.starts_with(format!("{{\"type\":\"{k}\"").as_bytes());
        if kind("ADDED") {
            self.added += 1;
        } else if kind("BOOKMARK") {
            let end = b"\"k8s.io/initial-events-end\":\"true\"";
            self.ended = line.windows(end.len()).any(|w| w == end);
        } else if kind("ERROR") {
            return Err(format!("watch error: {}", String::from_utf8_lossy(line)));
        }
        Ok(())
    }
}

/// Streaming lists of `collection`: each operation opens a watch with `sendInitialEvents`
/// and reads it until the bookmark that ends the initial events (as an informer's first
/// sync does), counting the ADDED events; the stream is then dropped.
pub async fn streaming_list(
    c: &KubeClient,
    collection: &str,
    plan: &Plan,
) -> Result<Report, String> {
    let (c2, coll) = (c.clone(), Arc::<str>::from(collection));
    let name = "list-streaming";
    let sum = driver::run(name, plan, move |_| {
        let (c, coll) = (c2.clone(), coll.clone());
        async move {
            let sep = if coll.contains('?') { '&' } else { '?' };
            let mut body = c.stream(&format!("{coll}{sep}{STREAMING_QUERY}")).await?;
            let mut scan = InitialEvents::default();
            let mut out = Outcome::default();
            while !scan.ended {
                let Some(chunk) = body.next_chunk().await? else {
                    return Err("the watch ended before its initial events did".into());
                };
                out.bytes += chunk.len() as u64;
                scan.push(chunk)?;
            }
            out.objects = scan.added;
            Ok(out)
        }
    })
    .await?;
    let mut r = Report::new(name, "kube");
    let objects_per_list = sum.objects.checked_div(sum.ops).unwrap_or(0);
    r.details
        .insert("objects_per_list".into(), objects_per_list.into());
    r.ops.push(sum);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Want = Result<(u64, Option<&'static str>), ()>;

    #[test]
    fn pages_parse() {
        let cases: &[(&str, Want)] = &[
            (
                r#"{"metadata":{"continue":"abc"},"items":[{"a":1},{}]}"#,
                Ok((2, Some("abc"))),
            ),
            (r#"{"metadata":{"continue":""},"items":[]}"#, Ok((0, None))),
            (
                r#"{"kind":"PodList","metadata":{},"items":[{}]}"#,
                Ok((1, None)),
            ),
            (r#"{"items": 3}"#, Err(())),
            ("not json", Err(())),
        ];
        for (body, want) in cases {
            let got = parse_page(body.as_bytes());
            match (got, want) {
                (Ok((n, c)), Ok((wn, wc))) => {
                    assert_eq!((n, c.as_deref()), (*wn, *wc), "{body}")
                }
                (Err(_), Err(())) => {}
                (g, w) => panic!("{body}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn initial_events_are_counted_up_to_the_end_bookmark() {
        let stream = concat!(
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n",
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"BOOKMARK\"}}}\n",
            "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}\n",
            "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\",",
            "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n",
            "{\"type\":\"ADDED\",\"object\":{}}\n",
        );
        // Any split of the bytes gives the same count.
        for step in [1, 7, 64, stream.len()] {
            let mut scan = InitialEvents::default();
            for chunk in stream.as_bytes().chunks(step) {
                scan.push(chunk).unwrap();
            }
            assert_eq!((scan.added, scan.ended), (2, true), "step {step}");
        }
        let mut scan = InitialEvents::default();
        assert!(scan
            .push(b"{\"type\":\"ERROR\",\"object\":{\"code\":410}}\n")
            .is_err());
        let mut scan = InitialEvents::default();
        scan.push(b"{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"BOOK")
            .unwrap();
        assert_eq!((scan.added, scan.ended), (1, false));
    }
}
