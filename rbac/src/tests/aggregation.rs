//! The ClusterRole aggregation controller's rules
//! (`pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`
//! `syncClusterRole`) and `LabelSelectorAsSelector`'s semantics.

use std::collections::BTreeMap;

use super::*;
use crate::aggregation::*;
use crate::types::{AggregationRule, LabelSelector, LabelSelectorRequirement};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn labelled(name: &str, l: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
    let mut r = cluster_role(name, rules);
    r.metadata.labels = labels(l);
    r
}

fn aggregating(name: &str, selectors: Vec<LabelSelector>) -> ClusterRole {
    let mut r = cluster_role(name, vec![]);
    r.aggregation_rule = Some(AggregationRule {
        cluster_role_selectors: selectors,
    });
    r
}

fn match_labels(l: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: labels(l),
        match_expressions: vec![],
    }
}

fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelector {
    LabelSelector {
        match_labels: BTreeMap::new(),
        match_expressions: vec![LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: strings(values),
        }],
    }
}

#[test]
fn selectors() {
    let l = labels(&[("a", "1"), ("b", "2")]);
    let cases: Vec<(LabelSelector, bool)> = vec![
        (LabelSelector::default(), true),
        (match_labels(&[("a", "1")]), true),
        (match_labels(&[("a", "1"), ("b", "2")]), true),
        (match_labels(&[("a", "2")]), false),
        (match_labels(&[("c", "1")]), false),
        (expr("a", "In", &["0", "1"]), true),
        (expr("a", "In", &["0"]), false),
        (expr("c", "In", &["1"]), false),
        (expr("a", "NotIn", &["1"]), false),
        (expr("a", "NotIn", &["0"]), true),
        (expr("c", "NotIn", &["1"]), true),
        (expr("a", "Exists", &[]), true),
        (expr("c", "Exists", &[]), false),
        (expr("a", "DoesNotExist", &[]), false),
        (expr("c", "DoesNotExist", &[]), true),
        (
            LabelSelector {
                match_labels: labels(&[("a", "1")]),
                ..expr("b", "In", &["3"])
            },
            false,
        ),
    ];
    for (s, want) in cases {
        assert_eq!(selector_matches(&s, &l), Ok(want), "{s:?}");
    }
    for bad in [
        expr("a", "in", &["1"]),
        expr("a", "In", &[]),
        expr("a", "NotIn", &[]),
        expr("a", "Exists", &["1"]),
        expr("a", "DoesNotExist", &["1"]),
    ] {
        assert!(selector_matches(&bad, &l).is_err(), "{bad:?}");
    }
    assert_eq!(
        selector_matches(&expr("a", "Equals", &["1"]), &l),
        Err(SelectorError(
            r#""Equals" is not a valid label selector operator"#.into()
        ))
    );
}

#[test]
fn rules_by_selector_then_role_name_each_once() {
    let get_pods = rule(&["get"], &[""], &["pods"]);
    let list_pods = rule(&["list"], &[""], &["pods"]);
    let get_svc = rule(&["get"], &[""], &["services"]);
    let get_cm = rule(&["get"], &[""], &["configmaps"]);
    let agg = aggregating(
        "agg",
        vec![
            match_labels(&[("x", "true")]),
            match_labels(&[("y", "true")]),
        ],
    );
    let all = vec![
        labelled(
            "zeta",
            &[("x", "true")],
            vec![get_svc.clone(), get_pods.clone()],
        ),
        labelled(
            "alpha",
            &[("x", "true")],
            vec![get_pods.clone(), list_pods.clone()],
        ),
        labelled(
            "beta",
            &[("y", "true")],
            vec![get_cm.clone(), get_svc.clone()],
        ),
        labelled(
            "gamma",
            &[("y", "false")],
            vec![rule(&["*"], &["*"], &["*"])],
        ),
        agg.clone(),
    ];
    assert_eq!(
        aggregated_rules(&agg, &all),
        Ok(Some(vec![get_pods, list_pods, get_svc, get_cm]))
    );
}

#[test]
fn itself_and_roles_without_an_aggregation_rule() {
    let mut agg = aggregating("agg", vec![LabelSelector::default()]);
    agg.metadata.labels = labels(&[("k", "v")]);
    agg.rules = vec![rule(&["get"], &[""], &["stale"])];
    let other = cluster_role("other", vec![rule(&["get"], &[""], &["pods"])]);
    let all = [agg.clone(), other.clone()];
    // The empty selector selects every other ClusterRole, never the role itself.
    assert_eq!(
        aggregated_rules(&agg, &all),
        Ok(Some(vec![rule(&["get"], &[""], &["pods"])]))
    );
    assert_eq!(aggregated_rules(&other, &all), Ok(None));
    // An aggregation rule selecting nothing gives no rules.
    let lonely = aggregating("lonely", vec![match_labels(&[("none", "x")])]);
    assert_eq!(aggregated_rules(&lonely, &all), Ok(Some(vec![])));
    let bad = aggregating("bad", vec![expr("k", "In", &[])]);
    assert!(aggregated_rules(&bad, &all).is_err());
}

#[test]
fn updates_only_for_changed_roles() {
    let source = labelled(
        "src",
        &[("x", "true")],
        vec![rule(&["get"], &[""], &["pods"])],
    );
    let mut current = aggregating("current", vec![match_labels(&[("x", "true")])]);
    current.rules = source.rules.clone();
    let stale = aggregating("stale", vec![match_labels(&[("x", "true")])]);
    let broken = aggregating("broken", vec![expr("x", "Exists", &["v"])]);
    let all = [stale, source, broken, current];
    assert_eq!(
        aggregation_updates(&all),
        vec![AggregationUpdate {
            name: "stale".into(),
            rules: vec![rule(&["get"], &[""], &["pods"])],
        }]
    );
}

#[test]
fn chains_settle() {
    // top <- mid <- leaf, as admin <- edit <- view.
    let mut mid = aggregating("mid", vec![match_labels(&[("to-mid", "true")])]);
    mid.metadata.labels = labels(&[("to-top", "true")]);
    let mut roles = vec![
        aggregating("top", vec![match_labels(&[("to-top", "true")])]),
        mid,
        labelled(
            "leaf",
            &[("to-mid", "true")],
            vec![rule(&["get"], &[""], &["pods"])],
        ),
    ];
    let rounds = aggregate_until_stable(&mut roles, 10);
    assert!(rounds < 10, "{rounds}");
    let top = roles.iter().find(|r| r.metadata.name == "top").unwrap();
    assert_eq!(top.rules, vec![rule(&["get"], &[""], &["pods"])]);
    assert_eq!(aggregate_until_stable(&mut roles, 10), 0);
}
