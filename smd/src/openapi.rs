//! A [`Schema`] from OpenAPI definitions (v2 `definitions` or v3 `components.schemas`),
//! following upstream's `schemaconv` (kube-openapi), so built-in types and custom resources'
//! structural schemas get the same markers:
//!
//! - `type: object`: a map; `properties` are its fields (with their `default`),
//!   `additionalProperties` its element type (a schema, or deduced when `true`), none at all
//!   means a free-form object of deduced values; `x-kubernetes-map-type` atomic|granular.
//! - `type: array`: a list of `items`; `x-kubernetes-list-type` atomic|set|map with
//!   `x-kubernetes-list-map-keys`; without it, `x-kubernetes-patch-strategy: merge` reads as a
//!   map list keyed by `x-kubernetes-patch-merge-key`, or a set without a key (Apply rule 9);
//!   otherwise atomic.
//! - scalars by `type`; no `type` at all: any of scalar, list, map.
//! - `$ref` (or a single-element `allOf` of one) names the referenced definition, carrying a
//!   use-site `x-kubernetes-map-type`.
//! - `x-kubernetes-preserve-unknown-fields: true` makes objects below it take unknown keys
//!   as deduced values.
//! - Quantity is an untyped scalar and RawExtension deduced, as upstream hard-codes them.
//!
//! Errors (unknown list or map types, map lists without keys, arrays without `items`) are
//! collected and returned together, each prefixed by the definition it is in.
//!
//! Not done: unions (`x-kubernetes-unions`), which upstream no longer uses for apply.

use crate::schema::{
    Atom, ElementRelationship, ListType, MapType, Scalar, Schema, StructField, TypeRef,
    UNTYPED_ATOMIC,
};
use serde_json::{Map, Value};

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

/// Converts named OpenAPI schemas. Definitions that are only a `$ref` are skipped.
pub fn schema_from_openapi<'a, I>(definitions: I) -> Result<Schema, String>
where
    I: IntoIterator<Item = (&'a str, &'a Value)>,
{
    let mut out = Schema::new();
    let mut errors = Vec::new();
    for (name, def) in definitions {
        if def.get("$ref").is_some() {
            continue;
        }
        let atom = match name {
            QUANTITY => Atom::scalar(),
            RAW_EXTENSION => Atom::deduced(),
            _ => {
                let mut c = Convert {
                    name,
                    preserve_unknown: false,
                    errors: &mut errors,
                };
                c.atom(def)
            }
        };
        out.types.insert(name.to_string(), atom);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors.join("\n"))
    }
}

struct Convert<'e> {
    name: &'e str,
    preserve_unknown: bool,
    errors: &'e mut Vec<String>,
}

fn obj(v: &Value) -> Option<&Map<String, Value>> {
    v.as_object()
}

