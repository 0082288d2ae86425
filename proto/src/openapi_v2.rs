//! `/openapi/v2` in protobuf: the JSON (swagger 2.0) document converted into gnostic's
//! `openapi.v2.Document` (vendored `k8s/github.com/google/gnostic-models/openapiv2/
//! OpenAPIv2.proto`), which is what client-go's `OpenAPISchema()` requests and kubectl's
//! client-side validation and `explain --output=plaintext-openapiv2` read.
//!
//! Upstream (kube-openapi's handler) parses its JSON document with gnostic's compiler and
//! marshals the message; this module does the same conversion, rule for rule:
//! - objects keep their keys in document order (definitions, properties, paths, responses);
//! - keys a message does not define are an error, except `x-` keys, which become
//!   `vendor_extension` entries whose value is the YAML text of the JSON value (module `yaml`),
//!   as are `default`, `enum` and `example` values (gnostic's `Any`);
//! - required keys and enumerated values (`in`, `type`, `collectionFormat`, `schemes`...) are
//!   checked as gnostic checks them; a string field also takes an integer (its text) or null
//!   (empty), an integer field only an integer, a number field an integer or a float;
//! - a one-of is decided as gnostic's "last alternative that parses" rule decides it: a
//!   parameter by its `in`, a `$ref` object as a JSON reference, a `type: file` response schema
//!   as a file schema, `additionalProperties` by being an object or a boolean, a security
//!   definition by `type` (and `flow` for oauth2).
//!
//! Where gnostic would fail, so does [`encode_document`], and the server answers 503 as
//! upstream does. Deliberate difference: gnostic accepts a scalar where it expects an object
//! (reading it as an empty object); this module rejects it.

use std::fmt;

use prost::Message as _;
use serde_json::{Map, Value};

use crate::encode::json_kind;
use crate::yaml::to_yaml;
use crate::ProtoError;

/// The messages generated from gnostic's `OpenAPIv2.proto` (package `openapi.v2`).
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod gnostic {
    include!(concat!(env!("OUT_DIR"), "/openapi.v2.rs"));
}

use gnostic::*;

type Result<T> = std::result::Result<T, ProtoError>;

/// Converts the JSON form of `/openapi/v2` into the protobuf encoding of gnostic's `Document`.
/// Nesting is bounded by the JSON parser's depth limit (128), which bounds the recursion here.
pub fn encode_document(json: &[u8]) -> Result<Vec<u8>> {
    let value: Value = serde_json::from_slice(json)
        .map_err(|e| fail(format_args!("the OpenAPI v2 document is not JSON: {e}")))?;
    Ok(document(&value)?.encode_to_vec())
}

/// The gnostic `Document` of a parsed swagger 2.0 document.
fn document(v: &Value) -> Result<Document> {
    let f = Fields::of(
        v,
        &[
            "basePath",
            "consumes",
            "definitions",
            "externalDocs",
            "host",
            "info",
            "parameters",
            "paths",
            "produces",
            "responses",
            "schemes",
            "security",
            "securityDefinitions",
            "swagger",
            "tags",
        ],
        &["info", "paths", "swagger"],
    )?;
    Ok(Document {
        swagger: f.string_in("swagger", &["2.0"])?,
        info: f.message("info", info)?,
        host: f.string("host")?,
        base_path: f.string("basePath")?,
        schemes: f.strings_in("schemes", SCHEMES)?,
        consumes: f.strings("consumes")?,
        produces: f.strings("produces")?,
        paths: f.message("paths", paths)?,
        definitions: f.message("definitions", |v| {
            Ok(Definitions {
                additional_properties: named(v, schema, |name, value| NamedSchema { name, value })?,
            })
        })?,
        parameters: f.message("parameters", |v| {
            Ok(ParameterDefinitions {
                additional_properties: named(v, parameter, |name, value| NamedParameter {
                    name,
                    value,
                })?,
            })
        })?,
        responses: f.message("responses", |v| {
            Ok(ResponseDefinitions {
                additional_properties: named(v, response, |name, value| NamedResponse {
                    name,
                    value,
                })?,
            })
        })?,
        security: f.messages("security", security_requirement)?,
        security_definitions: f.message("securityDefinitions", |v| {
            Ok(SecurityDefinitions {
                additional_properties: named(v, security_definitions_item, |name, value| {
                    NamedSecurityDefinitionsItem { name, value }
                })?,
            })
        })?,
        tags: f.messages("tags", tag)?,
        external_docs: f.message("externalDocs", external_docs)?,
        vendor_extension: f.extensions(),
    })
}

