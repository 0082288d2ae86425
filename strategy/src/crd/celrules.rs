//! CEL compilation of `x-kubernetes-validations`, as upstream's CRD validation does it: each
//! rule is type-checked with `self` (and `oldSelf`) typed from the schema node it sits on, and
//! must give a bool; a `messageExpression` must give a string.
//!
//! `self`'s type: `object` with its typed properties (a property without `type`, unless
//! `x-kubernetes-int-or-string`, is left out, as upstream leaves it out) as a named object
//! type (plus `apiVersion`, `kind` and `metadata.name`/`generateName` for an embedded
//! resource and the root); `additionalProperties` as `map(string, T)`; `array` as `list(T)`; `integer`,
//! `number`, `string`, `boolean` as int, double, string, bool (strings of format `byte` as
//! bytes, `duration` as duration, `date-time` and `date` as timestamp); int-or-string and
//! untyped nodes as dyn.
//!
//! Cost: each rule's worst-case cost is estimated ([`keel_cel::cost`]) from the sizes the
//! schema gives (`self`'s and `oldSelf`'s paths: a string's `maxLength` times 4, a list's
//! `maxItems`, a map's `maxProperties`, or what fits in a 3 MiB request), multiplied by how
//! many times the rule can run (the product of the `maxItems` and `maxProperties` of the lists
//! and maps above it, or, when one is unbounded, how many of the node's smallest
//! serialization fit in a request). As upstream: a rule over [`limits::EXPRESSION_COST_MAX`]
//! is Forbidden at its `rule`, a `messageExpression` over it (not multiplied) at its
//! `messageExpression`, and a schema whose costs sum over [`limits::CRD_COST_MAX`] gets a
//! Forbidden on each of its (at most 4) most expensive expressions and on the schema root. An
//! update that leaves a version's schema unchanged skips the per-expression limit. What the
//! estimator prices differently from upstream is listed in [`keel_cel::cost`].
//!
//! Not done: upstream names object types `selfType<random number>...` in its messages; here
//! the number is 0.

use super::str_of;
use crate::errors::{Bad, FieldErr};
use keel_cel::cost::Sizes;
use keel_cel::{Env, Type};
use serde_json::{Map, Value};

/// Nesting of a schema typed for CEL; deeper parts are dyn.
const TYPE_DEPTH_MAX: usize = 64;

