//! The public description of one served resource.

/// One resource at one group/version, as served (and listed in discovery): built in, or added
/// at run time (its names then interned: see [`crate::INTERNED_BYTES_MAX`]). Shared as
/// `Arc<ResourceInfo>` by the snapshots that serve it and whoever holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; empty for the core group.
    pub group: &'static str,
    /// API version, e.g. `v1`, `v2`.
    pub version: &'static str,
    /// Kind of the objects, e.g. `Pod`.
    pub kind: &'static str,
    /// Plural resource name used in URLs, e.g. `pods`.
    pub plural: &'static str,
    /// Singular resource name, e.g. `pod`.
    pub singular: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Verbs the collection/object paths accept, in discovery order (sorted for built-ins,
    /// as upstream lists them; CRDs list theirs unsorted).
    pub verbs: &'static [&'static str],
    /// Short names (`po`, `deploy`).
    pub short_names: &'static [&'static str],
    /// Categories (`all`, `api-extensions`).
    pub categories: &'static [&'static str],
    /// Subresources, in discovery order (sorted by name for built-ins).
    pub subresources: Vec<SubresourceInfo>,
}

/// A subresource below a resource, e.g. `pods/status` or `deployments/scale`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubresourceInfo {
    /// Path segment after the object name, e.g. `status`.
    pub name: &'static str,
    /// Group of the request/response kind (the parent's group unless overridden, e.g. `autoscaling`).
    pub group: &'static str,
    /// Version of the request/response kind (the parent's unless overridden, e.g. `v1`).
    pub version: &'static str,
    /// Request/response kind, e.g. `Pod`, `Scale`, `PodExecOptions`.
    pub kind: &'static str,
    /// Verbs the subresource path accepts, in discovery order.
    pub verbs: &'static [&'static str],
}

impl ResourceInfo {
    /// `apiVersion` of the objects: `v1` for core, `<group>/<version>` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The subresource named `name`, if this resource has it.
    pub fn subresource(&self, name: &str) -> Option<&SubresourceInfo> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether the resource accepts `verb` (e.g. `list`, `watch`).
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }
}
