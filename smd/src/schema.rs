//! The schema the typed operations consume: named types, each an [`Atom`] that may
//! describe a scalar, a list and/or a map (a value picks the part matching its JSON kind, as
//! upstream's `deduceAtom` does). Structs are maps with declared fields; a map's
//! `element_type` types the keys that are not declared fields.
//!
//! The [`Schema::deduced`] type is upstream's `__untyped_deduced_`: maps behave as granular
//! structs of deduced values, lists are atomic (Apply rule 10, custom resources without
//! markers). It is always resolvable as [`DEDUCED`], so a schema needs not declare it; so is
//! [`UNTYPED_ATOMIC`], where lists and maps are atomic too.
//!
//! Lenience (a deliberate difference): a map key that is neither a declared field nor
//! covered by an element type is treated as deduced rather than a schema error, since objects
//! reach this crate already validated and pruned.

use crate::fieldpath::PathElement;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The name under which the deduced type resolves.
pub const DEDUCED: &str = "__untyped_deduced_";

/// The name under which upstream's fully atomic untyped type resolves (the elements of a
/// deduced list, and of OpenAPI arrays without `items`).
pub const UNTYPED_ATOMIC: &str = "__untyped_atomic_";

/// Whether a list's or map's items are owned one by one or only as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ElementRelationship {
    /// `atomic`: replaced whole, one owner.
    Atomic,
    /// Lists: `set` (no keys) or `map` (keys). Items owned separately.
    Associative,
    /// Maps and structs: `granular`, keys owned separately.
    #[default]
    Separable,
}

/// A reference to a type: by name, or inline; `relationship` overrides the element
/// relationship of the referenced list or map at this use site (upstream's
/// `TypeRef.ElementRelationship`, e.g. a struct field marked `x-kubernetes-map-type: atomic`).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeRef {
    pub named: Option<String>,
    pub inlined: Option<Box<Atom>>,
    pub relationship: Option<ElementRelationship>,
    /// What [`Schema::resolve`] learnt of this reference (a walk resolves a use site once
    /// per value it meets there).
    pub cache: RefCache,
}

/// [`TypeRef::cache`]; it takes no part in the reference's equality.
#[derive(Clone, Debug, Default)]
pub struct RefCache {
    /// Where the named type is in the schema's types (checked against the name on every
    /// use, so a reference resolved against another schema only misses): a walk hashed
    /// the type's long name at every node.
    index: OnceLock<u32>,
    /// The atom with `relationship` applied, and the schema it was made from (its
    /// address): copying the atom at every value was a fifth of a Pod's shape signature.
    overridden: OnceLock<(usize, Box<Atom>)>,
}

impl PartialEq for RefCache {
    fn eq(&self, _: &RefCache) -> bool {
        true
    }
}

impl TypeRef {
    pub fn named(name: impl Into<String>) -> TypeRef {
        TypeRef {
            named: Some(name.into()),
            inlined: None,
            relationship: None,
            cache: RefCache::default(),
        }
    }

    pub fn inline(atom: Atom) -> TypeRef {
        TypeRef {
            named: None,
            inlined: Some(Box::new(atom)),
            relationship: None,
            cache: RefCache::default(),
        }
    }

    pub fn deduced() -> TypeRef {
        TypeRef::named(DEDUCED)
    }

    pub fn scalar() -> TypeRef {
        TypeRef::inline(Atom::scalar())
    }

    /// The same reference, with its element relationship overridden.
    pub fn with_relationship(mut self, r: ElementRelationship) -> TypeRef {
        self.relationship = Some(r);
        self.cache = RefCache::default();
        self
    }
}

/// Scalar kinds. The algebra treats them alike; they are kept for adapters and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scalar {
    Numeric,
    String,
    Boolean,
    #[default]
    Untyped,
}

/// A list type.
#[derive(Clone, Debug, PartialEq)]
pub struct ListType {
    pub element_type: TypeRef,
    pub relationship: ElementRelationship,
    /// `x-kubernetes-list-map-keys`; empty for a set or an atomic list.
    pub keys: Vec<String>,
}

