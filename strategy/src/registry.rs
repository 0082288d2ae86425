//! Which policy applies to a `(group, resource)`: the per-type flags of upstream's strategies.

/// Built-in types with type-specific policy in this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// core/v1 pods
    Pod,
    /// core/v1 namespaces
    Namespace,
    /// core/v1 services
    Service,
    /// core/v1 nodes
    Node,
    /// core/v1 configmaps
    ConfigMap,
    /// core/v1 secrets
    Secret,
    /// core/v1 events
    Event,
    /// core/v1 replicationcontrollers
    ReplicationController,
    /// apps/v1 deployments
    Deployment,
    /// apps/v1 replicasets
    ReplicaSet,
    /// apps/v1 statefulsets
    StatefulSet,
    /// apps/v1 daemonsets
    DaemonSet,
    /// batch/v1 jobs
    Job,
    /// batch/v1 cronjobs
    CronJob,
    /// Any other built-in type: only the generic flags below apply.
    Other,
}

/// Per-type flags, mirroring upstream strategy methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Traits {
    /// The type is served with a `/status` subresource (status split from spec).
    pub status_subresource: bool,
    /// `metadata.generation` starts at 1 and increments on spec changes.
    pub tracks_generation: bool,
    /// `AllowCreateOnUpdate`: PUT to a missing object creates it.
    pub create_on_update: bool,
    /// `AllowUnconditionalUpdate`: PUT without `resourceVersion` is accepted.
    pub unconditional_update: bool,
    /// Namespaced (false: cluster-scoped).
    pub namespaced: bool,
    /// Status is kept through create (upstream does not reset it, e.g. nodes).
    pub keep_status_on_create: bool,
}

const fn t(status: bool, generation: bool, cou: bool, namespaced: bool) -> Traits {
    Traits {
        status_subresource: status,
        tracks_generation: generation,
        create_on_update: cou,
        unconditional_update: true,
        namespaced,
        keep_status_on_create: false,
    }
}

/// One row: group, resource, kind, traits.
type Row = (&'static str, &'static str, Kind, Traits);

const NODE: Traits = Traits {
    keep_status_on_create: true,
    ..t(true, false, false, false)
};
const CRD: Traits = Traits {
    unconditional_update: false,
    ..t(true, true, false, false)
};
const APISERVICE: Traits = Traits {
    unconditional_update: false,
    ..t(true, false, false, false)
};

