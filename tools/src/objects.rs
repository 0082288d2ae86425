//! Object shapes and names the workloads write. Pure.

use serde_json::{json, Value};

pub mod widgets;

/// Annotation carrying the writer's clock (unix nanoseconds) when it sent the object, so
/// watchers can measure delivery latency.
pub const SENT_ANNOTATION: &str = "loadgen.keel.dev/sent-unix-nanos";
/// Label on every object loadgen creates.
pub const LOADGEN_LABEL: &str = "loadgen.keel.dev/run";

/// The plural of the benchmark's custom resource ([`widgets`]).
pub const WIDGET_PLURAL: &str = "widgets";
/// Its group-version path.
pub const WIDGET_API_PREFIX: &str = "/apis/bench.keel.dev/v1";
/// Its part of an etcd key (`<group>/<plural>`).
pub const WIDGET_ETCD_RESOURCE: &str = "bench.keel.dev/widgets";

/// Kinds the CRUD workloads write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Kind {
    /// ConfigMaps with a payload of `--size` bytes.
    Configmaps,
    /// Pods with realistic ~2 KiB specs.
    Pods,
    /// Custom resources `Widget` (`bench.keel.dev/v1`, CRD `widgets.bench.keel.dev`, a
    /// 20-property spec and one CEL rule), as large as a ConfigMap of `--size` bytes.
    Widgets,
}

impl Kind {
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Configmaps => "configmaps",
            Kind::Pods => "pods",
            Kind::Widgets => WIDGET_PLURAL,
        }
    }

    /// The group-version path of the kind: `/api/v1` or `/apis/<group>/<version>`.
    pub fn api_prefix(self) -> &'static str {
        match self {
            Kind::Configmaps | Kind::Pods => "/api/v1",
            Kind::Widgets => WIDGET_API_PREFIX,
        }
    }

    /// The resource's part of an etcd key, as kube-apiserver stores it: `<plural>` for the
    /// core group, `<group>/<plural>` for a custom resource.
    pub fn etcd_resource(self) -> &'static str {
        match self {
            Kind::Configmaps | Kind::Pods => self.plural(),
            Kind::Widgets => WIDGET_ETCD_RESOURCE,
        }
    }
}

/// How object i is named and where it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    pub kind: Kind,
    /// Object names are `<prefix>-<i>`.
    pub prefix: String,
    /// Namespaces are `<ns_prefix>-<i mod namespaces>`, or `<ns_prefix>` when namespaces = 1.
    pub ns_prefix: String,
    pub namespaces: u32,
}

impl Naming {
    pub fn namespace(&self, i: u64) -> String {
        if self.namespaces <= 1 {
            self.ns_prefix.clone()
        } else {
            format!("{}-{}", self.ns_prefix, i % u64::from(self.namespaces))
        }
    }

    /// All namespaces objects are spread over.
    pub fn all_namespaces(&self) -> Vec<String> {
        (0..u64::from(self.namespaces.max(1)))
            .map(|i| self.namespace(i))
            .collect()
    }

    pub fn name(&self, i: u64) -> String {
        format!("{}-{i}", self.prefix)
    }

    /// `/api/v1/namespaces/<ns>/<plural>` (`/apis/<group>/<version>/...` for custom
    /// resources).
    pub fn collection_path(&self, ns: &str) -> String {
        format!(
            "{}/namespaces/{ns}/{}",
            self.kind.api_prefix(),
            self.kind.plural()
        )
    }

    /// `<collection_path>/<name>` of object i.
    pub fn item_path(&self, i: u64) -> String {
        format!(
            "{}/{}",
            self.collection_path(&self.namespace(i)),
            self.name(i)
        )
    }

    /// The etcd key kube-apiserver would use: `<prefix>/<plural>/<ns>/<name>`, or
    /// `<prefix>/<group>/<plural>/<ns>/<name>` for a custom resource.
    pub fn etcd_key(&self, etcd_prefix: &str, i: u64) -> String {
        format!(
            "{}/{}/{}/{}",
            etcd_prefix.trim_end_matches('/'),
            self.kind.etcd_resource(),
            self.namespace(i),
            self.name(i)
        )
    }

    /// The etcd prefix of the whole collection (all namespaces).
    pub fn etcd_collection_prefix(&self, etcd_prefix: &str) -> String {
        format!(
            "{}/{}/",
            etcd_prefix.trim_end_matches('/'),
            self.kind.etcd_resource()
        )
    }
}

