//! The CustomResourceDefinition controllers upstream's API server runs in process, as one:
//! - naming: accepts a definition's names unless another definition of its group holds them
//!   (`status.acceptedNames`, the `NamesAccepted` condition, reasons as upstream's);
//! - serving: the custom resources served follow the definitions (`custom::served`), on
//!   every core at once (`LiveRoutes::apply_custom`), before anything says they are;
//! - establishing: `Established` once served (upstream's two status writes are one here);
//! - finalizing: a deleted definition's instances are deleted, then its cleanup finalizer
//!   is removed (the registry then removes it, and the next pass stops serving it).
//!
//! It watches definitions and reconciles all of them on every change (or resync).

use crate::custom::{self, condition_is, has_condition, CLEANUP_FINALIZER};
use crate::limits::{CRD_PASS_INTERVAL_MIN, CRD_RESYNC};
use crate::objects;
use crate::registry::{DeleteOptions, Source, UpdateOptions};
use crate::routes::Resource;
use crate::selection::Selection;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_catalog::{CatalogChange, ResourceId};
use keel_strategy::set_crd_condition as set_condition;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

const GROUP: &str = "apiextensions.k8s.io";
const PLURAL: &str = "customresourcedefinitions";

/// Runs the controller on its own thread with its own single-threaded runtime, from what
/// [`start`] served.
pub fn spawn(st: Arc<State>, served: ServedNow) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-crd-controller", move || run(st, served))
}

/// The first pass, before the server reports ready: the stored definitions' resources are
/// served from the first request on (upstream's readiness waits for its CRD informer too).
pub async fn start(st: &State) -> ServedNow {
    let mut served = ServedNow::new();
    if let Err(e) = reconcile_all(st, &mut served).await {
        eprintln!("crd controller: {}", e.message);
    }
    served
}

async fn watch_crds(st: &State) -> Option<(Source, Selection)> {
    let routes = st.routes.load();
    let res = routes.lookup(GROUP, "v1", PLURAL)?;
    super::watch_all(st, res).await
}

/// What the controller has put into the catalog: id → fingerprint.
pub type ServedNow = HashMap<ResourceId, String>;

async fn run(st: Arc<State>, mut served: ServedNow) {
    let mut watch = watch_crds(&st).await;
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = reconcile_all(&st, &mut served).await {
            eprintln!("crd controller: {}", e.message);
        }
        tokio::time::sleep_until(pass_started + CRD_PASS_INTERVAL_MIN).await;
        let mut watches = [watch.take()];
        let ended = super::wait_for_change(&mut watches, CRD_RESYNC).await;
        let [w] = watches;
        watch = if ended { watch_crds(&st).await } else { w };
    }
}

async fn reconcile_all(st: &State, served: &mut ServedNow) -> Result<(), ApiError> {
    let routes = st.routes.load();
    let Some(res) = routes.lookup(GROUP, "v1", PLURAL) else {
        return Ok(());
    };
    let (items, _) = st.registry.list_all(res, "").await?;
    let mut crds = Vec::with_capacity(items.len());
    for kv in items {
        crds.push(objects::parse_stored(kv.value())?);
    }
    // Names first (in memory), so what is served and what is said agree.
    let now = objects::now_rfc3339();
    let mut writes = Vec::new();
    for i in 0..crds.len() {
        // The group's names are gathered only for a definition that needs them.
        if settled(&crds[i]) {
            continue;
        }
        let used = names_in_use(&crds, i);
        let status = next_status(&crds[i], &used, &now);
        if let Some(status) = status {
            crds[i]["status"] = status.clone();
            writes.push((objects::name(&crds[i]).to_owned(), status));
        }
    }
    serve(st, &crds, served);
    for (name, status) in writes {
        write_status(st, res, &name, status).await;
    }
    for crd in &crds {
        if objects::is_deleting(crd)
            && objects::finalizers(crd)
                .iter()
                .any(|f| f == CLEANUP_FINALIZER)
        {
            finalize(st, res, crd).await?;
        }
    }
    Ok(())
}

