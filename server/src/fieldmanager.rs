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
//!
//! Cost: upstream decodes every manager's set, walks both objects and encodes every set
//! again on each write. keel does that only where it must (entries a client wrote, a new
//! Update entry past the cap, a conflict to report, fields to prune) and otherwise:
//! - compares the live and new objects once, skipping equal subtrees and ignored fields;
//!   an update that changes nothing tracked keeps the stored entries as they are;
//! - edits the stored entries' FieldsV1 in place where the changes fall, for updates and
//!   applies ([`keel_smd::fieldsv1::remove_from_fields_v1`] and its siblings);
//! - builds a create's entry in one walk ([`keel_smd::typed::changed_fields_v1`]) and an
//!   applied configuration's from its field set, both remembered per core by the object's
//!   shape ([`keel_smd::typed::shape_signature`], at most [`CREATE_SHAPES_MAX`]): a
//!   template's objects share one.
//!
//! Tests check each of these against the general path (random sequences of writes), and
//! `cargo run --release -p keel-server --example fieldmanager_cost` measures them.

use crate::objects;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::{ApiError, StatusCause};
use keel_smd::managedfields::{self, UPDATE_MANAGERS_MAX};
use keel_smd::schema::{Schema, TypeRef};
use keel_smd::updater::{ApplyError, ManagedSet, ManagerKey, Managers, Operation, Updater};
use keel_smd::{Path, Set};
use parking_lot::RwLock;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
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
    let mut defs = Vec::new();
    published_definitions(root, &mut defs);
    let has_status = defs
        .iter()
        .find(|(n, _)| n == root)
        .is_some_and(|(_, d)| d.at("/properties/status").is_some());
    match keel_smd::openapi::schema_from_openapi(defs.iter().map(|(k, v)| (k.as_str(), v))) {
        Ok(schema) => TypeSchema {
            schema,
            root: TypeRef::named(root),
            has_status,
        },
        Err(_) => deduced(),
    }
}

/// Name of a custom resource's root type in its converted schema.
const CUSTOM_ROOT: &str = "keel.custom.Root";

/// The converted schema of a custom resource version, by its definition's schema (the
/// `Arc` the served routes share): kept while that schema is served, at most
/// `CUSTOM_TYPE_SCHEMAS_MAX` at once (entries whose schema is no longer served go first).
fn custom_type_schema(schema: &Arc<Value>, status_subresource: bool) -> Arc<TypeSchema> {
    type Entry = (std::sync::Weak<Value>, Arc<TypeSchema>);
    static CACHE: OnceLock<RwLock<HashMap<usize, Entry>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    // The key is the schema's address; the entry's `Weak` keeps that address from being
    // reused by another schema while the entry exists.
    let key = Arc::as_ptr(schema) as usize;
    if let Some((weak, ts)) = cache.read().get(&key) {
        if weak.upgrade().is_some_and(|s| Arc::ptr_eq(&s, schema)) {
            return ts.clone();
        }
    }
    let built = Arc::new(build_custom(schema, status_subresource));
    let mut w = cache.write();
    if w.len() >= crate::limits::CUSTOM_TYPE_SCHEMAS_MAX {
        w.retain(|_, (weak, _)| weak.strong_count() > 0);
        if w.len() >= crate::limits::CUSTOM_TYPE_SCHEMAS_MAX {
            w.clear();
        }
    }
    w.insert(key, (Arc::downgrade(schema), built.clone()));
    built
}

/// A custom resource's schema as upstream's type converter sees it: the version's
/// `openAPIV3Schema` with `apiVersion`, `kind` and a typed `metadata` (ObjectMeta and what
/// it refers to, from the published definitions). Without a usable schema: deduced.
fn build_custom(schema: &Value, status_subresource: bool) -> TypeSchema {
    const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    let deduced = || TypeSchema {
        schema: Schema::deduced(),
        root: TypeRef::deduced(),
        has_status: status_subresource,
    };
    let Some(root) = schema.as_object() else {
        return deduced();
    };
    let mut root = root.clone();
    let props = root.entry("properties").or_insert_with(|| json!({}));
    if let Some(props) = props.as_object_mut() {
        props.insert("apiVersion".into(), json!({"type": "string"}));
        props.insert("kind".into(), json!({"type": "string"}));
        props.insert(
            "metadata".into(),
            json!({"$ref": format!("#/definitions/{OBJECT_META}")}),
        );
    }
    let mut defs: Vec<(String, Value)> = vec![(CUSTOM_ROOT.to_owned(), Value::Object(root))];
    published_definitions(OBJECT_META, &mut defs);
    match keel_smd::openapi::schema_from_openapi(defs.iter().map(|(k, v)| (k.as_str(), v))) {
        Ok(schema) => TypeSchema {
            schema,
            root: TypeRef::named(CUSTOM_ROOT),
            has_status: status_subresource,
        },
        Err(_) => deduced(),
    }
}

/// Appends the published definition `root` and every one it refers to (with the defaults
/// [`add_defaults`] gives them).
fn published_definitions(root: &str, defs: &mut Vec<(String, Value)>) {
    let all = keel_schema::schemas();
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(def) = all.definition(&name) else {
            continue;
        };
        keel_smd::openapi::collect_refs(def, &mut todo);
        let mut def = def.clone();
        add_defaults(&name, &mut def);
        defs.push((name, def));
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
        if let Some(p) = def.at_mut("/properties/protocol") {
            p["default"] = json!("TCP");
        }
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
    /// A custom resource's definition: its schema's markers drive the merge.
    pub custom: Option<&'a crate::custom::Custom>,
}

impl Write<'_> {
    /// The schema the write is merged and tracked by: a custom resource's from its
    /// definition, a built-in kind's from the published definitions.
    fn type_schema(&self) -> Arc<TypeSchema> {
        match self.custom {
            Some(c) => custom_type_schema(&c.schema, c.status),
            None => per_core_kind(self).0,
        }
    }

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

    /// Fields this write neither takes nor changes for anyone: the other half of the object
    /// (upstream's reset fields of the status strategies), the metadata identity leaves
    /// upstream strips from every set, and `managedFields` itself. Comparisons skip them.
    fn ignored(&self, ts: &TypeSchema) -> &'static Set {
        static SETS: OnceLock<[Set; 3]> = OnceLock::new();
        let sets = SETS.get_or_init(|| {
            let with = |top: Option<&str>| {
                let mut s = Set::new();
                for p in [&["apiVersion"][..], &["kind"]] {
                    s.insert(&Path::fields(p).0);
                }
                for f in STRIPPED_META {
                    s.insert(&Path::fields(&["metadata", f]).0);
                }
                if let Some(top) = top {
                    s.insert(&Path::fields(&[top]).0);
                }
                s
            };
            [with(Some("status")), with(Some("spec")), with(None)]
        });
        match self.subresource {
            "" if ts.has_status => &sets[0],
            "status" => &sets[1],
            _ => &sets[2],
        }
    }
}

