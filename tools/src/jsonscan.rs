//! Cheap structural reads of large JSON documents, so that the load generator's own CPU does
//! not bound what it measures: counting the items of a 100 MB `*List` with a full parse costs
//! more than the server spends producing it. Pure functions, checked against serde_json in the
//! tests.
//!
//! The scanner tracks nesting depth and skips string contents with `memchr` (object payloads
//! are mostly string bytes), so it runs at memory speed. It validates structure (balanced
//! brackets, terminated strings) but not every JSON rule; a document it cannot read falls back
//! to serde_json.

use memchr::{memchr2, memmem};

/// The top-level fields of a JSON object: for each key, the byte range of its value.
/// Also counts the elements of the top-level array named `count_key` while scanning.
struct TopLevel<'a> {
    fields: Vec<(&'a [u8], std::ops::Range<usize>)>,
    counted: Option<u64>,
}

/// Skips a string starting at `at` (which holds `"`); returns the index after its closing
/// quote.
fn skip_string(b: &[u8], mut at: usize) -> Option<usize> {
    at += 1;
    loop {
        let i = at + memchr2(b'"', b'\\', &b[at..])?;
        if b[i] == b'\\' {
            at = i + 2;
            if at > b.len() {
                return None;
            }
        } else {
            return Some(i + 1);
        }
    }
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while at < b.len() && matches!(b[at], b' ' | b'\n' | b'\r' | b'\t') {
        at += 1;
    }
    at
}

/// Skips one value starting at `at`; counts direct children of it when it is an array and
/// `count` is set. Returns the index after the value.
fn skip_value(b: &[u8], at: usize, count: Option<&mut u64>) -> Option<usize> {
    match *b.get(at)? {
        b'"' => skip_string(b, at),
        b'{' | b'[' => skip_container(b, at, count),
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

/// Skips an object or array starting at `at`. With `count`, adds the number of direct
/// elements of an array (0 for `[]`).
fn skip_container(b: &[u8], at: usize, mut count: Option<&mut u64>) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = at;
    let mut expect_element = b[at] == b'[';
    while i < b.len() {
        let c = b[i];
        if depth == 1 && expect_element && !matches!(c, b' ' | b'\n' | b'\r' | b'\t' | b']') {
            if let Some(n) = count.as_deref_mut() {
                *n += 1;
            }
            expect_element = false;
        }
        match c {
            b'"' => {
                i = skip_string(b, i)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' if depth == 1 && b[at] == b'[' => expect_element = true,
            _ => {}
        }
        i += 1;
    }
    None
}

fn top_level<'a>(b: &'a [u8], count_key: &[u8]) -> Option<TopLevel<'a>> {
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut out = TopLevel {
        fields: Vec::new(),
        counted: None,
    };
    if b.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let end = skip_string(b, i)?;
        let key = &b[i + 1..end - 1];
        i = skip_ws(b, end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, i + 1);
        let stop = if key == count_key && b.get(start) == Some(&b'[') {
            let mut n = 0;
            let stop = skip_value(b, start, Some(&mut n))?;
            out.counted = Some(n);
            stop
        } else {
            skip_value(b, start, None)?
        };
        out.fields.push((key, start..stop));
        i = skip_ws(b, stop);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return (skip_ws(b, i + 1) == b.len()).then_some(out),
            _ => return None,
        }
    }
}

#[derive(serde::Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    cont: Option<String>,
}

/// The number of `items` of a JSON `*List` and its non-empty continue token.
pub fn list_page(body: &[u8]) -> Result<(u64, Option<String>), String> {
    let t = top_level(body, b"items").ok_or("list is not a JSON object")?;
    let items = t.counted.ok_or("list has no items array")?;
    let cont = match t.fields.iter().find(|(k, _)| *k == b"metadata") {
        Some((_, r)) => serde_json::from_slice::<ListMeta>(&body[r.clone()])
            .map_err(|e| format!("list metadata: {e}"))?
            .cont
            .filter(|c| !c.is_empty()),
        None => None,
    };
    Ok((items, cont))
}

/// The fields one watch event line yields to the load generator.
#[derive(Debug, PartialEq, Eq)]
pub struct EventFields<'a> {
    /// `type`: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
    pub kind: &'a str,
    /// The object's `metadata.resourceVersion` (`None` when absent).
    pub rv: Option<&'a str>,
    /// The string value of annotation `annotation` (`None` when absent).
    pub annotation: Option<&'a str>,
}

