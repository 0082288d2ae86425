//! Where and as what each resource's objects are stored: the key prefix shared by all versions
//! of one group/resource, and the storage version (what `storageVersionHash` is computed from).

use std::collections::HashMap;

use crate::data;
use crate::types::ResourceInfo;
use crate::versions;

/// Storage identity of a resource: the group/version/kind its objects are persisted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StorageVersion {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
}

/// Storage version of each `(group, plural)`.
pub(crate) type StorageVersions = HashMap<(&'static str, &'static str), StorageVersion>;

/// Storage key prefix shared by all versions of one resource: `/<group or core>/<plural>/`.
pub(crate) fn prefix(group: &str, plural: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("/{group}/{plural}/")
}

/// The group whose key space holds `group`/`plural`'s objects (another group's for a
/// resource stored as that group's: `events.k8s.io` events are core events).
pub(crate) fn stored_group(group: &'static str, plural: &str) -> &'static str {
    data::STORAGE_ALIASES
        .iter()
        .find(|((g, p), _)| *g == group && *p == plural)
        .map_or(group, |(_, (sg, _, _))| sg)
}

/// The storage version of each built-in group/resource: its most preferred known version
/// (served or not: `--runtime-config` does not move data), unless the resource is stored as
/// another group's resource.
pub(crate) fn builtin(all: &[ResourceInfo]) -> StorageVersions {
    let mut out = StorageVersions::new();
    for r in all {
        let candidate = StorageVersion {
            group: r.group,
            version: r.version,
            kind: r.kind,
        };
        let slot = out.entry((r.group, r.plural)).or_insert(candidate);
        if versions::compare_preferred_first(r.version, slot.version).is_lt() {
            *slot = candidate;
        }
    }
    for ((g, p), (sg, sv, sk)) in data::STORAGE_ALIASES {
        if let Some(slot) = out.get_mut(&(*g, *p)) {
            *slot = StorageVersion {
                group: sg,
                version: sv,
                kind: sk,
            };
        }
    }
    out
}