/// The resource and kind names the other definitions of `crds[i]`'s group have accepted
/// (its own accepted ones too, as upstream counts them).
struct Used {
    resources: BTreeSet<String>,
    kinds: BTreeSet<String>,
}

fn names_in_use(crds: &[Value], i: usize) -> Used {
    let group = crds[i].at("/spec/group");
    let mut used = Used {
        resources: BTreeSet::new(),
        kinds: BTreeSet::new(),
    };
    for c in crds.iter().filter(|c| c.at("/spec/group") == group) {
        let accepted = c.at("/status/acceptedNames");
        let s = |k: &str| {
            accepted
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        used.resources.insert(s("plural"));
        used.resources.insert(s("singular"));
        for n in accepted
            .and_then(|a| a.get("shortNames"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            used.resources.insert(n.to_owned());
        }
        used.kinds.insert(s("kind"));
        used.kinds.insert(s("listKind"));
    }
    used
}

/// Upstream's check of one requested name: fine when it is the one already accepted or no
/// other definition holds it.
fn fresh(requested: &str, accepted: &str, used: &BTreeSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("\"{requested}\" is already in use"))
    }
}

/// One requested name (`key` of the spec's names) taken into `next` when [`fresh`], else
/// its conflict message.
fn accept_name(
    spec: &Value,
    accepted: &Value,
    key: &str,
    used: &BTreeSet<String>,
    next: &mut Map<String, Value>,
) -> Result<(), String> {
    let s = |v: &Value| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let want = s(spec);
    fresh(&want, &s(accepted), used)?;
    if want.is_empty() {
        next.remove(key);
    } else {
        next.insert(key.into(), want.into());
    }
    Ok(())
}

/// The requested short names taken into `next` when none new is held by another
/// definition, else the conflicts' message (upstream's aggregate of them all).
fn short_names(
    spec: &Value,
    accepted: &Value,
    used: &BTreeSet<String>,
    next: &mut Map<String, Value>,
) -> Result<(), String> {
    let want = spec.get("shortNames").cloned().unwrap_or(Value::Null);
    let have = accepted.get("shortNames").cloned().unwrap_or(Value::Null);
    if want == have {
        return Ok(());
    }
    let names = |v: &Value| -> Vec<String> {
        let all = v.as_array().into_iter().flatten().filter_map(Value::as_str);
        all.map(String::from).collect()
    };
    let held = names(&have);
    let errs: Vec<String> = names(&want)
        .iter()
        .filter(|n| !held.contains(n))
        .filter_map(|n| fresh(n, "", used).err())
        .collect();
    match errs.as_slice() {
        [] => {
            if want.is_null() {
                next.remove("shortNames");
            } else {
                next.insert("shortNames".into(), want);
            }
            Ok(())
        }
        [one] => Err(one.clone()),
        many => Err(format!("[{}]", many.join(", "))),
    }
}

/// A definition whose accepted names are its spec's, accepted and established: nothing
/// for the naming and establishing steps to do.
fn settled(crd: &Value) -> bool {
    let status = crd.get("status").unwrap_or(&Value::Null);
    let accepted = status.get("acceptedNames").unwrap_or(&Value::Null);
    let spec = crd.at("/spec/names").unwrap_or(&Value::Null);
    spec_names(spec) == spec_names(accepted)
        && condition_is(status, "NamesAccepted", "True")
        && condition_is(status, "Established", "True")
}

