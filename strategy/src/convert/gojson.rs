//! `encoding/json`'s `Marshal` output for values the caller has already laid out in Go's
//! field order (serde_json keeps insertion order): no spaces, HTML-safe strings. Used for the
//! annotation values upstream writes, which clients compare byte for byte.

use keel_api::gofmt::{json_string_to, JsonEscape};
use serde_json::{Map, Value};

/// `v` as Go's `json.Marshal` prints it, members in `v`'s order.
pub(super) fn marshal(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        // v1.36 is built with Go 1.22 or later.
        Value::String(s) => json_string_to(out, s, JsonEscape::Go122),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string_to(out, k, JsonEscape::Go122);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A `metav1.LabelSelector` in Go's order (`matchLabels` sorted by key, as Go prints maps;
/// each expression `key`, `operator`, `values`), empty members left out.
pub(super) fn selector(v: &Value) -> Value {
    let mut out = Map::new();
    if let Some(labels) = v.get("matchLabels").and_then(Value::as_object) {
        if !labels.is_empty() {
            let mut keys: Vec<&String> = labels.keys().collect();
            keys.sort();
            let sorted: Map<String, Value> = keys
                .into_iter()
                .map(|k| (k.clone(), labels[k].clone()))
                .collect();
            out.insert("matchLabels".into(), Value::Object(sorted));
        }
    }
    if let Some(exprs) = v.get("matchExpressions").and_then(Value::as_array) {
        if !exprs.is_empty() {
            let exprs = exprs.iter().map(expression).collect();
            out.insert("matchExpressions".into(), Value::Array(exprs));
        }
    }
    Value::Object(out)
}

fn expression(e: &Value) -> Value {
    let mut out = Map::new();
    for key in ["key", "operator"] {
        let s = e.get(key).and_then(Value::as_str).unwrap_or("");
        out.insert(key.into(), Value::String(s.into()));
    }
    if let Some(values) = e.get("values").and_then(Value::as_array) {
        if !values.is_empty() {
            out.insert("values".into(), Value::Array(values.clone()));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marshals_compactly_with_go_escapes() {
        let v = json!({"b": "<a&b>", "a": [1, null, true, {"x": "\u{8}"}]});
        assert_eq!(
            marshal(&v),
            r#"{"b":"\u003ca\u0026b\u003e","a":[1,null,true,{"x":"\b"}]}"#
        );
    }

    #[test]
    fn selector_sorts_labels_and_orders_expressions() {
        let v = json!({"matchExpressions": [{"values": ["v"], "operator": "In", "key": "k"}],
                       "matchLabels": {"z": "1", "a": "2"}});
        assert_eq!(
            marshal(&selector(&v)),
            r#"{"matchLabels":{"a":"2","z":"1"},"matchExpressions":[{"key":"k","operator":"In","values":["v"]}]}"#
        );
    }
}
