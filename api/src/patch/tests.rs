use super::*;
use serde_json::{json, Value};

#[test]
fn merge_patch_rfc7386_examples() {
    let rows = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a": "b"}), json!(["c"]), json!(["c"])),
        (json!({"a": "foo"}), json!(null), json!(null)),
        (json!({"a": "foo"}), json!("bar"), json!("bar")),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!([1, 2]),
            json!({"a": "b", "c": null}),
            json!({"a": "b"}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (mut target, patch, want) in rows {
        let before = target.clone();
        merge_patch(&mut target, &patch);
        assert_eq!(target, want, "target {before} patch {patch}");
    }
}

#[test]
fn json_patch_operations() {
    let mut doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"args": ["x"]}});
    let patch = json!([
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "one"},
        {"op": "add", "path": "/spec/args/-", "value": "y"},
        {"op": "test", "path": "/spec/args/0", "value": "x"},
        {"op": "copy", "from": "/spec/args", "path": "/spec/copy"},
        {"op": "move", "from": "/spec/copy", "path": "/spec/moved"},
        {"op": "remove", "path": "/spec/args/0"}
    ]);
    json_patch(&mut doc, &patch).expect("applies");
    assert_eq!(
        doc,
        json!({"metadata": {"labels": {"a": "one", "b": "2"}}, "spec": {"args": ["y"], "moved": ["x", "y"]}})
    );
}

#[test]
fn json_patch_errors_match_upstream_statuses() {
    let original = json!({"a": {"b": 1}});
    let rows: Vec<(Value, u16, &str)> = vec![
        (
            json!({"op": "add"}),
            400,
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
        (
            json!(["x"]),
            400,
            "json: cannot unmarshal string into Go value of type jsonpatch.Operation",
        ),
        (
            json!([{"op": "remove", "path": "/nope"}]),
            422,
            "the server rejected our request due to an error in our request",
        ),
        (
            json!([{"op": "replace", "path": "/a/zz", "value": 1}]),
            422,
            "the server rejected our request due to an error in our request",
        ),
        (
            json!([{"op": "test", "path": "/a/b", "value": 2}]),
            422,
            "the server rejected our request due to an error in our request",
        ),
        (
            json!([{"op": "frobnicate", "path": "/a"}]),
            422,
            "the server rejected our request due to an error in our request",
        ),
        (
            json!([{"op": "add", "path": "/a/c", "value": 1}, {"op": "remove", "path": "/missing"}]),
            422,
            "the server rejected our request due to an error in our request",
        ),
    ];
    for (patch, code, message) in rows {
        let mut doc = original.clone();
        let err = json_patch(&mut doc, &patch).expect_err("fails");
        assert_eq!(
            (err.code, err.message.as_str()),
            (code, message),
            "patch {patch}"
        );
        assert_eq!(doc, original, "failed patch leaves the target unchanged");
    }
    let mut doc = original.clone();
    json_patch(&mut doc, &Value::Null).expect("null patch is empty");
    assert_eq!(doc, original);
}

#[test]
fn json_patch_limits() {
    let ops: Vec<Value> = (0..=JSON_PATCH_OPERATIONS_MAX)
        .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
        .collect();
    let mut doc = json!({"a": 1});
    let err = json_patch(&mut doc, &Value::Array(ops)).expect_err("too many");
    assert_eq!(err.code, 413);
    assert_eq!(
        err.message,
        format!("Request entity too large: The allowed maximum operations in a JSON patch is 10000, got {}", JSON_PATCH_OPERATIONS_MAX + 1)
    );
    let mut doc = json!({"a": ["x".repeat(1024)]});
    let doubling: Vec<Value> = (0..30)
        .map(|_| json!({"op": "copy", "from": "/a", "path": "/a/-"}))
        .collect();
    let err = json_patch(&mut doc, &Value::Array(doubling)).expect_err("copy growth is bounded");
    assert_eq!(err.code, 422);
}

/// Pod-like merge metadata for tests, as the published schemas declare it.
struct PodMeta;

impl MergeMeta for PodMeta {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match path {
            ["metadata", "finalizers"] => ListStrategy::MergePrimitives,
            [.., "containers"] | [.., "volumes"] | [.., "env"] => {
                ListStrategy::MergeByKey("name".into())
            }
            [.., "containers", "ports"] => ListStrategy::MergeByKey("containerPort".into()),
            _ => ListStrategy::Atomic,
        }
    }
}

