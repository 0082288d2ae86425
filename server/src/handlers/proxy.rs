//! The proxy to an aggregated API server (`crate::aggregator`): a request keel authenticated and authorized goes to
//! the APIService's Service with the user named in the request headers (upstream's
//! `X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`, `X-Remote-Extra-`), the client's own
//! credentials and hop-by-hop headers left out; the answer comes back as it arrives (a watch
//! streams). Failures are upstream's plain-text answers: 503 `service unavailable` while the
//! APIService is not available or its Service cannot be resolved, 503 with the transport's
//! error when the server cannot be reached.

use crate::aggregator::{user_headers, Remote};
use crate::auth::User;
use crate::controllers::apiservices::resolve;
use crate::state::State;
use keel_client::{Forward, Method};
use keel_http::{Body, Request, Response};
use std::sync::Arc;

/// Hop-by-hop headers (RFC 9110 7.6.1) and the framing, which the proxy writes itself: never
/// passed on in either direction.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
    )
}

/// Request headers never passed on: hop-by-hop ones, the client's credentials, those the
/// proxy sets itself, and user headers a client could forge.
fn dropped_request_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    hop_by_hop(&n)
        || matches!(
            n.as_str(),
            "proxy-authenticate"
                | "proxy-authorization"
                | "host"
                | "authorization"
                | "content-type"
                | "accept"
                | "impersonate-user"
                | "impersonate-group"
                | "impersonate-uid"
        )
        || n.starts_with("x-remote-")
        || n.starts_with("impersonate-extra-")
}

/// Response headers not passed back.
fn dropped_response_header(name: &str) -> bool {
    hop_by_hop(&name.to_ascii_lowercase())
}

/// Upstream's plain-text proxy error.
fn plain(status: u16, text: &str) -> Response {
    let mut r = Response::full(
        status,
        "text/plain; charset=utf-8",
        format!("{text}\n").into_bytes(),
    );
    r.headers
        .push(("X-Content-Type-Options".into(), "nosniff".into()));
    r
}

/// Proxies `req` (from `user`) to `remote`.
pub async fn proxy(st: &State, req: &Request, user: &User, remote: &Remote) -> Response {
    if !remote.available {
        return plain(503, "service unavailable");
    }
    let Some(method) = Method::from_name(req.method.as_str()) else {
        return plain(405, "method not allowed");
    };
    // Where the availability check resolved the Service; read from the store only when a
    // change made that unknown.
    let authority: Arc<str> = match remote.address() {
        Some(a) => a,
        None => match resolve::resolve(st, &remote.service, st.aggregator.endpoint_routing()).await
        {
            Ok(a) => {
                let a: Arc<str> = a.into();
                remote.remember_address(a.clone());
                a
            }
            Err(e) => {
                eprintln!(
                    "aggregator: error resolving {}/{}: {e}",
                    remote.service.namespace, remote.service.name
                );
                return plain(503, "service unavailable");
            }
        },
    };
    let client = match remote.client(&authority, st.aggregator.identity()) {
        Ok(c) => c,
        Err(e) => return plain(500, &e),
    };
    let requester = user.requester();
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .filter(|(n, _)| !dropped_request_header(n))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    headers.extend(user_headers(&user.name, &user.uid, &requester.groups));
    let header_refs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let path = if req.target.starts_with('/') {
        req.target.clone()
    } else if req.query.is_empty() {
        req.path.clone()
    } else {
        format!("{}?{}", req.path, req.query)
    };
    let content_type = req.headers.get("content-type").unwrap_or("");
    let has_body = !req.body.is_empty() || !content_type.is_empty();
    let forwarded = client
        .forward(Forward {
            method,
            path: &path,
            accept: req.headers.get("accept").unwrap_or("*/*"),
            headers: &header_refs,
            body: has_body.then_some((content_type, &req.body[..])),
        })
        .await;
    let answer = match forwarded {
        Ok(a) => a,
        Err(e) => return plain(503, &e),
    };
    let mut resp = Response {
        status: answer.status,
        headers: answer
            .headers
            .into_iter()
            .filter(|(n, _)| !dropped_response_header(n))
            .collect(),
        body: Body::Full(Vec::new()),
    };
    let stream = futures_util::stream::unfold(Some(answer.body), |body| async move {
        let mut body = body?;
        match body.next_chunk().await {
            Ok(Some(bytes)) => {
                let chunk = bytes.to_vec();
                Some((chunk, Some(body)))
            }
            Ok(None) | Err(_) => None,
        }
    });
    resp.body = Body::Stream(Box::pin(stream));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_passed_on_and_user_headers() {
        for dropped in [
            "Authorization",
            "connection",
            "X-Remote-User",
            "x-remote-extra-scopes",
            "Impersonate-User",
            "Content-Length",
            "Host",
        ] {
            assert!(dropped_request_header(dropped), "{dropped}");
        }
        for kept in ["User-Agent", "Audit-ID", "If-None-Match", "Warning"] {
            assert!(!dropped_request_header(kept), "{kept}");
        }
        assert!(dropped_response_header("Transfer-Encoding"));
        assert!(!dropped_response_header("Content-Type"));
        assert_eq!(
            user_headers("alice", "", &["g1".into(), "system:authenticated".into()]),
            [
                ("X-Remote-User".to_string(), "alice".to_string()),
                ("X-Remote-Group".into(), "g1".into()),
                ("X-Remote-Group".into(), "system:authenticated".into()),
            ]
        );
    }
}
