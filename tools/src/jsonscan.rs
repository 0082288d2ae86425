//! Cheap structural reads of large JSON documents, so that the load generator's own CPU does
//! not bound what it measures: counting the items of a 100 MB `*List` with a full parse costs
//! more than the server spends producing it. Pure functions, checked against serde_json in the
//! tests.
//!
//! The scanners track nesting depth and skip string contents with `memchr`. They validate
//! structure (balanced brackets, terminated strings) but not every JSON rule. Lists are
//! scanned as they arrive (`ListScan`), so a 200 MB list is never held in memory; a watch
//! event line of another shape than the usual one falls back to serde_json.

use memchr::{memchr2, memmem};

/// Skips the object or array starting at `at`; returns the index after it. Reads 16 bytes
/// at a time and visits only the bytes that matter (`special_bytes`): with a call to
/// `memchr2` per string, skipping a watch event's metadata (~20 short strings) was a sixth of
/// the load generator's CPU with 1,000 watchers.
fn skip_container(b: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let (mut in_str, mut esc) = (false, false);
    let mut i = at;
    while i < b.len() {
        let n = (b.len() - i).min(16);
        let mut bits = match b[i..].first_chunk::<16>() {
            Some(block) => special_bytes(block),
            None => special_bits(&b[i..]),
        };
        if esc {
            // The byte after a backslash that ended the previous block.
            bits &= !1;
            esc = false;
        }
        while bits != 0 {
            let k = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            match (in_str, b[i + k]) {
                (true, b'\\') if k + 1 < n => bits &= !(1 << (k + 1)),
                (true, b'\\') => esc = true,
                (true, b'"') | (false, b'"') => in_str = !in_str,
                (false, b'{' | b'[') => depth += 1,
                (false, b'}' | b']') => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + k + 1);
                    }
                }
                _ => {}
            }
        }
        i += n;
    }
    None
}

/// The bytes that matter inside a list item: string delimiters and escapes, and brackets.
#[inline(always)]
fn is_special(c: u8) -> bool {
    matches!(c, b'"' | b'\\' | b'{' | b'}' | b'[' | b']')
}

/// Bit k set when `block[k]` is one of `"` `\\` `{` `}` `[` `]` (`is_special`).
#[inline(always)]
fn special_bytes(block: &[u8; 16]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; the load reads exactly the 16 bytes of
        // `block` (unaligned load).
        unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // `[` and `{` differ only in bit 5, as do `]` and `}`.
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let open = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8));
            let close = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8));
            let any = _mm_or_si128(_mm_or_si128(quote, backslash), _mm_or_si128(open, close));
            _mm_movemask_epi8(any) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        special_bits(block)
    }
}

/// `special_bytes` for up to 16 bytes, one at a time (a chunk's tail, other architectures).
fn special_bits(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, c)| is_special(**c))
        .fold(0, |bits, (k, _)| bits | 1 << k)
}

#[derive(serde::Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    cont: Option<String>,
}

/// The first bytes of a list body kept to read its `metadata` (API servers write it before
/// `items`).
pub const LIST_HEAD_BYTES_MAX: usize = 64 << 10;
/// Bytes of a string scanned byte by byte before handing the rest to `memchr`.
const SHORT_STRING_BYTES: usize = 32;
/// Longest top-level key remembered (only `items` and `metadata` matter).
const KEY_BYTES_MAX: usize = 16;

/// Counts the items of a JSON `*List` as its body arrives, chunk by chunk, without keeping
/// the body: only its first `LIST_HEAD_BYTES_MAX` bytes are kept, for `metadata.continue`.
/// Structure is checked (balanced brackets, terminated strings, one top-level object with an
/// `items` array); string contents are skipped with `memchr`.
#[derive(Default)]
pub struct ListScan {
    pos: u64,
    depth: u32,
    in_str: bool,
    esc: bool,
    started: bool,
    done: bool,
    /// At depth 1: the next string is a key; the key being read; the value it introduces.
    expect_key: bool,
    key: Vec<u8>,
    key_reading: bool,
    value_of: Option<Field>,
    in_items: bool,
    expect_elem: bool,
    saw_items: bool,
    items: u64,
    meta: (Option<u64>, Option<u64>),
    head: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Items,
    Metadata,
    Other,
}

impl ListScan {
    pub fn new() -> ListScan {
        ListScan::default()
    }

