//! The request as handlers see it: method, target, decoded path, query, headers, body, peer;
//! and its head as [`crate::Handler::admit`] sees it before the body is read.

use std::any::Any;
use std::net::SocketAddr;

/// An HTTP request method. Methods outside the common set are kept verbatim in `Other`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`
    Get,
    /// `HEAD`: answered like `GET` but the body is never written.
    Head,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `PATCH`
    Patch,
    /// `DELETE`
    Delete,
    /// `OPTIONS`
    Options,
    /// Any other token, as sent (methods are case-sensitive).
    Other(String),
}

impl Method {
    /// Parses a method token (case-sensitive, as RFC 9110 says).
    pub fn from_token(token: &str) -> Method {
        match token {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            other => Method::Other(other.to_string()),
        }
    }

    /// The method's token.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other(s) => s,
        }
    }
}

/// Request header fields in arrival order, with case-insensitive lookup by name. All names and
/// values live in one buffer (two allocations per request, not two per field).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    text: String,
    /// Per field: name start, name end (= value start), value end, in `text`.
    fields: Vec<(u32, u32, u32)>,
}

impl Headers {
    /// An empty header list.
    pub fn new() -> Headers {
        Headers::default()
    }

    /// Appends a field (names keep the case they were sent in).
    pub fn push(&mut self, name: impl AsRef<str>, value: impl AsRef<str>) {
        let start = self.text.len() as u32;
        self.text.push_str(name.as_ref());
        let mid = self.text.len() as u32;
        self.text.push_str(value.as_ref());
        self.fields.push((start, mid, self.text.len() as u32));
    }

    /// An empty header list with room for `fields` fields of `bytes` bytes in all.
    pub fn with_capacity(fields: usize, bytes: usize) -> Headers {
        Headers {
            text: String::with_capacity(bytes),
            fields: Vec::with_capacity(fields),
        }
    }

    fn field(&self, f: &(u32, u32, u32)) -> (&str, &str) {
        let (a, b, c) = (f.0 as usize, f.1 as usize, f.2 as usize);
        (&self.text[a..b], &self.text[b..c])
    }

    /// The first value of the field `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.get_all(name).next()
    }

    /// Every value of the field `name` (case-insensitive), in arrival order.
    pub fn get_all<'a, 'n>(&'a self, name: &'n str) -> impl Iterator<Item = &'a str> + use<'a, 'n> {
        self.iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Whether any field named `name` has `token` in its comma-separated list
    /// (both case-insensitive), as for `Connection: close`.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.get_all(name)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// All fields as `(name, value)` pairs, in arrival order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.fields.iter().map(|f| self.field(f))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// Identity taken from a verified TLS client certificate, as kube-apiserver's x509
/// authenticator reads it: the subject CommonName is the user, the Organizations the groups.
/// The certificate chains to the client CA, the request-header (front-proxy) CA, or both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    /// Subject CommonName (the user name).
    pub common_name: String,
    /// Subject Organization values, in certificate order (the groups).
    pub organizations: Vec<String>,
    /// It chains to the client CA: the subject is the identity.
    pub by_client_ca: bool,
    /// It chains to the request-header CA: a front proxy whose headers name the user.
    pub by_request_header_ca: bool,
}

/// A request before its body is read: what [`crate::Handler::admit`] judges.
#[derive(Clone, Copy, Debug)]
pub struct RequestHead<'a> {
    /// The method.
    pub method: &'a Method,
    /// The raw request-target as sent.
    pub target: &'a str,
    /// The percent-decoded path.
    pub path: &'a str,
    /// The raw query, without the `?`.
    pub query: &'a str,
    /// The header fields.
    pub headers: &'a Headers,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Whether the request came over TLS.
    pub tls: bool,
    /// The verified client certificate's identity, as in [`Request::client_cert`].
    pub client_cert: Option<&'a ClientIdentity>,
    /// Why the certificate the client presented is not an identity, as in
    /// [`Request::client_cert_error`].
    pub client_cert_error: Option<&'a str>,
}

/// What [`crate::Handler::admit`] learnt about a request (the authenticated user, say),
/// handed to [`crate::Handler::handle`] in [`Request::admitted`] so that it is not worked out
/// twice. Empty by default.
#[derive(Default)]
pub struct Admitted(Option<Box<dyn Any + Send>>);

impl Admitted {
    /// Carries `value`.
    pub fn new<T: Any + Send>(value: T) -> Admitted {
        Admitted(Some(Box::new(value)))
    }

    /// The value carried, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_ref().and_then(|v| v.downcast_ref())
    }

    /// Takes the value carried out, if it is a `T`.
    pub fn take<T: Any>(&mut self) -> Option<T> {
        match self.0.take()?.downcast::<T>() {
            Ok(v) => Some(*v),
            Err(other) => {
                self.0 = Some(other);
                None
            }
        }
    }
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Admitted(..)"
        } else {
            "Admitted(None)"
        })
    }
}

