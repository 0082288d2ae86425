//! Table rendering tests with realistic objects, checked against upstream printer output.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::{table, IncludeObject};
use crate::Catalog;

/// 2024-05-01T12:00:00Z.
const NOW: u64 = 1_714_564_800;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

/// Renders one object; returns (all column names, the row's cells, the whole table).
fn render(
    group: &str,
    version: &str,
    plural: &str,
    obj: &Value,
) -> (Vec<String>, Vec<Value>, Value) {
    let catalog = Catalog::new("").unwrap();
    let info = catalog.lookup(group, version, plural).unwrap();
    let t = table(
        info,
        &[obj],
        IncludeObject::Metadata,
        json!({"resourceVersion": "42"}),
        now(),
    );
    let cols = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    (cols, cells, t)
}

fn meta(name: &str, created: &str) -> Value {
    json!({"name": name, "namespace": "default", "uid": "u-1", "resourceVersion": "7", "creationTimestamp": created})
}

fn pod(status: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta("web-0", "2024-05-01T11:55:00Z"),
        "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "nginx"}, {"name": "sidecar", "image": "envoy"}]},
        "status": status})
}

#[test]
fn pod_rows() {
    let running = json!({"phase": "Running", "podIPs": [{"ip": "10.1.2.3"}],
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 2, "state": {"running": {}},
             "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T11:57:00Z"}}},
            {"name": "sidecar", "ready": true, "restartCount": 0, "state": {"running": {}}}]});
    let crash = json!({"phase": "Running", "containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            {"name": "sidecar", "ready": true, "restartCount": 0, "state": {"running": {}}}]});
    let completed = json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "sidecar", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]});
    let pending = json!({"phase": "Pending"});
    let init = json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "setup", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]});
    let signal = json!({"phase": "Running", "containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 137, "signal": 9}}}]});
    // (status, READY, STATUS, RESTARTS, IP)
    let cases = [
        (running, "2/2", "Running", "2 (3m ago)", "10.1.2.3"),
        (crash, "1/2", "CrashLoopBackOff", "5", "<none>"),
        (completed, "0/2", "Completed", "0", "<none>"),
        (pending, "0/2", "Pending", "0", "<none>"),
        (signal, "0/2", "Signal:9", "0", "<none>"),
    ];
    for (status, ready, st, restarts, ip) in cases {
        let (cols, cells, _) = render("", "v1", "pods", &pod(status));
        assert_eq!(
            cols,
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
        assert_eq!(
            cells,
            [
                json!("web-0"),
                json!(ready),
                json!(st),
                json!(restarts),
                json!("5m"),
                json!(ip),
                json!("node-a"),
                json!("<none>"),
                json!("<none>")
            ],
            "{st}"
        );
    }
    let mut with_init = pod(init);
    with_init["spec"]["initContainers"] = json!([{"name": "setup", "image": "busybox"}]);
    assert_eq!(render("", "v1", "pods", &with_init).1[2], "Init:0/1");
    let mut deleting = pod(json!({"phase": "Running"}));
    deleting["metadata"]["deletionTimestamp"] = json!("2024-05-01T11:59:00Z");
    assert_eq!(render("", "v1", "pods", &deleting).1[2], "Terminating");
    let mut gated =
        pod(json!({"phase": "Running", "conditions": [{"type": "R1", "status": "True"}]}));
    gated["spec"]["readinessGates"] = json!([{"conditionType": "R1"}, {"conditionType": "R2"}]);
    assert_eq!(render("", "v1", "pods", &gated).1[8], "1/2");
}

#[test]
fn pod_table_envelope_and_conditions() {
    let obj = pod(json!({"phase": "Succeeded"}));
    let (_, _, t) = render("", "v1", "pods", &obj);
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["metadata"], json!({"resourceVersion": "42"}));
    assert_eq!(
        t["columnDefinitions"][0],
        json!({"name": "Name", "type": "string", "format": "name", "priority": 0,
            "description": t["columnDefinitions"][0]["description"]})
    );
    assert_eq!(t["columnDefinitions"][5]["priority"], 1);
    assert_eq!(t["rows"][0]["conditions"][0]["type"], "Completed");
    assert_eq!(
        t["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
    );
}

#[test]
fn include_object_modes() {
    let catalog = Catalog::new("").unwrap();
    let info = catalog.lookup("", "v1", "configmaps").unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cfg", "2024-05-01T11:59:55Z"), "data": {"a": "1"}});
    let cases = [
        (IncludeObject::None, Value::Null),
        (IncludeObject::Object, cm.clone()),
        (
            IncludeObject::Metadata,
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": cm["metadata"]}),
        ),
    ];
    for (include, want) in cases {
        let t = table(info, &[&cm], include, Value::Null, now());
        assert_eq!(t["rows"][0]["object"], want, "{include:?}");
        assert_eq!(t["metadata"], json!({}));
    }
    assert_eq!(IncludeObject::parse(""), Some(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse("Object"), Some(IncludeObject::Object));
    assert_eq!(IncludeObject::parse("object"), None);
    let empty = table(info, &[], IncludeObject::default(), Value::Null, now());
    assert_eq!(empty["rows"], json!([]));
}

#[test]
fn node_rows() {
    let node = |labels: Value, ready: &str, unschedulable: bool| {
        json!({"kind": "Node", "metadata": {"name": "n1", "labels": labels, "creationTimestamp": "2024-04-21T12:00:00Z"},
            "spec": {"unschedulable": unschedulable},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}],
                "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "n1"}],
                "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12 (bookworm)", "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7.24"}}})
    };
    let cases = [
        (
            node(
                json!({"node-role.kubernetes.io/control-plane": ""}),
                "True",
                false,
            ),
            "Ready",
            "control-plane",
        ),
        (
            node(
                json!({"kubernetes.io/role": "worker", "node-role.kubernetes.io/infra": ""}),
                "False",
                true,
            ),
            "NotReady,SchedulingDisabled",
            "infra,worker",
        ),
        (node(json!({}), "Unknown", false), "NotReady", "<none>"),
    ];
    for (n, status, roles) in cases {
        let (cols, cells, _) = render("", "v1", "nodes", &n);
        assert_eq!(
            cols,
            [
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP",
                "External-IP",
                "OS-Image",
                "Kernel-Version",
                "Container-Runtime"
            ]
        );
        assert_eq!(
            cells,
            [
                json!("n1"),
                json!(status),
                json!(roles),
                json!("10d"),
                json!("v1.32.0"),
                json!("172.18.0.2"),
                json!("<none>"),
                json!("Debian GNU/Linux 12 (bookworm)"),
                json!("6.1.0"),
                json!("containerd://1.7.24")
            ]
        );
    }
    let bare = json!({"metadata": {"name": "n2"}});
    let cells = render("", "v1", "nodes", &bare).1;
    assert_eq!(cells[1], "Unknown");
    assert_eq!(cells[3], "<unknown>");
    assert_eq!(cells[7], "<unknown>");
}

