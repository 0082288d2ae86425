//! Content negotiation and response encoding: JSON served from stored bytes, protobuf through
//! keel-proto, Tables through keel-catalog, errors as `metav1.Status`.

use keel_api::status::ApiError;
use keel_http::{Body, Chunk, Piece, Response};
use serde_json::Value;

pub const JSON: &str = "application/json";
pub const TABLE_MEDIA: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
pub const JSON_STREAM: &str = "application/json;stream=watch";

/// The representation chosen for a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Protobuf,
    Table,
}

/// One media range of an `Accept` header.
#[derive(Debug, Default)]
struct MediaRange<'a> {
    kind: &'a str,
    as_: Option<&'a str>,
    g: Option<&'a str>,
    v: Option<&'a str>,
}

fn parse_range(s: &str) -> MediaRange<'_> {
    let mut parts = s.split(';').map(str::trim);
    let mut r = MediaRange {
        kind: parts.next().unwrap_or(""),
        ..Default::default()
    };
    for p in parts {
        if let Some((k, v)) = p.split_once('=') {
            match k.trim() {
                "as" => r.as_ = Some(v.trim()),
                "g" => r.g = Some(v.trim()),
                "v" => r.v = Some(v.trim()),
                _ => {}
            }
        }
    }
    r
}

/// True for an `Accept` that `negotiate` answers with JSON whatever is offered: absent,
/// blank, `application/json` or `*/*` alone.
pub fn plain_json_accept(accept: Option<&str>) -> bool {
    accept.is_none_or(|a| matches!(a.trim(), "" | "application/json" | "*/*"))
}

/// Picks the first supported media type of `accept`, in order. `table` and `protobuf` say
/// whether those are offered for this response.
pub fn negotiate(accept: Option<&str>, table: bool, protobuf: bool) -> Result<Format, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Format::Json);
    };
    for range in accept.split(',') {
        let r = parse_range(range);
        match (r.kind.to_ascii_lowercase().as_str(), r.as_) {
            ("application/json", Some("Table"))
                if table
                    && r.g == Some("meta.k8s.io")
                    && matches!(r.v, Some("v1") | Some("v1beta1")) =>
            {
                return Ok(Format::Table)
            }
            ("application/json" | "*/*" | "application/*", None) => return Ok(Format::Json),
            ("application/vnd.kubernetes.protobuf", None) if protobuf => {
                return Ok(Format::Protobuf)
            }
            _ => {}
        }
    }
    let _ = accept;
    let mut offered = vec![JSON];
    if protobuf {
        offered.push("application/vnd.kubernetes.protobuf");
    }
    if table {
        offered.push(TABLE_MEDIA);
    }
    Err(ApiError::not_acceptable(&offered))
}

/// The media type of a `Content-Type` value, lower-cased, without parameters.
fn media_of(content_type: Option<&str>) -> String {
    content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

/// True when `decode_body` decodes this `Content-Type` as JSON.
pub fn is_json_media(content_type: Option<&str>) -> bool {
    matches!(
        media_of(content_type).as_str(),
        "" | "application/json" | "*/*"
    )
}

/// Decodes a request body by its `Content-Type` into a JSON value.
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    match media_of(content_type).as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}"))),
        "application/vnd.kubernetes.protobuf" => keel_proto::decode(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding protobuf body: {e}"))),
        _ => Err(ApiError::unsupported_media_type(&[
            JSON,
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ])),
    }
}

pub fn response(status: u16, content_type: &str, body: Vec<u8>) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: Body::Full(body),
    }
}

pub fn error(e: &ApiError) -> Response {
    let mut r = response(e.code, JSON, e.to_json());
    if let Some(s) = e.retry_after_seconds {
        r.headers.push(("Retry-After".into(), s.to_string()));
    }
    r
}

