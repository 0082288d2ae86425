//! The OpenAPI documents of aggregated API servers, as upstream's aggregator folds them into
//! its own: what was last fetched of each remote (by the `apiservices` controller's
//! `openapi` fetcher), and the merged documents made from it.
//!
//! - `/openapi/v2`: keel's document first, then each remote's `/openapi/v2` kept to the paths
//!   under `/apis/<group>/<version>/` (and the definitions only they used dropped), merged in
//!   upstream's order (by group priority, then APIService name) and by upstream's rules: a
//!   path already present is ignored; a definition of the same name that differs (other than
//!   in its `x-kubernetes-group-version-kind`) is renamed `<name>_v2` (`_v3`, ...) and the
//!   references to it follow; equal ones are shared, their group-version-kinds joined;
//!   parameters likewise.
//! - `/openapi/v3`: the index lists `apis/<group>/<version>` of every remote with a document,
//!   at the `serverRelativeURL` the remote's own index gave (its `?hash=` is the remote's);
//!   `/openapi/v3/apis/<group>/<version>` serves the document last fetched from there, its
//!   ETag that hash.
//!
//! A remote whose fetch fails keeps its last good documents. Merged documents are made once
//! per change (of what was fetched or of keel's own document) and shared. The merge is pure.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

const GVK: &str = "x-kubernetes-group-version-kind";
const DEFINITIONS: &str = "#/definitions/";
const PARAMETERS: &str = "#/parameters/";

/// An OpenAPI v3 document of a remote group version.
#[derive(Debug, Clone, PartialEq)]
pub struct V3Doc {
    /// The `serverRelativeURL` the remote's index gave for it (`/openapi/v3/...?hash=...`).
    pub url: String,
    /// Its hash: the URL's `hash`, else the SHA-512 of the body (what kube-openapi uses).
    pub hash: String,
    pub body: Arc<[u8]>,
}

/// What was last fetched of one remote (an APIService with a service).
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    /// The APIService's name, `<version>.<group>`.
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    /// `/openapi/v2` kept to the group version's paths, and the ETag it came with.
    pub v2: Option<(Arc<Value>, Option<String>)>,
    pub v3: Option<V3Doc>,
}

/// A merged document: its bytes, ETag, and its gzip and protobuf forms made on first use.
pub struct Doc {
    pub body: Arc<[u8]>,
    pub etag: String,
    gzip: OnceLock<Arc<[u8]>>,
    protobuf: OnceLock<Result<Arc<Doc>, String>>,
}

impl Doc {
    fn new(value: &Value) -> Doc {
        let body = serde_json::to_vec(value).expect("a JSON value always serializes");
        let etag = sha512_hex(&body);
        Doc::with_etag(body, etag)
    }

    fn with_etag(body: Vec<u8>, etag: String) -> Doc {
        Doc {
            etag,
            body: body.into(),
            gzip: OnceLock::new(),
            protobuf: OnceLock::new(),
        }
    }

    /// The body gzip-compressed.
    pub fn gzipped(&self) -> Arc<[u8]> {
        self.gzip
            .get_or_init(|| {
                use std::io::Write;
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(&self.body).expect("writes to a Vec");
                enc.finish().expect("writes to a Vec").into()
            })
            .clone()
    }

