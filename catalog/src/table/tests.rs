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
    let catalog = Catalog::new("api/all=true").unwrap();
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
    let catalog = Catalog::new("api/all=true").unwrap();
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
            // v1.36 dropped the Secrets column.
            json!({"metadata": meta("default", created), "secrets": [{"name": "s1"}]}),
            vec!["Name", "Age"],
            json!(["default", "5s"]),
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
        render("storage.k8s.io", "v1", "csistoragecapacities", &no_ts).1[1],
        "0001-01-01T00:00:00Z"
    );
}

/// (group, version, plural, object, expected columns, expected cells).
type RowCase<'a> = (&'a str, &'a str, &'a str, Value, Vec<&'a str>, Value);

/// Checks each (group, version, plural, object) renders `columns` and `cells`.
fn check_rows(cases: Vec<RowCase<'_>>) {
    for (g, v, plural, obj, want_cols, want_cells) in cases {
        let (cols, cells, _) = render(g, v, plural, &obj);
        assert_eq!(cols, want_cols, "{plural} columns");
        assert_eq!(
            Value::Array(cells),
            want_cells,
            "{plural} {}",
            obj["metadata"]["name"]
        );
    }
}

/// Values observed on kube-apiserver v1.36.2 for the same objects (ages aside).
#[test]
fn core_apps_autoscaling_networking_rows() {
    let c = "2024-05-01T11:59:38Z"; // 22s before NOW
    let owner = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": true}]);
    let hpa_multi = json!({"metadata": meta("hpa2", c), "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 7,
        "metrics": [
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
            {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s", "apiVersion": "v1"}, "metric": {"name": "hits"}, "target": {"type": "Value", "value": "10"}}},
            {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "30"}}}]}});
    let hpa_cpu = json!({"metadata": meta("hpa1", c), "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
        "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 35, "averageValue": "70m"}}}]}});
    let hpa_cols = vec![
        "Name",
        "Reference",
        "Targets",
        "MinPods",
        "MaxPods",
        "Replicas",
        "Age",
    ];
    let quota = json!({"metadata": meta("rq1", c), "status": {
        "hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "2Gi", "limits.cpu": "4", "configmaps": "5"},
        "used": {"pods": "3", "requests.cpu": "500m", "limits.memory": "0", "limits.cpu": "1", "configmaps": "1"}}});
    check_rows(vec![
        (
            "",
            "v1",
            "podtemplates",
            json!({"metadata": meta("pt1", c), "template": {"metadata": {"labels": {"tier": "fe", "app": "web"}},
                "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}}),
            vec!["Name", "Containers", "Images", "Pod Labels"],
            json!(["pt1", "a,b", "nginx,busybox", "app=web,tier=fe"]),
        ),
        (
            "",
            "v1",
            "podtemplates",
            json!({"metadata": meta("pt2", c), "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}]}}}),
            vec!["Name", "Containers", "Images", "Pod Labels"],
            json!(["pt2", "a", "nginx", "<none>"]),
        ),
        (
            "",
            "v1",
            "resourcequotas",
            json!({"metadata": meta("fresh", c), "spec": {"hard": {"pods": "10"}}}),
            vec!["Name", "Request", "Limit", "Age"],
            json!(["fresh", "", "", "22s"]),
        ),
        (
            "",
            "v1",
            "resourcequotas",
            quota,
            vec!["Name", "Request", "Limit", "Age"],
            json!([
                "rq1",
                "configmaps: 1/5, pods: 3/10, requests.cpu: 500m/2",
                "limits.cpu: 1/4, limits.memory: 0/2Gi",
                "22s"
            ]),
        ),
        (
            "apps",
            "v1",
            "controllerrevisions",
            json!({"metadata": {"name": "cr1", "creationTimestamp": c, "ownerReferences": owner}, "revision": 3}),
            vec!["Name", "Controller", "Revision", "Age"],
            json!(["cr1", "statefulset.apps/web", 3, "22s"]),
        ),
        (
            "apps",
            "v1",
            "controllerrevisions",
            json!({"metadata": meta("cr2", c), "revision": 1}),
            vec!["Name", "Controller", "Revision", "Age"],
            json!(["cr2", "<none>", 1, "22s"]),
        ),
        (
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            hpa_multi.clone(),
            hpa_cols.clone(),
            json!([
                "hpa2",
                "Deployment/web",
                "memory: <unknown>/100Mi, <unknown>/1k + 2 more...",
                "2",
                7,
                0,
                "22s"
            ]),
        ),
        (
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            hpa_multi,
            hpa_cols.clone(),
            json!([
                "hpa2",
                "Deployment/web",
                "memory: <unknown>/100Mi, <unknown>/1k + 2 more...",
                "2",
                7,
                0,
                "22s"
            ]),
        ),
        (
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            hpa_cpu,
            hpa_cols.clone(),
            json!(["hpa1", "Deployment/web", "cpu: 35%/80%", "1", 5, 2, "22s"]),
        ),
        (
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            json!({"metadata": meta("hpa3", c), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}}),
            hpa_cols.clone(),
            json!([
                "hpa3",
                "Deployment/web",
                "cpu: <unknown>/50%",
                "<unset>",
                3,
                0,
                "22s"
            ]),
        ),
        (
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"metadata": meta("bare", c), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}),
            hpa_cols,
            json!(["bare", "Deployment/web", "<none>", "<unset>", 3, 0, "22s"]),
        ),
        (
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            json!({"metadata": meta("ic1", c), "spec": {"controller": "example.com/ingress",
                "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}),
            vec!["Name", "Controller", "Parameters", "Age"],
            json!([
                "ic1",
                "example.com/ingress",
                "IngressParameters.k8s.example.com/external-lb",
                "22s"
            ]),
        ),
        (
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            json!({"metadata": meta("ic2", c), "spec": {"controller": "example.com/ingress",
                "parameters": {"kind": "ConfigMap", "name": "cm", "scope": "Namespace", "namespace": "tbl"}}}),
            vec!["Name", "Controller", "Parameters", "Age"],
            json!(["ic2", "example.com/ingress", "ConfigMap/cm", "22s"]),
        ),
        (
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            json!({"metadata": meta("ic3", c), "spec": {"controller": "example.com/x"}}),
            vec!["Name", "Controller", "Parameters", "Age"],
            json!(["ic3", "example.com/x", "<none>", "22s"]),
        ),
        (
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            json!({"metadata": meta("np1", c), "spec": {"podSelector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}}}),
            vec!["Name", "Pod-Selector", "Age"],
            json!(["np1", "app=web,env in (dev,prod)", "22s"]),
        ),
        (
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            json!({"metadata": meta("np2", c), "spec": {"podSelector": {}}}),
            vec!["Name", "Pod-Selector", "Age"],
            json!(["np2", "<none>", "22s"]),
        ),
        (
            "networking.k8s.io",
            "v1",
            "servicecidrs",
            json!({"metadata": meta("sc1", c), "spec": {"cidrs": ["10.200.0.0/24", "fd00:10:200::/112"]}}),
            vec!["Name", "CIDRs", "Age"],
            json!(["sc1", "10.200.0.0/24,fd00:10:200::/112", "22s"]),
        ),
        (
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            json!({"metadata": meta("es1", c), "addressType": "IPv4",
                "ports": [{"name": "http", "port": 80}, {"name": "named"}, {"name": "tls", "port": 443}, {"name": "alt", "port": 8080}],
                "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}, {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]}),
            vec!["Name", "AddressType", "Ports", "Endpoints", "Age"],
            json!([
                "es1",
                "IPv4",
                "80,named,443 + 1 more...",
                "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
                "22s"
            ]),
        ),
        (
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            json!({"metadata": meta("es2", c), "addressType": "FQDN"}),
            vec!["Name", "AddressType", "Ports", "Endpoints", "Age"],
            json!(["es2", "FQDN", "<unset>", "<unset>", "22s"]),
        ),
    ]);
}

/// An IPAddress row has three cells for its two columns (Name, ParentRef), as upstream's.
#[test]
fn ip_address_row_carries_an_age_cell_without_a_column() {
    let c = "2024-05-01T11:59:38Z";
    check_rows(vec![
        (
            "networking.k8s.io",
            "v1",
            "ipaddresses",
            json!({"metadata": meta("10.200.0.7", c), "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "tbl", "name": "svc1"}}}),
            vec!["Name", "ParentRef"],
            json!(["10.200.0.7", "services/tbl/svc1", "22s"]),
        ),
        (
            "networking.k8s.io",
            "v1beta1",
            "ipaddresses",
            json!({"metadata": meta("10.0.0.9", c), "spec": {"parentRef": {"group": "Gateway.Networking.k8s.io", "resource": "Gateways", "name": "gw"}}}),
            vec!["Name", "ParentRef"],
            json!(["10.0.0.9", "gateways.gateway.networking.k8s.io/gw", "22s"]),
        ),
    ]);
}

/// Values observed on kube-apiserver v1.36.2 for the same objects (ages aside).
#[test]
fn storage_node_and_resource_rows() {
    let c = "2024-05-01T11:59:38Z";
    let csi_cols = vec![
        "Name",
        "AttachRequired",
        "PodInfoOnMount",
        "StorageCapacity",
        "TokenRequests",
        "RequiresRepublish",
        "Modes",
        "Age",
    ];
    check_rows(vec![
        (
            "storage.k8s.io",
            "v1",
            "csidrivers",
            json!({"metadata": meta("csi1.example.com", c), "spec": {"volumeLifecycleModes": ["Persistent"]}}),
            csi_cols.clone(),
            json!([
                "csi1.example.com",
                true,
                false,
                false,
                "<unset>",
                false,
                "Persistent",
                "22s"
            ]),
        ),
        (
            "storage.k8s.io",
            "v1",
            "csidrivers",
            json!({"metadata": meta("csi2.example.com", c), "spec": {"attachRequired": false, "podInfoOnMount": true,
                "storageCapacity": true, "requiresRepublish": true, "tokenRequests": [{"audience": "a1"}, {"audience": "a2", "expirationSeconds": 3600}],
                "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}),
            csi_cols,
            json!([
                "csi2.example.com",
                false,
                true,
                true,
                "a1,a2",
                true,
                "Persistent,Ephemeral",
                "22s"
            ]),
        ),
        (
            "storage.k8s.io",
            "v1",
            "csinodes",
            json!({"metadata": meta("node1", c), "spec": {"drivers": [{"name": "csi1.example.com", "nodeID": "n1"}]}}),
            vec!["Name", "Drivers", "Age"],
            json!(["node1", 1, "22s"]),
        ),
        (
            "storage.k8s.io",
            "v1",
            "volumeattachments",
            json!({"metadata": meta("va1", c), "spec": {"attacher": "csi1.example.com", "nodeName": "node1", "source": {"persistentVolumeName": "pv1"}}}),
            vec!["Name", "Attacher", "PV", "Node", "Attached", "Age"],
            json!(["va1", "csi1.example.com", "pv1", "node1", false, "22s"]),
        ),
        (
            "storage.k8s.io",
            "v1",
            "volumeattributesclasses",
            // The default-class annotation does not mark the name (unlike storage classes).
            json!({"metadata": {"name": "vac2", "creationTimestamp": c, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "driverName": "csi1.example.com", "parameters": {"iops": "100"}}),
            vec!["Name", "DriverName", "Age"],
            json!(["vac2", "csi1.example.com", "22s"]),
        ),
        (
            "storage.k8s.io",
            "v1",
            "csistoragecapacities",
            json!({"metadata": meta("cap1", c), "storageClassName": "fast", "capacity": "10Gi"}),
            vec!["Name", "Created At"],
            json!(["cap1", "2024-05-01T11:59:38Z"]),
        ),
        (
            "node.k8s.io",
            "v1",
            "runtimeclasses",
            json!({"metadata": meta("rc1", c), "handler": "runc"}),
            vec!["Name", "Handler", "Age"],
            json!(["rc1", "runc", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1",
            "deviceclasses",
            json!({"metadata": meta("dc1", c), "spec": {}}),
            vec!["Name", "Age"],
            json!(["dc1", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1beta2",
            "resourceclaimtemplates",
            json!({"metadata": meta("rct1", c), "spec": {"spec": {}}}),
            vec!["Name", "Age"],
            json!(["rct1", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1",
            "resourceclaims",
            json!({"metadata": meta("claim1", c), "spec": {}}),
            vec!["Name", "State", "Age"],
            json!(["claim1", "pending", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1beta1",
            "resourceclaims",
            json!({"metadata": {"name": "claim2", "creationTimestamp": c, "deletionTimestamp": c},
                "status": {"allocation": {}, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}}),
            vec!["Name", "State", "Age"],
            json!(["claim2", "deleted,allocated,reserved", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1",
            "resourceslices",
            json!({"metadata": meta("slice1", c), "spec": {"driver": "dra.example.com", "nodeName": "node1", "pool": {"name": "pool1"}}}),
            vec!["Name", "Node", "Driver", "Pool", "Age"],
            json!(["slice1", "node1", "dra.example.com", "pool1", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1",
            "resourceslices",
            json!({"metadata": meta("slice2", c), "spec": {"driver": "dra.example.com", "allNodes": true, "pool": {"name": "pool2"}}}),
            vec!["Name", "Node", "Driver", "Pool", "Age"],
            json!(["slice2", "", "dra.example.com", "pool2", "22s"]),
        ),
    ]);
}

/// Values observed on kube-apiserver v1.36.2 for the same objects (ages aside).
#[test]
fn cluster_management_rows() {
    let c = "2024-05-01T11:59:38Z";
    let binding_cols = vec!["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"];
    let vapb = |name: &str, param_ref: Value| json!({"metadata": meta(name, c), "spec": {"policyName": "vap1", "validationActions": ["Deny"], "paramRef": param_ref}});
    let vapb_cols = vec!["Name", "PolicyName", "ParamRef", "Age"];
    check_rows(vec![
        (
            "",
            "v1",
            "componentstatuses",
            json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}),
            vec!["Name", "Status", "Message", "Error"],
            json!(["etcd-0", "Healthy", "ok", ""]),
        ),
        (
            "",
            "v1",
            "componentstatuses",
            json!({"metadata": {"name": "scheduler"}, "conditions": [{"type": "Healthy", "status": "False",
                "message": "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"}]}),
            vec!["Name", "Status", "Message", "Error"],
            json!([
                "scheduler",
                "Unhealthy",
                "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused",
                ""
            ]),
        ),
        (
            "policy",
            "v1",
            "poddisruptionbudgets",
            json!({"metadata": meta("pdb1", c), "spec": {"minAvailable": 2}}),
            vec![
                "Name",
                "Min Available",
                "Max Unavailable",
                "Allowed Disruptions",
                "Age",
            ],
            json!(["pdb1", "2", "N/A", 0, "22s"]),
        ),
        (
            "policy",
            "v1",
            "poddisruptionbudgets",
            json!({"metadata": meta("pdb2", c), "spec": {"maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 1}}),
            vec![
                "Name",
                "Min Available",
                "Max Unavailable",
                "Allowed Disruptions",
                "Age",
            ],
            json!(["pdb2", "N/A", "25%", 1, "22s"]),
        ),
        (
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            json!({"metadata": meta("v1.apps", c), "spec": {"group": "apps", "version": "v1"},
                "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}}),
            vec!["Name", "Service", "Available", "Age"],
            json!(["v1.apps", "Local", "True", "22s"]),
        ),
        (
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            json!({"metadata": meta("v1beta1.metrics.k8s.io", c), "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}}),
            vec!["Name", "Service", "Available", "Age"],
            json!([
                "v1beta1.metrics.k8s.io",
                "kube-system/metrics-server",
                "False (MissingEndpoints)",
                "22s"
            ]),
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            json!({"metadata": meta("crb1", c), "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [
                {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"}, {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "sa1", "namespace": "tbl"}]}),
            binding_cols.clone(),
            json!([
                "crb1",
                "ClusterRole/view",
                "22s",
                "alice, bob",
                "devs",
                "tbl/sa1"
            ]),
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            json!({"metadata": meta("rb2", c), "roleRef": {"kind": "ClusterRole", "name": "edit"}, "subjects": [{"kind": "ServiceAccount", "name": "default"}]}),
            binding_cols.clone(),
            json!(["rb2", "ClusterRole/edit", "22s", "", "", "/default"]),
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            json!({"metadata": meta("rb1", c), "roleRef": {"kind": "Role", "name": "r"}}),
            binding_cols,
            json!(["rb1", "Role/r", "22s", "", "", ""]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            json!({"metadata": meta("mwc1", c), "webhooks": [{"name": "a.example.com"}]}),
            vec!["Name", "Webhooks", "Age"],
            json!(["mwc1", 1, "22s"]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            json!({"metadata": meta("vwc1", c)}),
            vec!["Name", "Webhooks", "Age"],
            json!(["vwc1", 0, "22s"]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
            json!({"metadata": meta("vap1", c), "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "validations": [{"expression": "true"}, {"expression": "1 == 1"}]}}),
            vec!["Name", "Validations", "ParamKind", "Age"],
            json!(["vap1", 2, "v1/ConfigMap", "22s"]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1beta1",
            "mutatingadmissionpolicies",
            json!({"metadata": meta("map1", c), "spec": {"mutations": [{"patchType": "ApplyConfiguration"}]}}),
            vec!["Name", "Mutations", "ParamKind", "Age"],
            json!(["map1", 1, "<unset>", "22s"]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "mutatingadmissionpolicybindings",
            json!({"metadata": meta("mapb1", c), "spec": {"policyName": "map1"}}),
            vapb_cols.clone(),
            json!(["mapb1", "map1", "<unset>", "22s"]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            vapb("vapb1", json!({"name": "cfg", "namespace": "tbl"})),
            vapb_cols.clone(),
            json!(["vapb1", "vap1", "tbl/cfg", "22s"]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            vapb("vapb3", json!({"name": "cfg"})),
            vapb_cols.clone(),
            json!(["vapb3", "vap1", "*/cfg", "22s"]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            vapb("vapb2", json!({"selector": {"matchLabels": {"a": "b"}}})),
            vapb_cols.clone(),
            json!([
                "vapb2",
                "vap1",
                "&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}",
                "22s"
            ]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            vapb("vapb5", json!({"selector": {"matchLabels": {"z": "1", "a": "2"}, "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]}, {"key": "x", "operator": "Exists"}]}})),
            vapb_cols.clone(),
            json!([
                "vapb5",
                "vap1",
                "&LabelSelector{MatchLabels:map[string]string{a: 2,z: 1,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[prod dev],},LabelSelectorRequirement{Key:x,Operator:Exists,Values:[],},},}",
                "22s"
            ]),
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            vapb("vapb6", json!({"selector": {}})),
            vapb_cols,
            json!([
                "vapb6",
                "vap1",
                "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}",
                "22s"
            ]),
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "prioritylevelconfigurations",
            json!({"metadata": meta("global-default", c), "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 20,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}}),
            vec![
                "Name",
                "Type",
                "NominalConcurrencyShares",
                "Queues",
                "HandSize",
                "QueueLengthLimit",
                "Age",
            ],
            json!(["global-default", "Limited", 20, 128, 6, 50, "22s"]),
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "prioritylevelconfigurations",
            json!({"metadata": meta("exempt", c), "spec": {"type": "Exempt", "exempt": {}}}),
            vec![
                "Name",
                "Type",
                "NominalConcurrencyShares",
                "Queues",
                "HandSize",
                "QueueLengthLimit",
                "Age",
            ],
            json!(["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "22s"]),
        ),
        (
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            json!({"metadata": meta("csr1", c), "spec": {"signerName": "example.com/signer", "expirationSeconds": 7200, "username": "kubernetes-admin"}}),
            vec![
                "Name",
                "Age",
                "SignerName",
                "Requestor",
                "RequestedDuration",
                "Condition",
            ],
            json!([
                "csr1",
                "22s",
                "example.com/signer",
                "kubernetes-admin",
                "120m",
                "Pending"
            ]),
        ),
        (
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            json!({"metadata": meta("csr2", c), "spec": {"username": "u"},
                "status": {"certificate": "Zm9v", "conditions": [{"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}]}}),
            vec![
                "Name",
                "Age",
                "SignerName",
                "Requestor",
                "RequestedDuration",
                "Condition",
            ],
            json!([
                "csr2",
                "22s",
                "<none>",
                "u",
                "<none>",
                "Approved,Failed,Issued"
            ]),
        ),
    ]);
}

/// Flow schemas are listed by matching precedence, then name, as upstream lists them.
#[test]
fn flow_schemas_are_listed_by_precedence_then_name() {
    let catalog = Catalog::new("api/all=true").unwrap();
    let info = catalog
        .lookup("flowcontrol.apiserver.k8s.io", "v1", "flowschemas")
        .unwrap();
    let fs = |name: &str, precedence: i64| {
        json!({"metadata": meta(name, "2024-05-01T11:59:38Z"), "spec": {"priorityLevelConfiguration": {"name": "nope"}, "matchingPrecedence": precedence},
            "status": {"conditions": [{"type": "Dangling", "status": "True"}]}})
    };
    let objs = [
        fs("service-accounts", 9000),
        fs("fs2", 1000),
        fs("exempt", 1),
        fs("b", 1000),
    ];
    let refs: Vec<&Value> = objs.iter().collect();
    let t = table(info, &refs, IncludeObject::None, Value::Null, now());
    let names: Vec<&str> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cells"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, ["exempt", "b", "fs2", "service-accounts"]);
    assert_eq!(
        t["rows"][2]["cells"],
        json!(["fs2", "nope", 1000, "<none>", "22s", "True"])
    );
    let no_status = json!({"metadata": meta("fs1", "2024-05-01T11:59:38Z"), "spec": {"priorityLevelConfiguration": {"name": "plc1"},
        "matchingPrecedence": 900, "distinguisherMethod": {"type": "ByUser"}}});
    assert_eq!(
        Value::Array(
            render(
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "flowschemas",
                &no_status
            )
            .1
        ),
        json!(["fs1", "plc1", 900, "ByUser", "22s", "?"])
    );
}

/// Beta and alpha kinds the upstream kit does not serve: cells follow upstream v1.36.2's
/// printers for these kinds (read from its source, not observed on a server).
#[test]
fn beta_and_alpha_kind_rows() {
    let c = "2024-05-01T11:59:38Z";
    let pcr_cols = vec![
        "Name",
        "PodName",
        "ServiceAccountName",
        "NodeName",
        "SignerName",
        "State",
        "UnverifiedUserAnnotations",
    ];
    let pool_cols = vec![
        "Name",
        "Driver",
        "Total",
        "Available",
        "Allocated",
        "Unavailable",
        "Errors",
        "Pools",
        "Status",
        "Completed",
    ];
    check_rows(vec![
        (
            "certificates.k8s.io",
            "v1beta1",
            "clustertrustbundles",
            json!({"metadata": meta("example.com:signer:abc", c), "spec": {"signerName": "example.com/signer", "trustBundle": ""}}),
            vec!["Name", "SignerName"],
            json!(["example.com:signer:abc", "example.com/signer"]),
        ),
        (
            "certificates.k8s.io",
            "v1alpha1",
            "clustertrustbundles",
            json!({"metadata": meta("plain", c), "spec": {"trustBundle": ""}}),
            vec!["Name", "SignerName"],
            json!(["plain", "<none>"]),
        ),
        (
            "certificates.k8s.io",
            "v1beta1",
            "podcertificaterequests",
            json!({"metadata": meta("pcr1", c), "spec": {"podName": "web-0", "serviceAccountName": "default", "nodeName": "node1",
                "signerName": "example.com/s", "unverifiedUserAnnotations": {"b": "2", "a": "1"}},
                "status": {"conditions": [{"type": "Issued", "status": "True"}]}}),
            pcr_cols.clone(),
            json!([
                "pcr1",
                "web-0",
                "default",
                "node1",
                "example.com/s",
                "Issued",
                "a=1,b=2"
            ]),
        ),
        (
            "certificates.k8s.io",
            "v1beta1",
            "podcertificaterequests",
            json!({"metadata": meta("pcr2", c), "spec": {"podName": "web-1", "serviceAccountName": "default", "nodeName": "node1", "signerName": "example.com/s"}}),
            pcr_cols,
            json!([
                "pcr2",
                "web-1",
                "default",
                "node1",
                "example.com/s",
                "Pending",
                "<none>"
            ]),
        ),
        (
            "coordination.k8s.io",
            "v1beta1",
            "leasecandidates",
            json!({"metadata": meta("kcm-a", c), "spec": {"leaseName": "kube-controller-manager", "binaryVersion": "1.36.2", "emulationVersion": "1.36"}}),
            vec![
                "Name",
                "LeaseName",
                "BinaryVersion",
                "EmulationVersion",
                "Age",
            ],
            json!(["kcm-a", "kube-controller-manager", "1.36.2", "1.36", "22s"]),
        ),
        (
            "internal.apiserver.k8s.io",
            "v1alpha1",
            "storageversions",
            json!({"metadata": meta("apps.deployments", c), "status": {"commonEncodingVersion": "apps/v1", "storageVersions": [
                {"apiServerID": "a", "encodingVersion": "apps/v1"}, {"apiServerID": "b", "encodingVersion": "apps/v1"},
                {"apiServerID": "c", "encodingVersion": "apps/v1"}, {"apiServerID": "d", "encodingVersion": "apps/v1"}]}}),
            vec!["Name", "CommonEncodingVersion", "StorageVersions", "Age"],
            json!([
                "apps.deployments",
                "apps/v1",
                "a=apps/v1,b=apps/v1,c=apps/v1 + 1 more...",
                "22s"
            ]),
        ),
        (
            "internal.apiserver.k8s.io",
            "v1alpha1",
            "storageversions",
            json!({"metadata": meta("new", c), "status": {}}),
            vec!["Name", "CommonEncodingVersion", "StorageVersions", "Age"],
            json!(["new", "<unset>", "<unset>", "22s"]),
        ),
        (
            "storagemigration.k8s.io",
            "v1beta1",
            "storageversionmigrations",
            json!({"metadata": meta("m1", c), "spec": {"resource": {"group": "apps", "resource": "deployments"}},
                "status": {"conditions": [{"type": "Running", "status": "False"}, {"type": "Succeeded", "status": "True"}]}}),
            vec!["Name", "Resource", "Status"],
            json!(["m1", "deployments.apps", "Succeeded"]),
        ),
        (
            "storagemigration.k8s.io",
            "v1beta1",
            "storageversionmigrations",
            json!({"metadata": meta("m2", c), "spec": {"resource": {"group": "", "resource": "secrets"}}}),
            vec!["Name", "Resource", "Status"],
            json!(["m2", "secrets", "Unknown"]),
        ),
        (
            "scheduling.k8s.io",
            "v1alpha2",
            "workloads",
            json!({"metadata": meta("train", c), "spec": {}}),
            vec!["Name", "Age"],
            json!(["train", "22s"]),
        ),
        (
            "scheduling.k8s.io",
            "v1alpha2",
            "podgroups",
            json!({"metadata": meta("pg1", c), "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "train"}},
                "schedulingPolicy": {"gang": {"minCount": 4}}},
                "status": {"conditions": [{"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable"}]}}),
            vec!["Name", "Policy", "Workload", "Status", "Age"],
            json!(["pg1", "Gang", "train", "Unschedulable", "22s"]),
        ),
        (
            "scheduling.k8s.io",
            "v1alpha2",
            "podgroups",
            json!({"metadata": meta("pg2", c), "spec": {"schedulingPolicy": {"basic": {}}},
                "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True"},
                    {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}}),
            vec!["Name", "Policy", "Workload", "Status", "Age"],
            json!(["pg2", "Basic", "<none>", "PreemptionByScheduler", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1alpha3",
            "devicetaintrules",
            json!({"metadata": meta("gpu-broken", c), "spec": {"taint": {"key": "example.com/broken", "value": "yes",
                "effect": "NoExecute", "timeAdded": "2024-05-01T11:55:00Z"}}}),
            vec!["Name", "Key", "Value", "Effect", "TimeAdded", "Age"],
            json!([
                "gpu-broken",
                "example.com/broken",
                "yes",
                "NoExecute",
                "5m",
                "22s"
            ]),
        ),
        (
            "resource.k8s.io",
            "v1beta2",
            "devicetaintrules",
            json!({"metadata": meta("t2", c), "spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}),
            vec!["Name", "Key", "Value", "Effect", "TimeAdded", "Age"],
            json!(["t2", "k", "", "NoSchedule", "", "22s"]),
        ),
        (
            "resource.k8s.io",
            "v1alpha3",
            "resourcepoolstatusrequests",
            json!({"metadata": meta("q1", c), "spec": {"driver": "gpu.example.com"}}),
            pool_cols.clone(),
            json!([
                "q1",
                "gpu.example.com",
                "-",
                "-",
                "-",
                "-",
                "-",
                0,
                "Pending",
                "<none>"
            ]),
        ),
        (
            "resource.k8s.io",
            "v1alpha3",
            "resourcepoolstatusrequests",
            json!({"metadata": meta("q2", c), "spec": {"driver": "gpu.example.com"}, "status": {"poolCount": 3,
                "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2024-05-01T11:59:50Z"}],
                "pools": [{"totalDevices": 8, "availableDevices": 5, "allocatedDevices": 2, "unavailableDevices": 1},
                          {"totalDevices": 4, "availableDevices": 4, "validationError": "bad"}]}}),
            pool_cols.clone(),
            json!([
                "q2",
                "gpu.example.com",
                "12",
                "9",
                "2",
                "1",
                "1",
                3,
                "Complete (2/3 pools)",
                "10s"
            ]),
        ),
        (
            "resource.k8s.io",
            "v1alpha3",
            "resourcepoolstatusrequests",
            json!({"metadata": meta("q3", c), "spec": {"driver": "gpu.example.com"}, "status": {
                "conditions": [{"type": "Failed", "status": "True"}], "pools": [{"totalDevices": 8}]}}),
            pool_cols,
            json!([
                "q3",
                "gpu.example.com",
                "-",
                "-",
                "-",
                "-",
                "-",
                0,
                "Failed",
                "<none>"
            ]),
        ),
    ]);
}

/// v1.36 types a deployment's Up-to-date and Available columns `string` (cells stay numbers).
#[test]
fn deployment_count_columns_are_strings_since_v1_36() {
    let d = json!({"metadata": meta("web", "2024-05-01T11:59:38Z"), "spec": {"replicas": 2},
        "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}});
    let (_, cells, t) = render("apps", "v1", "deployments", &d);
    let types: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types[..4], ["string", "string", "string", "string"]);
    assert_eq!(cells[..4], [json!("web"), json!("1/2"), json!(2), json!(1)]);
}

/// Every column described by a schema field names a property the embedded schemas describe: a
/// typo, or a field a later release of the schemas drops, would otherwise serve an empty
/// description (the recorded comparison in `tests/upstream_tables.rs` catches it as well, for
/// the resources recorded).
#[test]
fn every_field_description_resolves() {
    let catalog = Catalog::new("api/all=true").unwrap();
    for info in catalog.resources() {
        for c in super::printer_for(info).columns {
            if let super::Desc::Field {
                definition,
                property,
            } = c.description
            {
                assert!(
                    !c.description.text().is_empty(),
                    "{}/{} column {}: no description of {definition} {property}",
                    info.group,
                    info.plural,
                    c.name
                );
            }
        }
    }
}