/// A declared struct field.
#[derive(Clone, Debug, PartialEq)]
pub struct StructField {
    pub name: String,
    /// `name` as a path element, shared by every path through this field.
    pub element: PathElement,
    pub type_ref: TypeRef,
    /// The default, used for a list-map key an item omits (e.g. a port's `protocol: TCP`).
    pub default: Option<Value>,
}

impl StructField {
    pub fn new(name: impl Into<String>, type_ref: TypeRef) -> StructField {
        let name = name.into();
        StructField {
            element: PathElement::field(&name),
            name,
            type_ref,
            default: None,
        }
    }

    pub fn with_default(mut self, v: Value) -> StructField {
        self.default = Some(v);
        self
    }
}

/// A map or struct type.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct MapType {
    pub fields: Vec<StructField>,
    /// The type of keys that are not declared fields (a map's values).
    pub element_type: Option<TypeRef>,
    pub relationship: ElementRelationship,
    /// `fields`' positions sorted by name, built on the first lookup of a struct with many.
    pub by_name: FieldIndex,
}

/// A lazily built name index of a struct's fields (see [`MapType::field`]); it takes no part
/// in the type's equality.
#[derive(Clone, Debug, Default)]
pub struct FieldIndex(OnceLock<HashMap<Box<str>, u32, foldhash::fast::FixedState>>);

impl PartialEq for FieldIndex {
    fn eq(&self, _: &FieldIndex) -> bool {
        true
    }
}

/// Up to this many fields a struct's field is found by a scan; beyond, by its name index (a
/// Pod spec has 40 fields, a container 25, a custom resource's spec as many as its schema
/// names). A hash lookup replaced a binary search of the sorted names, which was a third of a
/// Pod create's shape signature (its compares miss the cache on every probe).
const FIELD_SCAN_MAX: usize = 4;

impl MapType {
    pub fn field(&self, name: &str) -> Option<&StructField> {
        if self.fields.len() <= FIELD_SCAN_MAX {
            return self.fields.iter().find(|f| f.name == name);
        }
        let index = self.by_name.0.get_or_init(|| {
            let mut index =
                HashMap::with_capacity_and_hasher(self.fields.len(), Default::default());
            for (i, f) in self.fields.iter().enumerate() {
                // Of fields named alike, the first declared is found, as by the scan.
                index.entry(f.name.as_str().into()).or_insert(i as u32);
            }
            index
        });
        index.get(name).map(|&i| &self.fields[i as usize])
    }

    /// The type of the value under `key` and its path element (the field's shared one when
    /// `key` is a declared field).
    pub fn child(&self, key: &str) -> (&TypeRef, PathElement) {
        static DEDUCED_REF: OnceLock<TypeRef> = OnceLock::new();
        match self.field(key) {
            Some(f) => (&f.type_ref, f.element.clone()),
            None => (
                match &self.element_type {
                    Some(e) => e,
                    None => DEDUCED_REF.get_or_init(TypeRef::deduced),
                },
                PathElement::field(key),
            ),
        }
    }

    /// The type of the value under `key`.
    pub fn type_of(&self, key: &str) -> &TypeRef {
        static DEDUCED_REF: OnceLock<TypeRef> = OnceLock::new();
        match self.field(key) {
            Some(f) => &f.type_ref,
            None => match &self.element_type {
                Some(e) => e,
                None => DEDUCED_REF.get_or_init(TypeRef::deduced),
            },
        }
    }
}

/// What a type may be; at least one part is set. A JSON value uses the part of its kind.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Atom {
    pub scalar: Option<Scalar>,
    pub list: Option<ListType>,
    pub map: Option<MapType>,
}

impl Atom {
    pub fn scalar() -> Atom {
        Atom {
            scalar: Some(Scalar::Untyped),
            ..Atom::default()
        }
    }

