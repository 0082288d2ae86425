//! Changes to the served resources: which resources a new snapshot serves, given the old
//! snapshot's and a change (removals first, then additions), and why a change is refused.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::builtin;
use crate::error::CatalogError;
use crate::intern;
use crate::limits::SERVED_RESOURCES_MAX;
use crate::spec::{ResourceId, ResourceSpec};
use crate::storage::{StorageVersion, StorageVersions};
use crate::types::ResourceInfo;

/// One atomic change: readers of a live catalog see all of it or none of it. Removing and
/// adding the same resource in one change replaces it (e.g. a CRD whose versions, verbs or
/// storage version changed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogChange {
    /// Resources to stop serving; each must be served and not built in.
    pub remove: Vec<ResourceId>,
    /// Resources to start serving, after the removals.
    pub add: Vec<ResourceSpec>,
}

impl CatalogChange {
    /// A change that only adds.
    pub fn add(resources: Vec<ResourceSpec>) -> CatalogChange {
        CatalogChange {
            remove: Vec::new(),
            add: resources,
        }
    }

    /// A change that only removes.
    pub fn remove(resources: Vec<ResourceId>) -> CatalogChange {
        CatalogChange {
            remove: resources,
            add: Vec::new(),
        }
    }
}

/// What the next snapshot serves.
pub(crate) struct Planned {
    /// Served resources, in no particular order.
    pub resources: Vec<Arc<ResourceInfo>>,
    pub storage: StorageVersions,
}

/// Applies `change` to the served `current` resources and their `storage` versions.
pub(crate) fn plan(
    current: &[Arc<ResourceInfo>],
    storage: &StorageVersions,
    change: &CatalogChange,
) -> Result<Planned, CatalogError> {
    let mut kept = remove(current, &change.remove)?;
    for spec in &change.add {
        spec.validate()?;
        if builtin::is_builtin(&spec.group, &spec.plural) {
            return Err(CatalogError::BuiltIn {
                group: spec.group.clone(),
                plural: spec.plural.clone(),
            });
        }
    }
    check_collisions(&kept, &change.add)?;
    check_consistency(&kept, storage, &change.add)?;
    if kept.len() + change.add.len() > SERVED_RESOURCES_MAX {
        return Err(CatalogError::TooManyResources {
            max: SERVED_RESOURCES_MAX,
        });
    }
    let added = intern::with_global(|interner| {
        change
            .add
            .iter()
            .map(|spec| spec.intern(interner))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let mut storage = storage.clone();
    let still_served: HashSet<(&str, &str)> = kept.iter().map(|r| (r.group, r.plural)).collect();
    storage.retain(|(g, p), _| builtin::is_builtin(g, p) || still_served.contains(&(*g, *p)));
    for (info, version) in added {
        storage.insert((info.group, info.plural), version);
        kept.push(Arc::new(info));
    }
    Ok(Planned {
        resources: kept,
        storage,
    })
}

/// `current` without the removed resources.
fn remove(
    current: &[Arc<ResourceInfo>],
    ids: &[ResourceId],
) -> Result<Vec<Arc<ResourceInfo>>, CatalogError> {
    let mut gone: HashSet<(&str, &str, &str)> = HashSet::new();
    for id in ids {
        if builtin::is_builtin(&id.group, &id.plural) {
            return Err(CatalogError::BuiltIn {
                group: id.group.clone(),
                plural: id.plural.clone(),
            });
        }
        let key = (id.group.as_str(), id.version.as_str(), id.plural.as_str());
        let served = current
            .iter()
            .any(|r| (r.group, r.version, r.plural) == key);
        if !served || !gone.insert(key) {
            return Err(CatalogError::NotServed {
                group: id.group.clone(),
                version: id.version.clone(),
                plural: id.plural.clone(),
            });
        }
    }
    Ok(current
        .iter()
        .filter(|r| !gone.contains(&(r.group, r.version, r.plural)))
        .cloned()
        .collect())
}

/// Refuses an addition whose path or kind is served, or taken by an earlier addition.
fn check_collisions(kept: &[Arc<ResourceInfo>], add: &[ResourceSpec]) -> Result<(), CatalogError> {
    let mut paths: HashSet<(&str, &str, &str)> = HashSet::new();
    let mut kinds: HashMap<(&str, &str, &str), &str> = HashMap::new();
    for r in kept {
        paths.insert((r.group, r.version, r.plural));
        kinds.insert((r.group, r.version, r.kind), r.plural);
    }
    for s in add {
        if !paths.insert((&s.group, &s.version, &s.plural)) {
            return Err(CatalogError::PathTaken {
                group: s.group.clone(),
                version: s.version.clone(),
                plural: s.plural.clone(),
            });
        }
        if let Some(plural) = kinds.insert((&s.group, &s.version, &s.kind), &s.plural) {
            return Err(CatalogError::KindTaken {
                group: s.group.clone(),
                version: s.version.clone(),
                kind: s.kind.clone(),
                plural: plural.to_owned(),
            });
        }
    }
    Ok(())
}

/// All served versions of one group/resource share its storage prefix, so they must agree on
/// kind, scope and storage version (served ones and additions alike).
fn check_consistency(
    kept: &[Arc<ResourceInfo>],
    storage: &StorageVersions,
    add: &[ResourceSpec],
) -> Result<(), CatalogError> {
    // (group, plural) -> (kind, namespaced, storage version) of the first version seen.
    let mut seen: HashMap<(&str, &str), (&str, bool, &str)> = HashMap::new();
    for r in kept {
        let stored = storage
            .get(&(r.group, r.plural))
            .map_or("", |s: &StorageVersion| s.version);
        seen.entry((r.group, r.plural))
            .or_insert((r.kind, r.namespaced, stored));
    }
    for s in add {
        let mine = (s.kind.as_str(), s.namespaced, s.storage_version.as_str());
        let theirs = *seen.entry((&s.group, &s.plural)).or_insert(mine);
        let reason = if theirs.0 != mine.0 {
            format!("kind {} and {}", theirs.0, mine.0)
        } else if theirs.1 != mine.1 {
            "namespaced and cluster-scoped".to_owned()
        } else if theirs.2 != mine.2 {
            format!("storage version {} and {}", theirs.2, mine.2)
        } else {
            continue;
        };
        return Err(CatalogError::Inconsistent {
            group: s.group.clone(),
            plural: s.plural.clone(),
            reason,
        });
    }
    Ok(())
}
