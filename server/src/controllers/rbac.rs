//! The RBAC controller: upstream's bootstrap policy reconciled at start (the `rbac/bootstrap-
//! roles` post-start hook), the policy the `RBAC` mode decides by (`authz::Rbac`) filled before
//! the server reports ready and kept current from the watch feeds of the four kinds, and the
//! ClusterRole aggregation controller (a ClusterRole with an `aggregationRule` gets the rules
//! of the ClusterRoles its selectors match).
//!
//! Reconciliation, as upstream's for objects annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"` (what the bootstrap objects carry): a
//! missing object is created; a role missing some of the default rules gets them added (its
//! own rules are kept), a binding missing some default subjects gets them added, an absent
//! `aggregationRule` is set. An object annotated `"false"` is left as it is.

use crate::authz::Rbac;
use crate::objects;
use crate::registry::{CreateOptions, Source, UpdateOptions};
use crate::routes::Resource;
use crate::selection::Selection;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_engine::Revision;
use keel_rbac::{PolicyIndex, PolicyRule};
use serde_json::Value;
use std::sync::Arc;

const GROUP: &str = "rbac.authorization.k8s.io";
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The four kinds, by resource, in the order they are loaded (roles before the bindings
/// that name them, so no decision meets a binding without its role while loading).
const RESOURCES: [&str; 4] = [
    "clusterroles",
    "roles",
    "clusterrolebindings",
    "rolebindings",
];

/// How often the whole policy is read again even when the watches say nothing (a safety
/// net, as an informer's resync).
const RESYNC: std::time::Duration = std::time::Duration::from_secs(300);

/// Before the server reports ready: the bootstrap policy reconciled, the policy loaded and
/// aggregated. Returns the revisions the watches continue from.
/// `aggregate`: the ClusterRole aggregation controller runs (`--controllers`).
pub async fn start(st: &State, rbac: &Rbac, aggregate: bool) -> [Revision; 4] {
    if let Err(e) = reconcile_bootstrap(st).await {
        eprintln!("rbac controller: bootstrap policy: {}", e.message);
    }
    let revs = match load(st, rbac).await {
        Ok(revs) => revs,
        Err(e) => {
            eprintln!("rbac controller: loading the policy: {}", e.message);
            [Revision::ZERO; 4]
        }
    };
    // Aggregated roles that aggregate others (admin takes edit's, which takes view's) need
    // a round each; done here, their rules count from the first request on (the watches
    // start after the last round's writes).
    let mut revs = revs;
    for _ in 0..AGGREGATION_ROUNDS_AT_START_MAX {
        if !aggregate || !aggregate_roles(st, rbac).await {
            break;
        }
        match load(st, rbac).await {
            Ok(after) => revs = after,
            Err(_) => break,
        }
    }
    revs
}

/// Rounds of aggregation before the server reports ready (the bootstrap chain needs three;
/// a cycle of aggregated roles would go on, and the watches take over after these).
const AGGREGATION_ROUNDS_AT_START_MAX: usize = 8;

/// Keeps the policy current from the watches, on its own thread.
pub fn spawn(
    st: Arc<State>,
    rbac: Arc<Rbac>,
    from: [Revision; 4],
    aggregate: bool,
) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-rbac-controller", move || {
        run(st, rbac, from, aggregate)
    })
}

