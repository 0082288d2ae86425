//! `x-kubernetes-list-type` uniqueness (upstream's `listtype.ValidateListSetsAndMaps`):
//! a `set` may not repeat a value, a `map` may not repeat a key tuple; each repetition is
//! reported once, at the index of its second occurrence, in index order.

use crate::compile::{Additional, Node};
use crate::limits;
use crate::render::go_json;
use crate::validate::cause;
use keel_api::status::{field, StatusCause};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Validates every list below the root object.
pub fn validate(root: &Node, obj: &Value) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    if let Value::Object(m) = obj {
        object(&mut errs, "", root, m, 0);
    }
    errs
}

fn object(errs: &mut Vec<StatusCause>, path: &str, s: &Node, m: &Map<String, Value>, depth: usize) {
    if depth > limits::VALUE_DEPTH_MAX {
        return;
    }
    if let Some(Additional::Schema(a)) = &s.additional {
        for (k, v) in m {
            value(errs, &crate::compile::index_path(path, k), a, v, depth + 1);
        }
    }
    if !s.properties.is_empty() {
        for (k, v) in m {
            if let Some(sub) = s.properties.get(k) {
                value(
                    errs,
                    &crate::compile::field_path(path, k),
                    sub,
                    v,
                    depth + 1,
                );
            }
        }
    }
}

fn value(errs: &mut Vec<StatusCause>, path: &str, s: &Node, v: &Value, depth: usize) {
    match v {
        Value::Array(items) => array(errs, path, s, items, depth),
        Value::Object(m) => object(errs, path, s, m, depth),
        _ => {}
    }
}

fn array(errs: &mut Vec<StatusCause>, path: &str, s: &Node, items: &[Value], depth: usize) {
    if errs.len() >= limits::ERRORS_MAX || depth > limits::VALUE_DEPTH_MAX {
        return;
    }
    match s.list_type.as_deref() {
        Some("set") => {
            for i in repeated(items.iter().map(Key::of)) {
                errs.push(duplicate(&format!("{path}[{i}]"), &items[i]));
            }
        }
        Some("map") => errs.extend(list_map(path, s, items)),
        _ => {}
    }
    if let Some(item) = s.items.as_deref() {
        for (i, v) in items.iter().enumerate() {
            value(
                errs,
                &crate::compile::index_path(path, &i.to_string()),
                item,
                v,
                depth + 1,
            );
        }
    }
}

/// A value as upstream's set check compares it: scalars by Go `==` (so `1` and `1.0` differ),
/// objects and lists by their JSON encoding.
#[derive(PartialEq, Eq, Hash)]
enum Key {
    Scalar(String),
    Compound(String),
    Unspecified,
}

impl Key {
    fn of(v: &Value) -> Key {
        match v {
            Value::Object(_) | Value::Array(_) => Key::Compound(go_json(v)),
            Value::Number(n) => Key::Scalar(format!(
                "{}{}",
                if n.as_i64().is_some() { "i" } else { "f" },
                go_json(v)
            )),
            other => Key::Scalar(go_json(other)),
        }
    }
}

/// Indices of the second occurrence of each repeated key.
fn repeated(keys: impl Iterator<Item = Key>) -> Vec<usize> {
    let mut seen: HashMap<Key, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.enumerate() {
        let n = seen.entry(k).or_insert(0);
        *n += 1;
        if *n == 2 {
            out.push(i);
        }
    }
    out
}

fn duplicate(path: &str, v: &Value) -> StatusCause {
    cause(
        field::REASON_DUPLICATE,
        path,
        format!("Duplicate value: {}", crate::render::bad_value(v)),
    )
}

fn list_map(path: &str, s: &Node, items: &[Value]) -> Vec<StatusCause> {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            return vec![cause(
                field::REASON_INVALID,
                &format!("{path}[{i}]"),
                format!(
                    "Invalid value: {}: must be an object for an array of list-type map",
                    crate::render::bad_value(x)
                ),
            )];
        }
    }
    if items.len() <= 1 {
        return Vec::new();
    }
    if s.list_map_keys.len() == 1 {
        let key = &s.list_map_keys[0];
        let keys: Vec<Option<&Value>> = items
            .iter()
            .map(|x| x.as_object().and_then(|m| m.get(key)))
            .collect();
        let dup = repeated(
            keys.iter()
                .map(|k| k.map(Key::of).unwrap_or(Key::Unspecified)),
        );
        return dup
            .into_iter()
            .map(|i| {
                let mut shown = Map::new();
                if let Some(k) = keys[i] {
                    shown.insert(key.clone(), k.clone());
                }
                duplicate(&format!("{path}[{i}]"), &Value::Object(shown))
            })
            .collect();
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Some(m) = x.as_object() {
                for k in &s.list_map_keys {
                    if let Some(v) = m.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    repeated(keys.iter().map(Key::of))
        .into_iter()
        .map(|i| duplicate(&format!("{path}[{i}]"), &keys[i]))
        .collect()
}
