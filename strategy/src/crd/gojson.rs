//! How upstream prints the internal apiextensions types inside a field error: Go's
//! `json.Marshal` of structs without JSON tags, so every field appears under its Go name in
//! declaration order, unset ones as `""`, `0`, `false` or `null`; maps with sorted keys;
//! strings HTML-escaped. Numbers decoded into `interface{}` print as integers when integral.
//!
//! Only what the CRD rules echo is laid out here: versions (with their schema, subresources,
//! columns and selectable fields), and a bare JSONSchemaProps.

use crate::gojson::string;
use serde_json::Value;

/// Field shapes of the internal types rendered here.
#[derive(Clone, Copy)]
enum S {
    Str,
    Bool,
    Int,
    /// `*int64`, `*float64`, `*string`, `*bool`: the value or `null`.
    Ptr,
    /// `*JSON` / `JSON` (`interface{}`): any value, `null` when unset.
    Any,
    /// `[]string`.
    Strs,
    /// `[]JSON`.
    Anys,
    /// `*JSONSchemaProps`.
    PropsPtr,
    /// `[]JSONSchemaProps`.
    PropsList,
    /// `map[string]JSONSchemaProps`.
    PropsMap,
    /// `*JSONSchemaPropsOrArray`.
    OrArray,
    /// `*JSONSchemaPropsOrBool`.
    OrBool,
    /// `JSONSchemaDependencies`.
    Deps,
    /// `*ExternalDocumentation`.
    Docs,
    /// `ValidationRules`.
    Rules,
}

const PROPS: &[(&str, &str, S)] = &[
    ("ID", "id", S::Str),
    ("Schema", "$schema", S::Str),
    ("Ref", "$ref", S::Ptr),
    ("Description", "description", S::Str),
    ("Type", "type", S::Str),
    ("Nullable", "nullable", S::Bool),
    ("Format", "format", S::Str),
    ("Title", "title", S::Str),
    ("Default", "default", S::Any),
    ("Maximum", "maximum", S::Ptr),
    ("ExclusiveMaximum", "exclusiveMaximum", S::Bool),
    ("Minimum", "minimum", S::Ptr),
    ("ExclusiveMinimum", "exclusiveMinimum", S::Bool),
    ("MaxLength", "maxLength", S::Ptr),
    ("MinLength", "minLength", S::Ptr),
    ("Pattern", "pattern", S::Str),
    ("MaxItems", "maxItems", S::Ptr),
    ("MinItems", "minItems", S::Ptr),
    ("UniqueItems", "uniqueItems", S::Bool),
    ("MultipleOf", "multipleOf", S::Ptr),
    ("Enum", "enum", S::Anys),
    ("MaxProperties", "maxProperties", S::Ptr),
    ("MinProperties", "minProperties", S::Ptr),
    ("Required", "required", S::Strs),
    ("Items", "items", S::OrArray),
    ("AllOf", "allOf", S::PropsList),
    ("OneOf", "oneOf", S::PropsList),
    ("AnyOf", "anyOf", S::PropsList),
    ("Not", "not", S::PropsPtr),
    ("Properties", "properties", S::PropsMap),
    ("AdditionalProperties", "additionalProperties", S::OrBool),
    ("PatternProperties", "patternProperties", S::PropsMap),
    ("Dependencies", "dependencies", S::Deps),
    ("AdditionalItems", "additionalItems", S::OrBool),
    ("Definitions", "definitions", S::PropsMap),
    ("ExternalDocs", "externalDocs", S::Docs),
    ("Example", "example", S::Any),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
        S::Ptr,
    ),
    (
        "XEmbeddedResource",
        "x-kubernetes-embedded-resource",
        S::Bool,
    ),
    ("XIntOrString", "x-kubernetes-int-or-string", S::Bool),
    ("XListMapKeys", "x-kubernetes-list-map-keys", S::Strs),
    ("XListType", "x-kubernetes-list-type", S::Ptr),
    ("XMapType", "x-kubernetes-map-type", S::Ptr),
    ("XValidations", "x-kubernetes-validations", S::Rules),
];

const RULE: &[(&str, &str, S)] = &[
    ("Rule", "rule", S::Str),
    ("Message", "message", S::Str),
    ("MessageExpression", "messageExpression", S::Str),
    ("Reason", "reason", S::Ptr),
    ("FieldPath", "fieldPath", S::Str),
    ("OptionalOldSelf", "optionalOldSelf", S::Ptr),
];

/// `ExternalDocumentation`.
const DOCS: &[(&str, &str, S)] = &[
    ("Description", "description", S::Str),
    ("URL", "url", S::Str),
];

