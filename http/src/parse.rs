//! Pure request-head parsing: bytes in, a typed head (or a typed error) out. No I/O.
//!
//! Framing rules (RFC 9112 §6): `Transfer-Encoding: chunked` (the only coding accepted)
//! frames the body; otherwise a single `Content-Length`; otherwise there is no body. A request
//! with both, with conflicting lengths, or with an unparsable length is rejected (400), as
//! request smuggling hides in exactly those cases.

use crate::limits::{Limits, HEADER_COUNT_HARD_MAX};
use crate::request::{percent_decode_strict, Headers, Method};

/// How the request body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    Empty,
    /// Exactly this many bytes follow the head.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
}

/// A parsed request head.
#[derive(Debug)]
pub(crate) struct Head {
    pub method: Method,
    pub target: String,
    pub path: String,
    pub query: String,
    pub headers: Headers,
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    pub version_minor: u8,
    pub framing: Framing,
    /// The client sent `Expect: 100-continue` and waits for a go-ahead before its body.
    pub expect_continue: bool,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
}

/// Why a head was refused. Each maps to one status code; all close the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// Head longer than `header_bytes_max`: 431.
    TooLarge,
    /// More than `header_count_max` fields: 431.
    TooManyHeaders,
    /// Syntax or framing error: 400 with this message.
    Malformed(&'static str),
    /// A transfer coding other than `chunked`: 501.
    UnsupportedTransferCoding,
    /// More than one `Host` field (RFC 9112 §3.2): 400, answered in Go's words and form.
    TooManyHosts,
}

impl HeadError {
    /// The status code this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            HeadError::TooLarge | HeadError::TooManyHeaders => 431,
            HeadError::Malformed(_) | HeadError::TooManyHosts => 400,
            HeadError::UnsupportedTransferCoding => 501,
        }
    }

    /// The message put in the error's `Status` body.
    pub fn message(&self) -> &'static str {
        match self {
            HeadError::TooLarge => "request header fields too large",
            HeadError::TooManyHeaders => "too many request header fields",
            HeadError::Malformed(m) => m,
            HeadError::UnsupportedTransferCoding => "unsupported transfer coding",
            HeadError::TooManyHosts => "too many Host headers",
        }
    }
}

/// Parses a request head at the start of `buf`. `Ok(None)`: incomplete, read more.
/// `Ok(Some((head, len)))`: the head took `len` bytes; the body (if any) follows.
pub(crate) fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<(Head, usize)>, HeadError> {
    let mut slots = [httparse::EMPTY_HEADER; HEADER_COUNT_HARD_MAX];
    let mut req = httparse::Request::new(&mut slots[..limits.header_count()]);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() >= limits.header_bytes_max => {
            return Err(HeadError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
        Err(_) => return Err(HeadError::Malformed("malformed HTTP request")),
    };
    if len > limits.header_bytes_max {
        return Err(HeadError::TooLarge);
    }
    let head = build_head(&req)?;
    Ok(Some((head, len)))
}

fn build_head(req: &httparse::Request<'_, '_>) -> Result<Head, HeadError> {
    // httparse guarantees these are set on a complete parse.
    let method = Method::from_token(req.method.unwrap_or_default());
    let target = req.path.unwrap_or_default().to_string();
    let version_minor = req.version.unwrap_or(1);
    let mut headers = Headers::with_capacity(
        req.headers.len(),
        req.headers
            .iter()
            .map(|h| h.name.len() + h.value.len())
            .sum(),
    );
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| HeadError::Malformed("header value is not valid UTF-8"))?;
        headers.push(h.name, value);
    }
    let (path, query) = split_target(&target)?;
    if version_minor == 1 && headers.get("host").is_none() {
        return Err(HeadError::Malformed("missing required Host header"));
    }
    if headers.get_all("host").nth(1).is_some() {
        return Err(HeadError::TooManyHosts);
    }
    let framing = framing(&headers, version_minor)?;
    let expect_continue = version_minor == 1 && headers.has_token("expect", "100-continue");
    let keep_alive = match version_minor {
        1 => !headers.has_token("connection", "close"),
        _ => headers.has_token("connection", "keep-alive"),
    };
    Ok(Head {
        method,
        target,
        path,
        query,
        headers,
        version_minor,
        framing,
        expect_continue,
        keep_alive,
    })
}

/// Splits a request-target into its decoded path and raw query.
fn split_target(target: &str) -> Result<(String, String), HeadError> {
    if target == "*" {
        return Ok(("*".to_string(), String::new()));
    }
    let origin = match target.find("://") {
        Some(scheme_end) if target.starts_with("http") => {
            let rest = &target[scheme_end + 3..];
            rest.find(['/', '?']).map_or("/", |i| &rest[i..])
        }
        _ => target,
    };
    let (raw_path, query) = origin.split_once('?').unwrap_or((origin, ""));
    let raw_path = if raw_path.is_empty() && origin != target {
        "/"
    } else {
        raw_path
    };
    if !raw_path.starts_with('/') {
        return Err(HeadError::Malformed("invalid request target"));
    }
    let decoded = percent_decode_strict(raw_path.as_bytes())
        .ok_or(HeadError::Malformed("invalid percent-encoding in path"))?;
    let path =
        String::from_utf8(decoded).map_err(|_| HeadError::Malformed("path is not valid UTF-8"))?;
    Ok((path, query.to_string()))
}

