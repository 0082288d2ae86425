//! Custom resources: what serving one needs beyond its catalog entry, derived from its
//! CustomResourceDefinition (one [`Custom`] per served version), and the resources a CRD
//! serves. Pure: the CRD controller (`controllers::crd`) decides when, the routes carry the
//! result to every request of the resource.
//!
//! A CRD serves what its *accepted* names say (`status.acceptedNames`, set by the naming
//! controller once no other definition of the group claims them), as upstream's handler and
//! discovery do; its spec names take effect once accepted.

use keel_api::jsonmap::JsonPointer;
use keel_catalog::{ResourceSpec, SubresourceSpec, CUSTOM_RESOURCE_VERBS};
use serde_json::Value;
use std::sync::Arc;

pub use keel_strategy::CRD_CLEANUP_FINALIZER as CLEANUP_FINALIZER;

/// One served version of a custom resource, as its definition says.
#[derive(Debug)]
pub struct Custom {
    /// Unique in the process: caches derived from a definition key by it.
    pub id: u64,
    /// The definition's name (`widgets.example.com`).
    pub crd: String,
    /// The version's `openAPIV3Schema` (`Null` when it has none), shared with the OpenAPI
    /// documents' descriptions.
    pub schema: Arc<Value>,
    /// The same, compiled (`None` without a schema, or one that does not compile: then
    /// nothing is pruned, defaulted or checked by it).
    pub compiled: Option<keel_apiext::Schema>,
    /// The version's `subresources.scale`, if any (`specReplicasPath`, ...).
    pub scale: Option<Value>,
    /// The version's `additionalPrinterColumns`, compiled (none: upstream's default Age
    /// column).
    pub columns: keel_catalog::CustomColumns,
    /// The version has a status subresource.
    pub status: bool,
    /// The definition is being deleted: no new objects.
    pub terminating: bool,
    /// The version is deprecated: what every request to it is told.
    pub deprecation_warning: Option<String>,
    /// The version's `selectableFields`, as field selectors name them (`spec.color`).
    pub selectable: Vec<String>,
    /// How objects convert between the definition's versions (`None`: it has one).
    pub versions: Option<Arc<crate::versions::Versions>>,
    /// Objects last written at or before this revision may predate this schema: reads
    /// prune and default them as upstream's do on every read ([`Custom::decodes_read`]);
    /// objects written since were pruned and defaulted by it when written.
    pub decode_through: keel_engine::Revision,
    /// Set once another definition replaced this one (or it stopped being served): watches
    /// made through it end, as upstream tears down a changed definition's storage and with
    /// it every watch, and clients watch again through the new one.
    pub retired: Retirement,
}

/// Whether a [`Custom`] was replaced, and the signal that wakes its open watches when it is
/// (each ends at once, not at its next event or bookmark).
#[derive(Debug, Default)]
pub struct Retirement {
    done: std::sync::atomic::AtomicBool,
    signal: Arc<tokio::sync::Notify>,
}

impl Retirement {
    /// A future that completes once the definition is retired (if it already is, once
    /// polled): made before a watch checks [`Custom::is_retired`], it misses no retirement.
    pub fn wait(&self) -> tokio::sync::futures::OwnedNotified {
        self.signal.clone().notified_owned()
    }
}

/// A process-unique id for a new [`Custom`].
fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Whether a cause's field is the status or inside it.
fn under_status(field: &str) -> bool {
    field == "status" || field.starts_with("status.") || field.starts_with("status[")
}

/// Go's name for a JSON value's type, as upstream's accessor errors print it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The fields of a scale path (`.spec.replicas`; the leading period is optional).
fn path_fields(path: &str) -> impl Iterator<Item = &str> {
    path.strip_prefix('.').unwrap_or(path).split('.')
}

/// Upstream's `NestedFieldNoCopy`: the value at `path` (`None` when a field is missing), or
/// its accessor error when something on the way is not an object.
fn nested<'a>(obj: &'a Value, path: &str) -> Result<Option<&'a Value>, String> {
    let mut cur = obj;
    let mut walked = String::new();
    for f in path_fields(path) {
        let Value::Object(m) = cur else {
            return Err(format!(
                "{walked} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                go_value(cur),
                go_type(cur)
            ));
        };
        walked.push('.');
        walked.push_str(f);
        match m.get(f) {
            Some(v) => cur = v,
            None => return Ok(None),
        }
    }
    Ok(Some(cur))
}

