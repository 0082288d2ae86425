//! Typed operations on a Deployment-shaped schema and on the deduced schema.

mod common;

use keel_smd::schema::{Schema, TypeRef};
use keel_smd::typed::{compare, merge, remove_items, to_field_set};
use keel_smd::Set;
use serde_json::{json, Value};

fn fs(v: &Value) -> String {
    to_field_set(&common::schema(), &common::root(), v)
        .unwrap()
        .to_fields_v1()
}

#[test]
fn field_set_shapes() {
    // (object, its FieldsV1): one row per rule of the walk.
    let cases = [
        // Scalars are members; a struct field holding a non-empty struct is only a prefix.
        (
            json!({"spec": {"replicas": 3}}),
            r#"{"f:spec":{"f:replicas":{}}}"#,
        ),
        // Map keys (not declared fields) are members as well as prefixes.
        (
            json!({"metadata": {"labels": {"app": "x"}}}),
            r#"{"f:metadata":{"f:labels":{"f:app":{}}}}"#,
        ),
        // Empty objects and nulls are members.
        (
            json!({"metadata": {"labels": {}}, "spec": {"paused": null}}),
            r#"{"f:metadata":{"f:labels":{}},"f:spec":{"f:paused":{}}}"#,
        ),
        // An atomic struct (the selector) and an atomic list (args) are single leaves.
        (
            json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": [{"name": "c", "args": ["x", "y"]}]}}}}),
            r#"{"f:spec":{"f:selector":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:args":{},"f:name":{}}}}}}}"#,
        ),
        // Set items by value; multi-key items with a defaulted key (protocol TCP).
        (
            json!({"metadata": {"finalizers": ["b", "a"]}, "spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}}}),
            r#"{"f:metadata":{"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#,
        ),
        // An empty granular list sets nothing (upstream's shape).
        (json!({"metadata": {"finalizers": []}}), r#"{}"#),
        // An atomic map is one leaf.
        (
            json!({"spec": {"template": {"spec": {"nodeSelector": {"a": "b"}}}}}),
            r#"{"f:spec":{"f:template":{"f:spec":{"f:nodeSelector":{}}}}}"#,
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(fs(&obj), want, "{obj}");
    }
}

#[test]
fn duplicated_list_items_are_owned_whole() {
    let obj = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "a"}, {"name": "c", "image": "b"}]}}}});
    assert_eq!(
        fs(&obj),
        r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{}}}}}}"#
    );
}

#[test]
fn bad_list_items_are_errors() {
    let schema = common::schema();
    let cases = [
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)",
        ),
        (
            json!({"metadata": {"finalizers": [{"a": 1}]}}),
            ".metadata.finalizers: element 0: associative list without keys has an element that's a map type",
        ),
        (
            json!({"metadata": {"labels": "x"}}),
            ".metadata.labels: expected map, got \"x\"",
        ),
    ];
    for (obj, want) in cases {
        let e = to_field_set(&schema, &common::root(), &obj).unwrap_err();
        assert_eq!(e.to_string(), want);
    }
}

#[test]
fn compare_reports_added_modified_removed() {
    let schema = common::schema();
    let old = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    let new = json!({"metadata": {"labels": {"a": "1", "c": "3"}}, "spec": {"replicas": 2, "paused": true, "template": {"spec": {"containers": [{"name": "d", "image": "y"}]}}}});
    let c = compare(&schema, &common::root(), &old, &new).unwrap();
    assert_eq!(
        c.added.to_fields_v1(),
        r#"{"f:metadata":{"f:labels":{"f:c":{}}},"f:spec":{"f:paused":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"d\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
    );
    assert_eq!(c.modified.to_fields_v1(), r#"{"f:spec":{"f:replicas":{}}}"#);
    assert_eq!(
        c.removed.to_fields_v1(),
        r#"{"f:metadata":{"f:labels":{"f:b":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
    );
    assert!(compare(&schema, &common::root(), &old, &old)
        .unwrap()
        .is_same());
    // 1 and 1.0 are the same number.
    let one = json!({"spec": {"replicas": 1.0}});
    assert!(compare(
        &schema,
        &common::root(),
        &json!({"spec": {"replicas": 1}}),
        &one
    )
    .unwrap()
    .is_same());
}

#[test]
fn merge_rules() {
    let schema = common::schema();
    let m = |l: Value, r: Value| merge(&schema, &common::root(), &l, &r).unwrap();
    // (live, applied, merged)
    let cases = [
        // Applied value wins; untouched fields stay; live key order first.
        (
            json!({"spec": {"replicas": 1, "paused": false}}),
            json!({"spec": {"replicas": 3}, "metadata": {"name": "x"}}),
            json!({"spec": {"replicas": 3, "paused": false}, "metadata": {"name": "x"}}),
        ),
        // Granular maps merge key by key.
        (
            json!({"metadata": {"labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"b": "2"}}}),
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
        ),
        // Atomic maps and structs are replaced.
        (
            json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {"spec": {"nodeSelector": {"a": "1"}}}}}),
            json!({"spec": {"selector": {"matchLabels": {"b": "2"}}, "template": {"spec": {"nodeSelector": {"b": "2"}}}}}),
            json!({"spec": {"selector": {"matchLabels": {"b": "2"}}, "template": {"spec": {"nodeSelector": {"b": "2"}}}}}),
        ),
        // Sets are unioned, live order then new items.
        (
            json!({"metadata": {"finalizers": ["b", "a"]}}),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
            json!({"metadata": {"finalizers": ["b", "c", "a"]}}),
        ),
        // List-maps merge by key; items are merged field by field.
        (
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1", "args": ["x"]}, {"name": "b", "image": "2"}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "3"}, {"name": "c", "image": "4"}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1", "args": ["x"]}, {"name": "b", "image": "3"}, {"name": "c", "image": "4"}]}}}}),
        ),
        // New items go after the applied item they follow, before later live items.
        (
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "z"}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "n"}, {"name": "b"}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "n"}, {"name": "b"}, {"name": "z"}]}}}}),
        ),
        // Atomic lists are replaced.
        (
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["z"]}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["z"]}]}}}}),
        ),
    ];
    for (live, applied, want) in cases {
        let got = m(live.clone(), applied.clone());
        assert_eq!(got, want, "{live} + {applied}");
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap(),
            "key order of {live} + {applied}"
        );
    }
    // Duplicate keys in the applied list are refused.
    let dup =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
    let e = merge(&schema, &common::root(), &json!({}), &dup).unwrap_err();
    assert_eq!(
        e.to_string(),
        ".spec.template.spec.containers: duplicate entries for key [name=\"a\"]"
    );
}