    /// A granular struct with these fields.
    pub fn structure(fields: Vec<StructField>) -> Atom {
        Atom {
            map: Some(MapType {
                fields,
                ..MapType::default()
            }),
            ..Atom::default()
        }
    }

    /// A map of `elem` values (`x-kubernetes-map-type` granular or atomic).
    pub fn map(elem: TypeRef, relationship: ElementRelationship) -> Atom {
        Atom {
            map: Some(MapType {
                fields: Vec::new(),
                element_type: Some(elem),
                relationship,
                by_name: FieldIndex::default(),
            }),
            ..Atom::default()
        }
    }

    pub fn atomic_list(elem: TypeRef) -> Atom {
        Atom::list(elem, ElementRelationship::Atomic, &[])
    }

    /// `x-kubernetes-list-type: set`.
    pub fn set_list(elem: TypeRef) -> Atom {
        Atom::list(elem, ElementRelationship::Associative, &[])
    }

    /// `x-kubernetes-list-type: map` keyed by `keys`.
    pub fn map_list(elem: TypeRef, keys: &[&str]) -> Atom {
        Atom::list(elem, ElementRelationship::Associative, keys)
    }

    fn list(elem: TypeRef, relationship: ElementRelationship, keys: &[&str]) -> Atom {
        Atom {
            list: Some(ListType {
                element_type: elem,
                relationship,
                keys: keys.iter().map(|k| k.to_string()).collect(),
            }),
            ..Atom::default()
        }
    }

    /// Upstream's deduced type: scalar, atomic list of untyped-atomic values, granular map
    /// of deduced values.
    pub fn deduced() -> Atom {
        Atom {
            scalar: Some(Scalar::Untyped),
            list: Some(ListType {
                element_type: TypeRef::named(UNTYPED_ATOMIC),
                relationship: ElementRelationship::Atomic,
                keys: Vec::new(),
            }),
            map: Some(MapType {
                fields: Vec::new(),
                element_type: Some(TypeRef::deduced()),
                relationship: ElementRelationship::Separable,
                by_name: FieldIndex::default(),
            }),
        }
    }
}

impl Atom {
    /// Upstream's untyped atomic type: any scalar, list or map, always whole.
    pub fn untyped_atomic() -> Atom {
        Atom {
            scalar: Some(Scalar::Untyped),
            list: Some(ListType {
                element_type: TypeRef::named(UNTYPED_ATOMIC),
                relationship: ElementRelationship::Atomic,
                keys: Vec::new(),
            }),
            map: Some(MapType {
                fields: Vec::new(),
                element_type: Some(TypeRef::named(UNTYPED_ATOMIC)),
                relationship: ElementRelationship::Atomic,
                by_name: FieldIndex::default(),
            }),
        }
    }
}

static DEDUCED_ATOM: OnceLock<Atom> = OnceLock::new();
static UNTYPED_ATOMIC_ATOM: OnceLock<Atom> = OnceLock::new();

/// The built-in atoms, built once: deduced objects resolve them at every node.
fn builtin(cell: &'static OnceLock<Atom>, make: fn() -> Atom) -> &'static Atom {
    cell.get_or_init(make)
}

/// Named types, hashed with foldhash (the names share long prefixes, `io.k8s.api.core.v1.`,
/// which an ordered map compares again and again), in insertion order so that a reference
/// can remember where its type is ([`RefCache`]). Types are added, never removed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    pub types: indexmap::IndexMap<String, Atom, foldhash::fast::FixedState>,
}

/// What [`Schema::resolve`] gives: the schema's atom (almost always), or one made for a
/// reference resolved against a schema other than its own.
pub enum Resolved<'s> {
    Borrowed(&'s Atom),
    Owned(Box<Atom>),
}

impl Resolved<'_> {
    /// The atom, owned.
    pub fn into_owned(self) -> Atom {
        match self {
            Resolved::Borrowed(a) => a.clone(),
            Resolved::Owned(a) => *a,
        }
    }
}

