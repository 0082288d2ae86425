//! Table-driven tests of the public API: whole-object defaulting, validation causes, update
//! rules, deletion, name rules and field values, per type.

use super::*;
use keel_api::status::{field::error_text, StatusCause};
use serde_json::{json, Value};

// The rows below name resources by group and plural: these look the strategy up.

fn prepare_for_create(group: &str, resource: &str, obj: &mut Value, ctx: &Ctx) {
    strategy(group, resource).prepare_for_create(obj, ctx)
}

fn prepare_for_update(group: &str, resource: &str, new: &mut Value, old: &Value, ctx: &Ctx) {
    strategy(group, resource).prepare_for_update(new, old, ctx)
}

fn prepare_for_subresource_update(
    group: &str,
    resource: &str,
    subresource: &str,
    new: &mut Value,
    old: &Value,
) {
    strategy(group, resource).prepare_for_subresource_update(subresource, new, old)
}

fn allow_create_on_update(group: &str, resource: &str) -> bool {
    strategy(group, resource).allow_create_on_update()
}

fn allow_unconditional_update(group: &str, resource: &str) -> bool {
    strategy(group, resource).allow_unconditional_update()
}

fn selectable_fields(group: &str, resource: &str) -> &'static [&'static str] {
    strategy(group, resource).selectable_fields()
}

fn field_value(group: &str, resource: &str, obj: &Value, field: &str) -> Option<String> {
    strategy(group, resource).field_value(obj, field)
}

fn scale_from(group: &str, resource: &str, obj: &Value) -> Option<Value> {
    strategy(group, resource).scale_from(obj)
}

fn apply_scale(obj: &mut Value, replicas: i64) {
    scale::apply_scale(obj, replicas)
}

fn mark_terminating(ns: &mut Value) {
    namespace::mark_terminating(ns)
}

/// 2024-01-01T00:00:00Z.
const NOW_UNIX_SECONDS: i64 = 1_704_067_200;

fn ctx() -> Ctx {
    Ctx::at_unix_seconds(NOW_UNIX_SECONDS)
}

fn created(group: &str, resource: &str, mut obj: Value) -> Value {
    strategy(group, resource).prepare_for_create(&mut obj, &ctx());
    obj
}

fn validate(group: &str, resource: &str, obj: &Value) -> Vec<StatusCause> {
    strategy(group, resource).validate_create(obj)
}

fn validate_update(group: &str, resource: &str, new: &Value, old: &Value) -> Vec<StatusCause> {
    strategy(group, resource).validate_update(new, old)
}

/// Each cause as upstream prints the field error: `<field>: <body>`.
fn messages(errs: Vec<StatusCause>) -> Vec<String> {
    errs.iter().map(error_text).collect()
}

const TEMPLATE_SPEC_DEFAULTED: &str = r#"{
    "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                    "resources": {}, "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"}],
    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
    "securityContext": {}, "terminationGracePeriodSeconds": 30}"#;

fn template_spec() -> Value {
    serde_json::from_str(TEMPLATE_SPEC_DEFAULTED).unwrap()
}

#[test]
fn pod_create_gets_upstream_defaults_admission_and_status() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                                 "ports": [{"containerPort": 80}],
                                 "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]},
        "status": {"phase": "Running"}});
    let want = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "generation": 1},
        "spec": {
            "containers": [{"name": "c", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                          "requests": {"cpu": "1", "memory": "1Gi"}},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "serviceAccount": "default", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready",
                 "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable",
                 "operator": "Exists", "tolerationSeconds": 300}]},
        "status": {"phase": "Pending", "qosClass": "Guaranteed"}});
    let got = created("", "pods", pod);
    assert_eq!(got, want);
    assert!(validate("", "pods", &got).is_empty());
}

#[test]
fn pod_scheduling_gates_condition() {
    let pod = json!({"metadata": {"name": "p", "namespace": "d"},
        "spec": {"schedulingGates": [{"name": "g"}], "containers": [{"name": "c", "image": "x"}]}});
    let got = created("", "pods", pod);
    assert_eq!(
        got["status"]["conditions"][0]["reason"],
        json!("SchedulingGated")
    );
    assert_eq!(
        got["status"]["conditions"][0]["lastTransitionTime"],
        json!("2024-01-01T00:00:00Z")
    );
}

#[test]
fn pod_update_rules() {
    let base = created(
        "",
        "pods",
        json!({"metadata": {"name": "p", "namespace": "d"},
        "spec": {"containers": [{"name": "c", "image": "x:1"}], "activeDeadlineSeconds": 100}}),
    );
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        f(&mut v);
        v
    };
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (with(&|v| v["spec"]["containers"][0]["image"] = json!("x:2")), vec![]),
        (with(&|v| v["spec"]["activeDeadlineSeconds"] = json!(50)), vec![]),
        (
            with(&|v| v["spec"]["activeDeadlineSeconds"] = json!(200)),
            vec!["spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"],
        ),
        (
            with(&|v| v["spec"]["tolerations"].as_array_mut().unwrap().push(json!({"key": "k", "operator": "Exists"}))),
            vec![],
        ),
        (
            with(&|v| v["spec"]["tolerations"] = json!([])),
            vec!["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"],
        ),
    ];
    for (new, want) in cases {
        let mut new = new;
        prepare_for_update("", "pods", &mut new, &base, &ctx());
        assert_eq!(messages(validate_update("", "pods", &new, &base)), want);
    }
    let mut changed = with(&|v| v["spec"]["restartPolicy"] = json!("Never"));
    prepare_for_update("", "pods", &mut changed, &base, &ctx());
    let errs = validate_update("", "pods", &changed, &base);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].reason, "FieldValueForbidden");
    assert!(errs[0].message.starts_with("Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"));
}

#[test]
fn pod_status_write_keeps_spec_and_main_write_keeps_status() {
    let old = created(
        "",
        "pods",
        json!({"metadata": {"name": "p", "namespace": "d"},
        "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    );
    let mut status_write = old.clone();
    status_write["status"]["phase"] = json!("Running");
    status_write["spec"]["nodeName"] = json!("n1");
    prepare_for_subresource_update("", "pods", "status", &mut status_write, &old);
    assert_eq!(status_write["status"]["phase"], json!("Running"));
    assert_eq!(status_write["spec"], old["spec"]);

    let mut main_write = old.clone();
    main_write["status"]["phase"] = json!("Failed");
    prepare_for_update("", "pods", &mut main_write, &old, &ctx());
    assert_eq!(main_write["status"], old["status"]);
}

#[test]
fn pod_field_values() {
    let pod = json!({"metadata": {"name": "p", "namespace": "d"},
        "spec": {"nodeName": "n1", "restartPolicy": "Always", "hostNetwork": true},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}});
    let cases = [
        ("metadata.name", Some("p")),
        ("metadata.namespace", Some("d")),
        ("spec.nodeName", Some("n1")),
        ("spec.hostNetwork", Some("true")),
        ("spec.schedulerName", Some("")),
        ("status.phase", Some("Running")),
        ("status.podIP", Some("10.0.0.1")),
        ("spec.containers", None),
    ];
    for (field, want) in cases {
        assert_eq!(
            field_value("", "pods", &pod, field).as_deref(),
            want,
            "{field}"
        );
    }
}

#[test]
fn namespace_lifecycle() {
    let got = created(
        "",
        "namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a"}}),
    );
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    );
    assert!(validate("", "namespaces", &got).is_empty());
    let mut bad = got.clone();
    bad["metadata"]["name"] = json!("a.b");
    assert_eq!(validate("", "namespaces", &bad)[0].field, "metadata.name");

    let mut upd = got.clone();
    upd["spec"]["finalizers"] = json!([]);
    upd["status"]["phase"] = json!("Terminating");
    prepare_for_update("", "namespaces", &mut upd, &got, &ctx());
    assert_eq!(upd, got);

    let mut dying = got.clone();
    mark_terminating(&mut dying);
    assert_eq!(dying["status"]["phase"], json!("Terminating"));
    assert_eq!(
        field_value("", "namespaces", &dying, "status.phase").as_deref(),
        Some("Terminating")
    );
    assert_eq!(
        field_value("", "namespaces", &dying, "metadata.namespace"),
        None
    );

    // `/finalize` takes everything but the status from the body (upstream's finalize
    // strategy), so a finalizer's removal can come with the rest of the object unchanged.
    let mut fin = got.clone();
    fin["spec"]["finalizers"] = json!([]);
    fin["metadata"]["labels"]["x"] = json!("y");
    fin["status"]["phase"] = json!("Terminating");
    prepare_for_subresource_update("", "namespaces", "finalize", &mut fin, &got);
    assert_eq!(fin["spec"]["finalizers"], json!([]));
    assert_eq!(fin["metadata"]["labels"]["x"], json!("y"));
    assert_eq!(fin["status"], got["status"]);
}

