//! The bits of Go formatting upstream's RBAC messages are made of: `%q` of a string and of a
//! `[]string`, and `utilerrors.NewAggregate(errs).Error()`.

/// Go's `%q` (`strconv.Quote`) of `s`: double quotes, `\"` and `\\`, the C escapes, `\xNN`
/// for other ASCII control characters, `\uNNNN` / `\UNNNNNNNN` for other characters Go does
/// not count as printable. Go decides that with the Unicode tables (`unicode.IsPrint`); this
/// knows the control, separator, format, private-use and non-character code points, not
/// which code points are unassigned (those Go escapes and this keeps).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_quoted(&mut out, s);
    out
}

/// Appends `%q` of `s` to `out`.
pub fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
}

/// Go's `%q` of a `[]string`: `["a" "b"]` (space-separated), `[]` when empty.
pub fn quote_list<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        push_quoted(&mut out, item.as_ref());
    }
    out.push(']');
    out
}

/// `unicode.IsPrint` without the tables of unassigned code points: letters, marks, numbers,
/// punctuation, symbols and the ASCII space.
fn printable(c: char) -> bool {
    let u = c as u32;
    if u < 0x7f {
        return u >= 0x20;
    }
    if c.is_control() || c.is_whitespace() {
        // Cc, and the separators (Zs but U+0020, Zl, Zp), all escaped by Go.
        return false;
    }
    !matches!(u,
        // Cf: format characters.
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2 | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f
        | 0xfeff | 0xfff9..=0xfffb | 0x110bd | 0x110cd | 0x13430..=0x1343f
        | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        // Co: private use.
        | 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd
        // Non-characters.
        | 0xfdd0..=0xfdef
    ) && (u & 0xfffe) != 0xfffe
}

/// `utilerrors.NewAggregate(errs).Error()`: `None` for no errors, the one message for one
/// (or for several that say the same), else `[a, b, ...]` of the distinct messages in
/// order.
pub fn aggregate<S: AsRef<str>>(messages: &[S]) -> Option<String> {
    match messages {
        [] => None,
        [one] => Some(one.as_ref().to_string()),
        _ => {
            let mut seen: Vec<&str> = Vec::new();
            for m in messages {
                if !seen.contains(&m.as_ref()) {
                    seen.push(m.as_ref());
                }
            }
            if seen.len() == 1 {
                Some(seen[0].to_string())
            } else {
                Some(format!("[{}]", seen.join(", ")))
            }
        }
    }
}
