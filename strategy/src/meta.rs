//! `ObjectMeta` validation (upstream `ValidateObjectMeta`): name, namespace, labels, annotations.

use crate::errors::FieldErr;
use crate::json::str_at;
use crate::names;
use serde_json::Value;

/// Total size limit of all annotation keys and values.
pub const ANNOTATIONS_SIZE_MAX_BYTES: usize = 256 * 1024;

/// Which syntax a type's names follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain (most types).
    Subdomain,
    /// RFC 1123 label (namespaces).
    Label,
    /// RFC 1035 label (services).
    Label1035,
    /// Anything non-empty without '/' or '%' and not `.`/`..` (path segment names).
    PathSegment,
}

fn name_problems(rule: NameRule, name: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => names::is_dns1123_subdomain(name),
        NameRule::Label => names::is_dns1123_label(name),
        NameRule::Label1035 => names::is_dns1035_label(name),
        NameRule::PathSegment => path_segment_problems(name),
    }
}

fn path_segment_problems(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Validates metadata of a create (or the new object of an update).
pub fn validate(obj: &Value, namespaced: bool, rule: NameRule) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let name = str_at(obj, "metadata.name");
    if name.is_empty() {
        errs.push(FieldErr::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_problems(rule, name) {
            errs.push(FieldErr::invalid("metadata.name", name, &msg));
        }
    }
    let ns = str_at(obj, "metadata.namespace");
    if namespaced && ns.is_empty() {
        errs.push(FieldErr::required("metadata.namespace", ""));
    } else if !namespaced && !ns.is_empty() {
        errs.push(FieldErr::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    } else if namespaced {
        for msg in names::is_dns1123_label(ns) {
            errs.push(FieldErr::invalid("metadata.namespace", ns, &msg));
        }
    }
    errs.extend(validate_labels(
        obj.pointer("/metadata/labels"),
        "metadata.labels",
    ));
    errs.extend(validate_annotations(obj.pointer("/metadata/annotations")));
    errs
}

/// Label keys must be qualified names and values label values.
pub fn validate_labels(labels: Option<&Value>, field: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let Some(map) = labels.and_then(Value::as_object) else {
        return errs;
    };
    for (k, v) in map {
        for msg in names::is_qualified_name(k) {
            errs.push(FieldErr::invalid(field, k.as_str(), &msg));
        }
        let val = v.as_str().unwrap_or_default();
        for msg in names::is_label_value(val) {
            errs.push(FieldErr::invalid(field, val, &msg));
        }
    }
    errs
}

fn validate_annotations(annotations: Option<&Value>) -> Vec<FieldErr> {
    let field = "metadata.annotations";
    let mut errs = Vec::new();
    let Some(map) = annotations.and_then(Value::as_object) else {
        return errs;
    };
    let mut total = 0usize;
    for (k, v) in map {
        for msg in names::is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldErr::invalid(field, k.as_str(), &msg));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > ANNOTATIONS_SIZE_MAX_BYTES {
        errs.push(FieldErr::too_long(field, ANNOTATIONS_SIZE_MAX_BYTES));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_causes() {
        let cases = [
            (json!({"metadata": {"name": "a", "namespace": "default"}}), true, vec![]),
            (
                json!({"metadata": {"namespace": "default"}}),
                true,
                vec!["metadata.name: Required value: name or generateName is required"],
            ),
            (json!({"metadata": {"name": "a"}}), true, vec!["metadata.namespace: Required value"]),
            (
                json!({"metadata": {"name": "a", "labels": {"k": "bad value"}}}),
                false,
                vec!["metadata.labels: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"],
            ),
        ];
        for (obj, namespaced, want) in cases {
            let got: Vec<String> = validate(&obj, namespaced, NameRule::Subdomain)
                .into_iter()
                .map(|e| e.message)
                .collect();
            assert_eq!(got, want, "{obj}");
        }
    }

    #[test]
    fn annotation_size_limit() {
        let big = "x".repeat(ANNOTATIONS_SIZE_MAX_BYTES);
        let obj = json!({"metadata": {"name": "a", "annotations": {"k": big}}});
        let errs = validate(&obj, false, NameRule::Subdomain);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].reason, "FieldValueTooLong");
    }
}
