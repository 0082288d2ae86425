//! The aggregated groups in discovery, merged with the local ones in upstream's order: `/apis`
//! (APIGroupList), the aggregated discovery documents (each remote version with the resources
//! of its last successful discovery check, stale while unavailable) and `/apis/<group>` of a
//! group remotes serve. Pure.
//!
//! Every group version has an APIService (a local one or a remote's), and upstream orders
//! them two ways, which agree on the built-in groups:
//! - the legacy `/apis` sorts every APIService by `groupPriorityMinimum` (highest first),
//!   then by its name `<version>.<group>`, and lists each group where its first APIService
//!   falls ([`legacy_order`]);
//! - aggregated discovery gives each group the highest `groupPriorityMinimum` of its
//!   APIServices and sorts groups by it, then by group name ([`aggregated_order`]).
//!
//! In both, the versions of a group go by `versionPriority` (highest first), then Kubernetes
//! version order (`v2` > `v1` > `v1beta1` ...), the first one preferred. A group without any
//! APIService (the aggregator's own) keeps its place at the head of the list. A remote
//! APIService takes the place of the local one of the same name (requests for that version
//! are proxied).

use super::{Remote, Remotes};
use keel_api::jsonmap::JsonPointer;
use keel_catalog::LocalApiService;
use serde_json::{json, Map, Value};
use std::cmp::{Ordering, Reverse};

/// One APIService, as discovery orders it.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub group_priority: i64,
    pub version_priority: i64,
    /// The remote serving it; `None` for a group version served here.
    pub remote: Option<&'a Remote>,
}

impl Entry<'_> {
    /// The APIService's name, `<version>.<group>`.
    fn name(&self) -> String {
        format!("{}.{}", self.version, self.group)
    }
}

/// The APIServices of the group versions served here (the aggregator's own group has none)
/// and of the remotes (a remote replaces the local APIService of its name).
pub fn entries<'a>(local: &'a [LocalApiService], remotes: &'a Remotes) -> Vec<Entry<'a>> {
    let mut out: Vec<Entry> = local
        .iter()
        .filter(|l| l.group != super::AGGREGATOR_GROUP)
        .filter(|l| remotes.find(l.group, l.version).is_none())
        .map(|l| Entry {
            group: l.group,
            version: l.version,
            group_priority: i64::from(l.group_priority),
            version_priority: i64::from(l.version_priority),
            remote: None,
        })
        .collect();
    for (_, rs) in remotes.groups() {
        out.extend(rs.iter().map(|r| Entry {
            group: &r.group,
            version: &r.version,
            group_priority: r.group_priority,
            version_priority: r.version_priority,
            remote: Some(r),
        }));
    }
    out
}

/// Upstream's version order within a group: `versionPriority`, highest first, then
/// Kubernetes version order, highest first.
fn version_rank(a: &Entry, b: &Entry) -> Ordering {
    b.version_priority
        .cmp(&a.version_priority)
        .then_with(|| crate::custom::version_order(b.version, a.version))
}

/// Groups of `entries` in the order `first` lists, each with its versions in upstream's order.
fn grouped<'a>(first: Vec<Entry<'a>>) -> Vec<Vec<Entry<'a>>> {
    let mut out: Vec<Vec<Entry>> = Vec::new();
    for e in first {
        match out.iter_mut().find(|g| g[0].group == e.group) {
            Some(g) => g.push(e),
            None => out.push(vec![e]),
        }
    }
    for g in &mut out {
        g.sort_by(version_rank);
    }
    out
}

/// The legacy `/apis` order (upstream's `SortedByGroupAndVersion`): APIServices by
/// `groupPriorityMinimum`, highest first, then by name; each group where its first
/// APIService falls. The legacy group (`""`) is left out, as `/apis` does not list it.
pub fn legacy_order<'a>(entries: &[Entry<'a>]) -> Vec<Vec<Entry<'a>>> {
    let mut sorted: Vec<(Reverse<i64>, String, Entry)> = entries
        .iter()
        .filter(|e| !e.group.is_empty())
        .map(|e| (Reverse(e.group_priority), e.name(), *e))
        .collect();
    sorted.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    grouped(sorted.into_iter().map(|(_, _, e)| e).collect())
}

/// Aggregated discovery's order (upstream's discovery manager): groups by the highest
/// `groupPriorityMinimum` of their APIServices, highest first, then by group name. The
/// legacy group is left out.
pub fn aggregated_order<'a>(entries: &[Entry<'a>]) -> Vec<Vec<Entry<'a>>> {
    let mut groups = grouped(
        entries
            .iter()
            .filter(|e| !e.group.is_empty())
            .copied()
            .collect(),
    );
    let priority = |g: &[Entry]| g.iter().map(|e| e.group_priority).max().unwrap_or(0);
    groups.sort_by(|a, b| {
        priority(b)
            .cmp(&priority(a))
            .then_with(|| a[0].group.cmp(b[0].group))
    });
    groups
}

