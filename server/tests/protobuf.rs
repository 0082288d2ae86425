//! Protobuf both ways over raw HTTPS, beyond kubectl's generators: create with a protobuf
//! body, get, list and watch with protobuf responses, and bodies without the `k8s\0` prefix.

mod common;

use common::server;
use serde_json::json;

const PROTO: &str = "application/vnd.kubernetes.protobuf";
const ACCEPT_PROTO: &str = "Accept: application/vnd.kubernetes.protobuf";
const SEND_PROTO: &str = "Content-Type: application/vnd.kubernetes.protobuf";

#[test]
fn create_get_list_and_watch_in_protobuf() {
    let s = server();
    let ns = s.namespace("protobuf");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let rv = s.get(&base).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "pb", "labels": {"wire": "proto"}},
                    "data": {"k": "v"}});
    let body = keel_proto::encode(&cm).unwrap();
    assert!(body.starts_with(&keel_proto::MAGIC));
    let r = s.http("POST", &base, &[SEND_PROTO, ACCEPT_PROTO], Some(&body));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("content-type"), Some(PROTO));
    let created = keel_proto::decode(&r.body).unwrap();
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["metadata"]["namespace"], ns.as_str());
    assert_eq!(created["metadata"]["labels"]["wire"], "proto");
    assert!(created["metadata"]["uid"].as_str().unwrap().len() >= 32);

    // The same object read back as JSON and as protobuf.
    let as_json = s.get(&format!("{base}/pb")).json();
    assert_eq!(as_json["data"]["k"], "v");
    let r = s.http("GET", &format!("{base}/pb"), &[ACCEPT_PROTO], None);
    assert_eq!(r.header("content-type"), Some(PROTO));
    let got = keel_proto::decode(&r.body).unwrap();
    assert_eq!(got["data"]["k"], "v");
    assert_eq!(
        got["metadata"]["resourceVersion"],
        as_json["metadata"]["resourceVersion"]
    );

    let r = s.http("GET", &base, &[ACCEPT_PROTO], None);
    assert_eq!(r.status, 200);
    let list = keel_proto::decode(&r.body).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"][0]["metadata"]["name"], "pb");
    assert!(list["metadata"]["resourceVersion"].is_string());

    // A watch from before the create: one ADDED frame, then the stream times out.
    let r = s.http(
        "GET",
        &format!("{base}?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
        &[ACCEPT_PROTO],
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.kubernetes.protobuf;stream=watch")
    );
    let events = common::proto_watch_frames(&r.body);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "ADDED");
    assert_eq!(events[0].1["metadata"]["name"], "pb");
    assert_eq!(events[0].1["kind"], "ConfigMap");
}

#[test]
fn protobuf_bodies_of_other_groups_and_invalid_objects() {
    let s = server();
    let ns = s.namespace("protobuf-apps");
    let base = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}});
    let body = keel_proto::encode(&deploy).unwrap();
    let r = s.http("POST", &base, &[SEND_PROTO, ACCEPT_PROTO], Some(&body));
    assert_eq!(r.status, 201, "{}", r.text());
    let d = keel_proto::decode(&r.body).unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        d["spec"]["strategy"]["type"], "RollingUpdate",
        "defaulted: {d}"
    );
    assert_eq!(d["metadata"]["generation"], 1);

    // Invalid content in a well-formed body: 422 with causes.
    let mut bad = deploy.clone();
    bad["metadata"]["name"] = json!("Bad_Name");
    let body = keel_proto::encode(&bad).unwrap();
    let r = s.http("POST", &base, &[SEND_PROTO], Some(&body));
    assert_eq!(r.status, 422, "{}", r.text());
    let st = r.json();
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.name");
}

#[test]
fn bodies_without_the_magic_prefix_are_rejected() {
    let s = server();
    let ns = s.namespace("protobuf-magic");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let json_body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    let r = s.http("POST", &base, &[SEND_PROTO], Some(json_body));
    assert_eq!(r.status, 400, "{}", r.text());
    let st = r.json();
    assert_eq!(st["reason"], "BadRequest");
    assert_eq!(
        st["message"],
        "the object provided is unrecognized (must be of type ConfigMap): provided data does \
         not appear to be a protobuf message, expected prefix [107 56 115 0] \
         ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"
    );
    let mut wrong = keel_proto::encode(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": "x"}}))
    .unwrap();
    wrong[3] = b'!';
    let r = s.http("POST", &base, &[SEND_PROTO], Some(&wrong));
    assert_eq!(r.status, 400, "{}", r.text());
    let msg = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("expected prefix [107 56 115 0] (6b387321"),
        "{msg}"
    );
    // Nothing was created.
    let list = s.get(&base).json();
    assert_eq!(list["items"], json!([]));
}
