//! The transcoding schema: one table per protobuf message, built once from the embedded
//! descriptor set (compiled from upstream's generated.proto files by build.rs) and the Go JSON
//! facts table (`k8s/gofields.tsv`, extracted from upstream's Go types).
//!
//! The .proto files alone cannot give the JSON form: Go's `json` tags rename fields
//! (`Expression` -> `expression`, `ref` -> `$ref`), flatten embedded structs
//! (`json:",inline"`), and decide which zero values are omitted (`omitempty`, pointers).
//! Both inputs are upstream's; nothing here restates a Kubernetes type by hand.

use std::collections::HashMap;
use std::sync::LazyLock;

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};

/// Index of a message in [`Schema::messages`].
pub(crate) type MsgId = u32;

/// Marker in [`Message::by_number`] for a number with no field.
const NO_FIELD: u16 = u16::MAX;

/// Protobuf scalar types (only these occur in Kubernetes' protos, others are rejected at init).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    Bool,
    Int32,
    Int64,
    Double,
    String,
    Bytes,
}

/// The type of one field value (or of a map value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Scalar(Scalar),
    Message(MsgId),
}

/// Singular, repeated or map field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Card {
    Single,
    Repeated,
    /// `map<string, value>`: every Kubernetes map has string keys.
    Map(Ty),
}

/// Messages whose JSON form is not "an object with one key per field" (Go types with their
/// own MarshalJSON, or named slice types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// metav1.Time: RFC 3339 seconds string <-> {seconds, nanos}; zero is `null`.
    Time,
    /// metav1.MicroTime: RFC 3339 with 6 fractional digits <-> {seconds, nanos}.
    MicroTime,
    /// metav1.Duration: Go duration string ("1h2m3s") <-> {duration: int64 nanoseconds}.
    Duration,
    /// resource.Quantity: string <-> {string}.
    Quantity,
    /// intstr.IntOrString: number or string <-> {type, intVal, strVal}.
    IntOrString,
    /// runtime.RawExtension: embedded JSON (or a nested protobuf envelope) <-> {raw}.
    RawExtension,
    /// metav1.FieldsV1 and apiextensions JSON: any JSON value <-> {raw: JSON bytes}.
    RawJson,
    /// apiextensions JSONSchemaPropsOrArray: schema object or array of schemas.
    SchemaOrArray,
    /// apiextensions JSONSchemaPropsOrBool: schema object or bool.
    SchemaOrBool,
    /// apiextensions JSONSchemaPropsOrStringArray: schema object or array of strings.
    SchemaOrStringArray,
    /// A Go named slice (`type Verbs []string`): JSON array <-> {repeated items = 1}.
    Wrapper,
}

/// One field: its protobuf shape and its Go JSON facts.
#[derive(Debug)]
pub(crate) struct Field {
    pub number: u32,
    /// JSON key; empty for inline fields.
    pub json: Box<str>,
    pub ty: Ty,
    pub card: Card,
    /// `json:",omitempty"`.
    pub omitempty: bool,
    /// `json:",omitzero"`: the zero value is left out (`ObjectMeta.creationTimestamp`).
    pub omitzero: bool,
    /// Go pointer, slice or map: absent on the wire means nil.
    pub nilable: bool,
    /// `json:",inline"`: the sub-message's keys live in the parent object.
    pub inline: bool,
    /// `json:"-"`: not part of the JSON form.
    pub hidden: bool,
}

impl Field {
    /// The field's name in error messages: its JSON key, or its number when inline.
    pub fn label(&self) -> String {
        if self.json.is_empty() {
            format!("#{}", self.number)
        } else {
            self.json.to_string()
        }
    }
}

/// One message table.
#[derive(Debug)]
pub(crate) struct Message {
    /// Fully qualified name without the leading dot, e.g. `k8s.io.api.core.v1.Pod`.
    pub name: Box<str>,
    pub special: Special,
    /// Fields in Go declaration order (the order of JSON output).
    pub fields: Vec<Field>,
    /// Field index by field number (NO_FIELD where none).
    by_number: Vec<u16>,
    /// Field indexes in field-number order (the order of protobuf output).
    pub encode_order: Vec<u16>,
}

