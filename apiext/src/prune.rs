//! Pruning: dropping every field the schema does not specify, and reporting each as upstream's
//! strict decoding does (`unknown field "spec.foo"`).
//!
//! Upstream's decode path (`unstructuredSchemaCoercer.apply`) runs, in this order:
//! 1. the root `metadata` is decoded strictly into an ObjectMeta; its unknown fields are
//!    reported (`metadata.foo`, `metadata.ownerReferences[0].foo`) in sorted key order and dropped;
//! 2. structural pruning of the whole object, the root treated as an embedded resource (its
//!    `apiVersion`, `kind`, `metadata` are never pruned); paths reported sorted;
//! 3. `null`s where the schema is not nullable and has no default are dropped (not reported);
//! 4. each nested embedded resource's `metadata` is decoded as an ObjectMeta: unknown fields
//!    reported (sorted, after the others) and dropped, a null `creationTimestamp` removed.

use crate::compile::Node;
use crate::limits;
use serde_json::{Map, Value};

/// Unknown-field path tracking (upstream's `UnknownFieldPathOptions`).
pub struct Paths {
    track: bool,
    /// Also drop `null`s where the schema is neither nullable nor defaulted (step 3, done
    /// in the same walk: pruning cannot make or remove a null below a kept member).
    nulls: bool,
    parent: String,
    pub found: Vec<String>,
}

impl Paths {
    pub fn on() -> Paths {
        Paths {
            track: true,
            nulls: false,
            parent: String::new(),
            found: Vec::new(),
        }
    }

    pub fn off() -> Paths {
        Paths {
            track: false,
            nulls: false,
            parent: String::new(),
            found: Vec::new(),
        }
    }

    fn push_key(&mut self, k: &str) -> usize {
        let len = self.parent.len();
        if self.track {
            if !self.parent.is_empty() {
                self.parent.push('.');
            }
            self.parent.push_str(k);
        }
        len
    }

    fn push_index(&mut self, i: usize) -> usize {
        let len = self.parent.len();
        if self.track {
            self.parent.push('[');
            self.parent.push_str(&i.to_string());
            self.parent.push(']');
        }
        len
    }

    fn pop(&mut self, len: usize) {
        self.parent.truncate(len);
    }

    fn record(&mut self, k: &str) {
        if self.track {
            let len = self.push_key(k);
            self.found.push(self.parent.clone());
            self.pop(len);
        }
    }
}

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Prunes a whole custom resource; returns the unknown field paths in upstream's order.
/// `embedded`: whether any node below the root is an embedded resource (whose `metadata` is
/// then coerced to an ObjectMeta); without one that walk is skipped.
pub fn prune_object(obj: &mut Value, root: &Node, embedded: bool) -> Vec<String> {
    let mut out = Vec::new();
    // Most objects have nothing to prune: one read-only walk says so without the pruning
    // walk's path bookkeeping and sorting.
    let meta_clean = match obj.get("metadata") {
        Some(meta) => object_meta_clean(meta),
        None => true,
    };
    if !meta_clean || !clean_at(obj, Some(root), true, 0) {
        if let Value::Object(m) = obj {
            if let Some(meta) = m.get_mut("metadata") {
                prune_object_meta(meta, "metadata", &mut out);
            }
        }
        let mut paths = Paths::on();
        paths.nulls = true;
        prune_value(obj, Some(root), true, &mut paths);
        paths.found.sort();
        out.extend(paths.found);
    }
    if embedded {
        let mut coerced = Vec::new();
        coerce_embedded(obj, root, "", &mut coerced, 0);
        coerced.sort();
        out.extend(coerced);
    }
    out
}

/// Prunes a `default` by its node's schema, as upstream does when it serves a CRD.
pub fn prune_default(d: &mut Value, n: &Node) {
    let mut ignored = Vec::new();
    coerce_embedded(d, n, "", &mut ignored, 0);
    prune_value(d, Some(n), false, &mut Paths::off());
}

/// Structural pruning of `x` by `s` (`None`: no schema, everything below is unknown).
/// `resource_root` treats the node as an embedded resource whatever its schema says.
pub fn prune_value(x: &mut Value, s: Option<&Node>, resource_root: bool, paths: &mut Paths) {
    prune_at(x, s, resource_root, paths, 0);
}

