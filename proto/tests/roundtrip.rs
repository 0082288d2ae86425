//! JSON -> protobuf -> JSON round trips over server-shaped objects of many kinds: decoding
//! must give back exactly the JSON the API server would have served.

use serde_json::{json, Value};

/// Path and values of the first difference between two JSON values, for readable failures.
fn first_difference(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let sub = format!("{path}.{k}");
                match g.get(k) {
                    None => return Some(format!("{sub}: missing, want {wv}")),
                    Some(gv) => {
                        if let Some(d) = first_difference(&sub, wv, gv) {
                            return Some(d);
                        }
                    }
                }
            }
            g.keys()
                .find(|k| !w.contains_key(*k))
                .map(|k| format!("{path}.{k}: unexpected {}", g[k]))
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (wv, gv))| first_difference(&format!("{path}[{i}]"), wv, gv)),
        _ if want == got => None,
        _ => Some(format!("{path}: want {want}, got {got}")),
    }
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture exists"))
        .expect("fixture is JSON")
}

fn assert_round_trip(obj: &Value) {
    let bytes = keel_proto::encode(obj).unwrap_or_else(|e| panic!("encode {}: {e}", obj["kind"]));
    assert_eq!(&bytes[..4], b"k8s\0");
    let back = keel_proto::decode(&bytes).unwrap_or_else(|e| panic!("decode {}: {e}", obj["kind"]));
    if let Some(diff) = first_difference("", obj, &back) {
        panic!("{} does not round-trip: {diff}", obj["kind"]);
    }
}

#[test]
fn server_shaped_objects_round_trip_exactly() {
    let names = [
        "pod",
        "deployment",
        "service",
        "configmap",
        "secret",
        "node",
        "lease",
        "event",
        "namespace",
        "configmaplist",
        "status",
        "deleteoptions",
        "crd",
        "apiresourcelist",
        "sar",
        "scale",
        "eviction",
        "binding",
        "controllerrevision",
    ];
    for name in names {
        assert_round_trip(&fixture(name));
    }
}

#[test]
fn decoding_fills_in_what_go_json_prints_for_unset_fields() {
    // What `kubectl create configmap x --from-literal=a=b` sends: no timestamps, no status.
    let sparse = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}});
    let back = keel_proto::decode(&keel_proto::encode(&sparse).expect("encodes")).expect("decodes");
    assert_eq!(
        back,
        json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}, "data": {"a": "b"}})
    );
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}});
    let back = keel_proto::decode(&keel_proto::encode(&deploy).expect("encodes")).expect("decodes");
    // Non-pointer structs are always printed: strategy {}, resources {}, status {}.
    assert_eq!(back["spec"]["strategy"], json!({}));
    assert_eq!(
        back["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({})
    );
    assert_eq!(
        back["spec"]["template"]["metadata"]["creationTimestamp"],
        Value::Null
    );
    assert_eq!(back["status"], json!({}));
    assert!(
        back["spec"].get("replicas").is_none(),
        "pointer fields stay unset"
    );
    assert_round_trip(&back);
}

#[test]
fn zero_values_follow_omitempty_and_pointers() {
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "", "generation": 0},
        "spec": {"ports": [{"port": 80, "targetPort": 0, "protocol": ""}], "publishNotReadyAddresses": false, "allocateLoadBalancerNodePorts": false}});
    let back = keel_proto::decode(&keel_proto::encode(&svc).expect("encodes")).expect("decodes");
    // omitempty non-pointers vanish when zero; pointers keep explicit zeros.
    assert_eq!(back["metadata"], json!({"name": "s"}));
    assert!(back["spec"].get("publishNotReadyAddresses").is_none());
    assert_eq!(back["spec"]["allocateLoadBalancerNodePorts"], json!(false));
    // ServicePort.port has no omitempty; targetPort is an IntOrString struct.
    assert_eq!(
        back["spec"]["ports"][0],
        json!({"port": 80, "targetPort": 0})
    );
}

#[test]
fn maps_come_back_sorted_like_go() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "labels": {"z": "1", "a": "2", "m": "3"}}});
    let back = keel_proto::decode(&keel_proto::encode(&cm).expect("encodes")).expect("decodes");
    let keys: Vec<&String> = back["metadata"]["labels"]
        .as_object()
        .expect("labels")
        .keys()
        .collect();
    assert_eq!(keys, ["a", "m", "z"]);
}

#[test]
fn typed_errors_name_the_field() {
    let cases = [
        (
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": 5}]}}),
            "spec.containers[0].name",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"priority": 1.5}}),
            "spec.priority",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"priority": 4294967296u64}}),
            "spec.priority",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}}),
            "data.k",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"creationTimestamp": "yesterday"}}),
            "metadata.creationTimestamp",
        ),
    ];
    for (obj, path) in cases {
        let err = keel_proto::encode(&obj).expect_err("must fail");
        assert!(matches!(err, keel_proto::ProtoError::Encode(_)), "{err:?}");
        assert!(err.to_string().contains(path), "{err} should name {path}");
    }
}

#[test]
fn objects_without_a_protobuf_form_are_refused() {
    let cases = [
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}}),
        json!({"apiVersion": "v1", "kind": "PodSpec"}),
        json!({"kind": "Pod"}),
        json!("not an object"),
    ];
    for obj in cases {
        let err = keel_proto::encode(&obj).expect_err("must fail");
        assert!(
            matches!(
                err,
                keel_proto::ProtoError::UnknownKind { .. } | keel_proto::ProtoError::Encode(_)
            ),
            "{err:?}"
        );
    }
}

#[test]
fn supports_built_in_kinds_lists_and_meta_kinds_only() {
    let cases = [
        ("v1", "Namespace", true),
        ("v1", "ConfigMapList", true),
        ("apps/v1", "Deployment", true),
        ("apps/v1", "DeploymentList", true),
        ("batch/v1", "CronJob", true),
        ("coordination.k8s.io/v1", "Lease", true),
        ("events.k8s.io/v1", "Event", true),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", true),
        ("policy/v1", "Eviction", true),
        ("autoscaling/v1", "Scale", true),
        ("v1", "Binding", true),
        ("v1", "Status", true),
        ("v1", "DeleteOptions", true),
        ("meta.k8s.io/v1", "PartialObjectMetadataList", true),
        ("meta.k8s.io/v1", "Table", false),
        ("example.com/v1", "Widget", false),
        ("example.com/v1", "WidgetList", false),
        ("v1", "Deployment", false),
        ("v1", "ObjectMeta", false),
    ];
    for (api_version, kind, want) in cases {
        assert_eq!(
            keel_proto::supports(api_version, kind),
            want,
            "{api_version} {kind}"
        );
    }
}

#[test]
fn watch_frames_are_length_prefixed_raw_watch_events() {
    let cm = fixture("configmap");
    let frame = keel_proto::encode_watch_event("ADDED", &cm).expect("encodes");
    let len = u32::from_be_bytes(frame[..4].try_into().expect("4 bytes")) as usize;
    assert_eq!(len, frame.len() - 4);
    // WatchEvent field 1 (type) comes first and is not wrapped in an envelope.
    assert_eq!(&frame[4..6], &[0x0a, 5]);
    assert_eq!(&frame[6..11], b"ADDED");
    let (event_type, object) = keel_proto::decode_watch_event(&frame).expect("decodes");
    assert_eq!(event_type, "ADDED");
    assert_eq!(object, cm);
    let err = keel_proto::decode_watch_event(&frame[..frame.len() - 1]).expect_err("short");
    assert!(matches!(err, keel_proto::ProtoError::Truncated), "{err:?}");
}
