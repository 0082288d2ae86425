//! The embedded upstream definitions load and hold what the server needs.

use keel_schema::{schemas, Gvk};
use serde_json::Value;

fn gvk<'a>(group: &'a str, version: &'a str, kind: &'a str) -> Gvk<'a> {
    Gvk {
        group,
        version,
        kind,
    }
}

#[test]
fn holds_the_built_in_kinds() {
    let s = schemas();
    assert_eq!(s.kubernetes_version(), "v1.36.0");
    assert!(s.definition_count() > 600, "{}", s.definition_count());
    let cases = [
        ("", "v1", "Pod", "io.k8s.api.core.v1.Pod"),
        ("", "v1", "ConfigMap", "io.k8s.api.core.v1.ConfigMap"),
        ("", "v1", "Namespace", "io.k8s.api.core.v1.Namespace"),
        ("apps", "v1", "Deployment", "io.k8s.api.apps.v1.Deployment"),
        (
            "apps",
            "v1",
            "DeploymentList",
            "io.k8s.api.apps.v1.DeploymentList",
        ),
        ("batch", "v1", "CronJob", "io.k8s.api.batch.v1.CronJob"),
        (
            "autoscaling",
            "v1",
            "Scale",
            "io.k8s.api.autoscaling.v1.Scale",
        ),
        (
            "coordination.k8s.io",
            "v1",
            "Lease",
            "io.k8s.api.coordination.v1.Lease",
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "io.k8s.api.rbac.v1.ClusterRole",
        ),
        (
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        ),
        (
            "apps",
            "v1",
            "DeleteOptions",
            "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        ),
    ];
    for (g, v, k, def) in cases {
        assert!(s.knows(&gvk(g, v, k)), "{g}/{v} {k}");
        assert_eq!(s.definition_name(&gvk(g, v, k)), Some(def));
        assert!(s.definition(def).is_some(), "{def}");
    }
    for (g, v, k) in [
        ("", "v1", "Deployment"),
        ("apps", "v2", "Deployment"),
        ("", "v1", "Nope"),
    ] {
        assert!(!s.knows(&gvk(g, v, k)), "{g}/{v} {k}");
    }
}

/// Walk every schema node of every definition.
fn nodes<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    if let Value::Object(map) = v {
        out.push(v);
        for (key, child) in map {
            match key.as_str() {
                "properties" => child
                    .as_object()
                    .unwrap()
                    .values()
                    .for_each(|c| nodes(c, out)),
                "items" | "additionalProperties" => nodes(child, out),
                _ => {}
            }
        }
    }
}

#[test]
fn definitions_are_in_upstream_openapi_v2_form() {
    let s = schemas();
    let pod = s.definition("io.k8s.api.core.v1.Pod").unwrap();
    let mut all = Vec::new();
    nodes(pod, &mut all);
    for name in [
        "io.k8s.api.core.v1.PodSpec",
        "io.k8s.api.core.v1.Container",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    ] {
        nodes(s.definition(name).unwrap(), &mut all);
    }
    for node in &all {
        if let Some(t) = node.get("type") {
            assert!(t.is_string(), "nullable type left: {node}");
        }
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            assert!(r.starts_with("#/definitions/"), "{r}");
        }
        assert!(
            node.get("enum").is_none() && node.get("oneOf").is_none(),
            "{node}"
        );
    }
    let int_or_string = s
        .definition("io.k8s.apimachinery.pkg.util.intstr.IntOrString")
        .unwrap();
    assert_eq!(int_or_string["type"], "string");
    assert_eq!(int_or_string["format"], "int-or-string");
    assert_eq!(
        s.definition("io.k8s.apimachinery.pkg.api.resource.Quantity")
            .unwrap()["type"],
        "string"
    );
    assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
    assert_eq!(pod["properties"]["kind"]["type"], "string");
    let containers =
        &s.definition("io.k8s.api.core.v1.PodSpec").unwrap()["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(
        containers["items"]["$ref"],
        "#/definitions/io.k8s.api.core.v1.Container"
    );
}
