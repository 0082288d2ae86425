//! The OpenAPI documents carry what kubectl 1.32 reads: the v3 discovery `hash` URLs, per
//! group/version documents whose PATCH operations carry `x-kubernetes-group-version-kind`
//! (an object), the `fieldValidation` parameter and the strategic-merge-patch request body
//! (query-param verifier, `kubectl apply`), and component schemas with the GVK extension
//! (`kubectl explain`); v2 mirrors it with inline parameters.

use std::sync::Arc;

use keel_schema::{schemas, ResourceDesc};
use serde_json::{json, Value};

fn verbs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const ALL: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn res(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    subs: &[(&str, &str, &[&str])],
) -> ResourceDesc {
    ResourceDesc {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
        verbs: verbs(ALL),
        subresources: subs
            .iter()
            .map(|(n, k, v)| (n.to_string(), k.to_string(), verbs(v)))
            .collect(),
        custom_schema: None,
    }
}

fn resources() -> Vec<ResourceDesc> {
    vec![
        res(
            "",
            "v1",
            "Pod",
            "pods",
            true,
            &[
                ("status", "Pod", &["get", "patch", "update"]),
                ("log", "Pod", &["get"]),
                ("eviction", "Eviction", &["create"]),
                ("exec", "PodExecOptions", &["create", "get"]),
            ],
        ),
        res("", "v1", "ConfigMap", "configmaps", true, &[]),
        res(
            "",
            "v1",
            "Namespace",
            "namespaces",
            false,
            &[("status", "Namespace", &["get", "patch", "update"])],
        ),
        res(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
            &[
                ("status", "Deployment", &["get", "patch", "update"]),
                ("scale", "autoscaling/v1/Scale", &["get", "patch", "update"]),
            ],
        ),
        res("example.com", "v1", "Widget", "widgets", true, &[]),
    ]
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("document is JSON")
}

/// Every `$ref` in `doc` resolves inside it.
fn assert_refs_resolve(doc: &Value, prefix: &str, defs: &Value) {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| match (k.as_str(), v) {
                ("$ref", Value::String(r)) => out.push(r.clone()),
                _ => walk(v, out),
            }),
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut refs = Vec::new();
    walk(doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let name = r
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("bad ref {r}"));
        assert!(defs.get(name).is_some(), "dangling {r}");
    }
}

fn param_names(op: &Value) -> Vec<&str> {
    op["parameters"].as_array().map_or(Vec::new(), |ps| {
        ps.iter().filter_map(|p| p["name"].as_str()).collect()
    })
}

