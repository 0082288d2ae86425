//! Requests are authenticated on their head, before any body byte is read: over raw TLS
//! against the real binary. What a client without credentials can make the server hold, the
//! answers it gets (401 without `100 Continue`, Go's 400 for two `Host` fields), and client
//! certificates from an unknown CA beside a valid token.

mod common;

use common::{server, Server};
use rustls::{ClientConnection, StreamOwned};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest a test waits for one answer.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A TLS connection to `s`, handshake done, presenting `client_cert` (`(cert, key)` PEM files).
fn connect(s: &Server, client_cert: Option<(&Path, &Path)>) -> Tls {
    let config = keel_http::tls::client_config(&s.ca_file(), client_cert).unwrap();
    let name = keel_http::tls::server_name("127.0.0.1").unwrap();
    let conn = ClientConnection::new(config, name).unwrap();
    let tcp = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    tcp.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).expect("TLS handshake");
    }
    tls
}

/// Reads until the server closes the connection (or the read times out); returns the text.
fn read_to_close(tls: &mut Tls) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tls.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends `head` (and `body`) on a fresh connection and reads the answer to the close.
fn exchange(s: &Server, client_cert: Option<(&Path, &Path)>, head: &str, body: &[u8]) -> String {
    let mut tls = connect(s, client_cert);
    tls.write_all(head.as_bytes()).unwrap();
    tls.write_all(body).unwrap();
    tls.flush().unwrap();
    read_to_close(&mut tls)
}

