//! CRD validation, through the CRD strategy (defaulting, the create/update strategy, then
//! validation), as a v1.36 kube-apiserver answers. Expected texts are upstream's messages
//! (`apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`,
//! `apiserver/schema/validation.go`) at the internal type's paths.

use crate::registry::strategy;
use crate::Ctx;
use keel_api::status::field::error_text;
use serde_json::{json, Value};

const GROUP: &str = "apiextensions.k8s.io";
const RESOURCE: &str = "customresourcedefinitions";
/// Upstream's IsDNS1035Label message.
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn ctx() -> Ctx {
    Ctx::at_unix_seconds(1_704_067_200)
}

/// A valid CRD as a client sends it.
fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.b.example.com"},
        "spec": {"group": "b.example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
}

fn schema(s: Value) -> Value {
    let mut c = crd();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = s;
    c
}

fn texts(causes: Vec<keel_api::status::StatusCause>) -> Vec<String> {
    causes.iter().map(error_text).collect()
}

/// The causes of creating `obj`.
fn create(mut obj: Value) -> Vec<String> {
    let s = strategy(GROUP, RESOURCE);
    s.prepare_for_create(&mut obj, &ctx());
    texts(s.validate_create(&obj))
}

/// `old` as stored (created), with `status` merged in.
fn stored(mut old: Value, status: Value) -> Value {
    let s = strategy(GROUP, RESOURCE);
    s.prepare_for_create(&mut old, &ctx());
    if let (Some(st), Some(extra)) = (old["status"].as_object_mut(), status.as_object()) {
        for (k, v) in extra {
            st.insert(k.clone(), v.clone());
        }
    }
    old["metadata"]["resourceVersion"] = json!("5");
    old
}

/// The causes of updating the stored `old` to `new`.
fn update(mut new: Value, old: &Value) -> Vec<String> {
    let s = strategy(GROUP, RESOURCE);
    new["metadata"]["resourceVersion"] = json!("5");
    s.prepare_for_update(&mut new, old, &ctx());
    texts(s.validate_update(&new, old))
}

fn established() -> Value {
    json!({"conditions": [{"type": "Established", "status": "True"}]})
}

#[test]
fn a_valid_crd_has_no_causes() {
    assert_eq!(create(crd()), Vec::<String>::new());
    let mut two = crd();
    two["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object", "properties": {"a": {"type": "string"}}}}},
        {"name": "v2", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object"}},
         "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
         "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]);
    two["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "conv", "namespace": "default", "path": "/convert"}},
        "conversionReviewVersions": ["v1"]}});
    assert_eq!(create(two), Vec::<String>::new());
}

#[test]
fn spec_rules_in_upstreams_order() {
    let rows: Vec<(&str, Value, Vec<String>)> = vec![
        ("group missing", {
            let mut c = crd();
            c["spec"]["group"] = json!("");
            c
        }, vec![
            // ObjectMeta comes first; the name no longer matches.
            "metadata.name: Invalid value: \"widgets.b.example.com\": must be spec.names.plural+\".\"+spec.group".into(),
            "spec.group: Required value".into(),
        ]),
        ("group without a dot", {
            let mut c = crd();
            c["spec"]["group"] = json!("example");
            c
        }, vec![
            "metadata.name: Invalid value: \"widgets.b.example.com\": must be spec.names.plural+\".\"+spec.group".into(),
            "spec.group: Invalid value: \"example\": should be a domain with at least one dot".into(),
        ]),
        ("unknown scope", {
            let mut c = crd();
            c["spec"]["scope"] = json!("Global");
            c
        }, vec!["spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"".into()]),
        ("scope missing", {
            let mut c = crd();
            c["spec"].as_object_mut().unwrap().remove("scope");
            c
        }, vec!["spec.scope: Required value".into()]),
        ("names", {
            let mut c = crd();
            c["spec"]["names"] = json!({"plural": "Widgets", "kind": "Widget", "listKind": "Widget",
                "shortNames": ["w_1"], "categories": ["all", "-x"]});
            c
        }, vec![
            "metadata.name: Invalid value: \"widgets.b.example.com\": must be spec.names.plural+\".\"+spec.group".into(),
            format!("spec.names.plural: Invalid value: \"Widgets\": {DNS1035}"),
            format!("spec.names.shortNames[0]: Invalid value: \"w_1\": {DNS1035}"),
            "spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".into(),
            format!("spec.names.categories[1]: Invalid value: \"-x\": {DNS1035}"),
        ]),
        ("names required, kind mixed case", {
            let mut c = crd();
            c["spec"]["names"] = json!({"kind": "My_Kind"});
            c
        }, vec![
            "metadata.name: Invalid value: \"widgets.b.example.com\": must be spec.names.plural+\".\"+spec.group".into(),
            "spec.names.plural: Required value".into(),
            // singular is defaulted from kind.
            format!("spec.names.singular: Invalid value: \"my_kind\": {DNS1035}"),
            format!("spec.names.kind: Invalid value: \"My_Kind\": may have mixed case, but should otherwise match: {DNS1035}"),
            format!("spec.names.listKind: Invalid value: \"My_KindList\": may have mixed case, but should otherwise match: {DNS1035}"),
        ]),
        ("version name, also the internal spec.version", {
            let mut c = crd();
            c["spec"]["versions"][0]["name"] = json!("V1");
            c
        }, vec![
            format!("spec.versions[0].name: Invalid value: \"V1\": {DNS1035}"),
            format!("spec.version: Invalid value: \"V1\": {DNS1035}"),
        ]),
        ("schema required for every version", {
            let mut c = crd();
            c["spec"]["versions"][0].as_object_mut().unwrap().remove("schema");
            c
        }, vec!["spec.versions[0].schema.openAPIV3Schema: Required value".into()]),
        ("preserveUnknownFields true", {
            let mut c = crd();
            c["spec"]["preserveUnknownFields"] = json!(true);
            c
        }, vec!["spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".into()]),
        ("defaults need preserveUnknownFields false", {
            let mut c = schema(json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}));
            c["spec"]["preserveUnknownFields"] = json!(true);
            c
        }, vec![
            "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema".into(),
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".into(),
        ]),
        ("deprecation warning on a served version", {
            let mut c = crd();
            c["spec"]["versions"][0]["deprecationWarning"] = json!("old");
            c
        }, vec!["spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions".into()]),
        ("deprecation warning too long and not printable", {
            let mut c = crd();
            c["spec"]["versions"][0]["deprecated"] = json!(true);
            c["spec"]["versions"][0]["deprecationWarning"] = json!(format!("{}\t", "a".repeat(256)));
            c
        }, vec![
            format!("spec.versions[0].deprecationWarning: Invalid value: \"{}\\t\": must be <= 256 characters long", "a".repeat(256)),
            format!("spec.versions[0].deprecationWarning: Invalid value: \"{}\\t\": must only contain printable UTF-8 characters; non-printable character found at index 256", "a".repeat(256)),
        ]),
    ];
    for (name, obj, want) in rows {
        assert_eq!(create(obj), want, "{name}");
    }
}