/// An object response from its JSON bytes (as stored), in the negotiated format.
pub fn object(
    status: u16,
    format: Format,
    bytes: Vec<u8>,
    table: impl FnOnce(&Value) -> Value,
) -> Result<Response, ApiError> {
    match format {
        Format::Json => Ok(response(status, JSON, bytes)),
        Format::Protobuf => {
            let v: Value = parse_stored(&bytes)?;
            let out = keel_proto::encode(&v)
                .map_err(|e| ApiError::internal(format!("protobuf encoding: {e}")))?;
            Ok(response(status, keel_proto::MEDIA_TYPE, out))
        }
        Format::Table => {
            let v: Value = parse_stored(&bytes)?;
            Ok(response(
                status,
                TABLE_MEDIA,
                serde_json::to_vec(&table(&v)).expect("JSON"),
            ))
        }
    }
}

/// An object response from a value.
pub fn value(status: u16, format: Format, v: &Value) -> Result<Response, ApiError> {
    object(status, format, serde_json::to_vec(v).expect("JSON"), |_| {
        Value::Null
    })
}

pub fn parse_stored(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::internal(format!("stored object is not valid JSON: {e}")))
}

/// Lists whose items exceed this many bytes are sent as a chunked stream of the stored values
/// themselves (no copy into a response buffer); smaller ones are built whole.
pub const LIST_STREAM_THRESHOLD_BYTES: usize = 64 * 1024;
/// Bytes of one streamed list chunk (about; it ends after the item that reaches it).
pub const LIST_CHUNK_BYTES: usize = 256 * 1024;
/// Pieces of one streamed list chunk (two per item: separator and value), so that a chunk is
/// written with one vectored write.
pub const LIST_CHUNK_PIECES_MAX: usize = 500;

/// A stored value as a response piece: the bytes stay in the store's mapping.
struct StoredValue(keel_engine::KeyValue);

impl AsRef<[u8]> for StoredValue {
    fn as_ref(&self) -> &[u8] {
        self.0.value()
    }
}

/// Chunks of a streamed `<Kind>List`: the head, then the items as pieces that point into the
/// store's mapped bytes (written to the socket, or handed to TLS, without an intermediate
/// copy), then the closing bytes.
struct ListChunks {
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<keel_engine::KeyValue>,
    first: bool,
    done: bool,
}

impl Iterator for ListChunks {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        if let Some(h) = self.head.take() {
            return Some(Chunk::from(h));
        }
        if self.done {
            return None;
        }
        let mut out = Chunk::new();
        let mut pieces = 0;
        for kv in self.items.by_ref() {
            if !self.first {
                out.push(Piece::Static(b","));
            }
            self.first = false;
            out.push(Piece::Held(std::sync::Arc::new(StoredValue(kv))));
            pieces += 2;
            if out.len() >= LIST_CHUNK_BYTES || pieces >= LIST_CHUNK_PIECES_MAX {
                return Some(out);
            }
        }
        out.push(Piece::Static(b"]}"));
        self.done = true;
        Some(out)
    }
}

/// A `<Kind>List` JSON response streamed with chunked transfer coding.
pub fn json_list_stream(
    api_version: &str,
    list_kind: &str,
    list_meta: &Value,
    items: Vec<keel_engine::KeyValue>,
) -> Response {
    let head = json_list(api_version, list_kind, list_meta, std::iter::empty(), 0);
    // `json_list` closed the empty array: reopen it.
    let head = head[..head.len() - 2].to_vec();
    let chunks = ListChunks {
        head: Some(head),
        items: items.into_iter(),
        first: true,
        done: false,
    };
    Response {
        status: 200,
        headers: vec![("Content-Type".into(), JSON.into())],
        body: Body::Chunks(Box::pin(futures_util::stream::iter(chunks))),
    }
}

