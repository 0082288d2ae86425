//! The ownership updater against the Server-Side Apply rules of
//! shared/spec/resource-api.md ("Apply (server-side apply)"), numbered as there.

mod common;

use keel_smd::updater::{ApplyError, ManagedSet, ManagerKey, Managers, Updater};
use keel_smd::{Path, PathElement, Set};
use serde_json::{json, Value};

const V: &str = "apps/v1";

struct World {
    schema: keel_smd::schema::Schema,
    root: keel_smd::schema::TypeRef,
}

impl World {
    fn new() -> World {
        World {
            schema: common::schema(),
            root: common::root(),
        }
    }

    fn up(&self) -> Updater<'_> {
        Updater::new(&self.schema, &self.root)
    }

    fn apply(
        &self,
        live: &Value,
        config: Value,
        m: Managers,
        who: &str,
        force: bool,
    ) -> Result<(Value, Managers), ApplyError> {
        let a = self
            .up()
            .apply(live, &config, V, m, &ManagerKey::apply(who, ""), force)?;
        Ok((a.object, a.managers))
    }

    fn update(&self, live: &Value, new: &Value, m: Managers, who: &str) -> Managers {
        self.up()
            .update(live, new, V, m, &ManagerKey::update(who, V, ""))
            .unwrap()
    }
}

fn owned(m: &Managers, key: &ManagerKey) -> String {
    m.get(key).map(|s| s.set.to_fields_v1()).unwrap_or_default()
}

fn applier(name: &str) -> ManagerKey {
    ManagerKey::apply(name, "")
}

fn updater(name: &str) -> ManagerKey {
    ManagerKey::update(name, V, "")
}

/// What upstream's strip-meta manager removes from every set before it is stored.
fn strip_meta(s: &Set) -> Set {
    let strip = Set::from_paths(
        [
            vec!["apiVersion"],
            vec!["kind"],
            vec!["metadata"],
            vec!["metadata", "name"],
            vec!["metadata", "namespace"],
            vec!["metadata", "creationTimestamp"],
            vec!["metadata", "uid"],
            vec!["metadata", "resourceVersion"],
        ]
        .into_iter()
        .map(|p| Path::fields(&p)),
    );
    s.difference(&strip)
}

/// `kubectl create deployment nginx --image=nginx`: the Update entry's FieldsV1 is the
/// one real clusters show. The live object of a create is the type's zero value as Go
/// renders it (`metadata.creationTimestamp: null`, `spec.strategy: {}`...), which is why
/// `spec`, `template` and `containers` are prefixes only, while `labels` and
/// `rollingUpdate`, absent from the zero value, are members too.
#[test]
fn update_on_create_owns_what_kubectl_create_owns() {
    let w = World::new();
    let zero = json!({"metadata": {"creationTimestamp": null}, "spec": {"selector": null, "strategy": {}, "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}}}, "status": {}});
    let created = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
                "spec": {
                    "containers": [{"name": "nginx", "image": "nginx", "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler"
                }
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600
        },
        "status": {}
    });
    let m = w.update(&zero, &created, Managers::new(), "kubectl-create");
    let set = strip_meta(&m[&updater("kubectl-create")].set);
    assert_eq!(
        set.to_fields_v1(),
        r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}"#
    );
}

/// Rule 1/3: an apply on nothing creates the object; the applier owns its configuration.
#[test]
fn apply_creates_and_owns_its_config() {
    let w = World::new();
    let config = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"replicas": 2}});
    let (obj, m) = w
        .apply(&json!({}), config.clone(), Managers::new(), "alice", false)
        .unwrap();
    assert_eq!(obj, config);
    assert_eq!(
        owned(&m, &applier("alice")),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{}}}"#
    );
    assert_eq!(m.len(), 1);
}

