//! The OpenAPI adapter: markers read as upstream's schemaconv reads them, then the real
//! apps/v1 Deployment and core/v1 Pod definitions from keel-schema driving the updater.

use keel_smd::openapi::schema_from_openapi;
use keel_smd::schema::{ElementRelationship, Scalar, Schema, TypeRef};
use keel_smd::typed::to_field_set;
use keel_smd::updater::{ManagerKey, Managers, Updater};
use serde_json::{json, Value};
use std::collections::BTreeSet;

#[test]
fn markers_are_read_as_upstream() {
    let defs = json!({
        "T": {"type": "object", "properties": {
            "atomicList": {"type": "array", "items": {"type": "string"}},
            "set": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "mapList": {"type": "array", "items": {"$ref": "#/definitions/Item"}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"]},
            "patchMerge": {"type": "array", "items": {"$ref": "#/definitions/Item"}, "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "a"},
            "patchSet": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"},
            "atomicMap": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"},
            "atomicRef": {"$ref": "#/definitions/Item", "x-kubernetes-map-type": "atomic"},
            "allOfRef": {"allOf": [{"$ref": "#/components/schemas/Item"}]},
            "free": {"type": "object"},
            "any": {},
            "n": {"type": "integer"},
            "ios": {"type": "string", "format": "int-or-string"}
        }},
        "Item": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "default": "x"}}},
        "Alias": {"$ref": "#/definitions/T"}
    });
    let defs = defs.as_object().unwrap();
    let schema = schema_from_openapi(defs.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
    assert!(
        !schema.types.contains_key("Alias"),
        "top-level references are skipped"
    );
    let t = schema.types["T"].map.as_ref().unwrap();
    let field = |n: &str| {
        schema
            .resolve(&t.field(n).unwrap().type_ref)
            .unwrap()
            .into_owned()
    };
    let list = |n: &str| {
        let l = field(n).list.unwrap();
        (l.relationship, l.keys)
    };
    use ElementRelationship::{Associative, Atomic, Separable};
    assert_eq!(list("atomicList"), (Atomic, vec![]));
    assert_eq!(list("set"), (Associative, vec![]));
    assert_eq!(
        list("mapList"),
        (Associative, vec!["a".to_string(), "b".to_string()])
    );
    assert_eq!(list("patchMerge"), (Associative, vec!["a".to_string()]));
    assert_eq!(list("patchSet"), (Associative, vec![]));
    assert_eq!(field("atomicMap").map.unwrap().relationship, Atomic);
    assert_eq!(field("atomicRef").map.unwrap().relationship, Atomic);
    assert_eq!(
        schema.types["Item"].map.as_ref().unwrap().relationship,
        Separable
    );
    assert_eq!(
        t.field("allOfRef").unwrap().type_ref,
        TypeRef::named("Item")
    );
    assert_eq!(
        field("free").map.unwrap().element_type,
        Some(TypeRef::deduced())
    );
    let any = field("any");
    assert!(any.scalar.is_some() && any.list.is_some() && any.map.is_some());
    assert_eq!(field("n").scalar, Some(Scalar::Numeric));
    assert_eq!(field("ios").scalar, Some(Scalar::Untyped));
    let item = schema.types["Item"].map.as_ref().unwrap();
    assert_eq!(item.field("b").unwrap().default, Some(json!("x")));
}

#[test]
fn bad_markers_are_errors() {
    let defs = json!({
        "A": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "map"},
        "B": {"type": "object", "x-kubernetes-map-type": "weird"},
        "C": {"type": "array"}
    });
    let defs = defs.as_object().unwrap();
    let err = schema_from_openapi(defs.iter().map(|(k, v)| (k.as_str(), v))).unwrap_err();
    assert_eq!(
        err,
        "A: missing map keys\nB: unknown map type \"weird\"\nC: `items` must be specified on arrays"
    );
}

/// Every definition reachable from `root` in keel-schema's published v1.36 definitions.
///
/// The published v2 document carries no `default`s, while upstream's server builds its
/// schema from models that do (`+default="TCP"` on port protocols, visible in the v3
/// document); list-map keys depend on them, so this adds the protocol defaults back, as an
/// integration must.
fn published(root: &str) -> Schema {
    let all = keel_schema::schemas();
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    let mut defs: Vec<(String, Value)> = Vec::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let def = all
            .definition(&name)
            .unwrap_or_else(|| panic!("{name} published"));
        keel_smd::openapi::collect_refs(def, &mut todo);
        let mut def = def.clone();
        if name.ends_with("ContainerPort") || name.ends_with("ServicePort") {
            if let Some(protocol) = def.pointer_mut("/properties/protocol") {
                protocol["default"] = json!("TCP");
            }
        }
        defs.push((name, def));
    }
    schema_from_openapi(defs.iter().map(|(k, v)| (k.as_str(), v))).unwrap()
}

const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

/// The real Deployment schema gives kubectl's well-known FieldsV1 for an applied config
/// with ports (keys `containerPort` + `protocol`, protocol defaulted) and env.
#[test]
fn published_deployment_field_set() {
    let schema = published(DEPLOYMENT);
    let root = TypeRef::named(DEPLOYMENT);
    let config = json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "nginx", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "A", "value": "1"}],
                    "resources": {"limits": {"cpu": "1"}}
                }], "nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}]}
            }
        }
    });
    let set = to_field_set(&schema, &root, &config).unwrap();
    assert_eq!(
        set.to_fields_v1(),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}},"f:resources":{"f:limits":{"f:cpu":{}}}}},"f:nodeSelector":{},"f:tolerations":{}}}}}"#
    );
}

/// The documentation's scenario on the real schema: a client-side-apply Update owns the
/// replicas, a server-side apply changing them conflicts, with upstream's message.
#[test]
fn published_deployment_conflict() {
    let schema = published(DEPLOYMENT);
    let root = TypeRef::named(DEPLOYMENT);
    let up = Updater::new(&schema, &root);
    let zero = json!({"metadata": {"creationTimestamp": null}, "spec": {"selector": null, "strategy": {}, "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}}}, "status": {}});
    let live = json!({"spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "strategy": {}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}, "status": {}});
    let csa = ManagerKey::update("kubectl-client-side-apply", "apps/v1", "");
    let m = up
        .update(&zero, &live, "apps/v1", Managers::new(), &csa)
        .unwrap();
    let config = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:2"}]}}}});
    let err = up
        .apply(
            &live,
            &config,
            "apps/v1",
            m,
            &ManagerKey::apply("kubectl", ""),
            false,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
    );
}