/// `CustomResourceSubresourceScale`.
const SCALE: &[(&str, &str, S)] = &[
    ("SpecReplicasPath", "specReplicasPath", S::Str),
    ("StatusReplicasPath", "statusReplicasPath", S::Str),
    ("LabelSelectorPath", "labelSelectorPath", S::Ptr),
];

/// `CustomResourceColumnDefinition`.
const COLUMN: &[(&str, &str, S)] = &[
    ("Name", "name", S::Str),
    ("Type", "type", S::Str),
    ("Format", "format", S::Str),
    ("Description", "description", S::Str),
    ("Priority", "priority", S::Int),
    ("JSONPath", "jsonPath", S::Str),
];

/// `SelectableField`.
const SELECTABLE_FIELD: &[(&str, &str, S)] = &[("JSONPath", "jsonPath", S::Str)];

/// A JSON number as Go prints a decoded `float64`/`int64`: integral values without a fraction.
///
/// Not `keel_api::gofmt::json_float`: this prints integers and integral floats with all their
/// digits (`2^60` as `1152921504606846976`, Go: `1152921504606847000`) and other floats as
/// serde_json does (`1.5e300`, Go: `1.5e+300`). Kept so that no message changes; moving to
/// the shared encoder is a deliberate output change left for its own commit.
fn number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
        _ => n.to_string(),
    }
}

/// Any decoded JSON value as Go's `json.Marshal` prints an `interface{}`: sorted keys, numbers
/// by [`number`].
pub(crate) fn any(v: &Value, out: &mut String) {
    let style = keel_api::gofmt::JsonStyle {
        numbers: |out, n| out.push_str(&number(n)),
        escape: keel_api::gofmt::JsonEscape::PreGo122,
        sort_keys: true,
        depth_max: usize::MAX,
    };
    keel_api::gofmt::json_to(out, v, style);
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|x| !x.is_null())
}

fn shape(s: S, v: Option<&Value>, depth: usize, out: &mut String) {
    let v = present(v);
    match s {
        S::Str => out.push_str(&string(v.and_then(Value::as_str).unwrap_or(""))),
        S::Bool => out.push_str(if v.and_then(Value::as_bool).unwrap_or(false) {
            "true"
        } else {
            "false"
        }),
        S::Int => out.push_str(&v.and_then(Value::as_i64).unwrap_or(0).to_string()),
        S::Ptr | S::Any => match v {
            Some(x) => any(x, out),
            None => out.push_str("null"),
        },
        S::Strs | S::Anys => match v.and_then(Value::as_array) {
            Some(items) => any(&Value::Array(items.clone()), out),
            None => out.push_str("null"),
        },
        S::PropsPtr => match v {
            Some(_) => props(v, depth, out),
            None => out.push_str("null"),
        },
        S::PropsList => match v.and_then(Value::as_array) {
            Some(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    props(Some(x), depth, out);
                }
                out.push(']');
            }
            None => out.push_str("null"),
        },
        S::PropsMap | S::Deps => match v.and_then(Value::as_object) {
            Some(m) => {
                let escape = keel_api::gofmt::JsonEscape::PreGo122;
                keel_api::gofmt::json_object_to(out, m, escape, true, |out, x| {
                    if matches!(s, S::Deps) {
                        let (schema, list) = match x {
                            Value::Array(_) => (None, Some(x)),
                            other => (Some(other), None),
                        };
                        out.push_str("{\"Schema\":");
                        shape(S::PropsPtr, schema, depth, out);
                        out.push_str(",\"Property\":");
                        shape(S::Strs, list, depth, out);
                        out.push('}');
                    } else {
                        props(Some(x), depth, out);
                    }
                })
            }
            None => out.push_str("null"),
        },
        S::OrArray => match v {
            None => out.push_str("null"),
            Some(Value::Array(_)) => {
                out.push_str("{\"Schema\":null,\"JSONSchemas\":");
                shape(S::PropsList, v, depth, out);
                out.push('}');
            }
            Some(_) => {
                out.push_str("{\"Schema\":");
                props(v, depth, out);
                out.push_str(",\"JSONSchemas\":null}");
            }
        },
        S::OrBool => match v {
            None => out.push_str("null"),
            Some(Value::Bool(b)) => {
                out.push_str(if *b {
                    "{\"Allows\":true,\"Schema\":null}"
                } else {
                    "{\"Allows\":false,\"Schema\":null}"
                });
            }
            Some(_) => {
                out.push_str("{\"Allows\":true,\"Schema\":");
                props(v, depth, out);
                out.push('}');
            }
        },
        S::Docs => match v {
            None => out.push_str("null"),
            Some(d) => fields(DOCS, d, depth, out),
        },
        S::Rules => struct_list(RULE, v, depth, out),
    }
}