fn group_version(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// The APIGroupList entry of a group, its versions in order.
fn group_entry(versions: &[Entry]) -> Value {
    let group = versions[0].group;
    let list: Vec<Value> = versions
        .iter()
        .map(|e| group_version(group, e.version))
        .collect();
    json!({"name": group, "versions": list,
           "preferredVersion": group_version(group, versions[0].version)})
}

/// `/apis/<group>` of a group a remote serves (`None` when none does: the local document, if
/// any, is the answer).
pub fn api_group(local: &[LocalApiService], remotes: &Remotes, group: &str) -> Option<Vec<u8>> {
    remotes.group(group)?;
    let all = entries(local, remotes);
    let versions = legacy_order(&all)
        .into_iter()
        .find(|g| g[0].group == group)?;
    let mut doc = Map::new();
    doc.insert("kind".into(), "APIGroup".into());
    doc.insert("apiVersion".into(), "v1".into());
    if let Value::Object(e) = group_entry(&versions) {
        doc.extend(e);
    }
    Some(serde_json::to_vec(&doc).expect("JSON"))
}

/// Merges ordered groups into `items`, the list's entries named by `name_of`: entries of no
/// APIService first, as they were; then every group in `order`, its entry from `local_entry`
/// when no remote serves it (the local document is already right), else from `build`.
fn merge_ordered(
    items: &mut Vec<Value>,
    order: &[Vec<Entry>],
    name_of: fn(&Value) -> Option<&str>,
    build: &dyn Fn(Option<&Value>, &[Entry]) -> Value,
) {
    let mut local: Vec<Option<Value>> = std::mem::take(items).into_iter().map(Some).collect();
    let mut take = |group: &str| -> Option<Value> {
        local
            .iter_mut()
            .find(|v| v.as_ref().and_then(name_of) == Some(group))
            .and_then(Option::take)
    };
    let mut ordered = Vec::with_capacity(order.len());
    for versions in order {
        let existing = take(versions[0].group);
        let remote = versions.iter().any(|e| e.remote.is_some());
        ordered.push(match existing {
            Some(v) if !remote => v,
            existing => build(existing.as_ref(), versions),
        });
    }
    items.extend(local.into_iter().flatten());
    items.extend(ordered);
}

/// `list` (an APIGroupList of the local groups, in upstream's order) with the remotes'
/// groups and versions merged in, every group in upstream's order.
pub fn add_to_group_list(list: &[u8], local: &[LocalApiService], remotes: &Remotes) -> Vec<u8> {
    let Ok(mut doc) = serde_json::from_slice::<Value>(list) else {
        return list.to_vec();
    };
    let all = entries(local, remotes);
    let order = legacy_order(&all);
    if let Some(groups) = doc.get_mut("groups").and_then(Value::as_array_mut) {
        merge_ordered(
            groups,
            &order,
            |v| v.get("name").and_then(Value::as_str),
            &|_, versions| group_entry(versions),
        );
    }
    serde_json::to_vec(&doc).expect("JSON")
}

/// `list` (an APIGroupDiscoveryList of the local groups) with the remotes' versions merged
/// in, every group in upstream's order: each remote version with the resources of its last
/// successful check, `Current` while it is available, else `Stale` (as upstream marks a
/// version whose server it cannot reach); local versions as they were.
pub fn add_to_aggregated(list: &[u8], local: &[LocalApiService], remotes: &Remotes) -> Vec<u8> {
    let Ok(mut doc) = serde_json::from_slice::<Value>(list) else {
        return list.to_vec();
    };
    let all = entries(local, remotes);
    let order = aggregated_order(&all);
    if let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) {
        merge_ordered(
            items,
            &order,
            |v| v.at("/metadata/name").and_then(Value::as_str),
            &aggregated_group,
        );
    }
    serde_json::to_vec(&doc).expect("JSON")
}

