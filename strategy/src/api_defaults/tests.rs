//! Each case is an object as created on a v1.36.2 kube-apiserver and the object it answered
//! (server-owned metadata left out), compared as JSON text so member order counts too.

use super::*;
use crate::registry::strategy;

fn defaulted(group: &str, resource: &str, input: Value, ctx: &Ctx) -> Value {
    let s = strategy(group, resource);
    let mut obj = input;
    s.prepare_for_create(&mut obj, ctx);
    obj
}

fn admin() -> Ctx {
    Ctx::at_unix_seconds(0).with_requester(Some(Requester {
        name: "kubernetes-admin".into(),
        uid: "kubernetes-admin".into(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
    }))
}

#[test]
fn create_defaults_match_upstream() {
    let cases: Vec<(&str, &str, Value, Value)> = vec![
        (
            ADMISSION,
            "mutatingwebhookconfigurations",
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "m"},
                "webhooks": [{"name": "m.example.com", "clientConfig": {"url": "https://example.com/hook"},
                    "admissionReviewVersions": ["v1"], "sideEffects": "None",
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "m", "generation": 1},
                "webhooks": [{"name": "m.example.com", "clientConfig": {"url": "https://example.com/hook"},
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                    "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                    "sideEffects": "None", "timeoutSeconds": 10, "admissionReviewVersions": ["v1"],
                    "reinvocationPolicy": "Never"}]}),
        ),
        (
            ADMISSION,
            "validatingwebhookconfigurations",
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "v"},
                "webhooks": [{"name": "v.example.com", "clientConfig": {"service": {"namespace": "default", "name": "svc"}},
                    "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore", "timeoutSeconds": 3,
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "Namespaced"}]}]}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "v", "generation": 1},
                "webhooks": [{"name": "v.example.com", "clientConfig": {"service": {"namespace": "default", "name": "svc", "port": 443}},
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "Namespaced"}],
                    "failurePolicy": "Ignore", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                    "sideEffects": "None", "timeoutSeconds": 3, "admissionReviewVersions": ["v1"]}]}),
        ),
        (
            ADMISSION,
            "validatingadmissionpolicies",
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "p"},
                "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
                    "validations": [{"expression": "true"}]}}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "p", "generation": 1},
                "spec": {"matchConstraints": {"namespaceSelector": {}, "objectSelector": {},
                        "resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                        "matchPolicy": "Equivalent"},
                    "validations": [{"expression": "true"}], "failurePolicy": "Fail"},
                "status": {}}),
        ),
        (
            ADMISSION,
            "mutatingadmissionpolicies",
            json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
                "metadata": {"name": "p"},
                "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
                    "reinvocationPolicy": "Never",
                    "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}]}}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
                "metadata": {"name": "p", "generation": 1},
                "spec": {"matchConstraints": {"namespaceSelector": {}, "objectSelector": {},
                        "resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                        "matchPolicy": "Equivalent"},
                    "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}],
                    "failurePolicy": "Fail", "reinvocationPolicy": "Never"}}),
        ),
        (
            ADMISSION,
            "mutatingadmissionpolicybindings",
            json!({"apiVersion": "admissionregistration.k8s.io/v1alpha1", "kind": "MutatingAdmissionPolicyBinding",
                "metadata": {"name": "b"},
                "spec": {"policyName": "p", "paramRef": {"name": "x"}}}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1alpha1", "kind": "MutatingAdmissionPolicyBinding",
                "metadata": {"name": "b", "generation": 1},
                "spec": {"policyName": "p", "paramRef": {"name": "x", "parameterNotFoundAction": "Deny"}}}),
        ),
        (
            ADMISSION,
            "validatingadmissionpolicybindings",
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "b"},
                "spec": {"policyName": "p", "paramRef": {"name": "x"}, "validationActions": ["Deny"],
                    "matchResources": {"excludeResourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}}}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "b", "generation": 1},
                "spec": {"policyName": "p", "paramRef": {"name": "x"},
                    "matchResources": {"namespaceSelector": {}, "objectSelector": {},
                        "excludeResourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "*"}],
                        "matchPolicy": "Equivalent"},
                    "validationActions": ["Deny"]}}),
        ),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 1000}),
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc", "generation": 1},
                "value": 1000, "preemptionPolicy": "PreemptLowerPriority"}),
        ),
        (
            FLOWCONTROL,
            "prioritylevelconfigurations",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": {"name": "l"},
                "spec": {"type": "Limited", "limited": {"limitResponse": {"queuing": {"queues": 16}, "type": "Queue"}}}}),
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": {"name": "l", "generation": 1},
                "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
                    "limitResponse": {"type": "Queue", "queuing": {"queues": 16, "handSize": 8, "queueLengthLimit": 50}},
                    "lendablePercent": 0}},
                "status": {}}),
        ),
        (
            FLOWCONTROL,
            "flowschemas",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "f"},
                "spec": {"priorityLevelConfiguration": {"name": "l"}, "rules": []}}),
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "f", "generation": 1},
                "spec": {"priorityLevelConfiguration": {"name": "l"}, "matchingPrecedence": 1000, "rules": []},
                "status": {}}),
        ),
        (
            STORAGE,
            "storageclasses",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "example.com/p"}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"},
                "provisioner": "example.com/p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
        ),
        (
            STORAGE,
            "csidrivers",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d.example.com"}, "spec": {}}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d.example.com"},
                "spec": {"attachRequired": true, "podInfoOnMount": false, "volumeLifecycleModes": ["Persistent"],
                    "storageCapacity": false, "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": false,
                    "seLinuxMount": false}}),
        ),
        (
            STORAGE,
            "csinodes",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n"},
                "spec": {"drivers": [{"name": "d.example.com", "nodeID": "n1"}, {"name": "e.example.com", "nodeID": "n1", "topologyKeys": ["zone"]}]}}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n"},
                "spec": {"drivers": [{"name": "d.example.com", "nodeID": "n1", "topologyKeys": null},
                    {"name": "e.example.com", "nodeID": "n1", "topologyKeys": ["zone"]}]}}),
        ),
        // No defaults; upstream's StorageObjectInUseProtection admission adds the finalizer.
        (
            STORAGE,
            "volumeattributesclasses",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": {"name": "v"},
                "driverName": "d.example.com"}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
                "metadata": {"name": "v", "finalizers": ["kubernetes.io/vac-protection"]},
                "driverName": "d.example.com"}),
        ),
        (
            "resource.k8s.io",
            "resourcepoolstatusrequests",
            json!({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest", "metadata": {"name": "r"},
                "spec": {"driver": "d.example.com"}, "status": {"pools": []}}),
            json!({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest", "metadata": {"name": "r"},
                "spec": {"driver": "d.example.com", "limit": 100}}),
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "c"},
                "spec": {"request": "Zm9v", "username": "someone-else", "groups": ["x"], "extra": {"a": ["b"]},
                    "signerName": "example.com/s", "usages": ["digital signature"]}}),
            json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "c"},
                "spec": {"request": "Zm9v", "signerName": "example.com/s", "usages": ["digital signature"],
                    "username": "kubernetes-admin", "uid": "kubernetes-admin",
                    "groups": ["system:masters", "system:authenticated"]},
                "status": {}}),
        ),
    ];
    for (group, resource, input, want) in cases {
        let got = defaulted(group, resource, input, &admin());
        assert_eq!(got.to_string(), want.to_string(), "{group}/{resource}");
    }
}

