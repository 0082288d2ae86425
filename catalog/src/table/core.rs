//! Printers for core (`v1`) kinds other than pods and replication controllers, and for
//! `events.k8s.io` events (rendered through the core event printer, as upstream does).

use keel_api::jsonmap::JsonPointer;
use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::time::since;
use super::util::{
    arr, created, deleting, format_labels, i, load_balancer_addresses, name, or_none, s,
};
use super::{col, field, sentence, wide, Col, Printer, Row, AGE, NAME};

pub(crate) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    match (group, kind) {
        ("", "Node") => Some(&NODE),
        ("", "Namespace") => Some(&NAMESPACE),
        ("", "Service") => Some(&SERVICE),
        ("", "ConfigMap") => Some(&CONFIG_MAP),
        ("", "Secret") => Some(&SECRET),
        ("", "ServiceAccount") => Some(&SERVICE_ACCOUNT),
        ("", "Endpoints") => Some(&ENDPOINTS),
        ("", "Event") => Some(&EVENT),
        ("events.k8s.io", "Event") => Some(&EVENTS_K8S_IO_EVENT),
        ("", "PersistentVolume") => Some(&PERSISTENT_VOLUME),
        ("", "PersistentVolumeClaim") => Some(&PERSISTENT_VOLUME_CLAIM),
        _ => None,
    }
}

// ---- nodes, namespaces ----

const NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const NODE_ROLE_LABEL: &str = "kubernetes.io/role";

fn node_roles(node: &Value) -> String {
    let mut roles = BTreeSet::new();
    if let Some(labels) = node.at("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix(NODE_ROLE_PREFIX).filter(|r| !r.is_empty()) {
                roles.insert(role.to_owned());
            } else if k == NODE_ROLE_LABEL && v.as_str().is_some_and(|r| !r.is_empty()) {
                roles.insert(v.as_str().unwrap_or_default().to_owned());
            }
        }
    }
    or_none(roles.into_iter().collect::<Vec<_>>().join(","))
}

fn node_status(node: &Value) -> String {
    let mut status: Vec<&str> = Vec::new();
    let ready = arr(node, "/status/conditions")
        .iter()
        .rev()
        .find(|c| s(c, "/type") == "Ready");
    match ready {
        Some(c) if s(c, "/status") == "True" => status.push("Ready"),
        Some(_) => status.push("NotReady"),
        None => status.push("Unknown"),
    }
    if node.at("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

fn node_address(node: &Value, ty: &str) -> String {
    let found = arr(node, "/status/addresses")
        .iter()
        .find(|a| s(a, "/type") == ty);
    or_none(
        found
            .map(|a| s(a, "/address").to_owned())
            .unwrap_or_default(),
    )
}

fn unknown_if_empty(v: &str) -> String {
    if v.is_empty() {
        "<unknown>".to_owned()
    } else {
        v.to_owned()
    }
}

const NODE: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", sentence("The status of the node")),
        col("Roles", "string", sentence("The roles of the node")),
        AGE,
        col(
            "Version",
            "string",
            field("io.k8s.api.core.v1.NodeSystemInfo", "kubeletVersion"),
        ),
        wide(
            "Internal-IP",
            "string",
            field("io.k8s.api.core.v1.NodeStatus", "addresses"),
        ),
        wide(
            "External-IP",
            "string",
            field("io.k8s.api.core.v1.NodeStatus", "addresses"),
        ),
        wide(
            "OS-Image",
            "string",
            field("io.k8s.api.core.v1.NodeSystemInfo", "osImage"),
        ),
        wide(
            "Kernel-Version",
            "string",
            field("io.k8s.api.core.v1.NodeSystemInfo", "kernelVersion"),
        ),
        wide(
            "Container-Runtime",
            "string",
            field(
                "io.k8s.api.core.v1.NodeSystemInfo",
                "containerRuntimeVersion",
            ),
        ),
    ],
    print: |node, now| {
        Row::new(vec![
            json!(name(node)),
            json!(node_status(node)),
            json!(node_roles(node)),
            json!(since(created(node), now)),
            json!(s(node, "/status/nodeInfo/kubeletVersion")),
            json!(node_address(node, "InternalIP")),
            json!(node_address(node, "ExternalIP")),
            json!(unknown_if_empty(s(node, "/status/nodeInfo/osImage"))),
            json!(unknown_if_empty(s(node, "/status/nodeInfo/kernelVersion"))),
            json!(unknown_if_empty(s(
                node,
                "/status/nodeInfo/containerRuntimeVersion"
            ))),
        ])
    },
};

