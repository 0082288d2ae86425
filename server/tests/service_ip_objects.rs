//! Cluster IPs as `networking.k8s.io/v1` objects, against the real binary, as upstream's
//! v1.36 apiserver keeps them (compared on a v1.36.2 kube-apiserver with
//! `--service-cluster-ip-range 10.0.0.0/24`): the default ServiceCIDR, one IPAddress per
//! allocated cluster IP (the `kubernetes` service's too), deleted with its Service; an IP
//! held by an IPAddress cannot be had; extra ServiceCIDRs serve their ranges; validation
//! answers as upstream's; a restart keeps the objects consistent.

mod common;

use common::{eventually, server, Server};
use serde_json::{json, Value};
use std::time::Duration;

const IPS: &str = "/apis/networking.k8s.io/v1/ipaddresses";
const CIDRS: &str = "/apis/networking.k8s.io/v1/servicecidrs";

fn create_service(s: &Server, ns: &str, name: &str, cluster_ip: Option<&str>) -> common::Http {
    let mut spec = json!({"ports": [{"port": 80}]});
    if let Some(ip) = cluster_ip {
        spec["clusterIP"] = json!(ip);
    }
    s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}),
    )
}

fn cluster_ip(svc: &Value) -> String {
    svc["spec"]["clusterIP"].as_str().unwrap().to_string()
}

fn ip_address(s: &Server, ip: &str) -> common::Http {
    s.get(&format!("{IPS}/{ip}"))
}

fn user_ip_address(ip: &str, parent: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
           "metadata": {"name": ip}, "spec": {"parentRef": parent}})
}

/// The code, reason and message of a Status answer.
fn status(h: &common::Http) -> (u16, String, String) {
    let v = h.json();
    (
        v["code"].as_u64().unwrap_or(0) as u16,
        v["reason"].as_str().unwrap_or("").to_string(),
        v["message"].as_str().unwrap_or("").to_string(),
    )
}

