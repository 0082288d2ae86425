//! Table tests of the Node authorizer over a small graph made from objects as the registry
//! serves them; the cases follow upstream's `TestNodeAuthorizer` (node_authorizer_test.go)
//! and `graph_test.go` for the behaviour, the reasons are upstream's text.

use super::graph::{BoundPod, Change, Graph, Kind, PodRef};
use super::objects::{change_from_event, change_from_object, Followed};
use super::*;
use serde_json::{json, Value};

fn put(g: &NodeGraph, what: Followed, obj: &Value) {
    let bytes = serde_json::to_vec(obj).unwrap();
    if let Some(c) = change_from_object(what, &bytes, false).unwrap() {
        g.graph.write().apply(c).unwrap();
    }
}

fn delete(g: &NodeGraph, what: Followed, obj: &Value) {
    let line = serde_json::to_vec(&json!({"type": "DELETED", "object": obj})).unwrap();
    if let Some(c) = change_from_event(what, &line).unwrap() {
        g.graph.write().apply(c).unwrap();
    }
}

/// Pod `ns/<name>` on `node` with `spec` merged in.
fn pod(name: &str, node: &str, spec: Value) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}});
    for (k, v) in spec.as_object().unwrap() {
        p["spec"][k] = v.clone();
    }
    p
}

/// The cluster of the tables: pods on n1 and n2, a PV bound to n1's claim, attachments and
/// slices of each node.
fn cluster() -> NodeGraph {
    let g = NodeGraph::new(1000);
    put(&g, Followed::Pods, &cluster_p1_spec());
    put(
        &g,
        Followed::Pods,
        &pod(
            "p2",
            "n2",
            json!({
        "serviceAccountName": "sa2",
        "volumes": [{"name": "s", "secret": {"secretName": "secret2"}},
                    {"name": "proj", "projected": {"sources": [{"configMap": {"name": "shared-cm"}}]}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "claim2"}}]}),
        ),
    );
    put(
        &g,
        Followed::Pods,
        &json!({"metadata": {"name": "mirror", "namespace": "ns",
        "annotations": {"kubernetes.io/config.mirror": "x"}},
        "spec": {"nodeName": "n1", "volumes": [{"name": "s", "secret": {"secretName": "mirror-secret"}}]}}),
    );
    put(
        &g,
        Followed::Pods,
        &json!({"metadata": {"name": "pending", "namespace": "ns"},
        "spec": {"volumes": [{"name": "s", "secret": {"secretName": "pending-secret"}}]}}),
    );
    put(
        &g,
        Followed::PersistentVolumes,
        &json!({"metadata": {"name": "pv1"}, "spec": {
        "claimRef": {"namespace": "ns", "name": "claim1"},
        "csi": {"driver": "d", "volumeHandle": "h",
                "nodeStageSecretRef": {"namespace": "ns", "name": "pv-stage-secret"},
                "controllerPublishSecretRef": {"namespace": "ns", "name": "pv-controller-secret"}}}}),
    );
    put(
        &g,
        Followed::PersistentVolumes,
        &json!({"metadata": {"name": "pv2"}, "spec": {
        "claimRef": {"namespace": "ns", "name": "claim2"},
        "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": "pv2-rbd-secret"}}}}),
    );
    put(
        &g,
        Followed::PersistentVolumes,
        &json!({"metadata": {"name": "pv-unbound"}, "spec": {
        "csi": {"driver": "d", "volumeHandle": "h", "nodePublishSecretRef": {"namespace": "ns", "name": "loose"}}}}),
    );
    put(
        &g,
        Followed::VolumeAttachments,
        &json!({"metadata": {"name": "va1"}, "spec": {"nodeName": "n1", "attacher": "a"}}),
    );
    put(
        &g,
        Followed::VolumeAttachments,
        &json!({"metadata": {"name": "va2"}, "spec": {"nodeName": "n2", "attacher": "a"}}),
    );
    put(
        &g,
        Followed::ResourceSlices,
        &json!({"metadata": {"name": "slice1"}, "spec": {"nodeName": "n1", "driver": "d"}}),
    );
    put(
        &g,
        Followed::ResourceSlices,
        &json!({"metadata": {"name": "slice-any"}, "spec": {"allNodes": true, "driver": "d"}}),
    );
    g
}

