//! What a Service needs from the server's allocators (cluster IPs, node ports, the
//! health-check node port), what it holds, and which allocated values an update that omits
//! them keeps: upstream's service registry decisions. The allocators' state (what is taken)
//! stays in the server; this module only decides.

use crate::errors::FieldErr;
use crate::json::{arr_at, child, str_at};
use crate::service_families::{family_of, IPV4};
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use serde_json::Value;

/// A request for one value from an allocator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request<T> {
    /// Any free value.
    Any,
    /// Exactly this value (given by the user, or kept from the stored object).
    Exactly(T),
}

/// One cluster IP a Service needs: `spec.clusterIPs[index]`, of `family` (`IPv4`/`IPv6`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpNeed {
    pub index: usize,
    pub family: String,
    pub request: Request<String>,
}

impl IpNeed {
    pub fn new(index: usize, family: &str, request: Request<String>) -> IpNeed {
        IpNeed {
            index,
            family: family.to_string(),
            request,
        }
    }
}

/// Where the node port of one entry of `spec.ports` comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodePortNeed {
    /// Its own allocation.
    Allocate(Request<i64>),
    /// The node port allocated for the earlier entry at this index, which has the same
    /// `port` number (upstream gives, e.g., TCP and UDP 53 one node port).
    SameAs(usize),
}

/// Everything a Service needs allocated, in upstream's order: cluster IP, node ports (by
/// index into `spec.ports`), health-check node port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceNeeds {
    /// The cluster IPs, one per family of `spec.ipFamilies` (none for `ExternalName` and
    /// headless services).
    pub cluster_ips: Vec<IpNeed>,
    /// `(index into spec.ports, need)` for every port that gets a node port.
    pub node_ports: Vec<(usize, NodePortNeed)>,
    /// `spec.healthCheckNodePort` (LoadBalancer with `externalTrafficPolicy: Local`).
    pub health_check_node_port: Option<Request<i64>>,
}

/// The allocated values a stored Service holds: what its deletion gives back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceHeld {
    /// `spec.clusterIPs` (without `None`).
    pub cluster_ips: Vec<String>,
    /// Node ports of `spec.ports` and the health-check node port, each once.
    pub node_ports: Vec<i64>,
}

/// Why an allocator could not give what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The value is outside the allocator's range, written as upstream prints the range
    /// (`10.0.0.0/24`, `30000-32767`).
    NotInRange(String),
    /// The value is taken.
    Allocated,
    /// No value is free.
    Full,
}