#[test]
fn service_defaults_table() {
    let cases = [
        (
            json!({"spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}),
            json!({"spec": {"selector": {"app": "a"},
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                "sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster"},
                "status": {"loadBalancer": {}}}),
        ),
        (
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": "http"}]}}),
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": "http"}],
                "sessionAffinity": "None", "type": "LoadBalancer", "internalTrafficPolicy": "Cluster",
                "externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": true},
                "status": {"loadBalancer": {}}}),
        ),
        (
            json!({"spec": {"clusterIP": "None"}}),
            json!({"spec": {"clusterIP": "None", "clusterIPs": ["None"],
                "sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster"},
                "status": {"loadBalancer": {}}}),
        ),
        (
            json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
            json!({"spec": {"type": "ExternalName", "externalName": "example.com",
                "sessionAffinity": "None"}, "status": {"loadBalancer": {}}}),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(created("", "services", input.clone()), want, "{input}");
    }
}

#[test]
fn service_validation_causes() {
    let svc = |spec: Value| {
        created(
            "",
            "services",
            json!({"metadata": {"name": "s", "namespace": "d"}, "spec": spec}),
        )
    };
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (svc(json!({"ports": [{"port": 80}]})), vec![]),
        (svc(json!({})), vec!["spec.ports: Required value"]),
        (svc(json!({"clusterIP": "None"})), vec![]),
        (
            svc(json!({"ports": [{"port": 80}, {"port": 81, "name": "b"}]})),
            vec!["spec.ports[0].name: Required value"],
        ),
        (
            svc(json!({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]})),
            vec!["spec.ports[1].name: Duplicate value: \"a\""],
        ),
        (
            svc(json!({"ports": [{"port": 0}]})),
            vec!["spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                 "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"],
        ),
        (
            svc(json!({"type": "ExternalName"})),
            vec!["spec.externalName: Required value"],
        ),
        (
            svc(json!({"type": "Weird", "ports": [{"port": 1}]})),
            vec!["spec.type: Unsupported value: \"Weird\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""],
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(messages(validate("", "services", &obj)), want, "{obj}");
    }
    let mut bad_name = svc(json!({"ports": [{"port": 80}]}));
    bad_name["metadata"]["name"] = json!("1abc");
    assert_eq!(
        validate("", "services", &bad_name)[0].field,
        "metadata.name"
    );
}

#[test]
fn service_allocation_and_update() {
    let services = strategy("", "services");
    let np = created(
        "",
        "services",
        json!({"metadata": {"name": "s", "namespace": "d"},
        "spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30001}]}}),
    );
    assert_eq!(
        services.service_allocation(&np),
        Some(ServiceNeeds {
            cluster_ips: vec![IpNeed::new(0, "IPv4", Request::Any)],
            node_ports: vec![
                (0, NodePortNeed::Allocate(Request::Any)),
                (1, NodePortNeed::Allocate(Request::Exactly(30001)))
            ],
            health_check_node_port: None,
        })
    );
    let mut stored = np.clone();
    stored["spec"]["clusterIP"] = json!("10.0.0.5");
    stored["spec"]["clusterIPs"] = json!(["10.0.0.5"]);
    stored["spec"]["ports"][0]["nodePort"] = json!(30000);
    assert_eq!(
        services.service_held(&stored),
        Some(ServiceHeld {
            cluster_ips: vec!["10.0.0.5".into()],
            node_ports: vec![30000, 30001]
        })
    );
    assert_eq!(strategy("", "configmaps").service_allocation(&stored), None);

    // An update that omits allocated values keeps them.
    let mut upd = json!({"metadata": {"name": "s", "namespace": "d"},
        "spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30001}]}});
    prepare_for_update("", "services", &mut upd, &stored, &ctx());
    assert_eq!(upd["spec"]["clusterIP"], json!("10.0.0.5"));
    assert_eq!(upd["spec"]["ports"][0]["nodePort"], json!(30000));
    assert_eq!(
        messages(validate_update("", "services", &upd, &stored)),
        Vec::<String>::new()
    );

    let mut moved = upd.clone();
    moved["spec"]["clusterIP"] = json!("10.0.0.6");
    moved["spec"]["clusterIPs"] = json!(["10.0.0.6"]);
    assert_eq!(
        messages(validate_update("", "services", &moved, &stored)),
        vec!["spec.clusterIPs[0]: Invalid value: [\"10.0.0.6\"]: may not change once set"]
    );
    assert!(allow_create_on_update("", "services"));
}

/// Every `NodeSpec` member is `omitempty`: upstream, which decodes bodies into Go structs,
/// never keeps `taints: []` (nor `podCIDRs: []`, `unschedulable: false`, a taint's empty
/// `value`). On create the not-ready taint still goes into the emptied list.
#[test]
fn node_spec_drops_zero_values_as_go_omitempty() {
    let made = created(
        "",
        "nodes",
        json!({"metadata": {"name": "n"}, "spec": {"taints": []}}),
    );
    assert_eq!(
        made["spec"],
        json!({"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]})
    );
    let rows = [
        (json!({"taints": []}), json!({})),
        (
            json!({"podCIDR": "", "podCIDRs": [], "providerID": "", "unschedulable": false,
                   "externalID": "", "configSource": null, "taints": null}),
            json!({}),
        ),
        (
            json!({"unschedulable": true, "configSource": {},
                   "taints": [{"key": "", "value": "", "effect": "", "timeAdded": null}]}),
            json!({"unschedulable": true, "configSource": {},
                   "taints": [{"key": "", "effect": ""}]}),
        ),
    ];
    for (spec, want) in rows {
        let mut new = json!({"metadata": {"name": "n"}, "spec": spec});
        prepare_for_update("", "nodes", &mut new, &made, &ctx());
        assert_eq!(new["spec"], want, "{spec}");
    }
}

#[test]
fn node_bare_create() {
    let got = created(
        "",
        "nodes",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
    );
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        // Upstream's TaintNodesByCondition admission taints a new node not-ready.
        "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
        "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                   "nodeInfo": {"architecture": "", "bootID": "", "containerRuntimeVersion": "",
                                "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "",
                                "machineID": "", "operatingSystem": "", "osImage": "",
                                "systemUUID": ""}}})
    );
    assert!(validate("", "nodes", &got).is_empty());
    let kept = created(
        "",
        "nodes",
        json!({"metadata": {"name": "n"},
        "status": {"capacity": {"cpu": "4"}}}),
    );
    assert_eq!(kept["status"]["allocatable"], json!({"cpu": "4"}));
    let node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
    assert_eq!(
        field_value("", "nodes", &node, "spec.unschedulable").as_deref(),
        Some("true")
    );
    assert_eq!(
        selectable_fields("", "nodes"),
        &["metadata.name", "spec.unschedulable"]
    );
}

#[test]
fn deployment_create_defaults() {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {"replicas": 5}});
    let want = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 1},
        "spec": {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                 "selector": {"matchLabels": {"app": "web"}},
                 "strategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": template_spec()}},
        "status": {}});
    let got = created("apps", "deployments", d);
    assert_eq!(got, want);
    assert!(validate("apps", "deployments", &got).is_empty());
}

