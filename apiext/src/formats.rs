//! String formats CRDs support, checked as go-openapi's `strfmt.Default` registry does.
//!
//! Exact: `date`, `date-time`, `byte`, `password`, `uuid*`, `hostname`, `ipv4`, `ipv6`,
//! `cidr`, `mac`, `hexcolor`, `rgbcolor`, `ssn`, `bsonobjectid`, `isbn10`, `isbn13`, `isbn`,
//! `k8s-short-name`, `k8s-long-name`, `duration` (but for Go's overflow check), `uri` (but for
//! bracketed IPv6 hosts), `email` (but for comments and RFC 2047 words). Approximated:
//! `creditcard` (a Luhn check, not govalidator's pattern).

use keel_api::strfmt::{is_base64, is_date, is_date_time, is_uuid};
use regex::Regex;
use std::net::Ipv6Addr;
use std::sync::OnceLock;

/// Whether the registry knows `format` (names compare with `-` removed, as go-openapi does).
pub fn known(format: &str) -> bool {
    !format.is_empty() && norm(format).is_some()
}

fn norm(format: &str) -> Option<&'static str> {
    let n = format.replace('-', "");
    crate::compile::string_formats()
        .iter()
        .copied()
        .find(|f| *f == n)
}

macro_rules! rx {
    ($name:ident, $pat:expr) => {
        fn $name() -> &'static Regex {
            static R: OnceLock<Regex> = OnceLock::new();
            R.get_or_init(|| Regex::new($pat).expect("static pattern compiles"))
        }
    };
}