/// Rules 4 and 5(a): an Update manager owns `.spec.replicas`; an apply changing it
/// conflicts with upstream's exact message, and succeeds with force, leaving the applier
/// sole owner and dropping the Update manager that owns nothing any more (rule 13).
#[test]
fn conflict_with_updater_then_force() {
    let w = World::new();
    let live = json!({"spec": {"replicas": 1}});
    // Created from the type's zero value, where `spec` exists: the creator owns only
    // `.spec.replicas`, not `.spec` itself.
    let zero = json!({"spec": {}});
    let m = w.update(&zero, &live, Managers::new(), "kubectl-client-side-apply");
    let err = w
        .apply(
            &live,
            json!({"spec": {"replicas": 3}}),
            m.clone(),
            "alice",
            false,
        )
        .unwrap_err();
    let ApplyError::Conflicts(c) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        c.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas"#
    );
    assert_eq!(
        c.to_status(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": c.message(), "reason": "Conflict", "code": 409,
            "details": {"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-client-side-apply\" using apps/v1", "field": ".spec.replicas"}]}
        })
    );
    let (obj, m) = w
        .apply(&live, json!({"spec": {"replicas": 3}}), m, "alice", true)
        .unwrap();
    assert_eq!(obj, json!({"spec": {"replicas": 3}}));
    assert_eq!(
        owned(&m, &applier("alice")),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    assert!(
        !m.contains_key(&updater("kubectl-client-side-apply")),
        "{m:?}"
    );
}

/// Rule 4: an Update never conflicts; it takes the fields it changes from their owners.
#[test]
fn update_takes_changed_fields_without_conflict() {
    let w = World::new();
    let (live, m) = w
        .apply(
            &json!({}),
            json!({"spec": {"replicas": 1, "paused": false}}),
            Managers::new(),
            "alice",
            false,
        )
        .unwrap();
    let new = json!({"spec": {"replicas": 5, "paused": false}});
    let m = w.update(&live, &new, m, "hpa");
    assert_eq!(
        owned(&m, &applier("alice")),
        r#"{"f:spec":{"f:paused":{}}}"#
    );
    assert_eq!(
        owned(&m, &updater("hpa")),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    // Removing a field takes it from its owner too, and the remover owns nothing for it.
    let m = w.update(&new, &json!({"spec": {"replicas": 5}}), m, "editor");
    assert!(
        !m.contains_key(&applier("alice")),
        "alice owned only paused: dropped (rule 13)"
    );
    assert!(!m.contains_key(&updater("editor")));
}

/// Rule 5(b): removing a conflicting field from the config leaves the value and drops the
/// applier's claim. Rule 5(c)/6: setting the server's value shares ownership; a later change
/// by one sharer conflicts with the other.
#[test]
fn resolve_by_dropping_or_sharing() {
    let w = World::new();
    let (live, m) = w
        .apply(
            &json!({}),
            json!({"spec": {"replicas": 2}}),
            Managers::new(),
            "bob",
            false,
        )
        .unwrap();
    // 5(b): alice's config no longer mentions replicas.
    let (obj, m2) = w
        .apply(
            &live,
            json!({"spec": {"paused": true}}),
            m.clone(),
            "alice",
            false,
        )
        .unwrap();
    assert_eq!(obj, json!({"spec": {"replicas": 2, "paused": true}}));
    assert_eq!(
        owned(&m2, &applier("bob")),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    // 5(c): same value: shared, no conflict.
    let (obj, m3) = w
        .apply(&live, json!({"spec": {"replicas": 2}}), m, "alice", false)
        .unwrap();
    assert_eq!(obj, live);
    assert_eq!(
        owned(&m3, &applier("alice")),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    assert_eq!(
        owned(&m3, &applier("bob")),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    // 6: a sharer changing it conflicts with the other sharer.
    let err = w
        .apply(
            &obj,
            json!({"spec": {"replicas": 4}}),
            m3.clone(),
            "alice",
            false,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "bob": .spec.replicas"#
    );
    // A third applier changing it conflicts with both: the plural form, managers sorted.
    let err = w
        .apply(
            &obj,
            json!({"spec": {"replicas": 4}, "metadata": {"labels": {"x": "y"}}}),
            m3.clone(),
            "carol",
            false,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.replicas\nconflicts with \"bob\":\n- .spec.replicas"
    );
    // 13: ownership transfer: alice removes the field from her config; bob is now sole
    // owner, the value is unchanged, and alice, owning nothing, is dropped. (A config of
    // `{"spec": {}}` would leave her owning the empty `.spec`, as upstream.)
    let (obj2, m4) = w.apply(&obj, json!({}), m3, "alice", false).unwrap();
    assert_eq!(obj2, obj);
    assert!(!m4.contains_key(&applier("alice")));
    assert_eq!(
        owned(&m4, &applier("bob")),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
}

/// Rule 7/8: a field the applier applied before and no longer applies is deleted when no
/// one else owns it, kept when someone does; the same for list and map items.
#[test]
fn removed_from_config_is_pruned_unless_owned() {
    let w = World::new();
    let first = json!({
        "metadata": {"labels": {"a": "1", "b": "2"}},
        "spec": {"replicas": 2, "paused": true, "template": {"spec": {"containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "sidecar", "image": "side:1"}
        ]}}}
    });
    let (live, m) = w
        .apply(&json!({}), first, Managers::new(), "alice", false)
        .unwrap();
    // An updater takes paused and label b.
    let edited = {
        let mut e = live.clone();
        e["spec"]["paused"] = json!(false);
        e["metadata"]["labels"]["b"] = json!("3");
        e
    };
    let m = w.update(&live, &edited, m, "kubectl-edit");
    // Alice's next config drops label a, label b, paused, env Y and the sidecar.
    let second = json!({
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "X", "value": "1"}]}
        ]}}}
    });
    let (obj, m) = w.apply(&edited, second, m, "alice", false).unwrap();
    assert_eq!(
        obj,
        json!({
            "metadata": {"labels": {"b": "3"}},
            "spec": {"replicas": 2, "paused": false, "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1", "env": [{"name": "X", "value": "1"}]}
            ]}}}
        })
    );
    assert_eq!(
        owned(&m, &updater("kubectl-edit")),
        r#"{"f:metadata":{"f:labels":{"f:b":{}}},"f:spec":{"f:paused":{}}}"#
    );
}

