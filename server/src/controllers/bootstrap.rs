//! First-start setup and start-up state: credentials, the admin kubeconfig, default
//! namespaces, the default ServiceCIDR, the `kubernetes` service (and its IPAddress), the
//! legacy token tracking date, the allocators' view of stored services and the
//! `kubernetes` service's Endpoints and EndpointSlice (this server's advertised address).
//! Objects are created through the registry, as any client's would be.

use crate::objects;
use crate::registry::CreateOptions;
use crate::routes::Resource;
use crate::state::State;
use base64::Engine as _;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The namespaces every cluster starts with.
pub const DEFAULT_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Creates `<data-dir>/tokens.csv` with an admin token on first start; returns its path.
pub fn ensure_token_file(data_dir: &Path) -> std::io::Result<PathBuf> {
    let path = data_dir.join("tokens.csv");
    if !path.exists() {
        let token = hex::encode(rand::random::<[u8; 24]>());
        let line = format!("{token},admin,admin,\"system:masters\"\n");
        write_private(&path, line.as_bytes())?;
    }
    Ok(path)
}

/// The first token of the file whose user is in `system:masters`.
pub fn admin_token(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find(|l| l.contains("system:masters"))
        .and_then(|l| l.split(',').next())
        .map(|t| t.trim().to_string())
}

/// Replaces `path` atomically with `data`, mode 0600 whatever the umask (and whatever mode a
/// leftover `.tmp` had): tokens and kubeconfigs are credentials.
fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = keel_engine::io::create_private_file(&tmp, false)?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(tmp, path)
}

/// Writes `<data-dir>/admin.kubeconfig` for `server` with the CA and the admin token.
pub fn write_kubeconfig(
    data_dir: &Path,
    server: &str,
    ca_pem: &[u8],
    token: &str,
) -> std::io::Result<PathBuf> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: keel\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: admin\n  user:\n    token: {token}\ncontexts:\n- name: keel\n  context:\n    cluster: keel\n    user: admin\n    namespace: default\ncurrent-context: keel\npreferences: {{}}\n"
    );
    let path = data_dir.join("admin.kubeconfig");
    write_private(&path, text.as_bytes())?;
    Ok(path)
}

/// Creates `obj` unless an object of that name exists.
async fn ensure(st: &State, res: &Resource, obj: Value) -> Result<(), String> {
    let ns = objects::meta_str(&obj, "namespace")
        .unwrap_or("")
        .to_string();
    if st
        .registry
        .exists(res, &ns, objects::name(&obj))
        .map_err(|e| e.message)?
    {
        return Ok(());
    }
    match st
        .registry
        .create(res, &ns, obj, &CreateOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        // Created meanwhile (by another API server on the same store).
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e.message),
    }
}

/// Default namespaces and the `kubernetes` service; allocations of stored services. Returns
/// the revision before its allocator pass and how soon that pass wanted the next, for the
/// `ipallocator` controller to go on from.
pub async fn bootstrap(
    st: &State,
    secure_port: u16,
) -> Result<(keel_engine::Revision, Option<std::time::Duration>), String> {
    let routes = st.routes.load();
    for ns in DEFAULT_NAMESPACES {
        let obj = json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": ns}});
        ensure(st, routes.core("namespaces"), obj).await?;
    }
    // The default ServiceCIDR, and IPAddress objects equal to the stored services' cluster
    // IPs (a restart finds them as they were, or repairs them), the taken IPs and node ports
    // from the one listing of the services, before any IP or port is handed out.
    let synced_at = st.registry.current_revision();
    let next = super::ipallocator::reconcile(st, std::time::Duration::ZERO, true)
        .await
        .map_err(|e| e.message)?;
    let ip = st.registry.allocators().first_ip().to_string();
    let svc = json!({
        "kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": secure_port}], "sessionAffinity": "None", "type": "ClusterIP"}
    });
    ensure(st, routes.core("services"), svc).await?;
    // Upstream's apiserver records the day it began tracking the use of legacy service-account
    // tokens; the controller manager's legacy token cleaner reads it (and warns without it).
    let tracking = json!({
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": LEGACY_TOKEN_TRACKING, "namespace": "kube-system"},
        "data": {"since": chrono::Utc::now().format("%Y-%m-%d").to_string()}
    });
    ensure(st, routes.core("configmaps"), tracking).await?;
    Ok((synced_at, next))
}