fn status_of(text: &str) -> u16 {
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn json_body(text: &str) -> serde_json::Value {
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

/// Resident memory of process `pid`, in bytes.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .expect("VmRSS")
        * 1024
}

/// A client certificate for `cn` signed by the CA in `pki` (a `ca.crt`, `ca.key` pair),
/// written to `dir`.
fn client_cert(pki: &Path, dir: &Path, cn: &str) -> (PathBuf, PathBuf) {
    let (cert, key) =
        keel_http::tls::issue_client_cert(&pki.join("ca.crt"), &pki.join("ca.key"), cn, &[])
            .unwrap();
    let (cert_path, key_path) = (dir.join(format!("{cn}.crt")), dir.join(format!("{cn}.key")));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    (cert_path, key_path)
}

/// The user a `SelfSubjectReview` made over a connection with `client_cert` and
/// `authorization` reports, or the status of the refusal.
fn whoami(
    s: &Server,
    client_cert: Option<(&Path, &Path)>,
    authorization: Option<&str>,
) -> Result<String, u16> {
    let body = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
    let auth = authorization.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    let head = format!(
        "POST /apis/authentication.k8s.io/v1/selfsubjectreviews HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         {auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let text = exchange(s, client_cert, &head, body);
    match status_of(&text) {
        201 | 200 => Ok(json_body(&text)["status"]["userInfo"]["username"]
            .as_str()
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()),
        code => Err(code),
    }
}

/// The server sent `100 Continue` to a client without credentials, inviting a body it would
/// then read whole before refusing the request. kube-apiserver refuses on the head.
#[test]
fn expect_continue_without_credentials_gets_401_and_no_invitation() {
    let s = server();
    for auth in ["", "Authorization: Bearer not-a-token\r\n"] {
        let head = format!(
            "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\
             Content-Type: application/json\r\nExpect: 100-continue\r\n\
             Content-Length: 3145728\r\n\r\n"
        );
        let text = exchange(s, None, &head, b"");
        assert!(!text.contains("100 Continue"), "{text}");
        assert!(
            text.starts_with("HTTP/1.1 401 Unauthorized\r\n"),
            "{auth:?}: {text}"
        );
        assert!(text.contains("Connection: close\r\n"), "{text}");
        let st = json_body(&text);
        assert_eq!(st["kind"], "Status");
        assert_eq!(st["reason"], "Unauthorized");
        assert_eq!(st["message"], "Unauthorized");
        assert_eq!(st["code"], 401);
    }
}

/// Two `Host` fields were accepted. Go's server (kube-apiserver's) refuses the request
/// before any handler, in plain text.
#[test]
fn two_host_headers_get_gos_400() {
    let s = server();
    let head = format!(
        "GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: example.com\r\n\
         Authorization: Bearer {}\r\n\r\n",
        s.token
    );
    assert_eq!(
        exchange(s, None, &head, b""),
        "HTTP/1.1 400 Bad Request: too many Host headers\r\n\
         Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n\
         400 Bad Request: too many Host headers"
    );
}

/// A client certificate from an unknown CA failed the TLS handshake, even with a valid
/// bearer token on the request. kube-apiserver asks for certificates without requiring them
/// and verifies them in its x509 authenticator: such a certificate is simply not an identity,
/// and the token authenticates the request (without one, 401).
#[test]
fn client_cert_from_an_unknown_ca_does_not_stop_a_valid_token() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let other_pki = dir.path().join("other-pki");
    keel_http::tls::load_or_create(&other_pki, &[]).unwrap();
    let (cert, key) = client_cert(&other_pki, dir.path(), "mallory");
    let foreign = Some((cert.as_path(), key.as_path()));
    let bearer = format!("Bearer {}", s.token);
    assert_eq!(whoami(s, foreign, Some(&bearer)), Ok("admin".to_string()));
    assert_eq!(whoami(s, foreign, None), Err(401));
    assert_eq!(whoami(s, foreign, Some("Bearer not-a-token")), Err(401));
    // A certificate from the server's client CA is the identity, tried before the token as
    // upstream's authenticators are.
    let (cert, key) = client_cert(&s.dir.join("pki"), dir.path(), "alice");
    let ours = Some((cert.as_path(), key.as_path()));
    assert_eq!(whoami(s, ours, None), Ok("alice".to_string()));
    assert_eq!(
        whoami(s, ours, Some("Bearer not-a-token")),
        Ok("alice".to_string())
    );
}

/// Clients without credentials announcing 3 MiB bodies made the server reserve each body
/// whole on the head (~2 MiB resident per connection over TLS, kept while the connection
/// lived): a thousand such connections held 2 GB. Now they are refused on the head and
/// nothing is allocated for their bodies.
#[test]
fn unauthenticated_connections_announcing_large_bodies_hold_no_memory() {
    const CONNECTIONS: usize = 200;
    const ANNOUNCED_BYTES: usize = 3 << 20;
    /// Resident growth allowed per connection while they are open (TLS state, buffers):
    /// 1/12 of the body each announces.
    const GROWTH_PER_CONNECTION_MAX: u64 = 256 * 1024;
    /// Resident growth allowed in all once they are closed (allocator caches).
    const GROWTH_AFTER_CLOSE_MAX: u64 = 16 << 20;
    let s = Server::start(&[]);
    let pid = s.pid();
    // The base is the ready server's: `Server::start` returns once the server listens, while
    // its start-up (bootstrap, controllers' first passes) may still be allocating, which
    // counted as growth when it landed after the base was taken.
    let readyz = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert!(common::eventually(Duration::from_secs(10), || {
        status_of(&exchange(&s, None, readyz, b"")) == 200
    }));
    let base = rss_bytes(pid);
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/json\r\nContent-Length: {ANNOUNCED_BYTES}\r\n\r\n{{"
    );
    let mut conns: Vec<Tls> = (0..CONNECTIONS)
        .map(|_| {
            let mut tls = connect(&s, None);
            tls.write_all(head.as_bytes()).unwrap();
            tls.flush().unwrap();
            tls
        })
        .collect();
    // Trickle: a few more body bytes on each (the server may have closed some already).
    for round in 0..3 {
        for tls in conns.iter_mut() {
            let _ = tls.write_all(if round == 2 { b"\"" } else { b" " });
            let _ = tls.flush();
        }
    }
    let during = rss_bytes(pid);
    let growth = during.saturating_sub(base);
    eprintln!(
        "{CONNECTIONS} connections announcing {ANNOUNCED_BYTES} bytes: resident {base} -> \
         {during} bytes ({} per connection)",
        growth / CONNECTIONS as u64
    );
    assert!(
        growth < GROWTH_PER_CONNECTION_MAX * CONNECTIONS as u64,
        "resident memory grew by {growth} bytes for {CONNECTIONS} connections \
         ({} per connection, announcing {ANNOUNCED_BYTES} each)",
        growth / CONNECTIONS as u64
    );
    // Every connection was answered on its head: 401, its body unread.
    for tls in conns.iter_mut() {
        let text = read_to_close(tls);
        assert_eq!(status_of(&text), 401, "{text}");
    }
    drop(conns);
    // mimalloc gives freed memory back when the thread that freed it allocates again: keep
    // the server busy with requests, as a server is, while waiting.
    let back = common::eventually(Duration::from_secs(10), || {
        for _ in 0..4 {
            assert_eq!(status_of(&exchange(&s, None, readyz, b"")), 200);
        }
        rss_bytes(pid) < base + GROWTH_AFTER_CLOSE_MAX
    });
    assert!(
        back,
        "resident memory {} bytes after the connections closed, {base} before",
        rss_bytes(pid)
    );
}