/// The definition's next status (names, NamesAccepted, Established), or `None` when it
/// stays as it is.
fn next_status(crd: &Value, used: &Used, now: &str) -> Option<Value> {
    let empty = Value::Object(Map::new());
    let spec = crd.at("/spec/names").unwrap_or(&empty);
    let status = crd.get("status").cloned().unwrap_or_else(|| json!({}));
    let accepted = status
        .get("acceptedNames")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if settled(crd) {
        return None;
    }
    let established = condition_is(&status, "Established", "True");
    let mut next_names = accepted.as_object().cloned().unwrap_or_default();
    // As upstream, each name is looked at in turn and the last conflict is the one told.
    let mut cond: Option<(&str, String)> = None;
    for (key, reason, set) in [
        ("plural", "PluralConflict", &used.resources),
        ("singular", "SingularConflict", &used.resources),
        ("shortNames", "ShortNamesConflict", &used.resources),
        ("kind", "KindConflict", &used.kinds),
        ("listKind", "ListKindConflict", &used.kinds),
    ] {
        let taken = if key == "shortNames" {
            short_names(spec, &accepted, set, &mut next_names)
        } else {
            accept_name(spec, &accepted, key, set, &mut next_names)
        };
        if let Err(m) = taken {
            cond = Some((reason, m));
        }
    }
    match spec.get("categories") {
        Some(c) if !c.is_null() => next_names.insert("categories".into(), c.clone()),
        _ => next_names.remove("categories"),
    };
    let (names_status, reason, message) = match cond {
        None => ("True", "NoConflicts", "no conflicts found".to_owned()),
        Some((r, m)) => ("False", r, m),
    };
    let mut next = status.clone();
    next["acceptedNames"] = Value::Object(ordered_names(next_names));
    set_condition(
        &mut next,
        "NamesAccepted",
        names_status,
        reason,
        &message,
        now,
    );
    if !established {
        if names_status == "True" {
            // Served before this is written (see `reconcile_all`), so `True` at once.
            set_condition(
                &mut next,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                now,
            );
        } else if !has_condition(&next, "Established") {
            set_condition(
                &mut next,
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted",
                now,
            );
        }
    }
    (next != status).then_some(next)
}

/// The names as the Go struct orders them (plural, singular, shortNames, kind, listKind,
/// categories); `plural` and `kind` are always written, the others only when set.
fn ordered_names(mut m: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for k in [
        "plural",
        "singular",
        "shortNames",
        "kind",
        "listKind",
        "categories",
    ] {
        match m.remove(k) {
            Some(v) => {
                out.insert(k.into(), v);
            }
            None if k == "plural" || k == "kind" => {
                out.insert(k.into(), "".into());
            }
            None => {}
        }
    }
    out
}

fn spec_names(v: &Value) -> Vec<Value> {
    [
        "plural",
        "singular",
        "shortNames",
        "kind",
        "listKind",
        "categories",
    ]
    .iter()
    .map(|k| v.get(*k).cloned().unwrap_or(Value::Null))
    .collect()
}