const SCHEMES: &[&str] = &["http", "https", "ws", "wss"];
const PRIMITIVE_TYPES: &[&str] = &["string", "number", "integer", "boolean", "array"];
const COLLECTION_FORMATS: &[&str] = &["csv", "ssv", "tsv", "pipes"];
const COLLECTION_FORMATS_MULTI: &[&str] = &["csv", "ssv", "tsv", "pipes", "multi"];

fn fail(msg: impl fmt::Display) -> ProtoError {
    ProtoError::Encode(msg.to_string())
}

/// gnostic's `Any`: the YAML text of the value.
fn any(v: &Value) -> Any {
    Any {
        value: None,
        yaml: to_yaml(v),
    }
}

/// A string field: a string, an integer's text, or empty for null (gnostic's
/// `StringForScalarNode`).
fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Null => Some(String::new()),
        _ => None,
    }
}

/// The entries of a JSON object read as a gnostic map (`additional_properties` of named
/// values), in document order.
fn named<T, N>(
    v: &Value,
    read: impl Fn(&Value) -> Result<T>,
    pair: impl Fn(String, Option<T>) -> N,
) -> Result<Vec<N>> {
    let m = v
        .as_object()
        .ok_or_else(|| fail(format_args!("expected an object, found {}", json_kind(v))))?;
    m.iter()
        .map(|(k, v)| Ok(pair(k.clone(), Some(read(v).map_err(|e| e.within(k))?))))
        .collect()
}

/// A JSON object read as one gnostic message.
struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    /// The object `v`, whose keys must be among `allowed` or start with `x-`, and which must
    /// have every key of `required`.
    fn of(v: &'a Value, allowed: &[&str], required: &[&str]) -> Result<Fields<'a>> {
        let m = v
            .as_object()
            .ok_or_else(|| fail(format_args!("expected an object, found {}", json_kind(v))))?;
        if let Some(k) = m
            .keys()
            .find(|k| !k.starts_with("x-") && !allowed.contains(&k.as_str()))
        {
            return Err(fail(format_args!("unknown field {k:?}")));
        }
        if let Some(k) = required.iter().find(|k| !m.contains_key(**k)) {
            return Err(fail(format_args!("missing required field {k:?}")));
        }
        Ok(Fields(m))
    }

    /// The object `v`, whatever its keys.
    fn open(v: &'a Value) -> Result<Fields<'a>> {
        Fields::of(v, &[], &[]).or_else(|e| match v {
            Value::Object(m) => Ok(Fields(m)),
            _ => Err(e),
        })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key)
    }

    fn mismatch(&self, key: &str, want: &str) -> ProtoError {
        let v = &self.0[key];
        fail(format_args!("expected {want}, found {}", json_kind(v))).within(key)
    }

    fn string(&self, key: &str) -> Result<String> {
        match self.get(key) {
            None => Ok(String::new()),
            Some(v) => scalar_string(v).ok_or_else(|| self.mismatch(key, "a string")),
        }
    }

    /// A string that must be one of `allowed` when present.
    fn string_in(&self, key: &str, allowed: &[&str]) -> Result<String> {
        let s = self.string(key)?;
        if self.get(key).is_some() && !allowed.contains(&s.as_str()) {
            return Err(fail(format_args!(
                "unexpected value {s:?}, want one of {allowed:?}"
            ))
            .within(key));
        }
        Ok(s)
    }

    fn boolean(&self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.mismatch(key, "a boolean")),
        }
    }

    fn int(&self, key: &str) -> Result<i64> {
        match self.get(key) {
            None => Ok(0),
            Some(v) => v.as_i64().ok_or_else(|| self.mismatch(key, "an integer")),
        }
    }

    fn float(&self, key: &str) -> Result<f64> {
        match self.get(key) {
            None => Ok(0.0),
            Some(v) => v.as_f64().ok_or_else(|| self.mismatch(key, "a number")),
        }
    }

    /// A list of strings; items that are not strings (nor integers, nor null) are skipped, as
    /// gnostic skips them.
    fn strings(&self, key: &str) -> Result<Vec<String>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items.iter().filter_map(scalar_string).collect()),
            Some(_) => Err(self.mismatch(key, "an array")),
        }
    }

    /// A list of strings, each of which must be one of `allowed`.
    fn strings_in(&self, key: &str, allowed: &[&str]) -> Result<Vec<String>> {
        let items = self.strings(key)?;
        if let Some(s) = items.iter().find(|s| !allowed.contains(&s.as_str())) {
            return Err(fail(format_args!(
                "unexpected value {s:?}, want one of {allowed:?}"
            ))
            .within(key));
        }
        Ok(items)
    }

    fn any(&self, key: &str) -> Option<Any> {
        self.get(key).map(any)
    }

    fn anys(&self, key: &str) -> Result<Vec<Any>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items.iter().map(any).collect()),
            Some(_) => Err(self.mismatch(key, "an array")),
        }
    }

    fn message<T>(&self, key: &str, read: impl Fn(&Value) -> Result<T>) -> Result<Option<T>> {
        self.get(key)
            .map(|v| read(v).map_err(|e| e.within(key)))
            .transpose()
    }

    fn messages<T>(&self, key: &str, read: impl Fn(&Value) -> Result<T>) -> Result<Vec<T>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| read(v).map_err(|e| e.within(format_args!("[{i}]")).within(key)))
                .collect(),
            Some(_) => Err(self.mismatch(key, "an array")),
        }
    }

    /// The `x-` keys, in document order.
    fn extensions(&self) -> Vec<NamedAny> {
        self.0
            .iter()
            .filter(|(k, _)| k.starts_with("x-"))
            .map(|(k, v)| NamedAny {
                name: k.clone(),
                value: Some(any(v)),
            })
            .collect()
    }
}

