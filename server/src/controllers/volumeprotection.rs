//! Volume protection, as upstream's kube-controller-manager `pvc-protection`,
//! `pv-protection` and `vac-protection` controllers do it (keel runs them in-process): the
//! API server puts `kubernetes.io/pvc-protection` on every new claim,
//! `kubernetes.io/pv-protection` on every new PersistentVolume and
//! `kubernetes.io/vac-protection` on every new VolumeAttributesClass (upstream's
//! StorageObjectInUseProtection admission); this controller removes the finalizer from a
//! claim being deleted once no pod that has not finished uses it, from a volume being deleted
//! once it is not Bound, and from a class being deleted once no claim and no volume names it,
//! so that they go. Without it, claims would block their namespace's deletion forever and
//! deleted classes would stay terminating. As upstream, it also puts the class finalizer back
//! on a class not being deleted that lacks it (one written before the class was protected, or
//! whose finalizer a client took off).
//!
//! A pass reads everything again (no cache, no per-object queue as upstream): deletions are
//! rare, and byte checks keep a pass from parsing claims and volumes it cannot act on.

use crate::limits::{NAMESPACE_PASS_INTERVAL_MIN, VOLUME_PROTECTION_RESYNC};
use crate::objects;
use crate::registry::Source;
use crate::routes::{Resource, Routes};
use crate::selection::Selection;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

// The finalizers the strategies add on create: the ones released here.
pub const PVC_FINALIZER: &str = keel_strategy::PVC_PROTECTION_FINALIZER;
pub const PV_FINALIZER: &str = keel_strategy::PV_PROTECTION_FINALIZER;
pub const VAC_FINALIZER: &str = keel_strategy::VAC_PROTECTION_FINALIZER;

/// Where a claim names a VolumeAttributesClass (upstream's controller: the class asked for,
/// the class the volume has, and the target of a modification under way).
const CLAIM_CLASS_FIELDS: &[&str] = &[
    "/spec/volumeAttributesClassName",
    "/status/currentVolumeAttributesClassName",
    "/status/modifyVolumeStatus/targetVolumeAttributesClassName",
];
/// Where a PersistentVolume names one.
const VOLUME_CLASS_FIELDS: &[&str] = &["/spec/volumeAttributesClassName"];

/// Which of upstream's three protection controllers this thread stands for
/// (`--controllers`).
#[derive(Clone, Copy, Debug)]
pub struct Parts {
    pub claims: bool,
    pub volumes: bool,
    pub classes: bool,
}

/// Runs the controller on its own thread with its own single-threaded runtime.
pub fn spawn(st: Arc<State>, parts: Parts) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-volume-protection-controller", move || run(st, parts))
}

/// Claims, volumes and (when served) VolumeAttributesClasses are watched; pods are not (a
/// cluster's pod churn would wake every pass): a claim whose last pod finishes is let go by
/// the next resync. A claim or volume that stops naming a class, or goes, wakes a pass that
/// lets the class go.
async fn open_watches(st: &State) -> Vec<Option<(Source, Selection)>> {
    let routes = st.routes.load();
    let mut watches = vec![
        super::watch_all(st, routes.core("persistentvolumeclaims")).await,
        super::watch_all(st, routes.core("persistentvolumes")).await,
    ];
    if let Some(classes) = attributes_classes(&routes) {
        watches.push(super::watch_all(st, classes).await);
    }
    watches
}

/// VolumeAttributesClasses at a served version, if any is (every version stores its objects
/// in the same place; emulating a release before 1.34 with the betas off serves none).
fn attributes_classes(routes: &Routes) -> Option<&Resource> {
    ["v1", "v1beta1", "v1alpha1"]
        .into_iter()
        .find_map(|v| routes.lookup("storage.k8s.io", v, "volumeattributesclasses"))
}

async fn run(st: Arc<State>, parts: Parts) {
    let mut watches = open_watches(&st).await;
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = reconcile(&st, parts).await {
            eprintln!("volume protection controller: {}", e.message);
        }
        tokio::time::sleep_until(pass_started + NAMESPACE_PASS_INTERVAL_MIN).await;
        if super::wait_for_change(&mut watches, VOLUME_PROTECTION_RESYNC).await {
            watches = open_watches(&st).await;
        }
    }
}

