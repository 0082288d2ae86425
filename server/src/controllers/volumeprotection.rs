//! Volume protection, as upstream's kube-controller-manager `pvc-protection` and
//! `pv-protection` controllers do it (keel runs them in-process): the API server puts
//! `kubernetes.io/pvc-protection` on every new claim and `kubernetes.io/pv-protection` on
//! every new PersistentVolume (upstream's StorageObjectInUseProtection admission); this
//! controller removes the finalizer from a claim being deleted once no pod that has not
//! finished uses it, and from a volume being deleted once it is not Bound, so that they go.
//! Without it, claims would block their namespace's deletion forever.

use crate::limits::{NAMESPACE_PASS_INTERVAL_MIN, VOLUME_PROTECTION_RESYNC};
use crate::objects;
use crate::registry::Source;
use crate::selection::Selection;
use crate::state::State;
use keel_api::status::ApiError;
use serde_json::Value;
use std::sync::Arc;

pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_FINALIZER: &str = "kubernetes.io/pv-protection";

/// Runs the controller on its own thread with its own single-threaded runtime.
pub fn spawn(st: Arc<State>) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-volume-protection-controller", move || run(st))
}

/// Claims and volumes are watched; pods are not (a cluster's pod churn would wake every
/// pass): a claim whose last pod finishes is let go by the next resync.
async fn open_watches(st: &State) -> [Option<(Source, Selection)>; 2] {
    let routes = st.routes.load();
    [
        super::watch_all(st, routes.core("persistentvolumeclaims")).await,
        super::watch_all(st, routes.core("persistentvolumes")).await,
    ]
}

async fn run(st: Arc<State>) {
    let mut watches = open_watches(&st).await;
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = reconcile(&st).await {
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
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let pod_name = objects::name(pod);
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
    volumes.into_iter().flatten().any(|v| {
        let direct = v
            .pointer("/persistentVolumeClaim/claimName")
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
    pv.pointer("/status/phase").and_then(Value::as_str) == Some("Bound")
}

/// Whether stored bytes may be of an object being deleted: the pass parses only those.
fn maybe_deleting(stored: &[u8]) -> bool {
    const KEY: &[u8] = b"deletionTimestamp";
    stored.windows(KEY.len()).any(|w| w == KEY)
}

fn waiting_on(obj: &Value, finalizer: &str) -> bool {
    objects::is_deleting(obj) && objects::finalizers(obj).iter().any(|f| f == finalizer)
}

async fn reconcile(st: &State) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let (claims_res, volumes_res) = (
        routes.core("persistentvolumeclaims"),
        routes.core("persistentvolumes"),
    );
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
}