/// The metadata members upstream's `stripSet` drops from every manager's set.
const STRIPPED_META: [&str; 9] = [
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// The live object of a create: the type's zero value as Go prints it (`{}` for kinds
/// without a Go type).
fn zero_value(w: &Write<'_>) -> &'static Value {
    // Built once per kind (a Pod's walks hundreds of message fields) and kept for the life
    // of the process: one per built-in kind with a Go type, one `{}` for every other kind.
    static CACHE: OnceLock<RwLock<HashMap<String, &'static Value>>> = OnceLock::new();
    static EMPTY: OnceLock<Value> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let api_version = w.api_version();
    let key = format!("{api_version}/{}", w.kind);
    if let Some(v) = cache.read().get(&key) {
        return v;
    }
    let v: &'static Value = match keel_proto::go_zero_value(&api_version, w.kind) {
        Some(v) => Box::leak(Box::new(v)),
        None => EMPTY.get_or_init(|| json!({})),
    };
    cache.write().insert(key, v);
    v
}

/// The live object of a write: the stored one, or the type's zero value for a create.
fn live_or_zero<'v>(w: &Write<'_>, live: Option<&'v Value>) -> &'v Value {
    live.unwrap_or_else(|| match w.custom {
        Some(_) => zero_value(w),
        None => per_core_kind(w).1,
    })
}

/// A built-in kind's schema and zero value, as [`type_schema`] and [`zero_value`] give them.
type KindInfo = (Arc<TypeSchema>, &'static Value);

/// At most this many built-in kinds' schemas each core keeps at hand (past it, it forgets
/// them all): there are about a hundred.
const KINDS_PER_CORE_MAX: usize = 512;

thread_local! {
    /// Per core: a key buffer and the kinds written lately, so that a write formats no key
    /// and takes no lock shared with the other cores to find its schema.
    static KINDS: std::cell::RefCell<(String, HashMap<String, KindInfo, foldhash::fast::FixedState>)> =
        Default::default();
}

/// [`KindInfo`] of a built-in kind's write, from the core's cache.
fn per_core_kind(w: &Write<'_>) -> KindInfo {
    KINDS.with(|cell| {
        let mut cell = cell.borrow_mut();
        let (key, kinds) = &mut *cell;
        key.clear();
        for part in [w.group, w.version, w.kind] {
            key.push_str(part);
            key.push('\u{0}');
        }
        if let Some(info) = kinds.get(key.as_str()) {
            return info.clone();
        }
        let info = (type_schema(w.group, w.version, w.kind), zero_value(w));
        if kinds.len() >= KINDS_PER_CORE_MAX {
            kinds.clear();
        }
        kinds.insert(key.clone(), info.clone());
        info
    })
}

/// Upstream's `stripSet`: members dropped from the writer's own set (not their children).
fn strip_set() -> &'static Set {
    static STRIP: OnceLock<Set> = OnceLock::new();
    STRIP.get_or_init(|| {
        let mut s = Set::new();
        for p in [&["apiVersion"][..], &["kind"], &["metadata"]] {
            s.insert(&Path::fields(p).0);
        }
        for f in STRIPPED_META {
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
///
/// Cheap when little changes: the objects are compared first (equal subtrees are not
/// walked, ignored fields never), and when nothing tracked changed the stored entries stay
/// as they are without being decoded. Entries read back from storage were computed with
/// the same schema, so only entries a client wrote are reconciled with it.
pub fn record_update(w: &Write<'_>, live: Option<&Value>, new: &mut Value, now: &str) {
    let live_managed = live
        .and_then(|l| l.get("metadata"))
        .and_then(|m| m.get("managedFields"))
        .map(Cow::Borrowed);
    record(w, live, live_managed, new, now, true, false)
}

/// [`record_update`] of an update whose live object's `managedFields` the caller took out
/// of it (`live_managed`): they become the new object's, edited, without being copied.
pub fn record_update_taken(
    w: &Write<'_>,
    live: &Value,
    live_managed: Option<Value>,
    new: &mut Value,
    now: &str,
) {
    record(
        w,
        Some(live),
        live_managed.map(Cow::Owned),
        new,
        now,
        true,
        false,
    )
}

/// [`record_update`] of a create whose object goes from here to storage's encoder
/// ([`objects::to_canonical_json`]) and nowhere else: the entry's FieldsV1 may be put in
/// as JSON text ([`objects::raw_json`]), so that a Pod's fields, the same for every Pod
/// of a template, are not copied as a tree, written value by value and freed on every
/// create. Only the encoder reads such an entry: nothing may track the object again.
pub fn record_new(w: &Write<'_>, new: &mut Value, now: &str) {
    record(w, None, None, new, now, true, true)
}

/// [`record_update`]; `direct`: a create takes [`record_create`]'s path and an update of
/// stored entries [`edit_entries`]' (tests compare them with the general path); `raw`: as
/// [`record_new`]. `live_managed`: the live object's `managedFields` (owned where the caller
/// took them out of `live`).
fn record(
    w: &Write<'_>,
    live: Option<&Value>,
    live_managed: Option<Cow<'_, Value>>,
    new: &mut Value,
    now: &str,
    direct: bool,
    raw: bool,
) {
    let written = take_managed(new);
    if is_reset(written.as_ref()) {
        return;
    }
    // The written entries if they decode and are not empty, else the live object's (a
    // client unaware of managedFields does not drop them). Entries echoed unchanged are
    // the live ones.
    let from_written = written
        .as_ref()
        .filter(|v| !live_managed.as_deref().is_some_and(|l| entries_equal(v, l)))
        .and_then(|v| managedfields::decode(Some(v)).ok())
        .filter(|(m, _)| !m.is_empty());
    let ts = w.type_schema();
    let mut updater = Updater::new(&ts.schema, &ts.root).with_ignored(w.ignored(&ts));
    let live_obj = live_or_zero(w, live);
    let mut live_managed = live_managed;
    if direct && live.is_some() && from_written.is_none() {
        if let Some(Value::Array(entries)) = live_managed.take().map(Cow::into_owned) {
            match owned_values_update(w, &ts, live_obj, entries, new, now) {
                Ok(entries) => return put_managed(new, entries),
                Err(entries) => live_managed = Some(Cow::Owned(Value::Array(entries))),
            }
        }
    }
    // From here on the entries' fields are read: those kept as text are parsed.
    if let Some(l) = live_managed.as_mut().filter(|l| objects::has_raw(l)) {
        objects::materialize(l.to_mut());
    }
    let restore = |new: &mut Value, live_managed: Option<Cow<'_, Value>>| {
        if let Some(v) = live_managed {
            if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("managedFields".into(), v.into_owned());
            }
        }
    };
    if direct && live.is_none() && from_written.is_none() {
        if let Some(done) = record_create(w, &ts, live_obj, new, now, raw) {
            return done;
        }
    }
    let Ok(cmp) = updater.compare(live_obj, new) else {
        return restore(new, live_managed);
    };
    // (`live_managed` is what a failed update puts back: the entries as stored.)
    let (managers, mut times) = match from_written {
        Some(d) => d,
        None if cmp.is_same() => return restore(new, live_managed),
        None if direct && live.is_some() => {
            // The stored entries, edited where the changes fall (the written copy when it
            // is theirs, else the live ones, copied unless they were taken).
            let entries = match written {
                Some(Value::Array(a))
                    if live_managed
                        .as_deref()
                        .is_some_and(|l| l.as_array() == Some(&a)) =>
                {
                    a
                }
                _ => match live_managed.take().map(Cow::into_owned) {
                    Some(Value::Array(a)) => a,
                    other => {
                        live_managed = other.map(Cow::Owned);
                        Vec::new()
                    }
                },
            };
            updater = updater.without_reconcile();
            match edit_entries(w, entries, &cmp, now) {
                Edited::Done(entries) => {
                    put_managed(new, entries);
                    return;
                }
                Edited::Unedited(entries) => {
                    let entries = Value::Array(entries);
                    let decoded = managedfields::decode(Some(&entries)).unwrap_or_default();
                    live_managed.get_or_insert(Cow::Owned(entries));
                    decoded
                }
                // As decoding them would, the general path drops entries whose FieldsV1 is
                // not one (half edited by now: a failed update then puts back none).
                Edited::Malformed => Default::default(),
            }
        }
        None => {
            updater = updater.without_reconcile();
            managedfields::decode(live_managed.as_deref()).unwrap_or_default()
        }
    };
    let api_version = w.api_version();
    let key = ManagerKey::update(w.manager(), api_version.clone(), w.subresource);
    // As upstream's managedFieldsUpdater: the write's changes are taken by a stand-in
    // manager, stripped, then merged into the writer's entry, whose time moves only when
    // the write took something.
    let current = ManagerKey::update(CURRENT_OPERATION, api_version.clone(), w.subresource);
    let Ok(mut managers) = updater.update_compared(cmp, &api_version, managers, &current) else {
        return restore(new, live_managed);
    };
    if let Some(took) = managers.remove(&current) {
        let mut set = took.set;
        set.remove(strip_set());
        if !set.is_empty() {
            if let Some(previous) = managers.get(&key) {
                set.union_with(&previous.set);
            }
            managers.insert(key.clone(), ManagedSet { set, api_version });
            times.insert(key, now.to_string());
        }
    }
    times.retain(|k, _| managers.contains_key(k));
    managedfields::cap_update_managers(&mut managers, &mut times, UPDATE_MANAGERS_MAX);
    put_managed(new, managedfields::encode(&managers, &times));
}

/// A stored entry's identity, when it is one the decoder accepts as it is (operation
/// `Apply` or `Update`, an apiVersion, `fieldsType: FieldsV1`).
struct EntryId<'e> {
    operation: &'e str,
    manager: &'e str,
    api_version: &'e str,
    subresource: &'e str,
}

impl<'e> EntryId<'e> {
    fn of(e: &'e Value) -> Option<EntryId<'e>> {
        let text = |k: &str| match e.get(k) {
            None => Some(""),
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => None,
        };
        let id = EntryId {
            operation: text("operation")?,
            manager: text("manager")?,
            api_version: text("apiVersion")?,
            subresource: text("subresource")?,
        };
        (text("fieldsType")? == "FieldsV1"
            && !id.api_version.is_empty()
            && matches!(id.operation, "Apply" | "Update"))
        .then_some(id)
    }
}

/// At most this many values an update may change for [`owned_values_update`] to decide its
/// tracking; past it the general path does.
const OWNED_LEAVES_MAX: usize = 32;

/// An Update that changes only values its writer alone owns, as most updates are (a
/// controller's or a client's replace of what it wrote): every entry stays as it is but the
/// writer's time, so the stored entries are neither decoded nor edited (nor parsed, where
/// the registry kept their FieldsV1 as text), and the objects are compared without sets
/// ([`keel_smd::typed::modified_leaves`]). The same entries as the general path's (see the
/// tests). `Err` gives the entries back where that path decides: a field added or
/// removed, a value another manager owns or the writer does not, an entry it would drop
/// or reject.
fn owned_values_update(
    w: &Write<'_>,
    ts: &TypeSchema,
    live: &Value,
    mut entries: Vec<Value>,
    new: &Value,
    now: &str,
) -> Result<Vec<Value>, Vec<Value>> {
    let api_version = w.api_version();
    let mut writer = None;
    for (i, e) in entries.iter().enumerate() {
        let Some(id) = EntryId::of(e) else {
            return Err(entries);
        };
        if id.operation == "Update"
            && id.manager == w.manager()
            && id.api_version == api_version
            && id.subresource == w.subresource
        {
            writer = Some(i);
        }
    }
    // (A writer's entry without a time would take one last, out of Go's member order.)
    let Some(writer) = writer.filter(|&i| entries[i].get("time").is_some_and(Value::is_string))
    else {
        return Err(entries);
    };
    let Some(leaves) = keel_smd::typed::modified_leaves(
        &ts.schema,
        &ts.root,
        live,
        new,
        w.ignored(ts),
        OWNED_LEAVES_MAX,
    ) else {
        return Err(entries);
    };
    if leaves.is_empty() {
        // Nothing tracked changed: the entries stay, times too.
        return Ok(entries);
    }
    let owned_by_writer_alone = |entries: &[Value]| -> Option<bool> {
        for leaf in &leaves {
            if strip_set().has(leaf) {
                return None;
            }
            for (i, e) in entries.iter().enumerate() {
                let has = with_entry_fields(e, |fields| {
                    // An empty entry is dropped by the general path.
                    (!fields.is_empty())
                        .then(|| keel_smd::fieldsv1::fields_v1_has(fields, leaf).ok())
                        .flatten()
                })??;
                if has != (i == writer) {
                    return Some(false);
                }
            }
        }
        Some(true)
    };
    if owned_by_writer_alone(&entries) != Some(true) {
        return Err(entries);
    }
    entries[writer]["time"] = Value::String(now.to_string());
    managedfields::sort_entries(&mut entries);
    Ok(entries)
}

/// `f` of an entry's FieldsV1 object: its tree, or its text parsed (remembered per core, by
/// text: objects of one shape, and one object's successive updates, share theirs). `None`
/// when the entry has no FieldsV1 object.
fn with_entry_fields<T>(e: &Value, f: impl FnOnce(&Fields) -> T) -> Option<T> {
    match e.get("fieldsV1")? {
        Value::Object(fields) => Some(f(fields)),
        Value::String(s) => {
            let text = objects::raw_json_text(s)?;
            let parsed = PARSED_FIELDS.with(|cache| {
                let mut cache = cache.borrow_mut();
                if let Some(p) = cache.get(text) {
                    return Some(p.clone());
                }
                let Ok(Value::Object(parsed)) = serde_json::from_str::<Value>(text) else {
                    return None;
                };
                if cache.len() >= PARSED_FIELDS_MAX {
                    cache.clear();
                }
                let parsed = Rc::new(parsed);
                cache.insert(text.to_string(), parsed.clone());
                Some(parsed)
            })?;
            Some(f(&parsed))
        }
        _ => None,
    }
}

/// Stored entries' FieldsV1 texts each core keeps parsed (past it, it forgets them all).
pub const PARSED_FIELDS_MAX: usize = 256;

thread_local! {
    static PARSED_FIELDS: std::cell::RefCell<HashMap<String, Rc<Fields>, foldhash::fast::RandomState>> =
        Default::default();
}

/// Whether two `managedFields` values are the same entries, FieldsV1 held as text or as
/// trees alike (a client echoes the entries it read; the registry may hold the stored
/// ones' fields as text).
fn entries_equal(a: &Value, b: &Value) -> bool {
    let (Value::Array(a), Value::Array(b)) = (a, b) else {
        return a == b;
    };
    let text_of = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => objects::raw_json_text(s).map(str::to_string),
            Value::Object(m) => String::from_utf8(objects::object_json(m)).ok(),
            _ => None,
        }
    };
    let fields_equal = |x: Option<&Value>, y: Option<&Value>| match (x, y) {
        (Some(x), Some(y)) if x == y => true,
        (Some(x), Some(y)) => text_of(x).is_some_and(|t| Some(t) == text_of(y)),
        (x, y) => x == y,
    };
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter().all(|(k, xv)| match k.as_str() {
                        "fieldsV1" => fields_equal(Some(xv), y.get(k)),
                        _ => y.get(k) == Some(xv),
                    })
            }
            (x, y) => x == y,
        })
}

