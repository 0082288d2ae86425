//! The `/openapi/v2` conversion (`keel_proto::openapi_v2`): a small swagger document with one
//! of every shape converted, the bytes decoded as gnostic's `Document` and checked field by
//! field; and the documents gnostic refuses refused here too.

use keel_proto::openapi_v2::encode_document;
use keel_proto::openapi_v2::gnostic::*;
use prost::Message;
use serde_json::{json, Value};

/// A small swagger document with one of every shape upstream's documents use (and a few
/// they do not), in Kubernetes' style.
fn sample() -> Value {
    serde_json::from_str(include_str!("fixtures/openapi_v2/sample.json")).unwrap()
}

/// Byte for byte what upstream produces from the same JSON. The `.gnostic.pb` files are the
/// output of gnostic-models 0.7.1's `openapi_v2.ParseDocument` followed by `proto.Marshal`
/// (kube-openapi's `ToProtoBinary`), run on the `.json` files next to them (Debian's
/// golang-github-google-gnostic-models-dev 0.7.1-1 with go-yaml 3.0.1 and protobuf-go 1.36).
/// `strings.json` holds 400 one-line strings (hand-picked ones that read back as other types,
/// carry indicators or need escapes, and random ones) as extensions, a map keyed by them, lists
/// and nested collections: the YAML text of every `Any` must match go-yaml's.
#[test]
fn conversion_matches_gnostic_byte_for_byte() {
    let cases: [(&str, &[u8], &[u8]); 2] = [
        (
            "sample",
            include_bytes!("fixtures/openapi_v2/sample.json"),
            include_bytes!("fixtures/openapi_v2/sample.gnostic.pb"),
        ),
        (
            "strings",
            include_bytes!("fixtures/openapi_v2/strings.json"),
            include_bytes!("fixtures/openapi_v2/strings.gnostic.pb"),
        ),
    ];
    for (name, json, want) in cases {
        let got = encode_document(json).expect(name);
        if got != want {
            let (got, want) = (
                Document::decode(&got[..]).unwrap(),
                Document::decode(want).unwrap(),
            );
            assert_eq!(got, want, "{name}: decoded documents differ");
            panic!("{name}: same document, different bytes");
        }
    }
}

fn decode(v: &Value) -> Document {
    let bytes = encode_document(&serde_json::to_vec(v).unwrap()).expect("converts");
    Document::decode(&bytes[..]).expect("decodes as gnostic's Document")
}

fn yaml_of(exts: &[NamedAny], name: &str) -> String {
    exts.iter()
        .find(|e| e.name == name)
        .and_then(|e| e.value.as_ref())
        .map(|a| a.yaml.clone())
        .unwrap_or_else(|| panic!("no extension {name}"))
}

fn definition<'d>(doc: &'d Document, name: &str) -> &'d Schema {
    doc.definitions
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| d.value.as_ref())
        .unwrap_or_else(|| panic!("no definition {name}"))
}

fn property<'s>(s: &'s Schema, name: &str) -> &'s Schema {
    s.properties
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .find(|p| p.name == name)
        .and_then(|p| p.value.as_ref())
        .unwrap_or_else(|| panic!("no property {name}"))
}