/// p1 as the resource claim controller leaves it: the template's claim named in the status.
fn merge_status(mut p: Value) -> Value {
    p["status"] = json!({"resourceClaimStatuses": [{"name": "tpl", "resourceClaimName": "claim-from-tpl"}],
                         "extendedResourceClaimStatus": {"resourceClaimName": "claim-extended", "requestMappings": []}});
    p
}

struct Case {
    user: &'static str,
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    sub: &'static str,
    ns: &'static str,
    name: &'static str,
    selector: Option<&'static str>,
    want: Result<(), &'static str>,
}

const fn case(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    sub: &'static str,
    ns: &'static str,
    name: &'static str,
    want: Result<(), &'static str>,
) -> Case {
    Case {
        user: "system:node:n1",
        verb,
        group,
        resource,
        sub,
        ns,
        name,
        selector: None,
        want,
    }
}

const NO_REL: Result<(), &str> = Err("no relationship found between node 'n1' and this object");
const OK: Result<(), &str> = Ok(());
const SILENT: Result<(), &str> = Err("");

fn decide(g: &NodeGraph, c: &Case) -> Verdict {
    let groups = vec![NODES_GROUP.to_owned(), "system:authenticated".to_owned()];
    let attrs = Attributes {
        user: c.user,
        groups: &groups,
        verb: c.verb,
        api_group: c.group,
        resource: c.resource,
        subresource: c.sub,
        namespace: c.ns,
        name: c.name,
        path: None,
    };
    authorize(g, &attrs, c.selector)
}

fn check(g: &NodeGraph, cases: &[Case]) {
    for c in cases {
        let want = match c.want {
            Ok(()) => Verdict::Allow,
            Err(r) => Verdict::NoOpinion(r.to_owned().into()),
        };
        assert_eq!(
            decide(g, c),
            want,
            "{} {} {}/{} {}/{} ({}) selector {:?}",
            c.user,
            c.verb,
            c.group,
            c.resource,
            c.ns,
            c.name,
            c.sub,
            c.selector
        );
    }
}

#[test]
fn objects_a_pod_on_the_node_references_are_readable() {
    let g = cluster();
    // The template's claim needs the status: put p1 again with it (refs change, re-added).
    put(&g, Followed::Pods, &merge_status(cluster_p1_spec()));
    check(
        &g,
        &[
            case("get", "", "secrets", "", "ns", "vol-secret", OK),
            case("get", "", "secrets", "", "ns", "env-secret", OK),
            case("get", "", "secrets", "", "ns", "pull1", OK),
            case("get", "", "secrets", "", "ns", "proj-secret", OK),
            case("get", "", "secrets", "", "ns", "csi-pod-secret", OK),
            case("list", "", "secrets", "", "ns", "vol-secret", OK),
            case("watch", "", "secrets", "", "ns", "vol-secret", OK),
            case("get", "", "configmaps", "", "ns", "env-cm", OK),
            case("get", "", "configmaps", "", "ns", "envfrom-cm", OK),
            case("get", "", "configmaps", "", "ns", "vol-cm", OK),
            case("get", "", "configmaps", "", "ns", "shared-cm", OK),
            case("get", "", "persistentvolumeclaims", "", "ns", "claim1", OK),
            case(
                "get",
                "",
                "persistentvolumeclaims",
                "",
                "ns",
                "p1-scratch",
                OK,
            ),
            case(
                "update",
                "",
                "persistentvolumeclaims",
                "status",
                "ns",
                "claim1",
                OK,
            ),
            case("get", "", "persistentvolumes", "", "", "pv1", OK),
            case("get", "", "secrets", "", "ns", "pv-stage-secret", OK),
            case(
                "get",
                "resource.k8s.io",
                "resourceclaims",
                "",
                "ns",
                "claim-gpu",
                OK,
            ),
            case(
                "get",
                "resource.k8s.io",
                "resourceclaims",
                "",
                "ns",
                "claim-from-tpl",
                OK,
            ),
            case(
                "get",
                "resource.k8s.io",
                "resourceclaims",
                "",
                "ns",
                "claim-extended",
                OK,
            ),
            case("get", "", "serviceaccounts", "", "ns", "sa1", OK),
            case("create", "", "serviceaccounts", "token", "ns", "sa1", OK),
            case(
                "get",
                "storage.k8s.io",
                "volumeattachments",
                "",
                "",
                "va1",
                OK,
            ),
            case("get", "", "pods", "", "ns", "p1", OK),
            case("get", "", "pods", "", "ns", "mirror", OK),
            case(
                "get",
                "resource.k8s.io",
                "resourceslices",
                "",
                "",
                "slice1",
                OK,
            ),
            case(
                "delete",
                "resource.k8s.io",
                "resourceslices",
                "",
                "",
                "slice1",
                OK,
            ),
        ],
    );
}