fn info(v: &Value) -> Result<Info> {
    let f = Fields::of(
        v,
        &[
            "contact",
            "description",
            "license",
            "termsOfService",
            "title",
            "version",
        ],
        &["title", "version"],
    )?;
    Ok(Info {
        title: f.string("title")?,
        version: f.string("version")?,
        description: f.string("description")?,
        terms_of_service: f.string("termsOfService")?,
        contact: f.message("contact", |v| {
            let f = Fields::of(v, &["email", "name", "url"], &[])?;
            Ok(Contact {
                name: f.string("name")?,
                url: f.string("url")?,
                email: f.string("email")?,
                vendor_extension: f.extensions(),
            })
        })?,
        license: f.message("license", |v| {
            let f = Fields::of(v, &["name", "url"], &["name"])?;
            Ok(License {
                name: f.string("name")?,
                url: f.string("url")?,
                vendor_extension: f.extensions(),
            })
        })?,
        vendor_extension: f.extensions(),
    })
}

fn external_docs(v: &Value) -> Result<ExternalDocs> {
    let f = Fields::of(v, &["description", "url"], &["url"])?;
    Ok(ExternalDocs {
        description: f.string("description")?,
        url: f.string("url")?,
        vendor_extension: f.extensions(),
    })
}

fn tag(v: &Value) -> Result<Tag> {
    let f = Fields::of(v, &["description", "externalDocs", "name"], &["name"])?;
    Ok(Tag {
        name: f.string("name")?,
        description: f.string("description")?,
        external_docs: f.message("externalDocs", external_docs)?,
        vendor_extension: f.extensions(),
    })
}

/// `paths`: `/...` keys are path items, `x-` keys extensions, anything else an error.
fn paths(v: &Value) -> Result<Paths> {
    let m = v
        .as_object()
        .ok_or_else(|| fail(format_args!("expected an object, found {}", json_kind(v))))?;
    let mut out = Paths::default();
    for (k, v) in m {
        if k.starts_with("x-") {
            out.vendor_extension.push(NamedAny {
                name: k.clone(),
                value: Some(any(v)),
            });
        } else if k.starts_with('/') {
            out.path.push(NamedPathItem {
                name: k.clone(),
                value: Some(path_item(v).map_err(|e| e.within(k))?),
            });
        } else {
            return Err(fail(format_args!("unknown field {k:?}")));
        }
    }
    Ok(out)
}