#[test]
fn workload_create_defaults_table() {
    // kubectl 1.32 sends the zero creationTimestamp as null; v1.36 omits it.
    let template = json!({"metadata": {"creationTimestamp": null, "labels": {"app": "a"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let dt = json!({"metadata": {"labels": {"app": "a"}}, "spec": template_spec()});
    let sel = json!({"matchLabels": {"app": "a"}});
    let meta = json!({"name": "w", "namespace": "d"});
    let meta1 = json!({"name": "w", "namespace": "d", "generation": 1});
    let cases = [
        (
            "replicasets",
            json!({"metadata": meta, "spec": {"selector": sel, "template": template}}),
            json!({"metadata": meta1, "spec": {"replicas": 1, "selector": sel, "template": dt},
                   "status": {"replicas": 0}}),
        ),
        (
            "statefulsets",
            json!({"metadata": meta, "spec": {"selector": sel, "template": template, "serviceName": "s",
                   "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
            json!({"metadata": meta1, "spec": {"replicas": 1, "selector": sel, "template": dt,
                   "serviceName": "s", "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10,
                   "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                   "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                   "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                 "volumeMode": "Filesystem"},
                        "status": {"phase": "Pending"}}]},
                   "status": {"replicas": 0, "availableReplicas": 0}}),
        ),
        (
            "daemonsets",
            json!({"metadata": meta, "spec": {"selector": sel, "template": template}}),
            // Upstream shows the template generation (1 on create) as an annotation.
            json!({"metadata": {"name": "w", "namespace": "d", "generation": 1,
                                "annotations": {"deprecated.daemonset.template.generation": "1"}},
                   "spec": {"selector": sel, "template": dt, "revisionHistoryLimit": 10,
                   "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
                   "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                              "desiredNumberScheduled": 0, "numberReady": 0}}),
        ),
    ];
    for (resource, input, want) in cases {
        let got = created("apps", resource, input);
        assert_eq!(got, want, "{resource}");
        assert!(validate("apps", resource, &got).is_empty(), "{resource}");
    }
}

#[test]
fn job_and_cronjob_defaults() {
    let mut tmpl = template_spec();
    tmpl["restartPolicy"] = json!("Never");
    let job = json!({"metadata": {"name": "j", "namespace": "d", "uid": "u1"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Never"}}}});
    let labels = json!({"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "j",
                        "controller-uid": "u1", "job-name": "j"});
    let want = json!({"metadata": {"name": "j", "namespace": "d", "uid": "u1", "generation": 1, "labels": labels},
        "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                 "suspend": false, "podReplacementPolicy": "TerminatingOrFailed",
                 "manualSelector": false,
                 "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                 "template": {"metadata": {"labels": labels}, "spec": tmpl}},
        "status": {}});
    let got = created("batch", "jobs", job);
    assert_eq!(got, want);
    assert!(validate("batch", "jobs", &got).is_empty());

    let mut always = got.clone();
    always["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    assert_eq!(
        messages(validate("batch", "jobs", &always)),
        vec!["spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""]
    );

    let cj = json!({"metadata": {"name": "c", "namespace": "d"},
        "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Never"}}}}}});
    let want = json!({"metadata": {"name": "c", "namespace": "d", "generation": 1},
        "spec": {"schedule": "*/1 * * * *", "concurrencyPolicy": "Allow", "suspend": false,
                 "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                 "jobTemplate": {"metadata": {},
                                 "spec": {"template": {"metadata": {}, "spec": tmpl}}}},
        "status": {}});
    let got = created("batch", "cronjobs", cj);
    assert_eq!(got, want);
    assert!(validate("batch", "cronjobs", &got).is_empty());
    let mut bad = got.clone();
    bad["spec"]["schedule"] = json!("61 * * * *");
    assert_eq!(
        messages(validate("batch", "cronjobs", &bad)),
        vec!["spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"]
    );
}

#[test]
fn workload_validation_causes() {
    let base = created(
        "apps",
        "deployments",
        json!({"metadata": {"name": "w", "namespace": "d"},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
    );
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        f(&mut v);
        v
    };
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            with(&|v| v["spec"]["replicas"] = json!(-1)),
            vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            with(&|v| { v["spec"].as_object_mut().unwrap().remove("selector"); }),
            vec!["spec.selector: Required value"],
        ),
        (
            with(&|v| v["spec"]["template"]["metadata"]["labels"] = json!({"app": "b"})),
            vec!["spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`"],
        ),
        (
            with(&|v| v["spec"]["selector"] = json!({})),
            vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
        ),
        (
            with(&|v| v["spec"]["template"]["spec"]["restartPolicy"] = json!("Never")),
            vec!["spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""],
        ),
        (
            with(&|v| v["spec"]["strategy"]["rollingUpdate"] = json!({"maxSurge": 0, "maxUnavailable": 0})),
            vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"],
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(
            messages(validate("apps", "deployments", &obj)),
            want,
            "{obj}"
        );
    }
}

#[test]
fn workload_update_generation_and_immutability() {
    let old = created(
        "apps",
        "deployments",
        json!({"metadata": {"name": "w", "namespace": "d"},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
    );
    let cases = [
        // (mutation, expected generation)
        (json!({"labels": {"x": "y"}}), None, 1),
        (json!({}), Some(json!(3)), 2),
        (json!({"annotations": {"a": "b"}}), None, 2),
    ];
    for (meta_patch, replicas, want_gen) in cases {
        let mut new = old.clone();
        for (k, v) in meta_patch.as_object().unwrap() {
            new["metadata"][k] = v.clone();
        }
        if let Some(r) = replicas {
            new["spec"]["replicas"] = r;
        }
        new["status"] = json!({"replicas": 9});
        prepare_for_update("apps", "deployments", &mut new, &old, &ctx());
        assert_eq!(
            new["metadata"]["generation"],
            json!(want_gen),
            "{meta_patch}"
        );
        assert_eq!(new["status"], json!({}));
    }
    let mut moved = old.clone();
    moved["spec"]["selector"] = json!({"matchLabels": {"app": "b"}});
    moved["spec"]["template"]["metadata"]["labels"] = json!({"app": "b"});
    assert_eq!(
        messages(validate_update("apps", "deployments", &moved, &old)),
        vec!["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"b\"}}: field is immutable"]
    );

    let sts = created(
        "apps",
        "statefulsets",
        json!({"metadata": {"name": "s", "namespace": "d"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "serviceName": "x",
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
    );
    let mut renamed = sts.clone();
    renamed["spec"]["serviceName"] = json!("y");
    let errs = validate_update("apps", "statefulsets", &renamed, &sts);
    assert_eq!(errs.len(), 1);
    assert!(errs[0]
        .message
        .starts_with("Forbidden: updates to statefulset spec for fields other than"));
    let mut scaled = sts.clone();
    scaled["spec"]["replicas"] = json!(3);
    assert!(validate_update("apps", "statefulsets", &scaled, &sts).is_empty());
}

#[test]
fn scale_subresource() {
    let mut d = created(
        "apps",
        "deployments",
        json!({"metadata": {"name": "w", "namespace": "d", "uid": "u"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
    );
    d["status"] = json!({"replicas": 1});
    assert_eq!(
        scale_from("apps", "deployments", &d),
        Some(json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "w", "namespace": "d", "uid": "u"},
        "spec": {"replicas": 2}, "status": {"replicas": 1, "selector": "app=a"}}))
    );
    assert_eq!(scale_from("", "pods", &d), None);
    apply_scale(&mut d, 5);
    assert_eq!(d["spec"]["replicas"], json!(5));
    let deployments = strategy("apps", "deployments");
    let scale = deployments.scale_from(&d).unwrap();
    assert!(deployments.validate_scale(&scale).is_empty());
    let rows: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"metadata": {"name": "w", "namespace": "d"}, "spec": {"replicas": -1}}),
            vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            json!({"spec": {"replicas": 1}}),
            vec![
                "metadata.name: Required value: name or generateName is required",
                "metadata.namespace: Required value",
            ],
        ),
    ];
    for (body, want) in rows {
        assert_eq!(messages(deployments.validate_scale(&body)), want, "{body}");
    }
}

#[test]
fn configmap_and_secret_rules() {
    let cm = json!({"metadata": {"name": "c", "namespace": "d"}, "data": {"ok.key": "v", "bad key": "v"}});
    assert_eq!(
        messages(validate("", "configmaps", &cm)),
        vec!["data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"]
    );
    let big = json!({"metadata": {"name": "c", "namespace": "d"}, "data": {"k": "x".repeat(1024 * 1024 + 1)}});
    assert_eq!(
        validate("", "configmaps", &big)[0].reason,
        "FieldValueTooLong"
    );

    let frozen =
        json!({"metadata": {"name": "c", "namespace": "d"}, "immutable": true, "data": {"a": "1"}});
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (frozen.clone(), vec![]),
        (
            json!({"metadata": {"name": "c", "namespace": "d"}, "immutable": true, "data": {"a": "2"}}),
            vec!["data: Forbidden: field is immutable when `immutable` is set"],
        ),
        (
            json!({"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "1"}}),
            vec!["immutable: Forbidden: field is immutable when `immutable` is set"],
        ),
    ];
    for (new, want) in cases {
        assert_eq!(
            messages(validate_update("", "configmaps", &new, &frozen)),
            want
        );
    }

    let secret = created(
        "",
        "secrets",
        json!({"metadata": {"name": "s", "namespace": "d"}, "data": {"a": "MQ=="}}),
    );
    assert_eq!(secret["type"], json!("Opaque"));
    assert_eq!(
        field_value("", "secrets", &secret, "type").as_deref(),
        Some("Opaque")
    );
    let mut retyped = secret.clone();
    retyped["type"] = json!("kubernetes.io/tls");
    let errs = messages(validate_update("", "secrets", &retyped, &secret));
    assert!(errs
        .contains(&"type: Invalid value: \"kubernetes.io/tls\": field is immutable".to_string()));
    assert!(errs.contains(&"data[tls.crt]: Required value".to_string()));
}

#[test]
fn event_fields() {
    let ev = json!({"metadata": {"name": "e", "namespace": "d"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "d", "uid": "u"},
        "reason": "Started", "source": {"component": "kubelet"}, "type": "Normal"});
    let cases = [
        ("involvedObject.kind", "Pod"),
        ("involvedObject.name", "p"),
        ("involvedObject.fieldPath", ""),
        ("reason", "Started"),
        ("source", "kubelet"),
        ("type", "Normal"),
        ("reportingComponent", ""),
    ];
    for (field, want) in cases {
        assert_eq!(
            field_value("", "events", &ev, field).as_deref(),
            Some(want),
            "{field}"
        );
    }
    assert!(allow_create_on_update("", "events"));
    assert_eq!(field_value("", "configmaps", &ev, "reason"), None);
}

#[test]
fn generic_flags_table() {
    let cases = [
        // group, resource, status, create-on-update, unconditional, generation
        ("", "pods", true, false, true, true),
        ("", "configmaps", false, false, true, false),
        ("", "services", true, true, true, false),
        ("", "endpoints", false, true, true, false),
        ("apps", "deployments", true, false, true, true),
        ("batch", "cronjobs", true, false, true, true),
        ("coordination.k8s.io", "leases", false, true, true, false),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            true,
            false,
            false,
            true,
        ),
        ("example.com", "widgets", false, false, true, false),
    ];
    for (g, r, status, cou, uncond, generation) in cases {
        let tr = strategy(g, r).traits();
        assert_eq!(tr.status_subresource, status, "{g}/{r}");
        assert_eq!(allow_create_on_update(g, r), cou, "{g}/{r}");
        assert_eq!(allow_unconditional_update(g, r), uncond, "{g}/{r}");
        assert_eq!(tr.tracks_generation, generation, "{g}/{r}");
    }
}

#[test]
fn malformed_input_never_panics() {
    let inputs = [
        json!(null),
        json!(5),
        json!({"spec": 3}),
        json!({"spec": {"containers": "x"}}),
        json!({"metadata": [], "spec": {"template": 1, "ports": [1, "a"]}}),
    ];
    let resources = [
        ("", "pods"),
        ("", "services"),
        ("", "namespaces"),
        ("", "nodes"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("", "secrets"),
        ("", "configmaps"),
    ];
    for (g, r) in resources {
        for input in &inputs {
            let mut obj = input.clone();
            prepare_for_create(g, r, &mut obj, &ctx());
            let _ = validate(g, r, &obj);
            let mut upd = input.clone();
            prepare_for_update(g, r, &mut upd, &obj, &ctx());
            prepare_for_subresource_update(g, r, "status", &mut upd, &obj);
            let _ = validate_update(g, r, &upd, &obj);
            let s = strategy(g, r);
            let mut raw = input.clone();
            s.canonicalize_input(&mut raw);
            for grace in [None, Some(-1), Some(0), Some(30)] {
                if let DeletionPlan::Mark { grace } = s.deletion_plan(input, grace) {
                    s.mark_deleting(&mut raw, grace, &ctx());
                }
            }
            let _ = s.delete_on_update(input, &raw);
            let _ = s.cleanup_delete_grace(input, &|_| false);
            let _ = s.scale_from(input).map(|sc| s.validate_scale(&sc));
            let _ = (s.service_allocation(input), s.service_held(input));
            let _ = s.validate_binding(input);
            let _ = s.bind(&mut raw, input, &ctx());
            let _ = s.field_value(input, "status.phase");
        }
    }
}

fn name_causes(group: &str, resource: &str, obj: &Value) -> Vec<String> {
    validate(group, resource, obj)
        .into_iter()
        .filter(|c| c.field.starts_with("metadata.name") || c.field == "metadata.generateName")
        .map(|c| error_text(&c))
        .collect()
}

/// The name rule of each type, as upstream's per-type `ValidateXName` (or, for types whose
/// validation checks no name, its generic create check: a path segment) applies it.
#[test]
fn name_rules_by_type() {
    // (group, resource, name, valid)
    let rows: &[(&str, &str, &str, bool)] = &[
        ("", "namespaces", "team-a", true),
        ("", "namespaces", "team.a", false),
        ("", "services", "web-1", true),
        ("", "services", "1web", false),
        ("", "pods", "web.1", true),
        ("", "configmaps", "a.b", true),
        ("", "configmaps", "Bad_Name", false),
        ("", "nodes", "node-1.example.com", true),
        ("", "nodes", "Node_1", false),
        ("", "persistentvolumes", "pv.1", true),
        ("", "persistentvolumes", "pv:1", false),
        ("", "events", "web.17a2b3c4d5e6f7:Started", true),
        ("", "events", "Upper_Case", true),
        ("", "events", "a/b", false),
        ("", "events", "..", false),
        ("events.k8s.io", "events", "web.17a2b3c4d5e6f7", true),
        ("events.k8s.io", "events", "a:b", false),
        ("coordination.k8s.io", "leases", "kube-scheduler", true),
        ("coordination.k8s.io", "leases", "Kube", false),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            "high-priority",
            true,
        ),
        ("scheduling.k8s.io", "priorityclasses", "High", false),
        ("storage.k8s.io", "csidrivers", "ebs.csi.aws.com", true),
        ("node.k8s.io", "runtimeclasses", "gvisor", true),
        ("node.k8s.io", "runtimeclasses", "g_visor", false),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            "system:controller:x",
            true,
        ),
        ("rbac.authorization.k8s.io", "rolebindings", "a%b", false),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "csr:Node-1",
            true,
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "a/b",
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "a:b",
            false,
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            "exempt",
            true,
        ),
        ("example.com", "widgets", "a.b", true),
        ("example.com", "widgets", "a:b", false),
    ];
    for &(g, r, name, valid) in rows {
        let namespaced = strategy(g, r).traits().namespaced;
        let mut obj = json!({"metadata": {"name": name}});
        if namespaced {
            obj["metadata"]["namespace"] = json!("d");
        }
        let causes = name_causes(g, r, &obj);
        assert_eq!(causes.is_empty(), valid, "{g}/{r} {name:?}: {causes:?}");
    }
    // The texts are upstream's, per rule.
    let label = json!({"metadata": {"name": "team.a"}});
    assert_eq!(
        name_causes("", "namespaces", &label),
        ["metadata.name: Invalid value: \"team.a\": must not contain dots"]
    );
    let segment = json!({"metadata": {"name": "a/b", "namespace": "d"}});
    assert_eq!(
        name_causes("", "events", &segment),
        ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
    );
    // generateName prefixes are checked with upstream's trailing-dash allowance.
    let generated =
        json!({"metadata": {"name": "web-x2b4c", "generateName": "web-", "namespace": "d"}});
    assert!(name_causes("", "services", &generated).is_empty());
}

/// CRD and APIService names are derived from their spec, as upstream's name checks require.
#[test]
fn names_derived_from_the_spec() {
    let crd = |name: &str| json!({"metadata": {"name": name}, "spec": {"group": "example.com", "names": {"plural": "widgets"}}});
    let crds = ("apiextensions.k8s.io", "customresourcedefinitions");
    assert!(name_causes(crds.0, crds.1, &crd("widgets.example.com")).is_empty());
    assert_eq!(
        name_causes(crds.0, crds.1, &crd("widget.example.com")),
        ["metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group"]
    );
    let mut generated = crd("widgets.example.com");
    generated["metadata"]["generateName"] = json!("w-");
    assert_eq!(
        name_causes(crds.0, crds.1, &generated),
        ["metadata.generateName: Invalid value: \"w-\": must be spec.names.plural+\".\"+spec.group"]
    );
    let api = |name: &str| json!({"metadata": {"name": name}, "spec": {"group": "example.com", "version": "v1"}});
    let apis = ("apiregistration.k8s.io", "apiservices");
    assert!(name_causes(apis.0, apis.1, &api("v1.example.com")).is_empty());
    assert_eq!(
        name_causes(apis.0, apis.1, &api("v2.example.com")),
        ["metadata.name: Invalid value: \"v2.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\""]
    );
    assert_eq!(
        name_causes(apis.0, apis.1, &api("v1/x")),
        ["metadata.name: Invalid value: \"v1/x\": may not contain '/'"]
    );
}

/// The causes of a create are the ones the server's 422 carries: metadata first, then the
/// type's, messages without their field path.
#[test]
fn create_causes_in_the_shape_of_the_422() {
    let cm = json!({"metadata": {"name": "Bad_Name", "namespace": "d"}, "data": {"a b": "x"}});
    let causes = validate("", "configmaps", &cm);
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["metadata.name", "data[a b]"]);
    for c in &causes {
        assert_eq!(c.reason, "FieldValueInvalid");
        assert!(c.message.starts_with("Invalid value: \""), "{c:?}");
    }
    let err = keel_api::ApiError::invalid("", "ConfigMap", "Bad_Name", causes);
    assert!(
        err.message.starts_with("ConfigMap \"Bad_Name\" is invalid: [metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .contains(", data[a b]: Invalid value: \"a b\": a valid config key"),
        "{}",
        err.message
    );
    // Scope: metadata.namespace is required for namespaced types, refused for the others.
    let rows = [
        (
            ("", "configmaps"),
            json!({"metadata": {"name": "c"}}),
            "metadata.namespace: Required value",
        ),
        (
            ("", "nodes"),
            json!({"metadata": {"name": "n", "namespace": "d"}}),
            "metadata.namespace: Forbidden: not allowed on this type",
        ),
    ];
    for ((g, r), obj, want) in rows {
        assert_eq!(messages(validate(g, r, &obj)), [want], "{g}/{r}");
    }
}

#[test]
fn secret_string_data_is_canonicalized() {
    let secrets = strategy("", "secrets");
    let mut raw = json!({"metadata": {"name": "s", "namespace": "d"}, "stringData": {"k": "v"}});
    secrets.canonicalize_input(&mut raw);
    assert_eq!(raw["data"], json!({"k": "dg=="}));
    assert!(raw.get("stringData").is_none());
    // prepare_for_create canonicalizes too (idempotently).
    let got = created(
        "",
        "secrets",
        json!({"metadata": {"name": "s", "namespace": "d"}, "data": {"a": "eA=="}, "stringData": {"k": "v"}}),
    );
    assert_eq!(got["data"], json!({"a": "eA==", "k": "dg=="}));
    assert!(validate("", "secrets", &got).is_empty());
    let mut upd = got.clone();
    upd["stringData"] = json!({"a": "y"});
    secrets.prepare_for_update(&mut upd, &got, &ctx());
    assert_eq!(upd["data"], json!({"a": "eQ==", "k": "dg=="}));
    // Only Secrets have stringData.
    let mut cm = json!({"stringData": {"k": "v"}});
    strategy("", "configmaps").canonicalize_input(&mut cm);
    assert_eq!(cm, json!({"stringData": {"k": "v"}}));
}

fn bound_pod(meta: Value, phase: &str) -> Value {
    json!({"metadata": meta, "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30},
           "status": {"phase": phase}})
}

/// The deletion plan per type: pods delete gracefully, namespaces terminate, finalizers hold.
#[test]
fn deletion_plans() {
    use DeletionPlan::{AlreadyPending, Mark, Now};
    let ts = "2024-01-01T00:00:30Z";
    let fin = json!(["example.com/hold"]);
    let meta = |extra: Value| {
        let mut m = json!({"name": "x", "namespace": "d"});
        for (k, v) in extra.as_object().unwrap() {
            m[k] = v.clone();
        }
        m
    };
    // (group, resource, object, requested grace, plan)
    let rows: Vec<(&str, &str, Value, Option<i64>, DeletionPlan)> = vec![
        (
            "",
            "configmaps",
            json!({"metadata": meta(json!({}))}),
            None,
            Now,
        ),
        (
            "",
            "configmaps",
            json!({"metadata": meta(json!({}))}),
            Some(30),
            Now,
        ),
        (
            "",
            "configmaps",
            json!({"metadata": meta(json!({"finalizers": fin}))}),
            None,
            Mark { grace: 0 },
        ),
        (
            "",
            "configmaps",
            json!({"metadata": meta(json!({"finalizers": fin, "deletionTimestamp": ts, "deletionGracePeriodSeconds": 0}))}),
            None,
            AlreadyPending,
        ),
        (
            "",
            "configmaps",
            json!({"metadata": meta(json!({"finalizers": fin, "deletionTimestamp": ts}))}),
            None,
            Mark { grace: 0 },
        ),
        (
            "",
            "configmaps",
            json!({"metadata": meta(json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 0}))}),
            None,
            Now,
        ),
        // Namespaces: the first delete always marks (the controller empties them first).
        (
            "",
            "namespaces",
            json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]}}),
            None,
            Mark { grace: 0 },
        ),
        (
            "",
            "namespaces",
            json!({"metadata": {"name": "n"}}),
            Some(0),
            Mark { grace: 0 },
        ),
        (
            "",
            "namespaces",
            json!({"metadata": {"name": "n", "deletionTimestamp": ts}, "spec": {"finalizers": ["kubernetes"]}}),
            None,
            AlreadyPending,
        ),
        (
            "",
            "namespaces",
            json!({"metadata": {"name": "n", "deletionTimestamp": ts, "finalizers": fin}, "spec": {"finalizers": []}}),
            None,
            Mark { grace: 0 },
        ),
        (
            "",
            "namespaces",
            json!({"metadata": {"name": "n", "deletionTimestamp": ts}, "spec": {}}),
            None,
            Now,
        ),
        // Pods: graceful on a node, at once otherwise.
        (
            "",
            "pods",
            json!({"metadata": meta(json!({})), "spec": {"terminationGracePeriodSeconds": 30}}),
            None,
            Now,
        ),
        (
            "",
            "pods",
            json!({"metadata": meta(json!({"finalizers": fin})), "spec": {}}),
            None,
            Mark { grace: 0 },
        ),
        (
            "",
            "pods",
            bound_pod(meta(json!({})), "Running"),
            None,
            Mark { grace: 30 },
        ),
        (
            "",
            "pods",
            bound_pod(meta(json!({})), "Pending"),
            Some(5),
            Mark { grace: 5 },
        ),
        (
            "",
            "pods",
            bound_pod(meta(json!({})), "Running"),
            Some(0),
            Now,
        ),
        (
            "",
            "pods",
            bound_pod(meta(json!({})), "Running"),
            Some(-3),
            Mark { grace: 1 },
        ),
        (
            "",
            "pods",
            bound_pod(meta(json!({})), "Succeeded"),
            None,
            Now,
        ),
        (
            "",
            "pods",
            bound_pod(meta(json!({})), "Failed"),
            Some(10),
            Now,
        ),
        (
            "",
            "pods",
            bound_pod(
                meta(json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 30})),
                "Running",
            ),
            None,
            AlreadyPending,
        ),
        (
            "",
            "pods",
            bound_pod(
                meta(json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 30})),
                "Running",
            ),
            Some(30),
            AlreadyPending,
        ),
        (
            "",
            "pods",
            bound_pod(
                meta(json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 30})),
                "Running",
            ),
            Some(5),
            Mark { grace: 5 },
        ),
        (
            "",
            "pods",
            bound_pod(
                meta(json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 30})),
                "Running",
            ),
            Some(0),
            Now,
        ),
        (
            "",
            "pods",
            bound_pod(
                meta(
                    json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 30, "finalizers": fin}),
                ),
                "Running",
            ),
            Some(0),
            Mark { grace: 0 },
        ),
        // A mark without a grace period: a failed removal after the mark is retried.
        (
            "",
            "pods",
            bound_pod(
                meta(json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 0})),
                "Running",
            ),
            None,
            Now,
        ),
        (
            "",
            "pods",
            bound_pod(
                meta(
                    json!({"deletionTimestamp": ts, "deletionGracePeriodSeconds": 0, "finalizers": fin}),
                ),
                "Running",
            ),
            None,
            AlreadyPending,
        ),
        (
            "example.com",
            "widgets",
            json!({"metadata": meta(json!({"finalizers": fin}))}),
            None,
            Mark { grace: 0 },
        ),
    ];
    for (g, r, obj, grace, want) in rows {
        assert_eq!(
            strategy(g, r).deletion_plan(&obj, grace),
            want,
            "{g}/{r} {grace:?} {obj}"
        );
    }
}