fn assert_ip_object_of(s: &Server, ip: &str, ns: &str, name: &str) {
    let got = ip_address(s, ip);
    assert_eq!(got.status, 200, "{}", got.text());
    let v = got.json();
    assert_eq!(
        v["metadata"]["labels"],
        json!({"ipaddress.kubernetes.io/ip-family": "IPv4",
               "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}),
        "{v}"
    );
    assert_eq!(
        v["spec"],
        json!({"parentRef": {"resource": "services", "namespace": ns, "name": name}}),
        "{v}"
    );
}

#[test]
fn default_service_cidr_is_ready() {
    let s = server();
    let got = s.get(&format!("{CIDRS}/kubernetes"));
    assert_eq!(got.status, 200, "{}", got.text());
    let v = got.json();
    assert_eq!(v["spec"], json!({"cidrs": ["10.0.0.0/24"]}));
    let conditions = v["status"]["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 1, "{v}");
    let c = &conditions[0];
    assert_eq!(
        (&c["type"], &c["status"], &c["reason"], &c["message"]),
        (
            &json!("Ready"),
            &json!("True"),
            &json!(""),
            // The controller manager's servicecidrs controller (in-process here) replaces
            // the API server's "Kubernetes default Service CIDR is ready", as on the kit.
            &json!("Kubernetes Service CIDR is ready")
        )
    );
    assert_eq!(
        v["metadata"]["finalizers"],
        json!(["networking.k8s.io/service-cidr-finalizer"])
    );
    assert!(c["lastTransitionTime"].is_string(), "{c}");
    // kubectl reads it too.
    let out = s.ok(&["get", "servicecidrs", "-o", "name"]);
    assert!(
        out.contains("servicecidr.networking.k8s.io/kubernetes"),
        "{out}"
    );
}

#[test]
fn kubernetes_service_has_its_ip_address() {
    let s = server();
    let svc = s
        .get("/api/v1/namespaces/default/services/kubernetes")
        .json();
    assert_eq!(cluster_ip(&svc), "10.0.0.1");
    assert_ip_object_of(s, "10.0.0.1", "default", "kubernetes");
}

#[test]
fn service_lifecycle_creates_and_deletes_its_ip_address() {
    // Its own server: the test asks for IPs other tests' services could be given.
    let s = &Server::start(&[]);
    let ns = s.namespace("ipobj-life");
    let created = create_service(s, &ns, "s1", None);
    assert_eq!(created.status, 201, "{}", created.text());
    let ip = cluster_ip(&created.json());
    assert_ip_object_of(s, &ip, &ns, "s1");
    // kubectl lists it.
    let names = s.ok(&["get", "ipaddresses", "-o", "name"]);
    assert!(
        names.contains(&format!("ipaddress.networking.k8s.io/{ip}")),
        "{names}"
    );
    // Headless and ExternalName services take no IP and get no object.
    let before = s.get(IPS).json()["items"].as_array().unwrap().len();
    assert_eq!(create_service(s, &ns, "headless", Some("None")).status, 201);
    assert_eq!(s.get(IPS).json()["items"].as_array().unwrap().len(), before);
    s.ok(&["delete", "service", "s1", "-n", &ns]);
    assert_eq!(ip_address(s, &ip).status, 404);
    // The IP can be had again.
    let again = create_service(s, &ns, "s2", Some(&ip));
    assert_eq!(again.status, 201, "{}", again.text());
    assert_ip_object_of(s, &ip, &ns, "s2");
}

#[test]
fn ip_held_by_an_ip_address_cannot_be_allocated() {
    let s = &Server::start(&[]);
    let ns = s.namespace("ipobj-held");
    let ip = "10.0.0.200";
    let made = s.send_json(
        "POST",
        IPS,
        &user_ip_address(
            ip,
            json!({"resource": "services", "name": "foo", "namespace": ns}),
        ),
    );
    assert_eq!(made.status, 201, "{}", made.text());
    let refused = create_service(s, &ns, "b", Some(ip));
    assert_eq!(
        status(&refused),
        (
            422,
            "Invalid".into(),
            "Service \"b\" is invalid: spec.clusterIPs: Invalid value: [\"10.0.0.200\"]: failed to allocate IP 10.0.0.200: provided IP is already allocated".into()
        )
    );
    let cause = &refused.json()["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.clusterIPs");
    // So is the kubernetes service's.
    let (code, _, message) = status(&create_service(s, &ns, "c", Some("10.0.0.1")));
    assert_eq!(code, 422);
    assert!(
        message.ends_with("provided IP is already allocated"),
        "{message}"
    );
    // Outside every ServiceCIDR, as upstream's multi-range allocator words it.
    let (code, _, message) = status(&create_service(s, &ns, "d", Some("10.99.0.6")));
    assert_eq!(
        (code, message.as_str()),
        (422, "Service \"d\" is invalid: spec.clusterIPs: Invalid value: [\"10.99.0.6\"]: failed to allocate IP 10.99.0.6: the provided network does not match the current range")
    );
    // The user's object is left alone.
    let kept = ip_address(s, ip).json();
    assert_eq!(kept["spec"]["parentRef"]["name"], "foo");
    assert!(kept["metadata"].get("labels").is_none(), "{kept}");
    assert_eq!(
        s.http("DELETE", &format!("{IPS}/{ip}"), &[], None).status,
        200
    );
    let freed = create_service(s, &ns, "b", Some(ip));
    assert_eq!(freed.status, 201, "{}", freed.text());
}

#[test]
fn extra_service_cidr_serves_its_range() {
    let s = server();
    let ns = s.namespace("ipobj-cidr");
    let made = s.send_json(
        "POST",
        CIDRS,
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
                "metadata": {"name": "extra"}, "spec": {"cidrs": ["10.7.0.0/24"]}}),
    );
    assert_eq!(made.status, 201, "{}", made.text());
    assert_eq!(made.json()["status"], json!({}));
    // The allocator's controller picks it up from its watch.
    assert!(
        eventually(Duration::from_secs(10), || {
            create_service(s, &ns, "in-extra", Some("10.7.0.5")).status == 201
        }),
        "10.7.0.5 never became allocatable"
    );
    assert_ip_object_of(s, "10.7.0.5", &ns, "in-extra");
    // The controller manager's servicecidrs controller (in-process) keeps it Ready: a
    // user's Ready=False is set back, as upstream's controller does (read from its v1.36
    // source; which ServiceCIDRs are served when not ready: `ready_ranges_table`).
    let not_ready = s.send_json("PUT", &format!("{CIDRS}/extra/status"), &{
        let mut v = s.get(&format!("{CIDRS}/extra")).json();
        v["status"] = json!({"conditions": [{"type": "Ready", "status": "False",
                "reason": "x", "message": "m", "lastTransitionTime": "2020-01-01T00:00:00Z"}]});
        v
    });
    assert_eq!(not_ready.status, 200, "{}", not_ready.text());
    assert!(
        eventually(Duration::from_secs(10), || {
            let v = s.get(&format!("{CIDRS}/extra")).json();
            let c = &v["status"]["conditions"][0];
            c["status"] == "True" && c["message"] == "Kubernetes Service CIDR is ready"
        }),
        "Ready=False was never set back"
    );
    assert!(
        eventually(Duration::from_secs(10), || {
            create_service(s, &ns, "in-extra-2", Some("10.7.0.6")).status == 201
        }),
        "10.7.0.6 not allocatable once Ready again"
    );
    assert_eq!(
        s.http("DELETE", &format!("{CIDRS}/extra"), &[], None)
            .status,
        200
    );
}

/// Validation answers as upstream v1.36's (observed on the kit).
#[test]
fn validation_matches_upstream() {
    let s = server();
    let rows: Vec<(&str, Value, &str)> = vec![
        (IPS, user_ip_address("10.0.0.07", json!({"resource": "services", "name": "x"})),
         "IPAddress.networking.k8s.io \"10.0.0.07\" is invalid: metadata.name: Invalid value: \"10.0.0.07\": must not have leading 0s"),
        (IPS, user_ip_address("foo", json!({"resource": "services", "name": "x"})),
         "IPAddress.networking.k8s.io \"foo\" is invalid: metadata.name: Invalid value: \"foo\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
        (IPS, user_ip_address("2001:db8::0001", json!({"resource": "services", "name": "x"})),
         "IPAddress.networking.k8s.io \"2001:db8::0001\" is invalid: metadata.name: Invalid value: \"2001:db8::0001\": must be in canonical form (\"2001:db8::1\")"),
        (IPS, user_ip_address("10.0.0.77", json!({})),
         "IPAddress.networking.k8s.io \"10.0.0.77\" is invalid: [spec.parentRef.resource: Required value, spec.parentRef.name: Required value]"),
        (IPS, user_ip_address("10.0.0.78", json!({"resource": "a/b", "name": "..", "namespace": "%"})),
         "IPAddress.networking.k8s.io \"10.0.0.78\" is invalid: [spec.parentRef.resource: Invalid value: \"a/b\": may not contain '/', spec.parentRef.name: Invalid value: \"..\": may not be '..', spec.parentRef.namespace: Invalid value: \"%\": may not contain '%']"),
        (CIDRS, json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "v"}, "spec": {}}),
         "ServiceCIDR.networking.k8s.io \"v\" is invalid: spec.cidrs: Required value: at least one CIDR required"),
        (CIDRS, json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "v"}, "spec": {"cidrs": ["10.1.0.0/16", "10.2.0.0/16"]}}),
         "ServiceCIDR.networking.k8s.io \"v\" is invalid: spec.cidrs: Invalid value: [\"10.1.0.0/16\",\"10.2.0.0/16\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"),
        (CIDRS, json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "v"}, "spec": {"cidrs": ["10.1.0.1/16"]}}),
         "ServiceCIDR.networking.k8s.io \"v\" is invalid: spec.cidrs[0]: Invalid value: \"10.1.0.1/16\": must not have bits set beyond the prefix length"),
    ];
    for (path, body, message) in rows {
        let got = s.send_json("POST", path, &body);
        assert_eq!(
            status(&got),
            (422, "Invalid".into(), message.into()),
            "{body}"
        );
    }
    // Specs are immutable.
    let ns = s.namespace("ipobj-valid");
    // Outside the range: no service of another test can hold it.
    let ip = "10.250.0.79";
    let parent = json!({"resource": "services", "name": "x", "namespace": ns});
    assert_eq!(
        s.send_json("POST", IPS, &user_ip_address(ip, parent))
            .status,
        201
    );
    let mut changed = ip_address(s, ip).json();
    changed["spec"]["parentRef"]["name"] = json!("y");
    let got = s.send_json("PUT", &format!("{IPS}/{ip}"), &changed);
    assert_eq!(
        status(&got),
        (422, "Invalid".into(), format!("IPAddress.networking.k8s.io \"{ip}\" is invalid: spec.parentRef: Invalid value: {{\"Group\":\"\",\"Resource\":\"services\",\"Namespace\":\"{ns}\",\"Name\":\"y\"}}: field is immutable"))
    );
    s.http("DELETE", &format!("{IPS}/{ip}"), &[], None);
    let mut cidr = s.get(&format!("{CIDRS}/kubernetes")).json();
    cidr["spec"]["cidrs"] = json!(["10.8.0.0/24"]);
    let got = s.send_json("PUT", &format!("{CIDRS}/kubernetes"), &cidr);
    assert_eq!(
        status(&got),
        (422, "Invalid".into(), "ServiceCIDR.networking.k8s.io \"kubernetes\" is invalid: spec.cidrs[0]: Invalid value: \"10.8.0.0/24\": field is immutable".into())
    );
}

