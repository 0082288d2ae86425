//! Field ownership (`metadata.managedFields`) and server-side apply, over keel-smd.
//!
//! Every create, update and patch records an `Update` entry for its manager
//! ([`record_update`], called from the registry's two write paths); an apply patch computes
//! its object with [`apply`]. The schemas come from keel-schema's published definitions,
//! converted once per kind and kept for the life of the process.
//!
//! What upstream's fieldmanager chain does around the updater and keel does here: the
//! manager's set loses the metadata identity fields (upstream's `stripMeta`), `status` is
//! ignored on writes of the object itself and `spec` on writes of `status` (reset fields),
//! only `managedFields: [{}]` resets tracking (spec rule 15: `[]` keeps it), Update entries
//! are capped at [`UPDATE_MANAGERS_MAX`](keel_smd::managedfields::UPDATE_MANAGERS_MAX).
//! The live object of a create (or of an apply that creates) is the type's zero value as Go
//! prints it (`keel_proto::go_zero_value`), as upstream's.

use keel_api::status::{ApiError, StatusCause};
use keel_smd::managedfields::{self, UPDATE_MANAGERS_MAX};
use keel_smd::schema::{Schema, TypeRef};
use keel_smd::updater::{ApplyError, ManagedSet, ManagerKey, Managers, Updater};
use keel_smd::{Path, PathElement, Set};
use parking_lot::RwLock;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

/// Upstream's `FieldManagerMaxLength`: manager names longer than this are refused (query) or
/// cut (derived from the User-Agent).
pub const FIELD_MANAGER_LENGTH_MAX: usize = 128;

/// The manager of writes by keel's own bootstrap and controllers (upstream's in-process
/// writers run inside kube-apiserver and take its User-Agent prefix).
pub const IN_PROCESS_MANAGER: &str = "kube-apiserver";

/// One kind's schema and root type.
pub struct TypeSchema {
    schema: Schema,
    root: TypeRef,
    has_status: bool,
}

/// The schema of a built-in kind (deduced, i.e. every map granular and every list atomic,
/// for kinds without a published definition: custom resources).
pub fn type_schema(group: &str, version: &str, kind: &str) -> Arc<TypeSchema> {
    static CACHE: OnceLock<RwLock<HashMap<String, Arc<TypeSchema>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = format!("{group}/{version}/{kind}");
    if let Some(s) = cache.read().get(&key) {
        return s.clone();
    }
    let built = Arc::new(build(group, version, kind));
    cache.write().entry(key).or_insert(built).clone()
}

fn build(group: &str, version: &str, kind: &str) -> TypeSchema {
    let all = keel_schema::schemas();
    let gvk = keel_schema::Gvk {
        group,
        version,
        kind,
    };
    let deduced = || TypeSchema {
        schema: Schema::deduced(),
        root: TypeRef::deduced(),
        has_status: true,
    };
    let Some(root) = all.definition_name(&gvk) else {
        return deduced();
    };
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    let mut defs: Vec<(String, Value)> = Vec::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(def) = all.definition(&name) else {
            continue;
        };
        collect_refs(def, &mut todo);
        let mut def = def.clone();
        add_defaults(&name, &mut def);
        defs.push((name, def));
    }
    let has_status = defs
        .iter()
        .find(|(n, _)| n == root)
        .is_some_and(|(_, d)| d.pointer("/properties/status").is_some());
    match keel_smd::openapi::schema_from_openapi(defs.iter().map(|(k, v)| (k.as_str(), v))) {
        Ok(schema) => TypeSchema {
            schema,
            root: TypeRef::named(root),
            has_status,
        },
        Err(_) => deduced(),
    }
}

