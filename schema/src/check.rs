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
        let limit = 1i128 << (bits - 1);
        match raw {
            Raw::Int(v) if (-limit..limit).contains(v) => true,
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
