//! Services: defaults, validation and the update rules (allocation: `service_alloc`).

use crate::errors::{Bad, FieldErr};
use crate::json::{arr_at, child, default, each_obj, str_at};
use crate::names::{self, is_valid_port_num, PORT_RANGE_MSG};
use crate::podspec_validation::PROTOCOLS;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// Default `sessionAffinityConfig.clientIP.timeoutSeconds` (3 hours).
pub const CLIENT_IP_TIMEOUT_SECONDS_DEFAULT: i64 = 10_800;
const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const AFFINITIES: &[&str] = &["ClientIP", "None"];

fn spec_type(svc: &Value) -> &str {
    match str_at(svc, "spec.type") {
        "" => "ClusterIP",
        t => t,
    }
}

fn is_headless(svc: &Value) -> bool {
    str_at(svc, "spec.clusterIP") == "None"
}

/// Defaults of a Service (`SetDefaults_Service` plus the registry's IP-family defaults for a
/// single-stack IPv4 cluster).
pub fn default_service(svc: &mut Value) {
    let headless = is_headless(svc);
    let has_selector = svc
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    let Some(spec) = svc.as_object_mut().and_then(|m| child(m, "spec")) else {
        return;
    };
    default(spec, "sessionAffinity", json!("None"));
    default(spec, "type", json!("ClusterIP"));
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        if let Some(c) = child(spec, "sessionAffinityConfig").and_then(|c| child(c, "clientIP")) {
            default(
                c,
                "timeoutSeconds",
                json!(CLIENT_IP_TIMEOUT_SECONDS_DEFAULT),
            );
        }
    }
    for p in each_obj(spec, "ports") {
        default(p, "protocol", json!("TCP"));
        let tp_unset = matches!(p.get("targetPort"), None | Some(Value::Null))
            || p.get("targetPort") == Some(&json!(0))
            || p.get("targetPort") == Some(&json!(""));
        if tp_unset {
            if let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if ty == "NodePort" || ty == "LoadBalancer" {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if ty != "ExternalName" {
        default(spec, "internalTrafficPolicy", json!("Cluster"));
        default_ip_families(spec, headless && !has_selector);
    }
    let cluster_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !cluster_ip.is_empty() {
        default(spec, "clusterIPs", json!([cluster_ip]));
    }
}

fn default_ip_families(spec: &mut Map<String, Value>, headless_without_selector: bool) {
    let policy = if headless_without_selector {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    default(spec, "ipFamilyPolicy", json!(policy));
    let has_families = spec
        .get("ipFamilies")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !has_families {
        spec.insert("ipFamilies".into(), json!(["IPv4"]));
    }
}

/// Status of a new Service: an empty load-balancer status.
pub fn initial_status() -> Value {
    json!({"loadBalancer": {}})
}

/// Validates a Service spec.
pub fn validate(svc: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let ty = spec_type(svc);
    if !TYPES.contains(&ty) {
        errs.push(FieldErr::not_supported("spec.type", ty, TYPES));
    }
    let ports = arr_at(svc, "spec.ports");
    if ports.is_empty() && !is_headless(svc) && ty != "ExternalName" {
        errs.push(FieldErr::required("spec.ports", ""));
    }
    let mut names_seen = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        validate_port(
            p,
            &format!("spec.ports[{i}]"),
            ports.len() > 1,
            &mut names_seen,
            &mut errs,
        );
        if ty == "ClusterIP" && p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
            errs.push(FieldErr::forbidden(
                &format!("spec.ports[{i}].nodePort"),
                "may not be used when `type` is 'ClusterIP'",
            ));
        }
    }
    let affinity = str_at(svc, "spec.sessionAffinity");
    if !affinity.is_empty() && !AFFINITIES.contains(&affinity) {
        errs.push(FieldErr::not_supported(
            "spec.sessionAffinity",
            affinity,
            AFFINITIES,
        ));
    }
    if ty == "ExternalName" {
        let name = str_at(svc, "spec.externalName");
        if name.is_empty() {
            errs.push(FieldErr::required("spec.externalName", ""));
        } else {
            for msg in names::is_dns1123_subdomain(name.trim_end_matches('.')) {
                errs.push(FieldErr::invalid("spec.externalName", name, &msg));
            }
        }
    }
    errs.extend(crate::selector::validate_labels(
        svc.pointer("/spec/selector"),
        "spec.selector",
    ));
    validate_cluster_ips(svc, &mut errs);
    errs
}

fn validate_port(
    p: &Value,
    path: &str,
    multi: bool,
    seen: &mut HashSet<String>,
    errs: &mut Vec<FieldErr>,
) {
    let name = str_at(p, "name");
    let name_field = format!("{path}.name");
    if name.is_empty() {
        if multi {
            errs.push(FieldErr::required(&name_field, ""));
        }
    } else {
        for msg in names::is_dns1123_label(name) {
            errs.push(FieldErr::invalid(&name_field, name, &msg));
        }
        if !seen.insert(name.to_string()) {
            errs.push(FieldErr::duplicate(&name_field, name));
        }
    }
    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !is_valid_port_num(port) {
        errs.push(FieldErr::invalid(
            &format!("{path}.port"),
            port,
            PORT_RANGE_MSG,
        ));
    }
    let proto = str_at(p, "protocol");
    if proto.is_empty() {
        errs.push(FieldErr::required(&format!("{path}.protocol"), ""));
    } else if !PROTOCOLS.contains(&proto) {
        errs.push(FieldErr::not_supported(
            &format!("{path}.protocol"),
            proto,
            PROTOCOLS,
        ));
    }
    validate_target_port(p.get("targetPort"), &format!("{path}.targetPort"), errs);
}

fn validate_target_port(tp: Option<&Value>, field: &str, errs: &mut Vec<FieldErr>) {
    match tp {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if !is_valid_port_num(n) {
                errs.push(FieldErr::invalid(field, n, PORT_RANGE_MSG));
            }
        }
        Some(Value::String(s)) => {
            for msg in names::is_valid_port_name(s) {
                errs.push(FieldErr::invalid(field, s.as_str(), &msg));
            }
        }
        _ => {}
    }
}

fn validate_cluster_ips(svc: &Value, errs: &mut Vec<FieldErr>) {
    let ip = str_at(svc, "spec.clusterIP");
    let ips = arr_at(svc, "spec.clusterIPs");
    if let Some(first) = ips.first().and_then(Value::as_str) {
        if !ip.is_empty() && first != ip {
            errs.push(FieldErr::invalid(
                "spec.clusterIPs[0]",
                first,
                "must match `clusterIP` when both are specified",
            ));
        }
    }
    if !ip.is_empty() && ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
        errs.push(FieldErr::invalid(
            "spec.clusterIPs[0]",
            ip,
            "must be empty, 'None', or a valid IP address",
        ));
    }
}

/// Update rules: allocated cluster IPs cannot change (unless converting to/from ExternalName).
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if spec_type(old) == "ExternalName" || spec_type(new) == "ExternalName" {
        return errs;
    }
    let new_ips = arr_at(new, "spec.clusterIPs");
    for (i, old_ip) in arr_at(old, "spec.clusterIPs").iter().enumerate() {
        if new_ips.get(i).is_some_and(|n| n != old_ip) {
            errs.push(FieldErr::invalid(
                &format!("spec.clusterIPs[{i}]"),
                Bad::Raw(crate::errors::go_string_slice(
                    new.pointer("/spec/clusterIPs"),
                )),
                "may not change once set",
            ));
        }
    }
    errs
}
