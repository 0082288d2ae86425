//! The FieldsV1 codec against documents upstream writes.

use keel_smd::fieldsv1::{parse_element, serialize_element};
use keel_smd::{FieldsV1Error, Path, PathElement, Set};
use serde_json::json;

/// What `kubectl create deployment nginx --image=nginx` leaves in the Update entry of
/// "kubectl-create" on v1.2x (the shape the Server-Side Apply documentation shows):
/// members and children interleaved in element order, `".":{}` where a node is both.
const KUBECTL_CREATE_DEPLOYMENT: &str = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}"#;

/// The documentation's ConfigMap example: an applier owning one label and one data key.
const DOCS_CONFIGMAP: &str =
    r#"{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}"#;

/// Multi-key list-map items (container ports), set items (finalizers) and an index.
const KEYS_VALUES_INDEXES: &str = r#"{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/a\"":{},"v:\"example.com/b\"":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}},"f:x":{"i:0":{},"i:2":{}}}}"#;

#[test]
fn upstream_documents_round_trip_byte_for_byte() {
    for doc in [
        KUBECTL_CREATE_DEPLOYMENT,
        DOCS_CONFIGMAP,
        KEYS_VALUES_INDEXES,
        "{}",
    ] {
        let set = Set::from_fields_v1(doc).unwrap();
        assert_eq!(set.to_fields_v1(), doc);
    }
}

#[test]
fn parsed_deployment_has_expected_paths() {
    let set = Set::from_fields_v1(KUBECTL_CREATE_DEPLOYMENT).unwrap();
    let nginx = PathElement::key([("name", json!("nginx"))]);
    let image = Path(vec![
        PathElement::field("spec"),
        PathElement::field("template"),
        PathElement::field("spec"),
        PathElement::field("containers"),
        nginx.clone(),
        PathElement::field("image"),
    ]);
    assert!(set.has(&image.0));
    assert!(
        set.has(&image.0[..5]),
        "the item itself is a member (\".\")"
    );
    assert!(!set.has(&image.0[..4]), "containers is only a prefix");
    assert!(set.has(&Path::fields(&["metadata", "labels"]).0));
    assert!(set.has(&Path::fields(&["spec", "selector"]).0));
    assert_eq!(set.len(), 24);
    assert_eq!(
        set.paths()
            .iter()
            .find(|p| p.0.len() == 6)
            .unwrap()
            .to_string(),
        r#".spec.template.spec.containers[name="nginx"].image"#
    );
}

#[test]
fn serialization_orders_elements_and_marks_self() {
    // Inserted out of order, with keys whose fields were given out of order.
    let mut set = Set::new();
    let port = PathElement::key([("protocol", json!("TCP")), ("containerPort", json!(80))]);
    set.insert(&[PathElement::Index(1)]);
    set.insert(&[PathElement::value(json!("b"))]);
    set.insert(&[port.clone(), PathElement::field("protocol")]);
    set.insert(std::slice::from_ref(&port));
    set.insert(&[PathElement::field("z")]);
    set.insert(&[PathElement::field("a"), PathElement::field("b")]);
    assert_eq!(
        set.to_fields_v1(),
        r#"{"f:a":{"f:b":{}},"f:z":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:protocol":{}},"v:\"b\"":{},"i:1":{}}"#
    );
}

#[test]
fn key_json_is_go_json() {
    let cases = [
        (
            PathElement::key([("name", json!("a<b>&c"))]),
            r#"k:{"name":"a\u003cb\u003e\u0026c"}"#,
        ),
        (
            PathElement::key([("n", json!(1.5)), ("m", json!(true))]),
            r#"k:{"m":true,"n":1.5}"#,
        ),
        (
            PathElement::value(json!({"b": 1, "a": [null]})),
            r#"v:{"a":[null],"b":1}"#,
        ),
        (PathElement::value(json!(1e21)), "v:1e+21"),
        (
            PathElement::field("with space.and:colon"),
            "f:with space.and:colon",
        ),
        (PathElement::Index(7), "i:7"),
    ];
    for (pe, want) in cases {
        assert_eq!(serialize_element(&pe), want);
        assert_eq!(parse_element(want).unwrap(), pe, "{want}");
    }
    // The key string is itself JSON-escaped as an object key.
    let mut set = Set::new();
    set.insert(&[PathElement::key([("name", json!("x\"y"))])]);
    assert_eq!(set.to_fields_v1(), r#"{"k:{\"name\":\"x\\\"y\"}":{}}"#);
}

#[test]
fn parse_is_order_insensitive_and_drops_unknown_types() {
    let set =
        Set::from_fields_v1(r#"{"f:b":{},"x:future":{"f:c":{}},"f:a":{"f:c":{},".":{}}}"#).unwrap();
    assert_eq!(set.to_fields_v1(), r#"{"f:a":{".":{},"f:c":{}},"f:b":{}}"#);
    // A node holding only unknown elements counts as a member, as upstream reads it.
    let set = Set::from_fields_v1(r#"{"f:a":{"x:y":{}}}"#).unwrap();
    assert_eq!(set.to_fields_v1(), r#"{"f:a":{}}"#);
}

/// A malformed document and a check of the error it must give.
type MalformedCase = (&'static str, fn(&FieldsV1Error) -> bool);

#[test]
fn malformed_input_is_an_error() {
    let cases: &[MalformedCase] = &[
        ("not json", |e| matches!(e, FieldsV1Error::Json(_))),
        ("[]", |e| matches!(e, FieldsV1Error::NotAnObject { .. })),
        (
            r#"{"f:a":1}"#,
            |e| matches!(e, FieldsV1Error::NotAnObject { at } if at == "/f:a"),
        ),
        (r#"{"f":{}}"#, |e| {
            matches!(e, FieldsV1Error::BadElement { .. })
        }),
        (r#"{"fa":{}}"#, |e| {
            matches!(e, FieldsV1Error::BadElement { .. })
        }),
        (r#"{"k:{\"a\":":{}}"#, |e| {
            matches!(e, FieldsV1Error::BadElement { .. })
        }),
        (r#"{"k:[1]":{}}"#, |e| {
            matches!(e, FieldsV1Error::BadElement { .. })
        }),
        (r#"{"v:nope":{}}"#, |e| {
            matches!(e, FieldsV1Error::BadElement { .. })
        }),
        (r#"{"i:-1":{}}"#, |e| {
            matches!(e, FieldsV1Error::BadElement { .. })
        }),
        (r#"{"f:a":{"i:x":{}}}"#, |e| {
            matches!(e, FieldsV1Error::BadElement { .. })
        }),
    ];
    for (doc, ok) in cases {
        let e = Set::from_fields_v1(doc).unwrap_err();
        assert!(ok(&e), "{doc}: {e:?}");
    }
}
