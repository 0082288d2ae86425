use super::*;
use serde_json::{json, Map, Value};

fn labels(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

#[test]
fn label_parse_and_canonical_string() {
    let rows = [
        ("", ""),
        ("a=b", "a=b"),
        ("  a = b  ", "a=b"),
        ("a==b", "a==b"),
        ("a!=b", "a!=b"),
        ("b=1,a=2", "a=2,b=1"),
        ("a in (c,b)", "a in (b,c)"),
        ("a notin (c, b, c)", "a notin (b,c)"),
        ("a in ()", "a in ()"),
        ("a in (,b)", "a in (,b)"),
        ("a", "a"),
        ("!a", "!a"),
        ("a=", "a="),
        ("x>1,y<2", "x>1,y<2"),
        ("in=x", "in=x"),
        ("x in (in,notin)", "x in (in,notin)"),
        ("example.com/key=v,!other", "example.com/key=v,!other"),
    ];
    for (input, want) in rows {
        let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(sel.to_string(), want, "input {input:?}");
        let again = LabelSelector::parse(&sel.to_string()).expect("canonical form reparses");
        assert_eq!(again, sel, "round trip of {input:?}");
    }
}

#[test]
fn label_parse_errors_match_upstream() {
    let name_part = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let rows: Vec<(&str, String)> = vec![
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
        ("x=a,", "found '', expected: identifier after ','".into()),
        ("x=a b", "found 'b', expected: ',' or 'end of string'".into()),
        ("=a", "found '=', expected: !, identifier, or 'end of string'".into()),
        ("<>", "found '<', expected: !, identifier, or 'end of string'".into()),
        ("!a=b", "unable to parse requirement: found 'a', expected: ',' or 'end of string'".into()),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'".into()),
        ("x in a", "unable to parse requirement: found 'a' expected: '('".into()),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
        ("a=(b)", "unable to parse requirement: found '(', expected: identifier".into()),
        ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ("-bad=x", format!("unable to parse requirement: <nil>: Invalid value: \"-bad\": {name_part}")),
        (
            "a=-b",
            "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into(),
        ),
    ];
    for (input, want) in rows {
        let err = LabelSelector::parse(input).expect_err(input);
        assert_eq!(
            (err.code, err.reason),
            (400, "BadRequest"),
            "input {input:?}"
        );
        assert_eq!(err.message, want, "input {input:?}");
    }
    assert!(LabelSelector::parse(&"a".repeat(SELECTOR_LEN_MAX + 1)).is_err());
}

#[test]
fn label_matching_rows() {
    let l = labels(json!({"app": "web", "tier": "fe", "n": "5"}));
    let rows = [
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("app!=db", true),
        ("missing!=x", true),
        ("app in (db,web)", true),
        ("app notin (db,web)", false),
        ("missing notin (x)", true),
        ("missing in (x)", false),
        ("app", true),
        ("!app", false),
        ("!missing", true),
        ("n>4", true),
        ("n<5", false),
        ("app>1", false),
        ("app=web,tier=fe", true),
        ("app=web,tier=be", false),
    ];
    for (input, want) in rows {
        let sel = LabelSelector::parse(input).expect(input);
        assert_eq!(sel.matches(Some(&l)), want, "selector {input:?}");
    }
    let sel = LabelSelector::parse("!a,b!=c").expect("parse");
    assert!(sel.matches(None), "no labels satisfies negative terms");
    assert!(!LabelSelector::parse("a").expect("parse").matches(None));
    assert!(LabelSelector::parse("").expect("parse").is_empty());
    assert!(!LabelSelector::parse("a").expect("parse").is_empty());
}

#[test]
fn label_selector_from_json() {
    let sel = LabelSelector::from_json(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe", "be"]},
            {"key": "legacy", "operator": "DoesNotExist"}
        ]
    }))
    .expect("valid");
    assert_eq!(sel.to_string(), "app=web,!legacy,tier in (be,fe)");
    assert!(sel.matches(Some(&labels(json!({"app": "web", "tier": "fe"})))));
    assert!(!sel.matches(Some(&labels(
        json!({"app": "web", "tier": "fe", "legacy": "1"})
    ))));
    let all = LabelSelector::from_json(&json!({})).expect("empty");
    assert!(all.is_empty() && all.matches(None));
    let none = LabelSelector::from_json(&Value::Null).expect("null");
    assert!(!none.is_empty() && !none.matches(Some(&labels(json!({"a": "b"})))));
    let bad_op =
        LabelSelector::from_json(&json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]}));
    assert_eq!(
        bad_op.expect_err("bad op").message,
        "\"Foo\" is not a valid label selector operator"
    );
    let empty_in = LabelSelector::from_json(
        &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
    );
    assert_eq!(
        empty_in.expect_err("empty in").message,
        "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
    );
    let exists_values = LabelSelector::from_json(
        &json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
    );
    assert_eq!(
        exists_values.expect_err("exists with values").message,
        "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
    );
}