/// p1 again, with the same spec as in [`cluster`] (a status update that names a claim).
fn cluster_p1_spec() -> Value {
    pod(
        "p1",
        "n1",
        json!({
        "serviceAccountName": "sa1",
        "imagePullSecrets": [{"name": "pull1"}],
        "containers": [{"name": "c", "image": "i",
            "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}}],
            "envFrom": [{"configMapRef": {"name": "envfrom-cm"}}]}],
        "volumes": [
            {"name": "s", "secret": {"secretName": "vol-secret"}},
            {"name": "c", "configMap": {"name": "vol-cm"}},
            {"name": "proj", "projected": {"sources": [{"secret": {"name": "proj-secret"}},
                                                       {"configMap": {"name": "shared-cm"}}]}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "claim1"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "csi", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-pod-secret"}}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "claim-gpu"},
                           {"name": "tpl", "resourceClaimTemplateName": "t"}]}),
    )
}

#[test]
fn objects_of_other_nodes_and_unrelated_ones_are_refused_with_upstreams_reason() {
    let g = cluster();
    check(
        &g,
        &[
            case("get", "", "secrets", "", "ns", "secret2", NO_REL),
            case("get", "", "secrets", "", "ns", "pv2-rbd-secret", NO_REL),
            case("get", "", "secrets", "", "ns", "nothing", NO_REL),
            case("get", "", "secrets", "", "other", "vol-secret", NO_REL),
            // The template's claim is not named yet (no status): nothing relates it.
            case(
                "get",
                "resource.k8s.io",
                "resourceclaims",
                "",
                "ns",
                "claim-from-tpl",
                NO_REL,
            ),
            // What a mirror pod or an unbound pod names relates nothing; so do a PV without a
            // claim and the secrets a CSI controller uses.
            case("get", "", "secrets", "", "ns", "mirror-secret", NO_REL),
            case("get", "", "secrets", "", "ns", "pending-secret", NO_REL),
            case("get", "", "secrets", "", "ns", "loose", NO_REL),
            case(
                "get",
                "",
                "secrets",
                "",
                "ns",
                "pv-controller-secret",
                NO_REL,
            ),
            case(
                "get",
                "",
                "persistentvolumeclaims",
                "",
                "ns",
                "claim2",
                NO_REL,
            ),
            case("get", "", "persistentvolumes", "", "", "pv2", NO_REL),
            case("get", "", "persistentvolumes", "", "", "pv-unbound", NO_REL),
            case("get", "", "serviceaccounts", "", "ns", "sa2", NO_REL),
            case(
                "create",
                "",
                "serviceaccounts",
                "token",
                "ns",
                "sa2",
                NO_REL,
            ),
            case(
                "get",
                "storage.k8s.io",
                "volumeattachments",
                "",
                "",
                "va2",
                NO_REL,
            ),
            case("get", "", "pods", "", "ns", "p2", NO_REL),
            case("watch", "", "pods", "", "ns", "p2", NO_REL),
            case(
                "get",
                "resource.k8s.io",
                "resourceslices",
                "",
                "",
                "slice-any",
                NO_REL,
            ),
        ],
    );
    // A node nothing is bound to (upstream: no vertex for it) is refused the same way.
    let c = Case {
        user: "system:node:n9",
        ..case("get", "", "secrets", "", "ns", "vol-secret", OK)
    };
    assert_eq!(
        decide(&g, &c),
        Verdict::NoOpinion("no relationship found between node 'n9' and this object".into())
    );
}

#[test]
fn verbs_and_shapes_the_node_authorizer_does_not_allow() {
    let g = cluster();
    check(
        &g,
        &[
            case(
                "list",
                "",
                "secrets",
                "",
                "ns",
                "",
                Err("No Object name found"),
            ),
            case(
                "watch",
                "",
                "configmaps",
                "",
                "ns",
                "",
                Err("No Object name found"),
            ),
            case(
                "list",
                "",
                "secrets",
                "",
                "",
                "vol-secret",
                Err("can only read namespaced object of this type"),
            ),
            case(
                "create",
                "",
                "secrets",
                "",
                "ns",
                "",
                Err("can only read resources of this type"),
            ),
            case(
                "update",
                "",
                "configmaps",
                "",
                "ns",
                "vol-cm",
                Err("can only read resources of this type"),
            ),
            case(
                "get",
                "",
                "secrets",
                "x",
                "ns",
                "vol-secret",
                Err("cannot read subresource"),
            ),
            case(
                "list",
                "",
                "persistentvolumeclaims",
                "",
                "ns",
                "",
                Err("can only get individual resources of this type"),
            ),
            case(
                "get",
                "",
                "persistentvolumes",
                "x",
                "",
                "pv1",
                Err("cannot get subresource"),
            ),
            case(
                "get",
                "",
                "persistentvolumeclaims",
                "status",
                "ns",
                "claim1",
                Err("can only get/update/patch this type"),
            ),
            case(
                "delete",
                "storage.k8s.io",
                "volumeattachments",
                "",
                "",
                "va1",
                Err("can only get individual resources of this type"),
            ),
            case(
                "list",
                "resource.k8s.io",
                "resourceclaims",
                "",
                "ns",
                "",
                Err("can only get individual resources of this type"),
            ),
            case(
                "create",
                "",
                "serviceaccounts",
                "",
                "ns",
                "sa1",
                Err("can only create token subresource of serviceaccount"),
            ),
            case(
                "create",
                "",
                "serviceaccounts",
                "token",
                "ns",
                "",
                Err("can only create tokens for individual service accounts"),
            ),
            case(
                "list",
                "",
                "serviceaccounts",
                "",
                "ns",
                "",
                Err("can only create tokens for individual service accounts"),
            ),
            case(
                "get",
                "",
                "serviceaccounts",
                "token",
                "ns",
                "sa1",
                Err("can only create tokens for individual service accounts"),
            ),
            case(
                "get",
                "",
                "secrets",
                "",
                "ns",
                "",
                Err("No Object name found"),
            ),
        ],
    );
}

#[test]
fn nodes_leases_and_csinodes_are_decided_by_name() {
    let g = cluster();
    let lease_verbs = "can only get, create, update, patch, or delete a node lease";
    let lease_ns = r#"can only access leases in the "kube-node-lease" system namespace"#;
    let lease_name = "can only access node lease with the same name as the requesting node";
    let csi_name = "can only access CSINode with the same name as the requesting node";
    check(
        &g,
        &[
            case("get", "", "nodes", "", "", "n1", OK),
            case("watch", "", "nodes", "", "", "n1", OK),
            case(
                "get",
                "",
                "nodes",
                "",
                "",
                "n2",
                Err("node 'n1' cannot read 'n2', only its own Node object"),
            ),
            case(
                "list",
                "",
                "nodes",
                "",
                "",
                "",
                Err("node 'n1' cannot read all nodes, only its own Node object"),
            ),
            case("create", "", "nodes", "", "", "", OK),
            case("patch", "", "nodes", "", "", "n2", OK),
            case("update", "", "nodes", "status", "", "n1", OK),
            case("delete", "", "nodes", "", "", "n1", SILENT),
            case("get", "", "nodes", "proxy", "", "n1", SILENT),
            case(
                "get",
                "coordination.k8s.io",
                "leases",
                "",
                "kube-node-lease",
                "n1",
                OK,
            ),
            case(
                "create",
                "coordination.k8s.io",
                "leases",
                "",
                "kube-node-lease",
                "",
                OK,
            ),
            case(
                "update",
                "coordination.k8s.io",
                "leases",
                "",
                "kube-node-lease",
                "n2",
                Err(lease_name),
            ),
            case(
                "get",
                "coordination.k8s.io",
                "leases",
                "",
                "default",
                "n1",
                Err(lease_ns),
            ),
            case(
                "list",
                "coordination.k8s.io",
                "leases",
                "",
                "kube-node-lease",
                "",
                Err(lease_verbs),
            ),
            case("get", "storage.k8s.io", "csinodes", "", "", "n1", OK),
            case("create", "storage.k8s.io", "csinodes", "", "", "", OK),
            case(
                "delete",
                "storage.k8s.io",
                "csinodes",
                "",
                "",
                "n2",
                Err(csi_name),
            ),
            case(
                "list",
                "storage.k8s.io",
                "csinodes",
                "",
                "",
                "",
                Err("can only get, create, update, patch, or delete a CSINode"),
            ),
            case(
                "get",
                "storage.k8s.io",
                "csinodes",
                "status",
                "",
                "n1",
                Err("cannot authorize CSINode subresources"),
            ),
        ],
    );
}

#[test]
fn pods_and_slices_are_listed_with_a_selector_on_the_node() {
    let g = cluster();
    let with = |mut c: Case, s: &'static str| {
        c.selector = Some(s);
        c
    };
    let pods = "can only list/watch pods with spec.nodeName field selector";
    let slices = "can only list/watch/deletecollection resourceslices with nodeName field selector";
    check(&g, &[
        with(case("list", "", "pods", "", "", "", OK), "spec.nodeName=n1"),
        with(case("watch", "", "pods", "", "", "", OK), "metadata.namespace=ns,spec.nodeName==n1"),
        with(case("list", "", "pods", "", "", "", Err(pods)), "spec.nodeName=n2"),
        with(case("list", "", "pods", "", "", "", Err(pods)), "spec.nodeName!=n1"),
        with(case("list", "", "pods", "", "", "", Err(pods)), "spec.nodeName"),
        case("list", "", "pods", "", "", "", Err(pods)),
        case("list", "", "pods", "", "ns", "p1", OK),
        case("create", "", "pods", "", "ns", "", OK),
        case("delete", "", "pods", "", "ns", "p2", OK),
        case("patch", "", "pods", "status", "ns", "p2", OK),
        case("create", "", "pods", "eviction", "ns", "p2", OK),
        case("get", "", "pods", "status", "ns", "p1", SILENT),
        case("create", "", "pods", "proxy", "ns", "p1", SILENT),
        with(case("list", "resource.k8s.io", "resourceslices", "", "", "", OK), "spec.nodeName=n1"),
        with(case("deletecollection", "resource.k8s.io", "resourceslices", "", "", "", OK), "spec.nodeName=n1"),
        case("watch", "resource.k8s.io", "resourceslices", "", "", "", Err(slices)),
        case("create", "resource.k8s.io", "resourceslices", "", "", "", OK),
        case("get", "resource.k8s.io", "resourceslices", "status", "", "slice1", Err("cannot authorize ResourceSlice subresources")),
        case("impersonate", "resource.k8s.io", "resourceslices", "", "", "slice1",
             Err("only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection")),
        case("create", "certificates.k8s.io", "podcertificaterequests", "", "ns", "", SILENT),
    ]);
}

