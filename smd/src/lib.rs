//! keel-smd: the server-side apply algebra, with the semantics of upstream's
//! sigs.k8s.io/structured-merge-diff (v6, as Kubernetes v1.36 vendors it).
//!
//! - [`fieldpath`]: path elements, paths and field sets (union, intersection, difference,
//!   leaves).
//! - [`fieldsv1`]: the FieldsV1 codec of a set, byte for byte as upstream writes it.
//! - [`schema`]: the type description the typed operations consume, a plain data type of
//!   named types (so keel's OpenAPI schemas, and custom resources' own, can be adapted to it).
//! - [`typed`]: operations on JSON objects under a schema: the field set an object sets,
//!   comparison, merge of an applied configuration, removal of a field set.
//! - [`updater`]: ownership: `update` (an Update operation takes the fields it changed) and
//!   `apply` (conflicts, force, pruning fields the applier stopped applying), with upstream's
//!   conflict message text.
//! - [`openapi`]: the schema built from OpenAPI definitions (built-in types' published
//!   documents, custom resources' structural schemas) as upstream's `schemaconv` builds it.
//! - [`managedfields`]: `metadata.managedFields` entries decoded into managers and encoded
//!   back in upstream's order.
//!
//! Invariants: pure functions, no I/O, no server types; bad input (an object that does not
//! fit its schema, malformed FieldsV1) is an error value, never a panic.
//!
//! Depends on nothing of keel's, only `serde_json` (with `preserve_order`).
//!
//! Not done (see each module): version conversion between managers' API versions (every
//! set is taken to be at the object's version, so reset fields are one set); and the parts
//! of upstream's flow that belong to the caller: stripping metadata/typemeta fields from
//! sets, the cap on Update managers, the `[{}]` reset (rule 15), building the type's zero
//! value as the live object of a create.

pub mod fieldpath;
pub mod fieldsv1;
pub mod managedfields;
pub mod openapi;
pub mod schema;
pub mod typed;
pub mod updater;
pub mod value;

pub use fieldpath::{Path, PathElement, Set};
pub use fieldsv1::FieldsV1Error;
