//! Authorization as kube-apiserver's `--authorization-mode` builds it: members of
//! `system:masters` are allowed everything first, then each mode of the comma-separated
//! chain is asked in order (`AlwaysAllow`, `AlwaysDeny`, `Node`, `RBAC`); the first to allow
//! or deny decides, and a request none has an opinion on is forbidden with the reasons given.
//!
//! RBAC decides from a [`keel_rbac::PolicyIndex`] that the RBAC controller
//! (`controllers::rbac`) fills before the server reports ready and keeps current from the
//! watch feeds of the four kinds; a decision takes a read lock and looks up the bindings of
//! the user and its groups.
//!
//! Node decides requests of node identities (`system:node:<name>` in `system:nodes`) by
//! `nodeauthz`: a graph of what each node's pods relate it to, which the node graph
//! controller (`controllers::nodegraph`) loads before the server reports ready and keeps
//! current from the watches of pods, PVs, VolumeAttachments and ResourceSlices; everyone
//! else is passed on at once (no opinion, no reason).
//!
//! Not done: the `Webhook` mode (refused at start).

use crate::auth::{Attributes, Authorizer, Decision, User, MASTERS_GROUP};
use crate::nodeauthz::{NodeGraph, Verdict};
use keel_api::status::ApiError;
use keel_rbac::PolicyIndex;
use parking_lot::RwLock;
use serde_json::{json, Value};
use std::sync::Arc;

/// The policy the `RBAC` mode decides by, shared with the controller that keeps it.
#[derive(Default)]
pub struct Rbac {
    pub index: RwLock<PolicyIndex>,
}

/// One mode of the chain.
enum Mode {
    AlwaysAllow,
    AlwaysDeny,
    Node(Arc<NodeGraph>),
    Rbac(Arc<Rbac>),
}

/// The chain `--authorization-mode` names.
pub struct Chain {
    modes: Vec<Mode>,
}

/// What `--authorization-mode` asks for: the chain, and the RBAC policy (which the RBAC
/// controller keeps whatever the modes: upstream reconciles its bootstrap policy and
/// aggregates ClusterRoles under any mode; the chain decides by it if it has the mode), and
/// the node graph when the chain has the `Node` mode (its controller runs only then).
pub struct Built {
    pub chain: Chain,
    pub rbac: Arc<Rbac>,
    pub node_graph: Option<Arc<NodeGraph>>,
}

/// Parses `--authorization-mode` (upstream's names, comma-separated, each at most once).
pub fn build(modes: &str) -> Result<Built, String> {
    let mut chain = Vec::new();
    let rbac = Arc::new(Rbac::default());
    let mut node_graph = None;
    let names: Vec<&str> = modes.split(',').map(str::trim).collect();
    if (1..names.len()).any(|i| names[..i].contains(&names[i])) {
        return Err(format!(
            "--authorization-mode: authorization-mode {} has mode specified more than once",
            keel_api::gofmt::quote_list(&names)
        ));
    }
    for &name in &names {
        chain.push(match name {
            "AlwaysAllow" => Mode::AlwaysAllow,
            "AlwaysDeny" => Mode::AlwaysDeny,
            "RBAC" => Mode::Rbac(rbac.clone()),
            "Node" => {
                let graph = Arc::new(NodeGraph::new(crate::limits::NODE_GRAPH_EDGES_MAX));
                node_graph = Some(graph.clone());
                Mode::Node(graph)
            }
            "Webhook" => {
                return Err(format!(
                    "--authorization-mode: the {name} mode is not implemented yet (AlwaysAllow, AlwaysDeny, Node and RBAC are)"
                ))
            }
            other => {
                return Err(format!(
                    "--authorization-mode: authorization-mode {} is not a valid mode",
                    keel_api::gofmt::quote(other)
                ))
            }
        });
    }
    Ok(Built {
        chain: Chain { modes: chain },
        rbac,
        node_graph,
    })
}

impl Authorizer for Chain {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        self.decide(attrs, true)
    }

    fn authorize_request(&self, attrs: &Attributes<'_>) -> Decision {
        self.decide(attrs, false)
    }

    fn rules_for(&self, user: &User, namespace: &str) -> Value {
        self.rules(user, namespace)
    }
}