fn path_item(v: &Value) -> Result<PathItem> {
    let f = Fields::of(
        v,
        &[
            "$ref",
            "delete",
            "get",
            "head",
            "options",
            "parameters",
            "patch",
            "post",
            "put",
        ],
        &[],
    )?;
    Ok(PathItem {
        r#ref: f.string("$ref")?,
        get: f.message("get", operation)?,
        put: f.message("put", operation)?,
        post: f.message("post", operation)?,
        delete: f.message("delete", operation)?,
        options: f.message("options", operation)?,
        head: f.message("head", operation)?,
        patch: f.message("patch", operation)?,
        parameters: f.messages("parameters", parameters_item)?,
        vendor_extension: f.extensions(),
    })
}

fn operation(v: &Value) -> Result<Operation> {
    let f = Fields::of(
        v,
        &[
            "consumes",
            "deprecated",
            "description",
            "externalDocs",
            "operationId",
            "parameters",
            "produces",
            "responses",
            "schemes",
            "security",
            "summary",
            "tags",
        ],
        &["responses"],
    )?;
    Ok(Operation {
        tags: f.strings("tags")?,
        summary: f.string("summary")?,
        description: f.string("description")?,
        external_docs: f.message("externalDocs", external_docs)?,
        operation_id: f.string("operationId")?,
        produces: f.strings("produces")?,
        consumes: f.strings("consumes")?,
        parameters: f.messages("parameters", parameters_item)?,
        responses: f.message("responses", responses)?,
        schemes: f.strings_in("schemes", SCHEMES)?,
        deprecated: f.boolean("deprecated")?,
        security: f.messages("security", security_requirement)?,
        vendor_extension: f.extensions(),
    })
}

fn json_reference(v: &Value) -> Result<JsonReference> {
    let f = Fields::open(v)?; // gnostic checks no other keys here
    if f.get("$ref").is_none() {
        return Err(fail("missing required field \"$ref\""));
    }
    Ok(JsonReference {
        r#ref: f.string("$ref")?,
        description: f.string("description")?,
    })
}

fn has_ref(v: &Value) -> bool {
    v.get("$ref").is_some()
}

fn parameters_item(v: &Value) -> Result<ParametersItem> {
    let oneof = if has_ref(v) {
        parameters_item::Oneof::JsonReference(json_reference(v)?)
    } else {
        parameters_item::Oneof::Parameter(parameter(v)?)
    };
    Ok(ParametersItem { oneof: Some(oneof) })
}

/// A parameter, by its `in`.
fn parameter(v: &Value) -> Result<Parameter> {
    use non_body_parameter::Oneof as O;
    const NON_BODY_REQUIRED: &[&str] = &["in", "name", "type"];
    let location = v.get("in").and_then(Value::as_str).unwrap_or("");
    let non_body = |sub| {
        Ok(parameter::Oneof::NonBodyParameter(NonBodyParameter {
            oneof: Some(sub),
        }))
    };
    let oneof = match location {
        "body" => Ok(parameter::Oneof::BodyParameter(body_parameter(v)?)),
        "header" => non_body(O::HeaderParameterSubSchema(header_parameter(&Fields::of(
            v,
            NON_BODY_KEYS,
            NON_BODY_REQUIRED,
        )?)?)),
        "path" => non_body(O::PathParameterSubSchema(path_parameter(&Fields::of(
            v,
            NON_BODY_KEYS,
            &["in", "name", "type", "required"],
        )?)?)),
        "query" => non_body(O::QueryParameterSubSchema(query_parameter(&Fields::of(
            v,
            NON_BODY_KEYS_QUERY,
            NON_BODY_REQUIRED,
        )?)?)),
        "formData" => non_body(O::FormDataParameterSubSchema(form_data_parameter(
            &Fields::of(v, NON_BODY_KEYS_QUERY, NON_BODY_REQUIRED)?,
        )?)),
        other => Err(fail(format_args!(
            "unexpected parameter location {other:?}, want one of body, header, formData, query, path"
        ))
        .within("in")),
    }?;
    Ok(Parameter { oneof: Some(oneof) })
}