/// The compile and cost errors of every rule in schema `s` (at `path`): the node's own, then
/// its properties', `additionalProperties`' and `items`' (upstream checks a schema's rules
/// only when the schema has no other error), then the schema's total cost.
/// `per_expression_cost`: whether one expression's own cost limit applies (upstream waives it
/// for a version whose schema an update leaves unchanged; the total still applies).
pub(super) fn compile_tree(
    s: &Value,
    path: &str,
    per_expression_cost: bool,
    errs: &mut Vec<FieldErr>,
) {
    let mut tree = Tree {
        errs,
        per_expression_cost,
        total: TotalCost::default(),
    };
    tree.walk(s, path, None, Some(1), 0);
    let total = tree.total;
    if total.total > limits::CRD_COST_MAX {
        for (p, _) in &total.most_expensive {
            errs.push(FieldErr::forbidden(
                p,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(FieldErr::forbidden(
            path,
            &cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total.total,
                limits::CRD_COST_MAX,
            ),
        ));
    }
}

/// The bounds upstream puts on the estimated cost of a CRD's rules
/// (`apiextensions/validation`'s `StaticEstimatedCostLimit` and
/// `StaticEstimatedCRDCostLimit`) and the request size its estimates start from.
pub(crate) mod limits {
    /// The estimated cost one rule (times the number of times it can run) or one
    /// `messageExpression` may have.
    pub const EXPRESSION_COST_MAX: u64 = 10_000_000;
    /// The estimated cost all the rules of one schema may have together.
    pub const CRD_COST_MAX: u64 = 100_000_000;
    /// The largest request upstream's estimates assume (`celconfig.MaxRequestSizeBytes`): an
    /// unbounded string, list or map is as large as fits in it.
    pub const REQUEST_BYTES_MAX: u64 = 3 * 1024 * 1024;
    /// A rule's cost counts toward [`TotalCost::most_expensive`] from 1% of the CRD limit.
    pub const EXPENSIVE_COST_MIN: u64 = CRD_COST_MAX / 100;
    /// How many of the most expensive rules a refused total names.
    pub const EXPENSIVE_SHOWN_MAX: usize = 4;
    // Serialized sizes upstream assumes (`k8s.io/apiserver/pkg/cel` limits).
    pub const MAX_DURATION_SIZE_JSON: u64 = 32;
    pub const MAX_DATETIME_SIZE_JSON: u64 = 32;
    pub const MIN_DURATION_SIZE_JSON: u64 = 3;
    pub const JSON_DATE_SIZE: u64 = 12;
    pub const MIN_DATETIME_SIZE_JSON: u64 = 21;
    pub const MIN_STRING_SIZE: u64 = 2;
    pub const MIN_BOOL_SIZE: u64 = 4;
    pub const MIN_NUMBER_SIZE: u64 = 1;
    const _: () = assert!(EXPRESSION_COST_MAX < CRD_COST_MAX);
}

/// Upstream's `TotalCost`: the sum of a schema's expression costs and its most expensive
/// rules (paths of rules and message expressions, most expensive first).
#[derive(Default)]
struct TotalCost {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl TotalCost {
    fn observe(&mut self, path: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < limits::EXPENSIVE_COST_MIN {
            return;
        }
        self.most_expensive.push((path.to_string(), cost));
        // Stable, as upstream's sort of a list kept sorted.
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(limits::EXPENSIVE_SHOWN_MAX);
    }
}

/// Upstream's `getCostErrorMessage`.
fn cost_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!("{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

struct Tree<'e> {
    errs: &'e mut Vec<FieldErr>,
    per_expression_cost: bool,
    total: TotalCost,
}

impl Tree<'_> {
    /// `uncorrelated`: the outermost list above `s` whose items an update cannot pair with
    /// old ones (not `listType=map`), where `oldSelf` is refused. `cardinality`: how many
    /// times `s` can occur, from the `maxItems` and `maxProperties` above it (`None`: some
    /// list or map above is unbounded).
    fn walk(
        &mut self,
        s: &Value,
        path: &str,
        uncorrelated: Option<&str>,
        cardinality: Option<u64>,
        depth: usize,
    ) {
        if depth > super::SCHEMA_DEPTH_MAX {
            return;
        }
        self.compile_errors(s, path, depth == 0, uncorrelated, cardinality);
        let below = cardinality.and_then(|c| child_factor(s).map(|f| c.saturating_mul(f)));
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (k, p) in props {
                let child = format!("{path}.properties[{k}]");
                self.walk(p, &child, uncorrelated, below, depth + 1);
            }
        }
        if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
            let child = format!("{path}.additionalProperties");
            self.walk(a, &child, uncorrelated, below, depth + 1);
        }
        if let Some(i) = s.get("items").filter(|i| i.is_object()) {
            let child = format!("{path}.items");
            let under = match uncorrelated {
                None if str_of(s, "x-kubernetes-list-type") != "map" => Some(path),
                other => other,
            };
            self.walk(i, &child, under, below, depth + 1);
        }
    }
}

/// How many times each child of `s` can occur per occurrence of `s` (upstream's
/// `extractMaxElements`): a map's `maxProperties`, a list's `maxItems`, 1 for an object's
/// properties; `None` for an unbounded map or list.
fn child_factor(s: &Value) -> Option<u64> {
    let max = |k: &str| s.get(k).and_then(Value::as_i64).map(|n| n.max(0) as u64);
    match str_of(s, "type") {
        "object" if s.get("additionalProperties").is_some_and(|a| !a.is_null()) => {
            max("maxProperties")
        }
        "array" => max("maxItems"),
        _ => Some(1),
    }
}

