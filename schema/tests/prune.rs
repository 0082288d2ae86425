//! `prune` drops exactly the undeclared fields.

use keel_schema::{schemas, Gvk};
use serde_json::json;

#[test]
fn drops_exactly_unknown_fields() {
    let pod = Gvk {
        group: "",
        version: "v1",
        kind: "Pod",
    };
    let mut obj = json!({
        "apiVersion": "v1", "kind": "Pod", "bogus": 1,
        "metadata": {"name": "p", "labels": {"any-key": "kept"}, "extra": true,
                     "managedFields": [{"fieldsV1": {"f:anything": {}}, "nope": 1}]},
        "spec": {"containers": [{"name": "c", "image": "i", "foo": "x",
                                 "resources": {"limits": {"example.com/gpu": "1"}},
                                 "ports": [{"containerPort": 80, "bar": 1}]}],
                 "unknownSpec": {}},
    });
    schemas().prune(&pod, &mut obj);
    assert_eq!(
        obj,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"any-key": "kept"},
                         "managedFields": [{"fieldsV1": {"f:anything": {}}}]},
            "spec": {"containers": [{"name": "c", "image": "i",
                                     "resources": {"limits": {"example.com/gpu": "1"}},
                                     "ports": [{"containerPort": 80}]}]},
        })
    );
}

#[test]
fn valid_objects_and_unknown_kinds_are_untouched() {
    let cm = Gvk {
        group: "",
        version: "v1",
        kind: "ConfigMap",
    };
    let original = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
    let mut obj = original.clone();
    schemas().prune(&cm, &mut obj);
    assert_eq!(obj, original);
    let widget = Gvk {
        group: "example.com",
        version: "v1",
        kind: "Widget",
    };
    let mut obj = json!({"spec": {"whatever": 1}});
    schemas().prune(&widget, &mut obj);
    assert_eq!(obj, json!({"spec": {"whatever": 1}}));
}