/// A complete request: head and fully read body.
#[derive(Debug)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The raw request-target as sent (origin form `/p?q`, absolute form, or `*`).
    pub target: String,
    /// The percent-decoded path (`*` for an asterisk-form target).
    pub path: String,
    /// The raw query, without the `?` (empty if there is none).
    pub query: String,
    /// The header fields.
    pub headers: Headers,
    /// The body (empty when the request has none), de-chunked.
    pub body: Vec<u8>,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Whether the request came over TLS.
    pub tls: bool,
    /// The verified client certificate's identity, if the client presented one that chains
    /// to the client CA.
    pub client_cert: Option<ClientIdentity>,
    /// Why the certificate the client presented is not an identity (it does not chain to the
    /// client CA, or has expired...): the TLS handshake accepted it, as kube-apiserver's does
    /// (`tls.RequestClientCert`), and authentication decides what it means. `None` when no
    /// certificate was presented or it verified.
    pub client_cert_error: Option<String>,
    /// What [`crate::Handler::admit`] returned for this request.
    pub admitted: Admitted,
}

impl Request {
    /// The request's head, as [`crate::Handler::admit`] sees it.
    pub fn head(&self) -> RequestHead<'_> {
        RequestHead {
            method: &self.method,
            target: &self.target,
            path: &self.path,
            query: &self.query,
            headers: &self.headers,
            peer: self.peer,
            tls: self.tls,
            client_cert: self.client_cert.as_ref(),
            client_cert_error: self.client_cert_error.as_deref(),
        }
    }

    /// The query's `key=value` pairs, percent-decoded with `+` read as a space. Pairs whose
    /// encoding is invalid are decoded leniently (bad escapes kept verbatim).
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        parse_query(&self.query)
    }

    /// The first value of query parameter `key`, decoded as in [`Request::query_pairs`].
    pub fn query_get(&self, key: &str) -> Option<String> {
        self.query_pairs()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }
}

/// Splits a raw query string into decoded pairs (`application/x-www-form-urlencoded`).
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode_form(k), decode_form(v))
        })
        .collect()
}

fn decode_form(s: &str) -> String {
    let plus_as_space = s.replace('+', " ");
    let bytes = percent_decode_lenient(plus_as_space.as_bytes());
    String::from_utf8_lossy(&bytes).into_owned()
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes; an invalid escape is an error.
pub(crate) fn percent_decode_strict(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hi = hex_val(*s.get(i + 1)?)?;
            let lo = hex_val(*s.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Decodes `%XX` escapes, keeping invalid ones verbatim.
fn percent_decode_lenient(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let esc = (s[i] == b'%')
            .then(|| Some((hex_val(*s.get(i + 1)?)?, hex_val(*s.get(i + 2)?)?)))
            .flatten();
        match esc {
            Some((hi, lo)) => {
                out.push(hi << 4 | lo);
                i += 3;
            }
            None => {
                out.push(s[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_decode_percent_and_plus() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("", &[]),
            ("a=1", &[("a", "1")]),
            ("a=1&b=2", &[("a", "1"), ("b", "2")]),
            (
                "labelSelector=app%3Dweb%2Ctier+in+(x)",
                &[("labelSelector", "app=web,tier in (x)")],
            ),
            ("watch", &[("watch", "")]),
            ("a=%zz&&b=%4", &[("a", "%zz"), ("b", "%4")]),
            ("k%20x=v=w", &[("k x", "v=w")]),
        ];
        for (query, want) in cases {
            let got = parse_query(query);
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "query {query:?}");
        }
    }

    #[test]
    fn strict_percent_decoding_rejects_bad_escapes() {
        let cases: &[(&str, Option<&str>)] = &[
            ("/api/v1", Some("/api/v1")),
            ("/a%20b", Some("/a b")),
            ("/a%2Fb", Some("/a/b")),
            ("/a%2", None),
            ("/a%g0", None),
            ("/a+b", Some("/a+b")),
        ];
        for (input, want) in cases {
            let got = percent_decode_strict(input.as_bytes());
            assert_eq!(got.as_deref(), want.map(str::as_bytes), "input {input:?}");
        }
    }

    #[test]
    fn admitted_values_are_taken_by_type() {
        let mut a = Admitted::new(String::from("alice"));
        assert_eq!(a.get::<u32>(), None);
        assert_eq!(
            a.take::<u32>(),
            None,
            "a wrong type leaves the value in place"
        );
        assert_eq!(a.get::<String>().map(String::as_str), Some("alice"));
        assert_eq!(a.take::<String>().as_deref(), Some("alice"));
        assert_eq!(a.take::<String>(), None);
        assert_eq!(format!("{:?}", Admitted::default()), "Admitted(None)");
    }

    #[test]
    fn headers_are_case_insensitive() {
        let mut h = Headers::new();
        h.push("Content-Type", "application/json");
        h.push("connection", "Upgrade, Keep-Alive");
        h.push("X-A", "1");
        h.push("x-a", "2");
        assert_eq!(h.get("content-type"), Some("application/json"));
        assert_eq!(h.get_all("X-a").collect::<Vec<_>>(), vec!["1", "2"]);
        assert!(h.has_token("Connection", "keep-alive"));
        assert!(!h.has_token("Connection", "close"));
        assert_eq!(h.get("missing"), None);
    }
}
