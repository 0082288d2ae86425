//! Table tests against what upstream's v1.36 apiserver answered (`testdata/`, GET responses
//! with `managedFields` removed): the same object read through each version, and objects
//! written through one version and read through the other. Member order is not compared
//! (serde_json's map equality ignores it); annotation values are compared byte for byte.

use super::*;
use serde_json::json;

fn fixture(name: &str) -> Value {
    let text = match name {
        "hpa_x2_v1" => include_str!("testdata/hpa_x2_v1.json"),
        "hpa_x2_v2" => include_str!("testdata/hpa_x2_v2.json"),
        "hpa_x2_v1_put" => include_str!("testdata/hpa_x2_v1_put.json"),
        "hpa_x2_v1_after_put" => include_str!("testdata/hpa_x2_v1_after_put.json"),
        "hpa_x2_v2_after_v1_put" => include_str!("testdata/hpa_x2_v2_after_v1_put.json"),
        "hpa_x2_v1_status_put" => include_str!("testdata/hpa_x2_v1_status_put.json"),
        "hpa_x2_v2_after_v1_status_put" => {
            include_str!("testdata/hpa_x2_v2_after_v1_status_put.json")
        }
        "hpa_y1_v1" => include_str!("testdata/hpa_y1_v1.json"),
        "hpa_y1_v2" => include_str!("testdata/hpa_y1_v2.json"),
        "hpa_y1_v1_written" => include_str!("testdata/hpa_y1_v1_written.json"),
        "event_e1_core" => include_str!("testdata/event_e1_core.json"),
        "event_e1_events" => include_str!("testdata/event_e1_events.json"),
        "event_e2_core" => include_str!("testdata/event_e2_core.json"),
        "event_e2_events" => include_str!("testdata/event_e2_events.json"),
        "event_e3_core" => include_str!("testdata/event_e3_core.json"),
        "event_e3_events" => include_str!("testdata/event_e3_events.json"),
        "map1_v1" => include_str!("testdata/map1_v1.json"),
        "map1_v1alpha1" => include_str!("testdata/map1_v1alpha1.json"),
        "rc1_v1" => include_str!("testdata/rc1_v1.json"),
        "rc1_v1beta2" => include_str!("testdata/rc1_v1beta2.json"),
        "dtr1_v1alpha3" => include_str!("testdata/dtr1_v1alpha3.json"),
        "dtr1_v1beta2" => include_str!("testdata/dtr1_v1beta2.json"),
        "rcb1_v1" => include_str!("testdata/rcb1_v1.json"),
        "rcb1_v1beta1" => include_str!("testdata/rcb1_v1beta1.json"),
        "rct2_v1" => include_str!("testdata/rct2_v1.json"),
        "rct2_v1beta1" => include_str!("testdata/rct2_v1beta1.json"),
        "rs2_v1" => include_str!("testdata/rs2_v1.json"),
        "rs2_v1beta1" => include_str!("testdata/rs2_v1beta1.json"),
        "rs3_v1" => include_str!("testdata/rs3_v1.json"),
        "rs3_v1beta1" => include_str!("testdata/rs3_v1beta1.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixtures are JSON")
}

const HPA: (&str, &str) = ("autoscaling", "horizontalpodautoscalers");

fn hpa(obj: Value, to: &str) -> Value {
    convert(HPA.0, HPA.1, obj, to).expect("converts")
}

/// What a write changes in metadata whatever the version (compared apart from conversion).
fn without_write_stamps(mut obj: Value) -> Value {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("generation");
    }
    obj
}

#[test]
fn hpa_v2_reads_as_v1_with_upstreams_annotations() {
    // Six metrics (one cpu utilization), defaulted behavior, a full status with six current
    // metrics and two conditions: every round-trip annotation, byte for byte.
    let got = hpa(fixture("hpa_x2_v2"), "autoscaling/v1");
    let want = fixture("hpa_x2_v1");
    for key in [
        "autoscaling.alpha.kubernetes.io/metrics",
        "autoscaling.alpha.kubernetes.io/behavior",
        "autoscaling.alpha.kubernetes.io/current-metrics",
        "autoscaling.alpha.kubernetes.io/conditions",
    ] {
        assert_eq!(
            got["metadata"]["annotations"][key], want["metadata"]["annotations"][key],
            "{key}"
        );
    }
    assert_eq!(got, want);
}