fn framing(headers: &Headers, version_minor: u8) -> Result<Framing, HeadError> {
    let has_te = headers.get("transfer-encoding").is_some();
    let has_cl = headers.get("content-length").is_some();
    if has_te {
        if has_cl {
            return Err(HeadError::Malformed(
                "both Transfer-Encoding and Content-Length",
            ));
        }
        if version_minor == 0 {
            return Err(HeadError::Malformed(
                "Transfer-Encoding in an HTTP/1.0 request",
            ));
        }
        let codings: Vec<&str> = headers
            .get_all("transfer-encoding")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        return match codings.as_slice() {
            [c] if c.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
            _ => Err(HeadError::UnsupportedTransferCoding),
        };
    }
    if !has_cl {
        return Ok(Framing::Empty);
    }
    let mut length = None;
    for v in headers.get_all("content-length").flat_map(|v| v.split(',')) {
        let v = v.trim();
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(HeadError::Malformed("invalid Content-Length"));
        }
        let n: u64 = v
            .parse()
            .map_err(|_| HeadError::Malformed("invalid Content-Length"))?;
        if length.is_some_and(|l| l != n) {
            return Err(HeadError::Malformed("conflicting Content-Length values"));
        }
        length = Some(n);
    }
    Ok(match length {
        Some(0) | None => Framing::Empty,
        Some(n) => Framing::Length(n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> Result<Option<(Head, usize)>, HeadError> {
        parse_head(raw.as_bytes(), &Limits::default())
    }

    #[test]
    fn parses_complete_heads() {
        let raw = "GET /api/v1/name%20spaces?watch=1&x=%2F HTTP/1.1\r\nHost: a\r\n\r\nrest";
        let (head, len) = parse(raw).unwrap().unwrap();
        assert_eq!(len, raw.len() - 4);
        assert_eq!(head.method, Method::Get);
        assert_eq!(head.target, "/api/v1/name%20spaces?watch=1&x=%2F");
        assert_eq!(head.path, "/api/v1/name spaces");
        assert_eq!(head.query, "watch=1&x=%2F");
        assert_eq!(head.framing, Framing::Empty);
        assert!(head.keep_alive);
        assert!(!head.expect_continue);
    }

    #[test]
    fn framing_and_connection_table() {
        // (raw head, framing, keep_alive, expect_continue)
        let cases: &[(&str, Framing, bool, bool)] = &[
            (
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n",
                Framing::Length(5),
                true,
                false,
            ),
            (
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
                Framing::Empty,
                true,
                false,
            ),
            (
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7, 7\r\n\r\n",
                Framing::Length(7),
                true,
                false,
            ),
            (
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n",
                Framing::Chunked,
                true,
                false,
            ),
            (
                "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                Framing::Empty,
                false,
                false,
            ),
            ("GET / HTTP/1.0\r\n\r\n", Framing::Empty, false, false),
            (
                "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
                Framing::Empty,
                true,
                false,
            ),
            (
                "PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
                Framing::Length(3),
                true,
                true,
            ),
        ];
        for (raw, framing, keep_alive, expect) in cases {
            let (head, _) = parse(raw).unwrap().unwrap();
            assert_eq!(head.framing, *framing, "{raw:?}");
            assert_eq!(head.keep_alive, *keep_alive, "{raw:?}");
            assert_eq!(head.expect_continue, *expect, "{raw:?}");
        }
    }

    #[test]
    fn rejects_bad_heads() {
        let cases: &[(&str, u16)] = &[
            ("GET / HTTP/1.1\r\n\r\n", 400),
            ("GET  HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 400),
            ("GET nopath HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400),
            ("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ];
        for (raw, status) in cases {
            let err = parse(raw)
                .err()
                .unwrap_or_else(|| panic!("accepted {raw:?}"));
            assert_eq!(err.status(), *status, "{raw:?}: {err:?}");
        }
    }

    /// Two `Host` fields were accepted (the first one used), where Go's server refuses the
    /// request before any handler runs: a proxy in front could have routed by the other one.
    #[test]
    fn two_host_fields_are_refused_even_when_equal() {
        for raw in [
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nHOST: a\r\n\r\n",
        ] {
            assert_eq!(parse(raw).unwrap_err(), HeadError::TooManyHosts, "{raw:?}");
        }
    }

    #[test]
    fn incomplete_heads_ask_for_more_until_the_size_limit() {
        let limits = Limits {
            header_bytes_max: 64,
            ..Limits::default()
        };
        let partial = b"GET / HTTP/1.1\r\nHost: a\r\n";
        assert!(parse_head(partial, &limits).unwrap().is_none());
        let long = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}", "y".repeat(64));
        assert_eq!(
            parse_head(long.as_bytes(), &limits).unwrap_err(),
            HeadError::TooLarge
        );
        let complete_but_long = format!("{long}\r\n\r\n");
        let err = parse_head(complete_but_long.as_bytes(), &limits).unwrap_err();
        assert_eq!(err, HeadError::TooLarge);
    }

    #[test]
    fn header_count_limit() {
        let limits = Limits {
            header_count_max: 3,
            ..Limits::default()
        };
        let ok = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
        assert!(parse_head(ok.as_bytes(), &limits).unwrap().is_some());
        let too_many = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
        let err = parse_head(too_many.as_bytes(), &limits).unwrap_err();
        assert_eq!(err, HeadError::TooManyHeaders);
    }

    #[test]
    fn target_forms() {
        let cases: &[(&str, &str, &str)] = &[
            ("/a/b?c=d", "/a/b", "c=d"),
            ("http://host:1/x?y", "/x", "y"),
            ("http://host", "/", ""),
            ("https://host?q=1", "/", "q=1"),
            ("*", "*", ""),
            ("/?", "/", ""),
        ];
        for (target, path, query) in cases {
            let raw = format!("OPTIONS {target} HTTP/1.1\r\nHost: a\r\n\r\n");
            let (head, _) = parse(&raw).unwrap().unwrap();
            assert_eq!(
                (head.path.as_str(), head.query.as_str()),
                (*path, *query),
                "{target}"
            );
        }
    }
}
