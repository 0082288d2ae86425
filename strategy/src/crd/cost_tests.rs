//! The estimated cost of rules on schemas, against the numbers upstream's own tests record
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel/compilation_test.go`,
//! `TestCostEstimation`: each schema once without bounds, once with `maxItems`,
//! `maxProperties` or `maxLength` set), and the 422 causes of CRDs whose rules cost too much.

use super::celrules::rule_max_cost;
use serde_json::{json, Value};

/// `type`: a schema type, or `duration`/`date`/`date-time` strings, or `int-or-string`.
fn scalar(t: &str) -> Value {
    match t {
        "duration" | "date" | "date-time" => json!({"type": "string", "format": t}),
        "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
        _ => json!({"type": t}),
    }
}

fn with(mut s: Value, key: &str, max: Option<i64>) -> Value {
    if let Some(m) = max {
        s[key] = json!(m);
    }
    s
}

fn array(item: &str) -> impl Fn(Option<i64>) -> Value {
    let item = scalar(item);
    move |max| {
        with(
            json!({"type": "array", "items": item.clone()}),
            "maxItems",
            max,
        )
    }
}

fn map(value: &str) -> impl Fn(Option<i64>) -> Value {
    let value = scalar(value);
    move |max| {
        with(
            json!({"type": "object", "additionalProperties": value.clone()}),
            "maxProperties",
            max,
        )
    }
}

fn string(max: Option<i64>) -> Value {
    with(json!({"type": "string"}), "maxLength", max)
}

fn bytes(max: Option<i64>) -> Value {
    with(
        json!({"type": "string", "format": "byte"}),
        "maxLength",
        max,
    )
}

fn object_item() -> Value {
    json!({"type": "object", "required": ["required"], "properties": {
        "required": {"type": "string"}, "optional": {"type": "string"}}})
}

fn object_array(max: Option<i64>) -> Value {
    with(
        json!({"type": "array", "items": object_item()}),
        "maxItems",
        max,
    )
}

fn array_of_arrays(max: Option<i64>) -> Value {
    with(
        json!({"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
        "maxItems",
        max,
    )
}

fn map_array(max: Option<i64>) -> Value {
    with(
        json!({"type": "array", "items": {"type": "object",
            "additionalProperties": {"type": "number"}}}),
        "maxItems",
        max,
    )
}

fn map_of(item: Value) -> impl Fn(Option<i64>) -> Value {
    move |max| {
        with(
            json!({"type": "object", "additionalProperties": item.clone()}),
            "maxProperties",
            max,
        )
    }
}

fn nested_strings(max: Option<i64>) -> Value {
    let value = with(json!({"type": "string"}), "maxLength", max);
    with(
        json!({"type": "object", "additionalProperties": value}),
        "maxProperties",
        max,
    )
}

/// Upstream's `genAllMaxNestedSpecWithRootRule` (`all`) and `genOneMaxNestedSpecWithRootRule`.
fn nested_objects(all: bool) -> impl Fn(Option<i64>) -> Value {
    move |max| {
        let inner = object_item();
        let inner = if all {
            with(inner, "maxProperties", max)
        } else {
            inner
        };
        let items = with(
            json!({"type": "object", "additionalProperties": inner}),
            "maxProperties",
            max,
        );
        let outer = json!({"type": "array", "items": items});
        if all {
            with(outer, "maxItems", max)
        } else {
            outer
        }
    }
}

/// (name, schema with the bound, rule, cost unbounded, bound, cost bounded); `u64::MAX`
/// stands for upstream's "exceeds the per-call limit" expectation. (Upstream's cases that
/// expect 0, the `has` ones, check nothing there and are left out.)
type Case = (
    &'static str,
    Box<dyn Fn(Option<i64>) -> Value>,
    &'static str,
    u64,
    i64,
    u64,
);

fn upstream_cases() -> Vec<Case> {
    vec![
        (
            "number array with all",
            Box::new(array("number")),
            "self.all(x, true)",
            4718591,
            10,
            32,
        ),
        (
            "string array with all",
            Box::new(array("string")),
            "self.all(x, true)",
            3145727,
            20,
            62,
        ),
        (
            "boolean array with all",
            Box::new(array("boolean")),
            "self.all(x, true)",
            1887437,
            5,
            17,
        ),
        (
            "array of number arrays with all",
            Box::new(array_of_arrays),
            "self.all(x, true)",
            3145727,
            100,
            302,
        ),
        (
            "array of objects with all",
            Box::new(object_array),
            "self.all(x, true)",
            555128,
            50,
            152,
        ),
        (
            "map of numbers with all",
            Box::new(map("number")),
            "self.all(x, true)",
            1348169,
            10,
            32,
        ),
        (
            "map of strings with all",
            Box::new(map("string")),
            "self.all(x, true)",
            1179647,
            3,
            11,
        ),
        (
            "map of booleans with all",
            Box::new(map("boolean")),
            "self.all(x, true)",
            943718,
            100,
            302,
        ),
        (
            "string with contains",
            Box::new(string),
            "self.contains('test')",
            314574,
            10,
            5,
        ),
        (
            "string with startsWith",
            Box::new(string),
            "self.startsWith('test')",
            2,
            15,
            2,
        ),
        (
            "string with endsWith",
            Box::new(string),
            "self.endsWith('test')",
            2,
            30,
            2,
        ),
        (
            "concat string",
            Box::new(string),
            r#"size(self + "hello") > size("hello")"#,
            314578,
            4,
            7,
        ),
        (
            "index of array with numbers",
            Box::new(array("number")),
            "self[1] == 0.0",
            2,
            5000,
            2,
        ),
        (
            "index of array with strings",
            Box::new(array("string")),
            "self[1] == self[1]",
            314577,
            8,
            314577,
        ),
        (
            "O(n^2) loop with numbers",
            Box::new(array("number")),
            "self.all(x, self.all(y, true))",
            u64::MAX,
            10,
            352,
        ),
        (
            "O(n^3) loop with numbers",
            Box::new(array("number")),
            "self.all(x, self.all(y, self.all(z, true)))",
            u64::MAX,
            10,
            3552,
        ),
        (
            "regex matches simple",
            Box::new(string),
            r#"self.matches("x")"#,
            314574,
            50,
            22,
        ),
        (
            "regex matches empty string",
            Box::new(string),
            r#""".matches("(((((((((())))))))))[0-9]")"#,
            7,
            10,
            7,
        ),
        (
            "regex matches empty regex",
            Box::new(string),
            r#"self.matches("")"#,
            1,
            100,
            1,
        ),
        (
            "map of strings with value length",
            Box::new(nested_strings),
            "self.all(x, x.contains(self[x]))",
            2752507,
            10,
            72,
        ),
        (
            "set array maxLength to zero",
            Box::new(array("number")),
            "self[3] == 0.0",
            2,
            0,
            2,
        ),
        (
            "set map maxLength to zero",
            Box::new(map("number")),
            r#"self["x"] == 0.0"#,
            2,
            0,
            2,
        ),
        (
            "set string maxLength to zero",
            Box::new(string),
            r#"self == "x""#,
            2,
            0,
            1,
        ),
        (
            "set bytes maxLength to zero",
            Box::new(bytes),
            r#"self == b"x""#,
            2,
            0,
            1,
        ),
        (
            "set maxLength greater than estimated maxLength",
            Box::new(array("number")),
            "self.all(x, x == 0.0)",
            6291454,
            3 * 1024 * 2048,
            25165826,
        ),
        (
            "nested types with root rule with all supporting maxLength",
            Box::new(nested_objects(true)),
            r#"self.all(x, x["y"].required == "z")"#,
            7340027,
            10,
            72,
        ),
        (
            "nested types with root rule with one supporting maxLength",
            Box::new(nested_objects(false)),
            r#"self.all(x, x["y"].required == "z")"#,
            7340027,
            10,
            7340027,
        ),
        (
            "int-or-string array with all",
            Box::new(array("int-or-string")),
            "self.all(x, true)",
            4718591,
            10,
            32,
        ),
        (
            "index of array with int-or-strings",
            Box::new(array("int-or-string")),
            "self[0] == 5",
            3,
            10,
            3,
        ),
        (
            "index of array with booleans",
            Box::new(array("boolean")),
            "self[0] == false",
            2,
            25,
            2,
        ),
        (
            "index of array of objects",
            Box::new(object_array),
            "self[0] == null",
            2,
            422,
            2,
        ),
        (
            "index of array of array of numbers",
            Box::new(array_of_arrays),
            "self[0][0] == -1.0",
            3,
            51,
            3,
        ),
        (
            "array of number maps with all",
            Box::new(map_array),
            "self.all(x, x.y == 25.2)",
            6291452,
            12,
            74,
        ),
        (
            "index of array of number maps",
            Box::new(map_array),
            "self[0].x > 2.0",
            4,
            3000,
            4,
        ),
        (
            "duration array with all",
            Box::new(array("duration")),
            "self.all(x, true)",
            2359295,
            5,
            17,
        ),
        (
            "index of duration array",
            Box::new(array("duration")),
            "self[0].getHours() == 2",
            4,
            525,
            4,
        ),
        (
            "date array with all",
            Box::new(array("date")),
            "self.all(x, true)",
            725936,
            15,
            47,
        ),
        (
            "index of date array",
            Box::new(array("date")),
            "self[2].getDayOfMonth() == 13",
            4,
            42,
            4,
        ),
        (
            "date-time array with all",
            Box::new(array("date-time")),
            "self.all(x, true)",
            428963,
            25,
            77,
        ),
        (
            "index of date-time array",
            Box::new(array("date-time")),
            "self[2].getMinutes() == 45",
            4,
            99,
            4,
        ),
        (
            "map of int-or-strings with all",
            Box::new(map("int-or-string")),
            "self.all(x, true)",
            1348169,
            15,
            47,
        ),
        (
            "map of objects with all",
            Box::new(map_of(object_item())),
            "self.all(x, true)",
            428963,
            20,
            62,
        ),
        (
            "map of number maps with all",
            Box::new(map_of(
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
            )),
            "self.all(x, true)",
            1179647,
            10,
            32,
        ),
        (
            "map of number arrays with all",
            Box::new(map_of(
                json!({"type": "array", "items": {"type": "number"}}),
            )),
            "self.all(x, true)",
            1179647,
            25,
            77,
        ),
    ]
}

/// upstream's `PerCallLimit`, which its "exceeds limit" cases are compared with.
const PER_CALL_LIMIT: u64 = 1_000_000;

#[test]
fn rule_costs_are_upstreams() {
    let mut wrong = Vec::new();
    for (name, schema, rule, unbounded, bound, bounded) in upstream_cases() {
        for (max, want) in [(None, unbounded), (Some(bound), bounded)] {
            let got = rule_max_cost(&schema(max), rule).unwrap_or_else(|e| panic!("{name}: {e}"));
            let ok = if want == u64::MAX {
                got >= PER_CALL_LIMIT
            } else {
                got == want
            };
            if !ok {
                wrong.push(format!("{name} (max {max:?}): got {got}, want {want}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
