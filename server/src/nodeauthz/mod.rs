//! The `Node` authorization mode: kube-apiserver v1.36's Node authorizer
//! (`plugin/pkg/auth/authorizer/node/node_authorizer.go`), pure: the decision over a
//! [`graph::Graph`] of what each node's pods relate it to, and the objects' fields that graph
//! is made of ([`objects`]). No I/O: the controller that keeps the graph current from the
//! registry's watches (`controllers/nodegraph.rs`) feeds it [`graph::Change`]s.
//!
//! Only node identities get an opinion: user `system:node:<name>` in group `system:nodes`
//! (any other request returns at once, on the user name's prefix, with no opinion and no
//! reason, so that the chain asks its next mode). For a node:
//!
//! - secrets, configmaps (get, list, watch of one named object), PVCs, PVs, ResourceClaims,
//!   VolumeAttachments (get), PVC status (update, patch), ServiceAccounts (get, and create of
//!   `token`), pods (get; list and watch of a named one) and ResourceSlices (get, update,
//!   patch, delete) are allowed when the graph relates the object to the node;
//! - its own Node (get, list, watch by name), its Lease in `kube-node-lease` and its CSINode
//!   are decided by name; Node and pod writes the NodeRestriction admission plugin narrows
//!   are allowed; pods and ResourceSlices are listed and watched only with a field selector
//!   on the node (`spec.nodeName=<node>`);
//! - anything else by the rules of the `system:node` ClusterRole (upstream's
//!   `bootstrappolicy.NodeRules()`, which keel ships in keel-rbac's bootstrap data).
//!
//! Feature gates are v1.36's defaults: `AuthorizeNodeWithSelectors` (locked on),
//! `KubeletServiceAccountTokenForCredentialProviders` (on: a node may get the service
//! accounts of its pods), `DynamicResourceAllocation` (locked on: ResourceSlices are in the
//! graph), `PodCertificateRequest` (off: PodCertificateRequests get no opinion).
//!
//! Refusals are "no opinion" with upstream's reasons, word for word (the 403 shows them).

pub mod graph;
pub mod objects;

use graph::{Graph, Kind, PodRef};
use keel_rbac::{Attributes, PolicyRule};
use parking_lot::RwLock;
use std::borrow::Cow;
use std::sync::OnceLock;

/// The user name prefix of a node identity.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The group every node identity is in.
pub const NODES_GROUP: &str = "system:nodes";
/// The namespace of the nodes' heartbeat Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// Upstream's answer to a node's SelfSubjectRulesReview (its RuleResolver's error).
pub const RULES_NOT_SUPPORTED: &str = "node authorizer does not support user rule resolution";

/// The graph the `Node` mode decides by, shared with the controller that keeps it.
pub struct NodeGraph {
    pub graph: RwLock<Graph>,
}

impl NodeGraph {
    pub fn new(edges_max: usize) -> NodeGraph {
        NodeGraph {
            graph: RwLock::new(Graph::new(edges_max)),
        }
    }
}

/// The mode's verdict: the Node authorizer allows or has no opinion (never denies).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    NoOpinion(Cow<'static, str>),
}

const fn no(reason: &'static str) -> Verdict {
    Verdict::NoOpinion(Cow::Borrowed(reason))
}

const NO_OPINION: Verdict = no("");

/// The node a request comes from: `Some(name)` for user `system:node:<name>` in group
/// `system:nodes` (the name may be empty), `None` for everyone else.
pub fn node_identity<'a>(user: &'a str, groups: &[String]) -> Option<&'a str> {
    let node = user.strip_prefix(NODE_USER_PREFIX)?;
    groups.iter().any(|g| g == NODES_GROUP).then_some(node)
}

/// The rules every node is allowed by: the `system:node` ClusterRole of upstream's
/// bootstrap policy (`NodeRules()`).
pub fn node_rules() -> &'static [PolicyRule] {
    static RULES: OnceLock<Vec<PolicyRule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let role = keel_rbac::bootstrap::cluster_roles()
            .iter()
            .find(|r| r.metadata.name == "system:node");
        let role = role.expect("keel-rbac's bootstrap policy has the system:node ClusterRole");
        role.rules.clone()
    })
}

