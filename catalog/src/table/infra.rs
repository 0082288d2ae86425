//! Printers for pod templates, quotas, controller revisions, autoscalers, networking,
//! discovery, storage, node and dynamic resource allocation (`resource.k8s.io`) kinds.

use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};

use super::time::since;
use super::util::{arr, containers_and_images, created, deleting, format_labels, i, name, s};
use super::util::{label_selector, or_none};
use super::{col, field, sentence, Col, Printer, Row, AGE, NAME};

pub(crate) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    match (group, kind) {
        ("", "PodTemplate") => Some(&POD_TEMPLATE),
        ("", "ResourceQuota") => Some(&RESOURCE_QUOTA),
        ("apps", "ControllerRevision") => Some(&CONTROLLER_REVISION),
        ("autoscaling", "HorizontalPodAutoscaler") => Some(&HPA),
        ("networking.k8s.io", "IngressClass") => Some(&INGRESS_CLASS),
        ("networking.k8s.io", "NetworkPolicy") => Some(&NETWORK_POLICY),
        ("networking.k8s.io", "ServiceCIDR") => Some(&SERVICE_CIDR),
        ("networking.k8s.io", "IPAddress") => Some(&IP_ADDRESS),
        ("discovery.k8s.io", "EndpointSlice") => Some(&ENDPOINT_SLICE),
        ("storage.k8s.io", "CSIDriver") => Some(&CSI_DRIVER),
        ("storage.k8s.io", "CSINode") => Some(&CSI_NODE),
        ("storage.k8s.io", "VolumeAttachment") => Some(&VOLUME_ATTACHMENT),
        ("storage.k8s.io", "VolumeAttributesClass") => Some(&VOLUME_ATTRIBUTES_CLASS),
        ("node.k8s.io", "RuntimeClass") => Some(&RUNTIME_CLASS),
        ("resource.k8s.io", "DeviceClass" | "ResourceClaimTemplate") => Some(&NAME_AGE),
        ("resource.k8s.io", "ResourceClaim") => Some(&RESOURCE_CLAIM),
        ("resource.k8s.io", "ResourceSlice") => Some(&RESOURCE_SLICE),
        ("resource.k8s.io", "DeviceTaintRule") => Some(&DEVICE_TAINT_RULE),
        ("resource.k8s.io", "ResourcePoolStatusRequest") => Some(&RESOURCE_POOL_STATUS_REQUEST),
        _ => None,
    }
}

/// `Name`, `Age`: kinds whose upstream printer shows nothing else.
pub(crate) const NAME_AGE: Printer = Printer {
    columns: &[NAME, AGE],
    print: |o, now| Row::new(vec![json!(name(o)), json!(since(created(o), now))]),
};

/// Upstream's "first three, then `+ N more...`" lists; an empty list is `<unset>`.
pub(crate) fn list_with_more(items: &[String]) -> String {
    const SHOWN_MAX: usize = 3;
    if items.len() > SHOWN_MAX {
        return format!(
            "{} + {} more...",
            items[..SHOWN_MAX].join(","),
            items.len() - SHOWN_MAX
        );
    }
    if items.is_empty() {
        "<unset>".to_owned()
    } else {
        items.join(",")
    }
}

/// An int-or-string value (`2`, `"25%"`) as text.
pub(crate) fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(t) => t.clone(),
        other => other.to_string(),
    }
}

// ---- core, apps ----

const POD_TEMPLATE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Containers",
            "string",
            sentence("Names of each container in the template."),
        ),
        col(
            "Images",
            "string",
            sentence("Images referenced by each container in the template."),
        ),
        col(
            "Pod Labels",
            "string",
            sentence("The labels for the pod template."),
        ),
    ],
    print: |pt, _| {
        let (containers, images) = containers_and_images(pt.at("/template/spec"));
        Row::new(vec![
            json!(name(pt)),
            json!(containers),
            json!(images),
            json!(format_labels(pt.at("/template/metadata/labels"))),
        ])
    },
};

