//! The aggregated groups in discovery: added to `/apis` (APIGroupList) and to the aggregated
//! discovery documents (each version with the resources of its last successful discovery
//! check, stale while unavailable), and `/apis/<group>` for a group only remotes serve. Groups are listed after the
//! built-in and custom ones, by `groupPriorityMinimum` (highest first), then name; versions
//! by `versionPriority`, the first one preferred. Pure.

use super::{Remote, Remotes};
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn group_version(r: &Remote) -> Value {
    json!({"groupVersion": format!("{}/{}", r.group, r.version), "version": r.version})
}

/// The APIGroupList entry of a group of remotes.
fn group_entry(group: &str, remotes: &[Arc<Remote>]) -> Value {
    let versions: Vec<Value> = remotes.iter().map(|r| group_version(r)).collect();
    json!({"name": group, "versions": versions, "preferredVersion": group_version(&remotes[0])})
}

/// `/apis/<group>` of a group only remotes serve.
pub fn api_group(remotes: &Remotes, group: &str) -> Option<Vec<u8>> {
    let rs = remotes.group(group)?;
    let mut doc = Map::new();
    doc.insert("kind".into(), "APIGroup".into());
    doc.insert("apiVersion".into(), "v1".into());
    if let Value::Object(e) = group_entry(group, rs) {
        doc.extend(e);
    }
    Some(serde_json::to_vec(&doc).expect("JSON"))
}

/// `list` (an APIGroupList) with the groups of `remotes` it lacks appended.
pub fn add_to_group_list(list: &[u8], remotes: &Remotes) -> Vec<u8> {
    let Ok(mut doc) = serde_json::from_slice::<Value>(list) else {
        return list.to_vec();
    };
    if let Some(groups) = doc.get_mut("groups").and_then(Value::as_array_mut) {
        for (g, rs) in remotes.groups() {
            if !groups.iter().any(|e| e["name"] == g) {
                groups.push(group_entry(g, rs));
            }
        }
    }
    serde_json::to_vec(&doc).expect("JSON")
}

/// `list` (an APIGroupDiscoveryList) with the groups of `remotes` it lacks: each version with
/// the resources of its last successful check, `Current` while it is available, else
/// `Stale` (as upstream marks a version whose server it cannot reach).
pub fn add_to_aggregated(list: &[u8], remotes: &Remotes) -> Vec<u8> {
    let Ok(mut doc) = serde_json::from_slice::<Value>(list) else {
        return list.to_vec();
    };
    if let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) {
        for (g, rs) in remotes.groups() {
            if items.iter().any(|e| e["metadata"]["name"] == g) {
                continue;
            }
            let versions: Vec<Value> = rs
                .iter()
                .map(|r| aggregated_version(&r.version, r.resources.as_ref(), r.available))
                .collect();
            items.push(json!({
                "metadata": {"name": g, "creationTimestamp": null},
                "versions": versions,
            }));
        }
    }
    serde_json::to_vec(&doc).expect("JSON")
}

