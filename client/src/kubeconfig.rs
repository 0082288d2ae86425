//! Reads a kubeconfig and resolves one context to connection settings. Pure: file reads go
//! through a `read` callback so the resolution rules are table-tested without a disk.

use base64::Engine as _;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where and how to connect, after resolving a kubeconfig context or command-line flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// `https://host:port` or `http://host:port`, without a trailing slash.
    pub server: String,
    /// PEM bundle of CAs that sign the server's certificate (None: the system's roots).
    pub ca_pem: Option<Vec<u8>>,
    /// Bearer token sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// PEM client certificate chain and key, for x509 authentication.
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
    /// TLS server name to verify instead of the URL's host.
    pub tls_server_name: Option<String>,
    /// Trust any server certificate (an APIService's `insecureSkipTLSVerify`); kubeconfigs
    /// asking for it are refused.
    pub insecure_skip_tls_verify: bool,
    /// The context's default namespace.
    pub namespace: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct Config {
    #[serde(default)]
    clusters: Vec<NamedCluster>,
    #[serde(default)]
    users: Vec<NamedUser>,
    #[serde(default)]
    contexts: Vec<NamedContext>,
    #[serde(rename = "current-context", default)]
    current_context: Option<String>,
}

#[derive(Deserialize, Debug)]
struct NamedCluster {
    name: String,
    cluster: Cluster,
}

#[derive(Deserialize, Debug)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: User,
}

#[derive(Deserialize, Debug)]
struct NamedContext {
    name: String,
    context: Context,
}

#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
}

#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "kebab-case")]
struct User {
    token: Option<String>,
    #[serde(alias = "tokenFile")]
    token_file: Option<PathBuf>,
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    exec: Option<serde_yaml_ng::Value>,
    #[serde(rename = "auth-provider")]
    auth_provider: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize, Debug, Default, Clone)]
struct Context {
    cluster: String,
    #[serde(default)]
    user: String,
    namespace: Option<String>,
}

/// Reads `path` and resolves `context` (None: the current context).
pub fn load(path: &Path, context: Option<&str>) -> Result<Endpoint, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    resolve(&text, context, base, &|p| {
        std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
    })
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// Resolves `context` of the kubeconfig `text`; relative file paths are relative to `base`.
pub fn resolve(
    text: &str,
    context: Option<&str>,
    base: &Path,
    read: &dyn Fn(&Path) -> Result<Vec<u8>, String>,
) -> Result<Endpoint, String> {
    let cfg: Config =
        serde_yaml_ng::from_str(text).map_err(|e| format!("not a kubeconfig: {e}"))?;
    let ctx_name = context
        .map(str::to_string)
        .or_else(|| cfg.current_context.clone().filter(|c| !c.is_empty()))
        .ok_or("no context given and no current-context set")?;
    let ctx = find(
        &cfg.contexts,
        |c| (&c.name, &c.context),
        &ctx_name,
        "context",
    )?;
    let cluster = find(
        &cfg.clusters,
        |c| (&c.name, &c.cluster),
        &ctx.cluster,
        "cluster",
    )?;
    let user = if ctx.user.is_empty() {
        User::default()
    } else {
        find(&cfg.users, |u| (&u.name, &u.user), &ctx.user, "user")?
    };
    if cluster.insecure_skip_tls_verify {
        return Err("insecure-skip-tls-verify is not supported: give the cluster's CA".into());
    }
    if user.exec.is_some() || user.auth_provider.is_some() {
        return Err(format!(
            "user {:?}: exec and auth-provider credentials are not supported; use a token or a client certificate",
            ctx.user
        ));
    }
    let file = |p: &Path| read(&base.join(p));
    Ok(Endpoint {
        server: cluster.server.trim_end_matches('/').to_string(),
        ca_pem: data_or_file(
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
            &file,
        )?,
        token: match (&user.token, &user.token_file) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(p)) => Some(String::from_utf8_lossy(&file(p)?).trim().to_string()),
            (None, None) => None,
        },
        client_cert_pem: data_or_file(
            &user.client_certificate_data,
            &user.client_certificate,
            &file,
        )?,
        client_key_pem: data_or_file(&user.client_key_data, &user.client_key, &file)?,
        tls_server_name: cluster.tls_server_name.clone(),
        insecure_skip_tls_verify: false,
        namespace: ctx.namespace.clone(),
    })
}

fn find<E, T: Clone>(
    list: &[E],
    parts: impl Fn(&E) -> (&String, &T),
    name: &str,
    what: &str,
) -> Result<T, String> {
    list.iter()
        .map(parts)
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.clone())
        .ok_or_else(|| format!("{what} {name:?} not found"))
}

fn data_or_file(
    data: &Option<String>,
    path: &Option<PathBuf>,
    read: &dyn Fn(&Path) -> Result<Vec<u8>, String>,
) -> Result<Option<Vec<u8>>, String> {
    match (data, path) {
        (Some(d), _) => base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map(Some)
            .map_err(|e| format!("bad base64 data: {e}")),
        (None, Some(p)) => read(p).map(Some),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KC: &str = "apiVersion: v1
kind: Config
clusters:
- name: a
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0FQRU0=
- name: b
  cluster:
    server: http://127.0.0.1:8080
    certificate-authority: ca.crt
users:
- name: tok
  user:
    token: abc
- name: cert
  user:
    client-certificate: c.crt
    client-key-data: S0VZ
- name: ex
  user:
    exec: {command: foo}
contexts:
- name: one
  context: {cluster: a, user: tok, namespace: ns1}
- name: two
  context: {cluster: b, user: cert}
- name: three
  context: {cluster: a, user: ex}
- name: four
  context: {cluster: missing, user: tok}
current-context: one
";

    fn read(p: &Path) -> Result<Vec<u8>, String> {
        match p.to_str() {
            Some("/kc/ca.crt") => Ok(b"FILECA".to_vec()),
            Some("/kc/c.crt") => Ok(b"FILECERT".to_vec()),
            other => Err(format!("no file {other:?}")),
        }
    }

    #[test]
    fn contexts_resolve() {
        let cases: &[(Option<&str>, Result<Endpoint, &str>)] = &[
            (
                None,
                Ok(Endpoint {
                    server: "https://127.0.0.1:6443".into(),
                    ca_pem: Some(b"CAPEM".to_vec()),
                    token: Some("abc".into()),
                    namespace: Some("ns1".into()),
                    ..Default::default()
                }),
            ),
            (
                Some("two"),
                Ok(Endpoint {
                    server: "http://127.0.0.1:8080".into(),
                    ca_pem: Some(b"FILECA".to_vec()),
                    client_cert_pem: Some(b"FILECERT".to_vec()),
                    client_key_pem: Some(b"KEY".to_vec()),
                    ..Default::default()
                }),
            ),
            (Some("three"), Err("exec and auth-provider")),
            (Some("four"), Err("cluster \"missing\" not found")),
            (Some("nope"), Err("context \"nope\" not found")),
        ];
        for (ctx, want) in cases {
            let got = resolve(KC, *ctx, Path::new("/kc"), &read);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(&g, w, "context {ctx:?}"),
                (Err(g), Err(w)) => assert!(g.contains(w), "context {ctx:?}: {g}"),
                (g, w) => panic!("context {ctx:?}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn bad_documents_are_errors() {
        assert!(resolve("clusters: [", None, Path::new("/"), &read).is_err());
        assert!(resolve("kind: Config\n", None, Path::new("/"), &read)
            .unwrap_err()
            .contains("no context"));
    }
}
