//! The `extension-apiserver-authentication` ConfigMap in `kube-system` (upstream's
//! cluster-authentication-trust controller): under `client-ca-file`, the CA bundle that signs
//! the client certificates this server accepts. Aggregated API servers, metrics-server and
//! other components read it at start to trust the clients the API server does.
//!
//! Kept current through the registry like any client's writes: created when missing
//! (recreated when deleted), and this server's CA added to the bundle when absent. The
//! certificates already in the bundle stay, first and in their order, as upstream merges the
//! CAs of every API server sharing a store. The `requestheader-*` keys name what request-header
//! authentication trusts: the CA of the front-proxy client certificate keel presents when it
//! proxies to an aggregated API server (`crate::aggregator`), the names that certificate may
//! carry and the user headers (`--requestheader-*`; lists merged as upstream merges them). A
//! watch of the object wakes the controller; it also checks every `AUTH_TRUST_RESYNC`.

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

/// What request-header (front-proxy) authentication trusts, published under the
/// `requestheader-*` keys: the CA of the proxy's client certificates, the names they may
/// carry and the headers naming the user.
#[derive(Clone, Debug, Default)]
pub struct RequestHeader {
    pub ca_pem: String,
    /// The names and headers (`--requestheader-*`).
    pub auth: crate::auth::RequestHeaderAuth,
}

/// `have` (a JSON list of strings, as upstream writes them) with `ours` added, each once.
pub fn merge_list(have: &str, ours: &[String]) -> String {
    let mut out: Vec<String> = serde_json::from_str(have).unwrap_or_default();
    for o in ours {
        if !out.contains(o) {
            out.push(o.clone());
        }
    }
    serde_json::to_string(&out).expect("JSON")
}

/// The ConfigMap's data with this server's trust merged in (keys in upstream's order: Go
/// writes a map's keys sorted).
pub fn merged_data(
    have: &serde_json::Map<String, Value>,
    client_ca: &str,
    front: Option<&RequestHeader>,
) -> serde_json::Map<String, Value> {
    let text = |k: &str| have.get(k).and_then(Value::as_str).unwrap_or("");
    let mut data: std::collections::BTreeMap<String, Value> =
        have.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    data.insert(
        CLIENT_CA_KEY.into(),
        merge_bundle(text(CLIENT_CA_KEY), client_ca).into(),
    );
    if let Some(f) = front {
        let lists = [
            ("requestheader-allowed-names", f.auth.allowed_names.clone()),
            (
                "requestheader-extra-headers-prefix",
                f.auth.extra_prefixes.clone(),
            ),
            ("requestheader-group-headers", f.auth.group_headers.clone()),
            (
                "requestheader-username-headers",
                f.auth.username_headers.clone(),
            ),
        ];
        for (k, ours) in lists {
            data.insert(k.into(), merge_list(text(k), &ours).into());
        }
        data.insert(
            "requestheader-client-ca-file".into(),
            merge_bundle(text("requestheader-client-ca-file"), &f.ca_pem).into(),
        );
    }
    data.into_iter().collect()
}

/// Makes the ConfigMap hold `client_ca` (and the request-header trust) in its data; true
/// when it wrote something.
pub async fn reconcile(
    st: &State,
    client_ca: &str,
    front: Option<&RequestHeader>,
) -> Result<bool, ApiError> {
    let routes = st.routes.load();
    let res = routes.core("configmaps");
    let current = match st.registry.get_latest(res, NAMESPACE, NAME).await {
        Ok((v, _)) => Some(v),
        Err(e) if e.code == 404 => None,
        Err(e) => return Err(e),
    };
    let empty = serde_json::Map::new();
    let Some(current) = current else {
        let obj = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": merged_data(&empty, client_ca, front),
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
        .get("data")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let want = merged_data(have, client_ca, front);
    let same = want.len() == have.len() && want.iter().all(|(k, v)| have.get(k) == Some(v));
    if same {
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
                .get("data")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            new["data"] = Value::Object(merged_data(&have, client_ca, front));
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
pub fn spawn(
    st: Arc<State>,
    client_ca: String,
    front: Option<RequestHeader>,
) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-auth-trust-controller", move || {
        run(st, client_ca, front)
    })
}

async fn run(st: Arc<State>, client_ca: String, front: Option<RequestHeader>) {
    let mut w = watch(&st).await;
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = reconcile(&st, &client_ca, front.as_ref()).await {
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

    #[test]
    fn request_header_trust_merges_in_sorted_keys() {
        let mut have = serde_json::Map::new();
        have.insert("requestheader-allowed-names".into(), r#"["other"]"#.into());
        let front = RequestHeader {
            ca_pem: B.into(),
            auth: crate::auth::RequestHeaderAuth {
                allowed_names: vec!["front-proxy-client".into()],
                username_headers: vec!["X-Remote-User".into()],
                uid_headers: vec![],
                group_headers: vec!["X-Remote-Group".into()],
                extra_prefixes: vec!["X-Remote-Extra-".into()],
            },
        };
        let data = merged_data(&have, A, Some(&front));
        let keys: Vec<&str> = data.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "client-ca-file",
                "requestheader-allowed-names",
                "requestheader-client-ca-file",
                "requestheader-extra-headers-prefix",
                "requestheader-group-headers",
                "requestheader-username-headers"
            ]
        );
        assert_eq!(
            data["requestheader-allowed-names"],
            r#"["other","front-proxy-client"]"#
        );
        assert_eq!(
            data["requestheader-username-headers"],
            r#"["X-Remote-User"]"#
        );
        assert_eq!(data["requestheader-client-ca-file"], B);
        // Merged again: unchanged.
        assert_eq!(merged_data(&data, A, Some(&front)), data);
        // Without request-header trust only the client CA is written.
        assert_eq!(merged_data(&serde_json::Map::new(), A, None).len(), 1);
    }
}
