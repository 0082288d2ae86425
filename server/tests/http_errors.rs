//! Error answers over raw HTTPS (metav1.Status with upstream's reason and code), health
//! endpoints, and `/metrics` counters.

mod common;

use common::server;
use serde_json::{json, Value};

fn status(r: &common::Http, code: u16, reason: &str) -> Value {
    assert_eq!(r.status, code, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let st = r.json();
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["status"], "Failure");
    assert_eq!(st["code"], code);
    assert_eq!(st["reason"], reason, "{st}");
    st
}

#[test]
fn body_size_and_media_type_errors() {
    let s = server();
    let ns = s.namespace("errors-media");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let big = format!(
        "{{\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"a\":\"{}\"}}}}",
        "x".repeat(3 * 1024 * 1024 + 10)
    );
    let r = s.http(
        "POST",
        &base,
        &["Content-Type: application/json"],
        Some(big.as_bytes()),
    );
    let st = status(&r, 413, "RequestEntityTooLarge");
    assert_eq!(st["message"], "Request entity too large: limit is 3145728");

    let r = s.http("POST", &base, &["Content-Type: text/plain"], Some(b"x"));
    let st = status(&r, 415, "UnsupportedMediaType");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("the body of the request was in an unknown format - accepted media types include: application/json"),
        "{st}"
    );
    s.ok(&["create", "configmap", "c", "-n", &ns]);
    let r = s.http(
        "PATCH",
        &format!("{base}/c"),
        &["Content-Type: application/json"],
        Some(b"{}"),
    );
    let st = status(&r, 415, "UnsupportedMediaType");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("application/strategic-merge-patch+json"),
        "{st}"
    );

    let r = s.http("GET", &base, &["Accept: text/html"], None);
    let st = status(&r, 406, "NotAcceptable");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("only the following media types are accepted: application/json"),
        "{st}"
    );
}

#[test]
fn methods_without_a_route_get_405() {
    let s = server();
    let ns = s.namespace("errors-method");
    s.ok(&["create", "configmap", "c", "-n", &ns]);
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let cases: Vec<(&str, String)> = vec![
        ("PATCH", base.clone()),
        ("PUT", base.clone()),
        ("POST", format!("{base}/c")),
        ("DELETE", "/api/v1/namespaces".into()),
        ("POST", "/api/v1/componentstatuses".into()),
        ("GET", format!("/api/v1/namespaces/{ns}/bindings")),
        ("PATCH", format!("/api/v1/namespaces/{ns}/pods/p/log")),
    ];
    for (method, path) in cases {
        let r = s.http(
            method,
            &path,
            &["Content-Type: application/merge-patch+json"],
            Some(b"{}"),
        );
        let st = status(&r, 405, "MethodNotAllowed");
        assert_eq!(
            st["message"], "the server does not allow this method on the requested resource",
            "{method} {path}"
        );
        assert_eq!(st["details"], json!({}), "{method} {path}");
    }
    // The object was not touched by the refused POST.
    let cm = s.get(&format!("{base}/c")).json();
    assert!(cm.get("data").is_none(), "{cm}");
}

