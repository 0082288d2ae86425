//! Table tests of the DRA rules through the public strategy API. Every expected text is what
//! a v1.36.2 kube-apiserver answered for the same object (`<field>: <message>`).

use crate::registry::strategy;
use crate::Ctx;
use keel_api::status::field::error_text;
use serde_json::{json, Value};

const G: &str = "resource.k8s.io";
const DNS_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const REF: &str = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

fn ctx() -> Ctx {
    Ctx::at_unix_seconds(1_767_225_600) // 2026-01-01T00:00:00Z
}

fn texts(causes: Vec<keel_api::status::StatusCause>) -> Vec<String> {
    causes.iter().map(error_text).collect()
}

/// Prepares and validates a create of `obj` as the server does.
fn create(resource: &str, mut obj: Value) -> (Value, Vec<String>) {
    let s = strategy(G, resource);
    s.prepare_for_create(&mut obj, &ctx());
    let errs = texts(s.validate_create(&obj));
    (obj, errs)
}

fn claim(devices: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}})
}

fn slice(spec: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": "s"}, "spec": spec})
}

fn assert_rows(rows: Vec<(&str, Value, Vec<String>)>) {
    for (resource, obj, want) in rows {
        let (_, got) = create(resource, obj.clone());
        assert_eq!(got, want, "{resource}: {obj}");
    }
}

#[test]
fn requests_are_defaulted_in_go_field_order() {
    let (obj, errs) = create(
        "resourceclaims",
        claim(json!({"requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu", "count": 0,
                                       "tolerations": [{"key": "k", "value": "v"}]}},
            {"name": "b", "firstAvailable": [
                {"name": "x", "deviceClassName": "gpu"},
                {"name": "y", "deviceClassName": "gpu", "allocationMode": "All"}]}]})),
    );
    assert!(errs.is_empty(), "{errs:?}");
    let text = serde_json::to_string(&obj["spec"]).unwrap();
    assert_eq!(
        text,
        r#"{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"gpu","allocationMode":"ExactCount","count":1,"tolerations":[{"key":"k","operator":"Equal","value":"v"}]}},{"name":"b","firstAvailable":[{"name":"x","deviceClassName":"gpu","allocationMode":"ExactCount","count":1},{"name":"y","deviceClassName":"gpu","allocationMode":"All"}]}]}}"#
    );
    assert_eq!(obj["status"], json!({}));
    assert!(obj["metadata"].get("generation").is_none());
}

#[test]
fn empty_specs_print_as_go_structs() {
    let (c, _) = create("resourceclaims", claim(json!({})));
    assert_eq!(c["spec"], json!({"devices": {"requests": null}}));
    let t = json!({"metadata": {"name": "t", "namespace": "ns"}, "spec": {"spec": {}}});
    let (t, errs) = create("resourceclaimtemplates", t);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        serde_json::to_string(&t["spec"]).unwrap(),
        r#"{"metadata":{},"spec":{"devices":{"requests":null}}}"#
    );
    let (s, _) = create(
        "resourceslices",
        slice(
            json!({"driver": "d.io", "pool": {"name": "p", "resourceSliceCount": 1},
                     "allNodes": true}),
        ),
    );
    assert_eq!(
        serde_json::to_string(&s["spec"]["pool"]).unwrap(),
        r#"{"name":"p","generation":0,"resourceSliceCount":1}"#
    );
    assert_eq!(s["metadata"]["generation"], json!(1));
}