#[test]
fn v3_root_points_at_group_versions_by_hash() {
    let s = schemas();
    let rs = resources();
    let root = parse(&s.openapi_v3_root(&rs));
    let paths = root["paths"].as_object().unwrap();
    let keys: Vec<&str> = paths.keys().map(String::as_str).collect();
    assert_eq!(keys, ["api/v1", "apis/apps/v1", "apis/example.com/v1"]);
    for (key, group, version) in [("api/v1", "", "v1"), ("apis/apps/v1", "apps", "v1")] {
        let doc = s.openapi_v3_group_version_doc(group, version, &rs).unwrap();
        assert_eq!(doc.etag.len(), 128);
        assert!(doc
            .etag
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        assert_eq!(
            paths[key]["serverRelativeURL"],
            format!("/openapi/v3/{key}?hash={}", doc.etag)
        );
    }
    assert!(s.openapi_v3_group_version("batch", "v1", &rs).is_none());
}

#[test]
fn v3_group_version_has_what_kubectl_reads() {
    let s = schemas();
    let doc = parse(&s.openapi_v3_group_version("", "v1", &resources()).unwrap());
    assert_eq!(doc["openapi"], "3.0.0");
    let schemas_v3 = &doc["components"]["schemas"];
    assert_refs_resolve(&doc, "#/components/schemas/", schemas_v3);
    // kubectl explain: the kind's component schema carries its GVK; refs with siblings are allOf.
    let pod = &schemas_v3["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    assert_eq!(
        pod["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let containers = &schemas_v3["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert!(
        schemas_v3.get("io.k8s.api.apps.v1.Deployment").is_none(),
        "other groups stay out"
    );

    let paths = &doc["paths"];
    let item = &paths["/api/v1/namespaces/{namespace}/pods/{name}"];
    let patch = &item["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "Pod", "version": "v1"})
    );
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(patch["tags"], json!(["core_v1"]));
    assert_eq!(
        param_names(patch),
        ["dryRun", "fieldManager", "fieldValidation", "force"]
    );
    let content = patch["requestBody"]["content"].as_object().unwrap();
    for media in [
        "application/strategic-merge-patch+json",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
    ] {
        assert_eq!(
            content[media]["schema"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
        );
    }
    let path_params = item["parameters"].as_array().unwrap();
    assert!(path_params
        .iter()
        .any(|p| p["name"] == "name" && p["in"] == "path" && p["required"] == true));
    assert_eq!(
        param_names(&item["put"]),
        ["dryRun", "fieldManager", "fieldValidation"]
    );
    assert_eq!(item["get"]["operationId"], "readCoreV1NamespacedPod");
    assert_eq!(item["delete"]["x-kubernetes-action"], "delete");

    let collection = &paths["/api/v1/namespaces/{namespace}/pods"];
    assert_eq!(
        collection["post"]["operationId"],
        "createCoreV1NamespacedPod"
    );
    assert_eq!(
        param_names(&collection["post"]),
        ["dryRun", "fieldManager", "fieldValidation"]
    );
    assert_eq!(
        collection["post"]["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.Pod"
    );
    assert!(param_names(&collection["get"]).contains(&"labelSelector"));
    assert_eq!(
        collection["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.PodList"
    );
    assert_eq!(
        collection["delete"]["x-kubernetes-action"],
        "deletecollection"
    );
    assert_eq!(
        paths["/api/v1/pods"]["get"]["operationId"],
        "listCoreV1PodForAllNamespaces"
    );
    assert_eq!(
        paths["/api/v1/watch/namespaces/{namespace}/pods"]["get"]["x-kubernetes-action"],
        "watchlist"
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/status"]["patch"]["operationId"],
        "patchCoreV1NamespacedPodStatus"
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"]["responses"]["200"]
            ["content"]["text/plain"]["schema"]["type"],
        "string"
    );
    let eviction = &paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"];
    assert_eq!(
        eviction["x-kubernetes-group-version-kind"],
        json!({"group": "policy", "kind": "Eviction", "version": "v1"})
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/exec"]["post"]["operationId"],
        "connectCoreV1PostNamespacedPodExec"
    );
    // cluster-scoped: no namespace segment or parameter
    let ns = &paths["/api/v1/namespaces/{name}"];
    assert_eq!(ns["patch"]["operationId"], "patchCoreV1Namespace");
    assert!(!ns["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "namespace"));
}

#[test]
fn v3_subresource_kinds_and_custom_kinds() {
    let s = schemas();
    let rs = resources();
    let apps = parse(&s.openapi_v3_group_version("apps", "v1", &rs).unwrap());
    let scale =
        &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"];
    assert_eq!(
        scale["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "kind": "Scale", "version": "v1"})
    );
    assert_eq!(scale["operationId"], "patchAppsV1NamespacedDeploymentScale");
    assert!(apps["components"]["schemas"]
        .get("io.k8s.api.autoscaling.v1.Scale")
        .is_some());
    assert_eq!(
        apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]["tags"],
        json!(["apps_v1"])
    );

    let custom = parse(
        &s.openapi_v3_group_version("example.com", "v1", &rs)
            .unwrap(),
    );
    assert_refs_resolve(
        &custom,
        "#/components/schemas/",
        &custom["components"]["schemas"],
    );
    let widget = &custom["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    let patch =
        &custom["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert!(param_names(patch).contains(&"fieldValidation"));
}

#[test]
fn v2_has_inline_parameters_and_all_definitions_it_refers_to() {
    let s = schemas();
    let doc = parse(&s.openapi_v2(&resources()));
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(doc["info"]["version"], "v1.36.0");
    assert_refs_resolve(&doc, "#/definitions/", &doc["definitions"]);
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "kind": "Deployment", "version": "v1"})
    );
    assert_eq!(
        patch["consumes"][2],
        "application/strategic-merge-patch+json"
    );
    let params = patch["parameters"].as_array().unwrap();
    assert_eq!(params[0]["in"], "body");
    assert!(params
        .iter()
        .any(|p| p["name"] == "fieldValidation" && p["in"] == "query" && p["type"] == "string"));
    assert!(
        doc["definitions"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"]
            .is_array()
    );
    assert!(doc["definitions"]["io.k8s.api.core.v1.Pod"].is_object());
    assert_eq!(doc["securityDefinitions"]["BearerToken"]["type"], "apiKey");
}

#[test]
fn documents_are_cached_per_resource_list() {
    let s = schemas();
    let rs = resources();
    let a = s.openapi_v2_doc(&rs);
    let b = s.openapi_v2_doc(&rs);
    assert!(
        Arc::ptr_eq(&a.body, &b.body),
        "second call must reuse the rendered bytes"
    );
    let fewer = &rs[..1];
    let c = s.openapi_v2_doc(fewer);
    assert_ne!(a.etag, c.etag);
    assert!(parse(&c.body)["paths"]
        .get("/apis/apps/v1/namespaces/{namespace}/deployments")
        .is_none());
    let r1 = s.openapi_v3_root_doc(&rs);
    let r2 = s.openapi_v3_root_doc(&rs);
    assert!(Arc::ptr_eq(&r1.body, &r2.body));
}

#[test]
fn gzip_form_is_made_once_per_document() {
    use std::io::Read;
    let s = schemas();
    let rs = resources();
    let doc = s.openapi_v2_doc(&rs);
    let gz = doc.gzipped();
    assert!(
        gz.len() < doc.body.len() / 4,
        "{} of {}",
        gz.len(),
        doc.body.len()
    );
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut plain)
        .unwrap();
    assert_eq!(plain, &doc.body[..]);
    let again = s.openapi_v2_doc(&rs).gzipped();
    assert!(
        Arc::ptr_eq(&gz, &again),
        "compressed once, shared by every clone"
    );
}

/// `/openapi/v2` in protobuf is gnostic's reading of the JSON document: what kubectl's
/// client-side validation builds its models from (every definition with its properties'
/// types, `$ref`s and the `x-kubernetes-group-version-kind` extension) and what
/// `explain --output=plaintext-openapiv2` reads (paths and operations).
#[test]
fn v2_protobuf_is_gnostics_reading_of_the_json_document() {
    use keel_proto::openapi_v2::gnostic::{
        additional_properties_item, parameter, parameters_item, Document, NamedAny, Schema,
    };
    use prost::Message;

    let s = schemas();
    let rs = resources();
    let json = s.openapi_v2_doc(&rs);
    let pb = s
        .openapi_v2_protobuf_doc(&rs)
        .expect("the JSON document converts");
    assert_eq!(
        pb.etag, json.etag,
        "both representations carry the JSON's ETag"
    );
    let again = s.openapi_v2_protobuf_doc(&rs).unwrap();
    assert!(
        Arc::ptr_eq(&pb.body, &again.body),
        "converted once per resource list"
    );
    // Another resource list (routes are live): another document, converted for that list.
    let fewer = s.openapi_v2_protobuf_doc(&rs[..1]).unwrap();
    assert_eq!(fewer.etag, s.openapi_v2_doc(&rs[..1]).etag);
    assert_ne!(fewer.etag, pb.etag);
    let fewer = Document::decode(&fewer.body[..]).unwrap();
    assert!(fewer
        .paths
        .unwrap()
        .path
        .iter()
        .all(|p| !p.name.contains("deployments")));

    let doc = Document::decode(&pb.body[..]).expect("decodes as gnostic's Document");
    let parsed = parse(&json.body);
    assert_eq!(doc.swagger, "2.0");
    assert_eq!(doc.info.as_ref().unwrap().version, "v1.36.0");

    let defs = &doc.definitions.as_ref().unwrap().additional_properties;
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    let json_names: Vec<&str> = parsed["definitions"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, json_names, "every definition, in the JSON's order");
    let def = |name: &str| -> &Schema {
        defs.iter()
            .find(|d| d.name == name)
            .and_then(|d| d.value.as_ref())
            .unwrap_or_else(|| panic!("no definition {name}"))
    };
    let ext = |exts: &[NamedAny], name: &str| -> String {
        exts.iter()
            .find(|e| e.name == name)
            .and_then(|e| e.value.as_ref())
            .map(|a| a.yaml.clone())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let prop = |s: &Schema, name: &str| -> Schema {
        s.properties
            .as_ref()
            .and_then(|p| p.additional_properties.iter().find(|p| p.name == name))
            .and_then(|p| p.value.clone())
            .unwrap_or_else(|| panic!("no property {name}"))
    };

    // Every definition, property, item and map value keeps its type and `$ref` (checked against
    // the JSON throughout; the JSON's `$ref`s all resolve, see the test above).
    fn same(pb: &Schema, js: &Value, at: &str, refs: &mut usize) {
        let ty: Vec<String> = match &js["type"] {
            Value::String(t) => vec![t.clone()],
            Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap().to_owned()).collect(),
            _ => vec![],
        };
        assert_eq!(
            pb.r#type.as_ref().map_or(vec![], |t| t.value.clone()),
            ty,
            "{at}"
        );
        assert_eq!(pb.r#ref, js["$ref"].as_str().unwrap_or(""), "{at}");
        *refs += usize::from(!pb.r#ref.is_empty());
        let props = pb.properties.iter().flat_map(|p| &p.additional_properties);
        let js_props = js["properties"].as_object();
        assert_eq!(
            props.clone().count(),
            js_props.map_or(0, |p| p.len()),
            "{at}"
        );
        for p in props {
            same(
                p.value.as_ref().unwrap(),
                &js["properties"][&p.name],
                &format!("{at}.{}", p.name),
                refs,
            );
        }
        match pb.items.as_ref() {
            Some(i) => same(&i.schema[0], &js["items"], &format!("{at}[]"), refs),
            None => assert!(js.get("items").is_none(), "{at}"),
        }
        match pb
            .additional_properties
            .as_ref()
            .and_then(|a| a.oneof.as_ref())
        {
            Some(additional_properties_item::Oneof::Schema(a)) => {
                same(a, &js["additionalProperties"], &format!("{at}{{}}"), refs)
            }
            Some(additional_properties_item::Oneof::Boolean(b)) => {
                assert_eq!(js["additionalProperties"], json!(b), "{at}")
            }
            None => assert!(js.get("additionalProperties").is_none(), "{at}"),
        }
    }
    let mut ref_count = 0;
    for d in defs {
        same(
            d.value.as_ref().unwrap(),
            &parsed["definitions"][&d.name],
            &d.name,
            &mut ref_count,
        );
    }
    assert!(ref_count > 100, "{ref_count}");

    let cm = def("io.k8s.api.core.v1.ConfigMap");
    assert_eq!(cm.r#type.as_ref().unwrap().value, ["object"]);
    assert_eq!(
        ext(&cm.vendor_extension, "x-kubernetes-group-version-kind"),
        "- group: \"\"\n  kind: ConfigMap\n  version: v1\n"
    );
    assert_eq!(
        prop(cm, "metadata").r#ref,
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let data = prop(cm, "data");
    assert_eq!(data.r#type.as_ref().unwrap().value, ["object"]);
    match data.additional_properties.and_then(|a| a.oneof) {
        Some(additional_properties_item::Oneof::Schema(v)) => {
            assert_eq!(v.r#type.as_ref().unwrap().value, ["string"])
        }
        other => panic!("ConfigMap.data: {other:?}"),
    }
    let deploy = def("io.k8s.api.apps.v1.Deployment");
    assert_eq!(
        ext(&deploy.vendor_extension, "x-kubernetes-group-version-kind"),
        "- group: apps\n  kind: Deployment\n  version: v1\n"
    );
    let pod_spec = def("io.k8s.api.core.v1.PodSpec");
    let containers = prop(pod_spec, "containers");
    assert_eq!(containers.r#type.as_ref().unwrap().value, ["array"]);
    assert_eq!(
        containers.items.as_ref().unwrap().schema[0].r#ref,
        "#/definitions/io.k8s.api.core.v1.Container"
    );
    assert_eq!(
        ext(&containers.vendor_extension, "x-kubernetes-patch-merge-key"),
        "name\n"
    );
    let widget = def("com.example.v1.Widget");
    assert!(
        ext(&widget.vendor_extension, "x-kubernetes-group-version-kind").contains("kind: Widget")
    );

    // Paths, in the JSON's order, with their operations.
    let paths = &doc.paths.as_ref().unwrap().path;
    let path_names: Vec<&str> = paths.iter().map(|p| p.name.as_str()).collect();
    let json_paths: Vec<&str> = parsed["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(path_names, json_paths);
    let item = |name: &str| {
        paths
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.value.clone())
            .unwrap_or_else(|| panic!("no path {name}"))
    };
    let cms = item("/api/v1/namespaces/{namespace}/configmaps");
    let list = cms.get.as_ref().unwrap();
    assert_eq!(list.operation_id, "listCoreV1NamespacedConfigMap");
    assert_eq!(ext(&list.vendor_extension, "x-kubernetes-action"), "list\n");
    assert!(cms.post.is_some() && cms.delete.is_some());
    let patch = item("/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
        .patch
        .unwrap();
    assert_eq!(
        ext(&patch.vendor_extension, "x-kubernetes-group-version-kind"),
        "group: apps\nkind: Deployment\nversion: v1\n"
    );
    let body = patch.parameters.iter().find_map(|p| match &p.oneof {
        Some(parameters_item::Oneof::Parameter(p)) => match &p.oneof {
            Some(parameter::Oneof::BodyParameter(b)) => Some(b.clone()),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(
        body.and_then(|b| b.schema).unwrap().r#ref,
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    );
    assert_eq!(
        patch.consumes,
        parsed["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
            ["consumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect::<Vec<_>>()
    );
    let sec = &doc
        .security_definitions
        .as_ref()
        .unwrap()
        .additional_properties[0];
    assert_eq!(sec.name, "BearerToken");
}