#[test]
fn versions_are_echoed_as_upstreams_internal_type() {
    let mut none = crd();
    none["spec"]["versions"][0]["storage"] = json!(false);
    assert_eq!(
        create(none),
        [
            "spec.versions: Invalid value: [{\"Name\":\"v1\",\"Served\":true,\"Storage\":false,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":null,\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]: must have exactly one version marked as storage version",
            "status.storedVersions: Invalid value: null: must have at least one stored version",
        ]
    );
    let mut dup = crd();
    dup["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v1", "served": false, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "description": "<x>"}}}]);
    let versions = "[{\"Name\":\"v1\",\"Served\":true,\"Storage\":true,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":{\"OpenAPIV3Schema\":{\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"\",\"Type\":\"object\",\"Nullable\":false,\"Format\":\"\",\"Title\":\"\",\"Default\":null,\"Maximum\":null,\"ExclusiveMaximum\":false,\"Minimum\":null,\"ExclusiveMinimum\":false,\"MaxLength\":null,\"MinLength\":null,\"Pattern\":\"\",\"MaxItems\":null,\"MinItems\":null,\"UniqueItems\":false,\"MultipleOf\":null,\"Enum\":null,\"MaxProperties\":null,\"MinProperties\":null,\"Required\":null,\"Items\":null,\"AllOf\":null,\"OneOf\":null,\"AnyOf\":null,\"Not\":null,\"Properties\":null,\"AdditionalProperties\":null,\"PatternProperties\":null,\"Dependencies\":null,\"AdditionalItems\":null,\"Definitions\":null,\"ExternalDocs\":null,\"Example\":null,\"XPreserveUnknownFields\":null,\"XEmbeddedResource\":false,\"XIntOrString\":false,\"XListMapKeys\":null,\"XListType\":null,\"XMapType\":null,\"XValidations\":null}},\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null},{\"Name\":\"v1\",\"Served\":false,\"Storage\":true,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":{\"OpenAPIV3Schema\":{\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"\\u003cx\\u003e\",\"Type\":\"object\",\"Nullable\":false,\"Format\":\"\",\"Title\":\"\",\"Default\":null,\"Maximum\":null,\"ExclusiveMaximum\":false,\"Minimum\":null,\"ExclusiveMinimum\":false,\"MaxLength\":null,\"MinLength\":null,\"Pattern\":\"\",\"MaxItems\":null,\"MinItems\":null,\"UniqueItems\":false,\"MultipleOf\":null,\"Enum\":null,\"MaxProperties\":null,\"MinProperties\":null,\"Required\":null,\"Items\":null,\"AllOf\":null,\"OneOf\":null,\"AnyOf\":null,\"Not\":null,\"Properties\":null,\"AdditionalProperties\":null,\"PatternProperties\":null,\"Dependencies\":null,\"AdditionalItems\":null,\"Definitions\":null,\"ExternalDocs\":null,\"Example\":null,\"XPreserveUnknownFields\":null,\"XEmbeddedResource\":false,\"XIntOrString\":false,\"XListMapKeys\":null,\"XListType\":null,\"XMapType\":null,\"XValidations\":null}},\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]";
    assert_eq!(
        create(dup),
        [
            format!("spec.versions: Invalid value: {versions}: must contain unique version names"),
            format!("spec.versions: Invalid value: {versions}: must have exactly one version marked as storage version"),
            // The second v1 finds the stored v1 already matched by the first.
            "status.storedVersions: Invalid value: [\"v1\"]: must have the storage version v1".into(),
        ]
    );
}

#[test]
fn subresources_columns_and_conversion() {
    let rows: Vec<(&str, Value, Vec<&str>)> = vec![
        ("scale paths", {
            let mut c = crd();
            c["spec"]["versions"][0]["subresources"] = json!({"scale": {"specReplicasPath": "spec.replicas",
                "statusReplicasPath": ".spec.replicas", "labelSelectorPath": ".metadata.labels"}});
            c
        }, vec![
            "spec.subresources.scale.specReplicasPath: Invalid value: \"spec.replicas\": must be a simple json path starting with .",
            "spec.subresources.scale.statusReplicasPath: Invalid value: \".spec.replicas\": should be a json path under .status",
            "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status",
        ]),
        ("scale paths required", {
            let mut c = crd();
            c["spec"]["versions"][0]["subresources"] = json!({"scale": {}});
            c
        }, vec![
            "spec.subresources.scale.specReplicasPath: Required value",
            "spec.subresources.scale.statusReplicasPath: Required value",
        ]),
        ("printer columns", {
            let mut c = crd();
            c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
                {"name": "", "type": "", "jsonPath": ""},
                {"name": "n", "type": "text", "format": "uuid", "jsonPath": "spec"}]);
            c
        }, vec![
            "spec.additionalPrinterColumns[0].name: Required value",
            "spec.additionalPrinterColumns[0].type: Required value: must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[0].JSONPath: Required value",
            "spec.additionalPrinterColumns[1].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[1].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password",
            "spec.additionalPrinterColumns[1].JSONPath: Invalid value: \"spec\": must be a simple json path starting with .",
        ]),
        ("webhook without client config", {
            let mut c = crd();
            c["spec"]["conversion"] = json!({"strategy": "Webhook"});
            c
        }, vec![
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ]),
        ("webhook url", {
            let mut c = crd();
            c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": "http://u@h?x=1#f"}, "conversionReviewVersions": ["v2", "v2", "V3"]}});
            c
        }, vec![
            "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "spec.conversion.webhookClientConfig.url: Invalid value: \"u\": user information is not permitted in the URL",
            "spec.conversion.webhookClientConfig.url: Invalid value: \"f\": fragments are not permitted in the URL",
            "spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
            "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
            "spec.conversion.conversionReviewVersions[2]: Invalid value: \"V3\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\",\"v2\",\"V3\"]: must include at least one of v1, v1beta1",
        ]),
        ("webhook service", {
            let mut c = crd();
            c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"service": {"port": 0, "path": "x//"}}, "conversionReviewVersions": ["v1"]}});
            c
        }, vec![
            "spec.conversion.webhookClientConfig.service.name: Required value",
            "spec.conversion.webhookClientConfig.service.namespace: Required value",
            "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            "spec.conversion.webhookClientConfig.service.path: Invalid value: \"x//\": must start with a '/'",
            "spec.conversion.webhookClientConfig.service.path: Invalid value: \"x//\": segment[0] may not be empty",
            "spec.conversion.webhookClientConfig.service.path: Invalid value: \"x//\": segment[1] may not be empty",
        ]),
        ("webhook members without the strategy", {
            let mut c = crd();
            c["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
                "clientConfig": {"url": "https://h"}, "conversionReviewVersions": ["v1"]}});
            c
        }, vec![
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
        ]),
        ("unknown strategy", {
            let mut c = crd();
            c["spec"]["conversion"] = json!({"strategy": "Magic"});
            c
        }, vec!["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""]),
    ];
    for (name, obj, want) in rows {
        assert_eq!(create(obj), want, "{name}");
    }
}