impl Message {
    /// The field with protobuf number `number`, if any.
    pub fn field_by_number(&self, number: u32) -> Option<(usize, &Field)> {
        let idx = *self.by_number.get(number as usize)?;
        (idx != NO_FIELD).then(|| (idx as usize, &self.fields[idx as usize]))
    }
}

/// All message tables plus the kind lookup.
#[derive(Debug)]
pub(crate) struct Schema {
    pub messages: Vec<Message>,
    by_name: HashMap<Box<str>, MsgId>,
    /// apiVersion -> kind -> message, for every type that embeds TypeMeta.
    kinds: HashMap<Box<str>, HashMap<Box<str>, MsgId>>,
    /// meta.k8s.io/v1 kinds (Status, DeleteOptions, ...), valid in every served group version.
    meta_kinds: HashMap<Box<str>, MsgId>,
}

/// The schema, built on first use.
pub(crate) static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let fds = FileDescriptorSet::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/k8s.fds"))[..])
        .expect("embedded descriptor set decodes");
    Schema::build(&fds, include_str!("../k8s/gofields.tsv"))
});

const META_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
const APIEXT: [&str; 2] = [
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1",
];

fn special_for(name: &str) -> Special {
    let (pkg, short) = name.rsplit_once('.').unwrap_or(("", name));
    match (pkg, short) {
        (META_V1, "Time") => Special::Time,
        (META_V1, "MicroTime") => Special::MicroTime,
        (META_V1, "Duration") => Special::Duration,
        (META_V1, "FieldsV1") => Special::RawJson,
        ("k8s.io.apimachinery.pkg.api.resource", "Quantity" | "QuantityValue") => Special::Quantity,
        ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => Special::IntOrString,
        ("k8s.io.apimachinery.pkg.runtime", "RawExtension") => Special::RawExtension,
        (p, "JSON") if APIEXT.contains(&p) => Special::RawJson,
        (p, "JSONSchemaPropsOrArray") if APIEXT.contains(&p) => Special::SchemaOrArray,
        (p, "JSONSchemaPropsOrBool") if APIEXT.contains(&p) => Special::SchemaOrBool,
        (p, "JSONSchemaPropsOrStringArray") if APIEXT.contains(&p) => Special::SchemaOrStringArray,
        _ => Special::None,
    }
}

/// Go JSON facts of one field (a `F` row of gofields.tsv).
struct GoField<'a> {
    number: u32,
    json: &'a str,
    flags: &'a str,
}

/// Parsed gofields.tsv.
#[derive(Default)]
struct GoFacts<'a> {
    /// proto package -> apiVersion (`v1`, `apps/v1`, ...).
    api_versions: HashMap<&'a str, String>,
    kinds: Vec<&'a str>,
    wrappers: Vec<&'a str>,
    fields: HashMap<&'a str, Vec<GoField<'a>>>,
}

fn parse_go_facts(tsv: &str) -> GoFacts<'_> {
    let mut facts = GoFacts::default();
    for line in tsv.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        match cols.as_slice() {
            ["P", pkg, group, version] if *group != "-" => {
                let api_version = match *group {
                    "core" => version.to_string(),
                    g => format!("{g}/{version}"),
                };
                facts.api_versions.insert(pkg, api_version);
            }
            ["T", msg, "K"] => facts.kinds.push(msg),
            ["T", msg, "W"] => facts.wrappers.push(msg),
            ["F", msg, number, json, flags] => {
                let number = number.parse().expect("gofields.tsv: field number");
                let row = GoField {
                    number,
                    json,
                    flags,
                };
                facts.fields.entry(msg).or_default().push(row);
            }
            _ => {}
        }
    }
    facts
}

fn scalar_of(t: Type) -> Scalar {
    match t {
        Type::Bool => Scalar::Bool,
        Type::Int32 => Scalar::Int32,
        Type::Int64 => Scalar::Int64,
        Type::Double => Scalar::Double,
        Type::String => Scalar::String,
        Type::Bytes => Scalar::Bytes,
        other => panic!("unexpected scalar type {other:?} in Kubernetes protos"),
    }
}

/// Collects every message descriptor (nested ones too) under its full name.
fn collect<'a>(
    prefix: &str,
    msgs: &'a [DescriptorProto],
    out: &mut Vec<(String, &'a DescriptorProto)>,
) {
    for m in msgs {
        let name = format!("{prefix}.{}", m.name());
        collect(&name, &m.nested_type, out);
        out.push((name, m));
    }
}

