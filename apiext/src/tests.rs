//! Table tests: expected strings derived from upstream v1.36's source (kube-openapi's message
//! templates, `kubeOpenAPIResultToFieldErrors`, apimachinery's `field.Error.ErrorBody`).

use crate::{ListType, MapType, Schema, ITEMS};
use serde_json::{json, Value};

fn schema(v: Value) -> Schema {
    Schema::compile(&v).expect("schema compiles")
}

/// Causes as `<field>|<reason>|<message>` lines, easy to compare in tables.
fn causes(errs: Vec<keel_api::StatusCause>) -> Vec<String> {
    errs.into_iter()
        .map(|c| format!("{}|{}|{}", c.field, c.reason, c.message))
        .collect()
}

fn spec_schema(spec: Value) -> Schema {
    schema(json!({"type": "object", "properties": {"spec": spec}}))
}

#[test]
fn schema_is_shareable() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Schema>();
}

#[test]
fn compile_rejects_non_objects() {
    assert!(Schema::compile(&json!("x")).is_err());
    assert!(Schema::compile(&json!({})).is_ok());
}

fn prune_schema() -> Schema {
    spec_schema(json!({
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}},
                                    "gone": {"type": "string"}}},
            "n": {"type": "string", "nullable": true},
            "tpl": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object"}, "apiVersion": {"type": "string"}}}
        }
    }))
}

#[test]
fn prune_reports_paths_in_upstream_order() {
    let s = prune_schema();
    let mut obj = json!({
        "apiVersion": "a.example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "n", "zfoo": 1, "ownerReferences": [{"name": "o", "bad": 1}], "afoo": 2},
        "status": {"x": 1},
        "spec": {
            "zz": 1,
            "a": null,
            "b": null,
            "n": null,
            "items": [{"x": "1", "y": 2}],
            "m": {"k": "v"},
            "free": {"anything": {"deep": 1, "u": null}, "known": {"k": "v", "drop": 1}, "gone": null, "kept": null},
            "tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "what": 1, "creationTimestamp": null}, "spec": {"x": 1}, "extra": 1}
        }
    });
    let paths = s.prune(&mut obj);
    assert_eq!(
        paths,
        vec![
            // Confirmed against kube-apiserver v1.36.2: metadata's in sorted key order.
            "metadata.afoo",
            "metadata.ownerReferences[0].bad",
            "metadata.zfoo",
            "spec.b",
            "spec.free.known.drop",
            "spec.items[0].y",
            "spec.tpl.extra",
            "spec.tpl.spec.x",
            "spec.zz",
            "status",
            "spec.tpl.metadata.what",
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "a.example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "n", "ownerReferences": [{"name": "o"}]},
            "spec": {
                "n": null,
                "items": [{"x": "1"}],
                "m": {"k": "v"},
                "free": {"anything": {"deep": 1, "u": null}, "known": {"k": "v"}, "kept": null},
                "tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
            }
        })
    );
    // Nulls are pruned in the members pruning keeps whole too: an embedded resource's
    // apiVersion whose schema is a plain string.
    let mut obj = json!({"spec": {"tpl": {"apiVersion": null, "kind": null, "spec": {}}}});
    assert_eq!(s.prune(&mut obj), Vec::<String>::new());
    assert_eq!(obj, json!({"spec": {"tpl": {"kind": null, "spec": {}}}}));
}

#[test]
fn prune_without_schema_below_drops_everything() {
    // additionalProperties: true gives no schema for the members' contents.
    let s = spec_schema(json!({"type": "object", "additionalProperties": true}));
    let mut obj = json!({"spec": {"k": {"x": 1}, "s": "v"}});
    assert_eq!(s.prune(&mut obj), vec!["spec.k.x"]);
    assert_eq!(obj, json!({"spec": {"k": {}, "s": "v"}}));
}

/// Confirmed against kube-apiserver v1.36.2: `additionalProperties: false` keeps the key
/// (pruning its contents) and validation rejects it.
#[test]
fn additional_properties_false() {
    let s = spec_schema(json!({"type": "object", "additionalProperties": false}));
    let mut obj = json!({"spec": {"k": {"x": 1}}});
    assert_eq!(s.prune(&mut obj), vec!["spec.k.x"]);
    assert_eq!(obj, json!({"spec": {"k": {}}}));
    assert_eq!(
        causes(s.validate(&obj)),
        vec![
            r#"spec|FieldValueInvalid|Invalid value: "k": spec.k in body is a forbidden property"#
        ]
    );
}

#[test]
fn prune_nested_meta_fields_are_unknown() {
    let s = spec_schema(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
    let mut obj = json!({"kind": "K", "spec": {"kind": "x", "metadata": {}}});
    assert_eq!(s.prune(&mut obj), vec!["spec.kind", "spec.metadata"]);
    assert_eq!(obj, json!({"kind": "K", "spec": {}}));
}

#[test]
fn defaults_apply_top_down_and_are_pruned() {
    let s = spec_schema(json!({
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "default": 1},
            "keep": {"type": "integer", "default": 5},
            "nullable": {"type": "string", "nullable": true, "default": "d"},
            "forced": {"type": "string", "default": "f"},
            "nested": {"type": "object", "default": {"junk": 1},
                       "properties": {"x": {"type": "string", "default": "dx"}}},
            "list": {"type": "array", "items": {"type": "string", "default": "item"}},
            "map": {"type": "object", "additionalProperties": {"type": "integer", "default": 7}}
        }
    }));
    let mut obj = json!({"spec": {"keep": 2, "nullable": null, "forced": null,
                                  "list": ["a", null], "map": {"k": null, "j": 1}}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"keep": 2, "nullable": null, "forced": "f", "list": ["a", "item"],
                        "map": {"k": 7, "j": 1}, "replicas": 1, "nested": {"x": "dx"}}})
    );
}

