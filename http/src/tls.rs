//! TLS: a self-managed CA and serving certificate on disk, the rustls server configuration
//! (ALPN `http/1.1` only; client certificates asked for, not required, and verified against a
//! CA after the handshake), and the identity taken from a verified client certificate
//! (kube-apiserver x509 authentication: subject CN = user, O = groups).

use crate::request::ClientIdentity;
use crate::subject;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Names every serving certificate carries, as kube-apiserver's self-signed one does.
pub const DEFAULT_SANS: [&str; 7] = [
    "127.0.0.1",
    "::1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// Paths of the PEM files [`load_or_create`] manages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// `ca.crt`: the CA certificate (give it to clients as their trust root).
    pub ca_cert: PathBuf,
    /// `ca.key`: the CA's private key (mode 0600).
    pub ca_key: PathBuf,
    /// `apiserver.crt`: the serving certificate, signed by the CA.
    pub cert: PathBuf,
    /// `apiserver.key`: the serving key (mode 0600).
    pub key: PathBuf,
}

/// Loads the CA and serving certificate from `dir`, creating what is missing: on first
/// start a CA (`ca.crt`, `ca.key`) and a serving certificate signed by it (`apiserver.crt`,
/// `apiserver.key`) for [`DEFAULT_SANS`] plus `hosts` (IP addresses or DNS names). Existing
/// files are reused as they are.
pub fn load_or_create(dir: &Path, hosts: &[String]) -> io::Result<TlsFiles> {
    std::fs::create_dir_all(dir)?;
    let files = TlsFiles {
        ca_cert: dir.join("ca.crt"),
        ca_key: dir.join("ca.key"),
        cert: dir.join("apiserver.crt"),
        key: dir.join("apiserver.key"),
    };
    match (files.ca_cert.exists(), files.ca_key.exists()) {
        (true, true) => {}
        (false, false) => create_ca(&files)?,
        _ => return Err(invalid("only one of ca.crt and ca.key exists")),
    }
    match (files.cert.exists(), files.key.exists()) {
        (true, true) => {}
        _ => create_serving(&files, hosts)?,
    }
    Ok(files)
}

fn create_ca(files: &TlsFiles) -> io::Result<()> {
    write_ca(&files.ca_cert, &files.ca_key, "keel-ca")
}

fn write_ca(cert_path: &Path, key_path: &Path, cn: &str) -> io::Result<()> {
    let key = KeyPair::generate().map_err(invalid)?;
    let params = ca_params(cn);
    let cert = params.self_signed(&key).map_err(invalid)?;
    write_file(cert_path, cert.pem().as_bytes(), 0o644)?;
    write_file(key_path, key.serialize_pem().as_bytes(), 0o600)
}

/// The common name of the front-proxy client certificate (upstream's kubeadm names it so, and
/// `requestheader-allowed-names` lists it).
pub const FRONT_PROXY_CLIENT_NAME: &str = "front-proxy-client";

/// Paths of the front-proxy PEM files [`load_or_create_front_proxy`] manages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontProxyFiles {
    /// `front-proxy-ca.crt`: the CA extension API servers trust for request-header
    /// authentication (`requestheader-client-ca-file`).
    pub ca_cert: PathBuf,
    /// `front-proxy-client.crt` and `.key`: what the API server presents when it proxies a
    /// request to an aggregated API server.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

