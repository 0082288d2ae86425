//! Structural defaulting (upstream's `defaulting.Default`).
//!
//! A property's `default` fills it when it is absent or `null` and not nullable; an
//! `additionalProperties` or `items` default replaces non-nullable `null` values only. Defaults
//! are applied top-down, so a defaulted object is itself defaulted further.

use crate::compile::{Additional, Node};
use crate::limits;
use serde_json::Value;

fn non_nullable_null(x: Option<&Value>, s: &Node) -> bool {
    matches!(x, Some(Value::Null)) && !s.nullable
}

pub fn apply(x: &mut Value, s: &Node, depth: usize) {
    if depth > limits::VALUE_DEPTH_MAX || !s.defaults_below {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else { continue };
                let cur = m.get(k);
                if cur.is_none() || non_nullable_null(cur, prop) {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply(v, prop, depth + 1);
                } else if let Some(Additional::Schema(a)) = &s.additional {
                    if non_nullable_null(Some(v), a) {
                        if let Some(d) = &a.default {
                            *v = d.clone();
                        }
                    }
                    apply(v, a, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = s.items.as_deref() else {
                return;
            };
            for v in items.iter_mut() {
                if non_nullable_null(Some(v), item) {
                    if let Some(d) = &item.default {
                        *v = d.clone();
                    }
                }
                apply(v, item, depth + 1);
            }
        }
        _ => {}
    }
}