    /// Scans the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        let keep = LIST_HEAD_BYTES_MAX
            .saturating_sub(self.head.len())
            .min(chunk.len());
        self.head.extend_from_slice(&chunk[..keep]);
        let mut i = 0;
        while i < chunk.len() {
            if self.in_items && self.depth > 2 {
                i = self.inside_item(chunk, i);
                continue;
            }
            if self.in_str {
                i = self.string_bytes(chunk, i);
                continue;
            }
            self.structural(chunk[i], self.pos + i as u64)?;
            i += 1;
        }
        self.pos += chunk.len() as u64;
        Ok(())
    }

    /// Inside a string from `chunk[i]`: skips to its end (or the chunk's); returns the next
    /// index to scan.
    #[inline(always)]
    fn string_bytes(&mut self, chunk: &[u8], mut i: usize) -> usize {
        if self.esc {
            self.esc = false;
            return i + 1;
        }
        let rest = &chunk[i..];
        // Most strings of an object (keys, short values) end within a few bytes: a plain loop
        // beats memchr's setup there; long ones (payloads) go to memchr.
        let short = rest.len().min(SHORT_STRING_BYTES);
        let found = match rest[..short].iter().position(|&b| b == b'"' || b == b'\\') {
            Some(at) => Some(at),
            None if short < rest.len() => memchr2(b'"', b'\\', &rest[short..]).map(|at| at + short),
            None => None,
        };
        let Some(at) = found else {
            self.key_bytes(rest);
            return chunk.len();
        };
        self.key_bytes(&rest[..at]);
        i += at;
        if chunk[i] == b'\\' {
            self.esc = true;
        } else {
            self.in_str = false;
            if self.key_reading {
                self.key_reading = false;
                self.expect_key = false;
            }
        }
        i + 1
    }

    fn key_bytes(&mut self, b: &[u8]) {
        if self.key_reading {
            let room = KEY_BYTES_MAX.saturating_sub(self.key.len()).min(b.len());
            self.key.extend_from_slice(&b[..room]);
        }
    }

    /// Inside an item (depth > 2), in or out of a string: only quotes, backslashes and
    /// brackets matter until the depth is back to 2. They are found 16 bytes at a time
    /// (`special_bytes`), so a string's contents, short or long, cost a fraction of a cycle
    /// per byte. Returns the next index to scan.
    fn inside_item(&mut self, chunk: &[u8], mut i: usize) -> usize {
        let len = chunk.len();
        if self.esc {
            self.esc = false;
            i += 1;
        }
        // Index of the first byte not yet handled (past an escaped byte, say).
        let mut from = i;
        while i < len {
            let (mut bits, width) = match chunk.get(i..i + 16) {
                Some(block) => (special_bytes(block.try_into().expect("16 bytes")), 16),
                None => (special_bits(&chunk[i..]), len - i),
            };
            while bits != 0 {
                let at = i + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if at < from {
                    continue; // escaped
                }
                from = at + 1;
                match (self.in_str, chunk[at]) {
                    (true, b'"') => self.in_str = false,
                    (true, b'\\') => {
                        if at + 1 == len {
                            self.esc = true;
                            return len;
                        }
                        from = at + 2;
                    }
                    (true, _) => {}
                    (false, b'"') => self.in_str = true,
                    (false, b'{' | b'[') => self.depth += 1,
                    (false, b'}' | b']') => {
                        self.depth -= 1;
                        if self.depth == 2 {
                            return at + 1;
                        }
                    }
                    (false, _) => {} // a backslash outside a string: not ours to judge
                }
            }
            i += width;
        }
        len
    }

    #[inline(always)]
    fn element(&mut self) {
        if self.in_items && self.depth == 2 && self.expect_elem {
            self.items += 1;
            self.expect_elem = false;
        }
    }

    /// One byte outside strings, at absolute offset `at`.
    #[inline(always)]
    fn structural(&mut self, c: u8, at: u64) -> Result<(), String> {
        if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
            return Ok(());
        }
        if self.done {
            return Err("data after the list".into());
        }
        if !self.started {
            if c != b'{' {
                return Err("list is not a JSON object".into());
            }
            self.started = true;
            self.depth = 1;
            self.expect_key = true;
            return Ok(());
        }
        match c {
            b'"' => {
                self.element();
                self.in_str = true;
                if self.depth == 1 && self.expect_key {
                    self.key_reading = true;
                    self.key.clear();
                }
            }
            b':' if self.depth == 1 => {
                self.value_of = Some(match self.key.as_slice() {
                    b"items" => Field::Items,
                    b"metadata" => Field::Metadata,
                    _ => Field::Other,
                });
            }
            b'{' | b'[' => {
                self.element();
                if self.depth == 1 {
                    match self.value_of.take() {
                        Some(Field::Items) if c == b'[' => {
                            self.in_items = true;
                            self.saw_items = true;
                            self.expect_elem = true;
                        }
                        Some(Field::Metadata) if c == b'{' => self.meta.0 = Some(at),
                        _ => {}
                    }
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth -= 1;
                if self.depth == 1 {
                    self.in_items = false;
                    if self.meta.0.is_some() && self.meta.1.is_none() {
                        self.meta.1 = Some(at + 1);
                    }
                }
                if self.depth == 0 {
                    self.done = true;
                }
            }
            b',' => {
                if self.depth == 1 {
                    self.expect_key = true;
                    self.value_of = None;
                } else if self.in_items && self.depth == 2 {
                    self.expect_elem = true;
                }
            }
            _ => {
                self.element();
                if self.depth == 1 {
                    self.value_of = None;
                }
            }
        }
        Ok(())
    }

    /// The number of items and the non-empty continue token, once the whole body was pushed.
    pub fn finish(self) -> Result<(u64, Option<String>), String> {
        if !self.done || self.in_str {
            return Err("list body ended early".into());
        }
        if !self.saw_items {
            return Err("list has no items array".into());
        }
        let cont = match self.meta {
            (Some(a), Some(b)) if b as usize <= self.head.len() => {
                serde_json::from_slice::<ListMeta>(&self.head[a as usize..b as usize])
                    .map_err(|e| format!("list metadata: {e}"))?
                    .cont
                    .filter(|c| !c.is_empty())
            }
            (Some(_), _) => {
                return Err(format!(
                    "list metadata does not end within the first {LIST_HEAD_BYTES_MAX} bytes"
                ))
            }
            (None, _) => None,
        };
        Ok((self.items, cont))
    }
}

