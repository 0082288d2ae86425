//! Answers recorded from upstream v1.36.2 (a DeviceClass selector, compiled in the DRA
//! environment), compared text for text.

use super::*;

fn dra() -> Env {
    let attribute = Type::Any;
    let quantity = Type::Object("kubernetes.Quantity".into());
    Env::default()
        .object(
            "kubernetes.DRADevice",
            &[
                ("driver", Type::String),
                ("allowMultipleAllocations", Type::Bool),
                (
                    "attributes",
                    Type::map(Type::String, Type::map(Type::String, attribute)),
                ),
                (
                    "capacity",
                    Type::map(Type::String, Type::map(Type::String, quantity)),
                ),
            ],
        )
        .variable("device", Type::Object("kubernetes.DRADevice".into()))
}

/// `Ok(output type name)` or the issues text.
fn run(expr: &str) -> Result<String, String> {
    compile(&dra(), expr).map(|t| t.name())
}

/// (expression, upstream's answer: `Ok(output type)` when it compiles, else the issues text).
const RECORDED: &[(&str, Result<&str, &str>)] = &[
    ("device.driver == \"gpu.example.com\"", Ok("bool")),
    ("device.attributes[\"a\"].b", Ok("google.protobuf.Any")),
    ("device.capacity[\"x\"][\"y\"].compareTo(quantity(\"1\")) > 0", Ok("bool")),
    ("device.attributes[\"dra.example.com\"].exists(k, true)", Ok("bool")),
    ("size(device.attributes) > 1", Ok("bool")),
    ("cel.bind(d, device.attributes[\"a\"], d.x)", Ok("google.protobuf.Any")),
    ("[1,2].all(x, x > 0)", Ok("bool")),
    ("device.driver.startsWith(\"a\")", Ok("bool")),
    ("device.allowMultipleAllocations", Ok("bool")),
    ("device.attributes[\"a\"][\"b\"] + 1 > 2", Ok("bool")),
    ("device.capacity[\"a\"][\"b\"].add(1).isGreaterThan(quantity(\"1\"))", Ok("bool")),
    ("device.driver.size() + size(device.driver) == \"a\".size()", Ok("bool")),
    ("\"a\".charAt(0) == \"a\"", Ok("bool")),
    ("device.attributes.exists(k, v, true)", Ok("bool")),
    ("[1,2].transformList(i, v, v * 2) == [2]", Ok("bool")),
    ("device.driver", Ok("string")),
    ("dyn(1)", Ok("dyn")),
    ("device.attributes[\"a\"].b.c", Ok("dyn")),
    ("[1]", Ok("list(int)")),
    ("{\"a\": 1}", Ok("map(string, int)")),
    ("device.capacity[\"a\"][\"b\"]", Ok("kubernetes.Quantity")),
    ("device.attributes", Ok("map(string, map(string, google.protobuf.Any))")),
    ("null", Ok("null_type")),
    ("1u", Ok("uint")),
    ("b\"x\"", Ok("bytes")),
    ("duration(\"1s\")", Ok("google.protobuf.Duration")),
    ("type(1)", Ok("type(int)")),
    ("", Err("ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}")),
    ("foo", Err("ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo\n | ^")),
    ("a.b", Err("ERROR: <input>:1:1: undeclared reference to 'a' (in container '')\n | a.b\n | ^")),
    ("device.foo", Err("ERROR: <input>:1:7: undefined field 'foo'\n | device.foo\n | ......^")),
    ("1 +", Err("ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 1 +\n | ...^")),
    ("x.y(", Err("ERROR: <input>:1:5: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', ')', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | x.y(\n | ....^")),
    ("1 + \n +", Err("ERROR: <input>:2:2: Syntax error: mismatched input '+' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n |  +\n | .^\nERROR: <input>:2:3: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n |  +\n | ..^")),
    ("\"abc", Err("ERROR: <input>:1:1: Syntax error: token recognition error at: '\"abc'\n | \"abc\n | ^\nERROR: <input>:1:5: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | \"abc\n | ....^")),
    ("1 + + 2", Err("ERROR: <input>:1:5: Syntax error: extraneous input '+' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 1 + + 2\n | ....^")),
    ("1 +  # x", Err("ERROR: <input>:1:6: Syntax error: token recognition error at: '#'\n | 1 +  # x\n | .....^")),
    ("\u{f6} + ", Err("ERROR: <input>:1:1: Syntax error: token recognition error at: '\u{f6}'\n | \u{f6} + \n | \u{ff3e}\nERROR: <input>:1:3: Syntax error: mismatched input '+' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | \u{f6} + \n | \u{ff0e}.^\nERROR: <input>:1:5: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | \u{f6} + \n | \u{ff0e}...^")),
    ("device.driver == 1", Err("ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(string, int)'\n | device.driver == 1\n | ..............^")),
    ("\"a\" + 1 == \"b\"", Err("ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(string, int)'\n | \"a\" + 1 == \"b\"\n | ....^")),
    ("1 == 1u", Err("ERROR: <input>:1:3: found no matching overload for '_==_' applied to '(int, uint)'\n | 1 == 1u\n | ..^")),
    ("device.driver.foo()", Err("ERROR: <input>:1:18: undeclared reference to 'foo' (in container '')\n | device.driver.foo()\n | .................^")),
    ("true && 1", Err("ERROR: <input>:1:9: expected type 'bool' but found 'int'\n | true && 1\n | ........^")),
    ("[1, \"a\"]", Err("ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, \"a\"]\n | ....^")),
    ("device.attributes.all(k, k.startsWith(1))", Err("ERROR: <input>:1:38: found no matching overload for 'startsWith' applied to 'string.(int)'\n | device.attributes.all(k, k.startsWith(1))\n | .....................................^")),
    ("device.attributes[\"a\"].x.exists(k, 1)", Err("ERROR: <input>:1:23: expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)\n | device.attributes[\"a\"].x.exists(k, 1)\n | ......................^\nERROR: <input>:1:36: expected type 'bool' but found 'int'\n | device.attributes[\"a\"].x.exists(k, 1)\n | ...................................^")),
];

