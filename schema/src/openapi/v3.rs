//! Rendering the model as OpenAPI v3 documents, one per group/version, shaped like upstream's
//! `/openapi/v3/apis/<group>/<version>`.

use serde_json::{json, Map, Value};

use super::model::{Body, GroupVersion, Op, PathItem, Payload};
use super::params::Param;
use super::v2::{consumes, produces, type_name};
use super::{closure, security_scheme};
use crate::Schemas;

const REF: &str = "#/components/schemas/";

pub(crate) fn render(schemas: &Schemas, gv: &GroupVersion) -> Value {
    let mut paths = Map::new();
    for item in &gv.paths {
        paths.insert(item.path.clone(), path_item(item));
    }
    let paths = Value::Object(paths);
    let extra: Vec<(&str, &Value)> = gv
        .extra_defs
        .iter()
        .map(|d| (d.name.as_str(), &d.v3))
        .collect();
    let components: Map<String, Value> = closure(schemas, &paths, &extra)
        .into_iter()
        .map(|(name, def)| match extra.iter().any(|(n, _)| *n == name) {
            true => (name, def),
            false => (name, to_v3(&def)),
        })
        .collect();
    if gv.custom_only {
        return json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": paths,
            "components": {"schemas": components},
        });
    }
    json!({
        "openapi": "3.0.0",
        "info": schemas.defs.info,
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"BearerToken": security_scheme()},
        },
    })
}

/// A v2 schema in v3 form: refs point into `components/schemas`, and a `$ref` with siblings
/// (description, patch strategy) becomes `allOf: [{$ref}]` plus the siblings, as upstream does.
pub(crate) fn to_v3(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let converted = match (key.as_str(), value) {
                    ("$ref", Value::String(r)) => {
                        Value::String(r.replacen("#/definitions/", REF, 1))
                    }
                    ("properties", Value::Object(props)) => {
                        Value::Object(props.iter().map(|(k, v)| (k.clone(), to_v3(v))).collect())
                    }
                    ("items" | "additionalProperties", v) => to_v3(v),
                    (_, v) => v.clone(),
                };
                out.insert(key.clone(), converted);
            }
            if out.len() > 1 {
                if let Some(r) = out.remove("$ref") {
                    out.insert("allOf".to_owned(), json!([{"$ref": r}]));
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn path_item(item: &PathItem) -> Value {
    let mut out = Map::new();
    for op in &item.ops {
        out.insert(op.method.to_owned(), operation(op));
    }
    if !item.params.is_empty() {
        out.insert(
            "parameters".to_owned(),
            item.params.iter().map(param).collect(),
        );
    }
    Value::Object(out)
}

fn param(p: &Param) -> Value {
    let mut v = json!({
        "name": p.name,
        "in": if p.in_path { "path" } else { "query" },
        "description": p.description,
    });
    if p.in_path {
        v["required"] = json!(true);
    }
    v["schema"] = json!({"type": type_name(p.ty), "uniqueItems": true});
    v
}

fn schema(payload: &Payload) -> Value {
    match payload {
        Payload::Def(name) => json!({"$ref": format!("{REF}{name}")}),
        Payload::Text => json!({"type": "string"}),
    }
}

fn request_body(op: &Op, b: &Body) -> Value {
    let mut media = consumes(op);
    media.sort_unstable();
    let content: Map<String, Value> = media
        .into_iter()
        .map(|m| (m.to_owned(), json!({"schema": schema(&b.payload)})))
        .collect();
    let mut v = json!({"content": content});
    if b.required {
        v["required"] = json!(true);
    }
    v
}

/// Keys in upstream's order (kube-openapi's `Operation` fields, then extensions); media type
/// maps sorted, as Go writes maps.
fn operation(op: &Op) -> Value {
    let responses: Map<String, Value> = op
        .responses
        .iter()
        .map(|r| {
            let mut v = json!({"description": r.description});
            if let Some(p) = &r.payload {
                let mut media = produces(op.media);
                media.sort_unstable();
                let content: Map<String, Value> = media
                    .into_iter()
                    .map(|m| (m.to_owned(), json!({"schema": schema(p)})))
                    .collect();
                v["content"] = Value::Object(content);
            }
            (r.code.to_owned(), v)
        })
        .collect();
    let mut v = json!({
        "tags": [op.tag],
        "description": op.description,
        "operationId": op.id,
    });
    if !op.params.is_empty() {
        v["parameters"] = op.params.iter().map(param).collect();
    }
    if let Some(b) = &op.body {
        v["requestBody"] = request_body(op, b);
    }
    v["responses"] = Value::Object(responses);
    super::extensions(op, &mut v);
    if let Some((group, version, kind)) = &op.gvk {
        v["x-kubernetes-group-version-kind"] =
            json!({"group": group, "version": version, "kind": kind});
    }
    v
}
