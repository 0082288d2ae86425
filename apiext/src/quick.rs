//! A quick check that a value passes the schema's value validation, for the common case of a
//! valid object: one walk with no error bookkeeping, no match counting and no paths.
//!
//! It answers `true` only where the full validator ([`crate::validate`]) certainly reports
//! nothing; anything it does not cover (`anyOf`, `oneOf`, `allOf`, `not`, formats, patterns,
//! `multipleOf`, int-or-string, enums of other than strings, nulls, integral floats, nodes
//! with no or several types) answers `false`, and the full validator runs and words the
//! errors. It does not look at what the full validator leaves to others (list types,
//! embedded resources, CEL rules).

use crate::compile::{Additional, Node};
use crate::limits;
use keel_api::gofmt::Num;
use serde_json::Value;

/// The value types the quick check knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    Object,
}

/// The node's one type, when the quick check can take the node at all (kept on the node as
/// `quick_type` when it is compiled).
pub fn simple_type(n: &Node) -> Option<Type> {
    if !n.any_of.is_empty()
        || !n.one_of.is_empty()
        || !n.all_of.is_empty()
        || n.not.is_some()
        || !n.format.is_empty()
        || n.pattern.is_some()
        || n.multiple_of.is_some()
        || n.int_or_string
    {
        return None;
    }
    match n.types.as_slice() {
        [t] => match t.as_str() {
            "string" => Some(Type::String),
            "integer" => Some(Type::Integer),
            "number" => Some(Type::Number),
            "boolean" => Some(Type::Boolean),
            "array" => Some(Type::Array),
            "object" => Some(Type::Object),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `d` certainly passes `n`'s value validation (see the module's text).
pub fn surely_valid(n: &Node, d: &Value) -> bool {
    valid_at(n, d, 0)
}

fn valid_at(n: &Node, d: &Value, depth: usize) -> bool {
    if depth > limits::VALUE_DEPTH_MAX {
        return false;
    }
    let Some(t) = n.quick_type else {
        return false;
    };
    let enum_holds = n.enum_values.is_empty() || (t == Type::String && string_enum(n, d));
    if !enum_holds {
        return false;
    }
    match (t, d) {
        (Type::String, Value::String(s)) => {
            // A string has at most as many characters as bytes: short ones need no count.
            if n.min_length.is_none() && n.max_length.is_none_or(|max| s.len() as i64 <= max) {
                return true;
            }
            let len = s.chars().count() as i64;
            n.max_length.is_none_or(|max| len <= max) && n.min_length.is_none_or(|min| len >= min)
        }
        // An integer is compared with a bound as the full validator compares it: as integers
        // (the bound made one), for `number` nodes too.
        (Type::Integer | Type::Number, Value::Number(x)) => match Num::of(x) {
            Num::Int(i) => bounds_hold(n, |bound, exclusive, above| {
                int_bound_holds(i, bound, exclusive, above)
            }),
            Num::Float(f) if t == Type::Number => bounds_hold(n, |bound, exclusive, above| {
                within(f, bound, exclusive, above)
            }),
            Num::Float(_) => false,
        },
        (Type::Boolean, Value::Bool(_)) => true,
        (Type::Array, Value::Array(items)) => {
            let len = items.len() as i64;
            n.min_items.is_none_or(|min| len >= min)
                && n.max_items.is_none_or(|max| len <= max)
                && match n.items.as_deref() {
                    Some(item) => items.iter().all(|v| valid_at(item, v, depth + 1)),
                    None => true,
                }
        }
        (Type::Object, Value::Object(m)) => {
            let len = m.len() as i64;
            if n.min_properties.is_some_and(|min| len < min)
                || n.max_properties.is_some_and(|max| len > max)
                || !n.required.iter().all(|k| m.contains_key(k))
            {
                return false;
            }
            m.iter().all(|(k, v)| match n.properties.get(k) {
                Some(p) => valid_at(p, v, depth + 1),
                None => match &n.additional {
                    Some(Additional::Schema(a)) => valid_at(a, v, depth + 1),
                    Some(Additional::Bool(false)) => false,
                    Some(Additional::Bool(true)) | None => true,
                },
            })
        }
        _ => false,
    }
}

/// An enum of strings holding the string `d`.
fn string_enum(n: &Node, d: &Value) -> bool {
    let Value::String(s) = d else { return false };
    n.enum_values
        .iter()
        .any(|e| matches!(e, Value::String(x) if x == s))
}

/// `minimum` (`above`) and `maximum` each hold by `holds(bound, exclusive, above)`.
fn bounds_hold(n: &Node, holds: impl Fn(f64, bool, bool) -> bool) -> bool {
    n.minimum
        .is_none_or(|min| holds(min, n.exclusive_minimum, true))
        && n.maximum
            .is_none_or(|max| holds(max, n.exclusive_maximum, false))
}

/// An integer against an integral bound the full validator compares as integers; any other
/// bound is not decided here.
fn int_bound_holds(i: i64, bound: f64, exclusive: bool, above: bool) -> bool {
    // Integral and well inside i64: the full validator's range check of the bound passes
    // and it compares `i` with `bound as i64`.
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if bound.fract() != 0.0 || bound.abs() >= EXACT {
        return false;
    }
    within(i, bound as i64, exclusive, above)
}

/// `x` on the right side of a lower (`above`) or upper bound, the bound itself allowed
/// unless `exclusive`.
fn within<T: PartialOrd>(x: T, bound: T, exclusive: bool, above: bool) -> bool {
    match (above, exclusive) {
        (true, false) => x >= bound,
        (true, true) => x > bound,
        (false, false) => x <= bound,
        (false, true) => x < bound,
    }
}

#[cfg(test)]
mod tests {
    use super::surely_valid;
    use crate::validate::Validator;
    use crate::Schema;
    use rand::rngs::StdRng;
    use rand::{Rng as _, SeedableRng};
    use serde_json::{json, Value};

    /// A seeded generator: a failure reproduces.
    struct Rng(StdRng);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0.random_range(0..n)
        }
    }

    /// Values near the schemas' edges: small and bound-sized numbers, integral floats,
    /// strings around the lengths, the enum's members, nulls, lists and objects.
    fn value(r: &mut Rng, depth: usize) -> Value {
        let nums = [
            json!(0),
            json!(-1),
            json!(1),
            json!(2),
            json!(5),
            json!(6),
            json!(63),
            json!(64),
            json!(1.5),
            json!(2.0),
            json!(-1.5),
            json!(1e300),
            json!(i64::MAX),
            json!(-2),
            json!(u64::MAX),
        ];
        match r.below(if depth > 2 { 5 } else { 8 }) {
            0 => nums[r.below(nums.len() as u64) as usize].clone(),
            1 => {
                let words = [
                    "", "web", "api", "job", "Web", "ab", "abcde", "abcdef", "é", "ééé",
                ];
                Value::String(words[r.below(words.len() as u64) as usize].to_string())
            }
            2 => Value::Bool(r.below(2) == 0),
            3 => Value::Null,
            4 => Value::String("x".repeat(r.below(70) as usize)),
            5 | 6 => {
                let keys = ["a", "b", "n", "f", "tier", "tags", "sub", "m", "other"];
                let mut m = serde_json::Map::new();
                if depth == 0 {
                    // The required member, mostly.
                    m.insert("a".into(), nums[r.below(6) as usize].clone());
                }
                for _ in 0..r.below(4) {
                    let k = keys[r.below(keys.len() as u64) as usize];
                    m.insert(k.to_string(), value(r, depth + 1));
                }
                Value::Object(m)
            }
            _ => Value::Array((0..r.below(5)).map(|_| value(r, depth + 1)).collect()),
        }
    }

    fn schemas() -> Vec<Schema> {
        let object = json!({
            "type": "object",
            "required": ["a"],
            "minProperties": 1,
            "maxProperties": 8,
            "properties": {
                "a": {"type": "integer", "minimum": 0, "maximum": 5},
                "b": {"type": "integer", "minimum": 1, "exclusiveMinimum": true,
                      "maximum": 6, "exclusiveMaximum": true},
                "n": {"type": "number", "minimum": -1, "maximum": 2, "exclusiveMinimum": true},
                "f": {"type": "boolean"},
                "tier": {"type": "string", "enum": ["web", "api", "job"]},
                "tags": {"type": "array", "minItems": 1, "maxItems": 3,
                         "items": {"type": "string", "maxLength": 5, "minLength": 1}},
                "sub": {"type": "object", "additionalProperties": false,
                        "properties": {"a": {"type": "string"}, "n": {"type": "number"}}},
                "m": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 63}}
            }
        });
        let mixed = json!({
            "type": "object",
            "properties": {
                "z": {"type": "string", "pattern": "^a"},
                "b": {"type": "integer", "format": "int32"},
                "n": {"type": "number", "multipleOf": 0.5, "nullable": true},
                "f": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "tier": {"type": "string", "enum": ["web", 5]},
                "tags": {"x-kubernetes-int-or-string": true},
                "sub": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "other": {"type": "string", "format": "date-time"}
            }
        });
        vec![
            Schema::compile(&object).unwrap(),
            Schema::compile(&mixed).unwrap(),
        ]
    }

    #[test]
    fn a_surely_valid_value_has_no_errors() {
        let mut r = Rng(StdRng::seed_from_u64(0x9E37_79B9_7F4A_7C15));
        let mut sure = [0usize; 2];
        for (i, s) in schemas().iter().enumerate() {
            for _ in 0..20_000 {
                let v = value(&mut r, 0);
                if surely_valid(&s.root, &v) {
                    sure[i] += 1;
                    let errs = Validator { ratchet: false }.root(&s.root, &v, None);
                    assert!(errs.is_empty(), "quick check passed {v} but: {errs:?}");
                }
            }
        }
        // The generator reaches the quick path on both schemas, so the check above bites.
        assert!(sure.iter().all(|&n| n > 100), "{sure:?}");
    }

    #[test]
    fn common_valid_objects_take_the_quick_path() {
        let s = &schemas()[0];
        let v = json!({"a": 3, "b": 5, "n": 2, "f": true, "tier": "job",
                       "tags": ["x", "ééééé"], "sub": {"a": "s", "n": 1.5}, "m": {"k": 63}});
        assert!(surely_valid(&s.root, &v));
        for bad in [
            json!({"b": 2}),
            json!({"a": 6}),
            json!({"a": 1, "b": 1}),
            json!({"a": 1, "n": -1.5}),
            json!({"a": 1, "tier": "Web"}),
            json!({"a": 1, "tags": []}),
            json!({"a": 1, "tags": ["abcdef"]}),
            json!({"a": 1, "tags": ["a", "b", "c", "d"]}),
            json!({"a": 1, "sub": {"x": 1}}),
            json!({"a": 1, "m": {"k": 64}}),
            json!({"a": 2.0}),
            json!({"a": null}),
            json!({"a": 1, "b": 2, "n": 1, "f": true, "tier": "api", "tags": ["x"], "sub": {}, "m": {}, "other": 1}),
        ] {
            assert!(!surely_valid(&s.root, &bad), "{bad}");
        }
    }
}
