//! Custom resources as upstream's apiextensions-apiserver publishes them
//! (`pkg/controller/openapi/builder`, `v2/conversion.go`): per CRD version a kind definition
//! built from the version's `openAPIV3Schema` plus `apiVersion`/`kind`/`metadata`, a list
//! definition, and the eight CRD routes (plus `status`/`scale`). Definitions come in two
//! forms: v3 as the schema is (metadata refs wrapped in `allOf` like every v3 `$ref` with a
//! description), v2 converted the way upstream converts (no junctors, no `nullable`, no
//! `default`, nothing under `x-kubernetes-preserve-unknown-fields`).
//!
//! Bad input never panics: a schema that is not an object, or carries an invalid `type` or an
//! `items` array, is published as upstream publishes a version without a schema
//! (`{"type": "object"}`), and nesting below [`CUSTOM_SCHEMA_DEPTH_MAX`] becomes `{}`. Every
//! later pass walks the filtered tree, so its depth is bounded by the same constant.

use serde_json::{json, Map, Value};

use super::model::{Body, ExtraDef, Media, Op, PathItem, Payload, Response};
use super::params::{self, Param};
use super::v3::to_v3;
use crate::names::{capitalize, op_prefix, tag};
use crate::{ResourceDesc, CUSTOM_SCHEMA_DEPTH_MAX};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
const V2_REF: &str = "#/definitions/";

/// `apiVersion` and `kind` as upstream's TypeMeta definition describes them (a test checks them
/// against the embedded `io.k8s.api.core.v1.Pod`, which carries the same text).
pub(crate) const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
pub(crate) const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
/// PartialObjectMetadata's and PartialObjectMetadataList's `metadata` documentation.
const OBJECT_METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
/// What upstream writes on an `x-kubernetes-embedded-resource` object's `apiVersion`/`kind`.
const EMBEDDED_API_VERSION_DESCRIPTION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DESCRIPTION: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// Media types of CRD requests and responses (upstream's builder: JSON and YAML only).
pub(crate) const MEDIA: [&str; 2] = ["application/json", "application/yaml"];
/// Patch types a custom resource accepts (no strategic merge patch).
pub(crate) const PATCH_MEDIA: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// `example.com`, `v1`, `Widget` → `com.example.v1.Widget`.
pub(crate) fn model_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

/// kube-openapi's order of schema keys (its `SchemaProps` then `SwaggerSchemaProps` fields);
/// extensions and anything else follow, sorted, as Go writes its inline map.
const KEY_ORDER: [&str; 39] = [
    "id",
    "description",
    "type",
    "nullable",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "discriminator",
    "readOnly",
    "externalDocs",
    "example",
    "$schema",
    "$ref",
];

/// Puts a schema's keys in the order upstream writes them (properties sorted by name), so a
/// custom resource's definitions come out byte for byte as upstream's.
///
/// Upstream writes CEL rules in their struct's field order in v3 and sorted in v2.
fn canonical(v: &mut Value, v2: bool) {
    let Value::Object(map) = v else {
        return;
    };
    let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    let rank = |key: &str| {
        KEY_ORDER
            .iter()
            .position(|k| *k == key)
            .unwrap_or(KEY_ORDER.len())
    };
    entries.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    for (key, value) in &mut entries {
        match key.as_str() {
            "properties" => {
                if let Value::Object(props) = value {
                    let mut named: Vec<(String, Value)> =
                        std::mem::take(props).into_iter().collect();
                    named.sort_by(|(a, _), (b, _)| a.cmp(b));
                    for (_, prop) in &mut named {
                        canonical(prop, v2);
                    }
                    props.extend(named);
                }
            }
            "items" | "not" | "additionalProperties" => canonical(value, v2),
            "x-kubernetes-validations" => {
                if let Value::Array(rules) = value {
                    rules.iter_mut().for_each(|r| rule_order(r, v2));
                }
            }
            "allOf" | "oneOf" | "anyOf" => {
                if let Value::Array(items) = value {
                    items.iter_mut().for_each(|i| canonical(i, v2));
                }
            }
            _ => {}
        }
    }
    map.extend(entries);
}

