//! The flow-control controller (upstream's APF configuration controller and bootstrap
//! ensurer, in one): keeps upstream's bootstrap FlowSchemas and PriorityLevelConfigurations
//! in the store, keeps each FlowSchema's `Dangling` condition, and publishes the stored
//! configuration to the serving cores (`FlowControl::publish`) whenever either collection
//! changes. Like every controller here it reads and writes through the registry.
//!
//! Bootstrap objects, as upstream's ensurer: a missing one is created (mandatory and
//! suggested alike); a mandatory one (`exempt`, `catch-all`) always gets its bootstrap spec
//! back; a suggested one does when its `apf.kubernetes.io/autoupdate-spec` annotation is
//! `"true"` (an object without the annotation is left as its owner wrote it).

use crate::flowcontrol::bootstrap::{self, AUTOUPDATE_ANNOTATION, MANDATORY};
use crate::flowcontrol::config;
use crate::limits::{FLOWCONTROL_PASS_INTERVAL_MIN, FLOWCONTROL_RESYNC};
use crate::objects;
use crate::registry::{CreateOptions, UpdateOptions};
use crate::routes::{Resource, Snapshot};
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

/// Runs the controller on its own thread with its own single-threaded runtime.
pub fn spawn(st: Arc<State>) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-flowcontrol-controller", move || run(st))
}

/// The two resources in the routes snapshot (`None` when the group is switched off).
fn resources(routes: &Snapshot) -> Option<(&Resource, &Resource)> {
    Some((
        routes.lookup(GROUP, "v1", "prioritylevelconfigurations")?,
        routes.lookup(GROUP, "v1", "flowschemas")?,
    ))
}

async fn run(st: Arc<State>) {
    let routes = st.routes.load();
    let Some((levels, schemas)) = resources(&routes) else {
        // The group is switched off (--runtime-config): the built-in bootstrap stays in force.
        return;
    };
    let mut watches = [
        super::watch_all(&st, levels).await,
        super::watch_all(&st, schemas).await,
    ];
    loop {
        let pass_started = tokio::time::Instant::now();
        if let Err(e) = pass(&st, levels, schemas).await {
            eprintln!("flow-control controller: {}", e.message);
        }
        tokio::time::sleep_until(pass_started + FLOWCONTROL_PASS_INTERVAL_MIN).await;
        // Wake on a change to either collection, or after the resync interval.
        let ended = super::wait_for_change(&mut watches, FLOWCONTROL_RESYNC).await;
        if ended {
            watches = [
                super::watch_all(&st, levels).await,
                super::watch_all(&st, schemas).await,
            ];
        }
    }
}

/// One pass now (at start, before the server reports ready, so that the first requests are
/// classified by the stored objects and answered with their UIDs).
pub async fn reconcile(st: &State) -> Result<(), String> {
    let routes = st.routes.load();
    let (levels, schemas) = resources(&routes).ok_or("")?;
    pass(st, levels, schemas).await.map_err(|e| e.message)
}

/// One reconciliation: bootstrap objects, then the configuration and the conditions.
async fn pass(st: &State, levels: &Resource, schemas: &Resource) -> Result<(), ApiError> {
    ensure_all(st, levels, bootstrap::priority_levels()).await?;
    ensure_all(st, schemas, bootstrap::flow_schemas()).await?;
    let stored_levels = list(st, levels).await?;
    let stored_schemas = list(st, schemas).await?;
    let parsed_levels: Vec<config::Level> = stored_levels
        .iter()
        .filter_map(config::parse_level)
        .collect();
    let parsed_schemas: Vec<config::Schema> = stored_schemas
        .iter()
        .filter_map(config::parse_schema)
        .collect();
    let names: Vec<String> = parsed_levels.iter().map(|l| l.name.clone()).collect();
    st.flowcontrol.publish(parsed_schemas, parsed_levels);
    for fs in &stored_schemas {
        set_dangling(st, schemas, fs, &names).await?;
    }
    Ok(())
}

async fn list(st: &State, res: &Resource) -> Result<Vec<Value>, ApiError> {
    let (items, _) = st.registry.list_all(res, "").await?;
    items
        .iter()
        .map(|kv| objects::parse_stored(kv.value()))
        .collect()
}

/// Ensures every bootstrap object of one kind.
async fn ensure_all(st: &State, res: &Resource, wanted: Vec<Value>) -> Result<(), ApiError> {
    for obj in wanted {
        ensure(st, res, obj).await?;
    }
    Ok(())
}

fn autoupdate(obj: &Value) -> bool {
    obj.at("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

async fn ensure(st: &State, res: &Resource, wanted: Value) -> Result<bool, ApiError> {
    let name = objects::name(&wanted).to_string();
    let mandatory = MANDATORY.contains(&name.as_str());
    let current = match st.registry.get_latest(res, "", &name).await {
        Ok((v, _)) => Some(v),
        Err(e) if e.code == 404 => None,
        Err(e) => return Err(e),
    };
    match current {
        None => match st
            .registry
            .create(res, "", wanted, &CreateOptions::default())
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        },
        Some(cur) => {
            let up_to_date = cur.get("spec") == wanted.get("spec");
            let update = if mandatory {
                !up_to_date || !autoupdate(&cur)
            } else {
                autoupdate(&cur) && !up_to_date
            };
            if !update {
                return Ok(false);
            }
            let opts = UpdateOptions {
                dry_run: false,
                subresource: "",
                replace: false,
                strategy: false,
            };
            st.registry
                .guaranteed_update(res, "", &name, &opts, &mut |current| {
                    let mut new = current
                        .ok_or_else(|| ApiError::not_found(GROUP, res.info.plural, &name))?
                        .clone();
                    new["spec"] = wanted["spec"].clone();
                    let meta = &mut new["metadata"];
                    if !meta["annotations"].is_object() {
                        meta["annotations"] = json!({});
                    }
                    meta["annotations"][AUTOUPDATE_ANNOTATION] = json!("true");
                    Ok(new)
                })
                .await?;
            Ok(true)
        }
    }
}

/// Sets the `Dangling` condition of a FlowSchema when it changes (upstream's wording).
async fn set_dangling(
    st: &State,
    res: &Resource,
    fs: &Value,
    levels: &[String],
) -> Result<(), ApiError> {
    let name = objects::name(fs).to_string();
    let Some(level) = fs
        .at("/spec/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
    else {
        return Ok(());
    };
    let dangling = !levels.iter().any(|l| l == level);
    let (status, reason, message) = if dangling {
        (
            "True",
            "NotFound",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"),
        )
    } else {
        (
            "False",
            "Found",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"),
        )
    };
    let current = fs
        .at("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Dangling"));
    if current.is_some_and(|c| c["status"] == status && c["reason"] == reason) {
        return Ok(());
    }
    let condition = json!({
        "type": "Dangling",
        "status": status,
        "lastTransitionTime": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "reason": reason,
        "message": message,
    });
    let opts = UpdateOptions {
        dry_run: false,
        subresource: "status",
        replace: false,
        strategy: false,
    };
    let result = st
        .registry
        .guaranteed_update(res, "", &name, &opts, &mut |current| {
            let mut new = current
                .ok_or_else(|| ApiError::not_found(GROUP, "flowschemas", &name))?
                .clone();
            let mut conditions: Vec<Value> = new
                .at("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| c["type"] != "Dangling");
            conditions.push(condition.clone());
            if !new["status"].is_object() {
                new["status"] = json!({});
            }
            new["status"]["conditions"] = Value::Array(conditions);
            Ok(new)
        })
        .await;
    match result {
        // Deleted meanwhile: nothing to mark.
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Ok(()),
    }
}
