//! `x-kubernetes-validations`: CEL rules evaluated on custom resources as upstream's CEL
//! validator does, after the schema's own validation.
//!
//! Every occurrence of a node is checked (each list item, each map value), `self` bound to
//! the node's value typed by its schema: `integer` as int, `number` as double (also for
//! integral JSON numbers), `x-kubernetes-int-or-string` as int or string, objects with
//! `properties` or `additionalProperties` as maps (an absent property is absent: `has()` is
//! false). A node's rules run before its children's; children go properties by sorted name
//! (upstream: Go's random map order), then map values in document order, then list items.
//!
//! Transition rules (those referring to `oldSelf`) run only on update, and only where the
//! old object has a value at the correlated path: object members by name, map values by key,
//! `listType=map` items by their keys (atomic lists and sets are not correlated). Ratcheting:
//! a node whose value equals its correlated old value is not checked at all.
//!
//! Failures: `reason` (default `FieldValueInvalid`) at the node's path (with `fieldPath`
//! appended), message from `messageExpression` when it gives a usable string (not failing,
//! blank or with a line break), else `message`, else `failed rule: <rule>`; the value is
//! shown for scalars without `fieldPath` only, as upstream does. A rule that fails to evaluate reports
//! `Invalid value: "<type>": <error> evaluating rule: <message or rule>` at the node's path.
//!
//! Work: upstream meters each run (1,000,000 units a call, 10,000,000 an object). The
//! interpreter here cannot be metered, so each run's work is bounded beforehand
//! ([`keel_cel::eval::Program::work_bound`] with the largest collection or string in its
//! variables) against [`limits::CEL_RULE_WORK_MAX`] and [`limits::CEL_OBJECT_WORK_MAX`]; the
//! bound over-estimates iterations and allocations, so a nested comprehension over a large
//! list can be refused where upstream's actual cost would pass (comparisons of large values
//! count as one step, see `work_bound`).
//!
//! `optionalOldSelf` rules run on create too, `oldSelf` an optional (none without a
//! correlated old value). Rules at the root report at field `<nil>`, as upstream's do.
//!
//! Strings of `format` `date-time` and `date` are timestamps, `duration` durations, `byte`
//! bytes, as upstream types them.
//!
//! Not done: an integral float (`5.0`) under `type: integer` fails the node's own rules as
//! upstream's do (`invalid data, expected int, got float64`), but an enclosing object's rule
//! reads it as a double where upstream fails on access; embedded resources' `metadata` is passed whole (upstream:
//! only `name` and `generateName`; compilation refuses the rest anyway). Upstream's estimated
//! cost checks belong to CRD validation (keel-strategy's `crd::celrules`, with
//! [`keel_cel::cost`]): a rule stored here passed them, and this bound is the second, runtime
//! one.

use crate::compile::{Additional, Node};
use crate::limits;
use crate::render::{bad_value, Num};
use crate::rule::Rule;
use crate::validate::{correlate_items, deep_equal_correlated};
use keel_api::status::{field, StatusCause};
use keel_cel::eval::Value as Cel;
use serde_json::Value;
use std::collections::HashMap;

/// The message of `errs` that stops rules from running (a type, required, enum, length or
/// count violation makes `self` unlike its declared type).
pub const BLOCKED: &str = "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// Whether the schema errors `errs` keep the rules from running, and the cause saying so.
pub fn blocking(errs: &[StatusCause]) -> Option<StatusCause> {
    let blocks = errs.iter().any(|e| {
        matches!(
            e.reason.as_str(),
            field::REASON_NOT_SUPPORTED
                | field::REASON_REQUIRED
                | field::REASON_TOO_LONG
                | field::REASON_TOO_MANY
                | field::REASON_TYPE_INVALID
        )
    });
    blocks.then(|| StatusCause {
        reason: field::REASON_INVALID.into(),
        message: BLOCKED.into(),
        field: NIL_PATH.into(),
    })
}

/// Evaluates every rule of the tree on `obj` (`old`: the stored object of an update).
pub fn validate(root: &Node, obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut w = Walk {
        errs: Vec::new(),
        work_left: limits::CEL_OBJECT_WORK_MAX,
        exhausted: false,
    };
    w.node(root, obj, "", old, 0);
    w.errs
}

struct Walk {
    errs: Vec<StatusCause>,
    /// What remains of the object's work budget.
    work_left: u64,
    exhausted: bool,
}

