//! The definitions compiled into an arena of typed nodes, with `$ref`s resolved to node ids,
//! for fast walks by `check`, `prune` and `strategy`.

use std::collections::HashMap;

use serde_json::Value;

use crate::data::Definitions;
use crate::Gvk;

pub(crate) type NodeId = usize;

const REF_PREFIX: &str = "#/definitions/";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// What JSON a node accepts.
#[derive(Debug)]
pub(crate) enum Kind {
    /// Anything: no type, or an object with neither properties nor additionalProperties
    /// (RawExtension, FieldsV1, JSON).
    Any,
    /// A Go struct: known fields only.
    Struct {
        name: String,
        fields: FieldMap,
    },
    /// `additionalProperties`: any key, values of one schema.
    Map {
        values: NodeId,
    },
    Array {
        items: NodeId,
    },
    String,
    Integer {
        bits: u32,
    },
    Number,
    Boolean,
    /// `format: int-or-string`.
    IntOrString,
    /// `resource.Quantity`: a string or a number.
    Quantity,
}

/// A struct field: its schema plus the property-level patch metadata (which sits beside the
/// `$ref`, so it cannot live on the shared node).
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) node: NodeId,
    pub(crate) patch_strategy: Option<String>,
    pub(crate) merge_key: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    /// The Go type name upstream's decoder reports (`string`, `int32`, `[]v1.Container`).
    pub(crate) go_type: String,
}

/// A struct's fields by JSON name. Looked up for every key of every decoded body, so with a
/// fast hash (std's SipHash was a visible part of a create's decode).
pub(crate) type FieldMap = HashMap<String, Field, foldhash::fast::RandomState>;

pub(crate) struct Compiled {
    pub(crate) nodes: Vec<Node>,
    defs: HashMap<String, NodeId>,
    /// (group, version, definition name, root node) by kind: every request looks its kind
    /// up, and a kind has only a few group/versions, so no key is built per lookup.
    by_kind: HashMap<String, Vec<KindEntry>, foldhash::fast::RandomState>,
}

/// One group/version of a kind: (group, version, definition name, root node).
pub(crate) type KindEntry = (String, String, String, NodeId);

impl Compiled {
    pub(crate) fn new(defs: &Definitions) -> Compiled {
        let mut c = Compiled {
            nodes: Vec::new(),
            defs: HashMap::new(),
            by_kind: HashMap::default(),
        };
        for (name, _) in defs.iter() {
            let id = c.push(Kind::Any, go_type_of_def(name));
            c.defs.insert(name.clone(), id);
        }
        for (name, schema) in defs.iter() {
            let kind = c.kind_of(schema, Some(name));
            let id = c.defs[name];
            c.nodes[id].kind = kind;
            for (group, version, of_kind) in gvks(schema) {
                let same = c.by_kind.entry(of_kind).or_default();
                same.retain(|(g, v, _, _)| (g, v) != (&group, &version));
                same.push((group, version, name.clone(), id));
            }
        }
        c
    }

    /// The root node of a kind.
    pub(crate) fn root(&self, gvk: &Gvk) -> Option<NodeId> {
        self.entry(gvk).map(|(_, _, _, id)| *id)
    }

    pub(crate) fn def_name(&self, gvk: &Gvk) -> Option<&str> {
        self.entry(gvk).map(|(_, _, name, _)| name.as_str())
    }

    fn entry(&self, gvk: &Gvk) -> Option<&KindEntry> {
        self.by_kind
            .get(gvk.kind)?
            .iter()
            .find(|(g, v, _, _)| g == gvk.group && v == gvk.version)
    }

    /// Every group/version of `kind`.
    pub(crate) fn kind_entries(&self, kind: &str) -> &[KindEntry] {
        self.by_kind.get(kind).map_or(&[], Vec::as_slice)
    }

