//! Compiling an `openAPIV3Schema` into a tree of [`Node`]s.
//!
//! One tree serves both of upstream's views of the schema: the *structural* one (a node's own
//! `properties`, `items`, `additionalProperties` and `x-kubernetes-*` markers; pruning,
//! defaulting, list types) and the full one the value validator walks (also `allOf`, `anyOf`,
//! `oneOf`, `not`). Keywords a CRD may not use (`$ref`, `patternProperties`, `dependencies`,
//! tuple `items`, `additionalItems`) are ignored: the CRD was validated before it got here.

use crate::limits;
use crate::props::Properties;
use crate::render::Num;
use regex::Regex;
use serde_json::{Map, Value};

/// `additionalProperties`: a schema for every other key, or a boolean (no schema: their
/// contents are pruned as unknown; `false` also makes validation reject the key).
#[derive(Debug)]
pub enum Additional {
    Bool(bool),
    Schema(Box<Node>),
}

/// A compiled `pattern`: Go's RE2 syntax; `Err` carries the compile error (the CRD's validation
/// rejects such patterns, so this only happens for schemas stored by an older server).
#[derive(Debug)]
pub struct Pattern {
    pub source: String,
    pub regex: Result<Regex, String>,
}

/// One schema node.
#[derive(Debug, Default)]
pub struct Node {
    /// `type`, or `["integer", "string"]` for `x-kubernetes-int-or-string`; empty for none.
    pub types: Vec<String>,
    pub nullable: bool,
    /// `format` as written, after upstream's removal of formats CRDs do not support.
    pub format: String,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: Option<Pattern>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    /// `enum`, when non-empty.
    pub enum_values: Vec<Value>,
    /// `properties`, sorted by name (Go visits them in random order; a CRD as stored lists
    /// them sorted).
    pub properties: Properties<Node>,
    pub additional: Option<Additional>,
    pub items: Option<Box<Node>>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    /// `default`, pruned by this node's schema as upstream prunes defaults when it serves a CRD.
    pub default: Option<Value>,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
    /// `x-kubernetes-validations`, in order; rules that do not parse are left out (the CRD's
    /// validation refuses them, so only schemas stored by an older server have any).
    pub rules: Vec<crate::rule::Rule>,
    /// This node or one below it (properties, additionalProperties, items) has `rules`: the
    /// CEL walk skips the rest.
    pub rules_below: bool,
    /// The fields of `self` the node's rules read, when they read it only by field
    /// (`Rule::self_fields`), sorted: `[0]` for a create (the rules that need no old object),
    /// `[1]` for an update (every rule). `None`: `self` is needed whole.
    pub rule_fields: [Option<Vec<String>>; 2],
    /// This node or one below it (properties, additionalProperties, items) has a `default`:
    /// defaulting skips the rest.
    pub defaults_below: bool,
    /// The node's one type where the quick validity check takes the node (worked out once
    /// here: it reads a dozen fields and compares the type's name).
    pub quick_type: Option<crate::quick::Type>,
}

impl Node {
    /// Whether the node's `type` lists `t`.
    pub fn has_type(&self, t: &str) -> bool {
        self.types.iter().any(|x| x == t)
    }

    /// The schema of an object member `key`: a property, else `additionalProperties`'
    /// schema. `Err(())` when `additionalProperties` is a boolean: upstream's structural
    /// schema then keeps the member but has no schema for its contents (`false` is reported
    /// by validation instead, as a forbidden property).
    pub fn member(&self, key: &str) -> Option<Result<&Node, ()>> {
        if let Some(p) = self.properties.get(key) {
            return Some(Ok(p));
        }
        match &self.additional {
            Some(Additional::Schema(s)) => Some(Ok(s)),
            Some(Additional::Bool(_)) => Some(Err(())),
            None => None,
        }
    }
}

struct Compiler {
    nodes: usize,
}

