//! One pass over a request body: decodes it into the `serde_json::Value` that
//! `serde_json::from_slice` yields while checking it against the schema exactly as `check` does
//! (same messages, same order), so the server parses a body once instead of twice.

use std::fmt::{self, Write as _};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use crate::compile::{Compiled, Kind, NodeId};
use crate::findings::Findings;
use crate::FieldReport;

/// Decodes `body` while checking it against the schema rooted at `root`. The error is
/// serde_json's syntax error text (the same text `check` and `from_slice` give).
pub(crate) fn run(
    compiled: &Compiled,
    root: NodeId,
    body: &[u8],
) -> Result<(Value, FieldReport), String> {
    let mut st = State {
        c: compiled,
        f: Findings::new(),
        go_path: String::new(),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = NodeSeed {
        st: &mut st,
        node: root,
    }
    .deserialize(&mut de)
    .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok((value, st.f.report))
}

/// The walker state of `check::Walker`, with the Go path kept as one joined string.
struct State<'c> {
    c: &'c Compiled,
    f: Findings<'c>,
    /// Go decoder path: struct field names joined by `.`.
    go_path: String,
}

/// A decoded scalar, for the type checks.
#[derive(Clone, Copy)]
enum Scalar {
    Bool,
    Int(i128),
    Float(f64),
    Str,
}

impl State<'_> {
    /// True when the scalar fits the node (a number error is reported here and counts as fit,
    /// as `check` does).
    fn scalar_fits(&mut self, node: NodeId, s: Scalar) -> bool {
        match &self.c.node(node).kind {
            Kind::Any => true,
            Kind::Struct { .. } | Kind::Map { .. } | Kind::Array { .. } => false,
            Kind::String => matches!(s, Scalar::Str),
            Kind::Boolean => matches!(s, Scalar::Bool),
            Kind::Number => matches!(s, Scalar::Int(_) | Scalar::Float(_)),
            Kind::Quantity => matches!(s, Scalar::Str | Scalar::Int(_) | Scalar::Float(_)),
            Kind::IntOrString => matches!(s, Scalar::Str) || self.integer(32, s),
            Kind::Integer { bits } => self.integer(*bits, s),
        }
    }

    fn scalar(&mut self, node: NodeId, s: Scalar) {
        if !self.scalar_fits(node, s) {
            let kind = match s {
                Scalar::Bool => "bool",
                Scalar::Int(_) | Scalar::Float(_) => "number",
                Scalar::Str => "string",
            };
            self.type_error(node, kind);
        }
    }

    fn integer(&mut self, bits: u32, s: Scalar) -> bool {
        let limit = 1i128 << (bits - 1);
        match s {
            Scalar::Int(v) if (-limit..limit).contains(&v) => true,
            Scalar::Int(v) => self.number_error(bits, &v.to_string()),
            Scalar::Float(v) => self.number_error(bits, &v.to_string()),
            _ => false,
        }
    }

    fn number_error(&mut self, bits: u32, literal: &str) -> bool {
        self.f.type_error(
            &self.go_path,
            &format!("number {literal}"),
            &format!("int{bits}"),
        );
        true
    }

    fn type_error(&mut self, node: NodeId, json_kind: &str) {
        let go_type = &self.c.node(node).go_type;
        self.f.type_error(&self.go_path, json_kind, go_type);
    }
}

/// Decodes one value against `node`.
struct NodeSeed<'s, 'c> {
    st: &'s mut State<'c>,
    node: NodeId,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null) // null decodes to the zero value everywhere
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        self.st.scalar(self.node, Scalar::Bool);
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        self.st.scalar(self.node, Scalar::Int(v.into()));
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        self.st.scalar(self.node, Scalar::Int(v.into()));
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        self.st.scalar(self.node, Scalar::Float(v));
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        self.st.scalar(self.node, Scalar::Str);
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        self.st.scalar(self.node, Scalar::Str);
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let items = match self.st.c.node(self.node).kind {
            Kind::Array { items } => items,
            ref kind => {
                let mismatch = !matches!(kind, Kind::Any);
                let v = plain_seq(seq)?;
                if mismatch {
                    self.st.type_error(self.node, "array");
                }
                return Ok(v);
            }
        };
        let mut out = Vec::new();
        let mut i = 0usize;
        loop {
            let mark = self.st.f.path.len();
            let _ = write!(self.st.f.path, "[{i}]");
            let elem = seq.next_element_seed(NodeSeed {
                st: self.st,
                node: items,
            })?;
            self.st.f.path.truncate(mark);
            match elem {
                Some(v) => out.push(v),
                None => break,
            }
            i += 1;
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        let c = self.st.c;
        match &c.node(self.node).kind {
            Kind::Struct { name, fields } => structure(self.st, name, fields, map),
            Kind::Map { values } => members(self.st, *values, map),
            Kind::Any => plain_map(map),
            _ => {
                let v = plain_map(map)?;
                self.st.type_error(self.node, "object");
                Ok(v)
            }
        }
    }
}

fn structure<'de, 'c, A: MapAccess<'de>>(
    st: &mut State<'c>,
    name: &'c str,
    fields: &'c crate::compile::FieldMap,
    mut map: A,
) -> Result<Value, A::Error> {
    let mut out = Map::new();
    while let Some(key) = map.next_key::<String>()? {
        let entry = out.entry(key);
        let key = entry.key();
        if matches!(entry, Entry::Occupied(_)) {
            st.f.strict("duplicate", key);
        }
        let Some(field) = fields.get(key) else {
            st.f.strict("unknown", key);
            put(entry, map.next_value()?);
            continue;
        };
        let mark = st.f.path.len();
        st.f.push_key(key);
        let go_mark = st.go_path.len();
        if !st.go_path.is_empty() {
            st.go_path.push('.');
        }
        st.go_path.push_str(key);
        let outer = st.f.go_struct.replace(name);
        let v = map.next_value_seed(NodeSeed {
            st: &mut *st,
            node: field.node,
        })?;
        st.f.go_struct = outer;
        st.go_path.truncate(go_mark);
        st.f.path.truncate(mark);
        put(entry, v);
    }
    Ok(Value::Object(out))
}

/// Inserts as `Map::insert` does: a repeated key keeps its place and takes the new value.
fn put(entry: Entry<'_>, v: Value) {
    match entry {
        Entry::Vacant(e) => {
            e.insert(v);
        }
        Entry::Occupied(mut e) => {
            e.insert(v);
        }
    }
}

fn members<'de, A: MapAccess<'de>>(
    st: &mut State<'_>,
    values: NodeId,
    mut map: A,
) -> Result<Value, A::Error> {
    let mut out = Map::new();
    while let Some(key) = map.next_key::<String>()? {
        let entry = out.entry(key);
        if matches!(entry, Entry::Occupied(_)) {
            st.f.strict("duplicate", entry.key());
        }
        let mark = st.f.path.len();
        st.f.push_key(entry.key());
        let v = map.next_value_seed(NodeSeed {
            st: &mut *st,
            node: values,
        })?;
        st.f.path.truncate(mark);
        put(entry, v);
    }
    Ok(Value::Object(out))
}

fn plain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Value, A::Error> {
    let mut out = Vec::new();
    while let Some(v) = seq.next_element::<Value>()? {
        out.push(v);
    }
    Ok(Value::Array(out))
}

fn plain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Value, A::Error> {
    let mut out = Map::new();
    while let Some((k, v)) = map.next_entry::<String, Value>()? {
        out.insert(k, v);
    }
    Ok(Value::Object(out))
}