/// Payload size of object i: `size` spread uniformly by +-`spread` (0..1), deterministic in i.
pub fn spread_size(size: usize, spread: f64, i: u64) -> usize {
    if spread <= 0.0 {
        return size;
    }
    // A fixed hash of i, so reruns write the same sizes.
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) % 10_000;
    let f = 1.0 + spread.min(1.0) * (h as f64 / 5_000.0 - 1.0);
    (size as f64 * f).round() as usize
}

/// `obj` (JSON text) with `member` (`"key":value`) made the first member of the object that
/// follows the first `"key_of_object":{` in it (a comma added unless that object was empty).
/// Byte-level, for the objects this tool writes, whose layout it knows; an error if the key is
/// not there.
pub fn with_first_member(obj: &[u8], key_of_object: &str, member: &str) -> Result<Vec<u8>, String> {
    let open = format!("\"{key_of_object}\":{{");
    let at = memchr::memmem::find(obj, open.as_bytes())
        .ok_or_else(|| format!("object without {key_of_object}"))?
        + open.len();
    let comma = if obj.get(at) == Some(&b'}') { "" } else { "," };
    let mut out = Vec::with_capacity(obj.len() + member.len() + 1);
    out.extend_from_slice(&obj[..at]);
    out.extend_from_slice(member.as_bytes());
    out.extend_from_slice(comma.as_bytes());
    out.extend_from_slice(&obj[at..]);
    Ok(out)
}