/// What a mark writes: due times from the request's clock, upstream's generation bump, the
/// namespace phase.
#[test]
fn deletion_marks() {
    let now = "2024-01-01T00:00:00Z";
    // (group, resource, object, grace, expected metadata, expected status)
    let rows: Vec<(&str, &str, Value, i64, Value, Value)> = vec![
        (
            "",
            "pods",
            bound_pod(json!({"name": "p"}), "Running"),
            30,
            json!({"name": "p", "deletionTimestamp": "2024-01-01T00:00:30Z", "deletionGracePeriodSeconds": 30}),
            json!({"phase": "Running"}),
        ),
        (
            // Shortening counts from the first delete (due 00:00:30 with 30 s, so it began at 00:00:00).
            "",
            "pods",
            bound_pod(
                json!({"name": "p", "deletionTimestamp": "2024-01-01T00:00:30Z", "deletionGracePeriodSeconds": 30}),
                "Running",
            ),
            5,
            json!({"name": "p", "deletionTimestamp": "2024-01-01T00:00:05Z", "deletionGracePeriodSeconds": 5}),
            json!({"phase": "Running"}),
        ),
        (
            "",
            "namespaces",
            json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            0,
            json!({"name": "n", "deletionTimestamp": now}),
            json!({"phase": "Terminating"}),
        ),
        (
            "",
            "namespaces",
            json!({"metadata": {"name": "n", "deletionTimestamp": "2023-12-31T00:00:00Z", "finalizers": ["f.io/x"]}, "status": {"phase": "Terminating"}}),
            0,
            json!({"name": "n", "deletionTimestamp": "2023-12-31T00:00:00Z", "finalizers": ["f.io/x"], "deletionGracePeriodSeconds": 0}),
            json!({"phase": "Terminating"}),
        ),
        (
            "apps",
            "deployments",
            json!({"metadata": {"name": "d", "generation": 3, "finalizers": ["f.io/x"]}, "status": {}}),
            0,
            json!({"name": "d", "generation": 4, "finalizers": ["f.io/x"], "deletionTimestamp": now, "deletionGracePeriodSeconds": 0}),
            json!({}),
        ),
        (
            // Already deleting: the timestamp stays (it is not in the future), no second bump.
            "apps",
            "deployments",
            json!({"metadata": {"name": "d", "generation": 4, "finalizers": ["f.io/x"], "deletionTimestamp": "2023-12-31T00:00:00Z"}, "status": {}}),
            0,
            json!({"name": "d", "generation": 4, "finalizers": ["f.io/x"], "deletionTimestamp": "2023-12-31T00:00:00Z", "deletionGracePeriodSeconds": 0}),
            json!({}),
        ),
        (
            // A timestamp in the future (a graceful pod now held by a finalizer) becomes now.
            "",
            "configmaps",
            json!({"metadata": {"name": "c", "finalizers": ["f.io/x"], "deletionTimestamp": "2024-06-01T00:00:00Z"}, "status": {}}),
            0,
            json!({"name": "c", "finalizers": ["f.io/x"], "deletionTimestamp": now, "deletionGracePeriodSeconds": 0}),
            json!({}),
        ),
    ];
    for (g, r, mut obj, grace, want_meta, want_status) in rows {
        strategy(g, r).mark_deleting(&mut obj, grace, &ctx());
        assert_eq!(obj["metadata"], want_meta, "{g}/{r}");
        assert_eq!(obj["status"], want_status, "{g}/{r}");
    }
}