fn body_parameter(v: &Value) -> Result<BodyParameter> {
    let f = Fields::of(
        v,
        &["description", "in", "name", "required", "schema"],
        &["in", "name", "schema"],
    )?;
    Ok(BodyParameter {
        description: f.string("description")?,
        name: f.string("name")?,
        r#in: f.string_in("in", &["body"])?,
        required: f.boolean("required")?,
        schema: f.message("schema", schema)?,
        vendor_extension: f.extensions(),
    })
}

/// The keys of a header or path parameter; query and form parameters add `allowEmptyValue`.
const NON_BODY_KEYS: &[&str] = &[
    "collectionFormat",
    "default",
    "description",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "format",
    "in",
    "items",
    "maxItems",
    "maxLength",
    "maximum",
    "minItems",
    "minLength",
    "minimum",
    "multipleOf",
    "name",
    "pattern",
    "required",
    "type",
    "uniqueItems",
];
const NON_BODY_KEYS_QUERY: &[&str] = &[
    "allowEmptyValue",
    "collectionFormat",
    "default",
    "description",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "format",
    "in",
    "items",
    "maxItems",
    "maxLength",
    "maximum",
    "minItems",
    "minLength",
    "minimum",
    "multipleOf",
    "name",
    "pattern",
    "required",
    "type",
    "uniqueItems",
];
/// The keys of primitive items (of a non-body parameter, a header or other items).
const ITEMS_KEYS: &[&str] = &[
    "collectionFormat",
    "default",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "format",
    "items",
    "maxItems",
    "maxLength",
    "maximum",
    "minItems",
    "minLength",
    "minimum",
    "multipleOf",
    "pattern",
    "type",
    "uniqueItems",
];
/// The keys of a response header.
const HEADER_KEYS: &[&str] = &[
    "collectionFormat",
    "default",
    "description",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "format",
    "items",
    "maxItems",
    "maxLength",
    "maximum",
    "minItems",
    "minLength",
    "minimum",
    "multipleOf",
    "pattern",
    "type",
    "uniqueItems",
];

/// The validation fields every primitive-typed message shares, plus the listed extra fields.
macro_rules! primitive {
    ($ty:ident, $f:expr, types: $types:expr, collection: $collection:expr $(, $field:ident: $value:expr)* $(,)?) => {
        $ty {
            r#type: $f.string_in("type", $types)?,
            format: $f.string("format")?,
            // Boxed in PrimitivesItems (it nests), not elsewhere.
            items: $f.message("items", primitives_items)?.map(Into::into),
            collection_format: $f.string_in("collectionFormat", $collection)?,
            default: $f.any("default"),
            maximum: $f.float("maximum")?,
            exclusive_maximum: $f.boolean("exclusiveMaximum")?,
            minimum: $f.float("minimum")?,
            exclusive_minimum: $f.boolean("exclusiveMinimum")?,
            max_length: $f.int("maxLength")?,
            min_length: $f.int("minLength")?,
            pattern: $f.string("pattern")?,
            max_items: $f.int("maxItems")?,
            min_items: $f.int("minItems")?,
            unique_items: $f.boolean("uniqueItems")?,
            r#enum: $f.anys("enum")?,
            multiple_of: $f.float("multipleOf")?,
            vendor_extension: $f.extensions(),
            $($field: $value,)*
        }
    };
}

fn header_parameter(f: &Fields) -> Result<HeaderParameterSubSchema> {
    Ok(primitive!(HeaderParameterSubSchema, f,
        types: PRIMITIVE_TYPES, collection: COLLECTION_FORMATS,
        required: f.boolean("required")?,
        r#in: f.string_in("in", &["header"])?,
        description: f.string("description")?,
        name: f.string("name")?,
    ))
}

fn path_parameter(f: &Fields) -> Result<PathParameterSubSchema> {
    Ok(primitive!(PathParameterSubSchema, f,
        types: PRIMITIVE_TYPES, collection: COLLECTION_FORMATS,
        required: f.boolean("required")?,
        r#in: f.string_in("in", &["path"])?,
        description: f.string("description")?,
        name: f.string("name")?,
    ))
}