/// Unix time in nanoseconds.
pub fn now_unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The object i of `naming`, `payload_bytes` of ConfigMap data (Pods ignore it; a Widget is
/// as long as that ConfigMap), stamped with the send time and a version counter `generation`
/// (changes on every update).
pub fn object(naming: &Naming, i: u64, payload_bytes: usize, generation: u64) -> Value {
    let (ns, name) = (naming.namespace(i), naming.name(i));
    match naming.kind {
        Kind::Configmaps => configmap(&ns, &name, payload_bytes, generation),
        Kind::Pods => pod(&ns, &name, None, generation),
        Kind::Widgets => {
            let description = widgets::description_bytes(payload_bytes);
            widgets::widget(&ns, &name, i, description, generation)
        }
    }
}

/// `object(...)` serialized as JSON, the same document. ConfigMaps and Widgets (the objects
/// written at the highest rates) are written straight into the buffer: building a `Value` and
/// serializing it cost the load generator as much CPU as sending the request.
pub fn object_json(naming: &Naming, i: u64, payload_bytes: usize, generation: u64) -> Vec<u8> {
    let (ns, name) = (naming.namespace(i), naming.name(i));
    match naming.kind {
        Kind::Configmaps => {}
        Kind::Widgets => {
            let description = widgets::description_bytes(payload_bytes);
            return widgets::widget_json(&ns, &name, i, description, generation);
        }
        Kind::Pods => {
            return serde_json::to_vec(&object(naming, i, payload_bytes, generation))
                .unwrap_or_default()
        }
    }
    let mut out = Vec::with_capacity(payload_bytes + 400);
    write_head(&mut out, "v1", "ConfigMap", &ns, &name, generation);
    out.extend_from_slice(br#","data":{"payload":""#);
    out.resize(out.len() + payload_bytes, payload_fill(generation));
    out.extend_from_slice(br#""}}"#);
    out
}

/// Writes `{"apiVersion":..,"kind":..,"metadata":{..}` (the object left open): the metadata
/// `metadata()` builds, stamped with the send time now.
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
    generation: u64,
) {
    field(out, r#"{"apiVersion":"#, api_version);
    field(out, r#","kind":"#, kind);
    field(out, r#","metadata":{"name":"#, name);
    field(out, r#","namespace":"#, ns);
    field(
        out,
        &format!(r#","labels":{{"{LOADGEN_LABEL}":"1","app":"#),
        app_label(name),
    );
    let sent = now_unix_nanos().to_string();
    field(
        out,
        &format!(r#"}},"annotations":{{"{SENT_ANNOTATION}":"#),
        &sent,
    );
    field(
        out,
        r#","loadgen.keel.dev/generation":"#,
        &generation.to_string(),
    );
    out.extend_from_slice(b"}}");
}

/// Appends `raw` and then `value` as a JSON string.
fn field(out: &mut Vec<u8>, raw: &str, value: &str) {
    out.extend_from_slice(raw.as_bytes());
    // Serializing a str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn app_label(name: &str) -> &str {
    name.rsplit_once('-').map_or(name, |p| p.0)
}

pub(crate) fn payload_fill(generation: u64) -> u8 {
    b'a' + (generation % 26) as u8
}

pub(crate) fn metadata(ns: &str, name: &str, generation: u64) -> Value {
    json!({
        "name": name,
        "namespace": ns,
        "labels": {LOADGEN_LABEL: "1", "app": app_label(name)},
        "annotations": {
            SENT_ANNOTATION: now_unix_nanos().to_string(),
            "loadgen.keel.dev/generation": generation.to_string(),
        },
    })
}

/// A ConfigMap whose `data.payload` is `payload_bytes` long.
pub fn configmap(ns: &str, name: &str, payload_bytes: usize, generation: u64) -> Value {
    let fill = char::from(payload_fill(generation));
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(ns, name, generation),
        "data": {"payload": fill.to_string().repeat(payload_bytes)},
    })
}

/// A Pod shaped like a typical Deployment replica (~2 KiB of JSON), bound to `node` if given.
pub fn pod(ns: &str, name: &str, node: Option<&str>, generation: u64) -> Value {
    let mut p = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata(ns, name, generation),
        "spec": {
            "containers": [{
                "name": "app",
                "image": "registry.example.com/team/web-frontend:1.27.3",
                "imagePullPolicy": "IfNotPresent",
                "args": ["--port=8080", "--log-level=info", "--metrics-addr=:9090"],
                "ports": [
                    {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                    {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}
                ],
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "GOMAXPROCS", "value": "2"},
                    {"name": "FEATURE_FLAGS", "value": "checkout-v2,search-beta"}
                ],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "128Mi"},
                    "limits": {"cpu": "500m", "memory": "256Mi"}
                },
                "readinessProbe": {
                    "httpGet": {"path": "/healthz", "port": 8080},
                    "periodSeconds": 10, "timeoutSeconds": 1
                },
                "livenessProbe": {
                    "httpGet": {"path": "/livez", "port": 8080},
                    "initialDelaySeconds": 15, "periodSeconds": 20
                },
                "volumeMounts": [
                    {"name": "config", "mountPath": "/etc/app", "readOnly": true},
                    {"name": "cache", "mountPath": "/var/cache/app"}
                ],
                "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false}
            }],
            "volumes": [
                {"name": "config", "configMap": {"name": "web-frontend-config"}},
                {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "terminationGracePeriodSeconds": 30,
            "serviceAccountName": "default",
            "priority": 0
        }
    });
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    let meta = &mut p["metadata"];
    meta["labels"]["pod-template-hash"] = json!("7d4b9c8f6d");
    meta["annotations"]["prometheus.io/scrape"] = json!("true");
    meta["annotations"]["prometheus.io/port"] = json!("9090");
    meta["ownerReferences"] = json!([{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-frontend-7d4b9c8f6d",
        "uid": "5f0c2f5e-8a51-4c61-9b9e-2d1f6f0a7c11", "controller": true, "blockOwnerDeletion": true
    }]);
    p
}

/// The annotation of an applied Deployment that carries its round.
pub const ROUND_ANNOTATION: &str = "loadgen.keel.dev/round";

/// The image of container `c` of `deploy`'s pods: the first container's tag is the round.
pub fn deployment_image(c: usize, round: u64) -> String {
    match c {
        0 => format!("registry.example.com/team/web-frontend:1.{round}.0"),
        1 => "registry.example.com/infra/envoy-proxy:1.31.2".into(),
        2 => "registry.example.com/infra/fluent-bit:3.1.9".into(),
        _ => "registry.example.com/infra/statsd-exporter:0.27.1".into(),
    }
}

/// One container of `deployment`: env vars, ports, resources, three probes, volume mounts,
/// security context. Container 0 carries the round in `CONFIG_REVISION` and its image tag.
fn deployment_container(c: usize, name: &str, round: u64) -> Value {
    let role = ["app", "proxy", "logs", "metrics"][c % 4];
    let port = 8080 + 100 * c as u32;
    let mut env = vec![
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
        json!({"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}),
        json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}),
        json!({"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}),
        json!({"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"containerName": role, "resource": "limits.cpu"}}}),
        json!({"name": "GOMAXPROCS", "value": "2"}),
        json!({"name": "LOG_LEVEL", "value": "info"}),
        json!({"name": "LOG_FORMAT", "value": "json"}),
        json!({"name": "SERVICE_NAME", "value": format!("{name}-{role}")}),
        json!({"name": "UPSTREAM_URL", "value": format!("http://{name}.svc.cluster.local:{port}")}),
        json!({"name": "TRACING_ENDPOINT", "value": "http://otel-collector.observability.svc:4317"}),
        json!({"name": "REGION", "value": "eu-west-1"}),
        json!({"name": "HTTP_TIMEOUT", "value": "30s"}),
        json!({"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": format!("{name}-db"), "key": "password"}}}),
    ];
    if c == 0 {
        env.push(json!({"name": "CONFIG_REVISION", "value": round.to_string()}));
        env.push(
            json!({"name": "FEATURE_FLAGS", "value": "checkout-v2,search-beta,recommendations"}),
        );
    }
    json!({
        "name": role,
        "image": deployment_image(c, round),
        "imagePullPolicy": "IfNotPresent",
        "args": [format!("--port={port}"), "--log-level=info", format!("--metrics-addr=:{}", port + 1)],
        "ports": [
            {"name": "http", "containerPort": port, "protocol": "TCP"},
            {"name": "metrics", "containerPort": port + 1, "protocol": "TCP"}
        ],
        "env": env,
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"}
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": port},
            "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3
        },
        "livenessProbe": {
            "httpGet": {"path": "/livez", "port": port},
            "initialDelaySeconds": 15, "periodSeconds": 20
        },
        "startupProbe": {
            "tcpSocket": {"port": port},
            "periodSeconds": 5, "failureThreshold": 30
        },
        "volumeMounts": [
            {"name": "config", "mountPath": format!("/etc/{role}"), "readOnly": true},
            {"name": "cache", "mountPath": format!("/var/cache/{role}")},
            {"name": "tls", "mountPath": "/etc/tls", "readOnly": true}
        ],
        "securityContext": {
            "runAsNonRoot": true, "runAsUser": 10001, "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}
        },
        "terminationMessagePolicy": "FallbackToLogsOnError"
    })
}

/// An `apps/v1` Deployment of about 10 KiB of JSON, deterministic in (`name`, `round`): a
/// full pod template (four containers with env vars, ports, resources, probes and volume
/// mounts; volumes, tolerations, affinity). Every round changes `replicas`, an annotation, the
/// first container's image tag and its `CONFIG_REVISION` env var; nothing else varies.
pub fn deployment(ns: &str, name: &str, round: u64) -> Value {
    let labels = json!({"app": name, "tier": "frontend", LOADGEN_LABEL: "1"});
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels,
            "annotations": {
                ROUND_ANNOTATION: round.to_string(),
                "team.example.com/owner": "web-platform",
                "team.example.com/runbook": "https://runbooks.example.com/web-frontend",
            },
        },
        "spec": {
            "replicas": 1 + round % 5,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": {"app": name, "tier": "frontend"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": "8081",
                    },
                },
                "spec": {
                    "containers": (0..4).map(|c| deployment_container(c, name, round)).collect::<Vec<_>>(),
                    "volumes": [
                        {"name": "config", "configMap": {"name": format!("{name}-config"), "defaultMode": 420}},
                        {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "tls", "secret": {"secretName": format!("{name}-tls"), "defaultMode": 256}}
                    ],
                    "tolerations": [
                        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                    ],
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": name}},
                            "topologyKey": "kubernetes.io/hostname"
                        }
                    }]}},
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "terminationGracePeriodSeconds": 30,
                    "serviceAccountName": "default",
                    "securityContext": {"fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}}
                }
            }
        }
    })
}

