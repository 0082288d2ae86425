//! Responses: objects and lists served from their stored bytes (JSON, or encoded as protobuf,
//! Table or YAML), big lists streamed straight out of the store's mapping, errors as
//! `metav1.Status` in the representation the client asked for, and `Warning` headers.
//!
//! JSON bodies (objects, lists, Tables, Status, discovery) end with a newline, as Go's
//! `json.Encoder` writes them upstream.

use super::call::Call;
use crate::limits::{LIST_CHUNK_BYTES, LIST_CHUNK_PIECES_MAX};
use crate::objects::parse_stored;
use crate::repr::{Format, MetadataAs, JSON, TABLE_MEDIA, YAML};
use keel_api::status::ApiError;
use keel_http::{Body, Chunk, Piece, Response};
use serde_json::Value;

pub fn response(status: u16, content_type: &str, body: Vec<u8>) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: Body::Full(body),
    }
}

/// A JSON response: the body ends with a newline, as upstream's (Go's `json.Encoder`).
pub fn json(status: u16, content_type: &str, mut body: Vec<u8>) -> Response {
    if body.last() != Some(&b'\n') {
        body.push(b'\n');
    }
    response(status, content_type, body)
}

/// A JSON answer indented as upstream's `json.MarshalIndent(obj, "", "  ")` (`?pretty=true`),
/// still ending with a newline. Other bodies are left as they are (a list big enough to be
/// streamed is built whole when pretty is asked for).
pub fn indented(mut r: Response) -> Response {
    let json = r
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with(JSON));
    if let (true, Body::Full(b)) = (json, &r.body) {
        if let Ok(v) = serde_json::from_slice::<Value>(b) {
            let mut out = serde_json::to_vec_pretty(&v).expect("JSON");
            out.push(b'\n');
            r.body = Body::Full(out);
        }
    }
    r
}

/// An error as a JSON `Status` (where no `Accept` applies).
pub fn error(e: &ApiError) -> Response {
    error_as(e, Format::Json)
}

/// An error as a `Status` in the representation an `Accept` header picks (as upstream
/// writes errors with the serializer negotiated for the request): protobuf when the client
/// takes it, YAML when it asks for it, JSON otherwise (also for Tables and for an `Accept`
/// nothing satisfies).
pub fn error_for(e: &ApiError, accept: Option<&str>) -> Response {
    let format = if crate::repr::plain_json_accept(accept) {
        Format::Json
    } else {
        crate::repr::negotiate(accept, false, true).unwrap_or(Format::Json)
    };
    error_as(e, format)
}

fn error_as(e: &ApiError, format: Format) -> Response {
    let mut r = match format {
        Format::Protobuf | Format::Metadata(MetadataAs { protobuf: true, .. }) => {
            match keel_proto::encode(&e.to_value()) {
                Ok(b) => response(e.code, keel_proto::MEDIA_TYPE, b),
                Err(_) => json(e.code, JSON, e.to_json()),
            }
        }
        Format::Yaml => response(e.code, YAML, keel_api::yaml::encode(&e.to_value())),
        Format::Json | Format::Table | Format::Metadata(_) => json(e.code, JSON, e.to_json()),
    };
    if let Some(s) = e.retry_after_seconds {
        r.headers.push(("Retry-After".into(), s.to_string()));
    }
    r
}

/// What a draining server answers new requests with: as upstream, plain text (Go's
/// `http.Error`), `Retry-After: 5`, and `Connection: close` so the client reconnects,
/// hopefully to another server.
pub fn shutting_down() -> Response {
    let mut r = response(
        429,
        "text/plain; charset=utf-8",
        format!("{}\n", crate::lifecycle::RETRY_AFTER_MESSAGE).into_bytes(),
    );
    r.headers.extend([
        ("X-Content-Type-Options".into(), "nosniff".into()),
        ("Retry-After".into(), "5".into()),
        ("Connection".into(), "close".into()),
    ]);
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
        Format::Json => Ok(json(status, JSON, bytes)),
        Format::Protobuf => {
            let v: Value = parse_stored(&bytes)?;
            let out = keel_proto::encode(&v)
                .map_err(|e| ApiError::internal(format!("protobuf encoding: {e}")))?;
            Ok(response(status, keel_proto::MEDIA_TYPE, out))
        }
        Format::Table => {
            let v: Value = parse_stored(&bytes)?;
            Ok(json(
                status,
                TABLE_MEDIA,
                serde_json::to_vec(&table(&v)).expect("JSON"),
            ))
        }
        Format::Yaml => {
            let v: Value = parse_stored(&bytes)?;
            Ok(response(status, YAML, keel_api::yaml::encode(&v)))
        }
        Format::Metadata(m) => {
            let v: Value = parse_stored(&bytes)?;
            let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
            let (api_version, kind) = (text("apiVersion"), text("kind"));
            // A Status is no object: it goes out as it is, as upstream sends it.
            if kind == "Status" {
                let plain = if m.protobuf {
                    Format::Protobuf
                } else {
                    Format::Json
                };
                return object(status, plain, bytes, table);
            }
            let items = v.get("items").and_then(Value::as_array);
            let out = match (items, kind.strip_suffix("List")) {
                (Some(items), Some(item_kind)) => {
                    if !m.list {
                        return Err(m.mismatch(api_version, item_kind, true));
                    }
                    let items: Vec<Value> = items
                        .iter()
                        .map(|i| m.of_metadata(i.get("metadata").cloned().unwrap_or_default()))
                        .collect();
                    serde_json::json!({"kind": m.kind(), "apiVersion": m.api_version(),
                                       "metadata": v.get("metadata").cloned().unwrap_or_default(),
                                       "items": items})
                }
                _ if m.list => return Err(m.mismatch(api_version, kind, false)),
                _ => m.of_metadata(v.get("metadata").cloned().unwrap_or_default()),
            };
            metadata_response(status, m, &out)
        }
    }
}

/// A metadata-only object or list in its media type.
pub fn metadata_response(status: u16, m: MetadataAs, v: &Value) -> Result<Response, ApiError> {
    if m.protobuf {
        let body = keel_proto::encode(v)
            .map_err(|e| ApiError::internal(format!("protobuf encoding: {e}")))?;
        return Ok(response(status, m.content_type(), body));
    }
    Ok(json(
        status,
        m.content_type(),
        serde_json::to_vec(v).expect("JSON"),
    ))
}

/// The Table of one object (create, update and delete responses in Table form).
pub fn table_of(c: &Call<'_>, o: &Value) -> Value {
    crate::repr::table(
        c.info(),
        c.res.custom.as_deref(),
        &[o],
        keel_catalog::IncludeObject::Metadata,
        serde_json::json!({}),
    )
}

/// Adds the call's warnings (field validation) as `Warning: 299` headers.
pub fn with_warnings(mut r: Response, c: &Call<'_>) -> Response {
    for w in &c.warnings {
        r.headers.push((
            "Warning".into(),
            format!("299 - \"{}\"", w.replace('"', "\\\"")),
        ));
    }
    r
}

/// An object response from a value.
pub fn value(status: u16, format: Format, v: &Value) -> Result<Response, ApiError> {
    object(status, format, serde_json::to_vec(v).expect("JSON"), |_| {
        Value::Null
    })
}

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
        out.push(Piece::Static(b"]}\n"));
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
    // `json_list` closed the empty array (`]}\n`): reopen it.
    let head = head[..head.len() - 3].to_vec();
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

/// Builds a `<Kind>List` JSON document around already-encoded items, without re-encoding them
/// (ending with a newline, as every JSON body).
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
    out.extend_from_slice(b"]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
