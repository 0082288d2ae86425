//! `--runtime-config`: which group/versions and resources the server serves.
//!
//! Rules (as kube-apiserver applies them):
//! 1. Defaults: GA versions on, alpha and beta versions off (v1.36 has no on-by-default beta).
//! 2. `api/all`, `api/ga`, `api/beta`, `api/alpha` switch every matching version, in that order.
//! 3. `<group>/<version>` (core: `api/v1` or `v1`) switches one version and drops any earlier
//!    per-resource choice for it; `<group>/<version>/<resource>` then switches one resource.
//! 4. Keys naming a group the server does not know are ignored; a known group with an unknown
//!    version, a bad boolean, or an upper-case resource is an error.
//! 5. A value may be omitted, meaning `true`.

use std::collections::{BTreeMap, BTreeSet};

use crate::limits::RUNTIME_CONFIG_BYTES_MAX;
use crate::versions::{parse as parse_version, Stability};

/// Resolved enablement of group/versions and individual resources.
#[derive(Debug, Clone, Default)]
pub(crate) struct Enablement {
    versions: BTreeMap<(String, String), bool>,
    resources: BTreeMap<(String, String, String), bool>,
    /// Group/versions switched on by name (`<group>/<version>=true`), not by a wildcard.
    named_versions: BTreeSet<(String, String)>,
}

impl Enablement {
    /// Whether `group/version/plural` is served.
    pub(crate) fn resource_enabled(&self, group: &str, version: &str, plural: &str) -> bool {
        let key = (group.to_owned(), version.to_owned(), plural.to_owned());
        match self.resources.get(&key) {
            Some(on) => *on,
            None => self.version_enabled(group, version),
        }
    }

    /// The group/versions switched on by name (`<group>/<version>=true`).
    pub(crate) fn named_versions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.named_versions
            .iter()
            .map(|(g, v)| (g.as_str(), v.as_str()))
    }

    /// Whether `<group>/<version>=true` was given.
    pub(crate) fn named_version(&self, group: &str, version: &str) -> bool {
        self.named_versions
            .contains(&(group.to_owned(), version.to_owned()))
    }

    /// Whether `<group>/<version>/<plural>=true` was given.
    pub(crate) fn named_resource(&self, group: &str, version: &str, plural: &str) -> bool {
        let key = (group.to_owned(), version.to_owned(), plural.to_owned());
        self.resources.get(&key) == Some(&true)
    }

    fn version_enabled(&self, group: &str, version: &str) -> bool {
        let key = (group.to_owned(), version.to_owned());
        self.versions.get(&key).copied().unwrap_or(false)
    }
}

/// Which stabilities a wildcard key selects.
fn matcher(key: &str) -> Option<fn(Stability) -> bool> {
    match key {
        "api/all" => Some(|_| true),
        "api/ga" => Some(|s| s == Stability::Ga),
        "api/beta" => Some(|s| s == Stability::Beta),
        "api/alpha" => Some(|s| s == Stability::Alpha),
        _ => None,
    }
}
const MATCHER_ORDER: [&str; 4] = ["api/all", "api/ga", "api/beta", "api/alpha"];

/// Splits `k1=v1,k2,k3=v3` into a map; later duplicates win, like the flag parser.
fn split_pairs(input: &str) -> BTreeMap<String, String> {
    let mut pairs = BTreeMap::new();
    for item in input.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        pairs.insert(k.trim().to_owned(), v.trim().to_owned());
    }
    pairs
}

/// Go's `strconv.ParseBool`, with an empty value meaning `true`.
fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "" | "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "invalid value of {key}: {value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
        )),
    }
}

/// A parsed `<group>/<version>[/<resource>]` key.
struct Target {
    group: String,
    version: String,
    resource: Option<String>,
}

fn parse_target(key: &str) -> Result<Option<Target>, String> {
    let tokens: Vec<&str> = key.split('/').collect();
    let (group, version) = match tokens.as_slice() {
        ["api", "v1", ..] => ("", "v1"),
        [g, v] | [g, v, _] => (*g, *v),
        _ => return Ok(None),
    };
    let resource = match tokens.as_slice() {
        [_, _, r] if r.to_lowercase() != *r => {
            return Err(format!(
                "invalid key {key}: group/version/resource and resource is always lowercase plural, not {r:?}"
            ))
        }
        [_, _, r] => Some((*r).to_owned()),
        _ => None,
    };
    Ok(Some(Target {
        group: group.to_owned(),
        version: version.to_owned(),
        resource,
    }))
}