#[test]
fn schema_keyword_and_structural_rules() {
    const R: &str = "spec.validation.openAPIV3Schema";
    let rows: Vec<(&str, Value, Vec<String>)> = vec![
        ("field without type", json!({"type": "object", "properties": {"spec": {"properties": {"a": {}}}}}),
            vec![
                format!("{R}.properties[spec].properties[a].type: Required value: must not be empty for specified object fields"),
                format!("{R}.properties[spec].type: Required value: must not be empty for specified object fields"),
            ]),
        ("root not an object", json!({"type": "string"}),
            vec![format!("{R}.type: Invalid value: \"string\": must be object at the root")]),
        ("array without items, item without type", json!({"type": "object", "properties": {
            "a": {"type": "array"}, "b": {"type": "array", "items": {}}}}),
            vec![
                format!("{R}.properties[a].items: Required value: must be specified"),
                format!("{R}.properties[b].items.type: Required value: must not be empty for specified array items"),
            ]),
        ("forbidden keywords", json!({"type": "object", "properties": {"a": {"type": "array",
            "$ref": "#/x", "uniqueItems": true, "items": [{"type": "string"}], "id": "i",
            "additionalItems": false, "patternProperties": {"x": {}}, "definitions": {"d": {"type": "string"}},
            "dependencies": {"x": ["y"]}}, "b": {"type": "null"}, "c": {"type": "text"}}}),
            vec![
                format!("{R}.properties[a].id: Forbidden: id is not supported"),
                format!("{R}.properties[a].additionalItems: Forbidden: additionalItems is not supported"),
                format!("{R}.properties[a].patternProperties: Forbidden: patternProperties is not supported"),
                format!("{R}.properties[a].definitions: Forbidden: definitions is not supported"),
                format!("{R}.properties[a].dependencies: Forbidden: dependencies is not supported"),
                format!("{R}.properties[a].$ref: Forbidden: $ref is not supported"),
                format!("{R}.properties[a].items: Forbidden: items must be a schema object and not an array"),
                format!("{R}.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
                format!("{R}.properties[b].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
                format!("{R}.properties[b].type: Forbidden: type cannot be set to null, use nullable as an alternative"),
                format!("{R}.properties[c].type: Unsupported value: \"text\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
            ]),
        ("$schema is only refused by the structural conversion", json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}),
            vec![format!("{R}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported")]),
        ("properties with additionalProperties", json!({"type": "object", "additionalProperties": true,
            "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "string"}}}}),
            vec![
                format!("{R}.additionalProperties: Forbidden: must not be used at the root"),
                format!("{R}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"),
            ]),
        ("metadata restricted at the root", json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "kind": {"type": "integer"}}}),
            vec![
                format!("{R}.properties[kind].type: Invalid value: \"integer\": must be string"),
                format!("{R}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"),
            ]),
        ("name and generateName may be restricted", json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
            vec![]),
        ("defaults in top-level metadata", json!({"type": "object", "properties": {
            "metadata": {"type": "object", "default": {}}}}),
            vec![format!("{R}.properties[metadata].default: Forbidden: must not be set in top-level metadata")]),
        ("junctors must not specify structure", json!({"type": "object", "properties": {"a": {"type": "string"}},
            "anyOf": [{"type": "object", "properties": {"b": {"description": "d"}, "metadata": {}}}]}),
            vec![
                format!("{R}.anyOf[0].properties[b].description: Forbidden: must be empty to be structural"),
                format!("{R}.anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"),
                format!("{R}.anyOf[0].type: Forbidden: must be empty to be structural"),
                format!("{R}.properties[b]: Required value: because it is defined in {R}.anyOf[0].properties[b]"),
                format!("{R}.properties[metadata]: Required value: because it is defined in {R}.anyOf[0].properties[metadata]"),
            ]),
        ("int-or-string patterns", json!({"type": "object", "properties": {
            "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "b": {"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "x"}]},
            "c": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true}}}),
            vec![
                format!("{R}.properties[c].type: Required value: must be object if x-kubernetes-embedded-resource is true"),
                format!("{R}.properties[c].x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true"),
                format!("{R}.properties[c].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"),
            ]),
        ("preserve-unknown-fields false", json!({"type": "object", "properties": {
            "a": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
            vec![format!("{R}.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined")]),
        ("list and map types", json!({"type": "object", "properties": {
            "m": {"type": "string", "x-kubernetes-map-type": "deep"},
            "l": {"type": "object", "x-kubernetes-list-type": "bag", "x-kubernetes-list-map-keys": ["k"]},
            "k": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b", "a"],
                "items": {"type": "object", "required": ["a"], "properties": {"a": {"type": "object"}, "c": {"type": "string"}}}},
            "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "nullable": true}}}}),
            vec![
                format!("{R}.properties[k].items.properties[a].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
                format!("{R}.properties[k].x-kubernetes-list-map-keys: Invalid value: [\"a\",\"b\",\"a\"]: entries must all be names of item properties"),
                // (upstream repeats the type error for the second "a"; causes are listed once)
                format!("{R}.properties[k].x-kubernetes-list-map-keys: Invalid value: [\"a\",\"b\",\"a\"]: must not contain duplicate entries"),
                format!("{R}.properties[l].type: Invalid value: \"object\": must be array if x-kubernetes-list-type is specified"),
                format!("{R}.properties[l].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""),
                format!("{R}.properties[l].x-kubernetes-list-type: Invalid value: \"bag\": must be map if x-kubernetes-list-map-keys is non-empty"),
                format!("{R}.properties[m].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified"),
                format!("{R}.properties[m].x-kubernetes-map-type: Unsupported value: \"deep\": supported values: \"atomic\", \"granular\""),
                format!("{R}.properties[s].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"),
                format!("{R}.properties[s].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set"),
            ]),
        ("map list keys need a default or required", json!({"type": "object", "properties": {
            "k": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"],
                "items": {"type": "object", "properties": {"a": {"type": "string", "nullable": true}}}}}}),
            vec![
                format!("{R}.properties[k].items.properties[a].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
                format!("{R}.properties[k].items.properties[a].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"),
            ]),
        ("validation rules, statically", json!({"type": "object", "x-kubernetes-validations": [
            {"rule": " "}, {"rule": "a\nb"}, {"rule": "x", "message": "a\nb", "messageExpression": " ",
             "reason": "Nope", "fieldPath": " "}]}),
            vec![
                format!("{R}.x-kubernetes-validations[0].rule: Required value: rule is not specified"),
                format!("{R}.x-kubernetes-validations[1].message: Required value: message must be specified if rule contains line breaks"),
                format!("{R}.x-kubernetes-validations[2].message: Invalid value: \"a\\nb\": must not contain line breaks"),
                format!("{R}.x-kubernetes-validations[2].messageExpression: Required value: messageExpression must be non-empty if specified"),
                format!("{R}.x-kubernetes-validations[2].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
                format!("{R}.x-kubernetes-validations[2].fieldPath: Invalid value: \" \": must be non-empty if specified"),
                format!("{R}.x-kubernetes-validations[2].fieldPath: Invalid value: \" \": must be a valid path"),
            ]),
        ("nullable root", json!({"type": "object", "nullable": true}),
            vec![format!("{R}.nullable: Forbidden: nullable cannot be true at the root")]),
    ];
    for (name, s, want) in rows {
        assert_eq!(create(schema(s)), want, "{name}");
    }
}

#[test]
fn per_version_schemas_report_under_their_version() {
    let mut c = crd();
    c["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object", "properties": {"a": {}}}}}]);
    assert_eq!(
        create(c),
        ["spec.versions[1].schema.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields"]
    );
}

#[test]
fn status_subresource_restricts_the_root() {
    let mut c = schema(json!({"type": "string"}));
    c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    assert_eq!(
        create(c),
        [
            "spec.validation.openAPIV3Schema.type: Invalid value: \"string\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
            "spec.validation.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root",
        ]
    );
    let mut c = schema(
        json!({"type": "object", "anyOf": [{"required": ["a"]}], "properties": {"a": {"type": "string"}}}),
    );
    c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    let got = create(c);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("spec.validation.openAPIV3Schema: Invalid value: {\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"\",\"Type\":\"object\","), "{got:?}");
    assert!(got[0].contains("\"AnyOf\":[{\"ID\":\"\","), "{got:?}");
    assert!(got[0].ends_with("}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"), "{got:?}");
}

/// A schema nested far deeper than the walk goes is not a panic or a stack overflow.
#[test]
fn deep_schemas_are_bounded() {
    let mut s = json!({"type": "string"});
    for _ in 0..(super::SCHEMA_DEPTH_MAX * 4) {
        s = json!({"type": "object", "properties": {"x": s}});
    }
    assert_eq!(create(schema(s)), Vec::<String>::new());
    let mut bad = json!({});
    for _ in 0..(super::SCHEMA_DEPTH_MAX * 4) {
        bad = json!({"type": "object", "properties": {"x": bad}, "anyOf": [bad.clone()]});
        if bad.to_string().len() > 1 << 20 {
            break;
        }
    }
    // Only the walk's depth is checked: reported causes stop at the bound.
    let _ = create(schema(bad));
}

#[test]
fn update_rules() {
    let old = stored(crd(), json!({}));
    let mut new = crd();
    new["spec"]["group"] = json!("c.example.com");
    new["spec"]["names"]["plural"] = json!("gadgets");
    new["spec"]["scope"] = json!("Cluster");
    assert_eq!(
        update(new.clone(), &old),
        [
            "spec.group: Invalid value: \"c.example.com\": field is immutable",
            "spec.names.plural: Invalid value: \"gadgets\": field is immutable",
        ],
        "scope and kind may change until the CRD is established"
    );
    let old = stored(crd(), established());
    new["spec"]["names"]["kind"] = json!("Gadget");
    assert_eq!(
        update(new, &old),
        [
            "spec.scope: Invalid value: \"Cluster\": field is immutable",
            "spec.names.kind: Invalid value: \"Gadget\": field is immutable",
            "spec.group: Invalid value: \"c.example.com\": field is immutable",
            "spec.names.plural: Invalid value: \"gadgets\": field is immutable",
        ]
    );
}

/// A new storage version joins `status.storedVersions`; a version still stored cannot leave
/// `spec.versions`.
#[test]
fn stored_versions_on_update() {
    let old = stored(crd(), json!({}));
    let mut both = crd();
    both["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]);
    assert_eq!(update(both, &old), Vec::<String>::new());
    let mut only_v2 = crd();
    only_v2["spec"]["versions"][0]["name"] = json!("v2");
    assert_eq!(
        update(only_v2, &old),
        ["status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"]
    );
}

/// Rules added after a CRD was stored do not fail its unchanged schema on update.
#[test]
fn updates_keep_what_was_accepted() {
    let lax = json!({"type": "object", "properties": {"k": {"type": "array",
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"],
        "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}});
    let want_on_create = [
        "spec.validation.openAPIV3Schema.properties[k].items.properties[a].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
        "spec.validation.openAPIV3Schema.properties[s].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
    ];
    assert_eq!(create(schema(lax.clone())), want_on_create);
    let old = stored(schema(lax.clone()), json!({}));
    let mut new = schema(lax);
    new["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(update(new, &old), Vec::<String>::new());
    // A CRD stored with an unknown review version may keep it.
    let mut c = crd();
    c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "https://h"}, "conversionReviewVersions": ["v9"]}});
    assert_eq!(
        create(c.clone()),
        ["spec.conversion.conversionReviewVersions: Invalid value: [\"v9\"]: must include at least one of v1, v1beta1"]
    );
    let old = stored(c.clone(), json!({}));
    assert_eq!(update(c, &old), Vec::<String>::new());
}

#[test]
fn status_writes_check_accepted_names() {
    let s = strategy(GROUP, RESOURCE);
    let old = stored(crd(), json!({}));
    let mut new = old.clone();
    new["status"]["acceptedNames"] =
        json!({"plural": "Widgets", "kind": "Widget", "listKind": "Widget"});
    s.prepare_for_subresource_update("status", &mut new, &old);
    assert_eq!(
        texts(s.validate_subresource_update("status", &new, &old)),
        [
            format!("status.acceptedNames.plural: Invalid value: \"Widgets\": {DNS1035}"),
            "status.acceptedNames.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".into(),
        ]
    );
}

#[test]
fn protected_groups_need_approval() {
    let mut c = crd();
    c["metadata"]["name"] = json!("widgets.x.k8s.io");
    c["spec"]["group"] = json!("x.k8s.io");
    assert_eq!(
        create(c.clone()),
        ["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"]
    );
    c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "maybe"});
    assert_eq!(
        create(c.clone()),
        ["metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"maybe\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"]
    );
    for ok in [
        "https://github.com/kubernetes/kubernetes/pull/1",
        "unapproved, testing",
    ] {
        c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": ok});
        assert_eq!(create(c.clone()), Vec::<String>::new(), "{ok}");
    }
}

/// Selectable fields resolve against the version's schema as upstream's CEL field paths do.
#[test]
fn selectable_fields_resolve_against_the_schema() {
    let mut c = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "number"},
            "m": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "metadata": {"type": "object"}}}));
    c["spec"]["versions"][0]["selectableFields"] = json!([
        {"jsonPath": ".spec.s"}, {"jsonPath": ".spec.n"}, {"jsonPath": ".metadata.name"},
        {"jsonPath": ".spec.m.k"}, {"jsonPath": "spec.s"}, {"jsonPath": ".spec['s']"},
        {"jsonPath": ".spec.s"}, {"jsonPath": ".spec.x."}, {"jsonPath": ""}]);
    assert_eq!(
        create(c.clone()),
        [
            "spec.selectableFields[1].jsonPath: Invalid value: \".spec.n\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            "spec.selectableFields[2].jsonPath: Invalid value: \".metadata.name\": is an invalid path: does not refer to a valid field",
            "spec.selectableFields[4].jsonPath: Invalid value: \"spec.s\": is an invalid path: expected [ or . but got: spec",
            "spec.selectableFields[5].jsonPath: Invalid value: \".spec['s']\": is an invalid path: array notation is not allowed",
            "spec.selectableFields[6].jsonPath: Duplicate value: \".spec.s\"",
            "spec.selectableFields[7].jsonPath: Invalid value: \".spec.x.\": is an invalid path: does not refer to a valid field",
            "spec.selectableFields[8].jsonPath: Required value",
        ]
    );
    let many: Vec<Value> = (0..9)
        .map(|i| json!({"jsonPath": format!(".spec.m.a{i}")}))
        .collect();
    c["spec"]["versions"][0]["selectableFields"] = json!(many);
    assert_eq!(
        create(c.clone()),
        ["spec.selectableFields: Too many: 9: must have at most 8 items"]
    );
    // Unchanged, a list stored when it was allowed stays allowed.
    let old = stored(c.clone(), json!({}));
    assert_eq!(update(c, &old), Vec::<String>::new());
}