impl Tree<'_> {
    /// The compile and cost errors of the rules at node `s` (at `path`); `resource`: `s` is the
    /// root, whose `self` also has `apiVersion`, `kind` and `metadata`.
    fn compile_errors(
        &mut self,
        s: &Value,
        path: &str,
        resource: bool,
        uncorrelated: Option<&str>,
        cardinality: Option<u64>,
    ) {
        let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
            return;
        };
        let (base, self_type, min_size) = rule_env(s, resource);
        // An unbounded list or map above: as many times as the smallest `s` fits in a request.
        let times =
            cardinality.unwrap_or_else(|| limits::REQUEST_BYTES_MAX / min_size.saturating_add(1));
        for (i, r) in rules.iter().enumerate() {
            let p = format!("{path}.x-kubernetes-validations[{i}]");
            let rule = str_of(r, "rule");
            if rule.trim().is_empty() {
                continue;
            }
            let optional = r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
            let old_type = if optional {
                Type::optional(self_type.clone())
            } else {
                self_type.clone()
            };
            let env = base.clone().variable("oldSelf", old_type);
            let shown = || Bad::Raw(rule_json(r));
            let compiled = keel_cel::compile_with_cost(&env, rule);
            let transition = compiled.is_ok() && refers_to_old_self(rule);
            // A rule that does not compile costs 0, as upstream counts it.
            let cost = match &compiled {
                Ok((t, c)) if *t == Type::Bool || t.is_dyn() => expression_cost(c.max, times),
                _ => 0,
            };
            let rule_path = format!("{p}.rule");
            if self.per_expression_cost && cost > limits::EXPRESSION_COST_MAX {
                self.errs.push(FieldErr::forbidden(
                    &rule_path,
                    &cost_message("estimated rule cost", cost, limits::EXPRESSION_COST_MAX),
                ));
            }
            self.total.observe(&rule_path, cost);
            let errs = &mut *self.errs;
            let compiled = compiled.map(|(t, _)| t);
            match compiled {
                Err(issues) => errs.push(FieldErr::invalid(
                    &format!("{p}.rule"),
                    shown(),
                    &format!("compilation failed: {issues}"),
                )),
                Ok(t) if !(t == Type::Bool || t.is_dyn()) => errs.push(FieldErr::invalid(
                    &format!("{p}.rule"),
                    shown(),
                    "cel expression must evaluate to a bool",
                )),
                Ok(_) => {}
            }
            if let (true, false, Some(list)) = (transition, optional, uncorrelated) {
                errs.push(FieldErr::invalid(
                &format!("{p}.rule"),
                rule,
                &format!(
                    "oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"
                ),
            ));
            }
            // Upstream knows a rule uses oldSelf only once it compiled.
            if optional && !transition {
                errs.push(FieldErr::invalid(
                    &format!("{p}.optionalOldSelf"),
                    true,
                    "may not be set if oldSelf is not used in rule",
                ));
            }
            let msg_expr = str_of(r, "messageExpression");
            if msg_expr.trim().is_empty() {
                continue;
            }
            match keel_cel::compile_with_cost(&env, msg_expr) {
                Ok((t, c)) if t == Type::String || t.is_dyn() => {
                    // A message expression's cost is not multiplied by the rule's cardinality.
                    let msg_path = format!("{p}.messageExpression");
                    if self.per_expression_cost && c.max > limits::EXPRESSION_COST_MAX {
                        self.errs.push(FieldErr::forbidden(
                            &msg_path,
                            &cost_message(
                                "estimated messageExpression cost",
                                c.max,
                                limits::EXPRESSION_COST_MAX,
                            ),
                        ));
                    }
                    self.total.observe(&msg_path, c.max);
                }
                Err(issues) => self.errs.push(FieldErr::invalid(
                    &format!("{p}.messageExpression"),
                    shown(),
                    &format!("messageExpression compilation failed: {issues}"),
                )),
                Ok(_) => self.errs.push(FieldErr::invalid(
                    &format!("{p}.messageExpression"),
                    shown(),
                    "messageExpression must evaluate to a string",
                )),
            }
        }
    }
}

