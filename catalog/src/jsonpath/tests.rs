//! Cases from client-go's `jsonpath_test.go` and `parser_test.go` (their expected output, on
//! JSON input: Go structs there are the equivalent JSON objects here), plus the quirks a
//! printer column can meet.

use serde_json::{json, Value};

use super::*;

/// `(name, template, expected output)`, executed with missing keys allowed or not.
fn check(cases: &[(&str, &str, &str)], input: &Value, allow_missing_keys: bool) {
    for (name, template, want) in cases {
        let path = JsonPath::parse(template)
            .unwrap_or_else(|e| panic!("{name}: {template} does not parse: {e}"))
            .allow_missing_keys(allow_missing_keys);
        let got = path.execute(input);
        assert_eq!(got.as_deref(), Ok(*want), "{name}: {template}");
    }
}

/// `(name, template)` that parse but fail to evaluate.
fn check_eval_errors(cases: &[(&str, &str)], input: &Value, allow_missing_keys: bool) {
    for (name, template) in cases {
        let path = JsonPath::parse(template)
            .unwrap_or_else(|e| panic!("{name}: {template} does not parse: {e}"))
            .allow_missing_keys(allow_missing_keys);
        let got = path.execute(input);
        assert!(got.is_err(), "{name}: {template} gave {got:?}");
    }
}

fn types() -> Value {
    json!({
        "bools": [true, false, true, false],
        "integers": [1, 2, 3, 4],
        "floats": [1.0, 2.2, 3.3, 4.0],
        "strings": ["one", "two", "three", "four"],
        "interfaces": [true, "one", 1, 1.1],
        "maps": [
            {"name": "one", "value": 1},
            {"name": "two", "value": 2.02},
            {"name": "three", "value": 3.03},
            {"name": "four", "value": 4.04},
        ],
    })
}