/// The number of `items` of a whole JSON `*List` and its non-empty continue token.
pub fn list_page(body: &[u8]) -> Result<(u64, Option<String>), String> {
    let mut s = ListScan::new();
    s.push(body)?;
    s.finish()
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

/// Reads JSON watch event lines of the shape every API server writes,
/// `{"type":"<T>","object":{...,"metadata":{...}...}}`, without parsing the object: only the
/// object's first `"metadata":{...}` is scanned, where `resourceVersion` and one annotation are
/// found by their quoted keys (a quote inside a JSON string is always escaped, so string
/// contents cannot match). The searchers are built once, for many lines.
pub struct EventScanner {
    metadata: memmem::Finder<'static>,
    rv: memmem::Finder<'static>,
    annotation: memmem::Finder<'static>,
}

const META_KEY: &[u8] = b"\"metadata\":";
const RV_KEY: &[u8] = b"\"resourceVersion\":\"";

impl EventScanner {
    /// A scanner reading the value of annotation `annotation`.
    pub fn new(annotation: &str) -> EventScanner {
        let key = format!("\"{annotation}\":\"");
        EventScanner {
            metadata: memmem::Finder::new(b"\"metadata\":{").into_owned(),
            rv: memmem::Finder::new(RV_KEY).into_owned(),
            annotation: memmem::Finder::new(key.as_bytes()).into_owned(),
        }
    }

    /// The fields of one event line; `None` when the line is not of the usual shape (the
    /// caller then parses it fully).
    pub fn scan<'a>(&self, line: &'a [u8]) -> Option<EventFields<'a>> {
        const HEAD: &[u8] = b"{\"type\":\"";
        let rest = line.strip_prefix(HEAD)?;
        let end = memchr::memchr(b'"', rest)?;
        let kind = std::str::from_utf8(&rest[..end]).ok()?;
        let rest = rest[end..].strip_prefix(b"\",\"object\":{")?;
        let meta = self.metadata.find(rest)? + META_KEY.len();
        let rest = &rest[meta..skip_container(rest, meta)?];
        let quoted = |at: usize| -> Option<&'a str> {
            let end = memchr::memchr(b'"', &rest[at..])?;
            std::str::from_utf8(&rest[at..at + end]).ok()
        };
        let rv = match self.rv.find(rest) {
            Some(i) => Some(quoted(i + RV_KEY.len())?),
            None => None,
        };
        let key_len = self.annotation.needle().len();
        let annotation = match self.annotation.find(rest) {
            Some(i) => Some(quoted(i + key_len)?),
            None => None,
        };
        Some(EventFields {
            kind,
            rv,
            annotation,
        })
    }
}