/// A rule's cost times the number of times it can run (upstream's overflow-guarded product;
/// a rule of cost 0 costs 0 however often it runs).
fn expression_cost(cost: u64, times: u64) -> u64 {
    cost.saturating_mul(times)
}

/// The environment of the rules at node `s`: its object types, `self` and the sizes from the
/// schema; `self`'s type; the smallest size `s` serializes to.
fn rule_env(s: &Value, resource: bool) -> (Env, Type, u64) {
    let (sizes, min_size) = sizes_of(s, resource, 0);
    let mut objects = Vec::new();
    let self_type = if resource && str_of(s, "type") == "object" {
        object_type(s, "selfType0", true, &mut objects, 0)
    } else {
        decl_type(s, "selfType0", &mut objects, 0)
    };
    let mut base = Env::default();
    for (name, fields) in &objects {
        let fields: Vec<(&str, Type)> = fields
            .iter()
            .map(|(f, t)| (f.as_str(), t.clone()))
            .collect();
        base = base.object(name, &fields);
    }
    let base = base.variable("self", self_type.clone()).sizes(sizes);
    (base, self_type, min_size)
}

/// The estimated worst-case cost of one run of `rule` on node `s` (not a resource root):
/// upstream's `CompilationResult.MaxCost`.
#[cfg(test)]
pub(super) fn rule_max_cost(s: &Value, rule: &str) -> Result<u64, String> {
    let (base, self_type, _) = rule_env(s, false);
    let env = base.variable("oldSelf", self_type);
    keel_cel::compile_with_cost(&env, rule).map(|(_, c)| c.max)
}

fn refers_to_old_self(rule: &str) -> bool {
    keel_cel::eval::Program::parse(rule).is_ok_and(|p| p.references("oldSelf"))
}

/// The rule as upstream echoes it: its Go struct in `encoding/json`'s form.
fn rule_json(r: &Value) -> String {
    let mut m = Map::new();
    for (field, key) in [
        ("Rule", "rule"),
        ("Message", "message"),
        ("MessageExpression", "messageExpression"),
    ] {
        m.insert(field.into(), Value::String(str_of(r, key).into()));
    }
    let reason = r.get("reason").filter(|v| v.is_string()).cloned();
    m.insert("Reason".into(), reason.unwrap_or(Value::Null));
    m.insert(
        "FieldPath".into(),
        Value::String(str_of(r, "fieldPath").into()),
    );
    let old = r.get("optionalOldSelf").filter(|v| v.is_boolean()).cloned();
    m.insert("OptionalOldSelf".into(), old.unwrap_or(Value::Null));
    let mut out = String::new();
    let style = keel_api::gofmt::JsonStyle {
        numbers: keel_api::gofmt::json_number_to,
        escape: keel_api::gofmt::JsonEscape::Go122,
        sort_keys: false,
        depth_max: usize::MAX,
    };
    keel_api::gofmt::json_to(&mut out, &Value::Object(m), style);
    out
}

type Objects = Vec<(String, Vec<(String, Type)>)>;