impl std::ops::Deref for Resolved<'_> {
    type Target = Atom;

    fn deref(&self) -> &Atom {
        match self {
            Resolved::Borrowed(a) => a,
            Resolved::Owned(a) => a,
        }
    }
}

/// A type reference that names no type in the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownType(pub String);

impl std::fmt::Display for UnknownType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "schema error: no type found matching: {}", self.0)
    }
}

impl Schema {
    pub fn new() -> Schema {
        Schema::default()
    }

    /// A schema whose every object is deduced (unstructured custom resources).
    pub fn deduced() -> Schema {
        Schema::default()
    }

    pub fn with_type(mut self, name: impl Into<String>, atom: Atom) -> Schema {
        self.types.insert(name.into(), atom);
        self
    }

    /// The atom a reference denotes, with the use site's relationship override applied.
    pub fn resolve<'s>(&'s self, tr: &'s TypeRef) -> Result<Resolved<'s>, UnknownType> {
        let atom: &'s Atom = match (&tr.inlined, &tr.named) {
            (Some(a), _) => a,
            (None, Some(n)) => {
                let cached = tr.cache.index.get().and_then(|&i| {
                    let (name, atom) = self.types.get_index(i as usize)?;
                    (name == n).then_some(atom)
                });
                match cached.or_else(|| {
                    let (i, _, atom) = self.types.get_full(n)?;
                    if let Ok(i) = u32::try_from(i) {
                        let _ = tr.cache.index.set(i);
                    }
                    Some(atom)
                }) {
                    Some(a) => a,
                    None if n == DEDUCED => builtin(&DEDUCED_ATOM, Atom::deduced),
                    None if n == UNTYPED_ATOMIC => {
                        builtin(&UNTYPED_ATOMIC_ATOM, Atom::untyped_atomic)
                    }
                    None => return Err(UnknownType(n.clone())),
                }
            }
            (None, None) => return Err(UnknownType("inlined type".to_string())),
        };
        let Some(r) = tr.relationship else {
            return Ok(Resolved::Borrowed(atom));
        };
        // Made once per use site and schema (a reference resolved against another schema
        // than the one it was first resolved against makes its atom again).
        let me = self as *const Schema as usize;
        let overridden = |atom: &Atom| {
            let mut atom = atom.clone();
            if let Some(l) = atom.list.as_mut() {
                l.relationship = r;
            }
            if let Some(m) = atom.map.as_mut() {
                m.relationship = r;
            }
            atom
        };
        match tr.cache.overridden.get() {
            Some((schema, cached)) if *schema == me => Ok(Resolved::Borrowed(cached)),
            Some(_) => Ok(Resolved::Owned(Box::new(overridden(atom)))),
            None => {
                let (_, cached) = tr
                    .cache
                    .overridden
                    .get_or_init(|| (me, Box::new(overridden(atom))));
                Ok(Resolved::Borrowed(cached))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Atom, StructField, TypeRef, FIELD_SCAN_MAX};

    /// Small structs are scanned, larger ones searched by name: either way every declared
    /// field is found, the first of two alike, and nothing else.
    #[test]
    fn fields_are_found_by_name() {
        for n in [0, 3, FIELD_SCAN_MAX, FIELD_SCAN_MAX + 1, 40] {
            // Declared out of name order, with one name twice.
            let mut fields: Vec<StructField> = (0..n)
                .map(|i| {
                    StructField::new(format!("f{:02}", (i * 7) % n.max(1)), TypeRef::deduced())
                })
                .collect();
            if n > 0 {
                fields.push(StructField::new("f00", TypeRef::named("second")));
            }
            let atom = Atom::structure(fields.clone());
            let m = atom.map.as_ref().unwrap();
            for f in &fields {
                let found = m.field(&f.name).expect("declared field found");
                assert_eq!(found.name, f.name);
                assert_eq!(found.type_ref, TypeRef::deduced(), "the first of two alike");
            }
            for absent in ["", "f", "f0", "g00", "f99x"] {
                assert!(m.field(absent).is_none(), "{absent} in {n}");
            }
        }
    }
}