impl Walk {
    fn node(&mut self, n: &Node, v: &Value, path: &str, old: Option<&Value>, depth: usize) {
        if depth > limits::VALUE_DEPTH_MAX || self.exhausted || v.is_null() || !n.rules_below {
            return;
        }
        if self.errs.len() >= limits::ERRORS_MAX {
            self.exhausted = true;
            return;
        }
        // Ratcheting: an unchanged value is not checked again.
        if let Some(o) = old {
            if deep_equal_correlated(v, o, Some(n), 0) {
                return;
            }
        }
        if !n.rules.is_empty() {
            self.rules(n, v, path, old);
        }
        match v {
            Value::Object(m) => {
                for (k, child) in &n.properties {
                    if !child.rules_below {
                        continue;
                    }
                    if let Some(cv) = m.get(k) {
                        let p = crate::compile::field_path(path, k);
                        let o = old.and_then(|o| o.get(k));
                        // kind and apiVersion at the root are never correlated.
                        let o = if path.is_empty() && (k == "kind" || k == "apiVersion") {
                            None
                        } else {
                            o
                        };
                        self.node(child, cv, &p, o, depth + 1);
                    }
                }
                let additional = match &n.additional {
                    Some(Additional::Schema(a)) if a.rules_below => Some(a),
                    _ => None,
                };
                if let Some(a) = additional {
                    for (k, cv) in m {
                        if !n.properties.contains_key(k) {
                            let p = crate::compile::index_path(path, k);
                            self.node(a, cv, &p, old.and_then(|o| o.get(k)), depth + 1);
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = n.items.as_deref().filter(|i| i.rules_below) {
                    let olds = correlate_items(n, items, old);
                    for (i, cv) in items.iter().enumerate() {
                        let p = crate::compile::index_path(path, &i.to_string());
                        let o = olds.get(i).copied().flatten();
                        self.node(item, cv, &p, o, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    fn rules(&mut self, n: &Node, v: &Value, path: &str, old: Option<&Value>) {
        // An integral float (`5.0`) passes `type: integer` validation, but upstream's rules
        // cannot read it as an int.
        let float_as_int = n.has_type("integer")
            && !n.int_or_string
            && matches!(v, Value::Number(x) if matches!(Num::of(x), Num::Float(_)));
        if float_as_int {
            for r in &n.rules {
                if r.transition && old.is_none() && !r.optional_old_self {
                    continue;
                }
                let msg = format!(
                    "invalid data, expected int, got float64 evaluating rule: {}",
                    rule_text(r)
                );
                self.errs.push(eval_error(n, path, &msg));
            }
            return;
        }
        // `self` holds only the fields the rules read, when they read it only by field (a
        // rule on a large object reading two of its fields converts two).
        let me = match (&n.rule_fields[usize::from(old.is_some())], v) {
            (Some(fields), Value::Object(m)) => {
                let mut out: HashMap<String, Cel> = HashMap::with_capacity(fields.len());
                for k in fields {
                    if let Some(x) = m.get(k) {
                        let child = n.member(k).and_then(Result::ok);
                        out.insert(k.clone(), to_cel(child, x, 1));
                    }
                }
                Cel::from(out)
            }
            _ => to_cel(Some(n), v, 0),
        };
        let old_me = old.map(|o| to_cel(Some(n), o, 0));
        let mut size_max = None;
        for r in &n.rules {
            if r.transition && old.is_none() && !r.optional_old_self {
                continue;
            }
            let mut vars = vec![("self", me.clone())];
            if r.optional_old_self {
                vars.push(("oldSelf", keel_cel::eval::optional(old_me.clone())));
            } else if let (true, Some(o)) = (r.transition, &old_me) {
                vars.push(("oldSelf", o.clone()));
            }
            let size = if r.program.ranges() {
                *size_max.get_or_insert_with(|| largest(v, 0).max(old.map_or(0, |o| largest(o, 0))))
            } else {
                0
            };
            let work = r.program.work_bound(size);
            if work > limits::CEL_RULE_WORK_MAX {
                // Upstream's wording for a run over its per-call limit (not observed on
                // the test server: its CRD validation refuses such rules up front).
                let msg = format!("call cost exceeds limit for rule: {}", rule_text(r));
                self.errs.push(eval_error(n, path, &msg));
                continue;
            }
            if work > self.work_left {
                self.exhausted = true;
                self.errs.push(eval_error(
                    n,
                    path,
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                return;
            }
            self.work_left -= work;
            match r.program.execute(&vars) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => {
                    let msg = self.message(r, &vars, size);
                    self.errs.push(failure(v, path, r, &msg));
                }
                Ok(_) => {
                    let msg = format!(
                        "rule did not evaluate to a bool evaluating rule: {}",
                        rule_text(r)
                    );
                    self.errs.push(eval_error(n, path, &msg));
                }
                Err(e) => {
                    let msg = format!("{e} evaluating rule: {}", rule_text(r));
                    self.errs.push(eval_error(n, path, &msg));
                }
            }
        }
    }

    /// A failed rule's message: `messageExpression`'s value when it gives a usable one.
    fn message(&mut self, r: &Rule, vars: &[(&str, Cel)], size: u64) -> String {
        if let Some(p) = &r.message_expression {
            let work = p.work_bound(size);
            if work <= limits::CEL_RULE_WORK_MAX && work <= self.work_left {
                self.work_left -= work;
                if let Ok(Cel::String(s)) = p.execute(vars) {
                    if !s.trim().is_empty() && !s.contains(['\n', '\r']) {
                        return s.to_string();
                    }
                }
            }
        }
        r.message_or_default()
    }
}

/// `message`, else the rule's source: how an evaluation error names its rule.
fn rule_text(r: &Rule) -> String {
    if r.message.is_empty() {
        r.source.trim().to_string()
    } else {
        r.message.clone()
    }
}

/// How upstream prints the root's (empty) field path.
const NIL_PATH: &str = "<nil>";

/// An evaluation error at the node: the value shown is the schema's type name.
fn eval_error(n: &Node, path: &str, msg: &str) -> StatusCause {
    let path = if path.is_empty() { NIL_PATH } else { path };
    let type_name = if n.int_or_string {
        ""
    } else {
        n.types.first().map_or("", String::as_str)
    };
    field::invalid_str(path, type_name, msg)
}

/// A rule that evaluated to false.
fn failure(v: &Value, path: &str, r: &Rule, msg: &str) -> StatusCause {
    let at = if r.field_path.is_empty() {
        path.to_string()
    } else {
        join_field_path(path, &r.field_path)
    };
    let at = if at.is_empty() {
        NIL_PATH.to_string()
    } else {
        at
    };
    // Objects, lists and fieldPath targets are not echoed.
    let shown = r.field_path.is_empty() && !matches!(v, Value::Object(_) | Value::Array(_));
    let value_part = |head: &str| {
        if shown {
            format!("{head}: {}: {msg}", bad_value(v))
        } else {
            format!("{head}: {msg}")
        }
    };
    let message = match r.reason.as_str() {
        field::REASON_FORBIDDEN => format!("Forbidden: {msg}"),
        field::REASON_REQUIRED => format!("Required value: {msg}"),
        field::REASON_DUPLICATE if shown => format!("Duplicate value: {}", bad_value(v)),
        field::REASON_DUPLICATE => "Duplicate value".to_string(),
        _ => value_part("Invalid value"),
    };
    StatusCause {
        reason: r.reason.clone(),
        message,
        field: at,
    }
}

/// `path` with a rule's `fieldPath` (`.a.b`, `['a.b']`, `.list[0]`) appended.
fn join_field_path(path: &str, field_path: &str) -> String {
    let mut out = path.to_string();
    let mut rest = field_path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("['") {
            let Some(end) = r.find("']") else { break };
            out = crate::compile::field_path(&out, &r[..end]);
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out = crate::compile::field_path(&out, &r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { break };
            out = crate::compile::index_path(&out, &r[..end]);
            rest = &r[end + 1..];
        } else {
            break;
        }
    }
    out
}

/// The largest list, object or string (in elements, members or characters) in `v`.
fn largest(v: &Value, depth: usize) -> u64 {
    if depth > limits::VALUE_DEPTH_MAX {
        return 0;
    }
    match v {
        Value::String(s) => s.len() as u64,
        Value::Array(a) => a
            .iter()
            .map(|x| largest(x, depth + 1))
            .max()
            .unwrap_or(0)
            .max(a.len() as u64),
        Value::Object(m) => m
            .values()
            .map(|x| largest(x, depth + 1))
            .max()
            .unwrap_or(0)
            .max(m.len() as u64),
        _ => 0,
    }
}

/// A JSON value as CEL sees it under schema node `n` (`None`: no schema, dyn).
fn to_cel(n: Option<&Node>, v: &Value, depth: usize) -> Cel {
    if depth > limits::VALUE_DEPTH_MAX {
        return Cel::Null;
    }
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::String(s) => match n {
            Some(n) if !n.format.is_empty() && !n.int_or_string => {
                keel_cel::eval::formatted_string(&n.format, s)
            }
            _ => Cel::from(s.as_str()),
        },
        Value::Number(num) => {
            let number = n.is_some_and(|n| n.has_type("number"));
            match Num::of(num) {
                Num::Int(i) if !number => Cel::Int(i),
                x => Cel::Float(x.as_f64()),
            }
        }
        Value::Array(items) => {
            let item = n.and_then(|n| n.items.as_deref());
            Cel::from(
                items
                    .iter()
                    .map(|x| to_cel(item, x, depth + 1))
                    .collect::<Vec<_>>(),
            )
        }
        Value::Object(m) => {
            let mut out: HashMap<String, Cel> = HashMap::with_capacity(m.len());
            for (k, x) in m {
                let child = n.and_then(|n| n.member(k)).and_then(Result::ok);
                out.insert(k.clone(), to_cel(child, x, depth + 1));
            }
            Cel::from(out)
        }
    }
}
