//! API aggregation, driven with kubectl against an extension API server the test starts
//! (`python/extension_apiserver.py`, serving `wardle.example.com/v1alpha1`): an APIService
//! naming its Service becomes `Available`, its group joins discovery (`kubectl
//! api-resources`, `/apis`, `/apis/<group>`) in its priority's place, its OpenAPI documents
//! join keel's (`kubectl explain`, `/openapi/v3`, `/openapi/v2`), and gets, lists, watches and creates of its
//! resources are proxied with the user in request headers over TLS verified by `caBundle`,
//! presenting the front-proxy client certificate the extension server verifies. APIServices
//! whose Service is missing or has no endpoints are not available, with upstream's reasons,
//! and requests for them are answered 503. The request-header trust is published in
//! `kube-system/extension-apiserver-authentication`.

mod common;

use common::{eventually, server, Server};
use serde_json::{json, Value};
use std::time::Duration;

/// The extension API server (HTTPS with a certificate for `api.<namespace>.svc` signed by a CA
/// the test makes, trusting the API server's front-proxy CA).
struct Extension {
    child: std::process::Child,
    port: u16,
    ca: Vec<u8>,
    _pki: tempfile::TempDir,
}

impl Extension {
    fn start(s: &Server, namespace: &str) -> Extension {
        let pki = tempfile::tempdir().unwrap();
        let files = keel_http::tls::load_or_create(pki.path(), &[format!("api.{namespace}.svc")])
            .expect("certificates");
        let front_proxy_ca = s.ca_file().parent().unwrap().join("front-proxy-ca.crt");
        let (child, port) = common::python_server(
            "extension_apiserver.py",
            &[&files.cert, &files.key, &front_proxy_ca],
        );
        Extension {
            child,
            port,
            ca: std::fs::read(&files.ca_cert).unwrap(),
            _pki: pki,
        }
    }
}

