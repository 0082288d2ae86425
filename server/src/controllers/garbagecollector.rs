//! The garbage collector, as upstream's kube-controller-manager `garbage-collector-controller`
//! decides (keel runs it in-process): it deletes objects all of whose owners
//! (`metadata.ownerReferences`, matched by UID) are gone, and finishes the deletions the
//! registry started with a garbage-collection finalizer:
//!
//! - `foregroundDeletion` (`propagationPolicy=Foreground`): the owner's dependents are
//!   deleted; once no dependent with `blockOwnerDeletion: true` is left, the finalizer goes
//!   (and with it the owner, when it was the last one).
//! - `orphan` (`Orphan`, `orphanDependents: true`, and the default of core/v1
//!   ReplicationControllers and batch/v1 Jobs): the reference to the owner is removed from
//!   every dependent, then the finalizer.
//! - Background (the default): the owner went at once; its dependents are dangling and are
//!   deleted here.
//!
//! A dependent is decided as upstream's `attemptToDeleteItem` does: its owners are looked up
//! live (the reference's apiVersion and kind name the resource; a namespaced owner is looked
//! for in the dependent's namespace), and each is absent (not found, or another UID),
//! waiting for its dependents (`foregroundDeletion` while deleting), or solid. An owner whose
//! kind is not served, or a namespaced owner of a cluster-scoped dependent, counts as solid:
//! nothing is deleted on a reference that cannot be resolved.
//!
//! Unlike upstream there is no graph kept up to date by informers: a pass reads every object
//! of every deletable resource through the registry (resources added at run time included),
//! twice: first for the owners being deleted with a finalizer and the UIDs that have
//! dependents, then to act on each dependent. Byte checks keep a pass from parsing objects
//! without owner references. Deletions wake it (`Registry::gc_wake`), else it resyncs every
//! `GC_RESYNC`; creates and updates never wake it, so the write path does not pay for it.
//! Events are not collected (upstream's default ignored resources).

use crate::limits::{
    GC_DELETING_OWNERS_MAX, GC_OWNER_LOOKUPS_CACHED_MAX, GC_OWNER_UIDS_MAX, GC_PASS_INTERVAL_MIN,
    GC_RESYNC,
};
use crate::objects;
use crate::registry::{DeleteOptions, UpdateOptions};
use crate::routes::{Resource, Routes};
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_strategy::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Runs the collector on its own thread with its own single-threaded runtime.
pub fn spawn(st: Arc<State>) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-garbage-collector", move || run(st))
}

async fn run(st: Arc<State>) {
    let wake = st.registry.gc_wake.clone();
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = pass(&st).await {
            eprintln!("garbage collector: {}", e.message);
        }
        tokio::time::sleep_until(pass_started + GC_PASS_INTERVAL_MIN).await;
        // A deletion during the pass or the wait left a permit: the next pass starts at once.
        let _ = tokio::time::timeout(GC_RESYNC, wake.notified()).await;
    }
}

/// One `metadata.ownerReferences` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block: bool,
}

/// The references of `obj` (malformed entries are skipped: validation refused them).
pub fn owner_refs(obj: &Value) -> Vec<OwnerRef> {
    let refs = obj
        .at("/metadata/ownerReferences")
        .and_then(Value::as_array);
    let s = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    refs.into_iter()
        .flatten()
        .map(|r| OwnerRef {
            api_version: s(r, "apiVersion"),
            kind: s(r, "kind"),
            name: s(r, "name"),
            uid: s(r, "uid"),
            block: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
        })
        .filter(|r| !r.uid.is_empty())
        .collect()
}

/// What an owner reference points at, as the collector sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// Not found, or found with another UID.
    Absent,
    /// Being deleted with `foregroundDeletion`: it waits for its dependents to go.
    Waiting,
    /// Being deleted with `orphan`: the reference is to be removed.
    Orphaning,
    /// Present (or not resolvable: treated as present).
    Solid,
}

/// What the collector does to one dependent (upstream's `attemptToDeleteItem`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Nothing,
    /// Remove the references to these owner UIDs (it stays).
    RemoveRefs(Vec<String>),
    /// Delete it with this `propagationPolicy`.
    Delete(&'static str),
}