/// The aggregated discovery entry of a group some remote serves: its local versions from
/// `existing`, its remote ones from their last check.
fn aggregated_group(existing: Option<&Value>, versions: &[Entry]) -> Value {
    let local_versions: &[Value] = existing
        .and_then(|g| g.get("versions"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let list: Vec<Value> = versions
        .iter()
        .filter_map(|e| match e.remote {
            Some(r) => Some(aggregated_version(
                &r.version,
                r.resources.as_ref(),
                r.available,
            )),
            None => local_versions
                .iter()
                .find(|v| v["version"] == e.version)
                .cloned(),
        })
        .collect();
    let mut group = existing.cloned().unwrap_or_else(
        || json!({"metadata": {"name": versions[0].group, "creationTimestamp": null}}),
    );
    group["versions"] = list.into();
    group
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
    use crate::aggregator::{Aggregator, ServiceRef, Trust};
    use std::sync::{Arc, Mutex};

    fn remote(
        group: &str,
        version: &str,
        priorities: (i64, i64),
        resources: Option<Value>,
    ) -> Remote {
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
            group_priority: priorities.0,
            version_priority: priorities.1,
            available: resources.is_some(),
            resources,
            client: Arc::new(Mutex::new(None)),
            address: Default::default(),
        }
    }

    fn local(group: &'static str, version: &'static str, g: i32, v: i32) -> LocalApiService {
        LocalApiService {
            group,
            version,
            group_priority: g,
            version_priority: v,
            builtin: true,
        }
    }

    fn published(remotes: Vec<Remote>) -> Arc<Remotes> {
        let agg = Aggregator::default();
        agg.publish(remotes);
        agg.snapshot()
    }

    /// `group/version` lists of an order.
    fn names(order: &[Vec<Entry>]) -> Vec<String> {
        order
            .iter()
            .map(|g| {
                let vs: Vec<&str> = g.iter().map(|e| e.version).collect();
                format!("{}:{}", g[0].group, vs.join(","))
            })
            .collect()
    }

    /// Upstream's two orders, table by table: (local APIServices, remotes, legacy `/apis`
    /// order, aggregated discovery's order).
    #[test]
    fn groups_and_versions_follow_upstreams_priorities() {
        type Case = (
            Vec<LocalApiService>,
            Vec<Remote>,
            Vec<&'static str>,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            // A remote group outranks built-in ones by its priority; the legacy group is
            // never listed.
            (
                vec![local("", "v1", 18000, 1), local("apps", "v1", 17800, 15)],
                vec![remote("metrics.k8s.io", "v1beta1", (20000, 100), None)],
                vec!["metrics.k8s.io:v1beta1", "apps:v1"],
                vec!["metrics.k8s.io:v1beta1", "apps:v1"],
            ),
            // Equal priorities: the legacy list sorts APIService names (`v1.b...` before
            // `v2.a...`), aggregated discovery group names.
            (
                vec![local("b.example.com", "v1", 1000, 100)],
                vec![remote("a.example.com", "v2", (1000, 100), None)],
                vec!["b.example.com:v1", "a.example.com:v2"],
                vec!["a.example.com:v2", "b.example.com:v1"],
            ),
            // A group is placed by its highest-priority APIService; its versions by
            // versionPriority, then Kubernetes version order (GA > beta > alpha).
            (
                vec![local("apps", "v1", 17800, 15)],
                vec![
                    remote("x.example.com", "v1beta1", (100, 15), None),
                    remote("x.example.com", "v1", (100, 15), None),
                    remote("x.example.com", "v2alpha1", (30000, 15), None),
                    remote("x.example.com", "v3", (100, 9), None),
                ],
                vec!["x.example.com:v1,v1beta1,v2alpha1,v3", "apps:v1"],
                vec!["x.example.com:v1,v1beta1,v2alpha1,v3", "apps:v1"],
            ),
            // A remote joins a local group: a higher versionPriority makes it preferred; a
            // remote of a local version's name replaces it.
            (
                vec![
                    local("apps", "v1", 17800, 15),
                    local("apps", "v1beta1", 17800, 9),
                ],
                vec![
                    remote("apps", "v2", (17800, 20), None),
                    remote("apps", "v1beta1", (17800, 9), None),
                ],
                vec!["apps:v2,v1,v1beta1"],
                vec!["apps:v2,v1,v1beta1"],
            ),
        ];
        for (i, (locals, remotes, legacy, aggregated)) in cases.into_iter().enumerate() {
            let remotes = published(remotes);
            let all = entries(&locals, &remotes);
            assert_eq!(names(&legacy_order(&all)), legacy, "case {i}: legacy");
            assert_eq!(
                names(&aggregated_order(&all)),
                aggregated,
                "case {i}: aggregated"
            );
            let replaced = all
                .iter()
                .filter(|e| e.group == "apps" && e.version == "v1beta1")
                .count();
            assert!(replaced <= 1, "case {i}: one APIService per name");
        }
    }

    fn group_names(list: &[u8], key: &str) -> Vec<String> {
        let doc: Value = serde_json::from_slice(list).unwrap();
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let name = g.get("name").or_else(|| g.at("/metadata/name"));
                name.and_then(Value::as_str).unwrap().to_owned()
            })
            .collect()
    }

    /// With no remote group among them, a fresh server's documents keep the catalog's order
    /// (which is upstream's); a remote group takes its place by priority, after the
    /// aggregator's own group, which has no APIService.
    #[test]
    fn built_in_order_is_kept_and_remotes_take_their_place() {
        let catalog = keel_catalog::Catalog::new("").unwrap();
        let local = catalog.local_apiservices();
        let list = catalog.api_group_list();
        let aggregated = catalog.aggregated(false, "v2");
        let none = published(Vec::new());
        assert_eq!(
            group_names(&add_to_group_list(&list, &local, &none), "groups"),
            group_names(&list, "groups")
        );
        assert_eq!(
            group_names(&add_to_aggregated(&aggregated, &local, &none), "items"),
            group_names(&aggregated, "items")
        );
        // A low priority: after every built-in group.
        let remotes = published(vec![remote("metrics.k8s.io", "v1beta1", (100, 100), None)]);
        let merged = group_names(&add_to_group_list(&list, &local, &remotes), "groups");
        let mut want = group_names(&list, "groups");
        want.push("metrics.k8s.io".into());
        assert_eq!(merged, want);
        let top = published(vec![remote("top.example.com", "v1", (20000, 100), None)]);
        let merged = group_names(&add_to_group_list(&list, &local, &top), "groups");
        assert_eq!(merged[..2], ["apiregistration.k8s.io", "top.example.com"]);
        let merged = group_names(&add_to_aggregated(&aggregated, &local, &top), "items");
        assert_eq!(merged[..2], ["apiregistration.k8s.io", "top.example.com"]);
    }

    /// The address the availability check resolved is kept for the proxy until a change
    /// makes the controller forget it.
    #[test]
    fn resolved_addresses_are_kept_until_forgotten() {
        let agg = Aggregator::default();
        agg.publish(vec![remote("a.example.com", "v1", (100, 10), None)]);
        let r = agg.remote("a.example.com", "v1").unwrap();
        assert_eq!(r.address(), None);
        r.set_address(Some("10.0.0.1:443".into()));
        assert_eq!(
            agg.remote("a.example.com", "v1")
                .unwrap()
                .address()
                .as_deref(),
            Some("10.0.0.1:443")
        );
        agg.forget_addresses();
        assert_eq!(r.address(), None);
        r.remember_address("10.0.0.2:443".into());
        assert_eq!(r.address().as_deref(), Some("10.0.0.2:443"));
    }

    #[test]
    fn remote_groups_join_discovery() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "metrics.k8s.io/v1beta1",
            "resources": [
                {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
                {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get"]},
                {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"], "shortNames": []}]});
        let remotes = published(vec![
            remote("metrics.k8s.io", "v1beta1", (100, 10), Some(list)),
            remote("down.example.com", "v1", (200, 10), None),
            remote("apps", "v2", (17800, 20), None),
        ]);
        let local = [local("apps", "v1", 17800, 15)];
        let groups: Value = serde_json::from_slice(&add_to_group_list(
            br#"{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}]}]}"#,
            &local,
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
            groups["groups"][0],
            json!({"name": "apps", "versions": [
                    {"groupVersion": "apps/v2", "version": "v2"},
                    {"groupVersion": "apps/v1", "version": "v1"}],
                   "preferredVersion": {"groupVersion": "apps/v2", "version": "v2"}})
        );
        assert_eq!(
            groups["groups"][2]["preferredVersion"],
            json!({"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"})
        );
        let agg_doc: Value = serde_json::from_slice(&add_to_aggregated(
            br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
                {"metadata":{"name":"apps","creationTimestamp":null},"versions":[{"version":"v1","freshness":"Current"}]}]}"#,
            &local,
            &remotes,
        ))
        .unwrap();
        // The local group with the remote's version first; the available group with its
        // resources and their subresources; the other, whose server was never reached, stale
        // without resources.
        assert_eq!(agg_doc["items"].as_array().unwrap().len(), 3);
        assert_eq!(
            agg_doc["items"][0]["versions"],
            json!([{"version": "v2", "freshness": "Stale"}, {"version": "v1", "freshness": "Current"}])
        );
        assert_eq!(
            agg_doc["items"][1]["versions"],
            json!([{"version": "v1", "freshness": "Stale"}])
        );
        let v = &agg_doc["items"][2]["versions"][0];
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
            serde_json::from_slice(&api_group(&local, &remotes, "metrics.k8s.io").unwrap())
                .unwrap();
        assert_eq!(g["kind"], "APIGroup");
        assert_eq!(g["versions"][0]["version"], "v1beta1");
        let apps: Value =
            serde_json::from_slice(&api_group(&local, &remotes, "apps").unwrap()).unwrap();
        assert_eq!(apps["preferredVersion"]["version"], "v2");
        assert!(api_group(&local, &remotes, "batch").is_none());
    }
}