#[test]
fn hpa_v1_reads_as_v2_when_written_through_v1() {
    // y1 was created through v1 with annotated metrics and behavior; upstream's v2 answer has
    // the annotated metrics first and the CPU target last.
    assert_eq!(
        hpa(fixture("hpa_y1_v1"), "autoscaling/v2"),
        fixture("hpa_y1_v2")
    );
}

#[test]
fn hpa_v1_update_keeps_v2_only_fields() {
    // x2 read as v1, maxReplicas changed, PUT back as v1: upstream keeps every metric (the
    // CPU one moved last) and the behavior, and removes the annotations.
    let got = without_write_stamps(hpa(fixture("hpa_x2_v1_put"), "autoscaling/v2"));
    let want = without_write_stamps(fixture("hpa_x2_v2_after_v1_put"));
    assert_eq!(got["metadata"], want["metadata"]);
    assert_eq!(got["spec"], want["spec"]);
    // And the v1 view after that write is what upstream printed.
    let v1 = without_write_stamps(hpa(fixture("hpa_x2_v2_after_v1_put"), "autoscaling/v1"));
    assert_eq!(v1, without_write_stamps(fixture("hpa_x2_v1_after_put")));
}

#[test]
fn hpa_v1_status_update_restores_current_metrics_and_conditions() {
    // A v1 status PUT: current metrics and conditions come back from the annotations (an
    // External metric's value, absent before, comes back as "0", as upstream's does).
    let got = hpa(fixture("hpa_x2_v1_status_put"), "autoscaling/v2");
    let want = fixture("hpa_x2_v2_after_v1_status_put");
    assert_eq!(got["status"], want["status"]);
    assert_eq!(
        got["status"]["currentMetrics"][4]["external"]["current"],
        json!({"value": "0", "averageValue": "20"})
    );
}

#[test]
fn hpa_v1_write_then_v2_defaults_gives_upstreams_object() {
    // As written by the client (before any defaulting). Upstream canonicalizes the
    // tolerance quantity while decoding ("0.05" -> "50m"); this module does not, so the row
    // writes it canonical.
    let mut written = fixture("hpa_y1_v1_written");
    let ann = &mut written["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/behavior"];
    *ann = json!(ann.as_str().unwrap().replace("\"0.05\"", "\"50m\""));
    written["spec"]["minReplicas"] = json!(1); // upstream's only v1 default
    let mut v2 = hpa(written, "autoscaling/v2");
    crate::autoscaling::apply_defaults(&mut v2);
    let want = fixture("hpa_y1_v2");
    assert_eq!(v2["spec"], want["spec"]);
    assert_eq!(
        v2["metadata"]["annotations"],
        want["metadata"]["annotations"]
    );
}

fn v1_hpa(annotations: Value, spec_extra: Value) -> Value {
    let mut spec = json!({"scaleTargetRef": {"kind": "Deployment", "name": "d",
                          "apiVersion": "apps/v1"}, "minReplicas": 1, "maxReplicas": 5});
    for (k, v) in spec_extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    let mut obj = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "y", "namespace": "default"},
           "spec": spec, "status": {"currentReplicas": 0, "desiredReplicas": 0}});
    if annotations.as_object().is_some_and(|a| !a.is_empty()) {
        obj["metadata"]["annotations"] = annotations;
    }
    obj
}

#[test]
fn hpa_v1_metrics_table() {
    let memory = json!([{"type": "Resource", "resource": {"name": "memory",
                          "targetAverageValue": "100Mi"}}]);
    let memory_v2 = json!({"type": "Resource", "resource": {"name": "memory",
                           "target": {"type": "AverageValue", "averageValue": "100Mi"}}});
    let cpu = |u: i64| {
        json!({"type": "Resource", "resource": {"name": "cpu",
               "target": {"type": "Utilization", "averageUtilization": u}}})
    };
    let metrics_note =
        |m: &Value| json!({"autoscaling.alpha.kubernetes.io/metrics": m.to_string()});
    // (annotations, extra v1 spec, v2 metrics): observed on upstream as y2, y3 and y1.
    let rows = [
        // No CPU target and an annotated memory metric: no CPU metric is made up (upstream's
        // v1 does not default targetCPUUtilizationPercentage).
        (metrics_note(&memory), json!({}), json!([memory_v2])),
        // Nothing at all: 80 % CPU.
        (json!({}), json!({}), json!([cpu(80)])),
        (
            json!({}),
            json!({"targetCPUUtilizationPercentage": 70}),
            json!([cpu(70)]),
        ),
        (
            metrics_note(&memory),
            json!({"targetCPUUtilizationPercentage": 70}),
            json!([memory_v2, cpu(70)]),
        ),
    ];
    for (annotations, extra, want) in rows {
        let got = hpa(v1_hpa(annotations.clone(), extra.clone()), "autoscaling/v2");
        assert_eq!(got["spec"]["metrics"], want, "{annotations} {extra}");
        assert_eq!(got["metadata"].get("annotations"), None, "{annotations}");
        assert_eq!(
            got["status"],
            json!({"desiredReplicas": 0, "currentMetrics": null})
        );
    }
}

