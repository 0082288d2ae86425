//! A syntax check of CronJob schedules (standard 5-field cron plus the `@` descriptors), with
//! messages in the style of the parser upstream uses.

/// Longest schedule string examined.
pub const SCHEDULE_LEN_MAX: usize = 1024;

const DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];
const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// `Ok` when upstream would accept the schedule; otherwise the parser's complaint.
pub fn check(schedule: &str) -> Result<(), String> {
    if schedule.len() > SCHEDULE_LEN_MAX {
        return Err(crate::names::max_len_error(SCHEDULE_LEN_MAX));
    }
    let s = schedule.trim();
    if s.starts_with("TZ=") || s.starts_with("CRON_TZ=") {
        return Err("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into());
    }
    if s.starts_with('@') {
        if DESCRIPTORS.contains(&s) || s.starts_with("@every ") {
            return Ok(());
        }
        return Err(format!("unrecognized descriptor: {s}"));
    }
    let fields: Vec<&str> = s.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: {s}",
            fields.len()
        ));
    }
    let bounds: [(u32, u32, &[&str]); 5] = [
        (0, 59, &[]),
        (0, 23, &[]),
        (1, 31, &[]),
        (1, 12, MONTHS),
        (0, 6, DAYS),
    ];
    for (field, (lo, hi, names)) in fields.iter().zip(bounds) {
        for part in field.split(',') {
            check_part(part, lo, hi, names)?;
        }
    }
    Ok(())
}

fn value(text: &str, names: &[&str], offset: u32) -> Result<u32, String> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(i as u32 + offset);
    }
    text.parse::<u32>().map_err(|_| {
        format!("failed to parse int from {text}: strconv.Atoi: parsing {text:?}: invalid syntax")
    })
}

fn check_part(part: &str, lo: u32, hi: u32, names: &[&str]) -> Result<(), String> {
    let (range, step) = match part.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (part, None),
    };
    if let Some(s) = step {
        let n = value(s, &[], 0)?;
        if n == 0 {
            return Err(format!("step of range should be a positive number: {part}"));
        }
    }
    if range == "*" || range == "?" {
        return Ok(());
    }
    let offset = if names.len() == 12 { 1 } else { 0 };
    let (start, end) = match range.split_once('-') {
        Some((a, b)) => (value(a, names, offset)?, value(b, names, offset)?),
        None => {
            let v = value(range, names, offset)?;
            (v, v)
        }
    };
    if start < lo {
        return Err(format!(
            "beginning of range ({start}) below minimum ({lo}): {part}"
        ));
    }
    if end > hi {
        return Err(format!("end of range ({end}) above maximum ({hi}): {part}"));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {part}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        let ok = [
            "* * * * *",
            "*/5 0-23 1,15 jan-dec mon-fri",
            "@hourly",
            "@every 5m",
            "0 0 * * 0",
        ];
        for s in ok {
            assert_eq!(check(s), Ok(()), "{s}");
        }
        let bad = [
            ("* * * *", "expected exactly 5 fields, found 4: * * * *"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            (
                "TZ=UTC * * * * *",
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ),
            ("@sometimes", "unrecognized descriptor: @sometimes"),
        ];
        for (s, want) in bad {
            assert_eq!(check(s), Err(want.to_string()), "{s}");
        }
    }
}