const NAMESPACE: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", sentence("The status of the namespace")),
        AGE,
    ],
    print: |ns, now| {
        Row::new(vec![
            json!(name(ns)),
            json!(s(ns, "/status/phase")),
            json!(since(created(ns), now)),
        ])
    },
};

// ---- services, endpoints ----

/// `80/TCP`, or `80:30080/TCP` when a node port is allocated; comma-joined.
fn service_ports(svc: &Value) -> String {
    let pieces: Vec<String> = arr(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let proto = if s(p, "/protocol").is_empty() {
                "TCP"
            } else {
                s(p, "/protocol")
            };
            match i(p, "/nodePort") {
                n if n > 0 => format!("{}:{n}/{proto}", i(p, "/port")),
                _ => format!("{}/{proto}", i(p, "/port")),
            }
        })
        .collect();
    or_none(pieces.join(","))
}

fn service_external_ip(svc: &Value) -> String {
    let external: Vec<&str> = arr(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match s(svc, "/spec/type") {
        "ClusterIP" | "NodePort" | "" => or_none(external.join(",")),
        "LoadBalancer" => {
            let lb = load_balancer_addresses(svc.at("/status/loadBalancer"));
            let mut all: Vec<&str> = lb.split(',').filter(|a| !a.is_empty()).collect();
            all.extend(external);
            if all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => s(svc, "/spec/externalName").to_owned(),
        _ => "<unknown>".to_owned(),
    }
}

const SERVICE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Type",
            "string",
            field("io.k8s.api.core.v1.ServiceSpec", "type"),
        ),
        col(
            "Cluster-IP",
            "string",
            field("io.k8s.api.core.v1.ServiceSpec", "clusterIP"),
        ),
        col(
            "External-IP",
            "string",
            field("io.k8s.api.core.v1.ServiceSpec", "externalIPs"),
        ),
        col(
            "Port(s)",
            "string",
            field("io.k8s.api.core.v1.ServiceSpec", "ports"),
        ),
        AGE,
        wide(
            "Selector",
            "string",
            field("io.k8s.api.core.v1.ServiceSpec", "selector"),
        ),
    ],
    print: |svc, now| {
        let cluster_ip = arr(svc, "/spec/clusterIPs")
            .first()
            .and_then(Value::as_str)
            .unwrap_or(s(svc, "/spec/clusterIP"));
        Row::new(vec![
            json!(name(svc)),
            json!(s(svc, "/spec/type")),
            json!(or_none(cluster_ip.to_owned())),
            json!(service_external_ip(svc)),
            json!(service_ports(svc)),
            json!(since(created(svc), now)),
            json!(format_labels(svc.at("/spec/selector"))),
        ])
    },
};

/// Most addresses an Endpoints cell lists before summarizing the rest.
const ENDPOINTS_SHOWN_MAX: usize = 3;

fn join_host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

fn format_endpoints(ep: &Value) -> String {
    let subsets = arr(ep, "/subsets");
    let (mut list, mut count) = (Vec::new(), 0usize);
    for ss in subsets {
        let addresses = arr(ss, "/addresses");
        let ports = arr(ss, "/ports");
        let targets: Vec<Option<i64>> = if ports.is_empty() {
            vec![None]
        } else {
            ports.iter().map(|p| Some(i(p, "/port"))).collect()
        };
        for port in targets {
            count += addresses.len();
            for a in addresses
                .iter()
                .take(ENDPOINTS_SHOWN_MAX.saturating_sub(list.len()))
            {
                list.push(match port {
                    Some(p) => join_host_port(s(a, "/ip"), p),
                    None => s(a, "/ip").to_owned(),
                });
            }
        }
    }
    let joined = list.join(",");
    if count > ENDPOINTS_SHOWN_MAX {
        format!("{joined} + {} more...", count - ENDPOINTS_SHOWN_MAX)
    } else {
        or_none(joined)
    }
}

const ENDPOINTS: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Endpoints",
            "string",
            field("io.k8s.api.core.v1.Endpoints", "subsets"),
        ),
        AGE,
    ],
    print: |ep, now| {
        Row::new(vec![
            json!(name(ep)),
            json!(format_endpoints(ep)),
            json!(since(created(ep), now)),
        ])
    },
};

// ---- config ----

fn map_len(obj: &Value, pointer: &str) -> usize {
    obj.at(pointer)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

const CONFIG_MAP: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Data",
            "string",
            field("io.k8s.api.core.v1.ConfigMap", "data"),
        ),
        AGE,
    ],
    print: |cm, now| {
        let n = map_len(cm, "/data") + map_len(cm, "/binaryData");
        Row::new(vec![
            json!(name(cm)),
            json!(n),
            json!(since(created(cm), now)),
        ])
    },
};

