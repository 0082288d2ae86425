//! Metadata-only representations (`as=PartialObjectMetadata[List];g=meta.k8s.io`), as
//! client-go's metadata informers and upstream's garbage collector ask for them: get, list and
//! watch in JSON and protobuf, both `meta.k8s.io` versions, and upstream's 406 when the form
//! asked for is not the response's (texts recorded on a v1.36.2 kube-apiserver).

mod common;

use common::{json_watch_events, proto_watch_frames, server};
use serde_json::{json, Value};

const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const PROTO_META: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const PROTO_META_LIST: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

fn accept(media: &str) -> String {
    format!("Accept: {media}")
}

fn setup(ns_name: &str) -> (String, Value) {
    let s = server();
    let ns = s.namespace(ns_name);
    let cm = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &json!({"metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}}),
    );
    assert_eq!(cm.status, 201, "{}", cm.text());
    (ns, cm.json())
}

#[test]
fn get_and_list_give_only_metadata() {
    let s = server();
    let (ns, cm) = setup("meta-only");
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let got = s.http("GET", &format!("{path}/cm"), &[&accept(META)], None);
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.header("content-type"), Some("application/json"));
    assert_eq!(
        got.json(),
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": cm["metadata"]})
    );

    let beta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";
    let list = s.http("GET", &path, &[&accept(beta)], None).json();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1beta1");
    assert!(list["metadata"]["resourceVersion"].is_string());
    assert_eq!(
        list["items"],
        json!([{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1beta1", "metadata": cm["metadata"]}])
    );

    // Protobuf, also for what has no protobuf form of its own.
    let got = s.http("GET", &format!("{path}/cm"), &[&accept(PROTO_META)], None);
    assert_eq!(
        got.header("content-type"),
        Some("application/vnd.kubernetes.protobuf")
    );
    let decoded = keel_proto::decode(&got.body).unwrap();
    assert_eq!(decoded["kind"], "PartialObjectMetadata");
    assert_eq!(decoded["metadata"]["uid"], cm["metadata"]["uid"]);
    assert_eq!(decoded["metadata"]["labels"], json!({"a": "b"}));
    let got = s.http("GET", &path, &[&accept(PROTO_META_LIST)], None);
    let decoded = keel_proto::decode(&got.body).unwrap();
    assert_eq!(decoded["kind"], "PartialObjectMetadataList");
    assert_eq!(decoded["items"][0]["metadata"]["name"], "cm");
}

#[test]
fn the_wrong_form_is_not_acceptable() {
    let s = server();
    let (ns, _) = setup("meta-wrong");
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let list = s.http("GET", &path, &[&accept(META)], None);
    assert_eq!(list.status, 406);
    assert_eq!(
        list.json()["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    // The first acceptable range decides, as upstream: the plain JSON after it is not used.
    let one = s.http(
        "GET",
        &format!("{path}/cm"),
        &[&accept(&format!("{META_LIST},application/json"))],
        None,
    );
    assert_eq!(one.status, 406);
    assert_eq!(
        one.json()["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    let apps = s.http(
        "GET",
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &[&accept(META)],
        None,
    );
    assert_eq!(
        apps.json()["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)"
    );
}

#[test]
fn watches_send_metadata_events_and_bookmarks() {
    let s = server();
    let (ns, cm) = setup("meta-watch");
    let path = format!(
        "/api/v1/namespaces/{ns}/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    );
    let w = s.http("GET", &path, &[&accept(META)], None);
    let events = json_watch_events(&w.body);
    assert_eq!(events[0].0, "ADDED");
    assert_eq!(
        events[0].1,
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": cm["metadata"]})
    );
    let end = events
        .iter()
        .find(|(t, _)| t == "BOOKMARK")
        .expect("end bookmark");
    assert_eq!(end.1["kind"], "PartialObjectMetadata");
    assert_eq!(
        end.1["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    let w = s.http("GET", &path, &[&accept(PROTO_META)], None);
    assert_eq!(
        w.header("content-type"),
        Some("application/vnd.kubernetes.protobuf;stream=watch")
    );
    let frames = proto_watch_frames(&w.body);
    assert_eq!(frames[0].0, "ADDED");
    assert_eq!(frames[0].1["kind"], "PartialObjectMetadata");
    assert_eq!(frames[0].1["metadata"]["name"], "cm");
}
