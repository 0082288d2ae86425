//! Priority and fairness across configuration changes: a request that waited while a new
//! configuration was published takes its seat in the new one, and the gauges of the schema
//! it was classified into (and no other's) count it while it runs.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};

use super::classify::Digest;
use super::{config, FlowControl, SchemaStats};

/// A queued level with one seat (server limit 1) and a schema sending every authenticated
/// request to it.
fn level() -> Value {
    json!({"metadata": {"name": "only", "uid": "level-uid"}, "spec": {"type": "Limited",
        "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Queue",
            "queuing": {"queues": 4, "handSize": 2, "queueLengthLimit": 10}}}}})
}

fn schema(name: &str, precedence: u64, group: &str) -> Value {
    json!({"metadata": {"name": name, "uid": format!("{name}-uid")}, "spec": {
        "priorityLevelConfiguration": {"name": "only"},
        "matchingPrecedence": precedence,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "Group", "group": {"name": group}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                "namespaces": ["*"], "clusterScope": true}]}]}})
}

fn publish(fc: &FlowControl, schemas: &[Value]) {
    let schemas = schemas.iter().filter_map(config::parse_schema).collect();
    fc.publish(schemas, vec![config::parse_level(&level()).unwrap()]);
}

fn stats(fc: &FlowControl, schema: &str) -> Arc<SchemaStats> {
    fc.snapshot()
        .schemas
        .into_iter()
        .find(|(s, l, _)| s == schema && l == "only")
        .map(|(_, _, st)| st)
        .unwrap_or_else(|| panic!("no series for {schema}"))
}

#[test]
fn a_wait_across_a_configuration_change_is_counted_in_its_schema() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let fc = Arc::new(FlowControl::new(true, 1, 1));
        publish(&fc, &[schema("all", 100, "system:authenticated")]);
        let groups = vec!["system:authenticated".to_string()];
        let digest = |user: &'static str, groups: &'static [String]| Digest {
            user,
            groups,
            authenticated: true,
            verb: "get",
            resource: Some(super::classify::ResourceAttrs {
                group: "",
                resource: "configmaps",
                subresource: "",
                namespace: "ns",
            }),
            path: "/api/v1/namespaces/ns/configmaps/x",
        };
        let groups: &'static [String] = Box::leak(groups.into_boxed_slice());
        let first = fc.admit(&digest("alice", groups), false, 1).await.unwrap();
        assert_eq!(first.schema_uid(), "all-uid");
        // The second waits for the only seat.
        let waiting = {
            let fc = fc.clone();
            tokio::task::spawn_local(async move {
                fc.admit(&digest("bob", groups), false, 1).await.unwrap()
            })
        };
        tokio::task::yield_now().await;
        assert_eq!(stats(&fc, "all").inqueue.load(Ordering::Relaxed), 1);
        // A new configuration puts another schema first (the waiting request's schema is the
        // second now); a request that runs whatever its level makes this core take it up.
        publish(
            &fc,
            &[
                schema("all", 100, "system:authenticated"),
                schema("first", 1, "system:masters"),
            ],
        );
        drop(fc.admit(&digest("carol", groups), true, 1).await.unwrap());
        assert!(!waiting.is_finished());
        drop(first);
        let second = waiting.await.unwrap();
        assert_eq!(second.schema_uid(), "all-uid");
        let (all, first) = (stats(&fc, "all"), stats(&fc, "first"));
        assert_eq!(all.executing.load(Ordering::Relaxed), 1);
        assert_eq!(all.executing_seats.load(Ordering::Relaxed), 1);
        assert_eq!(all.inqueue.load(Ordering::Relaxed), 0);
        assert_eq!(first.executing.load(Ordering::Relaxed), 0);
        drop(second);
        assert_eq!(all.executing.load(Ordering::Relaxed), 0);
        assert_eq!(all.executing_seats.load(Ordering::Relaxed), 0);
        assert_eq!(first.executing.load(Ordering::Relaxed), 0);
        assert_eq!(first.executing_seats.load(Ordering::Relaxed), 0);
    });
}
