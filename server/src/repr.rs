//! Representations: the media types keel speaks, `Accept` negotiation, and the encoding of
//! watch events in each representation (JSON served from stored bytes, protobuf through
//! keel-proto, Tables through keel-catalog). Used by the handlers and by the watch feed, which
//! encodes an event once per representation for all its watchers. No HTTP types here.

use crate::custom::Custom;
use keel_api::status::ApiError;
use keel_catalog::ResourceInfo;
use serde_json::{json, Value};
use std::sync::Arc;

pub const JSON: &str = "application/json";
pub const TABLE_MEDIA: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
pub const JSON_STREAM: &str = "application/json;stream=watch";
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
pub const YAML: &str = "application/yaml";

/// The representation chosen for a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Protobuf,
    Table,
    /// `application/yaml`: objects, lists and errors, not watches (406, as upstream).
    Yaml,
    /// `as=PartialObjectMetadata` / `as=PartialObjectMetadataList` (`g=meta.k8s.io`): only
    /// the objects' metadata, as controllers' metadata informers and the garbage collector
    /// ask for it.
    Metadata(MetadataAs),
}

/// A metadata-only representation: JSON or protobuf, the object or list form, `meta.k8s.io`
/// `v1` or `v1beta1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetadataAs {
    pub protobuf: bool,
    pub list: bool,
    pub v1beta1: bool,
}

impl MetadataAs {
    pub fn api_version(&self) -> &'static str {
        if self.v1beta1 {
            "meta.k8s.io/v1beta1"
        } else {
            "meta.k8s.io/v1"
        }
    }

    pub fn kind(&self) -> &'static str {
        if self.list {
            "PartialObjectMetadataList"
        } else {
            "PartialObjectMetadata"
        }
    }

    pub fn content_type(&self) -> &'static str {
        if self.protobuf {
            PROTOBUF
        } else {
            JSON
        }
    }

    /// The `PartialObjectMetadata` of the stored object `bytes`.
    pub fn of_stored(&self, bytes: &[u8]) -> Result<Value, ApiError> {
        #[derive(serde::Deserialize)]
        struct MetadataOnly {
            #[serde(default)]
            metadata: Value,
        }
        let m: MetadataOnly = serde_json::from_slice(bytes)
            .map_err(|e| ApiError::internal(format!("stored object: {e}")))?;
        Ok(self.of_metadata(m.metadata))
    }

    pub fn of_metadata(&self, metadata: Value) -> Value {
        json!({"kind": "PartialObjectMetadata", "apiVersion": self.api_version(), "metadata": metadata})
    }

    /// Upstream's refusal when the form asked for (object or list) is not the response's:
    /// it names the response's internal Go type.
    pub fn mismatch(&self, api_version: &str, kind: &str, is_list: bool) -> ApiError {
        let go_type = go_internal_type(api_version, kind);
        let msg = if is_list {
            format!(
                "you requested {}, but the requested object is a list (*{go_type}List)",
                self.kind()
            )
        } else {
            format!(
                "you requested {}, but the requested object is not a list (*{go_type})",
                self.kind()
            )
        };
        ApiError::not_acceptable_message(msg)
    }
}

/// The internal Go type upstream's messages name for an object of `kind` in `api_version`:
/// the group's internal package (`core` for the legacy group and events.k8s.io's events),
/// `unstructured.Unstructured` for custom resources.
fn go_internal_type(api_version: &str, kind: &str) -> String {
    // Every built-in kind has a protobuf form; custom resources have none.
    if !keel_proto::supports(api_version, kind) {
        return "unstructured.Unstructured".into();
    }
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let package = match group {
        "" | "events.k8s.io" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        g => g.split('.').next().unwrap_or(g),
    };
    format!("{package}.{kind}")
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
            (
                media @ ("application/json" | PROTOBUF),
                Some(as_ @ ("PartialObjectMetadata" | "PartialObjectMetadataList")),
            ) if r.g == Some("meta.k8s.io") && matches!(r.v, Some("v1") | Some("v1beta1")) => {
                return Ok(Format::Metadata(MetadataAs {
                    protobuf: media == PROTOBUF,
                    list: as_ == "PartialObjectMetadataList",
                    v1beta1: r.v == Some("v1beta1"),
                }))
            }
            ("application/json" | "*/*" | "application/*", None) => return Ok(Format::Json),
            (PROTOBUF, None) if protobuf => return Ok(Format::Protobuf),
            (YAML, None) => return Ok(Format::Yaml),
            _ => {}
        }
    }
    let mut offered = vec![JSON, YAML];
    if protobuf {
        offered.push(PROTOBUF);
    }
    if table {
        offered.push(TABLE_MEDIA);
    }
    Err(ApiError::not_acceptable(&offered))
}