#[test]
fn slices_of_every_type() {
    let cases = [
        ("boolSlice", "{ .bools }", "[true,false,true,false]"),
        ("boolSliceIndex", "{ .bools[0] }", "true"),
        ("boolSliceIndexNeg", "{ .bools[-1] }", "false"),
        ("boolSubSlice", "{ .bools[0:2] }", "true false"),
        ("boolSubSliceFirst2", "{ .bools[:2] }", "true false"),
        ("boolSubSliceStep2", "{ .bools[:4:2] }", "true true"),
        ("integerSlice", "{ .integers }", "[1,2,3,4]"),
        ("integerSliceIndex", "{ .integers[0] }", "1"),
        ("integerSliceIndexReverse", "{ .integers[-2] }", "3"),
        ("integerSubSliceFirst2", "{ .integers[0:2] }", "1 2"),
        ("integerSubSliceStep2", "{ .integers[:4:2] }", "1 3"),
        // JSON `1.0` decodes as a float in Go too; both print without a fraction.
        ("floatSlice", "{ .floats }", "[1,2.2,3.3,4]"),
        ("floatSliceIndex", "{ .floats[0] }", "1"),
        ("floatSliceIndexReverse", "{ .floats[-2] }", "3.3"),
        ("floatSubSliceFirst2", "{ .floats[0:2] }", "1 2.2"),
        ("floatSubSliceStep2", "{ .floats[:4:2] }", "1 3.3"),
        (
            "stringSlice",
            "{ .strings }",
            r#"["one","two","three","four"]"#,
        ),
        ("stringSliceIndex", "{ .strings[0] }", "one"),
        ("stringSliceIndexReverse", "{ .strings[-2] }", "three"),
        ("stringSubSliceFirst2", "{ .strings[:2] }", "one two"),
        ("stringSubSliceStep2", "{ .strings[:4:2] }", "one three"),
        ("interfaceSlice", "{ .interfaces }", r#"[true,"one",1,1.1]"#),
        ("interfaceSliceIndexReverse", "{ .interfaces[-2] }", "1"),
        (
            "interfaceSubSliceFirst2",
            "{ .interfaces[0:2] }",
            "true one",
        ),
        ("interfaceSubSliceStep2", "{ .interfaces[:4:2] }", "true 1"),
        (
            "mapSlice",
            "{ .maps }",
            r#"[{"name":"one","value":1},{"name":"two","value":2.02},{"name":"three","value":3.03},{"name":"four","value":4.04}]"#,
        ),
        (
            "mapSliceIndex",
            "{ .maps[0] }",
            r#"{"name":"one","value":1}"#,
        ),
        (
            "mapSliceIndexReverse",
            "{ .maps[-2] }",
            r#"{"name":"three","value":3.03}"#,
        ),
        (
            "mapSubSliceFirst2",
            "{ .maps[:2] }",
            r#"{"name":"one","value":1} {"name":"two","value":2.02}"#,
        ),
        (
            "mapSubSliceStepOdd",
            "{ .maps[::2] }",
            r#"{"name":"one","value":1} {"name":"three","value":3.03}"#,
        ),
        (
            "mapSubSliceStepEven",
            "{ .maps[1::2] }",
            r#"{"name":"two","value":2.02} {"name":"four","value":4.04}"#,
        ),
    ];
    check(&cases, &types(), false);
}

fn store() -> Value {
    json!({
        "Name": "jsonpath",
        "Book": [
            {"Category": "reference", "Author": "Nigel Rees", "Title": "Sayings of the Centurey", "Price": 8.95},
            {"Category": "fiction", "Author": "Evelyn Waugh", "Title": "Sword of Honour", "Price": 12.99},
            {"Category": "fiction", "Author": "Herman Melville", "Title": "Moby Dick", "Price": 8.99},
        ],
        "Bicycle": [
            {"Color": "red", "Price": 19.95, "IsNew": true},
            {"Color": "green", "Price": 20.01, "IsNew": false},
        ],
        "Labels": {"engieer": 10, "web/html": 15, "k8s-app": 20},
        "Employees": {"jason": "manager", "dan": "clerk"},
    })
}

#[test]
fn store_cases() {
    let cases = [
        ("plain", "hello jsonpath", "hello jsonpath"),
        ("quote", r#"{"{"}"#, "{"),
        ("variable", "hello {.Name}", "hello jsonpath"),
        ("dict/", "{$.Labels.web/html}", "15"),
        ("dict/", "{$.Employees.jason}", "manager"),
        ("dict-", "{.Labels.k8s-app}", "20"),
        ("nest", "{.Bicycle[*].Color}", "red green"),
        (
            "allarray",
            "{.Book[*].Author}",
            "Nigel Rees Evelyn Waugh Herman Melville",
        ),
        ("recurfields", "{..Price}", "8.95 12.99 8.99 19.95 20.01"),
        (
            "recurdotfields",
            "{...Price}",
            "8.95 12.99 8.99 19.95 20.01",
        ),
        (
            "lastarray",
            "{.Book[-1:]}",
            r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
        ),
        (
            "recurarray",
            "{..Book[2]}",
            r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
        ),
        (
            "bool",
            "{.Bicycle[?(@.IsNew==true)]}",
            r#"{"Color":"red","IsNew":true,"Price":19.95}"#,
        ),
    ];
    check(&cases, &store(), false);
    check(
        &[("recursive", "{..}", "[1,2,3]")],
        &json!([1, 2, 3]),
        false,
    );
    check(
        &[("filter", "{[?(@<5)]}", "2 3")],
        &json!([2, 6, 3, 7]),
        false,
    );
    check(
        &[("union", "{[1,3,4]}", "1 3 4")],
        &json!([0, 1, 2, 3, 4]),
        false,
    );
    let days = json!(["Monday", "Tudesday"]);
    check(&[("array", "{[0:2]}", "Monday Tudesday")], &days, false);

    let missing = [
        ("nonexistent field", "{.hello}", ""),
        (
            "nonexistent field 2",
            "before-{.hello}after",
            "before-after",
        ),
    ];
    check(&missing, &store(), true);

    let failing = [
        ("invalid identifier", "{hello}"),
        ("nonexistent field", "{.hello}"),
        ("invalid array", "{.Labels[0]}"),
        ("invalid filter operator", "{.Book[?(@.Price<>10)]}"),
    ];
    check_eval_errors(&failing, &store(), false);
    let err = JsonPath::parse("{.Labels[0]}").unwrap().execute(&store());
    assert_eq!(
        err,
        Err(EvalError(
            "map[string]interface {} is not array or slice".into()
        ))
    );
    let err = JsonPath::parse("{.hello}").unwrap().execute(&store());
    assert_eq!(err, Err(EvalError("hello is not found".into())));
}

#[test]
fn json_input_cases() {
    let points = json!([
        {"id": "i1", "x": 4, "y": -5},
        {"id": "i2", "x": -2, "y": -5, "z": 1},
        {"id": "i3", "x": 8, "y": 3},
        {"id": "i4", "x": -6, "y": -1},
        {"id": "i5", "x": 0, "y": 2, "z": 1},
        {"id": "i6", "x": 1, "y": 4},
        {"id": "i7", "x": null, "y": 4},
    ]);
    let cases = [
        ("exists filter", "{[?(@.z)].id}", "i2 i5"),
        ("bracket key", "{[0]['id']}", "i1"),
        ("nil value", "{[-1]['x']}", "null"),
    ];
    check(&cases, &points, false);
}

fn nodes() -> Value {
    json!({
        "kind": "List",
        "items": [
            {"kind": "None",
             "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
             "status": {"capacity": {"cpu": "4"}, "ready": true,
                        "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]}},
            {"kind": "None",
             "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
             "status": {"capacity": {"cpu": "8"}, "ready": false,
                        "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.2"},
                                      {"type": "another", "address": "127.0.0.3"}]}},
        ],
        "users": [
            {"name": "myself", "user": {}},
            {"name": "e2e", "user": {"username": "admin", "password": "secret"}},
        ],
    })
}

#[test]
fn kubernetes_cases() {
    let cases = [
        (
            "range addresss",
            "{.items[*].status.addresses[*].address}",
            "127.0.0.1 127.0.0.2 127.0.0.3",
        ),
        (
            "item name",
            "{.items[*].metadata.name}",
            "127.0.0.1 127.0.0.2",
        ),
        (
            "union nodes capacity",
            "{.items[*]['metadata.name', 'status.capacity']}",
            r#"127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}"#,
        ),
        (
            "user password",
            r#"{.users[?(@.name=="e2e")].user.password}"#,
            "secret",
        ),
        (
            "hostname",
            r"{.items[0].metadata.labels.kubernetes\.io/hostname}",
            "127.0.0.1",
        ),
        (
            "hostname filter",
            r#"{.items[?(@.metadata.labels.kubernetes\.io/hostname=="127.0.0.1")].kind}"#,
            "None",
        ),
        (
            "bool item",
            "{.items[?(@..ready==true)].metadata.name}",
            "127.0.0.1",
        ),
    ];
    check(&cases, &nodes(), false);
    // Upstream's order is Go's random map order; ours is the object's key order.
    let mut names: Vec<String> = JsonPath::parse("{..name}")
        .unwrap()
        .execute(&nodes())
        .unwrap()
        .split(' ')
        .map(str::to_owned)
        .collect();
    names.sort();
    assert_eq!(names, ["127.0.0.1", "127.0.0.2", "e2e", "myself"]);
}

#[test]
fn filter_tolerates_missing_keys_only_when_allowed() {
    // https://issues.k8s.io/45546
    let pods = json!({"kind": "List", "items": [
        {"kind": "Pod", "metadata": {"name": "pod1", "annotations": {"color": "blue"}}},
        {"kind": "Pod", "metadata": {"name": "pod2"}},
        {"kind": "Pod", "metadata": {"name": "pod3", "annotations": {"color": "green"}}},
        {"kind": "Pod", "metadata": {"name": "pod4", "annotations": {"color": "blue"}}},
    ]});
    let template = r#"{.items[?(@.metadata.annotations.color=="blue")].metadata.name}"#;
    check(&[("tolerant", template, "pod1 pod4")], &pods, true);
    check_eval_errors(&[("strict", template)], &pods, false);
}

fn containers(n: usize) -> Value {
    let list: Vec<Value> = (0..n)
        .map(|i| json!({"image": "radial/busyboxplus:curl", "name": format!("fake{i}")}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": list}})
}

#[test]
fn negative_indexes() {
    let cases = [
        ("[0]", "{.spec.containers[0].name}", "fake0"),
        ("[0:0]", "{.spec.containers[0:0].name}", ""),
        (
            "[0:-1]",
            "{.spec.containers[0:-1].name}",
            "fake0 fake1 fake2",
        ),
        ("[-1]", "{.spec.containers[-1].name}", "fake3"),
        ("[-1:]", "{.spec.containers[-1:].name}", "fake3"),
        ("[-2]", "{.spec.containers[-2].name}", "fake2"),
        ("[-2:]", "{.spec.containers[-2:].name}", "fake2 fake3"),
        ("[-3]", "{.spec.containers[-3].name}", "fake1"),
        ("[-4]", "{.spec.containers[-4].name}", "fake0"),
        (
            "[-4:]",
            "{.spec.containers[-4:].name}",
            "fake0 fake1 fake2 fake3",
        ),
        ("[5:5]", "{.spec.containers[5:5].name}", ""),
        ("[-5:-5]", "{.spec.containers[-5:-5].name}", ""),
    ];
    check(&cases, &containers(4), false);
    let failing = [
        ("[-1:0]", "{.spec.containers[-1:0].name}"),
        ("[-5]", "{.spec.containers[-5].name}"),
        ("[3:1]", "{.spec.containers[3:1].name}"),
        ("[-1:-2]", "{.spec.containers[-1:-2].name}"),
    ];
    check_eval_errors(&failing, &containers(4), false);
}

#[test]
fn steps() {
    let cases = [
        (
            "[0:]",
            "{.spec.containers[0:].name}",
            "fake0 fake1 fake2 fake3 fake4 fake5",
        ),
        (
            "[0:6:]",
            "{.spec.containers[0:6:].name}",
            "fake0 fake1 fake2 fake3 fake4 fake5",
        ),
        (
            "[0:6:1]",
            "{.spec.containers[0:6:1].name}",
            "fake0 fake1 fake2 fake3 fake4 fake5",
        ),
        ("[1:4:2]", "{.spec.containers[1:4:2].name}", "fake1 fake3"),
        ("[1:4:3]", "{.spec.containers[1:4:3].name}", "fake1"),
        ("[1:4:4]", "{.spec.containers[1:4:4].name}", "fake1"),
        (
            "[0:6:2]",
            "{.spec.containers[0:6:2].name}",
            "fake0 fake2 fake4",
        ),
        ("[0:6:3]", "{.spec.containers[0:6:3].name}", "fake0 fake3"),
        ("[0:6:5]", "{.spec.containers[0:6:5].name}", "fake0 fake5"),
        ("[0:6:6]", "{.spec.containers[0:6:6].name}", "fake0"),
    ];
    check(&cases, &containers(6), false);
    let failing = [
        ("[0:6:0]", "{.spec.containers[0:6:0].name}"),
        ("[0:6:-1]", "{.spec.containers[0:6:-1].name}"),
    ];
    check_eval_errors(&failing, &containers(6), false);
}

#[test]
fn parse_errors() {
    let cases = [
        ("unclosed action", "{.hello", "unclosed action"),
        (
            "unrecognized character",
            "{*}",
            "unrecognized character in action: U+002A '*'",
        ),
        ("invalid number", "{+12.3.0}", "cannot parse number +12.3.0"),
        ("unterminated array", "{[1}", "unterminated array"),
        ("unterminated filter", "{[?(.price]}", "unterminated filter"),
        (
            "invalid multiple recursive descent",
            "{........}",
            "invalid multiple recursive descent",
        ),
        (
            "superrecurfields",
            "{............................................................Price}",
            "invalid multiple recursive descent",
        ),
        // Only single quotes make a bracketed key.
        (
            "double-quoted key",
            r#"{.metadata["name"]}"#,
            r#"invalid array index "name""#,
        ),
        ("not a number", "{.a[-]}", "array index - is not a number"),
        (
            "slice with four parts",
            "{.a[1:2:3:4]}",
            "invalid array index 1:2:3:4",
        ),
        (
            "malformat input",
            r"{\\\}",
            r"unrecognized character in action: U+005C '\'",
        ),
        ("unclosed filter", "{.a[?(@.b)x}", "unclosed array expect ]"),
        (
            "unterminated quote",
            r#"{"abc}"#,
            "unterminated quoted string",
        ),
        (
            "bad escape",
            r#"{"a\qb"}"#,
            r#"unquote string "a\qb" error invalid syntax"#,
        ),
        (
            "comparison without a left side",
            "{.a[?(=1)]}",
            "unrecognized character in action: U+003D '='",
        ),
    ];
    for (name, template, want) in cases {
        assert_eq!(
            JsonPath::parse(template),
            Err(ParseError(want.to_owned())),
            "{name}: {template}"
        );
    }
}

#[test]
fn parser_accepts_upstream_shapes() {
    let item = json!([{"status": {"nodeInfo": {"osImage": "()"}}, "test": "())(", "n": 1},
                      {"status": {"nodeInfo": {"osImage": "(\"\")"}}, "n": 2},
                      {"status": {"nodeInfo": {"osImage": "Linux"}}, "n": 3},
                      {"status": {"nodeInfo": {"osImage": "{[()]}"}}, "n": 4},
                      {"status": {"nodeInfo": {"osImage": "''"}}, "n": 5},
                      {"status": {"nodeInfo": {"osImage": "\"\""}}, "n": 6},
                      {"status": {"nodeInfo": {"osImage": "\\'"}}, "n": 7}]);
    let cases = [
        (
            "paired parentheses in quotes",
            r#"{[?(@.status.nodeInfo.osImage == "()")].n}"#,
            "1",
        ),
        (
            "escaped double quotes",
            r#"{[?(@.status.nodeInfo.osImage == "(\"\")")].n}"#,
            "2",
        ),
        ("unregular parentheses", r#"{[?(@.test == "())(")].n}"#, "1"),
        (
            "single quotes",
            "{[?(@.status.nodeInfo.osImage == 'Linux')].n}",
            "3",
        ),
        (
            "filter suffix",
            r#"{[?(@.status.nodeInfo.osImage == "{[()]}")].n}"#,
            "4",
        ),
        (
            "double inside single",
            r#"{[?(@.status.nodeInfo.osImage == "''")].n}"#,
            "5",
        ),
        (
            "single inside double",
            r#"{[?(@.status.nodeInfo.osImage == '""')].n}"#,
            "6",
        ),
        (
            "escaped single",
            r"{[?(@.status.nodeInfo.osImage == '\\\'')].n}",
            "7",
        ),
        ("slice from end", "{[-5:].n}", "3 4 5 6 7"),
        ("last", "{[-1].n}", "7"),
        ("all but first and last", "{[1:-1].n}", "2 3 4 5 6"),
        (
            "arraydict reparsed as a path",
            "{[0]['status.nodeInfo']}",
            r#"{"osImage":"()"}"#,
        ),
    ];
    check(&cases, &item, true);
}

#[test]
fn filters_compare_like_go_templates() {
    let conditions = json!({"conditions": [
        {"type": "Ready", "status": "True", "n": 3, "f": 1.5, "b": true},
        {"type": "Synced", "status": "False", "n": 7, "f": 2.5, "b": false},
        {"type": "Other"},
    ]});
    let cases = [
        ("==", r#"{.conditions[?(@.type=="Ready")].status}"#, "True"),
        (
            "!= skips missing",
            r#"{.conditions[?(@.status!="True")].type}"#,
            "Synced",
        ),
        ("<", "{.conditions[?(@.n<5)].type}", "Ready"),
        (">", "{.conditions[?(@.n>3)].type}", "Synced"),
        ("<=", "{.conditions[?(@.n<=3)].type}", "Ready"),
        (">=", "{.conditions[?(@.n>=3)].type}", "Ready Synced"),
        ("float", "{.conditions[?(@.f>2.0)].type}", "Synced"),
        ("bool", "{.conditions[?(@.b==false)].type}", "Synced"),
        (
            "string order",
            "{.conditions[?(@.type<'S')].type}",
            "Ready Other",
        ),
        ("exists", "{.conditions[?(@.status)].type}", "Ready Synced"),
        ("exists", "{.conditions[?(@.n)].type}", "Ready Synced"),
        ("without @", r#"{.conditions[?(.type=="Ready")].n}"#, "3"),
        (
            "both sides paths",
            "{.conditions[?(@.n==@.n)].type}",
            "Ready Synced",
        ),
    ];
    check(&cases, &conditions, true);
    let failing = [
        // An integer field compared with a float literal: Go's kinds differ.
        ("int vs float", "{.conditions[?(@.n==3.0)].type}"),
        // Booleans are not ordered.
        ("bool order", "{.conditions[?(@.b<true)].type}"),
        // A filter over a map.
        ("filter map", r#"{.conditions[0][?(@.x=="y")]}"#),
        ("unknown operator", "{.conditions[?(@.n=<3)].type}"),
    ];
    check_eval_errors(&failing, &conditions, true);

    let with_null = json!([{"n": null, "id": "a"}, {"n": 1, "id": "b"}]);
    // A present `null` exists; compared, it has no comparable kind.
    check(
        &[("exists of null", "{[?(@.n)].id}", "a b")],
        &with_null,
        true,
    );
    check_eval_errors(&[("null compared", "{[?(@.n<100)].id}")], &with_null, true);
}

#[test]
fn fields_wildcards_and_recursion_quirks() {
    let obj = json!({"spec": {"a.b": "dotted", "a": {"b": "nested"}, "s": "hi", "l": [1, 2],
                              "n": null, "e": {}}});
    let cases = [
        ("escaped dot is one key", r"{.spec.a\.b}", "dotted"),
        ("bracket key is reparsed as a path", "{.spec['a.b']}", "nested"),
        ("field of a list finds nothing", "{.spec.l.x}", ""),
        ("field of null finds nothing", "{.spec.n.x}", ""),
        ("index of null finds nothing", "{.spec.n[0]}", ""),
        ("wildcard over a string yields bytes", "{.spec.s.*}", "104 105"),
        ("bracket wildcard over a list", "{.spec.l[*]}", "1 2"),
        ("empty field name finds nothing", "{.spec.}", ""),
        ("recursive includes strings", "{.spec.a..}", r#"{"b":"nested"} nested"#),
        ("a quote does not end a field", r#"{.spec.s"x"}"#, ""),
        ("literal after a field", r#"{.spec.s "x"}"#, "x"),
        ("number literal per input", "{.spec.s 5}", "5"),
        ("empty action is the whole input", "{}", "{\"spec\":{\"a\":{\"b\":\"nested\"},\"a.b\":\"dotted\",\"e\":{},\"l\":[1,2],\"n\":null,\"s\":\"hi\"}}"),
        ("several actions", "{.spec.s}-{.spec.l[0]}", "hi-1"),
    ];
    check(&cases, &obj, true);
    let failing = [
        ("index of a map", "{.spec.a[0]}"),
        ("index of a string", "{.spec.s[0]}"),
        ("filter of null", "{.spec.n[?(@.x)]}"),
        ("range is not supported", "{range .spec.l[*]}{@}{end}"),
    ];
    check_eval_errors(&failing, &obj, true);
}

#[test]
fn prints_numbers_and_json_like_go() {
    let floats = [
        (0.0, "0"),
        (1.0, "1"),
        (-2.5, "-2.5"),
        (123_456.0, "123456"),
        (1_000_000.0, "1e+06"),
        (1_234_567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.000_012_5, "1.25e-05"),
        (1e21, "1e+21"),
        (2.75, "2.75"),
    ];
    for (f, want) in floats {
        assert_eq!(go_float_v(f), want, "%v of {f}");
    }
    let v = json!({"z": 1, "a": [1.5, 1e21, 1e-7, 100000000.0, 0.000001],
                   "h": "<a&b>\u{2028}\n\u{1}", "big": 18446744073709551615u64});
    let mut out = String::new();
    go_json(&mut out, &v);
    assert_eq!(
        out,
        r#"{"a":[1.5,1e+21,1e-7,100000000,0.000001],"big":18446744073709552000,"h":"\u003ca\u0026b\u003e\u2028\n\u0001","z":1}"#
    );
}

#[test]
fn bounds_are_parse_or_evaluation_errors() {
    let long = format!("{{.{}}}", "a".repeat(JSONPATH_TEMPLATE_BYTES_MAX));
    assert!(JsonPath::parse(&long).is_err());
    let many = format!("{{{}}}", ".a".repeat(JSONPATH_NODES_MAX + 1));
    assert!(JsonPath::parse(&many).is_err());
    let nested = format!("{{.x{}}}", "['a']".repeat(4));
    assert!(JsonPath::parse(&nested).is_ok());
    // Quotes and brackets end a fragment early, so real templates nest 3 or 4 deep; the bound
    // is checked where the parser recurses.
    let mut parser = Parser {
        input: "",
        pos: 0,
        start: 0,
        nodes: 0,
        depth: JSONPATH_NESTING_MAX,
    };
    assert!(parser.parse_nested(".a").is_err());
    parser.depth -= 1;
    assert!(parser.parse_nested(".a").is_ok());
    let wide = Value::Array(vec![json!(1); JSONPATH_RESULTS_MAX + 1]);
    assert!(JsonPath::parse("{[*]}").unwrap().execute(&wide).is_err());
    assert!(JsonPath::parse("{..}")
        .unwrap()
        .execute(&json!([[1]]))
        .is_ok());
}