/// `resource: used/hard` for every hard limit, sorted by name; `limits.*` go to the second cell.
fn quota_cells(rq: &Value) -> (String, String) {
    let Some(hard) = rq.at("/status/hard").and_then(Value::as_object) else {
        return (String::new(), String::new());
    };
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for res in names {
        let used = rq
            .at("/status/used")
            .and_then(|u| u.get(res.as_str()))
            .map_or_else(|| "0".to_owned(), int_or_string);
        let piece = format!("{res}: {used}/{}", int_or_string(&hard[res]));
        let mut parts = res.split('.');
        let is_limit = parts.next() == Some("limits") && parts.next().is_some();
        if is_limit {
            limits.push(piece);
        } else {
            requests.push(piece);
        }
    }
    (requests.join(", "), limits.join(", "))
}

const RESOURCE_QUOTA: Printer = Printer {
    columns: &[
        NAME,
        col("Request", "string", sentence("Request represents a minimum amount of cpu/memory that a container may consume.")),
        col("Limit", "string", sentence("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.")),
        AGE,
    ],
    print: |rq, now| {
        let (requests, limits) = quota_cells(rq);
        Row::new(vec![
            json!(name(rq)),
            json!(requests),
            json!(limits),
            json!(since(created(rq), now)),
        ])
    },
};

/// The controlling owner as `kind.group/name` in lower case (`statefulset.apps/web`).
fn controller_of(obj: &Value) -> String {
    let owner = arr(obj, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true));
    let Some(owner) = owner else {
        return "<none>".to_owned();
    };
    let api_version = s(owner, "/apiVersion");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = s(owner, "/kind");
    let group_kind = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    if group_kind.is_empty() {
        return s(owner, "/name").to_owned();
    }
    format!("{}/{}", group_kind.to_lowercase(), s(owner, "/name"))
}

const CONTROLLER_REVISION: Printer = Printer {
    columns: &[
        NAME,
        col("Controller", "string", sentence("Controller of the object")),
        col(
            "Revision",
            "string",
            field("io.k8s.api.apps.v1.ControllerRevision", "revision"),
        ),
        AGE,
    ],
    print: |cr, now| {
        Row::new(vec![
            json!(name(cr)),
            json!(controller_of(cr)),
            json!(i(cr, "/revision")),
            json!(since(created(cr), now)),
        ])
    },
};

// ---- autoscaling ----

/// Most metrics a Targets cell lists before summarizing the rest.
const HPA_METRICS_SHOWN_MAX: usize = 2;

fn quantity(v: Option<&Value>) -> Option<String> {
    v.filter(|q| !q.is_null()).map(int_or_string)
}

/// One `autoscaling/v2` metric spec with its status (same index) as upstream renders it.
fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
    let unknown = || "<unknown>".to_owned();
    let ty = s(spec, "/type");
    let source = |key: &str| spec.get(key).cloned().unwrap_or(Value::Null);
    let current = |key: &str, field: &str| {
        status
            .filter(|st| s(st, "/type") == ty)
            .and_then(|st| st.get(key))
            .and_then(|c| c.at(&format!("/current/{field}")))
    };
    match ty {
        "External" | "Object" => {
            let key = if ty == "External" {
                "external"
            } else {
                "object"
            };
            let target = source(key);
            if let Some(avg) = quantity(target.at("/target/averageValue")) {
                let cur = quantity(current(key, "averageValue")).unwrap_or_else(unknown);
                format!("{cur}/{avg} (avg)")
            } else {
                let cur = quantity(current(key, "value")).unwrap_or_else(unknown);
                let value = quantity(target.at("/target/value")).unwrap_or_else(|| "0".into());
                format!("{cur}/{value}")
            }
        }
        "Pods" => {
            let cur = quantity(current("pods", "averageValue")).unwrap_or_else(unknown);
            let avg =
                quantity(source("pods").at("/target/averageValue")).unwrap_or_else(|| "0".into());
            format!("{cur}/{avg}")
        }
        "Resource" | "ContainerResource" => {
            let key = if ty == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let target = source(key);
            let res = s(&target, "/name");
            if let Some(avg) = quantity(target.at("/target/averageValue")) {
                let cur = quantity(current(key, "averageValue")).unwrap_or_else(unknown);
                format!("{res}: {cur}/{avg}")
            } else {
                let cur = current(key, "averageUtilization")
                    .and_then(Value::as_i64)
                    .map_or_else(unknown, |u| format!("{u}%"));
                let want = target
                    .at("/target/averageUtilization")
                    .and_then(Value::as_i64)
                    .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                format!("{res}: {cur}/{want}")
            }
        }
        _ => "<unknown type>".to_owned(),
    }
}