/// The published v2 definitions carry no `default`s; list-map keys that upstream's models
/// default must have them (a port's `protocol: TCP`).
fn add_defaults(name: &str, def: &mut Value) {
    let ports = [
        "io.k8s.api.core.v1.ContainerPort",
        "io.k8s.api.core.v1.ServicePort",
        "io.k8s.api.core.v1.EndpointPort",
        "io.k8s.api.discovery.v1.EndpointPort",
    ];
    if ports.contains(&name) {
        if let Some(p) = def.pointer_mut("/properties/protocol") {
            p["default"] = json!("TCP");
        }
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r.rsplit('/').next().unwrap_or_default().to_string());
            }
            m.values().for_each(|c| collect_refs(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

/// The manager of a request: the `fieldManager` query value (checked), else the
/// User-Agent's text before its first `/`, printable characters only, at most 128 bytes
/// (upstream's `prefixFromUserAgent`).
pub fn request_manager(query: Option<&str>, user_agent: Option<&str>) -> Result<String, ApiError> {
    if let Some(m) = query {
        validate_manager(m)?;
        return Ok(m.to_string());
    }
    let prefix = user_agent.unwrap_or("").split('/').next().unwrap_or("");
    let mut out = String::new();
    for ch in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + ch.len_utf8() > FIELD_MANAGER_LENGTH_MAX {
            break;
        }
        out.push(ch);
    }
    Ok(out)
}

/// Upstream's `ValidateFieldManager`.
pub fn validate_manager(m: &str) -> Result<(), ApiError> {
    let cause = if m.len() > FIELD_MANAGER_LENGTH_MAX {
        Some(keel_api::status::field::invalid_str(
            "fieldManager",
            m,
            "may not be more than 128 bytes",
        ))
    } else if m.chars().any(|c| c.is_control()) {
        Some(keel_api::status::field::invalid_str(
            "fieldManager",
            m,
            "invalid characters",
        ))
    } else {
        None
    };
    match cause {
        None => Ok(()),
        Some(c) => Err(unprocessable(vec![c])),
    }
}

fn unprocessable(causes: Vec<StatusCause>) -> ApiError {
    let mut e = ApiError::unprocessable_generic();
    e.message = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect::<Vec<_>>()
        .join(", ");
    e.causes = causes;
    e
}

/// What one write is, for tracking.
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    /// `""`, `status`, `scale`, ...
    pub subresource: &'a str,
    /// The manager (`None`: keel's own writes).
    pub manager: Option<&'a str>,
}

impl Write<'_> {
    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn manager(&self) -> &str {
        self.manager.unwrap_or(IN_PROCESS_MANAGER)
    }

    /// Fields this write never takes: the other half of the object (upstream's reset
    /// fields of the status strategies).
    fn ignored(&self, ts: &TypeSchema) -> Set {
        let path = match self.subresource {
            "" if ts.has_status => "status",
            "status" => "spec",
            _ => return Set::new(),
        };
        Set::from_paths([Path(vec![PathElement::field(path)])])
    }
}

/// The live object of a create: the type's zero value as Go prints it (`{}` for kinds
/// without a Go type).
fn zero_value(w: &Write<'_>) -> Value {
    // Built once per kind: a Pod's walks hundreds of message fields.
    static CACHE: OnceLock<RwLock<HashMap<String, Value>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let api_version = w.api_version();
    let key = format!("{api_version}/{}", w.kind);
    if let Some(v) = cache.read().get(&key) {
        return v.clone();
    }
    let v = keel_proto::go_zero_value(&api_version, w.kind).unwrap_or_else(|| json!({}));
    cache.write().insert(key, v.clone());
    v
}

/// Upstream's `stripSet`: members dropped from the writer's own set (not their children).
fn strip_set() -> &'static Set {
    static STRIP: OnceLock<Set> = OnceLock::new();
    STRIP.get_or_init(|| {
        let mut s = Set::new();
        for p in [&["apiVersion"][..], &["kind"], &["metadata"]] {
            s.insert(&Path::fields(p).0);
        }
        for f in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            s.insert(&Path::fields(&["metadata", f]).0);
        }
        s
    })
}

/// `managedFields` of an object, taken out of it (`None` when absent).
fn take_managed(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")?
        .as_object_mut()?
        .shift_remove("managedFields")
}

fn put_managed(obj: &mut Value, entries: Vec<Value>) {
    let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        m.shift_remove("managedFields");
    } else {
        m.insert("managedFields".into(), Value::Array(entries));
    }
}

/// Whether a written `managedFields` asks for a reset: exactly `[{}]` (rule 15).
fn is_reset(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Array(a)) if a.len() == 1 && a[0].as_object().is_some_and(|o| o.is_empty()))
}