impl Drop for Extension {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn apply(s: &Server, obj: &Value) {
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &obj.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn apiservice(name: &str, group: &str, service: Option<Value>, ca: Option<&[u8]>) -> Value {
    use base64::Engine;
    let mut spec = json!({"group": group, "version": name.split('.').next().unwrap(),
                          "groupPriorityMinimum": 1000, "versionPriority": 15});
    if let Some(svc) = service {
        spec["service"] = svc;
    }
    if let Some(ca) = ca {
        spec["caBundle"] = base64::engine::general_purpose::STANDARD.encode(ca).into();
    }
    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": name}, "spec": spec})
}

/// The `Available` condition of an APIService: (status, reason, message).
fn available(s: &Server, name: &str) -> Option<(String, String, String)> {
    let v = s.json(&["get", "apiservice", name]);
    let c = v["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")?
        .clone();
    let t = |k: &str| c[k].as_str().unwrap_or("").to_string();
    Some((t("status"), t("reason"), t("message")))
}

fn wait_available(s: &Server, name: &str, status: &str, reason: &str) -> String {
    let mut last = None;
    let ok = eventually(Duration::from_secs(20), || {
        last = available(s, name);
        last.as_ref()
            .is_some_and(|(st, r, _)| st == status && r == reason)
    });
    assert!(ok, "{name}: want {status} ({reason}), have {last:?}");
    last.unwrap().2
}

/// What the extension server saw of a request, from an object's `seen` annotation.
fn seen(obj: &Value) -> Value {
    serde_json::from_str(obj["metadata"]["annotations"]["seen"].as_str().unwrap()).unwrap()
}

#[test]
fn an_apiservice_proxies_to_its_extension_server() {
    let s = server();
    let ns = s.namespace("wardle");
    let ext = Extension::start(s, &ns);
    // An ExternalName Service is reached at the host it names.
    s.ok(&[
        "-n",
        &ns,
        "create",
        "service",
        "externalname",
        "api",
        "--external-name",
        "localhost",
    ]);
    let svc = json!({"namespace": ns, "name": "api", "port": ext.port});
    apply(
        s,
        &apiservice(
            "v1alpha1.wardle.example.com",
            "wardle.example.com",
            Some(svc),
            Some(&ext.ca),
        ),
    );
    let msg = wait_available(s, "v1alpha1.wardle.example.com", "True", "Passed");
    assert_eq!(msg, "all checks passed");

    // Discovery: kubectl finds the resource (aggregated discovery), and the legacy documents.
    let resources = s.ok(&[
        "api-resources",
        "--api-group",
        "wardle.example.com",
        "-o",
        "wide",
    ]);
    assert!(
        resources.contains("flunders") && resources.contains("Flunder") && resources.contains("fl"),
        "{resources}"
    );
    let groups: Value = serde_json::from_str(&s.ok(&["get", "--raw", "/apis"])).unwrap();
    assert!(groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "wardle.example.com"));
    let group: Value =
        serde_json::from_str(&s.ok(&["get", "--raw", "/apis/wardle.example.com"])).unwrap();
    assert_eq!(group["kind"], "APIGroup");
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        "wardle.example.com/v1alpha1"
    );
    // Groups are listed by priority, as upstream lists them: at 1000, after every built-in
    // group; raised above them all, right after the aggregator's own group (in `/apis` and
    // in aggregated discovery).
    let order = |aggregated: bool| -> Vec<String> {
        let accept = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let headers: &[&str] = if aggregated { &[accept] } else { &[] };
        let doc = s.http("GET", "/apis", headers, None).json();
        let list = if aggregated {
            &doc["items"]
        } else {
            &doc["groups"]
        };
        list.as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let name = g.get("name").or_else(|| g.pointer("/metadata/name"));
                name.and_then(Value::as_str).unwrap().to_owned()
            })
            .collect()
    };
    for aggregated in [false, true] {
        let names = order(aggregated);
        assert_eq!(
            names.last().map(String::as_str),
            Some("wardle.example.com"),
            "{names:?}"
        );
    }
    s.ok(&[
        "patch",
        "apiservice",
        "v1alpha1.wardle.example.com",
        "--type=merge",
        "-p",
        r#"{"spec":{"groupPriorityMinimum":20000}}"#,
    ]);
    for aggregated in [false, true] {
        let mut names = Vec::new();
        let ok = eventually(Duration::from_secs(10), || {
            names = order(aggregated);
            names.get(1).map(String::as_str) == Some("wardle.example.com")
        });
        assert!(ok, "aggregated: {aggregated}: {names:?}");
        assert_eq!(names[0], "apiregistration.k8s.io");
        assert_eq!(names[2], "apps", "{names:?}");
    }
    // OpenAPI: `kubectl explain` finds the extension server's schema, with its field
    // descriptions, through `/openapi/v3`.
    let mut explained = String::new();
    let ok = eventually(Duration::from_secs(20), || {
        let out = s.kubectl(&["explain", "flunders.spec"]);
        explained = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out.status.success()
    });
    assert!(
        ok,
        "{explained}{}",
        s.http("GET", "/openapi/v3", &[], None).text()
    );
    for text in [
        "KIND:       Flunder",
        "FlunderSpec is what a flunder should be.",
        "Reference names the flunder this one points at.",
        "FischerReference names a fischer.",
    ] {
        assert!(explained.contains(text), "{text:?} in {explained}");
    }
    // The index lists the group version at the extension server's own URL; the document
    // there is its own, immutable under its hash (its ETag); a stale hash is redirected.
    let index = s.http("GET", "/openapi/v3", &[], None).json();
    let url = index["paths"]["apis/wardle.example.com/v1alpha1"]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{index}"))
        .to_owned();
    let (gv_path, hash) = url.split_once("?hash=").unwrap();
    assert_eq!(gv_path, "/openapi/v3/apis/wardle.example.com/v1alpha1");
    let doc = s.http("GET", &url, &[], None);
    assert_eq!(doc.status, 200);
    assert_eq!(doc.header("etag"), Some(format!("\"{hash}\"").as_str()));
    assert_eq!(doc.header("cache-control"), Some("public, immutable"));
    assert_eq!(
        doc.json()["components"]["schemas"]["com.example.wardle.v1alpha1.Flunder"]["description"],
        "Flunder is a test resource served by the wardle extension server."
    );
    let stale = s.http("GET", &format!("{gv_path}?hash=0"), &[], None);
    assert_eq!(stale.status, 301);
    assert_eq!(stale.header("location"), Some(url.as_str()));
    // `/openapi/v2`: the remote's path and definition merged in; its path outside its group
    // version left out; its ObjectMeta, unlike keel's, renamed and referred to so.
    let v2 = s
        .http("GET", "/openapi/v2", &["Accept: application/json"], None)
        .json();
    let flunder = &v2["definitions"]["com.example.wardle.v1alpha1.Flunder"];
    assert_eq!(
        flunder["description"],
        "Flunder is a test resource served by the wardle extension server."
    );
    assert_eq!(
        flunder["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta_v2"
    );
    assert_eq!(
        v2["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta_v2"]["description"],
        "ObjectMeta of the wardle server."
    );
    assert_ne!(
        v2["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["description"],
        "ObjectMeta of the wardle server."
    );
    assert_eq!(
        v2["paths"]["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"]["get"]
            ["operationId"],
        "listWardleFlunders"
    );
    assert_ne!(
        v2["paths"]["/version/"]["get"]["operationId"],
        "getWardleVersion"
    );
    assert!(v2["definitions"].get("wardle.Info").is_none());
    // Its protobuf form is the merged document too (the same ETag), once the document
    // holds still: the aggregator's fetches may still remake it between two requests, so
    // the protobuf answer is compared with the JSON ones just before and after it.
    let json_etag = || {
        s.http("GET", "/openapi/v2", &["Accept: application/json"], None)
            .header("etag")
            .map(str::to_owned)
    };
    let mut etags = Vec::new();
    let same = eventually(Duration::from_secs(10), || {
        let before = json_etag();
        let proto = s.http(
            "GET",
            "/openapi/v2",
            &["Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf"],
            None,
        );
        assert_eq!(proto.status, 200);
        let proto = proto.header("etag").map(str::to_owned);
        let after = json_etag();
        let same = proto.is_some() && before == proto && proto == after;
        etags.push((before, proto, after));
        same
    });
    assert!(
        same,
        "JSON and protobuf ETags (before, protobuf, after): {etags:?}"
    );
    // The version's own document is the extension server's.
    let list: Value =
        serde_json::from_str(&s.ok(&["get", "--raw", "/apis/wardle.example.com/v1alpha1"]))
            .unwrap();
    assert_eq!(list["resources"][0]["name"], "flunders");

    // A list, by kubectl: the user and groups in headers, the proxy's client certificate, the
    // client's User-Agent; the client's own credentials are not passed on.
    let flunders = s.json(&["-n", &ns, "get", "flunders"]);
    let item = &flunders["items"][0];
    assert_eq!(item["metadata"]["name"], "one");
    let saw = seen(item);
    assert_eq!(saw["user"], "admin");
    assert_eq!(saw["uid"], "admin");
    assert_eq!(saw["groups"], "system:masters,system:authenticated");
    assert_eq!(saw["clientCert"], "front-proxy-client");
    assert_eq!(saw["authorization"], "");
    assert_eq!(saw["method"], "GET");
    assert!(
        saw["userAgent"].as_str().unwrap().starts_with("kubectl/"),
        "{saw}"
    );

    // A get by name, a create (its body and status come back), and a watch, streamed.
    let one = s.json(&["-n", &ns, "get", "flunder", "named"]);
    assert_eq!(one["metadata"]["name"], "named");
    let created = s.kubectl_stdin(
        &["create", "-f", "-", "-o", "json"],
        &json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": "new", "namespace": ns}})
        .to_string(),
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let created: Value = serde_json::from_slice(&created.stdout).unwrap();
    assert_eq!(seen(&created)["method"], "POST");
    let watch = s.http(
        "GET",
        &format!("/apis/wardle.example.com/v1alpha1/namespaces/{ns}/flunders?watch=true"),
        &[],
        None,
    );
    assert_eq!(watch.status, 200);
    let events = common::json_watch_events(&watch.body);
    let names: Vec<&Value> = events.iter().map(|(_, o)| &o["metadata"]["name"]).collect();
    assert_eq!(names, [&json!("w1"), &json!("w2")]);

    // The extension server stops: a request is a 503, and the next check marks it so.
    drop(ext);
    let r = s.http(
        "GET",
        &format!("/apis/wardle.example.com/v1alpha1/namespaces/{ns}/flunders"),
        &[],
        None,
    );
    assert_eq!(r.status, 503, "{}", r.text());
    // A change of the Service wakes the controller.
    s.ok(&["-n", &ns, "annotate", "service", "api", "touched=1"]);
    let msg = wait_available(
        s,
        "v1alpha1.wardle.example.com",
        "False",
        "FailedDiscoveryCheck",
    );
    assert!(
        msg.starts_with("failing or missing response from https://localhost:"),
        "{msg}"
    );
    let r = s.http(
        "GET",
        &format!("/apis/wardle.example.com/v1alpha1/namespaces/{ns}/flunders"),
        &[],
        None,
    );
    assert_eq!(
        (r.status, r.text()),
        (503, "service unavailable\n".to_string())
    );
    s.ok(&["delete", "apiservice", "v1alpha1.wardle.example.com"]);
    // Its OpenAPI documents go with it.
    assert!(eventually(Duration::from_secs(10), || {
        let index = s.http("GET", "/openapi/v3", &[], None).json();
        index["paths"]
            .get("apis/wardle.example.com/v1alpha1")
            .is_none()
    }));
    // Gone from discovery (while it was there, unavailable, kubectl reported it stale).
    assert!(eventually(Duration::from_secs(10), || {
        let out = s.kubectl(&["api-resources"]);
        out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("wardle.example.com")
    }));
}

#[test]
fn availability_follows_the_service_and_its_endpoints() {
    // A server of its own: its unavailable group versions stay in discovery (stale).
    let s = &Server::start(&[]);
    let ns = s.namespace("avail");
    let svc = json!({"namespace": ns, "name": "metrics", "port": 443});
    apply(
        s,
        &apiservice(
            "v1beta1.avail.example.com",
            "avail.example.com",
            Some(svc),
            None,
        ),
    );
    let msg = wait_available(s, "v1beta1.avail.example.com", "False", "ServiceNotFound");
    assert_eq!(msg, format!("service/metrics in \"{ns}\" is not present"));
    // Aggregated discovery lists the version as stale, without resources (never reached).
    let accept = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let doc = s.http("GET", "/apis", &[accept], None).json();
    let group = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "avail.example.com")
        .cloned();
    assert_eq!(
        group.map(|g| g["versions"].clone()),
        Some(json!([{"version": "v1beta1", "freshness": "Stale"}]))
    );
    // Requests while it is not available: 503, upstream's plain text.
    let r = s.http(
        "GET",
        "/apis/avail.example.com/v1beta1/namespaces/x/things",
        &[],
        None,
    );
    assert_eq!(
        (r.status, r.text()),
        (503, "service unavailable\n".to_string())
    );
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));

    let clusterip = |ports: &str| {
        s.ok(&[
            "-n",
            &ns,
            "create",
            "service",
            "clusterip",
            "metrics",
            "--tcp",
            ports,
        ]);
    };
    clusterip("8443:8443");
    let msg = wait_available(s, "v1beta1.avail.example.com", "False", "ServicePortError");
    assert_eq!(
        msg,
        format!("service/metrics in \"{ns}\" is not listening on port 443")
    );

    s.ok(&["-n", &ns, "delete", "service", "metrics"]);
    clusterip("443:8443");
    let msg = wait_available(s, "v1beta1.avail.example.com", "False", "EndpointsNotFound");
    assert_eq!(
        msg,
        format!("cannot find endpointslices for service/metrics in \"{ns}\"")
    );

    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "metrics-1", "namespace": ns,
                     "labels": {"kubernetes.io/service-name": "metrics"}},
        "addressType": "IPv4",
        "ports": [{"name": "443-8443", "port": 8443, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.9.0.1"], "conditions": {"ready": false}}]});
    apply(s, &slice);
    let msg = wait_available(s, "v1beta1.avail.example.com", "False", "MissingEndpoints");
    assert_eq!(
        msg,
        format!("endpointslices for service/metrics in \"{ns}\" have no addresses with port name \"443-8443\"")
    );

    // An APIService without a service is served here.
    apply(
        s,
        &apiservice("v1.local.example.com", "local.example.com", None, None),
    );
    let msg = wait_available(s, "v1.local.example.com", "True", "Local");
    assert_eq!(msg, "Local APIServices are always available");
}

#[test]
fn request_header_trust_is_published() {
    let s = server();
    let front_proxy_ca =
        std::fs::read_to_string(s.ca_file().parent().unwrap().join("front-proxy-ca.crt")).unwrap();
    let mut data = Value::Null;
    let ok = eventually(Duration::from_secs(10), || {
        data = s.json(&[
            "get",
            "configmap",
            "-n",
            "kube-system",
            "extension-apiserver-authentication",
        ])["data"]
            .clone();
        data.get("requestheader-client-ca-file").is_some()
    });
    assert!(ok, "{data}");
    assert_eq!(
        data["requestheader-client-ca-file"],
        front_proxy_ca.as_str()
    );
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
}

/// Every group version the server serves has its local APIService, as upstream registers
/// them: built-in ones at start (`automanaged: onstart`, upstream's priorities, no
/// `v1.apiregistration.k8s.io`), custom resources' while a definition serves them
/// (`automanaged: "true"`, priorities 1000 and 100), all `Local` and available.
#[test]
fn local_apiservices_are_registered_as_upstream_does() {
    let s = server();
    let label = "kube-aggregator.kubernetes.io/automanaged";
    let mut core = Value::Null;
    assert!(eventually(Duration::from_secs(10), || {
        let out = s.kubectl(&["get", "apiservice", "v1.", "-o", "json"]);
        if out.status.success() {
            core = serde_json::from_slice(&out.stdout).unwrap();
        }
        out.status.success()
    }));
    assert_eq!(core["metadata"]["labels"][label], "onstart");
    assert_eq!(
        core["spec"],
        json!({"groupPriorityMinimum": 18000, "version": "v1", "versionPriority": 1})
    );
    wait_available(s, "v1.", "True", "Local");
    let autoscaling = s.json(&["get", "apiservice", "v2.autoscaling"]);
    assert_eq!(
        autoscaling["spec"],
        json!({"group": "autoscaling", "groupPriorityMinimum": 17500, "version": "v2", "versionPriority": 30})
    );
    let names = s.ok(&["get", "apiservices", "-o", "name"]);
    assert!(
        names.contains("apiservice.apiregistration.k8s.io/v1.apps\n"),
        "{names}"
    );
    assert!(
        !names.contains("apiregistration.k8s.io/v1.apiregistration.k8s.io"),
        "{names}"
    );

    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.reg.example.com"},
        "spec": {"group": "reg.example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [
                     {"name": "v1", "served": true, "storage": true,
                      "schema": {"openAPIV3Schema": {"type": "object"}}},
                     {"name": "v2", "served": false, "storage": false,
                      "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    apply(s, &crd);
    wait_available(s, "v1.reg.example.com", "True", "Local");
    let custom = s.json(&["get", "apiservice", "v1.reg.example.com"]);
    assert_eq!(custom["metadata"]["labels"][label], "true");
    assert_eq!(
        custom["spec"],
        json!({"group": "reg.example.com", "groupPriorityMinimum": 1000, "version": "v1", "versionPriority": 100})
    );
    // Not served: no APIService.
    assert!(!s
        .kubectl(&["get", "apiservice", "v2.reg.example.com"])
        .status
        .success());
    s.ok(&["delete", "crd", "gadgets.reg.example.com"]);
    assert!(eventually(Duration::from_secs(10), || {
        !s.kubectl(&["get", "apiservice", "v1.reg.example.com"])
            .status
            .success()
    }));
}
