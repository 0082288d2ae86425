//! The text forms of metav1.Time (`2006-01-02T15:04:05Z`), metav1.MicroTime
//! (`2006-01-02T15:04:05.000000Z`) and metav1.Duration (Go's `time.Duration` string,
//! `1h2m3.5s`), as Go formats and parses them.

const NANOS_PER_SEC: i64 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;
/// Unix seconds of Go's zero time (0001-01-01T00:00:00Z), which Kubernetes writes as `null`.
pub(crate) const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

use keel_api::time::{civil_from_days, days_from_civil};

/// Formats Unix time in UTC; `micros` adds 6 fractional digits (MicroTime).
pub(crate) fn format_rfc3339(secs: i64, nanos: i64, micros: bool) -> String {
    let (days, rem) = (secs.div_euclid(SECS_PER_DAY), secs.rem_euclid(SECS_PER_DAY));
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    let mut out = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}");
    if micros {
        out.push_str(&format!(".{:06}", nanos.clamp(0, NANOS_PER_SEC - 1) / 1000));
    }
    out.push('Z');
    out
}

fn digits(s: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = s.get(at..at + n)?;
    part.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

/// Parses an RFC 3339 timestamp (fraction optional, `Z` or `±hh:mm`) into (seconds, nanos).
pub(crate) fn parse_rfc3339(text: &str) -> Option<(i64, i64)> {
    let s = text.as_bytes();
    let sep_ok = s.get(4) == Some(&b'-')
        && s.get(7) == Some(&b'-')
        && s.get(10) == Some(&b'T')
        && s.get(13) == Some(&b':')
        && s.get(16) == Some(&b':');
    if !sep_ok {
        return None;
    }
    let (y, mo, d) = (digits(s, 0, 4)?, digits(s, 5, 2)?, digits(s, 8, 2)?);
    let (h, mi, sec) = (digits(s, 11, 2)?, digits(s, 14, 2)?, digits(s, 17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let mut pos = 19;
    let mut nanos = 0i64;
    if s.get(pos) == Some(&b'.') {
        let start = pos + 1;
        pos = start;
        while s.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        let frac = &text[start..pos];
        if frac.is_empty() || frac.len() > 9 {
            return None;
        }
        nanos = frac.parse::<i64>().ok()? * 10i64.pow(9 - frac.len() as u32);
    }
    let offset = match &s[pos..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
            let (oh, om) = (digits(rest, 0, 2)?, digits(rest, 3, 2)?);
            let off = oh * 3600 + om * 60;
            if *sign == b'+' {
                off
            } else {
                -off
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * SECS_PER_DAY + h * 3600 + mi * 60 + sec - offset;
    Some((secs, nanos))
}

/// Appends the fraction of `v` with `prec` digits, trailing zeros dropped (Go's fmtFrac);
/// returns `v / 10^prec`.
fn push_frac(out: &mut String, v: u64, prec: u32) -> u64 {
    let scale = 10u64.pow(prec);
    let frac = v % scale;
    if frac != 0 {
        let text = format!("{frac:0width$}", width = prec as usize);
        out.push('.');
        out.push_str(text.trim_end_matches('0'));
    }
    v / scale
}

/// Go's `time.Duration.String()` of a nanosecond count.
pub(crate) fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let u = nanos.unsigned_abs();
    let mut body = String::new();
    if u < 1_000_000_000 {
        let (unit, prec) = match u {
            0..1_000 => ("ns", 0),
            1_000..1_000_000 => ("\u{b5}s", 3),
            _ => ("ms", 6),
        };
        let mut frac = String::new();
        let whole = push_frac(&mut frac, u, prec);
        body = format!("{whole}{frac}{unit}");
    } else {
        let mut frac = String::new();
        let secs = push_frac(&mut frac, u, 9);
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        if h > 0 {
            body.push_str(&format!("{h}h{m}m"));
        } else if m > 0 {
            body.push_str(&format!("{m}m"));
        }
        body.push_str(&format!("{s}{frac}s"));
    }
    if nanos < 0 {
        format!("-{body}")
    } else {
        body
    }
}

/// Nanoseconds per unit, longest spelling first where one is a prefix of another.
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses Go's duration syntax (`time.ParseDuration`): `[-+]?(\d*(\.\d*)?unit)+` or `0`.
pub(crate) fn parse_duration(text: &str) -> Option<i64> {
    let (neg, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after) = rest.split_at(int_len);
        let (frac_part, after) = match after.strip_prefix('.') {
            Some(a) => a.split_at(a.bytes().take_while(u8::is_ascii_digit).count()),
            None => ("", after),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, tail) = after.split_at(unit_len);
        let scale = u128::from(UNITS.iter().find(|(name, _)| *name == unit)?.1);
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().ok()?
        };
        let mut amount = whole.checked_mul(scale)?;
        let mut frac_scale = scale;
        for digit in frac_part.bytes().take(30) {
            frac_scale /= 10;
            amount += u128::from(digit - b'0') * frac_scale;
        }
        total = total.checked_add(amount)?;
        rest = tail;
    }
    let limit = if neg { 1u128 << 63 } else { (1u128 << 63) - 1 };
    if total > limit {
        return None;
    }
    let total = total as i128;
    Some((if neg { -total } else { total }) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_and_matches_known_instants() {
        let cases = [
            ("1970-01-01T00:00:00Z", 0, 0),
            ("2024-02-29T23:59:59Z", 1_709_251_199, 0),
            ("0001-01-01T00:00:00Z", GO_ZERO_TIME_UNIX, 0),
            ("1969-12-31T23:59:59Z", -1, 0),
        ];
        for (text, secs, nanos) in cases {
            assert_eq!(parse_rfc3339(text), Some((secs, nanos)), "{text}");
            assert_eq!(format_rfc3339(secs, nanos, false), text);
        }
        assert_eq!(
            parse_rfc3339("2024-05-01T12:00:00.123456Z"),
            Some((1_714_564_800, 123_456_000))
        );
        assert_eq!(
            format_rfc3339(1_714_564_800, 123_456_789, true),
            "2024-05-01T12:00:00.123456Z"
        );
        assert_eq!(
            parse_rfc3339("2024-05-01T14:30:00+02:30"),
            Some((1_714_564_800, 0))
        );
    }

    #[test]
    fn rfc3339_rejects_malformed_text() {
        for text in [
            "",
            "2024-05-01",
            "2024-05-01T12:00:00",
            "2024-13-01T00:00:00Z",
            "2024-05-01T12:00:00.Z",
            "x024-05-01T12:00:00Z",
            "2024-05-01T12:00:00+0200",
        ] {
            assert_eq!(parse_rfc3339(text), None, "{text}");
        }
    }

    #[test]
    fn durations_match_go_formatting() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5\u{b5}s"),
            (1_500_000, "1.5ms"),
            (1_000_000_000, "1s"),
            (90_000_000_000, "1m30s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (3_600_000_000_000, "1h0m0s"),
            (-120_000_000_000, "-2m0s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(format_duration(nanos), text, "{nanos}");
            assert_eq!(parse_duration(text), Some(nanos), "{text}");
        }
    }

    #[test]
    fn durations_parse_go_syntax_and_reject_garbage() {
        let ok = [
            ("0", 0),
            ("1h30m", 5_400_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("300ms", 300_000_000),
            ("2us", 2_000),
            ("+5s", 5_000_000_000),
            (".5s", 500_000_000),
        ];
        for (text, nanos) in ok {
            assert_eq!(parse_duration(text), Some(nanos), "{text}");
        }
        for text in ["", "1", "s", "1x", "1h-2m", "-", "3000000h"] {
            assert_eq!(parse_duration(text), None, "{text}");
        }
    }
}
