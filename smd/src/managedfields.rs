//! `metadata.managedFields` <-> [`Managers`], as upstream's managedfields encoding.
//!
//! Decoding checks each entry as upstream does (operation `Apply` or `Update`, a non-empty
//! apiVersion, `fieldsType: FieldsV1`, a parsable `fieldsV1`) and keys it by its manager
//! identity (see [`ManagerKey`]); a later entry with the same identity replaces an earlier
//! one. Encoding writes entries in upstream's order: by operation (`Apply` first), then time
//! (entries without one first), manager, apiVersion, subresource; members in the field order
//! of Go's `ManagedFieldsEntry`, empty ones omitted.
//!
//! [`cap_update_managers`] bounds the Update entries as upstream does after every Update:
//! past [`UPDATE_MANAGERS_MAX`], the oldest are folded into one `ancient-changes` entry per
//! API version.
//!
//! Not done: the `[{}]` reset of rule 15, which belongs to the caller's flow.

use crate::fieldpath::Set;
use crate::updater::{ManagedSet, ManagerKey, Managers, Operation};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Upstream's `DefaultMaxUpdateManagers`: Update entries kept before the oldest are folded.
pub const UPDATE_MANAGERS_MAX: usize = 10;

/// The manager name the folded Update entries take.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// The time of each manager's last operation (RFC 3339, as stored), when known.
pub type Times = BTreeMap<ManagerKey, String>;

/// A `metadata.managedFields` that cannot be decoded. Messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedFieldsError(pub String);

impl fmt::Display for ManagedFieldsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ManagedFieldsError {}

fn str_member<'v>(
    entry: &'v Map<String, Value>,
    name: &str,
) -> Result<&'v str, ManagedFieldsError> {
    match entry.get(name) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ManagedFieldsError(format!(
            "{name} must be a string, got {other}"
        ))),
    }
}

/// Decodes `metadata.managedFields` (a JSON array, or null/absent for none).
pub fn decode(entries: Option<&Value>) -> Result<(Managers, Times), ManagedFieldsError> {
    let mut managers = Managers::new();
    let mut times = Times::new();
    let list = match entries {
        None | Some(Value::Null) => return Ok((managers, times)),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(ManagedFieldsError("managedFields must be a list".into())),
    };
    for (i, entry) in list.iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(ManagedFieldsError(format!(
                "managed fields entry {i} must be an object"
            )));
        };
        let operation = match str_member(entry, "operation")? {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => {
                return Err(ManagedFieldsError(
                    "operation must be `Apply` or `Update`".into(),
                ))
            }
        };
        let api_version = str_member(entry, "apiVersion")?;
        if api_version.is_empty() {
            return Err(ManagedFieldsError("apiVersion must not be empty".into()));
        }
        match str_member(entry, "fieldsType")? {
            "FieldsV1" => {}
            "" => {
                return Err(ManagedFieldsError(format!(
                    "missing fieldsType in managed fields entry {i}"
                )))
            }
            other => {
                return Err(ManagedFieldsError(format!(
                    "invalid fieldsType \"{other}\" in managed fields entry {i}"
                )))
            }
        }
        let set = match entry.get("fieldsV1") {
            None | Some(Value::Null) => Set::new(),
            Some(v) => Set::from_fields_v1_value(v).map_err(|e| {
                ManagedFieldsError(format!(
                    "error decoding versioned set from entry {i}: error decoding set: {e}"
                ))
            })?,
        };
        let manager = str_member(entry, "manager")?.to_string();
        let subresource = str_member(entry, "subresource")?.to_string();
        let key = match operation {
            Operation::Apply => ManagerKey::apply(manager, subresource),
            Operation::Update => ManagerKey::update(manager, api_version, subresource),
        };
        let time = str_member(entry, "time")?;
        if time.is_empty() {
            times.remove(&key);
        } else {
            times.insert(key.clone(), time.to_string());
        }
        managers.insert(
            key,
            ManagedSet {
                set,
                api_version: api_version.to_string(),
            },
        );
    }
    Ok((managers, times))
}

