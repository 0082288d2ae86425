//! The catalog: one immutable snapshot of every served resource, indexed, with its discovery
//! documents built once.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::builtin::{builtin_types, BuiltinType};
use crate::change::{self, CatalogChange};
use crate::data::{self, ResourceData};
use crate::discovery::{self, Documents, Served};
use crate::emulation::Emulation;
use crate::error::CatalogError;
use crate::groups;
use crate::runtime_config;
use crate::storage::{self, StorageVersion, StorageVersions};
use crate::types::{ResourceInfo, SubresourceInfo};
use crate::versions;

/// Address advertised in `/api`'s `serverAddressByClientCIDRs` until the server sets its own.
pub const DEFAULT_SERVER_ADDRESS: &str = "127.0.0.1:6443";

/// A per-request index: `(group, version, plural or kind)` to a position in `resources`.
type Index =
    HashMap<(&'static str, &'static str, &'static str), usize, foldhash::fast::RandomState>;

/// Source of snapshot generations: process-wide, so no two snapshots with different resources
/// ever share a generation, whichever snapshot they were built from.
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// An APIService for a group version this server serves itself (see
/// [`Catalog::local_apiservices`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalApiService {
    pub group: &'static str,
    pub version: &'static str,
    pub group_priority: i32,
    pub version_priority: i32,
    /// A built-in group version (registered once at start upstream); else a custom
    /// resource's (kept in step with the definitions).
    pub builtin: bool,
}

/// A snapshot of every resource this server serves, plus its discovery documents.
///
/// Invariants: `resources` holds only served resources, ordered as discovery lists them (group
/// order, then version preference, then plural name); every served `(group, plural)` has a
/// storage version. A snapshot never changes: [`Catalog::with_changes`] builds a new one,
/// with a higher generation.
#[derive(Debug, Clone)]
pub struct Catalog {
    generation: u64,
    resources: Vec<Arc<ResourceInfo>>,
    by_path: Index,
    by_kind: Index,
    storage: StorageVersions,
    server_address: String,
    docs: Documents,
}

impl Catalog {
    /// Builds the catalog for a kube-apiserver `--runtime-config` value (`batch/v1=false`,
    /// `api/all=false`, `api/beta=true`, `<group>/<version>/<resource>=true`, ...); an empty
    /// string gives v1.36's defaults. Invalid input gives `Err(message)`.
    pub fn new(runtime_config: &str) -> Result<Catalog, String> {
        Catalog::emulating(runtime_config, Emulation::default())
    }

    /// As [`Catalog::new`], for a server emulating an earlier release (`--emulated-version`),
    /// as upstream decides it: built-in kinds introduced after the emulated release are not
    /// served, unless `--emulation-forward-compatible` is on and a lower-priority beta or GA
    /// version of the same resource is served, or `--runtime-config-emulation-forward-compatible`
    /// is on and `--runtime-config` names the resource or its version. Naming such a resource,
    /// or a version none of whose resources is served, is otherwise an error (upstream's
    /// messages).
    pub fn emulating(runtime_config: &str, emulation: Emulation) -> Result<Catalog, String> {
        let all = all_resources();
        let known: BTreeSet<(&str, &str)> = all.iter().map(|r| (r.group, r.version)).collect();
        let enablement =
            runtime_config::resolve(runtime_config, &known, emulation.forward_compatible)?;
        let storage = storage::builtin(&all);
        // Each group's versions from the lowest priority up: a resource served in a beta or GA
        // version makes it "served below" for the versions preferred to it.
        let mut order: Vec<&ResourceInfo> = all.iter().collect();
        order.sort_by(|a, b| {
            a.group
                .cmp(b.group)
                .then_with(|| versions::compare_preferred_first(b.version, a.version))
        });
        let mut served_below: BTreeSet<(&str, &str)> = BTreeSet::new();
        let mut keep: BTreeSet<(&str, &str, &str)> = BTreeSet::new();
        for r in order {
            if !enablement.resource_enabled(r.group, r.version, r.plural) {
                continue;
            }
            let serve = match emulation.introduced_later(r.group, r.version, r.kind) {
                None => true,
                Some(introduced) => {
                    let named = enablement.named_resource(r.group, r.version, r.plural);
                    let forward =
                        emulation.forward_compatible && served_below.contains(&(r.group, r.plural));
                    let by_name = emulation.runtime_config_forward_compatible
                        && (named || enablement.named_version(r.group, r.version));
                    if forward || by_name {
                        true
                    } else if named {
                        return Err(format!(
                            "cannot enable resource {}/{}, Resource={} in runtime-config because it is introduced at 1.{introduced} after the current version 1.{}. Consider setting --runtime-config-emulation-forward-compatible=true",
                            r.group, r.version, r.plural, emulation.emulated_minor
                        ));
                    } else {
                        false
                    }
                }
            };
            if serve {
                keep.insert((r.group, r.version, r.plural));
                if !versions::is_alpha(r.version) {
                    served_below.insert((r.group, r.plural));
                }
            }
        }
        for (group, version) in enablement.named_versions() {
            if !keep.iter().any(|(g, v, _)| *g == group && *v == version) {
                let gv = if group.is_empty() {
                    version.to_owned()
                } else {
                    format!("{group}/{version}")
                };
                return Err(format!(
                    "cannot enable version {gv} in runtime-config because all the resources have been introduced after the current version 1.{}. Consider setting --runtime-config-emulation-forward-compatible=true",
                    emulation.emulated_minor
                ));
            }
        }
        let served = all
            .into_iter()
            .filter(|r| keep.contains(&(r.group, r.version, r.plural)))
            .map(Arc::new)
            .collect();
        Ok(Catalog::build(
            served,
            storage,
            DEFAULT_SERVER_ADDRESS.to_owned(),
        ))
    }