/// Makes the served custom resources those the definitions say, in one catalog change.
fn serve(st: &State, crds: &[Value], served: &mut ServedNow) {
    let mut want = HashMap::new();
    for crd in crds {
        for s in custom::served(crd) {
            want.insert(s.spec.id(), s);
        }
    }
    let remove: Vec<ResourceId> = served
        .iter()
        .filter(|(id, fp)| want.get(*id).is_none_or(|s| &s.fingerprint != *fp))
        .map(|(id, _)| id.clone())
        .collect();
    let add: Vec<&custom::Served> = want
        .iter()
        .filter(|(id, s)| served.get(*id) != Some(&s.fingerprint))
        .map(|(_, s)| s)
        .collect();
    if remove.is_empty() && add.is_empty() {
        return;
    }
    let change = CatalogChange {
        remove: remove.clone(),
        add: add.iter().map(|s| s.spec.clone()).collect(),
    };
    // Only versions served anew have their definitions made (schemas compiled). Objects
    // stored until now may predate a changed schema: reads prune and default them (a
    // definition served anew with the same schema keeps what its predecessor decodes).
    let routes = st.routes.load();
    let now = st.registry.current_revision();
    let resolver = st.aggregator.resolver();
    let defined: Vec<(ResourceId, Arc<custom::Custom>)> = add
        .iter()
        .map(|s| {
            let mut c = s.custom(resolver.as_ref());
            let before = routes
                .lookup(&s.spec.group, &s.spec.version, &s.spec.plural)
                .and_then(|r| r.custom.as_ref());
            c.decode_through = match before {
                Some(b) if b.schema == c.schema => b.decode_through,
                _ => now,
            };
            (s.spec.id(), Arc::new(c))
        })
        .collect();
    // The definitions replaced or removed: their watches end once the change is served.
    let retired: Vec<Arc<custom::Custom>> = remove
        .iter()
        .filter_map(|id| routes.lookup(&id.group, &id.version, &id.plural))
        .filter_map(|r| r.custom.clone())
        .collect();
    let retire = || retired.iter().for_each(|c| c.retire());
    match st.routes.apply_custom(&change, defined.clone()) {
        Ok(_) => {
            retire();
            st.aggregator.served_changed.notify_one();
            for id in &remove {
                served.remove(id);
            }
            for s in add {
                served.insert(s.spec.id(), s.fingerprint.clone());
            }
        }
        Err(e) => {
            // One bad definition must not keep the others from being served: remove what
            // went away, then add one at a time.
            eprintln!("crd controller: serving custom resources: {e}");
            if st
                .routes
                .apply_custom(&CatalogChange::remove(remove.clone()), Vec::new())
                .is_ok()
            {
                for id in &remove {
                    served.remove(id);
                }
                retire();
            }
            for (s, (id, custom)) in add.iter().zip(defined) {
                let one = CatalogChange::add(vec![s.spec.clone()]);
                let name = custom.crd.clone();
                match st.routes.apply_custom(&one, vec![(id, custom)]) {
                    Ok(_) => {
                        st.aggregator.served_changed.notify_one();
                        served.insert(s.spec.id(), s.fingerprint.clone());
                    }
                    Err(e) => eprintln!("crd controller: {name}: {e}"),
                }
            }
        }
    }
}

async fn write_status(st: &State, res: &Resource, name: &str, status: Value) {
    let opts = UpdateOptions {
        subresource: "status",
        strategy: true,
        ..Default::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, "", name, &opts, &mut |cur| {
            let mut new = cur.cloned().ok_or_else(|| res.not_found(name))?;
            objects::meta_mut(&mut new).shift_remove("resourceVersion");
            new["status"] = status.clone();
            Ok(new)
        })
        .await;
    if let Err(e) = super::gone_ok(r) {
        eprintln!("crd controller: status of {name}: {}", e.message);
    }
}

