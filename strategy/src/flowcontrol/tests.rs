//! Each row is a PriorityLevelConfiguration as created through flowcontrol/v1 (so defaulted
//! first) and the field errors upstream's `ValidatePriorityLevelConfiguration` gives for it.

use crate::registry::strategy;
use crate::Ctx;
use keel_api::status::field::error_text;
use serde_json::{json, Value};

fn level(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
           "metadata": {"name": name}, "spec": spec})
}

/// The messages of creating `obj`, after upstream's defaults.
fn create_errors(mut obj: Value) -> Vec<String> {
    let s = strategy(
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    );
    s.prepare_for_create(&mut obj, &Ctx::at_unix_seconds(0));
    s.validate_create(&obj).iter().map(error_text).collect()
}

#[test]
fn priority_level_rules_match_upstream() {
    let rows: Vec<(Value, Vec<&str>)> = vec![
        (
            level("queued", json!({"type": "Limited", "limited": {
                "limitResponse": {"type": "Queue", "queuing": {"queues": 16}}}})),
            vec![],
        ),
        // Queuing is defaulted only when present: a `Queue` response without it is refused.
        (
            level("no-queuing", json!({"type": "Limited", "limited": {
                "limitResponse": {"type": "Queue"}}})),
            vec!["spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited"],
        ),
        (
            level("reject-queuing", json!({"type": "Limited", "limited": {
                "limitResponse": {"type": "Reject", "queuing": {}}}})),
            vec!["spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"],
        ),
        (
            level("not-exempt", json!({"type": "Exempt"})),
            vec!["spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'"],
        ),
        (
            level("both", json!({"type": "Exempt", "exempt": {"lendablePercent": 101},
                "limited": {"limitResponse": {"type": "Reject"}}})),
            vec![
                "spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'",
                "spec.limited: Forbidden: must be nil if the type is not Limited",
                "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            ],
        ),
        (
            level("limited-bare", json!({"type": "Limited", "exempt": {}})),
            vec![
                "spec.exempt: Forbidden: must be nil if the type is Limited",
                "spec.limited: Required value: must not be empty when type is Limited",
            ],
        ),
        (
            level("odd", json!({"type": "Odd<"})),
            vec!["spec.type: Unsupported value: \"Odd\\u003c\": supported values: \"Exempt\", \"Limited\""],
        ),
        (
            level("numbers", json!({"type": "Limited", "limited": {
                "nominalConcurrencyShares": -1, "lendablePercent": -1, "borrowingLimitPercent": -1,
                "limitResponse": {"type": "Drop"}}})),
            vec![
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.limited.limitResponse.type: Unsupported value: \"Drop\": supported values: \"Queue\", \"Reject\"",
                "spec.limited.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
                "spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
            ],
        ),
        (
            level("queues", json!({"type": "Limited", "limited": {"limitResponse": {
                "type": "Queue", "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": -1}}}})),
            vec![
                "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
            ],
        ),
        (
            level("entropy", json!({"type": "Limited", "limited": {"limitResponse": {
                "type": "Queue", "queuing": {"queues": 10000001, "handSize": 40}}}})),
            vec![
                "spec.limited.limitResponse.queuing.queues: Invalid value: 10000001: must not be greater than 10000000",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 40: required entropy bits of deckSize 10000001 and handSize 40 should not be greater than 60",
            ],
        ),
        // The mandatory levels: their bootstrap spec passes, `exempt` may change `spec.exempt`.
        (
            level("exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 3}})),
            vec![],
        ),
        (
            level("catch-all", json!({"type": "Limited", "limited": {
                "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}})),
            vec![],
        ),
        (
            level("catch-all", json!({"type": "Limited", "limited": {
                "nominalConcurrencyShares": 6, "limitResponse": {"type": "Reject"}}})),
            vec![r#"spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":6,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'catch-all' must equal the fixed value"#],
        ),
        (
            level("exempt", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}})),
            vec![
                "spec.type: Invalid value: \"Limited\": must be 'Exempt' if and only if `name` is 'exempt'",
                r#"spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":30,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"#,
            ],
        ),
        (
            json!({"metadata": {"name": "annotated", "annotations": {
                "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}},
                "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}}),
            vec!["metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"],
        ),
    ];
    for (obj, want) in rows {
        assert_eq!(create_errors(obj.clone()), want, "{obj}");
    }
}

/// A status write validates the conditions (the spec was validated when it was written).
#[test]
fn status_conditions_are_checked() {
    let s = strategy(
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    );
    let old = level(
        "ok",
        json!({"type": "Limited", "limited": {
        "nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}),
    );
    let mut new = old.clone();
    new["status"] = json!({"conditions": [{"type": "Dangling", "status": "False"},
        {"type": "Dangling", "status": "True"}, {"status": "True"}]});
    s.prepare_for_subresource_update("status", &mut new, &old);
    let got: Vec<String> = s
        .validate_subresource_update("status", &new, &old)
        .iter()
        .map(error_text)
        .collect();
    assert_eq!(
        got,
        [
            "status.conditions[1].type: Duplicate value: \"Dangling\"",
            "status.conditions[2].type: Required value",
        ]
    );
}
