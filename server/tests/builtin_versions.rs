//! Built-in resources served in several versions, with kubectl against the real binary:
//! objects are stored in upstream's storage version and read in any served version, as
//! upstream v1.36.2 answers them (the texts below were recorded from it): a
//! HorizontalPodAutoscaler written through autoscaling/v2 read through v1 (its v2-only
//! metrics and behavior carried in annotations) and the other way round, and core and
//! events.k8s.io Events as one set of objects.

mod common;

use common::server;
use serde_json::{json, Value};

fn create(s: &common::Server, obj: &Value) -> Value {
    let out = s.kubectl_stdin(&["create", "-o", "json", "-f", "-"], &obj.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn raw(s: &common::Server, path: &str) -> Value {
    serde_json::from_str(&s.ok(&["get", "--raw", path])).unwrap()
}

#[test]
fn an_autoscaler_written_through_v2_reads_through_v1_and_back() {
    let s = server();
    let ns = s.namespace("hpa-versions");
    let written = create(
        s,
        &json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h1", "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 9,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"},
                        "target": {"type": "AverageValue", "averageValue": "10"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}}}}),
    );
    assert_eq!(written["apiVersion"], "autoscaling/v2");
    let v1 = raw(
        s,
        &format!("/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers/h1"),
    );
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["metadata"]["uid"], written["metadata"]["uid"]);
    assert_eq!(
        v1["spec"],
        json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
               "minReplicas": 2, "maxReplicas": 9, "targetCPUUtilizationPercentage": 60})
    );
    assert_eq!(
        v1["metadata"]["annotations"],
        json!({
            "autoscaling.alpha.kubernetes.io/behavior": "{\"ScaleUp\":{\"StabilizationWindowSeconds\":0,\"SelectPolicy\":\"Max\",\"Policies\":[{\"Type\":\"Pods\",\"Value\":4,\"PeriodSeconds\":15},{\"Type\":\"Percent\",\"Value\":100,\"PeriodSeconds\":15}],\"Tolerance\":null},\"ScaleDown\":{\"StabilizationWindowSeconds\":120,\"SelectPolicy\":\"Max\",\"Policies\":[{\"Type\":\"Percent\",\"Value\":100,\"PeriodSeconds\":15}],\"Tolerance\":null}}",
            "autoscaling.alpha.kubernetes.io/metrics": "[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"qps\",\"targetAverageValue\":\"10\"}}]"
        })
    );
    assert_eq!(
        v1["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    // kubectl reads it through v1 too.
    let named = s.json(&[
        "get",
        "-n",
        &ns,
        "horizontalpodautoscalers.v1.autoscaling",
        "h1",
        "-o",
        "json",
    ]);
    assert_eq!(named["spec"]["targetCPUUtilizationPercentage"], 60);
    // A v1 write (kubectl edit's replace) keeps the v2-only data through the annotations.
    let mut edited = v1.clone();
    edited["spec"]["maxReplicas"] = json!(12);
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &edited.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v2 = raw(
        s,
        &format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/h1"),
    );
    assert_eq!(v2["spec"]["maxReplicas"], 12);
    // Upstream's order after the round trip: the annotation's metrics, then v1's CPU target.
    let metrics = written["spec"]["metrics"].as_array().unwrap();
    assert_eq!(v2["spec"]["metrics"], json!([metrics[1], metrics[0]]));
    assert_eq!(v2["spec"]["behavior"], written["spec"]["behavior"]);
    assert_eq!(v2["metadata"].get("annotations"), None);
    // Written through v1 without a target: 80 % CPU, as upstream's conversion sets it.
    create(
        s,
        &json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h2", "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 5}}),
    );
    let v2 = raw(
        s,
        &format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/h2"),
    );
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
}

#[test]
fn core_and_events_api_events_are_one_set_of_objects() {
    let s = server();
    let ns = s.namespace("event-versions");
    let core = create(
        s,
        &json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": ns},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
            "reason": "Started", "message": "hello", "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:01Z",
            "count": 2}),
    );
    create(
        s,
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e2", "namespace": ns},
            "regarding": {"kind": "Pod", "name": "p", "namespace": ns},
            "reason": "Pulled", "note": "img", "type": "Normal", "action": "Pull",
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "kubelet", "reportingInstance": "n1"}),
    );
    let as_new = raw(
        s,
        &format!("/apis/events.k8s.io/v1/namespaces/{ns}/events/e1"),
    );
    assert_eq!(as_new["metadata"]["uid"], core["metadata"]["uid"]);
    let mut body = as_new.clone();
    body.as_object_mut().unwrap().remove("metadata");
    assert_eq!(
        body,
        json!({"kind": "Event", "apiVersion": "events.k8s.io/v1", "eventTime": null,
            "reason": "Started", "regarding": {"kind": "Pod", "name": "p", "namespace": ns},
            "note": "hello", "type": "Normal",
            "deprecatedSource": {"component": "kubelet", "host": "n1"},
            "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
            "deprecatedLastTimestamp": "2026-01-01T00:00:01Z", "deprecatedCount": 2})
    );
    let as_core = raw(s, &format!("/api/v1/namespaces/{ns}/events/e2"));
    assert_eq!(as_core["apiVersion"], "v1");
    assert_eq!(as_core["message"], "img");
    assert_eq!(as_core["involvedObject"]["name"], "p");
    assert_eq!(as_core["reportingComponent"], "kubelet");
    assert_eq!(as_core["reportingInstance"], "n1");
    // Each group lists both, each in its own version.
    for (path, version) in [
        (format!("/api/v1/namespaces/{ns}/events"), "v1"),
        (
            format!("/apis/events.k8s.io/v1/namespaces/{ns}/events"),
            "events.k8s.io/v1",
        ),
    ] {
        let list = raw(s, &path);
        let items = list["items"].as_array().unwrap();
        let names: Vec<&str> = items
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["e1", "e2"], "{path}");
        assert!(items.iter().all(|i| i["apiVersion"] == version), "{path}");
    }
    // Deleting through one group deletes it for both.
    s.ok(&["delete", "-n", &ns, "events.events.k8s.io", "e1"]);
    assert!(
        s.kubectl(&["get", "-n", &ns, "events.v1.", "e1"])
            .status
            .code()
            != Some(0)
    );
}
