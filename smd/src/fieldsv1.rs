//! The FieldsV1 encoding of a [`Set`], byte for byte as upstream writes it.
//!
//! Each element is an object key: `f:<name>` (the name raw), `k:<json object of the key
//! fields, sorted by name>`, `v:<json value>`, `i:<index>`. A member with nothing below it
//! maps to `{}`; a node with children maps to an object of its children, led by `".": {}`
//! when the node is also a member. Keys appear in element order (see [`PathElement`]'s
//! `Ord`). JSON inside keys and the keys themselves are written as Go's encoder writes
//! them (HTML characters escaped, map keys sorted).
//!
//! Parsing accepts any key order, drops keys with an unknown type letter (a future version's
//! elements, as upstream does) and rejects malformed elements and non-object nodes.

use crate::fieldpath::{PathElement, Set};
use crate::value::{write_go_json, write_go_json_string};
use serde_json::{Map, Value};
use std::fmt;

/// Why a FieldsV1 document or a path element did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldsV1Error {
    /// Not JSON at all.
    Json(String),
    /// A node that is not a JSON object.
    NotAnObject { at: String },
    /// A key that is not a valid path element.
    BadElement { key: String, reason: String },
    /// A key with a type letter this version does not know (dropped when parsing a set).
    UnknownElementType { key: String },
}

impl fmt::Display for FieldsV1Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldsV1Error::Json(e) => write!(f, "invalid FieldsV1 JSON: {e}"),
            FieldsV1Error::NotAnObject { at } => {
                write!(f, "FieldsV1 node at {at:?} is not an object")
            }
            FieldsV1Error::BadElement { key, reason } => {
                write!(f, "parsing key as path element: {key:?}: {reason}")
            }
            FieldsV1Error::UnknownElementType { key } => {
                write!(f, "unknown path element type: {key:?}")
            }
        }
    }
}

impl std::error::Error for FieldsV1Error {}

/// The key form of one element (`f:name`, `k:{...}`, `v:...`, `i:N`).
pub fn serialize_element(pe: &PathElement) -> String {
    let mut out = String::new();
    match pe {
        PathElement::Field(name) => {
            out.push_str("f:");
            out.push_str(name);
        }
        PathElement::Key(fields) => {
            out.push_str("k:{");
            for (i, (name, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(&mut out, name);
                out.push(':');
                write_go_json(&mut out, v);
            }
            out.push('}');
        }
        PathElement::Value(v) => {
            out.push_str("v:");
            write_go_json(&mut out, v);
        }
        PathElement::Index(i) => {
            out.push_str("i:");
            out.push_str(&i.to_string());
        }
    }
    out
}

/// Parses one element's key form.
pub fn parse_element(key: &str) -> Result<PathElement, FieldsV1Error> {
    let bad = |reason: &str| FieldsV1Error::BadElement {
        key: key.to_string(),
        reason: reason.to_string(),
    };
    let bytes = key.as_bytes();
    if bytes.len() < 2 {
        return Err(bad("key must be 2 characters long"));
    }
    if bytes[1] != b':' {
        return Err(bad("missing colon"));
    }
    let body = &key[2..];
    match bytes[0] {
        b'f' => Ok(PathElement::Field(body.into())),
        b'v' => {
            let v: Value = serde_json::from_str(body).map_err(|e| bad(&e.to_string()))?;
            Ok(PathElement::value(v))
        }
        b'k' => {
            let v: Value = serde_json::from_str(body).map_err(|e| bad(&e.to_string()))?;
            let Value::Object(m) = v else {
                return Err(bad("key fields must be a JSON object"));
            };
            Ok(PathElement::key(m))
        }
        b'i' => body
            .parse::<usize>()
            .map(PathElement::Index)
            .map_err(|e| bad(&e.to_string())),
        _ => Err(FieldsV1Error::UnknownElementType {
            key: key.to_string(),
        }),
    }
}

impl Set {
    /// The FieldsV1 bytes of this set.
    pub fn to_fields_v1(&self) -> String {
        let mut out = String::from("{");
        self.emit(false, &mut out);
        out.push('}');
        out
    }

    /// The FieldsV1 of this set as a JSON value (what a managedFields entry holds), built
    /// directly: the same keys in the same order as [`Set::to_fields_v1`].
    pub fn to_fields_v1_value(&self) -> Value {
        Value::Object(self.emit_value(false))
    }

    fn emit_value(&self, include_self: bool) -> Map<String, Value> {
        if self.is_empty() {
            return Map::new();
        }
        let mut out = Map::with_capacity(self.members.len() + self.children.len() + 1);
        if include_self && !self.is_empty() {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        // Members and children are each sorted; merge them, a node in both once.
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let (pe, child, is_member) = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(m), Some((c, _))) if *m < *c => (members.next().unwrap(), None, true),
                (Some(m), Some((c, _))) if *m == *c => {
                    members.next();
                    let (c, child) = children.next().unwrap();
                    (c, Some(child), true)
                }
                (_, Some(_)) => {
                    let (c, child) = children.next().unwrap();
                    (c, Some(child), false)
                }
                (Some(_), None) => (members.next().unwrap(), None, true),
            };
            let node = match child {
                None => Map::new(),
                Some(child) => child.emit_value(is_member),
            };
            out.insert(serialize_element(pe), Value::Object(node));
        }
        out
    }

    fn emit(&self, include_self: bool, out: &mut String) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
        };
        if include_self && !self.is_empty() {
            sep(out);
            out.push_str("\".\":{}");
        }
        let mut elements: Vec<&PathElement> = self.members.iter().collect();
        elements.extend(self.children.keys().filter(|pe| !self.members.contains(pe)));
        elements.sort();
        for pe in elements {
            sep(out);
            write_go_json_string(out, &serialize_element(pe));
            out.push(':');
            match self.children.get(pe) {
                None => out.push_str("{}"),
                Some(child) => {
                    out.push('{');
                    child.emit(self.members.contains(pe), out);
                    out.push('}');
                }
            }
        }
    }

    /// Parses FieldsV1 bytes.
    pub fn from_fields_v1(text: &str) -> Result<Set, FieldsV1Error> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| FieldsV1Error::Json(e.to_string()))?;
        Set::from_fields_v1_value(&v)
    }

    /// Parses an already-decoded FieldsV1 value (a managedFields entry's `fieldsV1`).
    pub fn from_fields_v1_value(v: &Value) -> Result<Set, FieldsV1Error> {
        let Value::Object(m) = v else {
            return Err(FieldsV1Error::NotAnObject { at: String::new() });
        };
        Ok(read_node(m, "")?.0)
    }
}