#[test]
fn claim_request_rules() {
    let many: Vec<Value> = (0..33)
        .map(|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "gpu"}}))
        .collect();
    let long = "x".repeat(10241);
    assert_rows(vec![
        (
            "resourceclaims",
            claim(json!({"requests": [
                {"name": "A_"},
                {"name": "b", "exactly": {"deviceClassName": "Gpu_"},
                 "firstAvailable": [{"name": "x", "deviceClassName": "gpu"}]},
                {"name": "c", "exactly": {"deviceClassName": "gpu", "allocationMode": "All", "count": 3}},
                {"name": "d", "exactly": {"deviceClassName": "gpu", "count": -1}},
                {"name": "d", "firstAvailable": [{"name": "x", "deviceClassName": ""},
                                                 {"name": "x", "deviceClassName": "gpu"}]}]})),
            vec![
                format!("spec.devices.requests[0].name: Invalid value: \"A_\": {DNS_LABEL}"),
                "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required".into(),
                "spec.devices.requests[1]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set".into(),
                "spec.devices.requests[2].exactly.count: Invalid value: 3: must not be specified when allocationMode is 'All'".into(),
                "spec.devices.requests[3].exactly.count: Invalid value: -1: must be greater than zero".into(),
                "spec.devices.requests[4].firstAvailable[0].deviceClassName: Required value".into(),
                "spec.devices.requests[4].firstAvailable[1]: Duplicate value: \"x\"".into(),
                "spec.devices.requests[4]: Duplicate value: \"d\"".into(),
            ],
        ),
        (
            "resourceclaims",
            claim(json!({"requests": [{"name": "", "exactly": {"deviceClassName": "gpu",
                "allocationMode": "Foo",
                "tolerations": [{"operator": "Foo", "effect": "Bad", "key": "bad key"},
                                {"operator": "Exists", "value": "v"}]}}]})),
            vec![
                format!("spec.devices.requests[0].name: Invalid value: \"\": {DNS_LABEL}"),
                "spec.devices.requests[0].exactly.allocationMode: Unsupported value: \"Foo\": supported values: \"All\", \"ExactCount\"".into(),
                "spec.devices.requests[0].exactly.tolerations[0].key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into(),
                "spec.devices.requests[0].exactly.tolerations[0].operator: Unsupported value: \"Foo\": supported values: \"Equal\", \"Exists\"".into(),
                "spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: \"Bad\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"".into(),
                "spec.devices.requests[0].exactly.tolerations[1].value: Invalid value: \"v\": must be empty for operator `Exists`".into(),
            ],
        ),
        (
            "resourceclaims",
            claim(json!({"requests": many})),
            vec!["spec.devices.requests: Too many: 33: must have at most 32 items".into()],
        ),
        (
            "resourceclaims",
            claim(json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu",
                "selectors": [{"cel": {"expression": long}}, {}, {"cel": {"expression": ""}}]}}]})),
            vec![
                "spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes".into(),
                "spec.devices.requests[0].exactly.selectors[1].cel: Required value".into(),
                "spec.devices.requests[0].exactly.selectors[2].cel.expression: Invalid value: \"\": compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}".into(),
            ],
        ),
        (
            "resourceclaims",
            claim(json!({"requests": [{"name": "b", "firstAvailable":
                (0..9).map(|i| json!({"name": format!("s{i}"), "deviceClassName": "g"})).collect::<Vec<_>>()}]})),
            vec!["spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items".into()],
        ),
    ]);
}

#[test]
fn claim_constraint_and_config_rules() {
    assert_rows(vec![(
        "resourceclaims",
        claim(json!({
            "requests": [{"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "gpu"}]}],
            "constraints": [{"requests": ["zz", "b/x/y", "b/x"]}, {"matchAttribute": "foo"},
                            {"distinctAttribute": "d.io/1x"}],
            "config": [{"requests": ["a"]},
                       {"opaque": {"driver": "Bad_Driver", "parameters": [1]}},
                       {"opaque": {"driver": "d.io"}}]})),
        vec![
            format!("spec.devices.constraints[0].requests[0]: Invalid value: \"zz\": {REF}"),
            format!("spec.devices.constraints[0].requests[1]: Invalid value: \"b/x/y\": {REF}"),
            "spec.devices.constraints[0]: Required value: exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set".into(),
            "spec.devices.constraints[1].matchAttribute: Invalid value: \"foo\": a fully qualified name must be a domain and a name separated by a slash".into(),
            "spec.devices.constraints[2].distinctAttribute: Invalid value: \"1x\": a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')".into(),
            format!("spec.devices.config[0].requests[0]: Invalid value: \"a\": {REF}"),
            "spec.devices.config[0].opaque: Required value".into(),
            format!("spec.devices.config[1].opaque.driver: Invalid value: \"Bad_Driver\": {DNS_SUBDOMAIN}"),
            "spec.devices.config[1].opaque.parameters: Invalid value: \"<value omitted>\": must be a valid JSON object".into(),
            "spec.devices.config[2].opaque.parameters: Required value".into(),
        ],
    )]);
}

#[test]
fn template_rules() {
    let t = json!({"metadata": {"name": "t", "namespace": "ns"}, "spec": {
        "metadata": {"name": "x", "uid": "u", "labels": {"a b": "c"}},
        "spec": {"devices": {"requests": [{"name": "a"}]}}}});
    assert_rows(vec![(
        "resourceclaimtemplates",
        t,
        vec![
            "spec.metadata.labels: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into(),
            "spec.metadata.name: Forbidden: cannot be set".into(),
            "spec.metadata.uID: Forbidden: cannot be set".into(),
            "spec.spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required".into(),
        ],
    )]);
}

/// The immutable spec is printed as Go marshals the internal struct (upstream's text).
#[test]
fn claim_and_template_specs_are_immutable() {
    let s = strategy(G, "resourceclaims");
    let (old, _) = create(
        "resourceclaims",
        claim(json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}}]})),
    );
    let mut new = old.clone();
    new["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
        json!([{"cel": {"expression": "a<b&&\"x\""}}]);
    new["spec"]["devices"]["config"] =
        json!([{"requests": ["a"], "opaque": {"driver": "d", "parameters": {"z": [1], "a": "<"}}}]);
    s.prepare_for_update(&mut new, &old, &ctx());
    assert_eq!(
        texts(s.validate_update(&new, &old)),
        [
            r#"spec: Invalid value: {"Devices":{"Requests":[{"Name":"a","Exactly":{"DeviceClassName":"gpu","Selectors":[{"CEL":{"Expression":"a\u003cb\u0026\u0026\"x\""}}],"AllocationMode":"ExactCount","Count":1,"AdminAccess":null,"Tolerations":null,"Capacity":null},"FirstAvailable":null}],"Constraints":null,"Config":[{"Requests":["a"],"Opaque":{"Driver":"d","Parameters":{"z":[1],"a":"\u003c"}}}]}}: field is immutable"#
        ]
    );
    let mut same = old.clone();
    same["metadata"]["labels"] = json!({"x": "y"});
    s.prepare_for_update(&mut same, &old, &ctx());
    assert!(s.validate_update(&same, &old).is_empty());

    let t = strategy(G, "resourceclaimtemplates");
    let tmpl = json!({"metadata": {"name": "t", "namespace": "ns"}, "spec": {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}}]}}}});
    let (old, _) = create("resourceclaimtemplates", tmpl);
    let mut new = old.clone();
    new["spec"]["metadata"]["annotations"] = json!({"k": "v"});
    t.prepare_for_update(&mut new, &old, &ctx());
    assert_eq!(
        texts(t.validate_update(&new, &old)),
        [
            r#"spec: Invalid value: {"labels":{"a":"b"},"annotations":{"k":"v"},"Spec":{"Devices":{"Requests":[{"Name":"a","Exactly":{"DeviceClassName":"gpu","Selectors":null,"AllocationMode":"ExactCount","Count":1,"AdminAccess":null,"Tolerations":null,"Capacity":null},"FirstAvailable":null}],"Constraints":null,"Config":null}}}: field is immutable"#
        ]
    );
}

