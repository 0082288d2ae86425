//! Where a Service is reached, as upstream's aggregator resolves it: an `ExternalName`
//! Service at the host it names; `ClusterIP`, `NodePort` and `LoadBalancer` Services at their
//! cluster IP and the port asked for, or (endpoint routing) at a ready endpoint of their
//! EndpointSlices on the target port of that Service port. Errors are upstream's texts.

use crate::objects;
use crate::service_ref::ServiceRef;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use serde_json::Value;

/// The Service `svc` names, `None` when there is none (errors of the store are errors).
pub async fn service(st: &State, svc: &ServiceRef) -> Result<Option<Value>, String> {
    let routes = st.routes.load();
    let res = routes.core("services");
    match st.registry.get_latest(res, &svc.namespace, &svc.name).await {
        Ok((v, _)) => Ok(Some(v)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e.message),
    }
}

/// The EndpointSlices of the Service `svc` names (label `kubernetes.io/service-name`).
pub async fn endpoint_slices(st: &State, svc: &ServiceRef) -> Result<Vec<Value>, String> {
    let routes = st.routes.load();
    let Some(res) = routes.lookup("discovery.k8s.io", "v1", "endpointslices") else {
        return Ok(Vec::new());
    };
    let items = st
        .registry
        .list_all_stored(res, &svc.namespace)
        .await
        .map_err(|e| e.message)?;
    let mut out = Vec::new();
    for kv in items {
        let v = objects::parse_stored(kv.value()).map_err(|e| e.message)?;
        if v.at("/metadata/labels/kubernetes.io~1service-name")
            .and_then(Value::as_str)
            == Some(svc.name.as_str())
        {
            out.push(v);
        }
    }
    Ok(out)
}

/// The Service port whose `port` is `port`: its name and target.
pub fn service_port(service: &Value, port: i64) -> Option<&Value> {
    service
        .at("/spec/ports")
        .and_then(Value::as_array)?
        .iter()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
}

/// Whether an endpoint of `slices` is ready and has a port named `port_name`.
pub fn has_ready_endpoint(port_name: &str, slices: &[Value]) -> bool {
    ready_endpoint(port_name, slices).is_some()
}

/// The first ready address of `slices` with its port named `port_name`.
fn ready_endpoint(port_name: &str, slices: &[Value]) -> Option<(String, i64)> {
    for slice in slices {
        let port = slice
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_i64));
        let Some(port) = port else { continue };
        for ep in slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // Ready unless it says it is not (upstream: a nil `ready` is ready).
            if ep.at("/conditions/ready").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            if let Some(a) = ep
                .get("addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
            {
                return Some((a.to_owned(), port));
            }
        }
    }
    None
}