/// A restart on the same data finds one IPAddress per cluster IP: kept ones unchanged, a
/// missing one recreated, an orphan the allocator made removed, a user's kept.
#[test]
fn restart_keeps_ip_addresses_consistent() {
    if !common::persistent_backend() {
        return;
    }
    let s = Server::start(&[]);
    let ns = s.namespace("ipobj-restart");
    let a = cluster_ip(&create_service(&s, &ns, "a", None).json());
    let b = cluster_ip(&create_service(&s, &ns, "b", None).json());
    let a_uid = ip_address(&s, &a).json()["metadata"]["uid"].clone();
    let node_port = |name: &str| {
        s.send_json(
            "POST",
            &format!("/api/v1/namespaces/{ns}/services"),
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                    "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30100}]}}),
        )
    };
    let made = node_port("np");
    assert_eq!(made.status, 201, "{}", made.text());
    let np_ip0 = cluster_ip(&made.json());
    // b's object goes missing; an allocator-made object outlives its service (a crash
    // between the two writes); a user's object names no live service.
    assert_eq!(
        s.http("DELETE", &format!("{IPS}/{b}"), &[], None).status,
        200
    );
    // Two IPs neither service was given (the allocator picks at random).
    let free: Vec<String> = (240..256)
        .map(|i| format!("10.0.0.{i}"))
        .filter(|ip| *ip != a && *ip != b && *ip != np_ip0)
        .take(2)
        .collect();
    let (orphan_ip, users_ip) = (free[0].as_str(), free[1].as_str());
    let mut orphan = user_ip_address(
        orphan_ip,
        json!({"resource": "services", "name": "gone", "namespace": ns}),
    );
    orphan["metadata"]["labels"] = json!({"ipaddress.kubernetes.io/ip-family": "IPv4",
        "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"});
    let users = user_ip_address(
        users_ip,
        json!({"resource": "services", "name": "gone", "namespace": ns}),
    );
    assert_eq!(s.send_json("POST", IPS, &orphan).status, 201);
    assert_eq!(s.send_json("POST", IPS, &users).status, 201);
    let cidr_uid = s.get(&format!("{CIDRS}/kubernetes")).json()["metadata"]["uid"].clone();
    let (tmp, dir) = s.into_data();

    let s = Server::start_at(tmp, dir, &[]);
    assert_eq!(ip_address(&s, &a).json()["metadata"]["uid"], a_uid);
    assert_ip_object_of(&s, &b, &ns, "b");
    assert_eq!(ip_address(&s, orphan_ip).status, 404);
    assert_eq!(ip_address(&s, users_ip).status, 200);
    assert_ip_object_of(&s, "10.0.0.1", "default", "kubernetes");
    assert_eq!(
        s.get(&format!("{CIDRS}/kubernetes")).json()["metadata"]["uid"],
        cidr_uid
    );
    // One object per IP, and the taken set rebuilt: the held IPs cannot be had.
    let items = s.get(IPS).json()["items"].as_array().unwrap().clone();
    let mut names: Vec<&str> = items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    names.sort();
    let np_ip = cluster_ip(
        &s.get(&format!("/api/v1/namespaces/{ns}/services/np"))
            .json(),
    );
    let mut want = vec!["10.0.0.1", a.as_str(), b.as_str(), users_ip, np_ip.as_str()];
    want.sort();
    assert_eq!(names, want);
    for (name, ip) in [("x", &a), ("y", &b)] {
        let (code, _, message) = status(&create_service(&s, &ns, name, Some(ip)));
        assert_eq!(code, 422, "{message}");
        assert!(
            message.ends_with("provided IP is already allocated"),
            "{message}"
        );
    }
    // Node ports are restored from the same listing.
    let (code, _, message) = status(&s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np2"},
                "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30100}]}}),
    ));
    assert_eq!(
        (code, message.as_str()),
        (422, "Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: 30100: provided port is already allocated")
    );
    // The orphan's IP is free again.
    assert_eq!(create_service(&s, &ns, "z", Some(orphan_ip)).status, 201);
}