/// RFC 3339 with microseconds, as Lease `renewTime` (MicroTime) is written.
pub fn micro_time_now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// RFC 3339 in seconds, as condition times are written.
pub fn time_now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A Node as a kubelet registers it.
pub fn node(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                LOADGEN_LABEL: "1"
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"}
        },
        "spec": {}
    })
}

/// The status a healthy simulated node reports.
pub fn node_status(name: &str, index: u64) -> Value {
    let now = time_now();
    let cond = |t: &str, s: &str, reason: &str| {
        json!({"type": t, "status": s, "reason": reason, "message": reason,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    json!({
        "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"},
        "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"},
        "conditions": [
            cond("Ready", "True", "KubeletReady"),
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID")
        ],
        "addresses": [
            {"type": "InternalIP", "address": node_ip(index)},
            {"type": "Hostname", "address": name}
        ],
        "nodeInfo": {
            "architecture": "amd64", "operatingSystem": "linux",
            "kubeletVersion": "v1.32.0-kwok", "kubeProxyVersion": "v1.32.0-kwok",
            "containerRuntimeVersion": "kwok", "kernelVersion": "6.1.0", "osImage": "kwok",
            "machineID": "", "systemUUID": "", "bootID": ""
        },
        "phase": "Running"
    })
}

/// A made-up address for simulated node `index` (never dialled).
pub fn node_ip(index: u64) -> String {
    format!(
        "10.{}.{}.{}",
        64 + (index >> 16) % 64,
        (index >> 8) % 256,
        index % 256
    )
}

/// The node Lease a kubelet keeps in `kube-node-lease`.
pub fn lease(node: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": node, "namespace": "kube-node-lease", "labels": {LOADGEN_LABEL: "1"}},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": micro_time_now()}
    })
}

