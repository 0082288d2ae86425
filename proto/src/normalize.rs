//! JSON as upstream keeps it after decoding into its Go structs: what Go's `encoding/json`
//! leaves out of a struct it prints is left out here too. A member under `omitempty` at its
//! zero value (`""`, `0`, `false` for a non-pointer scalar; an empty list or map; `null`) is
//! dropped, at every depth the Go types reach. Only dropping is done:
//! the zero values Go would add for absent non-`omitempty` members are not (clients send
//! what they mean, and upstream's defaulting fills most of them).

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::LazyLock;

use crate::decode::is_zero_scalar;
use crate::schema::{Card, MsgId, Schema, Special, Ty, SCHEMA};
use crate::MAX_NESTING_DEPTH;

type Index = HashMap<&'static str, (MsgId, u16), foldhash::fast::RandomState>;

/// Per message, its fields by JSON key, inline fields' keys flattened in (the message that
/// declares each and its index there).
static BY_JSON: LazyLock<Vec<Index>> = LazyLock::new(|| {
    let s: &'static Schema = &SCHEMA;
    (0..s.messages.len())
        .map(|id| {
            let mut index = Index::default();
            flatten(s, id as MsgId, &mut index, 0);
            index
        })
        .collect()
});

fn flatten(s: &'static Schema, id: MsgId, index: &mut Index, depth: usize) {
    if depth > MAX_NESTING_DEPTH {
        return;
    }
    for (i, f) in s.msg(id).fields.iter().enumerate() {
        if f.inline {
            if let Ty::Message(inner) = f.ty {
                flatten(s, inner, index, depth + 1);
            }
        } else {
            index.entry(&*f.json).or_insert((id, i as u16));
        }
    }
}

/// Drops the members of `obj` (a built-in kind, by its `apiVersion` and `kind`) that Go would
/// not print. `metadata` is left alone (the server keeps its own rules there). Objects of
/// kinds without a Go type (custom resources) are left as they are. True when anything was
/// dropped.
pub fn drop_go_omitted(obj: &mut Value) -> bool {
    let s = &*SCHEMA;
    let Some(map) = obj.as_object_mut() else {
        return false;
    };
    let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("");
    let Some(id) = s.kind(text("apiVersion"), text("kind")) else {
        return false;
    };
    let mut changed = false;
    members(s, id, map, true, 0, &mut changed);
    changed
}

fn members(
    s: &Schema,
    id: MsgId,
    map: &mut Map<String, Value>,
    top: bool,
    depth: usize,
    changed: &mut bool,
) {
    if depth > MAX_NESTING_DEPTH {
        return;
    }
    let index = &BY_JSON[id as usize];
    map.retain(|key, v| {
        if top && key == "metadata" {
            return true;
        }
        let Some(&(owner, idx)) = index.get(key.as_str()) else {
            return true;
        };
        let field = &s.msg(owner).fields[idx as usize];
        if field.hidden {
            return true;
        }
        let keep = match (field.card, v) {
            // Go prints a nil pointer, list or map as `null` unless `omitempty`.
            (_, Value::Null) => !(field.omitempty || field.omitzero),
            (Card::Repeated, Value::Array(items)) => {
                if items.is_empty() && field.omitempty {
                    false
                } else {
                    if let Ty::Message(id) = field.ty {
                        for item in items.iter_mut() {
                            value(s, id, item, depth + 1, changed);
                        }
                    }
                    true
                }
            }
            (Card::Map(ty), Value::Object(entries)) => {
                if entries.is_empty() && field.omitempty {
                    false
                } else {
                    if let Ty::Message(id) = ty {
                        for item in entries.values_mut() {
                            value(s, id, item, depth + 1, changed);
                        }
                    }
                    true
                }
            }
            (Card::Single, v) => match field.ty {
                Ty::Scalar(_) => !(field.omitempty && !field.nilable && is_zero_scalar(v)),
                Ty::Message(id) => {
                    let m = s.msg(id);
                    if m.special == Special::Wrapper {
                        !(field.omitempty && v.as_array().is_some_and(Vec::is_empty))
                    } else {
                        value(s, id, v, depth + 1, changed);
                        true
                    }
                }
            },
            _ => true,
        };
        if !keep {
            *changed = true;
        }
        keep
    });
}