/// Records `w`'s Update that turns `live` (`None`: a create) into `new`, setting `new`'s
/// `metadata.managedFields`. Objects that do not fit their schema keep the entries they
/// had (as upstream's `UpdateNoErrors`, tracking never fails a write).
pub fn record_update(w: &Write<'_>, live: Option<&Value>, new: &mut Value, now: &str) {
    let written = take_managed(new);
    if is_reset(written.as_ref()) {
        return;
    }
    let mut live_obj = live.cloned().unwrap_or_else(|| zero_value(w));
    let live_managed = take_managed(&mut live_obj);
    // The written entries if they decode and are not empty, else the live object's (a
    // client unaware of managedFields does not drop them).
    let from_written = written
        .as_ref()
        .and_then(|v| managedfields::decode(Some(v)).ok())
        .filter(|(m, _)| !m.is_empty());
    let (managers, mut times) = match from_written {
        Some(d) => d,
        None => managedfields::decode(live_managed.as_ref()).unwrap_or_default(),
    };
    let ts = type_schema(w.group, w.version, w.kind);
    let ignored = w.ignored(&ts);
    let updater = Updater::new(&ts.schema, &ts.root).with_ignored(&ignored);
    let api_version = w.api_version();
    let key = ManagerKey::update(w.manager(), api_version.clone(), w.subresource);
    let restore = |new: &mut Value, v: Option<Value>| {
        if let Some(v) = v {
            if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("managedFields".into(), v);
            }
        }
    };
    // As upstream's managedFieldsUpdater: the write's changes are taken by a stand-in
    // manager, stripped, then merged into the writer's entry, whose time moves only when
    // the write took something.
    let current = ManagerKey::update(CURRENT_OPERATION, api_version.clone(), w.subresource);
    let Ok(mut managers) = updater.update(&live_obj, new, &api_version, managers, &current) else {
        restore(new, live_managed);
        return;
    };
    if let Some(took) = managers.remove(&current) {
        let set = took.set.difference(strip_set());
        if !set.is_empty() {
            let set = match managers.get(&key) {
                Some(previous) => set.union(&previous.set),
                None => set,
            };
            managers.insert(key.clone(), ManagedSet { set, api_version });
            times.insert(key, now.to_string());
        }
    }
    times.retain(|k, _| managers.contains_key(k));
    managedfields::cap_update_managers(&mut managers, &mut times, UPDATE_MANAGERS_MAX);
    put_managed(new, managedfields::encode(&managers, &times));
}

/// The stand-in manager of an Update's own changes (upstream's `current-operation`).
const CURRENT_OPERATION: &str = "current-operation";

/// Strips the writer's set, stamps its time, caps the Update entries.
fn finish(managers: &mut Managers, times: &mut managedfields::Times, key: &ManagerKey, now: &str) {
    if let Some(owned) = managers.get_mut(key) {
        owned.set = owned.set.difference(strip_set());
        if owned.set.is_empty() {
            managers.remove(key);
            times.remove(key);
        } else {
            times.insert(key.clone(), now.to_string());
        }
    }
    times.retain(|k, _| managers.contains_key(k));
    managedfields::cap_update_managers(managers, times, UPDATE_MANAGERS_MAX);
}

/// An apply request.
pub struct Apply<'a> {
    pub write: Write<'a>,
    pub force: bool,
}

/// The object `config` applied by `a` to `live` (`None`: the apply creates it), with its
/// managedFields, or the conflicts (409) / errors (500 as upstream's failed conversions).
pub fn apply(
    a: &Apply<'_>,
    live: Option<&Value>,
    config: &Value,
    now: &str,
) -> Result<Value, ApiError> {
    let w = &a.write;
    let mut live_obj = live.cloned().unwrap_or_else(|| zero_value(w));
    let live_managed = take_managed(&mut live_obj);
    let (managers, mut times) = managedfields::decode(live_managed.as_ref()).unwrap_or_default();
    let ts = type_schema(w.group, w.version, w.kind);
    let ignored = w.ignored(&ts);
    let updater = Updater::new(&ts.schema, &ts.root).with_ignored(&ignored);
    let api_version = w.api_version();
    let key = ManagerKey::apply(w.manager(), w.subresource);
    let applied = updater
        .apply(&live_obj, config, &api_version, managers, &key, a.force)
        .map_err(|e| match e {
            ApplyError::Conflicts(c) => conflict_error(&c),
            other => ApiError::internal(format!("failed to apply: {other}")),
        })?;
    let mut managers = applied.managers;
    let mut object = applied.object;
    finish(&mut managers, &mut times, &key, now);
    // An apply that changed nothing keeps its entry's time, or has none (upstream stamps
    // the time only when the object changed). So does any apply to `scale`: upstream's
    // ScaleHandler carries only the parent's earlier times back.
    if !applied.changed || w.subresource == "scale" {
        let old_time = managedfields::decode(live_managed.as_ref())
            .ok()
            .and_then(|(_, old_times)| old_times.get(&key).cloned());
        match old_time {
            Some(t) => times.insert(key.clone(), t),
            None => times.remove(&key),
        };
    }
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    put_managed(&mut object, managedfields::encode(&managers, &times));
    Ok(object)
}