/// Whether `pod` (not finished) mounts the claim `claim` of its namespace, directly or as
/// the claim of a generic ephemeral volume (named `<pod>-<volume>`).
pub fn pod_uses_claim(pod: &Value, claim: &str) -> bool {
    let phase = pod.at("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let pod_name = objects::name(pod);
    let volumes = pod.at("/spec/volumes").and_then(Value::as_array);
    volumes.into_iter().flatten().any(|v| {
        let direct = v
            .at("/persistentVolumeClaim/claimName")
            .and_then(Value::as_str)
            == Some(claim);
        let ephemeral = v.get("ephemeral").is_some_and(|e| !e.is_null())
            && v.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| format!("{pod_name}-{n}") == claim);
        direct || ephemeral
    })
}

/// Whether a PersistentVolume being deleted is still in use (upstream: while Bound).
pub fn volume_in_use(pv: &Value) -> bool {
    pv.at("/status/phase").and_then(Value::as_str) == Some("Bound")
}

/// The VolumeAttributesClasses `obj` names in `fields` (empty names are none).
pub fn classes_named<'a>(obj: &'a Value, fields: &'a [&str]) -> impl Iterator<Item = &'a str> {
    fields
        .iter()
        .filter_map(|f| obj.at(f).and_then(Value::as_str))
        .filter(|n| !n.is_empty())
}

fn contains(stored: &[u8], key: &[u8]) -> bool {
    stored.windows(key.len()).any(|w| w == key)
}

/// Whether stored bytes may be of an object being deleted: the pass parses only those.
fn maybe_deleting(stored: &[u8]) -> bool {
    contains(stored, b"deletionTimestamp")
}

/// Whether stored bytes may name a VolumeAttributesClass: the tail every one of
/// [`CLAIM_CLASS_FIELDS`] and [`VOLUME_CLASS_FIELDS`] ends with.
fn maybe_names_class(stored: &[u8]) -> bool {
    contains(stored, b"olumeAttributesClassName")
}

fn waiting_on(obj: &Value, finalizer: &str) -> bool {
    objects::is_deleting(obj) && objects::finalizers(obj).iter().any(|f| f == finalizer)
}

async fn reconcile(st: &State, parts: Parts) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let (claims_res, volumes_res) = (
        routes.core("persistentvolumeclaims"),
        routes.core("persistentvolumes"),
    );
    if parts.claims {
        reconcile_claims(st, &routes, claims_res).await?;
    }
    if parts.volumes {
        reconcile_volumes(st, volumes_res).await?;
    }
    // After the claims and volumes: one let go above is gone by now, and so is its hold on
    // a class.
    if let Some(classes_res) = attributes_classes(&routes).filter(|_| parts.classes) {
        reconcile_classes(st, &routes, classes_res).await?;
    }
    Ok(())
}

async fn reconcile_claims(
    st: &State,
    routes: &Routes,
    claims_res: &Resource,
) -> Result<(), ApiError> {
    let (claims, _) = st.registry.list_all(claims_res, "").await?;
    for kv in claims {
        if !maybe_deleting(kv.value()) {
            continue;
        }
        let claim = objects::parse_stored(kv.value())?;
        if !waiting_on(&claim, PVC_FINALIZER) {
            continue;
        }
        let ns = objects::meta_str(&claim, "namespace")
            .unwrap_or("")
            .to_string();
        let name = objects::name(&claim).to_string();
        let (pods, _) = st.registry.list_all(routes.core("pods"), &ns).await?;
        let mut used = false;
        for p in pods {
            used |= pod_uses_claim(&objects::parse_stored(p.value())?, &name);
        }
        if !used {
            super::set_finalizer(st, claims_res, &ns, &name, PVC_FINALIZER, false).await?;
        }
    }
    Ok(())
}

async fn reconcile_volumes(st: &State, volumes_res: &Resource) -> Result<(), ApiError> {
    let (volumes, _) = st.registry.list_all(volumes_res, "").await?;
    for kv in volumes {
        if !maybe_deleting(kv.value()) {
            continue;
        }
        let pv = objects::parse_stored(kv.value())?;
        if waiting_on(&pv, PV_FINALIZER) && !volume_in_use(&pv) {
            let name = objects::name(&pv).to_string();
            super::set_finalizer(st, volumes_res, "", &name, PV_FINALIZER, false).await?;
        }
    }
    Ok(())
}

