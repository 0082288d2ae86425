//! Field validation of a raw JSON body against a compiled schema, reporting what upstream's
//! strict decoder (sigs.k8s.io/json) reports: unknown and duplicate fields with paths like
//! `spec.containers[0].foo`, and Go-style type errors.

use crate::compile::{Compiled, Kind, NodeId};
use crate::raw::Raw;
use std::collections::HashSet;

use crate::findings::Findings;
use crate::FieldReport;

/// Walk `raw` against the schema rooted at `root`.
pub(crate) fn run(compiled: &Compiled, root: NodeId, raw: &Raw) -> FieldReport {
    let mut walker = Walker {
        c: compiled,
        f: Findings::new(),
        go_path: Vec::new(),
    };
    walker.value(root, raw);
    walker.f.report
}

struct Walker<'a> {
    c: &'a Compiled,
    f: Findings<'a>,
    /// Go decoder path: struct field names only (no indexes, no map keys).
    go_path: Vec<&'a str>,
}

impl<'a> Walker<'a> {
    fn value(&mut self, node: NodeId, raw: &'a Raw) {
        if matches!(raw, Raw::Null) {
            return; // null decodes to the zero value everywhere
        }
        let ok = match &self.c.node(node).kind {
            Kind::Any => true,
            Kind::Struct { name, fields } => match raw {
                Raw::Obj(members) => {
                    self.structure(name, fields, members);
                    true
                }
                _ => false,
            },
            Kind::Map { values } => match raw {
                Raw::Obj(members) => {
                    self.map(*values, members);
                    true
                }
                _ => false,
            },
            Kind::Array { items } => match raw {
                Raw::Arr(elems) => {
                    self.array(*items, elems);
                    true
                }
                _ => false,
            },
            Kind::String => matches!(raw, Raw::Str(_)),
            Kind::Boolean => matches!(raw, Raw::Bool(_)),
            Kind::Number => matches!(raw, Raw::Int(_) | Raw::Float(_)),
            Kind::Quantity => matches!(raw, Raw::Str(_) | Raw::Int(_) | Raw::Float(_)),
            Kind::IntOrString => matches!(raw, Raw::Str(_)) || self.integer(32, raw),
            Kind::Integer { bits } => self.integer(*bits, raw),
        };
        if !ok {
            self.type_error(node, raw);
        }
    }

    /// True when `raw` is an integer of the given width; reports the `number <literal>` form
    /// upstream uses for fractions and overflows.
    fn integer(&mut self, bits: u32, raw: &Raw) -> bool {
        match raw {
            Raw::Int(v) if fits(bits, *v) => true,
            Raw::Int(v) => self.number_error(bits, &v.to_string()),
            Raw::Float(v) => self.number_error(bits, &v.to_string()),
            _ => false,
        }
    }

    fn number_error(&mut self, bits: u32, literal: &str) -> bool {
        let go_path = self.go_path.join(".");
        self.f.type_error(
            &go_path,
            &format!("number {literal}"),
            &format!("int{bits}"),
        );
        true // already reported
    }

    fn structure(
        &mut self,
        name: &'a str,
        fields: &'a crate::compile::FieldMap,
        members: &'a [(String, Raw)],
    ) {
        let mut keys = HashSet::new();
        for (key, value) in members {
            if !keys.insert(key.as_str()) {
                self.f.strict("duplicate", key);
            }
            let Some(field) = fields.get(key) else {
                self.f.strict("unknown", key);
                continue;
            };
            let mark = self.f.path.len();
            self.f.push_key(key);
            self.go_path.push(key);
            let outer = self.f.go_struct.replace(name);
            self.value(field.node, value);
            self.f.go_struct = outer;
            self.go_path.pop();
            self.f.path.truncate(mark);
        }
    }

    fn map(&mut self, values: NodeId, members: &'a [(String, Raw)]) {
        let mut keys = HashSet::new();
        for (key, value) in members {
            if !keys.insert(key.as_str()) {
                self.f.strict("duplicate", key);
            }
            let mark = self.f.path.len();
            self.f.push_key(key);
            self.value(values, value);
            self.f.path.truncate(mark);
        }
    }

    fn array(&mut self, items: NodeId, elems: &'a [Raw]) {
        for (i, elem) in elems.iter().enumerate() {
            let mark = self.f.path.len();
            self.f.path.push_str(&format!("[{i}]"));
            self.value(items, elem);
            self.f.path.truncate(mark);
        }
    }

    fn type_error(&mut self, node: NodeId, raw: &Raw) {
        let go_path = self.go_path.join(".");
        self.f
            .type_error(&go_path, &raw.json_kind(), &self.c.node(node).go_type);
    }
}

/// Whether an integer fits a signed Go integer of `bits` bits.
fn fits(bits: u32, v: i128) -> bool {
    let limit = 1i128 << (bits - 1);
    (-limit..limit).contains(&v)
}

