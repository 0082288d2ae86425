//! Local APIServices, as upstream's autoregister and CRD registration controllers keep them:
//! one per group version this server serves itself (the aggregator's own group aside), named
//! `<version>.<group>`, with no service and upstream's priorities.
//! - Built-in group versions are labelled `kube-aggregator.kubernetes.io/automanaged:
//!   onstart` and synced on the controller's first pass only: created when missing, their
//!   spec set when it differs, and `onstart` APIServices of group versions no longer served
//!   deleted (a client may delete or change them afterwards).
//! - Custom resources' group versions are labelled `"true"` and kept in step with the
//!   definitions on every pass: created, updated, and deleted once no definition serves them.
//!
//! An APIService without the label (a client's) is never touched.

use crate::objects;
use crate::registry::{CreateOptions, DeleteOptions, UpdateOptions};
use crate::routes::Resource;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_catalog::LocalApiService;
use serde_json::{json, Value};

/// The label saying how an APIService is synced.
pub const MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
/// Synced once, at start (built-in group versions).
pub const ON_START: &str = "onstart";
/// Synced always (custom resources' group versions).
pub const ALWAYS: &str = "true";

use crate::aggregator::AGGREGATOR_GROUP;

/// An APIService's name for `group`/`version`.
pub fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The spec upstream gives a local APIService (an empty group is left out, as Go omits it).
pub fn desired_spec(s: &LocalApiService) -> Value {
    let mut spec = json!({
        "groupPriorityMinimum": s.group_priority,
        "version": s.version,
        "versionPriority": s.version_priority,
    });
    if !s.group.is_empty() {
        spec["group"] = s.group.into();
    }
    spec
}

fn label(api: &Value) -> &str {
    api.at("/metadata/labels")
        .and_then(|l| l.get(MANAGED_LABEL))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// An update of a local APIService: its name, spec and sync label.
pub type Update = (String, Value, &'static str);

/// What to do with the APIServices: `(create, update, delete)`, each by name. `first`: the
/// controller's first pass (built-in ones are synced then only).
pub fn plan(
    served: &[LocalApiService],
    existing: &[Value],
    first: bool,
) -> (Vec<Value>, Vec<Update>, Vec<String>) {
    let (mut create, mut update, mut delete) = (Vec::new(), Vec::new(), Vec::new());
    let mut wanted = std::collections::HashSet::new();
    for s in served.iter().filter(|s| s.group != AGGREGATOR_GROUP) {
        let sync = if s.builtin { ON_START } else { ALWAYS };
        if sync == ON_START && !first {
            continue;
        }
        let name = name_of(s.group, s.version);
        let spec = desired_spec(s);
        wanted.insert(name.clone());
        match existing.iter().find(|a| objects::name(a) == name) {
            None => create.push(json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": name, "labels": {MANAGED_LABEL: sync}},
                "spec": spec,
            })),
            // A client's own APIService is left alone.
            Some(a) if label(a).is_empty() => {}
            Some(a) => {
                if a.get("spec") != Some(&spec) || label(a) != sync {
                    update.push((name, spec, sync));
                }
            }
        }
    }
    for a in existing {
        let name = objects::name(a);
        let stale = match label(a) {
            ALWAYS => true,
            ON_START => first,
            _ => false,
        };
        if stale && !wanted.contains(name) {
            delete.push(name.to_owned());
        }
    }
    (create, update, delete)
}

/// Applies [`plan`]; true when it wrote anything.
pub async fn sync(
    st: &State,
    res: &Resource,
    existing: &[Value],
    first: bool,
) -> Result<bool, ApiError> {
    let served = st.routes.load().catalog.local_apiservices();
    let (create, update, delete) = plan(&served, existing, first);
    let wrote = !(create.is_empty() && update.is_empty() && delete.is_empty());
    for obj in create {
        match st
            .registry
            .create(res, "", obj, &CreateOptions::default())
            .await
        {
            Ok(_) => {}
            // Made meanwhile (another API server on the same store).
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    let opts = UpdateOptions {
        strategy: true,
        ..Default::default()
    };
    for (name, spec, sync) in update {
        let r = st
            .registry
            .guaranteed_update(res, "", &name, &opts, &mut |cur| {
                let mut new = cur.cloned().ok_or_else(|| res.not_found(&name))?;
                let meta = objects::meta_mut(&mut new);
                meta.shift_remove("resourceVersion");
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if !labels.is_object() {
                    *labels = json!({});
                }
                labels[MANAGED_LABEL] = sync.into();
                new["spec"] = spec.clone();
                Ok(new)
            })
            .await;
        super::super::gone_ok(r)?;
    }
    for name in delete {
        match st
            .registry
            .delete(res, "", &name, &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(wrote)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(group: &'static str, version: &'static str, builtin: bool) -> LocalApiService {
        let (g, v) = if builtin { (17800, 15) } else { (1000, 100) };
        LocalApiService {
            group,
            version,
            group_priority: g,
            version_priority: v,
            builtin,
        }
    }

    fn existing(name: &str, sync: &str, spec: Value) -> Value {
        let labels = if sync.is_empty() {
            json!({})
        } else {
            json!({MANAGED_LABEL: sync})
        };
        json!({"metadata": {"name": name, "labels": labels}, "spec": spec})
    }

    #[test]
    fn local_apiservices_are_planned_as_upstream_syncs_them() {
        let served = [
            local("", "v1", true),
            local("apps", "v1", true),
            local("apiregistration.k8s.io", "v1", true),
            local("ex.example.com", "v1", false),
        ];
        // First pass: everything but the aggregator's own group is created; the core one
        // without a group.
        let (create, update, delete) = plan(&served, &[], true);
        let names: Vec<&str> = create.iter().map(objects::name).collect();
        assert_eq!(names, ["v1.", "v1.apps", "v1.ex.example.com"]);
        assert_eq!(
            create[0]["spec"],
            json!({"groupPriorityMinimum": 17800, "version": "v1", "versionPriority": 15})
        );
        assert_eq!(create[0]["metadata"]["labels"][MANAGED_LABEL], "onstart");
        assert_eq!(create[2]["metadata"]["labels"][MANAGED_LABEL], "true");
        assert!(update.is_empty() && delete.is_empty());

        let apps = desired_spec(&served[1]);
        let current = [
            existing("v1.", ON_START, desired_spec(&served[0])),
            existing(
                "v1.apps",
                ON_START,
                json!({"group": "apps", "version": "v1"}),
            ),
            existing("v1.ex.example.com", ALWAYS, desired_spec(&served[3])),
            existing("v1beta1.gone.example.com", ALWAYS, json!({})),
            existing("v1beta1.old", ON_START, json!({})),
            existing("v1beta1.metrics.k8s.io", "", json!({"service": {}})),
        ];
        // Later passes: only custom resources' are synced; a built-in one a client changed
        // stays changed.
        let (create, update, delete) = plan(&served, &current, false);
        assert!(create.is_empty() && update.is_empty());
        assert_eq!(delete, ["v1beta1.gone.example.com"]);
        // At start, built-in ones are set right and those no longer served go.
        let (create, update, delete) = plan(&served, &current, true);
        assert!(create.is_empty());
        assert_eq!(update, [("v1.apps".to_string(), apps, ON_START)]);
        assert_eq!(delete, ["v1beta1.gone.example.com", "v1beta1.old"]);
    }
}