fn smp(original: Value, patch: Value) -> Result<Value, crate::ApiError> {
    strategic_merge_patch(&original, &patch, &PodMeta)
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("list")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or(""))
        .collect()
}

#[test]
fn smp_merges_lists_by_key() {
    let pod = json!({"spec": {"containers": [
        {"name": "a", "image": "a:1", "ports": [{"containerPort": 80, "name": "http"}], "args": ["x", "y"]},
        {"name": "b", "image": "b:1"}]}});
    let out = smp(pod.clone(), json!({"spec": {"containers": [
        {"name": "a", "image": "a:2", "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}], "args": ["z"]}]}}))
    .expect("merges");
    let a = &out["spec"]["containers"][0];
    assert_eq!(names(&out["spec"]["containers"]), vec!["a", "b"]);
    assert_eq!(a["image"], json!("a:2"));
    assert_eq!(a["args"], json!(["z"]), "atomic lists are replaced");
    assert_eq!(
        a["ports"],
        json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}])
    );
    let added = smp(
        pod.clone(),
        json!({"spec": {"containers": [{"name": "c", "image": "c:1"}]}}),
    )
    .expect("adds");
    assert_eq!(
        names(&added["spec"]["containers"]),
        vec!["c", "a", "b"],
        "upstream puts new items first"
    );
}

#[test]
fn smp_directives_in_lists_and_maps() {
    let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}], "volumes": [{"name": "v", "emptyDir": {}}],
        "securityContext": {"runAsUser": 1, "fsGroup": 2}}});
    let deleted = smp(
        pod.clone(),
        json!({"spec": {"containers": [{"$patch": "delete", "name": "a"}]}}),
    )
    .expect("delete");
    assert_eq!(names(&deleted["spec"]["containers"]), vec!["b"]);
    let replaced = smp(
        pod.clone(),
        json!({"spec": {"containers": [{"name": "z"}, {"$patch": "replace"}]}}),
    )
    .expect("replace");
    assert_eq!(replaced["spec"]["containers"], json!([{"name": "z"}]));
    let map_replace = smp(
        pod.clone(),
        json!({"spec": {"securityContext": {"$patch": "replace", "runAsUser": 5}}}),
    )
    .expect("map replace");
    assert_eq!(
        map_replace["spec"]["securityContext"],
        json!({"runAsUser": 5})
    );
    let map_delete = smp(
        pod.clone(),
        json!({"spec": {"securityContext": {"$patch": "delete"}}}),
    )
    .expect("map delete");
    assert_eq!(map_delete["spec"]["securityContext"], json!({}));
    let nulls = smp(pod.clone(), json!({"spec": {"volumes": null, "securityContext": {"fsGroup": null}, "new": {"x": null, "y": 1}}})).expect("nulls");
    assert!(nulls["spec"].get("volumes").is_none());
    assert_eq!(nulls["spec"]["securityContext"], json!({"runAsUser": 1}));
    assert_eq!(
        nulls["spec"]["new"],
        json!({"y": 1}),
        "nulls inside new values are dropped"
    );
    let fresh = smp(json!({}), json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": null}]}, {"$patch": "delete", "name": "q"}]}})).expect("fresh list");
    assert_eq!(
        fresh,
        json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X"}]}]}}),
        "directives never stored"
    );
}