rx!(
    rx_hostname,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
rx!(
    rx_uuid3,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
rx!(
    rx_uuid4,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
rx!(
    rx_uuid5,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
rx!(rx_hexcolor, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
rx!(
    rx_rgbcolor,
    r"^rgb\((?-u:\s)*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])(?-u:\s)*,(?-u:\s)*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])(?-u:\s)*,(?-u:\s)*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])(?-u:\s)*\)$"
);
rx!(rx_ssn, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$");
rx!(rx_short_name, r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
rx!(
    rx_long_name,
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
);
rx!(
    rx_duration_go,
    r"^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$"
);
rx!(rx_duration_part, r"(([0-9]+)(?-u:\s)*([A-Za-zµ]+))");

/// Whether `s` is valid for `format` (a format [`known`] returns true for).
pub fn valid(format: &str, s: &str) -> bool {
    match norm(format).unwrap_or("") {
        "password" => true,
        "date" => is_date(s),
        "datetime" => is_date_time(s),
        "byte" => is_base64(s),
        "uuid" => is_uuid(s),
        "uuid3" => rx_uuid3().is_match(s),
        "uuid4" => rx_uuid4().is_match(s),
        "uuid5" => rx_uuid5().is_match(s),
        "hostname" => {
            rx_hostname().is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
        }
        "ipv4" => parse_ip_sloppy(s).is_some() && s.contains('.'),
        "ipv6" => parse_ip_sloppy(s).is_some() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hexcolor" => rx_hexcolor().is_match(s),
        "rgbcolor" => rx_rgbcolor().is_match(s),
        "ssn" => rx_ssn().is_match(s),
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "k8sshortname" => s.len() <= 63 && rx_short_name().is_match(s),
        "k8slongname" => s.len() <= 253 && rx_long_name().is_match(s),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "duration" => is_duration(s),
        "creditcard" => is_credit_card(s),
        _ => true,
    }
}

/// `netutils.ParseIPSloppy`: Go's `net.ParseIP`, IPv4 octets with leading zeros allowed.
fn parse_ip_sloppy(s: &str) -> Option<()> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(|_| ());
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    for p in parts {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if p.parse::<u32>().ok()? > 255 {
            return None;
        }
    }
    Some(())
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if parse_ip_sloppy(ip).is_none()
        || bits.is_empty()
        || bits.len() > 3
        || !bits.bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    let max = if ip.contains(':') { 128 } else { 32 };
    bits.parse::<u32>().is_ok_and(|b| b <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `aa:bb..`, `aa-bb..` or `aabb.ccdd..`.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    for sep in [':', '-'] {
        if s.len() > 2 && s.as_bytes()[2] == sep as u8 {
            let parts: Vec<&str> = s.split(sep).collect();
            return matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2));
        }
    }
    if s.len() > 4 && s.as_bytes()[4] == b'.' {
        let parts: Vec<&str> = s.split('.').collect();
        return matches!(parts.len(), 3 | 4 | 10) && parts.iter().all(|p| hex(p, 4));
    }
    false
}

fn isbn_digits(s: &str) -> String {
    s.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10
        || !b[..9].iter().all(u8::is_ascii_digit)
        || !(b[9].is_ascii_digit() || b[9] == b'X')
    {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in b[..9].iter().enumerate() {
        sum += (i as u32 + 1) * u32::from(c - b'0');
    }
    let last = if b[9] == b'X' {
        10
    } else {
        u32::from(b[9] - b'0')
    };
    sum += 10 * last;
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in b[..12].iter().enumerate() {
        let w = if i % 2 == 0 { 1 } else { 3 };
        sum += w * u32::from(c - b'0');
    }
    (10 - sum % 10) % 10 == u32::from(b[12] - b'0')
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration` (overflow not checked here), else any
/// `<digits><unit word>` found anywhere in the string, the unit one of strfmt's names.
fn is_duration(s: &str) -> bool {
    if matches!(s, "0" | "+0" | "-0") || rx_duration_go().is_match(s) {
        return true;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for c in rx_duration_part().captures_iter(s) {
        let digits = c.get(2).map_or("", |m| m.as_str());
        if digits.parse::<i64>().is_err() {
            return false;
        }
        let unit = c.get(3).map_or("", |m| m.as_str()).to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || unit == *v {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `url.ParseRequestURI` (Go 1.24's rules; IPv6 literals in brackets are not checked).
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    let Some((scheme, rest)) = split_scheme(s) else {
        return false;
    };
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(a, _)| a)
    };
    if !rest.starts_with('/') {
        // `scheme:opaque` is fine; a relative reference is not a request URI.
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty() && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, p) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        if !valid_authority(authority) {
            return false;
        }
        path = p;
    }
    valid_escapes(path)
}

/// Go's `getScheme`: `None` for a leading `:`.
fn split_scheme(s: &str) -> Option<(&str, &str)> {
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i == 0 => return Some(("", s)),
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b':' if i == 0 => return None,
            b':' => return Some((&s[..i], &s[i + 1..])),
            _ => return Some(("", s)),
        }
    }
    Some(("", s))
}

/// Every `%` starts a two-digit hex escape.
fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() {
                return false;
            }
            if !(b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

fn valid_port(p: &str) -> bool {
    p.is_empty() || (p.starts_with(':') && p[1..].bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `parseAuthority`: `[userinfo@]host[:port]`.
fn valid_authority(a: &str) -> bool {
    let (user, host) = match a.rfind('@') {
        Some(i) => (Some(&a[..i]), &a[i + 1..]),
        None => (None, a),
    };
    if let Some(u) = user {
        let ok = u.chars().all(|c| {
            c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c) || !c.is_ascii()
        });
        if !ok || !valid_escapes(u) {
            return false;
        }
    }
    if let Some(inner) = host.strip_prefix('[') {
        return match inner.rfind(']') {
            Some(i) => valid_port(&inner[i + 1..]),
            None => false,
        };
    }
    if let Some(i) = host.rfind(':') {
        if !valid_port(&host[i..]) {
            return false;
        }
    }
    let ok = host.chars().all(|c| {
        !c.is_ascii() || c.is_ascii_alphanumeric() || "-_.~!$&'()*+,;=:[]<>\"%".contains(c)
    });
    ok && valid_escapes(host)
}

/// Go's `net/mail.ParseAddress`, without RFC 2047 encoded words and comments: an addr-spec
/// (dot-atom or quoted local part, dot-atom or literal domain), optionally as
/// `display name <addr-spec>`.
fn is_email(s: &str) -> bool {
    let s = s.trim_matches([' ', '\t']);
    if let Some(rest) = addr_spec(s) {
        if rest.trim_start_matches([' ', '\t']).is_empty() {
            return true;
        }
    }
    // A display name: words (atoms, dots allowed, or quoted strings) before `<`.
    let Some(open) = s.find('<') else {
        return false;
    };
    let phrase = s[..open].trim_matches([' ', '\t']);
    let words_ok = phrase
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .all(|w| {
            (w.starts_with('"') && w.ends_with('"') && w.len() >= 2)
                || w.chars().all(|c| c == '.' || is_atext(c))
        });
    if !words_ok {
        return false;
    }
    match addr_spec(&s[open + 1..]) {
        Some(rest) => rest.trim_end_matches([' ', '\t']) == ">",
        None => false,
    }
}

fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
}

/// Parses `local@domain` at the start of `s`; returns what follows.
fn addr_spec(s: &str) -> Option<&str> {
    let rest = if let Some(q) = s.strip_prefix('"') {
        let mut escaped = false;
        let mut end = None;
        for (i, c) in q.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        &q[end? + 1..]
    } else {
        dot_atom(s)?
    };
    let domain = rest.strip_prefix('@')?;
    if let Some(lit) = domain.strip_prefix('[') {
        let close = lit.find(']')?;
        if lit[..close].contains(['[', '\\']) {
            return None;
        }
        return Some(&lit[close + 1..]);
    }
    dot_atom(domain)
}

/// A dot-atom at the start of `s`: atoms of atext separated by single dots.
fn dot_atom(s: &str) -> Option<&str> {
    let end = s
        .char_indices()
        .find(|(_, c)| !(is_atext(*c) || *c == '.'))
        .map_or(s.len(), |(i, _)| i);
    let atom = &s[..end];
    if atom.is_empty() || atom.split('.').any(str::is_empty) {
        return None;
    }
    Some(&s[end..])
}

/// Approximates govalidator's `IsCreditCard`: digits (separators removed) passing Luhn.
fn is_credit_card(s: &str) -> bool {
    let d: Vec<u32> = s
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_digit(10).unwrap_or(99))
        .collect();
    if d.len() < 12 || d.contains(&99) {
        return false;
    }
    let mut sum = 0;
    for (i, x) in d.iter().rev().enumerate() {
        let mut v = *x;
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum % 10 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let rows = [
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date", "2023-1-01", false),
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+01:00", true),
            ("date-time", "2024-01-02 03:04:05Z", false),
            ("date-time", "2024-01-02T24:04:05Z", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "hello", false),
            ("byte", "", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "xyz", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:11:22:33:44:55", true),
            ("mac", "00:11:22", false),
            ("k8s-short-name", "abc-1", true),
            ("k8s-short-name", "a.b", false),
            ("k8s-long-name", "a.b", true),
            ("password", "anything", true),
            ("isbn10", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            // uri and email rows confirmed against kube-apiserver v1.36.2.
            ("email", "a@b", true),
            ("email", "A <a@b>", true),
            ("email", "a b@c", false),
            ("email", "@b", false),
            ("email", "a@", false),
            ("email", "\"q\"@b", true),
            ("email", "a@b c", false),
            ("email", "a.@b", false),
            ("email", "a@[1.2.3.4]", true),
            ("email", "a@b.", false),
            ("uri", "http://x", true),
            ("uri", "/path", true),
            ("uri", "x", false),
            ("uri", "http//x", false),
            ("uri", "mailto:a@b", true),
            ("uri", "http://x y", false),
            ("uri", "*", true),
            ("uri", "http://[::1", false),
            ("uri", "1http://x", false),
            ("uri", "a:b", true),
            ("uri", "//x/y", true),
            ("uri", "http://x/%zz", false),
            ("duration", "1h30m", true),
            ("duration", ".5s", true),
            ("duration", "0", true),
            ("duration", "about 3 Days or so", true),
            ("duration", "5 parsecs", false),
            ("duration", "soon", false),
            ("ssn", "١٢٣-45-6789", false),
            ("rgbcolor", "rgb(1, 2,\u{a0}3)", false),
            ("rgbcolor", "rgb(1, 2, 3)", true),
        ];
        for (f, s, want) in rows {
            assert!(known(f), "{f}");
            assert_eq!(valid(f, s), want, "{f} {s:?}");
        }
        assert!(!known("int32"));
        assert!(!known(""));
    }
}
