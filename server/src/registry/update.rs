//! The one optimistic read-modify-write loop: every update, patch, subresource write and
//! controller change goes through `Registry::guaranteed_update`.
//!
//! Each attempt reads the current object, asks the caller's `try_update` for the new one,
//! applies what the server owns (metadata it keeps, the type's update strategy, validation),
//! and writes it on the condition that the object has not changed since it was read. A lost
//! race is retried with a fresh read, unless the new object names the resourceVersion it
//! replaces (a client's precondition: then the answer is 409), up to `UPDATE_RETRIES_MAX`.

use super::create::Created;
use super::{invalid, strategy_ctx, CreateOptions, Registry, Tracking};
use crate::alloc::Allocation;
use crate::limits::UPDATE_RETRIES_MAX;
use crate::objects::{self, Spliced};
use crate::routes::Resource;
use crate::storage::storage_error;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_engine::Error as StoreError;
use serde_json::Value;

/// How an update is applied.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpdateOptions<'a> {
    /// Decide and answer everything, store nothing.
    pub dry_run: bool,
    /// `""` for the object itself, else the subresource written (`status`, `scale`, ...): the
    /// strategy prepares a subresource write its own way, and only the object itself can be
    /// created by an update.
    pub subresource: &'a str,
    /// A whole new object (PUT): it must name the resourceVersion it replaces unless the type
    /// allows unconditional updates, and it may create the object where the type allows it.
    pub replace: bool,
    /// Prepare with the type's update strategy and validate the result, and take a
    /// resourceVersion in the new object as a precondition (off for writes whose handler
    /// decided every field it changes and checked its own precondition: scale, binding,
    /// finalize; their lost races are retried).
    pub strategy: bool,
}

/// What an update did.
pub struct Updated {
    /// The object as stored (or as it would be, on a dry run), with its resourceVersion.
    pub bytes: Vec<u8>,
    /// The update created the object (PUT of a missing object where allowed): HTTP 201.
    pub created: bool,
}