/// Reads a JSON watch event line of the shape every API server writes,
/// `{"type":"<T>","object":{...,"metadata":{...}...}}`, without parsing the object: only the
/// object's first `"metadata":{...}` is scanned, where `resourceVersion` and the annotation are
/// found by their quoted keys (a quote inside a JSON string is always escaped, so string
/// contents cannot match). `None` when the line is not of that shape (the
/// caller then parses it fully).
pub fn watch_event<'a>(line: &'a [u8], annotation: &str) -> Option<EventFields<'a>> {
    const HEAD: &[u8] = b"{\"type\":\"";
    let rest = line.strip_prefix(HEAD)?;
    let end = memchr::memchr(b'"', rest)?;
    let kind = std::str::from_utf8(&rest[..end]).ok()?;
    let rest = rest[end..].strip_prefix(b"\",\"object\":{")?;
    const META: &[u8] = b"\"metadata\":";
    let meta = memmem::find(rest, b"\"metadata\":{")? + META.len();
    let rest = &rest[meta..skip_container(rest, meta, None)?];
    let quoted = |at: usize| -> Option<&'a str> {
        let end = memchr::memchr(b'"', &rest[at..])?;
        std::str::from_utf8(&rest[at..at + end]).ok()
    };
    const RV: &[u8] = b"\"resourceVersion\":\"";
    let rv = match memmem::find(rest, RV) {
        Some(i) => Some(quoted(i + RV.len())?),
        None => None,
    };
    let key = format!("\"{annotation}\":\"");
    let annotation = match memmem::find(rest, key.as_bytes()) {
        Some(i) => Some(quoted(i + key.len())?),
        None => None,
    };
    Some(EventFields {
        kind,
        rv,
        annotation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn list_pages_agree_with_serde() {
        let big = "x\\\"]}{[,".repeat(50);
        let docs = [
            json!({"kind":"PodList","metadata":{"continue":"abc","resourceVersion":"5"},"items":[{"a":1},{},{"s":big}]}),
            json!({"metadata":{"continue":""},"items":[]}),
            json!({"items":[[1,2],"s",3,null,{"items":[1,2,3]}],"metadata":{}}),
            json!({"kind":"List","items":[{"metadata":{"continue":"inner"}}]}),
        ];
        for d in docs {
            for text in [
                serde_json::to_vec(&d).unwrap(),
                serde_json::to_vec_pretty(&d).unwrap(),
            ] {
                let v: Value = serde_json::from_slice(&text).unwrap();
                let want_n = v["items"].as_array().unwrap().len() as u64;
                let want_c = v["metadata"]["continue"]
                    .as_str()
                    .filter(|c| !c.is_empty())
                    .map(String::from);
                assert_eq!(list_page(&text).unwrap(), (want_n, want_c), "{d}");
            }
        }
    }

    #[test]
    fn bad_lists_are_errors() {
        for bad in [
            &b"not json"[..],
            b"{\"items\": 3}",
            b"{\"items\":[{\"a\":\"unterminated}]}",
            b"{\"items\":[1,2]",
            b"{\"items\":[1]} trailing",
            b"{\"metadata\":{\"continue\":5},\"items\":[]}",
            b"[]",
        ] {
            assert!(list_page(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn watch_events_read_without_parsing() {
        let ann = "loadgen.keel.dev/sent-unix-nanos";
        let line = br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","annotations":{"x":"\"resourceVersion\":\"1\"","loadgen.keel.dev/sent-unix-nanos":"1000"},"resourceVersion":"42"},"data":{"k":"\"resourceVersion\":\"9\""}}}"#;
        assert_eq!(
            watch_event(line, ann),
            Some(EventFields {
                kind: "ADDED",
                rv: Some("42"),
                annotation: Some("1000")
            })
        );
        let plain = br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"7"}}}"#;
        assert_eq!(
            watch_event(plain, ann),
            Some(EventFields {
                kind: "BOOKMARK",
                rv: Some("7"),
                annotation: None
            })
        );
        // Other shapes are left to the full parser.
        assert_eq!(watch_event(br#"{"object":{},"type":"ADDED"}"#, ann), None);
        assert_eq!(
            watch_event(br#"{"type":"ERROR","object":{"code":410}}"#, ann),
            None
        );
    }
}
