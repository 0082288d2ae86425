//! The YAML text gnostic keeps in `Any.yaml` (defaults, enums, examples, `x-` extensions).
//!
//! Upstream parses the JSON document with go-yaml v3, clears every node's style and marshals the
//! value's node again, so what a client reads is go-yaml v3's block output for the JSON value:
//! 4-space indentation (a mapping inside a sequence item starts right after `- `), no line
//! wrapping, `{}`/`[]` for empty collections, and a scalar quoted only when it must be: a string
//! whose plain form would read back as another type (`""`, `"true"`, `"123"`, `"2024-01-01"`)
//! is double-quoted, one that plain style cannot carry (leading indicator, `: `, ` #`, edge
//! spaces) is single-quoted, and one with characters single quotes cannot carry is
//! double-quoted with escapes.
//!
//! Checked byte for byte against go-yaml's output (tests/openapi_v2.rs, `strings.json`).
//! Known differences, all for strings holding a line break (none of keel's documents has one
//! in an `Any`): go-yaml writes such a value as a literal block (`|-`), such a key in the
//! explicit `? key` form, and a U+2028/U+2029 raw inside single quotes (which a YAML 1.1
//! reader such as kubectl's folds into a space); this module double-quotes all of them
//! (`"a\nb"`, `"a\Lb"`), which reads back as the same string everywhere. Keys longer than 128
//! bytes are written in go-yaml's explicit form (`? key` then `: value`); when the value is a
//! non-empty collection it starts on the line after the `:`, which reads back the same but has
//! not been compared with go-yaml's bytes.

use keel_api::yaml::{go_int, is_break, yaml_style_float};
use serde_json::{Map, Value};

/// go-yaml v3's default indentation.
const INDENT: usize = 4;
/// Longest key go-yaml writes as a simple key (`key: value`); a longer one is written in the
/// explicit form (`? key` / `: value`). YAML readers refuse simple keys past 1,024 characters.
const SIMPLE_KEY_BYTES_MAX: usize = 128;

/// The YAML text of `v`, ending in a line break.
pub(crate) fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => mapping(&mut out, m, 0, false),
        Value::Array(a) if !a.is_empty() => sequence(&mut out, a, 0, false),
        _ => {
            out.push_str(&inline(v));
            out.push('\n');
        }
    }
    out
}

/// The next indentation of a block nested under a mapping key: the next multiple of 4.
fn nested(indent: usize) -> usize {
    INDENT * ((indent + INDENT) / INDENT)
}

/// A scalar or an empty collection, written on the current line.
fn inline(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s, false),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

fn is_block(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

/// A non-empty mapping at `indent`. `continued`: the first key goes on the current line (after
/// a sequence's `- `).
fn mapping(out: &mut String, m: &Map<String, Value>, indent: usize, continued: bool) {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 || !continued {
            pad(out, indent);
        }
        if k.len() > SIMPLE_KEY_BYTES_MAX {
            // go-yaml's explicit form: `? key`, then `:` and the value on the next line.
            out.push_str("? ");
            out.push_str(&string(k, false));
            out.push('\n');
            pad(out, indent);
        } else {
            out.push_str(&string(k, true));
        }
        out.push(':');
        value_after_key(out, v, indent);
    }
}

fn value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            mapping(out, m, nested(indent), false);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            sequence(out, a, nested(indent), false);
        }
        _ => {
            out.push(' ');
            out.push_str(&inline(v));
            out.push('\n');
        }
    }
}

