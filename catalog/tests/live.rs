//! Resources added and removed at run time: lookups, storage and every discovery document
//! follow; refused changes say why; old snapshots stay as they were. (That readers of the live
//! pointer never see a change half made is tested with the server's `LiveRoutes`.)

use std::collections::BTreeSet;
use std::sync::Arc;

use keel_catalog::{
    Catalog, CatalogChange, CatalogError, ResourceId, ResourceSpec, StorageVersion, SubresourceSpec,
};
use serde_json::{json, Value};

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("documents are JSON")
}

fn base() -> Catalog {
    Catalog::new("").expect("default runtime config")
}

const CRD_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// `widgets.example.com` at `version` (stored as v1): namespaced, with a short name,
/// categories, and the status and scale subresources.
fn widget(version: &str) -> ResourceSpec {
    ResourceSpec {
        short_names: vec!["wd".into()],
        categories: vec!["all".into(), "example".into()],
        subresources: vec![SubresourceSpec::status(), SubresourceSpec::scale()],
        storage_version: "v1".into(),
        ..ResourceSpec::custom("example.com", version, "Widget", "widgets", true)
    }
}

/// `gadgets.example.com/v1`: cluster-scoped, its own singular name, no subresources.
fn gadget() -> ResourceSpec {
    ResourceSpec {
        singular: "gizmo".into(),
        ..ResourceSpec::custom("example.com", "v1", "Gadget", "gadgets", false)
    }
}

fn added(c: &Catalog, specs: Vec<ResourceSpec>) -> Catalog {
    c.with_changes(&CatalogChange::add(specs)).expect("added")
}

fn removed(c: &Catalog, ids: &[(&str, &str, &str)]) -> Catalog {
    let ids = ids
        .iter()
        .map(|(g, v, p)| ResourceId::new(g, v, p))
        .collect();
    c.with_changes(&CatalogChange::remove(ids))
        .expect("removed")
}

/// Every document that does not list run-time groups, as bytes.
fn built_in_documents(c: &Catalog) -> Vec<Vec<u8>> {
    let mut out = vec![
        c.api_versions(),
        c.aggregated(true, "v2"),
        c.aggregated(true, "v2beta1"),
    ];
    let gvs: BTreeSet<(&str, &str)> = c
        .resources()
        .filter(|r| !r.group.ends_with("example.com"))
        .map(|r| (r.group, r.version))
        .collect();
    for (g, v) in gvs {
        out.push(c.api_group(g).unwrap_or_default());
        out.push(c.resource_list(g, v).unwrap());
    }
    out
}

