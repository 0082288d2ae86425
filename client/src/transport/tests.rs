//! The client against a scripted HTTP/1.1 server on loopback: keep-alive reuse, chunked
//! bodies handed out as they arrive, the retry on a closed keep-alive connection (idempotent
//! requests only), error statuses, malformed responses, body limits and the timeout.

use super::*;
use crate::testing::{client, ok, server, Act, CHUNKED_HEAD};
use std::sync::atomic::Ordering;

#[tokio::test]
async fn keep_alive_reuses_one_connection() {
    let s = server(|n| Act::Reply(vec![ok(&format!("r{n}"))])).await;
    let c = client(s.port);
    for n in 0..3 {
        let body = Bytes::from_static(b"{}");
        let r = c
            .request(Method::POST, "/a?x=1", Some((JSON, body)))
            .await
            .unwrap();
        assert_eq!((r.status, &r.body[..]), (200, format!("r{n}").as_bytes()));
    }
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(c.idle_connections(), 1);
    let first = s.requests.lock().unwrap()[0].clone();
    assert!(
        first.starts_with("POST /prefix/a?x=1 HTTP/1.1\r\nHost: 127.0.0.1:"),
        "{first}"
    );
    for line in [
        "Authorization: Bearer t0k\r\n",
        "Content-Type: application/json\r\n",
        "Content-Length: 2\r\n\r\n{}",
    ] {
        assert!(first.contains(line), "{first} lacks {line}");
    }
}

#[tokio::test]
async fn chunked_bodies_are_handed_out_as_they_arrive() {
    let s = server(|_| {
        Act::Reply(vec![
            [CHUNKED_HEAD, b"5\r\nhello\r\n"].concat(),
            b"6\r\n world\r\n".to_vec(),
            b"0\r\n\r\n".to_vec(),
        ])
    })
    .await;
    let c = client(s.port);
    let whole = c.request(Method::GET, "/w", None).await.unwrap();
    assert_eq!(&whole.body[..], b"hello world");
    let mut pieces = Vec::new();
    let len = c
        .get_streamed("/w", |p| {
            pieces.push(p.to_vec());
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!((len, pieces.concat()), (11, b"hello world".to_vec()));
    assert!(pieces.len() >= 2, "pieces arrive apart: {pieces:?}");
    let mut stream = c.stream("/w").await.unwrap();
    let first = stream.next_chunk().await.unwrap().map(<[u8]>::to_vec);
    assert_eq!(
        first.as_deref(),
        Some(&b"hello"[..]),
        "before the rest is sent"
    );
    let mut rest = Vec::new();
    while stream.fill().await.unwrap() {
        stream
            .drain(|p| {
                rest.extend_from_slice(p);
                Ok(())
            })
            .await
            .unwrap();
    }
    assert_eq!(rest, b" world");
    assert_eq!(
        s.accepted.load(Ordering::SeqCst),
        1,
        "one connection for all"
    );
}

#[tokio::test]
async fn a_closed_keep_alive_connection_is_retried_for_idempotent_requests_only() {
    let s = server(|n| Act::ReplyClose(ok(&format!("r{n}")))).await;
    let c = client(s.port);
    assert_eq!(
        &c.request(Method::GET, "/", None).await.unwrap().body[..],
        b"r0"
    );
    // The server closed that connection; the GET is sent again on a new one.
    assert_eq!(
        &c.request(Method::GET, "/", None).await.unwrap().body[..],
        b"r1"
    );
    assert_eq!(s.accepted.load(Ordering::SeqCst), 2);
    let post = c
        .request(Method::POST, "/", Some((JSON, Bytes::from_static(b"{}"))))
        .await;
    assert!(post.is_err(), "a POST is not sent twice: {post:?}");
    assert_eq!(s.accepted.load(Ordering::SeqCst), 2);
    // After a failure the next request connects afresh.
    assert_eq!(
        &c.request(Method::PUT, "/", None).await.unwrap().body[..],
        b"r2"
    );
}

#[tokio::test]
async fn statuses_and_malformed_responses() {
    let gone = br#"{"kind":"Status","reason":"Expired","code":410}"#;
    let s = server(move |n| match n {
        0 => Act::Reply(vec![
            format!(
                "HTTP/1.1 410 Gone\r\nContent-Length: {}\r\n\r\n",
                gone.len()
            )
            .into_bytes(),
            gone.to_vec(),
        ]),
        1 => Act::ReplyClose(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort".to_vec()),
        2 => Act::ReplyClose(b"NOT HTTP\r\n\r\n".to_vec()),
        3 => Act::ReplyClose([CHUNKED_HEAD, b"zz\r\n"].concat()),
        _ => Act::ReplyClose(b"HTTP/1.1 204 No Content\r\n\r\n".to_vec()),
    })
    .await;
    let c = client(s.port);
    let err = c.stream("/watch").await.err().unwrap();
    assert_eq!(err, "HTTP 410 Expired");
    let short = c.request(Method::GET, "/", None).await.unwrap_err();
    assert!(short.contains("closed before the end"), "{short}");
    let bad = c.request(Method::GET, "/", None).await.unwrap_err();
    assert!(bad.contains("bad response head"), "{bad}");
    let chunk = c.request(Method::GET, "/", None).await.unwrap_err();
    assert!(chunk.contains("chunk size"), "{chunk}");
    let empty = c.request(Method::DELETE, "/", None).await.unwrap();
    assert_eq!((empty.status, empty.body.len()), (204, 0));
}

#[tokio::test]
async fn bodies_over_the_limit_are_errors() {
    let s = server(|n| {
        if n == 0 {
            Act::Reply(vec![ok("0123456789")])
        } else {
            Act::Reply(vec![[
                CHUNKED_HEAD,
                b"6\r\n012345\r\n6\r\n678901\r\n0\r\n\r\n",
            ]
            .concat()])
        }
    })
    .await;
    let url = Url::parse(&format!("http://127.0.0.1:{}", s.port)).unwrap();
    for framing in ["length", "chunked"] {
        let mut conn = Conn::connect(&url, None).await.unwrap();
        conn.wbuf = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        conn.send().await.unwrap();
        let head = conn.read_head().await.unwrap();
        let mut dec = BodyDecoder::new(head.framing);
        let err = conn.read_body(&mut dec, 9).await.unwrap_err();
        assert!(err.contains("limit"), "{framing}: {err}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_without_an_answer_times_out() {
    let s = server(|_| Act::Hang).await;
    let c = client(s.port);
    let err = c.request(Method::GET, "/", None).await.unwrap_err();
    assert!(err.contains("no response within"), "{err}");
}

#[test]
fn bad_endpoints_are_errors() {
    let ep = |server: &str, token: Option<&str>| Endpoint {
        server: server.into(),
        token: token.map(String::from),
        ..Default::default()
    };
    assert!(KubeClient::new(&ep("ftp://x", None), 1).is_err());
    assert!(KubeClient::new(&ep("http://x", Some("a\nb")), 1).is_err());
    assert!(KubeClient::new(&ep("https://127.0.0.1:1", Some("t")), 1).is_ok());
}