async fn run(st: Arc<State>, rbac: Arc<Rbac>, mut from: [Revision; 4], aggregate: bool) {
    loop {
        let mut watches = Vec::new();
        for (i, plural) in RESOURCES.iter().enumerate() {
            let routes = st.routes.load();
            let Some(res) = routes.lookup(GROUP, "v1", plural) else {
                continue;
            };
            if let Some(w) = super::watch_all_after(&st, res, from[i]).await {
                watches.push(w);
            }
        }
        let ended = follow(&st, &rbac, &mut watches, aggregate).await;
        if ended {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        // A watch ended (or the resync came): read everything again.
        match load(&st, &rbac).await {
            Ok(revs) => from = revs,
            Err(e) => eprintln!("rbac controller: loading the policy: {}", e.message),
        }
        if aggregate {
            aggregate_roles(&st, &rbac).await;
        }
    }
}

/// Applies the watches' events to the policy until one ends (true) or the resync is due.
async fn follow(
    st: &State,
    rbac: &Rbac,
    watches: &mut [(Source, Selection)],
    aggregate: bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + RESYNC;
    loop {
        let step = std::future::poll_fn(|cx| {
            for (source, sel) in watches.iter_mut() {
                match source.poll(cx, sel, 1 << 20) {
                    crate::registry::Step::Pending(_) | crate::registry::Step::Nothing(_) => {}
                    step => return std::task::Poll::Ready(step),
                }
            }
            std::task::Poll::Pending
        });
        let step = match tokio::time::timeout_at(deadline, step).await {
            Ok(step) => step,
            Err(_) => return false,
        };
        match step {
            crate::registry::Step::Chunk(chunk, _) => {
                let mut bytes = Vec::with_capacity(chunk.len());
                for p in chunk.pieces() {
                    bytes.extend_from_slice(p);
                }
                let cluster_roles = apply_events(&mut rbac.index.write(), &bytes);
                if cluster_roles && aggregate {
                    aggregate_roles(st, rbac).await;
                }
            }
            crate::registry::Step::Ended(_) => return true,
            _ => {}
        }
    }
}

/// Applies JSON watch lines to `index`; true when a ClusterRole changed (aggregation may
/// have something to do).
fn apply_events(index: &mut PolicyIndex, lines: &[u8]) -> bool {
    let mut cluster_roles = false;
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(ev) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(obj) = ev.get("object") else {
            continue;
        };
        cluster_roles |= obj.get("kind").and_then(Value::as_str) == Some("ClusterRole");
        let r = match ev.get("type").and_then(Value::as_str) {
            Some("ADDED" | "MODIFIED") => index.upsert_value(obj).map(|_| ()),
            Some("DELETED") => index.remove_value(obj).map(|_| ()),
            _ => Ok(()),
        };
        if let Err(e) = r {
            eprintln!("rbac controller: {e:?}");
        }
    }
    cluster_roles
}

/// Reads the whole policy into a fresh index and puts it in place; the revision each kind
/// was read at.
async fn load(st: &State, rbac: &Rbac) -> Result<[Revision; 4], ApiError> {
    let mut index = PolicyIndex::new();
    let mut revs = [Revision::ZERO; 4];
    for (i, plural) in RESOURCES.iter().enumerate() {
        let routes = st.routes.load();
        let Some(res) = routes.lookup(GROUP, "v1", plural) else {
            continue;
        };
        let (items, rev) = st.registry.list_all(res, "").await?;
        revs[i] = rev;
        for kv in items {
            let obj = objects::parse_stored(kv.value())?;
            if let Err(e) = index.upsert_value(&obj) {
                eprintln!("rbac controller: {e:?}");
            }
        }
    }
    *rbac.index.write() = index;
    Ok(revs)
}

/// Writes the rules aggregation gives each aggregated ClusterRole whose rules differ; true
/// when it wrote any.
async fn aggregate_roles(st: &State, rbac: &Rbac) -> bool {
    let updates = {
        let index = rbac.index.read();
        keel_rbac::aggregation::aggregation_updates(index.cluster_roles())
    };
    let routes = st.routes.load();
    let Some(res) = routes.lookup(GROUP, "v1", "clusterroles") else {
        return false;
    };
    let wrote = !updates.is_empty();
    for u in updates {
        let rules = serde_json::to_value(&u.rules).expect("rules serialize");
        let opts = UpdateOptions {
            strategy: true,
            ..Default::default()
        };
        let r = st
            .registry
            .guaranteed_update(res, "", &u.name, &opts, &mut |cur| {
                let mut new = cur.cloned().ok_or_else(|| res.not_found(&u.name))?;
                objects::meta_mut(&mut new).shift_remove("resourceVersion");
                new["rules"] = rules.clone();
                Ok(new)
            })
            .await;
        if let Err(e) = super::gone_ok(r) {
            eprintln!("rbac controller: aggregating {}: {}", u.name, e.message);
        }
    }
    wrote
}

/// Creates or reconciles every object of upstream's bootstrap policy.
async fn reconcile_bootstrap(st: &State) -> Result<(), ApiError> {
    for wanted in keel_rbac::bootstrap::all_json() {
        let plural = match wanted.get("kind").and_then(Value::as_str) {
            Some("ClusterRole") => "clusterroles",
            Some("ClusterRoleBinding") => "clusterrolebindings",
            Some("Role") => "roles",
            Some("RoleBinding") => "rolebindings",
            _ => continue,
        };
        let routes = st.routes.load();
        let Some(res) = routes.lookup(GROUP, "v1", plural) else {
            continue;
        };
        ensure(st, res, wanted).await?;
    }
    Ok(())
}