fn query_parameter(f: &Fields) -> Result<QueryParameterSubSchema> {
    Ok(primitive!(QueryParameterSubSchema, f,
        types: PRIMITIVE_TYPES, collection: COLLECTION_FORMATS_MULTI,
        required: f.boolean("required")?,
        r#in: f.string_in("in", &["query"])?,
        description: f.string("description")?,
        name: f.string("name")?,
        allow_empty_value: f.boolean("allowEmptyValue")?,
    ))
}

fn form_data_parameter(f: &Fields) -> Result<FormDataParameterSubSchema> {
    Ok(primitive!(FormDataParameterSubSchema, f,
        types: &["string", "number", "boolean", "integer", "array", "file"],
        collection: COLLECTION_FORMATS_MULTI,
        required: f.boolean("required")?,
        r#in: f.string_in("in", &["formData"])?,
        description: f.string("description")?,
        name: f.string("name")?,
        allow_empty_value: f.boolean("allowEmptyValue")?,
    ))
}

fn primitives_items(v: &Value) -> Result<PrimitivesItems> {
    let f = Fields::of(v, ITEMS_KEYS, &[])?;
    Ok(primitive!(PrimitivesItems, f,
        types: PRIMITIVE_TYPES, collection: COLLECTION_FORMATS))
}

fn header(v: &Value) -> Result<Header> {
    let f = Fields::of(v, HEADER_KEYS, &["type"])?;
    Ok(primitive!(Header, f,
        types: PRIMITIVE_TYPES, collection: COLLECTION_FORMATS,
        description: f.string("description")?,
    ))
}

/// `responses`: three-digit codes and `default` are responses, `x-` keys extensions.
fn responses(v: &Value) -> Result<Responses> {
    let m = v
        .as_object()
        .ok_or_else(|| fail(format_args!("expected an object, found {}", json_kind(v))))?;
    let mut out = Responses::default();
    for (k, v) in m {
        let is_code = k == "default" || (k.len() == 3 && k.bytes().all(|b| b.is_ascii_digit()));
        if is_code {
            let oneof = if has_ref(v) {
                response_value::Oneof::JsonReference(json_reference(v).map_err(|e| e.within(k))?)
            } else {
                response_value::Oneof::Response(response(v).map_err(|e| e.within(k))?)
            };
            out.response_code.push(NamedResponseValue {
                name: k.clone(),
                value: Some(ResponseValue { oneof: Some(oneof) }),
            });
        } else if k.starts_with("x-") {
            out.vendor_extension.push(NamedAny {
                name: k.clone(),
                value: Some(any(v)),
            });
        } else {
            return Err(fail(format_args!("unknown field {k:?}")));
        }
    }
    Ok(out)
}

fn response(v: &Value) -> Result<Response> {
    let f = Fields::of(
        v,
        &["description", "examples", "headers", "schema"],
        &["description"],
    )?;
    Ok(Response {
        description: f.string("description")?,
        schema: f.message("schema", schema_item)?,
        headers: f.message("headers", |v| {
            Ok(Headers {
                additional_properties: named(v, header, |name, value| NamedHeader { name, value })?,
            })
        })?,
        examples: f.message("examples", |v| {
            Ok(Examples {
                additional_properties: named(
                    v,
                    |v| Ok(any(v)),
                    |name, value| NamedAny { name, value },
                )?,
            })
        })?,
        vendor_extension: f.extensions(),
    })
}

const FILE_SCHEMA_KEYS: &[&str] = &[
    "default",
    "description",
    "example",
    "externalDocs",
    "format",
    "readOnly",
    "required",
    "title",
    "type",
];

/// A response schema: a file schema when it reads as one (`type: file` and only file schema
/// keys), else a schema.
fn schema_item(v: &Value) -> Result<SchemaItem> {
    let is_file = v.get("type").and_then(Value::as_str) == Some("file")
        && Fields::of(v, FILE_SCHEMA_KEYS, &["type"]).is_ok();
    let oneof = if is_file {
        schema_item::Oneof::FileSchema(file_schema(v)?)
    } else {
        schema_item::Oneof::Schema(schema(v)?)
    };
    Ok(SchemaItem { oneof: Some(oneof) })
}

