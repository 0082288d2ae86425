//! `--emulated-version` and `--min-compatibility-version`: the server can emulate the APIs of
//! its own release or of the three releases before it (upstream's compatibility versions), so
//! a cluster can be upgraded one minor at a time. A built-in kind introduced after the emulated
//! release (`introduced.rs`, generated from the published definitions) is not served.

use crate::introduced::{BINARY_MINOR, INTRODUCED};

/// The oldest release the binary can emulate: three minors before its own.
pub const EMULATION_MINOR_MIN: u32 = BINARY_MINOR - 3;
/// The binary's own release (1.x).
pub const BINARY_VERSION_MINOR: u32 = BINARY_MINOR;

/// What the server emulates: minors of Kubernetes 1.x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emulation {
    /// The release whose APIs are served (`/version`'s `emulationMinor`).
    pub emulated_minor: u32,
    /// The oldest release of other control-plane components the server stays compatible with
    /// (`/version`'s `minCompatibilityMinor`).
    pub min_compatibility_minor: u32,
    /// `--emulation-forward-compatible`: a beta or GA resource served at the emulated release
    /// is also served in its group's higher-priority versions introduced after it.
    pub forward_compatible: bool,
    /// `--runtime-config-emulation-forward-compatible`: resources and versions introduced
    /// after the emulated release are served when `--runtime-config` names them.
    pub runtime_config_forward_compatible: bool,
}

impl Default for Emulation {
    fn default() -> Emulation {
        Emulation::parse("", "").expect("the defaults are valid")
    }
}

impl Emulation {
    /// Parses the two flags as kube-apiserver does (`1.35` or `kube=1.35`; empty means the
    /// default: the binary's release, and one minor before the emulated one but not below the
    /// oldest emulatable one). The errors are upstream's.
    pub fn parse(emulated: &str, min_compatibility: &str) -> Result<Emulation, String> {
        let emulated_minor = match parse_flag(emulated)? {
            None => BINARY_MINOR,
            Some(m) => m,
        };
        if !(EMULATION_MINOR_MIN..=BINARY_MINOR).contains(&emulated_minor) {
            return Err(format!(
                "emulation version 1.{emulated_minor} is not between [1.{EMULATION_MINOR_MIN}, 1.{BINARY_MINOR}.0]"
            ));
        }
        let min_compatibility_minor = match parse_flag(min_compatibility)? {
            None => emulated_minor.saturating_sub(1).max(EMULATION_MINOR_MIN),
            Some(m) => m,
        };
        if !(EMULATION_MINOR_MIN..=emulated_minor).contains(&min_compatibility_minor) {
            return Err(format!(
                "minCompatibilityVersion version 1.{min_compatibility_minor} is not between [1.{EMULATION_MINOR_MIN}, 1.{emulated_minor}]"
            ));
        }
        Ok(Emulation {
            emulated_minor,
            min_compatibility_minor,
            forward_compatible: false,
            runtime_config_forward_compatible: false,
        })
    }

    /// Adds the two forward-compatibility flags; either may be on only while an earlier
    /// release is emulated (upstream's messages, both when both are wrong).
    pub fn forward_compatible(
        self,
        forward_compatible: bool,
        runtime_config_forward_compatible: bool,
    ) -> Result<Emulation, String> {
        if self.emulated_minor == BINARY_MINOR {
            let mut errs = Vec::new();
            if forward_compatible {
                errs.push("ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version");
            }
            if runtime_config_forward_compatible {
                errs.push("ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version");
            }
            match errs.as_slice() {
                [] => {}
                [one] => return Err((*one).to_owned()),
                many => return Err(format!("[{}]", many.join(", "))),
            }
        }
        Ok(Emulation {
            forward_compatible,
            runtime_config_forward_compatible,
            ..self
        })
    }

    /// The release that introduced `group/version/kind`, when after the emulated one.
    pub(crate) fn introduced_later(&self, group: &str, version: &str, kind: &str) -> Option<u32> {
        introduced(group, version, kind).filter(|m| *m > self.emulated_minor)
    }
}

/// The release that introduced `group/version/kind`, if later than the oldest emulatable one.
fn introduced(group: &str, version: &str, kind: &str) -> Option<u32> {
    INTRODUCED
        .iter()
        .find(|(g, v, k, _)| *g == group && *v == version && *k == kind)
        .map(|r| r.3)
}