/// Deletes the definition's instances; once none is left, takes the cleanup finalizer off.
async fn finalize(st: &State, res: &Resource, crd: &Value) -> Result<(), ApiError> {
    let name = objects::name(crd).to_owned();
    let group = crd.at("/spec/group").and_then(Value::as_str).unwrap_or("");
    let plural = crd
        .at("/status/acceptedNames/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let routes = st.routes.load();
    let instances = routes
        .resources()
        .find(|r| r.custom.is_some() && r.info.group == group && r.info.plural == plural);
    let mut remaining = 0;
    if let Some(cr) = instances {
        let items = st.registry.list_all_stored(cr, "").await?;
        for kv in items {
            remaining += 1;
            let obj = objects::parse_stored(kv.value())?;
            if objects::is_deleting(&obj) {
                continue;
            }
            let ns = objects::meta_str(&obj, "namespace")
                .unwrap_or("")
                .to_owned();
            let opts = DeleteOptions {
                propagation: Some("Background".into()),
                ..Default::default()
            };
            let _ = st
                .registry
                .delete(cr, &ns, objects::name(&obj), &opts)
                .await;
        }
    }
    let now = objects::now_rfc3339();
    let established = condition_is(
        crd.get("status").unwrap_or(&Value::Null),
        "Established",
        "True",
    );
    let mut status = crd.get("status").cloned().unwrap_or_else(|| json!({}));
    if remaining > 0 {
        set_condition(
            &mut status,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            &now,
        );
        if Some(&status) != crd.get("status") {
            write_status(st, res, &name, status).await;
        }
        return Ok(());
    }
    if established {
        set_condition(
            &mut status,
            "Terminating",
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
            &now,
        );
    } else {
        set_condition(
            &mut status,
            "Terminating",
            "False",
            "NeverEstablished",
            "resource was never established",
            &now,
        );
    }
    write_status(st, res, &name, status).await;
    super::set_finalizer(st, res, "", &name, CLEANUP_FINALIZER, false).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(names: Value, status: Value) -> Value {
        json!({"metadata": {"name": "x"}, "spec": {"group": "g.io", "names": names}, "status": status})
    }

    fn used(resources: &[&str], kinds: &[&str]) -> Used {
        Used {
            resources: resources.iter().map(|s| s.to_string()).collect(),
            kinds: kinds.iter().map(|s| s.to_string()).collect(),
        }
    }

    const NOW: &str = "2026-11-27T16:00:00Z";

    /// A new definition's names are accepted and it is established in one status.
    #[test]
    fn fresh_names_are_accepted_and_established() {
        let c = crd(
            json!({"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"]}),
            json!({"acceptedNames": {"plural": "", "kind": ""}, "conditions": null, "storedVersions": ["v1"]}),
        );
        let s = next_status(&c, &used(&["", ""], &["", ""]), NOW).unwrap();
        assert_eq!(
            s,
            json!({
                "acceptedNames": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget", "listKind": "WidgetList"},
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "lastTransitionTime": NOW, "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "lastTransitionTime": NOW, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
                ],
                "storedVersions": ["v1"]
            })
        );
        // Applied again: nothing to write.
        let mut again = c.clone();
        again["status"] = s;
        assert_eq!(
            next_status(
                &again,
                &used(&["widgets", "widget", "wd"], &["Widget", "WidgetList"]),
                "later"
            ),
            None
        );
    }

    /// A plural another definition of the group holds is refused with upstream's reason and
    /// message; nothing is served (not established).
    #[test]
    fn taken_names_conflict() {
        let c = crd(
            json!({"plural": "widgets", "singular": "widget", "kind": "Gadget", "listKind": "GadgetList"}),
            json!({"acceptedNames": {"plural": "", "kind": ""}}),
        );
        let s = next_status(&c, &used(&["widgets"], &["Widget"]), NOW).unwrap();
        let conds = s["conditions"].as_array().unwrap();
        assert_eq!(conds[0]["reason"], "PluralConflict");
        assert_eq!(conds[0]["status"], "False");
        assert_eq!(conds[0]["message"], "\"widgets\" is already in use");
        assert_eq!(
            conds[1],
            json!({"type": "Established", "status": "False", "lastTransitionTime": NOW, "reason": "NotAccepted", "message": "not all names are accepted"})
        );
        assert_eq!(s["acceptedNames"]["kind"], "Gadget");
        assert_eq!(s["acceptedNames"]["plural"], "");
    }

    /// A condition whose status stays keeps its transition time.
    #[test]
    fn transition_time_kept_while_status_stays() {
        let mut st = json!({"conditions": [{"type": "A", "status": "True", "lastTransitionTime": "t0", "reason": "r", "message": "m"}]});
        set_condition(&mut st, "A", "True", "r2", "m2", "t1");
        assert_eq!(st["conditions"][0]["lastTransitionTime"], "t0");
        assert_eq!(st["conditions"][0]["reason"], "r2");
        set_condition(&mut st, "A", "False", "r3", "m3", "t2");
        assert_eq!(st["conditions"][0]["lastTransitionTime"], "t2");
        set_condition(&mut st, "B", "True", "r", "m", "t3");
        assert_eq!(st["conditions"].as_array().unwrap().len(), 2);
    }
}