/// Decides for a dependent not being deleted, given each reference's owner state, whether
/// it has dependents of its own, and its finalizers. References to orphaning owners are
/// removed; with a solid or orphaning owner, so are those to absent and waiting owners; with
/// none, it is deleted: in the foreground when an owner waits and it has dependents (so that
/// they go first), else as its own finalizer says, else in the background.
pub fn decide(
    owners: &[(&str, OwnerState)],
    has_dependents: bool,
    finalizers: &[String],
) -> Action {
    let of = |want: OwnerState| -> Vec<String> {
        owners
            .iter()
            .filter(|(_, s)| *s == want)
            .map(|(uid, _)| uid.to_string())
            .collect()
    };
    let orphaning = of(OwnerState::Orphaning);
    let (solid, absent, waiting) = (
        of(OwnerState::Solid),
        of(OwnerState::Absent),
        of(OwnerState::Waiting),
    );
    // An orphaning owner counts as solid (upstream): its reference goes, the object stays.
    if !solid.is_empty() || !orphaning.is_empty() || (absent.is_empty() && waiting.is_empty()) {
        let mut remove = orphaning;
        if !solid.is_empty() || !remove.is_empty() {
            remove.extend(absent);
            remove.extend(waiting);
        }
        return if remove.is_empty() {
            Action::Nothing
        } else {
            Action::RemoveRefs(remove)
        };
    }
    if !waiting.is_empty() && has_dependents {
        return Action::Delete("Foreground");
    }
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    Action::Delete(if has(FINALIZER_ORPHAN) {
        "Orphan"
    } else if has(FINALIZER_FOREGROUND) {
        "Foreground"
    } else {
        "Background"
    })
}

/// The resources the collector reads: deletable, listable and watchable (upstream's
/// `GetDeletableResources`), Events excepted, one per storage location.
fn collected(routes: &Routes) -> Vec<&Resource> {
    let mut seen = HashSet::new();
    routes
        .resources()
        .filter(|r| {
            let i = &r.info;
            ["delete", "list", "watch"].iter().all(|v| i.supports(v))
                && !(i.plural == "events" && matches!(i.group, "" | "events.k8s.io"))
        })
        .filter(|r| seen.insert(r.loc.prefix.clone()))
        .collect()
}

/// The served resource an owner reference names: its group and kind at its version, else at
/// any served version (they share storage).
fn resolve<'a>(routes: &'a Routes, api_version: &str, kind: &str) -> Option<&'a Resource> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let mut any = None;
    for r in routes.resources() {
        if r.info.group == group && r.info.kind == kind {
            if r.info.version == version {
                return Some(r);
            }
            any.get_or_insert(r);
        }
    }
    any
}

fn contains(stored: &[u8], key: &[u8]) -> bool {
    memchr::memmem::find(stored, key).is_some()
}

/// An owner being deleted with a garbage-collection finalizer.
struct DeletingOwner {
    res: usize,
    namespace: String,
    name: String,
    finalizer: &'static str,
    /// Dependents that still reference it with `blockOwnerDeletion` (foreground), or whose
    /// reference could not be removed (orphan).
    holding: usize,
}

/// What the first read found.
#[derive(Default)]
struct Survey {
    owners: HashMap<String, DeletingOwner>,
    /// UIDs some object names as its owner; `None` past `GC_OWNER_UIDS_MAX`.
    referenced: Option<HashSet<String>>,
}

async fn pass(st: &State) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let resources = collected(&routes);
    let mut survey = survey(st, &resources).await?;
    if survey.owners.is_empty() && survey.referenced.as_ref().is_some_and(HashSet::is_empty) {
        // No owner references anywhere: nothing to read twice.
        return Ok(());
    }
    let mut lookups = HashMap::new();
    for res in &resources {
        let items = st.registry.list_all_stored(res, "").await?;
        for kv in items {
            if !contains(kv.value(), b"ownerReferences") {
                continue;
            }
            let obj = objects::parse_stored(kv.value())?;
            let refs = owner_refs(&obj);
            if refs.is_empty() {
                continue;
            }
            if let Err(e) =
                collect_one(st, &routes, res, &obj, &refs, &mut survey, &mut lookups).await
            {
                eprintln!("garbage collector: {}: {}", objects::name(&obj), e.message);
            }
        }
    }
    finish_owners(st, &resources, &survey).await
}