#[test]
fn service_rows() {
    let svc = |spec: Value, status: Value| json!({"kind": "Service", "metadata": meta("web", "2024-05-01T09:00:00Z"), "spec": spec, "status": status});
    let cases = [
        (
            svc(
                json!({"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}], "selector": {"app": "web"}}),
                json!({}),
            ),
            [
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "80/TCP,53/UDP",
                "app=web",
            ],
        ),
        (
            svc(
                json!({"type": "NodePort", "clusterIPs": ["10.96.1.1"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}),
                json!({}),
            ),
            ["NodePort", "10.96.1.1", "<none>", "80:30080/TCP", "<none>"],
        ),
        (
            svc(
                json!({"type": "LoadBalancer", "clusterIPs": ["10.96.1.2"], "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
                json!({"loadBalancer": {}}),
            ),
            [
                "LoadBalancer",
                "10.96.1.2",
                "<pending>",
                "443:31443/TCP",
                "<none>",
            ],
        ),
        (
            svc(
                json!({"type": "LoadBalancer", "clusterIPs": ["10.96.1.3"], "externalIPs": ["1.2.3.4"], "ports": []}),
                json!({"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}}),
            ),
            [
                "LoadBalancer",
                "10.96.1.3",
                "5.6.7.8,1.2.3.4",
                "<none>",
                "<none>",
            ],
        ),
        (
            svc(
                json!({"type": "ExternalName", "externalName": "db.example.com"}),
                json!({}),
            ),
            [
                "ExternalName",
                "<none>",
                "db.example.com",
                "<none>",
                "<none>",
            ],
        ),
        (
            svc(
                json!({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 5432, "protocol": "TCP"}]}),
                json!({}),
            ),
            ["ClusterIP", "None", "<none>", "5432/TCP", "<none>"],
        ),
    ];
    for (s, want) in cases {
        let (cols, cells, _) = render("", "v1", "services", &s);
        assert_eq!(
            cols,
            [
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector"
            ]
        );
        assert_eq!(cells[0], "web");
        assert_eq!(cells[5], "3h");
        let got: Vec<&str> = [1, 2, 3, 4, 6]
            .iter()
            .map(|i| cells[*i].as_str().unwrap())
            .collect();
        assert_eq!(got, want);
    }
}

#[test]
fn workload_rows() {
    let template = json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}, {"name": "log", "image": "fluentd"}]}});
    let selector = json!({"matchLabels": {"app": "web"}});
    let created = "2024-05-01T11:57:58Z"; // 2m2s before NOW
    let deploy = json!({"kind": "Deployment", "metadata": meta("web", created),
        "spec": {"replicas": 3, "selector": selector, "template": template},
        "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
    let rs = json!({"kind": "ReplicaSet", "metadata": meta("web-5d4f", created),
        "spec": {"replicas": 3, "selector": selector, "template": template}, "status": {"replicas": 3, "readyReplicas": 3}});
    let sts = json!({"kind": "StatefulSet", "metadata": meta("db", created),
        "spec": {"replicas": 2, "selector": selector, "template": template}, "status": {"readyReplicas": 1}});
    let ds = json!({"kind": "DaemonSet", "metadata": meta("agent", created),
        "spec": {"selector": selector, "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "a", "image": "agent:1"}]}}},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}});
    // (group, plural, object, columns, cells)
    let cases = [
        (
            "apps",
            "deployments",
            deploy,
            vec![
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            json!([
                "web",
                "2/3",
                3,
                2,
                "2m2s",
                "nginx,log",
                "nginx:1.27,fluentd",
                "app=web"
            ]),
        ),
        (
            "apps",
            "replicasets",
            rs,
            vec![
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            json!([
                "web-5d4f",
                3,
                3,
                3,
                "2m2s",
                "nginx,log",
                "nginx:1.27,fluentd",
                "app=web"
            ]),
        ),
        (
            "apps",
            "statefulsets",
            sts,
            vec!["Name", "Ready", "Age", "Containers", "Images"],
            json!(["db", "1/2", "2m2s", "nginx,log", "nginx:1.27,fluentd"]),
        ),
        (
            "apps",
            "daemonsets",
            ds,
            vec![
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            json!([
                "agent",
                3,
                3,
                2,
                3,
                2,
                "kubernetes.io/os=linux",
                "2m2s",
                "a",
                "agent:1",
                "app=web"
            ]),
        ),
    ];
    for (g, plural, obj, cols, cells) in cases {
        let (got_cols, got_cells, _) = render(g, "v1", plural, &obj);
        assert_eq!(got_cols, cols, "{plural}");
        assert_eq!(Value::Array(got_cells), cells, "{plural}");
    }
}

#[test]
fn batch_rows() {
    let job = |spec: Value, status: Value| {
        json!({"kind": "Job", "metadata": meta("pi", "2024-05-01T10:00:00Z"),
        "spec": spec, "status": status})
    };
    let tpl = json!({"spec": {"containers": [{"name": "pi", "image": "perl"}]}});
    let cases = [
        (
            job(
                json!({"completions": 1, "parallelism": 1, "template": tpl}),
                json!({"succeeded": 1, "startTime": "2024-05-01T10:00:00Z", "completionTime": "2024-05-01T10:00:12Z",
                    "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
            ),
            "Complete",
            "1/1",
            "12s",
        ),
        (
            job(
                json!({"parallelism": 3, "template": tpl}),
                json!({"startTime": "2024-05-01T11:00:00Z"}),
            ),
            "Running",
            "0/1 of 3",
            "60m",
        ),
        (
            job(
                json!({"completions": 5, "template": tpl}),
                json!({"failed": 6, "conditions": [{"type": "Failed", "status": "True"}]}),
            ),
            "Failed",
            "0/5",
            "",
        ),
        (
            job(
                json!({"suspend": true, "template": tpl}),
                json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
            ),
            "Suspended",
            "0/1",
            "",
        ),
    ];
    for (j, status, completions, duration) in cases {
        let (cols, cells, _) = render("batch", "v1", "jobs", &j);
        assert_eq!(
            cols,
            [
                "Name",
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(
            cells[1..4],
            [json!(status), json!(completions), json!(duration)]
        );
        assert_eq!(cells[4], "120m");
    }
    let cj = json!({"kind": "CronJob", "metadata": meta("hourly", "2024-04-29T12:00:00Z"),
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": tpl}}},
        "status": {"active": [{"name": "hourly-1"}], "lastScheduleTime": "2024-05-01T11:00:00Z"}});
    let (cols, cells, _) = render("batch", "v1", "cronjobs", &cj);
    assert_eq!(
        cols,
        [
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        Value::Array(cells),
        json!([
            "hourly",
            "0 * * * *",
            "<none>",
            "<unset>",
            1,
            "60m",
            "2d",
            "pi",
            "perl",
            "<none>"
        ])
    );
}

#[test]
fn config_and_misc_rows() {
    let created = "2024-05-01T11:59:55Z";
    // (group, version, plural, object, columns, cells)
    let cases = [
        (
            "",
            "v1",
            "namespaces",
            json!({"metadata": {"name": "kube-system", "creationTimestamp": created}, "status": {"phase": "Active"}}),
            vec!["Name", "Status", "Age"],
            json!(["kube-system", "Active", "5s"]),
        ),
        (
            "",
            "v1",
            "configmaps",
            json!({"metadata": meta("cfg", created), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
            vec!["Name", "Data", "Age"],
            json!(["cfg", 3, "5s"]),
        ),
        (
            "",
            "v1",
            "secrets",
            json!({"metadata": meta("tls", created), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
            vec!["Name", "Type", "Data", "Age"],
            json!(["tls", "kubernetes.io/tls", 2, "5s"]),
        ),
        (
            "",
            "v1",
            "serviceaccounts",
            json!({"metadata": meta("default", created)}),
            vec!["Name", "Secrets", "Age"],
            json!(["default", 0, "5s"]),
        ),
        (
            "coordination.k8s.io",
            "v1",
            "leases",
            json!({"metadata": meta("kube-scheduler", created), "spec": {"holderIdentity": "host_1234"}}),
            vec!["Name", "Holder", "Age"],
            json!(["kube-scheduler", "host_1234", "5s"]),
        ),
        (
            "",
            "v1",
            "endpoints",
            json!({"metadata": meta("web", created), "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}]}),
            vec!["Name", "Endpoints", "Age"],
            json!([
                "web",
                "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
                "5s"
            ]),
        ),
        (
            "",
            "v1",
            "endpoints",
            json!({"metadata": meta("empty", created)}),
            vec!["Name", "Endpoints", "Age"],
            json!(["empty", "<none>", "5s"]),
        ),
        (
            "storage.k8s.io",
            "v1",
            "storageclasses",
            json!({"metadata": {"name": "standard", "creationTimestamp": created, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"}),
            vec![
                "Name",
                "Provisioner",
                "ReclaimPolicy",
                "VolumeBindingMode",
                "AllowVolumeExpansion",
                "Age",
            ],
            json!([
                "standard (default)",
                "rancher.io/local-path",
                "Delete",
                "WaitForFirstConsumer",
                false,
                "5s"
            ]),
        ),
        (
            "networking.k8s.io",
            "v1",
            "ingresses",
            json!({"metadata": meta("web", created), "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}], "tls": [{"hosts": ["a.example.com"]}]}, "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
            vec!["Name", "Class", "Hosts", "Address", "Ports", "Age"],
            json!([
                "web",
                "nginx",
                "a.example.com,b.example.com",
                "192.0.2.1",
                "80, 443",
                "5s"
            ]),
        ),
        (
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            json!({"metadata": {"name": "system-node-critical", "creationTimestamp": created}, "value": 2_000_001_000, "preemptionPolicy": "PreemptLowerPriority"}),
            vec!["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
            json!([
                "system-node-critical",
                2_000_001_000,
                false,
                "5s",
                "PreemptLowerPriority"
            ]),
        ),
        (
            "",
            "v1",
            "persistentvolumes",
            json!({"metadata": {"name": "pv1", "creationTimestamp": created}, "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard", "volumeMode": "Filesystem"}, "status": {"phase": "Bound"}}),
            vec![
                "Name",
                "Capacity",
                "Access Modes",
                "Reclaim Policy",
                "Status",
                "Claim",
                "StorageClass",
                "VolumeAttributesClass",
                "Reason",
                "Age",
                "VolumeMode",
            ],
            json!([
                "pv1",
                "10Gi",
                "RWO,RWX",
                "Retain",
                "Bound",
                "default/data",
                "standard",
                "<unset>",
                "",
                "5s",
                "Filesystem"
            ]),
        ),
        (
            "",
            "v1",
            "persistentvolumeclaims",
            json!({"metadata": meta("data", created), "spec": {"volumeName": "pv1", "storageClassName": "standard", "resources": {"requests": {"storage": "5Gi"}}}, "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]}}),
            vec![
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode",
            ],
            json!(["data", "Bound", "pv1", "10Gi", "RWO", "standard", "<unset>", "5s", "<unset>"]),
        ),
    ];
    for (g, v, plural, obj, cols, cells) in cases {
        let (got_cols, got_cells, _) = render(g, v, plural, &obj);
        assert_eq!(got_cols, cols, "{plural}");
        assert_eq!(Value::Array(got_cells), cells, "{plural}");
    }
}

#[test]
fn event_rows_core_and_events_k8s_io() {
    let core = json!({"kind": "Event", "metadata": meta("web-0.17a", "2024-05-01T11:50:00Z"),
        "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled", "message": "Successfully pulled image \"nginx\"\n", "type": "Normal",
        "source": {"component": "kubelet", "host": "node-a"},
        "firstTimestamp": "2024-05-01T11:50:00Z", "lastTimestamp": "2024-05-01T11:58:00Z", "count": 3});
    let (cols, cells, _) = render("", "v1", "events", &core);
    assert_eq!(
        cols,
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    assert_eq!(
        Value::Array(cells),
        json!([
            "2m",
            "Normal",
            "Pulled",
            "pod/web-0",
            "spec.containers{app}",
            "kubelet, node-a",
            "Successfully pulled image \"nginx\"",
            "10m",
            3,
            "web-0.17a"
        ])
    );
    let new_api = json!({"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": meta("sched.1", "2024-05-01T11:59:00Z"),
        "eventTime": "2024-05-01T11:59:00.123456Z", "reportingController": "default-scheduler", "reportingInstance": "sched-1",
        "action": "Binding", "reason": "Scheduled", "regarding": {"kind": "Pod", "name": "web-0"},
        "note": "Successfully assigned default/web-0 to node-a", "type": "Normal"});
    let (_, cells, _) = render("events.k8s.io", "v1", "events", &new_api);
    assert_eq!(
        Value::Array(cells),
        json!([
            "60s",
            "Normal",
            "Scheduled",
            "pod/web-0",
            "",
            "default-scheduler, sched-1",
            "Successfully assigned default/web-0 to node-a",
            "60s",
            1,
            "sched.1"
        ])
    );
}

#[test]
fn default_table_for_other_kinds() {
    let role = json!({"kind": "ClusterRole", "metadata": {"name": "view", "creationTimestamp": "2024-05-01T11:00:00+01:00"}});
    let (cols, cells, t) = render("rbac.authorization.k8s.io", "v1", "clusterroles", &role);
    assert_eq!(cols, ["Name", "Created At"]);
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    assert_eq!(Value::Array(cells), json!(["view", "2024-05-01T10:00:00Z"]));
    let no_ts = json!({"metadata": {"name": "x"}});
    assert_eq!(
        render("apps", "v1", "controllerrevisions", &no_ts).1[1],
        "0001-01-01T00:00:00Z"
    );
}
