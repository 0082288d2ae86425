//! The server over real loopback sockets: framing, pipelining, limits, timeouts, streaming.

use keel_http::{
    rt, serve, Admitted, Body, Handler, Limits, Listener, Request, RequestHead, Response,
    ServeConfig,
};
use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

type ChunkRx = tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>;

/// Test handler. Admits `/private...` only with `Authorization: ok` (else 401), anything
/// else always; counts the requests it handles. `/slow`: answers after 300 ms. `/stream`:
/// streams what the test sends on the channel it installed. `/hold`: answers once the test
/// sends on the channel it installed (after telling it the handler runs). `/sum`: the body's
/// length and byte sum. Anything else: echoes method, path, query and body.
#[derive(Default)]
struct TestHandler {
    stream_rx: Mutex<Option<ChunkRx>>,
    stream_dropped: Arc<AtomicBool>,
    hold: Mutex<
        Option<(
            std::sync::mpsc::Sender<()>,
            tokio::sync::oneshot::Receiver<()>,
        )>,
    >,
    handled: std::sync::atomic::AtomicUsize,
}

impl Handler for TestHandler {
    fn admit(&self, head: &RequestHead<'_>) -> Result<Admitted, Response> {
        if head.path.starts_with("/private") && head.headers.get("authorization") != Some("ok") {
            return Err(keel_http::status_response(
                401,
                "Unauthorized",
                "Unauthorized",
            ));
        }
        Ok(Admitted::new(format!("admitted {}", head.path)))
    }

    fn handle(&self, mut req: Request) -> Pin<Box<dyn Future<Output = Response>>> {
        self.handled.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            req.admitted.take::<String>(),
            Some(format!("admitted {}", req.path)),
            "what admit learnt reaches the handler"
        );
        if req.path == "/hold" {
            let (entered, release) = self.hold.lock().unwrap().take().expect("one hold");
            return Box::pin(async move {
                entered.send(()).unwrap();
                let _ = release.await;
                Response::full(200, "text/plain", b"held".to_vec())
            });
        }
        if req.path == "/sum" {
            let sum: u64 = req.body.iter().map(|b| u64::from(*b)).sum();
            let text = format!("len={} sum={sum}", req.body.len());
            return Box::pin(async move { Response::full(200, "text/plain", text.into_bytes()) });
        }
        if req.path == "/stream" {
            let rx = self
                .stream_rx
                .lock()
                .unwrap()
                .take()
                .expect("one stream per test");
            let s = ChannelStream {
                rx,
                dropped: self.stream_dropped.clone(),
            };
            return Box::pin(async move { Response::stream(200, "text/plain", Box::pin(s)) });
        }
        Box::pin(async move {
            if req.path == "/slow" {
                rt::sleep(Duration::from_millis(300)).await;
            }
            let text = format!(
                "{} {} q={} name={:?} body={}",
                req.method.as_str(),
                req.path,
                req.query,
                req.query_get("name"),
                String::from_utf8_lossy(&req.body)
            );
            Response::full(200, "text/plain", text.into_bytes())
        })
    }
}

struct ChannelStream {
    rx: ChunkRx,
    dropped: Arc<AtomicBool>,
}