/// The need an allocator failed.
#[derive(Clone, Copy, Debug)]
pub enum FailedNeed<'a> {
    /// One of [`ServiceNeeds::cluster_ips`].
    ClusterIp(&'a Request<String>),
    /// One of [`ServiceNeeds::node_ports`]: its index into `spec.ports` and request.
    NodePort(usize, &'a Request<i64>),
    /// [`ServiceNeeds::health_check_node_port`].
    HealthCheckNodePort(&'a Request<i64>),
}

impl AllocError {
    fn ip_text(&self) -> String {
        match self {
            // Since the allocator serves every ServiceCIDR (v1.33), an address outside all of
            // them is reported without the ranges.
            AllocError::NotInRange(_) => {
                "the provided network does not match the current range".into()
            }
            AllocError::Allocated => "provided IP is already allocated".into(),
            AllocError::Full => "range is full".into(),
        }
    }

    fn port_text(&self) -> String {
        match self {
            AllocError::NotInRange(range) => format!(
                "provided port is not in the valid range. The range of valid ports is {range}"
            ),
            AllocError::Allocated => "provided port is already allocated".into(),
            AllocError::Full => "range is full".into(),
        }
    }

    /// The Status upstream's service registry answers for this failure: a requested value
    /// that cannot be had is a 422 on its field; no free value is a 500.
    pub fn to_status(&self, svc: &Value, need: FailedNeed<'_>) -> ApiError {
        let invalid = |err: FieldErr| {
            let name = str_at(svc, "metadata.name");
            ApiError::invalid("", "Service", name, vec![err.into_cause()])
        };
        match need {
            FailedNeed::ClusterIp(Request::Exactly(ip)) => {
                let ips = svc
                    .at("/spec/clusterIPs")
                    .filter(|v| v.is_array())
                    .cloned()
                    .unwrap_or_else(|| Value::from(vec![ip.clone()]));
                let detail = format!("failed to allocate IP {ip}: {}", self.ip_text());
                // v1.36 prints the list as JSON.
                let rendered = crate::errors::Bad::Raw(ips.to_string());
                invalid(FieldErr::invalid("spec.clusterIPs", rendered, &detail))
            }
            FailedNeed::ClusterIp(Request::Any) => ApiError::internal(format!(
                "failed to allocate a serviceIP: {}",
                self.ip_text()
            )),
            FailedNeed::NodePort(i, Request::Exactly(port)) => invalid(FieldErr::invalid(
                &format!("spec.ports[{i}].nodePort"),
                *port,
                &self.port_text(),
            )),
            FailedNeed::NodePort(_, Request::Any) => ApiError::internal(format!(
                "failed to allocate a nodePort: {}",
                self.port_text()
            )),
            FailedNeed::HealthCheckNodePort(Request::Exactly(port)) => ApiError::internal(format!(
                "failed to allocate requested HealthCheck NodePort {port}: {}",
                self.port_text()
            )),
            FailedNeed::HealthCheckNodePort(Request::Any) => ApiError::internal(format!(
                "failed to allocate a HealthCheck NodePort 0: {}",
                self.port_text()
            )),
        }
    }
}

fn spec_type(svc: &Value) -> &str {
    match str_at(svc, "spec.type") {
        "" => "ClusterIP",
        t => t,
    }
}

/// Upstream's `needsClusterIP`: every type but `ExternalName`.
fn needs_cluster_ip(svc: &Value) -> bool {
    spec_type(svc) != "ExternalName"
}

/// Upstream's `needsNodePort`: NodePort and LoadBalancer services.
fn needs_node_port(svc: &Value) -> bool {
    matches!(spec_type(svc), "NodePort" | "LoadBalancer")
}

/// Upstream's `NeedsHealthCheck`: LoadBalancer services with `externalTrafficPolicy: Local`.
fn needs_health_check(svc: &Value) -> bool {
    spec_type(svc) == "LoadBalancer" && str_at(svc, "spec.externalTrafficPolicy") == "Local"
}

/// Upstream's `shouldAllocateNodePorts`: NodePort, or LoadBalancer unless
/// `allocateLoadBalancerNodePorts` is false. Without it only requested ports are taken.
fn allocates_node_ports(svc: &Value) -> bool {
    match spec_type(svc) {
        "NodePort" => true,
        "LoadBalancer" => {
            svc.at("/spec/allocateLoadBalancerNodePorts") != Some(&Value::Bool(false))
        }
        _ => false,
    }
}

fn node_port(p: &Value) -> i64 {
    p.get("nodePort").and_then(Value::as_i64).unwrap_or(0)
}

fn port_number(p: &Value) -> Option<&Value> {
    p.get("port")
}

/// What `svc` (a Service about to be stored) needs from the allocators.
pub fn needs(svc: &Value) -> ServiceNeeds {
    let cluster_ips = cluster_ip_needs(svc);
    let health_check_node_port = needs_health_check(svc).then(|| {
        match svc.at("/spec/healthCheckNodePort").and_then(Value::as_i64) {
            Some(n) if n != 0 => Request::Exactly(n),
            _ => Request::Any,
        }
    });
    ServiceNeeds {
        cluster_ips,
        node_ports: node_port_needs(svc),
        health_check_node_port,
    }
}

/// Upstream's `allocClusterIPs`: one address per family of `spec.ipFamilies` (defaulted
/// before, see `service_families`), the one in `spec.clusterIPs` at its index if given.
/// Without families (a Service not yet defaulted) the one cluster IP, of its own family.
fn cluster_ip_needs(svc: &Value) -> Vec<IpNeed> {
    let ip = str_at(svc, "spec.clusterIP");
    if !needs_cluster_ip(svc) || ip == "None" {
        return Vec::new();
    }
    let ips = arr_at(svc, "spec.clusterIPs");
    let request = |i: usize| match ips.get(i).and_then(Value::as_str) {
        Some(text) if !text.is_empty() => Request::Exactly(text.to_string()),
        _ if i == 0 && !ip.is_empty() => Request::Exactly(ip.to_string()),
        _ => Request::Any,
    };
    let families = arr_at(svc, "spec.ipFamilies");
    if families.is_empty() {
        let family = family_of(ip).unwrap_or(IPV4);
        return vec![IpNeed::new(0, family, request(0))];
    }
    families
        .iter()
        .enumerate()
        .map(|(i, f)| IpNeed::new(i, f.as_str().unwrap_or(IPV4), request(i)))
        .collect()
}

/// Upstream's `initNodePorts`: entries with the same `port` share one node port; a port
/// given on any of them is the one requested.
fn node_port_needs(svc: &Value) -> Vec<(usize, NodePortNeed)> {
    if !needs_node_port(svc) {
        return Vec::new();
    }
    let allocate = allocates_node_ports(svc);
    let ports = arr_at(svc, "spec.ports");
    // (port number, index of the entry that took its node port, the value requested there)
    let mut taken: Vec<(Option<&Value>, usize, Option<i64>)> = Vec::new();
    let mut out = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let own = node_port(p);
        if own == 0 && !allocate {
            continue;
        }
        let number = port_number(p);
        match taken.iter().find(|(n, _, _)| *n == number) {
            None => {
                let requested = ports
                    .iter()
                    .find(|q| port_number(q) == number && node_port(q) != 0)
                    .map(node_port);
                let need = match requested {
                    Some(n) => Request::Exactly(n),
                    None => Request::Any,
                };
                taken.push((number, i, requested));
                out.push((i, NodePortNeed::Allocate(need)));
            }
            Some(&(_, first, requested)) => {
                let need = if own == 0 || Some(own) == requested {
                    NodePortNeed::SameAs(first)
                } else {
                    NodePortNeed::Allocate(Request::Exactly(own))
                };
                out.push((i, need));
            }
        }
    }
    out
}

/// What a stored Service holds (upstream's `releaseAllocatedResources`).
pub fn held(svc: &Value) -> ServiceHeld {
    let cluster_ips = arr_at(svc, "spec.clusterIPs")
        .iter()
        .filter_map(Value::as_str)
        .filter(|ip| !ip.is_empty() && *ip != "None")
        .map(String::from)
        .collect();
    let mut node_ports: Vec<i64> = Vec::new();
    let health = needs_health_check(svc)
        .then(|| svc.at("/spec/healthCheckNodePort").and_then(Value::as_i64))
        .flatten();
    let ports = arr_at(svc, "spec.ports").iter().map(node_port);
    for n in ports.chain(health) {
        if n > 0 && !node_ports.contains(&n) {
            node_ports.push(n);
        }
    }
    ServiceHeld {
        cluster_ips,
        node_ports,
    }
}

/// What an update from `old` to `new` (prepared: type-dependent fields dropped, allocated
/// values kept) needs beyond what `old` holds: upstream's `allocateUpdate`. A type change
/// from `ExternalName` takes a cluster IP as a create would; node ports and the health-check
/// node port `old` already holds are kept, not taken again.
pub fn update_needs(new: &Value, old: &Value) -> ServiceNeeds {
    let mut n = needs(new);
    let h = held(old);
    n.cluster_ips.retain(
        |need| !matches!(&need.request, Request::Exactly(ip) if h.cluster_ips.contains(ip)),
    );
    n.node_ports
        .retain(|(_, need)| !matches!(need, NodePortNeed::Allocate(Request::Exactly(p)) if h.node_ports.contains(p)));
    if let Some(Request::Exactly(p)) = &n.health_check_node_port {
        if h.node_ports.contains(p) {
            n.health_check_node_port = None;
        }
    }
    n
}

/// What `old` holds that `new` (as it is stored by the update) no longer does: given back
/// once the update is stored (upstream releases on commit, never before).
pub fn released(new: &Value, old: &Value) -> ServiceHeld {
    let (was, now) = (held(old), held(new));
    ServiceHeld {
        cluster_ips: was
            .cluster_ips
            .into_iter()
            .filter(|ip| !now.cluster_ips.contains(ip))
            .collect(),
        node_ports: was
            .node_ports
            .into_iter()
            .filter(|p| !now.node_ports.contains(p))
            .collect(),
    }
}

/// Upstream's `patchAllocatedValues`: an update that omits values the server allocated keeps
/// them, so resubmitting the same manifest succeeds. Node ports are matched by port name and
/// never taken by two ports.
pub fn keep_allocated(new: &mut Value, old: &Value) {
    let keep_ips = needs_cluster_ip(old) && needs_cluster_ip(new);
    let keep_node_ports = needs_node_port(old) && needs_node_port(new);
    let keep_health = needs_health_check(old) && needs_health_check(new);
    let old_ports = arr_at(old, "spec.ports");
    // Node ports the new object already names cannot be given to another of its ports.
    let used: Vec<i64> = arr_at(new, "spec.ports")
        .iter()
        .map(node_port)
        .filter(|n| *n != 0 && old_ports.iter().any(|o| node_port(o) == *n))
        .collect();
    let Some(spec) = new.as_object_mut().and_then(|m| child(m, "spec")) else {
        return;
    };
    if keep_ips {
        let ip_unset = spec.get("clusterIP").is_none_or(|v| v.is_null() || v == "");
        if let (true, Some(ip)) = (ip_unset, old.at("/spec/clusterIP")) {
            spec.insert("clusterIP".into(), ip.clone());
        }
        let ips_unset = spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        let old_ips = old
            .at("/spec/clusterIPs")
            .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()));
        if let (true, Some(ips)) = (ips_unset, old_ips) {
            spec.insert("clusterIPs".into(), ips.clone());
        }
    }
    if keep_node_ports {
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        for p in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                continue;
            }
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            let previous = old_ports
                .iter()
                .filter(|o| str_at(o, "name") == name)
                .map(node_port)
                .next_back();
            if let Some(n) = previous.filter(|n| *n != 0 && !used.contains(n)) {
                p.insert("nodePort".into(), Value::from(n));
            }
        }
    }
    if keep_health {
        let unset = spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0;
        if let (true, Some(h)) = (unset, old.at("/spec/healthCheckNodePort")) {
            spec.insert("healthCheckNodePort".into(), h.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "s", "namespace": "d"}, "spec": spec})
    }

    /// One row per upstream rule: which ports get node ports, shared ports, requested ports,
    /// `allocateLoadBalancerNodePorts` and the health-check node port.
    #[test]
    fn needs_table() {
        use NodePortNeed::{Allocate, SameAs};
        use Request::{Any, Exactly};
        let any_ip = vec![IpNeed::new(0, IPV4, Any)];
        let rows: Vec<(Value, ServiceNeeds)> = vec![
            (
                svc(json!({"ports": [{"port": 80}]})),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![],
                    health_check_node_port: None,
                },
            ),
            (
                svc(json!({"clusterIP": "10.0.0.7", "ports": [{"port": 80}]})),
                ServiceNeeds {
                    cluster_ips: vec![IpNeed::new(0, IPV4, Exactly("10.0.0.7".into()))],
                    node_ports: vec![],
                    health_check_node_port: None,
                },
            ),
            (
                svc(json!({"clusterIP": "None"})),
                ServiceNeeds {
                    cluster_ips: vec![],
                    node_ports: vec![],
                    health_check_node_port: None,
                },
            ),
            (
                svc(
                    json!({"type": "ExternalName", "externalName": "x.example.com", "ports": [{"port": 80, "nodePort": 30001}]}),
                ),
                ServiceNeeds {
                    cluster_ips: vec![],
                    node_ports: vec![],
                    health_check_node_port: None,
                },
            ),
            (
                svc(
                    json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30001}]}),
                ),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![(0, Allocate(Any)), (1, Allocate(Exactly(30001)))],
                    health_check_node_port: None,
                },
            ),
            (
                // TCP and UDP 53 share one node port; the one given on either is requested.
                svc(json!({"type": "NodePort", "ports": [
                    {"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP", "nodePort": 30053},
                    {"port": 54}, {"port": 54, "protocol": "UDP"}, {"port": 54, "nodePort": 30055}]})),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![
                        (0, Allocate(Exactly(30053))),
                        (1, SameAs(0)),
                        (2, Allocate(Exactly(30055))),
                        (3, SameAs(2)),
                        (4, SameAs(2)),
                    ],
                    health_check_node_port: None,
                },
            ),
            (
                svc(
                    json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 80, "protocol": "UDP", "nodePort": 30002}, {"port": 80, "protocol": "SCTP", "nodePort": 30003}]}),
                ),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![
                        (0, Allocate(Exactly(30002))),
                        (1, SameAs(0)),
                        (2, Allocate(Exactly(30003))),
                    ],
                    health_check_node_port: None,
                },
            ),
            (
                svc(json!({"type": "LoadBalancer", "ports": [{"port": 80}]})),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![(0, Allocate(Any))],
                    health_check_node_port: None,
                },
            ),
            (
                // allocateLoadBalancerNodePorts: false takes only the ports asked for.
                svc(
                    json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                           "ports": [{"port": 80}, {"port": 81, "nodePort": 30081}]}),
                ),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![(1, Allocate(Exactly(30081)))],
                    health_check_node_port: None,
                },
            ),
            (
                svc(
                    json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}),
                ),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![(0, Allocate(Any))],
                    health_check_node_port: Some(Any),
                },
            ),
            (
                svc(
                    json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000,
                           "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}),
                ),
                ServiceNeeds {
                    cluster_ips: any_ip.clone(),
                    node_ports: vec![],
                    health_check_node_port: Some(Exactly(31000)),
                },
            ),
            (
                // Only LoadBalancer services get a health-check node port.
                svc(
                    json!({"type": "NodePort", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}),
                ),
                ServiceNeeds {
                    cluster_ips: any_ip,
                    node_ports: vec![(0, Allocate(Any))],
                    health_check_node_port: None,
                },
            ),
        ];
        for (obj, want) in rows {
            assert_eq!(needs(&obj), want, "{obj}");
        }
    }

    /// Allocation failures as upstream's registry words them: requested values are a 422 on
    /// their field (messages without the field path in the causes), exhaustion a 500.
    #[test]
    fn allocation_failure_statuses() {
        let s = svc(json!({"clusterIP": "10.1.0.9", "clusterIPs": ["10.1.0.9"]}));
        let ip = Request::Exactly("10.1.0.9".to_string());
        let port = Request::Exactly(40000);
        let range_ip = AllocError::NotInRange("10.0.0.0/24".into());
        let range_port = AllocError::NotInRange("30000-32767".into());
        // (error, need, code, message)
        let rows: Vec<(AllocError, FailedNeed<'_>, u16, &str)> = vec![
            (range_ip, FailedNeed::ClusterIp(&ip), 422,
             "Service \"s\" is invalid: spec.clusterIPs: Invalid value: [\"10.1.0.9\"]: failed to allocate IP 10.1.0.9: the provided network does not match the current range"),
            (AllocError::Allocated, FailedNeed::ClusterIp(&ip), 422,
             "Service \"s\" is invalid: spec.clusterIPs: Invalid value: [\"10.1.0.9\"]: failed to allocate IP 10.1.0.9: provided IP is already allocated"),
            (AllocError::Full, FailedNeed::ClusterIp(&Request::Any), 500,
             "Internal error occurred: failed to allocate a serviceIP: range is full"),
            (range_port, FailedNeed::NodePort(1, &port), 422,
             "Service \"s\" is invalid: spec.ports[1].nodePort: Invalid value: 40000: provided port is not in the valid range. The range of valid ports is 30000-32767"),
            (AllocError::Allocated, FailedNeed::NodePort(0, &port), 422,
             "Service \"s\" is invalid: spec.ports[0].nodePort: Invalid value: 40000: provided port is already allocated"),
            (AllocError::Full, FailedNeed::NodePort(0, &Request::Any), 500,
             "Internal error occurred: failed to allocate a nodePort: range is full"),
            (AllocError::Allocated, FailedNeed::HealthCheckNodePort(&port), 500,
             "Internal error occurred: failed to allocate requested HealthCheck NodePort 40000: provided port is already allocated"),
            (AllocError::Full, FailedNeed::HealthCheckNodePort(&Request::Any), 500,
             "Internal error occurred: failed to allocate a HealthCheck NodePort 0: range is full"),
        ];
        for (err, need, code, message) in rows {
            let status = err.to_status(&s, need);
            assert_eq!(
                (status.code, status.message.as_str()),
                (code, message),
                "{need:?}"
            );
            for c in &status.causes {
                assert!(
                    !c.message.starts_with("spec."),
                    "cause without field path: {c:?}"
                );
            }
        }
    }

    #[test]
    fn held_values() {
        let stored = svc(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "healthCheckNodePort": 31000,
            "ports": [{"port": 53, "nodePort": 30053}, {"port": 53, "protocol": "UDP", "nodePort": 30053}, {"port": 80}]}),
        );
        assert_eq!(
            held(&stored),
            ServiceHeld {
                cluster_ips: vec!["10.0.0.5".into()],
                node_ports: vec![30053, 31000]
            }
        );
        let headless = svc(json!({"clusterIP": "None", "clusterIPs": ["None"]}));
        assert_eq!(held(&headless), ServiceHeld::default());
    }

    #[test]
    fn updates_keep_allocated_values_as_upstream() {
        let stored = svc(
            json!({"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
            "ports": [{"name": "a", "port": 80, "nodePort": 30000}, {"name": "b", "port": 81, "nodePort": 30001}]}),
        );
        let rows: Vec<(Value, Value)> = vec![
            // Omitted values come back, node ports by port name (even if the port changed).
            (
                json!({"type": "NodePort", "ports": [{"name": "a", "port": 8080}, {"name": "b", "port": 81}]}),
                json!({"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                       "ports": [{"name": "a", "port": 8080, "nodePort": 30000}, {"name": "b", "port": 81, "nodePort": 30001}]}),
            ),
            // A node port the update gives to another port is not handed out twice.
            (
                json!({"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30000}]}),
                json!({"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                       "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30000}]}),
            ),
            // Switching to ClusterIP keeps the IP but not the node ports.
            (
                json!({"type": "ClusterIP", "ports": [{"name": "a", "port": 80}]}),
                json!({"type": "ClusterIP", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                       "ports": [{"name": "a", "port": 80}]}),
            ),
            // ExternalName needs no cluster IP: nothing is carried.
            (
                json!({"type": "ExternalName", "externalName": "x.example.com"}),
                json!({"type": "ExternalName", "externalName": "x.example.com"}),
            ),
        ];
        for (spec, want) in rows {
            let mut new = svc(spec.clone());
            keep_allocated(&mut new, &stored);
            assert_eq!(new["spec"], want, "{spec}");
        }
        let lb = svc(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000}),
        );
        let mut upd = svc(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local"}));
        keep_allocated(&mut upd, &lb);
        assert_eq!(upd["spec"]["healthCheckNodePort"], json!(31000));
        let mut cluster = svc(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Cluster"}));
        keep_allocated(&mut cluster, &lb);
        assert!(cluster["spec"].get("healthCheckNodePort").is_none());
    }

    /// Type changes as upstream's `allocateUpdate`: what an update takes beyond what the
    /// stored object holds, and what it gives back once stored.
    #[test]
    fn type_change_needs_and_releases() {
        use NodePortNeed::Allocate;
        use Request::{Any, Exactly};
        let en = svc(json!({"type": "ExternalName", "externalName": "x", "ports": [{"port": 80}]}));
        let np = svc(
            json!({"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
            "ports": [{"port": 80, "nodePort": 30000}]}),
        );
        let cip = svc(
            json!({"type": "ClusterIP", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
            "ports": [{"port": 80}]}),
        );
        let lb_local = svc(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "ports": [{"port": 80, "nodePort": 30000}]}),
        );
        let none = ServiceNeeds {
            cluster_ips: vec![],
            node_ports: vec![],
            health_check_node_port: None,
        };
        // (old, new as prepared, needs, released)
        let rows: Vec<(&Value, Value, ServiceNeeds, ServiceHeld)> = vec![
            (
                &en,
                svc(json!({"type": "NodePort", "ports": [{"port": 80}]})),
                ServiceNeeds {
                    cluster_ips: vec![IpNeed::new(0, IPV4, Any)],
                    node_ports: vec![(0, Allocate(Any))],
                    health_check_node_port: None,
                },
                ServiceHeld::default(),
            ),
            (
                &en,
                svc(json!({"type": "ClusterIP", "clusterIP": "10.0.0.9", "ports": [{"port": 80}]})),
                ServiceNeeds {
                    cluster_ips: vec![IpNeed::new(0, IPV4, Exactly("10.0.0.9".into()))],
                    node_ports: vec![],
                    health_check_node_port: None,
                },
                ServiceHeld::default(),
            ),
            (
                &np,
                cip.clone(),
                none.clone(),
                ServiceHeld {
                    cluster_ips: vec![],
                    node_ports: vec![30000],
                },
            ),
            (
                &cip,
                en.clone(),
                none.clone(),
                ServiceHeld {
                    cluster_ips: vec!["10.0.0.5".into()],
                    node_ports: vec![],
                },
            ),
            (
                &np,
                en.clone(),
                none.clone(),
                ServiceHeld {
                    cluster_ips: vec!["10.0.0.5".into()],
                    node_ports: vec![30000],
                },
            ),
            // Kept values are not taken again; a new port is.
            (
                &np,
                svc(
                    json!({"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                "ports": [{"name": "a", "port": 80, "nodePort": 30000}, {"name": "b", "port": 81}]}),
                ),
                ServiceNeeds {
                    cluster_ips: vec![],
                    node_ports: vec![(1, Allocate(Any))],
                    health_check_node_port: None,
                },
                ServiceHeld::default(),
            ),
            (
                &cip,
                np.clone(),
                ServiceNeeds {
                    cluster_ips: vec![],
                    node_ports: vec![(0, Allocate(Exactly(30000)))],
                    health_check_node_port: None,
                },
                ServiceHeld::default(),
            ),
            (
                &np,
                lb_local.clone(),
                ServiceNeeds {
                    cluster_ips: vec![],
                    node_ports: vec![],
                    health_check_node_port: Some(Any),
                },
                ServiceHeld::default(),
            ),
        ];
        for (old, new, want_needs, want_released) in rows {
            assert_eq!(update_needs(&new, old), want_needs, "{old} -> {new}");
            assert_eq!(released(&new, old), want_released, "{old} -> {new}");
        }
    }
}
