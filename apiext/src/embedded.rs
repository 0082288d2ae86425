//! Checks of nested `x-kubernetes-embedded-resource` objects (upstream's
//! `objectmeta.Validate`, root excluded): `apiVersion` and `kind` present, strings, non-empty,
//! a parsable group/version and a DNS-1035-like kind, and the `metadata` checked as an
//! ObjectMeta (keel-api's `validate_object_meta_with`: a missing name counts as `fakename`, the
//! name is a path segment, the namespace is checked only when set).
//!
//! Not done: a `metadata` that does not decode as an ObjectMeta (a number where a string
//! belongs) gives upstream's Go JSON error text there; here such members are skipped.

use crate::compile::{field_path as child, index_path, Additional, Node};
use crate::limits;
use crate::render::bad_value;
use crate::validate::cause;
use keel_api::names;
use keel_api::status::{field, StatusCause};
use regex::Regex;
use serde_json::Value;
use std::sync::OnceLock;

const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

fn dns1035() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(&format!("^{DNS1035_FMT}$")).expect("static pattern compiles"))
}

pub fn validate(root: &Node, obj: &Value) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    walk(&mut errs, "", root, obj, false, 0);
    errs
}

fn walk(errs: &mut Vec<StatusCause>, path: &str, s: &Node, x: &Value, check: bool, depth: usize) {
    if depth > limits::VALUE_DEPTH_MAX || errs.len() >= limits::ERRORS_MAX {
        return;
    }
    match x {
        Value::Object(m) => {
            if check && s.embedded {
                resource(errs, path, m);
            }
            for (k, v) in m {
                if let Some(p) = s.properties.get(k) {
                    walk(errs, &child(path, k), p, v, true, depth + 1);
                } else if let Some(Additional::Schema(a)) = &s.additional {
                    walk(errs, &index_path(path, k), a, v, true, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = s.items.as_deref() {
                for (i, v) in items.iter().enumerate() {
                    walk(
                        errs,
                        &index_path(path, &i.to_string()),
                        item,
                        v,
                        true,
                        depth + 1,
                    );
                }
            }
        }
        _ => {}
    }
}

fn invalid(path: &str, v: &Value, detail: &str) -> StatusCause {
    cause(
        field::REASON_INVALID,
        path,
        format!("Invalid value: {}: {detail}", bad_value(v)),
    )
}

fn resource(errs: &mut Vec<StatusCause>, path: &str, m: &serde_json::Map<String, Value>) {
    if !m.contains_key("apiVersion") {
        errs.push(field::required(&child(path, "apiVersion"), ""));
    }
    if !m.contains_key("kind") {
        errs.push(field::required(&child(path, "kind"), ""));
    }
    for (k, v) in m {
        let p = child(path, k);
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => errs.push(invalid(&p, v, "must be a string")),
                Some("") => errs.push(invalid(&p, v, "must not be empty")),
                Some(gv) if gv != "/" && gv.matches('/').count() > 1 => errs.push(invalid(
                    &p,
                    v,
                    &format!("unexpected GroupVersion string: {gv}"),
                )),
                Some(_) => {}
            },
            "kind" => match v.as_str() {
                None => errs.push(invalid(&p, v, "must be a string")),
                Some("") => errs.push(invalid(&p, v, "must not be empty")),
                Some(kind) => {
                    let lower = kind.to_lowercase();
                    let mut problems = Vec::new();
                    if lower.len() > 63 {
                        problems.push("must be no more than 63 characters".to_string());
                    }
                    if !dns1035().is_match(&lower) {
                        problems.push(format!(
                            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '{DNS1035_FMT}')"
                        ));
                    }
                    if !problems.is_empty() {
                        let detail = format!(
                            "may have mixed case, but should otherwise match: {}",
                            problems.join(",")
                        );
                        errs.push(invalid(&p, v, &detail));
                    }
                }
            },
            "metadata" => errs.extend(metadata(path, v)),
            _ => {}
        }
    }
}

fn metadata(path: &str, v: &Value) -> Vec<StatusCause> {
    let Value::Object(m) = v else {
        return Vec::new();
    };
    let mut meta = m.clone();
    if meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        meta.insert("name".into(), Value::String("fakename".into()));
    }
    let namespaced = !meta
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty();
    let check = |name: &str, prefix: bool| {
        if prefix {
            names::is_valid_path_segment_prefix(name)
        } else {
            names::is_valid_path_segment_name(name)
        }
    };
    let mut errs = names::validate_object_meta_with(&Value::Object(meta), namespaced, &check);
    for e in &mut errs {
        e.field = child(path, &e.field);
    }
    errs
}
