//! Which groups and versions are served, and the order discovery lists them in.
//!
//! Upstream orders groups by their APIServices' `groupPriorityMinimum` (highest first) and the
//! versions of a group by `versionPriority` (highest first, then Kubernetes version order).
//! Ties between groups break differently in the two discovery forms: the legacy `/apis`
//! (`APIGroupList`) sorts APIServices by name, `<version>.<group>`, and lists each group where
//! its first APIService falls; aggregated discovery breaks ties on the group name. The two
//! orders agree for the built-in groups, but can differ for groups added at run time.

use std::cmp::Ordering;

use crate::data;
use crate::types::ResourceInfo;
use crate::versions;

/// `groupPriorityMinimum` of a group that is not built in: what upstream's CRD registration
/// gives every CRD group's APIService ("CRDs should have relatively low priority"), so such
/// groups are listed after every built-in group.
pub(crate) const RUNTIME_GROUP_PRIORITY: i32 = 1000;

/// `versionPriority` of a version that is not built in: what upstream's CRD registration
/// gives every CRD version, so a run-time group's versions fall back to Kubernetes version
/// order (`v2` > `v1` > `v1beta1` ...).
pub(crate) const RUNTIME_VERSION_PRIORITY: i32 = 100;

/// One served group with its served versions, most preferred first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupVersions {
    pub name: &'static str,
    pub versions: Vec<&'static str>,
}

/// Served groups in legacy `/apis` order, each with its versions most preferred first.
pub(crate) fn served_groups<'a>(
    served: impl IntoIterator<Item = &'a ResourceInfo>,
) -> Vec<GroupVersions> {
    let mut groups: Vec<GroupVersions> = Vec::new();
    for r in served {
        match groups.iter_mut().find(|g| g.name == r.group) {
            Some(g) if !g.versions.contains(&r.version) => g.versions.push(r.version),
            Some(_) => {}
            None => groups.push(GroupVersions {
                name: r.group,
                versions: vec![r.version],
            }),
        }
    }
    for g in &mut groups {
        g.versions.sort_by(|a, b| version_rank(g.name, a, b));
    }
    groups.sort_by_cached_key(legacy_rank);
    groups
}

/// The same groups in aggregated discovery's order.
pub(crate) fn aggregated_order(groups: &[GroupVersions]) -> Vec<&GroupVersions> {
    let mut out: Vec<&GroupVersions> = groups.iter().collect();
    out.sort_by_key(|g| (tier(g.name), -group_priority(g.name), g.name));
    out
}

fn priorities(group: &str) -> Option<&'static data::GroupPriority> {
    data::GROUP_PRIORITIES.iter().find(|(g, _, _)| *g == group)
}

/// A group's `groupPriorityMinimum`: the built-in table's, else upstream's CRD default.
fn group_priority(group: &str) -> i32 {
    priorities(group).map_or(RUNTIME_GROUP_PRIORITY, |(_, p, _)| *p)
}

/// A version's `versionPriority`: the built-in table's, else upstream's CRD default (a
/// run-time version in a built-in group gets it too, as its own APIService would).
pub(crate) fn version_priority(group: &str, version: &str) -> i32 {
    priorities(group)
        .and_then(|(_, _, vs)| vs.iter().find(|(v, _)| *v == version).map(|(_, p)| *p))
        .unwrap_or(RUNTIME_VERSION_PRIORITY)
}

/// The `groupPriorityMinimum` and `versionPriority` upstream registers a built-in group
/// version's APIService with; `None` for a version it has no priorities for (a custom
/// resource's, whose APIService gets the CRD defaults).
pub(crate) fn builtin_priorities(group: &str, version: &str) -> Option<(i32, i32)> {
    let (_, g, vs) = priorities(group)?;
    let (_, v) = vs.iter().find(|(v, _)| *v == version)?;
    Some((*g, *v))
}

/// Versions: higher `versionPriority` first, then Kubernetes version order.
fn version_rank(group: &str, a: &str, b: &str) -> Ordering {
    version_priority(group, b)
        .cmp(&version_priority(group, a))
        .then_with(|| versions::compare_preferred_first(a, b))
}

/// Core first, then the aggregator's own group, then everything else.
fn tier(group: &str) -> u8 {
    match group {
        "" => 0,
        data::AGGREGATOR_GROUP => 1,
        _ => 2,
    }
}

/// Legacy `/apis` order: by `groupPriorityMinimum` (highest first), then by the smallest
/// APIService name `<version>.<group>` among the group's APIServices of that priority (in a
/// built-in group, a version added at run time has the lower CRD priority and does not count).
fn legacy_rank(g: &GroupVersions) -> (u8, i32, String) {
    let builtin = priorities(g.name);
    let name = g
        .versions
        .iter()
        .filter(|v| builtin.is_none_or(|(_, _, vs)| vs.iter().any(|(bv, _)| bv == *v)))
        .map(|v| format!("{v}.{}", g.name))
        .min()
        .unwrap_or_default();
    (tier(g.name), -group_priority(g.name), name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::builtin_types;

    /// The run-time defaults must never decide a built-in group's or version's place: every
    /// built-in group/version has its own entry, except the aggregator's group, which its
    /// tier always lists first and which has one version.
    #[test]
    fn every_built_in_version_has_its_priorities() {
        for t in builtin_types() {
            if t.group == data::AGGREGATOR_GROUP {
                assert_eq!(t.version, "v1");
                continue;
            }
            let (_, _, versions) = priorities(t.group)
                .unwrap_or_else(|| panic!("group {:?} has no priority", t.group));
            assert!(
                versions.iter().any(|(v, _)| *v == t.version),
                "{}/{} has no versionPriority",
                t.group,
                t.version
            );
        }
    }
}
