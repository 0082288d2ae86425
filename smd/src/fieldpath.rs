//! Field paths and field sets, as upstream's `fieldpath` package.
//!
//! A [`PathElement`] selects a child of a value: a struct field or map key
//! (`f:name`), an associative-list item by its key fields (`k:{"name":"x"}`), a set item by
//! its value (`v:"x"`), or an atomic-list item by index (`i:0`). A [`Set`] is a tree: at
//! each node, `members` are the elements owned there and `children` the elements under which
//! deeper paths are owned. A path is in the set when its last element is a member of the node
//! its earlier elements lead to; a node may be both (FieldsV1 writes that as `".": {}`).
//!
//! Invariant: no child set is empty, so [`Set::is_empty`] is structural and equality of sets
//! is equality of the trees.
//!
//! Not done: upstream's path matchers and filters (`SetMatcher`, `PrefixMatcher`), used for
//! reset fields.

use crate::value::{compare, equals, to_go_string};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// One step of a path. Ordered as upstream orders elements (field names, then keys, then
/// values, then indexes), which is also FieldsV1's order.
///
/// Payloads are shared (`Arc`): sets and paths clone elements constantly, and a clone is a
/// reference count, not an allocation (schemas hand out their field names' elements).
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A struct field or map key.
    Field(Arc<str>),
    /// An associative-list item: its key fields, sorted by name.
    Key(Arc<[(String, Value)]>),
    /// A set item: its scalar value.
    Value(Arc<Value>),
    /// An atomic-list item by position.
    Index(usize),
}