/// Field order of upstream's `ValidationRule`.
const RULE_ORDER: [&str; 6] = [
    "rule",
    "message",
    "messageExpression",
    "reason",
    "fieldPath",
    "optionalOldSelf",
];

fn rule_order(rule: &mut Value, v2: bool) {
    let Value::Object(map) = rule else {
        return;
    };
    let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    let rank = |key: &str| match v2 {
        true => 0,
        false => RULE_ORDER
            .iter()
            .position(|k| *k == key)
            .unwrap_or(RULE_ORDER.len()),
    };
    entries.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    map.extend(entries);
}

/// The kind and list definitions of one custom resource version.
pub(crate) fn definitions(r: &ResourceDesc, schema: &Value) -> [ExtraDef; 2] {
    let structural = match schema {
        Value::Object(_) => structural(schema, 0).map(|mut s| {
            unfold(&mut s);
            s
        }),
        _ => None,
    };
    let list_kind = format!("{}List", r.kind);
    let name = model_name(&r.group, &r.version, &r.kind);
    let ordered = |mut v: Value, v2: bool| {
        canonical(&mut v, v2);
        v
    };
    [
        ExtraDef {
            name: name.clone(),
            v2: ordered(kind_schema(r, structural.as_ref(), true), true),
            v3: ordered(to_v3(&kind_schema(r, structural.as_ref(), false)), false),
        },
        ExtraDef {
            name: model_name(&r.group, &r.version, &list_kind),
            v2: ordered(list_schema(r, &name, &list_kind), true),
            v3: ordered(to_v3(&list_schema(r, &name, &list_kind)), false),
        },
    ]
}

fn gvk(r: &ResourceDesc, kind: &str) -> Value {
    json!([{"group": r.group, "kind": kind, "version": r.version}])
}

fn type_meta(props: &mut Map<String, Value>) {
    props.insert(
        "apiVersion".to_owned(),
        json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
    );
    props.insert(
        "kind".to_owned(),
        json!({"description": KIND_DESCRIPTION, "type": "string"}),
    );
}

/// A metadata `$ref` with its description (v2 form; `to_v3` wraps it in `allOf`).
fn meta_ref(def: &str, description: &str) -> Value {
    json!({"$ref": format!("{V2_REF}{def}"), "description": description})
}

/// Upstream's `buildKubeNative`.
fn kind_schema(r: &ResourceDesc, structural: Option<&Value>, v2: bool) -> Value {
    let mut out = match structural {
        Some(s) if !(v2 && is_true(s, "x-kubernetes-preserve-unknown-fields")) => {
            let mut s = s.clone();
            if v2 {
                to_v2(&mut s);
                prune_defaults(&mut s);
            }
            if let Value::Object(map) = &mut s {
                let props = properties(map);
                props.insert(
                    "metadata".to_owned(),
                    meta_ref(OBJECT_META, OBJECT_METADATA_DESCRIPTION),
                );
                type_meta(props);
            }
            add_embedded(&mut s, v2);
            s
        }
        _ => json!({"type": "object"}),
    };
    out["x-kubernetes-group-version-kind"] = gvk(r, &r.kind);
    out
}

/// The `properties` map of a schema, created when missing.
fn properties(map: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let props = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !props.is_object() {
        *props = Value::Object(Map::new());
    }
    props.as_object_mut().expect("made an object above")
}

/// Upstream's `buildListSchema`.
fn list_schema(r: &ResourceDesc, item: &str, list_kind: &str) -> Value {
    let mut props = Map::new();
    props.insert(
        "items".to_owned(),
        json!({
            "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.plural),
            "items": {"$ref": format!("{V2_REF}{item}")},
            "type": "array",
        }),
    );
    props.insert(
        "metadata".to_owned(),
        meta_ref(LIST_META, LIST_METADATA_DESCRIPTION),
    );
    type_meta(&mut props);
    json!({
        "description": format!("{list_kind} is a list of {}", r.kind),
        "properties": props,
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": gvk(r, list_kind),
    })
}

fn is_true(v: &Value, key: &str) -> bool {
    v.get(key) == Some(&Value::Bool(true))
}