fn group_names(doc: &Value, key: &str) -> Vec<String> {
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let name = if key == "groups" {
                &g["name"]
            } else {
                &g["metadata"]["name"]
            };
            name.as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn added_resources_appear_everywhere() {
    let before = base();
    let after = added(&before, vec![widget("v1"), gadget()]);
    assert!(after.generation() > before.generation());
    assert_eq!(after.resources().count(), before.resources().count() + 2);

    // (plural, kind, namespaced, storage version hash)
    let cases = [
        ("widgets", "Widget", true, "gIwvi5rymmg="),
        ("gadgets", "Gadget", false, "ggWp2HxsL0Q="),
    ];
    for (plural, kind, namespaced, _) in cases {
        let info = after.lookup("example.com", "v1", plural).expect(plural);
        assert_eq!((info.kind, info.namespaced), (kind, namespaced));
        assert!(Arc::ptr_eq(
            info,
            after.by_kind("example.com", "v1", kind).unwrap()
        ));
        assert!(after.resources().any(|r| Arc::ptr_eq(r, info)));
        assert_eq!(
            after.storage_prefix(info),
            format!("/example.com/{plural}/")
        );
        assert_eq!(
            after.storage_version(info),
            Some(StorageVersion {
                group: "example.com",
                version: "v1",
                kind
            })
        );
        assert!(before.lookup("example.com", "v1", plural).is_none());
    }

    let list = parse(&after.resource_list("example.com", "v1").unwrap());
    assert_eq!(
        list,
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "example.com/v1",
            "resources": [
                {"name": "gadgets", "singularName": "gizmo", "namespaced": false, "kind": "Gadget",
                 "verbs": CRD_VERBS, "storageVersionHash": cases[1].3},
                {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
                 "verbs": CRD_VERBS, "shortNames": ["wd"], "categories": ["all", "example"],
                 "storageVersionHash": cases[0].3},
                {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget",
                 "verbs": ["get", "patch", "update"]},
                {"name": "widgets/scale", "singularName": "", "namespaced": true,
                 "group": "autoscaling", "version": "v1", "kind": "Scale",
                 "verbs": ["get", "patch", "update"]}]})
    );

    let group = json!({"name": "example.com",
        "versions": [{"groupVersion": "example.com/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "example.com/v1", "version": "v1"}});
    let mut with_kind = group.clone();
    with_kind["kind"] = json!("APIGroup");
    with_kind["apiVersion"] = json!("v1");
    assert_eq!(parse(&after.api_group("example.com").unwrap()), with_kind);
    let groups = parse(&after.api_group_list());
    assert_eq!(groups["groups"].as_array().unwrap().last(), Some(&group));
    let old_groups = parse(&before.api_group_list());
    assert_eq!(
        groups["groups"].as_array().unwrap()[..old_groups["groups"].as_array().unwrap().len()],
        old_groups["groups"].as_array().unwrap()[..],
        "built-in groups keep their place, the new group comes after them"
    );

    for discovery_version in ["v2", "v2beta1"] {
        let doc = parse(&after.aggregated(false, discovery_version));
        let items = doc["items"].as_array().unwrap();
        assert_eq!(
            items.len(),
            old_groups["groups"].as_array().unwrap().len() + 1
        );
        assert_eq!(
            items.last().unwrap(),
            &json!({"metadata": {"name": "example.com"},
                "versions": [{"version": "v1", "freshness": "Current", "resources": [
                    {"resource": "gadgets", "responseKind": {"group": "", "version": "", "kind": "Gadget"},
                     "scope": "Cluster", "singularResource": "gizmo", "verbs": CRD_VERBS},
                    {"resource": "widgets", "responseKind": {"group": "", "version": "", "kind": "Widget"},
                     "scope": "Namespaced", "singularResource": "widget", "verbs": CRD_VERBS,
                     "shortNames": ["wd"], "categories": ["all", "example"],
                     "subresources": [
                        {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Widget"},
                         "verbs": ["get", "patch", "update"]},
                        {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                         "verbs": ["get", "patch", "update"]}]}]}]}),
            "{discovery_version}"
        );
    }
    assert_eq!(built_in_documents(&after), built_in_documents(&before));
}

#[test]
fn a_second_version_joins_its_group() {
    let one = added(&base(), vec![widget("v1")]);
    let two = added(&one, vec![widget("v2"), widget("v1beta1")]);
    let g = parse(&two.api_group("example.com").unwrap());
    let versions: Vec<&str> = g["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(
        versions,
        ["v2", "v1", "v1beta1"],
        "Kubernetes version order"
    );
    assert_eq!(g["preferredVersion"]["version"], "v2");
    let apis = parse(&two.aggregated(false, "v2"));
    let item = apis["items"].as_array().unwrap().last().unwrap().clone();
    let aggregated: Vec<&str> = item["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(aggregated, versions);
    for v in versions {
        let list = parse(&two.resource_list("example.com", v).unwrap());
        assert_eq!(list["groupVersion"], format!("example.com/{v}"));
        // Every version reports the storage version's hash (example.com/v1/Widget).
        assert_eq!(list["resources"][0]["storageVersionHash"], "gIwvi5rymmg=");
        let info = two.lookup("example.com", v, "widgets").unwrap();
        assert_eq!(two.storage_version(info).unwrap().version, "v1");
    }
}

#[test]
fn run_time_groups_follow_upstream_ordering() {
    // Both get the CRD group priority (1000), below every built-in group. Legacy /apis breaks
    // the tie on the APIService name (v1.b... < v2.a...), aggregated discovery on the group.
    let thing =
        |group: &str, version: &str| ResourceSpec::custom(group, version, "Thing", "things", true);
    let c = added(
        &base(),
        vec![thing("a.example.com", "v2"), thing("b.example.com", "v1")],
    );
    let n = group_names(&parse(&base().api_group_list()), "groups").len();
    let legacy = group_names(&parse(&c.api_group_list()), "groups");
    assert_eq!(legacy[n..], ["b.example.com", "a.example.com"]);
    let aggregated = group_names(&parse(&c.aggregated(false, "v2")), "items");
    assert_eq!(aggregated[n..], ["a.example.com", "b.example.com"]);
    assert_eq!(legacy[..n], aggregated[..n]);
    let hash = |g: &str, v: &str| {
        parse(&c.resource_list(g, v).unwrap())["resources"][0]["storageVersionHash"].clone()
    };
    assert_eq!(hash("a.example.com", "v2"), "DXy4UHaXuEE=");
    assert_eq!(hash("b.example.com", "v1"), "h28SFcGHy0g=");
}

#[test]
fn a_run_time_resource_in_a_built_in_group() {
    // A new resource in a served built-in group/version joins its list; a new version of a
    // built-in group gets the CRD version priority (100, above every built-in version) as its
    // own APIService would, while the group keeps its place.
    let c = added(
        &base(),
        vec![
            ResourceSpec::custom("networking.k8s.io", "v1", "Route", "routes", true),
            ResourceSpec::custom("networking.k8s.io", "v2", "Tunnel", "tunnels", true),
        ],
    );
    let v1 = parse(&c.resource_list("networking.k8s.io", "v1").unwrap());
    let names: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ingressclasses",
            "ingresses",
            "ingresses/status",
            "ipaddresses",
            "networkpolicies",
            "routes",
            "servicecidrs",
            "servicecidrs/status"
        ]
    );
    let g = parse(&c.api_group("networking.k8s.io").unwrap());
    assert_eq!(g["preferredVersion"]["version"], "v2");
    assert_eq!(
        group_names(&parse(&c.api_group_list()), "groups"),
        group_names(&parse(&base().api_group_list()), "groups")
    );
    assert_eq!(
        group_names(&parse(&c.aggregated(false, "v2")), "items"),
        group_names(&parse(&base().aggregated(false, "v2")), "items")
    );
}

#[test]
fn removal_takes_each_resource_and_then_the_group_away() {
    let full = added(&base(), vec![widget("v1"), widget("v2"), gadget()]);
    let no_gadget = removed(&full, &[("example.com", "v1", "gadgets")]);
    assert!(no_gadget.generation() > full.generation());
    assert!(no_gadget.lookup("example.com", "v1", "gadgets").is_none());
    assert!(no_gadget.by_kind("example.com", "v1", "Gadget").is_none());
    assert!(!no_gadget.resources().any(|r| r.plural == "gadgets"));
    let v1 = parse(&no_gadget.resource_list("example.com", "v1").unwrap());
    assert!(!v1.to_string().contains("gadgets"));
    assert!(parse(&no_gadget.aggregated(false, "v2"))
        .to_string()
        .contains("widgets"));
    assert!(!parse(&no_gadget.aggregated(false, "v2"))
        .to_string()
        .contains("gadgets"));

    let only_v2 = removed(&no_gadget, &[("example.com", "v1", "widgets")]);
    assert!(only_v2.resource_list("example.com", "v1").is_none());
    let g = parse(&only_v2.api_group("example.com").unwrap());
    assert_eq!(g["versions"].as_array().unwrap().len(), 1);
    let v2 = only_v2.lookup("example.com", "v2", "widgets").unwrap();
    assert_eq!(only_v2.storage_version(v2).unwrap().version, "v1");

    let none = removed(&only_v2, &[("example.com", "v2", "widgets")]);
    assert!(none.api_group("example.com").is_none());
    assert!(none.resource_list("example.com", "v2").is_none());
    assert!(none.lookup("example.com", "v2", "widgets").is_none());
    assert!(none.storage_version(v2).is_none());
    for doc in [
        none.api_group_list(),
        none.aggregated(false, "v2"),
        none.aggregated(false, "v2beta1"),
    ] {
        assert!(!String::from_utf8(doc).unwrap().contains("example.com"));
    }
    assert_eq!(none.api_group_list(), base().api_group_list());
    assert_eq!(none.aggregated(false, "v2"), base().aggregated(false, "v2"));
    assert_eq!(built_in_documents(&none), built_in_documents(&base()));
}

#[test]
fn refused_changes_say_why() {
    let c = added(&base(), vec![widget("v1")]);
    let bad = |f: &dyn Fn(&mut ResourceSpec)| {
        let mut s = gadget();
        f(&mut s);
        CatalogChange::add(vec![s])
    };
    let id = |g: &str, v: &str, p: &str| ResourceId::new(g, v, p);
    // (change, expected error, words the message must contain)
    let cases: Vec<(CatalogChange, CatalogError, &str)> = vec![
        (
            CatalogChange::add(vec![widget("v1")]),
            CatalogError::PathTaken {
                group: "example.com".into(),
                version: "v1".into(),
                plural: "widgets".into(),
            },
            "resource widgets in example.com/v1 is already served",
        ),
        (
            bad(&|s| s.kind = "Widget".into()),
            CatalogError::KindTaken {
                group: "example.com".into(),
                version: "v1".into(),
                kind: "Widget".into(),
                plural: "widgets".into(),
            },
            "kind Widget in example.com/v1 is already served as widgets",
        ),
        (
            CatalogChange::add(vec![gadget(), gadget()]),
            CatalogError::PathTaken {
                group: "example.com".into(),
                version: "v1".into(),
                plural: "gadgets".into(),
            },
            "already served",
        ),
        (
            CatalogChange::add(vec![ResourceSpec::custom(
                "apps",
                "v1",
                "Deployment",
                "deployments",
                true,
            )]),
            CatalogError::BuiltIn {
                group: "apps".into(),
                plural: "deployments".into(),
            },
            "deployments.apps is a built-in resource",
        ),
        (
            // Disabled by default in v1.32, still built in: its storage is the built-in type's.
            CatalogChange::add(vec![ResourceSpec::custom(
                "resource.k8s.io",
                "v1beta1",
                "ResourceClaim",
                "resourceclaims",
                true,
            )]),
            CatalogError::BuiltIn {
                group: "resource.k8s.io".into(),
                plural: "resourceclaims".into(),
            },
            "built-in",
        ),
        (
            CatalogChange::remove(vec![id("", "v1", "pods")]),
            CatalogError::BuiltIn {
                group: "".into(),
                plural: "pods".into(),
            },
            "pods.core is a built-in resource",
        ),
        (
            CatalogChange::remove(vec![id("example.com", "v2", "widgets")]),
            CatalogError::NotServed {
                group: "example.com".into(),
                version: "v2".into(),
                plural: "widgets".into(),
            },
            "resource widgets in example.com/v2 is not served",
        ),
        (
            CatalogChange::remove(vec![
                id("example.com", "v1", "widgets"),
                id("example.com", "v1", "widgets"),
            ]),
            CatalogError::NotServed {
                group: "example.com".into(),
                version: "v1".into(),
                plural: "widgets".into(),
            },
            "not served",
        ),
        (
            CatalogChange::add(vec![ResourceSpec {
                kind: "Wodget".into(),
                ..widget("v2")
            }]),
            CatalogError::Inconsistent {
                group: "example.com".into(),
                plural: "widgets".into(),
                reason: "kind Widget and Wodget".into(),
            },
            "versions of widgets.example.com disagree: kind Widget and Wodget",
        ),
        (
            CatalogChange::add(vec![ResourceSpec {
                namespaced: false,
                ..widget("v2")
            }]),
            CatalogError::Inconsistent {
                group: "example.com".into(),
                plural: "widgets".into(),
                reason: "namespaced and cluster-scoped".into(),
            },
            "disagree",
        ),
        (
            CatalogChange::add(vec![ResourceSpec {
                storage_version: "v2".into(),
                ..widget("v2")
            }]),
            CatalogError::Inconsistent {
                group: "example.com".into(),
                plural: "widgets".into(),
                reason: "storage version v1 and v2".into(),
            },
            "storage version v1 and v2",
        ),
    ];
    for (change, want, words) in cases {
        let err = c
            .with_changes(&change)
            .err()
            .unwrap_or_else(|| panic!("{change:?} accepted"));
        assert_eq!(err, want, "{change:?}");
        assert!(err.to_string().contains(words), "{err}");
    }
    // Malformed definitions: (how, words of the reason)
    let invalid: Vec<(CatalogChange, &str)> = vec![
        (bad(&|s| s.group.clear()), "need a named group"),
        (bad(&|s| s.group = "core".into()), "\"core\" is reserved"),
        (
            bad(&|s| s.plural = "Gadgets".into()),
            "plural \"Gadgets\" must not contain 'G'",
        ),
        (
            bad(&|s| s.plural = "gad/gets".into()),
            "must not contain '/'",
        ),
        (bad(&|s| s.kind.clear()), "kind must not be empty"),
        (bad(&|s| s.version = "v".repeat(64)), "longer than 63 bytes"),
        (bad(&|s| s.verbs.clear()), "at least one verb"),
        (
            bad(&|s| s.verbs.push("get".into())),
            "verb \"get\" is listed twice",
        ),
        (
            bad(&|s| s.short_names = vec!["gd".into(), "gd".into()]),
            "short name \"gd\" is listed twice",
        ),
        (
            bad(&|s| s.subresources = vec![SubresourceSpec::status(), SubresourceSpec::status()]),
            "subresource \"status\" is listed twice",
        ),
        (
            bad(&|s| s.storage_version.clear()),
            "storage version must not be empty",
        ),
    ];
    for (change, words) in invalid {
        let err = c
            .with_changes(&change)
            .err()
            .unwrap_or_else(|| panic!("{change:?} accepted"));
        assert!(matches!(err, CatalogError::Invalid { .. }), "{err:?}");
        assert!(err.to_string().contains(words), "{err} lacks {words}");
    }
}

#[test]
fn remove_and_add_in_one_change_replaces() {
    let c = added(&base(), vec![widget("v1")]);
    // A CRD moving to v2 as its storage version: remove v1, add v1 and v2 stored as v2.
    let stored_v2 = |v: &str| ResourceSpec {
        storage_version: "v2".into(),
        ..widget(v)
    };
    let next = c
        .with_changes(&CatalogChange {
            remove: vec![ResourceId::new("example.com", "v1", "widgets")],
            add: vec![stored_v2("v1"), stored_v2("v2")],
        })
        .unwrap();
    let v1 = next.lookup("example.com", "v1", "widgets").unwrap();
    assert_eq!(next.storage_version(v1).unwrap().version, "v2");
}

#[test]
fn runtime_config_disabled_built_ins_stay_disabled() {
    let c = Catalog::new("batch/v1=false,api/beta=true").unwrap();
    let after = added(&c, vec![widget("v1")]);
    assert!(after.lookup("batch", "v1", "jobs").is_none());
    assert!(after.api_group("batch").is_none());
    assert!(!String::from_utf8(after.api_group_list())
        .unwrap()
        .contains("\"batch\""));
    assert!(after
        .lookup("resource.k8s.io", "v1beta1", "resourceclaims")
        .is_some());
    assert_eq!(after.resources().count(), c.resources().count() + 1);
    let jobs = CatalogChange::add(vec![ResourceSpec::custom(
        "batch", "v1", "Job", "jobs", true,
    )]);
    assert!(matches!(
        after.with_changes(&jobs),
        Err(CatalogError::BuiltIn { .. })
    ));
}

#[test]
fn an_old_snapshot_answers_as_before() {
    let old = base().with_server_address("10.1.2.3:6443");
    let old_docs = (old.api_group_list(), old.aggregated(false, "v2"));
    let added = added(&old, vec![widget("v1")]);
    assert!(added.generation() > old.generation());
    assert!(old.lookup("example.com", "v1", "widgets").is_none());
    assert_eq!(
        (old.api_group_list(), old.aggregated(false, "v2")),
        old_docs
    );
    let info = Arc::clone(added.lookup("example.com", "v1", "widgets").unwrap());
    let gone = added
        .with_changes(&CatalogChange::remove(vec![ResourceId::of(&info)]))
        .unwrap();
    assert!(gone.generation() > added.generation());
    assert!(gone.lookup("example.com", "v1", "widgets").is_none());
    // What was handed out stays usable: the snapshot and the resource's info.
    assert!(added.lookup("example.com", "v1", "widgets").is_some());
    assert_eq!((info.kind, info.plural), ("Widget", "widgets"));
    assert!(String::from_utf8(gone.api_versions())
        .unwrap()
        .contains("10.1.2.3:6443"));
    // A refused change builds nothing.
    assert!(gone
        .with_changes(&CatalogChange::remove(vec![ResourceId::of(&info)]))
        .is_err());
}

#[test]
fn names_are_interned_once() {
    let spec = || ResourceSpec::custom("intern.example.com", "v1", "Internee", "internees", true);
    let with = added(&base(), vec![spec()]);
    let first = Arc::clone(
        with.lookup("intern.example.com", "v1", "internees")
            .unwrap(),
    );
    let without = with
        .with_changes(&CatalogChange::remove(vec![ResourceId::of(&first)]))
        .unwrap();
    let again = added(&without, vec![spec()]);
    let second = again
        .lookup("intern.example.com", "v1", "internees")
        .unwrap();
    assert!(std::ptr::eq(first.kind, second.kind));
    assert!(std::ptr::eq(first.group, second.group));
    assert!(std::ptr::eq(first.verbs, second.verbs));
    assert!(keel_catalog::interned_bytes() <= keel_catalog::INTERNED_BYTES_MAX);
}
