use super::*;
use serde_json::json;

const LABEL_REGEX_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_REGEX_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

#[test]
fn dns1123_label_rows() {
    let long = "a".repeat(64);
    let rows: Vec<(&str, Vec<String>)> = vec![
        ("a", vec![]),
        ("my-name", vec![]),
        ("123-abc", vec![]),
        ("", vec![LABEL_REGEX_MSG.into()]),
        ("-a", vec![LABEL_REGEX_MSG.into()]),
        ("a-", vec![LABEL_REGEX_MSG.into()]),
        ("Abc", vec![LABEL_REGEX_MSG.into()]),
        ("a.b", vec!["must not contain dots".into()]),
        (&long, vec!["must be no more than 63 characters".into()]),
    ];
    for (input, want) in rows {
        assert_eq!(is_dns1123_label(input), want, "input {input:?}");
    }
}

#[test]
fn dns1123_subdomain_rows() {
    let long = format!("{}.{}", "a".repeat(200), "b".repeat(60));
    let rows: Vec<(&str, Vec<String>)> = vec![
        ("example.com", vec![]),
        ("a", vec![]),
        ("a..b", vec![SUBDOMAIN_REGEX_MSG.into()]),
        ("a_b", vec![SUBDOMAIN_REGEX_MSG.into()]),
        (".a", vec![SUBDOMAIN_REGEX_MSG.into()]),
        (&long, vec!["must be no more than 253 characters".into()]),
    ];
    for (input, want) in rows {
        assert_eq!(is_dns1123_subdomain(input), want, "input {input:?}");
    }
}

#[test]
fn dns1035_and_path_segment_rows() {
    assert!(is_dns1035_label("my-svc").is_empty());
    assert_eq!(is_dns1035_label("1abc").len(), 1);
    assert!(is_dns1035_label("1abc")[0].starts_with("a DNS-1035 label must consist"));
    assert_eq!(is_valid_path_segment_name("."), vec!["may not be '.'"]);
    assert_eq!(is_valid_path_segment_name(".."), vec!["may not be '..'"]);
    assert_eq!(
        is_valid_path_segment_name("a/b%c"),
        vec!["may not contain '/'", "may not contain '%'"]
    );
    assert!(is_valid_path_segment_name("system:admin").is_empty());
    assert!(is_valid_path_segment_prefix("..").is_empty());
}

#[test]
fn qualified_name_rows() {
    let rows: Vec<(&str, Vec<String>)> = vec![
        ("app", vec![]),
        ("example.com/MyName", vec![]),
        ("kubernetes.io/os", vec![]),
        ("/name", vec!["prefix part must be non-empty".into()]),
        ("example.com/", vec!["name part must be non-empty".into(), NAME_PART_MSG.into()]),
        ("-bad", vec![NAME_PART_MSG.into()]),
        ("Example.com/x", vec![format!("prefix part {SUBDOMAIN_REGEX_MSG}")]),
        (
            "a/b/c",
            vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()],
        ),
    ];
    for (input, want) in rows {
        assert_eq!(is_qualified_name(input), want, "input {input:?}");
    }
    let long = "a".repeat(64);
    assert_eq!(
        is_qualified_name(&long),
        vec!["name part must be no more than 63 characters"]
    );
}

#[test]
fn label_value_rows() {
    assert!(is_valid_label_value("").is_empty());
    assert!(is_valid_label_value("my_value").is_empty());
    assert_eq!(
        is_valid_label_value("bad value"),
        vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
    );
    assert_eq!(
        is_valid_label_value(&"x".repeat(64)),
        vec!["must be no more than 63 characters"]
    );
}

#[test]
fn annotations_size_limit() {
    let mut m = serde_json::Map::new();
    m.insert(
        "k".into(),
        json!("v".repeat(ANNOTATIONS_TOTAL_BYTES_MAX - 1)),
    );
    assert_eq!(annotations_size_exceeded(&m), None);
    m.insert("k2".into(), json!(""));
    assert_eq!(
        annotations_size_exceeded(&m),
        Some(ANNOTATIONS_TOTAL_BYTES_MAX + 2)
    );
}

#[test]
fn generate_name_shape() {
    for prefix in ["web-", "", "x"] {
        let name = generate_name(prefix);
        assert!(name.starts_with(prefix));
        let suffix = &name[prefix.len()..];
        assert_eq!(suffix.len(), GENERATED_SUFFIX_LEN);
        assert!(
            suffix.bytes().all(|c| GENERATE_ALPHABET.contains(&c)),
            "{name}"
        );
    }
    let long = "p".repeat(100);
    let name = generate_name(&long);
    assert_eq!(name.len(), DNS1123_LABEL_LEN_MAX);
    assert!(name.starts_with(&"p".repeat(GENERATED_PREFIX_LEN_MAX)));
    let multibyte = "é".repeat(40);
    let name = generate_name(&multibyte);
    assert!(
        name.len() <= DNS1123_LABEL_LEN_MAX,
        "cut on a char boundary"
    );
    let distinct: std::collections::HashSet<String> =
        (0..50).map(|_| generate_name("a-")).collect();
    assert!(distinct.len() > 40, "suffixes are random");
}