    /// Indexes `served` (in any order) and builds its documents.
    fn build(
        mut served: Vec<Arc<ResourceInfo>>,
        storage: StorageVersions,
        server_address: String,
    ) -> Catalog {
        let groups = groups::served_groups(served.iter().map(|r| &**r));
        let rank = |r: &ResourceInfo| -> (usize, usize) {
            let g = groups
                .iter()
                .position(|g| g.name == r.group)
                .unwrap_or(usize::MAX);
            let v = groups
                .get(g)
                .and_then(|g| g.versions.iter().position(|v| *v == r.version));
            (g, v.unwrap_or(usize::MAX))
        };
        served.sort_by_cached_key(|r| (rank(r), r.plural));
        let mut by_path = Index::with_capacity_and_hasher(served.len(), Default::default());
        let mut by_kind = Index::with_capacity_and_hasher(served.len(), Default::default());
        for (i, r) in served.iter().enumerate() {
            by_path.insert((r.group, r.version, r.plural), i);
            by_kind.insert((r.group, r.version, r.kind), i);
        }
        let docs = discovery::build_all(
            &Served {
                groups: &groups,
                resources: &served,
                storage: &storage,
            },
            &server_address,
        );
        Catalog {
            generation: NEXT_GENERATION.fetch_add(1, Ordering::Relaxed),
            resources: served,
            by_path,
            by_kind,
            storage,
            server_address,
            docs,
        }
    }

    /// The next snapshot: this one's resources with `change` applied (removals, then
    /// additions), its documents rebuilt. Refused changes leave nothing behind but interned
    /// names (see [`crate::INTERNED_BYTES_MAX`]).
    pub fn with_changes(&self, change: &CatalogChange) -> Result<Catalog, CatalogError> {
        let next = change::plan(&self.resources, &self.storage, change)?;
        Ok(Catalog::build(
            next.resources,
            next.storage,
            self.server_address.clone(),
        ))
    }

    /// Identifies this snapshot's set of resources, for caches derived from it (the OpenAPI
    /// documents): unique in the process and strictly increasing in build order, so every
    /// snapshot a live catalog swaps in has a higher generation than the one it replaces.
    /// [`Catalog::with_server_address`] and `clone` keep it (the resources are the same).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Sets the address `/api` advertises for all clients (`host:port`); snapshots built from
    /// this one keep it.
    pub fn with_server_address(mut self, address: &str) -> Catalog {
        self.docs.api_versions = discovery::api_versions_doc(address);
        self.server_address = address.to_owned();
        self
    }