/// Puts the class finalizer on classes lacking it, and takes it off classes being deleted
/// that no claim and no volume names. Claims and volumes are read after the classes, so what
/// uses a class is never older than the class seen; a claim created between that read and
/// the finalizer's removal is missed, as upstream's informer caches miss it. Every class is
/// parsed (they are few).
async fn reconcile_classes(st: &State, routes: &Routes, res: &Resource) -> Result<(), ApiError> {
    let (classes, _) = st.registry.list_all(res, "").await?;
    let mut deleting = Vec::new();
    for kv in classes {
        let class = objects::parse_stored(kv.value())?;
        let name = objects::name(&class).to_string();
        if waiting_on(&class, VAC_FINALIZER) {
            deleting.push(name);
        } else if !objects::is_deleting(&class)
            && !objects::finalizers(&class)
                .iter()
                .any(|f| f == VAC_FINALIZER)
        {
            super::set_finalizer(st, res, "", &name, VAC_FINALIZER, true).await?;
        }
    }
    if deleting.is_empty() {
        return Ok(());
    }
    let used = classes_in_use(st, routes).await?;
    for name in deleting.iter().filter(|n| !used.contains(n.as_str())) {
        super::set_finalizer(st, res, "", name, VAC_FINALIZER, false).await?;
    }
    Ok(())
}

/// Every VolumeAttributesClass a claim (in any namespace) or a PersistentVolume names.
async fn classes_in_use(st: &State, routes: &Routes) -> Result<HashSet<String>, ApiError> {
    let mut used = HashSet::new();
    for (plural, fields) in [
        ("persistentvolumeclaims", CLAIM_CLASS_FIELDS),
        ("persistentvolumes", VOLUME_CLASS_FIELDS),
    ] {
        let (objs, _) = st.registry.list_all(routes.core(plural), "").await?;
        for kv in objs {
            if !maybe_names_class(kv.value()) {
                continue;
            }
            let obj = objects::parse_stored(kv.value())?;
            used.extend(classes_named(&obj, fields).map(String::from));
        }
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claim_use_table() {
        let pod = |phase: &str, volumes: Value| {
            json!({"metadata": {"name": "p"}, "spec": {"volumes": volumes},
                   "status": {"phase": phase}})
        };
        let direct = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]);
        let ephemeral = json!([{"name": "v", "ephemeral": {"volumeClaimTemplate": {}}}]);
        let cases = [
            (pod("Running", direct.clone()), "c", true),
            (pod("Pending", direct.clone()), "other", false),
            (pod("Succeeded", direct.clone()), "c", false),
            (pod("Failed", direct), "c", false),
            (pod("Running", ephemeral.clone()), "p-v", true),
            (pod("Running", ephemeral), "v", false),
            (
                pod("Running", json!([{"name": "e", "emptyDir": {}}])),
                "c",
                false,
            ),
        ];
        for (p, claim, want) in cases {
            assert_eq!(pod_uses_claim(&p, claim), want, "{p} {claim}");
        }
        assert!(volume_in_use(&json!({"status": {"phase": "Bound"}})));
        assert!(!volume_in_use(&json!({"status": {"phase": "Released"}})));
    }

    #[test]
    fn class_use_table() {
        let claim = json!({"spec": {"volumeAttributesClassName": "asked"},
            "status": {"currentVolumeAttributesClassName": "current",
                       "modifyVolumeStatus": {"targetVolumeAttributesClassName": "target",
                                              "status": "InProgress"}}});
        let cases = [
            (
                claim,
                CLAIM_CLASS_FIELDS,
                vec!["asked", "current", "target"],
            ),
            // Empty and null names are none; a volume's status names no class.
            (
                json!({"spec": {"volumeAttributesClassName": ""},
                       "status": {"currentVolumeAttributesClassName": null}}),
                CLAIM_CLASS_FIELDS,
                vec![],
            ),
            (
                json!({"spec": {"volumeAttributesClassName": "v"},
                       "status": {"currentVolumeAttributesClassName": "x"}}),
                VOLUME_CLASS_FIELDS,
                vec!["v"],
            ),
            (json!({"spec": {}}), VOLUME_CLASS_FIELDS, vec![]),
        ];
        for (obj, fields, want) in cases {
            assert_eq!(
                classes_named(&obj, fields).collect::<Vec<_>>(),
                want,
                "{obj}"
            );
        }
    }

    /// The byte check a pass uses to skip claims and volumes must match every field a class
    /// is named in, or a class in use could be let go.
    #[test]
    fn class_fields_pass_the_byte_check() {
        for field in CLAIM_CLASS_FIELDS.iter().chain(VOLUME_CLASS_FIELDS) {
            let last = field.rsplit('/').next().unwrap();
            assert!(maybe_names_class(last.as_bytes()), "{field}");
        }
        assert!(!maybe_names_class(br#"{"spec":{"storageClassName":"s"}}"#));
    }
}
