//! Custom resources in the OpenAPI documents, against what a real kube-apiserver v1.36.2
//! published for the same CRDs (`tests/crd/upstream-*.json`, each naming its source):
//! `oa-schema.json` is a namespaced `Widget` with status and scale subresources and a schema
//! exercising nullable, int-or-string, enum/example, defaults, oneOf, embedded resources,
//! nested preserve-unknown-fields and CEL rules; `ob-schema.json` a cluster-scoped `Gadget`
//! with `x-kubernetes-preserve-unknown-fields` at the root.
//!
//! The CRD definitions (v2 and v3) and the v3 paths match byte for byte; v2 paths match in
//! content (keel writes parameters inline where upstream shares them under `parameters`, and
//! in its own key order), as do the built-in meta definitions both reference.

use std::sync::Arc;

use keel_schema::{schemas, ResourceDesc, CUSTOM_SCHEMA_DEPTH_MAX};
use serde_json::{json, Value};

const OA: &str = "oa.d.example.com";
const OB: &str = "ob.d.example.com";

fn fixture(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture is JSON")
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn crd(group: &str, kind: &str, plural: &str, namespaced: bool, subs: &[&str]) -> ResourceDesc {
    ResourceDesc {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
        verbs: strings(&[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]),
        subresources: subs
            .iter()
            .map(|s| {
                let kind = if *s == "scale" {
                    "autoscaling/v1/Scale"
                } else {
                    kind
                };
                (
                    s.to_string(),
                    kind.to_string(),
                    strings(&["get", "patch", "update"]),
                )
            })
            .collect(),
        custom_schema: Some(Arc::new(Value::Null)),
    }
}

fn with_schema(mut r: ResourceDesc, schema: Value) -> ResourceDesc {
    r.custom_schema = Some(Arc::new(schema));
    r
}

fn widget() -> ResourceDesc {
    with_schema(
        crd(OA, "Widget", "widgets", true, &["status", "scale"]),
        fixture(include_str!("crd/oa-schema.json")),
    )
}

fn gadget() -> ResourceDesc {
    with_schema(
        crd(OB, "Gadget", "gadgets", false, &[]),
        fixture(include_str!("crd/ob-schema.json")),
    )
}

fn pod() -> ResourceDesc {
    ResourceDesc {
        group: String::new(),
        version: "v1".into(),
        kind: "Pod".into(),
        plural: "pods".into(),
        namespaced: true,
        verbs: strings(&["get", "list"]),
        subresources: Vec::new(),
        custom_schema: None,
    }
}

fn resources() -> Vec<ResourceDesc> {
    vec![pod(), widget(), gadget()]
}

fn v3(group: &str, rs: &[ResourceDesc]) -> Value {
    let bytes = schemas()
        .openapi_v3_group_version(group, "v1", rs)
        .expect("group/version is served");
    serde_json::from_slice(&bytes).expect("document is JSON")
}

fn v2(rs: &[ResourceDesc]) -> Value {
    serde_json::from_slice(&schemas().openapi_v2(rs)).expect("document is JSON")
}

/// The first difference between two values, as a path (for readable failures).
fn first_difference(want: &Value, got: &Value, at: &str) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for key in w.keys().chain(g.keys()) {
                let path = format!("{at}/{key}");
                match (w.get(key), g.get(key)) {
                    (Some(a), Some(b)) => {
                        if let Some(d) = first_difference(a, b, &path) {
                            return Some(d);
                        }
                    }
                    (a, b) => return Some(format!("{path}: want {a:?}, got {b:?}")),
                }
            }
            None
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (a, b))| first_difference(a, b, &format!("{at}[{i}]"))),
        _ if want == got => None,
        _ => Some(format!("{at}: want {want}, got {got}")),
    }
}

fn assert_same(want: &Value, got: &Value, what: &str) {
    if let Some(d) = first_difference(want, got, "") {
        panic!("{what} differs from upstream at {d}");
    }
}

