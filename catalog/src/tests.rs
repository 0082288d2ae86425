//! Catalog and discovery tests against what a default Kubernetes v1.36 server serves.

use serde_json::{json, Value};

use crate::builtin::builtin_types;
use crate::data::{resource_data, RESOURCES};
use crate::discovery::storage_version_hash;
use crate::Catalog;

fn default_catalog() -> Catalog {
    Catalog::new("").expect("default runtime config is valid")
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("documents are JSON")
}

#[test]
fn type_bindings_and_discovery_table_agree() {
    let types = builtin_types();
    for t in &types {
        assert!(
            resource_data(t.group, t.plural).is_some(),
            "{}/{} {} has no discovery data",
            t.group,
            t.plural,
            t.kind
        );
    }
    for d in RESOURCES {
        assert!(
            types
                .iter()
                .any(|t| t.group == d.group && t.plural == d.plural),
            "discovery data for {}/{} matches no type",
            d.group,
            d.plural
        );
        let mut sorted = d.verbs.to_vec();
        sorted.sort_unstable();
        assert_eq!(
            sorted, d.verbs,
            "verbs of {} are sorted like upstream",
            d.plural
        );
    }
}

#[test]
fn default_serves_exactly_v1_36_group_versions() {
    let served: Vec<String> = {
        let mut v: Vec<String> = default_catalog()
            .resources()
            .map(|r| r.api_version())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let want = [
        "admissionregistration.k8s.io/v1",
        "apiextensions.k8s.io/v1",
        "apiregistration.k8s.io/v1",
        "apps/v1",
        "authentication.k8s.io/v1",
        "authorization.k8s.io/v1",
        "autoscaling/v1",
        "autoscaling/v2",
        "batch/v1",
        "certificates.k8s.io/v1",
        "coordination.k8s.io/v1",
        "discovery.k8s.io/v1",
        "events.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1",
        "networking.k8s.io/v1",
        "node.k8s.io/v1",
        "policy/v1",
        "rbac.authorization.k8s.io/v1",
        "resource.k8s.io/v1",
        "scheduling.k8s.io/v1",
        "storage.k8s.io/v1",
        "v1",
    ];
    assert_eq!(served, want);
    assert_eq!(default_catalog().resources().count(), 68);
}

#[test]
fn group_list_order_and_preferred_versions() {
    let doc = parse(&default_catalog().api_group_list());
    assert_eq!(doc["kind"], "APIGroupList");
    assert_eq!(doc["apiVersion"], "v1");
    let names: Vec<&str> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "apiregistration.k8s.io",
            "apps",
            "events.k8s.io",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "certificates.k8s.io",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "storage.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "scheduling.k8s.io",
            "coordination.k8s.io",
            "node.k8s.io",
            "discovery.k8s.io",
            "resource.k8s.io",
            "flowcontrol.apiserver.k8s.io",
        ]
    );
    let autoscaling = &doc["groups"][5];
    assert_eq!(
        autoscaling,
        &json!({"name": "autoscaling",
            "versions": [{"groupVersion": "autoscaling/v2", "version": "v2"},
                         {"groupVersion": "autoscaling/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"}})
    );
}

#[test]
fn api_group_and_api_versions_documents() {
    let c = default_catalog();
    let apps = parse(&c.api_group("apps").unwrap());
    assert_eq!(
        apps,
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": "apps",
            "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}})
    );
    assert!(c.api_group("extensions").is_none());
    assert!(c.api_group("").is_none());
    let api = parse(&c.with_server_address("10.0.0.1:6443").api_versions());
    assert_eq!(
        api,
        json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]})
    );
}

#[test]
fn storage_version_hashes_match_upstream() {
    // Values a v1.32 server reports (upstream's storage version hash test data).
    let cases = [
        ("", "v1", "pods", "xPOwRZ+Yhw8="),
        ("", "v1", "configmaps", "qFsyl6wFWjQ="),
        ("", "v1", "services", "0/CO1lhkEBI="),
        ("", "v1", "nodes", "XwShjMxG9Fs="),
        (
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            "qwQve8ut294=",
        ),
        (
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "qwQve8ut294=",
        ),
        ("batch", "v1", "cronjobs", "sd5LIXh4Fjs="),
        ("apps", "v1", "deployments", "8aSe+NMegvE="),
        ("events.k8s.io", "v1", "events", "r2yiGXH7wu8="),
        ("coordination.k8s.io", "v1", "leases", "gqkMMb/YqFM="),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
            "6OxvlMmQ6is=",
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "prioritylevelconfigurations",
            "Kir5PVfvNeI=",
        ),
    ];
    let c = default_catalog();
    for (g, v, plural, want) in cases {
        let list = parse(&c.resource_list(g, v).unwrap());
        let entry = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == plural)
            .unwrap();
        assert_eq!(entry["storageVersionHash"], want, "{g}/{v}/{plural}");
    }
    assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
}

