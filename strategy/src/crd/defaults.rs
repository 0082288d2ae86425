//! Part of upstream's `ValidateDefaults` (run once a schema is structural): a default must
//! not hold fields its schema would prune, must be of the schema's type, and a scalar
//! default must meet its schema's lengths, bounds, `multipleOf` and `enum`.
//!
//! Not checked (upstream does): patterns and formats of a default, the members and items of
//! object and array defaults against their schemas (types, required, item counts),
//! defaults of embedded resources and of their metadata (object-meta coercion), and CEL
//! rules on defaults.

use super::schema::{get, props_of};
use super::{gojson, SCHEMA_DEPTH_MAX};
use crate::errors::{Bad, FieldErr};
use serde_json::Value;

const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

/// Whether pruning `x` by schema `s` (`None`: no schema) would drop anything: upstream's
/// `pruning.Prune` compared with the value before.
fn prunes(x: &Value, s: Option<&Value>, depth: usize) -> bool {
    if depth > SCHEMA_DEPTH_MAX {
        return false;
    }
    let d = depth + 1;
    if let Some(s) = s.filter(|s| flag(s, "x-kubernetes-preserve-unknown-fields")) {
        return keeps_unknown_prunes(x, s, d);
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                return !m.is_empty();
            };
            let embedded = flag(s, "x-kubernetes-embedded-resource");
            m.iter().any(|(k, v)| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return false;
                }
                match props_of(s).and_then(|p| p.get(k)) {
                    Some(p) => prunes(v, Some(p), d),
                    None => match get(s, "additionalProperties") {
                        Some(ap) => prunes(v, ap.is_object().then_some(ap), d),
                        None => true,
                    },
                }
            })
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| get(s, "items")).filter(|i| i.is_object());
            items.iter().any(|v| prunes(v, item_schema, d))
        }
        _ => false,
    }
}

/// Pruning below a node that keeps unknown fields: only its known members are pruned.
fn keeps_unknown_prunes(x: &Value, s: &Value, depth: usize) -> bool {
    match x {
        Value::Object(m) => {
            let embedded = flag(s, "x-kubernetes-embedded-resource");
            m.iter().any(|(k, v)| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return false;
                }
                match props_of(s).and_then(|p| p.get(k)) {
                    Some(p) => prunes(v, Some(p), depth),
                    None => get(s, "additionalProperties")
                        .is_some_and(|ap| prunes(v, ap.is_object().then_some(ap), depth)),
                }
            })
        }
        Value::Array(items) => {
            let item_schema = get(s, "items").filter(|i| i.is_object());
            items.iter().any(|v| match item_schema {
                Some(is) => keeps_unknown_prunes(v, is, depth + 1),
                None => false,
            })
        }
        _ => false,
    }
}

/// The OpenAPI type name of a decoded JSON value, as upstream's validator prints it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(want: &str, v: &Value) -> bool {
    match (want, v) {
        ("", _) => true,
        ("integer", Value::Number(n)) => n.as_f64().is_some_and(|f| f.fract() == 0.0),
        ("number", Value::Number(_)) => true,
        (want, v) => want == type_name(v),
    }
}

/// The default of one (non-embedded) node.
fn check_default(s: &Value, path: &str, require_pruned: bool, errs: &mut Vec<FieldErr>) {
    let Some(default) = get(s, "default") else {
        return;
    };
    let p = format!("{path}.default");
    if require_pruned && prunes(default, Some(s), 0) {
        let mut rendered = String::new();
        gojson::any(default, &mut rendered);
        errs.push(FieldErr::invalid(
            &p,
            Bad::Raw(rendered),
            "must not have unknown fields",
        ));
    }
    let want = super::str_of(s, "type");
    let nullable_null = default.is_null() && flag(s, "nullable");
    if !type_matches(want, default) && !nullable_null {
        let actual = type_name(default);
        let detail = format!(
            " in body must be of type {want}: {}",
            crate::errors::quote(actual)
        );
        errs.push(FieldErr::from_cause(keel_api::status::field::type_invalid(
            &p,
            &Value::String(actual.to_string()),
            &detail,
        )));
    }
    // Upstream's validator goes on after a type error (an `enum` is still checked).
    scalar_rules(s, default, &p, errs);
}

