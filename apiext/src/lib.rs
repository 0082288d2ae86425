//! A CustomResourceDefinition version's `openAPIV3Schema` applied to custom resources the way
//! a Kubernetes v1.36 API server applies it: pruning of unknown fields (with the paths strict
//! decoding reports), structural defaulting, value validation with upstream's field paths,
//! reasons and messages, list-type uniqueness, embedded-resource checks, validation ratcheting
//! on update, and the list/map-type markers server-side apply needs.
//!
//! A [`Schema`] is compiled once per served CRD version and shared (`Arc<Schema>`): it is
//! immutable, `Send + Sync`. A create runs, like upstream's decode and strategy:
//!
//! ```
//! # use serde_json::json;
//! let schema = keel_apiext::Schema::compile(&json!({"type": "object", "properties": {
//!     "spec": {"type": "object", "properties": {
//!         "replicas": {"type": "integer", "minimum": 1, "default": 1}}}}}))?;
//! let mut obj = json!({"apiVersion": "a.example.com/v1", "kind": "Thing",
//!                      "metadata": {"name": "t"}, "spec": {"replicas": 0, "extra": true}});
//! // Strict field validation: 400 with `unknown field "spec.extra"`; Warn: a warning each.
//! assert_eq!(schema.prune(&mut obj), vec!["spec.extra"]);
//! schema.apply_defaults(&mut obj);
//! // Then 422 Invalid with these causes (after the server's own metadata checks).
//! let causes = schema.validate(&obj);
//! assert_eq!(causes[0].field, "spec.replicas");
//! assert_eq!(causes[0].message,
//!     "Invalid value: 0: spec.replicas in body should be greater than or equal to 1");
//! # Ok::<(), String>(())
//! ```
//!
//! Invariants: pure logic, no I/O, no async, no global state beyond lazily compiled constant
//! regular expressions. Bad input (odd schemas, deep or odd objects) yields values, never
//! panics; every recursion and collection is bounded by a constant in [`limits`].
//! Where upstream's order is Go's random map order (sibling properties), this crate uses the
//! schema's property names sorted (validation) or the object's member order (the rest).
//!
//! May depend on: serde_json, keel-api (field-error causes, Go quoting, ObjectMeta checks),
//! regex (`pattern` and formats; Go's RE2 syntax, Perl classes made ASCII in `gore.rs`),
//! keel-cel (evaluating `x-kubernetes-validations`).
//!
//! Numbers follow upstream's decoding: an integral JSON number that fits is an int64, any
//! other (`1.0`, `1e3`, beyond int64) a float64, and messages print them as Go does (`1e+06`).
//!
//! Not covered (upstream differs):
//! - Scale subresource checks; root `metadata` checks. `x-kubernetes-validations` (CEL) rules
//!   are evaluated (`celrules.rs` lists what differs).
//! - Root `metadata` is only stripped of non-ObjectMeta fields here; the server does the
//!   rest of upstream's round trip through the typed ObjectMeta (a malformed one is a 400
//!   with Go's decoding error, empty values are dropped). An embedded resource's malformed
//!   `metadata` gets Go's JSON error text upstream; here its bad members are skipped.
//! - Format `creditcard` is approximated (a Luhn check); `duration` does not check Go's
//!   overflow; `uri` does not check bracketed IPv6 hosts; `email` ignores comments and
//!   RFC 2047 encoded words (see `formats.rs`).
//! - Sibling properties are validated in sorted name order; upstream's order is Go's random
//!   map order (it varies from request to request on a real server).

mod celrules;
mod compile;
mod defaults;
mod embedded;
mod formats;
mod gore;
pub mod limits;
mod listtype;
mod props;
mod prune;
mod quick;
mod render;
mod rule;
mod validate;

#[cfg(test)]
mod tests;

use keel_api::status::StatusCause;
use serde_json::Value;

/// A CRD version's schema, compiled.
#[derive(Debug)]
pub struct Schema {
    root: compile::Node,
    /// Some node is an embedded resource (else the embedded-resource walk is skipped).
    has_embedded: bool,
    /// Some list is a `set` or `map` (else the uniqueness walk is skipped).
    has_unique_lists: bool,
    /// Some node has `x-kubernetes-validations` (else the CEL walk is skipped).
    has_rules: bool,
}

/// `x-kubernetes-list-type` of a list (absent means atomic for server-side apply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    Atomic,
    Set,
    /// `map` with its `x-kubernetes-list-map-keys`.
    Map(Vec<String>),
}

/// `x-kubernetes-map-type` of an object (absent means granular).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapType {
    Granular,
    Atomic,
}

/// What one schema node says about its values' shape: what server-side apply's typed merge
/// and Table printing need to walk the schema without this crate's internals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// `type`; `["integer", "string"]` for `x-kubernetes-int-or-string`; empty if unset.
    pub types: Vec<String>,
    /// `format` as upstream keeps it (unsupported formats dropped).
    pub format: String,
    pub nullable: bool,
    /// Property names, sorted.
    pub properties: Vec<String>,
    /// Whether `additionalProperties` gives a schema for other members ([`Schema::node`]
    /// with any member name returns it).
    pub additional_properties: bool,
    /// Whether the node has an `items` schema (entered with [`ITEMS`]).
    pub items: bool,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    /// For arrays: the list type (absent marker: atomic).
    pub list_type: Option<ListType>,
    /// For objects: the map type (absent marker: granular).
    pub map_type: Option<MapType>,
}

/// The path element that enters a list's items in [`Schema::list_type`] / [`Schema::map_type`].
pub const ITEMS: &str = "[]";

