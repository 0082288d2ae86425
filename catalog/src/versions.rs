//! Kubernetes version-string ordering (`v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > other`).

use std::cmp::Ordering;

/// Stability track of an API version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stability {
    Alpha,
    Beta,
    Ga,
}

/// A parsed `v<major>[alpha|beta<minor>]` version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KubeVersion {
    pub major: u32,
    pub stability: Stability,
    pub minor: u32,
}

/// Parses a Kubernetes-style version; `None` for anything else (e.g. `foo1`).
pub(crate) fn parse(version: &str) -> Option<KubeVersion> {
    let rest = version.strip_prefix('v')?;
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major: u32 = rest[..digits_end].parse().ok()?;
    if major == 0 {
        return None;
    }
    let tail = &rest[digits_end..];
    if tail.is_empty() {
        return Some(KubeVersion {
            major,
            stability: Stability::Ga,
            minor: 0,
        });
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("alpha") {
        (Stability::Alpha, m)
    } else if let Some(m) = tail.strip_prefix("beta") {
        (Stability::Beta, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let minor: u32 = minor.parse().ok()?;
    Some(KubeVersion {
        major,
        stability,
        minor,
    })
}

/// Orders versions most-preferred first: GA before beta before alpha, higher numbers first,
/// non-Kubernetes versions last in lexical order.
pub(crate) fn compare_preferred_first(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => (y.stability, y.major, y.minor).cmp(&(x.stability, x.major, x.minor)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Whether a version is an alpha (`v1alpha3`).
pub(crate) fn is_alpha(version: &str) -> bool {
    matches!(parse(version), Some(v) if v.stability == Stability::Alpha)
}

/// Whether a version is GA (`v1`, `v2`): only those are served by default in v1.32.
pub(crate) fn is_ga(version: &str) -> bool {
    matches!(parse(version), Some(v) if v.stability == Stability::Ga)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_upstream_example() {
        let mut v = vec![
            "foo10",
            "v11alpha2",
            "v1",
            "v3beta1",
            "v10beta3",
            "v12alpha1",
            "v2",
            "v11beta2",
            "foo1",
            "v10",
        ];
        v.sort_by(|a, b| compare_preferred_first(a, b));
        assert_eq!(
            v,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
    }

    #[test]
    fn parses_stability() {
        let cases = [
            ("v1", Some(Stability::Ga)),
            ("v2beta1", Some(Stability::Beta)),
            ("v1alpha3", Some(Stability::Alpha)),
            ("v1beta", None),
            ("v0", None),
            ("1", None),
            ("vbeta1", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse(input).map(|v| v.stability), want, "{input}");
        }
    }
}