fn replace_service(
    s: &Server,
    ns: &str,
    name: &str,
    edit: impl FnOnce(&mut Value),
) -> common::Http {
    let path = format!("/api/v1/namespaces/{ns}/services/{name}");
    let mut v = s.get(&path).json();
    edit(&mut v);
    s.send_json("PUT", &path, &v)
}

/// Type changes take and give back as upstream v1.36's (compared on the kit, where a PUT
/// of the whole stored object with only the type changed clears what the new type does
/// not need): ExternalName→NodePort takes a cluster IP (its IPAddress appears) and a node
/// port; NodePort→ClusterIP gives the node port back; ClusterIP→ExternalName gives the IP
/// back (its IPAddress goes); an update that fails gives back what it took.
#[test]
fn type_changes_take_and_give_back() {
    let s = &Server::start(&["--service-node-port-range", "30000-30001"]);
    let ns = s.namespace("ipobj-type");
    let made = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "en"},
                "spec": {"type": "ExternalName", "externalName": "x.example.com", "ports": [{"port": 80}]}}),
    );
    assert_eq!(made.status, 201, "{}", made.text());
    let np = replace_service(s, &ns, "en", |v| {
        v["spec"]["type"] = json!("NodePort");
        v["spec"].as_object_mut().unwrap().remove("externalName");
    });
    assert_eq!(np.status, 200, "{}", np.text());
    let v = np.json();
    let ip = cluster_ip(&v);
    assert_eq!(v["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(v["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(v["spec"]["ipFamilyPolicy"], json!("SingleStack"));
    let port = v["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert_ip_object_of(s, &ip, &ns, "en");
    // NodePort→ClusterIP: the node port goes back (another service can have it).
    let cip = replace_service(s, &ns, "en", |v| v["spec"]["type"] = json!("ClusterIP"));
    assert_eq!(cip.status, 200, "{}", cip.text());
    let v = cip.json();
    assert!(v["spec"]["ports"][0].get("nodePort").is_none(), "{v}");
    assert!(v["spec"].get("externalTrafficPolicy").is_none(), "{v}");
    assert_eq!(cluster_ip(&v), ip);
    let other = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "other"},
                "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": port}]}}),
    );
    assert_eq!(other.status, 201, "{}", other.text());
    // ClusterIP→ExternalName: the IP and its IPAddress go.
    let en = replace_service(s, &ns, "en", |v| {
        v["spec"]["type"] = json!("ExternalName");
        v["spec"]["externalName"] = json!("y.example.com");
    });
    assert_eq!(en.status, 200, "{}", en.text());
    let v = en.json();
    for k in [
        "clusterIP",
        "clusterIPs",
        "ipFamilies",
        "ipFamilyPolicy",
        "internalTrafficPolicy",
    ] {
        assert!(v["spec"].get(k).is_none(), "{k}: {v}");
    }
    assert_eq!(ip_address(s, &ip).status, 404);
    assert_eq!(create_service(s, &ns, "again", Some(&ip)).status, 201);
    // A failed update gives back what it took: the last node port is taken by "other"'s
    // sibling, so ExternalName→NodePort asking for two ports fails after taking the IP.
    let third = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "third"},
                "spec": {"type": "NodePort", "ports": [{"port": 80}]}}),
    );
    assert_eq!(third.status, 201, "{}", third.text());
    let before = s.get(IPS).json()["items"].as_array().unwrap().len();
    let full = replace_service(s, &ns, "en", |v| {
        v["spec"]["type"] = json!("NodePort");
        v["spec"].as_object_mut().unwrap().remove("externalName");
    });
    assert_eq!(
        status(&full),
        (
            500,
            "InternalError".into(),
            "Internal error occurred: failed to allocate a nodePort: range is full".into()
        )
    );
    assert_eq!(s.get(IPS).json()["items"].as_array().unwrap().len(), before);
    let kept = s
        .get(&format!("/api/v1/namespaces/{ns}/services/en"))
        .json();
    assert_eq!(kept["spec"]["type"], "ExternalName");
}

