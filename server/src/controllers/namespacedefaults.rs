//! What every namespace holds for the pods in it, as two of kube-controller-manager's
//! controllers keep it (keel runs them in-process, each governed by `--controllers`):
//! - `serviceaccount-controller`: the `default` ServiceAccount, created in every namespace
//!   not being deleted, and again when deleted;
//! - `root-ca-certificate-publisher-controller`: the `kube-root-ca.crt` ConfigMap, whose
//!   `ca.crt` is the CA bundle in-cluster clients verify this server with (keel's CA, or
//!   `--root-ca-file`), created where missing and put back when changed.
//!
//! A pass looks at every namespace (two reads each, no cache): it runs when a namespace, a
//! `default` ServiceAccount or a `kube-root-ca.crt` ConfigMap changes (watches selecting
//! those names only), and every `NAMESPACE_DEFAULTS_RESYNC`.

use crate::limits::{NAMESPACE_DEFAULTS_PASS_INTERVAL_MIN, NAMESPACE_DEFAULTS_RESYNC};
use crate::registry::{CreateOptions, Source, Tracking, UpdateOptions};
use crate::repr::{Encoder, Format};
use crate::routes::Resource;
use crate::selection::{Filter, Selection};
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::rv::WatchStart;
use keel_api::status::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;

pub const SERVICE_ACCOUNT: &str = "default";
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
pub const ROOT_CA_KEY: &str = "ca.crt";
/// The ConfigMap's description, as upstream's publisher writes it.
pub const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
/// The field manager of the objects, as upstream's controllers run in it.
const MANAGER: &str = "kube-controller-manager";

/// Which of the two controllers run, and the CA bundle the second publishes.
#[derive(Clone, Debug)]
pub struct Parts {
    pub service_accounts: bool,
    pub root_ca: Option<String>,
}

pub fn spawn(st: Arc<State>, parts: Parts) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-namespace-defaults-controller", move || run(st, parts))
}

async fn run(st: Arc<State>, parts: Parts) {
    let mut watches = open(&st, &parts).await;
    loop {
        let started = tokio::time::Instant::now();
        if let Err(e) = pass(&st, &parts).await {
            eprintln!("namespace defaults controller: {}", e.message);
        }
        tokio::time::sleep_until(started + NAMESPACE_DEFAULTS_PASS_INTERVAL_MIN).await;
        if super::wait_for_change(&mut watches, NAMESPACE_DEFAULTS_RESYNC).await {
            watches = open(&st, &parts).await;
        }
    }
}

/// Watches of namespaces and of the objects kept (by name, in every namespace).
async fn open(st: &State, parts: &Parts) -> Vec<Option<(Source, Selection)>> {
    let routes = st.routes.load();
    let mut out = vec![super::watch_all(st, routes.core("namespaces")).await];
    if parts.service_accounts {
        out.push(watch_named(st, routes.core("serviceaccounts"), SERVICE_ACCOUNT).await);
    }
    if parts.root_ca.is_some() {
        out.push(watch_named(st, routes.core("configmaps"), ROOT_CA_CONFIGMAP).await);
    }
    out
}

async fn watch_named(st: &State, res: &Resource, name: &str) -> Option<(Source, Selection)> {
    let sel = Selection::new(
        Filter::everything(res.strategy),
        Some(name.to_string()),
        Encoder::new(Format::Json, res.info.clone()),
    );
    let from = st.registry.current_revision();
    let w = st
        .registry
        .watch(res, "", WatchStart::After(from), &sel)
        .await
        .ok()?;
    Some((w.source, sel))
}