/// `EventScanner::new(annotation).scan(line)`, for one line.
pub fn watch_event<'a>(line: &'a [u8], annotation: &str) -> Option<EventFields<'a>> {
    EventScanner::new(annotation).scan(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

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
    fn lists_scan_the_same_in_any_chunking() {
        let d = json!({"kind":"PodList","metadata":{"continue":"c\\\"x","resourceVersion":"5"},
            "items":[{"a":"q\\\"]}"},{"b":[1,{"c":null}]},"s",7,true]});
        let text = serde_json::to_vec(&d).unwrap();
        let want = list_page(&text).unwrap();
        assert_eq!(want, (5, Some("c\\\"x".to_string())));
        for size in 1..text.len() {
            let mut s = ListScan::new();
            for chunk in text.chunks(size) {
                s.push(chunk).unwrap();
            }
            assert_eq!(s.finish().unwrap(), want, "chunks of {size}");
        }
        let mut cut = ListScan::new();
        cut.push(&text[..text.len() - 1]).unwrap();
        assert!(cut.finish().is_err(), "a truncated list is an error");
    }

    #[test]
    fn escapes_and_brackets_at_every_offset_of_a_block() {
        // Strings whose backslashes, quotes and brackets fall at every position of the
        // scanner's 16-byte blocks, in items nested a few levels deep.
        let items: Vec<Value> = (0..40)
            .map(|k| {
                let pad = "p".repeat(k);
                json!({"metadata":{"name": format!("{pad}\\\"]}}{{["), "labels":{"a":[k, {"b": pad}]}},
                       "data":{"x": format!("{pad}\\"), "y": "\"[{", "z": [[], {}, [{}]]}})
            })
            .collect();
        let d = json!({"kind":"ConfigMapList","metadata":{"continue":"t"},"items": items});
        let text = serde_json::to_vec(&d).unwrap();
        for size in [1, 2, 3, 7, 15, 16, 17, 31, 64, 1000, text.len()] {
            let mut s = ListScan::new();
            for chunk in text.chunks(size) {
                s.push(chunk).unwrap();
            }
            assert_eq!(
                s.finish().unwrap(),
                (40, Some("t".to_string())),
                "chunks of {size}"
            );
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

    /// The byte-at-a-time skip the block skip replaced: the reference it must agree with.
    fn skip_container_reference(b: &[u8], at: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = at;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    i = skip_string(b, i)?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    #[test]
    fn container_skip_agrees_with_the_byte_loop_at_every_offset() {
        let pieces = ["\\\"", "\\\\", "}", "]", "{", "[", "\"", "x", ",", ":"];
        let mut seed: u64 = 5;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for pad in 0..40 {
            for _ in 0..50 {
                // A valid object with tricky strings, then random bytes (also broken JSON).
                let s: String = (0..next() % 12)
                    .map(|_| pieces[next() % pieces.len()])
                    .collect();
                let v = json!({"a": s, "b": [s, {"c": s}], "d": {}});
                let mut text = " ".repeat(pad).into_bytes();
                text.extend_from_slice(&serde_json::to_vec(&v).unwrap());
                text.extend_from_slice(b",\"tail\":1}");
                assert_eq!(
                    skip_container(&text, pad),
                    skip_container_reference(&text, pad)
                );
                assert_eq!(skip_container(&text, pad), Some(text.len() - 10));
                let garbage: Vec<u8> = (0..next() % 60)
                    .map(|_| pieces[next() % pieces.len()].as_bytes()[0])
                    .collect();
                let mut g = b"{".to_vec();
                g.extend_from_slice(&garbage);
                assert_eq!(
                    skip_container(&g, 0),
                    skip_container_reference(&g, 0),
                    "{g:?}"
                );
            }
        }
    }
}
