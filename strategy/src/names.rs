//! Name and key syntax checks (upstream `k8s.io/apimachinery/pkg/util/validation`).
//!
//! Each `is_*` returns the list of problems in upstream's wording; empty means valid. The
//! name rules shared with object metadata come from `keel_api::names` (one implementation);
//! the checks only type rules use (data keys, port names) live here.

pub use keel_api::names::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};

/// Longest ConfigMap / Secret key.
pub const CONFIG_KEY_LEN_MAX: usize = 253;
/// Longest named port.
pub const PORT_NAME_LEN_MAX: usize = 15;

const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";

/// Upstream's `RegexError`: message, examples, and the regex.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}'")).collect();
    format!(
        "{msg} (e.g. {}, regex used for validation is '{fmt}')",
        ex.join(",  or ")
    )
}

/// Upstream's `MaxLenError`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// ConfigMap / Secret data key.
pub fn is_config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > CONFIG_KEY_LEN_MAX {
        errs.push(max_len_error(CONFIG_KEY_LEN_MAX));
    }
    let shape = !s.is_empty()
        && s.bytes()
            .all(|c| alnum(c) || c == b'-' || c == b'_' || c == b'.');
    if !shape {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if s == "." {
        errs.push("must not be '.'".to_string());
    } else if s == ".." {
        errs.push("must not be '..'".to_string());
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// IANA_SVC_NAME: named container / target ports.
pub fn is_valid_port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > PORT_NAME_LEN_MAX {
        errs.push(max_len_error(PORT_NAME_LEN_MAX));
    }
    if !s.bytes().all(|c| lower_alnum(c) || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// Upstream's `InclusiveRangeError` for port numbers.
pub const PORT_RANGE_MSG: &str = "must be between 1 and 65535, inclusive";

/// 1..=65535.
pub fn is_valid_port_num(n: i64) -> bool {
    (1..=65535).contains(&n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_keys() {
        let cases: &[(&str, usize)] = &[
            ("key.name", 0),
            ("KEY_NAME", 0),
            (".hidden", 0),
            (".", 1),
            ("..", 1),
            ("..x", 1),
            ("a b", 1),
            ("", 1),
        ];
        for &(s, n) in cases {
            assert_eq!(is_config_map_key(s).len(), n, "{s}");
        }
    }

    #[test]
    fn port_names() {
        assert!(is_valid_port_name("http").is_empty());
        assert!(is_valid_port_name("h-2").is_empty());
        assert!(!is_valid_port_name("123").is_empty());
        assert!(!is_valid_port_name("a--b").is_empty());
        assert!(!is_valid_port_name("verylongportname").is_empty());
        assert!(!is_valid_port_name("HTTP").is_empty());
    }
}
