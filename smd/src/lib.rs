//! keel-smd: the server-side apply algebra, with the semantics of upstream's
//! sigs.k8s.io/structured-merge-diff (v6, as Kubernetes v1.36 vendors it).
//!
//! - [`fieldpath`]: path elements, paths and field sets (union, intersection, difference,
//!   leaves).
//! - [`fieldsv1`]: the FieldsV1 codec of a set, byte for byte as upstream writes it, and
//!   edits of FieldsV1 values in place (remove, add, intersects, contains), so a caller
//!   need not decode the entries an operation does not touch.
//! - [`schema`]: the type description the typed operations consume, a plain data type of
//!   named types (so keel's OpenAPI schemas, and custom resources' own, can be adapted to it).
//! - [`typed`]: operations on JSON objects under a schema: the field set an object sets,
//!   comparison (skipping equal subtrees and given fields), merge of an applied
//!   configuration, removal of a field set; the FieldsV1 of what changed built directly,
//!   and an object's shape signature (what those results depend on, for caching them).
//! - [`updater`]: ownership: `update` (an Update operation takes the fields it changed) and
//!   `apply` (conflicts, force, pruning fields the applier stopped applying), with upstream's
//!   conflict message text.
//! - [`openapi`]: the schema built from OpenAPI definitions (built-in types' published
//!   documents, custom resources' structural schemas) as upstream's `schemaconv` builds it.
//! - [`managedfields`]: `metadata.managedFields` entries decoded into managers and encoded
//!   back in upstream's order; the cap on Update entries (`ancient-changes`).
//! - [`value`]: upstream's total order and equality of JSON values and Go's text forms of
//!   them (JSON in FieldsV1 keys, `%v`/`%q` in path strings).
//!
//! Invariants: pure functions, no I/O, no server types; bad input (an object that does not
//! fit its schema, malformed FieldsV1) is an error value, never a panic.
//!
//! Depends on nothing of keel's, only `serde_json` (with `preserve_order`) and `foldhash`
//! (the schema's type index); keel-schema is a
//! dev-dependency, for tests on the published Kubernetes definitions.
//!
//! Not done (see each module): version conversion between managers' API versions (every
//! set is taken to be at the object's version, so reset fields are one set); and the parts
//! of upstream's flow that belong to the caller: stripping metadata/typemeta fields from
//! sets, the `[{}]` reset (rule 15), building the type's zero value as the live object of a
//! create, calling [`managedfields::cap_update_managers`] after each Update.
//!
//! # Example
//!
//! A ConfigMap-like type whose `data` is a granular map: two appliers own different keys;
//! changing the other's key conflicts, with upstream's message, unless forced.
//!
//! ```
//! use keel_smd::schema::{Atom, ElementRelationship, Schema, StructField, TypeRef};
//! use keel_smd::updater::{ManagerKey, Managers, Updater};
//! use serde_json::json;
//!
//! let data = Atom::map(TypeRef::scalar(), ElementRelationship::Separable);
//! let schema = Schema::new().with_type(
//!     "ConfigMap",
//!     Atom::structure(vec![StructField::new("data", TypeRef::inline(data))]),
//! );
//! let root = TypeRef::named("ConfigMap");
//! let updater = Updater::new(&schema, &root);
//! let (alice, bob) = (ManagerKey::apply("alice", ""), ManagerKey::apply("bob", ""));
//!
//! let a = updater
//!     .apply(&json!({}), &json!({"data": {"a": "1"}}), "v1", Managers::new(), &alice, false)
//!     .unwrap();
//! assert_eq!(a.managers[&alice].set.to_fields_v1(), r#"{"f:data":{"f:a":{}}}"#);
//!
//! let err = updater
//!     .apply(&a.object, &json!({"data": {"a": "2"}}), "v1", a.managers.clone(), &bob, false)
//!     .unwrap_err();
//! assert_eq!(err.to_string(), r#"Apply failed with 1 conflict: conflict with "alice": .data.a"#);
//!
//! let b = updater
//!     .apply(&a.object, &json!({"data": {"a": "2"}}), "v1", a.managers, &bob, true)
//!     .unwrap();
//! assert_eq!(b.object, json!({"data": {"a": "2"}}));
//! assert!(!b.managers.contains_key(&alice), "alice owned nothing else");
//! ```

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