/// Rule 8: items the applier never applied (added by an updater) survive its applies, and
/// list-map items keep their live order with new items after the item they follow.
#[test]
fn apply_keeps_foreign_items_and_order() {
    let w = World::new();
    let c = |names: &[&str]| json!({"spec": {"template": {"spec": {"containers": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}}}});
    let (live, m) = w
        .apply(&json!({}), c(&["a", "b"]), Managers::new(), "alice", false)
        .unwrap();
    let injected = c(&["a", "injected", "b"]);
    let m = w.update(&live, &injected, m, "webhook");
    let (obj, m) = w
        .apply(&injected, c(&["a", "b", "c"]), m, "alice", false)
        .unwrap();
    assert_eq!(obj, c(&["a", "injected", "b", "c"]));
    let item = |n: &str| {
        vec![
            PathElement::field("spec"),
            PathElement::field("template"),
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key([("name", json!(n))]),
        ]
    };
    assert!(m[&updater("webhook")].set.has(&item("injected")));
    assert!(m[&applier("alice")].set.has(&item("c")));
    // Dropping "a" from alice's config removes it (nobody else owns it).
    let (obj, _) = w.apply(&obj, c(&["b", "c"]), m, "alice", false).unwrap();
    assert_eq!(obj, c(&["injected", "b", "c"]));
}

/// Re-applying the same configuration changes nothing.
#[test]
fn reapply_is_a_no_op() {
    let w = World::new();
    let config = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 1}});
    let (live, m) = w
        .apply(&json!({}), config.clone(), Managers::new(), "alice", false)
        .unwrap();
    let a = w
        .up()
        .apply(&live, &config, V, m.clone(), &applier("alice"), false)
        .unwrap();
    assert!(!a.changed);
    assert_eq!(a.object, live);
    assert_eq!(a.managers, m);
}