/// Reads one node: the set of its children, and whether the node itself is a member
/// (it has `"."`, or nothing known below it).
fn read_node(m: &Map<String, Value>, at: &str) -> Result<(Set, bool), FieldsV1Error> {
    let mut set = Set::new();
    let mut is_member = false;
    for (key, child) in m {
        if key == "." {
            is_member = true;
            continue;
        }
        let pe = match parse_element(key) {
            Ok(pe) => pe,
            Err(FieldsV1Error::UnknownElementType { .. }) => continue,
            Err(e) => return Err(e),
        };
        let child_at = format!("{at}/{key}");
        let Value::Object(cm) = child else {
            return Err(FieldsV1Error::NotAnObject { at: child_at });
        };
        let (grandchildren, child_is_member) = read_node(cm, &child_at)?;
        if child_is_member {
            set.members.insert(pe.clone());
        }
        if !grandchildren.is_empty() {
            let merged = match set.children.remove(&pe) {
                Some(prev) => prev.union(&grandchildren),
                None => grandchildren,
            };
            set.children.insert(pe, merged);
        }
    }
    if set.is_empty() {
        is_member = true;
    }
    Ok((set, is_member))
}

// ---------------------------------------------------------------------------------------
// In-place edits of FieldsV1 values

/// Whether a FieldsV1 node (the object under an element's key) marks its element as a
/// member: `{}` or led by `"."`.
fn node_is_member(node: &Map<String, Value>) -> bool {
    node.is_empty() || node.contains_key(".")
}

/// Puts a node back in canonical form after its children changed: `member` decides
/// whether it holds `"."` (first) when it has children, and `{}` stands for a member
/// without children. `false`: the node is no longer anything (its key is to be removed).
fn normalize_node(node: &mut Map<String, Value>, member: bool) -> bool {
    let has_children = node.keys().any(|k| k != ".");
    match (member, has_children) {
        (false, false) => false,
        (true, false) => {
            node.clear();
            true
        }
        (true, true) => {
            if !node.contains_key(".") {
                node.shift_insert(0, ".".into(), Value::Object(Map::new()));
            }
            true
        }
        (false, true) => {
            node.shift_remove(".");
            true
        }
    }
}

/// [`Set::remove`] (the non-recursive difference) applied to a FieldsV1 value in place,
/// touching only the nodes `set` names: what an Update does to other managers' entries
/// without decoding them. Errors on a node that is not an object.
pub fn remove_from_fields_v1(
    node: &mut Map<String, Value>,
    set: &Set,
) -> Result<(), FieldsV1Error> {
    let each = |pe: &PathElement, drop_member: bool, sub: Option<&Set>| {
        let key = serialize_element(pe);
        let Some(child) = node.get_mut(&key) else {
            return Ok(());
        };
        let Value::Object(child) = child else {
            return Err(FieldsV1Error::NotAnObject { at: key });
        };
        let member = node_is_member(child) && !drop_member;
        if let Some(sub) = sub {
            remove_from_fields_v1(child, sub)?;
        }
        if !normalize_node(child, member) {
            node.shift_remove(&key);
        }
        Ok(())
    };
    for_each_element(set, each)
}