/// The CEL type of schema node `s`; object types are declared into `objects` under `name`.
fn decl_type(s: &Value, name: &str, objects: &mut Objects, depth: usize) -> Type {
    if depth > TYPE_DEPTH_MAX
        || s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true)
    {
        return Type::Dyn;
    }
    match str_of(s, "type") {
        "boolean" => Type::Bool,
        "integer" => Type::Int,
        "number" => Type::Double,
        "string" => match str_of(s, "format") {
            "byte" => Type::Bytes,
            "duration" => Type::Duration,
            "date-time" | "datetime" | "date" => Type::Timestamp,
            _ => Type::String,
        },
        "array" => match s.get("items").filter(|i| i.is_object()) {
            Some(items) => Type::list(decl_type(
                items,
                &format!("{name}.@idx"),
                objects,
                depth + 1,
            )),
            None => Type::list(Type::Dyn),
        },
        "object" => {
            let embedded = s
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool);
            object_type(s, name, embedded == Some(true), objects, depth)
        }
        _ => Type::Dyn,
    }
}

/// An object node's type; `resource`: it also has `apiVersion`, `kind` and `metadata`
/// (an embedded resource, or the root).
fn object_type(s: &Value, name: &str, resource: bool, objects: &mut Objects, depth: usize) -> Type {
    if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
        let value = decl_type(a, &format!("{name}.@idx"), objects, depth + 1);
        return Type::map(Type::String, value);
    }
    let mut fields = Vec::new();
    if resource {
        let meta = format!("{name}.metadata");
        objects.push((
            meta.clone(),
            vec![
                ("name".into(), Type::String),
                ("generateName".into(), Type::String),
            ],
        ));
        fields.push(("apiVersion".to_string(), Type::String));
        fields.push(("kind".to_string(), Type::String));
        fields.push(("metadata".to_string(), Type::Object(meta)));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let typed = !str_of(p, "type").is_empty()
                || p.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true);
            if typed {
                let t = decl_type(p, &format!("{name}.{k}"), objects, depth + 1);
                fields.retain(|(f, _)| f != k);
                fields.push((k.clone(), t));
            }
        }
    }
    objects.push((name.to_string(), fields));
    Type::Object(name.to_string())
}

/// The largest sizes of schema node `s` and the smallest size it serializes to, as upstream's
/// `SchemaDeclType` computes its `MaxElements` and `MinSerializedSize`: a string's
/// `maxLength` times 4 (a character may take 4 bytes), else the longest `enum` value, else
/// what fits in a request; a list's `maxItems` or a map's `maxProperties`, else how many of
/// the smallest item fit in a request. `resource`: an embedded resource or the root, which
/// also has `apiVersion`, `kind` and `metadata`.
fn sizes_of(s: &Value, resource: bool, depth: usize) -> (Sizes, u64) {
    use limits::*;
    let unbounded_string = REQUEST_BYTES_MAX - 2;
    let max_of = |k: &str| s.get(k).and_then(Value::as_i64).map(|n| n.max(0) as u64);
    let leaf = |max_elements: u64, min: u64| {
        (
            Sizes {
                max_elements,
                ..Sizes::default()
            },
            min,
        )
    };
    if depth > TYPE_DEPTH_MAX {
        return leaf(0, 1);
    }
    if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return leaf(unbounded_string, 1);
    }
    match str_of(s, "type") {
        "array" => {
            let Some(items) = s.get("items").filter(|i| i.is_object()) else {
                return leaf(0, 2);
            };
            let embedded = bool_of(items, "x-kubernetes-embedded-resource");
            let (elem, item_min) = sizes_of(items, embedded, depth + 1);
            let max = max_of("maxItems")
                .unwrap_or_else(|| (REQUEST_BYTES_MAX - 2) / item_min.saturating_add(1));
            let sizes = Sizes {
                max_elements: max,
                elem: Some(Box::new(elem)),
                ..Sizes::default()
            };
            (sizes, 2)
        }
        "object" => {
            if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
                let typed = !str_of(a, "type").is_empty()
                    || a.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true);
                let (elem, max) = if typed {
                    let embedded = bool_of(a, "x-kubernetes-embedded-resource");
                    let (elem, value_min) = sizes_of(a, embedded, depth + 1);
                    let max = max_of("maxProperties")
                        .unwrap_or_else(|| (REQUEST_BYTES_MAX - 2) / value_min.saturating_add(6));
                    (elem, max)
                } else {
                    // A map of values the schema does not type: unbounded.
                    (Sizes::default(), i64::MAX as u64)
                };
                let sizes = Sizes {
                    max_elements: max,
                    elem: Some(Box::new(elem)),
                    key: Some(Box::default()),
                    ..Sizes::default()
                };
                return (sizes, 2);
            }
            object_sizes(s, resource, depth)
        }
        "string" => match str_of(s, "format") {
            "byte" => leaf(
                max_of("maxLength").unwrap_or(unbounded_string),
                MIN_STRING_SIZE,
            ),
            "duration" => leaf(MAX_DURATION_SIZE_JSON, MIN_DURATION_SIZE_JSON),
            "date" => leaf(JSON_DATE_SIZE, JSON_DATE_SIZE),
            "date-time" => leaf(MAX_DATETIME_SIZE_JSON, MIN_DATETIME_SIZE_JSON),
            _ => {
                let longest_enum = s.get("enum").and_then(Value::as_array).map(|values| {
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|v| v.len() as u64)
                        .max()
                        .unwrap_or(0)
                });
                let max = match (max_of("maxLength"), longest_enum) {
                    (Some(n), _) => n.saturating_mul(4),
                    (None, Some(n)) if !s["enum"].as_array().is_some_and(Vec::is_empty) => n,
                    _ => unbounded_string,
                };
                leaf(max, MIN_STRING_SIZE)
            }
        },
        "boolean" => leaf(0, MIN_BOOL_SIZE),
        "integer" | "number" => leaf(0, MIN_NUMBER_SIZE),
        _ => leaf(0, 1),
    }
}