/// A rule's `fieldPath` must resolve from the schema that holds the rule.
#[test]
fn rule_field_paths_resolve() {
    let c = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "s": {"type": "string"}, "m": {"type": "object", "additionalProperties": {"type": "string"}}}}},
        "x-kubernetes-validations": [
            {"rule": "true", "fieldPath": ".spec.s"}, {"rule": "true", "fieldPath": ".spec['s']"},
            {"rule": "true", "fieldPath": ".spec.q"}, {"rule": "true", "fieldPath": ".spec.m['a.b']"},
            {"rule": "true", "fieldPath": "spec"}]}),
    );
    assert_eq!(
        create(c),
        [
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[2].fieldPath: Invalid value: \".spec.q\": must be a valid path",
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[4].fieldPath: Invalid value: \"spec\": must be a valid path",
        ]
    );
}

/// CRDs sent (dry run) to a v1.36.2 kube-apiserver and the `details.causes` it answered
/// (reason, field, message), in its order. `unordered` rows hold errors of sibling schema
/// properties, which upstream reports in Go map order (random); they are compared as sets.
/// Upstream may list one cause twice (a repeated list-map key); the server's causes are
/// each listed once, so the recorded list is compared without its repeats. Not recorded:
/// a CRD whose schema defaults are invalid (default validation is not implemented).
#[test]
fn causes_recorded_from_upstream() {
    let rows: Vec<Value> =
        serde_json::from_str(include_str!("testdata/recorded.json")).expect("recorded cases");
    assert!(rows.len() > 50, "{} rows", rows.len());
    let s = strategy(GROUP, RESOURCE);
    for row in rows {
        let name = row["name"].as_str().unwrap_or_default();
        let mut obj = row["crd"].clone();
        s.prepare_for_create(&mut obj, &ctx());
        let mut got: Vec<[String; 3]> = s
            .validate_create(&obj)
            .into_iter()
            .map(|c| [c.reason, c.field, c.message])
            .collect();
        let mut want: Vec<[String; 3]> = Vec::new();
        for c in row["causes"].as_array().into_iter().flatten() {
            let part = |i: usize| c[i].as_str().unwrap_or_default().to_string();
            let cause = [part(0), part(1), part(2)];
            if !want.contains(&cause) {
                want.push(cause);
            }
        }
        if row["unordered"].as_bool() == Some(true) {
            got.sort();
            want.sort();
        }
        assert_eq!(got, want, "{name}");
    }
}