/// A dual-stack server (`10.0.0.0/24,fd00:10:96::/112`, as the kit's): the default
/// ServiceCIDR carries both ranges, the `kubernetes` service stays single-stack in the
/// primary family, PreferDualStack gets one IP per family and an IPAddress for each (the
/// IPv6 one named in canonical form), and deletion frees both.
#[test]
fn dual_stack_services_get_an_ip_per_family() {
    let s = &Server::start(&["--service-cluster-ip-range", "10.0.0.0/24,fd00:10:96::/112"]);
    let cidr = s.get(&format!("{CIDRS}/kubernetes")).json();
    assert_eq!(
        cidr["spec"]["cidrs"],
        json!(["10.0.0.0/24", "fd00:10:96::/112"])
    );
    let k = s
        .get("/api/v1/namespaces/default/services/kubernetes")
        .json();
    assert_eq!(k["spec"]["clusterIPs"], json!(["10.0.0.1"]));
    assert_eq!(k["spec"]["ipFamilies"], json!(["IPv4"]));
    let ns = s.namespace("ipobj-dual");
    let made = s.kubectl_stdin(
        &["create", "-n", &ns, "-f", "-", "-o", "json"],
        r#"{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pd"},
            "spec": {"ipFamilyPolicy": "PreferDualStack", "ports": [{"port": 80}]}}"#,
    );
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let v: Value = serde_json::from_slice(&made.stdout).unwrap();
    assert_eq!(v["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    let ips: Vec<String> = v["spec"]["clusterIPs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ips.len(), 2, "{v}");
    assert_eq!(cluster_ip(&v), ips[0]);
    assert!(ips[0].starts_with("10.0.0."), "{ips:?}");
    let v6: std::net::Ipv6Addr = ips[1].parse().unwrap();
    assert_eq!(v6.to_string(), ips[1], "canonical text");
    assert!(ips[1].starts_with("fd00:10:96::"), "{ips:?}");
    assert_ip_object_of(s, &ips[0], &ns, "pd");
    let six = ip_address(s, &ips[1]).json();
    assert_eq!(
        six["metadata"]["labels"]["ipaddress.kubernetes.io/ip-family"],
        "IPv6"
    );
    assert_eq!(six["spec"]["parentRef"]["name"], "pd");
    // IPv6 only, on request.
    let v6only = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "six"},
                "spec": {"ipFamilies": ["IPv6"], "ports": [{"port": 80}]}}),
    );
    assert_eq!(v6only.status, 201, "{}", v6only.text());
    assert_eq!(v6only.json()["spec"]["ipFamilyPolicy"], "SingleStack");
    s.ok(&["delete", "service", "pd", "-n", &ns]);
    for ip in &ips {
        assert_eq!(ip_address(s, ip).status, 404, "{ip}");
    }
}