fn file_schema(v: &Value) -> Result<FileSchema> {
    let f = Fields::of(v, FILE_SCHEMA_KEYS, &["type"])?;
    Ok(FileSchema {
        format: f.string("format")?,
        title: f.string("title")?,
        description: f.string("description")?,
        default: f.any("default"),
        required: f.strings("required")?,
        r#type: f.string_in("type", &["file"])?,
        read_only: f.boolean("readOnly")?,
        external_docs: f.message("externalDocs", external_docs)?,
        example: f.any("example"),
        vendor_extension: f.extensions(),
    })
}

fn schema(v: &Value) -> Result<Schema> {
    let f = Fields::of(
        v,
        &[
            "$ref",
            "additionalProperties",
            "allOf",
            "default",
            "description",
            "discriminator",
            "enum",
            "example",
            "exclusiveMaximum",
            "exclusiveMinimum",
            "externalDocs",
            "format",
            "items",
            "maxItems",
            "maxLength",
            "maxProperties",
            "maximum",
            "minItems",
            "minLength",
            "minProperties",
            "minimum",
            "multipleOf",
            "pattern",
            "properties",
            "readOnly",
            "required",
            "title",
            "type",
            "uniqueItems",
            "xml",
        ],
        &[],
    )?;
    Ok(Schema {
        r#ref: f.string("$ref")?,
        format: f.string("format")?,
        title: f.string("title")?,
        description: f.string("description")?,
        default: f.any("default"),
        multiple_of: f.float("multipleOf")?,
        maximum: f.float("maximum")?,
        exclusive_maximum: f.boolean("exclusiveMaximum")?,
        minimum: f.float("minimum")?,
        exclusive_minimum: f.boolean("exclusiveMinimum")?,
        max_length: f.int("maxLength")?,
        min_length: f.int("minLength")?,
        pattern: f.string("pattern")?,
        max_items: f.int("maxItems")?,
        min_items: f.int("minItems")?,
        unique_items: f.boolean("uniqueItems")?,
        max_properties: f.int("maxProperties")?,
        min_properties: f.int("minProperties")?,
        required: f.strings("required")?,
        r#enum: f.anys("enum")?,
        additional_properties: f
            .message("additionalProperties", additional_properties)?
            .map(Box::new),
        r#type: f.message("type", type_item)?,
        items: f.message("items", |v| {
            Ok(ItemsItem {
                schema: vec![schema(v)?],
            })
        })?,
        all_of: f.messages("allOf", schema)?,
        properties: f.message("properties", |v| {
            Ok(Properties {
                additional_properties: named(v, schema, |name, value| NamedSchema { name, value })?,
            })
        })?,
        discriminator: f.string("discriminator")?,
        read_only: f.boolean("readOnly")?,
        xml: f.message("xml", xml)?,
        external_docs: f.message("externalDocs", external_docs)?,
        example: f.any("example"),
        vendor_extension: f.extensions(),
    })
}

fn additional_properties(v: &Value) -> Result<AdditionalPropertiesItem> {
    let oneof = match v {
        Value::Bool(b) => additional_properties_item::Oneof::Boolean(*b),
        _ => additional_properties_item::Oneof::Schema(Box::new(schema(v)?)),
    };
    Ok(AdditionalPropertiesItem { oneof: Some(oneof) })
}

/// `type`: one name, or a list of names.
fn type_item(v: &Value) -> Result<TypeItem> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".to_owned()),
        _ => None,
    };
    let value = match v {
        Value::Array(items) => items
            .iter()
            .map(|i| text(i).ok_or_else(|| fail("expected a list of type names")))
            .collect::<Result<_>>()?,
        _ => vec![text(v).ok_or_else(|| fail("expected a type name"))?],
    };
    Ok(TypeItem { value })
}

fn xml(v: &Value) -> Result<Xml> {
    let f = Fields::of(
        v,
        &["attribute", "name", "namespace", "prefix", "wrapped"],
        &[],
    )?;
    Ok(Xml {
        name: f.string("name")?,
        namespace: f.string("namespace")?,
        prefix: f.string("prefix")?,
        attribute: f.boolean("attribute")?,
        wrapped: f.boolean("wrapped")?,
        vendor_extension: f.extensions(),
    })
}