/// Encodes managers as `metadata.managedFields` entries, in upstream's order.
pub fn encode(managers: &Managers, times: &Times) -> Vec<Value> {
    let mut entries: Vec<Value> = managers
        .iter()
        .map(|(key, set)| {
            entry(
                &key.manager,
                key.operation,
                &set.api_version,
                times.get(key).map(String::as_str),
                set.set.to_fields_v1_value(),
                &key.subresource,
            )
        })
        .collect();
    sort_entries(&mut entries);
    entries
}

/// One managedFields entry, members in the order of Go's `ManagedFieldsEntry`, empty
/// ones omitted (Go's `omitempty`).
pub fn entry(
    manager: &str,
    operation: Operation,
    api_version: &str,
    time: Option<&str>,
    fields: Value,
    subresource: &str,
) -> Value {
    let mut e = Map::new();
    if !manager.is_empty() {
        e.insert("manager".into(), Value::String(manager.to_string()));
    }
    e.insert("operation".into(), Value::String(operation.as_str().into()));
    if !api_version.is_empty() {
        e.insert("apiVersion".into(), Value::String(api_version.to_string()));
    }
    if let Some(t) = time {
        e.insert("time".into(), Value::String(t.to_string()));
    }
    e.insert("fieldsType".into(), Value::String("FieldsV1".into()));
    e.insert("fieldsV1".into(), fields);
    if !subresource.is_empty() {
        e.insert("subresource".into(), Value::String(subresource.to_string()));
    }
    Value::Object(e)
}

/// Sorts entries in upstream's order: by operation (`Apply` first), then time to the
/// second (entries without one first), manager, apiVersion, subresource.
pub fn sort_entries(entries: &mut [Value]) {
    let text = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    entries.sort_by_cached_key(|e| {
        let time = text(e, "time");
        (
            text(e, "operation"),
            time_seconds((!time.is_empty()).then_some(&time)).to_string(),
            text(e, "manager"),
            text(e, "apiVersion"),
            text(e, "subresource"),
        )
    });
}

