//! `ObjectMeta` format validation on create (upstream's `ValidateObjectMeta`).
//!
//! Only formats are checked here; wrong JSON types (a number where a string belongs) are the
//! decoder's job and are skipped.

use super::{
    annotations_size_exceeded, is_dns1123_label, is_qualified_name, is_valid_label_value, NameRule,
    ANNOTATIONS_TOTAL_BYTES_MAX,
};
use crate::status::{field, StatusCause};
use serde_json::{Map, Value};

const FINALIZER_ORPHAN: &str = "orphan";
const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// Validates `metadata` (the object under `metadata`) of an object being created, with paths
/// `metadata.name`, `metadata.labels`, ... Expects name generation to have happened already.
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
) -> Vec<StatusCause> {
    validate_object_meta_with(meta, namespaced, &|name, prefix| {
        name_rule.check(name, prefix)
    })
}

/// [`validate_object_meta`] with a name check that may depend on more than the name (upstream
/// passes `ValidateObjectMeta` a closure for types whose name is derived from their spec,
/// such as CustomResourceDefinitions and APIServices): `(name, is_prefix) -> messages`.
pub fn validate_object_meta_with(
    meta: &Value,
    namespaced: bool,
    check_name: &dyn Fn(&str, bool) -> Vec<String>,
) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    let text = |key: &str| meta.get(key).and_then(Value::as_str).unwrap_or("");
    let generate_name = text("generateName");
    if !generate_name.is_empty() {
        for msg in check_name(generate_name, true) {
            errs.push(field::invalid_str(
                "metadata.generateName",
                generate_name,
                &msg,
            ));
        }
    }
    let name = text("name");
    if name.is_empty() {
        errs.push(field::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in check_name(name, false) {
            errs.push(field::invalid_str("metadata.name", name, &msg));
        }
    }
    validate_namespace(text("namespace"), namespaced, &mut errs);
    if let Some(generation) = meta
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g < 0)
    {
        errs.push(field::invalid(
            "metadata.generation",
            &Value::from(generation),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        errs.extend(validate_labels(labels, "metadata.labels"));
    }
    if let Some(annotations) = meta.get("annotations").and_then(Value::as_object) {
        errs.extend(validate_annotations(annotations, "metadata.annotations"));
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        errs.extend(validate_owner_references(refs, "metadata.ownerReferences"));
    }
    if let Some(finalizers) = meta.get("finalizers").and_then(Value::as_array) {
        errs.extend(validate_finalizers(finalizers, "metadata.finalizers"));
    }
    errs
}

fn validate_namespace(namespace: &str, namespaced: bool, errs: &mut Vec<StatusCause>) {
    if namespaced {
        if namespace.is_empty() {
            errs.push(field::required("metadata.namespace", ""));
        } else {
            for msg in is_dns1123_label(namespace) {
                errs.push(field::invalid_str("metadata.namespace", namespace, &msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(field::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
}

fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Label keys and values (upstream reports both against the map's path), in key order.
pub fn validate_labels(labels: &Map<String, Value>, path: &str) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    for (key, value) in sorted_entries(labels) {
        for msg in is_qualified_name(key) {
            errs.push(field::invalid_str(path, key, &msg));
        }
        let value = value.as_str().unwrap_or("");
        for msg in is_valid_label_value(value) {
            errs.push(field::invalid_str(path, value, &msg));
        }
    }
    errs
}

/// Annotation keys (qualified names, case-insensitive) and the total size limit.
pub fn validate_annotations(annotations: &Map<String, Value>, path: &str) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    for (key, _) in sorted_entries(annotations) {
        for msg in is_qualified_name(&key.to_lowercase()) {
            errs.push(field::invalid_str(path, key, &msg));
        }
    }
    if annotations_size_exceeded(annotations).is_some() {
        errs.push(field::too_long(path, ANNOTATIONS_TOTAL_BYTES_MAX));
    }
    errs
}

/// The version part of an `apiVersion` (`v1`, `apps/v1`); empty when it cannot be parsed.
fn api_version_version(api_version: &str) -> &str {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [version] => version,
        [_, version] => version,
        _ => "",
    }
}

fn validate_owner_reference(r: &Value, path: &str, errs: &mut Vec<StatusCause>) {
    let text = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or("");
    let api_version = text("apiVersion");
    if api_version_version(api_version).is_empty() {
        errs.push(field::invalid_str(
            &format!("{path}.apiVersion"),
            api_version,
            "version must not be empty",
        ));
    }
    for key in ["kind", "name", "uid"] {
        if text(key).is_empty() {
            errs.push(field::invalid_str(
                &format!("{path}.{key}"),
                "",
                "must not be empty",
            ));
        }
    }
    if api_version == "v1" && text("kind") == "Event" {
        errs.push(field::invalid(
            path,
            r,
            "/v1, Kind=Event is disallowed from being an owner",
        ));
    }
}

/// Owner references: required members, banned owners, at most one controller.
pub fn validate_owner_references(refs: &[Value], path: &str) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        validate_owner_reference(r, path, &mut errs);
        if r.get("controller").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let text = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        let current = format!("{}/{}", text("kind"), text("name"));
        match &first_controller {
            Some(first) => errs.push(field::invalid(
                path,
                &Value::Array(refs.to_vec()),
                &format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"),
            )),
            None => first_controller = Some(current),
        }
    }
    errs
}

/// Finalizer names are qualified names; `orphan` and `foregroundDeletion` exclude each other.
pub fn validate_finalizers(finalizers: &[Value], path: &str) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    let names: Vec<&str> = finalizers.iter().filter_map(Value::as_str).collect();
    for name in &names {
        for msg in is_qualified_name(name) {
            errs.push(field::invalid_str(path, name, &msg));
        }
    }
    if names.contains(&FINALIZER_ORPHAN) && names.contains(&FINALIZER_FOREGROUND) {
        errs.push(field::invalid(
            path,
            &Value::Array(finalizers.to_vec()),
            &format!("finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"),
        ));
    }
    errs
}
