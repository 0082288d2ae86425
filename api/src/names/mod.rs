//! Object name and metadata format rules, with upstream's messages, and `generateName`.

use serde_json::{Map, Value};

/// Longest DNS-1123 / DNS-1035 label.
pub const DNS1123_LABEL_LEN_MAX: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_LEN_MAX: usize = 253;
/// Longest name part of a qualified name (label key) and longest label value.
pub const QUALIFIED_NAME_LEN_MAX: usize = 63;
/// Total bytes of annotation keys plus values.
pub const ANNOTATIONS_TOTAL_BYTES_MAX: usize = 256 * 1024;
/// Random suffix length of generated names.
pub const GENERATED_SUFFIX_LEN: usize = 5;
/// Longest `generateName` prefix kept before the random suffix (upstream: 63 - 5).
pub const GENERATED_PREFIX_LEN_MAX: usize = DNS1123_LABEL_LEN_MAX - GENERATED_SUFFIX_LEN;
/// Alphabet of generated suffixes (no vowels, no confusable characters), as upstream.
const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Upstream's `MaxLenError`.
fn max_len_error(len: usize) -> String {
    format!("must be no more than {len} characters")
}

/// Upstream's `RegexError` (including its double space before "or").
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{ex}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// Matches `first (middle* last)?` over bytes: non-empty, first and last from their classes.
fn matches_edges(
    s: &str,
    first: fn(u8) -> bool,
    middle: fn(u8) -> bool,
    last: fn(u8) -> bool,
) -> bool {
    let b = s.as_bytes();
    match b {
        [] => false,
        [only] => first(*only) && last(*only),
        [head, inner @ .., tail] => first(*head) && last(*tail) && inner.iter().all(|c| middle(*c)),
    }
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}
fn lower_alnum_dash(c: u8) -> bool {
    lower_alnum(c) || c == b'-'
}
fn alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}
fn qualified_middle(c: u8) -> bool {
    alnum(c) || c == b'-' || c == b'_' || c == b'.'
}

fn dns1123_label_matches(s: &str) -> bool {
    matches_edges(s, lower_alnum, lower_alnum_dash, lower_alnum)
}

fn dns1123_subdomain_matches(s: &str) -> bool {
    s.split('.').all(dns1123_label_matches)
}

/// `IsDNS1123Label`: errors for a value that is not a lowercase RFC 1123 label.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_LEN_MAX {
        errs.push(max_len_error(DNS1123_LABEL_LEN_MAX));
    }
    if !dns1123_label_matches(value) {
        if dns1123_subdomain_matches(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: errors for a value that is not a lowercase RFC 1123 subdomain.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_LEN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_LEN_MAX));
    }
    if !dns1123_subdomain_matches(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`: errors for a value that is not an RFC 1035 label (Service names).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_LEN_MAX {
        errs.push(max_len_error(DNS1123_LABEL_LEN_MAX));
    }
    if !matches_edges(
        value,
        |c| c.is_ascii_lowercase(),
        lower_alnum_dash,
        lower_alnum,
    ) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsValidPathSegmentName`: names that can appear as one URL path segment.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    is_valid_path_segment_prefix(name)
}

/// `IsValidPathSegmentPrefix`: the `generateName` form of [`is_valid_path_segment_name`].
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|illegal| name.contains(**illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect()
}

fn qualified_name_part_matches(s: &str) -> bool {
    matches_edges(s, alnum, qualified_middle, alnum)
}

/// `IsQualifiedName`: label keys, annotation keys and finalizer names: an optional DNS
/// subdomain prefix and `/`, then a name part of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for msg in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {msg}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_LEN_MAX {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_LEN_MAX)
        ));
    }
    if !qualified_name_part_matches(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or a qualified name part of at most 63 characters.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > QUALIFIED_NAME_LEN_MAX {
        errs.push(max_len_error(QUALIFIED_NAME_LEN_MAX));
    }
    if !value.is_empty() && !qualified_name_part_matches(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Total annotation size check: `Some(total)` when keys plus values exceed
/// [`ANNOTATIONS_TOTAL_BYTES_MAX`].
pub fn annotations_size_exceeded(annotations: &Map<String, Value>) -> Option<usize> {
    let total: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    (total > ANNOTATIONS_TOTAL_BYTES_MAX).then_some(total)
}

/// `generateName`: the prefix (cut to [`GENERATED_PREFIX_LEN_MAX`] bytes, on a character
/// boundary) followed by 5 random characters from upstream's alphabet.
pub fn generate_name(prefix: &str) -> String {
    let mut cut = prefix.len().min(GENERATED_PREFIX_LEN_MAX);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + GENERATED_SUFFIX_LEN);
    out.push_str(&prefix[..cut]);
    for _ in 0..GENERATED_SUFFIX_LEN {
        let i = fastrand::usize(..GENERATE_ALPHABET.len());
        out.push(char::from(GENERATE_ALPHABET[i]));
    }
    out
}

/// Which format a resource's names must have (upstream's `ValidateNameFunc`).
#[derive(Debug, Clone, Copy)]
pub enum NameRule {
    /// DNS-1123 subdomain (most resources).
    Dns1123Subdomain,
    /// DNS-1123 label (namespaces).
    Dns1123Label,
    /// DNS-1035 label (services).
    Dns1035Label,
    /// Any single path segment (RBAC objects and others).
    PathSegment,
    /// A custom rule: `(name, is_prefix) -> messages`.
    Custom(fn(&str, bool) -> Vec<String>),
}

/// Upstream's `maskTrailingDash` quirk: a prefix ending in `-` has its last two bytes replaced
/// by `a` before the DNS checks (so `abc-` is checked as `aba`).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
    }
    name.to_string()
}

impl NameRule {
    /// Messages for `name`; with `prefix`, checks it as a `generateName` prefix.
    pub fn check(&self, name: &str, prefix: bool) -> Vec<String> {
        let dns = |f: fn(&str) -> Vec<String>| {
            if prefix {
                f(&mask_trailing_dash(name))
            } else {
                f(name)
            }
        };
        match self {
            NameRule::Dns1123Subdomain => dns(is_dns1123_subdomain),
            NameRule::Dns1123Label => dns(is_dns1123_label),
            NameRule::Dns1035Label => dns(is_dns1035_label),
            NameRule::PathSegment if prefix => is_valid_path_segment_prefix(name),
            NameRule::PathSegment => is_valid_path_segment_name(name),
            NameRule::Custom(f) => f(name, prefix),
        }
    }
}

mod meta;
pub use meta::{
    validate_annotations, validate_finalizers, validate_labels, validate_object_meta,
    validate_object_meta_with, validate_owner_references,
};

#[cfg(test)]
mod tests;
