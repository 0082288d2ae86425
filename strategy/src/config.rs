//! ConfigMaps and Secrets: key syntax, total size, immutability, Secret types.

use crate::errors::FieldErr;
use crate::json::str_at;
use crate::names;
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};

/// Total size limit of a ConfigMap's or Secret's data (1 MiB).
pub const DATA_SIZE_MAX_BYTES: usize = 1024 * 1024;
const IMMUTABLE_MSG: &str = "field is immutable when `immutable` is set";

fn keys_of(obj: &Value, member: &str) -> Vec<(String, usize)> {
    obj.get(member)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map_or(0, str::len)))
                .collect()
        })
        .unwrap_or_default()
}

fn validate_keys(obj: &Value, members: &[&str], errs: &mut Vec<FieldErr>) -> usize {
    let mut total = 0;
    for member in members {
        for (key, len) in keys_of(obj, member) {
            let field = format!("{member}[{key}]");
            for msg in names::is_config_map_key(&key) {
                errs.push(FieldErr::invalid(&field, key.as_str(), &msg));
            }
            total += len;
        }
    }
    total
}

/// Validates a ConfigMap.
pub fn validate_config_map(cm: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let total = validate_keys(cm, &["data", "binaryData"], &mut errs);
    for (key, _) in keys_of(cm, "binaryData") {
        if cm.at("/data").and_then(|d| d.get(&key)).is_some() {
            errs.push(FieldErr::invalid(
                &format!("data[{key}]"),
                key.as_str(),
                "duplicate of key present in binaryData",
            ));
        }
    }
    if total > DATA_SIZE_MAX_BYTES {
        errs.push(FieldErr::too_long("", DATA_SIZE_MAX_BYTES));
    }
    errs
}

/// Upstream's conversion of a v1 Secret: each `stringData` entry overwrites `data` (base64 of
/// its text), and `stringData` itself is never stored. An empty `stringData` adds nothing.
pub fn merge_string_data(secret: &mut Value) {
    use base64::Engine as _;
    let Some(root) = secret.as_object_mut() else {
        return;
    };
    let Some(string_data) = root.get("stringData").cloned() else {
        return;
    };
    // `retain` keeps the order of the other members (a plain remove may swap them).
    root.retain(|k, _| k != "stringData");
    let Some(entries) = string_data.as_object().filter(|m| !m.is_empty()) else {
        return;
    };
    if !root.get("data").is_some_and(Value::is_object) {
        root.insert("data".into(), json!({}));
    }
    let Some(data) = root.get_mut("data").and_then(Value::as_object_mut) else {
        return;
    };
    for (k, v) in entries {
        if let Some(text) = v.as_str() {
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(k.clone(), Value::String(encoded));
        }
    }
}

/// Defaults a Secret: `type: Opaque`.
pub fn default_secret(secret: &mut Value) {
    if let Some(m) = secret.as_object_mut() {
        crate::json::default(m, "type", json!("Opaque"));
        if m.get("type") == Some(&json!("")) {
            m.insert("type".into(), json!("Opaque"));
        }
    }
}

/// Keys that a Secret type requires in `data`.
const REQUIRED_KEYS: &[(&str, &[&str])] = &[
    ("kubernetes.io/dockercfg", &[".dockercfg"]),
    ("kubernetes.io/dockerconfigjson", &[".dockerconfigjson"]),
    ("kubernetes.io/ssh-auth", &["ssh-privatekey"]),
    ("kubernetes.io/tls", &["tls.crt", "tls.key"]),
];

/// Validates a Secret (`stringData` is expected to be merged into `data` first).
pub fn validate_secret(secret: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let total = validate_keys(secret, &["data", "stringData"], &mut errs);
    if total > DATA_SIZE_MAX_BYTES {
        errs.push(FieldErr::too_long("data", DATA_SIZE_MAX_BYTES));
    }
    let ty = str_at(secret, "type");
    let has = |k: &str| secret.at("/data").and_then(|d| d.get(k)).is_some();
    for (t, keys) in REQUIRED_KEYS {
        if *t != ty {
            continue;
        }
        for key in keys.iter().filter(|k| !has(k)) {
            errs.push(FieldErr::required(&format!("data[{key}]"), ""));
        }
    }
    if ty == "kubernetes.io/basic-auth" && !has("username") && !has("password") {
        errs.push(FieldErr::required("data[username]", ""));
        errs.push(FieldErr::required("data[password]", ""));
    }
    let sa_name = secret
        .at("/metadata/annotations")
        .and_then(|a| a.get("kubernetes.io/service-account.name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if ty == "kubernetes.io/service-account-token" && sa_name.is_empty() {
        errs.push(FieldErr::required(
            "metadata.annotations[kubernetes.io/service-account.name]",
            "",
        ));
    }
    errs
}

/// Update rules shared by ConfigMaps and Secrets: an immutable object keeps its data.
pub fn validate_update(new: &Value, old: &Value, members: &[&str]) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return errs;
    }
    if new.get("immutable") != Some(&Value::Bool(true)) {
        errs.push(FieldErr::forbidden("immutable", IMMUTABLE_MSG));
    }
    for member in members {
        let n = new.get(*member).filter(|v| !v.is_null());
        let o = old.get(*member).filter(|v| !v.is_null());
        if n != o {
            errs.push(FieldErr::forbidden(member, IMMUTABLE_MSG));
        }
    }
    errs
}

/// Secret-only update rule: the type cannot change.
pub fn validate_secret_type_update(new: &Value, old: &Value) -> Vec<FieldErr> {
    let (n, o) = (str_at(new, "type"), str_at(old, "type"));
    if n == o {
        return Vec::new();
    }
    vec![FieldErr::invalid("type", n, "field is immutable")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_data_rows() {
        let rows = [
            (
                json!({"kind": "Secret", "stringData": {"a": "hi"}, "type": "Opaque"}),
                json!({"kind": "Secret", "type": "Opaque", "data": {"a": "aGk="}}),
            ),
            (
                json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"a": "hi"}}),
                json!({"data": {"a": "aGk=", "b": "eQ=="}}),
            ),
            (json!({"stringData": {}}), json!({})),
            (
                json!({"stringData": null, "data": {"a": "eA=="}}),
                json!({"data": {"a": "eA=="}}),
            ),
            (
                json!({"data": null, "stringData": {"k": ""}}),
                json!({"data": {"k": ""}}),
            ),
            (
                json!({"data": {"a": "eA=="}}),
                json!({"data": {"a": "eA=="}}),
            ),
        ];
        for (input, want) in rows {
            let mut got = input.clone();
            merge_string_data(&mut got);
            assert_eq!(got, want, "{input}");
        }
        let mut ordered = json!({"apiVersion": "v1", "stringData": {"a": "x"}, "kind": "Secret", "type": "Opaque"});
        merge_string_data(&mut ordered);
        let keys: Vec<&String> = ordered.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["apiVersion", "kind", "type", "data"]);
    }
}