/// The types upstream accepts (`SchemaHasInvalidTypes`).
const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// What upstream's structural schema keeps of a JSON schema, in the input's key order:
/// `None` when upstream would publish no schema at all.
fn structural(v: &Value, depth: usize) -> Option<Value> {
    let Value::Object(map) = v else {
        return None;
    };
    if depth >= CUSTOM_SCHEMA_DEPTH_MAX {
        return Some(json!({}));
    }
    let mut out = Map::new();
    for (key, value) in map {
        if depth + 1 + json_depth(value, CUSTOM_SCHEMA_DEPTH_MAX) > CUSTOM_SCHEMA_DEPTH_MAX
            && !matches!(
                key.as_str(),
                "properties"
                    | "items"
                    | "not"
                    | "additionalProperties"
                    | "allOf"
                    | "anyOf"
                    | "oneOf"
            )
        {
            continue; // a copied value too deep to publish
        }
        let kept = match (key.as_str(), value) {
            ("type", Value::String(t)) if TYPES.contains(&t.as_str()) => value.clone(),
            ("type", _) => return None,
            // Go omits empty strings, a null default, and an example that encodes as empty.
            (
                "description"
                | "title"
                | "format"
                | "pattern"
                | "x-kubernetes-list-type"
                | "x-kubernetes-map-type",
                Value::String(text),
            ) if !text.is_empty() => value.clone(),
            ("default", v) if !v.is_null() => value.clone(),
            ("example", v) if !is_empty_json(v) => value.clone(),
            (
                "nullable"
                | "exclusiveMaximum"
                | "exclusiveMinimum"
                | "uniqueItems"
                | "x-kubernetes-preserve-unknown-fields"
                | "x-kubernetes-embedded-resource"
                | "x-kubernetes-int-or-string",
                Value::Bool(true),
            ) => value.clone(),
            (
                "maximum" | "minimum" | "multipleOf" | "maxLength" | "minLength" | "maxItems"
                | "minItems" | "maxProperties" | "minProperties",
                Value::Number(_),
            ) => value.clone(),
            (
                "enum" | "required" | "x-kubernetes-list-map-keys" | "x-kubernetes-validations",
                Value::Array(items),
            ) if !items.is_empty() => value.clone(),
            ("properties", Value::Object(props)) if !props.is_empty() => {
                let mut out = Map::new();
                for (name, prop) in props {
                    out.insert(name.clone(), structural(prop, depth + 2)?);
                }
                Value::Object(out)
            }
            ("items" | "not", _) => structural(value, depth + 1)?,
            ("additionalProperties", Value::Bool(_)) => value.clone(),
            ("additionalProperties", _) => structural(value, depth + 1)?,
            ("allOf" | "anyOf" | "oneOf", Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|i| structural(i, depth + 2))
                .collect::<Option<Vec<_>>>()
                .map(Value::Array)?,
            _ => continue,
        };
        out.insert(key.clone(), kept);
    }
    Some(Value::Object(out))
}

/// `null`, `""`, `[]` or `{}`.
fn is_empty_json(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// JSON nesting levels of a value (a scalar 0, `[]` 1), counted no further than `max + 1`.
fn json_depth(v: &Value, max: usize) -> usize {
    if max == 0 {
        return usize::from(v.is_array() || v.is_object());
    }
    let deepest = |items: &mut dyn Iterator<Item = &Value>| {
        items.map(|i| json_depth(i, max - 1)).max().unwrap_or(0)
    };
    match v {
        Value::Array(items) => 1 + deepest(&mut items.iter()),
        Value::Object(map) => 1 + deepest(&mut map.values()),
        _ => 0,
    }
}

/// The structural children of a schema (what upstream's visitor descends into).
fn children(v: &mut Value) -> Vec<&mut Value> {
    let Value::Object(map) = v else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(props)) => out.extend(props.values_mut()),
            ("items", value @ Value::Object(_)) => out.push(value),
            ("additionalProperties", value @ Value::Object(_)) => out.push(value),
            _ => {}
        }
    }
    out
}

