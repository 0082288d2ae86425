//! Strategic-merge-patch metadata (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`) looked up by field path.

use crate::compile::{Compiled, Field, Kind, NodeId};
use crate::{Gvk, ListStrategy};

/// The strategy of the list at `path`; `Atomic` for anything else.
pub(crate) fn list_strategy(c: &Compiled, gvk: &Gvk, path: &[&str]) -> ListStrategy {
    let Some(field) = resolve(c, gvk, path) else {
        return ListStrategy::Atomic;
    };
    if !matches!(c.node(field.node).kind, Kind::Array { .. }) || !has(field, "merge") {
        return ListStrategy::Atomic;
    }
    match &field.merge_key {
        Some(key) => ListStrategy::MergeByKey(key.clone()),
        None => ListStrategy::MergePrimitives,
    }
}

/// True when the field at `path` has the `retainKeys` strategy.
pub(crate) fn retain_keys(c: &Compiled, gvk: &Gvk, path: &[&str]) -> bool {
    resolve(c, gvk, path).is_some_and(|f| has(f, "retainKeys"))
}

/// `patch_strategy` is a comma-separated list (`merge,retainKeys`).
fn has(field: &Field, strategy: &str) -> bool {
    field
        .patch_strategy
        .as_deref()
        .is_some_and(|s| s.split(',').any(|part| part.trim() == strategy))
}

/// The struct field named by the last path element. Lists on the way are transparent (their
/// items are entered without a path element); a map consumes one element, the key.
fn resolve<'c>(c: &'c Compiled, gvk: &Gvk, path: &[&str]) -> Option<&'c Field> {
    let mut node = c.root(gvk)?;
    let mut found = None;
    for name in path {
        match &c.node(items(c, node)).kind {
            Kind::Struct { fields, .. } => {
                let field = fields.get(*name)?;
                node = field.node;
                found = Some(field);
            }
            Kind::Map { values } => {
                node = *values;
                found = None;
            }
            _ => return None,
        }
    }
    found
}

/// Strip list layers down to the item schema.
fn items(c: &Compiled, mut node: NodeId) -> NodeId {
    while let Kind::Array { items } = c.node(node).kind {
        node = items;
    }
    node
}