/// One version of aggregated discovery from its APIResourceList (if one was had):
/// subresources (`a/b`) under their resource; no resources are left out, as Go omits them.
fn aggregated_version(version: &str, list: Option<&Value>, current: bool) -> Value {
    let entries: &[Value] = list
        .and_then(|l| l.get("resources"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let text = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let kind_of = |e: &Value| json!({"group": text(e, "group"), "version": text(e, "version"), "kind": text(e, "kind")});
    let mut resources: Vec<Value> = Vec::new();
    for e in entries {
        let name = text(e, "name");
        if name.contains('/') {
            continue;
        }
        let mut r = Map::new();
        r.insert("resource".into(), name.clone().into());
        r.insert("responseKind".into(), kind_of(e));
        let namespaced = e.get("namespaced").and_then(Value::as_bool) == Some(true);
        r.insert(
            "scope".into(),
            (if namespaced { "Namespaced" } else { "Cluster" }).into(),
        );
        r.insert("singularResource".into(), text(e, "singularName").into());
        r.insert("verbs".into(), e.get("verbs").cloned().unwrap_or(json!([])));
        for k in ["shortNames", "categories"] {
            if let Some(v) = e
                .get(k)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                r.insert(k.into(), v.clone());
            }
        }
        let subs: Vec<Value> = entries
            .iter()
            .filter_map(|s| {
                let n = text(s, "name");
                let sub = n.strip_prefix(&format!("{name}/"))?.to_owned();
                Some(json!({"subresource": sub, "responseKind": kind_of(s),
                            "verbs": s.get("verbs").cloned().unwrap_or(json!([]))}))
            })
            .collect();
        if !subs.is_empty() {
            r.insert("subresources".into(), subs.into());
        }
        resources.push(Value::Object(r));
    }
    let freshness = if current { "Current" } else { "Stale" };
    if resources.is_empty() {
        return json!({"version": version, "freshness": freshness});
    }
    json!({"version": version, "resources": resources, "freshness": freshness})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregator::{ServiceRef, Trust};
    use std::sync::Mutex;

    fn remote(group: &str, version: &str, priority: i64, resources: Option<Value>) -> Remote {
        Remote {
            name: format!("{version}.{group}"),
            group: group.into(),
            version: version.into(),
            service: ServiceRef {
                namespace: "ns".into(),
                name: "svc".into(),
                port: 443,
            },
            trust: Trust {
                ca_pem: None,
                insecure: true,
            },
            group_priority: priority,
            version_priority: 10,
            available: resources.is_some(),
            resources,
            client: Arc::new(Mutex::new(None)),
        }
    }

    #[test]
    fn remote_groups_join_discovery() {
        let agg = crate::aggregator::Aggregator::default();
        let list = json!({"kind": "APIResourceList", "groupVersion": "metrics.k8s.io/v1beta1",
            "resources": [
                {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
                {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get"]},
                {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"], "shortNames": []}]});
        agg.publish(vec![
            remote("metrics.k8s.io", "v1beta1", 100, Some(list)),
            remote("down.example.com", "v1", 200, None),
        ]);
        let remotes = agg.snapshot();
        let groups: Value = serde_json::from_slice(&add_to_group_list(
            br#"{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps"}]}"#,
            &remotes,
        ))
        .unwrap();
        let names: Vec<&Value> = groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| &g["name"])
            .collect();
        assert_eq!(
            names,
            [
                &json!("apps"),
                &json!("down.example.com"),
                &json!("metrics.k8s.io")
            ]
        );
        assert_eq!(
            groups["groups"][2]["preferredVersion"],
            json!({"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"})
        );
        let agg_doc: Value = serde_json::from_slice(&add_to_aggregated(
            br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}"#,
            &remotes,
        ))
        .unwrap();
        // The available group with its resources and their subresources; the other, whose
        // server was never reached, stale without resources.
        assert_eq!(agg_doc["items"].as_array().unwrap().len(), 2);
        assert_eq!(
            agg_doc["items"][0]["versions"],
            json!([{"version": "v1", "freshness": "Stale"}])
        );
        let v = &agg_doc["items"][1]["versions"][0];
        assert_eq!(v["freshness"], "Current");
        assert_eq!(v["version"], "v1beta1");
        assert_eq!(v["resources"][0]["resource"], "pods");
        assert_eq!(v["resources"][0]["scope"], "Namespaced");
        assert_eq!(
            v["resources"][0]["subresources"][0]["subresource"],
            "status"
        );
        assert_eq!(v["resources"][1]["scope"], "Cluster");
        assert!(v["resources"][1].get("shortNames").is_none());
        let g: Value =
            serde_json::from_slice(&api_group(&remotes, "metrics.k8s.io").unwrap()).unwrap();
        assert_eq!(g["kind"], "APIGroup");
        assert_eq!(g["versions"][0]["version"], "v1beta1");
        assert!(api_group(&remotes, "apps").is_none());
    }
}