/// A value as Go's `%v` prints it in an accessor error (scalars; anything else as JSON).
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Upstream's `NestedInt64`: an integer, absent, or the accessor error for another type.
fn nested_int64(obj: &Value, path: &str) -> Result<Option<i64>, String> {
    match nested(obj, path)? {
        None => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            format!(
                ".{} accessor error: {} is of the type {}, expected int64",
                path_fields(path).collect::<Vec<_>>().join("."),
                go_value(v),
                go_type(v)
            )
        }),
    }
}

impl Custom {
    /// The value of one of the definition's selectable fields, as field selectors compare
    /// it: a string as it is, an integer in decimal, a boolean as `true`/`false` (the types
    /// a selectable field may have); `None` when the object has no such value.
    pub fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        let mut cur = obj;
        for f in field.split('.') {
            cur = cur.get(f)?;
        }
        match cur {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// The definition's own checks of a write, after the type's (metadata) ones, in
    /// upstream's order: of the object (`subresource` empty: a create when `old` is `None`,
    /// else an update, also what a scale write does to the object) or of a status write.
    pub fn validate(
        &self,
        new: &Value,
        old: Option<&Value>,
        subresource: &str,
    ) -> Vec<keel_api::status::StatusCause> {
        let mut causes = Vec::new();
        if let Some(schema) = &self.compiled {
            match (subresource, old) {
                // A status write is checked by the status part of the schema only.
                ("status", Some(old)) => causes.extend(
                    schema
                        .validate_update(new, old)
                        .into_iter()
                        .filter(|c| under_status(&c.field)),
                ),
                (_, Some(old)) => causes.extend(schema.validate_update(new, old)),
                (_, None) => causes.extend(schema.validate(new)),
            }
        }
        causes.extend(self.validate_scale(new, subresource != "status"));
        causes
    }

    /// Whether a stored object last written at `mod_revision` is pruned and defaulted when
    /// read (it may predate the schema).
    pub fn decodes_read(&self, mod_revision: keel_engine::Revision) -> bool {
        self.compiled.is_some() && mod_revision <= self.decode_through
    }

    /// Marks this definition replaced (see `retired`).
    pub fn retire(&self) {
        self.retired
            .done
            .store(true, std::sync::atomic::Ordering::Release);
        // Every watch made through it is waiting on the signal (or checks the flag first).
        self.retired.signal.notify_waiters();
    }

    pub fn is_retired(&self) -> bool {
        self.retired.done.load(std::sync::atomic::Ordering::Acquire)
    }

    /// A stored object as a read gives it: pruned and defaulted by the schema (the stored
    /// bytes are not changed, as upstream's reads do not write back).
    pub fn decode_stored(&self, bytes: &[u8]) -> Result<Vec<u8>, keel_api::status::ApiError> {
        let mut obj = crate::objects::parse_stored(bytes)?;
        self.decode(&mut obj);
        Ok(crate::objects::to_canonical_json(&obj))
    }

    /// Prunes what the schema does not know and applies its defaults, as upstream decodes a
    /// custom resource; returns the pruned paths (`spec.foo`) for field validation to report.
    pub fn decode(&self, obj: &mut Value) -> Vec<String> {
        let Some(schema) = &self.compiled else {
            return Vec::new();
        };
        let pruned = schema.prune(obj);
        schema.apply_defaults(obj);
        pruned
    }

    fn scale_path(&self, key: &str) -> Option<&str> {
        self.scale.as_ref()?.get(key)?.as_str()
    }

    /// The `autoscaling/v1` Scale of a custom resource with a scale subresource, as
    /// upstream's `scaleFromCustomResource` builds it (missing replicas count as 0); `Ok(None)`
    /// without a scale subresource; the accessor error of a replicas path that holds something
    /// other than an integer.
    pub fn scale_from(&self, obj: &Value) -> Result<Option<Value>, String> {
        let (Some(spec_path), Some(status_path)) = (
            self.scale_path("specReplicasPath"),
            self.scale_path("statusReplicasPath"),
        ) else {
            return Ok(None);
        };
        let spec = nested_int64(obj, spec_path)?.unwrap_or(0);
        let status = nested_int64(obj, status_path)?.unwrap_or(0);
        let selector = match self
            .scale_path("labelSelectorPath")
            .filter(|p| !p.is_empty())
        {
            Some(p) => match nested(obj, p)? {
                Some(Value::String(s)) => s.clone(),
                Some(v) => {
                    return Err(format!(
                        "{p} accessor error: {} is of the type {}, expected string",
                        go_value(v),
                        go_type(v)
                    ))
                }
                None => String::new(),
            },
            None => String::new(),
        };
        let mut meta = serde_json::Map::new();
        for key in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = obj.at(&format!("/metadata/{key}")) {
                meta.insert(key.into(), v.clone());
            }
        }
        // Go's int32 conversion and `omitempty` (spec replicas, status selector).
        let mut spec_json = serde_json::Map::new();
        if spec as i32 != 0 {
            spec_json.insert("replicas".into(), (spec as i32).into());
        }
        let mut status_json = serde_json::Map::new();
        status_json.insert("replicas".into(), (status as i32).into());
        if !selector.is_empty() {
            status_json.insert("selector".into(), selector.into());
        }
        Ok(Some(serde_json::json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": meta,
            "spec": spec_json,
            "status": status_json,
        })))
    }

    /// Sets the spec replicas path (creating the objects on the way, as upstream's
    /// `SetNestedField`).
    pub fn apply_scale(&self, obj: &mut Value, replicas: i64) {
        let Some(path) = self.scale_path("specReplicasPath") else {
            return;
        };
        let fields: Vec<&str> = path_fields(path).collect();
        let mut cur = obj;
        for (i, f) in fields.iter().enumerate() {
            if !cur.is_object() {
                *cur = Value::Object(Default::default());
            }
            let m = cur.as_object_mut().expect("object");
            if i + 1 == fields.len() {
                m.insert((*f).to_owned(), replicas.into());
                return;
            }
            cur = m
                .entry(*f)
                .or_insert_with(|| Value::Object(Default::default()));
        }
    }

    /// Upstream's `ValidateScaleSpec` and `ValidateScaleStatus` of a custom resource: the
    /// replicas paths hold integers in 0..=2^31-1 and the selector path a string; each
    /// cause named by the path as the definition writes it.
    pub fn validate_scale(
        &self,
        obj: &Value,
        spec_too: bool,
    ) -> Vec<keel_api::status::StatusCause> {
        use keel_api::status::field;
        let mut causes = Vec::new();
        let mut replicas = |key: &str| {
            let Some(path) = self.scale_path(key) else {
                return;
            };
            match nested_int64(obj, path) {
                Err(e) => causes.push(field::invalid(path, &Value::from(0), &e)),
                Ok(Some(n)) if n < 0 => causes.push(field::invalid(
                    path,
                    &Value::from(n),
                    "should be a non-negative integer",
                )),
                Ok(Some(n)) if n > i64::from(i32::MAX) => causes.push(field::invalid(
                    path,
                    &Value::from(n),
                    &format!("should be less than or equal to {}", i32::MAX),
                )),
                _ => {}
            }
        };
        if spec_too {
            replicas("specReplicasPath");
        }
        replicas("statusReplicasPath");
        if let Some(p) = self.scale_path("labelSelectorPath") {
            if let Err(e) = nested(obj, p).and_then(|v| match v {
                Some(v) if !v.is_string() => Err(format!(
                    "{p} accessor error: {} is of the type {}, expected string",
                    go_value(v),
                    go_type(v)
                )),
                _ => Ok(()),
            }) {
                causes.push(field::invalid(p, &Value::from(""), &e));
            }
        }
        causes
    }
}

