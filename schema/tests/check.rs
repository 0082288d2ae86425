//! `check`: unknown, duplicate and mistyped fields, reported as upstream's decoder does.

use keel_schema::{schemas, FieldReport, Gvk};

const POD: Gvk = Gvk {
    group: "",
    version: "v1",
    kind: "Pod",
};
const DEPLOYMENT: Gvk = Gvk {
    group: "apps",
    version: "v1",
    kind: "Deployment",
};

fn check(gvk: &Gvk, body: &str) -> FieldReport {
    schemas().check(gvk, body.as_bytes()).expect("valid JSON")
}

const REALISTIC_DEPLOYMENT: &str = r#"{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
    "annotations": {"a": "b"}, "creationTimestamp": null, "finalizers": ["x/y"],
    "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
      "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
  "spec": {
    "replicas": 3, "selector": {"matchLabels": {"app": "web"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
    "template": {
      "metadata": {"labels": {"app": "web"}},
      "spec": {
        "containers": [{
          "name": "nginx", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
          "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
          "env": [{"name": "A", "value": "1"},
                  {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
          "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": 0.25, "memory": 64}},
          "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
          "livenessProbe": {"tcpSocket": {"port": 80}},
          "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true}]
        }],
        "volumes": [{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
          "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        "terminationGracePeriodSeconds": 30, "hostNetwork": false
      }
    }
  },
  "status": {"replicas": 3, "conditions": [{"type": "Available", "status": "True",
    "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
}"#;

#[test]
fn realistic_objects_are_clean() {
    let cases: [(Gvk, &str); 4] = [
        (DEPLOYMENT, REALISTIC_DEPLOYMENT),
        (
            Gvk {
                group: "",
                version: "v1",
                kind: "ConfigMap",
            },
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"},"binaryData":{"b":"AAE="},"immutable":true}"#,
        ),
        (
            Gvk {
                group: "",
                version: "v1",
                kind: "Service",
            },
            r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"selector":{"app":"web"},"ports":[{"port":80,"targetPort":8080},{"name":"h","port":81,"targetPort":"http"}],"type":"ClusterIP"}}"#,
        ),
        (
            POD,
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionGracePeriodSeconds":null},"spec":{"containers":[{"name":"c","image":"i","securityContext":{"runAsUser":1000}}],"overhead":{"cpu":"1"}}}"#,
        ),
    ];
    for (gvk, body) in cases {
        let report = check(&gvk, body);
        assert!(report.is_clean(), "{}: {report:?}", gvk.kind);
    }
}

/// (body, unknown, duplicate, type errors)
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

#[test]
fn reports_upstream_messages_at_nested_paths() {
    let cases: &[Case] = &[
        (r#"{"spec":{"foo":1}}"#, &[r#"unknown field "spec.foo""#], &[], &[]),
        (r#"{"spec":{"containers":[{"name":"a"},{"name":"b","foo":{"x":1}}]}}"#,
         &[r#"unknown field "spec.containers[1].foo""#], &[], &[]),
        (r#"{"metadata":{"name":"a","name":"b"}}"#, &[], &[r#"duplicate field "metadata.name""#], &[]),
        (r#"{"metadata":{"labels":{"a":"1","a":"2"}}}"#, &[], &[r#"duplicate field "metadata.labels.a""#], &[]),
        (r#"{"Metadata":{}}"#, &[r#"unknown field "Metadata""#], &[], &[]),
        (r#"{"metadata":{"labels":{"a":1}}}"#, &[], &[],
         &["json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"]),
        (r#"{"spec":{"containers":[{"name":5}]}}"#, &[], &[],
         &["json: cannot unmarshal number into Go struct field Container.spec.containers.name of type string"]),
        (r#"{"spec":{"containers":{"name":"a"}}}"#, &[], &[],
         &["json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"]),
        (r#"{"spec":{"activeDeadlineSeconds":"10"}}"#, &[], &[],
         &["json: cannot unmarshal string into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64"]),
        (r#"{"spec":{"containers":[{"ports":[{"containerPort":1.5}]}]}}"#, &[], &[],
         &["json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"]),
        (r#"{"spec":{"hostNetwork":"yes"}}"#, &[], &[],
         &["json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool"]),
        (r#"{"spec":{"containers":[{"livenessProbe":{"tcpSocket":{"port":true}}}]}}"#, &[], &[],
         &["json: cannot unmarshal bool into Go struct field TCPSocketAction.spec.containers.livenessProbe.tcpSocket.port of type intstr.IntOrString"]),
        (r#"[]"#, &[], &[], &["json: cannot unmarshal array into Go value of type v1.Pod"]),
        (r#"{"spec":{"foo":1,"foo":2},"spec":{}}"#,
         &[r#"unknown field "spec.foo""#], &[r#"duplicate field "spec.foo""#, r#"duplicate field "spec""#], &[]),
    ];
    for (body, unknown, duplicate, type_errors) in cases {
        let r = check(&POD, body);
        assert_eq!(r.unknown, *unknown, "{body}");
        assert_eq!(r.duplicate, *duplicate, "{body}");
        assert_eq!(r.type_errors, *type_errors, "{body}");
        assert_eq!(r.strict.len(), unknown.len() + duplicate.len(), "{body}");
    }
}

#[test]
fn strict_list_keeps_document_order_and_is_bounded() {
    let r = check(&POD, r#"{"a":1,"metadata":{"name":"x","name":"y"},"b":2}"#);
    assert_eq!(
        r.strict,
        [
            r#"unknown field "a""#,
            r#"duplicate field "metadata.name""#,
            r#"unknown field "b""#
        ]
    );
    let many: Vec<String> = (0..500).map(|i| format!(r#""f{i}":1"#)).collect();
    let r = check(&POD, &format!("{{{}}}", many.join(",")));
    assert_eq!(r.strict.len(), keel_schema::STRICT_ERRORS_MAX);
}

#[test]
fn free_form_fields_accept_anything() {
    let body =
        r#"{"metadata":{"managedFields":[{"fieldsV1":{"f:x":{"weird":[1,{"a":1,"a":2}]}}}]}}"#;
    assert!(check(&POD, body).is_clean());
}

#[test]
fn syntax_errors_and_unknown_kinds() {
    assert!(schemas().check(&POD, b"{\"spec\":").is_err());
    assert!(schemas().check(&POD, b"not json").is_err());
    let unknown = Gvk {
        group: "example.com",
        version: "v1",
        kind: "Widget",
    };
    assert!(schemas()
        .check(&unknown, br#"{"anything":1}"#)
        .unwrap()
        .is_clean());
}

/// A custom resource's `metadata` is decoded into ObjectMeta on its own: Go's paths start
/// at ObjectMeta (the messages a v1.36.2 server gave for these, side by side).
#[test]
fn metadata_alone_is_type_checked_with_paths_from_object_meta() {
    const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    let errors = |v: serde_json::Value| schemas().type_errors_as(META, &v);
    assert_eq!(
        errors(serde_json::json!({"name": "a", "labels": {"a": 5}})),
        ["json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"]
    );
    assert_eq!(
        errors(serde_json::json!({"ownerReferences": [{"name": 3}]})),
        ["json: cannot unmarshal number into Go struct field OwnerReference.ownerReferences.name of type string"]
    );
    assert_eq!(
        errors(serde_json::json!({"generation": "x"})),
        ["json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64"]
    );
    assert!(errors(
        serde_json::json!({"name": "a", "labels": {"a": "b"}, "unknown": 1,
        "generation": 2, "creationTimestamp": null})
    )
    .is_empty());
    assert!(schemas()
        .type_errors_as("no.such.Definition", &serde_json::json!({"name": 5}))
        .is_empty());
}