/// A non-empty sequence at `indent`; `continued` as for [`mapping`].
fn sequence(out: &mut String, a: &[Value], indent: usize, continued: bool) {
    for (i, item) in a.iter().enumerate() {
        if i > 0 || !continued {
            pad(out, indent);
        }
        out.push_str("- ");
        match item {
            Value::Object(m) if is_block(item) => mapping(out, m, indent + 2, true),
            Value::Array(inner) if is_block(item) => sequence(out, inner, indent + 2, true),
            _ => {
                out.push_str(&inline(item));
                out.push('\n');
            }
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A string scalar in the style go-yaml picks; `key` for a mapping key (simple key context).
fn string(s: &str, key: bool) -> String {
    if s.contains(['\n', '\u{2028}', '\u{2029}']) || resolves_to_other_type(s) {
        return double_quoted(s);
    }
    let a = analyze(s);
    if a.plain_allowed && !(key && s.is_empty()) {
        s.to_owned()
    } else if a.single_quoted_allowed {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        double_quoted(s)
    }
}

/// What plain and single-quoted style can carry, as go-yaml's emitter judges a scalar in block
/// context.
struct Analysis {
    plain_allowed: bool,
    single_quoted_allowed: bool,
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            plain_allowed: true,
            single_quoted_allowed: true,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut indicators = s.starts_with("---") || s.starts_with("...");
    let (mut line_breaks, mut special, mut tabs) = (false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let bom_first = s.starts_with('\u{feff}');
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| n == ' ' || n == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => indicators = true,
                '#' if preceded_by_whitespace => indicators = true,
                _ => {}
            }
        }
        if c == '\t' {
            tabs = true;
        } else if !printable(c) || (bom_first && c == '\u{feff}') {
            special = true;
        }
        if c == ' ' {
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let first = chars[0];
    let last = chars[chars.len() - 1];
    let edges = first == ' ' || last == ' ' || is_break(first) || is_break(last);
    let single_quoted_allowed = !(break_space || space_break || tabs || special);
    Analysis {
        plain_allowed: single_quoted_allowed && !edges && !line_breaks && !indicators,
        single_quoted_allowed,
    }
}

/// go-yaml's `is_printable`: note that it counts no character beyond the Basic Multilingual
/// Plane as printable, so those are escaped.
fn printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
        && c != '\u{feff}'
}

fn double_quoted(s: &str) -> String {
    let bom_first = s.starts_with('\u{feff}');
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        let escape = !printable(c) || bom_first || is_break(c) || c == '"' || c == '\\';
        if !escape {
            out.push(c);
            continue;
        }
        out.push('\\');
        match c {
            '\0' => out.push('0'),
            '\u{07}' => out.push('a'),
            '\u{08}' => out.push('b'),
            '\t' => out.push('t'),
            '\n' => out.push('n'),
            '\u{0b}' => out.push('v'),
            '\u{0c}' => out.push('f'),
            '\r' => out.push('r'),
            '\u{1b}' => out.push('e'),
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '\u{85}' => out.push('N'),
            '\u{a0}' => out.push('_'),
            '\u{2028}' => out.push('L'),
            '\u{2029}' => out.push('P'),
            c if (c as u32) <= 0xff => out.push_str(&format!("x{:02X}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("u{:04X}", c as u32)),
            c => out.push_str(&format!("U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// True when go-yaml v3 would read the plain scalar `s` as something other than a string
/// (null, bool, int, float, timestamp), so a string must be quoted. go-yaml looks at the first
/// character first: only these can start a non-string.
fn resolves_to_other_type(s: &str) -> bool {
    let Some(first) = s.bytes().next() else {
        return true; // null
    };
    if matches!(
        s,
        "~" | "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
    ) || matches!(
        s.strip_prefix(['+', '-']).unwrap_or(s),
        ".inf" | ".Inf" | ".INF"
    ) || matches!(s, ".nan" | ".NaN" | ".NAN")
    {
        return true;
    }
    match first {
        b'.' => finite_float(s),
        b'+' | b'-' | b'0'..=b'9' => {
            if timestamp(s) {
                return true;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            go_int(&plain)
                || (yaml_style_float(&plain) && plain.parse::<f64>().is_ok_and(f64::is_finite))
        }
        _ => false,
    }
}

/// go-yaml's float pattern, and the value is finite (Go's ParseFloat fails on overflow).
fn finite_float(s: &str) -> bool {
    yaml_style_float(s) && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// go-yaml's timestamp forms (Go `time.Parse` layouts `2006-1-2T15:4:5.999999999Z07:00`, the
/// same with `t`, `2006-1-2 15:4:5.999999999` and `2006-1-2`), with Go's range checks.
fn timestamp(s: &str) -> bool {
    let mut r = Reader {
        b: s.as_bytes(),
        i: 0,
    };
    let Some(year) = r.digits(4, 4) else {
        return false;
    };
    let date = (|| {
        r.byte(b'-')?;
        let month = r.digits(1, 2)?;
        r.byte(b'-')?;
        let day = r.digits(1, 2)?;
        ((1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day)).then_some(())
    })();
    if date.is_none() {
        return false;
    }
    let sep = match r.next() {
        None => return true,
        Some(c @ (b'T' | b't' | b' ')) => c,
        Some(_) => return false,
    };
    let time = (|| {
        let hour = r.digits(1, 2)?;
        r.byte(b':')?;
        let minute = r.digits(1, 2)?;
        r.byte(b':')?;
        let second = r.digits(1, 2)?;
        if r.b.get(r.i) == Some(&b'.') {
            r.i += 1;
            r.digits(1, usize::MAX)?;
        }
        (hour < 24 && minute < 60 && second < 60).then_some(())
    })();
    // A failed time may stop inside a multi-byte character: only a parsed time (ASCII up to
    // `r.i`) leaves a char boundary to slice at.
    if time.is_none() {
        return false;
    }
    let rest = &s[r.i..];
    if sep == b' ' {
        rest.is_empty()
    } else {
        rest == "Z" || zone_offset(rest)
    }
}

/// A cursor over ASCII bytes for [`timestamp`].
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    fn byte(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// Between `min` and `max` decimal digits (as many as there are, up to `max`).
    fn digits(&mut self, min: usize, max: usize) -> Option<u32> {
        let start = self.i;
        while self.i < self.b.len() && self.i - start < max && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let n = self.i - start;
        if n < min {
            return None;
        }
        // Only the value of short fields is used; a long fraction may overflow u32.
        Some(
            self.b[start..self.i]
                .iter()
                .take(9)
                .fold(0, |acc, d| acc * 10 + u32::from(d - b'0')),
        )
    }
}

fn zone_offset(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 6
        && matches!(b[0], b'+' | b'-')
        && b[1].is_ascii_digit()
        && b[2].is_ascii_digit()
        && b[3] == b':'
        && b[4].is_ascii_digit()
        && b[5].is_ascii_digit()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::to_yaml;
    use serde_json::json;

    /// Expected texts are what go-yaml v3's emitter produces for the same node (block style,
    /// indent 4); the one-line cases agree with go-yaml 3.0.1's output.
    #[test]
    fn shapes() {
        let cases = [
            (json!("merge"), "merge\n"),
            (json!("merge,retainKeys"), "merge,retainKeys\n"),
            (json!(true), "true\n"),
            (json!(null), "null\n"),
            (json!(42), "42\n"),
            (json!({}), "{}\n"),
            (json!([]), "[]\n"),
            (json!(["driver", "device"]), "- driver\n- device\n"),
            (
                json!({"group": "", "kind": "Pod", "version": "v1"}),
                "group: \"\"\nkind: Pod\nversion: v1\n",
            ),
            (
                json!([{"group": "apps", "kind": "Deployment", "version": "v1"}]),
                "- group: apps\n  kind: Deployment\n  version: v1\n",
            ),
            (
                json!([{"discriminator": "type", "fields-to-discriminateBy": {"exempt": "Exempt", "limited": "Limited"}}]),
                "- discriminator: type\n  fields-to-discriminateBy:\n    exempt: Exempt\n    limited: Limited\n",
            ),
            (
                json!({"a": {"b": {"c": 1}}, "l": [1, [2, 3]], "e": []}),
                "a:\n    b:\n        c: 1\nl:\n    - 1\n    - - 2\n      - 3\ne: []\n",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(to_yaml(&value), want, "{value}");
        }
    }

    /// Found by the `openapi_yaml` fuzz target: a key past 1,024 characters was written as a
    /// simple key, which YAML readers refuse.
    #[test]
    fn long_keys_take_the_explicit_form() {
        let long = "k".repeat(1100);
        let got = to_yaml(&json!({ "a": 1, long.clone(): "it's" }));
        assert_eq!(got, format!("a: 1\n? {long}\n: it's\n"));
        let nested = to_yaml(&json!([{ long.clone(): {"b": 2} }]));
        assert_eq!(nested, format!("- ? {long}\n  :\n    b: 2\n"));
        let at_limit = "k".repeat(128);
        assert_eq!(
            to_yaml(&json!({ at_limit.clone(): 1 })),
            format!("{at_limit}: 1\n")
        );
    }

    #[test]
    fn quoting() {
        let cases = [
            ("", "\"\"\n"),
            ("true", "\"true\"\n"),
            ("yes", "yes\n"), // go-yaml v3 reads `yes` as a string
            ("null", "\"null\"\n"),
            ("~", "\"~\"\n"),
            ("123", "\"123\"\n"),
            ("1_000", "\"1_000\"\n"),
            ("0x1F", "\"0x1F\"\n"),
            ("089", "\"089\"\n"), // not octal, but a float
            ("1.5", "\"1.5\"\n"),
            (".5", "\".5\"\n"),
            ("1e999", "1e999\n"), // overflows: Go's ParseFloat fails, so a string
            ("-.inf", "\"-.inf\"\n"),
            ("2024-01-31", "\"2024-01-31\"\n"),
            ("2024-02-30", "2024-02-30\n"),
            ("2024-01-31T10:00:00Z", "\"2024-01-31T10:00:00Z\"\n"),
            ("v1", "v1\n"),
            ("1abc", "1abc\n"),
            ("a: b", "'a: b'\n"),
            ("- a", "'- a'\n"),
            ("-a", "-a\n"),
            ("a #b", "'a #b'\n"),
            ("a#b", "a#b\n"),
            ("*x", "'*x'\n"),
            (" lead", "' lead'\n"),
            ("it's", "it's\n"),
            ("'q'", "'''q'''\n"),
            ("tab\there", "\"tab\\there\"\n"),
            ("two\nlines", "\"two\\nlines\"\n"),
            ("line\u{2028}sep", "\"line\\Lsep\"\n"),
            ("quote\"d", "quote\"d\n"),
            ("ünï", "ünï\n"),
            ("\u{1F600}", "\"\\U0001F600\"\n"),
            ("\u{7f}", "\"\\x7F\"\n"),
        ];
        for (s, want) in cases {
            assert_eq!(to_yaml(&json!(s)), want, "{s:?}");
        }
        assert_eq!(to_yaml(&json!({"": 1})), "\"\": 1\n");
        assert_eq!(to_yaml(&json!({"123": "x"})), "\"123\": x\n");
        assert_eq!(to_yaml(&json!({"a:b": "x"})), "a:b: x\n");
    }
}
