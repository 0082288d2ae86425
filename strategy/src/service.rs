//! Services: defaults, validation and the update rules (allocation: `service_alloc`).

use crate::errors::{Bad, FieldErr};
use crate::json::{arr_at, child, default, each_obj, str_at};
use crate::names::{self, is_valid_port_num, PORT_RANGE_MSG};
use crate::podspec_validation::PROTOCOLS;
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};
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

/// Defaults of a Service (`SetDefaults_Service`; the IP families depend on the cluster and
/// are the registry's, before allocation: `service_families::init_ip_families`).
pub fn default_service(svc: &mut Value) {
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

/// Upstream's `dropTypeDependentFields`: a type change that leaves a field unneeded clears
/// it when the update did not change it (cluster IPs and IP families leaving for
/// `ExternalName`, node ports leaving NodePort/LoadBalancer, the health-check node port,
/// `allocateLoadBalancerNodePorts` and `loadBalancerClass` leaving LoadBalancer,
/// `externalTrafficPolicy` when no longer externally accessible). Run on a defaulted update
/// before allocated values are kept; [`drop_type_dependent_status`] runs after the status
/// is carried.
pub fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let (old_ty, new_ty) = (spec_type(old).to_string(), spec_type(new).to_string());
    let same =
        |new: &Value, k: &str| new.at(&format!("/spec/{k}")) == old.at(&format!("/spec/{k}"));
    let node_ports = |v: &Value| -> Vec<i64> {
        arr_at(v, "spec.ports")
            .iter()
            .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
            .filter(|n| *n != 0)
            .collect()
    };
    let mut drop: Vec<&str> = Vec::new();
    if old_ty != "ExternalName" && new_ty == "ExternalName" {
        if same(new, "clusterIP") && same_list(new, old, "clusterIPs") {
            drop.extend(["clusterIP", "clusterIPs"]);
        }
        if same(new, "ipFamilies") {
            drop.push("ipFamilies");
        }
        if same(new, "ipFamilyPolicy") {
            drop.push("ipFamilyPolicy");
        }
    }
    let needs_node_port = |t: &str| t == "NodePort" || t == "LoadBalancer";
    let old_ports = node_ports(old);
    let drop_node_ports = needs_node_port(&old_ty)
        && !needs_node_port(&new_ty)
        && node_ports(new).iter().all(|n| old_ports.contains(n));
    let needs_hc = |v: &Value, t: &str| {
        t == "LoadBalancer" && str_at(v, "spec.externalTrafficPolicy") == "Local"
    };
    if needs_hc(old, &old_ty) && !needs_hc(new, &new_ty) && same(new, "healthCheckNodePort") {
        drop.push("healthCheckNodePort");
    }
    if old_ty == "LoadBalancer" && new_ty != "LoadBalancer" {
        let a = new.at("/spec/allocateLoadBalancerNodePorts");
        let b = old.at("/spec/allocateLoadBalancerNodePorts");
        if a.is_some_and(Value::is_boolean) && a == b {
            drop.push("allocateLoadBalancerNodePorts");
        }
        if same(new, "loadBalancerClass") {
            drop.push("loadBalancerClass");
        }
    }
    if externally_accessible(old, &old_ty)
        && !externally_accessible(new, &new_ty)
        && same(new, "externalTrafficPolicy")
    {
        drop.push("externalTrafficPolicy");
    }
    if new_ty == "ExternalName" {
        // Upstream defaulted it for ExternalName once and drops it when read.
        drop.push("internalTrafficPolicy");
    }
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for k in drop {
        spec.remove(k);
    }
    if drop_node_ports {
        for p in each_obj(spec, "ports") {
            p.remove("nodePort");
        }
    }
}

/// The status half of [`drop_type_dependent_fields`]: a Service that is not a LoadBalancer
/// has an empty load-balancer status.
pub fn drop_type_dependent_status(new: &mut Value) {
    if spec_type(new) != "LoadBalancer" {
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("loadBalancer".into(), json!({}));
        }
    }
}

/// Upstream's `sameStringSlice`: unset and empty are the same.
fn same_list(new: &Value, old: &Value, key: &str) -> bool {
    let path = format!("spec.{key}");
    arr_at(new, &path) == arr_at(old, &path)
}

/// Upstream's `ExternallyAccessible`: NodePort, LoadBalancer, or ClusterIP with external IPs.
fn externally_accessible(svc: &Value, ty: &str) -> bool {
    ty == "NodePort"
        || ty == "LoadBalancer"
        || (ty == "ClusterIP" && !arr_at(svc, "spec.externalIPs").is_empty())
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
        svc.at("/spec/selector"),
        "spec.selector",
    ));
    errs.extend(crate::service_families::validate_related(svc));
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
                // v1.36 prints the list as JSON (observed on the kit).
                Bad::Raw(Value::Array(new_ips.to_vec()).to_string()),
                "may not change once set",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "s"}, "spec": spec, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}})
    }

    /// Upstream's `dropTypeDependentFields`: unchanged fields the new type does not need are
    /// cleared; changed ones are left for validation to judge.
    #[test]
    fn type_dependent_fields_are_dropped_as_upstream() {
        let lb = svc(
            json!({"type": "LoadBalancer", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "externalTrafficPolicy": "Local",
            "healthCheckNodePort": 31000, "allocateLoadBalancerNodePorts": true, "loadBalancerClass": "c",
            "internalTrafficPolicy": "Cluster", "ports": [{"port": 80, "nodePort": 30000}]}),
        );
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut v = lb.clone();
            edit(&mut v);
            v
        };
        // (new, spec after)
        let rows: Vec<(Value, Value)> = vec![
            (
                with(&|v| {
                    v["spec"]["type"] = json!("ExternalName");
                    v["spec"]["externalName"] = json!("x");
                }),
                json!({"type": "ExternalName", "externalName": "x", "ports": [{"port": 80}]}),
            ),
            (
                with(&|v| v["spec"]["type"] = json!("ClusterIP")),
                json!({"type": "ClusterIP", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
                    "ports": [{"port": 80}]}),
            ),
            // A new node port is the user's: kept (validation refuses it).
            (
                with(&|v| {
                    v["spec"]["type"] = json!("ClusterIP");
                    v["spec"]["ports"][0]["nodePort"] = json!(30001);
                }),
                json!({"type": "ClusterIP", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
                    "ports": [{"port": 80, "nodePort": 30001}]}),
            ),
            (
                with(&|v| v["spec"]["externalTrafficPolicy"] = json!("Cluster")),
                with(&|v| {
                    v["spec"]["externalTrafficPolicy"] = json!("Cluster");
                    v["spec"]
                        .as_object_mut()
                        .unwrap()
                        .remove("healthCheckNodePort");
                })["spec"]
                    .clone(),
            ),
        ];
        for (mut new, want) in rows {
            drop_type_dependent_fields(&mut new, &lb);
            drop_type_dependent_status(&mut new);
            assert_eq!(new["spec"], want, "{new}");
            let lb_status = new["spec"]["type"] == "LoadBalancer";
            assert_eq!(
                new["status"]["loadBalancer"] != json!({}),
                lb_status,
                "{new}"
            );
        }
    }
}