/// Recurses into a value of message `id` (plain messages only: the special ones keep their
/// own JSON form).
fn value(s: &Schema, id: MsgId, v: &mut Value, depth: usize, changed: &mut bool) {
    let m = s.msg(id);
    if m.special != Special::None {
        return;
    }
    if let Value::Object(map) = v {
        members(s, id, map, false, depth, changed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_what_go_leaves_out() {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {}}, "data": {}, "binaryData": null, "immutable": false});
        assert!(drop_go_omitted(&mut cm));
        // `immutable` is a pointer: false is a value; metadata is the server's.
        assert_eq!(
            cm,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {}}, "immutable": false})
        );

        let mut svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"name": "", "port": 80, "nodePort": 0, "protocol": "TCP"}],
                     "selector": {}, "clusterIP": "", "externalIPs": [], "sessionAffinityConfig": null,
                     "publishNotReadyAddresses": false}});
        assert!(drop_go_omitted(&mut svc));
        assert_eq!(
            svc["spec"],
            json!({"ports": [{"port": 80, "protocol": "TCP"}]})
        );

        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "args": [], "env": [{"name": "A", "value": ""}],
                                     "resources": {"limits": {}}, "ports": [{"containerPort": 80, "hostPort": 0}]}],
                     "nodeSelector": {}, "hostNetwork": false}});
        assert!(drop_go_omitted(&mut pod));
        assert_eq!(
            pod["spec"],
            json!({"containers": [{"name": "c", "image": "i", "env": [{"name": "A"}],
            "resources": {}, "ports": [{"containerPort": 80}]}]})
        );
    }

    #[test]
    fn leaves_what_go_prints_and_what_it_does_not_know() {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 0}]}],
                     "terminationGracePeriodSeconds": 0, "x-unknown": []}});
        let before = pod.clone();
        // containerPort has no omitempty; a pointer's zero is a value; unknown keys stay.
        assert!(!drop_go_omitted(&mut pod));
        assert_eq!(pod, before);
        let mut cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"a": ""}});
        assert!(!drop_go_omitted(&mut cr));
    }
}

/// The zero value of a built-in kind (by `apiVersion` and `kind`) as Go's `encoding/json`
/// prints an empty Go struct of it: structs always (Go's `omitempty` does not apply to
/// them), nil pointers, slices and maps as `null` unless `omitempty`, scalars unless
/// `omitempty`. Upstream's field manager compares a create against this object, so a
/// create's field set has no `.` member for a struct Go prints empty. `None` for kinds
/// without a Go type.
pub fn go_zero_value(api_version: &str, kind: &str) -> Option<Value> {
    let s = &*SCHEMA;
    let id = s.kind(api_version, kind)?;
    Some(Value::Object(zero_message(s, id, 0)))
}

fn zero_message(s: &Schema, id: MsgId, depth: usize) -> Map<String, Value> {
    let mut out = Map::new();
    if depth > MAX_NESTING_DEPTH {
        return out;
    }
    for f in &s.msg(id).fields {
        if f.hidden {
            continue;
        }
        if f.inline {
            if let Ty::Message(inner) = f.ty {
                out.extend(zero_message(s, inner, depth + 1));
            }
            continue;
        }
        if let Some(v) = zero_field(s, f, depth) {
            out.insert(f.json.to_string(), v);
        }
    }
    out
}

fn zero_field(s: &Schema, f: &crate::schema::Field, depth: usize) -> Option<Value> {
    use crate::schema::Scalar;
    if f.omitzero {
        return None;
    }
    if f.nilable || f.card != Card::Single {
        return (!f.omitempty).then_some(Value::Null);
    }
    match f.ty {
        Ty::Scalar(sc) => (!f.omitempty).then(|| match sc {
            Scalar::Bool => Value::Bool(false),
            Scalar::Int32 | Scalar::Int64 | Scalar::Double => Value::from(0),
            Scalar::String | Scalar::Bytes => Value::from(""),
        }),
        Ty::Message(m) => match s.msg(m).special {
            Special::None => Some(Value::Object(zero_message(s, m, depth + 1))),
            Special::Duration => Some(Value::from("0s")),
            Special::Quantity => Some(Value::from("0")),
            Special::IntOrString => Some(Value::from(0)),
            Special::Wrapper => (!f.omitempty).then_some(Value::Null),
            _ => Some(Value::Null),
        },
    }
}

#[cfg(test)]
mod zero_tests {
    use super::go_zero_value;
    use serde_json::json;

    /// What `json.Marshal(&appsv1.Deployment{})` prints (v1.36).
    #[test]
    fn deployment_zero_value_is_gos() {
        let z = go_zero_value("apps/v1", "Deployment").unwrap();
        assert_eq!(
            z,
            json!({"metadata": {}, "spec": {"selector": null, "template": {"metadata": {},
                "spec": {"containers": null}}, "strategy": {}}, "status": {}})
        );
    }
}