impl Schema {
    fn build(fds: &FileDescriptorSet, tsv: &str) -> Schema {
        let facts = parse_go_facts(tsv);
        let mut all = Vec::new();
        for file in &fds.file {
            collect(file.package(), &file.message_type, &mut all);
        }
        let by_name: HashMap<Box<str>, MsgId> = all
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.as_str().into(), i as MsgId))
            .collect();
        let map_entries: HashMap<&str, &DescriptorProto> = all
            .iter()
            .filter(|(_, m)| m.options.as_ref().is_some_and(|o| o.map_entry()))
            .map(|(name, m)| (name.as_str(), *m))
            .collect();
        let ctx = BuildCtx {
            by_name: &by_name,
            map_entries: &map_entries,
            facts: &facts,
        };
        let messages = all.iter().map(|(name, m)| ctx.message(name, m)).collect();
        let mut schema = Schema {
            messages,
            by_name,
            kinds: HashMap::new(),
            meta_kinds: HashMap::new(),
        };
        schema.index_kinds(&facts);
        schema
    }

    fn index_kinds(&mut self, facts: &GoFacts<'_>) {
        for msg in &facts.kinds {
            let Some(&id) = self.by_name.get(*msg) else {
                continue;
            };
            let (pkg, kind) = msg.rsplit_once('.').expect("qualified name");
            let Some(api_version) = facts.api_versions.get(pkg) else {
                continue;
            };
            self.add_kind(api_version, kind, id);
            if pkg == META_V1 {
                self.meta_kinds.insert(kind.into(), id);
            }
        }
        // WatchEvent has no TypeMeta in Go but is sent as a kind of its own.
        if let Some(&id) = self.by_name.get(format!("{META_V1}.WatchEvent").as_str()) {
            self.meta_kinds.insert("WatchEvent".into(), id);
            self.add_kind("meta.k8s.io/v1", "WatchEvent", id);
        }
    }

    fn add_kind(&mut self, api_version: &str, kind: &str, id: MsgId) {
        self.kinds
            .entry(api_version.into())
            .or_default()
            .insert(kind.into(), id);
    }

    /// The message of a top-level object, or None for kinds without a protobuf form.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<MsgId> {
        let kinds = self.kinds.get(api_version)?;
        kinds
            .get(kind)
            .or_else(|| self.meta_kinds.get(kind))
            .copied()
    }

    /// The message table of `id`.
    pub fn msg(&self, id: MsgId) -> &Message {
        &self.messages[id as usize]
    }

    /// The id of a message by full name.
    #[cfg(test)]
    pub fn id(&self, name: &str) -> Option<MsgId> {
        self.by_name.get(name).copied()
    }
}

struct BuildCtx<'a> {
    by_name: &'a HashMap<Box<str>, MsgId>,
    map_entries: &'a HashMap<&'a str, &'a DescriptorProto>,
    facts: &'a GoFacts<'a>,
}