#[test]
fn everything_else_is_decided_by_the_system_node_rules() {
    let g = cluster();
    check(
        &g,
        &[
            case("get", "", "services", "", "ns", "s", OK),
            case("create", "", "events", "", "ns", "", OK),
            case("create", "events.k8s.io", "events", "", "ns", "", OK),
            case(
                "create",
                "certificates.k8s.io",
                "certificatesigningrequests",
                "",
                "",
                "",
                OK,
            ),
            case(
                "create",
                "authentication.k8s.io",
                "tokenreviews",
                "",
                "",
                "",
                OK,
            ),
            case("get", "node.k8s.io", "runtimeclasses", "", "", "r", OK),
            case("get", "", "endpoints", "", "ns", "e", OK),
            case("delete", "", "services", "", "ns", "s", SILENT),
            case("get", "apps", "deployments", "", "ns", "d", SILENT),
        ],
    );
    // A non-resource request: the node rules have no URLs.
    let groups = vec![NODES_GROUP.to_owned()];
    let attrs = Attributes::non_resource("system:node:n1", &groups, "get", "/healthz");
    assert_eq!(authorize(&g, &attrs, None), NO_OPINION);
}

#[test]
fn only_node_identities_get_an_opinion() {
    let g = cluster();
    let groups = |gs: &[&str]| gs.iter().map(|g| g.to_string()).collect::<Vec<_>>();
    let ask = |user: &str, gs: &[String]| {
        let attrs =
            Attributes::resource(user, gs, "get", "", "secrets", "ns").with_name("vol-secret");
        authorize(&g, &attrs, None)
    };
    assert_eq!(
        ask("system:node:n1", &groups(&["system:nodes"])),
        Verdict::Allow
    );
    // The name without the group, the group without the name, anyone else: no opinion, no
    // reason (the chain goes on to RBAC).
    assert_eq!(
        ask("system:node:n1", &groups(&["system:authenticated"])),
        NO_OPINION
    );
    assert_eq!(ask("carol", &groups(&["system:nodes"])), NO_OPINION);
    assert_eq!(ask("system:nodes", &groups(&["system:nodes"])), NO_OPINION);
    assert_eq!(
        ask("system:node:", &groups(&["system:nodes"])),
        Verdict::NoOpinion(r#"unknown node for user "system:node:""#.into())
    );
    assert_eq!(
        node_identity("system:node:a:b", &groups(&["system:nodes"])),
        Some("a:b")
    );
}

#[test]
fn relationships_follow_pods_volumes_and_attachments_as_they_change() {
    let g = cluster();
    let ask = |c: Case| decide(&g, &c);
    let secret2 = || Case {
        user: "system:node:n2",
        ..case("get", "", "secrets", "", "ns", "secret2", OK)
    };
    let shared_n2 = || Case {
        user: "system:node:n2",
        ..case("get", "", "configmaps", "", "ns", "shared-cm", OK)
    };
    assert_eq!(ask(secret2()), Verdict::Allow);
    // Deleting p2 takes away what only p2 related n2 to; the shared configmap goes from n2
    // and stays for n1.
    let p2 = pod(
        "p2",
        "n2",
        json!({"volumes": [{"name": "s", "secret": {"secretName": "secret2"}},
        {"name": "proj", "projected": {"sources": [{"configMap": {"name": "shared-cm"}}]}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "claim2"}}],
        "serviceAccountName": "sa2"}),
    );
    delete(&g, Followed::Pods, &p2);
    assert_ne!(ask(secret2()), Verdict::Allow);
    assert_ne!(ask(shared_n2()), Verdict::Allow);
    assert_eq!(
        ask(case("get", "", "configmaps", "", "ns", "shared-cm", OK)),
        Verdict::Allow
    );
    // A PV rebound to n1's claim brings its secrets to n1; unbound, they go.
    let rbd = |claim: Value| {
        json!({"metadata": {"name": "pv2"}, "spec": {"claimRef": claim,
        "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": "pv2-rbd-secret"}}}})
    };
    put(
        &g,
        Followed::PersistentVolumes,
        &rbd(json!({"namespace": "ns", "name": "claim1"})),
    );
    check(
        &g,
        &[
            case("get", "", "secrets", "", "ns", "pv2-rbd-secret", OK),
            case("get", "", "persistentvolumes", "", "", "pv2", OK),
        ],
    );
    put(&g, Followed::PersistentVolumes, &rbd(Value::Null));
    check(
        &g,
        &[case(
            "get",
            "",
            "secrets",
            "",
            "ns",
            "pv2-rbd-secret",
            NO_REL,
        )],
    );
    // An attachment moved to another node, then deleted.
    let va = |node: &str| json!({"metadata": {"name": "va1"}, "spec": {"nodeName": node}});
    put(&g, Followed::VolumeAttachments, &va("n2"));
    check(
        &g,
        &[case(
            "get",
            "storage.k8s.io",
            "volumeattachments",
            "",
            "",
            "va1",
            NO_REL,
        )],
    );
    put(&g, Followed::VolumeAttachments, &va("n1"));
    check(
        &g,
        &[case(
            "get",
            "storage.k8s.io",
            "volumeattachments",
            "",
            "",
            "va1",
            OK,
        )],
    );
    delete(&g, Followed::VolumeAttachments, &va("n1"));
    check(
        &g,
        &[case(
            "get",
            "storage.k8s.io",
            "volumeattachments",
            "",
            "",
            "va1",
            NO_REL,
        )],
    );
}