/// Finalizers that hold an object, and whether an update that removes the last one deletes
/// it (upstream's `ShouldDeleteDuringUpdate`).
#[test]
fn finalizers_and_delete_on_update() {
    let ts = "2024-01-01T00:00:00Z";
    let ns = strategy("", "namespaces");
    let cms = strategy("", "configmaps");
    let pods = strategy("", "pods");
    let spec_held = json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]}});
    assert!(ns.has_pending_finalizers(&spec_held));
    assert!(
        !cms.has_pending_finalizers(&spec_held),
        "only namespaces have spec.finalizers"
    );
    assert!(cms.has_pending_finalizers(&json!({"metadata": {"finalizers": ["f.io/x"]}})));
    assert!(!cms.has_pending_finalizers(&json!({"metadata": {"finalizers": []}})));

    // (strategy, new, old, deletes)
    let rows: Vec<(&Strategy, Value, Value, bool)> = vec![
        (
            cms,
            json!({"metadata": {}}),
            json!({"metadata": {"deletionTimestamp": ts, "deletionGracePeriodSeconds": 0, "finalizers": ["f.io/x"]}}),
            true,
        ),
        (
            cms,
            json!({"metadata": {"finalizers": ["f.io/y"]}}),
            json!({"metadata": {"deletionTimestamp": ts, "deletionGracePeriodSeconds": 0}}),
            false,
        ),
        (
            cms,
            json!({"metadata": {}}),
            json!({"metadata": {"finalizers": ["f.io/x"]}}),
            false,
        ),
        (
            ns,
            json!({"metadata": {}, "spec": {"finalizers": []}}),
            json!({"metadata": {"deletionTimestamp": ts}, "spec": {"finalizers": ["kubernetes"]}}),
            true,
        ),
        (
            ns,
            json!({"metadata": {}, "spec": {"finalizers": ["kubernetes"]}}),
            json!({"metadata": {"deletionTimestamp": ts, "finalizers": ["f.io/x"]}}),
            false,
        ),
        // A graceful deletion still running is finished by its kubelet, not by the update.
        (
            pods,
            json!({"metadata": {}}),
            json!({"metadata": {"deletionTimestamp": ts, "deletionGracePeriodSeconds": 30, "finalizers": ["f.io/x"]}}),
            false,
        ),
        (
            pods,
            json!({"metadata": {}}),
            json!({"metadata": {"deletionTimestamp": ts, "deletionGracePeriodSeconds": 0, "finalizers": ["f.io/x"]}}),
            true,
        ),
    ];
    for (s, new, old, want) in rows {
        assert_eq!(
            s.delete_on_update(&new, &old),
            want,
            "{}: {new} {old}",
            s.resource()
        );
    }
}