/// One `--emulated-version`-style flag: `[kube=]1.N`, comma-separated per component; only the
/// `kube` component exists. `None` when empty.
fn parse_flag(flag: &str) -> Result<Option<u32>, String> {
    let mut found: Option<(&str, u32)> = None;
    for item in flag.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (component, version) = item.split_once('=').unwrap_or(("kube", item));
        if component != "kube" {
            return Err(format!("component not registered: {component}"));
        }
        let minor = parse_minor(version, item)?;
        if let Some((earlier, _)) = found {
            return Err(format!("duplicate version flag, kube={earlier} and {item}"));
        }
        found = Some((version, minor));
    }
    Ok(found.map(|f| f.1))
}

/// `1.N` (major 1 only: keel has one major); anything else is upstream's parse error.
fn parse_minor(version: &str, item: &str) -> Result<u32, String> {
    let unparsable = || format!("could not parse {version:?} as version");
    let parts: Vec<&str> = version.trim_start_matches('v').split('.').collect();
    let number = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match parts.as_slice() {
        [major, minor] => match (number(major), number(minor)) {
            (Some(1), Some(m)) => Ok(m),
            (Some(major), Some(m)) => Err(format!(
                "emulation version {major}.{m} is not between [1.{EMULATION_MINOR_MIN}, 1.{BINARY_MINOR}.0]"
            )),
            _ => Err(unparsable()),
        },
        [major, minor, patch] if number(major).is_some() && number(minor).is_some() && number(patch).is_some() => {
            Err(format!("patch version not allowed, got: {}", kube_item(item)))
        }
        _ => Err(unparsable()),
    }
}

fn kube_item(item: &str) -> String {
    if item.contains('=') {
        item.to_owned()
    } else {
        format!("kube={item}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_as_upstream_reads_them() {
        let ok = |e: &str, m: &str| Emulation::parse(e, m).unwrap();
        let err = |e: &str, m: &str| Emulation::parse(e, m).unwrap_err();
        assert_eq!(
            ok("", ""),
            Emulation {
                emulated_minor: 36,
                min_compatibility_minor: 35,
                forward_compatible: false,
                runtime_config_forward_compatible: false,
            }
        );
        assert_eq!(ok("1.35", "").min_compatibility_minor, 34);
        assert_eq!(ok("kube=1.34", "").emulated_minor, 34);
        // Not below the oldest emulatable release.
        assert_eq!(ok("1.33", "").min_compatibility_minor, 33);
        assert_eq!(ok("1.35", "kube=1.33").min_compatibility_minor, 33);
        // Upstream's messages, recorded from kube-apiserver v1.36.2.
        assert_eq!(
            err("1.32", ""),
            "emulation version 1.32 is not between [1.33, 1.36.0]"
        );
        assert_eq!(
            err("kube=1.37", ""),
            "emulation version 1.37 is not between [1.33, 1.36.0]"
        );
        assert_eq!(err("foo=1.35", ""), "component not registered: foo");
        assert_eq!(
            err("1.35.1", ""),
            "patch version not allowed, got: kube=1.35.1"
        );
        assert_eq!(
            err("kube=1.34,kube=1.35", ""),
            "duplicate version flag, kube=1.34 and kube=1.35"
        );
        assert_eq!(err("abc", ""), "could not parse \"abc\" as version");
        assert_eq!(
            err("1.35", "1.36"),
            "minCompatibilityVersion version 1.36 is not between [1.33, 1.35]"
        );
    }

    #[test]
    fn kinds_newer_than_the_emulated_release_are_not_served() {
        let at = |m: &str| Emulation::parse(m, "").unwrap();
        let serves =
            |e: Emulation, g: &str, v: &str, k: &str| e.introduced_later(g, v, k).is_none();
        assert!(serves(at("1.36"), "resource.k8s.io", "v1", "ResourceClaim"));
        assert!(serves(at("1.34"), "resource.k8s.io", "v1", "ResourceClaim"));
        assert!(!serves(
            at("1.33"),
            "resource.k8s.io",
            "v1",
            "ResourceClaim"
        ));
        assert!(!serves(
            at("1.35"),
            "admissionregistration.k8s.io",
            "v1",
            "MutatingAdmissionPolicy"
        ));
        assert!(serves(at("1.33"), "networking.k8s.io", "v1", "ServiceCIDR"));
        assert!(serves(at("1.33"), "apps", "v1", "Deployment"));
    }
}
