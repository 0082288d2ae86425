//! Dynamic Resource Allocation (`resource.k8s.io/v1`) against the real binary, driven by
//! kubectl as a user would: invalid objects are refused with upstream's messages (compared
//! on a v1.36.2 kube-apiserver), valid ones round-trip with upstream's defaults, a claim's
//! spec is immutable and its status is written only through `/status`.

mod common;

use common::server;
use serde_json::{json, Value};

fn yaml_of(v: &Value) -> String {
    // kubectl reads JSON from stdin as well.
    serde_json::to_string(v).unwrap()
}

/// `kubectl create -f -` that must fail: its stderr.
fn create_fails(ns: &str, obj: &Value) -> String {
    let s = server();
    let out = s.kubectl_stdin(&["create", "-n", ns, "-f", "-"], &yaml_of(obj));
    assert!(
        !out.status.success(),
        "create unexpectedly succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).unwrap()
}

/// `kubectl create -f - -o json` that must succeed: the created object.
fn create_ok(ns: &str, obj: &Value) -> Value {
    let s = server();
    let out = s.kubectl_stdin(
        &["create", "-n", ns, "-f", "-", "-o", "json"],
        &yaml_of(obj),
    );
    assert!(
        out.status.success(),
        "create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn claim(name: &str, devices: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name}, "spec": {"devices": devices}})
}

#[test]
fn invalid_claims_are_refused_with_upstream_messages() {
    let ns = server().namespace("dra-invalid");
    let err = create_fails(
        &ns,
        &claim(
            "bad",
            json!({"requests": [
                {"name": "a"},
                {"name": "b", "exactly": {"deviceClassName": "gpu", "allocationMode": "All", "count": 2}},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "Gpu_"}]}],
                "constraints": [{"requests": ["zz"], "matchAttribute": "foo"}]}),
        ),
    );
    for line in [
        "The ResourceClaim \"bad\" is invalid: ",
        "* spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        "* spec.devices.requests[1].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
        "* spec.devices.requests[2].firstAvailable[0].deviceClassName: Invalid value: \"Gpu_\": a lowercase RFC 1123 subdomain",
        "* spec.devices.requests[2]: Duplicate value: \"b\"",
        "* spec.devices.constraints[0].requests[0]: Invalid value: \"zz\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
        "* spec.devices.constraints[0].matchAttribute: Invalid value: \"foo\": a fully qualified name must be a domain and a name separated by a slash",
    ] {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
    let many: Vec<Value> = (0..33)
        .map(|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "gpu"}}))
        .collect();
    let err = create_fails(&ns, &claim("many", json!({"requests": many})));
    assert!(
        err.contains(
            "The ResourceClaim \"many\" is invalid: spec.devices.requests: Too many: 33: must have at most 32 items"
        ),
        "{err}"
    );
}

/// Selectors are compiled in upstream's device environment, and admin access needs the
/// namespace's label: both answered as a v1.36.2 kube-apiserver answers (recorded there).
#[test]
fn selectors_compile_and_admin_access_needs_the_namespace_label() {
    let s = server();
    let ns = s.namespace("dra-admin");
    let claim_json = claim(
        "c",
        json!({"requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu"}},
            {"name": "b", "exactly": {"deviceClassName": "gpu", "adminAccess": true,
                                      "selectors": [{"cel": {"expression": "x"}}]}}]}),
    );
    let err = create_fails(&ns, &claim_json);
    assert_eq!(
        err.trim_end(),
        "The ResourceClaim \"c\" is invalid: \n\
         * spec.devices.requests[1].adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace\n\
         * spec.devices.requests[1].exactly.selectors[0].cel.expression: Invalid value: \"x\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x\n | ^"
    );
    let out = s.kubectl(&[
        "label",
        "namespace",
        &ns,
        "resource.kubernetes.io/admin-access=true",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut ok = claim_json.clone();
    ok["spec"]["devices"]["requests"][1]["exactly"]["selectors"] = json!([{"cel": {"expression": "device.attributes[\"gpu.example.com\"].model == \"a100\" && device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0"}}]);
    let created = create_ok(&ns, &ok);
    assert_eq!(
        created["spec"]["devices"]["requests"][1]["exactly"]["adminAccess"],
        json!(true)
    );

    let err = create_fails(
        &ns,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "dra-typed"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver"}},
                                       {"cel": {"expression": "device.driver == 1"}}]}}),
    );
    for line in [
        "* spec.selectors[0].cel.expression: Invalid value: \"device.driver\": must evaluate to bool or the unknown type, not string",
        "* spec.selectors[1].cel.expression: Invalid value: \"device.driver == 1\": compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(string, int)'\n | device.driver == 1\n | ..............^",
    ] {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
}

#[test]
fn invalid_slices_and_classes_are_refused() {
    let ns = server().namespace("dra-invalid-cluster");
    let err = create_fails(
        &ns,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "dra-bad-slice"},
                "spec": {"driver": "d.io", "pool": {"name": "p", "resourceSliceCount": 1},
                         "nodeName": "n1", "allNodes": true}}),
    );
    assert!(
        err.contains("spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"),
        "{err}"
    );
    let err = create_fails(
        &ns,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "dra-bad-class"},
                "spec": {"selectors": [{}], "extendedResourceName": "kubernetes.io/gpu"}}),
    );
    for line in [
        "* spec.selectors[0].cel: Required value",
        "* spec.extendedResourceName: Invalid value: \"kubernetes.io/gpu\": must be a valid extended resource name",
    ] {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
}