/// Key order too: a custom resource's definitions and v3 paths come out byte for byte as
/// upstream writes them (serde_json keeps insertion order here: keel-proto turns on
/// `preserve_order`, so the fixture is read in upstream's order).
fn assert_same_bytes(want: &Value, got: &Value, what: &str) {
    assert_eq!(
        serde_json::to_string(want).unwrap(),
        serde_json::to_string(got).unwrap(),
        "{what}: same content, different key order"
    );
}

#[test]
fn v3_group_version_of_a_crd_is_upstreams() {
    for (group, upstream) in [
        (OA, fixture(include_str!("crd/upstream-v3-oa.json"))),
        (OB, fixture(include_str!("crd/upstream-v3-ob.json"))),
    ] {
        let doc = v3(group, &resources());
        assert_same(&upstream["paths"], &doc["paths"], &format!("{group} paths"));
        assert_same_bytes(&upstream["paths"], &doc["paths"], &format!("{group} paths"));
        assert_same(&upstream["info"], &doc["info"], &format!("{group} info"));
        assert_eq!(doc["openapi"], "3.0.0");
        // The CRD controller's documents carry no security schemes.
        assert_eq!(
            doc["components"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["schemas"]
        );
        for (name, schema) in upstream["schemas"].as_object().unwrap() {
            assert_same(schema, &doc["components"]["schemas"][name], name);
            assert_same_bytes(schema, &doc["components"]["schemas"][name], name);
        }
        let names: Vec<&String> = doc["components"]["schemas"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let mut names: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        names.sort();
        let want: Vec<&str> = upstream["component_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert_eq!(
            names, want,
            "{group}: the closure of referenced definitions"
        );
    }
}

#[test]
fn v3_operation_ids_and_kubectl_facing_fields() {
    let doc = v3(OA, &resources());
    let mut ids: Vec<(String, String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if method != "parameters" {
                ids.push((
                    path.trim_start_matches("/apis/oa.d.example.com/v1")
                        .to_owned(),
                    method.clone(),
                    op["operationId"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    ids.sort();
    let ns = "/namespaces/{namespace}/widgets";
    let want = [
        (
            ns,
            "delete",
            "deleteOaDExampleComV1CollectionNamespacedWidget",
        ),
        (ns, "get", "listOaDExampleComV1NamespacedWidget"),
        (ns, "post", "createOaDExampleComV1NamespacedWidget"),
        (
            "/namespaces/{namespace}/widgets/{name}",
            "delete",
            "deleteOaDExampleComV1NamespacedWidget",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}",
            "get",
            "readOaDExampleComV1NamespacedWidget",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}",
            "patch",
            "patchOaDExampleComV1NamespacedWidget",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}",
            "put",
            "replaceOaDExampleComV1NamespacedWidget",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}/scale",
            "get",
            "readOaDExampleComV1NamespacedWidgetScale",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}/scale",
            "patch",
            "patchOaDExampleComV1NamespacedWidgetScale",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}/scale",
            "put",
            "replaceOaDExampleComV1NamespacedWidgetScale",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}/status",
            "get",
            "readOaDExampleComV1NamespacedWidgetStatus",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}/status",
            "patch",
            "patchOaDExampleComV1NamespacedWidgetStatus",
        ),
        (
            "/namespaces/{namespace}/widgets/{name}/status",
            "put",
            "replaceOaDExampleComV1NamespacedWidgetStatus",
        ),
        (
            "/widgets",
            "get",
            "listOaDExampleComV1WidgetForAllNamespaces",
        ),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(p, m, id)| (p.to_string(), m.to_string(), id.to_string()))
        .collect();
    assert_eq!(ids, want, "no watch paths, no discovery path");

    // kubectl's query-param verifier and `kubectl apply` read these.
    let scale =
        &doc["paths"]["/apis/oa.d.example.com/v1/namespaces/{namespace}/widgets/{name}/scale"];
    assert_eq!(
        scale["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": OA, "kind": "Widget", "version": "v1"}),
        "upstream labels scale operations with the custom resource's GVK"
    );
    assert_eq!(
        scale["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
    );
    let patch =
        &doc["paths"]["/apis/oa.d.example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    let media: Vec<&String> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert!(!media.iter().any(|m| m.contains("strategic")), "{media:?}");
    assert!(patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation"));
    assert_eq!(patch["tags"], json!(["oaDExampleCom_v1"]));
}

#[test]
fn v3_root_lists_crd_group_versions_by_hash() {
    let rs = resources();
    let root: Value = serde_json::from_slice(&schemas().openapi_v3_root(&rs)).unwrap();
    for group in [OA, OB] {
        let etag = schemas()
            .openapi_v3_group_version_doc(group, "v1", &rs)
            .unwrap()
            .etag;
        assert_eq!(
            root["paths"][format!("apis/{group}/v1")]["serverRelativeURL"],
            format!("/openapi/v3/apis/{group}/v1?hash={etag}")
        );
    }
    assert!(root["paths"].get("api/v1").is_some());
    // A schema change is a new document, with a new hash, in the root.
    let mut changed = rs.clone();
    changed[1] = with_schema(
        crd(OA, "Widget", "widgets", true, &[]),
        json!({"type": "object", "properties": {"spec": {"type": "string"}}}),
    );
    let root2: Value = serde_json::from_slice(&schemas().openapi_v3_root(&changed)).unwrap();
    assert_ne!(
        root["paths"]["apis/oa.d.example.com/v1"],
        root2["paths"]["apis/oa.d.example.com/v1"]
    );
    assert_eq!(
        root["paths"]["apis/ob.d.example.com/v1"],
        root2["paths"]["apis/ob.d.example.com/v1"]
    );
}

#[test]
fn v2_has_upstreams_crd_paths_and_definitions() {
    let upstream = fixture(include_str!("crd/upstream-v2.json"));
    let doc = v2(&resources());
    for (path, item) in upstream["paths"].as_object().unwrap() {
        assert_same(item, &doc["paths"][path], path);
    }
    let crd_paths = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|p| p.contains(".d.example.com"))
        .count();
    assert_eq!(crd_paths, upstream["paths"].as_object().unwrap().len());
    for (name, def) in upstream["definitions"].as_object().unwrap() {
        assert_same(def, &doc["definitions"][name], name);
        assert_same_bytes(def, &doc["definitions"][name], name);
    }
    // keel-proto converts the document with CRD schemas (CEL rules, examples, int-or-string).
    assert!(schemas().openapi_v2_protobuf_doc(&resources()).is_ok());
    // Built-ins are still there, with their discovery path.
    assert!(doc["paths"].get("/api/v1/").is_some());
    assert!(doc["definitions"].get("io.k8s.api.core.v1.Pod").is_some());
}

#[test]
fn v2_drops_what_kubectl_cannot_read() {
    let doc = v2(&resources());
    let widget = &doc["definitions"]["com.example.d.oa.v1.Widget"];
    let spec = &widget["properties"]["spec"];
    // nullable: type gone, and no longer required; int-or-string: no anyOf; defaults pruned.
    assert_eq!(spec["properties"]["note"], json!({"pattern": "^a"}));
    assert_eq!(spec["required"], json!(["size"]));
    assert_eq!(
        spec["properties"]["port"],
        json!({"x-kubernetes-int-or-string": true})
    );
    assert!(spec["properties"]["size"].get("default").is_none());
    assert!(spec["properties"]["choice"].get("oneOf").is_none());
    // Root preserve-unknown-fields: only the type and the GVK.
    assert_eq!(
        doc["definitions"]["com.example.d.ob.v1.Gadget"],
        json!({"type": "object", "x-kubernetes-group-version-kind": [{"group": OB, "kind": "Gadget", "version": "v1"}]})
    );
    // v3 keeps all of it.
    let v3doc = v3(OA, &resources());
    let spec3 = &v3doc["components"]["schemas"]["com.example.d.oa.v1.Widget"]["properties"]["spec"];
    assert_eq!(spec3["properties"]["note"]["nullable"], true);
    assert_eq!(spec3["properties"]["size"]["default"], 3);
    assert_eq!(
        spec3["properties"]["port"]["anyOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
}

/// A CRD version without a schema (`Some(Null)`) and schemas upstream would not publish
/// (invalid types, an `items` array, not an object) are published as `{"type": "object"}`
/// with the GVK, under the same routes.
#[test]
fn missing_or_unusable_schemas_publish_an_open_object() {
    let gvk = json!([{"group": OA, "kind": "Widget", "version": "v1"}]);
    for schema in [
        Value::Null,
        json!("object"),
        json!([1, 2]),
        json!({"type": "object", "properties": {"a": {"type": "null"}}}),
        json!({"type": "object", "properties": {"a": {"type": 7}}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
    ] {
        let rs = [with_schema(
            crd(OA, "Widget", "widgets", true, &[]),
            schema.clone(),
        )];
        let want = json!({"type": "object", "x-kubernetes-group-version-kind": gvk});
        assert_eq!(
            v3(OA, &rs)["components"]["schemas"]["com.example.d.oa.v1.Widget"],
            want,
            "{schema}"
        );
        assert_eq!(
            v2(&rs)["definitions"]["com.example.d.oa.v1.Widget"],
            want,
            "{schema}"
        );
        assert!(v3(OA, &rs)["paths"]
            .get("/apis/oa.d.example.com/v1/namespaces/{namespace}/widgets/{name}")
            .is_some());
    }
}

/// Odd schemas never panic; nesting is followed to `CUSTOM_SCHEMA_DEPTH_MAX` levels and cut
/// there (a schema nested thousands of levels deep would otherwise exhaust the stack when
/// rendered, hashed or dropped).
#[test]
fn deep_and_odd_schemas_are_bounded() {
    let mut deep = json!({"type": "string"});
    for _ in 0..1_000 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let rs = [with_schema(crd(OA, "Widget", "widgets", true, &[]), deep)];
    let doc = v3(OA, &rs);
    let mut node = &doc["components"]["schemas"]["com.example.d.oa.v1.Widget"];
    let mut levels = 0;
    while let Some(next) = node["properties"].get("x") {
        node = next;
        levels += 1;
    }
    // Each property is two JSON levels (`properties`, its name).
    assert_eq!(levels, CUSTOM_SCHEMA_DEPTH_MAX / 2);
    assert_eq!(node, &json!({}));
    // Both documents parse back within serde_json's nesting limit (v3 above), also where
    // keel-proto reads /openapi/v2 back.
    let _ = v2(&rs);
    assert!(schemas().openapi_v2_protobuf_doc(&rs).is_ok());
    let mut deep_default = json!("leaf");
    for _ in 0..120 {
        deep_default = json!([deep_default]);
    }
    let rs2 = [with_schema(
        crd(OA, "Widget", "widgets", true, &[]),
        json!({"type": "object", "properties": {"a": {"type": "array", "default": deep_default, "example": [1]}}}),
    )];
    let a = &v3(OA, &rs2)["components"]["schemas"]["com.example.d.oa.v1.Widget"]["properties"]["a"];
    assert_eq!(a, &json!({"type": "array", "example": [1]}));
    // Dropping a 1,000-level Value recurses in serde_json; the caller's input, not ours.
    std::mem::forget(rs);

    let odd = json!({
        "type": "object",
        "$schema": "x", "id": "y", "definitions": {"a": {}}, "patternProperties": {"a": {}},
        "properties": {
            "a": {"type": "string", "x-kubernetes-preserve-unknown-fields": false, "nullable": "yes"},
            "b": {"type": "object", "additionalProperties": false},
            "c": {"anyOf": [], "allOf": "x", "not": {"type": "string"}},
            "d": {"type": "array", "x-kubernetes-preserve-unknown-fields": true},
            // Stored as given, published without the empty example (a v1.36.2 server does so).
            "e": {"type": "object", "example": {}, "default": {}, "x-kubernetes-preserve-unknown-fields": true},
            "f": {"type": "string", "description": "", "default": null, "example": ""},
        },
    });
    let rs = [with_schema(crd(OA, "Widget", "widgets", true, &[]), odd)];
    let widget = &v3(OA, &rs)["components"]["schemas"]["com.example.d.oa.v1.Widget"];
    for dropped in ["$schema", "id", "definitions", "patternProperties"] {
        assert!(widget.get(dropped).is_none(), "{dropped}");
    }
    assert_eq!(widget["properties"]["a"], json!({"type": "string"}));
    assert_eq!(widget["properties"]["b"]["additionalProperties"], false);
    assert_eq!(
        widget["properties"]["c"],
        json!({"not": {"type": "string"}})
    );
    assert_eq!(
        widget["properties"]["e"],
        json!({"type": "object", "default": {}, "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(widget["properties"]["f"], json!({"type": "string"}));
    let v2doc = v2(&rs);
    // An array without items in v2 loses its type (kubectl cannot read it).
    assert_eq!(
        v2doc["definitions"]["com.example.d.oa.v1.Widget"]["properties"]["d"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
}

/// The render cache keys on the descs: equal schemas (key order aside) share documents, a
/// changed schema renders anew.
#[test]
fn custom_schema_keys_the_render_cache() {
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};
    let hash = |r: &ResourceDesc| {
        let mut h = DefaultHasher::new();
        r.hash(&mut h);
        h.finish()
    };
    let a = with_schema(
        crd(OA, "Widget", "widgets", true, &[]),
        serde_json::from_str(
            r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}"#,
        )
        .unwrap(),
    );
    let b = with_schema(
        crd(OA, "Widget", "widgets", true, &[]),
        serde_json::from_str(
            r#"{"properties":{"b":{"type":"integer"},"a":{"type":"string"}},"type":"object"}"#,
        )
        .unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(hash(&a), hash(&b));
    let s = schemas();
    let doc_a = s
        .openapi_v3_group_version_doc(OA, "v1", std::slice::from_ref(&a))
        .unwrap();
    let doc_b = s.openapi_v3_group_version_doc(OA, "v1", &[b]).unwrap();
    assert!(
        Arc::ptr_eq(&doc_a.body, &doc_b.body),
        "served from the cache"
    );
    let c = with_schema(
        crd(OA, "Widget", "widgets", true, &[]),
        json!({"type": "object", "properties": {"a": {"type": "boolean"}}}),
    );
    assert_ne!(a, c);
    assert_ne!(hash(&a), hash(&c));
    let doc_c = s.openapi_v3_group_version_doc(OA, "v1", &[c]).unwrap();
    assert_ne!(doc_a.etag, doc_c.etag);
    // Schemas that differ only below the hashed levels share a hash; `==` still keeps their
    // documents apart.
    let deep = |leaf: &str| {
        with_schema(
            crd(OA, "Widget", "widgets", true, &[]),
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"type": "object", "properties": {"y": {"type": leaf}}}}}}}),
        )
    };
    let (d1, d2) = (deep("string"), deep("integer"));
    assert_eq!(hash(&d1), hash(&d2));
    assert_ne!(d1, d2);
    let e1 = s
        .openapi_v3_group_version_doc(OA, "v1", &[d1])
        .unwrap()
        .etag;
    let e2 = s
        .openapi_v3_group_version_doc(OA, "v1", &[d2])
        .unwrap()
        .etag;
    assert_ne!(e1, e2);
    let none = ResourceDesc {
        custom_schema: None,
        ..a.clone()
    };
    assert_ne!(a, none);
}
