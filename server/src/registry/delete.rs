//! Deletes: preconditions, the two-phase rules (finalizers; pods on a node are deleted
//! gracefully), and deletecollection.

use super::{strategy_ctx, Registry};
use crate::limits::{DELETE_COLLECTION_MAX, UPDATE_RETRIES_MAX};
use crate::objects::{self, Spliced};
use crate::routes::Resource;
use crate::selection::Filter;
use crate::storage::storage_error;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_engine::Error as StoreError;
use keel_strategy::{DeletionPlan, Propagation};
use serde_json::Value;

/// `DeleteOptions` (from the body and the query).
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub grace_period: Option<i64>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub propagation: Option<String>,
    /// The deprecated `orphanDependents` (`propagationPolicy` replaced it).
    pub orphan_dependents: Option<bool>,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Takes the members of a `DeleteOptions` object (a delete's body, an eviction's
    /// `deleteOptions`) over what the query said.
    pub fn merge_body(&mut self, v: &Value) {
        if let Some(g) = v.get("gracePeriodSeconds").and_then(Value::as_i64) {
            self.grace_period = Some(g);
        }
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            self.propagation = Some(p.to_string());
        }
        if let Some(o) = v.get("orphanDependents").and_then(Value::as_bool) {
            self.orphan_dependents = Some(o);
        }
        if let Some(pre) = v.get("preconditions") {
            self.uid = pre.get("uid").and_then(Value::as_str).map(String::from);
            self.resource_version = pre
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
        }
        if let Some(d) = v.get("dryRun").and_then(Value::as_array) {
            self.dry_run |= d.iter().any(|x| x == "All");
        }
    }

    /// Upstream's check of `propagationPolicy` (and that the deprecated `orphanDependents`
    /// is not given with it).
    pub fn validate(&self) -> Result<(), ApiError> {
        if let (Some(p), Some(_)) = (&self.propagation, self.orphan_dependents) {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Invalid value: {p:?}: orphanDependents and deletionPropagation cannot be both set"
            )));
        }
        if let Some(p) = &self.propagation {
            if !matches!(p.as_str(), "Orphan" | "Background" | "Foreground") {
                let cause = keel_api::status::field::not_supported(
                    "propagationPolicy",
                    &p.as_str().into(),
                    &["Foreground", "Background", "Orphan", "nil"],
                );
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "DeleteOptions",
                    "",
                    vec![cause],
                ));
            }
        }
        Ok(())
    }

    /// What the request asks for the object's dependents.
    pub fn propagation(&self) -> Propagation<'_> {
        Propagation {
            orphan_dependents: self.orphan_dependents,
            policy: self.propagation.as_deref(),
        }
    }
}

/// What a delete did.
pub struct Deleted {
    /// The object's last state: as it was when removed, or as marked for deletion.
    pub bytes: Vec<u8>,
    /// Removed from storage now (or would be, on a dry run), rather than marked for deletion
    /// or already pending: upstream answers those with a `Status` for most types.
    pub removed: bool,
}

impl Registry {
    /// Deletes one object per the two-phase rules.
    pub async fn delete(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut done = self.delete_stored(res, namespace, name, opts).await?;
        if !done.removed {
            done.bytes = super::answer_as_request(res, done.bytes).await?;
        }
        Ok(done)
    }