/// Members of the wrong JSON type anywhere (which upstream's decoder would refuse with a 400)
/// give causes or nothing, never a panic.
#[test]
fn malformed_members_do_not_panic() {
    let junk = [
        json!(null),
        json!(5),
        json!("x"),
        json!([1, "a", null]),
        json!({"a": 1}),
        json!(true),
    ];
    let paths: &[&[&str]] = &[
        &["spec"],
        &["spec", "names"],
        &["spec", "versions"],
        &["spec", "conversion"],
        &["spec", "conversion", "webhook"],
        &["spec", "versions", "0"],
        &["spec", "versions", "0", "schema"],
        &["spec", "versions", "0", "schema", "openAPIV3Schema"],
        &["spec", "versions", "0", "subresources"],
        &["spec", "versions", "0", "additionalPrinterColumns"],
        &["spec", "versions", "0", "selectableFields"],
    ];
    let schema_keys = [
        "properties",
        "items",
        "additionalProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-validations",
        "required",
        "default",
        "dependencies",
        "type",
    ];
    for path in paths {
        for j in &junk {
            let mut c = crd();
            c["spec"]["conversion"] =
                json!({"strategy": "Webhook", "webhook": {"clientConfig": {}}});
            let mut at = &mut c;
            for (i, key) in path.iter().enumerate() {
                let last = i + 1 == path.len();
                at = match key.parse::<usize>() {
                    Ok(n) => match at.get_mut(n) {
                        Some(v) => v,
                        None => break,
                    },
                    Err(_) => &mut at[*key],
                };
                if last {
                    *at = j.clone();
                }
            }
            let _ = create(c.clone());
            let old = stored(crd(), json!({}));
            let _ = update(c, &old);
        }
    }
    for key in schema_keys {
        for j in &junk {
            let mut s = json!({"type": "object", "properties": {"a": {"type": "array",
                "x-kubernetes-list-type": "map", "items": {"type": "object"}}}});
            // Innermost first: a member replaced by junk holds no deeper ones.
            s["properties"]["a"]["items"][key] = j.clone();
            s["properties"]["a"][key] = j.clone();
            s[key] = j.clone();
            assert!(!create(schema(s)).iter().any(String::is_empty));
        }
    }
}

