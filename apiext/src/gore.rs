//! Go's RE2 dialect on the `regex` crate.
//!
//! Both implement RE2 syntax; the one difference that changes matches in practice is that
//! Go's Perl classes are ASCII-only (`\d` is `[0-9]`, `\w` `[0-9A-Za-z_]`, `\s`
//! `[\t\n\f\r ]`, `\b` an ASCII word boundary) while the crate's are Unicode-aware. Patterns
//! are rewritten to the ASCII classes before compiling.

use crate::limits;
use regex::{Regex, RegexBuilder};

/// Compiles a Go regular expression.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(&ascii_classes(pattern))
        .size_limit(limits::REGEX_BYTES_MAX)
        .build()
        .map_err(|e| e.to_string())
}

/// Rewrites Perl classes to their ASCII meaning, outside and inside bracket expressions.
fn ascii_classes(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let (outside, inside) = match n {
                    'd' => ("[0-9]", "0-9"),
                    'D' => ("[^0-9]", ""),
                    'w' => ("[0-9A-Za-z_]", "0-9A-Za-z_"),
                    'W' => ("[^0-9A-Za-z_]", ""),
                    's' => ("[\\t\\n\\f\\r ]", "\\t\\n\\f\\r "),
                    'S' => ("[^\\t\\n\\f\\r ]", ""),
                    'b' if !in_class => ("(?-u:\\b)", ""),
                    'B' if !in_class => ("(?-u:\\B)", ""),
                    _ => ("", ""),
                };
                let replacement = if in_class { inside } else { outside };
                if replacement.is_empty() {
                    out.push('\\');
                    out.push(n);
                } else {
                    out.push_str(replacement);
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A leading `^` and a leading `]` belong to the class.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // A POSIX class such as [:alpha:] stays as it is.
                out.push('[');
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii() {
        let rows = [
            (r"^\d+$", "123", true),
            (r"^\d+$", "١٢٣", false),
            (r"^[\d.]+$", "1.2", true),
            (r"^[\d.]+$", "١", false),
            (r"^\w+$", "héllo", false),
            (r"^\w+$", "hello_1", true),
            (r"^a\sb$", "a\u{a0}b", false),
            (r"^a\sb$", "a b", true),
            (r"^[[:alpha:]]+$", "abc", true),
            (r"^[^\]]+$", "abc", true),
            (r"\bx\b", "a x b", true),
            (r"^\D$", "a", true),
            (r"^\.$", ".", true),
        ];
        for (p, s, want) in rows {
            let re = compile(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(re.is_match(s), want, "{p} on {s:?}");
        }
    }
}