#[test]
fn namespace_cleanup_grace() {
    let pods = strategy("", "pods");
    let exists = |n: &str| n == "n1";
    let rows = [
        (json!({"spec": {"nodeName": "n1"}}), None),
        (json!({"spec": {"nodeName": "gone"}}), Some(0)),
        (json!({"spec": {}}), Some(0)),
    ];
    for (pod, want) in rows {
        assert_eq!(pods.cleanup_delete_grace(&pod, &exists), want, "{pod}");
    }
    let cm = json!({"spec": {"nodeName": "gone"}});
    assert_eq!(
        strategy("", "configmaps").cleanup_delete_grace(&cm, &exists),
        None
    );
}

/// Custom resources: scope and status split from the definition, generation tracked,
/// DNS-1123 subdomain names, metadata field selectors only.
#[test]
fn custom_resource_strategies() {
    let namespaced = custom_resource(true, true);
    let cluster = custom_resource(false, false);
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "d"}, "spec": {"size": 1}, "status": {"ok": true}});
    namespaced.prepare_for_create(&mut obj, &ctx());
    assert_eq!(obj["metadata"]["generation"], json!(1));
    assert!(obj.get("status").is_none(), "status is set through /status");
    assert!(namespaced.validate_create(&obj).is_empty());
    assert!(!namespaced.allow_unconditional_update());
    assert_eq!(
        messages(cluster.validate_create(&obj)),
        ["metadata.namespace: Forbidden: not allowed on this type"]
    );
    assert_eq!(
        namespaced
            .field_value(&obj, "metadata.namespace")
            .as_deref(),
        Some("d")
    );
    assert_eq!(cluster.selectable_fields(), ["metadata.name"]);
    assert_eq!(namespaced.field_value(&obj, "spec.size"), None);
}