/// `host:port` of an address (IPv6 in brackets).
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Where to connect for the Service `svc` names: `host:port` (reads the Service, and its
/// EndpointSlices with endpoint routing).
pub async fn resolve(st: &State, svc: &ServiceRef, endpoints: bool) -> Result<String, String> {
    let service = service(st, svc)
        .await?
        .ok_or_else(|| format!("service \"{}\" not found", svc.name))?;
    let slices = if endpoints && needs_endpoints(&service) {
        Some(endpoint_slices(st, svc).await?)
    } else {
        None
    };
    address(&service, svc, slices.as_deref())
}

/// Whether resolving `service` with endpoint routing reads its EndpointSlices.
pub fn needs_endpoints(service: &Value) -> bool {
    matches!(
        service.at("/spec/type").and_then(Value::as_str),
        None | Some("" | "ClusterIP" | "NodePort" | "LoadBalancer")
    )
}

/// Where to connect for `service` (the Service `svc` names): `host:port`. `slices`: its
/// EndpointSlices, given for endpoint routing.
pub fn address(
    service: &Value,
    svc: &ServiceRef,
    slices: Option<&[Value]>,
) -> Result<String, String> {
    let spec = service.get("spec").unwrap_or(&Value::Null);
    let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("");
    let kind = match text("type") {
        "" => "ClusterIP",
        t => t,
    };
    match kind {
        "ExternalName" => Ok(join_host_port(text("externalName"), svc.port)),
        "ClusterIP" | "NodePort" | "LoadBalancer" => {
            let port = service_port(service, svc.port).ok_or_else(|| {
                format!(
                    "no service port {} found for service \"{}\"",
                    svc.port, svc.name
                )
            })?;
            if let Some(slices) = slices {
                let name = port.get("name").and_then(Value::as_str).unwrap_or("");
                let (ip, port) = ready_endpoint(name, slices).ok_or_else(|| {
                    format!("no endpoints available for service \"{}\"", svc.name)
                })?;
                return Ok(join_host_port(&ip, port));
            }
            match text("clusterIP") {
                "None" => Err("cannot route to service with ClusterIP \"None\"".into()),
                "" => Err(format!("service \"{}\" has no cluster IP", svc.name)),
                ip => Ok(join_host_port(ip, svc.port)),
            }
        }
        other => Err(format!("unsupported service type \"{other}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ready_endpoints_and_ports() {
        let slices = [
            json!({"ports": [{"name": "other", "port": 1}],
                   "endpoints": [{"addresses": ["10.1.0.1"]}]}),
            json!({"ports": [{"name": "https", "port": 8443}],
                   "endpoints": [{"addresses": ["10.1.0.2"], "conditions": {"ready": false}},
                                 {"addresses": ["fd00::3"], "conditions": {"ready": true}}]}),
        ];
        assert_eq!(
            ready_endpoint("https", &slices),
            Some(("fd00::3".to_string(), 8443))
        );
        assert!(!has_ready_endpoint("metrics", &slices));
        assert!(has_ready_endpoint("other", &slices));
        assert_eq!(join_host_port("fd00::3", 8443), "[fd00::3]:8443");
        let svc = json!({"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}});
        assert_eq!(service_port(&svc, 443).unwrap()["name"], "https");
        assert!(service_port(&svc, 80).is_none());
    }

    /// Where a Service is reached, from the Service (and its EndpointSlices with endpoint
    /// routing) already read: what the availability check caches for the proxy.
    #[test]
    fn addresses_of_services() {
        let svc = ServiceRef {
            namespace: "ns".into(),
            name: "api".into(),
            port: 443,
        };
        let cluster_ip = json!({"spec": {"clusterIP": "10.0.0.7",
            "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}});
        let slices = [json!({"ports": [{"name": "https", "port": 8443}],
                             "endpoints": [{"addresses": ["10.1.0.2"]}]})];
        type Case<'a> = (Value, Option<&'a [Value]>, Result<&'a str, &'a str>);
        let cases: [Case; 7] = [
            (cluster_ip.clone(), None, Ok("10.0.0.7:443")),
            (cluster_ip.clone(), Some(&slices), Ok("10.1.0.2:8443")),
            (
                cluster_ip.clone(),
                Some(&[]),
                Err("no endpoints available for service \"api\""),
            ),
            (
                json!({"spec": {"type": "ExternalName", "externalName": "localhost"}}),
                None,
                Ok("localhost:443"),
            ),
            (
                json!({"spec": {"clusterIP": "None", "ports": [{"port": 443}]}}),
                None,
                Err("cannot route to service with ClusterIP \"None\""),
            ),
            (
                json!({"spec": {"clusterIP": "10.0.0.7", "ports": [{"port": 80}]}}),
                None,
                Err("no service port 443 found for service \"api\""),
            ),
            (
                json!({"spec": {"type": "Other"}}),
                None,
                Err("unsupported service type \"Other\""),
            ),
        ];
        for (i, (service, slices, want)) in cases.into_iter().enumerate() {
            let got = address(&service, &svc, slices);
            assert_eq!(got.as_deref().map_err(String::as_str), want, "case {i}");
        }
        assert!(needs_endpoints(&cluster_ip));
        assert!(!needs_endpoints(&json!({"spec": {"type": "ExternalName"}})));
    }
}