/// RequireDualStack on a single-stack server is refused with upstream's message.
#[test]
fn require_dual_stack_is_refused_on_single_stack() {
    let s = server();
    let ns = s.namespace("ipobj-single");
    let got = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "rd"},
                "spec": {"ipFamilyPolicy": "RequireDualStack", "ports": [{"port": 80}]}}),
    );
    assert_eq!(
        status(&got),
        (422, "Invalid".into(), "Service \"rd\" is invalid: spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services".into())
    );
    let got = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "v6"},
                "spec": {"ipFamilies": ["IPv6"], "ports": [{"port": 80}]}}),
    );
    assert_eq!(
        status(&got).2,
        "Service \"v6\" is invalid: spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"
    );
}

/// The ServiceCIDR finalizer as upstream's servicecidrs controller keeps it (compared on
/// the kit with the controller manager running): a new ServiceCIDR gets the finalizer and
/// Ready; deleted while a Service holds an IP only it contains, it stays with
/// Ready=False/Terminating; once the IP is free it goes (after the 10 s grace).
#[test]
fn service_cidr_deletion_waits_for_its_ips() {
    let s = &Server::start(&[]);
    let ns = s.namespace("ipobj-fin");
    let made = s.send_json(
        "POST",
        CIDRS,
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
                "metadata": {"name": "extra"}, "spec": {"cidrs": ["10.9.0.0/24"]}}),
    );
    assert_eq!(made.status, 201, "{}", made.text());
    // Upstream's API server itself adds no finalizer.
    assert!(made.json()["metadata"].get("finalizers").is_none());
    let path = format!("{CIDRS}/extra");
    assert!(
        eventually(Duration::from_secs(10), || {
            let v = s.get(&path).json();
            v["metadata"]["finalizers"] == json!(["networking.k8s.io/service-cidr-finalizer"])
                && v["status"]["conditions"][0]["message"] == "Kubernetes Service CIDR is ready"
        }),
        "{}",
        s.get(&path).text()
    );
    assert!(
        eventually(Duration::from_secs(10), || {
            let code = create_service(s, &ns, "x", Some("10.9.0.5")).status;
            code == 201 || code == 409
        }),
        "10.9.0.5 never became allocatable"
    );
    assert_eq!(s.http("DELETE", &path, &[], None).status, 200);
    let blocked = |v: &Value| {
        let c = &v["status"]["conditions"][0];
        c["status"] == "False"
            && c["reason"] == "Terminating"
            && c["message"] == "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
    };
    assert!(
        eventually(Duration::from_secs(10), || blocked(&s.get(&path).json())),
        "{}",
        s.get(&path).text()
    );
    std::thread::sleep(Duration::from_secs(1));
    let still = s.get(&path);
    assert_eq!(still.status, 200, "deleted while its IP is in use");
    assert!(still.json()["metadata"]["deletionTimestamp"].is_string());
    s.ok(&["delete", "service", "x", "-n", &ns]);
    assert!(
        eventually(Duration::from_secs(30), || s.get(&path).status == 404),
        "{}",
        s.get(&path).text()
    );
}