/// What a comparison adds or modifies.
fn changed_paths(cmp: &keel_smd::typed::Comparison) -> Set {
    let mut changed = cmp.added.clone();
    changed.union_with(&cmp.modified);
    changed
}

/// What [`edit_entries`] did.
enum Edited {
    /// The entries after the write.
    Done(Vec<Value>),
    /// Not edited (the general path decides), given back as they were.
    Unedited(Vec<Value>),
    /// A FieldsV1 that is not one was found while editing: the entries do not decode.
    Malformed,
}

/// An Update's tracking without decoding the stored entries: every entry loses the
/// changed and removed fields, the writer's entry gains the changed ones (less the
/// stripped identity fields) and its time; entries left with nothing go; entries are
/// sorted as the encoder sorts them. The same entries as the general path's (see the
/// tests). `Unedited` where the general path is needed: an entry it would reject or drop,
/// a new Update entry past the cap.
fn edit_entries(
    w: &Write<'_>,
    mut entries: Vec<Value>,
    cmp: &keel_smd::typed::Comparison,
    now: &str,
) -> Edited {
    use keel_smd::fieldsv1::{add_to_fields_v1, remove_from_fields_v1};
    let changed = changed_paths(cmp);
    let mut took = changed.clone();
    took.remove(strip_set());
    let api_version = w.api_version();
    let manager = w.manager();
    // Everything that can send the write to the general path is checked before anything
    // is edited; past that only a malformed FieldsV1 stops it.
    let mut writer = None;
    let mut updaters = 0;
    for (i, e) in entries.iter().enumerate() {
        let Some(id) = EntryId::of(e) else {
            return Edited::Unedited(entries);
        };
        if !e.get("fieldsV1").is_some_and(Value::is_object) {
            return Edited::Unedited(entries);
        }
        if id.operation == "Update" {
            updaters += 1;
        }
        if id.operation == "Update"
            && id.manager == manager
            && id.api_version == api_version
            && id.subresource == w.subresource
        {
            // (An entry without a time would take it last, out of Go's member order.)
            if !took.is_empty() && e.get("time").is_none() {
                return Edited::Unedited(entries);
            }
            writer = Some(i);
        }
    }
    if !took.is_empty() && writer.is_none() && updaters >= UPDATE_MANAGERS_MAX {
        return Edited::Unedited(entries);
    }
    let edit = |entries: &mut Vec<Value>| -> Option<()> {
        for e in entries.iter_mut() {
            let Some(Value::Object(fields)) = e.get_mut("fieldsV1") else {
                return None;
            };
            remove_from_fields_v1(fields, &changed).ok()?;
            remove_from_fields_v1(fields, &cmp.removed).ok()?;
        }
        if !took.is_empty() {
            match writer {
                Some(i) => {
                    let o = entries[i].as_object_mut()?;
                    let Some(Value::Object(fields)) = o.get_mut("fieldsV1") else {
                        return None;
                    };
                    add_to_fields_v1(fields, &took).ok()?;
                    *o.get_mut("time")? = Value::String(now.to_string());
                }
                None => entries.push(update_entry(
                    w,
                    Value::Object(match took.to_fields_v1_value() {
                        Value::Object(m) => m,
                        _ => return None,
                    }),
                    now,
                )),
            }
        }
        Some(())
    };
    if edit(&mut entries).is_none() {
        return Edited::Malformed;
    }
    entries.retain(|e| e["fieldsV1"].as_object().is_some_and(|f| !f.is_empty()));
    managedfields::sort_entries(&mut entries);
    Edited::Done(entries)
}