/// Upstream's `Unfold`: `x-kubernetes-int-or-string` gets its `anyOf` integer/string spelled
/// out (inside `allOf` when the schema has an `anyOf` of its own).
fn unfold(v: &mut Value) {
    if is_true(v, "x-kubernetes-int-or-string") && !int_or_string_spelled(v) {
        let any_of = json!([{"type": "integer"}, {"type": "string"}]);
        if let Value::Object(map) = v {
            if !map.contains_key("anyOf") {
                map.insert("anyOf".to_owned(), any_of);
            } else {
                let mut all_of = vec![json!({ "anyOf": any_of })];
                if let Some(Value::Array(rest)) = map.remove("allOf") {
                    all_of.extend(rest);
                }
                map.insert("allOf".to_owned(), Value::Array(all_of));
            }
        }
    }
    children(v).into_iter().for_each(unfold);
}

fn int_or_string_spelled(v: &Value) -> bool {
    let pattern =
        |any_of: Option<&Value>| any_of == Some(&json!([{"type": "integer"}, {"type": "string"}]));
    pattern(v.get("anyOf"))
        || v.get("allOf")
            .and_then(|a| a.get(0))
            .is_some_and(|first| pattern(first.get("anyOf")))
}

/// Upstream's `ToStructuralOpenAPIV2`: what kubectl's v2 reader cannot cope with goes.
fn to_v2(v: &mut Value) {
    let Value::Object(map) = v else {
        return;
    };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        map.remove(junctor);
    }
    if map.remove("nullable").is_some() {
        map.remove("type");
        map.remove("items");
        map.remove("properties");
    }
    let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if preserve {
        map.remove("items");
        map.remove("properties");
    }
    let ty = map.get("type").and_then(Value::as_str);
    if (ty == Some("array") && !map.contains_key("items")) || (preserve && ty == Some("object")) {
        map.remove("type");
    }
    let nullable_props: Vec<String> = match map.get("properties") {
        Some(Value::Object(props)) => props
            .iter()
            .filter(|(_, p)| is_true(p, "nullable"))
            .map(|(name, _)| name.clone())
            .collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|r| !nullable_props.iter().any(|n| r == n.as_str()));
        if required.is_empty() {
            map.remove("required");
        }
    }
    if map
        .get("additionalProperties")
        .is_some_and(|a| is_true(a, "nullable"))
    {
        map.remove("required");
    }
    children(v).into_iter().for_each(to_v2);
}

/// Upstream prunes `default` from the CRD definitions it merges into `/openapi/v2`.
fn prune_defaults(v: &mut Value) {
    if let Value::Object(map) = v {
        map.remove("default");
    }
    children(v).into_iter().for_each(prune_defaults);
}

/// Upstream's `addEmbeddedProperties`: `x-kubernetes-embedded-resource` objects get
/// `apiVersion`, `kind` and `metadata` (and require the first two), except, in v2, under
/// `x-kubernetes-preserve-unknown-fields`.
fn add_embedded(v: &mut Value, v2: bool) {
    children(v).into_iter().for_each(|c| add_embedded(c, v2));
    if (v2 && is_true(v, "x-kubernetes-preserve-unknown-fields"))
        || !is_true(v, "x-kubernetes-embedded-resource")
    {
        return;
    }
    let Value::Object(map) = v else {
        return;
    };
    let props = properties(map);
    props.insert(
        "apiVersion".to_owned(),
        json!({"description": EMBEDDED_API_VERSION_DESCRIPTION, "type": "string"}),
    );
    props.insert(
        "kind".to_owned(),
        json!({"description": EMBEDDED_KIND_DESCRIPTION, "type": "string"}),
    );
    props.insert(
        "metadata".to_owned(),
        meta_ref(OBJECT_META, OBJECT_METADATA_DESCRIPTION),
    );
    let required = map.entry("required").or_insert_with(|| json!([]));
    if let Value::Array(required) = required {
        for name in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == name) {
                required.push(json!(name));
            }
        }
    }
}