fn allocated_claim() -> Value {
    let (mut c, _) = create(
        "resourceclaims",
        claim(json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}}]})),
    );
    c["metadata"]["labels"] = json!({"x": "y"});
    c
}

fn status_write(old: &Value, status: Value, labels: Value) -> (Value, Vec<String>) {
    let s = strategy(G, "resourceclaims");
    let mut new = old.clone();
    new["status"] = status;
    new["metadata"]["labels"] = labels;
    new["spec"] = json!({"devices": {"requests": []}});
    s.prepare_for_subresource_update("status", &mut new, old);
    let errs = texts(s.validate_subresource_update("status", &new, old));
    (new, errs)
}

#[test]
fn claim_status_rules() {
    let old = allocated_claim();
    let (_, errs) = status_write(
        &old,
        json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}),
        json!({}),
    );
    assert_eq!(
        errs,
        ["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]
    );
    let (_, errs) = status_write(
        &old,
        json!({"allocation": {"devices": {
            "results": [{"request": "zz", "driver": "Bad_", "pool": "", "device": "D",
                         "bindingFailureConditions": ["x"], "shareID": "abc"}],
            "config": [{"source": "Foo", "requests": ["a"]}, {"requests": ["a"],
                        "opaque": {"driver": "d.io", "parameters": {}}}]},
            "nodeSelector": {"nodeSelectorTerms": []}},
          "devices": [{"driver": "d.io", "pool": "p", "device": "x"}]}),
        json!({}),
    );
    assert_eq!(
        errs,
        vec![
            r#"status.devices[0]: Invalid value: {"Driver":"d.io","Pool":"p","Device":"x","ShareID":""}: must be an allocated device in the claim"#.to_string(),
            format!("status.allocation.devices.results[0].request: Invalid value: \"zz\": {REF}"),
            format!("status.allocation.devices.results[0].driver: Invalid value: \"Bad_\": {DNS_SUBDOMAIN}"),
            "status.allocation.devices.results[0].pool: Required value".into(),
            format!("status.allocation.devices.results[0].device: Invalid value: \"D\": {DNS_LABEL}"),
            "status.allocation.devices.results[0].bindingConditions: Invalid value: null: bindingConditions are required to use bindingFailureConditions".into(),
            "status.allocation.devices.results[0].shareID: Invalid value: \"abc\": error validating uid: invalid UUID length: 3".into(),
            "status.allocation.devices.config[0].source: Unsupported value: \"Foo\": supported values: \"FromClaim\", \"FromClass\"".into(),
            "status.allocation.devices.config[0].opaque: Required value".into(),
            "status.allocation.devices.config[1].source: Required value".into(),
            "status.allocation.nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term".into(),
        ]
    );
}

