//! String formats CRDs support, checked as go-openapi's `strfmt.Default` registry does.
//!
//! Exact: `date`, `date-time`, `byte`, `password`, `uuid*`, `hostname`, `ipv4`, `ipv6`,
//! `cidr`, `mac`, `hexcolor`, `rgbcolor`, `ssn`, `bsonobjectid`, `isbn10`, `isbn13`, `isbn`,
//! `k8s-short-name`, `k8s-long-name`, `duration` (but for Go's overflow check). Approximated
//! (Go's `net/url`, `net/mail` and govalidator's card check are not reproduced byte for byte):
//! `uri`, `email`, `creditcard`.

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
    rx_uuid,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
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
rx!(
    rx_base64,
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
);
rx!(
    rx_time,
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
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
        "byte" => rx_base64().is_match(s),
        "uuid" => rx_uuid().is_match(s),
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

/// Go's `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if !s.is_ascii() || b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !(1..=12).contains(&m) || d < 1 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d <= days
}

/// strfmt's `IsDateTime`: a date, a `t`, and a time matching its RFC 3339 pattern.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(c) = rx_time().captures(parts[1]) else {
        return false;
    };
    let g = |i: usize| c.get(i).map(|m| m.as_str()).unwrap_or("");
    g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
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

/// Approximates `url.ParseRequestURI`: an absolute URI (`scheme:...`) or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => false,
    }
}

/// Approximates `net/mail.ParseAddress`: `local@domain`, optionally `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let addr = match (s.find('<'), s.rfind('>')) {
        (Some(a), Some(b)) if a < b && b == s.len() - 1 => &s[a + 1..b],
        _ => s.trim(),
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !addr
                    .chars()
                    .any(|c| c.is_whitespace() || c == '<' || c == '>')
        }
        None => false,
    }
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