    /// [`Registry::delete`]; an object removed at once is answered as the request's version,
    /// converted before it is removed (as upstream: a conversion that fails, a webhook that is
    /// down, leaves the object in place), any other answer as stored.
    async fn delete_stored(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let removed = |bytes: Vec<u8>| Deleted {
            bytes,
            removed: true,
        };
        let marked = |bytes: Vec<u8>| Deleted {
            bytes,
            removed: false,
        };
        let info = &res.info;
        let key = res.loc.key(namespace, name);
        let conflict_err =
            |detail: String| ApiError::conflict(info.group, info.plural, name, &detail);
        for _ in 0..UPDATE_RETRIES_MAX {
            let current = self
                .storage
                .get_latest(&key)?
                .ok_or_else(|| res.not_found(name))?;
            let cur_rev = current.mod_revision;
            let mut obj = objects::parse_stored(current.value())?;
            if let Some(uid) = &opts.uid {
                let actual = objects::meta_str(&obj, "uid").unwrap_or("");
                if uid != actual {
                    return Err(conflict_err(format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    )));
                }
            }
            if let Some(rv) = &opts.resource_version {
                if rv != &cur_rev.to_string() {
                    return Err(conflict_err(format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {cur_rev}"
                    )));
                }
            }
            // The garbage collector's finalizers, as the request (or the type) asks. A change
            // is written even to an object already being deleted (upstream), but not during a
            // pod's grace period.
            let mut plan = res.strategy.deletion_plan(&obj, opts.grace_period);
            if !graceful_pending(&obj) {
                if let Some(list) = res.strategy.deletion_finalizers(&obj, opts.propagation()) {
                    set_finalizers(&mut obj, &list);
                    plan = match res.strategy.deletion_plan(&obj, opts.grace_period) {
                        DeletionPlan::AlreadyPending => DeletionPlan::Mark { grace: 0 },
                        p => p,
                    };
                }
            }
            match plan {
                DeletionPlan::Now => {
                    let answer = super::answer_as_request(res, current.value().to_vec()).await?;
                    if opts.dry_run {
                        return Ok(removed(answer));
                    }
                    match self.storage.delete(&key, cur_rev).await {
                        Ok(_) => {
                            self.release_held(res.strategy, &obj).await;
                            self.gc_wake.notify_one();
                            return Ok(removed(answer));
                        }
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(StoreError::NotFound) => return Err(res.not_found(name)),
                        Err(e) => return Err(storage_error(e)),
                    }
                }
                DeletionPlan::AlreadyPending => return Ok(marked(current.value().to_vec())),
                DeletionPlan::Mark { grace } => {
                    res.strategy.mark_deleting(&mut obj, grace, &strategy_ctx());
                    if opts.dry_run {
                        return Ok(marked(serde_json::to_vec(&obj).expect("JSON")));
                    }
                    super::to_storage(res, &mut obj).await?;
                    let spliced = Spliced::new(&mut obj);
                    match self.storage.update(&key, cur_rev, &spliced).await {
                        Ok((bytes, _)) => {
                            self.gc_wake.notify_one();
                            return Ok(marked(bytes));
                        }
                        Err(StoreError::Conflict { .. } | StoreError::NotFound) => continue,
                        Err(e) => return Err(storage_error(e)),
                    }
                }
            }
        }
        Err(ApiError::stale_update(info.group, info.plural, name))
    }

    /// Deletes every object of `res` in `namespace` (all namespaces when empty) that `filter`
    /// selects; returns their last states. Objects already gone are skipped.
    pub async fn delete_collection(
        &self,
        res: &Resource,
        namespace: &str,
        filter: &Filter,
        opts: &DeleteOptions,
    ) -> Result<Vec<Vec<u8>>, ApiError> {
        let (items, _) = self.list_all(res, namespace).await?;
        if items.len() > DELETE_COLLECTION_MAX {
            return Err(ApiError::bad_request(format!(
                "deletecollection of more than {DELETE_COLLECTION_MAX} objects at once is refused; use a selector"
            )));
        }
        let mut deleted = Vec::new();
        for kv in &items {
            if !filter.matches_bytes(kv.value()) {
                continue;
            }
            let obj = objects::parse_stored(kv.value())?;
            let ns = objects::meta_str(&obj, "namespace").unwrap_or("");
            match self.delete(res, ns, objects::name(&obj), opts).await {
                Ok(d) => deleted.push(d.bytes),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

/// Replaces `metadata.finalizers` (removed when empty).
fn set_finalizers(obj: &mut Value, list: &[String]) {
    let m = objects::meta_mut(obj);
    if list.is_empty() {
        m.shift_remove("finalizers");
    } else {
        m.insert("finalizers".into(), serde_json::json!(list));
    }
}

/// A graceful deletion is running (a pod's grace period): its finalizers do not change.
fn graceful_pending(obj: &Value) -> bool {
    obj.at("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|g| g > 0)
}