impl Registry {
    /// Reads `name`, applies `try_update` to it (`None` when it does not exist: return the
    /// object to create, or the error to answer) and writes the result if nothing changed
    /// in between, retrying lost races.
    pub async fn guaranteed_update(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
        opts: &UpdateOptions<'_>,
        try_update: &mut dyn FnMut(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<Updated, ApiError> {
        let keel = Tracking::default();
        self.guaranteed_update_by(res, namespace, name, opts, &keel, try_update)
            .await
    }

    /// [`Registry::guaranteed_update`] by a named manager (`tracking`), whose write is
    /// recorded in `metadata.managedFields`.
    pub async fn guaranteed_update_by(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
        opts: &UpdateOptions<'_>,
        tracking: &Tracking,
        try_update: &mut dyn FnMut(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<Updated, ApiError> {
        let mut done = self
            .update_stored(res, namespace, name, opts, tracking, try_update)
            .await?;
        done.bytes = super::answer_as_request(res, done.bytes).await?;
        Ok(done)
    }

    /// [`Registry::guaranteed_update_by`], answering with the object as stored.
    async fn update_stored(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
        opts: &UpdateOptions<'_>,
        tracking: &Tracking,
        try_update: &mut dyn FnMut(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<Updated, ApiError> {
        let key = res.loc.key(namespace, name);
        let (info, strategy) = (&res.info, res.strategy);
        for _ in 0..UPDATE_RETRIES_MAX {
            let Some((current, stale)) = self.storage.get_latest_for_update(&key)? else {
                // (Boxed: a create is the rare answer here, and its future is large.)
                match Box::pin(
                    self.create_on_update(res, namespace, name, opts, tracking, try_update),
                )
                .await
                {
                    // Another writer created it meanwhile (two applies of a new object):
                    // read it and update it, as upstream's storage retries a failed create.
                    Err(e) if e.reason == "AlreadyExists" => continue,
                    done => return done,
                }
            };
            let cur_rev = current.mod_revision;
            let mut old = if lazy_managed_fields(res, opts) {
                objects::parse_stored_raw_fields(current.value())?
            } else {
                objects::parse_stored(current.value())?
            };
            // The update is decided in the request's version, stored in the storage version;
            // a custom resource older than its schema is pruned and defaulted first.
            if let Some(v) = &res.versions {
                Box::pin(v.to_request(&mut old)).await?;
            }
            if let Some(c) = res.custom.as_ref().filter(|c| c.decodes_read(cur_rev)) {
                c.decode(&mut old);
            }
            let mut new = try_update(Some(&old))?;
            // A uid in a whole new object is a precondition (checked before the
            // resourceVersion, as upstream's storage does); in a patch it is a field that
            // cannot change.
            let uid_cause = if opts.strategy {
                check_uid(res, namespace, name, &new, &old, opts.replace)?
            } else {
                None
            };
            // A resourceVersion in the new object is a precondition, unless the handler
            // checked its own (writes without the strategy derive the object from `old`).
            let wanted = objects::meta_str(&new, "resourceVersion")
                .filter(|s| !s.is_empty() && opts.strategy)
                .map(String::from);
            if let Some(w) = &wanted {
                if w != &cur_rev.to_string() {
                    return Err(conflict(res, name));
                }
            } else if opts.replace && !strategy.allow_unconditional_update() {
                return Err(ApiError::resource_version_required(
                    info.group,
                    info.plural,
                    name,
                ));
            }
            if opts.strategy {
                carry_server_fields(&mut new, &old);
                objects::drop_empty_meta(&mut new);
                if opts.subresource.is_empty() {
                    strategy.prepare_for_update(&mut new, &old, &strategy_ctx());
                } else {
                    strategy.prepare_for_subresource_update(opts.subresource, &mut new, &old);
                }
                let mut causes =
                    self.admin_access_causes(res, namespace, opts.subresource, &new, Some(&old))?;
                causes.extend(uid_cause.into_iter().flatten());
                causes.extend(new_finalizers_while_deleting(&new, &old));
                causes.extend(strategy.validate_subresource_update(opts.subresource, &new, &old));
                if let Some(custom) = &res.custom {
                    causes.extend(custom.validate(&new, Some(&old), opts.subresource));
                }
                if !causes.is_empty() {
                    return Err(invalid(res, &new, causes));
                }
            } else {
                objects::meta_mut(&mut new).shift_remove("resourceVersion");
            }
            // The stored entries move into the new object (what follows reads no
            // `managedFields` of `old`; the stored bytes still hold them).
            let live_managed = old
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.shift_remove("managedFields"));
            tracking.record_taken(res, opts.subresource, &old, live_managed, &mut new);
            // No change: nothing is written and the current object is returned (unless its
            // stored bytes use an old encryption key: then they are rewritten, as upstream).
            if same_object(&new, &old) && !stale && same_managed_fields(&new, current.value())? {
                return Ok(Updated {
                    bytes: super::decoded(res, current)?.value().to_vec(),
                    created: false,
                });
            }
            // An update that leaves an object being deleted without finalizers removes it.
            let deleting = strategy.delete_on_update(&new, &old);
            // A Service whose type changes takes what it now needs (a cluster IP leaving
            // ExternalName, node ports becoming a NodePort) before it is stored.
            let allocation = if opts.strategy && opts.subresource.is_empty() && !deleting {
                self.allocate_update(strategy, &mut new, &old, opts.dry_run)
                    .await?
            } else {
                Allocation::default()
            };
            if opts.dry_run {
                if let Some(entries) = new.at_mut("/metadata/managedFields") {
                    objects::materialize(entries);
                }
                objects::set_rv(&mut new, cur_rev);
                return Ok(Updated {
                    bytes: serde_json::to_vec(&new).expect("JSON"),
                    created: false,
                });
            }
            super::to_storage(res, &mut new).await?;
            if deleting {
                let spliced = Spliced::new(&mut new);
                match self.storage.delete(&key, cur_rev).await {
                    Ok(rev) => {
                        let mut bytes = Vec::new();
                        spliced.write(Some(rev), &mut bytes);
                        self.release_held(strategy, &old).await;
                        self.gc_wake.notify_one();
                        return Ok(Updated {
                            bytes,
                            created: false,
                        });
                    }
                    Err(StoreError::Conflict { .. }) if wanted.is_none() => continue,
                    Err(StoreError::Conflict { .. }) => return Err(conflict(res, name)),
                    Err(e) => return Err(storage_error(e)),
                }
            }
            // What the stored object held and the new one does not: given back only once
            // the update is stored; a failed or lost write gives back what it took instead.
            let released = strategy.service_released(&new, &old);
            let spliced = Spliced::new(&mut new);
            let written = self.storage.update(&key, cur_rev, &spliced).await;
            if written.is_err() {
                self.unrecord(&allocation, &new).await;
            }
            match written {
                Ok((bytes, _)) => {
                    self.finish_update(&allocation, released.as_ref(), &old)
                        .await;
                    return Ok(Updated {
                        bytes,
                        created: false,
                    });
                }
                Err(StoreError::Conflict { .. } | StoreError::NotFound) if wanted.is_none() => {
                    continue
                }
                Err(StoreError::Conflict { .. }) => return Err(conflict(res, name)),
                Err(e) => return Err(storage_error(e)),
            }
        }
        Err(conflict(res, name))
    }

    /// An update of a missing object: a create where the type allows it (PUT of the object
    /// itself), else what `try_update` answers for "absent" (404 unless it decided otherwise).
    async fn create_on_update(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
        opts: &UpdateOptions<'_>,
        tracking: &Tracking,
        try_update: &mut dyn FnMut(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<Updated, ApiError> {
        let mut obj = try_update(None)?;
        // An apply creates what is absent whatever the type's policy (upstream's
        // `forceAllowCreate`); a PUT only where the type allows it.
        let may_create =
            tracking.applied || (opts.replace && res.strategy.allow_create_on_update());
        if !may_create || !opts.subresource.is_empty() {
            return Err(res.not_found(name));
        }
        objects::meta_mut(&mut obj).shift_remove("resourceVersion");
        // No resource that records its requester (CSRs) creates on update.
        let create = CreateOptions {
            dry_run: opts.dry_run,
            requester: None,
            tracking: tracking.clone(),
        };
        let Created { bytes, .. } = self.create(res, namespace, obj, &create).await?;
        Ok(Updated {
            bytes,
            created: true,
        })
    }
}

fn conflict(res: &Resource, name: &str) -> ApiError {
    ApiError::stale_update(res.info.group, res.info.plural, name)
}

/// A `metadata.uid` in the new object other than the stored object's. In a whole new object
/// (PUT) it is a failed precondition: 409 with upstream's storage error text. In a patched
/// object it is an immutable field, returned as the cause of a 422 (twice: upstream validates
/// the metadata of an update twice and lists both).
fn check_uid(
    res: &Resource,
    namespace: &str,
    name: &str,
    new: &Value,
    old: &Value,
    replace: bool,
) -> Result<Option<[keel_api::StatusCause; 2]>, ApiError> {
    let Some(uid) = objects::meta_str(new, "uid").filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let actual = objects::meta_str(old, "uid").unwrap_or("");
    if uid == actual {
        return Ok(None);
    }
    if replace {
        return Err(ApiError::conflict(
            res.info.group,
            res.info.plural,
            name,
            &format!(
                "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, \
                 AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in \
                 object meta: {actual}",
                etcd_key(res, namespace, name)
            ),
        ));
    }
    let cause = keel_api::status::field::invalid_str("metadata.uid", uid, "field is immutable");
    Ok(Some([cause.clone(), cause]))
}

/// The key upstream stores an object under in etcd, as its storage errors quote it:
/// `/registry/<resource>/<namespace>/<name>`, with upstream's few historical prefixes
/// (`services/specs`, `minions`) and `<group>/<resource>` for the API extension groups and
/// custom resources.
fn etcd_key(res: &Resource, namespace: &str, name: &str) -> String {
    let (group, plural) = (res.info.group, res.info.plural);
    const OWN_PREFIX: [&str; 2] = ["apiextensions.k8s.io", "apiregistration.k8s.io"];
    let builtin = group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io");
    let prefix = match (group, plural) {
        ("", "services") => "services/specs".to_string(),
        ("", "nodes") => "minions".to_string(),
        _ if OWN_PREFIX.contains(&group) || !builtin => format!("{group}/{plural}"),
        _ => plural.to_string(),
    };
    if namespace.is_empty() {
        format!("/registry/{prefix}/{name}")
    } else {
        format!("/registry/{prefix}/{namespace}/{name}")
    }
}

/// Finalizers the new object adds while the stored one is being deleted: upstream forbids
/// them (listed twice, as upstream validates an update's metadata twice).
fn new_finalizers_while_deleting(new: &Value, old: &Value) -> Vec<keel_api::StatusCause> {
    let deleting = objects::meta(old).is_some_and(|m| m.contains_key("deletionTimestamp"));
    if !deleting {
        return Vec::new();
    }
    let before = objects::finalizers(old);
    let added: Vec<Value> = objects::finalizers(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .map(Value::String)
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    let cause = keel_api::status::field::forbidden(
        "metadata.finalizers",
        &format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers {}",
            keel_api::gofmt::bad_value(&Value::Array(added))
        ),
    );
    vec![cause.clone(), cause]
}

/// Fields only the server sets are kept from the stored object.
fn carry_server_fields(new: &mut Value, old: &Value) {
    let Some(old_meta) = objects::meta(old) else {
        return;
    };
    let keep: Vec<(String, Value)> = [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ]
    .iter()
    .map(|k| (k.to_string(), old_meta.get(*k).cloned()))
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let m = objects::meta_mut(new);
    for k in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        m.shift_remove(k);
    }
    for (k, v) in keep {
        m.insert(k, v);
    }
    m.shift_remove("resourceVersion");
}

/// Whether the stored object is read with its managedFields' FieldsV1 as text
/// ([`objects::parse_stored_raw_fields`]): for a replace of the object itself (a PUT, whose
/// new object is the client's, not derived from the stored one), of a resource served in
/// one version without a schema of its own (nothing converts, prunes or defaults the
/// stored object). Tracking then reads them only if the update is not one of values the
/// writer alone owns.
fn lazy_managed_fields(res: &Resource, opts: &UpdateOptions<'_>) -> bool {
    opts.replace
        && opts.strategy
        && opts.subresource.is_empty()
        && res.versions.is_none()
        && res.custom.is_none()
}

/// Whether `new` has the `managedFields` of the `stored` object (an apply that only takes
/// ownership is still written). Read again from the bytes: only an update that changes
/// nothing else asks. (Entries whose fields are held as text compare as the fields.)
fn same_managed_fields(new: &Value, stored: &[u8]) -> Result<bool, ApiError> {
    fn mf(v: &Value) -> Option<Value> {
        let mut entries = v.get("metadata")?.get("managedFields")?.clone();
        objects::materialize(&mut entries);
        Some(entries)
    }
    Ok(mf(new) == mf(&objects::parse_stored(stored)?))
}

/// Equal but for `metadata.resourceVersion` and `metadata.managedFields` (compared in place,
/// without copying either object).
pub(crate) fn same_object(a: &Value, b: &Value) -> bool {
    const IGNORED: [&str; 2] = ["resourceVersion", "managedFields"];
    let (Some(ao), Some(bo)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    fn meta_of(o: &serde_json::Map<String, Value>) -> Option<&serde_json::Map<String, Value>> {
        o.get("metadata").and_then(Value::as_object)
    }
    let (Some(am), Some(bm)) = (meta_of(ao), meta_of(bo)) else {
        return a == b;
    };
    let kept = |m: &serde_json::Map<String, Value>| {
        m.iter()
            .filter(|(k, _)| !IGNORED.contains(&k.as_str()))
            .count()
    };
    ao.len() == bo.len()
        && ao
            .iter()
            .all(|(k, v)| k == "metadata" || bo.get(k) == Some(v))
        && kept(am) == kept(bm)
        && am
            .iter()
            .all(|(k, v)| IGNORED.contains(&k.as_str()) || bm.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The comparison before it avoided copies: strip both, then compare.
    fn same_object_by_copy(a: &Value, b: &Value) -> bool {
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                m.shift_remove("resourceVersion");
                m.shift_remove("managedFields");
            }
            v
        };
        strip(a) == strip(b)
    }

    #[test]
    fn same_object_ignores_only_resource_version_and_managed_fields() {
        let base = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1",
            "labels": {"x": "y"}}, "data": {"k": "v"}});
        let cases = [
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "2",
                "labels": {"x": "y"}, "managedFields": [{}]}, "data": {"k": "v"}}),
                true,
            ),
            (
                json!({"data": {"k": "v"}, "metadata": {"labels": {"x": "y"}, "name": "a"},
                "kind": "ConfigMap"}),
                true,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "z"}},
                "data": {"k": "v"}}),
                false,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}},
                "data": {"k": "v"}, "extra": 1}),
                false,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"},
                "uid": "u"}, "data": {"k": "v"}}),
                false,
            ),
            (json!({"kind": "ConfigMap", "data": {"k": "v"}}), false),
            (
                json!({"kind": "ConfigMap", "metadata": "odd", "data": {"k": "v"}}),
                false,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}},
                "data": {"k": "w"}}),
                false,
            ),
            (json!([1]), false),
        ];
        for (other, want) in cases {
            assert_eq!(same_object(&base, &other), want, "{other}");
            assert_eq!(same_object(&other, &base), want, "{other}");
            assert_eq!(same_object_by_copy(&base, &other), want, "{other}");
        }
        let odd = json!({"metadata": "odd"});
        assert!(same_object(&odd, &odd.clone()));
        assert_eq!(
            same_object(&json!(1), &json!(1)),
            same_object_by_copy(&json!(1), &json!(1))
        );
    }
}