/// The Node authorizer's decision on `attrs`; `field_selector` is the request's
/// `fieldSelector` (list and watch of pods and ResourceSlices need one on the node).
pub fn authorize(
    graph: &NodeGraph,
    attrs: &Attributes<'_>,
    field_selector: Option<&str>,
) -> Verdict {
    let Some(node) = node_identity(attrs.user, attrs.groups) else {
        return NO_OPINION;
    };
    if node.is_empty() {
        return Verdict::NoOpinion(Cow::Owned(format!(
            "unknown node for user {}",
            keel_rbac::gofmt::quote(attrs.user)
        )));
    }
    let ask = Ask {
        graph,
        node,
        attrs,
        field_selector,
    };
    if attrs.is_resource_request() {
        if let Some(v) = ask.subdivided() {
            return v;
        }
    }
    match keel_rbac::matching::rules_allow(attrs, node_rules()) {
        true => Verdict::Allow,
        false => NO_OPINION,
    }
}

/// One node's request.
struct Ask<'a> {
    graph: &'a NodeGraph,
    node: &'a str,
    attrs: &'a Attributes<'a>,
    field_selector: Option<&'a str>,
}

impl Ask<'_> {
    /// The resources upstream decides itself; `None` for the rest (the node rules decide).
    fn subdivided(&self) -> Option<Verdict> {
        let a = self.attrs;
        let referenced = |r| Kind::Referenced(r);
        Some(match (a.api_group, a.resource) {
            ("", "secrets") => self.read_namespaced(referenced(PodRef::Secret)),
            ("", "configmaps") => self.read_namespaced(referenced(PodRef::ConfigMap)),
            ("", "persistentvolumeclaims") if a.subresource == "status" => {
                self.status_update(referenced(PodRef::PersistentVolumeClaim))
            }
            ("", "persistentvolumeclaims") => self.get(referenced(PodRef::PersistentVolumeClaim)),
            ("", "persistentvolumes") => self.get(Kind::PersistentVolume),
            ("resource.k8s.io", "resourceclaims") => self.get(referenced(PodRef::ResourceClaim)),
            ("storage.k8s.io", "volumeattachments") => self.get(Kind::VolumeAttachment),
            ("", "serviceaccounts") => self.service_account(),
            ("coordination.k8s.io", "leases") => self.lease(),
            ("storage.k8s.io", "csinodes") => self.csi_node(),
            ("resource.k8s.io", "resourceslices") => self.resource_slice(),
            ("", "nodes") => self.node_object(),
            ("", "pods") => self.pod(),
            // PodCertificateRequest is off in v1.36 by default: no opinion, not the rules.
            ("certificates.k8s.io", "podcertificaterequests") => NO_OPINION,
            _ => return None,
        })
    }

    /// Allowed when the named object is related to the node.
    fn related(&self, kind: Kind) -> Verdict {
        let a = self.attrs;
        if a.name.is_empty() {
            return no("No Object name found");
        }
        if self
            .graph
            .graph
            .read()
            .related(kind, a.namespace, a.name, self.node)
        {
            return Verdict::Allow;
        }
        Verdict::NoOpinion(Cow::Owned(format!(
            "no relationship found between node '{}' and this object",
            self.node
        )))
    }

    /// `get` of a related object, no subresource.
    fn get(&self, kind: Kind) -> Verdict {
        if self.attrs.verb != "get" {
            return no("can only get individual resources of this type");
        }
        if !self.attrs.subresource.is_empty() {
            return no("cannot get subresource");
        }
        self.related(kind)
    }

    /// `get`, `list`, `watch` of a related namespaced object (a list or watch names it by
    /// `metadata.name`), no subresource.
    fn read_namespaced(&self, kind: Kind) -> Verdict {
        let a = self.attrs;
        if !matches!(a.verb, "get" | "list" | "watch") {
            return no("can only read resources of this type");
        }
        if !a.subresource.is_empty() {
            return no("cannot read subresource");
        }
        if a.namespace.is_empty() {
            return no("can only read namespaced object of this type");
        }
        self.related(kind)
    }

    /// `update`, `patch` of the status of a related object.
    fn status_update(&self, kind: Kind) -> Verdict {
        if !matches!(self.attrs.verb, "update" | "patch") {
            return no("can only get/update/patch this type");
        }
        if self.attrs.subresource != "status" {
            return no("can only update status subresource");
        }
        self.related(kind)
    }

    /// A pod's service account: `get` (KubeletServiceAccountTokenForCredentialProviders,
    /// on in v1.36), or `create` of its `token`.
    fn service_account(&self) -> Verdict {
        let a = self.attrs;
        let kind = Kind::Referenced(PodRef::ServiceAccount);
        if a.verb == "get" && a.subresource.is_empty() {
            return self.read_namespaced(kind);
        }
        if a.verb != "create" || a.name.is_empty() {
            return no("can only create tokens for individual service accounts");
        }
        if a.subresource != "token" {
            return no("can only create token subresource of serviceaccount");
        }
        self.related(kind)
    }

    /// The node's own Lease in `kube-node-lease` (a create is not named yet: the
    /// NodeRestriction admission plugin checks it).
    fn lease(&self) -> Verdict {
        let a = self.attrs;
        if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
            return no("can only get, create, update, patch, or delete a node lease");
        }
        if a.namespace != NODE_LEASE_NAMESPACE {
            return no(r#"can only access leases in the "kube-node-lease" system namespace"#);
        }
        if a.verb != "create" && a.name != self.node {
            return no("can only access node lease with the same name as the requesting node");
        }
        Verdict::Allow
    }

    /// The node's own CSINode.
    fn csi_node(&self) -> Verdict {
        let a = self.attrs;
        if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
            return no("can only get, create, update, patch, or delete a CSINode");
        }
        if !a.subresource.is_empty() {
            return no("cannot authorize CSINode subresources");
        }
        if a.verb != "create" && a.name != self.node {
            return no("can only access CSINode with the same name as the requesting node");
        }
        Verdict::Allow
    }

    /// The node's ResourceSlices: related ones by name, its own by field selector; a create
    /// is allowed (NodeRestriction checks the slice's node).
    fn resource_slice(&self) -> Verdict {
        let a = self.attrs;
        if !a.subresource.is_empty() {
            return no("cannot authorize ResourceSlice subresources");
        }
        match a.verb {
            "create" => Verdict::Allow,
            "get" | "update" | "patch" | "delete" => self.related(Kind::ResourceSlice),
            "watch" | "list" | "deletecollection" => match self.selects_node("spec.nodeName") {
                true => Verdict::Allow,
                false => no("can only list/watch/deletecollection resourceslices with nodeName field selector"),
            },
            _ => no("only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection"),
        }
    }

    /// Node objects: reads of its own by name (before it exists too), writes (NodeRestriction
    /// narrows them to its own).
    fn node_object(&self) -> Verdict {
        let a = self.attrs;
        match (a.subresource, a.verb) {
            ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Verdict::Allow,
            ("", "get" | "list" | "watch") if a.name == self.node => Verdict::Allow,
            ("", "get" | "list" | "watch") if a.name.is_empty() => {
                Verdict::NoOpinion(Cow::Owned(format!(
                    "node '{}' cannot read all nodes, only its own Node object",
                    self.node
                )))
            }
            ("", "get" | "list" | "watch") => Verdict::NoOpinion(Cow::Owned(format!(
                "node '{}' cannot read '{}', only its own Node object",
                self.node, a.name
            ))),
            _ => NO_OPINION,
        }
    }

    /// Pods: related ones by name, those bound to the node by field selector; the writes a
    /// kubelet makes (mirror pods, status, evictions), which NodeRestriction narrows.
    fn pod(&self) -> Verdict {
        let a = self.attrs;
        match (a.subresource, a.verb) {
            ("", "get") => self.get(Kind::Pod),
            ("", "list" | "watch") => {
                if self.selects_node("spec.nodeName") {
                    Verdict::Allow
                } else if !a.name.is_empty() {
                    self.related(Kind::Pod)
                } else {
                    no("can only list/watch pods with spec.nodeName field selector")
                }
            }
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                Verdict::Allow
            }
            _ => NO_OPINION,
        }
    }

    /// Whether the field selector requires `field` to equal this node (`=` or `==`); a
    /// selector that does not parse selects nothing.
    fn selects_node(&self, field: &str) -> bool {
        let Some(raw) = self.field_selector else {
            return false;
        };
        let Ok(sel) = keel_api::selectors::FieldSelector::parse(raw) else {
            return false;
        };
        sel.terms()
            .iter()
            .any(|t| !t.negated && t.field == field && t.value == self.node)
    }
}

#[cfg(test)]
mod tests;
