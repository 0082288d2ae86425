//! The openAPIV3Schema rules of a CRD: upstream's `validateCustomResourceDefinitionValidation`
//! with the structural-schema checks (`NewStructural`, `ValidateStructural`) and the
//! CRD-specific keyword rules (`ValidateCustomResourceDefinitionOpenAPISchema`).
//!
//! `x-kubernetes-validations` are compiled and their estimated cost checked in
//! [`super::celrules`]. Not checked here (upstream does): most of `ValidateDefaults` (see
//! [`super::defaults`]), the rarer Go regular-expression errors of a `pattern` (see
//! [`go_regexp_error`]), and the final "error building validator" check.
//!
//! Schemas are walked to [`SCHEMA_DEPTH_MAX`] levels; deeper subschemas are not checked.

pub(super) use super::get;
use super::gojson;
use super::{as_slice, str_of, Opts, SCHEMA_DEPTH_MAX};
use crate::errors::{Bad, FieldErr};
use serde_json::{Map, Value};

const OPENAPI_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
const ROOT_FIELDS_WITH_STATUS: &[&str] = &[
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];
const META_FIELDS: &[&str] = &["metadata", "kind", "apiVersion"];
const RULE_REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn bool_of(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn props_of(v: &Value) -> Option<&Map<String, Value>> {
    get(v, "properties").and_then(Value::as_object)
}

/// Sorted `(name, schema)` pairs of a map member (upstream walks Go maps in random order).
fn sorted<'a>(v: &'a Value, key: &str) -> Vec<(&'a String, &'a Value)> {
    let mut out: Vec<(&String, &Value)> = get(v, key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .collect();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    get(v, key).map_or(&[][..], as_slice)
}

/// The single `items` schema (`None` when absent or an array).
fn items_schema(v: &Value) -> Option<&Value> {
    get(v, "items").filter(|i| !i.is_array())
}

fn ext_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    get(v, key).and_then(Value::as_str)
}

/// Upstream's `SchemaHas`: whether `pred` holds for `s` or any schema below it.
pub(super) fn has(s: &Value, pred: &dyn Fn(&Value) -> bool, depth: usize) -> bool {
    if depth > SCHEMA_DEPTH_MAX {
        return false;
    }
    if pred(s) {
        return true;
    }
    let d = depth + 1;
    let one = |x: Option<&Value>| x.is_some_and(|x| x.is_object() && has(x, pred, d));
    let many = |xs: &[Value]| xs.iter().any(|x| has(x, pred, d));
    let map = |key: &str| sorted(s, key).into_iter().any(|(_, x)| has(x, pred, d));
    match get(s, "items") {
        Some(Value::Array(xs)) if many(xs) => return true,
        Some(x) if one(Some(x)) => return true,
        _ => {}
    }
    many(list(s, "allOf"))
        || many(list(s, "anyOf"))
        || many(list(s, "oneOf"))
        || one(get(s, "not"))
        || map("properties")
        || one(get(s, "additionalProperties"))
        || map("patternProperties")
        || one(get(s, "additionalItems"))
        || map("definitions")
        || map("dependencies")
}

pub(super) fn has_invalid_type(s: &Value) -> bool {
    let t = str_of(s, "type");
    !t.is_empty() && !OPENAPI_TYPES.contains(&t)
}

pub(super) fn has_kubernetes_extensions(s: &Value) -> bool {
    bool_of(s, "x-kubernetes-embedded-resource")
        || get(s, "x-kubernetes-preserve-unknown-fields").is_some()
        || bool_of(s, "x-kubernetes-int-or-string")
        || !list(s, "x-kubernetes-list-map-keys").is_empty()
        || get(s, "x-kubernetes-list-type").is_some()
        || !list(s, "x-kubernetes-validations").is_empty()
}

pub(super) fn has_non_atomic_set(s: &Value) -> bool {
    if ext_str(s, "x-kubernetes-list-type") != Some("set") {
        return false;
    }
    let Some(is) = items_schema(s) else {
        return false;
    };
    match str_of(is, "type") {
        "array" => ext_str(is, "x-kubernetes-list-type").is_some_and(|t| t != "atomic"),
        "object" => ext_str(is, "x-kubernetes-map-type") != Some("atomic"),
        _ => false,
    }
}

pub(super) fn has_bad_map_list_keys(s: &Value) -> bool {
    !map_list_keys_map_set(s, "").is_empty()
}

pub(super) fn is_non_structural(s: &Value) -> bool {
    structural_error(s, 0).is_some() || !validate_structural(s, "").is_empty()
}