#[test]
fn document_fields() {
    let doc = decode(&sample());
    assert_eq!(doc.swagger, "2.0");
    let info = doc.info.as_ref().unwrap();
    assert_eq!(
        (info.title.as_str(), info.version.as_str()),
        ("Kubernetes", "v1.32.0")
    );
    assert_eq!(
        yaml_of(&doc.vendor_extension, "x-top"),
        "a:\n    - 1\n    - 2\n"
    );
    assert_eq!(
        doc.tags[0].external_docs.as_ref().unwrap().url,
        "https://k8s.io"
    );
    let sec = &doc.security[0].additional_properties[0];
    assert_eq!(sec.name, "BearerToken");
    assert_eq!(sec.value, Some(StringArray { value: vec![] }));
    let defs = &doc
        .security_definitions
        .as_ref()
        .unwrap()
        .additional_properties;
    use security_definitions_item::Oneof as S;
    match defs[0].value.as_ref().unwrap().oneof.as_ref().unwrap() {
        S::ApiKeySecurity(k) => {
            assert_eq!(
                (k.name.as_str(), k.r#in.as_str()),
                ("authorization", "header")
            )
        }
        other => panic!("BearerToken: {other:?}"),
    }
    assert!(matches!(
        defs[1].value.as_ref().unwrap().oneof,
        Some(S::BasicAuthenticationSecurity(_))
    ));
    match defs[2].value.as_ref().unwrap().oneof.as_ref().unwrap() {
        S::Oauth2AccessCodeSecurity(o) => {
            let scope = &o.scopes.as_ref().unwrap().additional_properties[0];
            assert_eq!(
                (scope.name.as_str(), scope.value.as_str()),
                ("read", "Read access")
            );
        }
        other => panic!("OAuth: {other:?}"),
    }
    let param = &doc.parameters.as_ref().unwrap().additional_properties[0];
    assert_eq!(param.name, "watch");
    let resp = &doc.responses.as_ref().unwrap().additional_properties[0];
    assert_eq!(resp.value.as_ref().unwrap().description, "failure");
}

#[test]
fn definitions_keep_order_types_refs_and_extensions() {
    let doc = decode(&sample());
    let names: Vec<&str> = doc
        .definitions
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "io.k8s.api.core.v1.ConfigMap",
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
            "Widget"
        ]
    );
    let cm = definition(&doc, "io.k8s.api.core.v1.ConfigMap");
    assert_eq!(cm.r#type.as_ref().unwrap().value, ["object"]);
    assert_eq!(
        yaml_of(&cm.vendor_extension, "x-kubernetes-group-version-kind"),
        "- group: \"\"\n  kind: ConfigMap\n  version: v1\n"
    );
    let props: Vec<&str> = cm
        .properties
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        props,
        ["apiVersion", "data", "immutable", "metadata", "finalizers"]
    );
    let meta = property(cm, "metadata");
    assert_eq!(
        meta.r#ref,
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(meta.default.as_ref().unwrap().yaml, "{}\n");
    match property(cm, "data")
        .additional_properties
        .as_ref()
        .unwrap()
        .oneof
        .as_ref()
    {
        Some(additional_properties_item::Oneof::Schema(s)) => {
            assert_eq!(s.r#type.as_ref().unwrap().value, ["string"]);
            assert_eq!(s.default.as_ref().unwrap().yaml, "\"\"\n");
        }
        other => panic!("data: {other:?}"),
    }
    let finalizers = property(cm, "finalizers");
    assert_eq!(
        finalizers.items.as_ref().unwrap().schema[0]
            .r#type
            .as_ref()
            .unwrap()
            .value,
        ["string"]
    );
    assert_eq!(
        yaml_of(&finalizers.vendor_extension, "x-kubernetes-list-type"),
        "set\n"
    );

    let om = definition(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert_eq!(om.required, ["name"]);
    assert_eq!(
        om.additional_properties.as_ref().unwrap().oneof,
        Some(additional_properties_item::Oneof::Boolean(false))
    );
    let name = property(om, "name");
    assert_eq!((name.max_length, name.minimum), (253, 1.5));

    let ios = definition(&doc, "io.k8s.apimachinery.pkg.util.intstr.IntOrString");
    assert_eq!(ios.format, "int-or-string");
    let enums: Vec<&str> = ios.r#enum.iter().map(|a| a.yaml.as_str()).collect();
    assert_eq!(enums, ["a\n", "1\n", "true\n"]);
    let widget = definition(&doc, "Widget");
    assert_eq!(widget.r#type.as_ref().unwrap().value, ["object", "null"]);
    assert_eq!(
        yaml_of(
            &widget.vendor_extension,
            "x-kubernetes-preserve-unknown-fields"
        ),
        "true\n"
    );
}

#[test]
fn paths_operations_parameters_and_responses() {
    let doc = decode(&sample());
    let paths = doc.paths.as_ref().unwrap();
    assert_eq!(yaml_of(&paths.vendor_extension, "x-paths-note"), "1\n");
    assert_eq!(paths.path.len(), 1);
    assert_eq!(
        paths.path[0].name,
        "/api/v1/namespaces/{namespace}/configmaps"
    );
    let item = paths.path[0].value.as_ref().unwrap();
    assert!(item.put.is_none() && item.delete.is_none());

    let get = item.get.as_ref().unwrap();
    assert_eq!(get.operation_id, "listCoreV1NamespacedConfigMap");
    assert_eq!(get.schemes, ["https"]);
    assert_eq!(get.tags, ["core_v1"]);
    assert_eq!(
        yaml_of(&get.vendor_extension, "x-kubernetes-action"),
        "list\n"
    );
    assert_eq!(
        yaml_of(&get.vendor_extension, "x-kubernetes-group-version-kind"),
        "group: \"\"\nkind: ConfigMap\nversion: v1\n"
    );
    use non_body_parameter::Oneof as NB;
    use parameters_item::Oneof as PI;
    match get.parameters[0].oneof.as_ref().unwrap() {
        PI::Parameter(Parameter {
            oneof:
                Some(parameter::Oneof::NonBodyParameter(NonBodyParameter {
                    oneof: Some(NB::QueryParameterSubSchema(q)),
                })),
        }) => {
            assert_eq!(
                (q.name.as_str(), q.r#type.as_str(), q.unique_items),
                ("limit", "integer", true)
            )
        }
        other => panic!("limit: {other:?}"),
    }
    match get.parameters[1].oneof.as_ref().unwrap() {
        PI::JsonReference(r) => assert_eq!(r.r#ref, "#/parameters/watch"),
        other => panic!("watch: {other:?}"),
    }
    let codes: Vec<&str> = get
        .responses
        .as_ref()
        .unwrap()
        .response_code
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(codes, ["200", "401", "default"]);
    let ok = &get.responses.as_ref().unwrap().response_code[0];
    match ok.value.as_ref().unwrap().oneof.as_ref().unwrap() {
        response_value::Oneof::Response(r) => match r.schema.as_ref().unwrap().oneof.as_ref() {
            Some(schema_item::Oneof::Schema(s)) => {
                assert_eq!(s.r#ref, "#/definitions/io.k8s.api.core.v1.ConfigMapList")
            }
            other => panic!("200 schema: {other:?}"),
        },
        other => panic!("200: {other:?}"),
    }
    assert!(matches!(
        get.responses.as_ref().unwrap().response_code[2]
            .value
            .as_ref()
            .unwrap()
            .oneof,
        Some(response_value::Oneof::JsonReference(_))
    ));

    let post = item.post.as_ref().unwrap();
    match post.parameters[0].oneof.as_ref().unwrap() {
        PI::Parameter(Parameter {
            oneof: Some(parameter::Oneof::BodyParameter(b)),
        }) => {
            assert!(b.required);
            assert_eq!(
                b.schema.as_ref().unwrap().r#ref,
                "#/definitions/io.k8s.api.core.v1.ConfigMap"
            );
        }
        other => panic!("body: {other:?}"),
    }
    let created = &post.responses.as_ref().unwrap().response_code[0];
    match created.value.as_ref().unwrap().oneof.as_ref().unwrap() {
        response_value::Oneof::Response(r) => assert!(matches!(
            r.schema.as_ref().unwrap().oneof,
            Some(schema_item::Oneof::FileSchema(_))
        )),
        other => panic!("201: {other:?}"),
    }

    let kinds: Vec<&str> = item
        .parameters
        .iter()
        .map(|p| match p.oneof.as_ref().unwrap() {
            PI::Parameter(Parameter {
                oneof: Some(parameter::Oneof::NonBodyParameter(n)),
            }) => match n.oneof.as_ref().unwrap() {
                NB::PathParameterSubSchema(p) => {
                    assert!(p.required);
                    "path"
                }
                NB::HeaderParameterSubSchema(_) => "header",
                NB::FormDataParameterSubSchema(f) => {
                    assert_eq!(f.collection_format, "multi");
                    assert_eq!(f.items.as_ref().unwrap().r#type, "string");
                    "formData"
                }
                NB::QueryParameterSubSchema(_) => "query",
            },
            other => panic!("path-level parameter: {other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["path", "header", "formData"]);
}

/// What gnostic refuses, so does the conversion (upstream then answers 503 instead of
/// serving a document clients cannot trust).
#[test]
fn rejects_what_gnostic_rejects() {
    /// What the error must say, and how to break the sample.
    type Case = (&'static str, fn(&mut Value));
    let cases: [Case; 9] = [
        ("unknown field \"bogus\"", |d| {
            d["definitions"]["Widget"]["bogus"] = json!(1)
        }),
        ("missing required field \"paths\"", |d| {
            d.as_object_mut().unwrap().remove("paths");
        }),
        ("unexpected value \"3.0\"", |d| d["swagger"] = json!("3.0")),
        ("expected an integer", |d| {
            d["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
                ["name"]["maxLength"] = json!(1.5)
        }),
        ("expected a boolean", |d| {
            d["definitions"]["Widget"]["readOnly"] = json!("yes")
        }),
        ("unexpected parameter location \"cookie\"", |d| {
            d["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["parameters"][1]["in"] =
                json!("cookie")
        }),
        ("missing required field \"required\"", |d| {
            d["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["parameters"][0]
                .as_object_mut()
                .unwrap()
                .remove("required");
        }),
        ("unknown field \"hello\"", |d| {
            d["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["get"]["responses"]["hello"] =
                json!({})
        }),
        ("unknown field \"nope\"", |d| d["paths"]["nope"] = json!({})),
    ];
    for (want, break_it) in cases {
        let mut doc = sample();
        break_it(&mut doc);
        let err = encode_document(&serde_json::to_vec(&doc).unwrap())
            .expect_err(want)
            .to_string();
        assert!(err.contains(want), "{err} (want {want})");
    }
    let err = encode_document(b"{").unwrap_err().to_string();
    assert!(err.contains("not JSON"), "{err}");
}

#[test]
fn error_names_the_place() {
    let mut doc = sample();
    doc["definitions"]["Widget"]["properties"] = json!({"a": {"maxItems": "x"}});
    let err = encode_document(&serde_json::to_vec(&doc).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("(at definitions.Widget.properties.a.maxItems)"),
        "{err}"
    );
}

/// Strings in integer form are accepted where gnostic takes them (`StringForScalarNode`),
/// and null reads as empty.
#[test]
fn scalar_leniency_matches_gnostic() {
    let mut doc = sample();
    doc["info"]["version"] = json!(2);
    doc["info"]["description"] = json!(null);
    let got = decode(&doc);
    let info = got.info.unwrap();
    assert_eq!(
        (info.version.as_str(), info.description.as_str()),
        ("2", "")
    );
}

/// Found by the `openapi_yaml` fuzz target: serde_json's default float parser is best-effort
/// and may land one unit in the last place off, so a number in the document (here an `x-`
/// extension, but equally in any request body) came back as a different number than the
/// client wrote: `-9.223372037440737e+23` was served as `-9.223372037440736e+23`. Go parses
/// floats exactly; keel builds serde_json with `float_roundtrip`.
#[test]
fn floats_keep_their_exact_value() {
    let text = br#"{"swagger":"2.0","info":{"title":"t","version":"v"},"paths":{},
        "x-n":-9.223372037440737e+23,"x-m":6854775744073.0}"#;
    let doc = Document::decode(encode_document(text).unwrap().as_slice()).unwrap();
    assert_eq!(
        yaml_of(&doc.vendor_extension, "x-n"),
        "-9.223372037440737e+23\n"
    );
    assert_eq!(yaml_of(&doc.vendor_extension, "x-m"), "6854775744073.0\n");
    let v: Value = serde_json::from_str("-9.223372037440737e+23").unwrap();
    assert_eq!(v.to_string(), "-9.223372037440737e+23");
}

/// Found by the `openapi_yaml` fuzz target: a string that starts like a timestamp and breaks
/// off inside a multi-byte character (`2024-01-31 10:0н00`) panicked the YAML writer, which
/// sliced the string at the byte where the time stopped parsing.
#[test]
fn a_broken_timestamp_with_a_multibyte_character_is_a_plain_string() {
    let text = r#"{"swagger":"2.0","info":{"title":"t","version":"v"},"paths":{},
        "x-t":"2024-01-31 10:0н00","x-u":"2024-01-31Tн"}"#;
    let doc = Document::decode(encode_document(text.as_bytes()).unwrap().as_slice()).unwrap();
    assert_eq!(
        yaml_of(&doc.vendor_extension, "x-t"),
        "2024-01-31 10:0н00\n"
    );
    assert_eq!(yaml_of(&doc.vendor_extension, "x-u"), "2024-01-31Tн\n");
}
