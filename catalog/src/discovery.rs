//! Discovery documents, shaped exactly as kube-apiserver serializes them (field order included).
//!
//! All documents are built once per catalog snapshot (they are requested on every kubectl
//! invocation) and handed out as bytes. This module sees only a view of what is served
//! ([`Served`]), never the catalog itself.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::data;
use crate::groups::{self, GroupVersions};
use crate::storage::StorageVersions;
use crate::types::ResourceInfo;

/// What the documents describe: the served groups (legacy `/apis` order) and resources
/// (discovery order), and the storage versions their hashes come from.
pub(crate) struct Served<'a> {
    pub groups: &'a [GroupVersions],
    pub resources: &'a [Arc<ResourceInfo>],
    pub storage: &'a StorageVersions,
}

/// Resources of each group/version, in discovery order.
struct ByGroupVersion<'a>(HashMap<(&'static str, &'static str), Vec<&'a ResourceInfo>>);

impl<'a> ByGroupVersion<'a> {
    fn new(resources: &'a [Arc<ResourceInfo>]) -> Self {
        let mut out: HashMap<_, Vec<&ResourceInfo>> = HashMap::new();
        for r in resources {
            out.entry((r.group, r.version)).or_default().push(r);
        }
        ByGroupVersion(out)
    }

    fn of(&self, group: &'static str, version: &'static str) -> &[&'a ResourceInfo] {
        self.0.get(&(group, version)).map_or(&[], |rs| rs)
    }
}

/// Memoized discovery documents (JSON bytes).
#[derive(Debug, Clone, Default)]
pub(crate) struct Documents {
    pub api_versions: Vec<u8>,
    pub group_list: Vec<u8>,
    pub groups: HashMap<String, Vec<u8>>,
    pub resource_lists: HashMap<(String, String), Vec<u8>>,
    pub aggregated_core_v2: Vec<u8>,
    pub aggregated_core_v2beta1: Vec<u8>,
    pub aggregated_apis_v2: Vec<u8>,
    pub aggregated_apis_v2beta1: Vec<u8>,
}

fn to_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("discovery documents are plain data and always serialize")
}

/// Builds every document for the served resources.
pub(crate) fn build_all(served: &Served<'_>, server_address: &str) -> Documents {
    let named: Vec<&GroupVersions> = served
        .groups
        .iter()
        .filter(|g| !g.name.is_empty())
        .collect();
    let by_gv = ByGroupVersion::new(served.resources);
    let mut docs = Documents {
        api_versions: api_versions_doc(server_address),
        group_list: to_bytes(&ApiGroupList {
            kind: "APIGroupList",
            api_version: "v1",
            groups: named.iter().map(|g| api_group(g, None)).collect(),
        }),
        ..Documents::default()
    };
    for g in &named {
        docs.groups
            .insert(g.name.to_owned(), to_bytes(&api_group(g, Some("APIGroup"))));
    }
    for g in served.groups {
        for v in &g.versions {
            let list = resource_list(served.storage, g.name, v, by_gv.of(g.name, v));
            docs.resource_lists
                .insert((g.name.to_owned(), (*v).to_owned()), to_bytes(&list));
        }
    }
    let aggregated_doc = |core: bool, api_version: &'static str| {
        to_bytes(&aggregated(served.groups, &by_gv, core, api_version))
    };
    docs.aggregated_core_v2 = aggregated_doc(true, "apidiscovery.k8s.io/v2");
    docs.aggregated_core_v2beta1 = aggregated_doc(true, "apidiscovery.k8s.io/v2beta1");
    docs.aggregated_apis_v2 = aggregated_doc(false, "apidiscovery.k8s.io/v2");
    docs.aggregated_apis_v2beta1 = aggregated_doc(false, "apidiscovery.k8s.io/v2beta1");
    docs
}