/// A new Update entry of `w`, members in the order Go's struct has them.
fn update_entry(w: &Write<'_>, fields: Value, now: &str) -> Value {
    // (A request without a User-Agent has no manager name: Go omits it.)
    managedfields::entry(
        w.manager(),
        Operation::Update,
        &w.api_version(),
        Some(now),
        fields,
        w.subresource,
    )
}

/// A create's tracking without sets: the writer's entry is the FieldsV1 of what differs
/// from the type's zero value, built in one walk (`None`: the walk cannot, the general path
/// decides). The same entry as the general path's (see the tests). Objects of one shape
/// (one template's Pods) have the same fields: they are looked up by the object's
/// signature first (`keel_smd::typed::shape_signature`).
fn record_create(
    w: &Write<'_>,
    ts: &TypeSchema,
    zero: &Value,
    new: &mut Value,
    now: &str,
    raw: bool,
) -> Option<()> {
    let ignored = w.ignored(ts);
    let fields = by_shape("create", w, ts, zero, new, || {
        create_fields(ts, zero, new, ignored)
    });
    let fields = match fields {
        Ok(Some(fields)) => fields,
        Ok(None) => return None,
        // As the general path: an object that does not fit its schema is not tracked.
        Err(()) => return Some(()),
    };
    if fields.fields.is_empty() {
        return Some(());
    }
    match raw {
        true => {
            if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert(
                    "managedFields".into(),
                    objects::raw_json(&entries_json(w, &fields.json, now)),
                );
            }
        }
        false => put_managed(
            new,
            vec![update_entry(w, Value::Object(fields.fields.clone()), now)],
        ),
    }
    Some(())
}

