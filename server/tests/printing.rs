//! `kubectl get` tables as upstream prints them, `api-resources`, `get all`, and one
//! multi-document manifest with many kinds through `create -f`, `get -f` and `delete -f`.

mod common;

use common::{server, Server};

/// Splits kubectl's aligned table into header names and rows of cells, cutting every line at
/// the header's column offsets (cells may contain single spaces).
fn table(out: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().unwrap_or_else(|| panic!("no table: {out:?}"));
    let mut starts = vec![0];
    let bytes = header.as_bytes();
    for i in 2..bytes.len() {
        if bytes[i] != b' ' && bytes[i - 1] == b' ' && bytes[i - 2] == b' ' {
            starts.push(i);
        }
    }
    let cut = |line: &str| -> Vec<String> {
        starts
            .iter()
            .enumerate()
            .map(|(k, &a)| {
                let b = starts
                    .get(k + 1)
                    .copied()
                    .unwrap_or(line.len())
                    .min(line.len());
                line.get(a.min(line.len())..b)
                    .unwrap_or("")
                    .trim()
                    .to_string()
            })
            .collect()
    };
    let names = cut(header);
    (names, lines.map(cut).collect())
}

fn headers_and_row(s: &Server, args: &[&str], name: &str) -> (Vec<String>, Vec<String>) {
    let out = s.ok(args);
    let (h, rows) = table(&out);
    let idx = h.iter().position(|c| c == "NAME" || c == "OBJECT").unwrap();
    let row = rows
        .into_iter()
        .find(|r| r[idx].ends_with(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{out}"));
    (h, row)
}

fn create(s: &Server, ns: &str, manifest: &str) {
    let out = s.kubectl_stdin(&["create", "-n", ns, "-f", "-"], manifest);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const NODE: &str = "apiVersion: v1
kind: Node
metadata:
  name: printer-node
  labels: {node-role.kubernetes.io/control-plane: \"\"}
status:
  nodeInfo: {kubeletVersion: v1.32.0, osImage: Ubuntu 24.04, kernelVersion: 6.8.0, containerRuntimeVersion: containerd://1.7.0,
    machineID: m, systemUUID: u, bootID: b, kubeProxyVersion: v1.32.0, operatingSystem: linux, architecture: amd64}
  addresses: [{type: InternalIP, address: 10.1.1.1}]
  conditions:
  - {type: Ready, status: \"True\", reason: KubeletReady, message: ready,
     lastHeartbeatTime: \"2024-01-01T00:00:00Z\", lastTransitionTime: \"2024-01-01T00:00:00Z\"}
";

#[test]
fn node_and_namespace_tables() {
    let s = server();
    create(s, "default", NODE);
    let (h, row) = headers_and_row(s, &["get", "nodes"], "printer-node");
    assert_eq!(h, ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert_eq!(
        [&row[1], &row[2], &row[4]],
        ["Ready", "control-plane", "v1.32.0"]
    );
    let (h, row) = headers_and_row(s, &["get", "nodes", "-o", "wide"], "printer-node");
    assert_eq!(
        h,
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME"
        ]
    );
    assert_eq!(
        row[5..],
        [
            "10.1.1.1",
            "<none>",
            "Ubuntu 24.04",
            "6.8.0",
            "containerd://1.7.0"
        ]
    );
    s.ok(&["delete", "node", "printer-node"]);

    let ns = s.namespace("print-ns");
    let (h, row) = headers_and_row(s, &["get", "ns"], &ns);
    assert_eq!(h, ["NAME", "STATUS", "AGE"]);
    assert_eq!(row[1], "Active");
}

#[test]
fn service_deployment_and_configmap_tables() {
    let s = server();
    let ns = s.namespace("print-workloads");
    s.ok(&[
        "create",
        "service",
        "nodeport",
        "svc",
        "-n",
        &ns,
        "--tcp=80:8080",
    ]);
    let svc = s.json(&["get", "svc", "svc", "-n", &ns]);
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    let node_port = svc["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    let (h, row) = headers_and_row(s, &["get", "svc", "-n", &ns, "-o", "wide"], "svc");
    assert_eq!(
        h,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    assert_eq!(
        [&row[1], &row[2], &row[3], &row[4], &row[6]],
        [
            "NodePort",
            ip.as_str(),
            "<none>",
            &format!("80:{node_port}/TCP"),
            "app=svc"
        ]
    );

    s.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        &ns,
        "--image=nginx:1.25",
        "--replicas=3",
    ]);
    let (h, row) = headers_and_row(s, &["get", "deploy", "-n", &ns], "web");
    assert_eq!(h, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!([&row[1], &row[2], &row[3]], ["0/3", "0", "0"]);
    let (h, row) = headers_and_row(s, &["get", "deploy", "-n", &ns, "-o", "wide"], "web");
    assert_eq!(h[5..], ["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(row[5..], ["nginx", "nginx:1.25", "app=web"]);

    s.ok(&[
        "create",
        "configmap",
        "cm",
        "-n",
        &ns,
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]);
    let (h, row) = headers_and_row(s, &["get", "cm", "-n", &ns], "cm");
    assert_eq!(h, ["NAME", "DATA", "AGE"]);
    assert_eq!(row[1], "2");
}

#[test]
fn event_and_lease_tables() {
    let s = server();
    let ns = s.namespace("print-events");
    create(
        s,
        &ns,
        "apiVersion: v1
kind: Event
metadata: {name: ev1}
involvedObject: {kind: Pod, name: web-1, namespace: print-events, fieldPath: \"spec.containers{web}\"}
reason: Pulled
message: Container image already present on machine
type: Normal
source: {component: kubelet, host: node-a}
count: 3
firstTimestamp: \"2024-01-01T00:00:00Z\"
lastTimestamp: \"2024-01-01T00:00:00Z\"
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader}
spec: {holderIdentity: pod-a, leaseDurationSeconds: 15}
",
    );
    let (h, row) = headers_and_row(s, &["get", "events", "-n", &ns], "pod/web-1");
    assert_eq!(h, ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert_eq!(
        row[1..],
        [
            "Normal",
            "Pulled",
            "pod/web-1",
            "Container image already present on machine"
        ]
    );
    let (h, row) = headers_and_row(s, &["get", "events", "-n", &ns, "-o", "wide"], "pod/web-1");
    assert_eq!(
        h,
        [
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME"
        ]
    );
    assert_eq!(
        [&row[4], &row[5], &row[8], &row[9]],
        ["spec.containers{web}", "kubelet, node-a", "3", "ev1"]
    );
    let (h, row) = headers_and_row(s, &["get", "leases", "-n", &ns], "leader");
    assert_eq!(h, ["NAME", "HOLDER", "AGE"]);
    assert_eq!(row[1], "pod-a");
}

#[test]
fn api_resources_as_upstream() {
    let s = server();
    let out = s.ok(&["api-resources", "-o", "wide"]);
    let (h, rows) = table(&out);
    assert_eq!(
        h,
        [
            "NAME",
            "SHORTNAMES",
            "APIVERSION",
            "NAMESPACED",
            "KIND",
            "VERBS",
            "CATEGORIES"
        ]
    );
    let find = |name: &str, av: &str| {
        rows.iter()
            .find(|r| r[0] == name && r[2] == av)
            .unwrap_or_else(|| panic!("no {name} {av} in\n{out}"))
            .clone()
    };
    let all = "create,delete,deletecollection,get,list,patch,update,watch";
    for (name, av, short, namespaced, kind, verbs, cats) in [
        ("pods", "v1", "po", "true", "Pod", all, "all"),
        ("services", "v1", "svc", "true", "Service", all, "all"),
        (
            "namespaces",
            "v1",
            "ns",
            "false",
            "Namespace",
            "create,delete,get,list,patch,update,watch",
            "",
        ),
        ("nodes", "v1", "no", "false", "Node", all, ""),
        ("configmaps", "v1", "cm", "true", "ConfigMap", all, ""),
        ("bindings", "v1", "", "true", "Binding", "create", ""),
        (
            "componentstatuses",
            "v1",
            "cs",
            "false",
            "ComponentStatus",
            "get,list",
            "",
        ),
        (
            "deployments",
            "apps/v1",
            "deploy",
            "true",
            "Deployment",
            all,
            "all",
        ),
        ("cronjobs", "batch/v1", "cj", "true", "CronJob", all, "all"),
        (
            "horizontalpodautoscalers",
            "autoscaling/v2",
            "hpa",
            "true",
            "HorizontalPodAutoscaler",
            all,
            "all",
        ),
        (
            "leases",
            "coordination.k8s.io/v1",
            "",
            "true",
            "Lease",
            all,
            "",
        ),
        (
            "customresourcedefinitions",
            "apiextensions.k8s.io/v1",
            "crd,crds",
            "false",
            "CustomResourceDefinition",
            all,
            "api-extensions",
        ),
        (
            "selfsubjectaccessreviews",
            "authorization.k8s.io/v1",
            "",
            "false",
            "SelfSubjectAccessReview",
            "create",
            "",
        ),
        (
            "priorityclasses",
            "scheduling.k8s.io/v1",
            "pc",
            "false",
            "PriorityClass",
            all,
            "",
        ),
    ] {
        assert_eq!(
            find(name, av)[1..],
            [short, av, namespaced, kind, verbs, cats],
            "{name}"
        );
    }
    let namespaced = s.ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(namespaced.lines().any(|l| l == "nodes"), "{namespaced}");
    assert!(!namespaced.lines().any(|l| l == "pods"), "{namespaced}");
}

#[test]
fn get_all_lists_the_all_category() {
    let s = server();
    let ns = s.namespace("print-all");
    s.ok(&["create", "deployment", "web", "-n", &ns, "--image=nginx"]);
    s.ok(&[
        "create",
        "service",
        "clusterip",
        "web",
        "-n",
        &ns,
        "--tcp=80",
    ]);
    s.ok(&["run", "solo", "-n", &ns, "--image=nginx"]);
    s.ok(&["create", "configmap", "not-in-all", "-n", &ns]);
    let out = s.ok(&["get", "all", "-n", &ns, "-o", "name"]);
    let mut names: Vec<&str> = out.lines().collect();
    names.sort();
    assert_eq!(
        names,
        ["deployment.apps/web", "pod/solo", "service/web"],
        "{out}"
    );
    let out = s.ok(&["get", "all", "-n", &ns]);
    assert!(
        out.contains("NAME       READY   STATUS    RESTARTS   AGE"),
        "{out}"
    );
    assert!(out.contains("deployment.apps/web   0/1"), "{out}");
}

#[test]
fn many_kinds_from_one_manifest() {
    let s = server();
    let ns = s.namespace("many-kinds");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/many-kinds.yaml"
    );
    let out = s.ok(&["create", "-n", &ns, "-f", file]);
    let created: Vec<&str> = out.lines().collect();
    let want = [
        "deployment.apps/web created",
        "statefulset.apps/db created",
        "daemonset.apps/agent created",
        "job.batch/once created",
        "cronjob.batch/nightly created",
        "replicaset.apps/rs created",
        "ingress.networking.k8s.io/ing created",
        "networkpolicy.networking.k8s.io/deny-all created",
        "role.rbac.authorization.k8s.io/reader created",
        "rolebinding.rbac.authorization.k8s.io/reader-binding created",
        "clusterrole.rbac.authorization.k8s.io/manykinds-viewer created",
        "serviceaccount/robot created",
        "secret/creds created",
        "persistentvolumeclaim/claim created",
        "persistentvolume/manykinds-pv created",
        "storageclass.storage.k8s.io/manykinds-fast created",
        "poddisruptionbudget.policy/web-pdb created",
        "horizontalpodautoscaler.autoscaling/web-hpa created",
        "lease.coordination.k8s.io/leader created",
        "priorityclass.scheduling.k8s.io/manykinds-high created",
        "resourcequota/quota created",
        "limitrange/limits created",
        "endpoints/manual created",
        "endpointslice.discovery.k8s.io/manual-abc created",
    ];
    assert_eq!(created, want);
    let names = s.ok(&["get", "-n", &ns, "-f", file, "-o", "name"]);
    let names: Vec<&str> = names.lines().collect();
    let want_names: Vec<String> = want
        .iter()
        .map(|l| l.trim_end_matches(" created").to_string())
        .collect();
    assert_eq!(names, want_names);
    // Server-side defaults and conversions on a few of them.
    let secret = s.json(&["get", "secret", "creds", "-n", &ns]);
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    let sts = s.json(&["get", "sts", "db", "-n", &ns]);
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    let cj = s.json(&["get", "cronjob", "nightly", "-n", &ns]);
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(
        s.json(&["get", "pv", "manykinds-pv"])["spec"]["capacity"]["storage"],
        "5Gi"
    );

    let out = s.ok(&["delete", "-n", &ns, "-f", file]);
    assert_eq!(out.lines().count(), want.len(), "{out}");
    let out = s.kubectl(&["get", "-n", &ns, "-f", file, "-o", "name"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().filter(|l| l.contains("NotFound")).count(),
        want.len(),
        "{err}"
    );
}