/// A security requirement: scheme name → scopes.
fn security_requirement(v: &Value) -> Result<SecurityRequirement> {
    let scopes = |v: &Value| match v {
        Value::Array(items) => Ok(StringArray {
            value: items
                .iter()
                .map(|i| scalar_string(i).unwrap_or_default())
                .collect(),
        }),
        _ => Ok(StringArray::default()),
    };
    Ok(SecurityRequirement {
        additional_properties: named(v, scopes, |name, value| NamedStringArray { name, value })?,
    })
}

fn security_definitions_item(v: &Value) -> Result<SecurityDefinitionsItem> {
    use security_definitions_item::Oneof as O;
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    let flow = v.get("flow").and_then(Value::as_str).unwrap_or("");
    let oneof = match (ty, flow) {
        ("basic", _) => {
            let f = Fields::of(v, &["description", "type"], &["type"])?;
            O::BasicAuthenticationSecurity(BasicAuthenticationSecurity {
                r#type: f.string("type")?,
                description: f.string("description")?,
                vendor_extension: f.extensions(),
            })
        }
        ("apiKey", _) => {
            let f = Fields::of(
                v,
                &["description", "in", "name", "type"],
                &["in", "name", "type"],
            )?;
            O::ApiKeySecurity(ApiKeySecurity {
                r#type: f.string("type")?,
                name: f.string("name")?,
                r#in: f.string_in("in", &["header", "query"])?,
                description: f.string("description")?,
                vendor_extension: f.extensions(),
            })
        }
        ("oauth2", "implicit") => {
            let f = Fields::of(
                v,
                &["authorizationUrl", "description", "flow", "scopes", "type"],
                &["authorizationUrl", "flow", "type"],
            )?;
            O::Oauth2ImplicitSecurity(Oauth2ImplicitSecurity {
                r#type: f.string("type")?,
                flow: f.string("flow")?,
                scopes: f.message("scopes", oauth2_scopes)?,
                authorization_url: f.string("authorizationUrl")?,
                description: f.string("description")?,
                vendor_extension: f.extensions(),
            })
        }
        ("oauth2", "password") => {
            let f = Fields::of(
                v,
                &["description", "flow", "scopes", "tokenUrl", "type"],
                &["flow", "tokenUrl", "type"],
            )?;
            O::Oauth2PasswordSecurity(Oauth2PasswordSecurity {
                r#type: f.string("type")?,
                flow: f.string("flow")?,
                scopes: f.message("scopes", oauth2_scopes)?,
                token_url: f.string("tokenUrl")?,
                description: f.string("description")?,
                vendor_extension: f.extensions(),
            })
        }
        ("oauth2", "application") => {
            let f = Fields::of(
                v,
                &["description", "flow", "scopes", "tokenUrl", "type"],
                &["flow", "tokenUrl", "type"],
            )?;
            O::Oauth2ApplicationSecurity(Oauth2ApplicationSecurity {
                r#type: f.string("type")?,
                flow: f.string("flow")?,
                scopes: f.message("scopes", oauth2_scopes)?,
                token_url: f.string("tokenUrl")?,
                description: f.string("description")?,
                vendor_extension: f.extensions(),
            })
        }
        ("oauth2", "accessCode") => {
            let f = Fields::of(
                v,
                &[
                    "authorizationUrl",
                    "description",
                    "flow",
                    "scopes",
                    "tokenUrl",
                    "type",
                ],
                &["authorizationUrl", "flow", "tokenUrl", "type"],
            )?;
            O::Oauth2AccessCodeSecurity(Oauth2AccessCodeSecurity {
                r#type: f.string("type")?,
                flow: f.string("flow")?,
                scopes: f.message("scopes", oauth2_scopes)?,
                authorization_url: f.string("authorizationUrl")?,
                token_url: f.string("tokenUrl")?,
                description: f.string("description")?,
                vendor_extension: f.extensions(),
            })
        }
        _ => {
            return Err(fail(format_args!(
                "unexpected security scheme type {ty:?} (flow {flow:?})"
            )))
        }
    };
    Ok(SecurityDefinitionsItem { oneof: Some(oneof) })
}

fn oauth2_scopes(v: &Value) -> Result<Oauth2Scopes> {
    let text = |v: &Value| scalar_string(v).ok_or_else(|| fail("expected a string"));
    Ok(Oauth2Scopes {
        additional_properties: named(v, text, |name, value| NamedString {
            name,
            value: value.unwrap_or_default(),
        })?,
    })
}
