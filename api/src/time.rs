//! Timestamps as Kubernetes writes `metav1.Time`: RFC 3339 in UTC, whole seconds
//! (`2024-01-02T03:04:05Z`), converted with the proleptic Gregorian calendar's days-from-civil
//! arithmetic (Howard Hinnant's algorithms), so no time-zone database or clock is involved.
//! Pure: callers pass the time in (a `SystemTime` they read, or Unix seconds).

use std::time::{SystemTime, UNIX_EPOCH};

/// Whole seconds after the Unix epoch of `t` (sub-second precision dropped, as `metav1.Time`
/// drops it).
pub fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

const SECONDS_PER_DAY: i64 = 86_400;
/// Days from 0000-03-01 to 1970-01-01 in the proleptic Gregorian calendar.
const DAYS_TO_UNIX_EPOCH: i64 = 719_468;
/// Days in a 400-year Gregorian cycle.
const DAYS_PER_ERA: i64 = 146_097;

/// Days since 1970-01-01 of a civil date (month and day 1-based).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    // Months counted from March, so the leap day ends the year.
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * DAYS_PER_ERA + day_of_era - DAYS_TO_UNIX_EPOCH
}

/// The civil date `(year, month, day)` of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + DAYS_TO_UNIX_EPOCH;
    let era = z.div_euclid(DAYS_PER_ERA);
    let day_of_era = z - era * DAYS_PER_ERA;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `secs` after the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(SECONDS_PER_DAY);
    let of_day = secs.rem_euclid(SECONDS_PER_DAY);
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

fn digits(s: &str, range: std::ops::Range<usize>) -> Option<i64> {
    let part = s.get(range)?;
    if !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

/// Seconds after the Unix epoch of an RFC 3339 time (`2024-01-02T03:04:05Z`, with an optional
/// fraction, which is dropped, and `Z` or a `±HH:MM` offset). `None` for anything else.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let shape = b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't')
        && b[13] == b':'
        && b[16] == b':';
    if !shape {
        return None;
    }
    let (year, month, day) = (digits(s, 0..4)?, digits(s, 5..7)?, digits(s, 8..10)?);
    let (hour, minute, second) = (digits(s, 11..13)?, digits(s, 14..16)?, digits(s, 17..19)?);
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !valid {
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
    let days = days_from_civil(year, month, day);
    Some(days * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_both_ways() {
        let rows: &[(i64, &str)] = &[
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_704_067_200, "2024-01-01T00:00:00Z"),
            (1_709_164_799, "2024-02-28T23:59:59Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
        ];
        for &(secs, text) in rows {
            assert_eq!(format_rfc3339(secs), text, "{secs}");
            assert_eq!(parse_rfc3339(text), Some(secs), "{text}");
        }
    }

    #[test]
    fn parse_accepts_fractions_and_offsets_and_refuses_garbage() {
        let base = 1_704_067_200;
        let rows: &[(&str, Option<i64>)] = &[
            ("2024-01-01T00:00:00.999999Z", Some(base)),
            ("2024-01-01T01:00:00+01:00", Some(base)),
            ("2023-12-31T23:30:00-00:30", Some(base)),
            ("2024-01-01 00:00:00Z", None),
            ("2024-13-01T00:00:00Z", None),
            ("2024-01-01T00:00:00", None),
            ("2024-01-01T00:00:00.Z", None),
            ("", None),
            ("not a time at all!!!", None),
        ];
        for &(text, want) in rows {
            assert_eq!(parse_rfc3339(text), want, "{text}");
        }
    }
}