async fn ensure(st: &State, res: &Resource, wanted: &Value) -> Result<(), ApiError> {
    let name = objects::name(wanted).to_owned();
    let ns = wanted
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let current = match st.registry.get_latest(res, &ns, &name).await {
        Ok((v, _)) => Some(v),
        Err(e) if e.code == 404 => None,
        Err(e) => return Err(e),
    };
    let Some(current) = current else {
        return match st
            .registry
            .create(res, &ns, wanted.clone(), &CreateOptions::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        };
    };
    if current
        .at("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE))
        .and_then(Value::as_str)
        == Some("false")
    {
        return Ok(());
    }
    let Some(reconciled) = reconciled(&current, wanted) else {
        return Ok(());
    };
    let opts = UpdateOptions {
        strategy: true,
        ..Default::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, &ns, &name, &opts, &mut |cur| {
            let cur = cur.ok_or_else(|| res.not_found(&name))?;
            let mut new = reconciled_from(cur, &reconciled);
            objects::meta_mut(&mut new).shift_remove("resourceVersion");
            Ok(new)
        })
        .await;
    super::gone_ok(r)
}

/// What reconciling `current` against `wanted` changes: the members to set (`rules`,
/// `subjects`, `aggregationRule`), or `None` when it already holds what upstream ensures.
fn reconciled(current: &Value, wanted: &Value) -> Option<serde_json::Map<String, Value>> {
    let mut set = serde_json::Map::new();
    if let Some(want) = wanted.get("rules") {
        let have: Vec<PolicyRule> = parse_list(current.get("rules"));
        let want: Vec<PolicyRule> = parse_list(Some(want));
        let (covered, missing) = keel_rbac::covers(&have, &want);
        // An aggregated role's rules are the aggregation's: only its selectors are ensured.
        if !covered && wanted.get("aggregationRule").is_none() {
            let mut rules = have;
            rules.extend(missing);
            set.insert(
                "rules".into(),
                serde_json::to_value(rules).expect("rules serialize"),
            );
        }
    }
    if let (Some(want), None) = (
        wanted.get("aggregationRule"),
        current.get("aggregationRule"),
    ) {
        set.insert("aggregationRule".into(), want.clone());
    }
    if let Some(Value::Array(want)) = wanted.get("subjects") {
        let have = current
            .get("subjects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let missing: Vec<&Value> = want.iter().filter(|s| !have.contains(s)).collect();
        if !missing.is_empty() {
            let mut subjects = have;
            subjects.extend(missing.into_iter().cloned());
            set.insert("subjects".into(), Value::Array(subjects));
        }
    }
    (!set.is_empty()).then_some(set)
}

fn reconciled_from(current: &Value, set: &serde_json::Map<String, Value>) -> Value {
    let mut new = current.clone();
    for (k, v) in set {
        new[k.as_str()] = v.clone();
    }
    new
}

fn parse_list<T: serde::de::DeserializeOwned>(v: Option<&Value>) -> Vec<T> {
    v.and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reconciling_adds_missing_rules_and_subjects_and_keeps_the_rest() {
        let wanted =
            json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let current =
            json!({"rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]});
        let set = reconciled(&current, &wanted).unwrap();
        assert_eq!(
            set["rules"],
            json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
                   {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
        );
        let current = json!({"rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]});
        assert!(reconciled(&current, &wanted).is_none(), "covered already");
        let wanted = json!({"subjects": [{"kind": "Group", "name": "system:authenticated",
                                          "apiGroup": "rbac.authorization.k8s.io"}]});
        let current = json!({"subjects": [{"kind": "User", "name": "u",
                                           "apiGroup": "rbac.authorization.k8s.io"}]});
        let set = reconciled(&current, &wanted).unwrap();
        assert_eq!(set["subjects"].as_array().unwrap().len(), 2);
        let wanted = json!({"aggregationRule": {"clusterRoleSelectors": []}, "rules": []});
        let set = reconciled(&json!({}), &wanted).unwrap();
        assert!(set.contains_key("aggregationRule") && !set.contains_key("rules"));
    }

    #[test]
    fn watch_lines_keep_the_index_current() {
        let mut index = PolicyIndex::new();
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "u"}]});
        let line = |t: &str, o: &Value| format!("{}\n", json!({"type": t, "object": o}));
        let groups = vec![];
        let attrs = keel_rbac::Attributes::resource("u", &groups, "get", "", "pods", "ns");
        let changed = apply_events(
            &mut index,
            format!("{}{}", line("ADDED", &role), line("ADDED", &binding)).as_bytes(),
        );
        assert!(changed);
        assert!(index.authorize(&attrs).allowed);
        assert!(!apply_events(
            &mut index,
            line("DELETED", &binding).as_bytes()
        ));
        assert!(!index.authorize(&attrs).allowed);
    }
}
