//! The catalog: every served built-in resource, indexed, with memoized discovery documents.

use std::collections::{BTreeSet, HashMap};

use crate::builtin::{builtin_types, BuiltinType};
use crate::data::{self, ResourceData};
use crate::discovery::{self, Documents};
use crate::runtime_config::{self, Enablement};
use crate::types::{ResourceInfo, SubresourceInfo};
use crate::versions;

/// Address advertised in `/api`'s `serverAddressByClientCIDRs` until the server sets its own.
pub const DEFAULT_SERVER_ADDRESS: &str = "127.0.0.1:6443";

/// One served group with its served versions, most preferred first.
#[derive(Debug, Clone)]
pub(crate) struct GroupVersions {
    pub name: &'static str,
    pub versions: Vec<&'static str>,
}

/// Storage identity of a resource: the group/version/kind objects are persisted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StorageVersion {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
}

/// Every built-in resource type this server serves, plus its discovery documents.
///
/// Invariants: `resources` holds only enabled resources, ordered as discovery lists them (group
/// order, then version preference, then plural name); every served version appears in `groups`.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub(crate) resources: Vec<ResourceInfo>,
    by_path: HashMap<(&'static str, &'static str, &'static str), usize>,
    by_kind: HashMap<(&'static str, &'static str, &'static str), usize>,
    pub(crate) groups: Vec<GroupVersions>,
    storage: HashMap<(&'static str, &'static str), StorageVersion>,
    docs: Documents,
}

impl Catalog {
    /// Builds the catalog for a kube-apiserver `--runtime-config` value (`batch/v1=false`,
    /// `api/all=false`, `api/beta=true`, `<group>/<version>/<resource>=true`, ...); an empty
    /// string gives v1.32's defaults. Invalid input gives `Err(message)`.
    pub fn new(runtime_config: &str) -> Result<Catalog, String> {
        let all = all_resources();
        let known: BTreeSet<(&str, &str)> = all.iter().map(|r| (r.group, r.version)).collect();
        let enablement = runtime_config::resolve(runtime_config, &known)?;
        let storage = storage_versions(&all);
        let mut catalog = Catalog {
            resources: Vec::new(),
            by_path: HashMap::new(),
            by_kind: HashMap::new(),
            groups: Vec::new(),
            storage,
            docs: Documents::default(),
        };
        catalog.install(all, &enablement);
        catalog.docs = discovery::build_all(&catalog, DEFAULT_SERVER_ADDRESS);
        Ok(catalog)
    }

    /// Sets the address `/api` advertises for all clients (`host:port`).
    pub fn with_server_address(mut self, address: &str) -> Catalog {
        self.docs.api_versions = discovery::api_versions_doc(address);
        self
    }

    fn install(&mut self, all: Vec<ResourceInfo>, enablement: &Enablement) {
        let mut served: Vec<ResourceInfo> = all
            .into_iter()
            .filter(|r| enablement.resource_enabled(r.group, r.version, r.plural))
            .collect();
        self.groups = served_groups(&served);
        let rank = |r: &ResourceInfo| -> (usize, usize) {
            let g = self
                .groups
                .iter()
                .position(|g| g.name == r.group)
                .unwrap_or(usize::MAX);
            let v = self
                .groups
                .get(g)
                .and_then(|g| g.versions.iter().position(|v| *v == r.version));
            (g, v.unwrap_or(usize::MAX))
        };
        served.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.plural.cmp(b.plural)));
        for (i, r) in served.iter().enumerate() {
            self.by_path.insert((r.group, r.version, r.plural), i);
            self.by_kind.insert((r.group, r.version, r.kind), i);
        }
        self.resources = served;
    }

    /// The served resource at `group/version/plural` (core group: `""`).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        let i = self.by_path.get(&(group, version, plural))?;
        self.resources.get(*i)
    }

    /// The served resource whose objects have `kind` at `group/version`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&ResourceInfo> {
        let i = self.by_kind.get(&(group, version, kind))?;
        self.resources.get(*i)
    }

    /// Every served resource, in discovery order.
    pub fn resources(&self) -> impl Iterator<Item = &ResourceInfo> {
        self.resources.iter()
    }

    /// Storage key prefix shared by all versions of one resource: `/<group or core>/<plural>/`.
    pub fn storage_prefix(&self, info: &ResourceInfo) -> String {
        let group = if info.group.is_empty() {
            "core"
        } else {
            info.group
        };
        format!("/{group}/{}/", info.plural)
    }

    /// Storage version of a resource (what its `storageVersionHash` is computed from).
    pub(crate) fn storage_version(&self, info: &ResourceInfo) -> Option<StorageVersion> {
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

/// The storage version of each group/resource: its most preferred known version, unless the
/// resource is stored as another group's resource.
fn storage_versions(all: &[ResourceInfo]) -> HashMap<(&'static str, &'static str), StorageVersion> {
    let mut out: HashMap<(&'static str, &'static str), StorageVersion> = HashMap::new();
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

/// Served groups in `/apis` order, each with its served versions most preferred first.
fn served_groups(served: &[ResourceInfo]) -> Vec<GroupVersions> {
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
    groups.sort_by_key(group_rank);
    groups
}

fn priorities(group: &str) -> Option<&'static data::GroupPriority> {
    data::GROUP_PRIORITIES.iter().find(|(g, _, _)| *g == group)
}

/// Versions: higher `versionPriority` first, then Kubernetes version order.
fn version_rank(group: &str, a: &str, b: &str) -> std::cmp::Ordering {
    let prio = |v: &str| -> i32 {
        priorities(group)
            .and_then(|(_, _, vs)| vs.iter().find(|(name, _)| *name == v).map(|(_, p)| *p))
            .unwrap_or(0)
    };
    prio(b)
        .cmp(&prio(a))
        .then_with(|| versions::compare_preferred_first(a, b))
}

/// Groups: core, then the aggregator's own group, then by `groupPriorityMinimum` (highest
/// first) and the APIService name `<preferred version>.<group>`.
fn group_rank(g: &GroupVersions) -> (u8, i32, String) {
    let first = match g.name {
        "" => 0,
        data::AGGREGATOR_GROUP => 1,
        _ => 2,
    };
    let prio = priorities(g.name).map(|(_, p, _)| *p).unwrap_or(0);
    let name = format!("{}.{}", g.versions.first().copied().unwrap_or(""), g.name);
    (first, -prio, name)
}
