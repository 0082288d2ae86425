//! Deletion policy: whether a delete removes the object now, leaves it pending, or marks it
//! (two-phase deletion with finalizers and grace periods), as upstream's generic registry,
//! the pod strategy's graceful deletion and the namespace registry decide it.
//!
//! - Pods delete gracefully: the first delete marks them with `deletionTimestamp = now +
//!   grace`; a later delete may only shorten the grace period. A pod not on a node, or
//!   finished, has grace 0 and goes at once (unless it has finalizers).
//! - Namespaces: the first delete marks them `Terminating`; they go once `spec.finalizers`
//!   (the namespace controller's) and `metadata.finalizers` are empty.
//! - Every type: an object with `metadata.finalizers` is marked (grace 0) and stays until an
//!   update removes the last finalizer.

use crate::json::child;
use crate::kind::Kind;
use crate::registry::Strategy;
use crate::Ctx;
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};

/// What a delete request does to a stored object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeletionPlan {
    /// Remove it from storage now.
    Now,
    /// It is already being deleted and this request changes nothing: answer the stored object.
    AlreadyPending,
    /// Write it back marked for deletion ([`Strategy::mark_deleting`] with this grace period).
    Mark {
        /// Seconds until the deletion is due (0 for finalizer-held objects).
        grace: i64,
    },
}

fn meta_i64(obj: &Value, key: &str) -> Option<i64> {
    obj.get("metadata")?.get(key)?.as_i64()
}