    /// The document (an `/openapi/v2` one) as gnostic's protobuf `Document`, with the same
    /// ETag (as upstream labels both forms).
    pub fn protobuf_v2(&self) -> Result<Arc<Doc>, String> {
        self.protobuf
            .get_or_init(|| {
                keel_proto::openapi_v2::encode_document(&self.body)
                    .map(|b| Arc::new(Doc::with_etag(b, self.etag.clone())))
                    .map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// Upper-case hex SHA-512 of `body` (kube-openapi's ETags and hashes).
pub fn sha512_hex(body: &[u8]) -> String {
    hex::encode_upper(ring::digest::digest(&ring::digest::SHA512, body))
}

/// A merged document made from one state: keel's document's ETag and the fetched
/// generation.
type Cached = Mutex<Option<(String, u64, Arc<Doc>)>>;

/// The remotes' documents and the merged ones.
#[derive(Default)]
pub struct Specs {
    fetched: RwLock<Arc<BTreeMap<String, Arc<Fetched>>>>,
    /// Moves with every change of `fetched`.
    generation: AtomicU64,
    v2: Cached,
    v3_root: Cached,
}

impl Specs {
    /// What was fetched, by APIService name.
    pub fn fetched(&self) -> Arc<BTreeMap<String, Arc<Fetched>>> {
        self.fetched
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records what was fetched of one remote.
    pub fn store(&self, fetched: Fetched) {
        let mut all = self.fetched.write().unwrap_or_else(|e| e.into_inner());
        let mut next = (**all).clone();
        next.insert(fetched.name.clone(), Arc::new(fetched));
        *all = Arc::new(next);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets the remotes not named in `keep` (APIServices deleted or no longer aggregated).
    pub fn retain(&self, keep: &HashSet<&str>) {
        let mut all = self.fetched.write().unwrap_or_else(|e| e.into_inner());
        if all.keys().all(|k| keep.contains(k.as_str())) {
            return;
        }
        let next = all
            .iter()
            .filter(|(k, _)| keep.contains(k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        *all = Arc::new(next);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// The v3 document of a remote group version, if one was fetched.
    pub fn v3(&self, group: &str, version: &str) -> Option<V3Doc> {
        self.fetched()
            .values()
            .find(|f| f.group == group && f.version == version)
            .and_then(|f| f.v3.clone())
    }

    /// `/openapi/v2`: keel's (`local`, with its ETag) with the remotes' merged in; `None`
    /// when no remote has one (keel's is the answer).
    pub fn v2(&self, local: &[u8], local_etag: &str) -> Option<Arc<Doc>> {
        let fetched = self.fetched();
        if fetched.values().all(|f| f.v2.is_none()) {
            return None;
        }
        self.cached(&self.v2, local_etag, || {
            let mut doc: Value = serde_json::from_slice(local).ok()?;
            merge_v2_all(&mut doc, &fetched);
            Some(doc)
        })
    }

    /// `/openapi/v3`: keel's index (`local`) with the remotes' group versions; `None` when no
    /// remote has a document.
    pub fn v3_root(&self, local: &[u8], local_etag: &str) -> Option<Arc<Doc>> {
        let fetched = self.fetched();
        if fetched.values().all(|f| f.v3.is_none()) {
            return None;
        }
        self.cached(&self.v3_root, local_etag, || {
            let mut doc: Value = serde_json::from_slice(local).ok()?;
            add_to_v3_root(&mut doc, fetched.values().map(|f| &**f));
            Some(doc)
        })
    }

    fn cached(
        &self,
        slot: &Cached,
        local_etag: &str,
        make: impl FnOnce() -> Option<Value>,
    ) -> Option<Arc<Doc>> {
        // Read before the documents were: a change meanwhile makes the next call remake it.
        let generation = self.generation.load(Ordering::Relaxed);
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((etag, g, doc)) = slot.as_ref() {
            if etag == local_etag && *g == generation {
                return Some(doc.clone());
            }
        }
        let doc = Arc::new(Doc::new(&make()?));
        *slot = Some((local_etag.to_owned(), generation, doc.clone()));
        Some(doc)
    }
}

/// Adds each remote's `apis/<group>/<version>` to an `/openapi/v3` index (a remote's replaces
/// keel's own of that name: requests for it are proxied); keys sorted, as Go writes maps.
pub fn add_to_v3_root<'a>(root: &mut Value, remotes: impl Iterator<Item = &'a Fetched>) {
    let Some(paths) = root.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for f in remotes {
        if let Some(v3) = &f.v3 {
            let key = format!("apis/{}/{}", f.group, f.version);
            paths.insert(key, serde_json::json!({"serverRelativeURL": v3.url}));
        }
    }
    paths.sort_keys();
}

/// Merges every remote's v2 document into `dest` (keel's) in upstream's order: by the
/// group's highest priority, highest first, then by APIService name.
pub fn merge_v2_all(dest: &mut Value, fetched: &BTreeMap<String, Arc<Fetched>>) {
    let mut group_priority: HashMap<&str, i64> = HashMap::new();
    for f in fetched.values() {
        let p = group_priority.entry(&f.group).or_insert(f.group_priority);
        *p = (*p).max(f.group_priority);
    }
    let mut order: Vec<&Fetched> = fetched.values().map(|f| &**f).collect();
    // Within a group upstream compares a version's priority with itself (equal), so names
    // decide.
    order.sort_by(|a, b| {
        let (pa, pb) = if a.group == b.group {
            (0, 0)
        } else {
            (
                group_priority[a.group.as_str()],
                group_priority[b.group.as_str()],
            )
        };
        pb.cmp(&pa).then_with(|| a.name.cmp(&b.name))
    });
    for f in order {
        if let Some((spec, _)) = &f.v2 {
            merge_v2(dest, spec);
        }
    }
    for key in ["paths", "definitions", "parameters"] {
        if let Some(m) = dest.get_mut(key).and_then(Value::as_object_mut) {
            m.sort_keys();
        }
    }
}

/// Calls `f` on every `$ref` in `v`.
fn walk_refs<'a>(v: &'a Value, f: &mut dyn FnMut(&'a str)) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::String(s) if k == "$ref" => f(s),
                    _ => walk_refs(v, f),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| walk_refs(v, f)),
        _ => {}
    }
}

/// Renames references `<prefix><old>` to `<prefix><new>` in `v`.
fn rename_refs(v: &mut Value, prefix: &str, renames: &HashMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                match v {
                    Value::String(s) if k == "$ref" => {
                        if let Some(new) = s.strip_prefix(prefix).and_then(|n| renames.get(n)) {
                            *s = format!("{prefix}{new}");
                        }
                    }
                    _ => rename_refs(v, prefix, renames),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| rename_refs(v, prefix, renames)),
        _ => {}
    }
}

/// The definitions a spec refers to, anywhere in it (upstream walks its definitions,
/// parameters, responses and paths).
fn used_definitions(spec: &Value) -> HashSet<String> {
    let mut used = HashSet::new();
    walk_refs(spec, &mut |r| {
        if let Some(name) = r.strip_prefix(DEFINITIONS) {
            used.insert(name.to_owned());
        }
    });
    used
}

fn object<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// `spec` with only the paths starting with one of `prefixes`, and without the definitions
/// that only the dropped paths used (upstream's `FilterSpecByPathsWithoutSideEffects`: a
/// definition nothing used is kept).
pub fn filter_by_paths(spec: &Value, prefixes: &[&str]) -> Value {
    let Some(paths) = object(spec, "paths") else {
        return spec.clone();
    };
    let used_before = used_definitions(spec);
    let mut out = spec.clone();
    let kept: Map<String, Value> = paths
        .iter()
        .filter(|(p, _)| prefixes.iter().any(|pre| p.starts_with(pre)))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    out["paths"] = Value::Object(kept);
    let used_after = used_definitions(&out);
    if let Some(defs) = out.get_mut("definitions").and_then(Value::as_object_mut) {
        defs.retain(|k, _| used_after.contains(k) || !used_before.contains(k));
    }
    out
}

/// Two definitions equal but for their group-version-kinds.
fn equal_modulo_gvk(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let strip = |m: &Map<String, Value>| {
                let mut m = m.clone();
                m.remove(GVK);
                m
            };
            strip(a) == strip(b)
        }
        _ => a == b,
    }
}

/// New names for the entries of `source` that clash with different ones of `dest`:
/// `<name>_v2`, `_v3`, ... reusing a renamed entry of `dest` equal to it.
fn renames(
    dest: Option<&Map<String, Value>>,
    source: Option<&Map<String, Value>>,
    equal: fn(&Value, &Value) -> bool,
) -> HashMap<String, String> {
    let (Some(dest), Some(source)) = (dest, source) else {
        return HashMap::new();
    };
    let mut used: HashSet<String> = dest.keys().cloned().collect();
    let mut out = HashMap::new();
    let mut names: Vec<&String> = source.keys().collect();
    names.sort();
    'names: for k in names {
        let v = &source[k];
        match dest.get(k) {
            None => continue,
            Some(existing) if equal(existing, v) => continue,
            Some(_) => {}
        }
        let mut i = 1;
        let mut new_name;
        loop {
            i += 1;
            new_name = format!("{k}_v{i}");
            match dest.get(&new_name) {
                Some(existing) if equal(existing, v) => {
                    out.insert(k.clone(), new_name);
                    continue 'names;
                }
                Some(_) => {}
                None => break,
            }
        }
        while used.contains(&new_name) || source.contains_key(&new_name) {
            i += 1;
            new_name = format!("{k}_v{i}");
        }
        used.insert(new_name.clone());
        out.insert(k.clone(), new_name);
    }
    out
}

/// Joins `from`'s group-version-kinds into `into`'s (sorted by `group/version.kind` when any
/// is added).
fn merge_gvks(into: &mut Value, from: &Value) {
    let Some(add) = from.get(GVK).and_then(Value::as_array) else {
        return;
    };
    let Some(obj) = into.as_object_mut() else {
        return;
    };
    let Some(have) = obj.get_mut(GVK).and_then(Value::as_array_mut) else {
        if !obj.contains_key(GVK) {
            obj.insert(GVK.into(), Value::Array(add.clone()));
        }
        return;
    };
    let key = |g: &Value| {
        let t = |k: &str| g.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        format!("{}/{}.{}", t("group"), t("version"), t("kind"))
    };
    let seen: HashSet<String> = have.iter().map(key).collect();
    let mut changed = false;
    for g in add {
        if !seen.contains(&key(g)) {
            have.push(g.clone());
            changed = true;
        }
    }
    if changed {
        have.sort_by_key(key);
    }
}

/// Merges `source` into `dest` as upstream's
/// `MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters` does.
pub fn merge_v2(dest: &mut Value, source: &Value) {
    let Some(source_paths) = object(source, "paths") else {
        return;
    };
    let dest_paths = object(dest, "paths");
    let has = |p: &str| dest_paths.is_some_and(|d| d.contains_key(p));
    let keep: Vec<&str> = source_paths
        .keys()
        .map(String::as_str)
        .filter(|p| !has(p))
        .collect();
    if keep.is_empty() {
        return;
    }
    let mut source = if keep.len() < source_paths.len() {
        filter_by_paths(source, &keep)
    } else {
        source.clone()
    };
    let defs = renames(
        object(dest, "definitions"),
        object(&source, "definitions"),
        equal_modulo_gvk,
    );
    rename_keys(&mut source, "definitions", &defs);
    rename_refs(&mut source, DEFINITIONS, &defs);
    let params = renames(
        object(dest, "parameters"),
        object(&source, "parameters"),
        |a, b| a == b,
    );
    rename_keys(&mut source, "parameters", &params);
    rename_refs(&mut source, PARAMETERS, &params);

    let Value::Object(mut source) = source else {
        return;
    };
    if let Some(Value::Object(defs)) = source.remove("definitions") {
        let dest_defs = section(dest, "definitions");
        for (k, v) in defs {
            match dest_defs.get_mut(&k) {
                None => {
                    dest_defs.insert(k, v);
                }
                Some(existing) => merge_gvks(existing, &v),
            }
        }
    }
    if let Some(Value::Object(params)) = source.remove("parameters") {
        let dest_params = section(dest, "parameters");
        for (k, v) in params {
            dest_params.entry(k).or_insert(v);
        }
    }
    if let Some(Value::Object(paths)) = source.remove("paths") {
        section(dest, "paths").extend(paths);
    }
}

/// Renames the keys of `spec[section]`.
fn rename_keys(spec: &mut Value, section: &str, renames: &HashMap<String, String>) {
    if renames.is_empty() {
        return;
    }
    if let Some(m) = spec.get_mut(section).and_then(Value::as_object_mut) {
        let old = std::mem::take(m);
        *m = old
            .into_iter()
            .map(|(k, v)| (renames.get(&k).cloned().unwrap_or(k), v))
            .collect();
    }
}

/// `spec[key]` as an object, made when missing.
fn section<'a>(spec: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !spec.get(key).is_some_and(Value::is_object) {
        spec[key] = Value::Object(Map::new());
    }
    spec[key].as_object_mut().expect("made an object above")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gvk(kind: &str) -> Value {
        json!([{"group": "w.example.com", "version": "v1", "kind": kind}])
    }

