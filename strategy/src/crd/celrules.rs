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
//! Not done: upstream names object types `selfType<random number>...` in its messages; here
//! the number is 0. Cost estimation (upstream refuses a rule whose estimated cost exceeds its
//! per-rule or per-CRD budget) is not done: such rules are accepted, and their runs are
//! bounded at evaluation (keel-apiext). Nor is the check that `oldSelf` is only used where
//! the old value can be correlated (not below atomic lists or sets).

use super::str_of;
use crate::errors::{Bad, FieldErr};
use keel_cel::{Env, Type};
use serde_json::{Map, Value};

/// Nesting of a schema typed for CEL; deeper parts are dyn.
const TYPE_DEPTH_MAX: usize = 64;

/// The compile errors of every rule in schema `s` (at `path`): the node's own, then its
/// properties', `additionalProperties`' and `items`' (upstream checks a schema's rules only
/// when the schema has no other error).
pub(super) fn compile_tree(s: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    Tree { errs }.walk(s, path, None, 0);
}

struct Tree<'e> {
    errs: &'e mut Vec<FieldErr>,
}

impl Tree<'_> {
    /// `uncorrelated`: the outermost list above `s` whose items an update cannot pair with
    /// old ones (not `listType=map`), where `oldSelf` is refused.
    fn walk(&mut self, s: &Value, path: &str, uncorrelated: Option<&str>, depth: usize) {
        if depth > super::SCHEMA_DEPTH_MAX {
            return;
        }
        compile_errors(s, path, depth == 0, uncorrelated, self.errs);
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (k, p) in props {
                let child = format!("{path}.properties[{k}]");
                self.walk(p, &child, uncorrelated, depth + 1);
            }
        }
        if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
            let child = format!("{path}.additionalProperties");
            self.walk(a, &child, uncorrelated, depth + 1);
        }
        if let Some(i) = s.get("items").filter(|i| i.is_object()) {
            let child = format!("{path}.items");
            let below = match uncorrelated {
                None if str_of(s, "x-kubernetes-list-type") != "map" => Some(path),
                other => other,
            };
            self.walk(i, &child, below, depth + 1);
        }
    }
}

/// The compile errors of the rules at node `s` (at `path`); `resource`: `s` is the root,
/// whose `self` also has `apiVersion`, `kind` and `metadata`.
fn compile_errors(
    s: &Value,
    path: &str,
    resource: bool,
    uncorrelated: Option<&str>,
    errs: &mut Vec<FieldErr>,
) {
    let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
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
    let base = base.variable("self", self_type.clone());
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
        let compiled = keel_cel::compile(&env, rule);
        let transition = compiled.is_ok() && refers_to_old_self(rule);
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
        match keel_cel::compile(&env, msg_expr) {
            Err(issues) => errs.push(FieldErr::invalid(
                &format!("{p}.messageExpression"),
                shown(),
                &format!("messageExpression compilation failed: {issues}"),
            )),
            Ok(t) if !(t == Type::String || t.is_dyn()) => errs.push(FieldErr::invalid(
                &format!("{p}.messageExpression"),
                shown(),
                "messageExpression must evaluate to a string",
            )),
            Ok(_) => {}
        }
    }
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