/// Points the `kubernetes` service's Endpoints and EndpointSlice at `ip:port` (this
/// server), as upstream's endpoint reconciler does at start: created, or replaced when they
/// say otherwise. A loopback or unspecified address is no endpoint (validation refuses it,
/// as upstream's reconciler finds): nothing is written and the reason is returned.
pub async fn endpoints(st: &State, ip: std::net::IpAddr, port: u16) -> Result<(), String> {
    if ip.is_loopback() || ip.is_unspecified() {
        return Err(format!(
            "advertise address {ip} is not reachable from other hosts: the kubernetes service has no endpoints (set --advertise-address)"
        ));
    }
    let routes = st.routes.load();
    let ports = json!([{"name": "https", "port": port, "protocol": "TCP"}]);
    let want_endpoints = json!({
        "kind": "Endpoints", "apiVersion": "v1",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": ip.to_string()}], "ports": ports}],
    });
    replace_unless_equal(st, routes.core("endpoints"), want_endpoints, &["subsets"]).await?;
    let slices = routes
        .lookup("discovery.k8s.io", "v1", "endpointslices")
        .ok_or("EndpointSlices are served")?;
    let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    let want_slice = json!({
        "kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": family,
        "endpoints": [{"addresses": [ip.to_string()], "conditions": {"ready": true}}],
        "ports": ports,
    });
    replace_unless_equal(
        st,
        slices,
        want_slice,
        &["addressType", "endpoints", "ports"],
    )
    .await
}

/// Creates `want`, or sets its `fields` (and labels) on the stored object when they differ.
async fn replace_unless_equal(
    st: &State,
    res: &Resource,
    want: Value,
    fields: &[&str],
) -> Result<(), String> {
    let (ns, name) = (
        objects::meta_str(&want, "namespace")
            .unwrap_or("")
            .to_string(),
        objects::name(&want).to_string(),
    );
    let current = match st.registry.get_latest(res, &ns, &name).await {
        Ok((v, _)) => v,
        Err(e) if e.code == 404 => return ensure(st, res, want).await,
        Err(e) => return Err(e.message),
    };
    let labels = want
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_default();
    let same = fields.iter().all(|f| current.get(*f) == want.get(*f))
        && labels.as_object().is_some_and(|l| {
            l.iter()
                .all(|(k, v)| current.pointer("/metadata/labels").and_then(|c| c.get(k)) == Some(v))
        });
    if same {
        return Ok(());
    }
    let opts = crate::registry::UpdateOptions {
        strategy: true,
        ..Default::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, &ns, &name, &opts, &mut |cur| {
            let mut new = cur.cloned().ok_or_else(|| res.not_found(&name))?;
            objects::meta_mut(&mut new).shift_remove("resourceVersion");
            for f in fields {
                new[*f] = want[*f].clone();
            }
            if let Some(l) = labels.as_object() {
                let m = objects::meta_mut(&mut new);
                let have = m.entry("labels").or_insert_with(|| json!({}));
                if let Some(h) = have.as_object_mut() {
                    for (k, v) in l {
                        h.insert(k.clone(), v.clone());
                    }
                }
            }
            Ok(new)
        })
        .await;
    super::gone_ok(r).map_err(|e| e.message)
}

/// The ConfigMap that says since when legacy service-account tokens are tracked.
pub const LEGACY_TOKEN_TRACKING: &str = "kube-apiserver-legacy-service-account-token-tracking";

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// Tokens and the admin kubeconfig are 0600, even over a leftover world-readable `.tmp`.
    #[test]
    fn credentials_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let leftover = dir.join("admin.tmp");
        std::fs::write(&leftover, "old").unwrap();
        std::fs::set_permissions(&leftover, std::fs::Permissions::from_mode(0o666)).unwrap();
        let kc = write_kubeconfig(dir, "https://127.0.0.1:6443", b"ca", "token").unwrap();
        let tokens = ensure_token_file(dir).unwrap();
        assert_eq!((mode(&kc), mode(&tokens)), (0o600, 0o600));
        assert!(admin_token(&tokens).is_some());
    }
}
