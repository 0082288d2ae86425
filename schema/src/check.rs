//! Field validation of a raw JSON body against a compiled schema, reporting what upstream's
//! strict decoder (sigs.k8s.io/json) reports: unknown and duplicate fields with paths like
//! `spec.containers[0].foo`, and Go-style type errors.

use std::collections::HashSet;

use crate::compile::{Compiled, Kind, NodeId};
use crate::raw::Raw;
use crate::{FieldReport, STRICT_ERRORS_MAX, TYPE_ERRORS_MAX};

/// Walk `raw` against the schema rooted at `root`.
pub(crate) fn run(compiled: &Compiled, root: NodeId, raw: &Raw) -> FieldReport {
    let mut walker = Walker {
        c: compiled,
        report: FieldReport::default(),
        seen: HashSet::new(),
        path: String::new(),
        go_path: Vec::new(),
        go_struct: None,
    };
    walker.value(root, raw);
    walker.report
}

struct Walker<'a> {
    c: &'a Compiled,
    report: FieldReport,
    /// Strict messages already reported (upstream deduplicates them).
    seen: HashSet<String>,
    /// Strict path: fields joined by `.`, list indexes as `[i]`, map keys as fields.
    path: String,
    /// Go decoder path: struct field names only (no indexes, no map keys).
    go_path: Vec<&'a str>,
    /// Name of the innermost Go struct whose field is being decoded.
    go_struct: Option<&'a str>,
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
        let limit = 1i128 << (bits - 1);
        match raw {
            Raw::Int(v) if (-limit..limit).contains(v) => true,
            Raw::Int(v) => self.number_error(bits, &v.to_string()),
            Raw::Float(v) => self.number_error(bits, &v.to_string()),
            _ => false,
        }
    }

    fn number_error(&mut self, bits: u32, literal: &str) -> bool {
        let msg = self.type_message(&format!("number {literal}"), &format!("int{bits}"));
        self.push_type_error(msg);
        true // already reported
    }

    fn structure(
        &mut self,
        name: &'a str,
        fields: &'a std::collections::HashMap<String, crate::compile::Field>,
        members: &'a [(String, Raw)],
    ) {
        let mut keys = HashSet::new();
        for (key, value) in members {
            if !keys.insert(key.as_str()) {
                self.strict("duplicate", key);
            }
            let Some(field) = fields.get(key) else {
                self.strict("unknown", key);
                continue;
            };
            let mark = self.path.len();
            self.push_key(key);
            self.go_path.push(key);
            let outer = self.go_struct.replace(name);
            self.value(field.node, value);
            self.go_struct = outer;
            self.go_path.pop();
            self.path.truncate(mark);
        }
    }

    fn map(&mut self, values: NodeId, members: &'a [(String, Raw)]) {
        let mut keys = HashSet::new();
        for (key, value) in members {
            if !keys.insert(key.as_str()) {
                self.strict("duplicate", key);
            }
            let mark = self.path.len();
            self.push_key(key);
            self.value(values, value);
            self.path.truncate(mark);
        }
    }

    fn array(&mut self, items: NodeId, elems: &'a [Raw]) {
        for (i, elem) in elems.iter().enumerate() {
            let mark = self.path.len();
            self.path.push_str(&format!("[{i}]"));
            self.value(items, elem);
            self.path.truncate(mark);
        }
    }

    fn push_key(&mut self, key: &str) {
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
    }

    /// Record `unknown field "<path>.<key>"` or `duplicate field ...`.
    fn strict(&mut self, what: &str, key: &str) {
        if self.report.strict.len() >= STRICT_ERRORS_MAX {
            return;
        }
        let path = if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        };
        let msg = format!("{what} field {path:?}");
        if !self.seen.insert(msg.clone()) {
            return;
        }
        self.report.strict.push(msg.clone());
        match what {
            "unknown" => self.report.unknown.push(msg),
            _ => self.report.duplicate.push(msg),
        }
    }

    fn type_error(&mut self, node: NodeId, raw: &Raw) {
        let msg = self.type_message(&raw.json_kind(), &self.c.node(node).go_type);
        self.push_type_error(msg);
    }

    fn type_message(&self, value: &str, go_type: &str) -> String {
        match self.go_struct {
            Some(st) => format!(
                "json: cannot unmarshal {value} into Go struct field {st}.{} of type {go_type}",
                self.go_path.join(".")
            ),
            None => format!("json: cannot unmarshal {value} into Go value of type {go_type}"),
        }
    }

    fn push_type_error(&mut self, msg: String) {
        if self.report.type_errors.len() < TYPE_ERRORS_MAX {
            self.report.type_errors.push(msg);
        }
    }
}
