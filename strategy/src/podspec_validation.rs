//! `PodSpec` validation (upstream `ValidatePodSpec` and helpers), used for pods and templates.

use crate::errors::FieldErr;
use crate::json::{arr_at, str_at};
use crate::names::{self, is_valid_port_num, PORT_RANGE_MSG};
use crate::quantity;
use serde_json::Value;
use std::collections::HashSet;

/// Restart policies a pod may have.
pub const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const MESSAGE_POLICIES: &[&str] = &["File", "FallbackToLogsOnError"];
/// Protocols of container and service ports (sorted, as upstream lists them).
pub const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const TOLERATION_OPERATORS: &[&str] = &["Equal", "Exists"];
const TAINT_EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "PreferNoSchedule"];
/// Upper bound of `activeDeadlineSeconds` (math.MaxInt32).
const ACTIVE_DEADLINE_MAX: i64 = i32::MAX as i64;

/// Validates a pod spec found at `path` (e.g. `spec` or `spec.template.spec`).
pub fn validate_pod_spec(spec: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let volumes = validate_volumes(spec, path, &mut errs);
    let mut names_seen = HashSet::new();
    let containers = arr_at(spec, "containers");
    if containers.is_empty() {
        errs.push(FieldErr::required(&format!("{path}.containers"), ""));
    }
    for list in ["initContainers", "containers"] {
        for (i, c) in arr_at(spec, list).iter().enumerate() {
            let cpath = format!("{path}.{list}[{i}]");
            validate_container(c, &cpath, &volumes, &mut names_seen, &mut errs);
        }
    }
    enum_field(spec, path, "restartPolicy", RESTART_POLICIES, &mut errs);
    enum_field(spec, path, "dnsPolicy", DNS_POLICIES, &mut errs);
    validate_scalars(spec, path, &mut errs);
    for (i, t) in arr_at(spec, "tolerations").iter().enumerate() {
        validate_toleration(t, &format!("{path}.tolerations[{i}]"), &mut errs);
    }
    errs
}

/// Required-and-supported check of an enum string member.
fn enum_field(obj: &Value, path: &str, key: &str, allowed: &[&str], errs: &mut Vec<FieldErr>) {
    let field = format!("{path}.{key}");
    match obj.get(key).and_then(Value::as_str) {
        None | Some("") => errs.push(FieldErr::required(&field, "")),
        Some(v) if !allowed.contains(&v) => errs.push(FieldErr::not_supported(&field, v, allowed)),
        Some(_) => {}
    }
}

fn validate_scalars(spec: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    if let Some(ads) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if !(1..=ACTIVE_DEADLINE_MAX).contains(&ads) {
            let msg = format!("must be between 1 and {ACTIVE_DEADLINE_MAX}, inclusive");
            errs.push(FieldErr::invalid(
                &format!("{path}.activeDeadlineSeconds"),
                ads,
                &msg,
            ));
        }
    }
    for (key, rule) in [
        (
            "nodeName",
            names::is_dns1123_subdomain as fn(&str) -> Vec<String>,
        ),
        ("serviceAccountName", names::is_dns1123_subdomain),
        ("hostname", names::is_dns1123_label),
        ("subdomain", names::is_dns1123_label),
    ] {
        let v = str_at(spec, key);
        if !v.is_empty() {
            for msg in rule(v) {
                errs.push(FieldErr::invalid(&format!("{path}.{key}"), v, &msg));
            }
        }
    }
}

fn validate_volumes(spec: &Value, path: &str, errs: &mut Vec<FieldErr>) -> HashSet<String> {
    let mut seen = HashSet::new();
    for (i, v) in arr_at(spec, "volumes").iter().enumerate() {
        let field = format!("{path}.volumes[{i}].name");
        let name = str_at(v, "name");
        if name.is_empty() {
            errs.push(FieldErr::required(&field, ""));
            continue;
        }
        for msg in names::is_dns1123_label(name) {
            errs.push(FieldErr::invalid(&field, name, &msg));
        }
        if !seen.insert(name.to_string()) {
            errs.push(FieldErr::duplicate(&field, name));
        }
    }
    seen
}