/// A create's `managedFields` as JSON text: the one Update entry [`update_entry`] makes,
/// written as the encoder writes it (members in Go's order, Go's omissions), its FieldsV1
/// the shape's cached text. Made as one string, where building the entry's map of seven
/// strings and encoding it again cost a ConfigMap create 5,000 instructions.
fn entries_json(w: &Write<'_>, fields_json: &str, now: &str) -> String {
    let mut out = Vec::with_capacity(fields_json.len() + 160);
    let member = |out: &mut Vec<u8>, key: &str, value: &str| {
        if out.len() > 2 {
            out.push(b',');
        }
        objects::write_json_string(out, key);
        out.push(b':');
        objects::write_json_string(out, value);
    };
    out.extend_from_slice(b"[{");
    if !w.manager().is_empty() {
        member(&mut out, "manager", w.manager());
    }
    member(&mut out, "operation", Operation::Update.as_str());
    let api_version = w.api_version();
    if !api_version.is_empty() {
        member(&mut out, "apiVersion", &api_version);
    }
    member(&mut out, "time", now);
    member(&mut out, "fieldsType", "FieldsV1");
    out.extend_from_slice(b",\"fieldsV1\":");
    out.extend_from_slice(fields_json.as_bytes());
    if !w.subresource.is_empty() {
        member(&mut out, "subresource", w.subresource);
    }
    out.extend_from_slice(b"}]");
    String::from_utf8(out).expect("JSON text is UTF-8")
}

/// Shapes of created objects and applied configurations whose fields each core keeps
/// (past it, it forgets them all and starts again): a cluster's templates are few.
pub const CREATE_SHAPES_MAX: usize = 256;

/// Per core: a signature buffer and the fields of recent create shapes (hashed with
/// foldhash, seeded per process: a Pod's signature is a few KiB, which SipHash took
/// microseconds to hash on every create).
type Shapes = (
    String,
    HashMap<String, Rc<ShapeFields>, foldhash::fast::RandomState>,
);

/// The fields of one shape, as a tree and as the JSON text the encoder writes for it.
struct ShapeFields {
    fields: Fields,
    json: String,
}

thread_local! {
    static SHAPES: std::cell::RefCell<Shapes> = Default::default();
}

/// A create's fields: the FieldsV1 of what differs from the zero value, without the
/// `metadata` member `stripSet` removes.
fn create_fields(
    ts: &TypeSchema,
    zero: &Value,
    new: &Value,
    ignored: &Set,
) -> Result<Option<serde_json::Map<String, Value>>, ()> {
    let mut fields =
        match keel_smd::typed::changed_fields_v1(&ts.schema, &ts.root, zero, new, ignored) {
            Ok(Some(fields)) => fields,
            Ok(None) => return Ok(None),
            Err(_) => return Err(()),
        };
    // `stripSet`'s containers: the identity leaves are skipped above, `metadata` itself may
    // not be owned (kinds without a Go type have no `metadata` in their zero value).
    if let Some(Value::Object(meta)) = fields.get_mut("f:metadata") {
        meta.shift_remove(".");
    }
    if fields
        .get("f:metadata")
        .is_some_and(|m| m.as_object().is_some_and(|m| m.is_empty()))
    {
        fields.shift_remove("f:metadata");
    }
    Ok(Some(fields))
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
    apply_with(a, live, config, now, true)
}