/// One pass over every namespace; also what start-up runs once before serving.
pub async fn pass(st: &State, parts: &Parts) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let namespaces = st
        .registry
        .list_all_stored(routes.core("namespaces"), "")
        .await?;
    let mut first_error = None;
    for kv in namespaces {
        let ns = crate::objects::parse_stored(kv.value())?;
        let terminating = ns.at("/metadata/deletionTimestamp").is_some()
            || ns.at("/status/phase").and_then(Value::as_str) == Some("Terminating");
        let Some(name) = ns.at("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        if terminating {
            continue;
        }
        let mut r = Ok(());
        if parts.service_accounts {
            r = r.and(ensure_service_account(st, name).await);
        }
        if let Some(ca) = &parts.root_ca {
            r = r.and(ensure_root_ca(st, name, ca).await);
        }
        if let Err(e) = r {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn create_options() -> CreateOptions {
    CreateOptions {
        tracking: Tracking {
            manager: Some(MANAGER.into()),
            applied: false,
        },
        ..Default::default()
    }
}

/// Created meanwhile, or the namespace began terminating: the next pass looks again.
fn settled(r: Result<(), ApiError>) -> Result<(), ApiError> {
    match r {
        Err(e) if e.code == 409 || e.code == 403 || e.code == 404 => Ok(()),
        r => r,
    }
}

async fn ensure_service_account(st: &State, ns: &str) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let res = routes.core("serviceaccounts");
    if st.registry.exists(res, ns, SERVICE_ACCOUNT)? {
        return Ok(());
    }
    let obj = json!({
        "kind": "ServiceAccount", "apiVersion": "v1",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns},
    });
    settled(
        st.registry
            .create(res, ns, obj, &create_options())
            .await
            .map(|_| ()),
    )
}

async fn ensure_root_ca(st: &State, ns: &str, ca: &str) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let res = routes.core("configmaps");
    let current = match st.registry.get_latest_metadata(res, ns, ROOT_CA_CONFIGMAP) {
        Ok(v) => Some(v),
        Err(e) if e.code == 404 => None,
        Err(e) => return Err(e),
    };
    let Some(current) = current else {
        let obj = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {
                "name": ROOT_CA_CONFIGMAP, "namespace": ns,
                "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
            },
            "data": {ROOT_CA_KEY: ca},
        });
        return settled(
            st.registry
                .create(res, ns, obj, &create_options())
                .await
                .map(|_| ()),
        );
    };
    if is_current(&current, ca) {
        return Ok(());
    }
    // As upstream's publisher: the data is replaced whole and the description put back.
    let opts = UpdateOptions {
        strategy: true,
        ..Default::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, ns, ROOT_CA_CONFIGMAP, &opts, &mut |cur| {
            let mut new = cur
                .cloned()
                .ok_or_else(|| res.not_found(ROOT_CA_CONFIGMAP))?;
            crate::objects::meta_mut(&mut new).shift_remove("resourceVersion");
            new["data"] = json!({ROOT_CA_KEY: ca});
            if let Some(o) = new.as_object_mut() {
                o.shift_remove("binaryData");
            }
            let m = crate::objects::meta_mut(&mut new);
            let ann = m.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = ann.as_object_mut() {
                a.insert(
                    "kubernetes.io/description".into(),
                    json!(ROOT_CA_DESCRIPTION),
                );
            }
            Ok(new)
        })
        .await;
    settled(super::gone_ok(r))
}

/// Whether the ConfigMap holds exactly the bundle and the description.
pub fn is_current(cm: &Value, ca: &str) -> bool {
    let data_ok = cm
        .get("data")
        .and_then(Value::as_object)
        .is_some_and(|d| d.len() == 1 && d.get(ROOT_CA_KEY).and_then(Value::as_str) == Some(ca));
    let described = cm
        .at("/metadata/annotations/kubernetes.io~1description")
        .and_then(Value::as_str)
        == Some(ROOT_CA_DESCRIPTION);
    data_ok && described && cm.get("binaryData").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_ca_configmap_is_current_only_when_exactly_as_published() {
        let good = json!({
            "metadata": {"annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
            "data": {"ca.crt": "PEM"},
        });
        assert!(is_current(&good, "PEM"));
        assert!(!is_current(&good, "OTHER"));
        let mut extra = good.clone();
        extra["data"]["more"] = json!("x");
        assert!(!is_current(&extra, "PEM"));
        let mut undescribed = good.clone();
        undescribed["metadata"] = json!({});
        assert!(!is_current(&undescribed, "PEM"));
        let mut binary = good.clone();
        binary["binaryData"] = json!({"b": "AA=="});
        assert!(!is_current(&binary, "PEM"));
    }
}