/// Rows of (property schema under `spec.f`, value, expected causes).
fn validation_rows() -> Vec<(Value, Value, Vec<&'static str>)> {
    vec![
        (json!({"type": "integer"}), json!(3), vec![]),
        (json!({"type": "integer"}), json!(1.0), vec![]),
        (
            json!({"type": "integer"}),
            json!("3"),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "string": spec.f in body must be of type integer: "string""#],
        ),
        (
            json!({"type": "integer"}),
            json!(1.5),
            vec![
                r#"spec.f|FieldValueTypeInvalid|Invalid value: "number": spec.f in body must be of type integer: "number""#,
                r#"<nil>|FieldValueInvalid|Invalid value: "": Checked value must be of type integer (default format) in spec.f"#,
            ],
        ),
        (
            json!({"type": "integer", "format": "int32"}),
            json!(3000000000i64),
            vec![r#"<nil>|FieldValueInvalid|Invalid value: "": Checked value must be of type integer with format int32 in spec.f"#],
        ),
        (json!({"type": "number"}), json!(3), vec![]),
        (
            json!({"type": "string"}),
            json!(null),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "null": spec.f in body must be of type string: "null""#],
        ),
        (json!({"type": "string", "nullable": true}), json!(null), vec![]),
        (
            json!({"type": "boolean"}),
            json!({"a": 1}),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "object": spec.f in body must be of type boolean: "object""#],
        ),
        (
            json!({"x-kubernetes-int-or-string": true}),
            json!(true),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "boolean": spec.f in body must be of type integer,string: "boolean""#],
        ),
        (json!({"x-kubernetes-int-or-string": true}), json!("50%"), vec![]),
        (
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("c"),
            vec![r#"spec.f|FieldValueNotSupported|Unsupported value: "c": supported values: "a", "b""#],
        ),
        (
            json!({"type": "integer", "enum": [1, 2.5]}),
            json!(3),
            vec![r#"spec.f|FieldValueNotSupported|Unsupported value: 3: supported values: "1", "2.5""#],
        ),
        (json!({"type": "integer", "enum": [1, 2]}), json!(2), vec![]),
        (
            json!({"type": "string", "nullable": true, "enum": ["a"]}),
            json!(null),
            vec![r#"spec.f|FieldValueNotSupported|Unsupported value: null: supported values: "a""#],
        ),
        (
            json!({"type": "string", "maxLength": 3}),
            json!("abcd"),
            vec!["spec.f|FieldValueTooLong|Too long: may not be more than 3 bytes"],
        ),
        (
            json!({"type": "string", "maxLength": 1}),
            json!("ab"),
            vec!["spec.f|FieldValueTooLong|Too long: may not be more than 1 byte"],
        ),
        (json!({"type": "string", "maxLength": 3}), json!("äöü"), vec![]),
        (
            json!({"type": "string", "minLength": 3, "pattern": "^a+$"}),
            json!("b"),
            vec![r#"spec.f|FieldValueInvalid|Invalid value: "b": spec.f in body should be at least 3 chars long"#],
        ),
        (
            json!({"type": "string", "pattern": "^a+$"}),
            json!("b"),
            vec![r#"spec.f|FieldValueInvalid|Invalid value: "b": spec.f in body should match '^a+$'"#],
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            json!("nope"),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "nope": spec.f in body must be of type date-time: "nope""#],
        ),
        // Formats CRDs do not support are dropped: no check.
        (json!({"type": "string", "format": "color"}), json!("nope"), vec![]),
        (
            json!({"type": "integer", "maximum": 10}),
            json!(11),
            vec!["spec.f|FieldValueInvalid|Invalid value: 11: spec.f in body should be less than or equal to 10"],
        ),
        (
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(10),
            vec!["spec.f|FieldValueInvalid|Invalid value: 10: spec.f in body should be less than 10"],
        ),
        (
            json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": -1}),
            json!(0),
            vec![
                "spec.f|FieldValueInvalid|Invalid value: 0: spec.f in body should be greater than 0",
                "spec.f|FieldValueInvalid|Invalid value: 0: spec.f in body should be less than or equal to -1",
            ],
        ),
        (
            json!({"type": "number", "maximum": 1.5}),
            json!(2.5),
            vec!["spec.f|FieldValueInvalid|Invalid value: 2.5: spec.f in body should be less than or equal to 1.5"],
        ),
        (
            json!({"type": "number", "minimum": 1000000}),
            json!(0.5),
            vec!["spec.f|FieldValueInvalid|Invalid value: 0.5: spec.f in body should be greater than or equal to 1e+06"],
        ),
        (
            json!({"type": "integer", "multipleOf": 3}),
            json!(4),
            vec!["spec.f|FieldValueInvalid|Invalid value: 4: spec.f in body should be a multiple of 3"],
        ),
        (json!({"type": "number", "multipleOf": 0.5}), json!(1.5), vec![]),
        (
            json!({"type": "number", "multipleOf": 0.5}),
            json!(1.25),
            vec!["spec.f|FieldValueInvalid|Invalid value: 1.25: spec.f in body should be a multiple of 0.5"],
        ),
        (
            json!({"type": "array", "maxItems": 1, "items": {"type": "integer"}}),
            json!(["x", 2]),
            vec![
                r#"spec.f[0]|FieldValueTypeInvalid|Invalid value: "string": spec.f[0] in body must be of type integer: "string""#,
                "spec.f|FieldValueTooMany|Too many: 2: must have at most 1 item",
            ],
        ),
        (
            json!({"type": "array", "minItems": 2}),
            json!([1]),
            vec!["spec.f|FieldValueInvalid|Invalid value: 1: spec.f in body should have at least 2 items"],
        ),
        (
            json!({"type": "object", "maxProperties": 1, "minProperties": 3}),
            json!({"a": 1, "b": 2}),
            vec![
                "spec.f|FieldValueInvalid|Invalid value: 2: spec.f in body should have at least 3 properties",
                "spec.f|FieldValueTooMany|Too many: 2: must have at most 1 item",
            ],
        ),
        (
            json!({"type": "object", "required": ["z", "a"],
                   "properties": {"b": {"type": "string"}, "a": {"type": "string"}}}),
            json!({"b": 1}),
            vec![
                r#"spec.f.b|FieldValueTypeInvalid|Invalid value: "integer": spec.f.b in body must be of type string: "integer""#,
                "spec.f.z|FieldValueRequired|Required value",
                "spec.f.a|FieldValueRequired|Required value",
            ],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string", "maxLength": 1}}),
            json!({"k": "long"}),
            vec!["spec.f.k|FieldValueTooLong|Too long: may not be more than 1 byte"],
        ),
        (
            json!({"type": "integer", "anyOf": [{"maximum": 1}, {"minimum": 5}]}),
            json!(3),
            vec![
                r#"<nil>|FieldValueInvalid|Invalid value: "": "spec.f" must validate at least one schema (anyOf)"#,
                "spec.f|FieldValueInvalid|Invalid value: 3: spec.f in body should be less than or equal to 1",
            ],
        ),
        (json!({"type": "integer", "anyOf": [{"maximum": 1}, {"minimum": 5}]}), json!(6), vec![]),
        (
            json!({"type": "integer", "oneOf": [{"minimum": 1}, {"minimum": 2}]}),
            json!(3),
            vec![r#"<nil>|FieldValueInvalid|Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found 2 valid alternatives"#],
        ),
        (
            json!({"type": "integer", "allOf": [{"minimum": 5}, {"maximum": 1}]}),
            json!(3),
            vec![
                "spec.f|FieldValueInvalid|Invalid value: 3: spec.f in body should be greater than or equal to 5",
                "spec.f|FieldValueInvalid|Invalid value: 3: spec.f in body should be less than or equal to 1",
                r#"<nil>|FieldValueInvalid|Invalid value: "": "spec.f" must validate all the schemas (allOf). None validated"#,
            ],
        ),
        (
            json!({"type": "string", "not": {"enum": ["x"]}}),
            json!("x"),
            vec![r#"<nil>|FieldValueInvalid|Invalid value: "": "spec.f" must not validate the schema (not)"#],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}),
            json!(["a", "b", "a", "a", "b"]),
            vec![
                r#"spec.f[2]|FieldValueDuplicate|Duplicate value: "a""#,
                r#"spec.f[4]|FieldValueDuplicate|Duplicate value: "b""#,
            ],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}}),
            json!([1, 1.0]),
            vec![],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                   "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
            json!([{"name": "a"}, {"name": "b"}, {"name": "a"}, {}, {}]),
            vec![
                r#"spec.f[2]|FieldValueDuplicate|Duplicate value: {"name":"a"}"#,
                "spec.f[4]|FieldValueDuplicate|Duplicate value: {}",
            ],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "proto"],
                   "items": {"type": "object", "properties": {"name": {"type": "string"}, "proto": {"type": "string"}}}}),
            json!([{"name": "a", "proto": "TCP"}, {"name": "a", "proto": "UDP"}, {"proto": "TCP", "name": "a"}]),
            vec![r#"spec.f[2]|FieldValueDuplicate|Duplicate value: {"name":"a","proto":"TCP"}"#],
        ),
        // The rows from here to the embedded ones were confirmed against kube-apiserver v1.36.2.
        (
            json!({"type": "number", "maximum": 1.5, "minimum": 1000000}),
            json!(10000000.0),
            vec!["spec.f|FieldValueInvalid|Invalid value: 1e+07: spec.f in body should be less than or equal to 1.5"],
        ),
        (
            json!({"type": "number", "minimum": 1000000}),
            json!(1e-7),
            vec!["spec.f|FieldValueInvalid|Invalid value: 1e-07: spec.f in body should be greater than or equal to 1e+06"],
        ),
        // Go converts 1.5 to the enum's int64 type (1): no enum error.
        (
            json!({"type": "integer", "enum": [1, 2]}),
            json!(1.5),
            vec![
                r#"spec.f|FieldValueTypeInvalid|Invalid value: "number": spec.f in body must be of type integer: "number""#,
                r#"<nil>|FieldValueInvalid|Invalid value: "": Checked value must be of type integer (default format) in spec.f"#,
            ],
        ),
        (
            json!({"type": "integer", "multipleOf": 3, "maximum": 10, "exclusiveMaximum": true}),
            json!(10),
            vec![
                "spec.f|FieldValueInvalid|Invalid value: 10: spec.f in body should be a multiple of 3",
                "spec.f|FieldValueInvalid|Invalid value: 10: spec.f in body should be less than 10",
            ],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                   "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}),
            json!([{"name": "a"}, "x"]),
            vec![
                r#"spec.f[1]|FieldValueTypeInvalid|Invalid value: "string": spec.f[1] in body must be of type object: "string""#,
                r#"spec.f[1]|FieldValueInvalid|Invalid value: "x": must be an object for an array of list-type map"#,
            ],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                   "items": {"type": "object", "required": ["name"], "properties": {"p": {"type": "integer"}}}}),
            json!([{"p": 1}, {"p": 2}]),
            vec![
                "spec.f[0].name|FieldValueRequired|Required value",
                "spec.f[1].name|FieldValueRequired|Required value",
                "spec.f[1]|FieldValueDuplicate|Duplicate value: {}",
            ],
        ),
        // anyOf/oneOf report the alternative that got furthest: the format alternative runs
        // more validators than the maxLength one (kube-openapi's match count).
        (
            json!({"type": "string", "anyOf": [{"maxLength": 1}, {"format": "date"}]}),
            json!("abc"),
            vec![
                r#"<nil>|FieldValueInvalid|Invalid value: "": "spec.f" must validate at least one schema (anyOf)"#,
                r#"spec.f|FieldValueTypeInvalid|Invalid value: "abc": spec.f in body must be of type date: "abc""#,
            ],
        ),
        (
            json!({"type": "string", "oneOf": [{"maxLength": 1}, {"format": "date"}]}),
            json!("abc"),
            vec![
                r#"<nil>|FieldValueInvalid|Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found none valid"#,
                r#"spec.f|FieldValueTypeInvalid|Invalid value: "abc": spec.f in body must be of type date: "abc""#,
            ],
        ),
        (json!({"type": "string", "anyOf": [{"maxLength": 1}, {"format": "date"}]}), json!("a"), vec![]),
        // Go's \d is ASCII only (confirmed against kube-apiserver v1.36.2).
        (
            json!({"type": "string", "pattern": "^\\d+$"}),
            json!("١٢٣"),
            vec![r#"spec.f|FieldValueInvalid|Invalid value: "١٢٣": spec.f in body should match '^\d+$'"#],
        ),
        (
            json!({"type": "string", "format": "duration"}),
            json!("5 parsecs"),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "5 parsecs": spec.f in body must be of type duration: "5 parsecs""#],
        ),
        (json!({"type": "string", "format": "duration"}), json!("about 3 Days or so"), vec![]),
        // A non-integral bound on an integer fails for every value (confirmed against
        // kube-apiserver v1.36.2).
        (
            json!({"type": "integer", "maximum": 1.5}),
            json!(2),
            vec![
                r#"<nil>|FieldValueInvalid|Invalid value: "": Maximum boundary value must be of type integer (default format) in spec.f"#,
                "spec.f|FieldValueInvalid|Invalid value: 2: spec.f in body should be less than or equal to 1.5",
            ],
        ),
        (
            json!({"type": "integer", "maximum": 1.5}),
            json!(1),
            vec![r#"<nil>|FieldValueInvalid|Invalid value: "": Maximum boundary value must be of type integer (default format) in spec.f"#],
        ),
        // A non-string value must fit a (kept) format first.
        (
            json!({"type": "integer", "format": "int32"}),
            json!(true),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "": spec.f in body must be of type int32: """#],
        ),
        // Beyond int64: a float64 upstream, not an integer.
        (
            json!({"type": "integer"}),
            json!(9223372036854775808u64),
            vec![
                r#"spec.f|FieldValueTypeInvalid|Invalid value: "number": spec.f in body must be of type integer: "number""#,
                r#"<nil>|FieldValueInvalid|Invalid value: "": Checked value must be of type integer (default format) in spec.f"#,
            ],
        ),
        // Go converts the integer 97 to the string "a" when comparing with the enum.
        (
            json!({"type": "string", "enum": ["a", "b"]}),
            json!(97),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "integer": spec.f in body must be of type string: "integer""#],
        ),
        (
            json!({"type": "string", "enum": ["a", "b"]}),
            json!(99),
            vec![
                r#"spec.f|FieldValueTypeInvalid|Invalid value: "integer": spec.f in body must be of type string: "integer""#,
                r#"spec.f|FieldValueNotSupported|Unsupported value: 99: supported values: "a", "b""#,
            ],
        ),
        (
            json!({"x-kubernetes-int-or-string": true}),
            json!(1.5),
            vec![r#"spec.f|FieldValueTypeInvalid|Invalid value: "number": spec.f in body must be of type integer,string: "number""#],
        ),
        (
            json!({"type": "object", "x-kubernetes-embedded-resource": true}),
            json!({"apiVersion": "a/b/c", "metadata": {}}),
            vec![
                "spec.f.kind|FieldValueRequired|Required value",
                r#"spec.f.apiVersion|FieldValueInvalid|Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
            ],
        ),
        (
            json!({"type": "object", "x-kubernetes-embedded-resource": true}),
            json!({"apiVersion": "v1", "kind": "Bad_Kind"}),
            vec![r#"spec.f.kind|FieldValueInvalid|Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#],
        ),
    ]
}

/// Embedded resources' metadata, confirmed against kube-apiserver v1.36.2.
#[test]
fn embedded_metadata_is_validated_as_object_meta() {
    let s = spec_schema(json!({"type": "object", "properties": {"emb": {
        "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}));
    let rows = [
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b", "namespace": "Bad_NS",
                   "labels": {"k": "bad value!"}, "generateName": "x%"}}),
            vec![
                r#"spec.emb.metadata.generateName|FieldValueInvalid|Invalid value: "x%": may not contain '%'"#,
                r#"spec.emb.metadata.name|FieldValueInvalid|Invalid value: "a/b": may not contain '/'"#,
                r#"spec.emb.metadata.namespace|FieldValueInvalid|Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
                r#"spec.emb.metadata.labels|FieldValueInvalid|Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"annotations": {"bad key!": "v"}, "finalizers": ["nope"]}}),
            vec![
                r#"spec.emb.metadata.annotations|FieldValueInvalid|Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {}}),
            vec![],
        ),
    ];
    for (emb, want) in rows {
        let obj = json!({"spec": {"emb": emb}});
        assert_eq!(causes(s.validate(&obj)), want, "{emb}");
    }
}

#[test]
fn validation_messages_match_upstream() {
    for (prop, value, want) in validation_rows() {
        let s = spec_schema(json!({"type": "object", "properties": {"f": prop}}));
        let obj = json!({"apiVersion": "a.example.com/v1", "kind": "T", "spec": {"f": value}});
        let got = causes(s.validate(&obj));
        assert_eq!(got, want, "schema {prop} value {value}");
    }
}

#[test]
fn root_required_and_properties_order() {
    let s = schema(json!({
        "type": "object",
        "required": ["spec"],
        "properties": {"status": {"type": "string"}, "spec": {"type": "object"}, "a": {"type": "string"}}
    }));
    let obj = json!({"status": 1, "a": 2});
    assert_eq!(
        causes(s.validate(&obj)),
        vec![
            r#"a|FieldValueTypeInvalid|Invalid value: "integer": a in body must be of type string: "integer""#,
            r#"status|FieldValueTypeInvalid|Invalid value: "integer": status in body must be of type string: "integer""#,
            "spec|FieldValueRequired|Required value",
        ]
    );
}

#[test]
fn ratcheting_drops_errors_of_unchanged_values() {
    let s = spec_schema(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 3},
            "other": {"type": "string"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["n"],
                      "items": {"type": "object", "properties": {"n": {"type": "string"}, "p": {"type": "integer", "maximum": 10}}}}
        }
    }));
    let old = json!({"spec": {"name": "abcd", "other": "x", "ports": [{"n": "a", "p": 11}, {"n": "b", "p": 1}]}});
    // Unchanged invalid values, map-list items reordered: nothing to report.
    let new = json!({"spec": {"name": "abcd", "other": "y", "ports": [{"n": "b", "p": 1}, {"n": "a", "p": 11}]}});
    assert_eq!(causes(s.validate_update(&new, &old)), Vec::<String>::new());
    // Changed invalid values are reported.
    let new = json!({"spec": {"name": "abcde", "other": "y", "ports": [{"n": "a", "p": 12}]}});
    assert_eq!(
        causes(s.validate_update(&new, &old)),
        vec![
            "spec.name|FieldValueTooLong|Too long: may not be more than 3 bytes",
            "spec.ports[0].p|FieldValueInvalid|Invalid value: 12: spec.ports[0].p in body should be less than or equal to 10",
        ]
    );
    // Create reports everything.
    assert_eq!(s.validate(&old).len(), 2);
}

/// Confirmed against kube-apiserver v1.36.2: a missing required member is reported by its
/// parent object, so it is ratcheted only while that object is unchanged.
#[test]
fn ratcheting_required_follows_its_object() {
    let s = spec_schema(json!({
        "type": "object",
        "properties": {
            "other": {"type": "string"},
            "req": {"type": "object", "required": ["z"],
                    "properties": {"a": {"type": "string"}, "z": {"type": "string"}}}
        }
    }));
    let old = json!({"spec": {"other": "x", "req": {"a": "x"}}});
    let new = json!({"spec": {"other": "y", "req": {"a": "x"}}});
    assert_eq!(causes(s.validate_update(&new, &old)), Vec::<String>::new());
    let new = json!({"spec": {"other": "x", "req": {"a": "y"}}});
    assert_eq!(
        causes(s.validate_update(&new, &old)),
        vec!["spec.req.z|FieldValueRequired|Required value"]
    );
}

/// Confirmed against kube-apiserver v1.36.2: items of an atomic list are not correlated with
/// the old list, so an unchanged invalid item of a changed list is reported.
#[test]
fn ratcheting_does_not_correlate_atomic_list_items() {
    let s = spec_schema(json!({
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 3}}}
    }));
    let old = json!({"spec": {"tags": ["abcdef", "b"]}});
    let same = json!({"spec": {"tags": ["abcdef", "b"]}});
    assert_eq!(causes(s.validate_update(&same, &old)), Vec::<String>::new());
    let new = json!({"spec": {"tags": ["abcdef", "c"]}});
    assert_eq!(
        causes(s.validate_update(&new, &old)),
        vec!["spec.tags[0]|FieldValueTooLong|Too long: may not be more than 3 bytes"]
    );
}

#[test]
fn list_type_errors_on_update_only_when_old_had_none() {
    let s = spec_schema(json!({
        "type": "object",
        "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}
    }));
    let dup = json!({"spec": {"tags": ["a", "a"]}});
    let clean = json!({"spec": {"tags": ["a"]}});
    assert_eq!(s.validate_update(&dup, &dup).len(), 0);
    assert_eq!(
        causes(s.validate_update(&dup, &clean)),
        vec![r#"spec.tags[1]|FieldValueDuplicate|Duplicate value: "a""#]
    );
}

#[test]
fn markers_for_server_side_apply() {
    let s = spec_schema(json!({
        "type": "object",
        "x-kubernetes-map-type": "atomic",
        "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
                      "items": {"type": "object", "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
            "plain": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "object"}}
        }
    }));
    let rows: Vec<(&[&str], Option<ListType>)> = vec![
        (
            &["spec", "ports"],
            Some(ListType::Map(vec!["name".into(), "protocol".into()])),
        ),
        (&["spec", "ports", ITEMS, "tags"], Some(ListType::Set)),
        (&["spec", "plain"], Some(ListType::Atomic)),
        (&["spec"], None),
        (&["spec", "nope"], None),
    ];
    for (path, want) in rows {
        assert_eq!(s.list_type(path), want, "{path:?}");
    }
    assert_eq!(s.map_type(&["spec"]), Some(MapType::Atomic));
    assert_eq!(
        s.map_type(&["spec", "labels", "any"]),
        Some(MapType::Granular)
    );
    assert_eq!(s.map_type(&["spec", "plain"]), None);
    let ports = s.node(&["spec", "ports"]).expect("ports");
    assert_eq!(ports.types, vec!["array"]);
    assert!(ports.items && !ports.additional_properties);
    assert_eq!(
        s.node(&["spec", "ports", ITEMS]).map(|n| n.properties),
        Some(vec!["tags".to_string()])
    );
    let labels = s.node(&["spec", "labels"]).expect("labels");
    assert!(labels.additional_properties);
    assert_eq!(labels.map_type, Some(MapType::Granular));
    assert!(s.node(&["spec", "labels", "x", "y"]).is_none());
}

#[test]
fn deep_objects_and_schemas_are_bounded() {
    let mut deep = json!({"type": "object"});
    for _ in 0..(crate::limits::SCHEMA_DEPTH_MAX + 5) {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let err = Schema::compile(&deep).expect_err("too deep");
    assert!(err.contains("deeper than"), "{err}");
    // A deep object under a preserve-unknown schema: no panic, nothing pruned.
    let s = spec_schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let mut v = json!(1);
    for _ in 0..200 {
        v = json!({"a": v});
    }
    let mut obj = json!({"spec": v});
    assert!(s.prune(&mut obj).is_empty());
    assert!(s.validate(&obj).is_empty());
}

/// Odd values through every check: values (never panics), whatever the input.
#[test]
fn odd_inputs_give_values() {
    let odd = [
        json!(null),
        json!(true),
        json!(-0.0),
        json!(1e308),
        json!(-9223372036854775808i64),
        json!(18446744073709551615u64),
        json!(""),
        json!("é24-01-0-"),
        json!("\u{0}\u{7f}\u{2028}<>&"),
        json!("ünïcödé.ünïcödé"),
        json!([[[]]]),
        json!({"": {"": null}}),
    ];
    let formats = [
        "date",
        "date-time",
        "byte",
        "password",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "hexcolor",
        "rgbcolor",
        "ssn",
        "bsonobjectid",
        "isbn",
        "isbn10",
        "isbn13",
        "k8s-short-name",
        "k8s-long-name",
        "uri",
        "email",
        "duration",
        "creditcard",
    ];
    for f in formats {
        let s = spec_schema(json!({"type": "object", "properties": {
            "f": {"type": "string", "format": f, "enum": [1, "a", [1], {"a": 1.5}], "maxLength": 0,
                  "multipleOf": 0, "maximum": -1e308, "minimum": 1e308},
            "l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                  "items": {"type": "object", "properties": {"a": {"type": "integer", "default": 1}}}}}}));
        for v in &odd {
            let mut obj = json!({"metadata": v, "spec": {"f": v, "l": [v, v]}});
            let _ = s.prune(&mut obj);
            s.apply_defaults(&mut obj);
            let errs = s.validate(&obj);
            assert!(!errs.is_empty(), "format {f} value {v}: some check fails");
            let _ = s.validate_update(&obj, &json!({"spec": {"f": v, "l": v}}));
        }
    }
}

#[test]
fn defaults_of_embedded_resources_are_pruned_like_objects() {
    let s = spec_schema(json!({"type": "object", "properties": {"tpl": {
        "type": "object", "x-kubernetes-embedded-resource": true,
        "default": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "bogus": 1}, "junk": 1},
        "properties": {"spec": {"type": "object"}}}}}));
    let mut obj = json!({"spec": {}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}}})
    );
}

// x-kubernetes-validations (CEL rules). Every expected cause was observed on an upstream
// v1.36 server for the same schema and object (its order is Go's random property order;
// here sibling properties go sorted).

/// The `spec` of a Widget CRD with rules on objects, scalars, items, map values and map-list
/// items, transition rules among them.
fn widget() -> Schema {
    spec_schema(serde_json::from_str(r#"{"type": "object", "x-kubernetes-validations": [{"rule": "self.replicas <= 10", "message": "must have replicas <= 10"}, {"rule": "!has(self.name) || self.name.startsWith('a')", "messageExpression": "'name ' + self.name + ' must start with a'", "reason": "FieldValueForbidden"}, {"rule": "self.minReplicas <= self.replicas", "fieldPath": ".minReplicas"}, {"rule": "!has(oldSelf.mode) || self.mode == oldSelf.mode", "message": "mode is immutable"}], "properties": {"replicas": {"type": "integer"}, "minReplicas": {"type": "integer"}, "name": {"type": "string", "maxLength": 20}, "mode": {"type": "string", "maxLength": 10}, "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self < 2.0"}]}, "port": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "type(self) == int ? self > 0 : self.size() > 0"}]}, "items": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self != 'bad'", "message": "no bad"}]}}, "labels": {"type": "object", "maxProperties": 10, "additionalProperties": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self.size() > 1"}]}}, "ports": {"type": "array", "maxItems": 10, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 10}, "port": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": "port may only grow"}]}}}}}, "required": ["replicas", "minReplicas"]}"#).unwrap())
}

/// A Gadget CRD's `spec`: reasons, messageExpression fallbacks, evaluation errors, fieldPath.
fn gadget() -> Schema {
    spec_schema(serde_json::from_str(r#"{"type": "object", "properties": {"s": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "int(self) > 0"}]}, "n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0", "reason": "FieldValueRequired", "message": "need n"}, {"rule": "self > 1", "reason": "FieldValueDuplicate"}, {"rule": "self > 2", "messageExpression": "''"}, {"rule": "self > 3", "messageExpression": "'a' + ['x'][self]"}, {"rule": "self > 4", "messageExpression": "'x\\ny'"}]}, "f": {"type": "number", "x-kubernetes-validations": [{"rule": "self == 1.0", "messageExpression": "string(self)"}, {"rule": "type(self) == double"}]}, "l": {"type": "array", "maxItems": 5, "items": {"type": "integer"}, "x-kubernetes-validations": [{"rule": "self.all(x, x > 0)"}, {"rule": "self.size() < 2"}]}, "m": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"b": {"type": "integer"}}, "x-kubernetes-validations": [{"rule": "self.b == 1"}]}, "b": {"type": "boolean", "x-kubernetes-validations": [{"rule": "self"}]}, "o": {"type": "object", "properties": {"k": {"type": "string"}}, "x-kubernetes-validations": [{"rule": "self.k == 'z'", "fieldPath": ".k"}, {"rule": "false", "fieldPath": "['k']"}]}}}"#).unwrap())
}

fn obj(spec: Value) -> Value {
    json!({"apiVersion": "c.example.com/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": spec})
}

#[test]
fn cel_rules_on_create() {
    let rows: Vec<(Schema, Value, Vec<&str>)> = vec![
        (
            widget(),
            json!({"replicas": 11, "minReplicas": 12, "name": "bob", "ratio": 3, "port": 0,
                   "items": ["ok", "bad"], "labels": {"a": "b", "c": "dd"},
                   "ports": [{"name": "p", "port": 1}]}),
            vec![
                "spec|FieldValueInvalid|Invalid value: must have replicas <= 10",
                "spec|FieldValueForbidden|Forbidden: name bob must start with a",
                "spec.minReplicas|FieldValueInvalid|Invalid value: failed rule: self.minReplicas <= self.replicas",
                "spec.items[1]|FieldValueInvalid|Invalid value: \"bad\": no bad",
                "spec.labels[a]|FieldValueInvalid|Invalid value: \"b\": failed rule: self.size() > 1",
                "spec.port|FieldValueInvalid|Invalid value: 0: failed rule: type(self) == int ? self > 0 : self.size() > 0",
                "spec.ratio|FieldValueInvalid|Invalid value: 3: failed rule: self < 2.0",
            ],
        ),
        (
            widget(),
            json!({"replicas": 5, "minReplicas": 1, "mode": "a", "port": "http",
                   "ports": [{"name": "p", "port": 5}]}),
            vec![],
        ),
        // Schema errors that make `self` unlike its type keep every rule from running.
        (
            widget(),
            json!({"replicas": "x", "minReplicas": 12}),
            vec![
                "spec.replicas|FieldValueTypeInvalid|Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "<nil>|FieldValueInvalid|Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ],
        ),
        (
            widget(),
            json!({"replicas": 11}),
            vec![
                "spec.minReplicas|FieldValueRequired|Required value",
                "<nil>|FieldValueInvalid|Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ],
        ),
        (
            gadget(),
            json!({"s": "abc", "n": 0, "f": 2, "l": [1, -1, 3], "m": {"b": 2}, "b": false,
                   "o": {"k": "y"}}),
            vec![
                "spec.b|FieldValueInvalid|Invalid value: false: failed rule: self",
                "spec.f|FieldValueInvalid|Invalid value: 2: 2",
                "spec.l|FieldValueInvalid|Invalid value: failed rule: self.all(x, x > 0)",
                "spec.l|FieldValueInvalid|Invalid value: failed rule: self.size() < 2",
                "spec.m|FieldValueInvalid|Invalid value: failed rule: self.b == 1",
                "spec.n|FieldValueRequired|Required value: need n",
                "spec.n|FieldValueDuplicate|Duplicate value: 0",
                "spec.n|FieldValueInvalid|Invalid value: 0: failed rule: self > 2",
                "spec.n|FieldValueInvalid|Invalid value: 0: ax",
                "spec.n|FieldValueInvalid|Invalid value: 0: failed rule: self > 4",
                "spec.o.k|FieldValueInvalid|Invalid value: failed rule: self.k == 'z'",
                "spec.o.k|FieldValueInvalid|Invalid value: failed rule: false",
                "spec.s|FieldValueInvalid|Invalid value: \"string\": type conversion error from 'string' to 'int' evaluating rule: int(self) > 0",
            ],
        ),
        (
            gadget(),
            json!({"s": "-12", "n": 3, "f": 1, "m": {"c": 2}, "o": {}}),
            vec![
                "spec.m|FieldValueInvalid|Invalid value: \"object\": no such key: b evaluating rule: self.b == 1",
                "spec.n|FieldValueInvalid|Invalid value: 3: failed rule: self > 3",
                "spec.n|FieldValueInvalid|Invalid value: 3: failed rule: self > 4",
                "spec.o|FieldValueInvalid|Invalid value: \"object\": no such key: k evaluating rule: self.k == 'z'",
                "spec.o.k|FieldValueInvalid|Invalid value: failed rule: false",
                "spec.s|FieldValueInvalid|Invalid value: \"-12\": failed rule: int(self) > 0",
            ],
        ),
    ];
    for (i, (s, spec, want)) in rows.into_iter().enumerate() {
        assert_eq!(causes(s.validate(&obj(spec))), want, "row {i}");
    }
}

#[test]
fn cel_transition_rules_on_update() {
    let s = widget();
    let old = obj(json!({"replicas": 5, "minReplicas": 1, "mode": "a",
                         "ports": [{"name": "p", "port": 5}]}));
    let rows: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"replicas": 5, "minReplicas": 1, "mode": "b",
                   "ports": [{"name": "p", "port": 4}, {"name": "q", "port": 1}]}),
            vec![
                "spec|FieldValueInvalid|Invalid value: mode is immutable",
                "spec.ports[0].port|FieldValueInvalid|Invalid value: 4: port may only grow",
            ],
        ),
        (
            json!({"replicas": 5, "minReplicas": 1, "ports": [{"name": "p", "port": 5}]}),
            vec!["spec|FieldValueInvalid|Invalid value: \"object\": no such key: mode evaluating rule: mode is immutable"],
        ),
        (
            json!({"replicas": 6, "minReplicas": 1, "mode": "a",
                   "ports": [{"name": "q", "port": 1}, {"name": "p", "port": 6}]}),
            vec![],
        ),
    ];
    for (i, (spec, want)) in rows.into_iter().enumerate() {
        assert_eq!(causes(s.validate_update(&obj(spec), &old)), want, "row {i}");
    }
}

/// Ratcheting: a rule added after an object was stored does not fail an update that leaves
/// the offending value unchanged (upstream v1.36: the second update is accepted).
#[test]
fn cel_rules_ratchet_unchanged_values() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "s": {"type": "string", "x-kubernetes-validations": [
            {"rule": "int(self) > 0"}, {"rule": "self.size() < 2"}]},
        "n": {"type": "integer"}}}));
    let old = obj(json!({"s": "55", "n": 10}));
    assert_eq!(
        causes(s.validate_update(&obj(json!({"s": "66", "n": 11})), &old)),
        vec!["spec.s|FieldValueInvalid|Invalid value: \"66\": failed rule: self.size() < 2"]
    );
    assert!(s
        .validate_update(&obj(json!({"s": "55", "n": 11})), &old)
        .is_empty());
}

/// Upstream's list and string libraries, observed on a v1.36 server: `[1, 2, 1]` is not
/// sorted (its other functions hold), and `min` of an empty list is an evaluation error.
#[test]
fn cel_rules_library_functions() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "l": {"type": "array", "maxItems": 5, "items": {"type": "integer"}, "x-kubernetes-validations": [
            {"rule": "self.isSorted() && [3, 1].isSorted() == false"},
            {"rule": "self.sum() == 4 && self.min() == 1 && self.max() == 2"},
            {"rule": "self.indexOf(2) == 1 && self.lastIndexOf(1) == 2 && self.indexOf(9) == -1"}]},
        "e": {"type": "array", "maxItems": 5, "items": {"type": "integer"},
              "x-kubernetes-validations": [{"rule": "self.min() > 0"}]},
        "s": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [
            {"rule": "self.lowerAscii() == 'a-b' && self.matches('^[A-Z]-') && self.replace('-', '') == 'AB'"}]}}}));
    assert_eq!(
        causes(s.validate(&obj(json!({"l": [1, 2, 1], "e": [], "s": "A-B"})))),
        vec![
            "spec.e|FieldValueInvalid|Invalid value: \"array\": min called on empty list evaluating rule: self.min() > 0",
            "spec.l|FieldValueInvalid|Invalid value: failed rule: self.isSorted() && [3, 1].isSorted() == false",
        ]
    );
}

/// A map's rule ranging over its keys, a messageExpression's value, and an int-or-string
/// given as a string (upstream v1.36's answer).
#[test]
fn cel_rules_on_maps_and_int_or_string() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "p": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [
            {"rule": "type(self) == int ? self > 0 : self.size() > 0"}]},
        "m": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 5},
              "x-kubernetes-validations": [{"rule": "self.all(k, k.size() < 5 && self[k] != 'x')",
                                            "messageExpression": "self.size() > 1 ? 'bad' : 'worse'"}]}}}));
    assert_eq!(
        causes(s.validate(&obj(json!({"m": {"a": "x"}, "p": ""})))),
        vec![
            "spec.m|FieldValueInvalid|Invalid value: worse",
            "spec.p|FieldValueInvalid|Invalid value: \"\": failed rule: type(self) == int ? self > 0 : self.size() > 0",
        ]
    );
    assert!(s
        .validate(&obj(json!({"m": {"a": "y"}, "p": 3})))
        .is_empty());
}

/// Work bounds: a nested comprehension over a 2,000-item list would take about 4 million
/// steps, beyond `CEL_RULE_WORK_MAX`; it is refused before it runs, and the flat rule next to
/// it still runs. (keel's own bound: upstream refuses such a rule when the CRD is written.)
#[test]
fn cel_rule_work_is_bounded_before_running() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-validations": [
            {"rule": "self.all(x, self.all(y, x == y))"},
            {"rule": "self.all(x, x == 0)"}]}}}));
    let l: Vec<i64> = (0..2000).collect();
    assert_eq!(
        causes(s.validate(&obj(json!({"l": l})))),
        vec![
            "spec.l|FieldValueInvalid|Invalid value: \"array\": call cost exceeds limit for rule: self.all(x, self.all(y, x == y))",
            "spec.l|FieldValueInvalid|Invalid value: failed rule: self.all(x, x == 0)",
        ]
    );
}

/// The object-wide work bound: once the runs' bounds add up beyond `CEL_OBJECT_WORK_MAX`, one
/// cause says so and no further rule runs (upstream's wording for its per-object budget).
#[test]
fn cel_object_work_is_bounded() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "array", "items": {"type": "integer"},
            "x-kubernetes-validations": [
                {"rule": "self.all(x, x > 0 && x < 10 && x != 5 && x != 6 && x != 7 && x != 8)"}]}}}}));
    let item: Vec<i64> = vec![1; 400];
    let l = vec![item; 1000];
    let errs = causes(s.validate(&obj(json!({"l": l}))));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].ends_with("Invalid value: \"array\": validation failed due to running out of cost budget, no further validation rules will be run"), "{errs:?}");
}

/// Rules at the root see `apiVersion`, `kind` and `metadata` and report at `<nil>`; an
/// `optionalOldSelf` rule runs on create with `oldSelf` empty (upstream v1.36's answers).
#[test]
fn cel_rules_at_the_root() {
    let s = schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('a')"},
            {"rule": "self.kind == 'Root' && self.apiVersion == 'c.example.com/v1'"},
            {"rule": "!has(oldSelf.spec) || oldSelf.spec.x <= self.spec.x", "message": "x may only grow"},
            {"rule": "oldSelf.hasValue() || self.spec.x > 0", "optionalOldSelf": true,
             "message": "new x must be positive"}],
        "properties": {"spec": {"type": "object", "properties": {"x": {"type": "integer"}}}}}));
    let root = |name: &str, x: i64| {
        json!({"apiVersion": "c.example.com/v1", "kind": "Root", "metadata": {"name": name},
               "spec": {"x": x}})
    };
    assert_eq!(
        causes(s.validate(&root("x", 0))),
        vec![
            "<nil>|FieldValueInvalid|Invalid value: failed rule: self.metadata.name.startsWith('a')",
            "<nil>|FieldValueInvalid|Invalid value: new x must be positive",
        ]
    );
    assert!(s.validate(&root("ab", 5)).is_empty());
    assert_eq!(
        causes(s.validate_update(&root("ab", -1), &root("ab", 5))),
        vec!["<nil>|FieldValueInvalid|Invalid value: x may only grow"]
    );
}

/// Reasons on objects and with fieldPath (the value is not echoed), and a nullable field's
/// `null`, which no rule sees (upstream v1.36's answers).
#[test]
fn cel_rule_reasons_without_values() {
    let s = spec_schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "false", "reason": "FieldValueDuplicate", "message": "dup obj"},
            {"rule": "false", "reason": "FieldValueDuplicate", "fieldPath": ".s"},
            {"rule": "false", "reason": "FieldValueForbidden", "fieldPath": ".s"},
            {"rule": "false", "fieldPath": ".l"}],
        "properties": {
            "s": {"type": "string", "maxLength": 5},
            "l": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 3}},
            "n": {"type": "integer", "nullable": true, "x-kubernetes-validations": [{"rule": "self > 0"}]}}}));
    assert_eq!(
        causes(s.validate(&obj(json!({"s": "x", "l": ["a"], "n": null})))),
        vec![
            "spec|FieldValueDuplicate|Duplicate value",
            "spec.s|FieldValueDuplicate|Duplicate value",
            "spec.s|FieldValueForbidden|Forbidden: failed rule: false",
            "spec.l|FieldValueInvalid|Invalid value: failed rule: false",
        ]
    );
}

/// Evaluation errors in cel-go's words (upstream v1.36's answers).
#[test]
fn cel_rule_evaluation_errors() {
    let rules = [
        "self.l[5] == 'a'",
        "self.num / 0 == 1",
        "self.num % 0 == 1",
        "self.m['zz'] == 'a'",
        "self.num * 9223372036854775807 > 0",
        "self.num + 9223372036854775807 > 0",
        "int(self.s) > 0",
        "double(self.s) > 0.0",
    ];
    let rules: Vec<Value> = rules.iter().map(|r| json!({"rule": r})).collect();
    let s = spec_schema(
        json!({"type": "object", "x-kubernetes-validations": rules, "properties": {
        "s": {"type": "string", "maxLength": 5},
        "num": {"type": "integer"},
        "l": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 3}},
        "m": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 3}}}}),
    );
    let errs: Vec<String> = s
        .validate(&obj(json!({"s": "x", "l": ["a"], "num": 2, "m": {}})))
        .into_iter()
        .map(|c| c.message)
        .collect();
    assert_eq!(
        errs,
        vec![
            "Invalid value: \"object\": index out of bounds: 5 evaluating rule: self.l[5] == 'a'",
            "Invalid value: \"object\": division by zero evaluating rule: self.num / 0 == 1",
            "Invalid value: \"object\": modulus by zero evaluating rule: self.num % 0 == 1",
            "Invalid value: \"object\": no such key: zz evaluating rule: self.m['zz'] == 'a'",
            "Invalid value: \"object\": integer overflow evaluating rule: self.num * 9223372036854775807 > 0",
            "Invalid value: \"object\": integer overflow evaluating rule: self.num + 9223372036854775807 > 0",
            "Invalid value: \"object\": type conversion error from 'string' to 'int' evaluating rule: int(self.s) > 0",
            "Invalid value: \"object\": type conversion error from 'string' to 'double' evaluating rule: double(self.s) > 0.0",
        ]
    );
}

/// A schema with the kinds of rules real CRDs carry (uniqueness with exists_one, optional
/// chaining, map/filter, two-variable exists, `in`, split): upstream v1.36's answers.
fn realistic() -> Schema {
    spec_schema(serde_json::from_str(r#"{"type": "object", "x-kubernetes-validations": [{"rule": "self.listeners.all(l1, self.listeners.exists_one(l2, l1.name == l2.name))", "message": "names must be unique"}, {"rule": "has(self.port) ? self.port > 0 : true"}, {"rule": "self.mode in ['A', 'B']", "message": "mode must be A or B"}, {"rule": "self.listeners.map(l, l.name).all(n, n.size() <= 8)"}, {"rule": "self.?hostname.orValue('') == '' || self.hostname.endsWith('.example.com')"}, {"rule": "!has(self.ref) || self.ref.split('/').size() == 2"}, {"rule": "self.listeners.filter(l, l.protocol == 'HTTPS').all(l, has(l.tls))", "message": "HTTPS needs tls"}, {"rule": "has(self.mode) == has(oldSelf.mode)", "message": "mode cannot be added or removed"}, {"rule": "size(self.listeners) <= 4"}, {"rule": "self.tags.all(k, k.lowerAscii() == k)"}, {"rule": "self.labels.exists(k, v, v == 'x') == false"}], "properties": {"port": {"type": "integer"}, "mode": {"type": "string", "maxLength": 1}, "hostname": {"type": "string", "maxLength": 63}, "ref": {"type": "string", "maxLength": 63}, "tags": {"type": "object", "maxProperties": 4, "additionalProperties": {"type": "string", "maxLength": 8}}, "labels": {"type": "object", "maxProperties": 4, "additionalProperties": {"type": "string", "maxLength": 8}}, "listeners": {"type": "array", "maxItems": 8, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 16}, "protocol": {"type": "string", "maxLength": 8}, "tls": {"type": "object", "properties": {"mode": {"type": "string", "maxLength": 8}}}}}}}}"#).unwrap())
}

#[test]
fn cel_rules_of_a_realistic_schema() {
    let s = realistic();
    let bad = json!({"port": 0, "mode": "C", "hostname": "a.other.com", "ref": "a/b/c",
        "tags": {"Ab": "x"}, "labels": {"q": "x"},
        "listeners": [{"name": "verylongname", "protocol": "HTTPS"}, {"name": "b"}]});
    assert_eq!(
        causes(s.validate(&obj(bad))),
        vec![
            "spec|FieldValueInvalid|Invalid value: failed rule: has(self.port) ? self.port > 0 : true",
            "spec|FieldValueInvalid|Invalid value: mode must be A or B",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.listeners.map(l, l.name).all(n, n.size() <= 8)",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.?hostname.orValue('') == '' || self.hostname.endsWith('.example.com')",
            "spec|FieldValueInvalid|Invalid value: failed rule: !has(self.ref) || self.ref.split('/').size() == 2",
            "spec|FieldValueInvalid|Invalid value: \"object\": no such key: protocol evaluating rule: HTTPS needs tls",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.tags.all(k, k.lowerAscii() == k)",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.labels.exists(k, v, v == 'x') == false",
        ]
    );
    let good = json!({"port": 1, "mode": "A", "hostname": "a.example.com", "ref": "a/b",
        "tags": {"ab": "x"}, "labels": {"q": "y"},
        "listeners": [{"name": "a", "protocol": "HTTPS", "tls": {}}]});
    assert_eq!(causes(s.validate(&obj(good))), Vec::<String>::new());
}

/// Two-variable comprehensions, transformMap/transformList, `sets` and the regex library's
/// find/findAll (upstream v1.36's answers for the same objects).
#[test]
fn cel_rules_with_two_variable_comprehensions_and_extensions() {
    let s = spec_schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.m.transformMap(k, v, v + 1) == {'a': 2}"},
            {"rule": "sets.contains(self.l, [1]) && sets.equivalent(self.l, [2, 1, 1]) && !sets.intersects(self.l, [3])"},
            {"rule": "self.s.find('[0-9]+') == '123' && self.s.findAll('[a-z]') == ['a', 'b'] && self.s.findAll('[0-9]', 1) == ['1']"},
            {"rule": "self.m.all(k, v, v == 1) && self.l.exists(i, v, i == 1 && v == 2)"},
            {"rule": "self.l.transformList(i, v, i + v) == [1, 3]"}],
        "properties": {
            "m": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "integer"}},
            "l": {"type": "array", "maxItems": 3, "items": {"type": "integer"}},
            "s": {"type": "string", "maxLength": 10}}}));
    assert!(s
        .validate(&obj(json!({"m": {"a": 1}, "l": [1, 2], "s": "ab123"})))
        .is_empty());
    assert_eq!(
        causes(s.validate(&obj(json!({"m": {"a": 2}, "l": [2, 1], "s": "x"})))),
        vec![
            "spec|FieldValueInvalid|Invalid value: failed rule: self.m.transformMap(k, v, v + 1) == {'a': 2}",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.s.find('[0-9]+') == '123' && self.s.findAll('[a-z]') == ['a', 'b'] && self.s.findAll('[0-9]', 1) == ['1']",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.m.all(k, v, v == 1) && self.l.exists(i, v, i == 1 && v == 2)",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.l.transformList(i, v, i + v) == [1, 3]",
        ]
    );
}

/// The quantity library (upstream v1.36's answers for `512Mi`, `2Gi` and `abc`).
#[test]
fn cel_rules_with_quantities() {
    let s = spec_schema(serde_json::from_str(r#"{"type": "object", "x-kubernetes-validations": [{"rule": "quantity('1Gi').isGreaterThan(quantity('1000Mi')) && quantity('500m').isLessThan(quantity('1'))"}, {"rule": "quantity('1k') == quantity('1000') && quantity('1.5').compareTo(quantity('1500m')) == 0"}, {"rule": "quantity('2Ki').asInteger() == 2048 && quantity('1e3').add(24).asInteger() == 1024 && quantity('1').sub(quantity('2')).isLessThan(quantity('0'))"}, {"rule": "isQuantity('1.5Gi') && !isQuantity('1.5Gx') && !quantity('1.5').isInteger() && quantity('250m').asApproximateFloat() == 0.25"}, {"rule": "quantity(self.mem).isLessThan(quantity('1Gi'))", "message": "mem must be below 1Gi"}, {"rule": "!isQuantity(self.mem) || !quantity(self.mem).isLessThan(quantity('0'))"}], "properties": {"mem": {"type": "string", "maxLength": 10}}}"#).unwrap());
    let run = |mem: &str| causes(s.validate(&obj(json!({"mem": mem}))));
    assert_eq!(run("512Mi"), Vec::<String>::new());
    assert_eq!(
        run("2Gi"),
        vec!["spec|FieldValueInvalid|Invalid value: mem must be below 1Gi"]
    );
    assert_eq!(
        run("abc"),
        vec!["spec|FieldValueInvalid|Invalid value: \"object\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: mem must be below 1Gi"]
    );
}

/// Schema errors that leave `self` well typed (pattern, minimum) do not stop the rules, which
/// report after them (upstream v1.36's answer; its sibling order is Go's map order).
#[test]
fn cel_rules_run_after_non_blocking_schema_errors() {
    let s = spec_schema(json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.a > 100"}],
        "properties": {
            "a": {"type": "integer", "minimum": 5, "x-kubernetes-validations": [{"rule": "self > 50"}]},
            "b": {"type": "string", "pattern": "^x", "x-kubernetes-validations": [{"rule": "self.size() > 5"}]}}}));
    assert_eq!(
        causes(s.validate(&obj(json!({"a": 1, "b": "y"})))),
        vec![
            "spec.a|FieldValueInvalid|Invalid value: 1: spec.a in body should be greater than or equal to 5",
            "spec.b|FieldValueInvalid|Invalid value: \"y\": spec.b in body should match '^x'",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.a > 100",
            "spec.a|FieldValueInvalid|Invalid value: 1: failed rule: self > 50",
            "spec.b|FieldValueInvalid|Invalid value: \"y\": failed rule: self.size() > 5",
        ]
    );
}

/// `date-time` strings are timestamps and `duration` strings durations (upstream v1.36's
/// answers).
#[test]
fn cel_rules_on_timestamps_and_durations() {
    let s = spec_schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.start < self.end", "message": "start before end"},
            {"rule": "self.timeout <= duration('1h')", "message": "timeout at most 1h"},
            {"rule": "self.start.getFullYear() >= 2020"},
            {"rule": "type(self.start) == google.protobuf.Timestamp && type(self.timeout) == google.protobuf.Duration"}],
        "properties": {
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "timeout": {"type": "string", "format": "duration"}}}));
    assert_eq!(
        causes(s.validate(&obj(json!({"start": "2019-01-02T03:04:05Z",
            "end": "2018-01-01T00:00:00Z", "timeout": "2h"})))),
        vec![
            "spec|FieldValueInvalid|Invalid value: start before end",
            "spec|FieldValueInvalid|Invalid value: timeout at most 1h",
            "spec|FieldValueInvalid|Invalid value: failed rule: self.start.getFullYear() >= 2020",
        ]
    );
    assert!(s
        .validate(&obj(json!({"start": "2021-01-02T03:04:05Z",
            "end": "2022-01-01T00:00:00+01:00", "timeout": "30m"})))
        .is_empty());
}

/// An integral float under `type: integer` passes the schema but not the node's rules
/// (upstream v1.36's answer for `a: 60.0`).
#[test]
fn cel_rules_refuse_floats_under_integer() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "a": {"type": "integer", "minimum": 5, "x-kubernetes-validations": [{"rule": "self > 50"}]}}}));
    assert_eq!(
        causes(s.validate(&obj(json!({"a": 60.0})))),
        vec!["spec.a|FieldValueInvalid|Invalid value: \"integer\": invalid data, expected int, got float64 evaluating rule: self > 50"]
    );
}

/// Rule failures are bounded like the schema's own errors (`ERRORS_MAX`).
#[test]
fn cel_rule_failures_are_bounded() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 0"}]}}}}));
    let l = vec![1; crate::limits::ERRORS_MAX + 50];
    let errs = s.validate(&obj(json!({"l": l})));
    assert_eq!(errs.len(), crate::limits::ERRORS_MAX);
}