fn prune_at(x: &mut Value, s: Option<&Node>, resource_root: bool, p: &mut Paths, depth: usize) {
    if depth > limits::VALUE_DEPTH_MAX {
        return;
    }
    if let Some(n) = s {
        if n.preserve_unknown {
            skip_prune(x, n, resource_root, p, depth);
            return;
        }
    }
    match x {
        Value::Object(m) => {
            let Some(n) = s else {
                for k in m.keys() {
                    p.record(k);
                }
                m.clear();
                return;
            };
            let embedded = n.embedded || resource_root;
            let at_root = p.parent.is_empty();
            m.retain(|k, v| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return !p.nulls || keep_null_pruned(v, n, k, depth);
                }
                match n.member(k) {
                    Some(child) => {
                        let child = child.ok();
                        if p.nulls && v.is_null() && child.is_some_and(drops_null) {
                            return false;
                        }
                        let len = p.push_key(k);
                        prune_at(v, child, false, p, depth + 1);
                        p.pop(len);
                        true
                    }
                    None => {
                        if !META_FIELDS.contains(&k.as_str()) || !at_root {
                            p.record(k);
                        }
                        false
                    }
                }
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|n| n.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                let len = p.push_index(i);
                prune_at(v, item_schema, false, p, depth + 1);
                p.pop(len);
            }
        }
        _ => {}
    }
}

/// Whether [`prune_at`] (with `nulls`) leaves `x` as it is and reports nothing: every
/// member known to the schema, no `null` it would drop. `false` also where this does not
/// look (below `x-kubernetes-preserve-unknown-fields`): the pruning walk then decides.
fn clean_at(x: &Value, s: Option<&Node>, resource_root: bool, depth: usize) -> bool {
    if depth > limits::VALUE_DEPTH_MAX {
        return true;
    }
    match x {
        Value::Object(m) => {
            let Some(n) = s else {
                return m.is_empty();
            };
            if n.preserve_unknown {
                return false;
            }
            let embedded = n.embedded || resource_root;
            m.iter().all(|(k, v)| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    let child = n.member(k).and_then(Result::ok);
                    return !(v.is_null() && child.is_some_and(drops_null))
                        && nulls_clean(v, child, depth + 1);
                }
                match n.member(k) {
                    Some(child) => {
                        let child = child.ok();
                        !(v.is_null() && child.is_some_and(drops_null))
                            && clean_at(v, child, false, depth + 1)
                    }
                    None => false,
                }
            })
        }
        Value::Array(items) => {
            if s.is_some_and(|n| n.preserve_unknown) {
                return false;
            }
            let item_schema = s.and_then(|n| n.items.as_deref());
            items
                .iter()
                .all(|v| clean_at(v, item_schema, false, depth + 1))
        }
        _ => true,
    }
}

/// Whether [`prune_nulls`] leaves `x` as it is.
fn nulls_clean(x: &Value, s: Option<&Node>, depth: usize) -> bool {
    if depth > limits::VALUE_DEPTH_MAX {
        return true;
    }
    match (x, s) {
        (Value::Object(m), Some(n)) => m.iter().all(|(k, v)| {
            let child = n.member(k).and_then(Result::ok);
            !(v.is_null() && child.is_some_and(drops_null)) && nulls_clean(v, child, depth + 1)
        }),
        (Value::Array(items), _) => {
            let item_schema = s.and_then(|n| n.items.as_deref());
            items.iter().all(|v| nulls_clean(v, item_schema, depth + 1))
        }
        _ => true,
    }
}

/// Below `x-kubernetes-preserve-unknown-fields`: unknown members stay, specified ones are
/// pruned by their schema.
fn skip_prune(x: &mut Value, n: &Node, resource_root: bool, p: &mut Paths, depth: usize) {
    if depth > limits::VALUE_DEPTH_MAX {
        return;
    }
    match x {
        Value::Object(m) => {
            let embedded = n.embedded || resource_root;
            m.retain(|k, v| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return !p.nulls || keep_null_pruned(v, n, k, depth);
                }
                if let Some(child) = n.member(k) {
                    let child = child.ok();
                    if p.nulls && v.is_null() && child.is_some_and(drops_null) {
                        return false;
                    }
                    let len = p.push_key(k);
                    prune_at(v, child, false, p, depth + 1);
                    p.pop(len);
                }
                true
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = n.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    let len = p.push_index(i);
                    skip_prune(v, item_schema, false, p, depth + 1);
                    p.pop(len);
                }
            }
        }
        _ => {}
    }
}

/// Whether a `null` of this schema is dropped: neither nullable nor defaulted.
fn drops_null(c: &Node) -> bool {
    !c.nullable && c.default.is_none()
}

/// For a member pruning keeps as it is (an embedded resource's `apiVersion`, `kind` or
/// `metadata`): whether it stays, its nulls pruned ([`prune_nulls`]) by its schema in `n`.
fn keep_null_pruned(v: &mut Value, n: &Node, k: &str, depth: usize) -> bool {
    let child = n.member(k).and_then(Result::ok);
    if v.is_null() && child.is_some_and(drops_null) {
        return false;
    }
    prune_nulls(v, child, depth + 1);
    true
}