#[test]
fn binding_only_for_pods() {
    let b = json!({"target": {"name": "n1"}});
    let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
    assert!(strategy("", "pods").validate_binding(&b).is_empty());
    assert_eq!(strategy("", "pods").bind(&mut pod, &b, &ctx()), Ok(()));
    assert_eq!(pod["spec"]["nodeName"], "n1");
    let mut cm = json!({"metadata": {"name": "c"}});
    assert!(strategy("", "configmaps")
        .bind(&mut cm, &b, &ctx())
        .is_err());
    assert_eq!(cm, json!({"metadata": {"name": "c"}}));
}

/// Field selectors of the types with more than metadata fields, and their typed values.
#[test]
fn field_values_by_type() {
    // (group, resource, object, field, value)
    let rows: Vec<(&str, &str, Value, &str, Option<&str>)> = vec![
        (
            "apps",
            "replicasets",
            json!({"status": {"replicas": 3}}),
            "status.replicas",
            Some("3"),
        ),
        (
            "apps",
            "replicasets",
            json!({}),
            "status.replicas",
            Some("0"),
        ),
        (
            "",
            "replicationcontrollers",
            json!({}),
            "status.replicas",
            Some("0"),
        ),
        (
            "apps",
            "deployments",
            json!({"status": {"replicas": 3}}),
            "status.replicas",
            None,
        ),
        (
            "batch",
            "jobs",
            json!({"status": {"successful": 2}}),
            "status.successful",
            Some("2"),
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            json!({"spec": {"signerName": "kubernetes.io/kubelet-serving"}}),
            "spec.signerName",
            Some("kubernetes.io/kubelet-serving"),
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            json!({"metadata": {"namespace": "x"}}),
            "metadata.namespace",
            None,
        ),
        (
            "",
            "pods",
            json!({"status": {"podIP": "10.0.0.2"}}),
            "status.podIP",
            Some("10.0.0.2"),
        ),
        ("", "pods", json!({}), "spec.hostNetwork", Some("false")),
        (
            "",
            "services",
            json!({"spec": {"type": "NodePort"}}),
            "spec.type",
            Some("NodePort"),
        ),
        (
            "",
            "secrets",
            json!({"type": "kubernetes.io/tls"}),
            "type",
            Some("kubernetes.io/tls"),
        ),
        (
            "coordination.k8s.io",
            "leases",
            json!({"metadata": {"namespace": "kube-system"}}),
            "metadata.namespace",
            Some("kube-system"),
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            json!({"metadata": {"name": "admin"}}),
            "metadata.name",
            Some("admin"),
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            json!({}),
            "metadata.namespace",
            None,
        ),
    ];
    for (g, r, obj, field, want) in rows {
        assert_eq!(
            strategy(g, r).field_value(&obj, field).as_deref(),
            want,
            "{g}/{r} {field}"
        );
    }
}