/// The Targets cell. An `autoscaling/v1` object carries only its CPU target.
fn hpa_targets(hpa: &Value) -> String {
    let mut specs: Vec<Value> = arr(hpa, "/spec/metrics").to_vec();
    let mut statuses: Vec<Value> = arr(hpa, "/status/currentMetrics").to_vec();
    if let Some(cpu) = hpa.at("/spec/targetCPUUtilizationPercentage") {
        specs = vec![json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": cpu}}})];
        statuses = match hpa.at("/status/currentCPUUtilizationPercentage") {
            Some(cur) => vec![json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": cur}}})],
            None => Vec::new(),
        };
    }
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(n, spec)| hpa_metric(spec, statuses.get(n)))
        .collect();
    if list.len() > HPA_METRICS_SHOWN_MAX {
        format!(
            "{} + {} more...",
            list[..HPA_METRICS_SHOWN_MAX].join(", "),
            list.len() - HPA_METRICS_SHOWN_MAX
        )
    } else {
        list.join(", ")
    }
}

const HPA: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Reference",
            "string",
            field(
                "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
                "scaleTargetRef",
            ),
        ),
        col(
            "Targets",
            "string",
            field(
                "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
                "metrics",
            ),
        ),
        col(
            "MinPods",
            "string",
            field(
                "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
                "minReplicas",
            ),
        ),
        col(
            "MaxPods",
            "string",
            field(
                "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
                "maxReplicas",
            ),
        ),
        col(
            "Replicas",
            "string",
            field(
                "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
                "currentReplicas",
            ),
        ),
        AGE,
    ],
    print: |hpa, now| {
        let min = hpa
            .at("/spec/minReplicas")
            .and_then(Value::as_i64)
            .map_or_else(|| "<unset>".to_owned(), |m| m.to_string());
        Row::new(vec![
            json!(name(hpa)),
            json!(format!(
                "{}/{}",
                s(hpa, "/spec/scaleTargetRef/kind"),
                s(hpa, "/spec/scaleTargetRef/name")
            )),
            json!(hpa_targets(hpa)),
            json!(min),
            json!(i(hpa, "/spec/maxReplicas")),
            json!(i(hpa, "/status/currentReplicas")),
            json!(since(created(hpa), now)),
        ])
    },
};

// ---- networking, discovery ----

const INGRESS_CLASS: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Controller",
            "string",
            sentence("Controller that is responsible for handling this class"),
        ),
        col(
            "Parameters",
            "string",
            sentence("A reference to a resource with additional parameters"),
        ),
        AGE,
    ],
    print: |ic, now| {
        let parameters = match ic.at("/spec/parameters").filter(|p| p.is_object()) {
            None => "<none>".to_owned(),
            Some(p) => {
                let mut text = s(p, "/kind").to_owned();
                if let Some(group) = p.get("apiGroup").and_then(Value::as_str) {
                    text = format!("{text}.{group}");
                }
                format!("{text}/{}", s(p, "/name"))
            }
        };
        Row::new(vec![
            json!(name(ic)),
            json!(s(ic, "/spec/controller")),
            json!(parameters),
            json!(since(created(ic), now)),
        ])
    },
};

const NETWORK_POLICY: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Pod-Selector",
            "string",
            field("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
        ),
        AGE,
    ],
    print: |np, now| {
        Row::new(vec![
            json!(name(np)),
            json!(or_none(label_selector(np.at("/spec/podSelector")))),
            json!(since(created(np), now)),
        ])
    },
};

