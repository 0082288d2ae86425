//! Kubernetes strategic merge patch, as upstream's server applies it
//! (`StrategicMergeMapPatch` with parallel-list merging and unmatched nulls ignored).
//!
//! Directives: `$patch: replace|delete|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<f>`,
//! `$setElementOrder/<f>`. Lists with a merge strategy merge by key (maps) or as sets
//! (primitives) and keep upstream's ordering (`$setElementOrder` first, then the patch's
//! order, then the live order). Values added by the patch have their directives and nulls
//! processed too, so no directive is ever stored.

use crate::status::ApiError;
use serde_json::{Map, Value};

/// How a list field merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListStrategy {
    /// The patch's list replaces the live one.
    Atomic,
    /// Lists of objects merged by the named key (`x-kubernetes-patch-merge-key`).
    MergeByKey(String),
    /// Lists of primitives merged as sets.
    MergePrimitives,
}

/// Schema knowledge the merge needs.
pub trait MergeMeta {
    /// Strategy of the list at `path`: the chain of field names from the object root; list
    /// items are transparent (so `["spec","containers","ports"]`).
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;
    /// Whether the struct at `path` has the `retainKeys` strategy. Applying a patch honours a
    /// `$retainKeys` directive wherever it appears (as upstream), so this only informs patch
    /// creation.
    fn retain_keys(&self, path: &[&str]) -> bool {
        let _ = path;
        false
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_PRIMITIVES_PREFIX: &str = "$deleteFromPrimitiveList/";
const SET_ORDER_PREFIX: &str = "$setElementOrder/";

fn bad_request(msg: &str) -> ApiError {
    ApiError::bad_request(msg)
}
fn bad_primitive_list() -> ApiError {
    bad_request("invalid patch format of primitive list")
}
fn bad_retain_keys() -> ApiError {
    bad_request("invalid patch format of retainKeys")
}
fn bad_set_order() -> ApiError {
    bad_request("invalid patch format of setElementOrder list")
}
/// Upstream answers its plain (non-status) merge errors with code 500 and no reason.
fn raw(msg: String) -> ApiError {
    ApiError::unknown(500, msg)
}
fn no_merge_key(m: &Value, key: &str) -> ApiError {
    raw(format!(
        "map: {m} does not contain declared merge key: {key}"
    ))
}

/// Applies a strategic merge `patch` to `original` (both JSON objects).
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    meta: &dyn MergeMeta,
) -> Result<Value, ApiError> {
    let original = match original {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return Err(bad_request("invalid JSON document")),
    };
    let Value::Object(patch) = patch else {
        return Err(bad_request(&format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind_name(patch)
        )));
    };
    let mut merger = Merger {
        meta,
        path: Vec::new(),
    };
    merger.merge_map(original, patch.clone())
}

fn json_kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Element kind of a list, distinguishing what Go's decoded types distinguish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    List,
    Map,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.is_f64() => Kind::Float,
        Value::Number(_) => Kind::Int,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::List,
        Value::Object(_) => Kind::Map,
    }
}

/// The common element kind of the lists; `None` when all are empty.
fn element_kind(lists: &[&[Value]]) -> Result<Option<Kind>, ApiError> {
    let mut kind = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let k = kind_of(v);
        match kind {
            None if k == Kind::List => {
                return Err(ApiError::unprocessable_generic());
            }
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(raw("list element types are not identical".into()))
            }
            Some(_) => {}
        }
    }
    Ok(kind)
}

struct Merger<'a> {
    meta: &'a dyn MergeMeta,
    path: Vec<String>,
}