/// [`apply`]; `direct`: an apply that conflicts with no one and prunes nothing edits the
/// stored entries in place ([`apply_in_place`]; tests compare it with the general path).
fn apply_with(
    a: &Apply<'_>,
    live: Option<&Value>,
    config: &Value,
    now: &str,
    direct: bool,
) -> Result<Value, ApiError> {
    let w = &a.write;
    // The live object as stored: its managedFields are among the ignored fields, and the
    // applied object's are replaced below.
    let live_obj = live_or_zero(w, live);
    let live_managed = live_obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"));
    let ts = w.type_schema();
    if direct {
        if let Some(done) = apply_in_place(a, &ts, live_obj, live_managed, config, now) {
            return done;
        }
    }
    let (managers, mut times) = managedfields::decode(live_managed).unwrap_or_default();
    // Stored sets were computed with this schema: no reconciling.
    let updater = Updater::new(&ts.schema, &ts.root)
        .with_ignored(w.ignored(&ts))
        .without_reconcile();
    let api_version = w.api_version();
    let key = ManagerKey::apply(w.manager(), w.subresource);
    let applied = updater
        .apply(live_obj, config, &api_version, managers, &key, a.force)
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
        let old_time = managedfields::decode(live_managed)
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

/// The common apply without decoding the stored entries: the applier's entry becomes its
/// configuration's fields, the others lose what the apply changes (forced) and removes.
/// The same object and entries as the general path's (see the tests). `None` where the
/// general path is needed: a conflict to report, something to prune (the configuration
/// dropped fields it applied before), an entry it would reject.
fn apply_in_place(
    a: &Apply<'_>,
    ts: &TypeSchema,
    live: &Value,
    live_managed: Option<&Value>,
    config: &Value,
    now: &str,
) -> Option<Result<Value, ApiError>> {
    use keel_smd::fieldsv1::{fields_v1_contains, fields_v1_intersects, remove_from_fields_v1};
    let w = &a.write;
    let ignored = w.ignored(ts);
    let mut entries = match live_managed {
        None => Vec::new(),
        Some(Value::Array(list)) => list.clone(),
        Some(_) => return None,
    };
    let my_fields = applied_fields(w, ts, config)?;
    // The live entries are replaced below: not copied into the merged object.
    let mut object =
        keel_smd::typed::merge_skipping(&ts.schema, &ts.root, live, config, managed_fields_path())
            .ok()?;
    let cmp =
        keel_smd::typed::compare_skipping(&ts.schema, &ts.root, live, &object, ignored).ok()?;
    let changed = changed_paths(&cmp);
    let api_version = w.api_version();
    let mut old_time = None;
    let mut mine_at = None;
    for (i, e) in entries.iter_mut().enumerate() {
        let id = EntryId::of(e)?;
        let is_mine =
            id.operation == "Apply" && id.manager == w.manager() && id.subresource == w.subresource;
        let time = match e.get("time") {
            None => None,
            Some(Value::String(t)) => Some(t.clone()),
            Some(_) => return None,
        };
        let Some(Value::Object(fields)) = e.get_mut("fieldsV1") else {
            return None;
        };
        if is_mine {
            // What it applied before and applies no more would be pruned.
            if !fields_v1_contains(&my_fields, fields) {
                return None;
            }
            mine_at = Some(i);
            old_time = time;
            continue;
        }
        if fields_v1_intersects(fields, &changed).ok()? {
            if !a.force {
                return None;
            }
            remove_from_fields_v1(fields, &changed).ok()?;
        }
        remove_from_fields_v1(fields, &cmp.removed).ok()?;
    }
    if let Some(i) = mine_at {
        entries.remove(i);
    }
    let changed_object = !equal_but_managed_fields(live, &object);
    if !my_fields.is_empty() {
        // Upstream stamps the time only when the object changed (and never for `scale`).
        let time = if changed_object && w.subresource != "scale" {
            Some(now.to_string())
        } else {
            old_time
        };
        entries.push(managedfields::entry(
            w.manager(),
            Operation::Apply,
            &api_version,
            time.as_deref(),
            Value::Object(my_fields),
            w.subresource,
        ));
    }
    entries.retain(|e| e["fieldsV1"].as_object().is_some_and(|f| !f.is_empty()));
    managedfields::sort_entries(&mut entries);
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    put_managed(&mut object, entries);
    Some(Ok(object))
}

/// The fields an applied configuration sets (stripped, without ignored fields), as
/// FieldsV1. Like creates, configurations of one shape (a controller or pipeline applying
/// new values) are looked up by signature first.
fn applied_fields(
    w: &Write<'_>,
    ts: &TypeSchema,
    config: &Value,
) -> Option<serde_json::Map<String, Value>> {
    let ignored = w.ignored(ts);
    let fields = by_shape("apply", w, ts, &Value::Null, config, || {
        let mut set =
            keel_smd::typed::to_field_set(&ts.schema, &ts.root, config).map_err(|_| ())?;
        set.remove_recursive(ignored);
        set.remove(strip_set());
        match set.to_fields_v1_value() {
            Value::Object(fields) => Ok(Some(fields)),
            _ => Err(()),
        }
    });
    fields.ok().flatten().map(|f| f.fields.clone())
}

/// FieldsV1 fields as a managedFields entry holds them.
type Fields = serde_json::Map<String, Value>;

/// The fields `compute` finds for `obj` (compared with `lhs`) in `op` by `w`, remembered
/// per core by the object's shape signature: objects of one shape (one template's Pods, a
/// pipeline's applied configurations) share them.
fn by_shape<E>(
    op: &str,
    w: &Write<'_>,
    ts: &TypeSchema,
    lhs: &Value,
    obj: &Value,
    compute: impl FnOnce() -> Result<Option<Fields>, E>,
) -> Result<Option<Rc<ShapeFields>>, E> {
    SHAPES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let (key, map) = &mut *cache;
        key.clear();
        key.push_str(op);
        key.push('\u{0}');
        key.push_str(&w.api_version());
        key.push('/');
        key.push_str(w.kind);
        key.push('/');
        key.push_str(w.subresource);
        key.push('\u{0}');
        if let Some(c) = w.custom {
            // A definition's schema can change while its kind stays.
            keel_smd::value::push_decimal(key, c.id);
            key.push('\u{0}');
        }
        let ignored = w.ignored(ts);
        let cacheable =
            keel_smd::typed::shape_signature(&ts.schema, &ts.root, lhs, obj, ignored, key);
        if cacheable {
            if let Some(fields) = map.get(key.as_str()) {
                return Ok(Some(fields.clone()));
            }
        }
        let Some(fields) = compute()? else {
            return Ok(None);
        };
        let json = String::from_utf8(objects::object_json(&fields)).expect("JSON is UTF-8");
        let fields = Rc::new(ShapeFields { fields, json });
        if cacheable {
            if map.len() >= CREATE_SHAPES_MAX {
                map.clear();
            }
            map.insert(key.clone(), fields.clone());
        }
        Ok(Some(fields))
    })
}

/// `metadata.managedFields`, as a set of one path.
fn managed_fields_path() -> &'static Set {
    static PATH: OnceLock<Set> = OnceLock::new();
    PATH.get_or_init(|| Set::from_paths([Path::fields(&["metadata", "managedFields"])]))
}