/// A valid status write keeps spec and labels, defaults the results' tolerations, and once
/// allocated the allocation may not change; devices dropped from it lose their status.
#[test]
fn claim_allocation_is_set_once() {
    let old = allocated_claim();
    let (allocated, errs) = status_write(
        &old,
        json!({"devices": [{"driver": "d.io", "pool": "p", "device": "d", "conditions": []}],
               "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
               "allocation": {"devices": {"results": [{"request": "a", "driver": "d.io",
                   "pool": "p", "device": "d", "tolerations": [{"key": "k", "value": "v"}]}]}}}),
        json!({"changed": "by-status"}),
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(allocated["spec"], old["spec"]);
    assert_eq!(allocated["metadata"]["labels"], json!({"x": "y"}));
    assert_eq!(
        serde_json::to_string(&allocated["status"]).unwrap(),
        r#"{"allocation":{"devices":{"results":[{"request":"a","driver":"d.io","pool":"p","device":"d","tolerations":[{"key":"k","operator":"Equal","value":"v"}]}]}},"reservedFor":[{"resource":"pods","name":"p","uid":"u1"}],"devices":[{"driver":"d.io","pool":"p","device":"d","conditions":null}]}"#
    );
    let mut status = allocated["status"].clone();
    status["allocation"]["devices"]["results"][0]["device"] = json!("e");
    let (moved, errs) = status_write(&allocated, status, json!({}));
    assert_eq!(
        errs,
        [
            r#"status.allocation: Invalid value: {"Devices":{"Results":[{"Request":"a","Driver":"d.io","Pool":"p","Device":"e","AdminAccess":null,"Tolerations":[{"Key":"k","Operator":"Equal","Value":"v","Effect":"","TolerationSeconds":null}],"BindingConditions":null,"BindingFailureConditions":null,"ShareID":null,"ConsumedCapacity":null}],"Config":null},"NodeSelector":null,"AllocationTimestamp":null}: field is immutable"#
        ]
    );
    assert!(moved["status"].get("devices").is_none());
    // The main resource's update keeps the stored status.
    let s = strategy(G, "resourceclaims");
    let mut main = allocated.clone();
    main["status"] = json!({});
    s.prepare_for_update(&mut main, &allocated, &ctx());
    assert_eq!(main["status"], allocated["status"]);
}

#[test]
fn device_class_rules() {
    let class = |spec: Value| json!({"metadata": {"name": "c"}, "spec": spec});
    assert_rows(vec![
        (
            "deviceclasses",
            class(json!({"selectors": [{}], "config": [{"opaque": {"driver": "", "parameters": null}}, {}],
                         "extendedResourceName": "foo"})),
            vec![
                "spec.selectors[0].cel: Required value".into(),
                "spec.config[0].opaque.driver: Required value".into(),
                "spec.config[0].opaque.parameters: Required value".into(),
                "spec.config[1].opaque: Required value".into(),
                "spec.extendedResourceName: Invalid value: \"foo\": must be a valid extended resource name".into(),
            ],
        ),
        (
            "deviceclasses",
            class(json!({"extendedResourceName": "kubernetes.io/gpu"})),
            vec!["spec.extendedResourceName: Invalid value: \"kubernetes.io/gpu\": must be a valid extended resource name".into()],
        ),
        (
            "deviceclasses",
            class(json!({"extendedResourceName": "example.com/gpu",
                         "selectors": [{"cel": {"expression": "true"}}]})),
            vec![],
        ),
    ]);
    // Generation follows spec changes.
    let s = strategy(G, "deviceclasses");
    let (old, _) = create("deviceclasses", class(json!({})));
    let mut new = old.clone();
    new["spec"]["selectors"] = json!([{"cel": {"expression": "true"}}]);
    s.prepare_for_update(&mut new, &old, &ctx());
    assert_eq!(new["metadata"]["generation"], json!(2));
}

#[test]
fn resource_slice_rules() {
    let pool = json!({"name": "p", "resourceSliceCount": 1});
    assert_rows(vec![
        (
            "resourceslices",
            slice(json!({})),
            vec![
                "spec.driver: Required value".into(),
                "spec.pool.name: Required value".into(),
                "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero".into(),
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required".into(),
            ],
        ),
        (
            "resourceslices",
            slice(json!({"driver": "d.io", "pool": {"name": "a/B", "resourceSliceCount": 1, "generation": -1},
                         "nodeName": "", "allNodes": false, "perDeviceNodeSelection": false})),
            vec![
                format!("spec.pool.name: Invalid value: \"B\": {DNS_SUBDOMAIN}"),
                "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero".into(),
                "spec.nodeName: Invalid value: \"\": must be either unset or set to a non-empty string".into(),
                "spec.allNodes: Invalid value: false: must be either unset or set to true".into(),
                "spec.perDeviceNodeSelection: Invalid value: false: must be either unset or set to true".into(),
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required".into(),
            ],
        ),
        (
            "resourceslices",
            slice(json!({"driver": "d.io", "pool": pool, "nodeName": "n1", "allNodes": true,
                         "nodeSelector": {"nodeSelectorTerms": [{}, {}]}})),
            vec![
                r#"spec.nodeSelector.nodeSelectorTerms: Invalid value: [{"MatchExpressions":null,"MatchFields":null},{"MatchExpressions":null,"MatchFields":null}]: must have exactly one node selector term"#.into(),
                "spec: Invalid value: \"{`nodeName`, `nodeSelector`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set".into(),
            ],
        ),
        (
            "resourceslices",
            slice(json!({"driver": "d.io", "pool": pool, "allNodes": true,
                "sharedCounters": [{"name": "c", "counters": {"x": {"value": "1"}}}],
                "devices": [{"name": "A",
                    "attributes": {"a": {}, "b": {"int": 1, "bool": true}, "d.io/c": {"version": "1.0"}},
                    "capacity": {"m": {"value": "1", "requestPolicy": {}}},
                    "taints": [{"key": "k", "effect": "Bad"}],
                    "consumesCounters": [{"counterSet": "", "counters": {}}],
                    "nodeName": "n"}, {"name": "A"}]})),
            vec![
                "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed".into(),
                format!("spec.devices[0].name: Invalid value: \"A\": {DNS_LABEL}"),
                "spec.devices[0].attributes[a]: Invalid value: \"\": exactly one value must be specified".into(),
                r#"spec.devices[0].attributes[b]: Invalid value: {"IntValue":1,"BoolValue":true,"StringValue":null,"VersionValue":null,"IntValues":null,"BoolValues":null,"StringValues":null,"VersionValues":null}: exactly one value must be specified"#.into(),
                "spec.devices[0].attributes[d.io/c].version: Invalid value: \"1.0\": must be a string compatible with semver.org spec 2.0.0".into(),
                "spec.devices[0].capacity[m].requestPolicy: Forbidden: allowMultipleAllocations must be true".into(),
                "spec.devices[0].taints[0].effect: Unsupported value: \"Bad\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"".into(),
                "spec.devices[0].consumesCounters[0].counterSet: Required value".into(),
                "spec.devices[0].consumesCounters[0].counters: Required value".into(),
                "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec".into(),
                format!("spec.devices[1].name: Invalid value: \"A\": {DNS_LABEL}"),
                "spec.devices[1]: Duplicate value: \"A\"".into(),
            ],
        ),
        (
            "resourceslices",
            slice(json!({"driver": "d.io", "pool": pool, "perDeviceNodeSelection": true,
                "devices": [{"name": "a"}, {"name": "b", "nodeName": "n", "allNodes": true}]})),
            vec![
                "spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec".into(),
                "spec.devices[1]: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec".into(),
            ],
        ),
    ]);
}

#[test]
fn resource_slice_updates() {
    let s = strategy(G, "resourceslices");
    let (old, errs) = create(
        "resourceslices",
        slice(
            json!({"driver": "d.io", "pool": {"name": "p", "resourceSliceCount": 1},
            "nodeName": "n1", "devices": [{"name": "d0", "taints": [{"key": "k", "effect": "NoSchedule"}]}]}),
        ),
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        old["spec"]["devices"][0]["taints"][0]["timeAdded"],
        json!("2026-01-01T00:00:00Z")
    );
    let mut new = old.clone();
    new["spec"]["driver"] = json!("e.io");
    new["spec"]["pool"]["name"] = json!("q");
    new["spec"]["nodeName"] = Value::Null;
    new["spec"]["allNodes"] = json!(true);
    s.prepare_for_update(&mut new, &old, &ctx());
    assert_eq!(
        texts(s.validate_update(&new, &old)),
        [
            "spec.pool.name: Invalid value: \"q\": field is immutable",
            "spec.driver: Invalid value: \"e.io\": field is immutable",
            "spec.nodeName: Invalid value: null: field is immutable",
        ]
    );
    let mut bumped = old.clone();
    bumped["spec"]["pool"]["generation"] = json!(2);
    s.prepare_for_update(&mut bumped, &old, &ctx());
    assert!(s.validate_update(&bumped, &old).is_empty());
    assert_eq!(bumped["metadata"]["generation"], json!(2));
}

#[test]
fn device_taint_rules() {
    let rule = json!({"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceTaintRule",
        "metadata": {"name": "r"}, "spec": {"deviceSelector": {"driver": "Bad_", "pool": "", "device": "D"},
        "taint": {"key": "", "effect": "Foo"}}});
    let (_, errs) = create("devicetaintrules", rule);
    assert_eq!(
        errs,
        vec![
            format!("spec.deviceSelector.driver: Invalid value: \"Bad_\": {DNS_SUBDOMAIN}"),
            "spec.deviceSelector.pool: Required value".into(),
            format!("spec.deviceSelector.device: Invalid value: \"D\": {DNS_LABEL}"),
            "spec.taint.key: Invalid value: \"\": name part must be non-empty".into(),
            "spec.taint.key: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into(),
            "spec.taint.effect: Unsupported value: \"Foo\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"".into(),
        ]
    );
    let s = strategy(G, "devicetaintrules");
    let (old, errs) = create(
        "devicetaintrules",
        json!({"metadata": {"name": "r"}, "spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}),
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        old["spec"]["taint"]["timeAdded"],
        json!("2026-01-01T00:00:00Z")
    );
    let mut new = old.clone();
    new["spec"]["taint"]["effect"] = json!("NoExecute");
    s.prepare_for_update(&mut new, &old, &Ctx::at_unix_seconds(1_767_225_660));
    assert_eq!(
        new["spec"]["taint"]["timeAdded"],
        json!("2026-01-01T00:01:00Z")
    );
    assert_eq!(new["metadata"]["generation"], json!(2));
    let mut status = old.clone();
    let cond = |i: usize| {
        json!({"type": format!("T{i}"), "status": "True", "reason": "R",
        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };
    status["status"] = json!({"conditions": (0..9).map(cond).collect::<Vec<_>>()});
    s.prepare_for_subresource_update("status", &mut status, &old);
    assert_eq!(
        texts(s.validate_subresource_update("status", &status, &old)),
        ["status.conditions: Too many: 9: must have at most 8 items"]
    );
    let mut bad = old.clone();
    bad["status"] = json!({"conditions": [cond(0), {"type": "T0", "status": "Maybe",
        "reason": "1x", "observedGeneration": -1}]});
    s.prepare_for_subresource_update("status", &mut bad, &old);
    assert_eq!(
        texts(s.validate_subresource_update("status", &bad, &old)),
        [
            "status.conditions[1].type: Duplicate value: \"T0\"",
            "status.conditions[1].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
            "status.conditions[1].observedGeneration: Invalid value: -1: must be greater than or equal to zero",
            "status.conditions[1].lastTransitionTime: Required value",
            "status.conditions[1].reason: Invalid value: \"1x\": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
        ]
    );
}

#[test]
fn share_ids_are_normalized_uuids() {
    let normalized = "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters";
    for (id, want) in [
        ("0b1f4f6e-9c1a-4b8e-8f3a-2d8c6f1e7a90", None),
        (
            "0B1F4F6E-9C1A-4B8E-8F3A-2D8C6F1E7A90",
            Some(normalized.to_string()),
        ),
        (
            "0b1f4f6e9c1a4b8e8f3a2d8c6f1e7a90",
            Some(normalized.to_string()),
        ),
        (
            "abc",
            Some("error validating uid: invalid UUID length: 3".to_string()),
        ),
        (
            "0b1f4f6e-9c1a-4b8e-8f3a-2d8c6f1e7a9x",
            Some("error validating uid: invalid UUID format".to_string()),
        ),
        (
            "urn:uuix:0b1f4f6e-9c1a-4b8e-8f3a-2d8c6f1e7a90",
            Some("error validating uid: invalid urn prefix: \"urn:uuix:\"".to_string()),
        ),
    ] {
        let got: Vec<String> = super::common::uid(id, "p")
            .into_iter()
            .map(|e| e.body().to_string())
            .collect();
        let want: Vec<String> = want
            .into_iter()
            .map(|w| format!("Invalid value: \"{id}\": {w}"))
            .collect();
        assert_eq!(got, want, "{id}");
    }
}

#[test]
fn semver_follows_semver_org() {
    for (v, ok) in [
        ("1.0.0", true),
        ("1.2.3-alpha.1+build.5", true),
        ("1.0", false),
        ("01.0.0", false),
        ("1.0.0-01", false),
        ("1.0.0+", false),
    ] {
        assert_eq!(super::slice::semver(v), ok, "{v}");
    }
}

/// Kubelets list their node's slices with `fieldSelector=spec.nodeName=<node>`.
#[test]
fn resource_slices_select_by_node_and_driver() {
    let s = strategy(G, "resourceslices");
    let obj = slice(json!({"driver": "d.io", "nodeName": "n1"}));
    assert_eq!(s.field_value(&obj, "spec.nodeName").as_deref(), Some("n1"));
    assert_eq!(s.field_value(&obj, "spec.driver").as_deref(), Some("d.io"));
    let all_nodes = slice(json!({"driver": "d.io", "allNodes": true}));
    assert_eq!(
        s.field_value(&all_nodes, "spec.nodeName").as_deref(),
        Some("")
    );
    assert_eq!(s.field_value(&obj, "spec.pool"), None);
}

#[test]
fn network_data_ips_are_canonical_cidrs() {
    for (ip, want) in [
        ("10.9.8.7/24", None),
        ("2001:db8::1/64", None),
        (
            "10.9.8.7",
            Some("must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"),
        ),
        (
            "10.9.8.7/33",
            Some("must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"),
        ),
        (
            "2001:DB8::1/64",
            Some("must be in canonical form (\"2001:db8::1/64\")"),
        ),
        (
            "::ffff:1.2.3.4/120",
            Some("must be in canonical form (\"1.2.3.4/24\")"),
        ),
    ] {
        let got: Vec<String> = super::common::interface_address(ip, "p")
            .into_iter()
            .map(|e| e.body().to_string())
            .collect();
        let want: Vec<String> = want
            .into_iter()
            .map(|w| format!("Invalid value: \"{ip}\": {w}"))
            .collect();
        assert_eq!(got, want, "{ip}");
    }
}

/// v1beta1 objects (stored as written) get v1beta1's defaults and are validated as upstream's
/// internal form sees them: errors carry `exactly` paths, slice devices lose `basic`.
#[test]
fn v1beta1_objects_are_defaulted_and_validated_as_upstream_converts_them() {
    let v1beta1 = |mut v: Value| {
        v["apiVersion"] = json!("resource.k8s.io/v1beta1");
        v
    };
    let (obj, errs) = create(
        "resourceclaims",
        v1beta1(claim(json!({"requests": [
            {"name": "a", "deviceClassName": "gpu", "tolerations": [{"key": "k"}]},
            {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "gpu"}]}]}))),
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        serde_json::to_string(&obj["spec"]).unwrap(),
        r#"{"devices":{"requests":[{"name":"a","deviceClassName":"gpu","allocationMode":"ExactCount","count":1,"tolerations":[{"key":"k","operator":"Equal"}]},{"name":"b","deviceClassName":"","firstAvailable":[{"name":"x","deviceClassName":"gpu","allocationMode":"ExactCount","count":1}]}]}}"#
    );
    let (_, errs) = create(
        "resourceclaims",
        v1beta1(claim(json!({"requests": [
            {"name": "c", "count": -1, "deviceClassName": "Bad_"}, {"name": "d"}]}))),
    );
    assert_eq!(
        errs,
        vec![
            format!("spec.devices.requests[0].exactly.deviceClassName: Invalid value: \"Bad_\": {DNS_SUBDOMAIN}"),
            "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero".into(),
            "spec.devices.requests[1]: Required value: exactly one of `exactly` or `firstAvailable` is required".into(),
        ]
    );
    let (s, errs) = create(
        "resourceslices",
        v1beta1(slice(
            json!({"driver": "d.io", "pool": {"name": "p", "resourceSliceCount": 1},
            "allNodes": true, "devices": [{"name": "d", "basic": {"attributes": {"a": {}},
            "taints": [{"key": "k", "effect": "NoSchedule"}]}}]}),
        )),
    );
    assert_eq!(
        errs,
        ["spec.devices[0].attributes[a]: Invalid value: \"\": exactly one value must be specified"]
    );
    assert_eq!(
        s["spec"]["devices"][0]["basic"]["taints"][0]["timeAdded"],
        json!("2026-01-01T00:00:00Z")
    );
}

/// A capacity's `requestPolicy` (consumable capacity), as a v1.36.2 server words it.
#[test]
fn capacity_request_policies() {
    let with_policy = |policy: Value| {
        slice(
            json!({"driver": "d.io", "pool": {"name": "p", "resourceSliceCount": 1},
            "allNodes": true, "devices": [{"name": "d", "allowMultipleAllocations": true,
            "capacity": {"mem": {"value": "10Gi", "requestPolicy": policy}}}]}),
        )
    };
    let p = "spec.devices[0].capacity[mem].requestPolicy";
    assert_rows(vec![
        (
            "resourceslices",
            with_policy(json!({"default": "3Gi", "validValues": ["2Gi", "1Gi", "1Gi", "20Gi"]})),
            vec![
                format!("{p}.validValues[1]: Invalid value: \"1Gi\": values must be sorted in ascending order"),
                format!("{p}.validValues[3]: Invalid value: \"20Gi\": option is larger than capacity value: 10Gi"),
                format!("{p}.validValues[2]: Duplicate value: \"1073741824\""),
                format!("{p}.validValues: Invalid value: \"3Gi\": default value is not valid according to the requestPolicy"),
            ],
        ),
        (
            "resourceslices",
            with_policy(json!({"default": "3Gi", "validRange": {"min": "2Gi", "max": "6Gi", "step": "3Gi"}})),
            vec![
                format!("{p}.validRange.step: Invalid value: \"3Gi\": value is not a multiple of a given step (3Gi) from (2Gi)"),
                format!("{p}.validRange.step: Invalid value: \"6Gi\": value is not a multiple of a given step (3Gi) from (2Gi)"),
            ],
        ),
        (
            "resourceslices",
            with_policy(json!({"default": "2Gi", "validRange": {"min": "2Gi", "step": "9Gi"}})),
            vec![format!("{p}.validRange.step: Invalid value: \"9Gi\": one step 11Gi is larger than capacity value: 10Gi")],
        ),
        (
            "resourceslices",
            with_policy(json!({"validValues": ["1Gi"], "validRange": {"min": "1Gi"}})),
            vec![format!("{p}: Forbidden: exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time")],
        ),
        (
            "resourceslices",
            with_policy(json!({"default": "1Gi", "validRange": {}})),
            vec![format!("{p}.validRange.min: Required value: required when validRange is defined")],
        ),
        (
            "resourceslices",
            with_policy(json!({"default": "1Gi", "validRange": {"min": "1Gi", "max": "2Gi"}})),
            vec![],
        ),
    ]);
}

/// A claim stored before defaulting existed (no `allocationMode`/`count`) can still be
/// updated: its stored spec compares in defaulted form, as upstream reads it.
#[test]
fn claims_stored_without_defaults_stay_updatable() {
    let s = strategy(G, "resourceclaims");
    let stored = claim(json!({"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}}]}));
    let mut new = stored.clone();
    new["metadata"]["labels"] = json!({"x": "y"});
    s.prepare_for_update(&mut new, &stored, &ctx());
    assert!(s.validate_update(&new, &stored).is_empty());
    let mut changed = stored.clone();
    changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
    s.prepare_for_update(&mut changed, &stored, &ctx());
    assert_eq!(s.validate_update(&changed, &stored).len(), 1);
}

#[test]
fn admin_access_requests_are_found_where_upstream_reports_them() {
    let req = |admin: Value| json!({"name": "r", "exactly": {"deviceClassName": "gpu", "adminAccess": admin}});
    let claim = |reqs: Value| json!({"apiVersion": "resource.k8s.io/v1", "spec": {"devices": {"requests": reqs}}});
    let beta = json!({"apiVersion": "resource.k8s.io/v1beta1",
                      "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "gpu"},
                                                         {"name": "s", "deviceClassName": "gpu", "adminAccess": true}]}}});
    let template = json!({"apiVersion": "resource.k8s.io/v1",
                          "spec": {"spec": {"devices": {"requests": [req(json!(true))]}}}});
    let allocated = |admin: bool| {
        json!({"apiVersion": "resource.k8s.io/v1", "status": {"allocation": {"devices": {
        "results": [{"request": "r", "adminAccess": false}, {"request": "s", "adminAccess": admin}]}}}})
    };
    use crate::kind::Kind;
    /// (kind, subresource, new, stored, the path upstream reports)
    type Case = (
        Kind,
        &'static str,
        Value,
        Option<Value>,
        Option<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            Kind::ResourceClaim,
            "",
            claim(json!([req(json!(false)), req(json!(true))])),
            None,
            Some("spec.devices.requests[1].adminAccess"),
        ),
        (
            Kind::ResourceClaim,
            "",
            claim(json!([req(json!(false)), req(Value::Null)])),
            None,
            None,
        ),
        (
            Kind::ResourceClaim,
            "",
            beta,
            None,
            Some("spec.devices.requests[1].adminAccess"),
        ),
        (
            Kind::ResourceClaimTemplate,
            "",
            template,
            None,
            Some("spec.devices.requests[0].adminAccess"),
        ),
        // The spec is immutable: an update is not asked again.
        (
            Kind::ResourceClaim,
            "",
            claim(json!([req(json!(true))])),
            Some(claim(json!([req(json!(true))]))),
            None,
        ),
        (
            Kind::ResourceClaim,
            "status",
            allocated(true),
            Some(allocated(false)),
            Some("status.allocation.devices.results[1].adminAccess"),
        ),
        // Already granted: the allocation is immutable, not asked again.
        (
            Kind::ResourceClaim,
            "status",
            allocated(true),
            Some(allocated(true)),
            None,
        ),
        (
            Kind::DeviceClass,
            "",
            claim(json!([req(json!(true))])),
            None,
            None,
        ),
    ];
    for (kind, sub, new, old, want) in cases {
        assert_eq!(
            super::admin_access_field(kind, sub, &new, old.as_ref()).as_deref(),
            want,
            "{kind:?} {sub} {new}"
        );
    }
    assert_eq!(
        super::admin_access_forbidden("spec.devices.requests[1].adminAccess").into_cause().message,
        "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
    );
}

#[test]
fn selectors_are_compiled_in_the_device_environment() {
    let class = |expr: &str| json!({"selectors": [{"cel": {"expression": expr}}]});
    let errs = |expr: &str| -> Vec<String> {
        let obj = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                         "metadata": {"name": "c"}, "spec": class(expr)});
        create("deviceclasses", obj).1
    };
    assert!(errs("device.driver == \"gpu.example.com\" && device.attributes[\"gpu.example.com\"].model == \"x\"").is_empty());
    assert!(errs("device.allowMultipleAllocations").is_empty());
    assert_eq!(
        errs("device.capacity[\"a\"][\"b\"]"),
        vec!["spec.selectors[0].cel.expression: Invalid value: \"device.capacity[\\\"a\\\"][\\\"b\\\"]\": must evaluate to bool or the unknown type, not kubernetes.Quantity".to_string()]
    );
    assert_eq!(
        errs("device.foo"),
        vec!["spec.selectors[0].cel.expression: Invalid value: \"device.foo\": compilation failed: ERROR: <input>:1:7: undefined field 'foo'\n | device.foo\n | ......^".to_string()]
    );
}