/// Loads the front-proxy CA and client certificate from `dir`, creating what is missing: a
/// CA of its own (`front-proxy-ca.crt`, `.key`; a certificate of the serving CA would also
/// authenticate to this server) and a client certificate for [`FRONT_PROXY_CLIENT_NAME`].
pub fn load_or_create_front_proxy(dir: &Path) -> io::Result<FrontProxyFiles> {
    std::fs::create_dir_all(dir)?;
    let ca_key = dir.join("front-proxy-ca.key");
    let files = FrontProxyFiles {
        ca_cert: dir.join("front-proxy-ca.crt"),
        client_cert: dir.join("front-proxy-client.crt"),
        client_key: dir.join("front-proxy-client.key"),
    };
    match (files.ca_cert.exists(), ca_key.exists()) {
        (true, true) => {}
        (false, false) => write_ca(&files.ca_cert, &ca_key, "keel-front-proxy-ca")?,
        _ => {
            return Err(invalid(
                "only one of front-proxy-ca.crt and front-proxy-ca.key exists",
            ))
        }
    }
    if !(files.client_cert.exists() && files.client_key.exists()) {
        let (cert, key) = issue_client_cert(&files.ca_cert, &ca_key, FRONT_PROXY_CLIENT_NAME, &[])?;
        write_file(&files.client_cert, cert.as_bytes(), 0o644)?;
        write_file(&files.client_key, key.as_bytes(), 0o600)?;
    }
    Ok(files)
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn create_serving(files: &TlsFiles, hosts: &[String]) -> io::Result<()> {
    let mut sans: Vec<String> = DEFAULT_SANS.iter().map(|s| s.to_string()).collect();
    for h in hosts {
        if !sans.contains(h) {
            sans.push(h.clone());
        }
    }
    let mut params = CertificateParams::new(sans).map_err(invalid)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "keel-apiserver");
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let (cert_pem, key_pem) = sign_with_ca(&files.ca_cert, &files.ca_key, &params)?;
    write_file(&files.cert, cert_pem.as_bytes(), 0o644)?;
    write_file(&files.key, key_pem.as_bytes(), 0o600)
}

/// Issues a client certificate signed by the CA in `ca_cert`/`ca_key` with subject
/// CommonName `cn` (the user) and one Organization per entry of `orgs` (the groups).
/// Returns `(certificate PEM, private key PEM)`.
pub fn issue_client_cert(
    ca_cert: &Path,
    ca_key: &Path,
    cn: &str,
    orgs: &[String],
) -> io::Result<(String, String)> {
    // rcgen keeps one value per attribute type: issue with a placeholder subject, then
    // rewrite it with every Organization (see `subject`).
    const PLACEHOLDER: &str = "keel-client-subject-placeholder";
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, PLACEHOLDER);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let (cert_pem, key_pem) = sign_with_ca(ca_cert, ca_key, &params)?;
    let der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).map_err(invalid)?;
    let ca_key = KeyPair::from_pem(&std::fs::read_to_string(ca_key)?).map_err(invalid)?;
    let placeholder = subject::der_name(PLACEHOLDER, &[]);
    let der = subject::replace_subject(&der, &placeholder, &subject::der_name(cn, orgs), &ca_key)
        .map_err(invalid)?;
    let identity = identity_from_der(&der);
    let want = ClientIdentity {
        common_name: cn.to_string(),
        organizations: orgs.to_vec(),
        by_client_ca: false,
        by_request_header_ca: false,
    };
    if identity.as_ref() != Some(&want) {
        return Err(invalid(format!(
            "issued certificate reads back as {identity:?}"
        )));
    }
    Ok((subject::cert_pem(&der), key_pem))
}

/// Generates a key and a certificate for `params` signed by the CA; returns both as PEM.
fn sign_with_ca(
    ca_cert: &Path,
    ca_key: &Path,
    params: &CertificateParams,
) -> io::Result<(String, String)> {
    let ca_key = KeyPair::from_pem(&std::fs::read_to_string(ca_key)?).map_err(invalid)?;
    let ca_pem = std::fs::read_to_string(ca_cert)?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).map_err(invalid)?;
    let key = KeyPair::generate().map_err(invalid)?;
    let cert = params.signed_by(&key, &issuer).map_err(invalid)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes `bytes` to `path` with permission `mode`, replacing it atomically.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("reading certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", path.display()));
    }
    Ok(certs)
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| format!("reading private key from {}: {e}", path.display()))
}

fn load_roots(path: &Path) -> Result<Arc<RootCertStore>, String> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path)? {
        roots
            .add(cert)
            .map_err(|e| format!("CA {}: {e}", path.display()))?;
    }
    Ok(Arc::new(roots))
}

