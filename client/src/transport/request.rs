//! Request heads: the headers that never change (Host, Authorization, User-Agent) rendered
//! once per client, the rest appended per request into a reused buffer. Pure.

/// HTTP methods the client sends.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    GET,
    POST,
    PUT,
    PATCH,
    DELETE,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::GET => "GET",
            Method::POST => "POST",
            Method::PUT => "PUT",
            Method::PATCH => "PATCH",
            Method::DELETE => "DELETE",
        }
    }

    /// The method named `name` (upper case), if the client sends it.
    pub fn from_name(name: &str) -> Option<Method> {
        Some(match name {
            "GET" => Method::GET,
            "POST" => Method::POST,
            "PUT" => Method::PUT,
            "PATCH" => Method::PATCH,
            "DELETE" => Method::DELETE,
            _ => return None,
        })
    }

    /// Idempotent (RFC 9110 9.2.2): safe to send again when a kept-alive connection turned out
    /// to be closed.
    pub fn idempotent(self) -> bool {
        matches!(self, Method::GET | Method::PUT | Method::DELETE)
    }

    /// Requests of this method carry a body (so always a Content-Length).
    fn has_body(self) -> bool {
        matches!(self, Method::POST | Method::PUT | Method::PATCH)
    }
}

/// The headers every request of one client carries, each line ending in CRLF.
pub fn fixed_headers(
    authority: &str,
    token: Option<&str>,
    user_agent: &str,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (name, value) in [
        ("Host", Some(authority.to_string())),
        ("Authorization", token.map(|t| format!("Bearer {t}"))),
        // None: the caller sends its own (a proxy passing its client's on).
        (
            "User-Agent",
            (!user_agent.is_empty()).then(|| user_agent.to_string()),
        ),
    ] {
        let Some(value) = value else { continue };
        if value.bytes().any(|b| b < b' ' || b == 0x7f) {
            return Err(format!("{name} has characters not allowed in a header"));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    Ok(out)
}

/// A request to render.
pub struct Request<'a> {
    pub method: Method,
    /// Path and query, starting with `/`.
    pub path: &'a str,
    pub accept: &'a str,
    /// Content type and bytes.
    pub body: Option<(&'a str, &'a [u8])>,
    /// More header fields (a proxied request's), written after `Accept`.
    pub headers: &'a [(&'a str, &'a str)],
}

/// Renders the whole request (head and body) into `out`, replacing its contents. The target is
/// `prefix` + `path`; a path that does not start with `/` or holds spaces or control characters
/// is an error.
pub fn render(out: &mut Vec<u8>, prefix: &str, fixed: &[u8], req: &Request) -> Result<(), String> {
    let path = req.path.as_bytes();
    if path.first() != Some(&b'/') || path.iter().any(|&b| b <= b' ' || b == 0x7f) {
        return Err(format!("bad request path {:?}", req.path));
    }
    out.clear();
    out.extend_from_slice(req.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(prefix.as_bytes());
    out.extend_from_slice(path);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    out.extend_from_slice(fixed);
    out.extend_from_slice(b"Accept: ");
    out.extend_from_slice(req.accept.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in req.headers {
        let bad = |t: &str| t.bytes().any(|b| b < b' ' && b != b'\t' || b == 0x7f);
        if name.is_empty() || name.contains(':') || bad(name) || bad(value) {
            return Err(format!(
                "header {name:?} has characters not allowed in a header"
            ));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let body = match req.body {
        Some((ct, bytes)) => {
            out.extend_from_slice(b"Content-Type: ");
            out.extend_from_slice(ct.as_bytes());
            out.extend_from_slice(b"\r\n");
            bytes
        }
        None => &[],
    };
    if req.body.is_some() || req.method.has_body() {
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(out, body.len() as u64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(())
}

fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_render() {
        let fixed = fixed_headers("h:1", Some("tok"), "keel-loadgen").unwrap();
        let cases: &[(Request, &str, &str)] = &[
            (
                Request {
                    method: Method::GET,
                    path: "/api/v1/pods?limit=1",
                    accept: "application/json",
                    body: None,
                    headers: &[],
                },
                "",
                "GET /api/v1/pods?limit=1 HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer tok\r\nUser-Agent: keel-loadgen\r\nAccept: application/json\r\n\r\n",
            ),
            (
                Request {
                    method: Method::POST,
                    path: "/x",
                    accept: "a/b",
                    body: Some(("application/json", b"{\"a\":1}")),
                    headers: &[],
                },
                "/pre",
                "POST /pre/x HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer tok\r\nUser-Agent: keel-loadgen\r\nAccept: a/b\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
            ),
            (
                Request {
                    method: Method::PUT,
                    path: "/y",
                    accept: "a/b",
                    body: None,
                    headers: &[],
                },
                "",
                "PUT /y HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer tok\r\nUser-Agent: keel-loadgen\r\nAccept: a/b\r\nContent-Length: 0\r\n\r\n",
            ),
        ];
        let mut out = b"stale".to_vec();
        for (req, prefix, want) in cases {
            render(&mut out, prefix, &fixed, req).unwrap();
            assert_eq!(String::from_utf8_lossy(&out), *want);
        }
        let mut big = Vec::new();
        let body = vec![b'x'; 1234567];
        let req = Request {
            method: Method::PATCH,
            path: "/z",
            accept: "a",
            body: Some(("c", &body)),
            headers: &[],
        };
        render(&mut big, "", b"", &req).unwrap();
        assert!(big.starts_with(b"PATCH /z HTTP/1.1\r\nAccept: a\r\nContent-Type: c\r\nContent-Length: 1234567\r\n\r\nxx"));
        assert_eq!(big.len(), 74 + body.len());
    }

    #[test]
    fn bad_paths_and_headers_are_errors() {
        for path in ["", "api", "/a b", "/a\r\nX: y", "/\u{7f}"] {
            let req = Request {
                method: Method::GET,
                path,
                accept: "a",
                body: None,
                headers: &[],
            };
            assert!(render(&mut Vec::new(), "", b"", &req).is_err(), "{path:?}");
        }
        assert!(fixed_headers("h", Some("a\r\nb"), "ua").is_err());
        assert!(fixed_headers("h", None, "ua\r\nX: y").is_err());
        assert_eq!(
            fixed_headers("h", None, "keel-loadgen").unwrap(),
            b"Host: h\r\nUser-Agent: keel-loadgen\r\n"
        );
    }
}
