//! `/openapi/v2` in protobuf: gnostic's `openapi.v2.Document` (vendored
//! `k8s/github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto`), which is what client-go's
//! `OpenAPISchema()` requests and kubectl's client-side validation reads.

/// The messages generated from gnostic's `OpenAPIv2.proto` (package `openapi.v2`).
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod gnostic {
    include!(concat!(env!("OUT_DIR"), "/openapi.v2.rs"));
}