/// Whether `a` and `b` are equal but for `metadata.managedFields` (absent from `b`).
fn equal_but_managed_fields(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return keel_smd::value::equals(a, b);
    };
    let meta_equal = |x: Option<&Value>, y: Option<&Value>| match (x, y) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let x_len = x.len() - usize::from(x.contains_key("managedFields"));
            x_len == y.len()
                && x.iter()
                    .filter(|(k, _)| *k != "managedFields")
                    .all(|(k, v)| y.get(k).is_some_and(|w| keel_smd::value::equals(v, w)))
        }
        (x, y) => x.zip(y).map_or(x.is_none() && y.is_none(), |(x, y)| {
            keel_smd::value::equals(x, y)
        }),
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| match k.as_str() {
            "metadata" => meta_equal(Some(v), b.get(k)),
            _ => b.get(k).is_some_and(|w| keel_smd::value::equals(v, w)),
        })
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
            custom: None,
        }
    }

    /// A create's direct FieldsV1 is the general path's entry, for objects of several
    /// kinds and shapes (zero-valued structs, nulls, empty maps, lists of every kind,
    /// duplicate items, status ignored, a kind without a Go type).
    #[test]
    fn direct_create_matches_general_path() {
        let cases = [
            (
                "",
                "v1",
                "ConfigMap",
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "labels": {"x": "y"}, "annotations": {}},
                "data": {"k": "v"}, "binaryData": null}),
            ),
            (
                "",
                "v1",
                "Pod",
                json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "finalizers": ["a", "b"], "creationTimestamp": null},
                "spec": {"containers": [
                    {"name": "c", "image": "i", "args": ["x"], "env": [{"name": "A", "value": "1"}],
                     "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}],
                     "resources": {}},
                    {"name": "c", "image": "dup"}],
                    "securityContext": {}, "tolerations": [{"key": "k"}], "nodeSelector": {"a": "b"}},
                "status": {"phase": "Pending"}}),
            ),
            (
                "apps",
                "v1",
                "Deployment",
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d"},
                "spec": {"replicas": 1, "strategy": {}, "selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"creationTimestamp": null, "labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]}}},
                "status": {}}),
            ),
            (
                "",
                "v1",
                "Service",
                json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "s"},
                "spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}],
                    "ipFamilies": ["IPv4"], "clusterIP": ""}}),
            ),
            (
                "example.com",
                "v1",
                "Widget",
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"a": [1, 2], "b": {"c": null}}}),
            ),
        ];
        for (group, version, kind, obj) in cases {
            let w = Write {
                group,
                version,
                kind,
                subresource: "",
                manager: Some("m"),
                custom: None,
            };
            // Twice: the second create of the shape comes from the per-core cache.
            for round in 0..2 {
                let (mut direct, mut general) = (obj.clone(), obj.clone());
                record(&w, None, None, &mut direct, "T", true, false);
                record(&w, None, None, &mut general, "T", false, false);
                assert_eq!(
                    direct["metadata"]["managedFields"], general["metadata"]["managedFields"],
                    "{kind} round {round}"
                );
                assert_raw_encodes_as(&w, &obj, &general);
                assert!(
                    general["metadata"]["managedFields"].is_array(),
                    "{kind}: tracked"
                );
            }
        }
        // Same shape, other values: the cached fields still hold; a null where the zero
        // value has one, or a duplicate item, makes another shape.
        // (A request without a User-Agent has an empty manager, which Go omits.)
        let w = Write {
            group: "",
            version: "v1",
            kind: "Pod",
            subresource: "",
            manager: Some(""),
            custom: None,
        };
        for spec in [
            json!({"containers": [{"name": "a", "image": "x"}], "nodeSelector": {"k": "v"}}),
            json!({"containers": [{"name": "b", "image": "y"}], "nodeSelector": {"k": "w"}}),
            json!({"containers": [{"name": "b", "image": "y"}], "nodeSelector": null}),
            json!({"containers": [{"name": "b", "image": "y"}, {"name": "b"}]}),
        ] {
            let obj =
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
            let (mut direct, mut general) = (obj.clone(), obj.clone());
            record(&w, None, None, &mut direct, "T", true, false);
            record(&w, None, None, &mut general, "T", false, false);
            assert_eq!(
                direct["metadata"]["managedFields"], general["metadata"]["managedFields"],
                "{spec}"
            );
            assert_raw_encodes_as(&w, &obj, &general);
        }
    }

    /// [`record_new`] of `obj` (its FieldsV1 as JSON text) is stored as the general path's
    /// `tracked` is.
    fn assert_raw_encodes_as(w: &Write<'_>, obj: &Value, tracked: &Value) {
        let mut raw = obj.clone();
        record_new(w, &mut raw, "T");
        assert!(
            raw["metadata"]["managedFields"].is_string(),
            "the raw path is taken: {raw}"
        );
        assert_eq!(
            String::from_utf8(objects::to_canonical_json(&raw)).unwrap(),
            String::from_utf8(objects::to_canonical_json(tracked)).unwrap()
        );
    }

    /// A seeded generator: `next(n)` is in `0..n`.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// Applies editing the stored entries in place give the general path's object and
    /// entries (or its conflict), over random sequences of applies by two appliers (forced
    /// or not, growing and shrinking their configurations) and updates by another manager.
    #[test]
    fn direct_applies_match_general_path() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let w = |m: &'static str| Write {
            group: "apps",
            version: "v1",
            kind: "Deployment",
            subresource: "",
            manager: Some(m),
            custom: None,
        };
        let mut live: Option<Value> = None;
        let (mut conflicts, mut direct_ok) = (0, 0);
        for step in 0..600u64 {
            let now = format!("2026-01-01T00:{:02}:{:02}Z", step / 60, step % 60);
            if live.is_some() && next(4) == 0 {
                let old = live.clone().unwrap();
                let mut new = old.clone();
                new["spec"]["replicas"] = json!(next(5));
                new["metadata"]["labels"]["u"] = json!(next(2).to_string());
                record_update(&w("updater"), Some(&old), &mut new, &now);
                live = Some(new);
                continue;
            }
            let manager = ["a1", "a2"][next(2) as usize];
            let mut cfg =
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
            if next(2) == 0 {
                cfg["spec"]["replicas"] = json!(next(3));
            }
            if next(2) == 0 {
                cfg["metadata"]["labels"][format!("l{}", next(3))] = json!(next(2).to_string());
            }
            let containers: Vec<Value> = (0..next(3))
                .map(|i| json!({"name": format!("c{}", (i + next(2)) % 3), "image": format!("i{}", next(2))}))
                .collect();
            let mut seen = std::collections::HashSet::new();
            let containers: Vec<Value> = containers
                .into_iter()
                .filter(|c| seen.insert(c["name"].to_string()))
                .collect();
            cfg["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
            cfg["spec"]["template"] =
                json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": containers}});
            let a = Apply {
                write: w(manager),
                force: next(3) == 0,
            };
            let direct = apply_with(&a, live.as_ref(), &cfg, &now, true);
            let general = apply_with(&a, live.as_ref(), &cfg, &now, false);
            match (direct, general) {
                (Ok(d), Ok(g)) => {
                    assert_eq!(d, g, "step {step}");
                    direct_ok += 1;
                    live = Some(d);
                }
                (Err(d), Err(g)) => {
                    assert_eq!(d.message, g.message, "step {step}");
                    conflicts += 1;
                }
                (d, g) => panic!("step {step}: direct {d:?} general {g:?}"),
            }
        }
        assert!(
            conflicts > 10 && direct_ok > 100,
            "{conflicts} conflicts, {direct_ok} applies"
        );
    }

    /// Updates editing the stored entries in place give the general path's entries, over
    /// random sequences of writes by several managers (adding, changing and removing map
    /// entries, list items and scalars; echoing or dropping managedFields; same-second
    /// and later times).
    #[test]
    fn direct_updates_match_general_path() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for kind in ["ConfigMap", "Deployment"] {
            let (group, api) = if kind == "ConfigMap" {
                ("", "v1")
            } else {
                ("apps", "apps/v1")
            };
            let mut live = json!({"apiVersion": api, "kind": kind, "metadata": {"name": "x"}});
            if kind == "Deployment" {
                live["spec"] = json!({"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                    "template": {"spec": {"containers": [{"name": "c0", "image": "i"}]}}});
            }
            let w = |m: &'static str| Write {
                group,
                version: "v1",
                kind,
                subresource: "",
                manager: Some(m),
                custom: None,
            };
            record_update(&w("creator"), None, &mut live, "2026-01-01T00:00:00Z");
            let mut owned = 0;
            for step in 1..400u64 {
                let manager = ["m1", "m2", "m3", "kubectl-edit"][next(4) as usize];
                let mut new = live.clone();
                for _ in 0..1 + next(3) {
                    match next(6) {
                        0 => {
                            new["metadata"]["labels"][format!("l{}", next(4))] =
                                json!(next(3).to_string());
                        }
                        1 => {
                            if let Some(l) = new["metadata"]["labels"].as_object_mut() {
                                l.shift_remove(&format!("l{}", next(4)));
                            }
                        }
                        2 if kind == "ConfigMap" => {
                            new["data"][format!("k{}", next(5))] = json!(next(3).to_string());
                        }
                        3 if kind == "ConfigMap" => {
                            if let Some(d) = new["data"].as_object_mut() {
                                d.shift_remove(&format!("k{}", next(5)));
                            }
                        }
                        2 => {
                            new["spec"]["replicas"] = json!(next(4));
                        }
                        3 => {
                            let c = &mut new["spec"]["template"]["spec"]["containers"];
                            let name = format!("c{}", next(3));
                            let a = c.as_array_mut().unwrap();
                            match a.iter().position(|x| x["name"] == json!(name)) {
                                Some(i) if next(2) == 0 && a.len() > 1 => { a.remove(i); }
                                Some(i) => { a[i]["image"] = json!(format!("i{}", next(3))); }
                                None => a.push(json!({"name": name, "image": "i", "args": [next(2).to_string()]})),
                            }
                        }
                        4 => {
                            new["metadata"]["annotations"]["a"] = json!(next(2).to_string());
                        }
                        _ => {
                            new["metadata"]["resourceVersion"] = json!(step.to_string());
                        }
                    }
                }
                if next(3) == 0 {
                    new["metadata"]
                        .as_object_mut()
                        .unwrap()
                        .shift_remove("managedFields");
                }
                let now = format!(
                    "2026-01-01T00:{:02}:{:02}Z",
                    step / 60,
                    (step / (1 + next(3))) % 60
                );
                let new_before = new.clone();
                let (mut direct, mut general, mut taken) = (new.clone(), new.clone(), new);
                record(
                    &w(manager),
                    Some(&live),
                    live["metadata"].get("managedFields").map(Cow::Borrowed),
                    &mut direct,
                    &now,
                    true,
                    false,
                );
                record(
                    &w(manager),
                    Some(&live),
                    live["metadata"].get("managedFields").map(Cow::Borrowed),
                    &mut general,
                    &now,
                    false,
                    false,
                );
                assert_eq!(
                    direct["metadata"]["managedFields"], general["metadata"]["managedFields"],
                    "{kind} step {step}"
                );
                // As the registry does: the live entries taken out of the live object.
                let mut stripped = live.clone();
                let entries = take_managed(&mut stripped);
                record_update_taken(&w(manager), &stripped, entries.clone(), &mut taken, &now);
                assert_eq!(
                    taken["metadata"]["managedFields"], general["metadata"]["managedFields"],
                    "{kind} step {step}, taken"
                );
                // As the registry does for a replace: the live object read back from its
                // stored bytes with the entries' fields as text.
                let stored = objects::to_canonical_json(&live);
                let mut read = objects::parse_stored_raw_fields(&stored).unwrap();
                let raw_entries = take_managed(&mut read);
                let mut from_raw = new_before.clone();
                record_update_taken(&w(manager), &read, raw_entries, &mut from_raw, &now);
                assert_eq!(
                    String::from_utf8(objects::to_canonical_json(&from_raw)).unwrap(),
                    String::from_utf8(objects::to_canonical_json(&general)).unwrap(),
                    "{kind} step {step}, from stored text"
                );
                let ts = w(manager).type_schema();
                if let Some(Value::Array(e)) = entries {
                    let mut n = new_before.clone();
                    take_managed(&mut n);
                    owned += usize::from(
                        owned_values_update(&w(manager), &ts, &stripped, e, &n, &now).is_ok(),
                    );
                }
                live = direct;
            }
            assert!(
                live["metadata"]["managedFields"].as_array().unwrap().len() >= 2,
                "{kind}: several managers"
            );
            eprintln!("{kind}: owned {owned}");
            assert!(
                owned > 40,
                "{kind}: {owned} updates took the owned-values path"
            );
        }
    }

    /// A value the writer shares with another manager (an applier that set the same value)
    /// is taken from the other by the update, stored entries held as text or not: the
    /// owned-values path leaves such an update to the general one.
    #[test]
    fn update_of_a_shared_value_takes_it_from_the_other_owner() {
        let w = cm_write("w");
        let fields = json!({"f:data": {".": {}, "f:j": {}, "f:k": {}}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
            "managedFields": [
                {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "T0",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}},
                {"manager": "w", "operation": "Update", "apiVersion": "v1", "time": "T0",
                 "fieldsType": "FieldsV1", "fieldsV1": fields}]},
            "data": {"k": "v", "j": "v"}});
        let want_after = |changed: &str| {
            let mut new = live.clone();
            new["data"][changed] = json!("changed");
            let mut general = new.clone();
            let lm = live["metadata"].get("managedFields").map(Cow::Borrowed);
            record(&w, Some(&live), lm, &mut general, "T1", false, false);
            (new, general)
        };
        // `k` is shared: the applier loses it. `j` is the writer's alone.
        for (changed, applier_keeps_k) in [("k", false), ("j", true)] {
            let (new, general) = want_after(changed);
            let mf = &general["metadata"]["managedFields"];
            assert_eq!(
                mf.as_array().unwrap().len(),
                1 + usize::from(applier_keeps_k),
                "{mf}"
            );
            let stored = objects::to_canonical_json(&live);
            let mut read = objects::parse_stored_raw_fields(&stored).unwrap();
            let entries = take_managed(&mut read);
            let mut direct = new.clone();
            record_update_taken(&w, &read, entries, &mut direct, "T1");
            assert_eq!(
                String::from_utf8(objects::to_canonical_json(&direct)).unwrap(),
                String::from_utf8(objects::to_canonical_json(&general)).unwrap(),
                "{changed}"
            );
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
