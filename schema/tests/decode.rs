//! `decode_checked` (one pass) is equivalent to `serde_json::from_slice` plus `check` (two
//! passes): same value, same report, same syntax errors.

use keel_schema::{schemas, Gvk};
use serde_json::Value;

const POD: Gvk = Gvk {
    group: "",
    version: "v1",
    kind: "Pod",
};
const CONFIG_MAP: Gvk = Gvk {
    group: "",
    version: "v1",
    kind: "ConfigMap",
};
const DEPLOYMENT: Gvk = Gvk {
    group: "apps",
    version: "v1",
    kind: "Deployment",
};
const WIDGET: Gvk = Gvk {
    group: "example.com",
    version: "v1",
    kind: "Widget",
};

const BODIES: &[&str] = &[
    r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","labels":{"a":"b"},"annotations":{"x":"y"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"u","controller":true}]},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],"env":[{"name":"A","value":"1"},{"name":"B","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":0.25,"memory":64}},"readinessProbe":{"httpGet":{"path":"/","port":"http"},"periodSeconds":5},"livenessProbe":{"tcpSocket":{"port":80}}}],"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","tolerationSeconds":30}],"terminationGracePeriodSeconds":30},"status":{}}"#,
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v","e":"\u00e9\n"},"binaryData":{"b":"AAE="},"immutable":true}"#,
    r#"{"spec":{"foo":1}}"#,
    r#"{"spec":{"containers":[{"name":"a"},{"name":"b","foo":{"x":1}}]}}"#,
    r#"{"metadata":{"name":"a","name":"b"}}"#,
    r#"{"metadata":{"labels":{"a":"1","a":"2"}}}"#,
    r#"{"Metadata":{}}"#,
    r#"{"metadata":{"labels":{"a":1}}}"#,
    r#"{"spec":{"containers":[{"name":5}]}}"#,
    r#"{"spec":{"containers":{"name":"a"}}}"#,
    r#"{"spec":{"containers":"x"}}"#,
    r#"{"metadata":[1,{"a":2}]}"#,
    r#"{"data":[1],"binaryData":7,"immutable":"no"}"#,
    r#"{"spec":{"activeDeadlineSeconds":"10"}}"#,
    r#"{"spec":{"activeDeadlineSeconds":1e3,"priority":4294967296}}"#,
    r#"{"spec":{"activeDeadlineSeconds":-9223372036854775808,"priority":-2147483649}}"#,
    r#"{"spec":{"activeDeadlineSeconds":18446744073709551615}}"#,
    r#"{"spec":{"containers":[{"ports":[{"containerPort":1.5}]}]}}"#,
    r#"{"spec":{"hostNetwork":"yes","replicas":null}}"#,
    r#"{"spec":{"containers":[{"livenessProbe":{"tcpSocket":{"port":true}}}]}}"#,
    r#"{"spec":{"containers":[{"livenessProbe":{"tcpSocket":{"port":3000000000}}}]}}"#,
    r#"[]"#,
    r#"[{"a":1}]"#,
    r#""text""#,
    r#"12"#,
    r#"null"#,
    r#"{"spec":{"foo":1,"foo":2},"spec":{}}"#,
    r#"{"a":1,"metadata":{"name":"x","name":"y"},"b":2}"#,
    r#"{"metadata":{"managedFields":[{"fieldsV1":{"f:x":{"weird":[1,{"a":1,"a":2}]}}}]}}"#,
    r#"{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","image":"i","x":1}]}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":1.5}}}}"#,
    r#"{"spec":{"selector":{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"In","values":["a",1]}]}}}"#,
    // Syntax errors.
    r#"{"spec":"#,
    "not json",
    "",
    r#"{"a":1} x"#,
    r#"{"a":}"#,
    r#"{"metadata":{"name":"a",}}"#,
    "{\"metadata\":{\"name\":\"\u{0}\"}}",
];

fn two_pass(gvk: &Gvk, body: &[u8]) -> Result<(Value, keel_schema::FieldReport), String> {
    let report = schemas().check(gvk, body)?;
    let value: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    Ok((value, report))
}

#[test]
fn one_pass_equals_parse_plus_check() {
    let many: Vec<String> = (0..300).map(|i| format!(r#""f{i}":{i}"#)).collect();
    let bounded = format!("{{{}}}", many.join(","));
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let deep_obj = format!("{}1{}", r#"{"metadata":"#.repeat(150), "}".repeat(150));
    let mut bodies: Vec<&str> = BODIES.to_vec();
    bodies.extend([bounded.as_str(), deep.as_str(), deep_obj.as_str()]);
    for gvk in [POD, CONFIG_MAP, DEPLOYMENT, WIDGET] {
        for body in &bodies {
            let one = schemas().decode_checked(&gvk, body.as_bytes());
            let two = two_pass(&gvk, body.as_bytes());
            assert_eq!(one, two, "{gvk:?} {body}");
        }
    }
}

#[test]
fn one_pass_reports_and_decodes() {
    let (v, r) = schemas()
        .decode_checked(
            &POD,
            br#"{"metadata":{"name":"a","name":"b","labels":{"x":1}},"q":[1]}"#,
        )
        .unwrap();
    assert_eq!(v["metadata"]["name"], "b");
    assert_eq!(v["q"][0], 1);
    assert_eq!(r.duplicate, [r#"duplicate field "metadata.name""#]);
    assert_eq!(r.unknown, [r#"unknown field "q""#]);
    assert_eq!(
        r.type_errors,
        ["json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"]
    );
    assert!(schemas().decode_checked(&POD, b"{").is_err());
}