impl BuildCtx<'_> {
    fn resolve(&self, type_name: &str) -> MsgId {
        let name = type_name.trim_start_matches('.');
        *self
            .by_name
            .get(name)
            .unwrap_or_else(|| panic!("unresolved message type {name}"))
    }

    fn value_ty(&self, f: &FieldDescriptorProto) -> Ty {
        match f.r#type() {
            Type::Message => Ty::Message(self.resolve(f.type_name())),
            t => Ty::Scalar(scalar_of(t)),
        }
    }

    fn field(&self, f: &FieldDescriptorProto, go: Option<&GoField<'_>>) -> Field {
        let map_entry = (f.r#type() == Type::Message)
            .then(|| self.map_entries.get(f.type_name().trim_start_matches('.')))
            .flatten();
        let (ty, card) = match map_entry {
            Some(entry) => {
                let value = entry
                    .field
                    .iter()
                    .find(|v| v.number() == 2)
                    .expect("map value");
                (Ty::Scalar(Scalar::String), Card::Map(self.value_ty(value)))
            }
            None if f.label() == Label::Repeated => (self.value_ty(f), Card::Repeated),
            None => (self.value_ty(f), Card::Single),
        };
        // Fields Go does not describe (none today) are treated like optional pointers.
        let flags = go.map_or("op", |g| g.flags);
        let inline = flags.contains('i');
        let json = match go {
            Some(_) if inline => "",
            Some(g) => g.json,
            None => f.name(),
        };
        Field {
            number: u32::try_from(f.number()).expect("positive field number"),
            json: json.into(),
            ty,
            card,
            omitempty: flags.contains('o'),
            omitzero: flags.contains('z'),
            nilable: flags.contains(['p', 's', 'm']) || card != Card::Single,
            inline,
            hidden: flags.contains('-'),
        }
    }

    fn message(&self, name: &str, m: &DescriptorProto) -> Message {
        let go_rows = self
            .facts
            .fields
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let go_of = |n: i32| go_rows.iter().find(|g| i64::from(g.number) == i64::from(n));
        let mut fields: Vec<Field> = m
            .field
            .iter()
            .map(|f| self.field(f, go_of(f.number())))
            .collect();
        // JSON order: Go declaration order; fields Go does not list go last.
        let go_pos = |number: u32| {
            go_rows
                .iter()
                .position(|g| g.number == number)
                .unwrap_or(usize::MAX)
        };
        fields.sort_by_key(|f| (go_pos(f.number), f.number));
        let max = fields.iter().map(|f| f.number).max().unwrap_or(0) as usize;
        let mut by_number = vec![NO_FIELD; max + 1];
        for (i, f) in fields.iter().enumerate() {
            by_number[f.number as usize] = u16::try_from(i).expect("field count fits u16");
        }
        let mut encode_order: Vec<u16> = (0..fields.len() as u16).collect();
        encode_order.sort_by_key(|&i| fields[i as usize].number);
        let mut special = special_for(name);
        if special == Special::None && self.facts.wrappers.contains(&name) {
            special = Special::Wrapper;
        }
        Message {
            name: name.into(),
            special,
            fields,
            by_number,
            encode_order,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_fields_carry_go_json_facts() {
        let s = &*SCHEMA;
        let pod = s.msg(s.kind("v1", "Pod").expect("Pod"));
        assert_eq!(&*pod.name, "k8s.io.api.core.v1.Pod");
        let names: Vec<&str> = pod.fields.iter().map(|f| &*f.json).collect();
        assert_eq!(names, ["metadata", "spec", "status"]);
        let probe = s.msg(s.id("k8s.io.api.core.v1.Probe").expect("Probe"));
        assert!(
            probe.fields.iter().any(|f| f.inline),
            "Probe embeds ProbeHandler inline"
        );
    }

    #[test]
    fn kinds_resolve_per_group_version_with_meta_fallback() {
        let s = &*SCHEMA;
        let cases = [
            (
                "apps/v1",
                "Deployment",
                Some("k8s.io.api.apps.v1.Deployment"),
            ),
            (
                "v1",
                "Status",
                Some("k8s.io.apimachinery.pkg.apis.meta.v1.Status"),
            ),
            (
                "apps/v1",
                "DeleteOptions",
                Some("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"),
            ),
            (
                "autoscaling/v1",
                "Scale",
                Some("k8s.io.api.autoscaling.v1.Scale"),
            ),
            ("v1", "PodSpec", None),
            ("example.com/v1", "Widget", None),
            ("example.com/v1", "Status", None),
        ];
        for (api_version, kind, want) in cases {
            let got = s.kind(api_version, kind).map(|id| &*s.msg(id).name);
            assert_eq!(got, want, "{api_version} {kind}");
        }
    }

    #[test]
    fn special_messages_are_recognised() {
        let s = &*SCHEMA;
        let cases = [
            ("k8s.io.apimachinery.pkg.apis.meta.v1.Time", Special::Time),
            (
                "k8s.io.apimachinery.pkg.apis.meta.v1.Verbs",
                Special::Wrapper,
            ),
            ("k8s.io.api.authentication.v1.ExtraValue", Special::Wrapper),
            (
                "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
                Special::IntOrString,
            ),
            ("k8s.io.api.core.v1.PodSpec", Special::None),
        ];
        for (name, want) in cases {
            assert_eq!(s.msg(s.id(name).expect(name)).special, want, "{name}");
        }
    }
}
