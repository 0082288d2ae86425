//! Upstream's URL library (`url`, `isURL`, `getScheme`, `getHost`, `getHostname`, `getPort`,
//! `getEscapedPath`, `getQuery`), which is Go's `net/url`: a string is a URL when
//! `url.ParseRequestURI` accepts it (an absolute URL or an absolute path).
//!
//! Hand-written rather than the `url` crate: that one parses by the WHATWG standard, which
//! rejects `/path` without a base, normalises what Go keeps (`https://example.com` has path
//! `/`), and words its errors differently; upstream's answers and error text are Go's.

use super::glue::{fail, go_quote, opaque_at, out, string_at};
use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map, Opaque};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::collections::HashMap;
use std::sync::Arc;

const TYPE_NAME: &str = "kubernetes.URL";

/// The parts of a parsed URL the library reads, as Go's `url.URL` holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    scheme: String,
    host: String,
    /// Unescaped.
    path: String,
    /// The path as written, when escaping `path` would not give it back.
    raw_path: String,
    raw_query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

fn ty() -> Type {
    Type::new_opaque_type(TYPE_NAME)
}

pub fn declare(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", ty(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", ty(), vec![], get_host)?;
    env.add_member_overload(
        "getHostname",
        "url_get_hostname",
        ty(),
        vec![],
        get_hostname,
    )?;
    env.add_member_overload("getPort", "url_get_port", ty(), vec![], get_port)?;
    env.add_member_overload(
        "getEscapedPath",
        "url_get_escaped_path",
        ty(),
        vec![],
        get_escaped_path,
    )?;
    env.add_member_overload("getQuery", "url_get_query", ty(), vec![], get_query)
}

/// Go's `url.ParseRequestURI(s)`, its error as `err.Error()` words it.
pub fn parse_request_uri(s: &str) -> Result<Url, String> {
    parse(s, true).map_err(|e| format!("parse {}: {e}", go_quote(s)))
}

/// Go's `url.Parse(s)`: the fragment split off first (its escapes checked).
fn parse_url(s: &str) -> Result<Url, String> {
    let (rest, fragment) = s.split_once('#').unwrap_or((s, ""));
    let u = parse(rest, false).map_err(|e| format!("parse {}: {e}", go_quote(rest)))?;
    unescape(fragment, Mode::Fragment).map_err(|e| format!("parse {}: {e}", go_quote(s)))?;
    Ok(u)
}

fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut u = Url {
        scheme: String::new(),
        host: String::new(),
        path: String::new(),
        raw_path: String::new(),
        raw_query: String::new(),
    };
    if raw == "*" {
        u.path = "*".into();
        return Ok(u);
    }
    let (scheme, rest) = split_scheme(raw)?;
    u.scheme = scheme.to_ascii_lowercase();
    let mut rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        match rest.split_once('?') {
            Some((r, q)) => {
                u.raw_query = q.to_string();
                r
            }
            None => rest,
        }
    };
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            // An opaque URL (`mailto:x`): no host or path.
            return Ok(u);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!u.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//")
    {
        let authority = &rest[2..];
        let (authority, path) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        u.host = parse_authority(authority)?;
        rest = path;
    }
    u.path = unescape(rest, Mode::Path)?;
    if escape_path(&u.path) != rest {
        u.raw_path = rest.to_string();
    }
    Ok(u)
}