impl PathElement {
    /// A key element; the fields are sorted by name as upstream stores them.
    pub fn key<I, S>(fields: I) -> PathElement
    where
        I: IntoIterator<Item = (S, Value)>,
        S: Into<String>,
    {
        let mut fields: Vec<(String, Value)> =
            fields.into_iter().map(|(k, v)| (k.into(), v)).collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields.into())
    }

    pub fn field(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    pub fn value(v: Value) -> PathElement {
        PathElement::Value(Arc::new(v))
    }

    fn variant(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

fn key_compare(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    // The common key: one field holding a string (a container's or a port's `name`).
    if let ([(an, Value::String(x))], [(bn, Value::String(y))]) = (a, b) {
        return an.cmp(bn).then_with(|| x.cmp(y));
    }
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an.cmp(bn).then_with(|| compare(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => key_compare(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.variant().cmp(&other.variant()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PathElement::Value(a), PathElement::Value(b)) => equals(a, b),
            _ => self.cmp(other) == Ordering::Equal,
        }
    }
}

impl Eq for PathElement {}

/// Upstream's human-readable form: `.name`, `[name="x",port=80]`, `[="x"]`, `[0]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", to_go_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", to_go_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A sequence of path elements from the object's root.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// A path of field names: `Path::fields(&["spec", "replicas"])`.
    pub fn fields(names: &[&str]) -> Path {
        Path(names.iter().map(|n| PathElement::field(n)).collect())
    }
}

/// Upstream's path string, as conflicts print it: `.spec.containers[name="nginx"].image`.
impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

impl From<Vec<PathElement>> for Path {
    fn from(v: Vec<PathElement>) -> Path {
        Path(v)
    }
}

/// Where the field `name` is among sorted elements (fields come first, by name).
fn field_position<'a>(
    elements: impl Iterator<Item = &'a PathElement>,
    name: &str,
) -> Option<usize> {
    let name = name.as_bytes();
    for (i, pe) in elements.enumerate() {
        let PathElement::Field(n) = pe else {
            return None;
        };
        // The first bytes decide most comparisons, without a call to compare the rest.
        let n = n.as_bytes();
        match n.first().cmp(&name.first()).then_with(|| n.cmp(name)) {
            Ordering::Less => {}
            Ordering::Equal => return Some(i),
            Ordering::Greater => return None,
        }
    }
    None
}

/// A set of field paths (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    pub(crate) members: BTreeSet<PathElement>,
    pub(crate) children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    /// A set holding the given paths.
    pub fn from_paths<I: IntoIterator<Item = Path>>(paths: I) -> Set {
        let mut s = Set::new();
        for p in paths {
            s.insert(&p.0);
        }
        s
    }

    /// Adds a path. The empty path (the whole object) is not representable and is ignored,
    /// as upstream ignores it.
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((last, prefix)) = path.split_last() else {
            return;
        };
        let mut node = self;
        for pe in prefix {
            // Clone the element only when the node is new: keys hold JSON values.
            if !node.children.contains_key(pe) {
                node.children.insert(pe.clone(), Set::new());
            }
            node = node.children.get_mut(pe).expect("inserted above");
        }
        if !node.members.contains(last) {
            node.members.insert(last.clone());
        }
    }

    /// Whether the path is a member (not merely a prefix of members).
    pub fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, prefix)) = path.split_last() else {
            return false;
        };
        let mut node = self;
        for pe in prefix {
            match node.children.get(pe) {
                Some(n) => node = n,
                None => return false,
            }
        }
        node.members.contains(last)
    }

    /// Whether the field or map key `name` is a member here: [`Set::has`] of the one-element
    /// path, without making the element (walks ask it at every key of the levels a set of
    /// skipped fields reaches). Fields sort first and by name, so the scan stops early.
    pub fn has_field(&self, name: &str) -> bool {
        field_position(self.members.iter(), name).is_some()
    }

    /// The set below the field or map key `name` ([`Set::child`] without making the
    /// element).
    pub fn field_child(&self, name: &str) -> Option<&Set> {
        let at = field_position(self.children.keys(), name)?;
        self.children.values().nth(at)
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// The members at this node (paths of length one).
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The child sets at this node.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    /// The paths under `pe`, borrowed; `None` when there are none (child sets are never
    /// empty).
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    /// The paths under `pe`, with `pe` stripped (upstream's `WithPrefix`).
    pub fn with_prefix(&self, pe: &PathElement) -> Set {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Adds every path of `other` to `self`, in place.
    pub fn union_with(&mut self, other: &Set) {
        for pe in &other.members {
            if !self.members.contains(pe) {
                self.members.insert(pe.clone());
            }
        }
        for (pe, child) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.union_with(child),
                None => {
                    self.children.insert(pe.clone(), child.clone());
                }
            }
        }
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, mine)| {
                let theirs = other.children.get(pe)?;
                let both = mine.intersection(theirs);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        Set { members, children }
    }

    /// Paths in `self` and not in `other`. Removing a member keeps the paths below it, as
    /// upstream's (non-recursive) `Difference` does.
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, mine)| match other.children.get(pe) {
                None => Some((pe.clone(), mine.clone())),
                Some(theirs) => {
                    let diff = mine.difference(theirs);
                    (!diff.is_empty()).then(|| (pe.clone(), diff))
                }
            })
            .collect();
        Set { members, children }
    }

    /// Like [`Set::difference`], but a member of `other` also takes everything below it:
    /// `{a.b.c} - {a.b}` is empty.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.members.contains(pe))
            .filter_map(|(pe, mine)| match other.children.get(pe) {
                None => Some((pe.clone(), mine.clone())),
                Some(theirs) => {
                    let diff = mine.recursive_difference(theirs);
                    (!diff.is_empty()).then(|| (pe.clone(), diff))
                }
            })
            .collect();
        Set { members, children }
    }

    /// [`Set::recursive_difference`] in place: cheap when `other` touches little of `self`.
    pub fn remove_recursive(&mut self, other: &Set) {
        for pe in &other.members {
            self.members.remove(pe);
            self.children.remove(pe);
        }
        for (pe, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(pe) {
                mine.remove_recursive(theirs);
                if mine.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// [`Set::difference`] in place.
    pub fn remove(&mut self, other: &Set) {
        for pe in &other.members {
            self.members.remove(pe);
        }
        for (pe, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(pe) {
                mine.remove(theirs);
                if mine.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// Whether `self` and `other` share a member path.
    pub fn intersects(&self, other: &Set) -> bool {
        // Iterate the smaller side's members.
        let (a, b) = if self.members.len() <= other.members.len() {
            (self, other)
        } else {
            (other, self)
        };
        a.members.iter().any(|pe| b.members.contains(pe))
            || self.children.iter().any(|(pe, mine)| {
                other
                    .children
                    .get(pe)
                    .is_some_and(|theirs| mine.intersects(theirs))
            })
    }

    /// The members that have nothing owned below them.
    pub fn leaves(&self) -> Set {
        let members = self
            .members
            .iter()
            .filter(|pe| !self.children.contains_key(pe))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .map(|(pe, c)| (pe.clone(), c.leaves()))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        Set { members, children }
    }

    /// Every member path, in upstream's iteration order (a node's members, then each child's
    /// paths in element order), which is the order conflicts are reported in.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for pe in &self.members {
            prefix.push(pe.clone());
            out.push(Path(prefix.clone()));
            prefix.pop();
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Number of member paths.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(Set::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &[&str]) -> Path {
        Path::fields(s)
    }

    #[test]
    fn algebra() {
        let a = Set::from_paths([p(&["a"]), p(&["a", "b"]), p(&["c", "d"])]);
        let b = Set::from_paths([p(&["a", "b"]), p(&["c", "e"])]);
        assert_eq!(
            a.union(&b),
            Set::from_paths([p(&["a"]), p(&["a", "b"]), p(&["c", "d"]), p(&["c", "e"])])
        );
        assert_eq!(a.intersection(&b), Set::from_paths([p(&["a", "b"])]));
        assert_eq!(
            a.difference(&b),
            Set::from_paths([p(&["a"]), p(&["c", "d"])])
        );
        assert_eq!(
            a.leaves(),
            Set::from_paths([p(&["a", "b"]), p(&["c", "d"])])
        );
        assert!(a.has(&p(&["a"]).0));
        assert!(!a.has(&p(&["c"]).0), "a prefix is not a member");
        assert!(a.difference(&a).is_empty());
        assert_eq!(a.len(), 3);
    }

    #[test]
    fn element_order_and_strings() {
        let k = PathElement::key([("name", json!("nginx"))]);
        let mut v = [
            PathElement::Index(0),
            PathElement::value(json!("x")),
            k.clone(),
            PathElement::field("z"),
        ];
        v.sort();
        assert_eq!(v[0], PathElement::field("z"));
        assert_eq!(v[1], k);
        let path = Path(vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            k,
            PathElement::field("image"),
        ]);
        assert_eq!(path.to_string(), r#".spec.containers[name="nginx"].image"#);
        let multi = PathElement::key([("protocol", json!("TCP")), ("containerPort", json!(80))]);
        assert_eq!(multi.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
        assert_eq!(PathElement::value(json!("a")).to_string(), r#"[="a"]"#);
        assert_eq!(PathElement::Index(3).to_string(), "[3]");
    }
}