/// The first read: owners being deleted with a garbage-collection finalizer, and the UIDs
/// that have dependents.
async fn survey(st: &State, resources: &[&Resource]) -> Result<Survey, ApiError> {
    let mut s = Survey {
        referenced: Some(HashSet::new()),
        ..Default::default()
    };
    for (i, res) in resources.iter().enumerate() {
        let items = st.registry.list_all_stored(res, "").await?;
        for kv in items {
            let b = kv.value();
            let refs = contains(b, b"ownerReferences");
            let finalizing = contains(b, b"deletionTimestamp")
                && (contains(b, b"\"orphan\"") || contains(b, b"foregroundDeletion"));
            if !refs && !finalizing {
                continue;
            }
            let obj = objects::parse_stored(b)?;
            if refs {
                if let Some(set) = &mut s.referenced {
                    set.extend(owner_refs(&obj).into_iter().map(|r| r.uid));
                    if set.len() > GC_OWNER_UIDS_MAX {
                        s.referenced = None;
                    }
                }
            }
            if !finalizing
                || !objects::is_deleting(&obj)
                || s.owners.len() >= GC_DELETING_OWNERS_MAX
            {
                continue;
            }
            let fins = objects::finalizers(&obj);
            let finalizer = if fins.iter().any(|f| f == FINALIZER_ORPHAN) {
                FINALIZER_ORPHAN
            } else if fins.iter().any(|f| f == FINALIZER_FOREGROUND) {
                FINALIZER_FOREGROUND
            } else {
                continue;
            };
            let uid = objects::meta_str(&obj, "uid").unwrap_or("").to_string();
            s.owners.insert(
                uid,
                DeletingOwner {
                    res: i,
                    namespace: objects::meta_str(&obj, "namespace").unwrap_or("").into(),
                    name: objects::name(&obj).into(),
                    finalizer,
                    holding: 0,
                },
            );
        }
    }
    Ok(s)
}