/// Manager identity and how conflicts name managers (upstream's printManager): Apply
/// entries carry no version; subresources are named.
#[test]
fn manager_keys_and_names() {
    let status = ManagerKey::update("kubelet", "v1", "status");
    assert_eq!(
        status.identifier(),
        r#"{"manager":"kubelet","operation":"Update","apiVersion":"v1","subresource":"status"}"#
    );
    assert_eq!(
        status.to_string(),
        r#""kubelet" with subresource "status" using v1"#
    );
    let scale = ManagerKey::apply("hpa", "scale");
    assert_eq!(
        scale.identifier(),
        r#"{"manager":"hpa","operation":"Apply","subresource":"scale"}"#
    );
    assert_eq!(scale.to_string(), r#""hpa" with subresource "scale""#);
    // The same name as Apply and as Update are two managers.
    let mut m = Managers::new();
    for k in [applier("x"), updater("x")] {
        m.insert(
            k,
            ManagedSet {
                set: Set::new(),
                api_version: V.into(),
            },
        );
    }
    assert_eq!(m.len(), 2);
}

/// Rule 11: a list that was a set and became atomic is owned whole by whoever owned items
/// of it, so another applier's change conflicts.
#[test]
fn granular_to_atomic_schema_change_collapses_ownership() {
    use keel_smd::schema::{Atom, StructField, TypeRef};
    use keel_smd::typed::to_field_set;
    let with_args = |args: Atom| {
        let mut schema = common::schema();
        let Some(container) = schema
            .types
            .get_mut("Container")
            .and_then(|a| a.map.as_mut())
        else {
            panic!("Container is a struct")
        };
        container.fields.retain(|f| f.name != "args");
        container
            .fields
            .push(StructField::new("args", TypeRef::inline(args)));
        schema
    };
    let old = with_args(Atom::set_list(TypeRef::scalar()));
    let new = with_args(Atom::atomic_list(TypeRef::scalar()));
    let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["a", "b"]}]}}}});
    let old_set = to_field_set(&old, &common::root(), &live).unwrap();
    assert_eq!(
        old_set.to_fields_v1(),
        r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:args":{"v:\"a\"":{},"v:\"b\"":{}},"f:name":{}}}}}}}"#
    );
    let mut m = Managers::new();
    m.insert(
        applier("alice"),
        ManagedSet {
            set: old_set,
            api_version: V.into(),
        },
    );
    let root = common::root();
    let up = Updater::new(&new, &root);
    let config =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["z"]}]}}}});
    let err = up
        .apply(&live, &config, V, m.clone(), &applier("bob"), false)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "alice": .spec.template.spec.containers[name="c"].args"#
    );
    // A no-op update shows alice's reconciled set.
    let m = up.update(&live, &live, V, m, &updater("noop")).unwrap();
    assert_eq!(
        owned(&m, &applier("alice")),
        r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:args":{},"f:name":{}}}}}}}"#
    );
}

/// Reset fields (upstream's ignore filter; `status` for the main resource): an apply or an
/// update touching them neither gains nor takes them, and nobody conflicts on them.
#[test]
fn ignored_fields_are_never_owned() {
    let w = World::new();
    let status = Set::from_paths([Path::fields(&["status"])]);
    let up = w.up().with_ignored(&status);
    let config = json!({"spec": {"replicas": 1}, "status": {"replicas": 1}});
    let a = up
        .apply(
            &json!({}),
            &config,
            V,
            Managers::new(),
            &applier("alice"),
            false,
        )
        .unwrap();
    assert_eq!(
        owned(&a.managers, &applier("alice")),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    // The controller updates status through an updater for the status subresource, where
    // spec is ignored instead; it owns status.
    let spec = Set::from_paths([Path::fields(&["spec"])]);
    let status_up = w.up().with_ignored(&spec);
    let new = json!({"spec": {"replicas": 1}, "status": {"replicas": 2}});
    let ctrl = ManagerKey::update("kube-controller-manager", V, "status");
    let m = status_up
        .update(&a.object, &new, V, a.managers, &ctrl)
        .unwrap();
    assert_eq!(owned(&m, &ctrl), r#"{"f:status":{"f:replicas":{}}}"#);
    // An apply on the main resource setting status does not conflict with the controller.
    let a = up
        .apply(
            &new,
            &json!({"spec": {"replicas": 1}, "status": {"replicas": 9}}),
            V,
            m,
            &applier("alice"),
            false,
        )
        .unwrap();
    assert_eq!(
        owned(&a.managers, &ctrl),
        r#"{"f:status":{"f:replicas":{}}}"#
    );
}
