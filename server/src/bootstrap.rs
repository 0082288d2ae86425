//! First-start setup and start-up state: credentials, the admin kubeconfig, default
//! namespaces, the `kubernetes` service and the allocators' view of stored services.

use crate::app::App;
use crate::objects::{self, Spliced};
use crate::store::{Location, ReadPoint};
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

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
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

/// Creates an object unless one of that name exists, applying the type's create strategy.
async fn ensure(
    app: &App,
    group: &str,
    version: &str,
    plural: &str,
    mut obj: Value,
) -> Result<(), String> {
    let info = app
        .catalog
        .lookup(group, version, plural)
        .ok_or_else(|| format!("{plural} not served"))?;
    let ns = objects::meta_str(&obj, "namespace")
        .unwrap_or("")
        .to_string();
    let key = Location::of(app.catalog, info).key(&ns, objects::name(&obj));
    if app
        .storage
        .get(&key, ReadPoint::Latest)
        .await
        .map_err(|e| e.message)?
        .is_some()
    {
        return Ok(());
    }
    objects::set_meta(&mut obj, "uid", objects::new_uid().into());
    objects::set_meta(&mut obj, "creationTimestamp", objects::now_rfc3339().into());
    keel_strategy::prepare_for_create(
        group,
        plural,
        &mut obj,
        &keel_strategy::Ctx {
            now_rfc3339: objects::now_rfc3339(),
        },
    );
    let spliced = Spliced::new(&mut obj);
    match app.storage.create(&key, &spliced).await {
        Ok(_) | Err(keel_engine::Error::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Default namespaces and the `kubernetes` service; allocations of stored services.
pub async fn bootstrap(app: &App, secure_port: u16) -> Result<(), String> {
    restore_allocations(app).await?;
    for ns in DEFAULT_NAMESPACES {
        ensure(
            app,
            "",
            "v1",
            "namespaces",
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": ns}}),
        )
        .await?;
    }
    let ip = app.alloc.first_ip().to_string();
    let svc = json!({
        "kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": secure_port}], "sessionAffinity": "None", "type": "ClusterIP"}
    });
    let info = app
        .catalog
        .lookup("", "v1", "services")
        .ok_or("services not served")?;
    let mut reserve = svc.clone();
    let key = Location::of(app.catalog, info).key("default", "kubernetes");
    if app
        .storage
        .get_latest(&key)
        .map_err(|e| e.message)?
        .is_none()
    {
        app.alloc
            .allocate(info, &mut reserve, false)
            .map_err(|e| e.message)?;
        ensure(app, "", "v1", "services", svc).await?;
    }
    Ok(())
}

async fn restore_allocations(app: &App) -> Result<(), String> {
    let Some(info) = app.catalog.lookup("", "v1", "services") else {
        return Ok(());
    };
    let prefix = Location::of(app.catalog, info).list_prefix("");
    let list = app
        .storage
        .list(&prefix, None, 0, ReadPoint::Latest)
        .await
        .map_err(|e| e.message)?;
    for kv in list.items {
        if let Ok(v) = serde_json::from_slice::<Value>(kv.value()) {
            app.alloc.restore(&v);
        }
    }
    Ok(())
}