/// True when `value` decodes into the schema at `node` without a type error: the walk the
/// reporting one makes (same kinds, same integer widths), on a decoded value, without
/// building paths, sets or a `Raw` copy. Unknown fields are not its concern (no type
/// error). Only when it finds a mismatch is the reporting walk run, for the messages.
pub(crate) fn typed_cleanly(c: &Compiled, node: NodeId, value: &serde_json::Value) -> bool {
    use serde_json::Value;
    let integer = |bits: u32, v: &Value| match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .is_some_and(|n| fits(bits, n)),
        _ => false,
    };
    if value.is_null() {
        return true;
    }
    match &c.node(node).kind {
        Kind::Any => true,
        Kind::Struct { fields, .. } => value.as_object().is_some_and(|m| {
            m.iter().all(|(k, v)| {
                fields
                    .get(k.as_str())
                    .is_none_or(|f| typed_cleanly(c, f.node, v))
            })
        }),
        Kind::Map { values } => value
            .as_object()
            .is_some_and(|m| m.values().all(|v| typed_cleanly(c, *values, v))),
        Kind::Array { items } => value
            .as_array()
            .is_some_and(|a| a.iter().all(|v| typed_cleanly(c, *items, v))),
        Kind::String => value.is_string(),
        Kind::Boolean => value.is_boolean(),
        Kind::Number => value.is_number(),
        Kind::Quantity => value.is_string() || value.is_number(),
        Kind::IntOrString => value.is_string() || integer(32, value),
        Kind::Integer { bits } => integer(*bits, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Every leaf of `v` in turn replaced by each of `subs`, and each member of every object
    /// (and element of every array) in turn replaced likewise: values one step off a
    /// well-typed object at every depth.
    fn mutations(v: &Value, subs: &[Value], out: &mut Vec<Value>) {
        fn walk(
            root: &Value,
            path: &mut Vec<Step>,
            v: &Value,
            subs: &[Value],
            out: &mut Vec<Value>,
        ) {
            for s in subs {
                out.push(replaced(root, path, s.clone()));
            }
            match v {
                Value::Object(m) => {
                    for (k, c) in m {
                        path.push(Step::Key(k.clone()));
                        walk(root, path, c, subs, out);
                        path.pop();
                    }
                }
                Value::Array(a) => {
                    for (i, c) in a.iter().enumerate() {
                        path.push(Step::Index(i));
                        walk(root, path, c, subs, out);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
        walk(v, &mut Vec::new(), v, subs, out);
    }

    #[derive(Clone)]
    enum Step {
        Key(String),
        Index(usize),
    }

    fn replaced(root: &Value, path: &[Step], with: Value) -> Value {
        let mut out = root.clone();
        let mut at = &mut out;
        for step in path {
            at = match step {
                Step::Key(k) => &mut at[k.as_str()],
                Step::Index(i) => &mut at[*i],
            };
        }
        *at = with;
        out
    }

    /// The cheap walk finds a type error exactly when the reporting walk reports one, for
    /// a Pod (structs, maps, arrays, quantities, int-or-strings, int32 and int64 fields) with
    /// every value in turn replaced by one of each JSON kind, out-of-range integers and
    /// fractions.
    #[test]
    fn typed_cleanly_agrees_with_the_reporting_walk() {
        let schemas = crate::schemas();
        let c = &schemas.compiled;
        let root = c.def_node("io.k8s.api.core.v1.Pod").expect("Pod");
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "generation": 3,
                         "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u"}]},
            "spec": {
                "containers": [{"name": "c", "image": "i",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "1", "memory": 5}},
                    "livenessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 3}}],
                "terminationGracePeriodSeconds": 30,
                "nodeSelector": {"k": "v"},
                "overhead": {"cpu": 0.5}
            }
        });
        let subs = [
            Value::Null,
            json!(true),
            json!(7),
            json!(-3),
            json!(2.5),
            json!(1.0),
            json!(2147483648u64),
            json!(-2147483649i64),
            json!(9223372036854775808u64),
            json!("s"),
            json!([]),
            json!(["s", 1]),
            json!({}),
            json!({"name": 1}),
        ];
        let mut cases = vec![pod.clone()];
        mutations(&pod, &subs, &mut cases);
        let (mut clean, mut dirty) = (0, 0);
        for v in &cases {
            let reported = run(c, root, &Raw::of_value(v)).type_errors;
            assert_eq!(
                typed_cleanly(c, root, v),
                reported.is_empty(),
                "{v}: {reported:?}"
            );
            if reported.is_empty() {
                clean += 1;
            } else {
                dirty += 1;
            }
        }
        // Both answers occur plenty (the test can fail either way).
        assert!(
            clean > 100 && dirty > 100,
            "{clean} clean, {dirty} with errors"
        );
    }
}