/// Go's `getScheme`.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i == 0 => return Ok(("", raw)),
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// The host of `[userinfo@]host[:port]`, checking the userinfo as Go does.
fn parse_authority(authority: &str) -> Result<String, String> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host)?;
    if let Some(userinfo) = userinfo {
        let valid = userinfo
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c));
        if !valid {
            return Err("net/url: invalid userinfo".into());
        }
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        unescape(user, Mode::UserPassword)?;
        unescape(password, Mode::UserPassword)?;
    }
    Ok(host)
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
        if let Some(zone) = host[..i].find("%25") {
            let a = unescape(&host[..zone], Mode::Host)?;
            let b = unescape(&host[zone..i], Mode::Zone)?;
            let c = unescape(&host[i..], Mode::Host)?;
            return Ok(a + &b + &c);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Mode::Host)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`, for the modes this module escapes or checks.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone) {
        return !b"!$&'()*+,;=:[]<>\"-_.~".contains(&c);
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => true,
            _ => false,
        },
        b'!' | b'(' | b')' | b'*' if mode == Mode::Fragment => false,
        _ => true,
    }
}

/// Go's `unescape`: `%XX` escapes decoded (`+` as a space in a query), an error for a bad
/// escape or a character a host may not hold.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |j: usize| b.get(j).is_some_and(u8::is_ascii_hexdigit);
                if !hex(i + 1) || !hex(i + 2) {
                    let end = (i + 3).min(b.len());
                    return Err(format!(
                        "invalid URL escape {}",
                        go_quote(&String::from_utf8_lossy(&b[i..end]))
                    ));
                }
                if mode == Mode::Host && unhex(b[i + 1]) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                if mode == Mode::Zone {
                    let v = unhex(b[i + 1]) << 4 | unhex(b[i + 2]);
                    if &s[i..i + 3] != "%25" && v != b' ' && should_escape(v, Mode::Host) {
                        return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                    }
                }
                i += 3;
            }
            c if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) => {
                return Err(format!(
                    "invalid character {} in host name",
                    go_quote(&s[i..i + 1])
                ));
            }
            _ => i += 1,
        }
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push(unhex(b[i + 1]) << 4 | unhex(b[i + 2]));
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// Go's `escape(s, encodePath)`.
fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, Mode::Path) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

impl Url {
    /// Go's `EscapedPath`: the path as written when it is a valid encoding of the path.
    fn escaped_path(&self) -> String {
        let valid_encoded = |s: &str| {
            s.bytes()
                .all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !should_escape(c, Mode::Path))
        };
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(&self.raw_path, Mode::Path).as_deref() == Ok(self.path.as_str())
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".into();
        }
        escape_path(&self.path)
    }

    /// Go's `splitHostPort`: host (brackets removed) and port.
    fn host_port(&self) -> (&str, &str) {
        let mut host = self.host.as_str();
        let mut port = "";
        if let Some(colon) = host.rfind(':') {
            if valid_optional_port(&host[colon..]) {
                port = &host[colon + 1..];
                host = &host[..colon];
            }
        }
        if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
            host = &host[1..host.len() - 1];
        }
        (host, port)
    }

    /// Go's `Query()`: `ParseQuery`, pairs that do not decode (or hold `;`) skipped.
    fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(k), Ok(v)) = (
                unescape(k, Mode::QueryComponent),
                unescape(v, Mode::QueryComponent),
            ) else {
                continue;
            };
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, vs)) => vs.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "url")?;
    let conversion = |e: String| {
        fail(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )
    };
    parse_request_uri(&s).map_err(conversion)?;
    let u = parse_url(&s).map_err(conversion)?;
    out(Value::Opaque(Arc::new(u)))
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "isURL")?;
    out(Value::Bool(parse_request_uri(&s).is_ok()))
}

fn receiver(args: &[CowVal<'_, '_>], f: &str) -> Result<Url, ExecutionError> {
    opaque_at::<Url>(args, 0, f)
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::from(receiver(&args, "getScheme")?.scheme))
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::from(receiver(&args, "getHost")?.host))
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let u = receiver(&args, "getHostname")?;
    out(Value::from(u.host_port().0))
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let u = receiver(&args, "getPort")?;
    out(Value::from(u.host_port().1))
}

fn get_escaped_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::from(
        receiver(&args, "getEscapedPath")?.escaped_path(),
    ))
}

fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let u = receiver(&args, "getQuery")?;
    let map: HashMap<Key, Value> = u
        .query()
        .into_iter()
        .map(|(k, vs)| {
            let list: Vec<Value> = vs.into_iter().map(Value::from).collect();
            (Key::from(k), Value::from(list))
        })
        .collect();
    out(Value::Map(Map { map: Arc::new(map) }))
}

#[cfg(test)]
mod tests {
    use super::super::glue::testing::check;
    use cel::Value;

    /// Upstream's cases (apiextensions-apiserver `validation_test.go`, "URL parsing").
    #[test]
    fn upstream_url_cases() {
        let t = || Ok(Value::Bool(true));
        check(&[
            ("url('/path').getScheme() == ''", t()),
            ("url('https://example.com/').getScheme() == 'https'", t()),
            ("url('https://example.com:80/').getHost() == 'example.com:80'", t()),
            ("url('https://example.com/').getHost() == 'example.com'", t()),
            ("url('https://[::1]:80/').getHost() == '[::1]:80'", t()),
            ("url('https://[::1]/').getHost() == '[::1]'", t()),
            ("url('/path').getHost() == ''", t()),
            ("url('https://example.com:80/').getHostname() == 'example.com'", t()),
            ("url('https://127.0.0.1/').getHostname() == '127.0.0.1'", t()),
            ("url('https://[::1]/').getHostname() == '::1'", t()),
            ("url('/path').getHostname() == ''", t()),
            ("url('https://example.com:80/').getPort() == '80'", t()),
            ("url('https://example.com/').getPort() == ''", t()),
            ("url('/path').getPort() == ''", t()),
            ("url('https://example.com/path').getEscapedPath() == '/path'", t()),
            ("url('https://example.com/with space/').getEscapedPath() == '/with%20space/'", t()),
            ("url('https://example.com').getEscapedPath() == ''", t()),
            ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == { 'k1': ['a'], 'k2': ['b', 'c']}", t()),
            ("url('https://example.com/path?key with spaces=value with spaces').getQuery() == { 'key with spaces': ['value with spaces']}", t()),
            ("url('https://example.com/path?').getQuery() == {}", t()),
            ("url('https://example.com/path').getQuery() == {}", t()),
            ("url('https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor').getHost() == 'kubernetes.io:80'", t()),
            ("url('https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor').getEscapedPath() == '/docs/home'", t()),
            ("url('https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}", t()),
            ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", t()),
            ("isURL('/path') == true", t()),
            ("isURL('https://a:b:c/') == false", t()),
            ("isURL('../relative-path') == false", t()),
            ("url('https:://kubernetes.io/').getHostname() != 'test'", t()),
        ]);
    }

    /// The error text is Go's `url.Error` behind upstream's prefix.
    #[test]
    fn url_errors_are_worded_as_go() {
        let p = "URL parse error during conversion from string: ";
        let cases = [
            (
                "https://a:b:c/",
                r#"parse "https://a:b:c/": invalid port ":c" after host"#,
            ),
            (
                "../relative-path",
                r#"parse "../relative-path": invalid URI for request"#,
            ),
            ("", r#"parse "": empty url"#),
            (":x", r#"parse ":x": missing protocol scheme"#),
            (
                "https://ex ample.com/",
                r#"parse "https://ex ample.com/": invalid character " " in host name"#,
            ),
            ("/a%zz", r#"parse "/a%zz": invalid URL escape "%zz""#),
            (
                "https://[::1/",
                r#"parse "https://[::1/": missing ']' in host"#,
            ),
        ];
        for (s, e) in cases {
            let expr = format!("url('{s}')");
            let got = super::super::glue::testing::eval(&expr);
            assert_eq!(got, Err(format!("{p}{e}")), "{expr}");
        }
    }
}
