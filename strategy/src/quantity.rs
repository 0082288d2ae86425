//! Resource quantities (`500m`, `1Gi`, `2e3`) parsed to a fixed-point value for comparison.

/// A quantity in units of 10^-9 (nano), saturating at the i128 range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Nanos(pub i128);

/// Longest quantity string accepted (upstream rejects longer ones too).
pub const QUANTITY_LEN_MAX: usize = 64;

fn suffix_scale(suffix: &str) -> Option<(i128, i32)> {
    // (binary multiplier, decimal exponent)
    let bin = |p: u32| Some((1i128 << p, 0));
    match suffix {
        "" => Some((1, 0)),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        "n" => Some((1, -9)),
        "u" => Some((1, -6)),
        "m" => Some((1, -3)),
        "k" => Some((1, 3)),
        "M" => Some((1, 6)),
        "G" => Some((1, 9)),
        "T" => Some((1, 12)),
        "P" => Some((1, 15)),
        "E" => Some((1, 18)),
        s if s.starts_with(['e', 'E']) => s[1..].parse::<i32>().ok().map(|e| (1, e)),
        _ => None,
    }
}

/// Parses a quantity; `None` when it is not upstream's quantity syntax.
pub fn parse(s: &str) -> Option<Nanos> {
    if s.is_empty() || s.len() > QUANTITY_LEN_MAX {
        return None;
    }
    let (neg, body) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_len = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(num_len);
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
        return None;
    }
    let (mult, exp) = suffix_scale(suffix)?;
    let digits = format!("{int_part}{frac_part}");
    let mut mantissa: i128 = 0;
    for d in digits.bytes() {
        mantissa = mantissa
            .saturating_mul(10)
            .saturating_add(i128::from(d - b'0'));
    }
    let exp10 = exp + 9 - frac_part.len() as i32;
    let scaled = scale10(mantissa.saturating_mul(mult), exp10);
    Some(Nanos(if neg { -scaled } else { scaled }))
}

fn scale10(v: i128, exp: i32) -> i128 {
    if exp >= 0 {
        (0..exp.min(40)).fold(v, |acc, _| acc.saturating_mul(10))
    } else {
        // Upstream rounds fractional nano-values up; a sub-nano remainder counts as 1n.
        let div = (0..(-exp).min(40)).fold(1i128, |acc, _| acc.saturating_mul(10));
        let q = v / div;
        if v % div != 0 {
            q + 1
        } else {
            q
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_upstream_forms() {
        let cases: &[(&str, i128)] = &[
            ("1", 1_000_000_000),
            ("500m", 500_000_000),
            ("0.5", 500_000_000),
            ("1Ki", 1024 * 1_000_000_000),
            ("1k", 1_000_000_000_000),
            ("2e3", 2_000_000_000_000),
            ("1.5Gi", 1_610_612_736 * 1_000_000_000),
            ("-1", -1_000_000_000),
            ("0", 0),
        ];
        for &(s, want) in cases {
            assert_eq!(parse(s), Some(Nanos(want)), "{s}");
        }
        assert_eq!(parse("1000m"), parse("1"));
        for bad in ["", "abc", "1X", "1..2", ".", "1Kb"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