const SECRET: Printer = Printer {
    columns: &[
        NAME,
        col("Type", "string", field("io.k8s.api.core.v1.Secret", "type")),
        col("Data", "string", field("io.k8s.api.core.v1.Secret", "data")),
        AGE,
    ],
    print: |sec, now| {
        Row::new(vec![
            json!(name(sec)),
            json!(s(sec, "/type")),
            json!(map_len(sec, "/data")),
            json!(since(created(sec), now)),
        ])
    },
};

/// Since v1.36 the printer no longer counts the (legacy) token secrets a service account lists.
const SERVICE_ACCOUNT: Printer = Printer {
    columns: &[NAME, AGE],
    print: |sa, now| Row::new(vec![json!(name(sa)), json!(since(created(sa), now))]),
};

// ---- events ----

const EVENT_COLUMNS: &[super::Col] = &[
    col(
        "Last Seen",
        "string",
        field("io.k8s.api.core.v1.Event", "lastTimestamp"),
    ),
    col("Type", "string", field("io.k8s.api.core.v1.Event", "type")),
    col(
        "Reason",
        "string",
        field("io.k8s.api.core.v1.Event", "reason"),
    ),
    col(
        "Object",
        "string",
        field("io.k8s.api.core.v1.Event", "involvedObject"),
    ),
    wide(
        "Subobject",
        "string",
        field("io.k8s.api.core.v1.ObjectReference", "fieldPath"),
    ),
    wide(
        "Source",
        "string",
        field("io.k8s.api.core.v1.Event", "source"),
    ),
    col(
        "Message",
        "string",
        field("io.k8s.api.core.v1.Event", "message"),
    ),
    wide(
        "First Seen",
        "string",
        field("io.k8s.api.core.v1.Event", "firstTimestamp"),
    ),
    wide(
        "Count",
        "string",
        field("io.k8s.api.core.v1.Event", "count"),
    ),
    // The events' name is shown only with `-o wide`.
    Col {
        priority: 1,
        ..NAME
    },
];

const EVENT: Printer = Printer {
    columns: EVENT_COLUMNS,
    print: print_core_event,
};

const EVENTS_K8S_IO_EVENT: Printer = Printer {
    columns: EVENT_COLUMNS,
    print: |ev, now| print_core_event(&events_to_core(ev), now),
};

/// Maps an `events.k8s.io/v1` Event onto the core Event fields the printer reads.
fn events_to_core(ev: &Value) -> Value {
    let get = |k: &str| ev.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "metadata": get("metadata"),
        "involvedObject": get("regarding"),
        "reason": get("reason"),
        "message": get("note"),
        "type": get("type"),
        "source": get("deprecatedSource"),
        "firstTimestamp": get("deprecatedFirstTimestamp"),
        "lastTimestamp": get("deprecatedLastTimestamp"),
        "count": get("deprecatedCount"),
        "eventTime": get("eventTime"),
        "series": get("series"),
        "reportingComponent": get("reportingController"),
        "reportingInstance": get("reportingInstance"),
    })
}

fn event_source(ev: &Value) -> String {
    let first = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_owned()
        } else {
            a.to_owned()
        }
    };
    let component = first(s(ev, "/source/component"), s(ev, "/reportingComponent"));
    let host = first(s(ev, "/source/host"), s(ev, "/reportingInstance"));
    if host.is_empty() {
        component
    } else {
        format!("{component}, {host}")
    }
}

fn print_core_event(ev: &Value, now: i64) -> Row {
    let nonempty = |p: &str| ev.at(p).and_then(Value::as_str).filter(|t| !t.is_empty());
    let first_seen = match nonempty("/firstTimestamp") {
        Some(t) => since(Some(t), now),
        None => since(nonempty("/eventTime"), now),
    };
    let mut last_seen = match nonempty("/lastTimestamp") {
        Some(t) => since(Some(t), now),
        None => first_seen.clone(),
    };
    let mut count = i(ev, "/count");
    if ev.get("series").is_some_and(Value::is_object) {
        last_seen = since(nonempty("/series/lastObservedTime"), now);
        count = i(ev, "/series/count");
    } else if count == 0 {
        count = 1; // singleton events carry no count in the new API
    }
    let kind = s(ev, "/involvedObject/kind").to_lowercase();
    let obj_name = s(ev, "/involvedObject/name");
    let target = if obj_name.is_empty() {
        kind
    } else {
        format!("{kind}/{obj_name}")
    };
    Row::new(vec![
        json!(last_seen),
        json!(s(ev, "/type")),
        json!(s(ev, "/reason")),
        json!(target),
        json!(s(ev, "/involvedObject/fieldPath")),
        json!(event_source(ev)),
        json!(s(ev, "/message").trim()),
        json!(first_seen),
        json!(count),
        json!(name(ev)),
    ])
}