#[test]
fn answers_as_upstream() {
    let mut wrong = Vec::new();
    for (expr, want) in RECORDED {
        let got = run(expr);
        if got.as_ref().map(String::as_str).map_err(String::as_str) != *want {
            wrong.push(format!("{expr:?}\n  got  {got:?}\n  want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A syntax error's `?:` differs: the Go ANTLR runtime names only the token it needs
/// (`expecting ':'`), the Rust one every token that could follow. Recorded so that a parser
/// update that fixes it is noticed.
#[test]
fn ternary_syntax_error_lists_more_tokens_than_upstream() {
    let got = run("a ? b").unwrap_err();
    assert!(
        got.starts_with("ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {"),
        "{got}"
    );
}

/// Runtime answers of upstream v1.36.2 (rules of a CRD, observed in its error messages).
#[test]
fn evaluation() {
    use eval::{Program, Value};
    use std::collections::HashMap;
    let run = |src: &str, me: Value| Program::parse(src).unwrap().execute(&[("self", me)]);
    let obj = Value::from(HashMap::from([("a", Value::Int(1))]));
    let cases: &[(&str, Value, Result<Value, &str>)] = &[
        ("self.b == 1", obj.clone(), Err("no such key: b")),
        ("self.a == 1", obj.clone(), Ok(Value::Bool(true))),
        (
            "int(self) > 0",
            Value::from("abc"),
            Err("type conversion error from 'string' to 'int'"),
        ),
        ("string(self)", Value::Float(2.0), Ok(Value::from("2"))),
        (
            "self.matches('^a+$')",
            Value::from("aa"),
            Ok(Value::Bool(true)),
        ),
        (
            "self.lowerAscii().split('-').join('.')",
            Value::from("A-B"),
            Ok(Value::from("a.b")),
        ),
        (
            "self.all(x, x > 0) && self.exists_one(x, x == 2)",
            Value::from(vec![1i64, 2]),
            Ok(Value::Bool(true)),
        ),
        (
            "self.map(x, x * 2).filter(x, x > 2)",
            Value::from(vec![1i64, 2]),
            Ok(Value::from(vec![4i64])),
        ),
        (
            "type(self) == double",
            Value::Float(2.0),
            Ok(Value::Bool(true)),
        ),
        ("self.isSorted() && [3, 1].isSorted() == false", Value::from(vec![1i64, 2]), Ok(Value::Bool(true))),
        ("self.sum() == 3 && self.min() == 1 && self.max() == 2", Value::from(vec![1i64, 2]), Ok(Value::Bool(true))),
        ("self.indexOf(2) == 1 && self.lastIndexOf(1) == 2 && self.indexOf(9) == -1", Value::from(vec![1i64, 2, 1]), Ok(Value::Bool(true))),
        ("'abc'.indexOf('c') == 2", Value::Null, Ok(Value::Bool(true))),
        ("[1.5, 2.5].sum() == 4.0 && [].sum() == 0", Value::Null, Ok(Value::Bool(true))),
        ("{'a': 'x', 'b': 'y'}.exists(k, v, v == 'y' && k == 'b')", Value::Null, Ok(Value::Bool(true))),
        ("{'a': 'x'}.all(k, v, v == 'y')", Value::Null, Ok(Value::Bool(false))),
        ("['a', 'b'].exists(i, v, i == 1 && v == 'b')", Value::Null, Ok(Value::Bool(true))),
        ("[1, 2].existsOne(i, v, i == v)", Value::Null, Ok(Value::Bool(false))),
        ("[5, 6].transformList(i, v, i + v)", Value::Null, Ok(Value::from(vec![5i64, 7]))),
        ("self.all(x, self.exists(i, v, v == x))", Value::from(vec![1i64, 2]), Ok(Value::Bool(true))),
        ("{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}", Value::Null, Ok(Value::Bool(true))),
        ("{'a': 1}.transformMapEntry(k, v, {k + 'x': v}) == {'ax': 1}", Value::Null, Ok(Value::Bool(true))),
        ("sets.contains([1, 2], [1]) && sets.equivalent([1, 2], [2, 1, 1]) && !sets.intersects([1], [2])", Value::Null, Ok(Value::Bool(true))),
        ("'abc123'.find('[0-9]+') == '123' && 'a1b2'.findAll('[0-9]') == ['1', '2'] && 'a1b2'.findAll('[0-9]', 1) == ['1']", Value::Null, Ok(Value::Bool(true))),
        ("[].min()", Value::Null, Err("min called on empty list")),
        ("quantity('1Gi').isGreaterThan(quantity('1000Mi')) && quantity('500m').isLessThan(quantity('1'))", Value::Null, Ok(Value::Bool(true))),
        ("quantity('1k') == quantity('1000') && quantity('1.5').compareTo(quantity('1500m')) == 0", Value::Null, Ok(Value::Bool(true))),
        ("quantity('2Ki').asInteger() == 2048 && quantity('1e3').add(24).asInteger() == 1024 && quantity('1').sub(quantity('2')).sign() == -1", Value::Null, Ok(Value::Bool(true))),
        ("isQuantity('1.5Gi') && !isQuantity('1.5Gx') && !quantity('1.5').isInteger() && quantity('250m').asApproximateFloat() == 0.25", Value::Null, Ok(Value::Bool(true))),
    ];
    for (src, me, want) in cases {
        let got = run(src, me.clone());
        assert_eq!(got, want.clone().map_err(str::to_string), "{src}");
    }
}

/// cel-go's check of a literal `matches` pattern (upstream v1.36's answer for a CRD rule).
#[test]
fn literal_matches_pattern() {
    let env = Env::default().variable("s", Type::String);
    assert_eq!(
        compile(&env, "s.matches('(')"),
        Err(
            "ERROR: <input>:1:11: invalid matches argument\n | s.matches('(')\n | ..........^"
                .into()
        )
    );
    assert_eq!(compile(&env, "s.matches('^a+$')"), Ok(Type::Bool));
}

/// The work bound: nodes times the size per comprehension level, and the size again for
/// each call that builds from its input (`map` and `filter` append in place: not charged).
#[test]
fn work_bounds() {
    use eval::Program;
    let bound = |src: &str, size: u64| Program::parse(src).unwrap().work_bound(size);
    assert_eq!(bound("self.x == 1", 1000), bound("self.x == 1", 1));
    assert!(bound("self.all(x, x > 0)", 1000) < 20_000);
    assert!(bound("self.map(x, x * 2).size() > 0", 1000) < 50_000);
    assert!(bound("self.all(x, self.all(y, x == y))", 1000) > 1_000_000);
    assert!(bound("self.all(x, (self + self).size() > 0)", 1000) > 1_000_000);
    assert!(bound("self.split(',').size() > 0", 1000) >= 1000);
    assert!(bound("lists.range(1000000000).size() > 0", 1) > 1_000_000);
    assert!(bound("lists.range(self.size()).size() > 0", 1) > 1_000_000);
    assert!(bound("lists.range(3).size() > 0", 1) < 100);
}

#[test]
fn formatted_strings() {
    use eval::{formatted_string, Program, Value};
    let run = |src: &str, v: Value| Program::parse(src).unwrap().execute(&[("self", v)]);
    let ts = formatted_string("date-time", "2021-01-02T03:04:05Z");
    assert_eq!(run("self.getFullYear() == 2021", ts), Ok(Value::Bool(true)));
    let d = formatted_string("date", "2021-01-02");
    assert_eq!(
        run("self == timestamp('2021-01-02T00:00:00Z')", d),
        Ok(Value::Bool(true))
    );
    let dur = formatted_string("duration", "1h30m");
    assert_eq!(run("self == duration('90m')", dur), Ok(Value::Bool(true)));
    assert_eq!(
        formatted_string("byte", "aGk="),
        Value::from(b"hi".to_vec())
    );
    assert_eq!(formatted_string("byte", "aGk"), Value::from("aGk"));
    assert_eq!(formatted_string("duration", "nope"), Value::from("nope"));
}

#[test]
fn fields_a_rule_reads_of_self() {
    use crate::eval::Program;
    let fields = |src: &str| {
        Program::parse(src)
            .unwrap()
            .fields_of("self")
            .map(|f| f.into_iter().collect::<Vec<_>>())
    };
    let some = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        fields("self.minReplicas <= self.maxReplicas"),
        some(&["maxReplicas", "minReplicas"])
    );
    assert_eq!(fields("has(self.x) && self.y.z == 1"), some(&["x", "y"]));
    assert_eq!(fields("self.l.all(i, i > 0)"), some(&["l"]));
    assert_eq!(fields("1 == 1"), some(&[]));
    // Any other use of self needs all of it.
    assert_eq!(fields("size(self) > 1"), None);
    assert_eq!(fields("[self].size() > 0"), None);
    assert_eq!(fields("self == oldSelf"), None);
    assert_eq!(fields("self.all(k, k != 'x')"), None);
    assert_eq!(fields("[1].all(self, self > 0) && self.a"), None);
}

/// Estimated costs of library calls, as upstream's own tests record them
/// (`k8s.io/apiserver/pkg/cel/library/cost_test.go`; the expressions use only literals, whose
/// sizes are known).
#[test]
fn library_costs_are_upstreams() {
    let ipv6 = "'2001:db8:3333:4444:5555:6666:7777:8888'";
    let fifty = "'01234567890123456789012345678901234567890123456789'";
    let cases: Vec<(String, u64, u64)> = vec![
        ("[1, 2, 3, 4, 5].sum()".into(), 15, 15),
        ("[1, 2, 3, 4, 5].isSorted()".into(), 15, 15),
        ("[1, 2, 3, 4, 5].max()".into(), 15, 15),
        ("[1.0, 2.0, 3.0, 4.0, 5.0].min()".into(), 15, 15),
        ("[1, 2, 3, 4, 5].indexOf(3)".into(), 15, 15),
        ("[1, 2, 3, 4, 5].lastIndexOf(3)".into(), 15, 15),
        (format!("{fifty}.indexOf('123')"), 5, 5),
        ("url('https:://kubernetes.io/').getScheme()".into(), 4, 4),
        ("url('https:://kubernetes.io/').getQuery()".into(), 4, 4),
        ("ip('192.168.0.1')".into(), 2, 2),
        (format!("ip({ipv6})"), 4, 4),
        ("ip('192.168.0.1').family()".into(), 3, 3),
        ("ip.isCanonical('192.168.0.1')".into(), 3, 3),
        (format!("ip.isCanonical({ipv6})"), 8, 8),
        ("cidr('192.168.0.0/16')".into(), 2, 2),
        ("cidr('192.168.0.0/16').ip()".into(), 3, 3),
        (
            "cidr('192.168.0.0/16').containsCIDR(cidr('192.0.0.0/30'))".into(),
            7,
            11,
        ),
        (
            "cidr('192.168.0.0/16').containsCIDR('192.0.0.0/30')".into(),
            7,
            11,
        ),
        (
            "cidr('192.168.0.0/16').containsIP(ip('192.0.0.1'))".into(),
            4,
            7,
        ),
        (
            "cidr('192.168.0.0/16').containsIP('192.0.0.1')".into(),
            4,
            7,
        ),
        // Quantities compared with == have unknown sizes.
        (
            r#"quantity("200M") == quantity("200M")"#.into(),
            3,
            1844674407370955266,
        ),
        (
            r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#
                .into(),
            3,
            3689348814741910532,
        ),
    ];
    let mut wrong = Vec::new();
    for (expr, min, max) in cases {
        let (_, c) =
            compile_with_cost(&Env::default(), &expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        if (c.min, c.max) != (min, max) {
            wrong.push(format!(
                "{expr}: got {}..{}, want {min}..{max}",
                c.min, c.max
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Sizes come from the schema through the path from a variable: a list's items, a string's
/// length.
#[test]
fn costs_use_the_sizes_of_the_variables() {
    use cost::Sizes;
    let string = |n| Sizes {
        max_elements: n,
        ..Sizes::default()
    };
    let sizes = Sizes {
        max_elements: 10,
        elem: Some(Box::new(string(64))),
        ..Sizes::default()
    };
    let env = Env::default()
        .variable("self", Type::list(Type::String))
        .sizes(sizes);
    // 2 + 10 * (1 (accumulator) + 1 (x) + 7 (64 characters / 10 x 1) + 2 (condition)).
    let (_, c) = compile_with_cost(&env, "self.all(x, x.contains('gpu'))").unwrap();
    assert_eq!((c.min, c.max), (2, 112));
    let (_, c) =
        compile_with_cost(&Env::default().variable("s", Type::String), "s.size() > 0").unwrap();
    assert_eq!(c.max, 3, "a size is O(1)");
}