/// A TLS listener's configuration: rustls' server configuration and, when client
/// certificates are asked for, the verifier that decides after the handshake whether the one
/// presented is an identity.
pub struct ServerTls {
    config: Arc<rustls::ServerConfig>,
    client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// The request-header (front-proxy) CA's verifier.
    proxy_verifier: Option<Arc<dyn ClientCertVerifier>>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("client_certificates", &self.client_verifier.is_some())
            .finish_non_exhaustive()
    }
}

/// What the client's certificate says, once the handshake is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PeerCert {
    /// No certificate was presented (or none was asked for).
    None,
    /// The certificate chains to the client CA or the request-header CA (which, the
    /// identity says).
    Verified(ClientIdentity),
    /// The certificate does not verify, for this reason: it is not an identity.
    Rejected(String),
}

impl ServerTls {
    /// The rustls configuration.
    pub fn config(&self) -> &Arc<rustls::ServerConfig> {
        &self.config
    }

    /// Verifies the certificate the client presented on `conn` against the client CA and
    /// the request-header CA.
    pub(crate) fn peer_cert(&self, conn: &rustls::ServerConnection) -> PeerCert {
        let Some((end_entity, intermediates)) =
            conn.peer_certificates().and_then(|c| c.split_first())
        else {
            return PeerCert::None;
        };
        let Some(verifier) = &self.client_verifier else {
            return PeerCert::None;
        };
        let now = UnixTime::now();
        let by_client = verifier.verify_client_cert(end_entity, intermediates, now);
        let by_proxy = self
            .proxy_verifier
            .as_ref()
            .is_some_and(|v| v.verify_client_cert(end_entity, intermediates, now).is_ok());
        if let (Err(e), false) = (&by_client, by_proxy) {
            return PeerCert::Rejected(e.to_string());
        }
        match identity_from_der(end_entity.as_ref()) {
            Some(mut identity) => {
                identity.by_client_ca = by_client.is_ok();
                identity.by_request_header_ca = by_proxy;
                PeerCert::Verified(identity)
            }
            None => PeerCert::Rejected("unparsable certificate subject".to_string()),
        }
    }
}