fn conflict_error(c: &keel_smd::updater::Conflicts) -> ApiError {
    let status = c.to_status();
    let causes = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: v["message"].as_str().unwrap_or("").into(),
            field: v["field"].as_str().unwrap_or("").into(),
        })
        .collect();
    let mut e = ApiError::unknown(409, c.message());
    e.reason = "Conflict";
    e.causes = causes;
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm_write(manager: &str) -> Write<'_> {
        Write {
            group: "",
            version: "v1",
            kind: "ConfigMap",
            subresource: "",
            manager: Some(manager),
        }
    }

    /// `kubectl create configmap a --from-literal=k=v` then `kubectl label`, as v1.36.2
    /// records them.
    #[test]
    fn create_then_label_match_upstream() {
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "n", "uid": "u", "creationTimestamp": "t"},
            "data": {"k": "v"}});
        record_update(&cm_write("kubectl-create"), None, &mut obj, "T1");
        assert_eq!(
            obj["metadata"]["managedFields"],
            json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                "time": "T1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:k": {}}}}])
        );
        let live = obj.clone();
        obj["metadata"]["labels"] = json!({"x": "y"});
        record_update(&cm_write("kubectl-label"), Some(&live), &mut obj, "T2");
        let mf = obj["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf.len(), 2);
        assert_eq!(mf[1]["manager"], "kubectl-label");
        assert_eq!(
            mf[1]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
        );
    }

    /// An object with nothing but identity gets no entry (its set is all stripped).
    #[test]
    fn empty_create_has_no_entry() {
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "n"}});
        record_update(&cm_write("m"), None, &mut obj, "T");
        assert!(obj["metadata"].get("managedFields").is_none());
    }

    /// Rule 15: `[{}]` resets, `[]` keeps the live entries.
    #[test]
    fn only_list_of_one_empty_entry_resets() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"k": "v"}});
        record_update(&cm_write("a"), None, &mut live, "T");
        let mut new = live.clone();
        new["metadata"]["managedFields"] = json!([{}]);
        record_update(&cm_write("b"), Some(&live), &mut new, "T");
        assert!(new["metadata"].get("managedFields").is_none());
        let mut new = live.clone();
        new["metadata"]["managedFields"] = json!([]);
        record_update(&cm_write("b"), Some(&live), &mut new, "T");
        assert_eq!(new["metadata"]["managedFields"][0]["manager"], "a");
    }

    #[test]
    fn manager_from_user_agent() {
        let ua = "kubectl/v1.36.2 (linux/amd64) kubernetes/abc";
        assert_eq!(request_manager(None, Some(ua)).unwrap(), "kubectl");
        assert_eq!(request_manager(None, None).unwrap(), "");
        let long = "x".repeat(300);
        assert_eq!(request_manager(None, Some(&long)).unwrap().len(), 128);
        assert_eq!(request_manager(Some("me"), Some(ua)).unwrap(), "me");
        assert_eq!(request_manager(Some(&long), None).unwrap_err().code, 422);
    }

    #[test]
    fn second_applier_conflicts_with_upstream_text() {
        let w = |m| Apply {
            write: cm_write(m),
            force: false,
        };
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"k": "v"}});
        let obj = apply(&w("alice"), None, &cfg, "T").unwrap();
        let cfg2 = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"k": "w"}});
        let err = apply(&w("bob"), Some(&obj), &cfg2, "T").unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            r#"Apply failed with 1 conflict: conflict with "alice": .data.k"#
        );
        assert_eq!(err.causes[0].reason, "FieldManagerConflict");
    }
}