const SERVICE_CIDR: Printer = Printer {
    columns: &[
        NAME,
        col(
            "CIDRs",
            "string",
            field("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs"),
        ),
        AGE,
    ],
    print: |sc, now| {
        let cidrs: Vec<&str> = arr(sc, "/spec/cidrs")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        Row::new(vec![
            json!(name(sc)),
            json!(cidrs.join(",")),
            json!(since(created(sc), now)),
        ])
    },
};

/// IPAddress rows carry an Age cell that has no column: upstream's printer emits three cells
/// for its two columns, and clients see exactly that.
const IP_ADDRESS: Printer = Printer {
    columns: &[
        NAME,
        col(
            "ParentRef",
            "string",
            field("io.k8s.api.networking.v1.IPAddressSpec", "parentRef"),
        ),
    ],
    print: |ip, now| {
        let parent = match ip.at("/spec/parentRef").filter(|p| p.is_object()) {
            None => "<none>".to_owned(),
            Some(p) => {
                let (group, resource) = (s(p, "/group"), s(p, "/resource"));
                let mut text = if group.is_empty() {
                    resource.to_owned()
                } else {
                    format!("{resource}.{group}")
                }
                .to_lowercase();
                if !s(p, "/namespace").is_empty() {
                    text = format!("{text}/{}", s(p, "/namespace"));
                }
                format!("{text}/{}", s(p, "/name"))
            }
        };
        Row::new(vec![
            json!(name(ip)),
            json!(parent),
            json!(since(created(ip), now)),
        ])
    },
};

const ENDPOINT_SLICE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "AddressType",
            "string",
            field("io.k8s.api.discovery.v1.EndpointSlice", "addressType"),
        ),
        col(
            "Ports",
            "string",
            field("io.k8s.api.discovery.v1.EndpointSlice", "ports"),
        ),
        col(
            "Endpoints",
            "string",
            field("io.k8s.api.discovery.v1.EndpointSlice", "endpoints"),
        ),
        AGE,
    ],
    print: |es, now| {
        let ports: Vec<String> = arr(es, "/ports")
            .iter()
            .map(
                |p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                    (Some(n), _) => n.to_string(),
                    (None, Some(Value::String(n))) => n.clone(),
                    _ => "*".to_owned(),
                },
            )
            .collect();
        let addresses: Vec<String> = arr(es, "/endpoints")
            .iter()
            .flat_map(|e| arr(e, "/addresses"))
            .map(|a| a.as_str().unwrap_or("").to_owned())
            .collect();
        Row::new(vec![
            json!(name(es)),
            json!(s(es, "/addressType")),
            json!(list_with_more(&ports)),
            json!(list_with_more(&addresses)),
            json!(since(created(es), now)),
        ])
    },
};

// ---- storage, node ----

fn bool_or(obj: &Value, pointer: &str, default: bool) -> bool {
    obj.at(pointer).and_then(Value::as_bool).unwrap_or(default)
}

const CSI_DRIVER: Printer = Printer {
    columns: &[
        NAME,
        col(
            "AttachRequired",
            "boolean",
            field("io.k8s.api.storage.v1.CSIDriverSpec", "attachRequired"),
        ),
        col(
            "PodInfoOnMount",
            "boolean",
            field("io.k8s.api.storage.v1.CSIDriverSpec", "podInfoOnMount"),
        ),
        col(
            "StorageCapacity",
            "boolean",
            field("io.k8s.api.storage.v1.CSIDriverSpec", "storageCapacity"),
        ),
        col(
            "TokenRequests",
            "string",
            field("io.k8s.api.storage.v1.CSIDriverSpec", "tokenRequests"),
        ),
        col(
            "RequiresRepublish",
            "boolean",
            field("io.k8s.api.storage.v1.CSIDriverSpec", "requiresRepublish"),
        ),
        col(
            "Modes",
            "string",
            field(
                "io.k8s.api.storage.v1.CSIDriverSpec",
                "volumeLifecycleModes",
            ),
        ),
        AGE,
    ],
    print: |d, now| {
        let tokens = match d.at("/spec/tokenRequests").and_then(Value::as_array) {
            None => "<unset>".to_owned(),
            Some(list) => list
                .iter()
                .map(|t| s(t, "/audience"))
                .collect::<Vec<_>>()
                .join(","),
        };
        let modes: Vec<&str> = arr(d, "/spec/volumeLifecycleModes")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        Row::new(vec![
            json!(name(d)),
            json!(bool_or(d, "/spec/attachRequired", true)),
            json!(bool_or(d, "/spec/podInfoOnMount", false)),
            json!(bool_or(d, "/spec/storageCapacity", false)),
            json!(tokens),
            json!(bool_or(d, "/spec/requiresRepublish", false)),
            json!(or_none(modes.join(","))),
            json!(since(created(d), now)),
        ])
    },
};