/// Builds a `<Kind>List` JSON document around already-encoded items, without re-encoding them.
pub fn json_list<'a>(
    api_version: &str,
    list_kind: &str,
    list_meta: &Value,
    items: impl Iterator<Item = &'a [u8]>,
    size_hint: usize,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(size_hint + 256);
    out.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut out, list_kind).expect("JSON");
    out.extend_from_slice(b",\"apiVersion\":");
    serde_json::to_writer(&mut out, api_version).expect("JSON");
    out.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut out, list_meta).expect("JSON");
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.extend_from_slice(b"]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_accept_order() {
        let t = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(Some(t), true, true).unwrap(), Format::Table);
        assert_eq!(negotiate(Some(t), false, true).unwrap(), Format::Json);
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf,application/json"),
                true,
                true
            )
            .unwrap(),
            Format::Protobuf
        );
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf,application/json"),
                true,
                false
            )
            .unwrap(),
            Format::Json
        );
        assert_eq!(negotiate(None, true, true).unwrap(), Format::Json);
        assert_eq!(negotiate(Some("*/*"), true, true).unwrap(), Format::Json);
        assert_eq!(
            negotiate(Some("text/html"), true, true).unwrap_err().code,
            406
        );
        assert_eq!(
            negotiate(
                Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
                true,
                true
            )
            .unwrap_err()
            .code,
            406
        );
    }

    #[test]
    fn plain_json_accepts_negotiate_json() {
        for a in [
            None,
            Some(""),
            Some(" "),
            Some("application/json"),
            Some("*/*"),
        ] {
            assert!(plain_json_accept(a), "{a:?}");
            for (table, proto) in [(true, true), (false, false), (true, false)] {
                assert_eq!(negotiate(a, table, proto).unwrap(), Format::Json, "{a:?}");
            }
        }
        for a in [
            "application/vnd.kubernetes.protobuf",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "application/json, */*",
            "text/html",
        ] {
            assert!(!plain_json_accept(Some(a)), "{a}");
        }
    }

    #[test]
    fn lists_wrap_stored_bytes() {
        let items: Vec<&[u8]> = vec![b"{\"a\":1}", b"{\"b\":2}"];
        let out = json_list(
            "v1",
            "ConfigMapList",
            &serde_json::json!({"resourceVersion": "5"}),
            items.into_iter(),
            0,
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["kind"], "ConfigMapList");
        assert_eq!(v["items"][1]["b"], 2);
        assert_eq!(v["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn streamed_lists_are_the_same_document() {
        let items: Vec<keel_engine::KeyValue> = (0..3000)
            .map(|i| {
                let v = format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(200));
                keel_engine::KeyValue::from_parts(
                    format!("k{i:05}").as_bytes(),
                    v.as_bytes(),
                    keel_engine::Revision(1),
                )
            })
            .collect();
        let meta = serde_json::json!({"resourceVersion": "9"});
        let whole = json_list(
            "v1",
            "ConfigMapList",
            &meta,
            items.iter().map(|kv| kv.value()),
            0,
        );
        let r = json_list_stream("v1", "ConfigMapList", &meta, items);
        let Body::Chunks(s) = r.body else {
            panic!("not streamed")
        };
        let chunks: Vec<Chunk> = futures_executor::block_on(futures_util::StreamExt::collect(s));
        assert!(chunks.len() > 2, "{} chunks", chunks.len());
        assert!(chunks.iter().all(|c| c.len() <= LIST_CHUNK_BYTES + 4096));
        assert!(chunks
            .iter()
            .all(|c| c.pieces().len() <= LIST_CHUNK_PIECES_MAX + 1));
        let bytes: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
        assert_eq!(bytes, whole);
        let empty = json_list_stream("v1", "ConfigMapList", &meta, Vec::new());
        let Body::Chunks(s) = empty.body else {
            panic!()
        };
        let out: Vec<Chunk> = futures_executor::block_on(futures_util::StreamExt::collect(s));
        let bytes: Vec<u8> = out.iter().flat_map(|c| c.to_vec()).collect();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["items"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn body_decoding() {
        assert!(decode_body(Some("application/json"), b"{\"a\":1}").is_ok());
        assert_eq!(
            decode_body(Some("application/json"), b"{")
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(decode_body(Some("text/plain"), b"x").unwrap_err().code, 415);
        assert_eq!(
            decode_body(Some("application/vnd.kubernetes.protobuf"), b"nope")
                .unwrap_err()
                .code,
            400
        );
    }
}