/// A CRD stored with a default its schema prunes keeps it on update; a new one may not.
#[test]
fn unpruned_defaults_are_kept_on_update_only() {
    let s = json!({"type": "object", "properties": {"o": {"type": "object",
        "properties": {"k": {"type": "string"}}, "default": {"k": "v", "extra": 1}}}});
    assert_eq!(
        create(schema(s.clone())),
        ["spec.validation.openAPIV3Schema.properties[o].default: Invalid value: {\"extra\":1,\"k\":\"v\"}: must not have unknown fields"]
    );
    let old = stored(schema(s.clone()), json!({}));
    let mut new = schema(s);
    new["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(update(new, &old), Vec::<String>::new());
}

/// CEL compilation of `x-kubernetes-validations`: every answer observed on an upstream v1.36
/// server, except that upstream's object type names carry a random number
/// (`selfType136486209`) where keel's say `selfType0`.
#[test]
fn validation_rules_compile() {
    const S: &str = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    let bad = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.replicas"},
            {"rule": "self.nope == 1", "reason": "FieldValueForbidden", "optionalOldSelf": true},
            {"rule": "self.replicas > 1", "messageExpression": "self.replicas"},
            {"rule": "self.replicas > 1", "messageExpression": "'a' +"},
            {"rule": "foo > 1"},
            {"rule": "self.replicas == oldSelf.replicas"},
            {"rule": "self.m.exists(k, self.m[k] == 'x') && self.l.all(x, x.a > 0) && self.ios == 1 && self.p.anything == 1"},
            {"rule": "self.l[0].a == 'x'"},
            {"rule": "1 +"},
            {"rule": "self.m.x == 'y' && self.m['x'] == 1"}],
        "properties": {
            "replicas": {"type": "integer"},
            "m": {"type": "object", "maxProperties": 5, "additionalProperties": {"type": "string", "maxLength": 5}},
            "l": {"type": "array", "maxItems": 5, "items": {"type": "object", "properties": {"a": {"type": "integer"}}}},
            "ios": {"x-kubernetes-int-or-string": true},
            "p": {"x-kubernetes-preserve-unknown-fields": true}}}}});
    let want = [
        format!(r#"{S}[0].rule: Invalid value: {{"Rule":"self.replicas","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: cel expression must evaluate to a bool"#),
        format!(r#"{S}[1].rule: Invalid value: {{"Rule":"self.nope == 1","Message":"","MessageExpression":"","Reason":"FieldValueForbidden","FieldPath":"","OptionalOldSelf":true}}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'
 | self.nope == 1
 | ....^"#),
        format!("{S}[1].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"),
        format!(r#"{S}[2].messageExpression: Invalid value: {{"Rule":"self.replicas \u003e 1","Message":"","MessageExpression":"self.replicas","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: messageExpression must evaluate to a string"#),
        format!(r#"{S}[3].messageExpression: Invalid value: {{"Rule":"self.replicas \u003e 1","Message":"","MessageExpression":"'a' +","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: messageExpression compilation failed: ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {{'[', '{{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}}
 | 'a' +
 | .....^"#),
        format!(r#"{S}[4].rule: Invalid value: {{"Rule":"foo \u003e 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')
 | foo > 1
 | ^"#),
        format!(r#"{S}[6].rule: Invalid value: {{"Rule":"self.m.exists(k, self.m[k] == 'x') \u0026\u0026 self.l.all(x, x.a \u003e 0) \u0026\u0026 self.ios == 1 \u0026\u0026 self.p.anything == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:86: undefined field 'p'
 | self.m.exists(k, self.m[k] == 'x') && self.l.all(x, x.a > 0) && self.ios == 1 && self.p.anything == 1
 | .....................................................................................^"#),
        format!(r#"{S}[7].rule: Invalid value: {{"Rule":"self.l[0].a == 'x'","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:13: found no matching overload for '_==_' applied to '(int, string)'
 | self.l[0].a == 'x'
 | ............^"#),
        format!(r#"{S}[8].rule: Invalid value: {{"Rule":"1 +","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {{'[', '{{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}}
 | 1 +
 | ...^"#),
        format!(r#"{S}[9].rule: Invalid value: {{"Rule":"self.m.x == 'y' \u0026\u0026 self.m['x'] == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:32: found no matching overload for '_==_' applied to '(string, int)'
 | self.m.x == 'y' && self.m['x'] == 1
 | ...............................^"#),
    ];
    assert_eq!(create(schema(bad)), want);

    let typed = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self == 1"},
            {"rule": "self.l[0] == 1"},
            {"rule": "self.e == 1"},
            {"rule": "self.p.a == 1 && self.e.kind == 'x' && self.e.metadata.name == 'a' && self.e.spec == 1"}],
        "properties": {
            "l": {"type": "array", "maxItems": 5, "items": {"type": "object", "properties": {"a": {"type": "integer"}}}},
            "e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}});
    let want = [
        format!(
            r#"{S}[0].rule: Invalid value: {{"Rule":"self == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(selfType0, int)'
 | self == 1
 | .....^"#
        ),
        format!(
            r#"{S}[1].rule: Invalid value: {{"Rule":"self.l[0] == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(selfType0.l.@idx, int)'
 | self.l[0] == 1
 | ..........^"#
        ),
        format!(
            r#"{S}[2].rule: Invalid value: {{"Rule":"self.e == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(selfType0.e, int)'
 | self.e == 1
 | .......^"#
        ),
        format!(
            r#"{S}[3].rule: Invalid value: {{"Rule":"self.p.a == 1 \u0026\u0026 self.e.kind == 'x' \u0026\u0026 self.e.metadata.name == 'a' \u0026\u0026 self.e.spec == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:7: undefined field 'a'
 | self.p.a == 1 && self.e.kind == 'x' && self.e.metadata.name == 'a' && self.e.spec == 1
 | ......^
ERROR: <input>:1:77: undefined field 'spec'
 | self.p.a == 1 && self.e.kind == 'x' && self.e.metadata.name == 'a' && self.e.spec == 1
 | ............................................................................^"#
        ),
    ];
    assert_eq!(create(schema(typed)), want);
}

/// Upstream compiles the rules only when the schema has no other error (a bad `pattern`, a
/// rule's static error), and names nested nodes' rules by their schema path.
#[test]
fn validation_rules_compile_only_in_an_error_free_schema() {
    const R: &str = "spec.validation.openAPIV3Schema";
    let rows = [
        (json!({"type": "object", "x-kubernetes-validations": [{"rule": "x"}], "properties": {
            "a": {"type": "string", "pattern": "("},
            "b": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self.y"}]}}}}),
         vec![format!("{R}.properties[a].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(`")]),
        (json!({"type": "object", "x-kubernetes-validations": [{"rule": "x"}, {"rule": "y", "reason": "Nope"}]}),
         vec![format!("{R}.x-kubernetes-validations[1].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"")]),
        (json!({"type": "object", "x-kubernetes-validations": [{"rule": "x"}, {"rule": "y", "fieldPath": ".q"}]}),
         vec![format!("{R}.x-kubernetes-validations[1].fieldPath: Invalid value: \".q\": must be a valid path")]),
        (json!({"type": "object", "properties": {"a": {"type": "object", "additionalProperties": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.z == oldSelf"}]}}}}),
         vec![format!(r#"{R}.properties[a].additionalProperties.x-kubernetes-validations[0].rule: Invalid value: {{"Rule":"self.z == oldSelf","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:5: undefined field 'z'
 | self.z == oldSelf
 | ....^"#)]),
        (json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"s": {"type": "string", "maxLength": 5}},
            "x-kubernetes-validations": [{"rule": "self.s.matches('(')"}]}}}),
         vec![format!(r#"{R}.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {{"Rule":"self.s.matches('(')","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:16: invalid matches argument
 | self.s.matches('(')
 | ...............^"#)]),
        (json!({"type": "object", "x-kubernetes-validations": [{"rule": "x"}], "properties": {"a": {"type": "string", "minLength": -1}}}),
         vec![format!(r#"{R}.x-kubernetes-validations[0].rule: Invalid value: {{"Rule":"x","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' (in container '')
 | x
 | ^"#)]),
    ];
    for (i, (s, want)) in rows.into_iter().enumerate() {
        assert_eq!(create(schema(s)), want, "row {i}");
    }
}

/// Rules using upstream's list and string libraries, which upstream v1.36 accepts.
#[test]
fn validation_rules_with_library_functions_compile() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "l": {"type": "array", "maxItems": 5, "items": {"type": "integer"}, "x-kubernetes-validations": [
            {"rule": "self.isSorted() && [3, 1].isSorted() == false"},
            {"rule": "self.sum() == 4 && self.min() == 1 && self.max() == 2"},
            {"rule": "self.indexOf(2) == 1 && self.lastIndexOf(1) == 2 && self.indexOf(9) == -1"}]},
        "s": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [
            {"rule": "self.lowerAscii() == 'a-b' && self.matches('^[A-Z]-') && self.replace('-', '') == 'AB'"}]},
        "p": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [
            {"rule": "type(self) == int ? self > 0 : self.size() > 0"}]},
        "m": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 5},
              "x-kubernetes-validations": [{"rule": "self.all(k, k.size() < 5 && self[k] != 'x')",
                                            "messageExpression": "self.size() > 1 ? 'bad' : 'worse'"}]}}}}});
    let errs = create(schema(s));
    assert!(errs.is_empty(), "{errs:#?}");
    let root = json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('a')"},
            {"rule": "self.kind == 'Root' && self.apiVersion == 'c.example.com/v1'"},
            {"rule": "!has(oldSelf.spec) || oldSelf.spec.x <= self.spec.x", "message": "x may only grow"},
            {"rule": "oldSelf.hasValue() || self.spec.x > 0", "optionalOldSelf": true,
             "message": "new x must be positive"}],
        "properties": {"spec": {"type": "object", "properties": {"x": {"type": "integer"}}}}});
    let errs = create(schema(root));
    assert!(errs.is_empty(), "{errs:#?}");
}

/// `oldSelf` below a list that is not `listType=map` (upstream v1.36's answers, including
/// its report that an optionalOldSelf rule which failed to compile does not use oldSelf).
#[test]
fn validation_rules_old_self_needs_correlation() {
    const R: &str = "spec.validation.openAPIV3Schema";
    let s = json!({"type": "object", "properties": {
        "a": {"type": "array", "maxItems": 4, "items": {"type": "object", "properties": {
            "b": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self == oldSelf"}, {"rule": "self == oldSelf", "optionalOldSelf": true}]}},
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
        "s": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "set", "items": {
            "type": "string", "maxLength": 3, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
        "m": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
            "items": {"type": "object", "required": ["k"], "properties": {
                "k": {"type": "string", "maxLength": 3},
                "v": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}}});
    let mut want = vec![
        format!("{R}.properties[a].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {R}.properties[a]"),
        format!("{R}.properties[a].items.properties[b].x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {R}.properties[a]"),
        format!(r#"{R}.properties[a].items.properties[b].x-kubernetes-validations[1].rule: Invalid value: {{"Rule":"self == oldSelf","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":true}}: compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, optional_type(int))'
 | self == oldSelf
 | .....^"#),
        format!("{R}.properties[a].items.properties[b].x-kubernetes-validations[1].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"),
        format!("{R}.properties[s].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {R}.properties[s]"),
    ];
    let mut got = create(schema(s));
    // Upstream's order is Go's map order; compare as sets.
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

/// The realistic schema of keel-apiext's `cel_rules_of_a_realistic_schema`: upstream v1.36
/// accepts every rule.
#[test]
fn validation_rules_of_a_realistic_schema_compile() {
    let spec: Value = serde_json::from_str(r#"{"type": "object", "x-kubernetes-validations": [{"rule": "self.listeners.all(l1, self.listeners.exists_one(l2, l1.name == l2.name))", "message": "names must be unique"}, {"rule": "has(self.port) ? self.port > 0 : true"}, {"rule": "self.mode in ['A', 'B']", "message": "mode must be A or B"}, {"rule": "self.listeners.map(l, l.name).all(n, n.size() <= 8)"}, {"rule": "self.?hostname.orValue('') == '' || self.hostname.endsWith('.example.com')"}, {"rule": "!has(self.ref) || self.ref.split('/').size() == 2"}, {"rule": "self.listeners.filter(l, l.protocol == 'HTTPS').all(l, has(l.tls))", "message": "HTTPS needs tls"}, {"rule": "has(self.mode) == has(oldSelf.mode)", "message": "mode cannot be added or removed"}, {"rule": "size(self.listeners) <= 4"}, {"rule": "self.tags.all(k, k.lowerAscii() == k)"}, {"rule": "self.labels.exists(k, v, v == 'x') == false"}], "properties": {"port": {"type": "integer"}, "mode": {"type": "string", "maxLength": 1}, "hostname": {"type": "string", "maxLength": 63}, "ref": {"type": "string", "maxLength": 63}, "tags": {"type": "object", "maxProperties": 4, "additionalProperties": {"type": "string", "maxLength": 8}}, "labels": {"type": "object", "maxProperties": 4, "additionalProperties": {"type": "string", "maxLength": 8}}, "listeners": {"type": "array", "maxItems": 8, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 16}, "protocol": {"type": "string", "maxLength": 8}, "tls": {"type": "object", "properties": {"mode": {"type": "string", "maxLength": 8}}}}}}}}"#).unwrap();
    let errs = create(schema(
        json!({"type": "object", "properties": {"spec": spec}}),
    ));
    assert!(errs.is_empty(), "{errs:#?}");
}

/// Two-variable comprehensions, transformMap/transformList, `sets` and find/findAll: upstream
/// v1.36 accepts these rules.
#[test]
fn validation_rules_with_extensions_compile() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.m.transformMap(k, v, v + 1) == {'a': 2}"},
            {"rule": "sets.contains(self.l, [1]) && sets.equivalent(self.l, [2, 1, 1]) && !sets.intersects(self.l, [3])"},
            {"rule": "self.s.find('[0-9]+') == '123' && self.s.findAll('[a-z]') == ['a', 'b'] && self.s.findAll('[0-9]', 1) == ['1']"},
            {"rule": "self.m.all(k, v, v == 1) && self.l.exists(i, v, i == 1 && v == 2)"},
            {"rule": "self.l.transformList(i, v, i + v) == [1, 3]"}],
        "properties": {
            "m": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "integer"}},
            "l": {"type": "array", "maxItems": 3, "items": {"type": "integer"}},
            "s": {"type": "string", "maxLength": 10}}}}});
    let errs = create(schema(s));
    assert!(errs.is_empty(), "{errs:#?}");
}

/// Quantity rules upstream v1.36 compiles. Comparing two quantities with `==` is estimated
/// as comparing values of unknown size (upstream's own cost test records a maximum of
/// 1844674407370955266 for `quantity("200M") == quantity("200M")`), so rule 1 is refused
/// for its cost.
#[test]
fn validation_rules_with_quantities_compile() {
    let spec: Value = serde_json::from_str(r#"{"type": "object", "x-kubernetes-validations": [{"rule": "quantity('1Gi').isGreaterThan(quantity('1000Mi')) && quantity('500m').isLessThan(quantity('1'))"}, {"rule": "quantity('1k') == quantity('1000') && quantity('1.5').compareTo(quantity('1500m')) == 0"}, {"rule": "quantity('2Ki').asInteger() == 2048 && quantity('1e3').add(24).asInteger() == 1024 && quantity('1').sub(quantity('2')).isLessThan(quantity('0'))"}, {"rule": "isQuantity('1.5Gi') && !isQuantity('1.5Gx') && !quantity('1.5').isInteger() && quantity('250m').asApproximateFloat() == 0.25"}, {"rule": "quantity(self.mem).isLessThan(quantity('1Gi'))", "message": "mem must be below 1Gi"}, {"rule": "!isQuantity(self.mem) || !quantity(self.mem).isLessThan(quantity('0'))"}], "properties": {"mem": {"type": "string", "maxLength": 10}}}"#).unwrap();
    let errs = create(schema(
        json!({"type": "object", "properties": {"spec": spec}}),
    ));
    let rule = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule";
    assert_eq!(
        errs,
        [
            format!("{rule}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {TRY}"),
            format!("{rule}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
            format!("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {TRY}"),
        ]
    );
}

/// Formatted strings are typed as upstream types them: `date-time` and `date` timestamp,
/// `duration` duration, `byte` bytes (upstream v1.36's answers).
#[test]
fn validation_rules_type_formatted_strings() {
    const S: &str = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.start == \"x\""}, {"rule": "self.timeout == 1"},
            {"rule": "self.d == \"x\""}, {"rule": "self.b == \"x\""}],
        "properties": {
            "start": {"type": "string", "format": "date-time"},
            "timeout": {"type": "string", "format": "duration"},
            "d": {"type": "string", "format": "date"},
            "b": {"type": "string", "format": "byte"}}}}});
    let want = [
        format!(
            r#"{S}[0].rule: Invalid value: {{"Rule":"self.start == \"x\"","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:12: found no matching overload for '_==_' applied to '(timestamp, string)'
 | self.start == "x"
 | ...........^"#
        ),
        format!(
            r#"{S}[1].rule: Invalid value: {{"Rule":"self.timeout == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:14: found no matching overload for '_==_' applied to '(duration, int)'
 | self.timeout == 1
 | .............^"#
        ),
        format!(
            r#"{S}[2].rule: Invalid value: {{"Rule":"self.d == \"x\"","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(timestamp, string)'
 | self.d == "x"
 | .......^"#
        ),
        format!(
            r#"{S}[3].rule: Invalid value: {{"Rule":"self.b == \"x\"","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}}: compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(bytes, string)'
 | self.b == "x"
 | .......^"#
        ),
    ];
    assert_eq!(create(schema(s)), want);
}

/// A schema whose `spec.tags` (strings of `max_length`, `max_items` of them) carries `rule`.
fn tags(rule: &str, max_length: Option<u64>, max_items: Option<u64>) -> Value {
    let mut item = json!({"type": "string"});
    if let Some(n) = max_length {
        item["maxLength"] = json!(n);
    }
    let mut list = json!({"type": "array", "items": item,
        "x-kubernetes-validations": [{"rule": rule}]});
    if let Some(n) = max_items {
        list["maxItems"] = json!(n);
    }
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"tags": list}}}})
}