#[test]
fn label_requires_exact() {
    let sel = LabelSelector::parse("app=web,tier in (fe),x in (a,b)").expect("parse");
    assert_eq!(sel.requires_exact("app"), Some("web"));
    assert_eq!(sel.requires_exact("tier"), Some("fe"));
    assert_eq!(sel.requires_exact("x"), None);
}

#[test]
fn field_selector_parse_rows() {
    let rows = [
        ("", ""),
        ("metadata.name=x", "metadata.name=x"),
        ("metadata.name==x", "metadata.name=x"),
        (
            "status.phase!=Running,metadata.name=x",
            "metadata.name=x,status.phase!=Running",
        ),
        ("a=b\\,c", "a=b\\,c"),
        ("a=b\\=c\\\\d", "a=b\\=c\\\\d"),
        ("a=", "a="),
    ];
    for (input, want) in rows {
        let sel = FieldSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(sel.to_string(), want, "input {input:?}");
    }
    let sel = FieldSelector::parse("a=b\\,c").expect("parse");
    assert_eq!(sel.terms()[0].value, "b,c");
}

#[test]
fn field_selector_errors() {
    let rows = [
        ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        (
            "a=b\\x",
            "invalid field selector: invalid escape sequence: \\x",
        ),
        (
            "a=b\\",
            "invalid field selector: invalid escape sequence: \\",
        ),
        (
            "a=b=c",
            "invalid field selector: unescaped character in value: 61",
        ),
    ];
    for (input, want) in rows {
        let err = FieldSelector::parse(input).expect_err(input);
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, want),
            "input {input:?}"
        );
    }
}

#[test]
fn field_selector_matching_and_fast_path() {
    let get = |f: &str| match f {
        "metadata.name" => Some("web".to_string()),
        "status.phase" => Some("Running".to_string()),
        _ => None,
    };
    let rows = [
        ("", true),
        ("metadata.name=web", true),
        ("metadata.name=db", false),
        ("metadata.name!=db", true),
        ("status.phase!=Running", false),
        ("spec.nodeName=", true),
        ("spec.nodeName!=", false),
        ("metadata.name=web,status.phase=Running", true),
    ];
    for (input, want) in rows {
        let sel = FieldSelector::parse(input).expect(input);
        assert_eq!(sel.matches(&get), want, "selector {input:?}");
    }
    let sel = FieldSelector::parse("status.phase!=x,metadata.name=web").expect("parse");
    assert_eq!(sel.requires_exact("metadata.name"), Some("web"));
    assert_eq!(sel.requires_exact("status.phase"), None);
    assert_eq!(
        sel.fields().collect::<Vec<_>>(),
        vec!["metadata.name", "status.phase"]
    );
    assert_eq!(
        unescape_value(&escape_value("a,b=c\\d")).expect("round trip"),
        "a,b=c\\d"
    );
}