/// A served version: its catalog entry, what tells whether it changed, and where its
/// [`Custom`] comes from (made only for versions to serve anew: compiling a schema and its
/// columns is the costly part, and the controller looks at every definition on each pass).
pub struct Served<'a> {
    pub spec: ResourceSpec,
    /// Changes whenever anything serving depends on changes (to replace what is served).
    pub fingerprint: String,
    crd: &'a Value,
    version: &'a Value,
    terminating: bool,
    deprecation_warning: Option<String>,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.at(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings_at(v: &Value, pointer: &str) -> Vec<String> {
    let strings = v
        .at(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    strings
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

fn conditions(status: &Value) -> impl Iterator<Item = &Value> {
    let list = status.get("conditions").and_then(Value::as_array);
    list.into_iter().flatten()
}

/// Whether a definition's `status` has a condition of type `kind`.
pub fn has_condition(status: &Value, kind: &str) -> bool {
    conditions(status).any(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// Whether a definition's `status` has the condition `kind` with status `want`.
pub fn condition_is(status: &Value, kind: &str, want: &str) -> bool {
    conditions(status).any(|c| {
        c.get("type").and_then(Value::as_str) == Some(kind)
            && c.get("status").and_then(Value::as_str) == Some(want)
    })
}

/// The versions a definition serves now: none until its names are accepted (or it was
/// established); each served version with its accepted names, scope, subresources and the
/// storage version.
pub fn served(crd: &Value) -> Vec<Served<'_>> {
    let status = crd.get("status").unwrap_or(&Value::Null);
    if !condition_is(status, "NamesAccepted", "True")
        && !condition_is(status, "Established", "True")
    {
        return Vec::new();
    }
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/status/acceptedNames/plural");
    let kind = str_at(crd, "/status/acceptedNames/kind");
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let versions = crd
        .at("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(storage) = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| str_at(v, "/name"))
    else {
        return Vec::new();
    };
    let namespaced = str_at(crd, "/spec/scope") != "Cluster";
    let terminating = crd
        .at("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    let mut out = Vec::new();
    for v in versions {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let version = str_at(v, "/name");
        let mut subresources = Vec::new();
        if v.at("/subresources/status").is_some_and(Value::is_object) {
            subresources.push(SubresourceSpec::status());
        }
        if v.at("/subresources/scale").is_some_and(Value::is_object) {
            subresources.push(SubresourceSpec::scale());
        }
        let singular = match str_at(crd, "/status/acceptedNames/singular") {
            "" => kind.to_lowercase(),
            s => s.to_owned(),
        };
        let spec = ResourceSpec {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
            singular,
            namespaced,
            verbs: CUSTOM_RESOURCE_VERBS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            short_names: strings_at(crd, "/status/acceptedNames/shortNames"),
            categories: strings_at(crd, "/status/acceptedNames/categories"),
            subresources,
            storage_version: storage.to_owned(),
        };
        let deprecation_warning = deprecation_warning(crd, v);
        // The other versions and the conversion decide how this one's objects convert.
        let version_names: Vec<&str> = versions.iter().map(|v| str_at(v, "/name")).collect();
        let fingerprint = serde_json::json!([
            format!("{spec:?}"),
            v,
            terminating,
            deprecation_warning,
            crd.at("/metadata/uid"),
            version_names,
            crd.at("/spec/conversion")
        ])
        .to_string();
        out.push(Served {
            spec,
            fingerprint,
            crd,
            version: v,
            terminating,
            deprecation_warning,
        });
    }
    out
}

/// What requests to a deprecated version are told: its `deprecationWarning`, else
/// upstream's default, which names the newest served version that is not deprecated and
/// sorts after it (Kubernetes' version order: GA, then beta, then alpha, by number).
fn deprecation_warning(crd: &Value, version: &Value) -> Option<String> {
    if version.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if let Some(w) = version.get("deprecationWarning").and_then(Value::as_str) {
        return Some(w.to_owned());
    }
    let group = str_at(crd, "/spec/group");
    let kind = str_at(crd, "/spec/names/kind");
    let name = str_at(version, "/name");
    let mut msg = format!("{group}/{name} {kind} is deprecated");
    let newer = crd
        .at("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
        .map(|v| str_at(v, "/name"))
        .filter(|v| version_order(name, v) == std::cmp::Ordering::Less)
        .max_by(|a, b| version_order(a, b));
    if let Some(n) = newer {
        msg.push_str(&format!("; use {group}/{n} {kind}"));
    }
    Some(msg)
}

/// Upstream's `CompareKubeAwareVersionStrings` as an ordering (lowest first): versions of
/// the form `v<N>[alpha|beta<M>]` sort GA above beta above alpha, then by numbers; any
/// other name sorts below them all, alphabetically (reversed, as upstream).
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        let (level, num) = if tail.is_empty() {
            return Some((major, 2, 0));
        } else if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        if n_is_bad(num) {
            return None;
        }
        Some((major, level, num.parse().ok()?))
    }
    fn n_is_bad(n: &str) -> bool {
        n.is_empty() || !n.chars().all(|c| c.is_ascii_digit())
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => la.cmp(&lb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

impl Served<'_> {
    /// What serving the version needs: its schema (compiled), columns, scale paths,
    /// selectable fields and warning.
    /// `resolver` finds conversion webhooks named by a Service.
    pub fn custom(&self, resolver: Option<&crate::service_ref::ServiceResolver>) -> Custom {
        let v = self.version;
        let schema = v
            .at("/schema/openAPIV3Schema")
            .cloned()
            .unwrap_or(Value::Null);
        let compiled = match &schema {
            Value::Null => None,
            s => keel_apiext::Schema::compile(s).ok(),
        };
        Custom {
            id: next_id(),
            crd: str_at(self.crd, "/metadata/name").to_owned(),
            schema: Arc::new(schema),
            compiled,
            scale: v
                .at("/subresources/scale")
                .filter(|s| s.is_object())
                .cloned(),
            columns: keel_catalog::CustomColumns::new(
                v.get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default(),
            ),
            status: self.spec.subresources.iter().any(|r| r.name == "status"),
            terminating: self.terminating,
            deprecation_warning: self.deprecation_warning.clone(),
            selectable: v
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|p| p.strip_prefix('.').unwrap_or(p).to_owned())
                .collect(),
            versions: crate::versions::Versions::of_custom(self.crd, &self.spec.version, resolver)
                .map(Arc::new),
            decode_through: keel_engine::Revision::ZERO,
            retired: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(conditions: Value) -> Value {
        json!({
            "metadata": {"name": "widgets.example.com", "uid": "u1"},
            "spec": {
                "group": "example.com",
                "scope": "Cluster",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [
                    {"name": "v1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v2", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.r", "statusReplicasPath": ".status.r"}},
                     "additionalPrinterColumns": [{"name": "R", "type": "integer", "jsonPath": ".spec.r"}]},
                    {"name": "v3", "served": false, "storage": false}
                ]
            },
            "status": {
                "acceptedNames": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
                "conditions": conditions
            }
        })
    }

    /// Nothing is served before the names are accepted; then every served version, by the
    /// accepted names, stored as the storage version, with its own subresources and columns.
    #[test]
    fn served_versions_follow_accepted_names_and_served_flags() {
        assert!(served(&crd(json!([]))).is_empty());
        assert!(served(&crd(json!([{"type": "NamesAccepted", "status": "False"}]))).is_empty());
        let accepted = crd(json!([{"type": "NamesAccepted", "status": "True"}]));
        let s = served(&accepted);
        let versions: Vec<&str> = s.iter().map(|s| s.spec.version.as_str()).collect();
        assert_eq!(versions, ["v1", "v2"]);
        for x in &s {
            assert_eq!(x.spec.storage_version, "v2");
            assert!(!x.spec.namespaced);
            assert_eq!(x.spec.singular, "widget");
            assert_eq!(x.spec.short_names, ["wd"]);
            assert_eq!(x.spec.categories, ["all"]);
            assert_eq!(x.custom(None).crd, "widgets.example.com");
        }
        assert!(s[0].spec.subresources.is_empty());
        assert_eq!(*s[0].custom(None).schema, json!({"type": "object"}));
        let subs: Vec<&str> = s[1]
            .spec
            .subresources
            .iter()
            .map(|x| x.name.as_str())
            .collect();
        assert_eq!(subs, ["status", "scale"]);
        assert_eq!(
            s[1].custom(None).columns.definitions().len(),
            2,
            "Name and R"
        );
        assert!(s[1].custom(None).scale.is_some());
        assert_ne!(s[0].fingerprint, s[1].fingerprint);
    }

    fn pool() -> Custom {
        Custom {
            id: next_id(),
            crd: "pools.example.com".into(),
            schema: Arc::new(Value::Null),
            compiled: None,
            scale: Some(json!({"specReplicasPath": ".spec.replicas",
                               "statusReplicasPath": ".status.replicas",
                               "labelSelectorPath": ".status.selector"})),
            columns: keel_catalog::CustomColumns::new(&[]),
            status: true,
            terminating: false,
            deprecation_warning: None,
            selectable: Vec::new(),
            versions: None,
            decode_through: keel_engine::Revision::ZERO,
            retired: Default::default(),
        }
    }

    /// The Scale of a custom resource as upstream builds it: missing replicas are 0 (and 0
    /// spec replicas are left out, Go's `omitempty`), the selector read from its path.
    #[test]
    fn scale_of_a_custom_resource() {
        let p = pool();
        let obj = json!({"metadata": {"name": "p1", "namespace": "ns", "uid": "u", "resourceVersion": "7", "labels": {"a": "b"}},
                         "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "a=b"}});
        assert_eq!(
            p.scale_from(&obj).unwrap().unwrap(),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                   "metadata": {"name": "p1", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
                   "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "a=b"}})
        );
        let bare = json!({"metadata": {"name": "p2"}});
        assert_eq!(
            p.scale_from(&bare).unwrap().unwrap(),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "p2"},
                   "spec": {}, "status": {"replicas": 0}})
        );
        let float = json!({"metadata": {"name": "p3"}, "spec": {"replicas": 1.5}});
        assert_eq!(
            p.scale_from(&float).unwrap_err(),
            ".spec.replicas accessor error: 1.5 is of the type float64, expected int64"
        );
        let no_scale = Custom {
            scale: None,
            ..pool()
        };
        assert_eq!(no_scale.scale_from(&obj).unwrap(), None);
    }

    /// Scaling writes the spec path, making the objects on the way.
    #[test]
    fn scaling_sets_the_spec_path() {
        let p = pool();
        let mut obj = json!({"metadata": {"name": "p1"}});
        p.apply_scale(&mut obj, 4);
        assert_eq!(obj["spec"], json!({"replicas": 4}));
        p.apply_scale(&mut obj, 0);
        assert_eq!(obj["spec"], json!({"replicas": 0}));
    }

    /// Upstream's scale checks: negative or too large replicas, a selector that is not a
    /// string; a status write checks only the status paths.
    #[test]
    fn scale_paths_are_checked() {
        let p = pool();
        let texts = |obj: &Value, sub: &str| -> Vec<String> {
            p.validate(obj, None, sub)
                .iter()
                .map(keel_api::status::field::error_text)
                .collect()
        };
        let bad =
            json!({"spec": {"replicas": -1}, "status": {"replicas": 3000000000i64, "selector": 5}});
        assert_eq!(
            texts(&bad, ""),
            [
                ".spec.replicas: Invalid value: -1: should be a non-negative integer",
                ".status.replicas: Invalid value: 3000000000: should be less than or equal to 2147483647",
                ".status.selector: Invalid value: \"\": .status.selector accessor error: 5 is of the type int64, expected string",
            ]
        );
        assert_eq!(texts(&bad, "status").len(), 2);
        assert!(texts(&json!({"spec": {"replicas": 2}}), "").is_empty());
    }

    /// Upstream's order of Kubernetes versions: GA > beta > alpha, then by numbers; other
    /// names below them, in reverse alphabetical order.
    #[test]
    fn kube_aware_version_order() {
        let mut v = vec![
            "foo", "v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "v10", "bar", "v2alpha3",
        ];
        v.sort_by(|a, b| version_order(a, b));
        assert_eq!(
            v,
            ["foo", "bar", "v1alpha1", "v2alpha3", "v1beta1", "v1beta2", "v1", "v2", "v10"]
        );
    }

    /// A deprecated version's warning: its own text, else upstream's default naming the
    /// newest served version not deprecated that comes after it.
    #[test]
    fn deprecated_versions_warn() {
        let crd = |versions: Value| {
            json!({"metadata": {"name": "widgets.example.com"},
                   "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "versions": versions},
                   "status": {"acceptedNames": {"kind": "Widget", "plural": "widgets"},
                              "conditions": [{"type": "Established", "status": "True"}]}})
        };
        let c = crd(json!([
            {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true},
            {"name": "v1beta1", "served": true, "storage": false, "deprecated": true, "deprecationWarning": "gone soon"},
            {"name": "v1", "served": true, "storage": true},
            {"name": "v2", "served": false, "storage": false}
        ]));
        let w: Vec<Option<String>> = served(&c)
            .iter()
            .map(|s| s.custom(None).deprecation_warning)
            .collect();
        assert_eq!(
            w,
            [
                Some(
                    "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"
                        .to_owned()
                ),
                Some("gone soon".to_owned()),
                None
            ]
        );
        let alone =
            crd(json!([{"name": "v1", "served": true, "storage": true, "deprecated": true}]));
        assert_eq!(
            served(&alone)[0]
                .custom(None)
                .deprecation_warning
                .as_deref(),
            Some("example.com/v1 Widget is deprecated")
        );
    }

    /// A change to a served version changes its fingerprint (so it is served anew); the
    /// same definition gives the same one.
    #[test]
    fn fingerprints_follow_the_definition() {
        let c = crd(json!([{"type": "Established", "status": "True"}]));
        let a = served(&c);
        assert_eq!(a[1].fingerprint, served(&c)[1].fingerprint);
        let mut d = c.clone();
        d["metadata"]["deletionTimestamp"] = json!("2026-11-27T00:00:00Z");
        let b = served(&d);
        assert!(b[1].custom(None).terminating);
        assert_ne!(a[1].fingerprint, b[1].fingerprint);
    }
}