#[test]
fn invalid_conflict_and_not_found() {
    let s = server();
    let ns = s.namespace("errors-invalid");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let r = s.send_json(
        "POST",
        &base,
        &json!({"metadata": {"name": "Bad_Name"}, "data": {"a b": "x"}}),
    );
    let st = status(&r, 422, "Invalid");
    assert_eq!(st["details"]["name"], "Bad_Name");
    assert_eq!(st["details"]["kind"], "ConfigMap");
    let causes = st["details"]["causes"].as_array().unwrap();
    let fields: Vec<&str> = causes
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["metadata.name", "data[a b]"], "{st}");
    for c in causes {
        assert_eq!(c["reason"], "FieldValueInvalid");
        let m = c["message"].as_str().unwrap();
        assert!(
            m.starts_with("Invalid value: \""),
            "cause messages carry no field path: {m}"
        );
    }
    let msg = st["message"].as_str().unwrap();
    assert!(
        msg.starts_with("ConfigMap \"Bad_Name\" is invalid: [metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{msg}"
    );
    assert!(
        msg.contains(", data[a b]: Invalid value: \"a b\": a valid config key"),
        "{msg}"
    );

    let r = s.send_json("POST", &base, &json!({"metadata": {"name": "c"}}));
    assert_eq!(r.status, 201);
    let old = r.json();
    let r = s.send_json("POST", &base, &json!({"metadata": {"name": "c"}}));
    let st = status(&r, 409, "AlreadyExists");
    assert_eq!(st["message"], "configmaps \"c\" already exists");
    let mut newer = old.clone();
    newer["data"] = json!({"v": "2"});
    assert_eq!(s.send_json("PUT", &format!("{base}/c"), &newer).status, 200);
    let mut stale = old.clone();
    stale["data"] = json!({"v": "stale"});
    let r = s.send_json("PUT", &format!("{base}/c"), &stale);
    let st = status(&r, 409, "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(st["details"], json!({"name": "c", "kind": "configmaps"}));

    let r = s.get(&format!("{base}/missing"));
    let st = status(&r, 404, "NotFound");
    assert_eq!(st["message"], "configmaps \"missing\" not found");
    let r = s.get("/api/v1/nosuchthings");
    let st = status(&r, 404, "NotFound");
    assert_eq!(
        st["message"],
        "the server could not find the requested resource"
    );
    let r = s.get("/apis/apps/v1/namespaces/x/deployments/d");
    let st = status(&r, 404, "NotFound");
    assert_eq!(st["message"], "deployments.apps \"d\" not found");
    assert_eq!(st["details"]["group"], "apps");
}

#[test]
fn health_endpoints() {
    let s = server();
    for path in [
        "/livez/ping",
        "/readyz/ping",
        "/healthz/store",
        "/livez",
        "/readyz",
    ] {
        let r = s.get(path);
        assert_eq!((r.status, r.text().as_str()), (200, "ok"), "{path}");
    }
    let r = s.get("/readyz?verbose");
    let text = r.text();
    for line in [
        "[+]ping ok",
        "[+]log ok",
        "[+]store ok",
        "readyz check passed",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    let r = s.get("/livez?verbose&exclude=store");
    let text = r.text();
    assert!(text.contains("[+]store excluded: ok"), "{text}");
    assert!(text.ends_with("livez check passed\n"), "{text}");
    let r = s.get("/readyz?verbose&exclude=nothing");
    assert!(
        r.text()
            .contains("warn: some health checks cannot be excluded: no matches for \"nothing\""),
        "{}",
        r.text()
    );
    let r = s.get("/readyz/nothing");
    assert_eq!(r.status, 404);
}

fn counter(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[test]
fn metrics_count_requests() {
    let s = server();
    let ns = s.namespace("errors-metrics");
    let created = "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"secrets\",scope=\"resource\",subresource=\"\",system_client=\"\",verb=\"POST\",version=\"v1\"}";
    let dry = "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"All\",group=\"\",resource=\"secrets\",scope=\"resource\",subresource=\"\",system_client=\"\",verb=\"POST\",version=\"v1\"}";
    let missing = "apiserver_request_total{code=\"404\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"secrets\",scope=\"resource\",subresource=\"\",system_client=\"\",verb=\"GET\",version=\"v1\"}";
    let before = s.get("/metrics");
    assert_eq!(before.status, 200);
    assert!(before
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let before = before.text();
    for i in 0..3 {
        s.ok(&["create", "secret", "generic", &format!("s{i}"), "-n", &ns]);
    }
    s.ok(&[
        "create",
        "secret",
        "generic",
        "dry",
        "-n",
        &ns,
        "--dry-run=server",
    ]);
    let _ = s.get(&format!("/api/v1/namespaces/{ns}/secrets/none"));
    let after = s.get("/metrics").text();
    // Stability levels as upstream's HELP texts give them.
    assert!(after.contains("# HELP apiserver_request_total [STABLE] Counter of apiserver requests"));
    assert_eq!(counter(&after, dry), counter(&before, dry) + 1, "{after}");
    assert_eq!(
        counter(&after, created),
        counter(&before, created) + 3,
        "{after}"
    );
    assert_eq!(counter(&after, missing), counter(&before, missing) + 1);
    assert!(after.contains("apiserver_request_duration_seconds_bucket{"));
    let stored = "apiserver_storage_objects{resource=\"secrets\"}";
    assert!(counter(&after, stored) >= 3, "{after}");
}