impl Merger<'_> {
    fn strategy(&self, key: &str) -> ListStrategy {
        let mut path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        path.push(key);
        self.meta.list_strategy(&path)
    }

    fn within<T>(&mut self, key: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(key.to_string());
        let out = f(self);
        self.path.pop();
        out
    }

    fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
    ) -> Result<Value, ApiError> {
        if let Some(directive) = patch.remove(DIRECTIVE) {
            return match directive.as_str() {
                Some("replace") => self.merge_map(Map::new(), patch),
                Some("delete") => Ok(Value::Object(Map::new())),
                _ => Err(raw(format!(
                    "unknown patch type: {} in map: {}",
                    directive
                        .as_str()
                        .map_or(directive.to_string(), str::to_string),
                    Value::Object(patch)
                ))),
            };
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.apply_set_element_orders(&mut original, &mut patch)?;
        let (deletions, regular): (Vec<_>, Vec<_>) = patch
            .into_iter()
            .partition(|(k, _)| k.starts_with(DELETE_PRIMITIVES_PREFIX));
        for (key, value) in regular {
            if key.starts_with('$') {
                continue; // unknown directive: never stored
            }
            self.merge_member(&mut original, key, value)?;
        }
        for (key, value) in deletions {
            let field = key
                .strip_prefix(DELETE_PRIMITIVES_PREFIX)
                .unwrap_or_default();
            if field.is_empty() {
                return Err(bad_primitive_list());
            }
            delete_from_primitive_list(&mut original, field, &value)?;
        }
        Ok(Value::Object(original))
    }

    fn merge_member(
        &mut self,
        original: &mut Map<String, Value>,
        key: String,
        patch: Value,
    ) -> Result<(), ApiError> {
        if patch.is_null() {
            original.remove(&key);
            return Ok(());
        }
        let current = original.remove(&key).unwrap_or(Value::Null);
        let merged = self.within(&key, |m| m.merge_value(current, patch, &key))?;
        original.insert(key, merged);
        Ok(())
    }

    /// Merges one member value; `self.path` already ends with `key`.
    fn merge_value(&mut self, current: Value, patch: Value, key: &str) -> Result<Value, ApiError> {
        debug_assert_eq!(self.path.last().map(String::as_str), Some(key));
        let strategy = || {
            let path: Vec<&str> = self.path.iter().map(String::as_str).collect();
            self.meta.list_strategy(&path)
        };
        match (current, patch) {
            (Value::Object(c), Value::Object(p)) => self.merge_map(c, p),
            (Value::Null, Value::Object(p)) => self.merge_map(Map::new(), p),
            (Value::Array(c), Value::Array(p)) => {
                let s = strategy();
                self.merge_list(c, p, &s).map(Value::Array)
            }
            (Value::Null, Value::Array(p)) => {
                let s = strategy();
                self.merge_list(Vec::new(), p, &s).map(Value::Array)
            }
            (_, p) => self.fresh(p),
        }
    }

    /// A value taken from the patch where nothing of its type exists: directives and nulls
    /// inside it are still processed.
    fn fresh(&mut self, patch: Value) -> Result<Value, ApiError> {
        match patch {
            Value::Object(p) => self.merge_map(Map::new(), p),
            other => Ok(other),
        }
    }

    fn merge_list(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        strategy: &ListStrategy,
    ) -> Result<Vec<Value>, ApiError> {
        if *strategy == ListStrategy::Atomic {
            return Ok(patch);
        }
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = element_kind(&[&original, &patch])?;
        if kind != Some(Kind::Map) {
            let mut merged = original.clone();
            for v in &patch {
                if !merged.contains(v) {
                    merged.push(v.clone());
                }
            }
            let (in_patch, server_only) = partition(&merged, &patch, "");
            return normalize_element_order(in_patch, server_only, &patch, &original, "");
        }
        let ListStrategy::MergeByKey(key) = strategy else {
            return Err(raw(
                "cannot merge lists without merge key for type map".into()
            ));
        };
        let (original, patch) = apply_list_directives(original, patch, key)?;
        let merged = self.merge_by_key(original.clone(), &patch, key)?;
        let (in_patch, server_only) = partition(&merged, &patch, key);
        normalize_element_order(in_patch, server_only, &patch, &original, key)
    }

    fn merge_by_key(
        &mut self,
        mut original: Vec<Value>,
        patch: &[Value],
        key: &str,
    ) -> Result<Vec<Value>, ApiError> {
        for item in patch {
            let Some(key_value) = item.get(key) else {
                return Err(no_merge_key(item, key));
            };
            let found = original.iter().position(|o| o.get(key) == Some(key_value));
            let Value::Object(item_map) = item.clone() else {
                continue;
            };
            match found {
                Some(i) => {
                    let current = match std::mem::take(&mut original[i]) {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    original[i] = self.merge_map(current, item_map)?;
                }
                None => original.push(self.merge_map(Map::new(), item_map)?),
            }
        }
        Ok(original)
    }

    /// Handles every `$setElementOrder/<field>` of `patch`, merging that field's list and
    /// ordering it; the field is then removed from `patch`.
    fn apply_set_element_orders(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
    ) -> Result<(), ApiError> {
        let order_keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ORDER_PREFIX))
            .cloned()
            .collect();
        for order_key in order_keys {
            let order = patch.remove(&order_key).unwrap_or(Value::Null);
            let Value::Array(order) = order else {
                return Err(bad_set_order());
            };
            let field = order_key[SET_ORDER_PREFIX.len()..].to_string();
            if field.is_empty() {
                return Err(bad_set_order());
            }
            let live = list_member(original, &field)?;
            let patched = list_member(patch, &field)?;
            let strategy = self.strategy(&field);
            let merge_key = match &strategy {
                ListStrategy::MergeByKey(k) => k.clone(),
                _ => String::new(),
            };
            if let Some(p) = &patched {
                validate_against_order(p, &order, &merge_key)?;
            }
            let merged = match (live.clone(), patched.clone()) {
                (None, None) => continue,
                (Some(l), None) => l,
                (live_list, Some(p)) => {
                    let l = live_list.unwrap_or_default();
                    self.within(&field, |m| m.merge_list(l, p, &strategy))?
                }
            };
            patch.remove(&field);
            let live = live.unwrap_or_default();
            let patched = patched.unwrap_or_default();
            if element_kind(&[&live, &patched])?.is_none() {
                original.insert(field, Value::Array(merged));
                continue;
            }
            let (in_order, server_only) = partition(&merged, &order, &merge_key);
            let ordered =
                normalize_element_order(in_order, server_only, &order, &live, &merge_key)?;
            original.insert(field, Value::Array(ordered));
        }
        Ok(())
    }
}