#[test]
fn the_graph_counts_pods_per_node_and_returns_to_empty() {
    let mut g = Graph::new(100);
    let bound = |node: &str, refs: &[(PodRef, &str)]| BoundPod {
        node: node.into(),
        refs: refs.iter().map(|(k, n)| (*k, n.to_string())).collect(),
    };
    let set = |g: &mut Graph, name: &str, b: Option<BoundPod>| {
        g.apply(Change::Pod {
            namespace: "ns".into(),
            name: name.into(),
            bound: b,
        })
    };
    let cm = Kind::Referenced(PodRef::ConfigMap);
    set(&mut g, "a", Some(bound("n1", &[(PodRef::ConfigMap, "c")]))).unwrap();
    set(
        &mut g,
        "b",
        Some(bound(
            "n1",
            &[(PodRef::Secret, "s"), (PodRef::ConfigMap, "c")],
        )),
    )
    .unwrap();
    assert_eq!((g.edges(), g.objects()), (5, 4));
    set(&mut g, "a", None).unwrap();
    assert!(g.related(cm, "ns", "c", "n1"), "b still names it");
    // The same pod again (a status update) changes nothing; moved references are replaced.
    set(
        &mut g,
        "b",
        Some(bound(
            "n1",
            &[(PodRef::Secret, "s"), (PodRef::ConfigMap, "c")],
        )),
    )
    .unwrap();
    assert_eq!(g.edges(), 3);
    set(&mut g, "b", Some(bound("n1", &[(PodRef::Secret, "s")]))).unwrap();
    assert!(!g.related(cm, "ns", "c", "n1"));
    set(&mut g, "b", None).unwrap();
    assert_eq!((g.edges(), g.objects()), (0, 0));
}

