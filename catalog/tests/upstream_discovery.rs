//! keel's discovery documents against upstream's: the aggregated discovery (`/api`, `/apis`,
//! `apidiscovery.k8s.io/v2`) a Kubernetes v1.36.2 API server served, recorded with
//! `../shared/tools/upstream-kit` (see `upstream-v1.36.2/README.md`), compared as JSON values:
//! every group, version, resource, verb, short name, category, subresource and storage version
//! hash, in upstream's order.

use keel_catalog::{Catalog, Emulation};
use serde_json::Value;

fn recorded(name: &str) -> Value {
    let path = format!(
        "{}/tests/upstream-v1.36.2/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn keel(c: &Catalog, core: bool) -> Value {
    serde_json::from_slice(&c.aggregated(core, "v2")).unwrap()
}

/// Compares group by group so a failure names the first group that differs.
fn same(ours: &Value, theirs: &Value) {
    let names = |d: &Value| -> Vec<String> {
        d["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(names(ours), names(theirs), "groups and their order");
    for (a, b) in ours["items"]
        .as_array()
        .unwrap()
        .iter()
        .zip(theirs["items"].as_array().unwrap())
    {
        assert_eq!(a, b, "group {}", b["metadata"]["name"]);
    }
    assert_eq!(ours, theirs);
}

#[test]
fn default_discovery_is_upstreams() {
    let c = Catalog::new("").unwrap();
    same(&keel(&c, true), &recorded("default-agg-api"));
    same(&keel(&c, false), &recorded("default-agg-apis"));
}

#[test]
fn every_api_enabled_is_upstreams_with_every_api_and_feature_on() {
    // Upstream: `--runtime-config=api/all=true --feature-gates=AllAlpha=true,AllBeta=true`.
    let c = Catalog::new("api/all=true").unwrap();
    same(&keel(&c, false), &recorded("all-agg-apis"));
}

#[test]
fn emulating_1_33_is_upstreams() {
    // Upstream: `--emulated-version=1.33`.
    let c = Catalog::emulating("", Emulation::parse("1.33", "").unwrap()).unwrap();
    same(&keel(&c, false), &recorded("emulated-1.33-agg-apis"));
}

#[test]
fn emulation_refuses_naming_what_came_later() {
    let at_1_33 = Emulation::parse("1.33", "").unwrap();
    // Upstream's message, recorded from kube-apiserver v1.36.2.
    assert_eq!(
        Catalog::emulating("resource.k8s.io/v1=true", at_1_33).err().unwrap(),
        "cannot enable version resource.k8s.io/v1 in runtime-config because all the resources have been introduced after the current version 1.33. Consider setting --runtime-config-emulation-forward-compatible=true"
    );
    assert!(Catalog::emulating("storage.k8s.io/v1/volumeattributesclasses=true", at_1_33).is_err());
    // A group/version with older kinds serves those; wildcards just skip the newer ones.
    let storage = Catalog::emulating("storage.k8s.io/v1=true", at_1_33).unwrap();
    assert!(storage
        .lookup("storage.k8s.io", "v1", "storageclasses")
        .is_some());
    assert!(storage
        .lookup("storage.k8s.io", "v1", "volumeattributesclasses")
        .is_none());
    let all = Catalog::emulating("api/all=true", at_1_33).unwrap();
    assert!(all
        .lookup("resource.k8s.io", "v1beta1", "resourceclaims")
        .is_some());
    assert!(all
        .lookup("resource.k8s.io", "v1", "resourceclaims")
        .is_none());
    let at_1_34 = Emulation::parse("1.34", "").unwrap();
    let c = Catalog::emulating("resource.k8s.io/v1=true", at_1_34).unwrap();
    assert!(c
        .lookup("resource.k8s.io", "v1", "resourceclaims")
        .is_some());
}
