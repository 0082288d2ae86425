//! Operations on JSON objects under a [`Schema`], as upstream's `typed` package:
//!
//! - [`to_field_set`]: the paths an object sets. Scalars, atomic lists and atomic maps are
//!   single leaves; granular list items are members by key or value and their contents are
//!   walked; map keys that are not declared struct fields, null values and empty objects are
//!   members; a declared struct field holding a non-empty object or a granular list appears
//!   only through its contents (upstream's shape, which FieldsV1 documents show).
//! - [`compare`]: what changed from one object to another (added, modified, removed paths).
//! - [`merge`]: an applied (partial) object merged into a live one: the applied value wins,
//!   maps are merged key by key (live key order, then new keys), associative lists item by
//!   item (upstream's ordering: live order, with the applied items' relative order respected
//!   for shared items, and new items placed after the applied item they follow), atomic
//!   values are replaced.
//! - [`remove_items`]: an object without the items of a set (maps and lists lose the listed
//!   keys and items; containers emptied this way remain as `{}`/`[]`).
//! - [`reconcile_field_set_with_schema`]: a manager's set rewritten after its schema made a
//!   granular list, map or struct atomic: whoever owned anything inside owns the whole
//!   (Apply rule 11). The opposite change infers nothing, as upstream.
//! - [`ensure_named_fields_are_members`]: a set plus the declared struct fields leading to
//!   its paths (what pruning needs to tell fields from map keys).
//!
//! A value whose JSON kind changes (possible under deduced types) compares as upstream's:
//! leaves modified, old contents removed, new contents added; merge takes the applied value.
//!
//! Not done: `ExtractItems`;
//! validation beyond what the walk needs (objects are validated before they get here).

use crate::fieldpath::{PathElement, Set};
use crate::schema::{Atom, ElementRelationship, ListType, MapType, Schema, TypeRef};
use crate::value::equals;
use serde_json::{Map, Value};
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

/// An object that does not fit its schema, or a schema that names a missing type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypedError {
    /// The path string where it happened (`.spec.ports[0]`-style, upstream's form).
    pub path: String,
    pub message: String,
}

impl fmt::Display for TypedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for TypedError {}

fn err(path: &[PathElement], message: impl Into<String>) -> TypedError {
    TypedError {
        path: path.iter().map(|pe| pe.to_string()).collect(),
        message: message.into(),
    }
}

/// Which part of an atom a value uses.
#[derive(Clone, Copy)]
enum Part<'a> {
    Scalar,
    List(&'a ListType),
    Map(&'a MapType),
}

impl Part<'_> {
    fn same_kind(&self, other: &Part<'_>) -> bool {
        matches!(
            (self, other),
            (Part::Scalar, Part::Scalar)
                | (Part::List(_), Part::List(_))
                | (Part::Map(_), Part::Map(_))
        )
    }
}

/// Upstream's `deduceAtom` then `handleAtom`: the part of the value's kind, else the first
/// part of map, scalar, list.
fn part<'a>(atom: &'a Atom, v: Option<&Value>) -> Option<Part<'a>> {
    let by_kind = match v {
        Some(Value::Array(_)) => atom.list.as_ref().map(Part::List),
        Some(Value::Object(_)) => atom.map.as_ref().map(Part::Map),
        Some(Value::Null) | None => None,
        Some(_) => atom.scalar.map(|_| Part::Scalar),
    };
    by_kind
        .or_else(|| atom.map.as_ref().map(Part::Map))
        .or_else(|| atom.scalar.map(|_| Part::Scalar))
        .or_else(|| atom.list.as_ref().map(Part::List))
}

fn resolve_part<'s>(
    schema: &'s Schema,
    tr: &'s TypeRef,
    path: &[PathElement],
) -> Result<crate::schema::Resolved<'s>, TypedError> {
    schema.resolve(tr).map_err(|e| err(path, e.to_string()))
}

fn as_list<'v>(
    v: Option<&'v Value>,
    path: &[PathElement],
) -> Result<Option<&'v Vec<Value>>, TypedError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(other) => Err(err(path, format!("expected list, got {other}"))),
    }
}

fn as_map<'v>(
    v: Option<&'v Value>,
    path: &[PathElement],
) -> Result<Option<&'v Map<String, Value>>, TypedError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(err(path, format!("expected map, got {other}"))),
    }
}

/// The path element of an item of an associative list: its key fields (with defaults for
/// omitted keys) or, for a set, its value.
pub fn list_item_element(
    schema: &Schema,
    list: &ListType,
    item: &Value,
) -> Result<PathElement, String> {
    if list.relationship != ElementRelationship::Associative {
        return Err("invalid indexing of non-associative list".to_string());
    }
    if list.keys.is_empty() {
        return match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            v => Ok(PathElement::value(v.clone())),
        };
    }
    let m = match item {
        Value::Null => return Err("associative list with keys may not have a null element".into()),
        Value::Object(m) => m,
        _ => return Err("associative list with keys may not have non-map elements".into()),
    };
    let elem = schema
        .resolve(&list.element_type)
        .map_err(|e| e.to_string())?;
    let mut fields = Vec::new();
    for key in &list.keys {
        if let Some(v) = m.get(key) {
            fields.push((key.clone(), v.clone()));
        } else if let Some(d) = elem
            .map
            .as_ref()
            .and_then(|mt| mt.field(key))
            .and_then(|f| f.default.clone())
        {
            fields.push((key.clone(), d));
        }
    }
    if fields.is_empty() {
        return Err(format!(
            "associative list with keys has an element that omits all key fields {:?} (and doesn't have default values for any key fields)",
            list.keys
        ));
    }
    Ok(PathElement::key(fields))
}

