//! Field selectors: `field=value`, `field==value`, `field!=value`, comma-joined, with `\`
//! escaping of `\`, `,` and `=` in values.

use super::SELECTOR_LEN_MAX;
use crate::status::ApiError;

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// Field path, e.g. `metadata.name`.
    pub field: String,
    /// Unescaped value.
    pub value: String,
    /// `true` for `!=`.
    pub negated: bool,
}

/// A parsed field selector; all terms must hold. Terms are kept in upstream's order (sorted by
/// their source text).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

/// Escapes `\`, `,` and `=` in a value.
pub fn escape_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// Reverses [`escape_value`], rejecting unknown escapes and unescaped `,` / `=` with
/// upstream's messages.
pub fn unescape_value(s: &str) -> Result<String, ApiError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(invalid_escape(&format!("\\{c}")));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )))
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(invalid_escape("\\"));
    }
    Ok(out)
}

fn invalid_escape(seq: &str) -> ApiError {
    ApiError::bad_request(format!(
        "invalid field selector: invalid escape sequence: {seq}"
    ))
}

/// Splits on commas not preceded by an escaping backslash.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at its first operator (`!=`, `==`, `=`, checked in that order per position).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

impl FieldSelector {
    /// Parses a field selector string; errors are 400 BadRequest with upstream's messages.
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        if input.len() > SELECTOR_LEN_MAX {
            return Err(ApiError::bad_request(format!(
                "field selector is longer than {SELECTOR_LEN_MAX} bytes"
            )));
        }
        let mut parts = split_terms(input);
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            terms.push(FieldTerm {
                field: lhs.to_string(),
                value: unescape_value(rhs)?,
                negated: op == "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    /// The terms.
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// The field paths the selector refers to (for checking them against a resource's
    /// supported field labels).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// True when the selector has no terms (matches everything).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether an object matches; `get` returns a field's value (`None` counts as `""`).
    pub fn matches(&self, get: &dyn Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| {
            let actual = get(&t.field).unwrap_or_default();
            (actual == t.value) != t.negated
        })
    }

    /// The value `field` must equal exactly (`field=v` / `field==v`), for fast paths such as
    /// `metadata.name`.
    pub fn requires_exact(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| !t.negated && t.field == field)
            .map(|t| t.value.as_str())
    }
}

impl std::fmt::Display for FieldSelector {
    /// Canonical form: `field=value` / `field!=value` with escaped values, joined by `,`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                format!(
                    "{}{}{}",
                    t.field,
                    if t.negated { "!=" } else { "=" },
                    escape_value(&t.value)
                )
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}