/// Resolves a `--runtime-config` value against the known `(group, version)` pairs (the
/// server always resolves with its emulation settings; the tests use this shorthand).
#[cfg(test)]
pub(crate) fn resolve(input: &str, known: &BTreeSet<(&str, &str)>) -> Result<Enablement, String> {
    resolve_emulating(input, known, false)
}

/// As [`resolve`]; with `forward_compatible` (`--emulation-forward-compatible`) every beta or
/// GA version or resource switched on also switches on its group's higher-priority versions
/// (of that resource), and then the keys naming versions and resources are applied again so
/// that what they switch off stays off.
pub(crate) fn resolve_emulating(
    input: &str,
    known: &BTreeSet<(&str, &str)>,
    forward_compatible: bool,
) -> Result<Enablement, String> {
    if input.len() > RUNTIME_CONFIG_BYTES_MAX {
        return Err(format!(
            "runtime-config is longer than {RUNTIME_CONFIG_BYTES_MAX} bytes"
        ));
    }
    let pairs = split_pairs(input);
    let mut out = Enablement::default();
    for (g, v) in known {
        let on = crate::versions::is_ga(v);
        out.versions.insert(((*g).to_owned(), (*v).to_owned()), on);
    }
    apply_matchers(&pairs, known, &mut out)?;
    apply_targets(&pairs, known, &mut out)?;
    if forward_compatible {
        forward(&mut out, known);
        apply_targets(&pairs, known, &mut out)?;
    }
    Ok(out)
}

/// The versions of `group` preferred to `version` (higher priority), alpha ones excepted
/// from being the starting point.
fn preferred_to<'a>(
    known: &'a BTreeSet<(&str, &str)>,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'a str> + 'a {
    let alpha = parse_version(version).is_some_and(|v| v.stability == Stability::Alpha);
    known
        .iter()
        .filter(move |(g, v)| {
            !alpha
                && *g == group
                && crate::versions::compare_preferred_first(v, version) == std::cmp::Ordering::Less
        })
        .map(|(_, v)| *v)
}

/// `--emulation-forward-compatible`'s widening of what is switched on.
fn forward(out: &mut Enablement, known: &BTreeSet<(&str, &str)>) {
    let on_versions: Vec<(String, String)> = out
        .versions
        .iter()
        .filter(|(_, on)| **on)
        .map(|(k, _)| k.clone())
        .collect();
    for (g, v) in &on_versions {
        for higher in preferred_to(known, g, v) {
            out.versions.insert((g.clone(), higher.to_owned()), true);
        }
    }
    let on_resources: Vec<(String, String, String)> = out
        .resources
        .iter()
        .filter(|(_, on)| **on)
        .map(|(k, _)| k.clone())
        .collect();
    for (g, v, r) in &on_resources {
        for higher in preferred_to(known, g, v) {
            out.resources
                .insert((g.clone(), higher.to_owned(), r.clone()), true);
        }
    }
}

fn apply_matchers(
    pairs: &BTreeMap<String, String>,
    known: &BTreeSet<(&str, &str)>,
    out: &mut Enablement,
) -> Result<(), String> {
    for key in MATCHER_ORDER {
        let Some(value) = pairs.get(key) else {
            continue;
        };
        let on = match value.as_str() {
            "" | "true" => true,
            "false" => false,
            _ => return Err(format!("invalid value {key}={value}")),
        };
        let select = matcher(key).expect("MATCHER_ORDER holds only matcher keys");
        for (g, v) in known {
            if parse_version(v).is_some_and(|kv| select(kv.stability)) {
                out.versions.insert(((*g).to_owned(), (*v).to_owned()), on);
            }
        }
    }
    Ok(())
}