const CSI_NODE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Drivers",
            "integer",
            sentence("Drivers indicates the number of CSI drivers registered on the node"),
        ),
        AGE,
    ],
    print: |n, now| {
        Row::new(vec![
            json!(name(n)),
            json!(arr(n, "/spec/drivers").len()),
            json!(since(created(n), now)),
        ])
    },
};

const VOLUME_ATTACHMENT: Printer = Printer {
    columns: &[
        NAME,
        Col {
            name: "Attacher",
            ty: "string",
            format: "name",
            description: field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "attacher"),
            priority: 0,
        },
        col(
            "PV",
            "string",
            field(
                "io.k8s.api.storage.v1.VolumeAttachmentSource",
                "persistentVolumeName",
            ),
        ),
        col(
            "Node",
            "string",
            field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "nodeName"),
        ),
        col(
            "Attached",
            "boolean",
            field("io.k8s.api.storage.v1.VolumeAttachmentStatus", "attached"),
        ),
        AGE,
    ],
    print: |va, now| {
        Row::new(vec![
            json!(name(va)),
            json!(s(va, "/spec/attacher")),
            json!(s(va, "/spec/source/persistentVolumeName")),
            json!(s(va, "/spec/nodeName")),
            json!(bool_or(va, "/status/attached", false)),
            json!(since(created(va), now)),
        ])
    },
};

const VOLUME_ATTRIBUTES_CLASS: Printer = Printer {
    columns: &[
        NAME,
        col(
            "DriverName",
            "string",
            field("io.k8s.api.storage.v1.VolumeAttributesClass", "driverName"),
        ),
        AGE,
    ],
    print: |c, now| {
        Row::new(vec![
            json!(name(c)),
            json!(s(c, "/driverName")),
            json!(since(created(c), now)),
        ])
    },
};

const RUNTIME_CLASS: Printer = Printer {
    columns: &[NAME, col("Handler", "string", sentence("")), AGE],
    print: |rc, now| {
        Row::new(vec![
            json!(name(rc)),
            json!(s(rc, "/handler")),
            json!(since(created(rc), now)),
        ])
    },
};

// ---- resource.k8s.io ----

fn claim_state(claim: &Value) -> String {
    let mut states = Vec::new();
    if deleting(claim) {
        states.push("deleted");
    }
    if claim.at("/status/allocation").is_some_and(|a| !a.is_null()) {
        states.push("allocated");
        if !arr(claim, "/status/reservedFor").is_empty() {
            states.push("reserved");
        }
    } else if !deleting(claim) {
        states.push("pending");
    }
    states.join(",")
}

const RESOURCE_CLAIM: Printer = Printer {
    columns: &[
        NAME,
        col(
            "State",
            "string",
            sentence("A summary of the current state (allocated, pending, reserved, etc.)."),
        ),
        AGE,
    ],
    print: |c, now| {
        Row::new(vec![
            json!(name(c)),
            json!(claim_state(c)),
            json!(since(created(c), now)),
        ])
    },
};

const RESOURCE_SLICE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Node",
            "string",
            field("io.k8s.api.resource.v1.ResourceSliceSpec", "nodeName"),
        ),
        col(
            "Driver",
            "string",
            field("io.k8s.api.resource.v1.ResourceSliceSpec", "driver"),
        ),
        col(
            "Pool",
            "string",
            field("io.k8s.api.resource.v1.ResourcePool", "name"),
        ),
        AGE,
    ],
    print: |sl, now| {
        Row::new(vec![
            json!(name(sl)),
            json!(s(sl, "/spec/nodeName")),
            json!(s(sl, "/spec/driver")),
            json!(s(sl, "/spec/pool/name")),
            json!(since(created(sl), now)),
        ])
    },
};