    #[test]
    fn filtering_keeps_the_group_versions_paths_and_what_they_use() {
        let spec = json!({
        "paths": {
            "/apis/w.example.com/v1/flunders": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/Flunder"}}}}},
            "/version/": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/Info"}}}}},
        },
        "definitions": {
            "Flunder": {"properties": {"metadata": {"$ref": "#/definitions/Meta"}}},
            "Meta": {"type": "object"},
            "Info": {"type": "object"},
            "Unused": {"type": "object"},
        }});
        let out = filter_by_paths(&spec, &["/apis/w.example.com/v1/"]);
        let paths: Vec<&String> = out["paths"].as_object().unwrap().keys().collect();
        assert_eq!(paths, ["/apis/w.example.com/v1/flunders"]);
        let mut defs: Vec<&String> = out["definitions"].as_object().unwrap().keys().collect();
        defs.sort();
        // `Info` only the dropped path used; `Unused` nothing ever did.
        assert_eq!(defs, ["Flunder", "Meta", "Unused"]);
    }

    /// Upstream's merge, case by case: (what keel has, what a remote brings, what comes of it).
    #[test]
    fn merging_ignores_path_conflicts_and_renames_definitions() {
        let cases = [
            // New paths and definitions join; an equal definition is shared and its
            // group-version-kinds joined, sorted.
            (
                json!({"paths": {"/api/v1/pods": {}}, "definitions": {
                    "Status": {"type": "object", GVK: gvk("Status")}}}),
                json!({"paths": {"/apis/w.example.com/v1/flunders": {"get": {"$ref": "#/definitions/Status"}}},
                       "definitions": {"Status": {"type": "object", GVK: [{"group": "", "version": "v1", "kind": "Status"}]},
                                       "Flunder": {"type": "object"}}}),
                json!({"paths": {"/api/v1/pods": {}, "/apis/w.example.com/v1/flunders": {"get": {"$ref": "#/definitions/Status"}}},
                       "definitions": {"Status": {"type": "object", GVK: [
                           {"group": "", "version": "v1", "kind": "Status"},
                           {"group": "w.example.com", "version": "v1", "kind": "Status"}]},
                        "Flunder": {"type": "object"}}}),
            ),
            // A different definition of a taken name is renamed `_v2`, its references
            // follow; a path keel has is ignored, with the definitions only it used.
            (
                json!({"paths": {"/version/": {"k": 1}}, "definitions": {"Meta": {"type": "object"}}}),
                json!({"paths": {
                        "/version/": {"r": {"$ref": "#/definitions/Info"}},
                        "/apis/w.example.com/v1/flunders": {"get": {"$ref": "#/definitions/Meta"}}},
                       "definitions": {"Meta": {"type": "string"}, "Info": {}}}),
                json!({"paths": {"/version/": {"k": 1},
                        "/apis/w.example.com/v1/flunders": {"get": {"$ref": "#/definitions/Meta_v2"}}},
                       "definitions": {"Meta": {"type": "object"}, "Meta_v2": {"type": "string"}}}),
            ),
            // A renamed definition equal to one already renamed is reused; parameters are
            // renamed the same way.
            (
                json!({"paths": {}, "definitions": {"Meta": {"type": "object"}, "Meta_v2": {"type": "string"}},
                       "parameters": {"body": {"in": "body"}}}),
                json!({"paths": {"/apis/x/v1/a": {"get": {"$ref": "#/definitions/Meta"},
                                                     "parameters": [{"$ref": "#/parameters/body"}]}},
                       "definitions": {"Meta": {"type": "string"}},
                       "parameters": {"body": {"in": "query"}}}),
                json!({"paths": {"/apis/x/v1/a": {"get": {"$ref": "#/definitions/Meta_v2"},
                                                     "parameters": [{"$ref": "#/parameters/body_v2"}]}},
                       "definitions": {"Meta": {"type": "object"}, "Meta_v2": {"type": "string"}},
                       "parameters": {"body": {"in": "body"}, "body_v2": {"in": "query"}}}),
            ),
            // Every path taken: nothing at all is merged.
            (
                json!({"paths": {"/a": {}}, "definitions": {}}),
                json!({"paths": {"/a": {"x": 1}}, "definitions": {"New": {}}}),
                json!({"paths": {"/a": {}}, "definitions": {}}),
            ),
        ];
        for (i, (mut dest, source, want)) in cases.into_iter().enumerate() {
            merge_v2(&mut dest, &source);
            assert_eq!(dest, want, "case {i}");
        }
    }

