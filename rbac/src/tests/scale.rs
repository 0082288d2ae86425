//! The index with 1,000 roles and 10,000 bindings decides as a plain walk over every
//! binding (upstream's `VisitRulesFor`, in this crate's order) does, before and after
//! incremental updates.

use super::*;
use crate::gofmt;
use crate::index::{applies_to, Decision, PolicyIndex, Source};
use crate::matching::{rule_allows, Attributes};
use crate::types::Kind;

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

const ROLES: usize = 1_000;
const BINDINGS: usize = 10_000;
const NAMESPACES: usize = 50;
const USERS: usize = 2_000;
const GROUPS: usize = 200;

struct World {
    cluster_roles: Vec<ClusterRole>,
    roles: Vec<Role>,
    cluster_bindings: Vec<ClusterRoleBinding>,
    bindings: Vec<RoleBinding>,
}

fn random_subject(rng: &mut Rng) -> Subject {
    match rng.below(4) {
        0 | 1 => user(&format!("user-{}", rng.below(USERS))),
        2 => group(&format!("group-{}", rng.below(GROUPS))),
        _ => service_account(
            if rng.below(2) == 0 {
                String::new()
            } else {
                format!("ns-{}", rng.below(NAMESPACES))
            }
            .as_str(),
            &format!("sa-{}", rng.below(20)),
        ),
    }
}

fn world(rng: &mut Rng) -> World {
    let resource_rule = |rng: &mut Rng, i: usize| {
        let verbs: &[&str] = [&["get"][..], &["list", "watch"], &["*"]][rng.below(3)];
        let mut r = rule(verbs, &[""], &[&format!("res-{}", i % 30)]);
        if rng.below(5) == 0 {
            r.resource_names = vec![format!("obj-{}", rng.below(5))];
        }
        r
    };
    // 900 ClusterRoles, 100 Roles spread over the namespaces: 1,000 roles.
    let cluster_roles = (0..900)
        .map(|i| {
            let mut rules = vec![resource_rule(rng, i), resource_rule(rng, i + 7)];
            if i % 10 == 0 {
                rules.push(url_rule(&["get"], &[&format!("/path-{}/*", i % 30)]));
            }
            cluster_role(&format!("cr-{i}"), rules)
        })
        .collect();
    let roles = (0..ROLES - 900)
        .map(|i| {
            role(
                &format!("ns-{}", i % NAMESPACES),
                &format!("role-{}", i / NAMESPACES),
                vec![resource_rule(rng, i)],
            )
        })
        .collect();
    let subjects = |rng: &mut Rng| (0..1 + rng.below(3)).map(|_| random_subject(rng)).collect();
    // 2,000 ClusterRoleBindings, 8,000 RoleBindings; a few refer to missing roles.
    let cluster_bindings = (0..2_000)
        .map(|i| {
            cluster_binding(
                &format!("crb-{i:05}"),
                &format!("cr-{}", rng.below(910)),
                subjects(rng),
            )
        })
        .collect();
    let bindings = (0..BINDINGS - 2_000)
        .map(|i| {
            let role_ref = if rng.below(4) == 0 {
                RoleRef::role(&format!("role-{}", rng.below(3)))
            } else {
                RoleRef::cluster_role(&format!("cr-{}", rng.below(910)))
            };
            binding(
                &format!("ns-{}", rng.below(NAMESPACES)),
                &format!("rb-{i:05}"),
                role_ref,
                subjects(rng),
            )
        })
        .collect();
    World {
        cluster_roles,
        roles,
        cluster_bindings,
        bindings,
    }
}

/// Upstream's walk: every ClusterRoleBinding, then every RoleBinding of the namespace
/// (each by name), keeping those with a subject that applies.
fn naive(w: &World, attrs: &Attributes<'_>) -> Decision {
    let mut errors = Vec::new();
    let mut crbs: Vec<&ClusterRoleBinding> = w.cluster_bindings.iter().collect();
    crbs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for b in crbs {
        let Some(i) = applies_to(attrs.user, attrs.groups, &b.subjects, "") else {
            continue;
        };
        match w
            .cluster_roles
            .iter()
            .find(|r| r.metadata.name == b.role_ref.name)
        {
            None => errors.push(format!(
                "clusterrole.rbac.authorization.k8s.io {} not found",
                gofmt::quote(&b.role_ref.name)
            )),
            Some(role) => {
                if role.rules.iter().any(|r| rule_allows(attrs, r)) {
                    let source = Source::ClusterRoleBinding {
                        binding: b,
                        subject: &b.subjects[i],
                    };
                    return Decision {
                        allowed: true,
                        reason: format!("RBAC: allowed by {source}"),
                    };
                }
            }
        }
    }
    if !attrs.namespace.is_empty() {
        let mut rbs: Vec<&RoleBinding> = w
            .bindings
            .iter()
            .filter(|b| b.metadata.namespace == attrs.namespace)
            .collect();
        rbs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for b in rbs {
            let Some(i) = applies_to(attrs.user, attrs.groups, &b.subjects, attrs.namespace) else {
                continue;
            };
            let rules = if b.role_ref.kind == "Role" {
                w.roles
                    .iter()
                    .find(|r| {
                        r.metadata.namespace == attrs.namespace
                            && r.metadata.name == b.role_ref.name
                    })
                    .map(|r| &r.rules)
                    .ok_or("role")
            } else {
                w.cluster_roles
                    .iter()
                    .find(|r| r.metadata.name == b.role_ref.name)
                    .map(|r| &r.rules)
                    .ok_or("clusterrole")
            };
            match rules {
                Err(what) => errors.push(format!(
                    "{what}.rbac.authorization.k8s.io {} not found",
                    gofmt::quote(&b.role_ref.name)
                )),
                Ok(rules) => {
                    if rules.iter().any(|r| rule_allows(attrs, r)) {
                        let source = Source::RoleBinding {
                            binding: b,
                            subject: &b.subjects[i],
                        };
                        return Decision {
                            allowed: true,
                            reason: format!("RBAC: allowed by {source}"),
                        };
                    }
                }
            }
        }
    }
    Decision {
        allowed: false,
        reason: gofmt::aggregate(&errors)
            .map(|e| format!("RBAC: {e}"))
            .unwrap_or_default(),
    }
}