/// Asks clients for a certificate without requiring one, and lets the handshake accept any
/// certificate whose key the client proves it holds (the handshake signature is verified as
/// usual); whether the chain verifies against the client CA is decided after the handshake
/// by [`ServerTls::peer_cert`]. This is what kube-apiserver does (Go's
/// `tls.RequestClientCert`, then its x509 authenticator verifies): a certificate from an
/// unknown CA is not an identity, but it does not fail the connection, so a bearer token on
/// it can still authenticate the request.
#[derive(Debug)]
struct RequestClientCert {
    /// The client CA's verifier: its hints and signature checks are used in the handshake.
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Deferred to `ServerTls::peer_cert`, which keeps the verdict per connection.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A TLS configuration serving `cert` (PEM chain) with `key`, advertising only ALPN
/// `http/1.1`. With `client_ca`, clients are asked for a certificate but need not present
/// one; one that chains to that CA reaches handlers as [`crate::Request::client_cert`], one
/// that does not as [`crate::Request::client_cert_error`] (see [`RequestClientCert`]).
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerTls>, String> {
    server_config_trusting(cert, key, client_ca, None)
}

/// [`server_config`] that also trusts `request_header_ca` for front proxies' client
/// certificates (kube-apiserver's `--requestheader-client-ca-file`); only with a client CA.
pub fn server_config_trusting(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    request_header_ca: Option<&Path>,
) -> Result<Arc<ServerTls>, String> {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let client_verifier = match client_ca {
        Some(ca) => {
            let verifier: Arc<dyn ClientCertVerifier> =
                WebPkiClientVerifier::builder_with_provider(load_roots(ca)?, provider())
                    .build()
                    .map_err(|e| e.to_string())?;
            Some(verifier)
        }
        None => None,
    };
    let builder = match &client_verifier {
        Some(inner) => builder.with_client_cert_verifier(Arc::new(RequestClientCert {
            inner: inner.clone(),
        })),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(load_certs(cert)?, load_key(key)?)
        .map_err(|e| format!("serving certificate {}: {e}", cert.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let proxy_verifier = match (request_header_ca, &client_verifier) {
        (Some(ca), Some(_)) => {
            let verifier: Arc<dyn ClientCertVerifier> =
                WebPkiClientVerifier::builder_with_provider(load_roots(ca)?, provider())
                    .build()
                    .map_err(|e| e.to_string())?;
            Some(verifier)
        }
        _ => None,
    };
    Ok(Arc::new(ServerTls {
        config: Arc::new(config),
        client_verifier,
        proxy_verifier,
    }))
}

/// A rustls client configuration trusting the CA in `ca`, optionally presenting a client
/// certificate (`(cert PEM file, key PEM file)`), offering ALPN `http/1.1`. For tests and
/// in-process clients.
pub fn client_config(
    ca: &Path,
    client_cert: Option<(&Path, &Path)>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(load_roots(ca)?);
    let mut config = match client_cert {
        Some((cert, key)) => builder
            .with_client_auth_cert(load_certs(cert)?, load_key(key)?)
            .map_err(|e| e.to_string())?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Parses a server name for [`client_config`] connections (`"localhost"`, `"127.0.0.1"`).
pub fn server_name(name: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(name.to_string()).map_err(|e| e.to_string())
}

/// The identity in a (verified) client certificate: subject CN and Organizations.
pub(crate) fn identity_from_der(der: &[u8]) -> Option<ClientIdentity> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or_default()
        .to_string();
    let organizations = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok().map(str::to_string))
        .collect();
    Some(ClientIdentity {
        common_name,
        organizations,
        by_client_ca: false,
        by_request_header_ca: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn creates_then_reuses_files_with_private_keys_0600() {
        let dir = tempfile::tempdir().unwrap();
        let files = load_or_create(dir.path(), &["10.0.0.7".to_string()]).unwrap();
        for key in [&files.ca_key, &files.key] {
            let mode = std::fs::metadata(key).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", key.display());
        }
        let first = std::fs::read(&files.cert).unwrap();
        let again = load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(again, files);
        assert_eq!(
            std::fs::read(&files.cert).unwrap(),
            first,
            "serving cert was reissued"
        );
        let (_, cert) = x509_parser::pem::parse_x509_pem(&first).unwrap();
        let x509 = cert.parse_x509().unwrap();
        let sans: Vec<String> = x509
            .subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .iter()
            .map(|n| match n {
                x509_parser::extensions::GeneralName::DNSName(d) => d.to_string(),
                x509_parser::extensions::GeneralName::IPAddress(b) if b.len() == 4 => {
                    std::net::Ipv4Addr::from(<[u8; 4]>::try_from(*b).unwrap()).to_string()
                }
                x509_parser::extensions::GeneralName::IPAddress(b) => {
                    std::net::Ipv6Addr::from(<[u8; 16]>::try_from(*b).unwrap()).to_string()
                }
                other => format!("{other:?}"),
            })
            .collect();
        for want in DEFAULT_SANS.iter().copied().chain(["10.0.0.7"]) {
            assert!(
                sans.iter().any(|s| s == want),
                "{want} missing from {sans:?}"
            );
        }
        assert!(server_config(&files.cert, &files.key, Some(&files.ca_cert)).is_ok());
    }

    #[test]
    fn client_cert_identity_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let files = load_or_create(dir.path(), &[]).unwrap();
        let orgs = vec!["system:masters".to_string(), "dev".to_string()];
        let (cert_pem, _) =
            issue_client_cert(&files.ca_cert, &files.ca_key, "alice", &orgs).unwrap();
        let der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap();
        let id = identity_from_der(der.as_ref()).unwrap();
        assert_eq!(
            id,
            ClientIdentity {
                common_name: "alice".into(),
                organizations: orgs,
                by_client_ca: false,
                by_request_header_ca: false,
            }
        );
    }

    #[test]
    fn missing_or_bad_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let nope = dir.path().join("nope.pem");
        assert!(server_config(&nope, &nope, None).is_err());
        std::fs::write(&nope, "not pem").unwrap();
        assert!(server_config(&nope, &nope, None).is_err());
        std::fs::write(dir.path().join("ca.crt"), "x").unwrap();
        assert!(load_or_create(dir.path(), &[]).is_err());
    }
}