#[test]
fn core_resource_list_shape() {
    let list = parse(&default_catalog().resource_list("", "v1").unwrap());
    assert_eq!(list["kind"], "APIResourceList");
    assert_eq!(list["groupVersion"], "v1");
    assert!(
        list.get("apiVersion").is_none(),
        "legacy /api/v1 has no apiVersion"
    );
    let find = |name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        find("pods"),
        json!({"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["po"], "categories": ["all"], "storageVersionHash": "xPOwRZ+Yhw8="})
    );
    assert_eq!(
        find("pods/eviction"),
        json!({"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy",
            "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    );
    assert_eq!(
        find("bindings"),
        json!({"name": "bindings", "singularName": "binding", "namespaced": true, "kind": "Binding", "verbs": ["create"]})
    );
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "resources are listed in path order");
    let apps = parse(&default_catalog().resource_list("apps", "v1").unwrap());
    assert_eq!(apps["apiVersion"], "v1");
    assert!(default_catalog()
        .resource_list("batch", "v1beta1")
        .is_none());
}

#[test]
fn aggregated_discovery_shape() {
    let c = default_catalog();
    let core = parse(&c.aggregated(true, "v2"));
    assert_eq!(core["kind"], "APIGroupDiscoveryList");
    assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(core["metadata"], json!({}));
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert_eq!(core["items"][0]["metadata"], json!({}));
    let v1 = &core["items"][0]["versions"][0];
    assert_eq!(v1["version"], "v1");
    assert_eq!(v1["freshness"], "Current");
    let rc = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "replicationcontrollers")
        .unwrap();
    assert_eq!(
        rc,
        &json!({"resource": "replicationcontrollers",
            "responseKind": {"group": "", "version": "", "kind": "ReplicationController"},
            "scope": "Namespaced", "singularResource": "replicationcontroller",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["rc"], "categories": ["all"],
            "subresources": [
                {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                 "verbs": ["get", "patch", "update"]},
                {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "ReplicationController"},
                 "verbs": ["get", "patch", "update"]}]})
    );
    let apis = parse(&c.aggregated(false, "v2beta1"));
    assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    let items = apis["items"].as_array().unwrap();
    assert_eq!(
        items[0]["metadata"],
        json!({"name": "apiregistration.k8s.io"})
    );
    assert_eq!(items.len(), 20);
    let autoscaling: Vec<&str> = items[5]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(autoscaling, ["v2", "v1"]);
}

#[test]
fn lookups() {
    let c = default_catalog();
    // (group, version, plural, kind, namespaced, storage prefix)
    let cases = [
        ("", "v1", "pods", "Pod", true, "/core/pods/"),
        (
            "",
            "v1",
            "namespaces",
            "Namespace",
            false,
            "/core/namespaces/",
        ),
        (
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            "/apps/deployments/",
        ),
        (
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
            "/autoscaling/horizontalpodautoscalers/",
        ),
        (
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
            "/autoscaling/horizontalpodautoscalers/",
        ),
        (
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            "/apiextensions.k8s.io/customresourcedefinitions/",
        ),
        (
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            "APIService",
            false,
            "/apiregistration.k8s.io/apiservices/",
        ),
        (
            "authorization.k8s.io",
            "v1",
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
            "/authorization.k8s.io/localsubjectaccessreviews/",
        ),
    ];
    for (g, v, plural, kind, namespaced, prefix) in cases {
        let r = c
            .lookup(g, v, plural)
            .unwrap_or_else(|| panic!("{g}/{v}/{plural}"));
        assert_eq!((r.kind, r.namespaced), (kind, namespaced));
        assert_eq!(c.by_kind(g, v, kind), Some(r));
        assert_eq!(c.storage_prefix(r), prefix);
    }
    assert!(c.lookup("", "v1", "pod").is_none());
    assert!(c
        .lookup("resource.k8s.io", "v1beta1", "resourceclaims")
        .is_none());
    let deploy = c.lookup("apps", "v1", "deployments").unwrap();
    let scale = deploy.subresource("scale").unwrap();
    assert_eq!(
        (scale.group, scale.version, scale.kind),
        ("autoscaling", "v1", "Scale")
    );
    assert_eq!(deploy.subresource("status").unwrap().kind, "Deployment");
    assert!(deploy.supports("deletecollection"));
}

#[test]
fn runtime_config_changes_what_is_served() {
    let no_batch = Catalog::new("batch/v1=false").unwrap();
    assert!(no_batch.lookup("batch", "v1", "jobs").is_none());
    assert!(no_batch.api_group("batch").is_none());
    assert!(!parse(&no_batch.api_group_list())
        .to_string()
        .contains("\"batch\""));

    let beta = Catalog::new("api/beta=true").unwrap();
    let resource = parse(&beta.api_group("resource.k8s.io").unwrap());
    assert_eq!(resource["preferredVersion"]["version"], "v1");
    assert_eq!(resource["versions"][1]["version"], "v1beta2");
    assert!(beta
        .lookup("resource.k8s.io", "v1beta2", "devicetaintrules")
        .is_some());
    assert!(beta
        .lookup("resource.k8s.io", "v1alpha3", "devicetaintrules")
        .is_none());
    let storage = parse(&beta.api_group("storage.k8s.io").unwrap());
    assert_eq!(storage["versions"][1]["version"], "v1beta1");
    assert_eq!(storage["preferredVersion"]["version"], "v1");

    let only_jobs = Catalog::new("api/all=false,batch/v1/jobs=true").unwrap();
    let names: Vec<&str> = only_jobs.resources().map(|r| r.plural).collect();
    assert_eq!(names, ["jobs"]);
    assert!(parse(&only_jobs.aggregated(true, "v2"))["items"]
        .as_array()
        .unwrap()
        .is_empty());

    assert!(Catalog::new("batch/v7=true").is_err());
    assert!(Catalog::new("apps/v1=perhaps").is_err());
}
