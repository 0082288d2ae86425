//! Strategic-merge list strategies come from the published patch metadata.

use keel_schema::{schemas, Gvk, ListStrategy};

#[test]
fn list_strategies_of_pod_and_deployment_fields() {
    let pod = Gvk {
        group: "",
        version: "v1",
        kind: "Pod",
    };
    let deploy = Gvk {
        group: "apps",
        version: "v1",
        kind: "Deployment",
    };
    let key = |k: &str| ListStrategy::MergeByKey(k.to_owned());
    let cases: Vec<(Gvk, &[&str], ListStrategy)> = vec![
        (pod, &["spec", "containers"], key("name")),
        (pod, &["spec", "containers", "ports"], key("containerPort")),
        (pod, &["spec", "containers", "env"], key("name")),
        (
            pod,
            &["spec", "containers", "volumeMounts"],
            key("mountPath"),
        ),
        (pod, &["spec", "volumes"], key("name")),
        (pod, &["spec", "tolerations"], ListStrategy::Atomic),
        (pod, &["spec", "containers", "args"], ListStrategy::Atomic),
        (
            pod,
            &["metadata", "finalizers"],
            ListStrategy::MergePrimitives,
        ),
        (pod, &["metadata", "ownerReferences"], key("uid")),
        (pod, &["spec"], ListStrategy::Atomic),
        (pod, &["spec", "nope"], ListStrategy::Atomic),
        (pod, &[], ListStrategy::Atomic),
        (
            deploy,
            &["spec", "template", "spec", "containers"],
            key("name"),
        ),
        (
            deploy,
            &["spec", "template", "spec", "containers", "env"],
            key("name"),
        ),
    ];
    for (gvk, path, want) in cases {
        assert_eq!(
            schemas().list_strategy(&gvk, path),
            want,
            "{} {path:?}",
            gvk.kind
        );
    }
}

#[test]
fn retain_keys_fields() {
    let pod = Gvk {
        group: "",
        version: "v1",
        kind: "Pod",
    };
    let deploy = Gvk {
        group: "apps",
        version: "v1",
        kind: "Deployment",
    };
    assert!(schemas().retain_keys(&pod, &["spec", "volumes"]));
    assert!(schemas().retain_keys(&deploy, &["spec", "strategy"]));
    assert!(!schemas().retain_keys(&pod, &["spec", "containers"]));
    assert!(!schemas().retain_keys(&pod, &["spec", "nope"]));
}