const TAGS: &str = "spec.validation.openAPIV3Schema.properties[spec].properties[tags]";
const TRY: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// Rules whose estimated cost is over upstream's limits refuse the CRD with upstream's
/// causes: the rule's own, its share of the schema's total, the total.
#[test]
fn rules_over_the_cost_limits_are_refused() {
    let gpu = "self.all(x, x.contains('gpu'))";
    // Unbounded: each of ~1M strings of ~3M characters.
    assert_eq!(
        create(schema(tags(gpu, None, None))),
        [
            format!("{TAGS}.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {TRY}"),
            format!("{TAGS}.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
            format!("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {TRY}"),
        ]
    );
    // 11 per item of 16 characters, 2 for the rest: 909,090 items fit 10,000,000, one more
    // does not (the factor of a small excess is printed with 6 decimals).
    assert_eq!(
        create(schema(tags(gpu, Some(16), Some(909_090)))),
        Vec::<String>::new()
    );
    assert_eq!(
        create(schema(tags(gpu, Some(16), Some(909_091)))),
        [format!("{TAGS}.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.000000x {TRY}")]
    );
    assert_eq!(
        create(schema(tags(gpu, Some(16), Some(2_000_000)))),
        [format!("{TAGS}.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 2.2x {TRY}")]
    );
}

/// A rule on a list's items runs once per item: its cost is multiplied by `maxItems`, or by
/// as many of the smallest item as fit in a request when the list is unbounded.
#[test]
fn item_rules_cost_times_the_items() {
    let item_rule = |max_items: Option<u64>| {
        let mut list = json!({"type": "array", "items": {"type": "string", "maxLength": 16,
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}});
        if let Some(n) = max_items {
            list["maxItems"] = json!(n);
        }
        json!({"type": "object", "properties": {"tags": list}})
    };
    // 15 per string, 3 MiB / 3 bytes (`"",`) = 1,048,576 strings.
    assert_eq!(
        create(schema(item_rule(None))),
        [format!("spec.validation.openAPIV3Schema.properties[tags].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.6x {TRY}")]
    );
    assert_eq!(create(schema(item_rule(Some(100)))), Vec::<String>::new());
}

/// A messageExpression has its own limit and counts toward the total (not multiplied).
#[test]
fn message_expressions_over_the_cost_limit_are_refused() {
    let mut s = tags("true", None, None);
    s["properties"]["spec"]["properties"]["tags"]["x-kubernetes-validations"][0]
        ["messageExpression"] = json!("self.all(x, x.contains('gpu')) ? 'a' : 'b'");
    assert_eq!(
        create(schema(s)),
        [
            format!("{TAGS}.x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {TRY}"),
            format!("{TAGS}.x-kubernetes-validations[0].messageExpression: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
            format!("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {TRY}"),
        ]
    );
}

/// Over the schema's total but no rule over its own limit: the total names the most
/// expensive rules (at most 4, from 1% of the total limit).
#[test]
fn the_schema_total_names_the_most_expensive_rules() {
    // Each rule costs 8 * 1,048,576 = 8,388,608: 12 of them exceed 100,000,000.
    let rules: Vec<Value> = (0..12)
        .map(|i| json!({"rule": format!("self.contains('{i}')")}))
        .collect();
    let s = json!({"type": "object", "properties": {"tags": {"type": "array",
        "items": {"type": "string", "maxLength": 16, "x-kubernetes-validations": rules}}}});
    let p = "spec.validation.openAPIV3Schema.properties[tags].items.x-kubernetes-validations";
    let contributed = "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema";
    assert_eq!(
        create(schema(s)),
        [
            format!("{p}[0].rule: {contributed}"),
            format!("{p}[1].rule: {contributed}"),
            format!("{p}[2].rule: {contributed}"),
            format!("{p}[3].rule: {contributed}"),
            format!("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.006633x {TRY}"),
        ]
    );
}

/// An update that leaves a version's schema as it was does not refuse its rules for their
/// own cost (what a control plane stored stays updatable).
#[test]
fn unchanged_schemas_keep_their_rule_costs() {
    let s = tags("self.all(x, x.contains('gpu'))", Some(16), Some(2_000_000));
    assert_eq!(create(schema(s.clone())).len(), 1);
    let old = stored(schema(s.clone()), json!({}));
    let mut new = schema(s);
    new["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(update(new, &old), Vec::<String>::new());
}