/// The bound: a pod whose edges would pass it is not stored (its node is refused what it
/// would relate), and what is stored stays as it was.
#[test]
fn a_full_graph_refuses_new_edges_and_keeps_what_it_has() {
    let mut g = Graph::new(3);
    let pod = |name: &str, refs: usize| Change::Pod {
        namespace: "ns".into(),
        name: name.into(),
        bound: Some(BoundPod {
            node: "n1".into(),
            refs: (0..refs)
                .map(|i| (PodRef::Secret, format!("s{i}")))
                .collect(),
        }),
    };
    g.apply(pod("a", 1)).unwrap();
    let full = g.apply(pod("b", 1)).unwrap_err();
    assert_eq!((full.edges, full.edges_max), (2, 3));
    assert!(!g.related(Kind::Pod, "ns", "b", "n1"));
    assert!(g.related(Kind::Referenced(PodRef::Secret), "ns", "s0", "n1"));
    g.apply(Change::Attachment {
        name: "va".into(),
        node: Some("n1".into()),
    })
    .unwrap();
    assert_eq!(g.edges(), 3);
}

#[test]
fn watch_lines_that_change_nothing_are_skipped() {
    let unbound = json!({"type": "MODIFIED", "object": {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}}});
    let line = serde_json::to_vec(&unbound).unwrap();
    assert_eq!(change_from_event(Followed::Pods, &line).unwrap(), None);
    let bookmark = br#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"},"spec":{"nodeName":""}}}"#;
    assert_eq!(change_from_event(Followed::Pods, bookmark).unwrap(), None);
    let error = br#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410}}"#;
    assert_eq!(
        change_from_event(Followed::PersistentVolumes, error).unwrap(),
        None
    );
    let deleted = br#"{"type":"DELETED","object":{"metadata":{"name":"p","namespace":"ns"},"spec":{"nodeName":"n1","volumes":null}}}"#;
    assert_eq!(
        change_from_event(Followed::Pods, deleted).unwrap(),
        Some(Change::Pod {
            namespace: "ns".into(),
            name: "p".into(),
            bound: None
        })
    );
    assert!(change_from_event(Followed::Pods, b"{\"nodeName\": [").is_err());
}

