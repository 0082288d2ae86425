//! The `extension-apiserver-authentication` ConfigMap in `kube-system` (upstream's
//! cluster-authentication-trust controller): under `client-ca-file`, the CA bundle that signs
//! the client certificates this server accepts. Aggregated API servers, metrics-server and
//! other components read it at start to trust the clients the API server does.
//!
//! Kept current through the registry like any client's writes: created when missing
//! (recreated when deleted), and this server's CA added to the bundle when absent. The
//! certificates already in the bundle stay, first and in their order, as upstream merges the
//! CAs of every API server sharing a store. keel has no front-proxy (request-header)
//! authentication, so the `requestheader-*` keys are not written. A watch of the object wakes
//! the controller; it also checks every `AUTH_TRUST_RESYNC`.

use crate::limits::{AUTH_TRUST_PASS_INTERVAL_MIN, AUTH_TRUST_RESYNC};
use crate::registry::{CreateOptions, Source, UpdateOptions};
use crate::repr::{Encoder, Format};
use crate::selection::{Filter, Selection};
use crate::state::State;
use keel_api::rv::WatchStart;
use keel_api::status::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;

/// The ConfigMap's namespace and name.
pub const NAMESPACE: &str = "kube-system";
pub const NAME: &str = "extension-apiserver-authentication";
/// The key of the client CA bundle.
pub const CLIENT_CA_KEY: &str = "client-ca-file";

/// The PEM blocks of `bundle` (text outside `-----BEGIN`/`-----END` lines dropped), each
/// with its lines trimmed and ending in one newline.
pub fn pem_blocks(bundle: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in bundle.lines().map(str::trim) {
        if line.starts_with("-----BEGIN ") {
            current = Some(String::new());
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line);
            block.push('\n');
            if line.starts_with("-----END ") {
                blocks.extend(current.take());
            }
        }
    }
    blocks
}

/// `existing` with the blocks of `ours` that it lacks appended: existing blocks first, in
/// order, each once.
pub fn merge_bundle(existing: &str, ours: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for b in pem_blocks(existing).into_iter().chain(pem_blocks(ours)) {
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out.concat()
}

/// Makes the ConfigMap hold `client_ca` in its bundle; true when it wrote something.
pub async fn reconcile(st: &State, client_ca: &str) -> Result<bool, ApiError> {
    let routes = st.routes.load();
    let res = routes.core("configmaps");
    let current = match st.registry.get_latest(res, NAMESPACE, NAME).await {
        Ok((v, _)) => Some(v),
        Err(e) if e.code == 404 => None,
        Err(e) => return Err(e),
    };
    let Some(current) = current else {
        let obj = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {CLIENT_CA_KEY: merge_bundle("", client_ca)}
        });
        return match st
            .registry
            .create(res, NAMESPACE, obj, &CreateOptions::default())
            .await
        {
            Ok(_) => Ok(true),
            // Created meanwhile (another API server on the same store): the next pass checks it.
            Err(e) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        };
    };
    let have = current
        .pointer(&format!("/data/{CLIENT_CA_KEY}"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if merge_bundle(have, client_ca) == merge_bundle(have, "") && !have.is_empty() {
        return Ok(false);
    }
    let opts = UpdateOptions {
        dry_run: false,
        subresource: "",
        replace: false,
        strategy: true,
    };
    st.registry
        .guaranteed_update(res, NAMESPACE, NAME, &opts, &mut |cur| {
            let mut new = cur.cloned().ok_or_else(|| res.not_found(NAME))?;
            let have = new
                .pointer(&format!("/data/{CLIENT_CA_KEY}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if !new.get("data").is_some_and(Value::is_object) {
                new["data"] = json!({});
            }
            new["data"][CLIENT_CA_KEY] = Value::String(merge_bundle(&have, client_ca));
            if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            Ok(new)
        })
        .await?;
    Ok(true)
}

/// A watch of the ConfigMap from now on (only its wake-ups are used).
async fn watch(st: &State) -> Option<(Source, Selection)> {
    let routes = st.routes.load();
    let res = routes.core("configmaps");
    let sel = Selection::new(
        Filter::everything(res.strategy),
        Some(NAME.to_string()),
        Encoder::new(Format::Json, res.info.clone()),
    );
    let from = st.registry.current_revision();
    let w = st
        .registry
        .watch(res, NAMESPACE, WatchStart::After(from), &sel)
        .await
        .ok()?;
    Some((w.source, sel))
}

/// Runs the controller on its own thread with its own single-threaded runtime.
pub fn spawn(st: Arc<State>, client_ca: String) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-auth-trust-controller", move || run(st, client_ca))
}

async fn run(st: Arc<State>, client_ca: String) {
    let mut w = watch(&st).await;
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = reconcile(&st, &client_ca).await {
            eprintln!("auth trust controller: {}", e.message);
        }
        tokio::time::sleep_until(pass_started + AUTH_TRUST_PASS_INTERVAL_MIN).await;
        let mut watches = [w.take()];
        let ended = super::wait_for_change(&mut watches, AUTH_TRUST_RESYNC).await;
        let [kept] = watches;
        w = if ended { watch(&st).await } else { kept };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "-----BEGIN CERTIFICATE-----\nAAAA\nAA==\n-----END CERTIFICATE-----\n";
    const B: &str = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";

    #[test]
    fn bundles_merge_keeping_what_is_there() {
        assert_eq!(merge_bundle("", A), A);
        // Ours appended after theirs; already there: unchanged.
        assert_eq!(merge_bundle(B, A), format!("{B}{A}"));
        assert_eq!(merge_bundle(&format!("{A}{B}"), A), format!("{A}{B}"));
        // Whitespace and text around blocks do not make a certificate new.
        let messy = format!("comment\n  {}\r\n\n{B}", A.trim().replace('\n', "\r\n  "));
        assert_eq!(merge_bundle(&messy, A), format!("{A}{B}"));
        // Duplicates in what is there are dropped.
        assert_eq!(merge_bundle(&format!("{B}{B}"), ""), B);
        assert_eq!(pem_blocks("no pem here"), Vec::<String>::new());
    }
}