/// The media type of a `Content-Type` value, lower-cased, without parameters.
pub fn media_of(content_type: Option<&str>) -> String {
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

/// True when a body of this `Content-Type` is decoded as JSON.
pub fn is_json_media(content_type: Option<&str>) -> bool {
    matches!(
        media_of(content_type).as_str(),
        "" | "application/json" | "*/*"
    )
}

/// The Table of `objects` of a resource: its built-in printer's columns, or a custom
/// resource's from its definition (`additionalPrinterColumns`).
pub fn table(
    info: &ResourceInfo,
    custom: Option<&Custom>,
    objects: &[&Value],
    include: keel_catalog::IncludeObject,
    list_meta: Value,
) -> Value {
    let now = std::time::SystemTime::now();
    match custom {
        Some(c) => keel_catalog::custom_table(&c.columns, objects, include, list_meta, now),
        None => keel_catalog::table(info, objects, include, list_meta, now),
    }
}

/// The Table of one object (`kubectl get` of one object, watch events in Table form).
pub fn object_table(info: &ResourceInfo, custom: Option<&Custom>, obj: &Value) -> Value {
    table(
        info,
        custom,
        &[obj],
        keel_catalog::IncludeObject::Metadata,
        json!({"resourceVersion": crate::objects::meta_str(obj, "resourceVersion").unwrap_or("")}),
    )
}

/// How the events of one watch are written.
pub struct Encoder {
    format: Format,
    api_version: String,
    info: Arc<ResourceInfo>,
    /// A custom resource's definition (its Table columns).
    custom: Option<Arc<Custom>>,
    /// Converts objects stored in another version (resources served in several).
    versions: Option<Arc<crate::versions::Versions>>,
}

impl Encoder {
    pub fn new(format: Format, info: Arc<ResourceInfo>) -> Encoder {
        Encoder {
            format,
            api_version: info.api_version(),
            info,
            custom: None,
            versions: None,
        }
    }

    /// The encoder of a served resource's events (a custom resource's Tables by its
    /// definition's columns).
    pub fn of(format: Format, res: &crate::routes::Resource) -> Encoder {
        Encoder {
            custom: res.custom.clone(),
            versions: res.versions.clone(),
            ..Encoder::new(format, res.info.clone())
        }
    }

    /// The version this encoder converts objects to, when its resource is served in several
    /// (what its encodings of an event are shared by).
    pub fn converts_to(&self) -> Option<&std::sync::Arc<str>> {
        self.versions.as_ref().map(|v| &v.request)
    }

    /// Whether the stored object `bytes` is sent converted (in another version).
    pub fn converts(&self, bytes: &[u8]) -> bool {
        self.versions.as_ref().is_some_and(|v| v.converts(bytes))
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether a stored object last written at `mod_revision` goes out pruned and defaulted:
    /// a custom resource's object that may predate its schema (`Custom::decodes_read`).
    pub fn decodes(&self, mod_revision: keel_engine::Revision) -> bool {
        self.custom
            .as_ref()
            .is_some_and(|c| c.decodes_read(mod_revision))
    }

    /// The custom resource's definition this encoder was made from has been replaced: its
    /// watches end (`Custom::retired`).
    pub fn retired(&self) -> bool {
        self.custom.as_ref().is_some_and(|c| c.is_retired())
    }

    /// For a custom resource's encoder: a future that completes once its definition is
    /// retired (made before `retired` is checked, it misses no retirement).
    pub fn retirement(&self) -> Option<tokio::sync::futures::OwnedNotified> {
        self.custom.as_ref().map(|c| c.retired.wait())
    }

    /// Whether any stored object may go out pruned and defaulted (`decodes` is true for
    /// some revision).
    pub fn decodes_any(&self) -> bool {
        self.custom
            .as_ref()
            .is_some_and(|c| c.decodes_read(keel_engine::Revision::ZERO))
    }

    /// A custom resource's object pruned and defaulted by its schema, as every read of
    /// upstream's decodes it (for objects a webhook converted, which no stored revision
    /// vouches for).
    pub fn decode(&self, obj: &mut Value) {
        if let Some(c) = &self.custom {
            c.decode(obj);
        }
    }

    /// Appends the event of type `kind` for the stored object `bytes` last written at
    /// `mod_revision`: as [`Encoder::event`], pruned and defaulted first if the object may
    /// predate its schema (then converted to the request's version first, as a read does).
    pub fn event_at(
        &self,
        out: &mut Vec<u8>,
        kind: &str,
        bytes: &[u8],
        mod_revision: keel_engine::Revision,
    ) {
        if !self.decodes(mod_revision) {
            return self.event(out, kind, bytes);
        }
        let converted;
        let bytes = match self
            .versions
            .as_ref()
            .map(|v| v.bytes_to_request_at_once(bytes))
        {
            Some(Some(Ok(b))) => {
                converted = b;
                &*converted
            }
            Some(Some(Err(e))) => return self.error(out, &e),
            _ => bytes,
        };
        let Ok(mut obj) = serde_json::from_slice::<Value>(bytes) else {
            return self.event(out, kind, bytes);
        };
        self.decode(&mut obj);
        self.encode_converted(out, kind, &crate::objects::to_canonical_json(&obj));
    }

    /// Appends the event of type `kind` for the stored object `bytes`.
    pub fn event(&self, out: &mut Vec<u8>, kind: &str, bytes: &[u8]) {
        let converted;
        let bytes = match &self.versions {
            Some(v) => match v.bytes_to_request_at_once(bytes) {
                Some(Ok(b)) => {
                    converted = b;
                    &*converted
                }
                // As upstream's watch, which ends with the conversion's error.
                Some(Err(e)) => return self.error(out, &e),
                // A webhook's conversion: the watch converts after the feed
                // (`handlers::watch`) and its encoder converts nothing.
                None => {
                    let e = ApiError::internal(
                        "an event that needs a conversion webhook reached a feed encoder",
                    );
                    return self.error(out, &e);
                }
            },
            None => bytes,
        };
        self.encode_converted(out, kind, bytes);
    }

    /// Appends the event of type `kind` for `bytes`, an object in the request's version.
    fn encode_converted(&self, out: &mut Vec<u8>, kind: &str, bytes: &[u8]) {
        match self.format {
            Format::Json => json_event_line(out, kind, bytes),
            Format::Yaml => unreachable!("watches refuse YAML before an encoder is made"),
            Format::Protobuf => {
                if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
                    if let Ok(frame) = keel_proto::encode_watch_event(kind, &v) {
                        out.extend_from_slice(&frame);
                    }
                }
            }
            Format::Table => {
                if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
                    let t = object_table(&self.info, self.custom.as_deref(), &v);
                    self.value_event(out, kind, &t);
                }
            }
            // Upstream sends no event it cannot give in the list form.
            Format::Metadata(m) if m.list => {}
            Format::Metadata(m) => {
                if let Ok(v) = m.of_stored(bytes) {
                    self.value_event(out, kind, &v);
                }
            }
        }
    }

    pub(crate) fn value_event(&self, out: &mut Vec<u8>, kind: &str, v: &Value) {
        match self.format {
            Format::Protobuf | Format::Metadata(MetadataAs { protobuf: true, .. }) => {
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

    /// A BOOKMARK event at `rev`.
    pub fn bookmark(&self, out: &mut Vec<u8>, rev: keel_engine::Revision) {
        self.bookmark_with(out, json!({"resourceVersion": rev.to_string()}));
    }

    /// A BOOKMARK whose object (of the watched kind, or its metadata form) has `metadata`.
    pub(crate) fn bookmark_with(&self, out: &mut Vec<u8>, metadata: Value) {
        let v = match self.format {
            Format::Metadata(m) if m.list => return,
            Format::Metadata(m) => m.of_metadata(metadata),
            _ => {
                json!({"kind": self.info.kind, "apiVersion": self.api_version, "metadata": metadata})
            }
        };
        self.value_event(out, "BOOKMARK", &v);
    }

    /// The BOOKMARK that ends a streaming list's initial events: the state's revision and
    /// the annotation `k8s.io/initial-events-end: "true"`.
    pub fn initial_events_end(&self, out: &mut Vec<u8>, rev: keel_engine::Revision) {
        self.bookmark_with(
            out,
            json!({
                "resourceVersion": rev.to_string(),
                "annotations": {keel_api::rv::INITIAL_EVENTS_END_ANNOTATION: "true"}
            }),
        );
    }

    /// An ERROR event carrying `e`.
    pub fn error(&self, out: &mut Vec<u8>, e: &ApiError) {
        self.value_event(out, "ERROR", &e.to_value());
    }
}

/// Appends the JSON watch line `{"type":kind,"object":object}\n` for the stored `object`.
pub fn json_event_line(out: &mut Vec<u8>, kind: &str, object: &[u8]) {
    out.reserve(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
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
        let meta = |a: &str| negotiate(Some(a), true, false);
        assert_eq!(
            meta("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").unwrap(),
            Format::Metadata(MetadataAs {
                protobuf: false,
                list: true,
                v1beta1: false
            })
        );
        // Protobuf metadata is offered even where the kind has no protobuf form.
        assert_eq!(
            meta("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1").unwrap(),
            Format::Metadata(MetadataAs { protobuf: true, list: false, v1beta1: true })
        );
        for unknown in [
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
            "application/json;as=PartialObjectMetadata;g=other;v=v1",
            "application/json;as=Partial;g=meta.k8s.io;v=v1",
        ] {
            assert_eq!(meta(unknown).unwrap_err().code, 406, "{unknown}");
        }
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
}
