//! Discovery-only data for every built-in resource: what a Kubernetes v1.36 API server publishes
//! in discovery but the type bindings do not carry (singular name, verbs, short names,
//! categories, subresources), plus each group's position and each version's priority.
//!
//! Sources: `kubectl api-resources -o wide` outputs and `/api/v1`, `/apis/<g>/<v>` and aggregated
//! discovery dumps of real v1.2x/v1.3x servers, and the aggregator's APIService priorities.
//! Kind, scope and plural are NOT here: they come from `k8s-openapi` (see `builtin.rs`).

/// Verbs of an ordinary stored resource.
pub(crate) const CRUD: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Namespaces are the one stored resource without deletecollection.
const CRUD_NO_DC: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// Virtual "review" resources and bindings accept only POST.
const CREATE: &[&str] = &["create"];
const GET_LIST: &[&str] = &["get", "list"];
/// Status-like subresources (status, scale, approval, ephemeralcontainers).
const GPU: &[&str] = &["get", "patch", "update"];
/// Proxy subresources.
const PROXY: &[&str] = &["create", "delete", "get", "patch", "update"];
/// Streaming connect subresources (attach, exec, portforward).
const CONNECT: &[&str] = &["create", "get"];
const UPDATE: &[&str] = &["update"];
const GET: &[&str] = &["get"];

const ALL: &[&str] = &["all"];
const API_EXT: &[&str] = &["api-extensions"];
const NONE: &[&str] = &[];

/// Kind marker for a subresource that returns its parent's kind.
const PARENT: &str = "";

/// One subresource as discovery lists it. Empty `group`/`version` mean the parent's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SubData {
    pub name: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub verbs: &'static [&'static str],
}

const fn sub(name: &'static str, kind: &'static str, verbs: &'static [&'static str]) -> SubData {
    SubData {
        name,
        group: "",
        version: "",
        kind,
        verbs,
    }
}
const STATUS: SubData = sub("status", PARENT, GPU);
const SCALE: SubData = SubData {
    name: "scale",
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
    verbs: GPU,
};

/// One resource's discovery-only data.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResourceData {
    pub group: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub subresources: &'static [SubData],
}

macro_rules! res {
    ($g:expr, $p:expr, $s:expr, $verbs:expr, [$($sn:expr),*], $cat:expr, [$($sub:expr),*]) => {
        ResourceData {
            group: $g, plural: $p, singular: $s, verbs: $verbs,
            short_names: &[$($sn),*], categories: $cat, subresources: &[$($sub),*],
        }
    };
}