/// The routes upstream's builder registers for a custom resource, with its path-level
/// parameters hoisted and sorted the way kube-openapi does.
pub(crate) fn paths(r: &ResourceDesc, out: &mut Vec<PathItem>) {
    let route = Route::new(r);
    let base = format!("/apis/{}/{}", r.group, r.version);
    let root = if r.namespaced {
        let all = format!("{base}/{}", r.plural);
        let mut op = route.op("get", "list", "list", "", route.list_payload());
        op.id = format!("list{}{}ForAllNamespaces", route.prefix, r.kind);
        // The one path of a namespaced resource without `{namespace}`.
        op.params.retain(|p| p.name != "namespace");
        route.list_like(&mut op);
        push(out, all, vec![op]);
        format!("{base}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{base}/{}", r.plural)
    };
    let item = format!("{root}/{{name}}");
    push(out, root, route.collection_ops());
    push(out, item.clone(), route.object_ops("", route.object()));
    for sub in ["status", "scale"] {
        if r.subresources.iter().any(|(name, _, _)| name == sub) {
            let payload = match sub {
                "scale" => Payload::Def(SCALE.to_owned()),
                _ => route.object(),
            };
            let mut ops = route.object_ops(sub, payload);
            ops.retain(|op| op.action != "delete");
            push(out, format!("{item}/{sub}"), ops);
        }
    }
}

/// Moves the parameters every operation of a path has to the path (kube-openapi's
/// `findCommonParameters`), and sorts both lists by name.
fn push(out: &mut Vec<PathItem>, path: String, mut ops: Vec<Op>) {
    let common: Vec<Param> = match ops.first() {
        Some(first) => first
            .params
            .iter()
            .filter(|p| {
                ops.iter().all(|op| {
                    op.params
                        .iter()
                        .any(|q| q.name == p.name && q.in_path == p.in_path)
                })
            })
            .cloned()
            .collect(),
        None => return,
    };
    for op in &mut ops {
        op.params.retain(|p| {
            !common
                .iter()
                .any(|c| c.name == p.name && c.in_path == p.in_path)
        });
        op.params.sort_by_key(|p| p.name);
    }
    let mut params = common;
    params.sort_by_key(|p| p.name);
    out.push(PathItem { path, params, ops });
}

struct Route<'a> {
    r: &'a ResourceDesc,
    prefix: String,
    scope: &'static str,
    def: String,
}

impl<'a> Route<'a> {
    fn new(r: &'a ResourceDesc) -> Self {
        Route {
            r,
            prefix: op_prefix(&r.group, &r.version),
            scope: if r.namespaced { "Namespaced" } else { "" },
            def: model_name(&r.group, &r.version, &r.kind),
        }
    }

    fn object(&self) -> Payload {
        Payload::Def(self.def.clone())
    }

    fn list_payload(&self) -> Payload {
        Payload::Def(format!("{}List", self.def))
    }

    /// One operation: upstream's `buildRoute` names it `<verb><Scope><Kind><Sub>` and
    /// kube-openapi puts the group/version after the verb.
    fn op(
        &self,
        method: &'static str,
        action: &'static str,
        verb: &str,
        sub: &str,
        ok: Payload,
    ) -> Op {
        let kind = &self.r.kind;
        let of = if sub.is_empty() {
            String::new()
        } else {
            format!(" {sub} of")
        };
        let description = match verb {
            "list" => format!("list{of} objects of kind {kind}"),
            "read" | "replace" => format!("{verb}{of} the specified {kind}"),
            "patch" => format!("partially update{of} the specified {kind}"),
            "deletecollection" => format!("delete collection of {kind}"),
            _ => format!("{verb}{of}{}{kind}", article(kind)),
        };
        let (id_verb, rest) = match verb {
            "deletecollection" => ("delete", "Collection"),
            _ => (verb, ""),
        };
        let mut params = vec![params::pretty()];
        if self.r.namespaced {
            params.push(params::namespace());
        }
        let op_id = format!(
            "{id_verb}{}{rest}{}{kind}{}",
            self.prefix,
            self.scope,
            capitalize(sub)
        );
        Op {
            method,
            action,
            id: op_id,
            description,
            tag: tag(&self.r.group, &self.r.version),
            gvk: Some((
                self.r.group.clone(),
                self.r.version.clone(),
                self.r.kind.clone(),
            )),
            params,
            body: None,
            responses: vec![response("200", "OK", ok), unauthorized()],
            media: Media::Custom,
        }
    }

    fn list_like(&self, op: &mut Op) {
        op.params.extend(params::list());
    }