    /// The served resource at `group/version/plural` (core group: `""`).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        let i = self.by_path.get(&(group, version, plural))?;
        self.resources.get(*i)
    }

    /// The served resource whose objects have `kind` at `group/version`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<ResourceInfo>> {
        let i = self.by_kind.get(&(group, version, kind))?;
        self.resources.get(*i)
    }

    /// Every served resource, in discovery order.
    pub fn resources(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.resources.iter()
    }

    /// Storage key prefix shared by all versions of one resource: `/<group or core>/<plural>/`
    /// (the other group's for a resource stored as that group's: events.k8s.io events).
    pub fn storage_prefix(&self, info: &ResourceInfo) -> String {
        let group = storage::stored_group(info.group, info.plural);
        storage::prefix(group, info.plural)
    }

    /// Storage version of a served resource (what its objects are persisted as and its
    /// `storageVersionHash` is computed from).
    pub fn storage_version(&self, info: &ResourceInfo) -> Option<StorageVersion> {
        self.storage.get(&(info.group, info.plural)).copied()
    }

    /// `GET /api`: the APIVersions document.
    pub fn api_versions(&self) -> Vec<u8> {
        self.docs.api_versions.clone()
    }

    /// `GET /apis`: the APIGroupList document.
    pub fn api_group_list(&self) -> Vec<u8> {
        self.docs.group_list.clone()
    }

    /// The APIServices upstream registers for the group versions served here: one per group
    /// version, in discovery order, with its priorities (built-in ones from upstream's table,
    /// others with the CRD defaults).
    pub fn local_apiservices(&self) -> Vec<LocalApiService> {
        let mut out: Vec<LocalApiService> = Vec::new();
        for r in &self.resources {
            if out
                .iter()
                .any(|s| s.group == r.group && s.version == r.version)
            {
                continue;
            }
            let builtin = groups::builtin_priorities(r.group, r.version);
            let (group_priority, version_priority) = builtin.unwrap_or((
                groups::RUNTIME_GROUP_PRIORITY,
                groups::RUNTIME_VERSION_PRIORITY,
            ));
            out.push(LocalApiService {
                group: r.group,
                version: r.version,
                group_priority,
                version_priority,
                builtin: builtin.is_some(),
            });
        }
        out
    }

    /// `GET /apis/<group>`: the APIGroup document, if the group is served.
    pub fn api_group(&self, group: &str) -> Option<Vec<u8>> {
        self.docs.groups.get(group).cloned()
    }

    /// `GET /api/v1` (group `""`) or `GET /apis/<group>/<version>`: the APIResourceList.
    pub fn resource_list(&self, group: &str, version: &str) -> Option<Vec<u8>> {
        self.docs
            .resource_lists
            .get(&(group.to_owned(), version.to_owned()))
            .cloned()
    }

    /// Aggregated discovery (`APIGroupDiscoveryList`) for `/api` (`core`) or `/apis`, in
    /// `apidiscovery.k8s.io/<discovery_version>` (`v2` or `v2beta1`; anything else is served as `v2`).
    pub fn aggregated(&self, core: bool, discovery_version: &str) -> Vec<u8> {
        let beta = discovery_version == "v2beta1";
        let doc = match (core, beta) {
            (true, false) => &self.docs.aggregated_core_v2,
            (true, true) => &self.docs.aggregated_core_v2beta1,
            (false, false) => &self.docs.aggregated_apis_v2,
            (false, true) => &self.docs.aggregated_apis_v2beta1,
        };
        doc.clone()
    }
}

/// Joins the type bindings with the discovery data table: one `ResourceInfo` per type.
fn all_resources() -> Vec<ResourceInfo> {
    builtin_types()
        .into_iter()
        .filter_map(|t| data::resource_data(t.group, t.plural).map(|d| resource_info(t, d)))
        .collect()
}

fn resource_info(t: BuiltinType, d: &ResourceData) -> ResourceInfo {
    let subresources = d
        .subresources
        .iter()
        .map(|s| SubresourceInfo {
            name: s.name,
            group: if s.group.is_empty() { t.group } else { s.group },
            version: if s.version.is_empty() {
                t.version
            } else {
                s.version
            },
            kind: if s.kind.is_empty() { t.kind } else { s.kind },
            verbs: s.verbs,
        })
        .collect();
    ResourceInfo {
        group: t.group,
        version: t.version,
        kind: t.kind,
        plural: t.plural,
        singular: d.singular,
        namespaced: t.namespaced,
        verbs: d.verbs,
        short_names: d.short_names,
        categories: d.categories,
        subresources,
    }
}