/// List-map merges where the applied order differs from the live one, or the live list
/// repeats a key: the merge's fast path for lists in the same order must not change these
/// (the expected lists are what the general path gave before it existed).
#[test]
fn list_merges_out_of_order_and_with_repeated_live_keys() {
    let schema = common::schema();
    let list = |names: &[&str]| {
        let items: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"name": n, "image": format!("{n}{i}")}))
            .collect();
        json!({"spec": {"template": {"spec": {"containers": items}}}})
    };
    let cases: [(&[&str], &[&str], &[&str]); 6] = [
        (&["a", "b", "c"], &["c", "a"], &["b1", "c0", "a1"]),
        (
            &["a", "b", "c"],
            &["b", "x", "a"],
            &["b0", "c2", "x1", "a2"],
        ),
        (&["a", "a", "b"], &["b", "a"], &["b0", "a1"]),
        (&["a", "a", "b"], &["a", "b"], &["a0", "b1"]),
        (
            &["a", "b", "a", "c"],
            &["c", "b"],
            &["a0", "a2", "c0", "b1"],
        ),
        (
            &["x", "a", "y", "b"],
            &["b", "z", "a"],
            &["x0", "y2", "b0", "z1", "a2"],
        ),
    ];
    for (live, applied, want) in cases {
        let got = merge(&schema, &common::root(), &list(live), &list(applied)).unwrap();
        let images: Vec<&str> = got["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["image"].as_str().unwrap())
            .collect();
        assert_eq!(images, want, "{live:?} + {applied:?}");
    }
}

#[test]
fn remove_items_prunes_keys_and_items() {
    let schema = common::schema();
    let obj = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d"}]}}}});
    let set = Set::from_fields_v1(
        r#"{"f:metadata":{"f:finalizers":{"v:\"x\"":{},"v:\"y\"":{}},"f:labels":{"f:a":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{"f:image":{}},"k:{\"name\":\"d\"}":{}}}}}}"#,
    )
    .unwrap();
    let got = remove_items(&schema, &common::root(), &obj, &set);
    assert_eq!(
        got,
        json!({"metadata": {"labels": {"b": "2"}, "finalizers": []}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}})
    );
}

/// Apply rule 10: without markers (deduced schema) maps are granular structs and lists
/// are atomic.
#[test]
fn deduced_schema_maps_granular_lists_atomic() {
    let schema = Schema::deduced();
    let root = TypeRef::deduced();
    let obj = json!({"spec": {"a": 1, "list": [{"name": "x"}], "m": {"k": "v"}}});
    let set = to_field_set(&schema, &root, &obj).unwrap();
    assert_eq!(
        set.to_fields_v1(),
        r#"{"f:spec":{".":{},"f:a":{},"f:list":{},"f:m":{".":{},"f:k":{}}}}"#
    );
    let merged = merge(
        &schema,
        &root,
        &obj,
        &json!({"spec": {"list": [{"name": "y"}], "m": {"j": "w"}}}),
    )
    .unwrap();
    assert_eq!(
        merged,
        json!({"spec": {"a": 1, "list": [{"name": "y"}], "m": {"k": "v", "j": "w"}}})
    );
    // A value changing kind: the atomic list side is a modified leaf, the map's contents
    // are added (upstream walks both kinds).
    let c = compare(&schema, &root, &json!({"x": [1]}), &json!({"x": {"a": 1}})).unwrap();
    assert_eq!(c.modified.to_fields_v1(), r#"{"f:x":{}}"#);
    assert_eq!(c.added.to_fields_v1(), r#"{"f:x":{"f:a":{}}}"#);
    assert!(c.removed.is_empty());
    let c = compare(&schema, &root, &json!({"x": {"a": 1}}), &json!({"x": "s"})).unwrap();
    assert_eq!(c.modified.to_fields_v1(), r#"{"f:x":{}}"#);
    assert_eq!(c.removed.to_fields_v1(), r#"{"f:x":{"f:a":{}}}"#);
    assert_eq!(
        merge(&schema, &root, &json!({"x": [1]}), &json!({"x": {"a": 1}})).unwrap(),
        json!({"x": {"a": 1}})
    );
}