/// Drops members and keeps items that are `null` where the schema is neither nullable nor
/// defaulted (upstream's `PruneNonNullableNullsWithoutDefaults`; list items are kept).
fn prune_nulls(x: &mut Value, s: Option<&Node>, depth: usize) {
    if depth > limits::VALUE_DEPTH_MAX {
        return;
    }
    match x {
        Value::Object(m) => {
            m.retain(|k, v| match s {
                Some(n) => keep_null_pruned(v, n, k, depth),
                None => true,
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|n| n.items.as_deref());
            for v in items {
                prune_nulls(v, item_schema, depth + 1);
            }
        }
        _ => {}
    }
}

/// Nested embedded resources: their `metadata` is decoded as an ObjectMeta.
fn coerce_embedded(x: &mut Value, n: &Node, path: &str, out: &mut Vec<String>, depth: usize) {
    if depth > limits::VALUE_DEPTH_MAX {
        return;
    }
    match x {
        Value::Object(m) => {
            if n.embedded {
                if let Some(meta) = m.get_mut("metadata") {
                    let prefix = child_path(path, "metadata");
                    prune_object_meta(meta, &prefix, out);
                    if let Value::Object(mm) = meta {
                        if mm.get("creationTimestamp").is_some_and(Value::is_null) {
                            mm.shift_remove("creationTimestamp");
                        }
                    }
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = n.properties.get(k) {
                    coerce_embedded(v, p, &child_path(path, k), out, depth + 1);
                } else if let Some(crate::compile::Additional::Schema(s)) = &n.additional {
                    coerce_embedded(v, s, &format!("{path}[{k}]"), out, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = n.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    coerce_embedded(v, s, &format!("{path}[{i}]"), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn child_path(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// The fields of `metav1.ObjectMeta` (v1.36) as JSON names; `None` marks a plain value, `Some`
/// a list whose items are objects with the listed fields.
const OBJECT_META: &[(&str, Option<&[&str]>)] = &[
    ("name", None),
    ("generateName", None),
    ("namespace", None),
    ("selfLink", None),
    ("uid", None),
    ("resourceVersion", None),
    ("generation", None),
    ("creationTimestamp", None),
    ("deletionTimestamp", None),
    ("deletionGracePeriodSeconds", None),
    ("labels", None),
    ("annotations", None),
    (
        "ownerReferences",
        Some(&[
            "apiVersion",
            "kind",
            "name",
            "uid",
            "controller",
            "blockOwnerDeletion",
        ]),
    ),
    ("finalizers", None),
    (
        "managedFields",
        Some(&[
            "manager",
            "operation",
            "apiVersion",
            "time",
            "fieldsType",
            "fieldsV1",
            "subresource",
        ]),
    ),
];

/// Drops the members of `meta` that ObjectMeta does not have, reporting each as
/// `<prefix>.<field path>`. Upstream re-encodes the metadata map (Go sorts map keys) and decodes
/// it strictly, so unknown fields come in sorted key order, level by level.
fn prune_object_meta(meta: &mut Value, prefix: &str, out: &mut Vec<String>) {
    let Value::Object(m) = meta else { return };
    let mut keys: Vec<String> = m.keys().cloned().collect();
    keys.sort();
    for k in keys {
        let Some((_, items)) = OBJECT_META.iter().find(|(name, _)| *name == k.as_str()) else {
            out.push(format!("{prefix}.{k}"));
            m.shift_remove(&k);
            continue;
        };
        if let (Some(fields), Some(Value::Array(list))) = (items, m.get_mut(&k)) {
            for (i, item) in list.iter_mut().enumerate() {
                if let Value::Object(im) = item {
                    prune_known(im, fields, &format!("{prefix}.{k}[{i}]"), out);
                }
            }
        }
    }
}

/// Whether [`prune_object_meta`] leaves `meta` as it is (every member an ObjectMeta field,
/// every owner reference's and managedFields entry's member known).
fn object_meta_clean(meta: &Value) -> bool {
    let Value::Object(m) = meta else { return true };
    m.iter().all(
        |(k, v)| match OBJECT_META.iter().find(|(name, _)| *name == k.as_str()) {
            None => false,
            Some((_, None)) => true,
            Some((_, Some(fields))) => match v {
                Value::Array(list) => list.iter().all(|item| match item {
                    Value::Object(im) => im.keys().all(|k| fields.contains(&k.as_str())),
                    _ => true,
                }),
                _ => true,
            },
        },
    )
}

fn prune_known(m: &mut Map<String, Value>, fields: &[&str], prefix: &str, out: &mut Vec<String>) {
    let mut unknown: Vec<String> = m
        .keys()
        .filter(|k| !fields.contains(&k.as_str()))
        .cloned()
        .collect();
    unknown.sort();
    for k in unknown {
        m.shift_remove(&k);
        out.push(format!("{prefix}.{k}"));
    }
}

/// Upstream prunes every `default` by the schema of its node when it builds the CRD's
/// handler (embedded resources' metadata included), so unknown fields inside a default never
/// reach an object.
pub fn prune_defaults(n: &mut Node, depth: usize) {
    if depth > limits::SCHEMA_DEPTH_MAX {
        return;
    }
    if let Some(mut d) = n.default.take() {
        prune_default(&mut d, n);
        n.default = Some(d);
    }
    for p in n.properties.values_mut() {
        prune_defaults(p, depth + 1);
    }
    if let Some(crate::compile::Additional::Schema(s)) = &mut n.additional {
        prune_defaults(s, depth + 1);
    }
    if let Some(s) = &mut n.items {
        prune_defaults(s, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::{clean_at, object_meta_clean, prune_object_meta, prune_value, Paths};
    use crate::Schema;
    use rand::rngs::StdRng;
    use rand::{Rng as _, SeedableRng};
    use serde_json::{json, Map, Value};

    /// Values around the schemas below: known and unknown members, nulls, lists, objects.
    fn value(r: &mut StdRng, depth: usize) -> Value {
        match r.random_range(0..if depth > 3 { 4 } else { 7 }) {
            0 => Value::Null,
            1 => json!(r.random_range(0..3)),
            2 => json!("s"),
            3 => Value::Bool(true),
            4 | 5 => {
                let keys = [
                    "a",
                    "n",
                    "d",
                    "sub",
                    "free",
                    "emb",
                    "list",
                    "m",
                    "metadata",
                    "kind",
                    "x",
                    "name",
                    "labels",
                    "ownerReferences",
                ];
                let mut m = Map::new();
                for _ in 0..r.random_range(0..5) {
                    let k = keys[r.random_range(0..keys.len())];
                    m.insert(k.to_string(), value(r, depth + 1));
                }
                Value::Object(m)
            }
            _ => Value::Array(
                (0..r.random_range(0..3))
                    .map(|_| value(r, depth + 1))
                    .collect(),
            ),
        }
    }

    #[test]
    fn an_object_found_clean_is_one_pruning_leaves_alone() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
                "a": {"type": "integer"},
                "n": {"type": "integer", "nullable": true},
                "d": {"type": "integer", "default": 1},
                "sub": {"type": "object", "properties": {"a": {"type": "string"},
                        "sub": {"type": "object", "additionalProperties": false}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"a": {"type": "integer"}}},
                "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true},
                "list": {"type": "array", "items": {"type": "object",
                         "properties": {"a": {"type": "integer"}, "n": {"type": "string", "nullable": true}}}},
                "m": {"type": "object", "additionalProperties": {"type": "object",
                      "properties": {"a": {"type": "integer"}}}}
            }
        }))
        .unwrap();
        let mut r = StdRng::seed_from_u64(0x005E_ED0F_C1EA);
        let mut clean = 0;
        for _ in 0..50_000 {
            let mut obj = value(&mut r, 0);
            if !obj.is_object() {
                continue;
            }
            if let Some(meta) = obj.as_object_mut().and_then(|m| m.get_mut("metadata")) {
                // Mostly ObjectMeta's own fields, sometimes another one.
                if r.random_range(0..3) > 0 {
                    if let Value::Object(mm) = meta {
                        mm.retain(|k, _| {
                            ["name", "labels", "ownerReferences"].contains(&k.as_str())
                        });
                    }
                }
            }
            let found_clean = obj.get("metadata").is_none_or(object_meta_clean)
                && clean_at(&obj, Some(&schema.root), true, 0);
            let before = obj.clone();
            let mut found = Vec::new();
            if let Some(meta) = obj.as_object_mut().and_then(|m| m.get_mut("metadata")) {
                prune_object_meta(meta, "metadata", &mut found);
            }
            let mut paths = Paths::on();
            paths.nulls = true;
            prune_value(&mut obj, Some(&schema.root), true, &mut paths);
            found.extend(paths.found);
            if found_clean {
                clean += 1;
                assert_eq!(obj, before, "found clean but pruned");
                assert!(found.is_empty(), "found clean but {found:?} in {before}");
            }
        }
        // The generator reaches both answers often, so the check above bites.
        assert!(clean > 1_000, "{clean}");
    }
}
