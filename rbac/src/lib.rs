//! keel-rbac: Kubernetes RBAC (`rbac.authorization.k8s.io/v1`) as kube-apiserver v1.36
//! evaluates it, as pure functions and one index.
//!
//! - [`types`]: Role, ClusterRole, RoleBinding, ClusterRoleBinding, PolicyRule, Subject,
//!   RoleRef, aggregationRule and label selectors, read from the JSON objects as stored.
//! - [`matching`]: request [`Attributes`] and upstream's matchers (`VerbMatches`,
//!   `APIGroupMatches`, `ResourceMatches` with `*/<subresource>`, `ResourceNameMatches`,
//!   `NonResourceURLMatches` with a trailing `*`) and `RuleAllows`.
//! - [`index`]: [`PolicyIndex`], the whole policy kept current object by object (upsert and
//!   remove by kind, namespace and name, as a watch feed delivers them) with bindings filed
//!   by subject, and over it upstream's rule resolver (`VisitRulesFor`, `RulesFor`,
//!   `GetRoleReferenceRules`), authorizer ([`PolicyIndex::authorize`], with upstream's
//!   reasons) and SelfSubjectRulesReview rules ([`PolicyIndex::rules_review`]).
//! - [`escalation`]: `Covers` with its breakdown, `CompactRules`, `CompactString`, the
//!   escalation message, and the RBAC registry's write checks (`system:masters`, the
//!   `escalate` and `bind` verbs, the aggregationRule's cluster-admin requirement).
//! - [`aggregation`]: the rules the ClusterRole aggregation controller would write.
//! - [`bootstrap`]: upstream's default roles and bindings (`data/`, from
//!   `scripts/regen-bootstrap-policy`; release and commit in `data/README.md`).
//! - [`gofmt`]: Go's `%q` and error aggregation, which the messages are made of.
//!
//! Where upstream is specified by its source, this follows it: a test names the upstream
//! function it pins down. Upstream visits bindings in its informer cache's (Go map) order;
//! here ClusterRoleBindings by name, then the namespace's RoleBindings by name, so which
//! binding an allowed reason names, and the order of rules and errors, are deterministic
//! (decisions do not depend on order).
//!
//! Invariants: no I/O, no clock, no async runtime, no global state but the lazily parsed
//! embedded bootstrap data. Deciding a request costs a hash look-up per group of the user
//! and the rules of the bindings that name the user or one of its groups (or its service
//! account), never a pass over all bindings. Every binding in the index is filed under
//! exactly the subjects that can apply to it ([`index`] describes the filing). RBAC never
//! denies: a request no rule allows gets "no opinion" (`allowed: false`).
//!
//! Dependencies: serde and serde_json (objects as stored), foldhash (the per-request maps);
//! no other keel crate. The server feeds the index from its watch of the four kinds and
//! calls it from its authorizer, the `selfsubjectrulesreviews` and `subjectaccessreviews`
//! handlers, the RBAC registry's writes and the aggregation controller.

pub mod aggregation;
pub mod bootstrap;
pub mod escalation;
pub mod gofmt;
pub mod index;
pub mod matching;
pub mod types;

pub use escalation::{covers, Write, WriteDenied};
pub use index::{
    Decision, ErrorStyle, Grants, NonResourceRule, PolicyError, PolicyIndex, ResolveError,
    ResourceRule, RulesReview, Source, Visit,
};
pub use matching::{rule_allows, Attributes};
pub use types::{
    AggregationRule, ClusterRole, ClusterRoleBinding, Kind, LabelSelector,
    LabelSelectorRequirement, Meta, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

#[cfg(test)]
mod tests;