/// Acts on one dependent (of `res`) and counts what still holds the owners being deleted.
async fn collect_one(
    st: &State,
    routes: &Routes,
    res: &Resource,
    obj: &Value,
    refs: &[OwnerRef],
    survey: &mut Survey,
    lookups: &mut HashMap<String, OwnerState>,
) -> Result<(), ApiError> {
    let namespace = objects::meta_str(obj, "namespace").unwrap_or("");
    let name = objects::name(obj);
    let uid = objects::meta_str(obj, "uid").unwrap_or("");
    // Holds on foreground owners: blocking references, whatever happens to it below (it is
    // looked at again on the next pass, woken by its deletion).
    for r in refs {
        if let Some(o) = survey.owners.get_mut(&r.uid) {
            if o.finalizer == FINALIZER_FOREGROUND && r.block {
                o.holding += 1;
            }
        }
    }
    if objects::is_deleting(obj) {
        // Its own deletion is under way; an orphaning owner still loses the reference.
        let orphaning: Vec<String> = refs
            .iter()
            .filter(|r| {
                survey
                    .owners
                    .get(&r.uid)
                    .is_some_and(|o| o.finalizer == FINALIZER_ORPHAN)
            })
            .map(|r| r.uid.clone())
            .collect();
        if !orphaning.is_empty() {
            note_orphaning(
                survey,
                &orphaning,
                remove_refs(st, res, namespace, name, uid, &orphaning).await,
            );
        }
        return Ok(());
    }
    let mut owners = Vec::with_capacity(refs.len());
    for r in refs {
        let state = match survey.owners.get(&r.uid) {
            Some(o) if o.finalizer == FINALIZER_ORPHAN => OwnerState::Orphaning,
            _ => owner_state(st, routes, res, namespace, r, lookups),
        };
        owners.push((r.uid.as_str(), state));
    }
    let has_dependents = survey.referenced.as_ref().is_none_or(|s| s.contains(uid));
    match decide(&owners, has_dependents, &objects::finalizers(obj)) {
        Action::Nothing => {}
        Action::RemoveRefs(uids) => {
            let r = remove_refs(st, res, namespace, name, uid, &uids).await;
            note_orphaning(survey, &uids, r);
        }
        Action::Delete(policy) => {
            let opts = DeleteOptions {
                uid: Some(uid.to_string()),
                propagation: Some(policy.to_string()),
                ..Default::default()
            };
            match st.registry.delete(res, namespace, name, &opts).await {
                Ok(_) => {}
                // Gone, or changed (recreated, or its owners changed): the next pass decides.
                Err(e) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Counts a failed removal of references to orphaning owners: they keep their finalizer.
fn note_orphaning(survey: &mut Survey, uids: &[String], removed: Result<(), ApiError>) {
    if let Err(e) = removed {
        eprintln!(
            "garbage collector: removing owner references: {}",
            e.message
        );
        for u in uids {
            if let Some(o) = survey.owners.get_mut(u) {
                o.holding += 1;
            }
        }
    }
}

/// Looks up the owner `r` of a dependent of `res` in `namespace`, remembering the answer for
/// the pass.
fn owner_state(
    st: &State,
    routes: &Routes,
    res: &Resource,
    namespace: &str,
    r: &OwnerRef,
    lookups: &mut HashMap<String, OwnerState>,
) -> OwnerState {
    let Some(owner_res) = resolve(routes, &r.api_version, &r.kind) else {
        return OwnerState::Solid;
    };
    let ns = if owner_res.info.namespaced {
        if !res.info.namespaced {
            return OwnerState::Solid;
        }
        namespace
    } else {
        ""
    };
    // Namespaced owners of the same UID in two namespaces cannot both exist: the UID keys.
    let key = format!("{}/{ns}", r.uid);
    if let Some(s) = lookups.get(&key) {
        return *s;
    }
    let state = match st.registry.get_latest_metadata(owner_res, ns, &r.name) {
        Ok(owner) if objects::meta_str(&owner, "uid") != Some(r.uid.as_str()) => OwnerState::Absent,
        Ok(owner) => {
            let waiting = objects::is_deleting(&owner)
                && objects::finalizers(&owner)
                    .iter()
                    .any(|f| f == FINALIZER_FOREGROUND);
            if waiting {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            }
        }
        Err(e) if e.code == 404 => OwnerState::Absent,
        Err(_) => OwnerState::Solid,
    };
    if lookups.len() >= GC_OWNER_LOOKUPS_CACHED_MAX {
        lookups.clear();
    }
    lookups.insert(key, state);
    state
}

/// Removes the references to `uids` from the object (if it still has the UID `uid`).
async fn remove_refs(
    st: &State,
    res: &Resource,
    namespace: &str,
    name: &str,
    uid: &str,
    uids: &[String],
) -> Result<(), ApiError> {
    let opts = UpdateOptions {
        strategy: true,
        ..Default::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, namespace, name, &opts, &mut |cur| {
            let mut new = cur.cloned().ok_or_else(|| res.not_found(name))?;
            if objects::meta_str(&new, "uid") != Some(uid) {
                return Err(res.not_found(name));
            }
            let m = objects::meta_mut(&mut new);
            m.shift_remove("resourceVersion");
            if let Some(list) = m.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                list.retain(|r| {
                    let u = r.get("uid").and_then(Value::as_str).unwrap_or("");
                    !uids.iter().any(|x| x == u)
                });
                if list.is_empty() {
                    m.shift_remove("ownerReferences");
                }
            }
            Ok(new)
        })
        .await;
    super::gone_ok(r)
}

/// Takes the garbage-collection finalizer off the owners nothing holds any more.
async fn finish_owners(
    st: &State,
    resources: &[&Resource],
    survey: &Survey,
) -> Result<(), ApiError> {
    for o in survey.owners.values() {
        if o.holding > 0 {
            continue;
        }
        let res = resources[o.res];
        super::set_finalizer(st, res, &o.namespace, &o.name, o.finalizer, false).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use OwnerState::{Absent, Orphaning, Solid, Waiting};

    /// Upstream's `attemptToDeleteItem` cases.
    #[test]
    fn dependents_are_decided_as_upstream() {
        let none: Vec<String> = vec![];
        let fg = vec!["foregroundDeletion".to_string()];
        let rm = |v: &[&str]| Action::RemoveRefs(v.iter().map(|s| s.to_string()).collect());
        /// Owners, whether it has dependents, its finalizers, and the action.
        type Case<'a> = (Vec<(&'a str, OwnerState)>, bool, &'a Vec<String>, Action);
        let rows: Vec<Case> = vec![
            (vec![("a", Solid)], false, &none, Action::Nothing),
            (
                vec![("a", Absent)],
                false,
                &none,
                Action::Delete("Background"),
            ),
            (
                vec![("a", Absent)],
                false,
                &fg,
                Action::Delete("Foreground"),
            ),
            (
                vec![("a", Waiting)],
                false,
                &none,
                Action::Delete("Background"),
            ),
            (
                vec![("a", Waiting)],
                true,
                &none,
                Action::Delete("Foreground"),
            ),
            (vec![("a", Solid), ("b", Absent)], false, &none, rm(&["b"])),
            (vec![("a", Solid), ("b", Waiting)], true, &none, rm(&["b"])),
            (vec![("a", Orphaning)], false, &none, rm(&["a"])),
            (
                vec![("a", Orphaning), ("b", Solid)],
                false,
                &none,
                rm(&["a"]),
            ),
            (
                vec![("a", Orphaning), ("b", Absent)],
                false,
                &none,
                rm(&["a", "b"]),
            ),
        ];
        for (owners, deps, fins, want) in rows {
            assert_eq!(decide(&owners, deps, fins), want, "{owners:?} {deps}");
        }
    }

    #[test]
    fn owner_references_are_read() {
        let obj = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1", "blockOwnerDeletion": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u2"},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "bad"}
        ]}});
        let refs = owner_refs(&obj);
        assert_eq!(refs.len(), 2);
        assert!(refs[0].block && !refs[1].block);
        assert_eq!(
            (refs[1].api_version.as_str(), refs[1].uid.as_str()),
            ("apps/v1", "u2")
        );
    }
}