impl Schema {
    /// Compiles `openAPIV3Schema` as stored in the CRD. The CRD was validated already, so
    /// unknown keywords are ignored; `Err` only for something unusable (not an object, beyond
    /// the [`limits`]).
    pub fn compile(open_api_v3_schema: &Value) -> Result<Schema, String> {
        let mut root = compile::compile(open_api_v3_schema)?;
        // Defaults are pruned by their own nodes' schemas once, here.
        prune::prune_defaults(&mut root, 0);
        Ok(Schema {
            has_embedded: compile::any_node(&root, &|n| n.embedded),
            has_unique_lists: compile::any_node(&root, &|n| {
                matches!(n.list_type.as_deref(), Some("set" | "map"))
            }),
            has_rules: root.rules_below,
            root,
        })
    }

    /// Removes every field the schema does not specify and returns the removed paths in the
    /// order upstream's strict decoding reports them (`unknown field "<path>"`): the root
    /// `metadata`'s non-ObjectMeta fields first (`metadata.foo`), then the pruned paths sorted
    /// (`spec.foo`, `spec.items[0].x`), then nested embedded resources' metadata fields. The
    /// root's `apiVersion`, `kind` and `metadata` are always kept. Also drops `null`s the
    /// schema neither allows nor defaults (not reported), as upstream's decoder does.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune_object(obj, &self.root, self.has_embedded)
    }

    /// Applies the schema's defaults (after [`Schema::prune`]; defaults were pruned by their
    /// own schema at compile time, as upstream does).
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaults::apply(obj, &self.root, 0);
    }

    /// Validates a new object: schema value validations, then embedded resources, then list
    /// types, then the CEL rules (`x-kubernetes-validations`) unless an earlier error makes
    /// the object unfit for them, as upstream's strategy orders them. Root `metadata` is left
    /// to the server.
    pub fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        let mut errs = if quick::surely_valid(&self.root, obj) {
            Vec::new()
        } else {
            validate::Validator { ratchet: false }.root(&self.root, obj, None)
        };
        if self.has_embedded {
            errs.extend(embedded::validate(&self.root, obj));
        }
        if self.has_unique_lists {
            errs.extend(listtype::validate(&self.root, obj));
        }
        self.validate_rules(errs, obj, None)
    }

    /// Appends the CEL rules' causes to `errs`, or the one saying they did not run.
    fn validate_rules(
        &self,
        mut errs: Vec<StatusCause>,
        obj: &Value,
        old: Option<&Value>,
    ) -> Vec<StatusCause> {
        if !self.has_rules {
            return errs;
        }
        match celrules::blocking(&errs) {
            Some(blocked) => errs.push(blocked),
            None => errs.extend(celrules::validate(&self.root, obj, old)),
        }
        errs
    }

    /// Validates an update's new object with ratcheting (CRDValidationRatcheting, on by
    /// default in v1.36): errors inside a property, map entry or map-list item whose value is
    /// unchanged from `old` are dropped; list-type errors are reported only if `old` had none;
    /// CEL rules skip unchanged values, and transition rules (`oldSelf`) run where `old` has
    /// a correlated value.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        // Ratcheting only drops errors: a value that surely passes has none to drop.
        let mut errs = if quick::surely_valid(&self.root, new) {
            Vec::new()
        } else {
            validate::Validator { ratchet: true }.root(&self.root, new, Some(old))
        };
        if self.has_embedded {
            errs.extend(embedded::validate(&self.root, new));
        }
        if self.has_unique_lists && listtype::validate(&self.root, old).is_empty() {
            errs.extend(listtype::validate(&self.root, new));
        }
        self.validate_rules(errs, new, Some(old))
    }

    /// The list type at `path` (field names; [`ITEMS`] enters a list's items), `None` when the
    /// path does not name a list in the schema. A list without marker is [`ListType::Atomic`].
    pub fn list_type(&self, path: &[&str]) -> Option<ListType> {
        let n = self.node_at(path)?;
        if !n.has_type("array") {
            return None;
        }
        Some(match n.list_type.as_deref() {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(n.list_map_keys.clone()),
            _ => ListType::Atomic,
        })
    }

    /// The map type at `path` (as in [`Schema::list_type`]), `None` when the path does not
    /// name an object in the schema.
    pub fn map_type(&self, path: &[&str]) -> Option<MapType> {
        let n = self.node_at(path)?;
        if !n.has_type("object") {
            return None;
        }
        Some(match n.map_type.as_deref() {
            Some("atomic") => MapType::Atomic,
            _ => MapType::Granular,
        })
    }

    /// The node at `path` (as in [`Schema::list_type`]); `None` when the schema has none there.
    pub fn node(&self, path: &[&str]) -> Option<NodeInfo> {
        let n = self.node_at(path)?;
        Some(NodeInfo {
            types: n.types.clone(),
            format: n.format.clone(),
            nullable: n.nullable,
            properties: n.properties.keys().cloned().collect(),
            additional_properties: matches!(n.additional, Some(compile::Additional::Schema(_))),
            items: n.items.is_some(),
            preserve_unknown_fields: n.preserve_unknown,
            embedded_resource: n.embedded,
            int_or_string: n.int_or_string,
            list_type: self.list_type(path),
            map_type: self.map_type(path),
        })
    }

    /// Whether the object at `path` keeps unknown fields (`x-kubernetes-preserve-unknown-fields`).
    pub fn preserves_unknown_fields(&self, path: &[&str]) -> bool {
        self.node_at(path).is_some_and(|n| n.preserve_unknown)
    }

    fn node_at(&self, path: &[&str]) -> Option<&compile::Node> {
        let mut n = &self.root;
        for el in path {
            n = if *el == ITEMS {
                n.items.as_deref()?
            } else {
                n.member(el)?.ok()?
            };
        }
        Some(n)
    }
}
