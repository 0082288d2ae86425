//! Upstream's bootstrap configuration (`flowcontrol/bootstrap`, v1): the mandatory `exempt`
//! and `catch-all` objects and the suggested ones, as the objects the controller creates.
//! Each carries `apf.kubernetes.io/autoupdate-spec: "true"`.

use serde_json::{json, Value};

/// The annotation that says whether the server keeps an object's spec as in bootstrap.
pub const AUTOUPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

/// Names of the objects the server restores whatever their annotation says.
pub const MANDATORY: &[&str] = &["exempt", "catch-all"];

fn level(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "annotations": {AUTOUPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn queued(shares: u64, lendable: u64, queues: u64, hand: u64, limit: u64) -> Value {
    json!({"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares,
        "lendablePercent": lendable,
        "limitResponse": {"type": "Queue", "queuing": {
            "queues": queues, "handSize": hand, "queueLengthLimit": limit}}}})
}

/// The bootstrap priority levels: mandatory first.
pub fn priority_levels() -> Vec<Value> {
    vec![
        level(
            "exempt",
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
        ),
        level(
            "catch-all",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}),
        ),
        level("system", queued(30, 33, 64, 6, 50)),
        level("node-high", queued(40, 25, 64, 6, 50)),
        level("leader-election", queued(10, 0, 16, 4, 50)),
        level("workload-high", queued(40, 50, 128, 6, 50)),
        level("workload-low", queued(100, 90, 128, 6, 50)),
        level("global-default", queued(20, 50, 128, 6, 50)),
    ]
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "group": {"name": name}})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "user": {"name": name}})
}

fn kube_system_sa(name: &str) -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": name}})
}

fn all_rules(subjects: Vec<Value>) -> Value {
    json!([{
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
            "clusterScope": true, "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    }])
}

fn resource_rule(
    verbs: &[&str],
    group: &str,
    resources: &[&str],
    namespaces: &[&str],
    cluster: bool,
) -> Value {
    json!({"verbs": verbs, "apiGroups": [group], "resources": resources,
        "namespaces": namespaces, "clusterScope": cluster})
}

fn schema(name: &str, level: &str, precedence: u32, by: Option<&str>, rules: Value) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": rules,
    });
    if let Some(by) = by {
        spec["distinguisherMethod"] = json!({"type": by});
    }
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "annotations": {AUTOUPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

/// The bootstrap flow schemas: mandatory first.
pub fn flow_schemas() -> Vec<Value> {
    let leader_rules = |ns: &str| {
        json!([
            resource_rule(
                &["get", "create", "update"],
                "",
                &["endpoints", "configmaps"],
                &[ns],
                false
            ),
            resource_rule(
                &["get", "create", "update"],
                "coordination.k8s.io",
                &["leases"],
                &["*"],
                false
            ),
        ])
    };
    vec![
        schema(
            "exempt",
            "exempt",
            1,
            None,
            all_rules(vec![group("system:masters")]),
        ),
        schema(
            "catch-all",
            "catch-all",
            10000,
            Some("ByUser"),
            all_rules(vec![
                group("system:unauthenticated"),
                group("system:authenticated"),
            ]),
        ),
        schema(
            "probes",
            "exempt",
            2,
            None,
            json!([{
                "subjects": [group("system:unauthenticated"), group("system:authenticated")],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            }]),
        ),
        schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!([{
                "subjects": [user("system:kube-controller-manager"), user("system:kube-scheduler"), kube_system_sa("*")],
                "resourceRules": leader_rules("kube-system"),
            }]),
        ),
        schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            json!([{
                "subjects": [user("system:kube-controller-manager"), kube_system_sa("endpoint-controller")],
                "resourceRules": [resource_rule(&["get", "create", "update"], "", &["endpoints"], &["*"], false)],
            }]),
        ),
        schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            json!([{"subjects": [kube_system_sa("*")], "resourceRules": leader_rules("*")}]),
        ),
        schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!([{
                "subjects": [group("system:nodes")],
                "resourceRules": [
                    resource_rule(&["*"], "", &["nodes", "nodes/status"], &["*"], true),
                    resource_rule(&["*"], "coordination.k8s.io", &["leases"], &["*"], false),
                ],
            }]),
        ),
        schema(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            all_rules(vec![group("system:nodes")]),
        ),
        schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            all_rules(vec![user("system:kube-controller-manager")]),
        ),
        schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            all_rules(vec![user("system:kube-scheduler")]),
        ),
        schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            all_rules(vec![kube_system_sa("*")]),
        ),
        schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            all_rules(vec![group("system:serviceaccounts")]),
        ),
        schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            all_rules(vec![
                group("system:unauthenticated"),
                group("system:authenticated"),
            ]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::config::{parse_level, parse_schema};
    use super::*;

    /// Every bootstrap object parses, and every schema names a bootstrap level.
    #[test]
    fn bootstrap_is_consistent() {
        let levels: Vec<String> = priority_levels()
            .iter()
            .map(|v| parse_level(v).expect("level parses").name)
            .collect();
        for v in flow_schemas() {
            let s = parse_schema(&v).expect("schema parses");
            assert!(levels.contains(&s.level), "{} -> {}", s.name, s.level);
        }
        assert_eq!(&levels[..2], MANDATORY);
    }

    /// The bootstrap levels pass the priority level validation: the mandatory ones carry the
    /// fixed spec the strategy holds them to, so the controller's writes are never refused.
    #[test]
    fn bootstrap_levels_validate() {
        let s = keel_strategy::strategy(
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
        );
        for mut level in priority_levels() {
            s.prepare_for_create(&mut level, &keel_strategy::Ctx::at_unix_seconds(0));
            assert_eq!(s.validate_create(&level), [], "{level}");
        }
    }
}