#[test]
fn the_node_rules_are_the_system_node_cluster_roles() {
    let rules = node_rules();
    assert!(rules.len() > 20, "{rules:?}");
    assert!(rules
        .iter()
        .any(|r| r.resources.iter().any(|x| x == "csidrivers")));
}

/// The cost of a decision, in the test profile: a non-node user's (the chain asks Node
/// first in `Node,RBAC`, so every request pays it) against RBAC's decision of the same
/// request over upstream's bootstrap policy (what that user pays anyway), and a node's
/// secret get on a graph of 30,000 pods on 1,000 nodes. Run with
/// `cargo test -p keel-server --lib nodeauthz::tests::decision_cost -- --ignored --nocapture`
/// (or under callgrind for instruction counts; `KEEL_BENCH_ITERS` sets the iterations,
/// `KEEL_BENCH_ONLY` runs only the cases whose label contains it).
#[test]
#[ignore]
fn decision_cost() {
    use std::hint::black_box;
    use std::time::Instant;
    let iters: u32 = std::env::var("KEEL_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let g = NodeGraph::new(crate::limits::NODE_GRAPH_EDGES_MAX);
    {
        let mut graph = g.graph.write();
        for i in 0..30_000u32 {
            let (node, ns) = (format!("node-{}", i % 1000), format!("ns-{}", i % 100));
            let mut refs = vec![
                (PodRef::Secret, format!("secret-{i}")),
                (PodRef::Secret, format!("secret-{i}-b")),
                (PodRef::Secret, "shared-pull".to_owned()),
                (PodRef::ConfigMap, "kube-root-ca.crt".to_owned()),
                (PodRef::ConfigMap, format!("cm-{i}")),
                (PodRef::PersistentVolumeClaim, format!("claim-{i}")),
                (PodRef::ServiceAccount, "default".to_owned()),
            ];
            refs.sort();
            let bound = Some(BoundPod { node, refs });
            graph
                .apply(Change::Pod {
                    namespace: ns,
                    name: format!("pod-{i}"),
                    bound,
                })
                .unwrap();
        }
        eprintln!(
            "graph: {} edges, {} objects",
            graph.edges(),
            graph.objects()
        );
    }
    let rbac = keel_rbac::bootstrap::policy();
    let carol_groups = vec!["system:authenticated".to_owned()];
    let node_groups = vec![NODES_GROUP.to_owned(), "system:authenticated".to_owned()];
    let get = |user, groups, ns, name| {
        Attributes::resource(user, groups, "get", "", "secrets", ns).with_name(name)
    };
    let carol = get("carol", &carol_groups, "ns-7", "secret-7");
    let own = get("system:node:node-7", &node_groups, "ns-7", "secret-7");
    let other = get("system:node:node-8", &node_groups, "ns-7", "secret-7");
    let shared = Attributes {
        resource: "configmaps",
        name: "kube-root-ca.crt",
        ..own
    };
    let only = std::env::var("KEEL_BENCH_ONLY").unwrap_or_default();
    let time = |label: &str, f: &dyn Fn() -> bool| {
        if !label.contains(only.as_str()) {
            return f64::NAN;
        }
        let start = Instant::now();
        let mut allowed = 0u32;
        for _ in 0..iters {
            allowed += u32::from(black_box(f()));
        }
        let ns = start.elapsed().as_nanos() as f64 / f64::from(iters);
        eprintln!("{label:<58} {ns:>8.1} ns/decision (allowed {allowed})");
        ns
    };
    let node = time("non-node user, Node mode (early return)", &|| {
        authorize(&g, black_box(&carol), None) == Verdict::Allow
    });
    let rbac_ns = time(
        "non-node user, RBAC over the bootstrap policy (baseline)",
        &|| rbac.allows(black_box(&carol)),
    );
    time("node, get of its pod's secret (allowed)", &|| {
        authorize(&g, black_box(&own), None) == Verdict::Allow
    });
    time(
        "node, get of another node's secret (refused, reason made)",
        &|| authorize(&g, black_box(&other), None) == Verdict::Allow,
    );
    time(
        "node, get of kube-root-ca.crt (30,000 pods name it)",
        &|| authorize(&g, black_box(&shared), None) == Verdict::Allow,
    );
    eprintln!(
        "Node's cost for a non-node user: {:.1} % of RBAC's",
        100.0 * node / rbac_ns
    );
}
