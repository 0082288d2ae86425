//! Printers for leases, storage classes, ingresses and priority classes.

use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};

use super::time::since;
use super::util::{arr, created, i, load_balancer_addresses, name, s};
use super::{col, field, sentence, Printer, Row, AGE, NAME};

pub(crate) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    match (group, kind) {
        ("coordination.k8s.io", "Lease") => Some(&LEASE),
        ("storage.k8s.io", "StorageClass") => Some(&STORAGE_CLASS),
        ("networking.k8s.io", "Ingress") => Some(&INGRESS),
        ("scheduling.k8s.io", "PriorityClass") => Some(&PRIORITY_CLASS),
        _ => None,
    }
}

const LEASE: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Holder",
            "string",
            field("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
        ),
        AGE,
    ],
    print: |l, now| {
        Row::new(vec![
            json!(name(l)),
            json!(s(l, "/spec/holderIdentity")),
            json!(since(created(l), now)),
        ])
    },
};

fn is_default_class(sc: &Value) -> bool {
    let ann = sc.at("/metadata/annotations");
    let get = |k: &str| ann.and_then(|a| a.get(k)).and_then(Value::as_str);
    get("storageclass.kubernetes.io/is-default-class") == Some("true")
        || get("storageclass.beta.kubernetes.io/is-default-class") == Some("true")
}

const STORAGE_CLASS: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Provisioner",
            "string",
            field("io.k8s.api.storage.v1.StorageClass", "provisioner"),
        ),
        col(
            "ReclaimPolicy",
            "string",
            field("io.k8s.api.storage.v1.StorageClass", "reclaimPolicy"),
        ),
        col(
            "VolumeBindingMode",
            "string",
            field("io.k8s.api.storage.v1.StorageClass", "volumeBindingMode"),
        ),
        col(
            "AllowVolumeExpansion",
            "string",
            field("io.k8s.api.storage.v1.StorageClass", "allowVolumeExpansion"),
        ),
        AGE,
    ],
    print: |sc, now| {
        let mut display = name(sc).to_owned();
        if is_default_class(sc) {
            display.push_str(" (default)");
        }
        let or =
            |p: &str, d: &'static str| sc.at(p).and_then(Value::as_str).unwrap_or(d).to_owned();
        Row::new(vec![
            json!(display),
            json!(s(sc, "/provisioner")),
            json!(or("/reclaimPolicy", "Delete")),
            json!(or("/volumeBindingMode", "Immediate")),
            json!(sc
                .get("allowVolumeExpansion")
                .and_then(Value::as_bool)
                .unwrap_or(false)),
            json!(since(created(sc), now)),
        ])
    },
};

/// Most ingress hosts a cell lists before summarizing the rest.
const INGRESS_HOSTS_SHOWN_MAX: usize = 3;

fn ingress_hosts(ing: &Value) -> String {
    let rules = arr(ing, "/spec/rules");
    let hosts: Vec<&str> = rules
        .iter()
        .take(INGRESS_HOSTS_SHOWN_MAX)
        .map(|r| s(r, "/host"))
        .filter(|h| !h.is_empty())
        .collect();
    if hosts.is_empty() {
        return "*".to_owned();
    }
    let joined = hosts.join(",");
    if rules.len() > INGRESS_HOSTS_SHOWN_MAX {
        format!(
            "{joined} + {} more...",
            rules.len() - INGRESS_HOSTS_SHOWN_MAX
        )
    } else {
        joined
    }
}

const INGRESS: Printer = Printer {
    columns: &[
        NAME,
        col("Class", "string", sentence("The name of the IngressClass resource that should be used for additional configuration")),
        col("Hosts", "string", sentence("Hosts that incoming requests are matched against before the ingress rule")),
        col("Address", "string", sentence("Address is a list containing ingress points for the load-balancer")),
        col("Ports", "string", sentence("Ports of TLS configurations that open")),
        AGE,
    ],
    print: |ing, now| {
        let class = ing
            .at("/spec/ingressClassName")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        let ports = if arr(ing, "/spec/tls").is_empty() {
            "80"
        } else {
            "80, 443"
        };
        Row::new(vec![
            json!(name(ing)),
            json!(class),
            json!(ingress_hosts(ing)),
            json!(load_balancer_addresses(ing.at("/status/loadBalancer"))),
            json!(ports),
            json!(since(created(ing), now)),
        ])
    },
};

const PRIORITY_CLASS: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Value",
            "integer",
            field("io.k8s.api.scheduling.v1.PriorityClass", "value"),
        ),
        col(
            "Global-Default",
            "boolean",
            field("io.k8s.api.scheduling.v1.PriorityClass", "globalDefault"),
        ),
        AGE,
        col(
            "PreemptionPolicy",
            "string",
            field("io.k8s.api.scheduling.v1.PriorityClass", "preemptionPolicy"),
        ),
    ],
    print: |pc, now| {
        let policy = pc
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .unwrap_or("<unset>");
        Row::new(vec![
            json!(name(pc)),
            json!(i(pc, "/value")),
            json!(pc
                .get("globalDefault")
                .and_then(Value::as_bool)
                .unwrap_or(false)),
            json!(since(created(pc), now)),
            json!(policy),
        ])
    },
};