fn fields(layout: &[(&str, &str, S)], v: &Value, depth: usize, out: &mut String) {
    out.push('{');
    for (i, (go, json, s)) in layout.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&string(go));
        out.push(':');
        shape(*s, v.get(*json), depth, out);
    }
    out.push('}');
}

/// A `[]Struct` laid out by `layout`: `null` when unset or not a list.
fn struct_list(layout: &[(&str, &str, S)], v: Option<&Value>, depth: usize, out: &mut String) {
    match present(v).and_then(Value::as_array) {
        Some(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                fields(layout, x, depth, out);
            }
            out.push(']');
        }
        None => out.push_str("null"),
    }
}

/// A `JSONSchemaProps` value. Deeper than [`super::SCHEMA_DEPTH_MAX`] it prints as an empty
/// schema (upstream's decoder would have refused such a body long before).
fn props(v: Option<&Value>, depth: usize, out: &mut String) {
    if depth >= super::SCHEMA_DEPTH_MAX {
        fields(PROPS, &Value::Null, depth, out);
        return;
    }
    fields(PROPS, v.unwrap_or(&Value::Null), depth + 1, out);
}

/// A JSONSchemaProps as upstream prints it.
pub(crate) fn schema(v: &Value) -> String {
    let mut out = String::new();
    props(Some(v), 0, &mut out);
    out
}

/// The internal view of one version (after the v1 conversion moved identical per-version
/// members to the top level): what to print of it.
pub(crate) struct VersionView<'a> {
    pub version: &'a Value,
    pub schema: Option<&'a Value>,
    pub subresources: Option<&'a Value>,
    pub columns: Option<&'a Value>,
    pub selectable: Option<&'a Value>,
}

/// `[]CustomResourceDefinitionVersion` (`None`: a nil slice).
pub(crate) fn versions(list: Option<&[VersionView<'_>]>) -> String {
    let Some(list) = list else {
        return "null".into();
    };
    let mut out = String::from("[");
    for (i, v) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        version(v, &mut out);
    }
    out.push(']');
    out
}

fn version(v: &VersionView<'_>, out: &mut String) {
    let o = v.version;
    out.push_str("{\"Name\":");
    shape(S::Str, o.get("name"), 0, out);
    out.push_str(",\"Served\":");
    shape(S::Bool, o.get("served"), 0, out);
    out.push_str(",\"Storage\":");
    shape(S::Bool, o.get("storage"), 0, out);
    out.push_str(",\"Deprecated\":");
    shape(S::Bool, o.get("deprecated"), 0, out);
    out.push_str(",\"DeprecationWarning\":");
    shape(S::Ptr, o.get("deprecationWarning"), 0, out);
    out.push_str(",\"Schema\":");
    match present(v.schema) {
        None => out.push_str("null"),
        Some(s) => {
            out.push_str("{\"OpenAPIV3Schema\":");
            shape(S::PropsPtr, s.get("openAPIV3Schema"), 0, out);
            out.push('}');
        }
    }
    out.push_str(",\"Subresources\":");
    match present(v.subresources) {
        None => out.push_str("null"),
        Some(s) => {
            out.push_str("{\"Status\":");
            out.push_str(if present(s.get("status")).is_some() {
                "{}"
            } else {
                "null"
            });
            out.push_str(",\"Scale\":");
            match present(s.get("scale")) {
                None => out.push_str("null"),
                Some(sc) => fields(SCALE, sc, 0, out),
            }
            out.push('}');
        }
    }
    out.push_str(",\"AdditionalPrinterColumns\":");
    struct_list(COLUMN, v.columns, 0, out);
    out.push_str(",\"SelectableFields\":");
    struct_list(SELECTABLE_FIELD, v.selectable, 0, out);
    out.push('}');
}

/// The Go names of the JSONSchemaProps fields `v` sets to a non-zero value, in declaration
/// order (a string or bool member at `""`/`false` is Go's zero value; any other present
/// member is a non-nil pointer, slice or map).
pub(crate) fn set_fields(v: &Value) -> Vec<&'static str> {
    PROPS
        .iter()
        .filter(|(_, json, s)| match present(v.get(*json)) {
            None => false,
            Some(x) => match s {
                S::Str => x.as_str().is_some_and(|t| !t.is_empty()),
                S::Bool => x.as_bool() == Some(true),
                _ => true,
            },
        })
        .map(|(go, _, _)| *go)
        .collect()
}

/// A `*JSONSchemaPropsOrArray` (the `items` member) as upstream prints it.
pub(crate) fn items(v: Option<&Value>) -> String {
    let mut out = String::new();
    shape(S::OrArray, v, 0, &mut out);
    out
}