#[test]
fn valid_objects_round_trip_with_defaults() {
    let s = server();
    let ns = s.namespace("dra-valid");
    let class = create_ok(
        &ns,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "dra-gpu"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"d.io\""}}]}}),
    );
    assert_eq!(class["metadata"]["generation"], json!(1));

    let devices = json!({"requests": [
        {"name": "a", "exactly": {"deviceClassName": "dra-gpu", "tolerations": [{"key": "k", "value": "v"}]}},
        {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "dra-gpu", "allocationMode": "All"},
                                         {"name": "y", "deviceClassName": "dra-gpu"}]}]});
    let want = json!({"devices": {"requests": [
        {"name": "a", "exactly": {"deviceClassName": "dra-gpu", "allocationMode": "ExactCount", "count": 1,
                                   "tolerations": [{"key": "k", "operator": "Equal", "value": "v"}]}},
        {"name": "b", "firstAvailable": [
            {"name": "x", "deviceClassName": "dra-gpu", "allocationMode": "All"},
            {"name": "y", "deviceClassName": "dra-gpu", "allocationMode": "ExactCount", "count": 1}]}]}});
    let c = create_ok(&ns, &claim("c", devices.clone()));
    assert_eq!(c["spec"], want);
    assert_eq!(c["status"], json!({}));
    let got = s.json(&["get", "resourceclaim", "-n", &ns, "c"]);
    assert_eq!(got["spec"], want);

    let t = create_ok(
        &ns,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t"}, "spec": {"spec": {"devices": devices}}}),
    );
    assert_eq!(t["spec"], json!({"metadata": {}, "spec": want}));

    let slice = create_ok(
        &ns,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "dra-slice"},
                "spec": {"driver": "d.io", "pool": {"name": "p", "resourceSliceCount": 1},
                         "nodeName": "n1",
                         "devices": [{"name": "d0", "attributes": {"model": {"string": "m"}},
                                      "taints": [{"key": "k", "effect": "NoSchedule"}]}]}}),
    );
    assert_eq!(slice["metadata"]["generation"], json!(1));
    assert_eq!(slice["spec"]["pool"]["generation"], json!(0));
    let taint = &slice["spec"]["devices"][0]["taints"][0];
    assert!(
        taint["timeAdded"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{taint}"
    );

    // The driver of a slice may not change; its pool generation may (and bumps generation).
    let mut moved = slice.clone();
    moved["spec"]["driver"] = json!("e.io");
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &yaml_of(&moved));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.driver: Invalid value: \"e.io\": field is immutable"),
        "{err}"
    );
    let mut next = slice.clone();
    next["spec"]["pool"]["generation"] = json!(1);
    let out = s.kubectl_stdin(&["replace", "-f", "-", "-o", "json"], &yaml_of(&next));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replaced: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(replaced["metadata"]["generation"], json!(2));
}

#[test]
fn claim_spec_is_immutable_and_status_has_its_own_subresource() {
    let s = server();
    let ns = s.namespace("dra-status");
    let c = create_ok(
        &ns,
        &claim(
            "c",
            json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}}]}),
        ),
    );
    let mut changed = c.clone();
    changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &yaml_of(&changed));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"spec: Invalid value: {"Devices":{"Requests":[{"Name":"a","Exactly":{"DeviceClassName":"gpu","Selectors":null,"AllocationMode":"ExactCount","Count":2,"AdminAccess":null,"Tolerations":null,"Capacity":null},"FirstAvailable":null}],"Constraints":null,"Config":null}}: field is immutable"#),
        "{err}"
    );

    let path = format!("/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/c");
    // reservedFor without an allocation is refused on /status.
    let mut body = c.clone();
    body["status"] = json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]});
    let got = s.send_json("PUT", &format!("{path}/status"), &body);
    assert_eq!(got.status, 422, "{}", got.text());
    assert_eq!(
        got.json()["details"]["causes"],
        json!([{"reason": "FieldValueForbidden",
                "message": "Forbidden: may not be specified when `allocated` is not set",
                "field": "status.reservedFor"}])
    );
    // An allocation with a reservation is accepted.
    body["status"] = json!({
        "allocation": {"devices": {"results": [{"request": "a", "driver": "d.io", "pool": "p", "device": "d"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]});
    let got = s.send_json("PUT", &format!("{path}/status"), &body);
    assert_eq!(got.status, 200, "{}", got.text());
    let allocated = got.json();
    assert_eq!(allocated["status"]["reservedFor"][0]["uid"], json!("u1"));
    // A write of the main resource keeps the stored status.
    let mut main = allocated.clone();
    main["status"] = json!({});
    main["metadata"]["labels"] = json!({"x": "y"});
    let got = s.send_json("PUT", &path, &main);
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["status"], allocated["status"]);
    // Once allocated, the allocation may not change.
    let mut moved = got.json();
    moved["status"]["allocation"]["devices"]["results"][0]["device"] = json!("e");
    let got = s.send_json("PUT", &format!("{path}/status"), &moved);
    assert_eq!(got.status, 422, "{}", got.text());
    let msg = got.json()["message"].as_str().unwrap_or("").to_string();
    assert!(msg.ends_with(": field is immutable"), "{msg}");
    assert!(
        msg.contains("status.allocation: Invalid value: {\"Devices\""),
        "{msg}"
    );
}