impl Convert<'_> {
    fn error(&mut self, msg: String) {
        self.errors.push(format!("{}: {msg}", self.name));
    }

    fn atom(&mut self, s: &Value) -> Atom {
        if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            self.preserve_unknown = true;
        }
        let typ = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or(""),
            _ => "",
        };
        match typ {
            "" => Atom {
                scalar: Some(Scalar::Untyped),
                list: Some(self.list(s)),
                map: Some(self.map(s)),
            },
            "object" => Atom {
                map: Some(self.map(s)),
                ..Atom::default()
            },
            "array" => Atom {
                list: Some(self.list(s)),
                ..Atom::default()
            },
            "integer" | "number" => scalar(Scalar::Numeric),
            "boolean" => scalar(Scalar::Boolean),
            "string" => match s.get("format").and_then(Value::as_str).unwrap_or("") {
                "" | "byte" => scalar(Scalar::String),
                _ => scalar(Scalar::Untyped),
            },
            other => {
                self.error(format!("unrecognized type: '{other}'"));
                scalar(Scalar::Untyped)
            }
        }
    }

    fn type_ref(&mut self, s: &Value) -> TypeRef {
        let reference = s.get("$ref").and_then(Value::as_str).or_else(|| {
            match s.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                Some([only]) => only.get("$ref").and_then(Value::as_str),
                _ => None,
            }
        });
        if let Some(name) = reference
            .and_then(|r| r.rsplit('/').next())
            .filter(|n| !n.is_empty())
        {
            let mut tr = TypeRef::named(name);
            tr.relationship = self.map_relationship(s);
            return tr;
        }
        let mut inner = Convert {
            name: self.name,
            preserve_unknown: self.preserve_unknown,
            errors: self.errors,
        };
        TypeRef::inline(inner.atom(s))
    }

    fn map_relationship(&mut self, s: &Value) -> Option<ElementRelationship> {
        match s.get("x-kubernetes-map-type")? {
            Value::String(t) if t == "atomic" => Some(ElementRelationship::Atomic),
            Value::String(t) if t == "granular" => Some(ElementRelationship::Separable),
            other => {
                self.error(format!("unknown map type {other}"));
                None
            }
        }
    }

    fn map(&mut self, s: &Value) -> MapType {
        let mut fields = Vec::new();
        let properties = s.get("properties").and_then(obj);
        for (name, member) in properties.into_iter().flatten() {
            let mut f = StructField::new(name.clone(), self.type_ref(member));
            f.default = member.get("default").cloned();
            fields.push(f);
        }
        let element_type = match s.get("additionalProperties") {
            None if self.preserve_unknown || properties.is_none_or(|p| p.is_empty()) => {
                Some(TypeRef::deduced())
            }
            // Unknown keys are refused by validation before they get here.
            None | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(TypeRef::deduced()),
            Some(schema) => Some(self.type_ref(schema)),
        };
        MapType {
            fields,
            element_type,
            relationship: self.map_relationship(s).unwrap_or_default(),
            ..MapType::default()
        }
    }

    fn list(&mut self, s: &Value) -> ListType {
        let (relationship, keys) = self.list_relationship(s);
        let element_type = match s.get("items") {
            Some(items @ Value::Object(_)) => self.type_ref(items),
            Some(_) => {
                self.error("structural schema arrays must have exactly one member subtype".into());
                TypeRef::deduced()
            }
            None => {
                if s.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.is_empty())
                {
                    self.error("`items` must be specified on arrays".into());
                }
                TypeRef::named(UNTYPED_ATOMIC)
            }
        };
        ListType {
            element_type,
            relationship,
            keys,
        }
    }

    fn list_relationship(&mut self, s: &Value) -> (ElementRelationship, Vec<String>) {
        use ElementRelationship::{Associative, Atomic};
        if let Some(t) = s.get("x-kubernetes-list-type") {
            return match t.as_str() {
                Some("atomic") => (Atomic, Vec::new()),
                Some("set") => (Associative, Vec::new()),
                Some("map") => match s
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                {
                    Some(keys) => (
                        Associative,
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect(),
                    ),
                    None => {
                        self.error("missing map keys".into());
                        (Associative, Vec::new())
                    }
                },
                _ => {
                    self.error(format!("unknown list type {t}"));
                    (Atomic, Vec::new())
                }
            };
        }
        if let Some(strategy) = s.get("x-kubernetes-patch-strategy") {
            return match strategy.as_str() {
                Some("merge" | "merge,retainKeys") => match s.get("x-kubernetes-patch-merge-key") {
                    Some(Value::String(k)) => (Associative, vec![k.clone()]),
                    Some(other) => {
                        self.error(format!("uninterpreted merge key: {other}"));
                        (Associative, Vec::new())
                    }
                    None => (Associative, Vec::new()),
                },
                Some("retainKeys") => (Atomic, Vec::new()),
                _ => {
                    self.error(format!("unknown patch strategy {strategy}"));
                    (Atomic, Vec::new())
                }
            };
        }
        (Atomic, Vec::new())
    }
}

fn scalar(s: Scalar) -> Atom {
    Atom {
        scalar: Some(s),
        ..Atom::default()
    }
}

/// The names of the definitions `v` refers to (`$ref`s, at any depth), in document order:
/// what a caller walks to collect the definitions a kind's schema needs.
pub fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r.rsplit('/').next().unwrap_or_default().to_string());
            }
            m.values().for_each(|c| collect_refs(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}
