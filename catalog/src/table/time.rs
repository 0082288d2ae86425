//! Timestamps and upstream's human-readable durations (`5s`, `3m2s`, `10h`, `5d`, `2y10d`).

use std::time::{SystemTime, UNIX_EPOCH};

/// "Now" as whole Unix seconds (sub-second precision does not show in any cell).
pub(crate) fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn digits(s: &str, range: std::ops::Range<usize>) -> Option<i64> {
    let part = s.get(range)?;
    if part.bytes().all(|b| b.is_ascii_digit()) {
        part.parse().ok()
    } else {
        None
    }
}

/// Parses an RFC 3339 timestamp (`2024-05-01T10:00:00Z`, `...00.123456Z`, `...00+02:00`) to
/// Unix seconds; `None` when malformed.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (digits(s, 0..4)?, digits(s, 5..7)?, digits(s, 8..10)?);
    let (h, mi, sec) = (digits(s, 11..13)?, digits(s, 14..16)?, digits(s, 17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && rest.as_bytes()[3] == b':' => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            sign * (digits(rest, 1..3)? * 3600 + digits(rest, 4..6)? * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

/// Upstream's `duration.HumanDuration` for a span in whole seconds.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        let years = hours / 24 / 365;
        return if dy == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{dy}d")
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Upstream's `translateTimestampSince`: `<unknown>` for a missing or unparsable timestamp.
pub(crate) fn since(timestamp: Option<&str>, now: i64) -> String {
    match timestamp.and_then(parse_rfc3339) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (5, "5s"),
            (119, "119s"),
            (120, "2m"),
            (182, "3m2s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (10 * 3600, "10h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (5 * 86_400 + 3 * 3600, "5d3h"),
            (8 * 86_400, "8d"),
            (729 * 86_400, "729d"),
            (730 * 86_400, "2y"),
            (740 * 86_400, "2y10d"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }

    #[test]
    fn parses_rfc3339() {
        let cases = [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2024-02-29T12:30:15Z", Some(1_709_209_815)),
            ("2024-02-29T12:30:15.123456Z", Some(1_709_209_815)),
            ("2024-02-29T14:30:15+02:00", Some(1_709_209_815)),
            ("2024-02-29 12:30:15Z", None),
            ("2024-13-01T00:00:00Z", None),
            ("2024-01-01T00:00:00", None),
            ("garbage", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_rfc3339(input), want, "{input}");
        }
        assert_eq!(since(None, 100), "<unknown>");
        assert_eq!(since(Some("1970-01-01T00:01:00Z"), 3_660), "60m");
    }
}