#[test]
fn smp_primitive_lists() {
    let obj = json!({"metadata": {"finalizers": ["a", "b"]}});
    let added = smp(obj.clone(), json!({"metadata": {"finalizers": ["b", "c"]}})).expect("merge");
    assert_eq!(added["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let prepended = smp(obj.clone(), json!({"metadata": {"finalizers": ["c"]}})).expect("merge");
    assert_eq!(prepended["metadata"]["finalizers"], json!(["c", "a", "b"]));
    let removed = smp(
        obj.clone(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zz"]}}),
    )
    .expect("delete");
    assert_eq!(removed["metadata"]["finalizers"], json!(["b"]));
    let both = smp(
        obj.clone(),
        json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"]}}),
    )
    .expect("both");
    assert_eq!(both["metadata"]["finalizers"], json!(["c", "b"]));
    let absent = smp(
        json!({"metadata": {}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    )
    .expect("absent");
    assert_eq!(absent, json!({"metadata": {}}));
    let reordered = smp(
        obj,
        json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
    )
    .expect("order");
    assert_eq!(reordered["metadata"]["finalizers"], json!(["b", "a"]));
}

/// The shapes kubectl's client-side apply sends.
#[test]
fn smp_kubectl_apply_shapes() {
    let deploy = json!({"spec": {
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        "template": {"spec": {"containers": [
            {"name": "web", "image": "web:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}]},
            {"name": "old", "image": "old:1"}]}}}});
    let patch = json!({"spec": {
        "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
        "template": {"spec": {
            "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "web"}],
            "containers": [
                {"name": "sidecar", "image": "side:1"},
                {"name": "web", "image": "web:2", "$setElementOrder/env": [{"name": "B"}, {"name": "A"}], "env": [{"name": "A", "value": "2"}]},
                {"$patch": "delete", "name": "old"}]}}}});
    let out = smp(deploy, patch).expect("applies");
    assert_eq!(
        out["spec"]["strategy"],
        json!({"type": "Recreate"}),
        "$retainKeys drops other keys"
    );
    let containers = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(names(containers), vec!["sidecar", "web"]);
    assert_eq!(containers[1]["image"], json!("web:2"));
    assert_eq!(
        containers[1]["env"],
        json!([{"name": "B", "value": "1"}, {"name": "A", "value": "2"}])
    );
    assert!(
        !out.to_string().contains('$'),
        "no directive survives: {out}"
    );
    let order_only = smp(
        json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
        json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
    )
    .expect("reorder");
    assert_eq!(names(&order_only["spec"]["containers"]), vec!["b", "a"]);
}

#[test]
fn smp_errors_match_upstream_statuses() {
    let pod = json!({"spec": {"containers": [{"name": "a"}], "strategy": {"type": "x"}}});
    let rows: Vec<(Value, Value, u16, &str)> = vec![
        (
            pod.clone(),
            json!([1]),
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            pod.clone(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            pod.clone(),
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            pod.clone(),
            json!({"spec": {"$setElementOrder/containers": "a"}}),
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            pod.clone(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
            400,
            "invalid patch format of primitive list",
        ),
        (
            json!({"metadata": {"finalizers": [["a"]]}}),
            json!({"metadata": {"finalizers": [["b"]]}}),
            422,
            "the server rejected our request due to an error in our request",
        ),
        (
            pod.clone(),
            json!({"spec": {"containers": [{"image": "x"}]}}),
            500,
            "map: {\"image\":\"x\"} does not contain declared merge key: name",
        ),
        (
            pod.clone(),
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            pod.clone(),
            json!({"spec": {"strategy": {"$patch": "frob"}}}),
            500,
            "unknown patch type: frob in map: {}",
        ),
    ];
    for (original, patch, code, message) in rows {
        let err = smp(original, patch.clone()).expect_err("fails");
        assert_eq!(
            (err.code, err.message.as_str()),
            (code, message),
            "patch {patch}"
        );
    }
    let mismatch = smp(
        json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
        json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "b"}]}}),
    )
    .expect_err("order mismatch");
    assert_eq!(mismatch.code, 500);
    assert!(mismatch.message.starts_with("The order in patch list:"));
}
