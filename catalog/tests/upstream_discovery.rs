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
    // The resource-level message, as upstream's apiserver words it (GroupVersionResource
    // printed as Go prints it).
    assert_eq!(
        Catalog::emulating("storage.k8s.io/v1/volumeattributesclasses=true", at_1_33)
            .err()
            .unwrap(),
        "cannot enable resource storage.k8s.io/v1, Resource=volumeattributesclasses in runtime-config because it is introduced at 1.34 after the current version 1.33. Consider setting --runtime-config-emulation-forward-compatible=true"
    );
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

#[test]
fn forward_compatibility_flags() {
    let at = |m: &str, forward: bool, runtime_config: bool| {
        Emulation::parse(m, "")
            .unwrap()
            .forward_compatible(forward, runtime_config)
    };
    // Only while emulating an earlier release (upstream's messages).
    assert_eq!(
        at("1.36", true, false).unwrap_err(),
        "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"
    );
    assert_eq!(
        at("1.36", false, true).unwrap_err(),
        "ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"
    );
    assert!(at("1.36", true, true)
        .unwrap_err()
        .starts_with("[ServerRunOptions."));
    assert!(at("1.36", false, false).is_ok());

    // --runtime-config-emulation-forward-compatible: what runtime-config names is served,
    // what it does not name is not.
    let named = at("1.33", false, true).unwrap();
    let c = Catalog::emulating("resource.k8s.io/v1=true", named).unwrap();
    assert!(c
        .lookup("resource.k8s.io", "v1", "resourceclaims")
        .is_some());
    let c = Catalog::emulating("storage.k8s.io/v1/volumeattributesclasses=true", named).unwrap();
    assert!(c
        .lookup("storage.k8s.io", "v1", "volumeattributesclasses")
        .is_some());
    let c = Catalog::emulating("", named).unwrap();
    assert!(c
        .lookup("resource.k8s.io", "v1", "resourceclaims")
        .is_none());

    // --emulation-forward-compatible: a beta served at 1.33 brings its later versions.
    let forward = at("1.33", true, false).unwrap();
    let c = Catalog::emulating("resource.k8s.io/v1beta1=true", forward).unwrap();
    for v in ["v1beta1", "v1beta2", "v1"] {
        assert!(
            c.lookup("resource.k8s.io", v, "resourceclaims").is_some(),
            "{v}"
        );
    }
    // ... but not resources the lower version does not have, nor anything from an alpha.
    assert!(c
        .lookup("resource.k8s.io", "v1beta2", "devicetaintrules")
        .is_none());
    let c = Catalog::emulating("", forward).unwrap();
    assert!(c
        .lookup("resource.k8s.io", "v1", "resourceclaims")
        .is_none());
    // A later version switched off by name stays off.
    let c = Catalog::emulating(
        "resource.k8s.io/v1beta1=true,resource.k8s.io/v1=false",
        forward,
    )
    .unwrap();
    assert!(c
        .lookup("resource.k8s.io", "v1", "resourceclaims")
        .is_none());
    assert!(c
        .lookup("resource.k8s.io", "v1beta2", "resourceclaims")
        .is_some());
}
