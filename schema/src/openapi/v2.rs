//! Rendering the model as an OpenAPI v2 (swagger 2.0) document, shaped like upstream's
//! `/openapi/v2`.

use serde_json::{json, Map, Value};

use super::model::{Body, GroupVersion, Media, Op, PathItem, Payload, PATCH_MEDIA};
use super::params::{Param, ParamType};
use super::{closure, security_scheme};
use crate::Schemas;

const REF: &str = "#/definitions/";

pub(crate) fn render(schemas: &Schemas, gvs: &[GroupVersion]) -> Value {
    let mut paths = Map::new();
    for item in gvs.iter().flat_map(|gv| &gv.paths) {
        paths.insert(item.path.clone(), path_item(item));
    }
    let paths = Value::Object(paths);
    let extra: Vec<(&str, &Value)> = gvs
        .iter()
        .flat_map(|gv| &gv.extra_defs)
        .map(|d| (d.name.as_str(), &d.v2))
        .collect();
    let definitions: Map<String, Value> = closure(schemas, &paths, &extra).into_iter().collect();
    json!({
        "definitions": definitions,
        "info": schemas.defs.info,
        "paths": paths,
        "security": [{"BearerToken": []}],
        "securityDefinitions": {"BearerToken": security_scheme()},
        "swagger": "2.0",
    })
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

pub(crate) fn type_name(ty: ParamType) -> &'static str {
    match ty {
        ParamType::String => "string",
        ParamType::Integer => "integer",
        ParamType::Boolean => "boolean",
    }
}

fn param(p: &Param) -> Value {
    let mut v = json!({
        "description": p.description,
        "in": if p.in_path { "path" } else { "query" },
        "name": p.name,
        "type": type_name(p.ty),
        "uniqueItems": true,
    });
    if p.in_path {
        v["required"] = json!(true);
    }
    v
}

fn schema(payload: &Payload) -> Value {
    match payload {
        Payload::Def(name) => json!({"$ref": format!("{REF}{name}")}),
        Payload::Text => json!({"type": "string"}),
    }
}

fn body(b: &Body) -> Value {
    let mut v = json!({"in": "body", "name": "body", "schema": schema(&b.payload)});
    if b.required {
        v["required"] = json!(true);
    }
    v
}

/// The media types an operation produces, upstream's order.
pub(crate) fn produces(media: Media) -> Vec<&'static str> {
    let object = [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
    ];
    match media {
        Media::Object => object.to_vec(),
        Media::Stream => object
            .into_iter()
            .chain([
                "application/json;stream=watch",
                "application/vnd.kubernetes.protobuf;stream=watch",
            ])
            .collect(),
        Media::Custom => super::crd::MEDIA.to_vec(),
        Media::Text => vec![
            "text/plain",
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ],
    }
}

/// The media types an operation consumes: patch types for a PATCH, anything otherwise; a
/// custom resource's operations (all of them, also those without a body) JSON and YAML.
pub(crate) fn consumes(op: &Op) -> Vec<&'static str> {
    let patch = op.body.as_ref().is_some_and(|b| b.patch);
    match (op.media, patch) {
        (Media::Custom, true) => super::crd::PATCH_MEDIA.to_vec(),
        (Media::Custom, false) => super::crd::MEDIA.to_vec(),
        (_, true) => PATCH_MEDIA.to_vec(),
        (_, false) => vec!["*/*"],
    }
}

fn operation(op: &Op) -> Value {
    let mut params: Vec<Value> = op.body.iter().map(body).collect();
    params.extend(op.params.iter().map(param));
    let consumes = consumes(op);
    let responses: Map<String, Value> = op
        .responses
        .iter()
        .map(|r| {
            let mut v = json!({"description": r.description});
            if let Some(p) = &r.payload {
                v["schema"] = schema(p);
            }
            (r.code.to_owned(), v)
        })
        .collect();
    let mut v = json!({
        "consumes": consumes,
        "description": op.description,
        "operationId": op.id,
        "produces": produces(op.media),
        "responses": responses,
        "schemes": ["https"],
        "tags": [op.tag],
    });
    if !params.is_empty() {
        v["parameters"] = Value::Array(params);
    }
    super::extensions(op, &mut v);
    v
}