#[test]
fn hpa_v1_bad_metrics_annotation_fails_and_bad_behavior_is_ignored() {
    let bad = json!({"autoscaling.alpha.kubernetes.io/metrics": "{nope"});
    assert!(convert(HPA.0, HPA.1, v1_hpa(bad, json!({})), "autoscaling/v2").is_err());
    for behavior in ["{nope", "{}", r#"{"ScaleUp":{"SelectPolicy":5}}"#] {
        let ann = json!({"autoscaling.alpha.kubernetes.io/behavior": behavior, "keep": "x"});
        let got = hpa(v1_hpa(ann, json!({})), "autoscaling/v2");
        assert_eq!(got["spec"].get("behavior"), None, "{behavior}");
        assert_eq!(got["metadata"]["annotations"], json!({"keep": "x"}));
    }
    // Go's decoder matches member names without case.
    let ann = json!({"autoscaling.alpha.kubernetes.io/behavior":
        r#"{"scaleDown":{"stabilizationWindowSeconds":30,"policies":[{"type":"Pods","value":1,"periodSeconds":9}]}}"#});
    let got = hpa(v1_hpa(ann, json!({})), "autoscaling/v2");
    // With the v2 defaults upstream applies to what it reads back.
    assert_eq!(
        got["spec"]["behavior"],
        json!({"scaleDown": {"stabilizationWindowSeconds": 30,
               "policies": [{"type": "Pods", "value": 1, "periodSeconds": 9}],
               "selectPolicy": "Max"},
               "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
               "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                            {"type": "Percent", "value": 100, "periodSeconds": 15}]}})
    );
}

#[test]
fn hpa_v2_round_trips_through_v1_with_cpu_last() {
    let v2 = fixture("hpa_x2_v2");
    let back = hpa(hpa(v2.clone(), "autoscaling/v1"), "autoscaling/v2");
    let mut metrics = v2["spec"]["metrics"].as_array().unwrap().clone();
    let cpu = metrics.remove(1);
    metrics.push(cpu);
    assert_eq!(back["spec"]["metrics"], Value::Array(metrics));
    assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
    assert_eq!(back["metadata"], v2["metadata"]);
}

#[test]
fn hpa_v2_drops_stale_round_trip_annotations() {
    // A v2 object never keeps them; converting to v1 writes only the ones it has data for.
    let mut v2 = hpa(
        v1_hpa(json!({}), json!({"targetCPUUtilizationPercentage": 50})),
        "autoscaling/v2",
    );
    v2["metadata"]["annotations"] = json!({"autoscaling.alpha.kubernetes.io/metrics": "[]",
        "autoscaling.alpha.kubernetes.io/conditions": "[]"});
    let v1 = hpa(v2, "autoscaling/v1");
    assert_eq!(v1["metadata"].get("annotations"), None);
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], json!(50));
}

#[test]
fn hpa_v1_status_fields_table() {
    let cpu_status = |u: i64| json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}});
    // (v2 status, v1 status)
    let rows = [
        (
            json!({"desiredReplicas": 0, "currentMetrics": null}),
            json!({"currentReplicas": 0, "desiredReplicas": 0}),
        ),
        (
            json!({"observedGeneration": 3, "lastScaleTime": "2026-11-27T10:00:00Z",
                   "currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [cpu_status(40)]}),
            json!({"observedGeneration": 3, "lastScaleTime": "2026-11-27T10:00:00Z",
                   "currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 40}),
        ),
    ];
    for (v2_status, v1_status) in rows {
        let mut v2 = hpa(v1_hpa(json!({}), json!({})), "autoscaling/v2");
        v2["status"] = v2_status.clone();
        let v1 = hpa(v2, "autoscaling/v1");
        assert_eq!(v1["status"], v1_status);
        // Without the annotation, v1's CPU figure is all v2 gets back.
        let mut plain = v1.clone();
        plain["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("annotations");
        assert_eq!(hpa(plain, "autoscaling/v2")["status"], v2_status);
    }
}

#[test]
fn events_convert_both_ways_as_upstream_reads_them() {
    // e1 was written as core v1 with every field, e2 through events.k8s.io/v1 with a series,
    // e3 as a minimal core Event.
    for name in ["event_e1", "event_e2", "event_e3"] {
        let core = fixture(&format!("{name}_core"));
        let events = fixture(&format!("{name}_events"));
        let to_events = convert("events.k8s.io", "events", core.clone(), "events.k8s.io/v1");
        assert_eq!(
            to_events.as_ref(),
            Ok(&events),
            "{name} as events.k8s.io/v1"
        );
        let to_core = convert("", "events", events.clone(), "v1");
        assert_eq!(to_core.as_ref(), Ok(&core), "{name} as v1");
    }
}

#[test]
fn identical_schemas_change_only_the_api_version() {
    let rows = [
        (
            "admissionregistration.k8s.io",
            "mutatingadmissionpolicies",
            "map1_v1",
            "map1_v1alpha1",
        ),
        ("resource.k8s.io", "resourceclaims", "rc1_v1", "rc1_v1beta2"),
        (
            "resource.k8s.io",
            "devicetaintrules",
            "dtr1_v1alpha3",
            "dtr1_v1beta2",
        ),
    ];
    for (group, resource, a, b) in rows {
        let (a, b) = (fixture(a), fixture(b));
        for (from, to) in [(&a, &b), (&b, &a)] {
            let to_version = to["apiVersion"].as_str().unwrap();
            let got = convert(group, resource, from.clone(), to_version);
            assert_eq!(got.as_ref(), Ok(to), "{resource} to {to_version}");
        }
    }
}

#[test]
fn unconvertible_versions_and_resources_are_errors() {
    let rc = fixture("rc1_v1");
    let rows = [
        (
            "resource.k8s.io",
            "resourceclaims",
            rc.clone(),
            "resource.k8s.io/v1alpha3",
        ),
        ("resource.k8s.io", "resourceclaims", rc.clone(), "v1"),
        ("", "configmaps", json!({"apiVersion": "v1"}), "v2"),
        (
            HPA.0,
            HPA.1,
            json!({"apiVersion": "autoscaling/v2"}),
            "autoscaling/v2beta2",
        ),
        (
            "",
            "events",
            json!({"apiVersion": "v1"}),
            "events.k8s.io/v1beta1",
        ),
    ];
    for (group, resource, obj, to) in rows {
        assert!(
            convert(group, resource, obj, to).is_err(),
            "{resource} to {to}"
        );
    }
    // Already in the requested version: returned untouched, whatever the resource.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "x": 1});
    assert_eq!(convert("", "configmaps", cm.clone(), "v1"), Ok(cm));
}

#[test]
fn storage_versions_are_upstreams() {
    let rows = [
        (
            "autoscaling",
            "horizontalpodautoscalers",
            Some("autoscaling/v2"),
        ),
        ("", "events", Some("v1")),
        ("events.k8s.io", "events", Some("v1")),
        (
            "admissionregistration.k8s.io",
            "mutatingadmissionpolicies",
            Some("admissionregistration.k8s.io/v1beta1"),
        ),
        (
            "resource.k8s.io",
            "devicetaintrules",
            Some("resource.k8s.io/v1alpha3"),
        ),
        (
            "coordination.k8s.io",
            "leasecandidates",
            Some("coordination.k8s.io/v1beta1"),
        ),
        ("", "configmaps", None),
    ];
    for (group, resource, want) in rows {
        assert_eq!(
            storage_api_version(group, resource),
            want,
            "{group}/{resource}"
        );
    }
    assert_eq!(
        shared_storage_resource("events.k8s.io", "events"),
        Some(("", "events"))
    );
    assert_eq!(shared_storage_resource("", "events"), None);
    // Every resource converted generically has a storage version among its versions.
    for (group, resource, versions) in IDENTICAL {
        let stored = storage_api_version(group, resource).expect("stored");
        let version = version_in(group, stored).expect("in its group");
        assert!(versions.contains(&version), "{group}/{resource}: {stored}");
    }
}

#[test]
fn hpa_annotations_escape_as_go_does() {
    // Observed: a condition message with HTML characters and U+2028 through a v2 status
    // patch, read as v1 (non-ASCII text otherwise stays as it is).
    let mut v2 = hpa(v1_hpa(json!({}), json!({})), "autoscaling/v2");
    v2["status"]["conditions"] = json!([{"type": "AbleToScale", "status": "True",
        "message": "a<b>&c \u{2028} é", "reason": "R"}]);
    let v1 = hpa(v2, "autoscaling/v1");
    assert_eq!(
        v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/conditions"],
        json!(
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":null,"reason":"R","message":"a\u003cb\u003e\u0026c \u2028 é"}]"#
        )
    );
}

#[test]
fn hpa_without_cpu_utilization_reads_as_v1_without_a_cpu_target() {
    // Observed as y2: written through v1 with only an annotated memory metric; v1 shows no
    // targetCPUUtilizationPercentage and the metric back in the annotation.
    let memory =
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}}]"#;
    let written = v1_hpa(
        json!({"autoscaling.alpha.kubernetes.io/metrics": memory}),
        json!({}),
    );
    let v1 = hpa(hpa(written.clone(), "autoscaling/v2"), "autoscaling/v1");
    assert_eq!(v1["spec"], written["spec"]);
    assert_eq!(
        v1["metadata"]["annotations"],
        written["metadata"]["annotations"]
    );
}

#[test]
fn resource_v1beta1_layouts_match_upstream() {
    // rcb1 (claim: an exact request with selectors, tolerations and count, and a
    // firstAvailable one) and rct2 (template) were written as v1beta1; rs2 (slice with
    // attributes, capacity, taints and an empty device) as v1; rs3 (allNodes) as v1beta1.
    let rows = [
        ("resourceclaims", "rcb1"),
        ("resourceclaimtemplates", "rct2"),
        ("resourceslices", "rs2"),
        ("resourceslices", "rs3"),
    ];
    for (resource, name) in rows {
        let v1 = fixture(&format!("{name}_v1"));
        let beta = fixture(&format!("{name}_v1beta1"));
        let got = convert(
            "resource.k8s.io",
            resource,
            v1.clone(),
            "resource.k8s.io/v1beta1",
        );
        assert_eq!(got.as_ref(), Ok(&beta), "{name} as v1beta1");
        let got = convert(
            "resource.k8s.io",
            resource,
            beta.clone(),
            "resource.k8s.io/v1",
        );
        assert_eq!(got.as_ref(), Ok(&v1), "{name} as v1");
        // v1beta2 has v1's layout.
        let got = convert("resource.k8s.io", resource, beta, "resource.k8s.io/v1beta2");
        assert_eq!(got.unwrap()["spec"], v1["spec"], "{name} as v1beta2");
    }
}

#[test]
fn resource_v1beta1_request_fields_table() {
    // (v1beta1 request, v1 request): `exactly` is made when any flat field is set, an empty
    // selector list included (Go sees a non-nil slice).
    let rows = [
        (
            json!({"name": "a", "deviceClassName": "c", "count": 0}),
            json!({"name": "a", "exactly": {"deviceClassName": "c"}}),
        ),
        (
            json!({"name": "a", "selectors": []}),
            json!({"name": "a", "exactly": {"deviceClassName": ""}}),
        ),
        (
            json!({"name": "a", "deviceClassName": "", "firstAvailable": [{"name": "s"}]}),
            json!({"name": "a", "firstAvailable": [{"name": "s"}]}),
        ),
        (
            json!({"name": "a", "adminAccess": false, "capacity": {"requests": {"m": "1"}}}),
            json!({"name": "a", "exactly": {"deviceClassName": "", "adminAccess": false,
                   "capacity": {"requests": {"m": "1"}}}}),
        ),
    ];
    let claim = |request: &Value, version: &str| {
        json!({"apiVersion": format!("resource.k8s.io/{version}"), "kind": "ResourceClaim",
               "spec": {"devices": {"requests": [request]}}})
    };
    for (beta, v1) in rows {
        let got = convert(
            "resource.k8s.io",
            "resourceclaims",
            claim(&beta, "v1beta1"),
            "resource.k8s.io/v1",
        );
        assert_eq!(got, Ok(claim(&v1, "v1")), "{beta}");
    }
}
