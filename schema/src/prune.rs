//! Dropping undeclared fields from a decoded object, as the server does under
//! `fieldValidation=Ignore`/`Warn`.

use serde_json::Value;

use crate::compile::{Compiled, Kind, NodeId};

/// Remove every struct member the schema does not declare, recursively. Values of the wrong
/// type are left alone (`check` reports them).
pub(crate) fn run(compiled: &Compiled, node: NodeId, value: &mut Value) {
    match (&compiled.node(node).kind, value) {
        (Kind::Struct { fields, .. }, Value::Object(members)) => {
            members.retain(|key, _| fields.contains_key(key));
            for (key, member) in members.iter_mut() {
                run(compiled, fields[key].node, member);
            }
        }
        (Kind::Map { values }, Value::Object(members)) => {
            for member in members.values_mut() {
                run(compiled, *values, member);
            }
        }
        (Kind::Array { items }, Value::Array(elems)) => {
            for elem in elems {
                run(compiled, *items, elem);
            }
        }
        _ => {}
    }
}