/// Folds the oldest Update managers (by time, then identifier) until at most `max` Update
/// entries remain: per API version, the first old entry seen becomes the bucket
/// `ancient-changes` (Update, that version) and later ones are merged into it, the bucket
/// taking the time of the latest merged entry. Apply entries are never folded.
pub fn cap_update_managers(managers: &mut Managers, times: &mut Times, max: usize) {
    let mut updaters: Vec<ManagerKey> = managers
        .keys()
        .filter(|k| k.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= max {
        return;
    }
    updaters.sort_by(|a, b| {
        time_seconds(times.get(a))
            .cmp(time_seconds(times.get(b)))
            .then_with(|| a.identifier().cmp(&b.identifier()))
    });
    let mut first_of_version: BTreeMap<String, ManagerKey> = BTreeMap::new();
    let mut length = updaters.len();
    for key in updaters {
        if length <= max {
            break;
        }
        let Some(owned) = managers.get(&key).cloned() else {
            continue;
        };
        let version = owned.api_version.clone();
        let bucket = ManagerKey::update(ANCIENT_CHANGES, version.clone(), "");
        let Some(first) = first_of_version.get(&version).cloned() else {
            first_of_version.insert(version, key);
            continue;
        };
        if !managers.contains_key(&bucket) {
            if let Some(s) = managers.remove(&first) {
                managers.insert(bucket.clone(), s);
            }
            if let Some(t) = times.remove(&first) {
                times.insert(bucket.clone(), t);
            }
        }
        let merged = managers
            .get(&bucket)
            .map(|b| b.set.union(&owned.set))
            .unwrap_or(owned.set);
        managers.insert(
            bucket.clone(),
            ManagedSet {
                set: merged,
                api_version: owned.api_version,
            },
        );
        managers.remove(&key);
        match times.remove(&key) {
            Some(t) => times.insert(bucket, t),
            None => times.remove(&bucket),
        };
        length -= 1;
    }
}

/// Upstream sorts by whole seconds, entries without a time as 0. RFC 3339 times in UTC
/// (what the server writes) order as strings once fractions are cut; anything else sorts
/// by its text.
fn time_seconds(t: Option<&String>) -> &str {
    match t {
        None => "",
        Some(t) => t.split(['.', 'Z', '+']).next().unwrap_or(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_in_upstream_order() {
        let entries = json!([
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-02T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:replicas": {}}}, "subresource": "status"},
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-01-03T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}
        ]);
        let (managers, times) = decode(Some(&entries)).unwrap();
        assert_eq!(managers.len(), 3);
        let encoded = encode(&managers, &times);
        let want = json!([entries[1], entries[2], entries[0]]);
        assert_eq!(Value::Array(encoded.clone()), want);
        assert_eq!(
            serde_json::to_string(&encoded[0]).unwrap(),
            r#"{"manager":"kubectl","operation":"Apply","apiVersion":"apps/v1","time":"2026-01-03T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}"#
        );
    }

    #[test]
    fn oldest_updaters_fold_into_ancient_changes_per_version() {
        let mut managers = Managers::new();
        let mut times = Times::new();
        // Five updaters at v1 (t=1..5), one at v2 (t=0), one applier (never folded).
        for i in 1..=5 {
            let k = ManagerKey::update(format!("u{i}"), "v1", "");
            let set = Set::from_fields_v1(&format!(r#"{{"f:f{i}":{{}}}}"#)).unwrap();
            managers.insert(
                k.clone(),
                ManagedSet {
                    set,
                    api_version: "v1".into(),
                },
            );
            times.insert(k, format!("2026-01-01T00:00:0{i}Z"));
        }
        let old = ManagerKey::update("old", "v2", "");
        let set = Set::from_fields_v1(r#"{"f:g":{}}"#).unwrap();
        managers.insert(
            old.clone(),
            ManagedSet {
                set,
                api_version: "v2".into(),
            },
        );
        times.insert(old.clone(), "2026-01-01T00:00:00Z".into());
        let applier = ManagerKey::apply("a", "");
        let set = Set::from_fields_v1(r#"{"f:h":{}}"#).unwrap();
        managers.insert(
            applier.clone(),
            ManagedSet {
                set,
                api_version: "v1".into(),
            },
        );

        cap_update_managers(&mut managers, &mut times, 3);
        let bucket = ManagerKey::update(ANCIENT_CHANGES, "v1", "");
        // Oldest first: old (v2) is the first of its version and stays; u1 starts the v1
        // bucket and u2..u4 join it, until 3 Update entries remain (the bucket counts).
        let names: Vec<&str> = managers.keys().map(|k| k.manager.as_str()).collect();
        assert_eq!(names, ["a", "ancient-changes", "old", "u5"]);
        assert_eq!(
            managers[&bucket].set.to_fields_v1(),
            r#"{"f:f1":{},"f:f2":{},"f:f3":{},"f:f4":{}}"#
        );
        assert_eq!(times[&bucket], "2026-01-01T00:00:04Z");
        assert!(managers.contains_key(&applier));
    }

    #[test]
    fn bad_entries_are_refused_with_upstream_text() {
        let cases = [
            (
                json!([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
                "operation must be `Apply` or `Update`",
            ),
            (
                json!([{"operation": "Apply", "fieldsType": "FieldsV1"}]),
                "apiVersion must not be empty",
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1"}]),
                "missing fieldsType in managed fields entry 0",
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
                "invalid fieldsType \"FieldsV2\" in managed fields entry 0",
            ),
        ];
        for (entries, want) in cases {
            assert_eq!(decode(Some(&entries)).unwrap_err().0, want);
        }
        let bad_set = json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": 1}}]);
        assert!(decode(Some(&bad_set)).is_err());
    }
}
