//! keel's pure API semantics: `Status` errors, object names, label and field selectors, the
//! three patch formats, the resourceVersion / pagination rules, timestamps, YAML as
//! kube-apiserver reads and writes it, and Go's renderings of values in messages (`gofmt`:
//! `%q`, `%v` and `encoding/json` of decoded numbers and values, shared by apiext, catalog and
//! strategy).
//!
//! Invariants: everything here is a pure function over values (no I/O, no clock, no async
//! runtime); bad client input is returned as an [`status::ApiError`], never a panic. Messages,
//! codes and reasons that clients match on follow the upstream Kubernetes API server.
//!
//! May depend on: serde/serde_json, serde_yaml_ng (YAML bodies and responses), base64, fastrand
//! (name generation), json-patch, and keel-revision (the `Revision` type of the resourceVersion
//! rules).

// `ApiError` is a plain struct with the fields of a `Status` (its shape is part of the crate's
// contract); errors are the cold path, so returning it by value is fine.
#![allow(clippy::result_large_err)]

pub mod gofmt;
pub mod jsonmap;
pub mod meta;
pub mod names;
pub mod patch;
pub mod rv;
pub mod selectors;
pub mod status;
pub mod strfmt;
pub mod time;
pub mod yaml;

pub use status::{ApiError, StatusCause};
