//! A scripted HTTP/1.1 server on loopback for the client's tests: each request is answered as
//! the test says (pieces written apart, a close after the response, no answer at all).

use crate::kubeconfig::Endpoint;
use crate::KubeClient;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one request.
#[derive(Clone)]
pub enum Act {
    /// Writes these pieces, 30 ms apart, and keeps the connection.
    Reply(Vec<Vec<u8>>),
    /// Writes the response, then closes the connection.
    ReplyClose(Vec<u8>),
    /// Never answers.
    Hang,
}

pub struct Server {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<String>>>,
}

/// Serves every request with `act(request number)`.
pub async fn server(act: impl Fn(usize) -> Act + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (accepted, requests) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(Vec::new())),
    );
    let (acc, reqs, act) = (accepted.clone(), requests.clone(), Arc::new(act));
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            acc.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve_conn(sock, reqs.clone(), act.clone()));
        }
    });
    Server {
        port,
        accepted,
        requests,
    }
}

async fn serve_conn(
    mut sock: TcpStream,
    reqs: Arc<Mutex<Vec<String>>>,
    act: Arc<impl Fn(usize) -> Act>,
) {
    let mut buf = Vec::new();
    loop {
        let Some(req) = read_request(&mut sock, &mut buf).await else {
            return;
        };
        let n = {
            let mut r = reqs.lock().unwrap();
            r.push(req);
            r.len() - 1
        };
        match act(n) {
            Act::Reply(pieces) => {
                for (i, p) in pieces.iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(30)).await;
                    }
                    sock.write_all(p).await.unwrap();
                }
            }
            Act::ReplyClose(r) => {
                sock.write_all(&r).await.unwrap();
                return;
            }
            Act::Hang => std::future::pending::<()>().await,
        }
    }
}

/// Reads one request (head and Content-Length body) as text.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .map_or(0, |v| v.parse::<usize>().unwrap());
            if buf.len() >= end + 4 + len {
                let req = String::from_utf8_lossy(&buf[..end + 4 + len]).to_string();
                buf.drain(..end + 4 + len);
                return Some(req);
            }
        }
        let mut chunk = [0u8; 4096];
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

pub fn ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub fn client(port: u16) -> KubeClient {
    let ep = Endpoint {
        server: format!("http://127.0.0.1:{port}/prefix"),
        token: Some("t0k".into()),
        ..Default::default()
    };
    KubeClient::new(&ep, 4).unwrap()
}

pub const CHUNKED_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