impl Chain {
    /// The chain's decision; `with_reasons`: an allowed one says why too.
    fn decide(&self, attrs: &Attributes<'_>, with_reasons: bool) -> Decision {
        if attrs.user.groups.iter().any(|g| g == MASTERS_GROUP) {
            return Decision::Allow(String::new());
        }
        let mut reasons: Vec<String> = Vec::new();
        for mode in &self.modes {
            let d = match mode {
                Mode::AlwaysAllow => Decision::Allow(String::new()),
                // Upstream's AlwaysDeny has no opinion on anything, with this reason.
                Mode::AlwaysDeny => Decision::NoOpinion("Everything is forbidden.".into()),
                Mode::Node(g) => {
                    let a = rbac_attributes(attrs);
                    match crate::nodeauthz::authorize(g, &a, attrs.field_selector) {
                        Verdict::Allow => Decision::Allow(String::new()),
                        Verdict::NoOpinion(r) => Decision::NoOpinion(r.into_owned()),
                    }
                }
                Mode::Rbac(r) => {
                    let index = r.index.read();
                    let a = rbac_attributes(attrs);
                    // An allowed request's reason is made only when asked for (formatting
                    // it was a tenth of a GET's decision); a refusal's always is.
                    if !with_reasons && cached_allows(&index, &a) {
                        Decision::Allow(String::new())
                    } else {
                        let d = index.authorize(&a);
                        match d.allowed {
                            true => Decision::Allow(d.reason),
                            false => Decision::NoOpinion(d.reason),
                        }
                    }
                }
            };
            match d {
                Decision::NoOpinion(r) => {
                    if !r.is_empty() {
                        reasons.push(r);
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    fn rules(&self, user: &User, namespace: &str) -> Value {
        let mut resource_rules: Vec<Value> = Vec::new();
        let mut non_resource_rules: Vec<Value> = Vec::new();
        let mut incomplete = false;
        let mut errors: Vec<String> = Vec::new();
        for mode in &self.modes {
            match mode {
                Mode::AlwaysAllow => {
                    resource_rules
                        .push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
                    non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
                }
                Mode::AlwaysDeny => {}
                // Upstream's Node authorizer cannot list a node's rules: incomplete.
                Mode::Node(_) => {
                    if crate::nodeauthz::node_identity(&user.name, &user.groups).is_some() {
                        incomplete = true;
                        errors.push(crate::nodeauthz::RULES_NOT_SUPPORTED.to_owned());
                    }
                }
                Mode::Rbac(r) => {
                    let review = r
                        .index
                        .read()
                        .rules_review(&user.name, &user.groups, namespace);
                    let v = review.to_value();
                    resource_rules.extend(array(&v, "resourceRules"));
                    non_resource_rules.extend(array(&v, "nonResourceRules"));
                    if !review.evaluation_error.is_empty() {
                        incomplete = true;
                        errors.push(review.evaluation_error);
                    }
                }
            }
        }
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": incomplete,
        });
        if !errors.is_empty() {
            // One error as it is; several as Go's error aggregate prints them.
            status["evaluationError"] = json!(keel_rbac::gofmt::aggregate(&errors));
        }
        status
    }
}

fn array(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Each user's grants per namespace, at one policy generation, on this thread.
struct GrantCache {
    generation: u64,
    hasher: foldhash::fast::FixedState,
    /// By the hash of (user, number of groups, namespace), the groups compared on look-up
    /// (a user's groups rarely change; hashing them cost more than the look-up); a
    /// colliding user replaces the entry.
    entries: std::collections::HashMap<u64, GrantEntry, foldhash::fast::FixedState>,
}

struct GrantEntry {
    user: Box<str>,
    groups: Box<[String]>,
    namespace: Box<str>,
    grants: keel_rbac::Grants,
}

thread_local! {
    static GRANTS: std::cell::RefCell<GrantCache> = std::cell::RefCell::new(GrantCache {
        generation: 0,
        hasher: foldhash::fast::FixedState::with_seed(0x6772_616e_7473),
        entries: Default::default(),
    });
}

/// [`PolicyIndex::allows`] from the user's grants in the request's namespace, resolved once
/// per policy generation and kept on the serving thread: a decision then scans the rules of
/// the few roles bound to the user instead of looking up its name and each of its groups
/// among the bindings (a service account's GET: 2,900 instructions there at 10,000
/// bindings, `benches/REPORT.md` 2026-12-03).
fn cached_allows(index: &PolicyIndex, a: &keel_rbac::Attributes<'_>) -> bool {
    use std::hash::BuildHasher;
    GRANTS.with_borrow_mut(|c| {
        if c.generation != index.generation() {
            c.entries.clear();
            c.generation = index.generation();
        }
        let key = c.hasher.hash_one((a.user, a.groups.len(), a.namespace));
        if let Some(e) = c.entries.get(&key) {
            if *e.user == *a.user && *e.groups == *a.groups && *e.namespace == *a.namespace {
                return e.grants.allows(a);
            }
        }
        let grants = index.grants(a.user, a.groups, a.namespace);
        let allowed = grants.allows(a);
        if c.entries.len() >= crate::limits::RBAC_GRANTS_CACHED_MAX {
            c.entries.clear();
        }
        c.entries.insert(
            key,
            GrantEntry {
                user: a.user.into(),
                groups: a.groups.into(),
                namespace: a.namespace.into(),
                grants,
            },
        );
        allowed
    })
}

/// The request in keel-rbac's terms.
fn rbac_attributes<'a>(attrs: &'a Attributes<'a>) -> keel_rbac::Attributes<'a> {
    keel_rbac::Attributes {
        user: &attrs.user.name,
        groups: &attrs.user.groups,
        verb: attrs.verb,
        api_group: attrs.group,
        resource: attrs.resource,
        subresource: attrs.subresource,
        namespace: attrs.namespace,
        name: attrs.name,
        path: attrs.path,
    }
}

/// Upstream's 403 for a request the chain did not allow: `<resource> "<name>" is forbidden:
/// User "u" cannot <verb> resource "<resource>[/<subresource>]" in API group "<group>" in the
/// namespace "<ns>"` (or `at the cluster scope`; `cannot <verb> path "<path>"` for a
/// non-resource request), then `: <reason>` when the authorizers gave one.
pub fn forbidden(attrs: &Attributes<'_>, reason: &str) -> ApiError {
    let q = keel_api::gofmt::quote;
    let user = q(&attrs.user.name);
    let mut msg = match attrs.path {
        Some(path) => format!("User {user} cannot {} path {}", attrs.verb, q(path)),
        None => {
            let resource = match attrs.subresource {
                "" => attrs.resource.to_owned(),
                sub => format!("{}/{sub}", attrs.resource),
            };
            let scope = match attrs.namespace {
                "" => "at the cluster scope".to_owned(),
                ns => format!("in the namespace {}", q(ns)),
            };
            format!(
                "User {user} cannot {} resource {} in API group {} {scope}",
                attrs.verb,
                q(&resource),
                q(attrs.group)
            )
        }
    };
    if !reason.is_empty() {
        msg.push_str(": ");
        msg.push_str(reason);
    }
    let (group, resource) = match attrs.path {
        Some(_) => ("", ""),
        None => (attrs.group, attrs.resource),
    };
    ApiError::forbidden_with(group, resource, attrs.name, &msg)
}

/// The checks upstream's RBAC storage makes of a write to a role or a binding (of
/// `plural` in `namespace`, at the request's `request_name`, empty for a create), by
/// `user`: a role may grant only what the writer holds unless they may `escalate` it; a
/// binding needs the writer to hold its role's rules or to be allowed to `bind` it (asked of
/// the whole chain). A write of any other resource passes.
pub fn check_rbac_write(
    rbac: &Rbac,
    chain: &dyn Authorizer,
    user: &User,
    plural: &str,
    namespace: &str,
    request_name: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    use keel_rbac::{PolicyRule, RoleRef, Write};
    if !matches!(
        plural,
        "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
    ) {
        return Ok(());
    }
    let name = crate::objects::name(obj);
    let rules: Vec<PolicyRule> = obj
        .get("rules")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    let role_ref: RoleRef = obj
        .get("roleRef")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    let aggregation = obj
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    let write = match plural {
        "roles" => Write::Role {
            namespace,
            name,
            request_name,
            rules: &rules,
        },
        "clusterroles" => Write::ClusterRole {
            name,
            request_name,
            rules: &rules,
            aggregation,
        },
        "rolebindings" => Write::RoleBinding {
            namespace,
            name,
            role_ref: &role_ref,
        },
        _ => Write::ClusterRoleBinding {
            name,
            role_ref: &role_ref,
        },
    };
    let index = rbac.index.read();
    let checked = index.check_write_with(&user.name, &user.groups, &write, |attrs| {
        let asked = Attributes {
            user,
            verb: attrs.verb,
            group: attrs.api_group,
            resource: attrs.resource,
            subresource: attrs.subresource,
            namespace: attrs.namespace,
            name: attrs.name,
            path: attrs.path,
            field_selector: None,
        };
        chain.authorize(&asked).allowed()
    });
    checked.map_err(|denied| match &denied {
        keel_rbac::WriteDenied::Forbidden {
            resource,
            name,
            cause,
        } => ApiError::forbidden_with("rbac.authorization.k8s.io", resource, name, cause),
        keel_rbac::WriteDenied::RoleRef { resource, error } => match error {
            keel_rbac::ResolveError::NotFound { name, .. } => {
                ApiError::not_found("rbac.authorization.k8s.io", resource, name)
            }
            _ => ApiError::internal(denied.message()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            extra: Default::default(),
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn attrs<'a>(u: &'a User, sub: &'a str, ns: &'a str, path: Option<&'a str>) -> Attributes<'a> {
        Attributes {
            user: u,
            verb: "get",
            group: "apps",
            resource: "deployments",
            subresource: sub,
            namespace: ns,
            name: "web",
            path,
            field_selector: None,
        }
    }

    #[test]
    fn modes_are_parsed_as_upstream_names_them() {
        assert!(build("AlwaysAllow").is_ok());
        assert!(build("RBAC,AlwaysDeny").is_ok());
        let err = |m: &str| build(m).err().unwrap();
        assert_eq!(
            err("RBAC,RBAC"),
            r#"--authorization-mode: authorization-mode ["RBAC" "RBAC"] has mode specified more than once"#
        );
        assert!(err("Magic").contains("\"Magic\" is not a valid mode"));
        assert!(err("Webhook,RBAC").contains("Webhook mode is not implemented"));
        let built = build("Node,RBAC").unwrap();
        assert!(built.node_graph.is_some());
        assert!(build("RBAC").unwrap().node_graph.is_none());
    }

    #[test]
    fn the_chain_asks_each_mode_until_one_decides() {
        let carol = user("carol", &["system:authenticated"]);
        let admin = user("admin", &["system:masters"]);
        let a = attrs(&carol, "", "ns", None);
        let deny = build("AlwaysDeny").unwrap().chain;
        assert_eq!(
            deny.authorize(&a),
            Decision::NoOpinion("Everything is forbidden.".into())
        );
        assert!(deny.authorize(&attrs(&admin, "", "ns", None)).allowed());
        let both = build("AlwaysDeny,AlwaysAllow").unwrap().chain;
        assert!(both.authorize(&a).allowed());
        // An empty policy has no opinion and no reason.
        let rbac = build("RBAC").unwrap().chain;
        assert_eq!(rbac.authorize(&a), Decision::NoOpinion(String::new()));
    }

    #[test]
    fn the_node_mode_answers_nodes_and_passes_everyone_else_on() {
        let built = build("Node,RBAC").unwrap();
        let node = user("system:node:n1", &["system:nodes"]);
        let carol = user("carol", &["system:authenticated"]);
        let secret = |u| Attributes {
            user: u,
            verb: "get",
            group: "",
            resource: "secrets",
            subresource: "",
            namespace: "ns",
            name: "s",
            path: None,
            field_selector: None,
        };
        // Nothing relates n1 to the secret: the Node mode's reason (RBAC adds none).
        assert_eq!(
            built.chain.authorize(&secret(&node)),
            Decision::NoOpinion("no relationship found between node 'n1' and this object".into())
        );
        assert_eq!(
            built.chain.authorize(&secret(&carol)),
            Decision::NoOpinion(String::new())
        );
        let own_node = Attributes {
            resource: "nodes",
            namespace: "",
            name: "n1",
            ..secret(&node)
        };
        assert!(built.chain.authorize_request(&own_node).allowed());
        // A node's rules cannot be listed (upstream's RuleResolver error); anyone else's are.
        let review = built.chain.rules_for(&node, "ns");
        assert_eq!(review["incomplete"], json!(true));
        assert_eq!(
            review["evaluationError"],
            json!("node authorizer does not support user rule resolution")
        );
        assert_eq!(
            built.chain.rules_for(&carol, "ns")["incomplete"],
            json!(false)
        );
    }

    #[test]
    fn forbidden_texts_are_upstreams() {
        let carol = user("carol", &[]);
        let e = forbidden(&attrs(&carol, "scale", "ns", None), "");
        assert_eq!(
            e.message,
            r#"deployments.apps "web" is forbidden: User "carol" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns""#
        );
        let e = forbidden(&attrs(&carol, "", "", None), "RBAC: role missing");
        assert_eq!(
            e.message,
            r#"deployments.apps "web" is forbidden: User "carol" cannot get resource "deployments" in API group "apps" at the cluster scope: RBAC: role missing"#
        );
        let e = forbidden(&attrs(&carol, "", "", Some("/foo")), "");
        assert_eq!(
            e.message,
            r#"forbidden: User "carol" cannot get path "/foo""#
        );
        assert_eq!(e.code, 403);
    }
}
