//! Upstream's deprecation of resources (alpha and beta ones, and a few GA ones): a request to one deprecated at the
//! emulated release gets the warning upstream sends (`Warning: 299 - "<group>/<version> <Kind>
//! is deprecated in v1.D+, unavailable in v1.R+"`, with the replacement when upstream names
//! one). The releases come from `deprecations.rs`, recorded from upstream's answers by
//! `catalog/data/deprecations.py`.

use crate::deprecations::{Deprecated, DEPRECATIONS};
use crate::emulation::Emulation;
use crate::types::ResourceInfo;

/// A deprecated resource, as a request to it is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deprecation {
    /// The warning's text (without the `299 - "..."` framing).
    pub warning: String,
    /// The release it is no longer served from (`1.R`), when upstream names one.
    pub removed_release: Option<String>,
}

/// The table's row of `group/version/plural`. A short table (tens of rows), scanned on every
/// resource request: the plural, which differs in its first bytes for almost every row, is
/// compared first.
fn row(group: &str, version: &str, plural: &str) -> Option<&'static Deprecated> {
    DEPRECATIONS
        .iter()
        .find(|(g, v, r, ..)| *r == plural && *v == version && *g == group)
}

/// Whether upstream deprecates `group/version/plural` at some release: a request for any
/// other resource needs no further look.
pub fn is_deprecated_anywhere(group: &str, version: &str, plural: &str) -> bool {
    row(group, version, plural).is_some()
}

/// The deprecation of `info` at the emulated release, if it is deprecated by then.
pub fn deprecation(info: &ResourceInfo, emulation: &Emulation) -> Option<Deprecation> {
    let &(_, _, _, deprecated, removed, replacement) = row(info.group, info.version, info.plural)?;
    if emulation.emulated_minor < deprecated {
        return None;
    }
    let gv = if info.group.is_empty() {
        info.version.to_owned()
    } else {
        format!("{}/{}", info.group, info.version)
    };
    let mut warning = format!("{gv} {} is deprecated in v1.{deprecated}+", info.kind);
    let removed_release = (removed > 0).then(|| format!("1.{removed}"));
    if let Some(r) = &removed_release {
        warning.push_str(&format!(", unavailable in v{r}+"));
    }
    if let Some(r) = replacement {
        warning.push_str(&format!("; use {r}"));
    }
    Some(Deprecation {
        warning,
        removed_release,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catalog;

    fn at(minor: &str) -> Emulation {
        Emulation::parse(minor, "").unwrap()
    }

    #[test]
    fn warnings_as_upstream_words_them() {
        let c = Catalog::new("api/all=true").unwrap();
        let info = |g, v, r| c.lookup(g, v, r).unwrap().as_ref().clone();
        // Recorded from upstream v1.36.2.
        assert_eq!(
            deprecation(
                &info("resource.k8s.io", "v1beta1", "deviceclasses"),
                &at("1.36")
            )
            .unwrap()
            .warning,
            "resource.k8s.io/v1beta1 DeviceClass is deprecated in v1.35+, unavailable in v1.38+"
        );
        let vac = deprecation(
            &info("storage.k8s.io", "v1beta1", "volumeattributesclasses"),
            &at("1.36"),
        )
        .unwrap();
        assert_eq!(
            vac.warning,
            "storage.k8s.io/v1beta1 VolumeAttributesClass is deprecated in v1.34+, unavailable in v1.37+; use storage.k8s.io/v1 VolumeAttributesClass"
        );
        assert_eq!(vac.removed_release.as_deref(), Some("1.37"));
        // Not yet deprecated at an earlier emulated release; GA and young betas never are.
        assert!(deprecation(
            &info("resource.k8s.io", "v1beta2", "deviceclasses"),
            &at("1.35")
        )
        .is_none());
        assert!(deprecation(
            &info("resource.k8s.io", "v1beta2", "deviceclasses"),
            &at("1.36")
        )
        .is_some());
        assert!(deprecation(&info("apps", "v1", "deployments"), &at("1.36")).is_none());
        // A GA resource upstream deprecated, with no release it goes away in.
        let endpoints = deprecation(&info("", "v1", "endpoints"), &at("1.36")).unwrap();
        assert_eq!(
            endpoints.warning,
            "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
        );
        assert_eq!(endpoints.removed_release, None);
        assert!(deprecation(
            &info(
                "admissionregistration.k8s.io",
                "v1beta1",
                "mutatingadmissionpolicies"
            ),
            &at("1.36")
        )
        .is_none());
    }
}