fn item_element(
    schema: &Schema,
    list: &ListType,
    item: &Value,
    index: usize,
    path: &[PathElement],
) -> Result<PathElement, TypedError> {
    list_item_element(schema, list, item).map_err(|e| err(path, format!("element {index}: {e}")))
}

// ---------------------------------------------------------------------------------------
// to_field_set

/// The set of paths `v` (of type `tr`) sets.
pub fn to_field_set(schema: &Schema, tr: &TypeRef, v: &Value) -> Result<Set, TypedError> {
    let mut set = Set::new();
    let mut path = Vec::new();
    field_set_walk(schema, tr, v, &mut path, &mut set)?;
    Ok(set)
}

fn field_set_walk(
    schema: &Schema,
    tr: &TypeRef,
    v: &Value,
    path: &mut Vec<PathElement>,
    set: &mut Set,
) -> Result<(), TypedError> {
    let atom = resolve_part(schema, tr, path)?;
    match part(&atom, Some(v)) {
        None => Err(err(path, "schema error: invalid atom")),
        Some(Part::Scalar) => {
            set.insert(path);
            Ok(())
        }
        Some(Part::List(t)) => {
            if t.relationship == ElementRelationship::Atomic {
                set.insert(path);
                return Ok(());
            }
            let Some(items) = as_list(Some(v), path)? else {
                return Ok(());
            };
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            let mut pes = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let pe = item_element(schema, t, item, i, path)?;
                if !seen.insert(pe.clone()) && duplicates.insert(pe.clone()) {
                    // A duplicated item is owned only as a whole.
                    path.push(pe.clone());
                    set.insert(path);
                    path.pop();
                }
                pes.push(pe);
            }
            for (item, pe) in items.iter().zip(pes) {
                if duplicates.contains(&pe) {
                    continue;
                }
                path.push(pe);
                field_set_walk(schema, &t.element_type, item, path, set)?;
                set.insert(path);
                path.pop();
            }
            Ok(())
        }
        Some(Part::Map(t)) => {
            if t.relationship == ElementRelationship::Atomic {
                set.insert(path);
                return Ok(());
            }
            let Some(m) = as_map(Some(v), path)? else {
                return Ok(());
            };
            for (k, val) in m {
                let (child_tr, pe) = t.child(k);
                path.push(pe);
                field_set_walk(schema, child_tr, val, path, set)?;
                let empty_map = matches!(val, Value::Object(o) if o.is_empty());
                if val.is_null() || empty_map || t.field(k).is_none() {
                    set.insert(path);
                }
                path.pop();
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------
// compare

/// What changed from `lhs` to `rhs`: paths only in `rhs` (`added`), in both with different
/// values (`modified`), only in `lhs` (`removed`). Containers that appear or disappear are
/// listed along with their contents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

/// Compares two objects of type `tr`.
pub fn compare(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
) -> Result<Comparison, TypedError> {
    compare_skipping(schema, tr, lhs, rhs, &Set::new())
}

/// [`compare`] without the fields of `skip` (each member and everything below it), as if
/// the result were filtered by [`Set::recursive_difference`], but without walking them.
/// `skip` is followed through struct fields and map keys only.
pub fn compare_skipping(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
    skip: &Set,
) -> Result<Comparison, TypedError> {
    let mut c = Comparison::default();
    let mut path = Vec::new();
    let skip = (!skip.is_empty()).then_some(skip);
    compare_walk(schema, tr, Some(lhs), Some(rhs), skip, &mut path, &mut c)?;
    Ok(c)
}

/// Where a walk goes below a struct field or map key `pe` with the fields to `skip`:
/// `None` when `pe` itself is skipped, else the fields to skip below it.
fn skip_below<'s>(skip: Option<&'s Set>, pe: &PathElement) -> Option<Option<&'s Set>> {
    match skip {
        Some(s) if s.members.contains(pe) => None,
        Some(s) => Some(s.children.get(pe)),
        None => Some(None),
    }
}

fn compare_leaf(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &[PathElement],
    c: &mut Comparison,
) {
    match (lhs, rhs) {
        (None, _) => c.added.insert(path),
        (_, None) => c.removed.insert(path),
        (Some(l), Some(r)) if !equals(l, r) => c.modified.insert(path),
        _ => {}
    }
}

fn compare_walk(
    schema: &Schema,
    tr: &TypeRef,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    skip: Option<&Set>,
    path: &mut Vec<PathElement>,
    c: &mut Comparison,
) -> Result<(), TypedError> {
    // Equal values add, modify and remove nothing below them: most of an update is equal,
    // and checking equality allocates nothing.
    if let (Some(l), Some(r)) = (lhs, rhs) {
        if equals(l, r) {
            return Ok(());
        }
    }
    let atom = resolve_part(schema, tr, path)?;
    let pl = part(&atom, lhs);
    let pr = part(&atom, rhs);
    let in_leaf = match (lhs, rhs, pl, pr) {
        (Some(_), Some(_), Some(a), Some(b)) if !a.same_kind(&b) => {
            // The value changed kind (deduced types). As upstream, each side is walked with
            // its own kind and the other side absent as a container: leaves are modified,
            // the old contents removed, the new added; the node itself is neither.
            compare_part(schema, a, (lhs, rhs), (lhs, None), skip, path, c)?;
            compare_part(schema, b, (lhs, rhs), (None, rhs), skip, path, c)?;
            return Ok(());
        }
        (_, None, p, _) | (_, Some(_), _, p) => match p {
            None => return Err(err(path, "schema error: invalid atom")),
            Some(p) => compare_part(schema, p, (lhs, rhs), (lhs, rhs), skip, path, c)?,
        },
    };
    if !in_leaf {
        if lhs.is_none() {
            c.added.insert(path);
        } else if rhs.is_none() {
            c.removed.insert(path);
        }
    }
    Ok(())
}

/// Both sides of a comparison.
type Sides<'v> = (Option<&'v Value>, Option<&'v Value>);

/// Compares under one part of the type. `leaf` sides decide leaves; `containers` are the
/// sides read as containers (absent when of another kind). Returns whether it was a leaf.
fn compare_part(
    schema: &Schema,
    p: Part<'_>,
    (lhs, rhs): Sides<'_>,
    (lc, rc): Sides<'_>,
    skip: Option<&Set>,
    path: &mut Vec<PathElement>,
    c: &mut Comparison,
) -> Result<bool, TypedError> {
    let in_leaf = match p {
        Part::Scalar => true,
        Part::List(t) => {
            let l = as_list(lc, path)?;
            let r = as_list(rc, path)?;
            let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
            if t.relationship == ElementRelationship::Atomic || empty {
                true
            } else {
                compare_list_items(schema, t, l, r, path, c)?;
                false
            }
        }
        Part::Map(t) => {
            let l = as_map(lc, path)?;
            let r = as_map(rc, path)?;
            let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
            if t.relationship == ElementRelationship::Atomic || empty {
                true
            } else {
                let empty_map = Map::new();
                let (l, r) = (l.unwrap_or(&empty_map), r.unwrap_or(&empty_map));
                let keys = l.keys().chain(r.keys().filter(|k| !l.contains_key(*k)));
                for k in keys {
                    let (child_tr, pe) = t.child(k);
                    let Some(child_skip) = skip_below(skip, &pe) else {
                        continue;
                    };
                    path.push(pe);
                    compare_walk(schema, child_tr, l.get(k), r.get(k), child_skip, path, c)?;
                    path.pop();
                }
                false
            }
        }
    };
    if in_leaf {
        compare_leaf(lhs, rhs, path, c);
    }
    Ok(in_leaf)
}

/// Items grouped by element, in order of first appearance.
type Grouped<'v> = Vec<(PathElement, Vec<&'v Value>)>;