/// Upstream's walk: every node's default, then items, then properties (sorted here; Go map
/// order upstream). Embedded resources (the root among them) and their `apiVersion`, `kind`
/// and `metadata` are skipped.
pub(super) fn validate(s: &Value, path: &str, require_pruned: bool) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    walk(s, path, true, false, require_pruned, 0, &mut errs);
    errs
}

fn walk(
    s: &Value,
    path: &str,
    root: bool,
    inside_meta: bool,
    require_pruned: bool,
    depth: usize,
    errs: &mut Vec<FieldErr>,
) {
    if depth > SCHEMA_DEPTH_MAX || !s.is_object() {
        return;
    }
    let embedded = root || flag(s, "x-kubernetes-embedded-resource");
    let inside_meta = inside_meta && !embedded;
    if !embedded && !inside_meta {
        check_default(s, path, require_pruned, errs);
    }
    if let Some(items) = get(s, "items").filter(|i| i.is_object()) {
        let p = format!("{path}.items");
        walk(
            items,
            &p,
            false,
            inside_meta,
            require_pruned,
            depth + 1,
            errs,
        );
    }
    let mut props: Vec<(&String, &Value)> = props_of(s).into_iter().flatten().collect();
    props.sort_by(|a, b| a.0.cmp(b.0));
    for (k, sub) in props {
        let meta = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
        let p = format!("{path}.properties[{k}]");
        walk(sub, &p, false, meta, require_pruned, depth + 1, errs);
    }
}

/// Whether any default of the schema would be pruned (upstream relaxes the rule on update
/// for CRDs stored with such defaults).
pub(super) fn has_unpruned(s: &Value) -> bool {
    let mut errs = Vec::new();
    walk(s, "", true, false, true, 0, &mut errs);
    errs.iter()
        .any(|e| e.message.ends_with("must not have unknown fields"))
}

/// A number as Go's `%v` prints a `float64` (integral values without a fraction).
fn go_number(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

/// Upstream's validator on a scalar default of the right type: string lengths, number
/// bounds and `multipleOf`, then `enum`, in its order and words.
fn scalar_rules(s: &Value, v: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    let invalid = |detail: String| FieldErr::invalid(path, Bad::from(v), &detail);
    let int_of = |key: &str| s.get(key).and_then(Value::as_i64);
    if let Some(text) = v.as_str() {
        let len = text.chars().count() as i64;
        if let Some(max) = int_of("maxLength").filter(|m| len > *m) {
            errs.push(FieldErr {
                reason: "FieldValueTooLong",
                field: path.to_string(),
                message: format!(
                    "{path}: Too long: may not be more than {max} {}",
                    if max == 1 { "byte" } else { "bytes" }
                ),
            });
        }
        if let Some(min) = int_of("minLength").filter(|m| len < *m) {
            errs.push(invalid(format!(
                " in body should be at least {min} chars long"
            )));
        }
    }
    if let Some(n) = v.as_f64().filter(|_| v.is_number()) {
        let bound = |key: &str| s.get(key).and_then(Value::as_f64);
        if let Some(m) = bound("multipleOf").filter(|m| *m > 0.0) {
            if (n / m).fract() != 0.0 {
                errs.push(invalid(format!(
                    " in body should be a multiple of {}",
                    go_number(m)
                )));
            }
        }
        if let Some(max) = bound("maximum") {
            let exclusive = flag(s, "exclusiveMaximum");
            if n > max || (exclusive && n == max) {
                let how = if exclusive {
                    "less than"
                } else {
                    "less than or equal to"
                };
                errs.push(invalid(format!(
                    " in body should be {how} {}",
                    go_number(max)
                )));
            }
        }
        if let Some(min) = bound("minimum") {
            let exclusive = flag(s, "exclusiveMinimum");
            if n < min || (exclusive && n == min) {
                let how = if exclusive {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                errs.push(invalid(format!(
                    " in body should be {how} {}",
                    go_number(min)
                )));
            }
        }
    }
    let choices = get(s, "enum").and_then(Value::as_array);
    if let Some(choices) = choices.filter(|c| !c.is_empty() && !v.is_object() && !v.is_array()) {
        let same = |c: &Value| match (c.as_f64(), v.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => c == v,
        };
        if !choices.iter().any(same) {
            let shown: Vec<String> = choices
                .iter()
                .map(|c| match c {
                    Value::String(t) => t.clone(),
                    Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), go_number),
                    other => other.to_string(),
                })
                .collect();
            let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
            errs.push(FieldErr::not_supported(path, Bad::from(v), &shown));
        }
    }
}