/// [`Set::union_with`] applied to a FieldsV1 value in place: new keys go where element
/// order puts them. Errors on a node that is not an object or a key that is not an element
/// (upstream's decoder would drop it; the caller then takes the decoding path).
pub fn add_to_fields_v1(node: &mut Map<String, Value>, set: &Set) -> Result<(), FieldsV1Error> {
    let each = |pe: &PathElement, add_member: bool, sub: Option<&Set>| {
        let key = serialize_element(pe);
        let existed = node.contains_key(&key);
        if !existed {
            let at = insertion_index(node, pe)?;
            node.shift_insert(at, key.clone(), Value::Object(Map::new()));
        }
        let Some(Value::Object(child)) = node.get_mut(&key) else {
            return Err(FieldsV1Error::NotAnObject { at: key });
        };
        let member = (existed && node_is_member(child)) || add_member;
        if let Some(sub) = sub {
            add_to_fields_v1(child, sub)?;
        }
        normalize_node(child, member);
        Ok(())
    };
    for_each_element(set, each)
}

/// Calls `f` once per element of `set`'s top node: whether it is a member, and the set
/// below it if any.
fn for_each_element<E>(
    set: &Set,
    mut f: impl FnMut(&PathElement, bool, Option<&Set>) -> Result<(), E>,
) -> Result<(), E> {
    for pe in &set.members {
        f(pe, true, set.children.get(pe))?;
    }
    for (pe, sub) in &set.children {
        if !set.members.contains(pe) {
            f(pe, false, Some(sub))?;
        }
    }
    Ok(())
}

/// Where `pe`'s key goes among a node's keys: after `"."` and every smaller element.
fn insertion_index(node: &Map<String, Value>, pe: &PathElement) -> Result<usize, FieldsV1Error> {
    let mut at = 0;
    for key in node.keys() {
        if key == "." || parse_element(key)? < *pe {
            at += 1;
        } else {
            break;
        }
    }
    Ok(at)
}

/// Whether the FieldsV1 value `node` and `set` share a member path ([`Set::intersects`]
/// without decoding `node`).
pub fn fields_v1_intersects(node: &Map<String, Value>, set: &Set) -> Result<bool, FieldsV1Error> {
    for pe in &set.members {
        if let Some(child) = node.get(&serialize_element(pe)) {
            match child {
                Value::Object(c) if node_is_member(c) => return Ok(true),
                Value::Object(_) => {}
                _ => {
                    return Err(FieldsV1Error::NotAnObject {
                        at: serialize_element(pe),
                    })
                }
            }
        }
    }
    for (pe, sub) in &set.children {
        let key = serialize_element(pe);
        match node.get(&key) {
            None => {}
            Some(Value::Object(c)) if fields_v1_intersects(c, sub)? => return Ok(true),
            Some(Value::Object(_)) => {}
            Some(_) => return Err(FieldsV1Error::NotAnObject { at: key }),
        }
    }
    Ok(false)
}

/// Whether `path` is a member of the FieldsV1 value `node` ([`Set::has`] without decoding
/// `node`). Errors on a node on the way that is not an object.
pub fn fields_v1_has(
    node: &Map<String, Value>,
    path: &[PathElement],
) -> Result<bool, FieldsV1Error> {
    let Some((last, up)) = path.split_last() else {
        return Ok(false);
    };
    // One key buffer for the whole path (a field's key is most paths' every element).
    fn key_of(key: &mut String, pe: &PathElement) {
        key.clear();
        match pe {
            PathElement::Field(name) => {
                key.push_str("f:");
                key.push_str(name);
            }
            other => key.push_str(&serialize_element(other)),
        }
    }
    let mut key = String::new();
    let mut node = node;
    for pe in up {
        key_of(&mut key, pe);
        match node.get(&key) {
            None => return Ok(false),
            Some(Value::Object(child)) => node = child,
            Some(_) => return Err(FieldsV1Error::NotAnObject { at: key }),
        }
    }
    key_of(&mut key, last);
    match node.get(&key) {
        None => Ok(false),
        Some(Value::Object(child)) => Ok(node_is_member(child)),
        Some(_) => Err(FieldsV1Error::NotAnObject { at: key }),
    }
}

/// Whether every member path of the FieldsV1 value `inner` is one of `outer` (both as this
/// module writes them).
pub fn fields_v1_contains(outer: &Map<String, Value>, inner: &Map<String, Value>) -> bool {
    inner
        .iter()
        .filter(|(k, _)| *k != ".")
        .all(|(k, inner_child)| {
            let (Some(Value::Object(o)), Value::Object(i)) = (outer.get(k), inner_child) else {
                return false;
            };
            (!node_is_member(i) || node_is_member(o)) && fields_v1_contains(o, i)
        })
}
