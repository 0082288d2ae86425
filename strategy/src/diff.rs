//! A short, human-readable list of where two JSON values differ (for Forbidden messages).

use serde_json::Value;

/// At most this many differing paths are listed.
pub const DIFF_LINES_MAX: usize = 20;

/// One line per differing leaf path: `-` old value, `+` new value.
pub fn describe(old: &Value, new: &Value, root: &str) -> String {
    let mut lines = Vec::new();
    walk(old, new, root, &mut lines);
    if lines.len() > DIFF_LINES_MAX {
        let more = lines.len() - DIFF_LINES_MAX;
        lines.truncate(DIFF_LINES_MAX);
        lines.push(format!("  ... ({more} more)"));
    }
    lines.join("\n")
}

fn walk(old: &Value, new: &Value, path: &str, out: &mut Vec<String>) {
    if old == new || out.len() > DIFF_LINES_MAX {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let null = Value::Null;
                let sub = format!("{path}.{k}");
                walk(
                    a.get(k).unwrap_or(&null),
                    b.get(k).unwrap_or(&null),
                    &sub,
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                walk(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {
            out.push(format!("  {path}:"));
            out.push(format!("  - {old}"));
            out.push(format!("  + {new}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_leaf_changes() {
        let d = describe(
            &json!({"a": {"b": 1}, "c": [1]}),
            &json!({"a": {"b": 2}, "c": [1]}),
            "spec",
        );
        assert_eq!(d, "  spec.a.b:\n  - 1\n  + 2");
    }
}