const DEVICE_TAINT_RULE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Key",
            "string",
            field("io.k8s.api.resource.v1.DeviceTaint", "key"),
        ),
        col(
            "Value",
            "string",
            field("io.k8s.api.resource.v1.DeviceTaint", "value"),
        ),
        col(
            "Effect",
            "string",
            field("io.k8s.api.resource.v1.DeviceTaint", "effect"),
        ),
        col(
            "TimeAdded",
            "string",
            field("io.k8s.api.resource.v1.DeviceTaint", "timeAdded"),
        ),
        AGE,
    ],
    print: |r, now| {
        let added = r
            .at("/spec/taint/timeAdded")
            .and_then(Value::as_str)
            .map_or_else(String::new, |t| since(Some(t), now));
        Row::new(vec![
            json!(name(r)),
            json!(s(r, "/spec/taint/key")),
            json!(s(r, "/spec/taint/value")),
            json!(s(r, "/spec/taint/effect")),
            json!(added),
            json!(since(created(r), now)),
        ])
    },
};

/// Cells of a ResourcePoolStatusRequest: device sums over the reported pools (`-` until the
/// request has a status or when it failed), the pool count, the state and when it completed.
fn pool_status_cells(r: &Value, now: i64) -> Vec<Value> {
    let mut cells = vec![json!(name(r)), json!(s(r, "/spec/driver"))];
    let status = r.get("status").filter(|st| st.is_object());
    let mut state = "Pending".to_owned();
    let mut completed = "<none>".to_owned();
    let mut failed = false;
    let mut sums = vec!["-".to_owned(); 5];
    let mut pool_count = 0;
    if let Some(st) = status {
        for c in arr(st, "/conditions") {
            if s(c, "/status") != "True" {
                continue;
            }
            match s(c, "/type") {
                "Complete" => {
                    state = "Complete".to_owned();
                    completed = since(c.get("lastTransitionTime").and_then(Value::as_str), now);
                    break;
                }
                "Failed" => {
                    state = "Failed".to_owned();
                    failed = true;
                    break;
                }
                _ => {}
            }
        }
        pool_count = i(st, "/poolCount");
        let pools = arr(st, "/pools");
        if state == "Complete" && pool_count > pools.len() as i64 {
            state = format!("Complete ({}/{pool_count} pools)", pools.len());
        }
        if !failed {
            let sum = |field: &str| pools.iter().map(|p| i(p, field)).sum::<i64>();
            let errors = pools
                .iter()
                .filter(|p| p.get("validationError").is_some_and(|e| !e.is_null()))
                .count();
            sums = vec![
                sum("/totalDevices").to_string(),
                sum("/availableDevices").to_string(),
                sum("/allocatedDevices").to_string(),
                sum("/unavailableDevices").to_string(),
                errors.to_string(),
            ];
        }
    }
    cells.extend(sums.into_iter().map(Value::from));
    cells.extend([json!(pool_count), json!(state), json!(completed)]);
    cells
}

const RESOURCE_POOL_STATUS_REQUEST: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Driver",
            "string",
            sentence("The driver to query pools for."),
        ),
        col(
            "Total",
            "string",
            sentence("Total number of devices across all pools."),
        ),
        col(
            "Available",
            "string",
            sentence("Number of available devices across all pools."),
        ),
        col(
            "Allocated",
            "string",
            sentence("Number of allocated devices across all pools."),
        ),
        col(
            "Unavailable",
            "string",
            sentence("Number of unavailable devices across all pools."),
        ),
        col(
            "Errors",
            "string",
            sentence("Number of pools with validation errors."),
        ),
        col(
            "Pools",
            "integer",
            sentence("Total number of matching pools."),
        ),
        col("Status", "string", sentence("Processing status.")),
        col(
            "Completed",
            "string",
            sentence("Time since the observation completed."),
        ),
    ],
    print: |r, now| Row::new(pool_status_cells(r, now)),
};