fn validate_container(
    c: &Value,
    path: &str,
    volumes: &HashSet<String>,
    names_seen: &mut HashSet<String>,
    errs: &mut Vec<FieldErr>,
) {
    let name = str_at(c, "name");
    let name_field = format!("{path}.name");
    if name.is_empty() {
        errs.push(FieldErr::required(&name_field, ""));
    } else {
        for msg in names::is_dns1123_label(name) {
            errs.push(FieldErr::invalid(&name_field, name, &msg));
        }
        if !names_seen.insert(name.to_string()) {
            errs.push(FieldErr::duplicate(&name_field, name));
        }
    }
    if str_at(c, "image").trim().is_empty() {
        errs.push(FieldErr::required(&format!("{path}.image"), ""));
    }
    enum_field(c, path, "imagePullPolicy", PULL_POLICIES, errs);
    enum_field(c, path, "terminationMessagePolicy", MESSAGE_POLICIES, errs);
    validate_container_ports(c, path, errs);
    validate_env(c, path, errs);
    validate_mounts(c, path, volumes, errs);
    validate_probes(c, path, errs);
    if let Some(r) = c.get("resources") {
        validate_resources(r, &format!("{path}.resources"), errs);
    }
}

fn validate_container_ports(c: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    let mut port_names = HashSet::new();
    for (i, p) in arr_at(c, "ports").iter().enumerate() {
        let ppath = format!("{path}.ports[{i}]");
        let name = str_at(p, "name");
        if !name.is_empty() {
            for msg in names::is_valid_port_name(name) {
                errs.push(FieldErr::invalid(&format!("{ppath}.name"), name, &msg));
            }
            if !port_names.insert(name.to_string()) {
                errs.push(FieldErr::duplicate(&format!("{ppath}.name"), name));
            }
        }
        match p.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
            0 => errs.push(FieldErr::required(&format!("{ppath}.containerPort"), "")),
            n if !is_valid_port_num(n) => errs.push(FieldErr::invalid(
                &format!("{ppath}.containerPort"),
                n,
                PORT_RANGE_MSG,
            )),
            _ => {}
        }
        let host = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host != 0 && !is_valid_port_num(host) {
            errs.push(FieldErr::invalid(
                &format!("{ppath}.hostPort"),
                host,
                PORT_RANGE_MSG,
            ));
        }
        enum_field(p, &ppath, "protocol", PROTOCOLS, errs);
    }
}

fn validate_env(c: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    for (i, e) in arr_at(c, "env").iter().enumerate() {
        if str_at(e, "name").is_empty() {
            errs.push(FieldErr::required(&format!("{path}.env[{i}].name"), ""));
        }
    }
}

fn validate_mounts(c: &Value, path: &str, volumes: &HashSet<String>, errs: &mut Vec<FieldErr>) {
    for (i, m) in arr_at(c, "volumeMounts").iter().enumerate() {
        let mpath = format!("{path}.volumeMounts[{i}]");
        let name = str_at(m, "name");
        if name.is_empty() {
            errs.push(FieldErr::required(&format!("{mpath}.name"), ""));
        } else if !volumes.contains(name) {
            errs.push(not_found(&format!("{mpath}.name"), name));
        }
        if str_at(m, "mountPath").is_empty() {
            errs.push(FieldErr::required(&format!("{mpath}.mountPath"), ""));
        }
    }
}

/// Upstream's `field.NotFound` (`Not found: "x"`).
fn not_found(field: &str, value: &str) -> FieldErr {
    FieldErr {
        reason: "FieldValueNotFound",
        field: field.to_string(),
        message: format!("{field}: Not found: {}", crate::errors::quote(value)),
    }
}

fn validate_probes(c: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = c.get(probe) else { continue };
        let ppath = format!("{path}.{probe}");
        for key in [
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            if let Some(n) = p.get(key).and_then(Value::as_i64) {
                if n < 0 {
                    let msg = "must be greater than or equal to 0";
                    errs.push(FieldErr::invalid(&format!("{ppath}.{key}"), n, msg));
                }
            }
        }
        let success = p.get("successThreshold").and_then(Value::as_i64);
        if probe != "readinessProbe" && success.is_some_and(|n| n != 1) {
            let n = success.unwrap_or_default();
            errs.push(FieldErr::invalid(
                &format!("{ppath}.successThreshold"),
                n,
                "must be 1",
            ));
        }
        let handlers = ["exec", "httpGet", "tcpSocket", "grpc"];
        let count = handlers.iter().filter(|h| p.get(**h).is_some()).count();
        if count == 0 {
            errs.push(FieldErr::required(&ppath, "must specify a handler type"));
        } else if count > 1 {
            errs.push(FieldErr::forbidden(
                &ppath,
                "may not specify more than 1 handler type",
            ));
        }
    }
}