    fn fetched(name: &str, priority: i64, paths: Value) -> (String, Arc<Fetched>) {
        let (version, group) = name.split_once('.').unwrap();
        let f = Fetched {
            name: name.into(),
            group: group.into(),
            version: version.into(),
            group_priority: priority,
            v2: Some((
                Arc::new(json!({"paths": paths, "definitions": {"D": {"from": name}}})),
                None,
            )),
            v3: Some(V3Doc {
                url: format!("/openapi/v3/apis/{group}/{version}?hash=H{name}"),
                hash: format!("H{name}"),
                body: Arc::from(&b"{}"[..]),
            }),
        };
        (name.to_owned(), Arc::new(f))
    }

    /// The higher group priority merges first and keeps the contested name; ties go by
    /// APIService name. The v3 index lists each remote at its own URL.
    #[test]
    fn remotes_merge_in_priority_order() {
        let all: BTreeMap<String, Arc<Fetched>> = [
            fetched(
                "v1.a.example.com",
                100,
                json!({"/apis/a.example.com/v1/x": {}}),
            ),
            fetched(
                "v1.b.example.com",
                200,
                json!({"/apis/b.example.com/v1/x": {}}),
            ),
        ]
        .into_iter()
        .collect();
        let mut doc = json!({"paths": {}, "definitions": {}});
        merge_v2_all(&mut doc, &all);
        assert_eq!(doc["definitions"]["D"], json!({"from": "v1.b.example.com"}));
        assert_eq!(
            doc["definitions"]["D_v2"],
            json!({"from": "v1.a.example.com"})
        );
        let mut root =
            json!({"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=L"}}});
        add_to_v3_root(&mut root, all.values().map(|f| &**f));
        assert_eq!(
            root,
            json!({"paths": {
                "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=L"},
                "apis/a.example.com/v1": {"serverRelativeURL": "/openapi/v3/apis/a.example.com/v1?hash=Hv1.a.example.com"},
                "apis/b.example.com/v1": {"serverRelativeURL": "/openapi/v3/apis/b.example.com/v1?hash=Hv1.b.example.com"}}})
        );
    }

    /// The merged document is made once per state and remade when either side changes.
    #[test]
    fn merged_documents_follow_changes() {
        let specs = Specs::default();
        let local = br#"{"paths": {}, "definitions": {}}"#;
        assert!(specs.v2(local, "L1").is_none());
        let (_, f) = fetched(
            "v1.a.example.com",
            100,
            json!({"/apis/a.example.com/v1/x": {}}),
        );
        specs.store((*f).clone());
        let one = specs.v2(local, "L1").unwrap();
        assert!(Arc::ptr_eq(&one, &specs.v2(local, "L1").unwrap()));
        assert!(!Arc::ptr_eq(&one, &specs.v2(local, "L2").unwrap()));
        assert_eq!(one.etag, sha512_hex(&one.body));
        let doc: Value = serde_json::from_slice(&one.body).unwrap();
        assert!(doc["paths"].get("/apis/a.example.com/v1/x").is_some());
        assert_eq!(
            specs.v3("a.example.com", "v1").unwrap().hash,
            "Hv1.a.example.com"
        );
        specs.retain(&HashSet::new());
        assert!(specs.v2(local, "L2").is_none());
        assert!(specs.v3("a.example.com", "v1").is_none());
    }
}