/// Whether `pred` holds for some node of the tree below `n` (`n` included), within the
/// depth bound.
pub fn any_node(n: &Node, pred: &dyn Fn(&Node) -> bool) -> bool {
    fn walk(n: &Node, pred: &dyn Fn(&Node) -> bool, depth: usize) -> bool {
        if depth > limits::SCHEMA_DEPTH_MAX {
            return false;
        }
        pred(n)
            || n.properties.values().any(|p| walk(p, pred, depth + 1))
            || matches!(&n.additional, Some(Additional::Schema(a)) if walk(a, pred, depth + 1))
            || n.items.as_deref().is_some_and(|i| walk(i, pred, depth + 1))
    }
    walk(n, pred, 0)
}

/// A field's path below `path` (`spec` + `size` = `spec.size`; at the root, the name):
/// what validation walks for every property, built without the formatting machinery (it
/// was a tenth of a custom resource create's CPU as `format!`).
pub fn field_path(path: &str, k: &str) -> String {
    let mut p = String::with_capacity(path.len() + 1 + k.len());
    if !path.is_empty() {
        p.push_str(path);
        p.push('.');
    }
    p.push_str(k);
    p
}

/// An item's or map entry's path below `path` (`spec.ports` + `0` = `spec.ports[0]`).
pub fn index_path(path: &str, index: &str) -> String {
    let mut p = String::with_capacity(path.len() + 2 + index.len());
    p.push_str(path);
    p.push('[');
    p.push_str(index);
    p.push(']');
    p
}

/// Compiles the root schema.
pub fn compile(v: &Value) -> Result<Node, String> {
    let Value::Object(_) = v else {
        return Err("openAPIV3Schema must be an object".into());
    };
    let mut c = Compiler { nodes: 0 };
    c.node(v, 0, "openAPIV3Schema")
}

fn get_f64(m: &Map<String, Value>, k: &str) -> Option<f64> {
    m.get(k)
        .and_then(Value::as_number)
        .map(|n| Num::of(n).as_f64())
}

fn get_i64(m: &Map<String, Value>, k: &str) -> Option<i64> {
    m.get(k)
        .and_then(Value::as_number)
        .map(|n| match Num::of(n) {
            Num::Int(i) => i,
            Num::Float(f) => f as i64,
        })
}

fn get_bool(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn get_str(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(str::to_string)
}

/// The string formats CRDs support (upstream's list, with `-` removed as go-openapi's
/// registry normalizes names); any other string format is dropped at compile time.
const STRING_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

/// The normalized names of the string formats CRDs support.
pub fn string_formats() -> &'static [&'static str] {
    STRING_FORMATS
}

/// The format upstream keeps for a node of these types, or "" (stripped).
fn supported_format(types: &[String], format: &str) -> String {
    if format.is_empty() {
        return String::new();
    }
    let single = if types.len() == 1 {
        types[0].as_str()
    } else {
        ""
    };
    let keep = match single {
        "" | "string" => STRING_FORMATS.contains(&format.replace('-', "").as_str()),
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format.to_string()
    } else {
        String::new()
    }
}