/// The known built-in resources. Order is irrelevant; lookups are linear (the table is small).
const TABLE: &[Row] = &[
    ("", "pods", Kind::Pod, t(true, false, false, true)),
    (
        "",
        "namespaces",
        Kind::Namespace,
        t(true, false, false, false),
    ),
    ("", "services", Kind::Service, t(true, false, true, true)),
    ("", "nodes", Kind::Node, NODE),
    (
        "",
        "configmaps",
        Kind::ConfigMap,
        t(false, false, false, true),
    ),
    ("", "secrets", Kind::Secret, t(false, false, false, true)),
    ("", "events", Kind::Event, t(false, false, true, true)),
    (
        "",
        "replicationcontrollers",
        Kind::ReplicationController,
        t(true, true, false, true),
    ),
    ("", "endpoints", Kind::Other, t(false, false, true, true)),
    ("", "limitranges", Kind::Other, t(false, false, true, true)),
    (
        "",
        "persistentvolumes",
        Kind::Other,
        t(true, false, false, false),
    ),
    (
        "",
        "persistentvolumeclaims",
        Kind::Other,
        t(true, false, false, true),
    ),
    (
        "",
        "resourcequotas",
        Kind::Other,
        t(true, false, false, true),
    ),
    (
        "",
        "serviceaccounts",
        Kind::Other,
        t(false, false, false, true),
    ),
    ("", "podtemplates", Kind::Other, t(false, true, false, true)),
    (
        "apps",
        "deployments",
        Kind::Deployment,
        t(true, true, false, true),
    ),
    (
        "apps",
        "replicasets",
        Kind::ReplicaSet,
        t(true, true, false, true),
    ),
    (
        "apps",
        "statefulsets",
        Kind::StatefulSet,
        t(true, true, false, true),
    ),
    (
        "apps",
        "daemonsets",
        Kind::DaemonSet,
        t(true, true, false, true),
    ),
    (
        "apps",
        "controllerrevisions",
        Kind::Other,
        t(false, false, false, true),
    ),
    ("batch", "jobs", Kind::Job, t(true, true, false, true)),
    (
        "batch",
        "cronjobs",
        Kind::CronJob,
        t(true, true, false, true),
    ),
    (
        "autoscaling",
        "horizontalpodautoscalers",
        Kind::Other,
        t(true, false, false, true),
    ),
    (
        "policy",
        "poddisruptionbudgets",
        Kind::Other,
        t(true, true, false, true),
    ),
    (
        "networking.k8s.io",
        "ingresses",
        Kind::Other,
        t(true, false, false, true),
    ),
    (
        "networking.k8s.io",
        "ingressclasses",
        Kind::Other,
        t(false, false, false, false),
    ),
    (
        "networking.k8s.io",
        "networkpolicies",
        Kind::Other,
        t(false, true, false, true),
    ),
    (
        "coordination.k8s.io",
        "leases",
        Kind::Other,
        t(false, false, true, true),
    ),
    (
        "discovery.k8s.io",
        "endpointslices",
        Kind::Other,
        t(false, false, true, true),
    ),
    (
        "events.k8s.io",
        "events",
        Kind::Other,
        t(false, false, true, true),
    ),
    (
        "rbac.authorization.k8s.io",
        "roles",
        Kind::Other,
        t(false, false, true, true),
    ),
    (
        "rbac.authorization.k8s.io",
        "rolebindings",
        Kind::Other,
        t(false, false, true, true),
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        Kind::Other,
        t(false, false, true, false),
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        Kind::Other,
        t(false, false, true, false),
    ),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        Kind::Other,
        CRD,
    ),
    (
        "apiregistration.k8s.io",
        "apiservices",
        Kind::Other,
        APISERVICE,
    ),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        Kind::Other,
        t(true, false, false, false),
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "flowschemas",
        Kind::Other,
        t(true, true, false, false),
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
        Kind::Other,
        t(true, true, false, false),
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        Kind::Other,
        t(false, true, false, false),
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        Kind::Other,
        t(false, true, false, false),
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        Kind::Other,
        t(true, true, false, false),
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        Kind::Other,
        t(false, true, false, false),
    ),
    (
        "storage.k8s.io",
        "storageclasses",
        Kind::Other,
        t(false, false, false, false),
    ),
    (
        "storage.k8s.io",
        "volumeattachments",
        Kind::Other,
        t(true, false, false, false),
    ),
    (
        "storage.k8s.io",
        "csidrivers",
        Kind::Other,
        t(false, false, false, false),
    ),
    (
        "storage.k8s.io",
        "csinodes",
        Kind::Other,
        t(false, false, false, false),
    ),
    (
        "node.k8s.io",
        "runtimeclasses",
        Kind::Other,
        t(false, false, true, false),
    ),
    (
        "scheduling.k8s.io",
        "priorityclasses",
        Kind::Other,
        t(false, false, false, false),
    ),
];

/// Flags for a resource nobody registered here: no status split, no generation, namespaced.
pub const UNKNOWN: Traits = t(false, false, false, true);

/// Looks a resource up; `None` when it is not a known built-in.
pub fn lookup(group: &str, resource: &str) -> Option<(Kind, Traits)> {
    // A write looks its resource up several times (defaults, traits, validation): the
    // thread remembers the last answer instead of scanning the table each time.
    thread_local! {
        static LAST: std::cell::Cell<Option<Row>> = const { std::cell::Cell::new(None) };
    }
    let row = match LAST.get() {
        Some(row) if row.0 == group && row.1 == resource => row,
        _ => {
            let row = *TABLE
                .iter()
                .find(|(g, r, _, _)| *g == group && *r == resource)?;
            LAST.set(Some(row));
            row
        }
    };
    Some((row.2, row.3))
}

/// The kind for a resource (`Kind::Other` when unknown).
pub fn kind(group: &str, resource: &str) -> Kind {
    lookup(group, resource).map_or(Kind::Other, |(k, _)| k)
}

/// The traits for a resource (`UNKNOWN` when unknown).
pub fn traits(group: &str, resource: &str) -> Traits {
    lookup(group, resource).map_or(UNKNOWN, |(_, tr)| tr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_no_duplicates() {
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                assert!(!(a.0 == b.0 && a.1 == b.1), "duplicate {}/{}", a.0, a.1);
            }
        }
    }
}