/// A Namespace.
pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {LOADGEN_LABEL: "1"}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        let n = Naming {
            kind: Kind::Configmaps,
            prefix: "cm".into(),
            ns_prefix: "lg".into(),
            namespaces: 3,
        };
        let cases = [
            (
                0u64,
                "lg-0",
                "/api/v1/namespaces/lg-0/configmaps/cm-0",
                "/registry/configmaps/lg-0/cm-0",
            ),
            (
                4,
                "lg-1",
                "/api/v1/namespaces/lg-1/configmaps/cm-4",
                "/registry/configmaps/lg-1/cm-4",
            ),
        ];
        for (i, ns, path, key) in cases {
            assert_eq!(n.namespace(i), ns);
            assert_eq!(n.item_path(i), path);
            assert_eq!(n.etcd_key("/registry/", i), key);
        }
        assert_eq!(n.all_namespaces(), vec!["lg-0", "lg-1", "lg-2"]);
        let one = Naming { namespaces: 1, ..n };
        assert_eq!(one.namespace(7), "lg");
        // Custom resources: the group's path; in etcd, kube-apiserver's `<group>/<plural>`.
        let w = Naming {
            kind: Kind::Widgets,
            ..one
        };
        assert_eq!(
            w.item_path(4),
            "/apis/bench.keel.dev/v1/namespaces/lg/widgets/cm-4"
        );
        assert_eq!(
            w.etcd_key("/registry", 4),
            "/registry/bench.keel.dev/widgets/lg/cm-4"
        );
        assert_eq!(
            w.etcd_collection_prefix("/registry"),
            "/registry/bench.keel.dev/widgets/"
        );
    }

    #[test]
    fn sizes_spread_within_bounds() {
        assert_eq!(spread_size(1000, 0.0, 5), 1000);
        let sizes: Vec<usize> = (0..1000).map(|i| spread_size(1000, 0.5, i)).collect();
        assert!(sizes.iter().all(|s| (500..=1500).contains(s)));
        assert!(sizes.iter().any(|s| *s < 800) && sizes.iter().any(|s| *s > 1200));
    }

    #[test]
    fn object_json_is_the_object() {
        let without_time = |mut v: Value| {
            let ann = v["metadata"]["annotations"].as_object_mut().unwrap();
            assert!(ann
                .remove(SENT_ANNOTATION)
                .unwrap()
                .as_str()
                .unwrap()
                .parse::<u128>()
                .is_ok());
            v
        };
        for (kind, prefix, size, generation) in [
            (Kind::Configmaps, "lg", 1024, 0),
            (Kind::Configmaps, "we\"ird", 0, 27),
            (Kind::Pods, "p", 10, 3),
            (Kind::Widgets, "w", 2048, 5),
            (Kind::Widgets, "w", 10, 0),
        ] {
            let n = Naming {
                kind,
                prefix: prefix.into(),
                ns_prefix: "ns".into(),
                namespaces: 3,
            };
            let got: Value = serde_json::from_slice(&object_json(&n, 7, size, generation)).unwrap();
            let want = object(&n, 7, size, generation);
            assert_eq!(without_time(got), without_time(want), "{kind:?} {prefix}");
        }
    }

    #[test]
    fn deployment_rounds_change_only_the_round_values() {
        let (a, b) = (deployment("ns", "d-1", 3), deployment("ns", "d-1", 4));
        assert_eq!(a, deployment("ns", "d-1", 3));
        assert_ne!(a["spec"]["replicas"], b["spec"]["replicas"]);
        assert_eq!(b["metadata"]["annotations"][ROUND_ANNOTATION], "4");
        let c0 = &b["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c0["image"], deployment_image(0, 4));
        let envs = c0["env"].as_array().unwrap();
        assert!(envs.contains(&json!({"name": "CONFIG_REVISION", "value": "4"})));
    }

    #[test]
    fn object_sizes() {
        let cm = serde_json::to_vec(&configmap("ns", "cm-1", 1024, 0)).unwrap();
        assert!((1024..1024 + 400).contains(&cm.len()), "{}", cm.len());
        let p = serde_json::to_vec(&pod("ns", "web-1", Some("node-1"), 0)).unwrap();
        assert!((1800..2600).contains(&p.len()), "pod is {} bytes", p.len());
        let d = serde_json::to_vec(&deployment("ns", "web-1", 12)).unwrap();
        assert!(
            (9 * 1024..12 * 1024).contains(&d.len()),
            "deployment is {} bytes",
            d.len()
        );
    }
}