    /// The node of a definition, by its name (`io.k8s...ObjectMeta`).
    pub(crate) fn def_node(&self, name: &str) -> Option<NodeId> {
        self.defs.get(name).copied()
    }

    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    fn push(&mut self, kind: Kind, go_type: String) -> NodeId {
        self.nodes.push(Node { kind, go_type });
        self.nodes.len() - 1
    }

    /// Node id for an inline schema or a `$ref`.
    fn node_of(&mut self, schema: &Value) -> NodeId {
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            let name = target.strip_prefix(REF_PREFIX).unwrap_or(target);
            if let Some(&id) = self.defs.get(name) {
                return id;
            }
            return self.push(Kind::Any, "interface {}".to_owned());
        }
        let kind = self.kind_of(schema, None);
        let go_type = self.go_type_of(&kind);
        self.push(kind, go_type)
    }

    fn kind_of(&mut self, schema: &Value, def_name: Option<&str>) -> Kind {
        if def_name == Some(QUANTITY) {
            return Kind::Quantity;
        }
        let format = schema.get("format").and_then(Value::as_str);
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => self.object_kind(schema, def_name),
            Some("array") => match schema.get("items") {
                Some(items) => Kind::Array {
                    items: self.node_of(items),
                },
                None => Kind::Any,
            },
            Some("string") if format == Some("int-or-string") => Kind::IntOrString,
            Some("string") => Kind::String,
            Some("integer") if format == Some("int64") => Kind::Integer { bits: 64 },
            Some("integer") => Kind::Integer { bits: 32 },
            Some("number") => Kind::Number,
            Some("boolean") => Kind::Boolean,
            _ => Kind::Any,
        }
    }

    fn object_kind(&mut self, schema: &Value, def_name: Option<&str>) -> Kind {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            let fields = props
                .iter()
                .map(|(name, prop)| (name.clone(), self.field(prop)))
                .collect();
            let name = def_name.map_or("", short_name).to_owned();
            return Kind::Struct { name, fields };
        }
        match schema.get("additionalProperties") {
            Some(values) if values.is_object() => Kind::Map {
                values: self.node_of(values),
            },
            _ => Kind::Any,
        }
    }

    fn field(&mut self, prop: &Value) -> Field {
        let text = |key: &str| prop.get(key).and_then(Value::as_str).map(str::to_owned);
        Field {
            node: self.node_of(prop),
            patch_strategy: text("x-kubernetes-patch-strategy"),
            merge_key: text("x-kubernetes-patch-merge-key"),
        }
    }

    fn go_type_of(&self, kind: &Kind) -> String {
        match kind {
            Kind::Any => "interface {}".to_owned(),
            Kind::Struct { name, .. } => name.clone(),
            Kind::Map { values } => format!("map[string]{}", self.nodes[*values].go_type),
            Kind::Array { items } => format!("[]{}", self.nodes[*items].go_type),
            Kind::String => "string".to_owned(),
            Kind::Integer { bits } => format!("int{bits}"),
            Kind::Number => "float64".to_owned(),
            Kind::Boolean => "bool".to_owned(),
            Kind::IntOrString => "intstr.IntOrString".to_owned(),
            Kind::Quantity => "resource.Quantity".to_owned(),
        }
    }
}

/// `io.k8s.api.core.v1.PodSpec` → `PodSpec`.
fn short_name(def: &str) -> &str {
    def.rsplit('.').next().unwrap_or(def)
}

/// `io.k8s.api.core.v1.PodSpec` → `v1.PodSpec` (Go package name and type).
fn go_type_of_def(def: &str) -> String {
    let mut parts = def.rsplit('.');
    match (parts.next(), parts.next()) {
        (Some(ty), Some(pkg)) => format!("{pkg}.{ty}"),
        _ => def.to_owned(),
    }
}

/// The `x-kubernetes-group-version-kind` entries of a definition.
pub(crate) fn gvks(schema: &Value) -> Vec<(String, String, String)> {
    let Some(list) = schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let field = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    list.iter()
        .map(|e| (field(e, "group"), field(e, "version"), field(e, "kind")))
        .collect()
}