fn list_member(map: &Map<String, Value>, field: &str) -> Result<Option<Vec<Value>>, ApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(other) => Err(raw(format!(
            "expected a []interface {{}}, but received a {}",
            json_kind_name(other)
        ))),
    }
}

/// `$retainKeys`: keys of `original` not listed are dropped; the patch may only set listed keys.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad_retain_keys());
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        let directive = k.starts_with(DELETE_PRIMITIVES_PREFIX) || k.starts_with(SET_ORDER_PREFIX);
        if !v.is_null() && !directive && !listed(k) {
            return Err(bad_retain_keys());
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$deleteFromPrimitiveList/<field>`: removes the listed values from the live list.
fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    values: &Value,
) -> Result<(), ApiError> {
    let Value::Array(values) = values else {
        return Err(bad_primitive_list());
    };
    if let Some(Value::Array(live)) = original.get_mut(field) {
        live.retain(|v| !values.contains(v));
    }
    Ok(())
}

/// `$patch` elements of a list of maps: `delete` removes matching live items, `replace`
/// makes the rest of the patch list the whole list.
fn apply_list_directives(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE).map(|d| d.as_str()) {
            None => plain.push(item),
            Some(Some("delete")) => {
                let Some(key_value) = item.get(key) else {
                    return Err(no_merge_key(&item, key));
                };
                original.retain(|o| o.get(key) != Some(key_value));
            }
            Some(Some("replace")) => replace = true,
            Some(Some("merge")) => {
                return Err(raw(
                    "merging lists cannot yet be specified in the patch".into()
                ))
            }
            Some(_) => {
                let directive = item.get(DIRECTIVE).cloned().unwrap_or_default();
                return Err(raw(format!(
                    "unknown patch type: {directive} in map: {item}"
                )));
            }
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    Ok((original, plain))
}

/// The value an item is identified by: its merge key's value for maps, itself otherwise.
fn identity<'v>(item: &'v Value, key: &str) -> Option<&'v Value> {
    if key.is_empty() {
        Some(item)
    } else {
        item.get(key)
    }
}

fn index_in(list: &[Value], item: &Value, key: &str) -> Option<usize> {
    let id = identity(item, key);
    list.iter().position(|v| identity(v, key) == id)
}

/// Splits `items` into those present in `by` and the rest, keeping order.
fn partition(items: &[Value], by: &[Value], key: &str) -> (Vec<Value>, Vec<Value>) {
    items
        .iter()
        .cloned()
        .partition(|v| index_in(by, v, key).is_some())
}

fn is_delete_item(v: &Value) -> bool {
    v.get(DIRECTIVE).and_then(Value::as_str) == Some("delete")
}

/// Sorts `to_sort` by position in `order` (stable; unknown items last); `$patch: delete`
/// items go to the end.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    key: &str,
) -> Result<Vec<Value>, ApiError> {
    if !key.is_empty() {
        if let Some(bad) = to_sort.iter().chain(order).find(|v| v.get(key).is_none()) {
            return Err(no_merge_key(bad, key));
        }
    }
    let (mut keep, deletes): (Vec<_>, Vec<_>) = to_sort
        .into_iter()
        .partition(|v| key.is_empty() || !is_delete_item(v));
    keep.sort_by_key(|v| index_in(order, v, key).unwrap_or(usize::MAX));
    keep.extend(deletes);
    Ok(keep)
}

/// Upstream's `normalizeElementOrder`: patch items in patch order, server-only items in live
/// order, interleaved by their live positions.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: &str,
) -> Result<Vec<Value>, ApiError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, key)?;
    let server_only = normalize_slice_order(server_only, server_order, key)?;
    Ok(merge_sorted(server_only, patch_items, server_order, key))
}

/// Inserts `left` items into `right`, taking a left item first only when both are in
/// `server_order` and it comes earlier there.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    key: &str,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (
                index_in(server_order, l, key),
                index_in(server_order, r, key),
            ) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Upstream's `validatePatchWithSetOrderList`: the patch list's items (ignoring deletions and
/// directive items) must appear in the same relative order in the `$setElementOrder` list.
fn validate_against_order(patch: &[Value], order: &[Value], key: &str) -> Result<(), ApiError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    if !key.is_empty() && patch.iter().any(|v| !v.is_object()) {
        return Err(raw("expected a map[string]interface {}".into()));
    }
    let items: Vec<&Value> = patch
        .iter()
        .filter(|v| key.is_empty() || !is_delete_item(v))
        .collect();
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if items[pi].get(DIRECTIVE).is_some() && items[pi].is_object() {
            pi += 1;
            continue;
        }
        if !key.is_empty() && (items[pi].get(key).is_none() || order[oi].get(key).is_none()) {
            return Err(no_merge_key(items[pi], key));
        }
        if identity(items[pi], key) == identity(&order[oi], key) {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() {
        return Err(raw(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            Value::Array(patch.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}
