//! OpenAPI documents for `/openapi/v2` (JSON, and gnostic protobuf converted from the JSON) and
//! `/openapi/v3`, rendered from the embedded definitions and the served resource list, cached
//! per resource list.

mod crd;
mod model;
mod params;
mod v2;
mod v3;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::{json, Value};
use sha2::{Digest, Sha512};

use crate::names::gv_path;
use crate::{ResourceDesc, Schemas, CUSTOM_SCHEMA_DEPTH_MAX, RENDER_CACHE_ENTRIES_MAX};

/// A rendered document and its ETag: upper-case hex SHA-512 of the body, as upstream computes
/// it (the HTTP `ETag` header carries it in double quotes; for v3 group/versions it is also the
/// `hash` query value). The protobuf form of `/openapi/v2` carries the ETag of its JSON form,
/// as upstream's does (responses vary by `Accept`).
#[derive(Clone, Debug)]
pub struct OpenApiDoc {
    pub body: Arc<[u8]>,
    pub etag: String,
    /// `body` gzip-compressed, made on first use and shared by every clone.
    gzip: Arc<OnceLock<Arc<[u8]>>>,
}

impl OpenApiDoc {
    fn new(value: &Value) -> OpenApiDoc {
        let body = serde_json::to_vec(value).expect("a JSON value always serializes");
        let etag = Sha512::digest(&body)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        OpenApiDoc::with_etag(body, etag)
    }

    fn with_etag(body: Vec<u8>, etag: String) -> OpenApiDoc {
        OpenApiDoc {
            body: body.into(),
            etag,
            gzip: Arc::default(),
        }
    }

    /// The body gzip-compressed (for `Content-Encoding: gzip`), compressed once per document.
    pub fn gzipped(&self) -> Arc<[u8]> {
        self.gzip
            .get_or_init(|| {
                let mut enc = GzEncoder::new(Vec::new(), Compression::default());
                enc.write_all(&self.body)
                    .and_then(|()| enc.finish())
                    .expect("gzip into memory cannot fail")
                    .into()
            })
            .clone()
    }
}

/// Documents rendered for one resource list.
struct Rendered {
    hash: u64,
    resources: Vec<ResourceDesc>,
    v2: OnceLock<OpenApiDoc>,
    /// `v2` as gnostic protobuf, or why it could not be converted.
    v2_protobuf: OnceLock<Result<OpenApiDoc, String>>,
    v3: OnceLock<V3Docs>,
}

struct V3Docs {
    root: OpenApiDoc,
    /// `api/v1`, `apis/apps/v1` → document.
    group_versions: HashMap<String, OpenApiDoc>,
}

/// The most recently used resource lists with their rendered documents.
#[derive(Default)]
pub(crate) struct Cache {
    entries: Mutex<Vec<Arc<Rendered>>>,
}

impl Cache {
    pub(crate) fn v2(&self, schemas: &Schemas, resources: &[ResourceDesc]) -> OpenApiDoc {
        render_v2(&self.entry(resources), schemas).clone()
    }

    /// The protobuf form of `v2`, converted from its JSON bytes as upstream converts them.
    pub(crate) fn v2_protobuf(
        &self,
        schemas: &Schemas,
        resources: &[ResourceDesc],
    ) -> Result<OpenApiDoc, String> {
        let entry = self.entry(resources);
        entry
            .v2_protobuf
            .get_or_init(|| {
                let json = render_v2(&entry, schemas);
                keel_proto::openapi_v2::encode_document(&json.body)
                    .map(|body| OpenApiDoc::with_etag(body, json.etag.clone()))
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    pub(crate) fn v3_root(&self, schemas: &Schemas, resources: &[ResourceDesc]) -> OpenApiDoc {
        self.v3(schemas, resources).root.clone()
    }

    pub(crate) fn v3_group_version(
        &self,
        schemas: &Schemas,
        group: &str,
        version: &str,
        resources: &[ResourceDesc],
    ) -> Option<OpenApiDoc> {
        let key = gv_path(group, version);
        self.v3(schemas, resources)
            .group_versions
            .get(&key)
            .cloned()
    }

    fn v3(&self, schemas: &Schemas, resources: &[ResourceDesc]) -> V3DocsRef {
        let entry = self.entry(resources);
        entry.v3.get_or_init(|| render_v3(schemas, resources));
        V3DocsRef(entry)
    }

    /// The cache entry of this resource list, created (evicting the oldest) when missing.
    fn entry(&self, resources: &[ResourceDesc]) -> Arc<Rendered> {
        let mut hasher = DefaultHasher::new();
        resources.hash(&mut hasher);
        let hash = hasher.finish();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pos) = entries
            .iter()
            .position(|e| e.hash == hash && e.resources == resources)
        {
            let entry = entries.remove(pos);
            entries.push(entry.clone());
            return entry;
        }
        if entries.len() >= RENDER_CACHE_ENTRIES_MAX {
            entries.remove(0);
        }
        let entry = Arc::new(Rendered {
            hash,
            resources: resources.to_vec(),
            v2: OnceLock::new(),
            v2_protobuf: OnceLock::new(),
            v3: OnceLock::new(),
        });
        entries.push(entry.clone());
        entry
    }
}

/// Keeps the entry alive while its v3 documents are read.
struct V3DocsRef(Arc<Rendered>);

impl std::ops::Deref for V3DocsRef {
    type Target = V3Docs;
    fn deref(&self) -> &V3Docs {
        self.0.v3.get().expect("initialized by Cache::v3")
    }
}

fn render_v2<'e>(entry: &'e Rendered, schemas: &Schemas) -> &'e OpenApiDoc {
    entry.v2.get_or_init(|| {
        OpenApiDoc::new(&v2::render(
            schemas,
            &model::build(schemas, &entry.resources),
        ))
    })
}

