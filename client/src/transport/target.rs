//! Where a client connects: the server URL taken apart (scheme, host, port, path prefix) and,
//! for `https://`, the rustls configuration (CA data, client certificate, server name) from the
//! kubeconfig endpoint.

use crate::kubeconfig::Endpoint;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::sync::Arc;

/// The parts of a server URL a connection needs. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub https: bool,
    /// Host as written in the URL (IPv6 literals keep their brackets): the `Host` header.
    pub authority: String,
    /// Host to connect to (without brackets).
    pub host: String,
    pub port: u16,
    /// Path prefix every request path is appended to (no trailing `/`; often empty).
    pub prefix: String,
}

impl Url {
    /// Parses `http://host[:port][/prefix]` or `https://...`.
    pub fn parse(url: &str) -> Result<Url, String> {
        let bad = |why: &str| format!("server {url:?}: {why}");
        let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad("expected http:// or https://"));
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.contains('@') || prefix.contains(['?', '#']) {
            return Err(bad("user info, query and fragment are not supported"));
        }
        let (host, port) = split_host_port(authority).ok_or_else(|| bad("bad host or port"))?;
        if host.is_empty() || prefix.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("bad host or path"));
        }
        Ok(Url {
            https,
            authority: authority.to_string(),
            host: host.to_string(),
            port: port.unwrap_or(if https { 443 } else { 80 }),
            prefix: prefix.to_string(),
        })
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`.
fn split_host_port(a: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let end = rest.find(']')?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return None,
        };
        (&rest[..end], port)
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse().ok()?),
        None => None,
    };
    Some((host, port))
}

/// TLS settings of an `https://` target.
#[derive(Clone)]
pub struct Tls {
    pub config: Arc<rustls::ClientConfig>,
    pub server_name: ServerName<'static>,
}

/// The TLS settings for `ep` (the server name is `tls-server-name` or the URL's host).
pub fn tls(ep: &Endpoint, url: &Url) -> Result<Tls, String> {
    let mut config = tls_config(ep)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ep
        .tls_server_name
        .clone()
        .unwrap_or_else(|| url.host.clone());
    let server_name =
        ServerName::try_from(name.clone()).map_err(|e| format!("tls server name {name:?}: {e}"))?;
    Ok(Tls {
        config: Arc::new(config),
        server_name,
    })
}

/// rustls (ring) with the cipher suites in the order Go's crypto/tls offers them on hardware
/// with AES instructions, which is what kubectl and client-go send: AES-128-GCM first, then
/// AES-256-GCM, then ChaCha20-Poly1305. (rustls alone would offer AES-256-GCM first, and the
/// benchmark's HTTPS figures would pay for a cipher real clients do not pick.)
fn go_like_provider() -> rustls::crypto::CryptoProvider {
    use rustls::CipherSuite as C;
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites.sort_by_key(|s| match s.suite() {
        C::TLS13_AES_128_GCM_SHA256
        | C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        | C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
        C::TLS13_AES_256_GCM_SHA384
        | C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        | C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 1,
        _ => 2,
    });
    p
}

fn tls_config(ep: &Endpoint) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(go_like_provider());
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = &ep.ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("CA data: {e}"))?;
            roots.add(cert).map_err(|e| format!("CA data: {e}"))?;
        }
    } else if !ep.insecure_skip_tls_verify {
        // No CA named: the system's roots (certificates the system store holds but rustls
        // cannot use are skipped, as Go skips them).
        let found = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(found.certs);
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if ep.insecure_skip_tls_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServer(provider)))
    } else {
        builder.with_root_certificates(roots)
    };
    match (&ep.client_cert_pem, &ep.client_key_pem) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("client certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("client key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate: {e}"))
        }
        (None, None) => Ok(builder.with_no_client_auth()),
        _ => Err("a client certificate needs both the certificate and the key".into()),
    }
}

/// Accepts any server certificate (the handshake's signatures are still checked): an
/// endpoint's `insecure_skip_tls_verify`.
#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cipher_suites_are_offered_in_go_order() {
        use rustls::CipherSuite as C;
        let p = super::go_like_provider();
        let tls13: Vec<C> = p
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .filter(|s| format!("{s:?}").starts_with("TLS13"))
            .collect();
        assert_eq!(
            tls13,
            [
                C::TLS13_AES_128_GCM_SHA256,
                C::TLS13_AES_256_GCM_SHA384,
                C::TLS13_CHACHA20_POLY1305_SHA256
            ]
        );
        assert_eq!(
            p.cipher_suites.len(),
            rustls::crypto::ring::default_provider().cipher_suites.len()
        );
    }

    use super::*;

    #[test]
    fn urls_parse() {
        let u = |https, authority: &str, host: &str, port, prefix: &str| Url {
            https,
            authority: authority.into(),
            host: host.into(),
            port,
            prefix: prefix.into(),
        };
        let cases = [
            (
                "http://127.0.0.1:8080",
                u(false, "127.0.0.1:8080", "127.0.0.1", 8080, ""),
            ),
            (
                "https://k8s.example/",
                u(true, "k8s.example", "k8s.example", 443, ""),
            ),
            ("http://h/base/path/", u(false, "h", "h", 80, "/base/path")),
            ("https://[::1]:6443", u(true, "[::1]:6443", "::1", 6443, "")),
            (
                "https://[fe80::1]",
                u(true, "[fe80::1]", "fe80::1", 443, ""),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(Url::parse(text).unwrap(), want, "{text}");
        }
        for bad in [
            "ftp://h",
            "h:80",
            "http://",
            "http://h:port",
            "http://h:99999",
            "http://[::1",
            "http://[::1]x",
            "http://u@h",
            "http://h/p?q=1",
            "http://h/a b",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }
}