fn apply_targets(
    pairs: &BTreeMap<String, String>,
    known: &BTreeSet<(&str, &str)>,
    out: &mut Enablement,
) -> Result<(), String> {
    let mut resource_prefs = Vec::new();
    for (key, value) in pairs {
        if matcher(key).is_some() {
            continue;
        }
        let Some(t) = parse_target(key)? else {
            continue;
        };
        if !known.iter().any(|(g, _)| *g == t.group) {
            continue; // a group this server does not serve: ignored, as upstream does
        }
        if !known.contains(&(t.group.as_str(), t.version.as_str())) {
            let gv = if t.group.is_empty() {
                t.version.clone()
            } else {
                format!("{}/{}", t.group, t.version)
            };
            return Err(format!("group version {gv} that has not been registered"));
        }
        let on = parse_bool(key, value)?;
        match t.resource {
            None => {
                out.resources
                    .retain(|(g, v, _), _| !(*g == t.group && *v == t.version));
                if on {
                    out.named_versions
                        .insert((t.group.clone(), t.version.clone()));
                } else {
                    out.named_versions
                        .remove(&(t.group.clone(), t.version.clone()));
                }
                out.versions.insert((t.group, t.version), on);
            }
            Some(r) => resource_prefs.push(((t.group, t.version, r), on)),
        }
    }
    out.resources.extend(resource_prefs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> BTreeSet<(&'static str, &'static str)> {
        [
            ("", "v1"),
            ("batch", "v1"),
            ("storage.k8s.io", "v1"),
            ("storage.k8s.io", "v1beta1"),
            ("storage.k8s.io", "v1alpha1"),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn resolves_enablement() {
        // (runtime-config, group, version, resource, served)
        let cases = [
            ("", "batch", "v1", "jobs", true),
            (
                "",
                "storage.k8s.io",
                "v1beta1",
                "volumeattributesclasses",
                false,
            ),
            ("batch/v1=false", "batch", "v1", "jobs", false),
            ("batch/v1=false", "", "v1", "pods", true),
            ("api/all=false", "", "v1", "pods", false),
            ("api/all=false,api/v1=true", "", "v1", "pods", true),
            ("api/all=false,v1", "", "v1", "pods", false), // a bare `v1` key is ignored upstream
            ("api/v1/pods=false", "", "v1", "pods", false),
            (
                "api/beta=true",
                "storage.k8s.io",
                "v1beta1",
                "volumeattributesclasses",
                true,
            ),
            (
                "api/beta=true",
                "storage.k8s.io",
                "v1alpha1",
                "volumeattributesclasses",
                false,
            ),
            (
                "api/alpha",
                "storage.k8s.io",
                "v1alpha1",
                "volumeattributesclasses",
                true,
            ),
            ("batch/v1/jobs=false", "batch", "v1", "jobs", false),
            ("batch/v1/jobs=false", "batch", "v1", "cronjobs", true),
            (
                "storage.k8s.io/v1beta1/volumeattributesclasses=true",
                "storage.k8s.io",
                "v1beta1",
                "volumeattributesclasses",
                true,
            ),
            ("api/all=false,batch/v1/jobs", "batch", "v1", "jobs", true),
            (
                "api/all=false,batch/v1/jobs",
                "batch",
                "v1",
                "cronjobs",
                false,
            ),
            ("unknown.example.com/v1=true", "batch", "v1", "jobs", true),
            (" batch/v1 = f , ,", "batch", "v1", "jobs", false),
        ];
        for (cfg, g, v, r, want) in cases {
            let e = resolve(cfg, &known()).unwrap_or_else(|err| panic!("{cfg}: {err}"));
            assert_eq!(e.resource_enabled(g, v, r), want, "{cfg} -> {g}/{v}/{r}");
        }
    }

    #[test]
    fn rejects_bad_input() {
        let cases = [
            (
                "batch/v2=true",
                "group version batch/v2 that has not been registered",
            ),
            ("batch/v1=maybe", "invalid value of batch/v1: maybe"),
            ("api/all=yes", "invalid value api/all=yes"),
            ("batch/v1/Jobs=false", "resource is always lowercase plural"),
        ];
        for (cfg, want) in cases {
            let err = resolve(cfg, &known()).expect_err(cfg);
            assert!(err.contains(want), "{cfg}: {err}");
        }
        let long = "a".repeat(RUNTIME_CONFIG_BYTES_MAX + 1);
        assert!(resolve(&long, &known()).is_err());
    }
}