/// `ephemeralcontainers` writes take only `spec.ephemeralContainers` from the body.
#[test]
fn pod_ephemeral_containers_write() {
    let old = created(
        "",
        "pods",
        json!({"metadata": {"name": "p", "namespace": "d"},
        "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    );
    let mut new = old.clone();
    new["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    new["spec"]["containers"][0]["image"] = json!("y");
    new["metadata"]["labels"] = json!({"a": "b"});
    strategy("", "pods").prepare_for_subresource_update("ephemeralcontainers", &mut new, &old);
    assert_eq!(new["spec"]["ephemeralContainers"][0]["name"], "debug");
    assert_eq!(new["spec"]["containers"], old["spec"]["containers"]);
    assert_eq!(new["metadata"], old["metadata"]);
    let mut other = old.clone();
    other["spec"]["containers"][0]["image"] = json!("z");
    strategy("", "pods").prepare_for_subresource_update("no-such", &mut other, &old);
    assert_eq!(
        other["spec"]["containers"][0]["image"], "z",
        "unknown subresources change nothing"
    );
}

fn resizable_pod() -> Value {
    created(
        "",
        "pods",
        json!({"metadata": {"name": "rz", "namespace": "d"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"},
            "limits": {"cpu": "200m", "memory": "128Mi"}}}]}}),
    )
}

/// Recorded from kube-apiserver v1.36.2: a resize takes only resources and resizePolicy,
/// bumps the generation, and refuses removals, other resources and a QoS change.
#[test]
fn pod_resize_writes() {
    let old = resizable_pod();
    assert_eq!(old["metadata"]["generation"], 1, "pods track generation");
    let resize = |f: &dyn Fn(&mut Value)| {
        let mut new = old.clone();
        f(&mut new);
        strategy("", "pods").prepare_for_subresource_update("resize", &mut new, &old);
        let errs = messages(strategy("", "pods").validate_subresource_update("resize", &new, &old));
        (new, errs)
    };
    let (new, errs) = resize(&|p| {
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("160m");
        p["spec"]["containers"][0]["image"] = json!("busybox");
        p["metadata"]["labels"] = json!({"a": "b"});
    });
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        new["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "160m"
    );
    assert_eq!(new["spec"]["containers"][0]["image"], "nginx");
    assert_eq!(new["metadata"]["labels"], Value::Null);
    assert_eq!(new["metadata"]["generation"], 2);

    let (_, errs) = resize(&|p| {
        p["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "150m"}});
    });
    assert_eq!(
        errs,
        [
            "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed",
            "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"
        ]
    );
    let (_, errs) = resize(&|p| {
        p["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = json!("1Gi");
    });
    assert_eq!(
        errs,
        ["spec: Forbidden: only cpu and memory resources are mutable"]
    );
    let (_, errs) = resize(&|p| {
        p["spec"]["containers"][0]["resources"]["requests"] =
            json!({"cpu": "200m", "memory": "128Mi"});
    });
    assert_eq!(
        errs,
        ["spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"]
    );
    // A plain update may still not change resources.
    let mut changed = old.clone();
    changed["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("160m");
    prepare_for_update("", "pods", &mut changed, &old, &ctx());
    assert_eq!(validate_update("", "pods", &changed, &old).len(), 1);
}

/// Recorded from kube-apiserver v1.36.2 (`kubectl create --dry-run=server`): the statuses new
/// objects show when Go prints zero values that are not `omitempty`, and a local APIService's.
#[test]
fn zero_statuses_of_new_objects() {
    let cases = [
        ("", "persistentvolumeclaims", json!({"phase": "Pending"})),
        (
            "",
            "persistentvolumes",
            json!({"phase": "Pending", "lastPhaseTransitionTime": ctx().now_rfc3339}),
        ),
        (
            "networking.k8s.io",
            "ingresses",
            json!({"loadBalancer": {}}),
        ),
        (
            "policy",
            "poddisruptionbudgets",
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        ),
        (
            "storage.k8s.io",
            "volumeattachments",
            json!({"attached": false}),
        ),
        (
            "apiregistration.k8s.io",
            "apiservices",
            json!({"conditions": [{"type": "Available", "status": "True",
                "lastTransitionTime": ctx().now_rfc3339, "reason": "Local",
                "message": "Local APIServices are always available"}]}),
        ),
    ];
    let remote = json!({"metadata": {"name": "v1.x.example.com"},
        "spec": {"service": {"namespace": "d", "name": "s"}}});
    assert_eq!(
        created("apiregistration.k8s.io", "apiservices", remote)["status"],
        json!({})
    );
    for (group, resource, want) in cases {
        // A status in the body is dropped, as for every type with a status subresource.
        let obj = json!({"metadata": {"name": "x", "namespace": "d"}, "spec": {},
                         "status": {"phase": "Bound", "attached": true}});
        assert_eq!(
            created(group, resource, obj)["status"],
            want,
            "{group}/{resource}"
        );
    }
}

/// The garbage-collection finalizers a delete sets, per request and per type default
/// (upstream's `deletionFinalizersForGarbageCollection`); `None` when they do not change.
#[test]
fn deletion_finalizers_per_policy() {
    use crate::deletion::Propagation;
    let obj = |f: Value| json!({"metadata": {"name": "x", "finalizers": f}});
    let p = |o: Option<bool>, pol: Option<&'static str>| Propagation {
        orphan_dependents: o,
        policy: pol,
    };
    let some = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    /// Group, resource, finalizers, request, new finalizers.
    type Case<'a> = (
        &'a str,
        &'a str,
        Value,
        Propagation<'a>,
        Option<Vec<String>>,
    );
    let rows: Vec<Case> = vec![
        ("", "configmaps", json!([]), p(None, None), None),
        (
            "",
            "configmaps",
            json!([]),
            p(None, Some("Background")),
            None,
        ),
        (
            "",
            "configmaps",
            json!(["a/b"]),
            p(None, Some("Foreground")),
            some(&["a/b", "foregroundDeletion"]),
        ),
        (
            "",
            "configmaps",
            json!([]),
            p(None, Some("Orphan")),
            some(&["orphan"]),
        ),
        (
            "",
            "configmaps",
            json!([]),
            p(Some(true), None),
            some(&["orphan"]),
        ),
        (
            "",
            "configmaps",
            json!(["orphan"]),
            p(Some(false), None),
            some(&[]),
        ),
        // An explicit request replaces the object's own garbage-collection finalizer.
        (
            "",
            "configmaps",
            json!(["foregroundDeletion"]),
            p(None, Some("Background")),
            some(&[]),
        ),
        (
            "",
            "configmaps",
            json!(["foregroundDeletion"]),
            p(None, Some("Orphan")),
            some(&["orphan"]),
        ),
        // Without one, the object's own finalizer stays.
        (
            "",
            "configmaps",
            json!(["foregroundDeletion"]),
            p(None, None),
            None,
        ),
        ("", "configmaps", json!(["orphan"]), p(None, None), None),
        // Legacy types orphan by default.
        (
            "",
            "replicationcontrollers",
            json!([]),
            p(None, None),
            some(&["orphan"]),
        ),
        ("batch", "jobs", json!([]), p(None, None), some(&["orphan"])),
        (
            "batch",
            "jobs",
            json!([]),
            p(None, Some("Background")),
            None,
        ),
        ("apps", "replicasets", json!([]), p(None, None), None),
        // Events never get one.
        ("", "events", json!([]), p(None, Some("Foreground")), None),
        (
            "events.k8s.io",
            "events",
            json!([]),
            p(None, Some("Orphan")),
            None,
        ),
    ];
    for (group, resource, fin, req, want) in rows {
        let s = strategy(group, resource);
        assert_eq!(
            s.deletion_finalizers(&obj(fin.clone()), req),
            want,
            "{group}/{resource} {fin} {req:?}"
        );
    }
}

/// A CustomResourceDefinition whose storage version changes keeps the versions its objects
/// were stored as and adds the new one (upstream's update strategy); an update that keeps
/// it changes nothing there, and a status write cannot drop it (status comes from `old`).
#[test]
fn crd_storage_version_joins_stored_versions() {
    let ctx = Ctx::default();
    let old = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "multis.mv.example.com", "generation": 1},
        "spec": {"group": "mv.example.com", "scope": "Cluster", "names": {"plural": "multis", "kind": "Multi"},
                 "versions": [{"name": "v1", "served": true, "storage": true}]},
        "status": {"storedVersions": ["v1"]}
    });
    let mut new = old.clone();
    new["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": false},
        {"name": "v2", "served": true, "storage": true}
    ]);
    new["status"] = json!({"storedVersions": []});
    prepare_for_update(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &mut new,
        &old,
        &ctx,
    );
    assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
    assert_eq!(new["metadata"]["generation"], 2);
    let mut same = old.clone();
    prepare_for_update(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &mut same,
        &old,
        &ctx,
    );
    assert_eq!(same["status"]["storedVersions"], json!(["v1"]));
}
