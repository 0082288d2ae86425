//! ClusterRole aggregation as the controller manager's `clusterrole-aggregation-controller`
//! computes it (`pkg/controller/clusterroleaggregation`): the rules of a ClusterRole with
//! an `aggregationRule` are, for each of its selectors in order, the rules of every other
//! ClusterRole whose labels it selects, those roles taken by name, each rule once (the
//! first time it appears). The controller writes them only when they differ from the
//! role's current rules (a server-side apply of `rules`, field manager
//! `clusterrole-aggregation-controller`).

use std::collections::BTreeMap;
use std::fmt;

use crate::types::{ClusterRole, LabelSelector, PolicyRule};

/// A selector upstream's `LabelSelectorAsSelector` refuses (the controller then leaves the
/// role as it is and retries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError(pub String);

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectorError {}

/// Whether `selector` selects `labels`: every `matchLabels` entry equal, every expression
/// true (`In`: present with one of the values; `NotIn`: absent or none of them; `Exists`;
/// `DoesNotExist`). The empty selector selects everything. An unknown operator, `In` or
/// `NotIn` without values, or `Exists`/`DoesNotExist` with values is an error, as upstream.
pub fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, SelectorError> {
    validate(selector)?;
    let labels_match = selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_match = selector.match_expressions.iter().all(|e| {
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| e.values.contains(v)),
            "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
            "Exists" => value.is_some(),
            _ => value.is_none(),
        }
    });
    Ok(labels_match && expressions_match)
}

fn validate(selector: &LabelSelector) -> Result<(), SelectorError> {
    for e in &selector.match_expressions {
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                return Err(SelectorError(format!(
                    "values: Invalid value: []string{{}}: for 'in', 'notin' operators, values set can't be empty (key {:?})",
                    e.key
                )))
            }
            "Exists" | "DoesNotExist" if !e.values.is_empty() => {
                return Err(SelectorError(format!(
                    "values: Invalid value: {:?}: values set must be empty for exists and does not exist (key {:?})",
                    e.values, e.key
                )))
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                return Err(SelectorError(format!(
                    "{} is not a valid label selector operator",
                    crate::gofmt::quote(other)
                )))
            }
        }
    }
    Ok(())
}

/// The rules the controller would give `role`: `None` when it has no `aggregationRule`.
/// `all` is every ClusterRole (in any order; `role` itself among them or not).
pub fn aggregated_rules<'a>(
    role: &ClusterRole,
    all: impl IntoIterator<Item = &'a ClusterRole>,
) -> Result<Option<Vec<PolicyRule>>, SelectorError> {
    let Some(rule) = &role.aggregation_rule else {
        return Ok(None);
    };
    let mut sorted: Vec<&ClusterRole> = all.into_iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in &rule.cluster_role_selectors {
        validate(selector)?;
        for other in &sorted {
            if other.metadata.name == role.metadata.name
                || !selector_matches(selector, &other.metadata.labels)?
            {
                continue;
            }
            for r in &other.rules {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Ok(Some(rules))
}

/// One ClusterRole whose rules the controller would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregationUpdate {
    pub name: String,
    pub rules: Vec<PolicyRule>,
}

/// For every ClusterRole with an `aggregationRule` whose aggregated rules differ from its
/// current ones, the rules to write, by role name. A role whose selectors are invalid is
/// left out (upstream's sync fails for it and retries).
pub fn aggregation_updates<'a>(
    all: impl IntoIterator<Item = &'a ClusterRole>,
) -> Vec<AggregationUpdate> {
    let mut roles: Vec<&ClusterRole> = all.into_iter().collect();
    roles.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut updates = Vec::new();
    for role in &roles {
        if let Ok(Some(rules)) = aggregated_rules(role, roles.iter().copied()) {
            if rules != role.rules {
                updates.push(AggregationUpdate {
                    name: role.metadata.name.clone(),
                    rules,
                });
            }
        }
    }
    updates
}

/// Applies aggregation to `roles` in place until nothing changes (as the controller's
/// repeated syncs converge, each write re-queueing every aggregated role), at most
/// `rounds_max` rounds of one sync per aggregated role in name order. Returns the number
/// of rounds that changed something; `rounds_max` means it may not have settled (a cycle
/// of aggregated roles can keep changing).
pub fn aggregate_until_stable(roles: &mut [ClusterRole], rounds_max: usize) -> usize {
    roles.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for round in 0..rounds_max {
        let mut changed = false;
        for i in 0..roles.len() {
            if let Ok(Some(rules)) = aggregated_rules(&roles[i], roles.iter()) {
                if rules != roles[i].rules {
                    roles[i].rules = rules;
                    changed = true;
                }
            }
        }
        if !changed {
            return round;
        }
    }
    rounds_max
}
