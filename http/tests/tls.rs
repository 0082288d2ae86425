//! TLS end to end: the generated chain verifies, ALPN is http/1.1, and a client
//! certificate's CN/O reach the handler.

use keel_http::{handler_fn, serve, tls, Listener, Request, Response, ServeConfig};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn whoami(req: Request) -> std::future::Ready<Response> {
    let text = format!(
        "tls={} cert={:?} error={:?}",
        req.tls, req.client_cert, req.client_cert_error
    );
    std::future::ready(Response::full(200, "text/plain", text.into_bytes()))
}

/// Connects with `config`, sends one request and returns (negotiated ALPN, response text).
fn get(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> Result<(Vec<u8>, String), String> {
    keel_http::rt::block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let connector = tokio_rustls::TlsConnector::from(config);
        let name = tls::server_name("localhost")?;
        let mut s = connector
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let alpn = s.get_ref().1.alpn_protocol().unwrap_or_default().to_vec();
        s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.map_err(|e| e.to_string())?;
        Ok((alpn, String::from_utf8_lossy(&out).into_owned()))
    })
    .map_err(|e| e.to_string())?
}

fn write_client_cert(
    dir: &Path,
    files: &tls::TlsFiles,
    cn: &str,
    orgs: &[&str],
) -> (std::path::PathBuf, std::path::PathBuf) {
    let orgs: Vec<String> = orgs.iter().map(|o| o.to_string()).collect();
    let (cert, key) = tls::issue_client_cert(&files.ca_cert, &files.ca_key, cn, &orgs).unwrap();
    let (cert_path, key_path) = (dir.join(format!("{cn}.crt")), dir.join(format!("{cn}.key")));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    (cert_path, key_path)
}

#[test]
fn tls_chain_alpn_and_client_identity() {
    let dir = tempfile::tempdir().unwrap();
    let files = tls::load_or_create(&dir.path().join("pki"), &[]).unwrap();
    let server_tls = tls::server_config(&files.cert, &files.key, Some(&files.ca_cert)).unwrap();
    let cfg = ServeConfig {
        listeners: vec![Listener {
            addr: "127.0.0.1:0".parse().unwrap(),
            tls: Some(server_tls),
        }],
        cores: 1,
        pin: false,
        limits: Default::default(),
    };
    let server = serve(cfg, Arc::new(handler_fn(whoami))).unwrap();
    let addr = server.local_addrs()[0];

    // Anonymous client: chain verifies against ca.crt, no identity.
    let anon = tls::client_config(&files.ca_cert, None).unwrap();
    let (alpn, text) = get(addr, anon).unwrap();
    assert_eq!(alpn, b"http/1.1");
    assert!(text.ends_with("tls=true cert=None error=None"), "{text}");

    // Client certificate: CN is the user, every O a group.
    let (cert, key) = write_client_cert(dir.path(), &files, "alice", &["system:masters", "dev"]);
    let with_cert = tls::client_config(&files.ca_cert, Some((&cert, &key))).unwrap();
    let (_, text) = get(addr, with_cert).unwrap();
    assert!(
        text.ends_with(r#"cert=Some(ClientIdentity { common_name: "alice", organizations: ["system:masters", "dev"], by_client_ca: true, by_request_header_ca: false }) error=None"#),
        "{text}"
    );

    // A client trusting another CA refuses the server's chain.
    let other = tls::load_or_create(&dir.path().join("other"), &[]).unwrap();
    let wrong_ca = tls::client_config(&other.ca_cert, None).unwrap();
    let err = get(addr, wrong_ca).unwrap_err();
    assert!(err.contains("certificate"), "{err}");

    // A client certificate from another CA does not fail the handshake (kube-apiserver asks
    // for certificates without requiring them and verifies them when authenticating): it is
    // no identity, and the handler learns why.
    let (cert, key) = write_client_cert(dir.path(), &other, "mallory", &[]);
    let foreign = tls::client_config(&files.ca_cert, Some((&cert, &key))).unwrap();
    let (_, text) = get(addr, foreign).expect("handshake with a foreign client certificate");
    assert!(text.contains("tls=true cert=None error=Some("), "{text}");
    // Both CAs are named keel-ca, so the issuer is found by name and its signature fails.
    assert!(text.contains("invalid peer certificate"), "{text}");
    server.shutdown();
}
