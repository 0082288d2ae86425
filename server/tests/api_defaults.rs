//! Create-time defaults of cluster-scoped API kinds (admission registration, storage,
//! scheduling) and a CSR's requester, through kubectl against the real binary: the answers
//! a v1.36.2 kube-apiserver gives for the same objects.

mod common;

use common::server;
use serde_json::json;

fn create(manifest: &serde_json::Value) -> serde_json::Value {
    let s = server();
    let out = s.kubectl_stdin(&["create", "-f", "-", "-o", "json"], &manifest.to_string());
    assert!(
        out.status.success(),
        "kubectl create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn webhook_configuration_is_defaulted() {
    let got = create(&json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "defaults-mwc"},
        "webhooks": [{
            "name": "m.example.com",
            "clientConfig": {"service": {"namespace": "default", "name": "svc"}},
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"]}]
        }]
    }));
    assert_eq!(
        got["webhooks"][0],
        json!({
            "name": "m.example.com",
            "clientConfig": {"service": {"namespace": "default", "name": "svc", "port": 443}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"], "scope": "*"}],
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "admissionReviewVersions": ["v1"],
            "reinvocationPolicy": "Never"
        })
    );
}

#[test]
fn storage_class_is_defaulted() {
    let got = create(&json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "defaults-sc"},
        "provisioner": "example.com/p"
    }));
    assert_eq!(got["reclaimPolicy"], "Delete");
    assert_eq!(got["volumeBindingMode"], "Immediate");
}

#[test]
fn priority_class_is_defaulted() {
    let got = create(&json!({
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "defaults-pc"},
        "value": 1000
    }));
    assert_eq!(got["preemptionPolicy"], "PreemptLowerPriority");
}

/// A CSR records who asked for it (the test server's admin token user), whatever its body
/// claimed.
#[test]
fn csr_records_its_requester() {
    let got = create(&json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "defaults-csr"},
        "spec": {
            "request": CSR_PEM_BASE64,
            "signerName": "example.com/signer",
            "usages": ["digital signature"],
            "username": "someone-else"
        }
    }));
    assert_eq!(got["spec"]["username"], "admin");
    assert_eq!(got["spec"]["uid"], "admin");
    assert_eq!(
        got["spec"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
}
/// A PKCS#10 request (CN=defs-api, P-256 key) as PEM, base64-encoded: made once with openssl.
const CSR_PEM_BASE64: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlITU1IVUNBUUF3RXpFUk1BOEdBMVVFQXd3SVpHVm1jeTFoY0drd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqTwpQUU1CQndOQ0FBUkVkaGxqcTNmWDR5empIdmExOGJKSEhCZkQ0QUJmSUJZN0NqUHFBQlhjcGRQRGYvenV1RDFhCmhYZXZVYXhXa3BVamdRbVFnL1U1d0M3Ykt3WGpWRkROb0FBd0NnWUlLb1pJemowRUF3SURSd0F3UkFJZ0w1R1UKRVdUekkxMi9HK2lYK0taK0VHOFplQlIyMTNieVJLVXE1SkFBMjNFQ0lBcFpLeDFmYllZb3V5T1V6SGEwbDBRYQpTcVVUZmJyU0pGQjIyRDNIMjZoTAotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";

/// Priority levels are validated as upstream's `ValidatePriorityLevelConfiguration`: queuing
/// is defaulted only when present, so a `Queue` level without it is refused, and only the
/// level named `exempt` may be `Exempt`.
#[test]
fn priority_level_rules_are_upstreams() {
    let s = server();
    let path = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
    let rows = [
        (
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}),
            json!({"reason": "FieldValueRequired",
                "message": "Required value: must not be empty if limited.limitResponse.type is Limited",
                "field": "spec.limited.limitResponse.queuing"}),
        ),
        (
            json!({"type": "Exempt"}),
            json!({"reason": "FieldValueInvalid",
                "message": "Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'",
                "field": "spec.type"}),
        ),
    ];
    for (spec, cause) in rows {
        let body = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": {"name": "rules-level"},
            "spec": spec});
        let got = s.send_json("POST", path, &body);
        assert_eq!(got.status, 422, "{}", got.text());
        assert_eq!(got.json()["details"]["causes"], json!([cause]), "{spec}");
    }
}