#[rustfmt::skip]
/// Discovery data, keyed by (group, plural): every version of a group that serves a resource
/// publishes the same data for it.
pub(crate) const RESOURCES: &[ResourceData] = &[
    // core v1
    res!("", "bindings", "binding", CREATE, [], NONE, []),
    res!("", "componentstatuses", "componentstatus", GET_LIST, ["cs"], NONE, []),
    res!("", "configmaps", "configmap", CRUD, ["cm"], NONE, []),
    res!("", "endpoints", "endpoints", CRUD, ["ep"], NONE, []),
    res!("", "events", "event", CRUD, ["ev"], NONE, []),
    res!("", "limitranges", "limitrange", CRUD, ["limits"], NONE, []),
    res!("", "namespaces", "namespace", CRUD_NO_DC, ["ns"], NONE, [sub("finalize", PARENT, UPDATE), STATUS]),
    res!("", "nodes", "node", CRUD, ["no"], NONE, [sub("proxy", "NodeProxyOptions", PROXY), STATUS]),
    res!("", "persistentvolumeclaims", "persistentvolumeclaim", CRUD, ["pvc"], NONE, [STATUS]),
    res!("", "persistentvolumes", "persistentvolume", CRUD, ["pv"], NONE, [STATUS]),
    res!("", "pods", "pod", CRUD, ["po"], ALL, [
        sub("attach", "PodAttachOptions", CONNECT),
        sub("binding", "Binding", CREATE),
        sub("ephemeralcontainers", PARENT, GPU),
        SubData { name: "eviction", group: "policy", version: "v1", kind: "Eviction", verbs: CREATE },
        sub("exec", "PodExecOptions", CONNECT),
        sub("log", PARENT, GET),
        sub("portforward", "PodPortForwardOptions", CONNECT),
        sub("proxy", "PodProxyOptions", PROXY),
        sub("resize", PARENT, GPU),
        STATUS
    ]),
    res!("", "podtemplates", "podtemplate", CRUD, [], NONE, []),
    res!("", "replicationcontrollers", "replicationcontroller", CRUD, ["rc"], ALL, [SCALE, STATUS]),
    res!("", "resourcequotas", "resourcequota", CRUD, ["quota"], NONE, [STATUS]),
    res!("", "secrets", "secret", CRUD, [], NONE, []),
    res!("", "serviceaccounts", "serviceaccount", CRUD, ["sa"], NONE, [SubData { name: "token", group: "authentication.k8s.io", version: "v1", kind: "TokenRequest", verbs: CREATE }]),
    res!("", "services", "service", CRUD, ["svc"], ALL, [sub("proxy", "ServiceProxyOptions", PROXY), STATUS]),
    // admissionregistration.k8s.io
    res!("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", CRUD, [], API_EXT, []),
    res!("admissionregistration.k8s.io", "validatingwebhookconfigurations", "validatingwebhookconfiguration", CRUD, [], API_EXT, []),
    res!("admissionregistration.k8s.io", "validatingadmissionpolicies", "validatingadmissionpolicy", CRUD, [], API_EXT, [STATUS]),
    res!("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", CRUD, [], API_EXT, []),
    res!("admissionregistration.k8s.io", "mutatingadmissionpolicies", "mutatingadmissionpolicy", CRUD, [], API_EXT, []),
    res!("admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "mutatingadmissionpolicybinding", CRUD, [], API_EXT, []),
    // apiextensions.k8s.io, apiregistration.k8s.io
    res!("apiextensions.k8s.io", "customresourcedefinitions", "customresourcedefinition", CRUD, ["crd", "crds"], API_EXT, [STATUS]),
    res!("apiregistration.k8s.io", "apiservices", "apiservice", CRUD, [], API_EXT, [STATUS]),
    // apps
    res!("apps", "controllerrevisions", "controllerrevision", CRUD, [], NONE, []),
    res!("apps", "daemonsets", "daemonset", CRUD, ["ds"], ALL, [STATUS]),
    res!("apps", "deployments", "deployment", CRUD, ["deploy"], ALL, [SCALE, STATUS]),
    res!("apps", "replicasets", "replicaset", CRUD, ["rs"], ALL, [SCALE, STATUS]),
    res!("apps", "statefulsets", "statefulset", CRUD, ["sts"], ALL, [SCALE, STATUS]),
    // authentication.k8s.io, authorization.k8s.io (virtual)
    res!("authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview", CREATE, [], NONE, []),
    res!("authentication.k8s.io", "tokenreviews", "tokenreview", CREATE, [], NONE, []),
    res!("authorization.k8s.io", "localsubjectaccessreviews", "localsubjectaccessreview", CREATE, [], NONE, []),
    res!("authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectaccessreview", CREATE, [], NONE, []),
    res!("authorization.k8s.io", "selfsubjectrulesreviews", "selfsubjectrulesreview", CREATE, [], NONE, []),
    res!("authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview", CREATE, [], NONE, []),
    // autoscaling, batch
    res!("autoscaling", "horizontalpodautoscalers", "horizontalpodautoscaler", CRUD, ["hpa"], ALL, [STATUS]),
    res!("batch", "cronjobs", "cronjob", CRUD, ["cj"], ALL, [STATUS]),
    res!("batch", "jobs", "job", CRUD, [], ALL, [STATUS]),
    // certificates.k8s.io, coordination.k8s.io, discovery.k8s.io, events.k8s.io
    res!("certificates.k8s.io", "certificatesigningrequests", "certificatesigningrequest", CRUD, ["csr"], NONE, [sub("approval", PARENT, GPU), STATUS]),
    res!("certificates.k8s.io", "clustertrustbundles", "clustertrustbundle", CRUD, [], NONE, []),
    res!("certificates.k8s.io", "podcertificaterequests", "podcertificaterequest", CRUD, [], NONE, [STATUS]),
    res!("coordination.k8s.io", "leases", "lease", CRUD, [], NONE, []),
    res!("coordination.k8s.io", "leasecandidates", "leasecandidate", CRUD, [], NONE, []),
    res!("discovery.k8s.io", "endpointslices", "endpointslice", CRUD, [], NONE, []),
    res!("events.k8s.io", "events", "event", CRUD, ["ev"], NONE, []),
    // flowcontrol.apiserver.k8s.io, internal.apiserver.k8s.io
    res!("flowcontrol.apiserver.k8s.io", "flowschemas", "flowschema", CRUD, [], NONE, [STATUS]),
    res!("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "prioritylevelconfiguration", CRUD, [], NONE, [STATUS]),
    res!("internal.apiserver.k8s.io", "storageversions", "storageversion", CRUD, [], NONE, [STATUS]),
    // networking.k8s.io, node.k8s.io, policy
    res!("networking.k8s.io", "ingressclasses", "ingressclass", CRUD, [], NONE, []),
    res!("networking.k8s.io", "ingresses", "ingress", CRUD, ["ing"], NONE, [STATUS]),
    res!("networking.k8s.io", "networkpolicies", "networkpolicy", CRUD, ["netpol"], NONE, []),
    res!("networking.k8s.io", "ipaddresses", "ipaddress", CRUD, ["ip"], NONE, []),
    res!("networking.k8s.io", "servicecidrs", "servicecidr", CRUD, [], NONE, [STATUS]),
    res!("node.k8s.io", "runtimeclasses", "runtimeclass", CRUD, [], NONE, []),
    res!("policy", "poddisruptionbudgets", "poddisruptionbudget", CRUD, ["pdb"], NONE, [STATUS]),
    // rbac.authorization.k8s.io
    res!("rbac.authorization.k8s.io", "clusterrolebindings", "clusterrolebinding", CRUD, [], NONE, []),
    res!("rbac.authorization.k8s.io", "clusterroles", "clusterrole", CRUD, [], NONE, []),
    res!("rbac.authorization.k8s.io", "rolebindings", "rolebinding", CRUD, [], NONE, []),
    res!("rbac.authorization.k8s.io", "roles", "role", CRUD, [], NONE, []),
    // resource.k8s.io
    res!("resource.k8s.io", "deviceclasses", "deviceclass", CRUD, [], NONE, []),
    res!("resource.k8s.io", "devicetaintrules", "devicetaintrule", CRUD, [], NONE, [STATUS]),
    res!("resource.k8s.io", "resourceclaims", "resourceclaim", CRUD, [], NONE, [STATUS]),
    res!("resource.k8s.io", "resourceclaimtemplates", "resourceclaimtemplate", CRUD, [], NONE, []),
    res!("resource.k8s.io", "resourcepoolstatusrequests", "resourcepoolstatusrequest", CRUD, [], NONE, [STATUS]),
    res!("resource.k8s.io", "resourceslices", "resourceslice", CRUD, [], NONE, []),
    // scheduling.k8s.io, storage.k8s.io, storagemigration.k8s.io
    res!("scheduling.k8s.io", "podgroups", "podgroup", CRUD, [], NONE, [STATUS]),
    res!("scheduling.k8s.io", "priorityclasses", "priorityclass", CRUD, ["pc"], NONE, []),
    res!("scheduling.k8s.io", "workloads", "workload", CRUD, [], NONE, []),
    res!("storage.k8s.io", "csidrivers", "csidriver", CRUD, [], NONE, []),
    res!("storage.k8s.io", "csinodes", "csinode", CRUD, [], NONE, []),
    res!("storage.k8s.io", "csistoragecapacities", "csistoragecapacity", CRUD, [], NONE, []),
    res!("storage.k8s.io", "storageclasses", "storageclass", CRUD, ["sc"], NONE, []),
    res!("storage.k8s.io", "volumeattachments", "volumeattachment", CRUD, [], NONE, [STATUS]),
    res!("storage.k8s.io", "volumeattributesclasses", "volumeattributesclass", CRUD, ["vac"], NONE, []),
    res!("storagemigration.k8s.io", "storageversionmigrations", "storageversionmigration", CRUD, [], NONE, [STATUS]),
];

/// Group order in `/apis` (the aggregator's `groupPriorityMinimum`, highest first) and each
/// version's `versionPriority` within its group (highest first). Ties between groups break on
/// the APIService name `<version>.<group>`; ties between versions on Kubernetes version order.
/// `apiregistration.k8s.io` is the aggregator's own group and is always listed first.
/// `(group, groupPriorityMinimum, [(version, versionPriority)])`.
pub(crate) type GroupPriority = (&'static str, i32, &'static [(&'static str, i32)]);

pub(crate) const GROUP_PRIORITIES: &[GroupPriority] = &[
    ("", 18000, &[("v1", 1)]),
    ("apps", 17800, &[("v1", 15)]),
    ("events.k8s.io", 17750, &[("v1", 15)]),
    ("authentication.k8s.io", 17700, &[("v1", 15)]),
    ("authorization.k8s.io", 17600, &[("v1", 15)]),
    ("autoscaling", 17500, &[("v2", 30), ("v1", 15)]),
    ("batch", 17400, &[("v1", 15)]),
    (
        "certificates.k8s.io",
        17300,
        &[("v1", 15), ("v1beta1", 9), ("v1alpha1", 1)],
    ),
    ("networking.k8s.io", 17200, &[("v1", 15), ("v1beta1", 9)]),
    ("policy", 17100, &[("v1", 15)]),
    ("rbac.authorization.k8s.io", 17000, &[("v1", 15)]),
    ("storage.k8s.io", 16800, &[("v1", 15), ("v1beta1", 9)]),
    (
        "admissionregistration.k8s.io",
        16700,
        &[("v1", 15), ("v1beta1", 12), ("v1alpha1", 9)],
    ),
    ("apiextensions.k8s.io", 16700, &[("v1", 15)]),
    ("scheduling.k8s.io", 16600, &[("v1", 15), ("v1alpha2", 2)]),
    (
        "coordination.k8s.io",
        16500,
        &[("v1", 15), ("v1beta1", 13), ("v1alpha2", 12)],
    ),
    ("node.k8s.io", 16300, &[("v1", 15)]),
    ("discovery.k8s.io", 16200, &[("v1", 15)]),
    (
        "resource.k8s.io",
        16200,
        &[("v1", 21), ("v1beta2", 15), ("v1beta1", 9), ("v1alpha3", 1)],
    ),
    ("flowcontrol.apiserver.k8s.io", 16100, &[("v1", 21)]),
    ("internal.apiserver.k8s.io", 16000, &[("v1alpha1", 9)]),
    ("storagemigration.k8s.io", 15800, &[("v1beta1", 9)]),
];

/// The group served by the aggregator itself; always first in `/apis`.
pub(crate) const AGGREGATOR_GROUP: &str = "apiregistration.k8s.io";

/// Resources stored under another group's resource (same key space, same storage version),
/// or in another version of their own group than the most preferred one (as upstream's etcd
/// holds them). `events.k8s.io` events are core events: both report the core `v1/Event`
/// storage version hash and share one key space. `((group, plural), (storage group, storage
/// version, storage kind))`.
pub(crate) type StorageAlias = (
    (&'static str, &'static str),
    (&'static str, &'static str, &'static str),
);

pub(crate) const STORAGE_ALIASES: &[StorageAlias] = &[
    (("events.k8s.io", "events"), ("", "v1", "Event")),
    (
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        (
            "admissionregistration.k8s.io",
            "v1beta1",
            "MutatingAdmissionPolicy",
        ),
    ),
    (
        (
            "admissionregistration.k8s.io",
            "mutatingadmissionpolicybindings",
        ),
        (
            "admissionregistration.k8s.io",
            "v1beta1",
            "MutatingAdmissionPolicyBinding",
        ),
    ),
    (
        ("resource.k8s.io", "devicetaintrules"),
        ("resource.k8s.io", "v1alpha3", "DeviceTaintRule"),
    ),
];

/// Resources that are never persisted: discovery gives them no `storageVersionHash`.
pub(crate) fn is_virtual(verbs: &[&str]) -> bool {
    !verbs.contains(&"list") || !verbs.contains(&"create")
}

/// Looks up the discovery data for one resource of one group.
pub(crate) fn resource_data(group: &str, plural: &str) -> Option<&'static ResourceData> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.plural == plural)
}