impl Compiler {
    fn node(&mut self, v: &Value, depth: usize, at: &str) -> Result<Node, String> {
        if depth > limits::SCHEMA_DEPTH_MAX {
            return Err(format!(
                "{at}: schema nested deeper than {}",
                limits::SCHEMA_DEPTH_MAX
            ));
        }
        self.nodes += 1;
        if self.nodes > limits::SCHEMA_NODES_MAX {
            return Err(format!(
                "schema has more than {} nodes",
                limits::SCHEMA_NODES_MAX
            ));
        }
        // A non-object where a schema belongs is lenient: an empty schema.
        let Value::Object(m) = v else {
            return Ok(Node::default());
        };
        let mut n = Node::default();
        if let Some(t) = get_str(m, "type") {
            if !t.is_empty() {
                n.types = vec![t];
            }
        }
        n.int_or_string = get_bool(m, "x-kubernetes-int-or-string");
        if n.int_or_string {
            n.types = vec!["integer".into(), "string".into()];
        }
        n.nullable = get_bool(m, "nullable");
        n.format = supported_format(&n.types, &get_str(m, "format").unwrap_or_default());
        n.maximum = get_f64(m, "maximum");
        n.exclusive_maximum = get_bool(m, "exclusiveMaximum");
        n.minimum = get_f64(m, "minimum");
        n.exclusive_minimum = get_bool(m, "exclusiveMinimum");
        n.multiple_of = get_f64(m, "multipleOf");
        n.max_length = get_i64(m, "maxLength");
        n.min_length = get_i64(m, "minLength");
        if let Some(p) = get_str(m, "pattern") {
            if !p.is_empty() {
                let regex = crate::gore::compile(&p);
                n.pattern = Some(Pattern { source: p, regex });
            }
        }
        n.max_items = get_i64(m, "maxItems");
        n.min_items = get_i64(m, "minItems");
        n.max_properties = get_i64(m, "maxProperties");
        n.min_properties = get_i64(m, "minProperties");
        if let Some(Value::Array(r)) = m.get("required") {
            n.required = r
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
        if let Some(Value::Array(e)) = m.get("enum") {
            n.enum_values = e.clone();
        }
        if let Some(Value::Object(props)) = m.get("properties") {
            let mut entries = Vec::with_capacity(props.len());
            for (k, pv) in props {
                entries.push((k.clone(), self.node(pv, depth + 1, k)?));
            }
            n.properties = Properties::new(entries);
        }
        n.additional = match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(Additional::Bool(*b)),
            Some(s @ Value::Object(_)) => Some(Additional::Schema(Box::new(self.node(
                s,
                depth + 1,
                "additionalProperties",
            )?))),
            _ => None,
        };
        if let Some(s @ Value::Object(_)) = m.get("items") {
            n.items = Some(Box::new(self.node(s, depth + 1, "items")?));
        }
        for (key, out) in [
            ("allOf", &mut n.all_of),
            ("anyOf", &mut n.any_of),
            ("oneOf", &mut n.one_of),
        ] {
            if let Some(Value::Array(list)) = m.get(key) {
                for s in list {
                    out.push(self.node(s, depth + 1, key)?);
                }
            }
        }
        if let Some(s @ Value::Object(_)) = m.get("not") {
            n.not = Some(Box::new(self.node(s, depth + 1, "not")?));
        }
        n.default = m.get("default").cloned();
        n.preserve_unknown = get_bool(m, "x-kubernetes-preserve-unknown-fields");
        n.embedded = get_bool(m, "x-kubernetes-embedded-resource");
        n.list_type = get_str(m, "x-kubernetes-list-type");
        if let Some(Value::Array(keys)) = m.get("x-kubernetes-list-map-keys") {
            n.list_map_keys = keys
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
        n.map_type = get_str(m, "x-kubernetes-map-type");
        if let Some(Value::Array(rules)) = m.get("x-kubernetes-validations") {
            n.rules = rules
                .iter()
                .filter_map(crate::rule::Rule::compile)
                .collect();
        }
        n.rule_fields = [false, true].map(|update| {
            let mut fields = std::collections::BTreeSet::new();
            for r in &n.rules {
                if !update && r.transition && !r.optional_old_self {
                    continue;
                }
                fields.extend(r.self_fields.as_ref()?.iter().cloned());
            }
            Some(fields.into_iter().collect())
        });
        n.defaults_below = n.default.is_some()
            || n.properties.values().any(|p| p.defaults_below)
            || matches!(&n.additional, Some(Additional::Schema(a)) if a.defaults_below)
            || n.items.as_ref().is_some_and(|i| i.defaults_below);
        n.rules_below = !n.rules.is_empty()
            || n.properties.values().any(|p| p.rules_below)
            || matches!(&n.additional, Some(Additional::Schema(a)) if a.rules_below)
            || n.items.as_ref().is_some_and(|i| i.rules_below);
        n.quick_type = crate::quick::simple_type(&n);
        Ok(n)
    }
}
