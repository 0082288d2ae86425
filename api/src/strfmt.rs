//! The string formats of go-openapi's `strfmt` registry that more than one crate checks:
//! `date`, `date-time`, `uuid` and `byte`, as CRD schemas' `format` and CEL's `format`
//! library (keel-apiext, keel-cel) take them.

use regex::Regex;
use std::sync::LazyLock;

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        .expect("constant pattern")
});

static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
        .expect("constant pattern")
});

static TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
        .expect("constant pattern")
});

/// strfmt's `uuid`: 32 hex digits, dashes optional.
pub fn is_uuid(s: &str) -> bool {
    UUID.is_match(s)
}

/// strfmt's `byte`: standard base64 with padding.
pub fn is_base64(s: &str) -> bool {
    BASE64.is_match(s)
}

/// Go's `time.Parse("2006-01-02", s)`.
pub fn is_date(s: &str) -> bool {
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
pub fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(c) = TIME.captures(parts[1]) else {
        return false;
    };
    let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
    g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
}
