//! `metav1.LabelSelector`: validation, matching against labels, and its string form.

use crate::errors::{Bad, FieldErr};
use crate::json::{arr_at, str_at};
use crate::names;
use serde_json::Value;

const OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];

/// Whether the selector has no requirements at all.
pub fn is_empty(sel: &Value) -> bool {
    let labels = sel.get("matchLabels").and_then(Value::as_object);
    labels.is_none_or(|m| m.is_empty()) && arr_at(sel, "matchExpressions").is_empty()
}

/// Validates a label map (selector `matchLabels`, a Service's `spec.selector`) as object
/// labels are validated: keys are qualified names, values label values.
pub fn validate_labels(labels: Option<&Value>, path: &str) -> Vec<FieldErr> {
    let Some(map) = labels.and_then(Value::as_object) else {
        return Vec::new();
    };
    keel_api::names::validate_labels(map, path)
        .into_iter()
        .map(FieldErr::from_cause)
        .collect()
}

/// Validates a label selector found at `path`.
pub fn validate(sel: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = validate_labels(sel.get("matchLabels"), &format!("{path}.matchLabels"));
    for (i, e) in arr_at(sel, "matchExpressions").iter().enumerate() {
        let epath = format!("{path}.matchExpressions[{i}]");
        let op = str_at(e, "operator");
        let has_values = !arr_at(e, "values").is_empty();
        match op {
            "In" | "NotIn" if !has_values => errs.push(FieldErr::required(
                &format!("{epath}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if has_values => errs.push(FieldErr::forbidden(
                &format!("{epath}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            o if !OPERATORS.contains(&o) => errs.push(FieldErr::invalid(
                &format!("{epath}.operator"),
                o,
                "not a valid selector operator",
            )),
            _ => {}
        }
        let key = str_at(e, "key");
        for msg in names::is_qualified_name(key) {
            errs.push(FieldErr::invalid(&format!("{epath}.key"), key, &msg));
        }
    }
    errs
}

/// Whether a label map satisfies the selector.
pub fn matches(sel: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let labels_ok = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.iter().all(|(k, v)| get(k) == v.as_str()));
    labels_ok
        && arr_at(sel, "matchExpressions").iter().all(|e| {
            let have = get(str_at(e, "key"));
            let in_values = || arr_at(e, "values").iter().any(|v| v.as_str() == have);
            match str_at(e, "operator") {
                "In" => have.is_some() && in_values(),
                "NotIn" => have.is_none() || !in_values(),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        })
}

/// The selector's string form (`a=b,c in (d,e),!f`), as in a Scale's `status.selector`.
pub fn to_string(sel: &Value) -> String {
    let mut parts: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in arr_at(sel, "matchExpressions") {
        let key = str_at(e, "key");
        let mut values: Vec<&str> = arr_at(e, "values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort();
        let text = match str_at(e, "operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        parts.push((key.to_string(), text));
    }
    parts.sort();
    parts
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// A selector as the rejected value of an error (rendered as JSON).
pub fn bad(sel: &Value) -> Bad {
    Bad::Raw(sel.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matching_table() {
        let labels = json!({"app": "web", "tier": "fe"});
        let cases = [
            (json!({"matchLabels": {"app": "web"}}), true),
            (json!({"matchLabels": {"app": "db"}}), false),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["fe"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "x", "operator": "Exists"}]}),
                false,
            ),
        ];
        for (sel, want) in cases {
            assert_eq!(matches(&sel, Some(&labels)), want, "{sel}");
        }
    }

    #[test]
    fn string_form() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"},
                         "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]},
                                              {"key": "d", "operator": "DoesNotExist"}]});
        assert_eq!(to_string(&sel), "a=1,b=2,c in (x,y),!d");
    }

    #[test]
    fn expression_validation() {
        let sel = json!({"matchExpressions": [{"key": "a", "operator": "In"}]});
        let errs = validate(&sel, "spec.selector");
        assert_eq!(errs[0].message, "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
    }
}