/// Resource requests and limits: valid non-negative quantities, requests <= limits.
pub fn validate_resources(r: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    let limits = parsed_list(r.get("limits"), &format!("{path}.limits"), errs);
    let req_path = format!("{path}.requests");
    let requests = parsed_list(r.get("requests"), &req_path, errs);
    for (name, (raw, req)) in &requests {
        let Some((lim_raw, lim)) = limits.get(name) else {
            continue;
        };
        if req > lim {
            let msg = format!("must be less than or equal to {name} limit of {lim_raw}");
            errs.push(FieldErr::invalid(&req_path, raw.as_str(), &msg));
        }
    }
}

type Parsed = std::collections::BTreeMap<String, (String, quantity::Nanos)>;

fn parsed_list(list: Option<&Value>, path: &str, errs: &mut Vec<FieldErr>) -> Parsed {
    let mut out = Parsed::new();
    let Some(map) = list.and_then(Value::as_object) else {
        return out;
    };
    for (name, v) in map {
        let field = format!("{path}[{name}]");
        let raw = quantity_text(v);
        match quantity::parse(&raw) {
            None => errs.push(FieldErr::invalid(&field, raw.as_str(), QUANTITY_SYNTAX_MSG)),
            Some(q) if q.0 < 0 => errs.push(FieldErr::invalid(
                &field,
                raw.as_str(),
                "must be greater than or equal to 0",
            )),
            Some(q) => {
                out.insert(name.clone(), (raw, q));
            }
        }
    }
    out
}

const QUANTITY_SYNTAX_MSG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// A quantity member as text (JSON numbers are accepted as quantities, as upstream does).
pub fn quantity_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

fn validate_toleration(t: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    let key = str_at(t, "key");
    if !key.is_empty() {
        for msg in names::is_qualified_name(key) {
            errs.push(FieldErr::invalid(&format!("{path}.key"), key, &msg));
        }
    }
    let op = str_at(t, "operator");
    match op {
        "" | "Equal" if key.is_empty() => errs.push(FieldErr::invalid(
            &format!("{path}.operator"),
            op,
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        )),
        "Exists" if !str_at(t, "value").is_empty() => errs.push(FieldErr::invalid(
            &format!("{path}.operator"),
            str_at(t, "value"),
            "value must be empty when `operator` is 'Exists'",
        )),
        "" | "Equal" | "Exists" => {}
        other => errs.push(FieldErr::not_supported(
            &format!("{path}.operator"),
            other,
            TOLERATION_OPERATORS,
        )),
    }
    let effect = str_at(t, "effect");
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        errs.push(FieldErr::not_supported(
            &format!("{path}.effect"),
            effect,
            TAINT_EFFECTS,
        ));
    }
    if t.get("tolerationSeconds").is_some_and(|v| !v.is_null()) && effect != "NoExecute" {
        errs.push(FieldErr::invalid(
            &format!("{path}.effect"),
            effect,
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podspec_defaults::default_pod_spec;
    use serde_json::json;

    fn messages(mut spec: Value) -> Vec<String> {
        default_pod_spec(&mut spec);
        validate_pod_spec(&spec, "spec")
            .into_iter()
            .map(|e| e.message)
            .collect()
    }

    #[test]
    fn pod_spec_causes() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({"containers": [{"name": "a", "image": "x"}]}), vec![]),
            (json!({}), vec!["spec.containers: Required value"]),
            (json!({"containers": [{"name": "a"}]}), vec!["spec.containers[0].image: Required value"]),
            (
                json!({"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}),
                vec!["spec.containers[1].name: Duplicate value: \"a\""],
            ),
            (
                json!({"containers": [{"name": "a", "image": "x"}], "restartPolicy": "Sometimes"}),
                vec!["spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""],
            ),
            (
                json!({"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 70000}]}]}),
                vec!["spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
            ),
            (
                json!({"containers": [{"name": "a", "image": "x"}], "volumes": [{"name": "v"}, {"name": "v"}]}),
                vec!["spec.volumes[1].name: Duplicate value: \"v\""],
            ),
            (
                json!({"containers": [{"name": "a", "image": "x", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}),
                vec!["spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"],
            ),
            (
                json!({"containers": [{"name": "a", "image": "x", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}]}),
                vec!["spec.containers[0].volumeMounts[0].name: Not found: \"nope\""],
            ),
            (
                json!({"containers": [{"name": "a", "image": "x", "livenessProbe": {"exec": {"command": ["x"]}, "successThreshold": 2}}]}),
                vec!["spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(messages(spec.clone()), want, "{spec}");
        }
    }

    #[test]
    fn container_name_must_be_dns_label() {
        let errs = messages(json!({"containers": [{"name": "A_b", "image": "x"}]}));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with(
            "spec.containers[0].name: Invalid value: \"A_b\": a lowercase RFC 1123 label"
        ));
    }
}
