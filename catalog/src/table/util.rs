//! Small accessors and formatters shared by the printers (objects are untyped JSON).

use keel_api::jsonmap::JsonPointer;
use serde_json::Value;

/// String at a JSON pointer, or `""`.
pub(crate) fn s<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.at(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Integer at a JSON pointer, or 0.
pub(crate) fn i(obj: &Value, pointer: &str) -> i64 {
    obj.at(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Array at a JSON pointer, or empty.
pub(crate) fn arr<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.at(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `metadata.name`.
pub(crate) fn name(obj: &Value) -> &str {
    s(obj, "/metadata/name")
}

/// `metadata.creationTimestamp`, if present.
pub(crate) fn created(obj: &Value) -> Option<&str> {
    obj.at("/metadata/creationTimestamp")
        .and_then(Value::as_str)
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn deleting(obj: &Value) -> bool {
    obj.at("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// `value`, or `<none>` when empty.
pub(crate) fn or_none(value: String) -> String {
    if value.is_empty() {
        "<none>".to_owned()
    } else {
        value
    }
}

/// Formats Unix seconds as RFC 3339 in UTC without fractions (Go's `time.RFC3339`).
pub(crate) fn format_rfc3339(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Inverse of days-from-civil (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `labels.FormatLabels`: `k1=v1,k2=v2` sorted by key; `<none>` when empty.
pub(crate) fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    or_none(pairs.join(","))
}

/// A `LabelSelector` rendered like `metav1.LabelSelectorAsSelector(..).String()`: requirements
/// sorted by key; empty selector renders as `""`.
pub(crate) fn label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|v| v.is_object()) else {
        return String::new();
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in arr(sel, "/matchExpressions") {
        let key = s(e, "/key").to_owned();
        let mut values: Vec<&str> = arr(e, "/values").iter().filter_map(Value::as_str).collect();
        values.sort_unstable();
        let text = match s(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other}"),
        };
        reqs.push((key, text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// Comma-joined container names and images of a pod template spec (`.../spec`).
pub(crate) fn containers_and_images(pod_spec: Option<&Value>) -> (String, String) {
    let containers = pod_spec
        .and_then(|p| p.get("containers"))
        .and_then(Value::as_array);
    let list = containers.map(Vec::as_slice).unwrap_or(&[]);
    let names: Vec<&str> = list.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = list.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// IPs or hostnames of a `LoadBalancerStatus`-shaped value, comma-joined.
pub(crate) fn load_balancer_addresses(status: Option<&Value>) -> String {
    let ingress = status
        .and_then(|s| s.get("ingress"))
        .and_then(Value::as_array);
    let list = ingress.map(Vec::as_slice).unwrap_or(&[]);
    let addrs: Vec<&str> = list
        .iter()
        .map(|i| {
            if s(i, "/ip").is_empty() {
                s(i, "/hostname")
            } else {
                s(i, "/ip")
            }
        })
        .filter(|a| !a.is_empty())
        .collect();
    addrs.join(",")
}

/// Whether `conditions` (at a pointer) holds `type` with status `True`.
pub(crate) fn has_true_condition(obj: &Value, pointer: &str, ty: &str) -> bool {
    arr(obj, pointer)
        .iter()
        .any(|c| s(c, "/type") == ty && s(c, "/status") == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_selectors_and_labels() {
        let sel = json!({"matchLabels": {"tier": "web", "app": "nginx"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                 {"key": "legacy", "operator": "DoesNotExist"}]});
        assert_eq!(
            label_selector(Some(&sel)),
            "app=nginx,env in (dev,prod),!legacy,tier=web"
        );
        assert_eq!(label_selector(None), "");
        assert_eq!(format_labels(Some(&json!({"b": "2", "a": "1"}))), "a=1,b=2");
        assert_eq!(format_labels(Some(&json!({}))), "<none>");
        assert_eq!(format_rfc3339(1_709_209_815), "2024-02-29T12:30:15Z");
        assert_eq!(format_rfc3339(-62_135_596_800), "0001-01-01T00:00:00Z");
    }
}