#[test]
fn name_rule_prefix_masks_trailing_dash() {
    assert!(NameRule::Dns1123Subdomain.check("web-", true).is_empty());
    assert_eq!(NameRule::Dns1123Subdomain.check("web-", false).len(), 1);
    assert!(NameRule::Dns1123Label.check("ns-", true).is_empty());
    assert!(NameRule::PathSegment.check("..", true).is_empty());
    assert_eq!(NameRule::PathSegment.check("..", false).len(), 1);
    let custom = NameRule::Custom(|n, _| {
        if n == "bad" {
            vec!["nope".into()]
        } else {
            vec![]
        }
    });
    assert_eq!(custom.check("bad", false), vec!["nope"]);
}

fn fields(causes: &[crate::StatusCause]) -> Vec<(String, String)> {
    causes
        .iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

#[test]
fn object_meta_valid_namespaced() {
    let meta = json!({"name": "web", "namespace": "default", "labels": {"app": "web"},
        "annotations": {"Example.com/Note": "x"}, "finalizers": ["example.com/f"],
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]});
    assert_eq!(
        validate_object_meta(&meta, true, NameRule::Dns1123Subdomain),
        vec![]
    );
}

#[test]
fn object_meta_error_rows() {
    type Row = (serde_json::Value, bool, Vec<(&'static str, &'static str)>);
    let rows: Vec<Row> = vec![
        (json!({}), false, vec![("metadata.name", "Required value: name or generateName is required")]),
        (json!({"name": "x"}), true, vec![("metadata.namespace", "Required value")]),
        (json!({"name": "x", "namespace": "ns"}), false, vec![("metadata.namespace", "Forbidden: not allowed on this type")]),
        (json!({"name": "x", "namespace": "Bad"}), true, vec![("metadata.namespace", "Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
        (json!({"name": "x", "generation": -1}), false, vec![("metadata.generation", "Invalid value: -1: must be greater than or equal to 0")]),
        (json!({"name": "x", "finalizers": ["orphan", "foregroundDeletion"]}), false, vec![("metadata.finalizers", "Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set")]),
        (json!({"name": "x", "ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]}), false, vec![
            ("metadata.ownerReferences.apiVersion", "Invalid value: \"\": version must not be empty"),
            ("metadata.ownerReferences.kind", "Invalid value: \"\": must not be empty"),
            ("metadata.ownerReferences.name", "Invalid value: \"\": must not be empty"),
            ("metadata.ownerReferences.uid", "Invalid value: \"\": must not be empty"),
        ]),
    ];
    for (meta, namespaced, want) in rows {
        let got = fields(&validate_object_meta(
            &meta,
            namespaced,
            NameRule::Dns1123Subdomain,
        ));
        let want: Vec<(String, String)> = want
            .into_iter()
            .map(|(f, m)| (f.to_string(), m.to_string()))
            .collect();
        assert_eq!(got, want, "meta {meta}");
    }
}

#[test]
fn object_meta_name_labels_annotations_controllers() {
    let meta = json!({"name": "Web", "generateName": "Web-", "labels": {"bad key": "v", "ok": "bad value"},
        "annotations": {"a/b/c": "x"},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true}]});
    let got = validate_object_meta(&meta, false, NameRule::Dns1123Subdomain);
    let paths: Vec<&str> = got.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "metadata.generateName",
            "metadata.name",
            "metadata.labels",
            "metadata.labels",
            "metadata.annotations",
            "metadata.ownerReferences"
        ]
    );
    assert!(got[2]
        .message
        .starts_with("Invalid value: \"bad key\": name part must consist"));
    assert!(got[3]
        .message
        .starts_with("Invalid value: \"bad value\": a valid label must be"));
    assert!(got[5].message.ends_with("Only one reference can have Controller set to true. Found \"true\" in references for A/a and B/b"));
    let big = json!({"name": "x", "annotations": {"k": "v".repeat(ANNOTATIONS_TOTAL_BYTES_MAX)}});
    let got = fields(&validate_object_meta(
        &big,
        false,
        NameRule::Dns1123Subdomain,
    ));
    assert_eq!(
        got,
        vec![(
            "metadata.annotations".to_string(),
            "Too long: must have at most 262144 bytes".to_string()
        )]
    );
    let event_owner = json!({"name": "x", "ownerReferences": [{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]});
    let got = validate_object_meta(&event_owner, false, NameRule::Dns1123Subdomain);
    assert_eq!(got.len(), 1);
    assert!(got[0]
        .message
        .ends_with("/v1, Kind=Event is disallowed from being an owner"));
}

/// A name check that depends on more than the name (CRDs, APIServices) sees the generated
/// prefix and the name, and its messages land on the right paths, first among the causes.
#[test]
fn object_meta_with_a_closure_name_check() {
    let required = "widgets.example.com";
    let check = |name: &str, _prefix: bool| -> Vec<String> {
        if name == required {
            vec![]
        } else {
            vec![format!("must be {required:?}")]
        }
    };
    let meta = json!({"name": "other", "generateName": "w-", "labels": {"bad key": "v"}});
    let got = fields(&validate_object_meta_with(&meta, false, &check));
    assert_eq!(
        got[..2],
        [
            (
                "metadata.generateName".to_string(),
                "Invalid value: \"w-\": must be \"widgets.example.com\"".to_string()
            ),
            (
                "metadata.name".to_string(),
                "Invalid value: \"other\": must be \"widgets.example.com\"".to_string()
            ),
        ]
    );
    assert_eq!(got[2].0, "metadata.labels");
    let ok = json!({"name": required});
    assert!(validate_object_meta_with(&ok, false, &check).is_empty());
}