/// An object's fields' sizes; its smallest serialization is `{}` plus each required property
/// without a default (name, quotes, colon, comma and the smallest value).
fn object_sizes(s: &Value, resource: bool, depth: usize) -> (Sizes, u64) {
    let mut sizes = Sizes::default();
    let mut min: u64 = 2;
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let typed = !str_of(p, "type").is_empty()
                || p.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true);
            if !typed {
                continue;
            }
            let embedded = bool_of(p, "x-kubernetes-embedded-resource");
            let (field, field_min) = sizes_of(p, embedded, depth + 1);
            if required.contains(&k.as_str()) && p.get("default").is_none() {
                min = min
                    .saturating_add(k.len() as u64)
                    .saturating_add(field_min)
                    .saturating_add(4);
            }
            sizes.fields.insert(k.clone(), field);
        }
    }
    if resource && !has_type_and_object_meta(s) {
        // Upstream replaces these with plain strings unless the schema declares them all.
        let string = || Sizes {
            max_elements: limits::REQUEST_BYTES_MAX - 2,
            ..Sizes::default()
        };
        let mut meta = Sizes::default();
        meta.fields.insert("name".into(), string());
        meta.fields.insert("generateName".into(), string());
        sizes.fields.insert("apiVersion".into(), string());
        sizes.fields.insert("kind".into(), string());
        sizes.fields.insert("metadata".into(), meta);
    }
    (sizes, min)
}

/// Whether `s` declares `kind` and `apiVersion` strings and `metadata.name` and
/// `metadata.generateName` strings (then upstream leaves a resource's schema as it is).
fn has_type_and_object_meta(s: &Value) -> bool {
    let prop = |s: &Value, k: &str| s.get("properties").and_then(|p| p.get(k)).cloned();
    let is = |v: Option<Value>, t: &str| v.as_ref().is_some_and(|v| str_of(v, "type") == t);
    let meta = prop(s, "metadata");
    is(prop(s, "kind"), "string")
        && is(prop(s, "apiVersion"), "string")
        && is(meta.clone(), "object")
        && meta
            .as_ref()
            .is_some_and(|m| is(prop(m, "name"), "string") && is(prop(m, "generateName"), "string"))
}

fn bool_of(s: &Value, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool) == Some(true)
}