fn render_v3(schemas: &Schemas, resources: &[ResourceDesc]) -> V3Docs {
    let mut group_versions = HashMap::new();
    let mut paths = serde_json::Map::new();
    for gv in model::build(schemas, resources) {
        let doc = OpenApiDoc::new(&v3::render(schemas, &gv));
        let key = gv_path(&gv.group, &gv.version);
        let url = format!("/openapi/v3/{key}?hash={}", doc.etag);
        paths.insert(key.clone(), json!({"serverRelativeURL": url}));
        group_versions.insert(key, doc);
    }
    V3Docs {
        root: OpenApiDoc::new(&json!({"paths": paths})),
        group_versions,
    }
}

/// `securityDefinitions.BearerToken` / `components.securitySchemes.BearerToken`.
fn security_scheme() -> Value {
    json!({
        "description": "Bearer Token authentication",
        "in": "header",
        "name": "authorization",
        "type": "apiKey",
    })
}

/// `x-kubernetes-action` and `x-kubernetes-group-version-kind` of an operation.
fn extensions(op: &model::Op, v: &mut Value) {
    if !op.action.is_empty() {
        v["x-kubernetes-action"] = json!(op.action);
    }
    if let Some((group, version, kind)) = &op.gvk {
        v["x-kubernetes-group-version-kind"] =
            json!({"group": group, "kind": kind, "version": version});
    }
}

/// Every definition `paths` refers to, transitively (embedded ones in v2 form), plus the
/// `extra` ones (custom resources) as given.
fn closure(schemas: &Schemas, paths: &Value, extra: &[(&str, &Value)]) -> BTreeMap<String, Value> {
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    let mut pending = Vec::new();
    refs(paths, &mut pending);
    for (name, def) in extra {
        out.insert((*name).to_owned(), (*def).clone());
        refs(def, &mut pending);
    }
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        if let Some(def) = schemas.definition(&name) {
            refs(def, &mut pending);
            out.insert(name, def.clone());
        }
    }
    out
}

/// Collect the definition names of all `$ref`s in a value.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(r)) => {
                        let name = r.rsplit('/').next().unwrap_or(r);
                        out.push(name.to_owned());
                    }
                    _ => refs(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| refs(i, out)),
        _ => {}
    }
}

/// How many JSON levels of a custom resource's schema go into `ResourceDesc`'s hash: the root's
/// keys, its properties' names and their schemas' top keys and values. The render cache hashes
/// the whole resource list on every document request, so hashing every schema in full would
/// walk all CRD schemas per request; schemas that differ only deeper collide, and the cache's
/// `==` (pointer-equal `Arc`s compare in O(1)) tells them apart.
const CUSTOM_SCHEMA_HASH_DEPTH_MAX: usize = 4;
const _: () = assert!(CUSTOM_SCHEMA_HASH_DEPTH_MAX <= CUSTOM_SCHEMA_DEPTH_MAX);

/// Feeds a JSON value into a hasher consistently with `Value`'s `==`: objects are hashed
/// order-insensitively (`==` ignores key order when `preserve_order` is on), and nothing below
/// [`CUSTOM_SCHEMA_HASH_DEPTH_MAX`] levels is hashed (equal values still hash equally).
pub(crate) fn hash_json<H: Hasher>(v: &Value, depth: usize, state: &mut H) {
    if depth > CUSTOM_SCHEMA_HASH_DEPTH_MAX {
        return;
    }
    match v {
        Value::Null => 0u8.hash(state),
        Value::Bool(b) => (1u8, b).hash(state),
        Value::Number(n) => (2u8, n).hash(state),
        Value::String(s) => (3u8, s).hash(state),
        Value::Array(items) => {
            (4u8, items.len()).hash(state);
            items.iter().for_each(|i| hash_json(i, depth + 1, state));
        }
        Value::Object(map) => {
            let mut sum = 0u64;
            for (key, value) in map {
                let mut entry = DefaultHasher::new();
                key.hash(&mut entry);
                hash_json(value, depth + 1, &mut entry);
                sum = sum.wrapping_add(entry.finish());
            }
            (5u8, map.len(), sum).hash(state);
        }
    }
}
