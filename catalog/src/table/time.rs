//! Timestamps and upstream's human-readable durations (`5s`, `3m2s`, `10h`, `5d`, `2y10d`).

pub(crate) use keel_api::time::{parse_rfc3339, unix_seconds};

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