// ---- volumes ----

/// `RWO,ROX,RWX,RWOP` in upstream's fixed order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    let table = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ];
    table
        .iter()
        .filter(|(m, _)| has(m))
        .map(|(_, short)| *short)
        .collect::<Vec<_>>()
        .join(",")
}

fn storage_class(obj: &Value, spec_field: &str) -> String {
    let beta = obj
        .at("/metadata/annotations")
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
        .and_then(Value::as_str);
    beta.unwrap_or(s(obj, spec_field)).to_owned()
}

fn unset_if_missing(obj: &Value, pointer: &str) -> String {
    match obj.at(pointer).and_then(Value::as_str) {
        Some(v) if !v.is_empty() => v.to_owned(),
        _ => "<unset>".to_owned(),
    }
}

fn phase_or_terminating(obj: &Value) -> String {
    if deleting(obj) {
        "Terminating".to_owned()
    } else {
        s(obj, "/status/phase").to_owned()
    }
}

const PERSISTENT_VOLUME: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Capacity",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeSpec", "capacity"),
        ),
        col(
            "Access Modes",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeSpec", "accessModes"),
        ),
        col(
            "Reclaim Policy",
            "string",
            field(
                "io.k8s.api.core.v1.PersistentVolumeSpec",
                "persistentVolumeReclaimPolicy",
            ),
        ),
        col(
            "Status",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeStatus", "phase"),
        ),
        col(
            "Claim",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeSpec", "claimRef"),
        ),
        col("StorageClass", "string", sentence("StorageClass of the pv")),
        col(
            "VolumeAttributesClass",
            "string",
            sentence("VolumeAttributesClass of the pv"),
        ),
        col(
            "Reason",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeStatus", "reason"),
        ),
        AGE,
        wide(
            "VolumeMode",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeSpec", "volumeMode"),
        ),
    ],
    print: |pv, now| {
        let claim = match pv.at("/spec/claimRef") {
            Some(c) if c.is_object() => format!("{}/{}", s(c, "/namespace"), s(c, "/name")),
            _ => String::new(),
        };
        Row::new(vec![
            json!(name(pv)),
            json!(s(pv, "/spec/capacity/storage")),
            json!(access_modes(arr(pv, "/spec/accessModes"))),
            json!(s(pv, "/spec/persistentVolumeReclaimPolicy")),
            json!(phase_or_terminating(pv)),
            json!(claim),
            json!(storage_class(pv, "/spec/storageClassName")),
            json!(unset_if_missing(pv, "/spec/volumeAttributesClassName")),
            json!(s(pv, "/status/reason")),
            json!(since(created(pv), now)),
            json!(unset_if_missing(pv, "/spec/volumeMode")),
        ])
    },
};

const PERSISTENT_VOLUME_CLAIM: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Status",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "phase"),
        ),
        col(
            "Volume",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeName"),
        ),
        col(
            "Capacity",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "capacity"),
        ),
        col(
            "Access Modes",
            "string",
            field(
                "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
                "accessModes",
            ),
        ),
        col(
            "StorageClass",
            "string",
            sentence("StorageClass of the pvc"),
        ),
        col(
            "VolumeAttributesClass",
            "string",
            sentence("VolumeAttributesClass of the pvc"),
        ),
        AGE,
        wide(
            "VolumeMode",
            "string",
            field("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeMode"),
        ),
    ],
    print: |pvc, now| {
        let volume = s(pvc, "/spec/volumeName");
        let (capacity, modes) = if volume.is_empty() {
            (String::new(), String::new())
        } else {
            (
                s(pvc, "/status/capacity/storage").to_owned(),
                access_modes(arr(pvc, "/status/accessModes")),
            )
        };
        Row::new(vec![
            json!(name(pvc)),
            json!(phase_or_terminating(pvc)),
            json!(volume),
            json!(capacity),
            json!(modes),
            json!(storage_class(pvc, "/spec/storageClassName")),
            json!(unset_if_missing(pvc, "/spec/volumeAttributesClassName")),
            json!(since(created(pvc), now)),
            json!(unset_if_missing(pvc, "/spec/volumeMode")),
        ])
    },
};