// ---- /api ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiVersions {
    kind: &'static str,
    versions: [&'static str; 1],
    #[serde(rename = "serverAddressByClientCIDRs")]
    server_address_by_client_cidrs: [ServerAddress; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerAddress {
    #[serde(rename = "clientCIDR")]
    client_cidr: &'static str,
    server_address: String,
}

/// `GET /api`. Upstream omits `apiVersion` from this document.
pub(crate) fn api_versions_doc(server_address: &str) -> Vec<u8> {
    to_bytes(&ApiVersions {
        kind: "APIVersions",
        versions: ["v1"],
        server_address_by_client_cidrs: [ServerAddress {
            client_cidr: "0.0.0.0/0",
            server_address: server_address.to_owned(),
        }],
    })
}

// ---- /apis, /apis/<group> ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiGroupList {
    kind: &'static str,
    api_version: &'static str,
    groups: Vec<ApiGroup>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiGroup {
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    name: &'static str,
    versions: Vec<GroupVersionForDiscovery>,
    preferred_version: GroupVersionForDiscovery,
}

#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
struct GroupVersionForDiscovery {
    group_version: String,
    version: &'static str,
}

fn api_group(g: &GroupVersions, kind: Option<&'static str>) -> ApiGroup {
    let gv = |v: &'static str| GroupVersionForDiscovery {
        group_version: format!("{}/{v}", g.name),
        version: v,
    };
    let versions: Vec<GroupVersionForDiscovery> = g.versions.iter().map(|v| gv(v)).collect();
    ApiGroup {
        kind,
        api_version: kind.map(|_| "v1"),
        name: g.name,
        preferred_version: versions[0].clone(),
        versions,
    }
}

// ---- /api/v1, /apis/<group>/<version> ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiResourceList {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    group_version: String,
    resources: Vec<ApiResource>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiResource {
    name: String,
    singular_name: &'static str,
    namespaced: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    group: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    version: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    short_names: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    categories: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    storage_version_hash: Option<String>,
}

/// `storageVersionHash`: base64 of the first 8 bytes of SHA-256 over `<group>/<version>/<kind>`.
pub(crate) fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn hash_for(storage: &StorageVersions, r: &ResourceInfo) -> Option<String> {
    if data::is_virtual(r.verbs) {
        return None;
    }
    let s = storage.get(&(r.group, r.plural))?;
    Some(storage_version_hash(s.group, s.version, s.kind))
}

fn api_resources(storage: &StorageVersions, r: &ResourceInfo) -> Vec<ApiResource> {
    let mut out = vec![ApiResource {
        name: r.plural.to_owned(),
        singular_name: r.singular,
        namespaced: r.namespaced,
        group: "",
        version: "",
        kind: r.kind,
        verbs: r.verbs,
        short_names: r.short_names,
        categories: r.categories,
        storage_version_hash: hash_for(storage, r),
    }];
    for s in &r.subresources {
        let foreign = s.group != r.group || s.version != r.version;
        out.push(ApiResource {
            name: format!("{}/{}", r.plural, s.name),
            singular_name: "",
            namespaced: r.namespaced,
            group: if foreign { s.group } else { "" },
            version: if foreign { s.version } else { "" },
            kind: s.kind,
            verbs: s.verbs,
            short_names: &[],
            categories: &[],
            storage_version_hash: None,
        });
    }
    out
}

fn resource_list(
    storage: &StorageVersions,
    group: &'static str,
    version: &'static str,
    resources: &[&ResourceInfo],
) -> ApiResourceList {
    ApiResourceList {
        kind: "APIResourceList",
        // The legacy `/api/v1` list carries no apiVersion; named groups' lists do.
        api_version: if group.is_empty() { None } else { Some("v1") },
        group_version: if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        },
        resources: resources
            .iter()
            .flat_map(|r| api_resources(storage, r))
            .collect(),
    }
}

// ---- aggregated discovery ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupDiscoveryList {
    kind: &'static str,
    api_version: &'static str,
    metadata: EmptyListMeta,
    items: Vec<GroupDiscovery>,
}

#[derive(Serialize)]
struct EmptyListMeta {}

#[derive(Serialize)]
struct GroupDiscovery {
    metadata: GroupMeta,
    versions: Vec<VersionDiscovery>,
}

/// An ObjectMeta with only a name (since v1.35 the zero `creationTimestamp` is omitted).
#[derive(Serialize)]
struct GroupMeta {
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'static str,
}

#[derive(Serialize)]
struct VersionDiscovery {
    version: &'static str,
    resources: Vec<ResourceDiscovery>,
    freshness: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDiscovery {
    resource: &'static str,
    response_kind: Gvk,
    scope: &'static str,
    singular_resource: &'static str,
    verbs: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    short_names: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    categories: &'static [&'static str],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    subresources: Vec<SubresourceDiscovery>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SubresourceDiscovery {
    subresource: &'static str,
    response_kind: Gvk,
    verbs: &'static [&'static str],
}

/// `responseKind`: group and version are empty unless they differ from the parent's.
#[derive(Serialize)]
struct Gvk {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
}

fn resource_discovery(r: &ResourceInfo) -> ResourceDiscovery {
    let subresources = r
        .subresources
        .iter()
        .map(|s| {
            let foreign = s.group != r.group || s.version != r.version;
            SubresourceDiscovery {
                subresource: s.name,
                response_kind: Gvk {
                    group: if foreign { s.group } else { "" },
                    version: if foreign { s.version } else { "" },
                    kind: s.kind,
                },
                verbs: s.verbs,
            }
        })
        .collect();
    ResourceDiscovery {
        resource: r.plural,
        response_kind: Gvk {
            group: "",
            version: "",
            kind: r.kind,
        },
        scope: if r.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        },
        singular_resource: r.singular,
        verbs: r.verbs,
        short_names: r.short_names,
        categories: r.categories,
        subresources,
    }
}

fn aggregated(
    groups: &[GroupVersions],
    by_gv: &ByGroupVersion<'_>,
    core: bool,
    api_version: &'static str,
) -> GroupDiscoveryList {
    let items = groups::aggregated_order(groups)
        .into_iter()
        .filter(|g| g.name.is_empty() == core)
        .map(|g| GroupDiscovery {
            metadata: GroupMeta { name: g.name },
            versions: g
                .versions
                .iter()
                .map(|v| VersionDiscovery {
                    version: v,
                    resources: by_gv
                        .of(g.name, v)
                        .iter()
                        .map(|r| resource_discovery(r))
                        .collect(),
                    freshness: "Current",
                })
                .collect(),
        })
        .collect();
    GroupDiscoveryList {
        kind: "APIGroupDiscoveryList",
        api_version,
        metadata: EmptyListMeta {},
        items,
    }
}