fn is_deleting(obj: &Value) -> bool {
    obj.at("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

fn non_empty_list(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

fn has_meta_finalizers(obj: &Value) -> bool {
    non_empty_list(obj.at("/metadata/finalizers"))
}

fn has_spec_finalizers(obj: &Value) -> bool {
    non_empty_list(obj.at("/spec/finalizers"))
}

/// The stored grace period of a deleting object; a negative one counts as 1 (upstream).
fn deletion_grace(obj: &Value) -> Option<i64> {
    meta_i64(obj, "deletionGracePeriodSeconds").map(|g| if g < 0 { 1 } else { g })
}

/// Objects without graceful deletion: finalizers hold them (marked with grace 0), else they
/// go now.
fn finalizer_plan(obj: &Value) -> DeletionPlan {
    if !has_meta_finalizers(obj) {
        return DeletionPlan::Now;
    }
    if is_deleting(obj) && deletion_grace(obj) == Some(0) {
        DeletionPlan::AlreadyPending
    } else {
        DeletionPlan::Mark { grace: 0 }
    }
}

/// Upstream's `CheckGracefulDelete` for pods: the requested period, else the pod's
/// `terminationGracePeriodSeconds`; 0 for a pod no node runs or that has finished.
fn pod_grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let mut period = requested.unwrap_or_else(|| {
        pod.at("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    });
    let unbound = pod
        .at("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let finished = matches!(
        pod.at("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if unbound || finished {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    period
}

fn pod_plan(pod: &Value, requested: Option<i64>) -> DeletionPlan {
    let finalizers = has_meta_finalizers(pod);
    if !is_deleting(pod) {
        // Upstream writes the marked pod even with grace 0 and then deletes it; keel
        // deletes it at once (one event instead of a MODIFIED and a DELETED).
        let grace = pod_grace_period(pod, requested);
        return if grace == 0 && !finalizers {
            DeletionPlan::Now
        } else {
            DeletionPlan::Mark { grace }
        };
    }
    let current = deletion_grace(pod).unwrap_or(0);
    if current == 0 {
        // Marked without a grace period: nothing graceful is pending (this also recovers a
        // deletion whose removal failed after the mark).
        return finalizer_plan(pod);
    }
    match requested {
        Some(0) if !finalizers => DeletionPlan::Now,
        Some(g) if g < current => DeletionPlan::Mark { grace: g },
        _ => DeletionPlan::AlreadyPending,
    }
}

/// `metadata.generation + 1`, when the object tracks one.
fn bump_generation(obj: &mut Value) {
    if let Some(g) = meta_i64(obj, "generation").filter(|g| *g > 0) {
        set_meta(obj, "generation", json!(g.saturating_add(1)));
    }
}

fn set_meta(obj: &mut Value, key: &str, value: Value) {
    if let Some(meta) = obj.as_object_mut().and_then(|m| child(m, "metadata")) {
        meta.insert(key.into(), value);
    }
}

/// Upstream's `markAsDeleting` (objects held by finalizers): the deletion timestamp becomes
/// now unless it is set and not in the future, the grace period 0; the generation moves
/// when the object starts deleting.
/// The cleanup finalizer a deleted CustomResourceDefinition gets: its instances are deleted
/// before it goes.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Upstream's first delete of a CustomResourceDefinition: the deletion timestamp (no grace
/// period, no new generation), the cleanup finalizer and a `Terminating` condition, written
/// as one change; the CRD controller then deletes the instances and the finalizer.
fn mark_crd_deleting(obj: &mut Value, ctx: &Ctx) {
    set_meta(obj, "deletionTimestamp", json!(ctx.now_rfc3339));
    let m = obj
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .expect("metadata set above");
    let list = m.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().expect("array");
    if !list.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
        list.push(json!(CRD_CLEANUP_FINALIZER));
    }
    let Some(status) = obj
        .as_object_mut()
        .map(|o| o.entry("status").or_insert_with(|| json!({})))
    else {
        return;
    };
    set_crd_condition(
        status,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        &ctx.now_rfc3339,
    );
}

/// Upstream's `SetCRDCondition` on a CustomResourceDefinition's `status`: replaces the
/// condition of type `kind` (keeping its transition time while its status stays) or appends
/// it. Shared by the deletion mark here and the server's CRD controller.
pub fn set_crd_condition(
    status: &mut Value,
    kind: &str,
    cond_status: &str,
    reason: &str,
    message: &str,
    now: &str,
) {
    if !status.is_object() {
        *status = json!({});
    }
    let list = status
        .as_object_mut()
        .expect("object")
        .entry("conditions")
        .or_insert(Value::Null);
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().expect("array");
    let existing = list
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(kind));
    let kept = existing
        .map(|i| &list[i])
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(cond_status))
        .and_then(|c| c.get("lastTransitionTime").and_then(Value::as_str));
    let time = kept.unwrap_or(now).to_owned();
    let c = json!({"type": kind, "status": cond_status, "lastTransitionTime": time,
                   "reason": reason, "message": message});
    match existing {
        Some(i) => list[i] = c,
        None => list.push(c),
    }
}

fn mark_as_deleting(obj: &mut Value, ctx: &Ctx) {
    let current = obj
        .at("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .map(keel_api::time::parse_rfc3339);
    if current.is_none() {
        bump_generation(obj);
    }
    let in_future =
        matches!((current, ctx.now_unix_seconds()), (Some(Some(ts)), Some(now)) if ts > now);
    if current.is_none() || in_future {
        set_meta(obj, "deletionTimestamp", json!(ctx.now_rfc3339));
    }
    set_meta(obj, "deletionGracePeriodSeconds", json!(0));
}

/// A pod's first graceful mark: due `grace` seconds from now.
fn mark_graceful(obj: &mut Value, grace: i64, ctx: &Ctx) {
    set_meta(obj, "deletionTimestamp", json!(ctx.rfc3339_after(grace)));
    set_meta(obj, "deletionGracePeriodSeconds", json!(grace));
    bump_generation(obj);
}

/// A shorter grace period for a pod already deleting: due `grace` seconds after the first
/// delete (the stored timestamp minus the stored grace period).
fn shorten_grace(obj: &mut Value, grace: i64, ctx: &Ctx) {
    let stored = obj
        .at("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(keel_api::time::parse_rfc3339);
    let current = deletion_grace(obj).unwrap_or(0);
    let due = match stored {
        Some(ts) => keel_api::time::format_rfc3339(ts - current + grace),
        None => ctx.rfc3339_after(grace),
    };
    set_meta(obj, "deletionTimestamp", json!(due));
    set_meta(obj, "deletionGracePeriodSeconds", json!(grace));
}

impl Strategy {
    /// What a delete with `grace` (`DeleteOptions.gracePeriodSeconds`, negative meaning 1)
    /// does to the stored `obj`. Preconditions are the caller's, checked before.
    pub fn deletion_plan(&self, obj: &Value, grace: Option<i64>) -> DeletionPlan {
        let grace = grace.map(|g| if g < 0 { 1 } else { g });
        match self.kind {
            Kind::Pod => pod_plan(obj, grace),
            Kind::Namespace if !is_deleting(obj) => DeletionPlan::Mark { grace: 0 },
            Kind::Namespace if has_spec_finalizers(obj) => DeletionPlan::AlreadyPending,
            _ if self.is_crd() && !is_deleting(obj) => DeletionPlan::Mark { grace: 0 },
            _ => finalizer_plan(obj),
        }
    }

    /// Marks `obj` for deletion as [`DeletionPlan::Mark`] asked: a namespace's first mark
    /// sets its deletion timestamp and phase `Terminating` (no grace period, as upstream); a
    /// pod's graceful mark is due `grace` seconds from now (or, when it shortens a pending
    /// deletion, `grace` seconds after the first delete); finalizer-held objects get
    /// upstream's `markAsDeleting`.
    pub fn mark_deleting(&self, obj: &mut Value, grace: i64, ctx: &Ctx) {
        let deleting = is_deleting(obj);
        match self.kind {
            Kind::Namespace if !deleting => {
                set_meta(obj, "deletionTimestamp", json!(ctx.now_rfc3339));
                crate::namespace::mark_terminating(obj);
            }
            Kind::Pod if !deleting => mark_graceful(obj, grace, ctx),
            Kind::Pod if deletion_grace(obj).unwrap_or(0) > 0 => shorten_grace(obj, grace, ctx),
            _ if self.is_crd() && !deleting => mark_crd_deleting(obj, ctx),
            _ => mark_as_deleting(obj, ctx),
        }
    }

    fn is_crd(&self) -> bool {
        self.kind == Kind::CustomResourceDefinition
    }

    /// Whether something still holds `obj` once it is deleting: `metadata.finalizers`, and
    /// for namespaces `spec.finalizers`.
    pub fn has_pending_finalizers(&self, obj: &Value) -> bool {
        has_meta_finalizers(obj) || (self.kind == Kind::Namespace && has_spec_finalizers(obj))
    }

    /// Upstream's `ShouldDeleteDuringUpdate`: an update (or a namespace's `/finalize`) that
    /// leaves a deleting object with no finalizers removes it, unless a graceful deletion is
    /// still running (the stored grace period is above 0: its kubelet finishes it).
    pub fn delete_on_update(&self, new: &Value, old: &Value) -> bool {
        if self.has_pending_finalizers(new) || !is_deleting(old) {
            return false;
        }
        meta_i64(old, "deletionGracePeriodSeconds").is_none_or(|g| g == 0)
    }

    /// The grace period a controller emptying a namespace uses for `obj`, when not the
    /// default: a pod that no existing node runs has no kubelet to finish a graceful
    /// deletion, so it is removed at once (upstream's pod garbage collector force-deletes
    /// such pods). `node_exists` reads the server's nodes.
    pub fn cleanup_delete_grace(
        &self,
        obj: &Value,
        node_exists: &dyn Fn(&str) -> bool,
    ) -> Option<i64> {
        if self.kind != Kind::Pod {
            return None;
        }
        let node = obj
            .at("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        (node.is_empty() || !node_exists(node)).then_some(0)
    }
}

/// The finalizer that makes the garbage collector orphan an owner's dependents first.
pub const FINALIZER_ORPHAN: &str = "orphan";
/// The finalizer that makes the garbage collector delete an owner's dependents first
/// (foreground cascading deletion).
pub const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// What a delete does to a type's dependents when the request does not say (upstream's
/// `DefaultGarbageCollectionPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Background: the owner goes, the collector deletes the dependents afterwards.
    DeleteDependents,
    /// The dependents stay (`orphan` finalizer): core/v1 ReplicationControllers and
    /// batch/v1 Jobs, kept for compatibility with their first releases.
    OrphanDependents,
    /// Deletes never set a garbage-collection finalizer (Events).
    Unsupported,
}

/// How one delete request asks for dependents to be handled (`DeleteOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Propagation<'a> {
    /// The deprecated `orphanDependents`.
    pub orphan_dependents: Option<bool>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground` (validated before).
    pub policy: Option<&'a str>,
}

impl Strategy {
    /// The type's default policy for dependents.
    pub fn gc_policy(&self) -> GcPolicy {
        match self.kind {
            Kind::ReplicationController | Kind::Job => GcPolicy::OrphanDependents,
            Kind::Event | Kind::EventV1 => GcPolicy::Unsupported,
            _ => GcPolicy::DeleteDependents,
        }
    }

    /// Upstream's `deletionFinalizersForGarbageCollection`: the finalizers `obj` gets from a
    /// delete asking `p`, when they differ from its own (as a set). An explicit request
    /// overrides a garbage-collection finalizer the object already has (so a background
    /// delete of an object waiting for its dependents drops `foregroundDeletion`); without
    /// one the object's own finalizer stays, else the type's default applies.
    pub fn deletion_finalizers(&self, obj: &Value, p: Propagation<'_>) -> Option<Vec<String>> {
        let default = self.gc_policy();
        if default == GcPolicy::Unsupported {
            return None;
        }
        let current: Vec<String> = obj
            .at("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let has = |f: &str| current.iter().any(|c| c == f);
        let (orphan, foreground) = match (p.orphan_dependents, p.policy) {
            (Some(o), _) => (o, false),
            (None, Some("Orphan")) => (true, false),
            (None, Some("Foreground")) => (false, true),
            (None, Some(_)) => (false, false),
            (None, None) if has(FINALIZER_ORPHAN) => (true, false),
            (None, None) if has(FINALIZER_FOREGROUND) => (false, true),
            (None, None) => (default == GcPolicy::OrphanDependents, false),
        };
        let mut new: Vec<String> = current
            .iter()
            .filter(|f| *f != FINALIZER_ORPHAN && *f != FINALIZER_FOREGROUND)
            .cloned()
            .collect();
        if orphan {
            new.push(FINALIZER_ORPHAN.into());
        }
        if foreground {
            new.push(FINALIZER_FOREGROUND.into());
        }
        let same = new.len() == current.len() && new.iter().all(|f| has(f));
        (!same).then_some(new)
    }
}