fn group_items<'v>(
    schema: &Schema,
    t: &ListType,
    items: Option<&'v Vec<Value>>,
    path: &[PathElement],
) -> Result<Grouped<'v>, TypedError> {
    let mut out: Grouped<'v> = Vec::new();
    let mut index: BTreeMap<PathElement, usize> = BTreeMap::new();
    for (i, item) in items.into_iter().flatten().enumerate() {
        let pe = item_element(schema, t, item, i, path)?;
        match index.get(&pe) {
            Some(&at) => out[at].1.push(item),
            None => {
                index.insert(pe.clone(), out.len());
                out.push((pe, vec![item]));
            }
        }
    }
    Ok(out)
}

fn compare_list_items(
    schema: &Schema,
    t: &ListType,
    l: Option<&Vec<Value>>,
    r: Option<&Vec<Value>>,
    path: &mut Vec<PathElement>,
    c: &mut Comparison,
) -> Result<(), TypedError> {
    let lg = group_items(schema, t, l, path)?;
    let rg = group_items(schema, t, r, path)?;
    let lmap: BTreeMap<&PathElement, &Vec<&Value>> = lg.iter().map(|(p, v)| (p, v)).collect();
    let rmap: BTreeMap<&PathElement, &Vec<&Value>> = rg.iter().map(|(p, v)| (p, v)).collect();
    let mut all: Vec<&PathElement> = lg.iter().map(|(p, _)| p).collect();
    all.extend(rg.iter().map(|(p, _)| p).filter(|p| !lmap.contains_key(p)));
    let none: Vec<&Value> = Vec::new();
    for pe in all {
        let ll = lmap.get(pe).copied().unwrap_or(&none);
        let rl = rmap.get(pe).copied().unwrap_or(&none);
        path.push(pe.clone());
        if ll.len() <= 1 && rl.len() <= 1 {
            compare_walk(
                schema,
                &t.element_type,
                ll.first().copied(),
                rl.first().copied(),
                None,
                path,
                c,
            )?;
        } else if ll.len() >= 2 && rl.len() >= 2 {
            let same = ll.len() == rl.len() && ll.iter().zip(rl).all(|(a, b)| equals(a, b));
            if !same {
                c.modified.insert(path);
            }
        } else if ll.len() >= 2 {
            if let Some(r0) = rl.first() {
                compare_walk(schema, &t.element_type, None, Some(r0), None, path, c)?;
            }
            c.removed.insert(path);
        } else {
            if let Some(l0) = ll.first() {
                compare_walk(schema, &t.element_type, Some(l0), None, None, path, c)?;
            }
            c.added.insert(path);
        }
        path.pop();
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// merge

/// Merges the applied object `rhs` into the live object `lhs` (upstream's `Merge` with
/// "keep rhs"): nothing is removed; where both set a leaf, `rhs` wins.
pub fn merge(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value) -> Result<Value, TypedError> {
    merge_skipping(schema, tr, lhs, rhs, &Set::new())
}

/// [`merge`] leaving out the live object's fields that are members of `skip` (followed
/// through struct fields and map keys), e.g. its `managedFields`, which the caller
/// replaces.
pub fn merge_skipping(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
    skip: &Set,
) -> Result<Value, TypedError> {
    let mut path = Vec::new();
    let skip = (!skip.is_empty()).then_some(skip);
    Ok(merge_walk(schema, tr, Some(lhs), Some(rhs), skip, &mut path)?.unwrap_or(Value::Null))
}

fn merge_walk(
    schema: &Schema,
    tr: &TypeRef,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    skip: Option<&Set>,
    path: &mut Vec<PathElement>,
) -> Result<Option<Value>, TypedError> {
    // What only the live object has stays as it is (it was checked when written).
    if rhs.is_none() && skip.is_none() {
        return Ok(lhs.cloned());
    }
    let atom = resolve_part(schema, tr, path)?;
    let pl = part(&atom, lhs);
    let pr = part(&atom, rhs);
    let (chosen, lhs) = match (rhs, pl, pr) {
        (None, p, _) => (p, lhs),
        // The value changed kind: the applied value replaces the live one.
        (Some(_), Some(a), Some(b)) if lhs.is_some() && !a.same_kind(&b) => (pr, None),
        (Some(_), _, p) => (p, lhs),
    };
    let leaf = || Ok(rhs.or(lhs).cloned());
    match chosen {
        None => Err(err(path, "schema error: invalid atom")),
        Some(Part::Scalar) => leaf(),
        Some(Part::List(t)) => {
            let l = as_list(lhs, path)?;
            let r = as_list(rhs, path)?;
            let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
            if t.relationship == ElementRelationship::Atomic || empty {
                return leaf();
            }
            merge_list_items(schema, t, l, r, path)
        }
        Some(Part::Map(t)) => {
            let l = as_map(lhs, path)?;
            let r = as_map(rhs, path)?;
            let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
            if t.relationship == ElementRelationship::Atomic || empty {
                return leaf();
            }
            let empty_map = Map::new();
            let (l, r) = (l.unwrap_or(&empty_map), r.unwrap_or(&empty_map));
            let mut out = Map::new();
            let keys = l.keys().chain(r.keys().filter(|k| !l.contains_key(*k)));
            for k in keys {
                let (child_tr, pe) = t.child(k);
                let Some(child_skip) = skip_below(skip, &pe) else {
                    continue;
                };
                path.push(pe);
                if let Some(v) = merge_walk(schema, child_tr, l.get(k), r.get(k), child_skip, path)?
                {
                    out.insert(k.clone(), v);
                }
                path.pop();
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
    }
}

/// Upstream's list merge order: walk live and applied items together; items both have are
/// merged in place, live-only items stay where they are, applied-only items are placed
/// where the applied list has them relative to the shared items.
fn merge_list_items(
    schema: &Schema,
    t: &ListType,
    l: Option<&Vec<Value>>,
    r: Option<&Vec<Value>>,
    path: &mut Vec<PathElement>,
) -> Result<Option<Value>, TypedError> {
    let (l, r) = (
        l.map(Vec::as_slice).unwrap_or(&[]),
        r.map(Vec::as_slice).unwrap_or(&[]),
    );
    // Applied items by element: their index (an applied list may not repeat an element).
    let mut rhs_pes = Vec::with_capacity(r.len());
    let mut observed_rhs: BTreeMap<PathElement, usize> = BTreeMap::new();
    for (i, item) in r.iter().enumerate() {
        let pe = item_element(schema, t, item, i, path)?;
        match observed_rhs.entry(pe.clone()) {
            Entry::Occupied(_) => return Err(err(path, format!("duplicate entries for key {pe}"))),
            Entry::Vacant(e) => e.insert(i),
        };
        rhs_pes.push(pe);
    }
    // Duplicated live items merge as null (upstream's placeholder for "ambiguous").
    let null = Value::Null;
    let mut lhs_pes = Vec::with_capacity(l.len());
    let mut observed_lhs: BTreeMap<PathElement, &Value> = BTreeMap::new();
    let mut lhs_repeats = false;
    for (i, item) in l.iter().enumerate() {
        let pe = item_element(schema, t, item, i, path)?;
        match observed_lhs.entry(pe.clone()) {
            Entry::Occupied(mut e) => {
                e.insert(&null);
                lhs_repeats = true;
            }
            Entry::Vacant(e) => {
                e.insert(item);
            }
        }
        lhs_pes.push(pe);
    }
    let mut shared: VecDeque<&PathElement> = rhs_pes
        .iter()
        .filter(|pe| observed_lhs.contains_key(*pe))
        .collect();
    let mut next_shared = shared.pop_front();
    // Which applied items are merged already, by index.
    let mut merged_rhs = vec![false; r.len()];
    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let (mut li, mut ri) = (0, 0);
    let merge_item = |pe: &PathElement,
                      lc: Option<&Value>,
                      rc: Option<&Value>,
                      out: &mut Vec<Value>,
                      path: &mut Vec<PathElement>|
     -> Result<(), TypedError> {
        path.push(pe.clone());
        let merged = merge_walk(schema, &t.element_type, lc, rc, None, path)?;
        path.pop();
        out.extend(merged);
        Ok(())
    };
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if li < lhs_pes.len() && ri < rhs_pes.len() {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs[ri] = true;
                // The live item is the one at `li` unless the live list repeats elements.
                let lc = match lhs_repeats {
                    false => Some(&l[li]),
                    true => observed_lhs.get(pe).copied(),
                };
                merge_item(pe, lc, Some(&r[ri]), &mut out, path)?;
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            // A shared live item out of the applied order waits for its turn.
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs_pes.len() {
            let pe = &lhs_pes[li];
            match observed_rhs.get(pe) {
                None => {
                    merge_item(pe, Some(&l[li]), None, &mut out, path)?;
                    li += 1;
                    continue;
                }
                Some(&at) if merged_rhs[at] => li += 1,
                Some(_) => {}
            }
        }
        if ri < rhs_pes.len() {
            let pe = &rhs_pes[ri];
            merged_rhs[ri] = true;
            merge_item(
                pe,
                observed_lhs.get(pe).copied(),
                Some(&r[ri]),
                &mut out,
                path,
            )?;
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    Ok((!out.is_empty()).then_some(Value::Array(out)))
}

// ---------------------------------------------------------------------------------------
// remove

/// `v` without the map keys and list items that are members of `set` (upstream's
/// `RemoveItems`). Struct fields, map keys and list items listed in `set` go; containers
/// that lose everything this way stay as `{}` or `[]`, and so does the root (upstream
/// would give null there; a real object always keeps its apiVersion and kind).
pub fn remove_items(schema: &Schema, tr: &TypeRef, v: &Value, set: &Set) -> Value {
    removed_or_empty(remove_walk(schema, tr, v, set), v)
}

fn remove_walk(schema: &Schema, tr: &TypeRef, v: &Value, set: &Set) -> Option<Value> {
    let atom = schema.resolve(tr).ok()?;
    match part(&atom, Some(v))? {
        Part::Scalar => Some(v.clone()),
        Part::List(t) => {
            let items = v.as_array()?;
            if items.is_empty() || t.relationship == ElementRelationship::Atomic {
                return None;
            }
            let mut had_matches = false;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Ok(pe) = list_item_element(schema, t, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                match set.child(&pe) {
                    None => out.push(item.clone()),
                    Some(sub) => {
                        had_matches = true;
                        out.push(removed_or_empty(
                            remove_walk(schema, &t.element_type, item, sub),
                            item,
                        ));
                    }
                }
            }
            (!out.is_empty() || had_matches).then_some(Value::Array(out))
        }
        Part::Map(t) => {
            let m = v.as_object()?;
            if m.is_empty() || t.relationship == ElementRelationship::Atomic {
                return None;
            }
            let mut had_matches = false;
            let mut out = Map::new();
            for (k, val) in m {
                let pe = PathElement::field(k);
                if set.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                match set.child(&pe) {
                    None => {
                        out.insert(k.clone(), val.clone());
                    }
                    Some(sub) => {
                        had_matches = true;
                        let child_tr = t.type_of(k);
                        let kept = removed_or_empty(remove_walk(schema, child_tr, val, sub), val);
                        out.insert(k.clone(), kept);
                    }
                }
            }
            (!out.is_empty() || had_matches).then_some(Value::Object(out))
        }
    }
}

/// A container emptied by removal stays as an empty container of its kind.
fn removed_or_empty(v: Option<Value>, was: &Value) -> Value {
    match (v, was) {
        (Some(Value::Null) | None, Value::Object(_)) => Value::Object(Map::new()),
        (Some(Value::Null) | None, Value::Array(_)) => Value::Array(Vec::new()),
        (Some(v), _) => v,
        (None, _) => Value::Null,
    }
}

/// `set` plus every declared struct field that leads to one of its paths, so removal
/// can take a struct field whose contents no one owns any more.
pub fn ensure_named_fields_are_members(set: &Set, schema: &Schema, tr: &TypeRef) -> Set {
    let atom = schema.resolve(tr).ok();
    let map = atom.as_ref().and_then(|a| a.map.as_ref());
    let list = atom.as_ref().and_then(|a| a.list.as_ref());
    let mut out = Set::new();
    out.members = set.members.clone();
    for (pe, child) in &set.children {
        let child_tr = match pe {
            PathElement::Field(name) => {
                if map.and_then(|m| m.field(name)).is_some() {
                    out.members.insert(pe.clone());
                }
                map.map(|m| m.type_of(name))
            }
            PathElement::Key(_) => list.map(|l| &l.element_type),
            _ => None,
        };
        let child = match child_tr {
            Some(ctr) => ensure_named_fields_are_members(child, schema, ctr),
            None => child.clone(),
        };
        out.children.insert(pe.clone(), child);
    }
    out
}

// ---------------------------------------------------------------------------------------
// reconcile

/// A manager's `set`, rewritten for the current schema when a granular list, map or struct
/// it owns parts of has become atomic: those parts collapse into the container. `None` when
/// nothing changes. Untyped (deduced) maps are left alone, as upstream leaves them.
pub fn reconcile_field_set_with_schema(
    set: &Set,
    schema: &Schema,
    tr: &TypeRef,
) -> Result<Option<Set>, TypedError> {
    let mut collapse = Set::new();
    let mut path = Vec::new();
    reconcile_walk(schema, tr, Some(set), false, &mut path, &mut collapse)?;
    if collapse.is_empty() {
        return Ok(None);
    }
    Ok(Some(set.recursive_difference(&collapse).union(&collapse)))
}

fn is_untyped_deduced_map(m: &MapType) -> bool {
    m.fields.is_empty()
        && m.element_type.as_ref().is_some_and(|e| {
            e.named.as_deref() == Some(crate::schema::DEDUCED)
                || e.inlined
                    .as_ref()
                    .is_some_and(|a| a.scalar == Some(crate::schema::Scalar::Untyped))
        })
}

fn reconcile_walk(
    schema: &Schema,
    tr: &TypeRef,
    set: Option<&Set>,
    is_atomic: bool,
    path: &mut Vec<PathElement>,
    collapse: &mut Set,
) -> Result<(), TypedError> {
    let atom = schema
        .resolve(tr)
        .map_err(|_| err(path, format!("could not resolve {tr:?}")))?;
    // Upstream's handleAtom order without a value: map, scalar, list.
    if let Some(m) = atom.map.as_ref() {
        if is_untyped_deduced_map(m) {
            return Ok(());
        }
        if !is_atomic && m.relationship == ElementRelationship::Atomic {
            if set.is_some_and(|s| !s.is_empty()) {
                collapse.insert(path);
            }
            return Ok(());
        }
        let Some(set) = set else { return Ok(()) };
        for_each_element(set, |pe, child, member| {
            let child_tr = match pe {
                PathElement::Field(name) => match m.field(name) {
                    Some(f) => f.type_ref.clone(),
                    None => match &m.element_type {
                        Some(e) => e.clone(),
                        None => return Ok(()), // not in the schema: ignored
                    },
                },
                _ => match &m.element_type {
                    Some(e) => e.clone(),
                    None => return Ok(()),
                },
            };
            path.push(pe.clone());
            let r = reconcile_walk(
                schema,
                &child_tr,
                child,
                member && child.is_none(),
                path,
                collapse,
            );
            path.pop();
            r
        })
    } else if atom.scalar.is_some() {
        Ok(())
    } else if let Some(l) = atom.list.as_ref() {
        if !is_atomic && l.relationship == ElementRelationship::Atomic {
            collapse.insert(path);
            return Ok(());
        }
        let Some(set) = set else { return Ok(()) };
        for_each_element(set, |pe, child, member| {
            path.push(pe.clone());
            let r = reconcile_walk(
                schema,
                &l.element_type,
                child,
                member && child.is_none(),
                path,
                collapse,
            );
            path.pop();
            r
        })
    } else {
        Err(err(path, "schema error: invalid atom"))
    }
}

/// Children that are not members, then members (upstream's visiting order), each with its
/// child set and whether it is a member.
fn for_each_element(
    set: &Set,
    mut f: impl FnMut(&PathElement, Option<&Set>, bool) -> Result<(), TypedError>,
) -> Result<(), TypedError> {
    for (pe, child) in &set.children {
        if !set.members.contains(pe) {
            f(pe, Some(child), false)?;
        }
    }
    for pe in &set.members {
        f(pe, set.children.get(pe), true)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// modified_leaves

/// The paths [`compare_skipping`] reports modified from `lhs` to `rhs` when it reports
/// nothing added or removed: the common update, which changes values and leaves the
/// object's shape alone. Found without building sets: each differing leaf's path is made
/// only when one is found (usually a few). `None` where the comparison adds or removes
/// something, finds more than `max` modified leaves, or meets what this walk leaves to
/// [`compare_skipping`]: a null, a value whose kind changed, duplicate list items, an
/// object that does not fit its type.
pub fn modified_leaves(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
    skip: &Set,
    max: usize,
) -> Option<Vec<Vec<PathElement>>> {
    let mut walk = LeafWalk {
        schema,
        steps: Vec::new(),
        found: Vec::new(),
        max,
    };
    let skip = (!skip.is_empty()).then_some(skip);
    walk.walk(tr, lhs, rhs, skip)?;
    Some(walk.found)
}

/// One step of [`modified_leaves`]' path: a map key (its element made only when a leaf
/// below it is reported) or a list item's element.
enum Step<'v> {
    Key(&'v str),
    Item(PathElement),
}

struct LeafWalk<'s, 'v> {
    schema: &'s Schema,
    steps: Vec<Step<'v>>,
    found: Vec<Vec<PathElement>>,
    max: usize,
}

impl<'s, 'v> LeafWalk<'s, 'v> {
    fn leaf(&mut self) -> Option<()> {
        if self.found.len() >= self.max {
            return None;
        }
        let path = self
            .steps
            .iter()
            .map(|s| match s {
                Step::Key(k) => PathElement::field(k),
                Step::Item(pe) => pe.clone(),
            })
            .collect();
        self.found.push(path);
        Some(())
    }

    fn walk(&mut self, tr: &TypeRef, l: &'v Value, r: &'v Value, skip: Option<&Set>) -> Option<()> {
        if equals(l, r) {
            return Some(());
        }
        if l.is_null() || r.is_null() {
            return None;
        }
        let atom = self.schema.resolve(tr).ok()?;
        let (pl, pr) = (part(&atom, Some(l))?, part(&atom, Some(r))?);
        if !pl.same_kind(&pr) {
            return None;
        }
        match pr {
            Part::Scalar => self.leaf(),
            Part::List(t) => {
                let (Value::Array(la), Value::Array(ra)) = (l, r) else {
                    return None;
                };
                if t.relationship == ElementRelationship::Atomic || (la.is_empty() && ra.is_empty())
                {
                    return self.leaf();
                }
                if la.len() != ra.len() {
                    return None;
                }
                let items = |list: &'v [Value]| -> Option<Vec<(PathElement, &'v Value)>> {
                    let mut out: Vec<(PathElement, &'v Value)> = list
                        .iter()
                        .map(|item| Some((list_item_element(self.schema, t, item).ok()?, item)))
                        .collect::<Option<_>>()?;
                    out.sort_by(|a, b| a.0.cmp(&b.0));
                    // Duplicates are owned as a whole: compare decides those.
                    out.windows(2).all(|w| w[0].0 != w[1].0).then_some(out)
                };
                let (li, ri) = (items(la)?, items(ra)?);
                for ((lpe, lv), (rpe, rv)) in li.into_iter().zip(ri) {
                    if lpe != rpe {
                        return None;
                    }
                    self.steps.push(Step::Item(rpe));
                    self.walk(&t.element_type, lv, rv, None)?;
                    self.steps.pop();
                }
                Some(())
            }
            Part::Map(t) => {
                let (Value::Object(lm), Value::Object(rm)) = (l, r) else {
                    return None;
                };
                if t.relationship == ElementRelationship::Atomic || (lm.is_empty() && rm.is_empty())
                {
                    return self.leaf();
                }
                // Keys only on one side are added or removed, unless skipped. The sides of
                // an update mostly hold the same keys in the same order (but for skipped
                // ones, such as a resourceVersion): they are paired in order, and looked up
                // (hashed) only from the first key out of order.
                let skipped = |k: &str| skip.is_some_and(|s| s.has_field(k));
                let mut right = rm.iter().peekable();
                let mut in_order = true;
                let mut paired = 0;
                for (k, lv) in lm {
                    let child_skip = match skip {
                        None => None,
                        Some(s) if s.has_field(k) => continue,
                        Some(s) => s.field_child(k),
                    };
                    let rv = if in_order {
                        let mut found = None;
                        while let Some((rk, rv)) = right.peek() {
                            if *rk == k {
                                found = Some(*rv);
                                right.next();
                                break;
                            }
                            if !skipped(rk) {
                                break;
                            }
                            right.next();
                        }
                        if found.is_none() {
                            in_order = false;
                            found = rm.get(k);
                        }
                        found
                    } else {
                        rm.get(k)
                    };
                    let rv = rv?;
                    paired += 1;
                    self.steps.push(Step::Key(k));
                    self.walk(t.type_of(k), lv, rv, child_skip)?;
                    self.steps.pop();
                }
                // What is left on the right must be skipped, else it was added.
                let added = match in_order {
                    true => right.any(|(rk, _)| !skipped(rk)),
                    false => {
                        rm.len() != paired && rm.keys().filter(|k| !skipped(k)).count() != paired
                    }
                };
                (!added).then_some(())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// changed_fields_v1

/// The FieldsV1 of what [`compare_skipping`] reports added or modified from `lhs` to `rhs`,
/// built directly (no [`Set`] in between): what a new manager takes for an Update, e.g. a
/// create's writer against the type's zero value. Removed paths are not reported.
/// `Ok(None)` when the walk meets a value whose kind changed (deduced types), which the
/// caller computes through [`compare_skipping`] instead.
pub fn changed_fields_v1(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
    skip: &Set,
) -> Result<Option<Map<String, Value>>, TypedError> {
    let mut path = Vec::new();
    let skip = (!skip.is_empty()).then_some(skip);
    match changed_walk(schema, tr, Some(lhs), rhs, skip, &mut path)? {
        Walked::Fallback => Ok(None),
        Walked::Node { children, .. } => Ok(Some(fields_v1_node(children, false))),
    }
}

/// One node's changes: its changed children (element, their node) and whether the node
/// itself is a changed member.
enum Walked {
    Fallback,
    Node {
        member: bool,
        children: Vec<(PathElement, Map<String, Value>, bool)>,
    },
}

impl Walked {
    fn leaf(member: bool) -> Walked {
        Walked::Node {
            member,
            children: Vec::new(),
        }
    }
}

/// A FieldsV1 node from its children in any order: sorted by element, led by `"."` when
/// the node is itself a member.
fn fields_v1_node(
    mut children: Vec<(PathElement, Map<String, Value>, bool)>,
    member: bool,
) -> Map<String, Value> {
    children.sort_by(|a, b| a.0.cmp(&b.0));
    if children.is_empty() {
        return Map::new();
    }
    let mut out = Map::with_capacity(children.len() + usize::from(member));
    if member {
        out.insert(".".into(), Value::Object(Map::new()));
    }
    for (pe, node, _) in children {
        out.insert(crate::fieldsv1::serialize_element(&pe), Value::Object(node));
    }
    out
}

fn push_child(
    children: &mut Vec<(PathElement, Map<String, Value>, bool)>,
    pe: PathElement,
    walked: Walked,
) -> bool {
    match walked {
        Walked::Fallback => false,
        Walked::Node {
            member,
            children: grand,
        } => {
            if member || !grand.is_empty() {
                children.push((pe, fields_v1_node(grand, member), member));
            }
            true
        }
    }
}

fn changed_walk(
    schema: &Schema,
    tr: &TypeRef,
    lhs: Option<&Value>,
    rhs: &Value,
    skip: Option<&Set>,
    path: &mut Vec<PathElement>,
) -> Result<Walked, TypedError> {
    if let Some(l) = lhs {
        if equals(l, rhs) {
            return Ok(Walked::leaf(false));
        }
    }
    let atom = resolve_part(schema, tr, path)?;
    let pr = part(&atom, Some(rhs));
    if let (Some(_), Some(a), Some(b)) = (lhs, part(&atom, lhs), pr) {
        if !a.same_kind(&b) {
            return Ok(Walked::Fallback);
        }
    }
    let Some(p) = pr else {
        return Err(err(path, "schema error: invalid atom"));
    };
    // A leaf is a member when it is new or differs (equal values returned above).
    let leaf = Walked::leaf(true);
    let mut children = Vec::new();
    match p {
        Part::Scalar => return Ok(leaf),
        Part::List(t) => {
            let l = as_list(lhs, path)?;
            let r = as_list(Some(rhs), path)?;
            let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
            if t.relationship == ElementRelationship::Atomic || empty {
                return Ok(leaf);
            }
            let lg = group_items(schema, t, l, path)?;
            let rg = group_items(schema, t, r, path)?;
            for (pe, rl) in &rg {
                let ll = lg
                    .iter()
                    .find(|(p, _)| p == pe)
                    .map(|(_, v)| v.as_slice())
                    .unwrap_or(&[]);
                path.push(pe.clone());
                let walked = if ll.len() <= 1 && rl.len() <= 1 {
                    changed_walk(
                        schema,
                        &t.element_type,
                        ll.first().copied(),
                        rl[0],
                        None,
                        path,
                    )?
                } else if ll.len() >= 2 && rl.len() >= 2 {
                    let same = ll.len() == rl.len() && ll.iter().zip(rl).all(|(a, b)| equals(a, b));
                    Walked::leaf(!same)
                } else if ll.len() >= 2 {
                    // Duplicates became one item: compare reports it added (and removed).
                    changed_walk(schema, &t.element_type, None, rl[0], None, path)?
                } else {
                    // One item became duplicates: the item is added as a whole.
                    Walked::leaf(true)
                };
                path.pop();
                if !push_child(&mut children, pe.clone(), walked) {
                    return Ok(Walked::Fallback);
                }
            }
        }
        Part::Map(t) => {
            let l = as_map(lhs, path)?;
            let r = as_map(Some(rhs), path)?;
            let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
            if t.relationship == ElementRelationship::Atomic || empty {
                return Ok(leaf);
            }
            for (k, rv) in r.into_iter().flatten() {
                let (child_tr, pe) = t.child(k);
                let Some(child_skip) = skip_below(skip, &pe) else {
                    continue;
                };
                path.push(pe.clone());
                let walked = changed_walk(
                    schema,
                    child_tr,
                    l.and_then(|l| l.get(k)),
                    rv,
                    child_skip,
                    path,
                )?;
                path.pop();
                if !push_child(&mut children, pe, walked) {
                    return Ok(Walked::Fallback);
                }
            }
        }
    }
    // A container that appears is itself added.
    Ok(Walked::Node {
        member: lhs.is_none(),
        children,
    })
}

/// Writes to `out` everything of `rhs` that [`changed_fields_v1`] with the same type,
/// `lhs` and `skip` reads: the kinds of values, map keys, list items' elements and, where
/// `lhs` holds a value to compare with, `rhs`'s value itself; not the scalar values the
/// result does not depend on. Two objects with equal signatures (same type, `lhs` and
/// `skip`) have the same changed fields, so a caller may cache them by signature: objects
/// made from one template (a ReplicaSet's Pods) share theirs. `false` when the object
/// has parts this does not describe (the caller then does not cache).
pub fn shape_signature(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
    skip: &Set,
    out: &mut String,
) -> bool {
    let skip = (!skip.is_empty()).then_some(skip);
    shape_walk(schema, tr, Some(lhs), rhs, skip, out).is_some()
}

fn shape_walk(
    schema: &Schema,
    tr: &TypeRef,
    lhs: Option<&Value>,
    rhs: &Value,
    skip: Option<&Set>,
    out: &mut String,
) -> Option<()> {
    out.push(match rhs {
        Value::Null => 'n',
        Value::Bool(_) => 'b',
        Value::Number(_) => '0',
        Value::String(_) => 's',
        Value::Array(a) if a.is_empty() => 'e',
        Value::Array(_) => '[',
        Value::Object(o) if o.is_empty() => 'E',
        Value::Object(_) => '{',
    });
    let lhs = lhs.filter(|l| !l.is_null());
    let atom = schema.resolve(tr).ok()?;
    let part = part(&atom, Some(rhs))?;
    let leaf = match part {
        Part::Scalar => true,
        Part::List(t) => t.relationship == ElementRelationship::Atomic || !rhs.is_array(),
        Part::Map(t) => t.relationship == ElementRelationship::Atomic || !rhs.is_object(),
    };
    if leaf {
        // Only equality with the left side is read: write the value when there is one.
        if let Some(l) = lhs {
            if part_kind(&atom, l) != part_kind(&atom, rhs) {
                return None;
            }
            out.push('=');
            crate::value::write_go_json(out, rhs);
        }
        return Some(());
    }
    match (part, rhs) {
        (Part::List(t), Value::Array(items)) => {
            if lhs.is_some() {
                return None;
            }
            // Each item's element: its key fields' values (defaults are the schema's) or,
            // in a set, its value; a list of other items is not described.
            if t.relationship != ElementRelationship::Associative {
                return None;
            }
            for item in items {
                match item {
                    Value::Object(m) if !t.keys.is_empty() => {
                        for key in &t.keys {
                            match m.get(key) {
                                Some(v) => crate::value::write_go_json(out, v),
                                None => out.push('-'),
                            }
                            out.push(',');
                        }
                    }
                    Value::Object(_) | Value::Array(_) | Value::Null => return None,
                    v if t.keys.is_empty() => crate::value::write_go_json(out, v),
                    _ => return None,
                }
                out.push('\u{1}');
                shape_walk(schema, &t.element_type, None, item, None, out)?;
            }
            out.push(']');
        }
        (Part::Map(t), Value::Object(m)) => {
            let l = match lhs {
                None => None,
                Some(Value::Object(l)) => Some(l),
                Some(_) => return None,
            };
            for (k, rv) in m {
                // The path element only where something is skipped (the top levels).
                let child_skip = match skip {
                    None => None,
                    Some(s) if s.has_field(k) => continue,
                    Some(s) => s.field_child(k),
                };
                let child_tr = t.type_of(k);
                push_len(out, k.len());
                out.push_str(k);
                shape_walk(
                    schema,
                    child_tr,
                    l.and_then(|l| l.get(k)),
                    rv,
                    child_skip,
                    out,
                )?;
            }
            out.push('}');
        }
        _ => return None,
    }
    Some(())
}

/// A key's length in a signature, prefix-free: one character for lengths below 0xD000 (the
/// common case, where writing decimal digits and a separator cost more than the rest of a
/// key), else U+E000 (never a length character), the decimal length and `:`.
fn push_len(out: &mut String, len: usize) {
    const ONE_CHAR_MAX: usize = 0xD000;
    match u32::try_from(len).ok().filter(|_| len < ONE_CHAR_MAX) {
        Some(n) => out.push(char::from_u32(n).expect("below the surrogates")),
        None => {
            out.push('\u{E000}');
            crate::value::push_decimal(out, len as u64);
            out.push(':');
        }
    }
}

/// Which part of `atom` a value takes (0 none, 1 scalar, 2 list, 3 map).
fn part_kind(atom: &Atom, v: &Value) -> u8 {
    match part(atom, Some(v)) {
        None => 0,
        Some(Part::Scalar) => 1,
        Some(Part::List(_)) => 2,
        Some(Part::Map(_)) => 3,
    }
}