fn build(w: &World) -> PolicyIndex {
    let mut index = PolicyIndex::new();
    for r in &w.cluster_roles {
        index.upsert_cluster_role(r.clone());
    }
    for r in &w.roles {
        index.upsert_role(r.clone());
    }
    for b in &w.cluster_bindings {
        index.upsert_cluster_role_binding(b.clone());
    }
    for b in &w.bindings {
        index.upsert_role_binding(b.clone());
    }
    index
}

/// Compares `requests` random requests; returns how many were allowed.
fn compare(w: &World, index: &PolicyIndex, rng: &mut Rng, requests: usize) -> usize {
    let mut allowed = 0;
    for _ in 0..requests {
        let user = match rng.below(3) {
            0 => format!(
                "system:serviceaccount:ns-{}:sa-{}",
                rng.below(NAMESPACES),
                rng.below(20)
            ),
            _ => format!("user-{}", rng.below(USERS)),
        };
        let groups: Vec<String> = (0..rng.below(4))
            .map(|_| format!("group-{}", rng.below(GROUPS)))
            .collect();
        let namespace = if rng.below(4) == 0 {
            String::new()
        } else {
            format!("ns-{}", rng.below(NAMESPACES))
        };
        let verb = ["get", "list", "watch", "delete"][rng.below(4)];
        let resource = format!("res-{}", rng.below(30));
        let name = if rng.below(2) == 0 {
            String::new()
        } else {
            format!("obj-{}", rng.below(5))
        };
        let path = format!("/path-{}/x", rng.below(30));
        let attrs = if rng.below(8) == 0 {
            Attributes::non_resource(&user, &groups, verb, &path)
        } else {
            Attributes::resource(&user, &groups, verb, "", &resource, &namespace).with_name(&name)
        };
        let want = naive(w, &attrs);
        let got = index.authorize(&attrs);
        assert_eq!(got, want, "{attrs:?}");
        // The reason-free decision agrees with the full one, and so do the user's grants
        // resolved for the request's namespace.
        assert_eq!(index.allows(&attrs), got.allowed, "{attrs:?}");
        let grants = index.grants(attrs.user, attrs.groups, attrs.namespace);
        assert_eq!(grants.allows(&attrs), got.allowed, "{attrs:?}");
        allowed += usize::from(got.allowed);
    }
    allowed
}

#[test]
fn index_with_1000_roles_and_10000_bindings_decides_as_a_full_walk() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut w = world(&mut rng);
    let mut index = build(&w);
    let counts = index.counts();
    assert_eq!(counts.cluster_roles + counts.roles, ROLES);
    assert_eq!(
        counts.cluster_role_bindings + counts.role_bindings,
        BINDINGS
    );

    let allowed = compare(&w, &index, &mut rng, 1_500);
    // The generated policy allows a fair share, so both outcomes are exercised.
    assert!((50..1_450).contains(&allowed), "{allowed} of 1500 allowed");

    // Incremental updates: replace bindings' subjects, delete bindings and roles, add new.
    for _ in 0..500 {
        match rng.below(4) {
            0 => {
                let i = rng.below(w.bindings.len());
                w.bindings[i].subjects = vec![random_subject(&mut rng)];
                index.upsert_role_binding(w.bindings[i].clone());
            }
            1 => {
                let i = rng.below(w.cluster_bindings.len());
                let b = w.cluster_bindings.swap_remove(i);
                assert!(index.remove(Kind::ClusterRoleBinding, "", &b.metadata.name));
            }
            2 => {
                let i = rng.below(w.cluster_roles.len());
                let r = w.cluster_roles.swap_remove(i);
                assert!(index.remove(Kind::ClusterRole, "", &r.metadata.name));
            }
            _ => {
                let b = binding(
                    &format!("ns-{}", rng.below(NAMESPACES)),
                    &format!("new-{}", rng.below(100_000)),
                    RoleRef::cluster_role(&format!("cr-{}", rng.below(900))),
                    vec![random_subject(&mut rng)],
                );
                w.bindings.retain(|o| {
                    o.metadata.namespace != b.metadata.namespace
                        || o.metadata.name != b.metadata.name
                });
                w.bindings.push(b.clone());
                index.upsert_role_binding(b);
            }
        }
    }
    let counts = index.counts();
    assert_eq!(counts.role_bindings, w.bindings.len());
    assert_eq!(counts.cluster_role_bindings, w.cluster_bindings.len());
    compare(&w, &index, &mut rng, 1_000);
}