    fn collection_ops(&self) -> Vec<Op> {
        let mut list = self.op("get", "list", "list", "", self.list_payload());
        self.list_like(&mut list);
        let mut create = self.op("post", "post", "create", "", self.object());
        create.params.extend(params::create());
        create.body = Some(body(self.object(), true, false));
        accepted_created(&mut create, self.object(), true);
        let status = Payload::Def(super::model::STATUS.to_owned());
        let mut delete = self.op("delete", "deletecollection", "deletecollection", "", status);
        self.list_like(&mut delete);
        vec![list, create, delete]
    }

    /// get/put/delete/patch of the object (`sub` empty) or of a subresource.
    fn object_ops(&self, sub: &str, payload: Payload) -> Vec<Op> {
        let with_name = |mut op: Op| {
            op.params.push(params::name(&self.r.kind));
            op
        };
        let mut get = with_name(self.op("get", "get", "read", sub, payload.clone()));
        get.params.extend(params::get());
        let mut put = with_name(self.op("put", "put", "replace", sub, payload.clone()));
        put.params.extend(params::update());
        put.body = Some(body(payload.clone(), true, false));
        accepted_created(&mut put, payload.clone(), false);
        let status = Payload::Def(super::model::STATUS.to_owned());
        let mut delete = with_name(self.op("delete", "delete", "delete", sub, status.clone()));
        delete.params.extend(params::delete());
        delete.body = Some(body(
            Payload::Def(super::model::DELETE_OPTIONS.to_owned()),
            false,
            false,
        ));
        delete
            .responses
            .insert(1, response("202", "Accepted", status));
        let mut patch = with_name(self.op("patch", "patch", "patch", sub, payload));
        patch.params.extend(params::patch());
        patch.body = Some(body(
            Payload::Def(super::model::PATCH.to_owned()),
            true,
            true,
        ));
        vec![get, put, delete, patch]
    }
}

/// `" a "`, `" an "` before a kind, `" "` before a plural-looking one (upstream's
/// `GetArticleForNoun`).
fn article(noun: &str) -> &'static str {
    if noun.ends_with('s') && !noun.ends_with("ss") {
        " "
    } else if noun.starts_with(['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']) {
        " an "
    } else {
        " a "
    }
}

fn body(payload: Payload, required: bool, patch: bool) -> Body {
    Body {
        payload,
        required,
        patch,
    }
}

fn response(code: &'static str, description: &'static str, payload: Payload) -> Response {
    Response {
        code,
        description,
        payload: Some(payload),
    }
}

fn unauthorized() -> Response {
    Response {
        code: "401",
        description: "Unauthorized",
        payload: None,
    }
}

/// 201 (and 202 for creates) after the 200, before the 401.
fn accepted_created(op: &mut Op, payload: Payload, accepted: bool) {
    op.responses
        .insert(1, response("201", "Created", payload.clone()));
    if accepted {
        op.responses.insert(2, response("202", "Accepted", payload));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream copies TypeMeta's documentation; every embedded kind carries the same text.
    #[test]
    fn type_meta_descriptions_are_upstreams() {
        let pod = crate::schemas()
            .definition("io.k8s.api.core.v1.Pod")
            .expect("embedded");
        assert_eq!(
            pod["properties"]["apiVersion"],
            json!({"description": API_VERSION_DESCRIPTION, "type": "string"})
        );
        assert_eq!(
            pod["properties"]["kind"],
            json!({"description": KIND_DESCRIPTION, "type": "string"})
        );
    }

    #[test]
    fn model_names_and_articles_follow_upstream() {
        assert_eq!(
            model_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
        assert_eq!(article("Widget"), " a ");
        assert_eq!(article("Apple"), " an ");
        assert_eq!(article("Settings"), " ");
        assert_eq!(article("Class"), " a ");
    }

    #[test]
    fn json_depth_counts_containers() {
        assert_eq!(json_depth(&json!(1), 10), 0);
        assert_eq!(json_depth(&json!([]), 10), 1);
        assert_eq!(json_depth(&json!({"a": [{"b": 1}]}), 10), 3);
        assert_eq!(
            json_depth(&json!([[[[[]]]]]), 2),
            3,
            "stops counting past max"
        );
    }
}
