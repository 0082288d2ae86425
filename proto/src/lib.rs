//! Kubernetes protobuf support for keel: the `application/vnd.kubernetes.protobuf` envelope
//! and JSON <-> protobuf transcoding for every built-in kind (and its List), so that
//! kubectl and client-go can talk protobuf to a server that keeps objects as JSON.
//!
//! How: build.rs compiles upstream's `generated.proto` files (vendored under `k8s/`, see
//! `k8s/update.sh`) into a descriptor set; `k8s/gofields.tsv`, extracted from upstream's Go
//! types, adds what the .proto files lack (JSON names, `omitempty`, pointers, inline
//! embedding, which messages are kinds). The `schema` module turns both into per-message
//! tables once (lazily, on first use); the `decode` and `encode` modules walk those tables,
//! `envelope` reads and writes the `k8s\0` + `runtime.Unknown` wrapper, and `frame` the
//! watch-stream frames.
//! The JSON produced by decoding is what Go's `encoding/json` prints for the same Go struct.
//!
//! Besides the Kubernetes types, [`openapi_v2`] converts the `/openapi/v2` JSON document into
//! gnostic's `openapi.v2.Document` (also vendored under `k8s/`, compiled into Rust types by
//! build.rs), the protobuf form client-go asks for.
//!
//! Invariants: bad input is an error value, never a panic; nesting is bounded by
//! [`MAX_NESTING_DEPTH`]. Pure functions: no I/O, no async, depends only on serde_json,
//! prost(-types), base64 and keel-api (its calendar arithmetic).

mod decode;
mod encode;
mod envelope;
mod frame;
mod normalize;
pub mod openapi_v2;
mod schema;
mod timefmt;
mod wire;
mod yaml;

use std::fmt;

use serde_json::Value;

pub use normalize::{drop_go_omitted, go_zero_value};

/// The 4-byte prefix of every protobuf body: `k8s\0`.
pub const MAGIC: [u8; 4] = *b"k8s\0";
/// Media type of protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// Media type of protobuf watch streams.
pub const STREAM_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Deepest nesting of messages (and of envelopes inside RawExtensions) accepted either way.
pub const MAX_NESTING_DEPTH: usize = 100;
/// Largest watch frame: its length prefix is a u32.
pub const WATCH_FRAME_LEN_MAX: usize = u32::MAX as usize;

/// Why a body could not be transcoded.
#[derive(Debug)]
pub enum ProtoError {
    /// The body does not start with [`MAGIC`].
    BadMagic,
    /// The body ends inside a value.
    Truncated,
    /// The body is not a valid encoding of the message it claims to be.
    Decode(String),
    /// (apiVersion, kind) has no protobuf message (CRDs, unknown kinds).
    UnknownKind { api_version: String, kind: String },
    /// The JSON object does not fit its message.
    Encode(String),
}

impl ProtoError {
    /// Adds one path segment (a JSON key or `[index]`) in front of the error's location.
    fn within(self, segment: impl fmt::Display) -> ProtoError {
        const AT: &str = " (at ";
        let locate = |msg: String| match msg.rfind(AT) {
            Some(i) if msg.ends_with(')') => {
                let rest = &msg[i + AT.len()..];
                let sep = if rest.starts_with('[') { "" } else { "." };
                format!("{}{AT}{segment}{sep}{rest}", &msg[..i])
            }
            _ => format!("{msg}{AT}{segment})"),
        };
        match self {
            ProtoError::Decode(m) => ProtoError::Decode(locate(m)),
            ProtoError::Encode(m) => ProtoError::Encode(locate(m)),
            other => other,
        }
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::BadMagic => write!(
                f,
                "protobuf body does not start with the Kubernetes prefix \"k8s\\x00\""
            ),
            ProtoError::Truncated => write!(f, "protobuf body is truncated"),
            ProtoError::Decode(m) => write!(f, "invalid protobuf body: {m}"),
            ProtoError::UnknownKind { api_version, kind } => {
                write!(
                    f,
                    "no protobuf serialization for kind {kind:?} in version {api_version:?}"
                )
            }
            ProtoError::Encode(m) => write!(f, "object cannot be encoded as protobuf: {m}"),
        }
    }
}

impl std::error::Error for ProtoError {}

/// Whether (apiVersion, kind) has a protobuf message (all built-in kinds and their Lists,
/// plus the meta.k8s.io/v1 kinds such as Status and DeleteOptions in every built-in group
/// version; not CRDs).
pub fn supports(api_version: &str, kind: &str) -> bool {
    schema::SCHEMA.kind(api_version, kind).is_some()
}

/// Decodes MAGIC + Unknown into the object's JSON form, with apiVersion and kind set from
/// typeMeta.
pub fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    decode::decode_at(body, 0)
}

/// Encodes an object (must carry apiVersion and kind; Lists included) as MAGIC + Unknown.
pub fn encode(obj: &Value) -> Result<Vec<u8>, ProtoError> {
    envelope::encode(obj)
}

/// One frame of a protobuf watch stream exactly as client-go reads it: a 4-byte big-endian
/// length, then `metav1.WatchEvent{type, object: RawExtension{raw: encode(obj)}}`.
pub fn encode_watch_event(event_type: &str, obj: &Value) -> Result<Vec<u8>, ProtoError> {
    frame::encode_watch_event(event_type, obj)
}

/// Reads one frame made by [`encode_watch_event`] (or upstream): (event type, object).
/// `frame` must start at the length prefix; bytes after the frame are ignored.
pub fn decode_watch_event(frame: &[u8]) -> Result<(String, Value), ProtoError> {
    frame::decode_watch_event(frame)
}

/// Builds the lookup tables now instead of on first use (e.g. at server start).
pub fn warm_up() {
    std::sync::LazyLock::force(&schema::SCHEMA);
}