#[test]
fn crd_defaults_names_and_conversion() {
    let mut obj = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "g.example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
            "versions": []}});
    apply(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &mut obj,
    );
    let want = json!({"group": "g.example.com",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "scope": "Namespaced", "versions": [], "conversion": {"strategy": "None"}});
    assert_eq!(obj["spec"].to_string(), want.to_string());

    let mut webhook = json!({"spec": {"conversion": {"strategy": "Webhook",
        "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}, "conversionReviewVersions": ["v1"]}}}});
    apply(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &mut webhook,
    );
    assert_eq!(
        webhook["spec"]["conversion"]["webhook"]["clientConfig"]["service"].to_string(),
        json!({"namespace": "n", "name": "s", "port": 443}).to_string()
    );
}

#[test]
fn csr_without_requester_records_nobody() {
    let mut obj = json!({"spec": {"request": "Zm9v", "username": "forged", "uid": "1"}});
    prepare_create(
        "certificates.k8s.io",
        "certificatesigningrequests",
        &mut obj,
        &Ctx::default(),
    );
    assert_eq!(obj["spec"], json!({"request": "Zm9v"}));
}

#[test]
fn defaults_keep_what_the_object_sets() {
    let mut pc = json!({"value": 1, "preemptionPolicy": "Never"});
    apply("scheduling.k8s.io", "priorityclasses", &mut pc);
    assert_eq!(pc["preemptionPolicy"], "Never");

    let mut driver =
        json!({"spec": {"attachRequired": false, "volumeLifecycleModes": ["Ephemeral"]}});
    apply(STORAGE, "csidrivers", &mut driver);
    assert_eq!(driver["spec"]["attachRequired"], false);
    assert_eq!(driver["spec"]["volumeLifecycleModes"], json!(["Ephemeral"]));

    let mut exempt = json!({"spec": {"type": "Exempt", "exempt": {}}});
    apply(FLOWCONTROL, "prioritylevelconfigurations", &mut exempt);
    assert_eq!(
        exempt["spec"]["exempt"],
        json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
    );
}

#[test]
fn v1_bindings_leave_param_ref_alone() {
    let mut b = json!({"apiVersion": "admissionregistration.k8s.io/v1beta1",
        "spec": {"policyName": "p", "paramRef": {"name": "x"}}});
    apply(ADMISSION, "mutatingadmissionpolicybindings", &mut b);
    assert_eq!(b["spec"]["paramRef"], json!({"name": "x"}));
}

/// Upstream answers a CSR update with the stored spec: the requester cannot be rewritten.
#[test]
fn csr_update_keeps_the_stored_spec() {
    let s = strategy("certificates.k8s.io", "certificatesigningrequests");
    let old = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "c", "resourceVersion": "5"},
        "spec": {"request": "Zm9v", "signerName": "example.com/s", "username": "kubernetes-admin"},
        "status": {}});
    let mut new = old.clone();
    new["spec"]["username"] = json!("forged");
    new["spec"]["groups"] = json!(["x"]);
    s.prepare_for_update(&mut new, &old, &admin());
    assert_eq!(new["spec"], old["spec"]);
}