impl futures_core::Stream for ChannelStream {
    type Item = Vec<u8>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for ChannelStream {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

fn test_limits() -> Limits {
    Limits {
        header_bytes_max: 1024,
        body_bytes_max: 64,
        header_read_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        shutdown_timeout: Duration::from_secs(2),
        ..Limits::default()
    }
}

fn start(limits: Limits, handler: Arc<TestHandler>) -> (keel_http::ServerHandle, SocketAddr) {
    let cfg = ServeConfig {
        listeners: vec![Listener {
            addr: "127.0.0.1:0".parse().unwrap(),
            tls: None,
        }],
        cores: 1,
        pin: false,
        limits,
    };
    let server = serve(cfg, handler).unwrap();
    let addr = server.local_addrs()[0];
    (server, addr)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Reads until the peer closes (or resets); returns the text.
fn read_to_close(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads until `needle` has been seen.
fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&out).contains(needle) {
        let n = s.read(&mut buf).expect("read before needle");
        assert!(
            n > 0,
            "closed before {needle:?}; got {:?}",
            String::from_utf8_lossy(&out)
        );
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn status_of(text: &str) -> u16 {
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// The JSON body of the first response in `text`.
fn json_body(text: &str) -> serde_json::Value {
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let (server, addr) = start(test_limits(), Arc::default());
    let mut s = connect(addr);
    let reqs = concat!(
        "GET /slow?name=a%20b HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        "PUT /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer-A: x\r\n\r\n",
        "DELETE /four?name=x+y HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    s.write_all(reqs.as_bytes()).unwrap();
    let text = read_to_close(&mut s);
    let bodies = [
        "GET /slow q=name=a%20b name=Some(\"a b\") body=",
        "POST /two q= name=None body=hello",
        "PUT /three q= name=None body=abcde",
        "DELETE /four q=name=x+y name=Some(\"x y\") body=",
    ];
    let mut at = 0;
    for b in bodies {
        let pos = text[at..]
            .find(b)
            .unwrap_or_else(|| panic!("{b:?} not in order in {text}"));
        at += pos + b.len();
    }
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 4, "{text}");
    assert!(text.contains("Connection: close"));
    server.shutdown();
}

#[test]
fn keep_alive_serves_sequential_requests_and_head_has_no_body() {
    let (server, addr) = start(test_limits(), Arc::default());
    let mut s = connect(addr);
    s.write_all(b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let head = read_until(&mut s, "\r\n\r\n");
    // The length GET would have: "HEAD /h q= name=None body=".
    assert!(head.contains("Content-Length: 26\r\n"), "{head}");
    s.write_all(b"GET /g HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let rest = read_to_close(&mut s);
    // The HEAD response carried no body: the next bytes are the GET response.
    assert!(rest.starts_with("HTTP/1.1 200 OK"), "{rest:?}");
    assert!(rest.ends_with("GET /g q= name=None body="), "{rest:?}");
    server.shutdown();
}

#[test]
fn http10_closes_unless_keep_alive_is_asked() {
    let (server, addr) = start(test_limits(), Arc::default());
    let mut s = connect(addr);
    s.write_all(b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    let first = read_until(&mut s, "body=");
    assert!(first.contains("Connection: keep-alive\r\n"), "{first}");
    s.write_all(b"GET /b HTTP/1.0\r\n\r\n").unwrap();
    let second = read_to_close(&mut s);
    assert!(
        second.contains("Connection: close\r\n") && second.contains("GET /b"),
        "{second}"
    );
    server.shutdown();
}

#[test]
fn expect_continue_gets_100_before_the_body() {
    let (server, addr) = start(test_limits(), Arc::default());
    let mut s = connect(addr);
    let head = "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    let interim = read_until(&mut s, "\r\n\r\n");
    assert_eq!(interim, "HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"data").unwrap();
    let text = read_to_close(&mut s);
    assert!(
        text.starts_with("HTTP/1.1 200 OK") && text.ends_with("body=data"),
        "{text}"
    );
    server.shutdown();
}

#[test]
fn bad_requests_get_status_errors_and_close() {
    let big_header = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "a".repeat(2000)
    );
    // (request bytes, status, reason)
    let cases: Vec<(String, u16, &str)> = vec![
        ("GARBAGE\r\n\r\n".into(), 400, "BadRequest"),
        ("GET / HTTP/1.1\r\n\r\n".into(), 400, "BadRequest"),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".into(),
            400,
            "BadRequest",
        ),
        (big_header, 431, ""),
        // Oversize by Content-Length: refused before the body is sent at all.
        (
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 65\r\n\r\n".into(),
            413,
            "RequestEntityTooLarge",
        ),
        (
            format!(
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n{}\r\n",
                "a".repeat(65)
            ),
            413,
            "RequestEntityTooLarge",
        ),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n".into(),
            501,
            "",
        ),
    ];
    let (server, addr) = start(test_limits(), Arc::default());
    for (raw, code, reason) in cases {
        let mut s = connect(addr);
        s.write_all(raw.as_bytes()).unwrap();
        let text = read_to_close(&mut s);
        assert_eq!(status_of(&text), code, "{raw:?} -> {text}");
        assert!(text.contains("Connection: close\r\n"), "{text}");
        let status = json_body(&text);
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["code"], code);
        assert_eq!(status["reason"].as_str().unwrap_or(""), reason, "{text}");
    }
    server.shutdown();
}

#[test]
fn slow_clients_time_out() {
    let (server, addr) = start(test_limits(), Arc::default());
    // Partial head: 408 after the header timeout.
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
    let t = Instant::now();
    let text = read_to_close(&mut s);
    assert_eq!(status_of(&text), 408, "{text}");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    // Partial body: 408 after the body timeout.
    let mut s = connect(addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        .unwrap();
    assert_eq!(status_of(&read_to_close(&mut s)), 408);
    // Idle: closed silently.
    let mut s = connect(addr);
    let t = Instant::now();
    assert_eq!(read_to_close(&mut s), "");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    server.shutdown();
}

#[test]
fn in_flight_limit_gives_429_but_streams_do_not_count() {
    let limits = Limits {
        in_flight_per_core_max: 1,
        ..test_limits()
    };
    let handler = Arc::new(TestHandler::default());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    *handler.stream_rx.lock().unwrap() = Some(rx);
    let (server, addr) = start(limits, handler);

    // A running stream does not hold an in-flight slot.
    let mut watch = connect(addr);
    watch
        .write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    read_until(&mut watch, "\r\n\r\n");
    let mut slow = connect(addr);
    slow.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // The slow request holds the only slot now.
    let mut s = connect(addr);
    s.write_all(b"GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let text = read_to_close(&mut s);
    assert_eq!(status_of(&text), 429, "{text}");
    assert!(text.contains("Retry-After: 1\r\n"), "{text}");
    assert_eq!(json_body(&text)["reason"], "TooManyRequests");
    assert_eq!(status_of(&read_to_close(&mut slow)), 200);
    drop(tx);
    server.shutdown();
}

#[test]
fn stream_chunks_arrive_before_the_stream_ends() {
    let handler = Arc::new(TestHandler::default());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    *handler.stream_rx.lock().unwrap() = Some(rx);
    let (server, addr) = start(test_limits(), handler.clone());
    let mut s = connect(addr);
    s.write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let head = read_until(&mut s, "\r\n\r\n");
    assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
    tx.send(b"{\"type\":\"ADDED\"}\n".to_vec()).unwrap();
    assert_eq!(
        read_until(&mut s, "}\n\r\n"),
        "11\r\n{\"type\":\"ADDED\"}\n\r\n"
    );
    tx.send(Vec::new()).unwrap(); // empty items are skipped, not a terminator
    tx.send(b"second".to_vec()).unwrap();
    drop(tx);
    assert_eq!(read_until(&mut s, "0\r\n\r\n"), "6\r\nsecond\r\n0\r\n\r\n");
    // The connection stays usable after the stream ended.
    s.write_all(b"GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert!(read_to_close(&mut s).ends_with("GET /after q= name=None body="));
    server.shutdown();
}

#[test]
fn stream_is_dropped_when_the_client_hangs_up() {
    let handler = Arc::new(TestHandler::default());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    *handler.stream_rx.lock().unwrap() = Some(rx);
    let (server, addr) = start(test_limits(), handler.clone());
    let mut s = connect(addr);
    s.write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    read_until(&mut s, "\r\n\r\n");
    drop(s);
    let t = Instant::now();
    while !handler.stream_dropped.load(Ordering::SeqCst) {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "stream still alive after hang-up"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(tx);
    server.shutdown();
}

#[test]
fn connections_beyond_the_core_limit_are_closed() {
    let limits = Limits {
        connections_per_core_max: 1,
        ..test_limits()
    };
    let (server, addr) = start(limits, Arc::default());
    let mut first = connect(addr);
    first
        .write_all(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    read_until(&mut first, "body=");
    let mut second = connect(addr);
    let _ = second.write_all(b"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(read_to_close(&mut second), "");
    server.shutdown();
}

#[test]
fn shutdown_finishes_in_flight_requests_and_stops_accepting() {
    let (server, addr) = start(test_limits(), Arc::default());
    let mut s = connect(addr);
    s.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    server.shutdown();
    assert!(
        t.elapsed() >= Duration::from_millis(200),
        "did not wait for /slow"
    );
    let text = read_to_close(&mut s);
    assert_eq!(status_of(&text), 200, "{text}");
    assert!(text.contains("Connection: close\r\n"), "{text}");
    assert!(
        TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
}

#[test]
fn every_core_binds_the_same_port() {
    let cfg = ServeConfig {
        listeners: vec![
            Listener {
                addr: "127.0.0.1:0".parse().unwrap(),
                tls: None,
            },
            Listener {
                addr: "[::1]:0".parse().unwrap(),
                tls: None,
            },
        ],
        cores: 2,
        pin: true,
        limits: test_limits(),
    };
    let server = serve(cfg, Arc::new(TestHandler::default())).unwrap();
    let addrs = server.local_addrs();
    assert_eq!(addrs.len(), 2);
    for addr in &addrs {
        assert_ne!(addr.port(), 0);
        for _ in 0..4 {
            let mut s = connect(*addr);
            s.write_all(b"GET /p HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            assert_eq!(status_of(&read_to_close(&mut s)), 200);
        }
    }
    server.shutdown();
}

#[test]
fn a_port_held_by_another_server_is_refused_not_shared() {
    let (first, addr) = start(test_limits(), Arc::new(TestHandler::default()));
    let cfg = ServeConfig {
        listeners: vec![Listener { addr, tls: None }],
        cores: 2,
        pin: false,
        limits: test_limits(),
    };
    let err = match serve(cfg, Arc::new(TestHandler::default())) {
        Ok(second) => {
            second.shutdown();
            panic!("a second server bound {addr}, which the first still holds");
        }
        Err(e) => e,
    };
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    assert!(err.to_string().contains("already in use"), "{err}");
    // The first server still answers, alone.
    let mut s = connect(addr);
    s.write_all(b"GET /p HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(status_of(&read_to_close(&mut s)), 200);
    // Once it has stopped, the port can be bound again.
    first.shutdown();
    let cfg = ServeConfig {
        listeners: vec![Listener { addr, tls: None }],
        cores: 2,
        pin: false,
        limits: test_limits(),
    };
    serve(cfg, Arc::new(TestHandler::default()))
        .expect("the port is free again")
        .shutdown();
}

#[test]
fn full_body_larger_than_the_write_buffer_is_sent_whole() {
    struct Big;
    impl Handler for Big {
        fn handle(&self, _: Request) -> Pin<Box<dyn Future<Output = Response>>> {
            Box::pin(async {
                Response {
                    status: 200,
                    headers: vec![],
                    body: Body::Full(vec![b'z'; 300_000]),
                }
            })
        }
    }
    let cfg = ServeConfig {
        listeners: vec![Listener {
            addr: "127.0.0.1:0".parse().unwrap(),
            tls: None,
        }],
        cores: 1,
        pin: false,
        limits: test_limits(),
    };
    let server = serve(cfg, Arc::new(Big)).unwrap();
    let mut s = connect(server.local_addrs()[0]);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let text = read_to_close(&mut s);
    assert!(text.contains("Content-Length: 300000\r\n"));
    assert_eq!(text.split_once("\r\n\r\n").unwrap().1.len(), 300_000);
    server.shutdown();
}

/// The body of an `Expect: 100-continue` request was invited before the request was
/// authenticated: a client without credentials was asked for its body. Now the head is
/// judged first and the refusal is the only answer.
#[test]
fn refused_head_gets_no_100_continue_and_its_body_is_not_read() {
    let handler = Arc::new(TestHandler::default());
    let (server, addr) = start(test_limits(), handler.clone());
    let mut s = connect(addr);
    s.write_all(
        b"POST /private HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 40\r\n\r\n",
    )
    .unwrap();
    let text = read_to_close(&mut s);
    assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{text}");
    assert!(!text.contains("100 Continue"), "{text}");
    assert!(text.contains("Connection: close\r\n"), "{text}");
    assert_eq!(json_body(&text)["reason"], "Unauthorized");
    // Without Expect, a body that has not all arrived is not read either: the connection is
    // closed after the answer, and the handler never ran.
    let mut s = connect(addr);
    s.write_all(b"POST /private HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\nabc")
        .unwrap();
    let text = read_to_close(&mut s);
    assert_eq!(status_of(&text), 401, "{text}");
    assert!(text.contains("Connection: close\r\n"), "{text}");
    assert_eq!(handler.handled.load(Ordering::SeqCst), 0);
    // Admitted, the same request is invited and served.
    let mut s = connect(addr);
    s.write_all(b"POST /private HTTP/1.1\r\nHost: x\r\nAuthorization: ok\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(
        read_until(&mut s, "\r\n\r\n"),
        "HTTP/1.1 100 Continue\r\n\r\n"
    );
    s.write_all(b"data").unwrap();
    assert!(read_to_close(&mut s).ends_with("body=data"));
    server.shutdown();
}

#[test]
fn refused_request_whose_body_arrived_keeps_its_connection() {
    let (server, addr) = start(test_limits(), Arc::default());
    let mut s = connect(addr);
    s.write_all(
        concat!(
        "POST /private HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        "GET /private/next HTTP/1.1\r\nHost: x\r\nAuthorization: ok\r\nConnection: close\r\n\r\n",
    )
        .as_bytes(),
    )
    .unwrap();
    let text = read_to_close(&mut s);
    assert_eq!(status_of(&text), 401, "{text}");
    assert!(
        text.contains("HTTP/1.1 200 OK") && text.ends_with("GET /private/next q= name=None body="),
        "the refused body was dropped, the next request served: {text}"
    );
    server.shutdown();
}

/// Two `Host` fields were accepted (the first used). Go's server, kube-apiserver's, refuses
/// such a request before any handler runs, in plain text.
#[test]
fn two_host_fields_get_gos_plain_400() {
    let handler = Arc::new(TestHandler::default());
    let (server, addr) = start(test_limits(), handler.clone());
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
        .unwrap();
    assert_eq!(
        read_to_close(&mut s),
        "HTTP/1.1 400 Bad Request: too many Host headers\r\n\
         Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n\
         400 Bad Request: too many Host headers"
    );
    assert_eq!(handler.handled.load(Ordering::SeqCst), 0);
    server.shutdown();
}

/// A body larger than the first buffer room grows with its bytes, and no byte of the next
/// pipelined request is taken into it.
#[test]
fn large_bodies_are_read_whole_and_exactly() {
    let limits = Limits {
        body_bytes_max: 1 << 20,
        ..test_limits()
    };
    let (server, addr) = start(limits, Arc::default());
    let body: Vec<u8> = (0..300_001u32).map(|i| (i % 251) as u8).collect();
    let sum: u64 = body.iter().map(|b| u64::from(*b)).sum();
    let mut raw = format!(
        "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body);
    raw.extend_from_slice(b"GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut s = connect(addr);
    s.write_all(&raw).unwrap();
    let text = read_to_close(&mut s);
    assert!(text.contains(&format!("len=300001 sum={sum}")), "{text}");
    assert!(text.ends_with("GET /after q= name=None body="), "{text}");
    server.shutdown();
}

/// Bodies being read or handled on a core hold at most the body budget: past it a request
/// gets 429 before its body is invited, and the budget comes back when the holder is done.
#[test]
fn spent_body_budget_gives_429_until_bodies_are_done() {
    let limits = Limits {
        body_bytes_max: 64 * 1024,
        body_bytes_in_flight_per_core_max: 64 * 1024,
        ..test_limits()
    };
    let handler = Arc::new(TestHandler::default());
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel();
    *handler.hold.lock().unwrap() = Some((entered_tx, release_rx));
    let (server, addr) = start(limits, handler);
    // A whole-size body held by a running handler spends the budget.
    let mut holder = connect(addr);
    let mut raw =
        b"POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\nConnection: close\r\n\r\n"
            .to_vec();
    raw.extend_from_slice(&[7u8; 65536]);
    holder.write_all(&raw).unwrap();
    entered_rx.recv().unwrap();
    let small = "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\n";
    let mut s = connect(addr);
    s.write_all(small.as_bytes()).unwrap();
    let text = read_to_close(&mut s);
    assert_eq!(status_of(&text), 429, "{text}");
    assert!(!text.contains("100 Continue"), "{text}");
    assert!(text.contains("Retry-After: 1\r\n"), "{text}");
    assert_eq!(json_body(&text)["reason"], "TooManyRequests");
    // Requests without a body need no budget.
    let mut s = connect(addr);
    s.write_all(b"GET /g HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(status_of(&read_to_close(&mut s)), 200);
    release_tx.send(()).unwrap();
    assert!(read_to_close(&mut holder).ends_with("held"));
    // Given back: the same request is served.
    let mut s = connect(addr);
    s.write_all(small.as_bytes()).unwrap();
    read_until(&mut s, "100 Continue\r\n\r\n");
    s.write_all(b"data").unwrap();
    assert!(read_to_close(&mut s).ends_with("body=data"));
    server.shutdown();
}

#[test]
fn connections_beyond_the_unadmitted_cap_are_closed() {
    let limits = Limits {
        unadmitted_connections_per_core_max: 1,
        ..test_limits()
    };
    let (server, addr) = start(limits, Arc::default());
    // Silent so far: it counts as unadmitted, and the next connection is refused.
    let mut first = connect(addr);
    let mut second = connect(addr);
    let _ = second.write_all(b"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(read_to_close(&mut second), "");
    // Once its request is admitted it no longer counts: a new connection is served.
    first
        .write_all(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    read_until(&mut first, "body=");
    let mut third = connect(addr);
    third
        .write_all(b"GET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(status_of(&read_to_close(&mut third)), 200);
    server.shutdown();
}

#[test]
fn limits_that_contradict_each_other_are_refused() {
    let limits = Limits {
        body_bytes_max: 1 << 20,
        body_bytes_in_flight_per_core_max: 1 << 19,
        ..test_limits()
    };
    let cfg = ServeConfig {
        listeners: vec![Listener {
            addr: "127.0.0.1:0".parse().unwrap(),
            tls: None,
        }],
        cores: 1,
        pin: false,
        limits,
    };
    let err = match serve(cfg, Arc::new(TestHandler::default())) {
        Ok(s) => {
            s.shutdown();
            panic!("served with a body budget below one body");
        }
        Err(e) => e,
    };
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
}