/// `validateCustomResourceDefinitionValidation` for one `CustomResourceValidation` at `path`.
pub(super) fn validation_rules(
    validation: &Value,
    status_enabled: bool,
    opts: &Opts,
    path: &str,
    per_expression_cost: bool,
) -> Vec<FieldErr> {
    let Some(schema) = get(validation, "openAPIV3Schema") else {
        return Vec::new();
    };
    let root = format!("{path}.openAPIV3Schema");
    let mut errs = Vec::new();
    if status_enabled {
        for name in gojson::set_fields(schema) {
            if name == "Type" {
                let t = str_of(schema, "type");
                if t != "object" {
                    errs.push(FieldErr::invalid(
                        &format!("{root}.type"),
                        t,
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ROOT_FIELDS_WITH_STATUS.contains(&name) {
                errs.push(FieldErr::invalid(
                    &root,
                    Bad::Raw(gojson::schema(schema)),
                    &format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ROOT_FIELDS_WITH_STATUS.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if bool_of(schema, "nullable") {
        errs.push(FieldErr::forbidden(
            &format!("{root}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut init_errs = Vec::new();
    if opts.require_structural {
        if let Some(e) = structural_error(schema, 0) {
            init_errs.push(FieldErr::invalid(&root, "", &e));
        } else {
            let structural = validate_structural(schema, &root);
            if structural.is_empty() {
                errs.extend(super::defaults::validate(
                    schema,
                    &root,
                    opts.require_pruned_defaults,
                ));
            }
            errs.extend(structural);
        }
    }
    let ssv = Ssv {
        allow_defaults: true,
        defaults_reason: String::new(),
        inside_meta: false,
        require_valid_type: opts.require_valid_property_type,
    };
    openapi_schema(schema, &root, &ssv, true, opts, 0, &mut errs);
    if errs.is_empty() {
        errs = init_errs;
    }
    // Upstream compiles the rules only for a schema without any other error.
    if errs.is_empty() && structural_error(schema, 0).is_none() {
        super::celrules::compile_tree(schema, &root, per_expression_cost, &mut errs);
    }
    errs
}

/// The first error of upstream's `NewStructural` (keywords a structural schema cannot hold).
fn structural_error(s: &Value, depth: usize) -> Option<String> {
    if depth > SCHEMA_DEPTH_MAX {
        return None;
    }
    let d = depth + 1;
    let unsupported = [
        ("id", !str_of(s, "id").is_empty()),
        ("schema", !str_of(s, "$schema").is_empty()),
        ("$ref", !str_of(s, "$ref").is_empty()),
        (
            "patternProperties",
            get(s, "patternProperties")
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty()),
        ),
        (
            "dependencies",
            get(s, "dependencies")
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty()),
        ),
        ("additionalItems", get(s, "additionalItems").is_some()),
        (
            "definitions",
            get(s, "definitions")
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty()),
        ),
    ];
    if let Some((name, _)) = unsupported.iter().find(|(_, bad)| *bad) {
        return Some(format!("OpenAPIV3Schema '{name}' is not supported"));
    }
    // Value validations (not, allOf, anyOf, oneOf) before extensions, items and properties.
    let mut nested: Vec<&Value> = get(s, "not").into_iter().collect();
    for key in ["allOf", "anyOf", "oneOf"] {
        nested.extend(list(s, key));
    }
    for n in nested {
        if let Some(e) = structural_error(n, d) {
            return Some(e);
        }
    }
    if get(s, "x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(false) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .into(),
        );
    }
    match get(s, "items") {
        Some(Value::Array(xs)) if !xs.is_empty() => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into())
        }
        Some(x) if x.is_object() => {
            if let Some(e) = structural_error(x, d) {
                return Some(e);
            }
        }
        _ => {}
    }
    for (_, p) in sorted(s, "properties") {
        if let Some(e) = structural_error(p, d) {
            return Some(e);
        }
    }
    match get(s, "additionalProperties") {
        Some(x) if x.is_object() => structural_error(x, d),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Upstream's `ValidateStructural`: invariants and completeness, sorted by error text.
fn validate_structural(s: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, 0, &mut errs);
    completeness(s, path, &mut errs);
    errs.sort_by(|a, b| a.message.cmp(&b.message));
    errs
}

/// A nested value validation is exactly `{type: integer}` / `{type: string}`.
fn is_only_type(v: &Value, t: &str) -> bool {
    let Some(m) = v.as_object() else {
        return false;
    };
    m.iter().all(|(k, x)| match k.as_str() {
        "type" => x.as_str() == Some(t),
        _ => {
            x.is_null()
                || x.as_bool() == Some(false)
                || x.as_str() == Some("")
                || x.as_array().is_some_and(Vec::is_empty) && k != "required" && k != "enum"
        }
    })
}

fn is_int_or_string_any_of(v: &Value) -> bool {
    let any_of = list(v, "anyOf");
    any_of.len() == 2 && is_only_type(&any_of[0], "integer") && is_only_type(&any_of[1], "string")
}

fn invariants(s: &Value, lvl: Level, path: &str, depth: usize, errs: &mut Vec<FieldErr>) {
    if depth > SCHEMA_DEPTH_MAX {
        return;
    }
    let d = depth + 1;
    let ty = str_of(s, "type");
    let items = items_schema(s);
    if ty == "array" && items.is_none() {
        errs.push(FieldErr::required(
            &format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(i) = items {
        invariants(i, Level::Item, &format!("{path}.items"), d, errs);
    }
    for (k, p) in sorted(s, "properties") {
        invariants(p, Level::Field, &format!("{path}.properties[{k}]"), d, errs);
    }
    let additional = get(s, "additionalProperties");
    if let Some(ap) = additional {
        if lvl == Level::Root {
            errs.push(FieldErr::forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if ap.is_object() {
            invariants(
                ap,
                Level::Field,
                &format!("{path}.additionalProperties"),
                d,
                errs,
            );
        }
    }
    let int_or_string = bool_of(s, "x-kubernetes-int-or-string");
    let preserve =
        get(s, "x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true);
    let embedded = bool_of(s, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        errs.push(FieldErr::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldErr::invalid(
            &format!("{path}.x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(s);
    let skip_first_all_of = list(s, "allOf")
        .first()
        .is_some_and(is_int_or_string_any_of);
    value_validation(s, skip_any_of, skip_first_all_of, path, d, errs);

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        let p = format!("{path}.type");
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if ty.is_empty() {
            FieldErr::required(&p, msg)
        } else {
            FieldErr::invalid(&p, ty, msg)
        });
    } else if ty.is_empty() && !int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldErr::required(&format!("{path}.type"), msg));
    }
    if embedded && additional.is_some() {
        errs.push(FieldErr::forbidden(
            &format!("{path}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldErr::invalid(
            &format!("{path}.type"),
            ty,
            "must be object at the root",
        ));
    }
    let props = props_of(s);
    for key in ["kind", "apiVersion"] {
        if let Some(p) = props.and_then(|m| m.get(key)) {
            let t = str_of(p, "type");
            if check_metadata && t != "string" {
                errs.push(FieldErr::invalid(
                    &format!("{path}.properties[{key}].type"),
                    t,
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = props.and_then(|m| m.get("metadata")) {
        let p = format!("{path}.properties[metadata]");
        let t = str_of(meta, "type");
        if check_metadata && t != "object" {
            errs.push(FieldErr::invalid(&format!("{p}.type"), t, "must be object"));
        }
        if lvl == Level::Root && !metadata_is_implicit(meta) {
            errs.push(FieldErr::forbidden(
                &p,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && props.is_none_or(Map::is_empty) {
        errs.push(FieldErr::required(
            &format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// A root `metadata` schema says nothing beyond `type`, `default` and properties `name`
/// and/or `generateName` (whatever their schemas).
fn metadata_is_implicit(meta: &Value) -> bool {
    let Some(m) = meta.as_object() else {
        return true;
    };
    m.iter().all(|(k, x)| match k.as_str() {
        "type" | "default" => true,
        "properties" => x
            .as_object()
            .is_none_or(|p| p.is_empty() || p.keys().all(|n| n == "name" || n == "generateName")),
        _ => x.is_null() || x.as_bool() == Some(false) || x.as_str() == Some(""),
    })
}

/// `validateValueValidation`: the junctors of a (nested) value validation and its pattern.
fn value_validation(
    v: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    depth: usize,
    errs: &mut Vec<FieldErr>,
) {
    if depth > SCHEMA_DEPTH_MAX {
        return;
    }
    if !skip_any_of {
        for (i, x) in list(v, "anyOf").iter().enumerate() {
            nested(x, false, &format!("{path}.anyOf[{i}]"), depth, errs);
        }
    }
    for (i, x) in list(v, "allOf").iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(x, skip, &format!("{path}.allOf[{i}]"), depth, errs);
    }
    for (i, x) in list(v, "oneOf").iter().enumerate() {
        nested(x, false, &format!("{path}.oneOf[{i}]"), depth, errs);
    }
    if let Some(n) = get(v, "not") {
        nested(n, false, &format!("{path}.not"), depth, errs);
    }
    let pattern = str_of(v, "pattern");
    if let Some(e) = go_regexp_error(pattern).filter(|_| !pattern.is_empty()) {
        errs.push(FieldErr::invalid(
            &format!("{path}.pattern"),
            pattern,
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// `validateNestedValueValidation`: what a schema under a junctor may not say.
fn nested(v: &Value, skip_any_of: bool, path: &str, depth: usize, errs: &mut Vec<FieldErr>) {
    if depth > SCHEMA_DEPTH_MAX {
        return;
    }
    let d = depth + 1;
    value_validation(v, skip_any_of, false, path, d, errs);
    if let Some(i) = items_schema(v) {
        nested(i, false, &format!("{path}.items"), d, errs);
    }
    for (k, p) in sorted(v, "properties") {
        nested(p, false, &format!("{path}.properties[{k}]"), d, errs);
    }
    let forbid = |errs: &mut Vec<FieldErr>, key: &str, msg: &str| {
        errs.push(FieldErr::forbidden(&format!("{path}.{key}"), msg));
    };
    if !str_of(v, "type").is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    match get(v, "additionalProperties") {
        Some(Value::Bool(false)) | None => {}
        Some(_) => forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        ),
    }
    if get(v, "default").is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !str_of(v, "title").is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !str_of(v, "description").is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if bool_of(v, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if bool_of(v, "x-kubernetes-preserve-unknown-fields") {
        forbid(
            errs,
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if bool_of(v, "x-kubernetes-embedded-resource") {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if bool_of(v, "x-kubernetes-int-or-string") {
        forbid(
            errs,
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if !list(v, "x-kubernetes-list-map-keys").is_empty() {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if get(v, "x-kubernetes-list-type").is_some() {
        forbid(
            errs,
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if get(v, "x-kubernetes-map-type").is_some() {
        forbid(
            errs,
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if !list(v, "x-kubernetes-validations").is_empty() {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if props_of(v).is_some_and(|m| m.contains_key("metadata")) {
        forbid(
            errs,
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}

/// `validateStructuralCompleteness`: what the root's junctors constrain must be specified
/// structurally.
fn completeness(s: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    junctor_completeness(s, Some(s), path, path, 0, errs);
}

fn junctor_completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    depth: usize,
    errs: &mut Vec<FieldErr>,
) {
    if depth > SCHEMA_DEPTH_MAX {
        return;
    }
    if let Some(n) = get(v, "not") {
        nested_completeness(n, s, s_path, &format!("{v_path}.not"), depth + 1, errs);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, x) in list(v, key).iter().enumerate() {
            let vp = format!("{v_path}.{key}[{i}]");
            nested_completeness(x, s, s_path, &vp, depth + 1, errs);
        }
    }
}

fn nested_completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    depth: usize,
    errs: &mut Vec<FieldErr>,
) {
    if depth > SCHEMA_DEPTH_MAX {
        return;
    }
    let Some(s) = s else {
        errs.push(FieldErr::required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    junctor_completeness(v, Some(s), s_path, v_path, depth, errs);
    if let Some(vi) = items_schema(v) {
        nested_completeness(
            vi,
            items_schema(s),
            &format!("{s_path}.items"),
            &format!("{v_path}.items"),
            depth + 1,
            errs,
        );
    }
    for (k, vp) in sorted(v, "properties") {
        let sp = format!("{s_path}.properties[{k}]");
        let vpp = format!("{v_path}.properties[{k}]");
        match props_of(s).and_then(|m| m.get(k.as_str())) {
            None => errs.push(FieldErr::required(
                &sp,
                &format!("because it is defined in {vpp}"),
            )),
            Some(sf) => nested_completeness(vp, Some(sf), &sp, &vpp, depth + 1, errs),
        }
    }
}

/// The state upstream's `specStandardValidatorV3` carries down the schema.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    defaults_reason: String,
    inside_meta: bool,
    require_valid_type: bool,
}

impl Ssv {
    fn forbid_defaults(&self, reason: String) -> Ssv {
        Ssv {
            allow_defaults: false,
            defaults_reason: reason,
            ..self.clone()
        }
    }

    fn validate(&self, s: &Value, path: &str, errs: &mut Vec<FieldErr>) {
        let ty = str_of(s, "type");
        if self.require_valid_type && !ty.is_empty() && !OPENAPI_TYPES.contains(&ty) {
            errs.push(FieldErr::not_supported(
                &format!("{path}.type"),
                ty,
                OPENAPI_TYPES,
            ));
        }
        if get(s, "default").is_some() && !self.allow_defaults {
            let mut detail = String::from("must not be set");
            if !self.defaults_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&self.defaults_reason);
            }
            errs.push(FieldErr::forbidden(&format!("{path}.default"), &detail));
        }
        let forbid = |errs: &mut Vec<FieldErr>, key: &str, msg: &str| {
            errs.push(FieldErr::forbidden(&format!("{path}.{key}"), msg));
        };
        if !str_of(s, "id").is_empty() {
            forbid(errs, "id", "id is not supported");
        }
        if get(s, "additionalItems").is_some() {
            forbid(errs, "additionalItems", "additionalItems is not supported");
        }
        let non_empty_map = |key: &str| {
            get(s, key)
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
        };
        if non_empty_map("patternProperties") {
            forbid(
                errs,
                "patternProperties",
                "patternProperties is not supported",
            );
        }
        if non_empty_map("definitions") {
            forbid(errs, "definitions", "definitions is not supported");
        }
        if get(s, "dependencies").is_some() {
            forbid(errs, "dependencies", "dependencies is not supported");
        }
        if get(s, "$ref").is_some() {
            forbid(errs, "$ref", "$ref is not supported");
        }
        if ty == "null" {
            forbid(
                errs,
                "type",
                "type cannot be set to null, use nullable as an alternative",
            );
        }
        if get(s, "items")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            forbid(
                errs,
                "items",
                "items must be a schema object and not an array",
            );
        }
        if self.inside_meta && bool_of(s, "x-kubernetes-embedded-resource") {
            forbid(
                errs,
                "x-kubernetes-embedded-resource",
                "must not be used inside of resource meta",
            );
        }
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` without its CEL part.
fn openapi_schema(
    s: &Value,
    path: &str,
    ssv: &Ssv,
    is_root: bool,
    opts: &Opts,
    depth: usize,
    errs: &mut Vec<FieldErr>,
) {
    if depth > SCHEMA_DEPTH_MAX || !s.is_object() {
        return;
    }
    let d = depth + 1;
    ssv.validate(s, path, errs);
    if bool_of(s, "uniqueItems") {
        errs.push(FieldErr::forbidden(
            &format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let props = props_of(s).filter(|m| !m.is_empty());
    if let Some(ap) = get(s, "additionalProperties") {
        let allows_any = ap.as_bool() == Some(true);
        if props.is_some() && !allows_any {
            errs.push(FieldErr::forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_meta {
            ssv.forbid_defaults("inside additionalProperties applying to object metadata".into())
        } else {
            ssv.clone()
        };
        if ap.is_object() {
            let p = format!("{path}.additionalProperties");
            openapi_schema(ap, &p, &sub, false, opts, d, errs);
        }
    }
    let embedded = bool_of(s, "x-kubernetes-embedded-resource");
    for (k, p) in sorted(s, "properties") {
        let mut sub = ssv.clone();
        if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbid_defaults(format!("in top-level {k}"));
            }
        }
        let pp = format!("{path}.properties[{k}]");
        openapi_schema(p, &pp, &sub, false, opts, d, errs);
    }
    if let Some(n) = get(s, "not") {
        openapi_schema(n, &format!("{path}.not"), ssv, false, opts, d, errs);
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, x) in list(s, key).iter().enumerate() {
            openapi_schema(x, &format!("{path}.{key}[{i}]"), ssv, false, opts, d, errs);
        }
    }
    for (k, x) in sorted(s, "definitions") {
        let p = format!("{path}.definitions[{k}]");
        openapi_schema(x, &p, ssv, false, opts, d, errs);
    }
    match get(s, "items") {
        Some(Value::Array(xs)) => {
            for (i, x) in xs.iter().enumerate() {
                let p = format!("{path}.items[{i}]");
                openapi_schema(x, &p, ssv, false, opts, d, errs);
            }
        }
        Some(x) => openapi_schema(x, &format!("{path}.items"), ssv, false, opts, d, errs),
        None => {}
    }
    for (k, x) in sorted(s, "dependencies") {
        if x.is_object() {
            let p = format!("{path}.dependencies[{k}]");
            openapi_schema(x, &p, ssv, false, opts, d, errs);
        }
    }
    extension_rules(s, path, opts, errs);
}

/// The `x-kubernetes-*` rules of one schema node.
fn extension_rules(s: &Value, path: &str, opts: &Opts, errs: &mut Vec<FieldErr>) {
    let ty = str_of(s, "type");
    if get(s, "x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(false) {
        errs.push(FieldErr::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let type_must_be = |errs: &mut Vec<FieldErr>, want: &str, msg: &str| {
        if ty == want {
            return;
        }
        let p = format!("{path}.type");
        errs.push(if ty.is_empty() {
            FieldErr::required(&p, msg)
        } else {
            FieldErr::invalid(&p, ty, msg)
        });
    };
    let map_type = get(s, "x-kubernetes-map-type").map(|v| v.as_str().unwrap_or(""));
    if let Some(mt) = map_type {
        type_must_be(
            errs,
            "object",
            "must be object if x-kubernetes-map-type is specified",
        );
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldErr::not_supported(
                &format!("{path}.x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = get(s, "x-kubernetes-list-type").map(|v| v.as_str().unwrap_or(""));
    let items = items_schema(s);
    if let Some(lt) = list_type {
        if ty != "array" {
            type_must_be(
                errs,
                "array",
                "must be array if x-kubernetes-list-type is specified",
            );
        } else if opts.require_atomic_set_type && lt == "set" {
            if let Some(is) = items {
                set_item_rules(is, path, errs);
            }
        }
        if !["atomic", "set", "map"].contains(&lt) {
            errs.push(FieldErr::not_supported(
                &format!("{path}.x-kubernetes-list-type"),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    let keys = list(s, "x-kubernetes-list-map-keys");
    let keys_rendered = || {
        let mut out = String::new();
        gojson::any(&Value::Array(keys.to_vec()), &mut out);
        Bad::Raw(out)
    };
    if !keys.is_empty() {
        let p = format!("{path}.x-kubernetes-list-type");
        match list_type {
            None => errs.push(FieldErr::required(
                &p,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(lt) => errs.push(FieldErr::invalid(
                &p,
                lt,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        let kp = format!("{path}.x-kubernetes-list-map-keys");
        if keys.is_empty() {
            errs.push(FieldErr::required(
                &kp,
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        let raw_items = get(s, "items");
        if raw_items.is_none() {
            errs.push(FieldErr::required(
                &format!("{path}.items"),
                "must have a schema if x-kubernetes-list-type is map",
            ));
        }
        if raw_items.is_some() && items.is_none() {
            errs.push(FieldErr::invalid(
                &format!("{path}.items"),
                Bad::Raw(gojson::items(raw_items)),
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
        }
        if let Some(is) = items {
            let it = str_of(is, "type");
            if it != "object" {
                errs.push(FieldErr::invalid(
                    &format!("{path}.items.type"),
                    it,
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let mut seen: Vec<&str> = Vec::new();
                for k in keys {
                    let k = k.as_str().unwrap_or("");
                    match props_of(is).and_then(|m| m.get(k)) {
                        Some(p) => {
                            if matches!(str_of(p, "type"), "array" | "object") {
                                // Upstream echoes the item's type here, not the key's.
                                errs.push(FieldErr::invalid(
                                    &format!("{path}.items.properties[{k}].type"),
                                    it,
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(FieldErr::invalid(
                            &kp,
                            keys_rendered(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if seen.contains(&k) {
                        errs.push(FieldErr::invalid(
                            &kp,
                            keys_rendered(),
                            "must not contain duplicate entries",
                        ));
                    }
                    seen.push(k);
                }
            }
        }
    }
    if opts.require_map_list_keys_map_set {
        errs.extend(map_list_keys_map_set(s, path));
    }
    rule_rules(s, path, errs);
}

/// Items of a `set` list must be atomic.
fn set_item_rules(is: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    const MSG: &str = "must be atomic as item of a list with x-kubernetes-list-type=set";
    let list_type = get(is, "x-kubernetes-list-type");
    // Upstream passes the item's list type (a pointer: JSON, or null) in both cases.
    let rendered = || {
        let mut out = String::new();
        gojson::any(list_type.unwrap_or(&Value::Null), &mut out);
        Bad::Raw(out)
    };
    match str_of(is, "type") {
        "array" if list_type.is_some_and(|t| t.as_str() != Some("atomic")) => {
            errs.push(FieldErr::invalid(
                &format!("{path}.items.x-kubernetes-list-type"),
                rendered(),
                MSG,
            ));
        }
        "object" if ext_str(is, "x-kubernetes-map-type") != Some("atomic") => {
            errs.push(FieldErr::invalid(
                &format!("{path}.items.x-kubernetes-map-type"),
                rendered(),
                MSG,
            ));
        }
        _ => {}
    }
}

/// `validateMapListKeysMapSet`: set and map list items, and map keys, are not nullable; map
/// keys are required or defaulted.
fn map_list_keys_map_set(s: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let Some(is) = items_schema(s) else {
        return errs;
    };
    let Some(lt) = ext_str(s, "x-kubernetes-list-type").filter(|t| *t == "set" || *t == "map")
    else {
        return errs;
    };
    if bool_of(is, "nullable") {
        errs.push(FieldErr::forbidden(
            &format!("{path}.items.nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return errs;
    }
    let required = list(is, "required");
    for k in list(s, "x-kubernetes-list-map-keys") {
        let k = k.as_str().unwrap_or("");
        let Some(p) = props_of(is).and_then(|m| m.get(k)) else {
            continue;
        };
        let is_required = required.iter().any(|r| r.as_str() == Some(k));
        if !is_required && get(p, "default").is_none() {
            errs.push(FieldErr::required(
                &format!("{path}.items.properties[{k}].default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if bool_of(p, "nullable") {
            errs.push(FieldErr::forbidden(
                &format!("{path}.items.properties[{k}].nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
    errs
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// The static rules of `x-kubernetes-validations` entries (their CEL compilation follows
/// once the whole schema is free of errors, see [`validation_rules`]).
fn rule_rules(s: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    for (i, r) in list(s, "x-kubernetes-validations").iter().enumerate() {
        let p = format!("{path}.x-kubernetes-validations[{i}]");
        let rule = str_of(r, "rule");
        let msg = str_of(r, "message");
        let msg_expr = str_of(r, "messageExpression");
        let (t_rule, t_msg) = (rule.trim(), msg.trim());
        if t_rule.is_empty() {
            errs.push(FieldErr::required(
                &format!("{p}.rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && t_msg.is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{p}.message"),
                msg,
                "must be non-empty if specified",
            ));
        } else if has_newlines(t_msg) {
            errs.push(FieldErr::invalid(
                &format!("{p}.message"),
                msg,
                "must not contain line breaks",
            ));
        } else if has_newlines(t_rule) && t_msg.is_empty() {
            errs.push(FieldErr::required(
                &format!("{p}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldErr::required(
                &format!("{p}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = get(r, "reason").and_then(Value::as_str) {
            if !RULE_REASONS.contains(&reason) {
                errs.push(FieldErr::not_supported(
                    &format!("{p}.reason"),
                    reason,
                    RULE_REASONS,
                ));
            }
        }
        let fp = str_of(r, "fieldPath");
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldErr::invalid(
                &format!("{p}.fieldPath"),
                fp,
                "must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            errs.push(FieldErr::invalid(
                &format!("{p}.fieldPath"),
                fp,
                "must not contain line breaks",
            ));
        }
        if !fp.is_empty() && !field_path_valid(s, fp) {
            errs.push(FieldErr::invalid(
                &format!("{p}.fieldPath"),
                fp,
                "must be a valid path",
            ));
        }
    }
}

/// Splits a field path into upstream's tokens: `.`, `[` and `]` alone, a single-quoted
/// string (to its unescaped closing quote, or the end), or the text up to a delimiter.
fn path_tokens(path: &str) -> Vec<&str> {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let len = if rest[0] == b'\'' {
            (1..rest.len())
                .find(|&i| rest[i] == b'\'' && rest[i - 1] != b'\\')
                .map_or(rest.len(), |i| i + 1)
        } else if matches!(rest[0], b'.' | b'[' | b']') {
            1
        } else {
            rest.iter()
                .position(|b| matches!(b, b'.' | b'[' | b']'))
                .unwrap_or(rest.len())
        };
        // Delimiters are ASCII, so `at` and `at + len` are char boundaries.
        out.push(path.get(at..at + len).unwrap_or(""));
        at += len;
    }
    out
}

/// Upstream's `ValidFieldPath` (CEL's field paths): the path as a field path string and the
/// schema it reaches, or why it reaches none.
pub(super) fn valid_field_path<'a>(
    json_path: &str,
    schema: Option<&'a Value>,
    allow_array_notation: bool,
) -> Result<(String, Option<&'a Value>), String> {
    const INVALID: &str = "does not refer to a valid field";
    let mut path = String::new();
    let mut cur = schema;
    let tokens = path_tokens(json_path);
    let mut it = tokens.into_iter();
    // Descends into `name`: a property where the schema has properties, else a key of its
    // additionalProperties.
    let step = |cur: &mut Option<&'a Value>, name: &str, path: &mut String| {
        let s = cur.ok_or_else(|| INVALID.to_string())?;
        if props_of(s).is_some_and(|m| !m.is_empty()) {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(name);
            *cur = Some(props_of(s).and_then(|m| m.get(name)).ok_or(INVALID)?);
        } else if let Some(ap) = get(s, "additionalProperties") {
            path.push('[');
            path.push_str(name);
            path.push(']');
            *cur = ap.is_object().then_some(ap);
        } else {
            return Err(INVALID.to_string());
        }
        Ok::<(), String>(())
    };
    while let Some(tok) = it.next() {
        match tok {
            "[" => {
                if !allow_array_notation {
                    return Err("array notation is not allowed".into());
                }
                let quoted = it.next().ok_or("unexpected end of JSON path")?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = quoted[1..quoted.len() - 1]
                    .replace("\\'", "'")
                    .replace("\\\\", "\\");
                step(&mut cur, &name, &mut path)?;
                let close = it.next().ok_or("unexpected end of JSON path")?;
                if close != "]" {
                    return Err(format!("expected ] but got {close}"));
                }
            }
            "." => {
                let name = it.next().ok_or("unexpected end of JSON path")?;
                step(&mut cur, name, &mut path)?;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok((path, cur))
}

/// Whether a rule's `fieldPath` resolves from its schema (paths of a non-structural schema
/// are not judged, as upstream).
fn field_path_valid(s: &Value, path: &str) -> bool {
    structural_error(s, 0).is_some() || valid_field_path(path, Some(s), true).is_ok()
}

/// The first `NewStructural` error of a schema, for callers outside this module.
pub(super) fn structural_init_error(s: &Value) -> Option<String> {
    structural_error(s, 0)
}

/// Largest repeat count Go's regexp parser accepts in `{n,m}`.
const REGEXP_REPEAT_MAX: i64 = 1000;

/// `{n}`, `{n,}` or `{n,m}` at the start of `t`: `(min, max, length)` (`max` -1: unbounded;
/// numbers too large to read are -1); `None` when `t` does not start with a repeat, so its
/// `{` is a literal.
fn parse_repeat(t: &str) -> Option<(i64, i64, usize)> {
    let body = t.strip_prefix('{')?;
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let read = |s: &str| {
        s.parse::<i64>()
            .ok()
            .filter(|n| *n <= 100_000_000)
            .unwrap_or(-1)
    };
    let n = digits(body);
    if n == 0 {
        return None;
    }
    let min = read(&body[..n]);
    let mut rest = &body[n..];
    let max = if let Some(after_comma) = rest.strip_prefix(',') {
        let m = digits(after_comma);
        rest = &after_comma[m..];
        if m == 0 {
            -1
        } else {
            read(&after_comma[..m])
        }
    } else {
        min
    };
    rest.strip_prefix('}')?;
    Some((min, max, t.len() - rest.len() + 1))
}

/// Why Go's `regexp.Compile` refuses `p`, in Go's words: unbalanced parentheses and
/// brackets, look-around and other Perl-only groups, invalid group names,
/// back-references, a trailing backslash, and repetition operators without an argument,
/// nested, or with counts over 1000 or reversed, and reversed class ranges of plain
/// characters. Not detected (such patterns pass here): ranges with escaped ends, unknown
/// `\p{...}` classes, and invalid UTF-8.
fn go_regexp_error(p: &str) -> Option<String> {
    let fail = |kind: &str, expr: &str| Some(format!("error parsing regexp: {kind}: `{expr}`"));
    let mut depth = 0usize;
    // Whether the expression so far ends in something a repetition may apply to.
    let mut operand = false;
    // Where the repetition operator just before started (Go refuses `a**`).
    let mut last_repeat: Option<usize> = None;
    let mut at = 0;
    while at < p.len() {
        let rest = &p[at..];
        let c = rest.chars().next().unwrap_or('\0');
        let mut repeat: Option<usize> = None;
        let mut len = c.len_utf8();
        match c {
            '*' | '+' | '?' | '{' => {
                let mut op_len = 1;
                if c == '{' {
                    match parse_repeat(rest) {
                        None => {
                            operand = true;
                            last_repeat = None;
                            at += 1;
                            continue;
                        }
                        Some((min, max, n)) => {
                            if !(0..=REGEXP_REPEAT_MAX).contains(&min)
                                || max > REGEXP_REPEAT_MAX
                                || (max >= 0 && min > max)
                            {
                                return fail("invalid repeat count", &rest[..n]);
                            }
                            op_len = n;
                        }
                    }
                }
                if rest[op_len..].starts_with('?') {
                    op_len += 1;
                }
                if let Some(start) = last_repeat {
                    return fail("invalid nested repetition operator", &p[start..at + op_len]);
                }
                if !operand {
                    return fail("missing argument to repetition operator", &rest[..op_len]);
                }
                repeat = Some(at);
                len = op_len;
            }
            '\\' => {
                let Some(next) = rest[1..].chars().next() else {
                    return fail("trailing backslash at end of expression", "");
                };
                if next == 'Q' {
                    // Literal text up to `\E` (or the end).
                    let body = &rest[2..];
                    len = 2 + body.find("\\E").map_or(body.len(), |e| e + 2);
                    operand = operand || !body.is_empty();
                } else {
                    if ('1'..='9').contains(&next) {
                        return fail("invalid escape sequence", &format!("\\{next}"));
                    }
                    len = 1 + next.len_utf8();
                    operand = true;
                }
            }
            '[' => {
                let mut j = 1;
                if rest[j..].starts_with('^') {
                    j += 1;
                }
                // A `]` first in the class is literal.
                if rest[j..].starts_with(']') {
                    j += 1;
                }
                loop {
                    let Some(cc) = rest[j..].chars().next() else {
                        return fail("missing closing ]", rest);
                    };
                    if cc == ']' {
                        j += 1;
                        break;
                    }
                    if cc == '\\' {
                        j += 1 + rest[j + 1..].chars().next().map_or(0, char::len_utf8);
                        continue;
                    }
                    if rest[j..].starts_with("[:") {
                        if let Some(e) = rest[j + 2..].find(":]") {
                            j += 2 + e + 2;
                            continue;
                        }
                    }
                    // `lo-hi` of plain characters must not be reversed.
                    let lo_end = j + cc.len_utf8();
                    let mut hi = rest[lo_end..].strip_prefix('-').map(str::chars);
                    let mut h = hi.as_mut().and_then(Iterator::next);
                    let mut escaped = 0;
                    if h == Some('\\') {
                        // An escaped punctuation character stands for itself.
                        h = hi
                            .as_mut()
                            .and_then(Iterator::next)
                            .filter(char::is_ascii_punctuation);
                        escaped = 1;
                    }
                    if let Some(h) = h {
                        if h != ']' && h != '[' || escaped == 1 {
                            let range_end = lo_end + 1 + escaped + h.len_utf8();
                            if h < cc {
                                return fail("invalid character class range", &rest[j..range_end]);
                            }
                            j = range_end;
                            continue;
                        }
                    }
                    j = lo_end;
                }
                len = j;
                operand = true;
            }
            '(' => {
                if let Some(after) = rest.strip_prefix("(?") {
                    if rest.len() > 4 && (after.starts_with("P<") || after.starts_with('<')) {
                        let begin = if after.starts_with('P') { 4 } else { 3 };
                        let Some(end) = rest.find('>') else {
                            return fail("invalid named capture", rest);
                        };
                        let name = rest.get(begin..end).unwrap_or("");
                        let valid = !name.is_empty()
                            && name.chars().all(|n| n.is_ascii_alphanumeric() || n == '_');
                        if !valid {
                            return fail("invalid named capture", &rest[..=end]);
                        }
                        len = end + 1;
                        depth += 1;
                        operand = false;
                    } else {
                        let mut closed = None;
                        for (off, f) in after.char_indices() {
                            match f {
                                'i' | 'm' | 's' | 'U' | '-' => continue,
                                ':' | ')' => {
                                    closed = Some((f, 2 + off + 1));
                                    break;
                                }
                                _ => {
                                    let end = 2 + off + f.len_utf8();
                                    return fail(
                                        "invalid or unsupported Perl syntax",
                                        &rest[..end],
                                    );
                                }
                            }
                        }
                        let Some((how, n)) = closed else {
                            return fail("invalid or unsupported Perl syntax", rest);
                        };
                        len = n;
                        if how == ':' {
                            depth += 1;
                            operand = false;
                        }
                    }
                } else {
                    depth += 1;
                    operand = false;
                }
            }
            ')' => {
                if depth == 0 {
                    return fail("unexpected )", p);
                }
                depth -= 1;
                operand = true;
            }
            '|' => operand = false,
            _ => operand = true,
        }
        last_repeat = repeat;
        at += len;
    }
    if depth > 0 {
        return fail("missing closing )", p);
    }
    None
}
