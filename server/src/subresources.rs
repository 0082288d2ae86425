//! Subresources with their own behaviour: `scale`, pods' `binding`, `eviction` and `log`, and
//! namespaces' `finalize`. (`status` goes through the generic registry.)

use crate::app::App;
use crate::call::Call;
use crate::objects::{self, Spliced};
use crate::registry::{self, DeleteOptions, UPDATE_RETRIES_MAX};
use crate::respond::{self, Format};
use crate::store::storage_error;
use keel_api::status::{ApiError, StatusCause};
use keel_engine::Error as EngineError;
use keel_http::Response;
use serde_json::{json, Value};

fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

fn read_object(app: &App, c: &Call<'_>) -> Result<(Value, u64), ApiError> {
    let kv = app
        .storage
        .get_latest(&c.key(&c.rr.name))?
        .ok_or_else(|| c.not_found(&c.rr.name))?;
    Ok((respond::parse_stored(kv.value())?, kv.mod_revision.get()))
}

// ---------------------------------------------------------------- scale

fn scale_format(c: &Call<'_>) -> Result<Format, ApiError> {
    let proto = keel_proto::supports("autoscaling/v1", "Scale");
    respond::negotiate(c.accept(), false, proto)
}

pub async fn scale(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = scale_format(c)?;
    let (group, plural) = (c.info.group, c.info.plural);
    if c.rr.verb == "get" {
        let (obj, _) = read_object(app, c)?;
        let s = keel_strategy::scale_from(group, plural, &obj)
            .ok_or_else(|| ApiError::not_found(group, &format!("{plural}/scale"), &c.rr.name))?;
        return respond::value(200, format, &s);
    }
    let dry_run = c.query.dry_run()?;
    let key = c.key(&c.rr.name);
    for _ in 0..UPDATE_RETRIES_MAX {
        let (obj, rev) = read_object(app, c)?;
        let current = keel_strategy::scale_from(group, plural, &obj)
            .ok_or_else(|| ApiError::not_found(group, &format!("{plural}/scale"), &c.rr.name))?;
        let wanted = if c.rr.verb == "update" {
            respond::decode_body(c.content_type(), &c.req.body)?
        } else {
            patched_scale(c, &current)?
        };
        if let Some(rv) = objects::meta_str(&wanted, "resourceVersion").filter(|s| !s.is_empty()) {
            if rv != rev.to_string() {
                return Err(ApiError::conflict(group, plural, &c.rr.name, "the object has been modified; please apply your changes to the latest version and try again"));
            }
        }
        let replicas = wanted
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if replicas < 0 {
            return Err(ApiError::invalid("autoscaling", "Scale", &c.rr.name, vec![StatusCause {
                reason: "FieldValueInvalid".into(),
                message: format!("spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"),
                field: "spec.replicas".into(),
            }]));
        }
        let mut new = obj.clone();
        keel_strategy::apply_scale(&mut new, replicas);
        keel_strategy::prepare_for_update(
            group,
            plural,
            &mut new,
            &obj,
            &keel_strategy::Ctx {
                now_rfc3339: objects::now_rfc3339(),
            },
        );
        if dry_run || new == obj {
            let s = keel_strategy::scale_from(group, plural, &new).unwrap_or(current);
            return respond::value(200, format, &s);
        }
        let spliced = Spliced::new(&mut new);
        match app.storage.update(&key, rev, &spliced).await {
            Ok((bytes, _)) => {
                let stored = respond::parse_stored(&bytes)?;
                let s = keel_strategy::scale_from(group, plural, &stored).unwrap_or(Value::Null);
                return respond::value(200, format, &s);
            }
            Err(EngineError::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(ApiError::conflict(
        group,
        plural,
        &c.rr.name,
        "too many concurrent updates; try again",
    ))
}

fn patched_scale(c: &Call<'_>, current: &Value) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(&c.req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let media = c
        .content_type()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    let mut out = current.clone();
    match media {
        "application/json-patch+json" => keel_api::patch::json_patch(&mut out, &patch)?,
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            keel_api::patch::merge_patch(&mut out, &patch)
        }
        _ => return Err(ApiError::unsupported_media_type(&registry::PATCH_TYPES)),
    }
    Ok(out)
}

// ---------------------------------------------------------------- pods

/// `POST pods/<name>/binding` (and the `bindings` resource): assigns the pod to a node.
pub async fn binding(app: &App, c: &mut Call<'_>, pod_name: &str) -> Result<Response, ApiError> {
    let body = respond::decode_body(c.content_type(), &c.req.body)?;
    let node = body
        .pointer("/target/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                "",
                "Binding",
                pod_name,
                vec![StatusCause {
                    reason: "FieldValueRequired".into(),
                    message: "target.name: Required value".into(),
                    field: "target.name".into(),
                }],
            )
        })?
        .to_string();
    if c.query.dry_run()? {
        return respond::value(201, Format::Json, &success(201));
    }
    let key = c.loc.key(&c.rr.namespace, pod_name);
    for _ in 0..UPDATE_RETRIES_MAX {
        let kv = app
            .storage
            .get_latest(&key)?
            .ok_or_else(|| ApiError::not_found("", "pods", pod_name))?;
        let mut pod = respond::parse_stored(kv.value())?;
        if objects::is_deleting(&pod) {
            return Err(ApiError::conflict(
                "",
                "pods",
                pod_name,
                "pod is being deleted, cannot be assigned to a host",
            ));
        }
        if let Some(current) = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            return Err(ApiError::conflict(
                "",
                "pods",
                pod_name,
                &format!("pod {pod_name} is already assigned to node \"{current}\""),
            ));
        }
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("nodeName".into(), node.clone().into());
        }
        set_scheduled_condition(&mut pod);
        let spliced = Spliced::new(&mut pod);
        match app
            .storage
            .update(&key, kv.mod_revision.get(), &spliced)
            .await
        {
            Ok(_) => return respond::value(201, Format::Json, &success(201)),
            Err(EngineError::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(ApiError::conflict(
        "",
        "pods",
        pod_name,
        "too many concurrent updates; try again",
    ))
}

fn set_scheduled_condition(pod: &mut Value) {
    let now = objects::now_rfc3339();
    let root = pod.as_object_mut().expect("object");
    let status = root.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conds = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(conds) = conds.as_array_mut() else {
        return;
    };
    conds.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
    conds.push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
}

/// `POST pods/<name>/eviction`: deletes the pod with the eviction's delete options.
/// (PodDisruptionBudgets are not consulted yet.)
pub async fn eviction(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let body = respond::decode_body(c.content_type(), &c.req.body)?;
    let mut opts = DeleteOptions {
        dry_run: c.query.dry_run()?,
        ..Default::default()
    };
    if let Some(d) = body.get("deleteOptions") {
        opts.merge_body(d)?;
    }
    let name = c.rr.name.clone();
    registry::delete_one(app, c.info, &c.loc, &c.rr.namespace, &name, &opts).await?;
    respond::value(201, Format::Json, &success(201))
}

/// `GET pods/<name>/log`. keel does not connect to kubelets, so a pod's log is never
/// available: a pod not on a node gets upstream's empty answer, a pod on a node without a
/// Node object upstream's 404, and otherwise the kubelet's answer for a container that has
/// not started, or 503.
pub async fn log(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let (pod, _) = read_object(app, c)?;
    let containers: Vec<String> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("name")?.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let container = match c.query.nonempty("container") {
        Some(name) if containers.iter().any(|n| n == name) => name.to_string(),
        Some(name) => {
            return Err(ApiError::bad_request(format!(
                "container {name} is not valid for pod {}",
                c.rr.name
            )))
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {}, choose one of: [{}]",
                c.rr.name,
                containers.join(" ")
            )))
        }
    };
    // Upstream answers an empty stream for a pod no node has taken yet.
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Ok(respond::response(200, "text/plain", Vec::new()));
    }
    // The node's kubelet is found through its Node object.
    let nodes = app.catalog.lookup("", "v1", "nodes").expect("nodes");
    let node_key = crate::store::Location::of(app.catalog, nodes).key("", node);
    if app.storage.get_latest(&node_key)?.is_none() {
        return Err(ApiError::not_found("", "nodes", node));
    }
    let running = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|s| s.get("name").and_then(Value::as_str) == Some(&container))
        })
        .is_some_and(|s| {
            s.pointer("/state/running").is_some() || s.pointer("/state/terminated").is_some()
        });
    if !running {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{}\" is waiting to start: ContainerCreating",
            c.rr.name
        )));
    }
    let mut e = ApiError::internal(format!(
        "keel does not proxy to kubelets: no log stream for container {container} of pod {}",
        c.rr.name
    ));
    e.code = 503;
    e.reason = "ServiceUnavailable";
    Err(e)
}

// ---------------------------------------------------------------- namespaces

/// `PUT namespaces/<name>/finalize`: replaces `spec.finalizers`; a terminating namespace
/// with no finalizers left is removed.
pub async fn finalize(app: &App, c: &mut Call<'_>) -> Result<Response, ApiError> {
    let format = c.format()?;
    let body = respond::decode_body(c.content_type(), &c.req.body)?;
    let wanted = body
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    let key = c.key(&c.rr.name);
    for _ in 0..UPDATE_RETRIES_MAX {
        let (mut ns, rev) = read_object(app, c)?;
        let old = ns.clone();
        if let Some(spec) = ns
            .as_object_mut()
            .map(|r| r.entry("spec").or_insert_with(|| json!({})))
        {
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("finalizers".into(), wanted.clone());
            }
        }
        let empty = wanted.as_array().is_none_or(|a| a.is_empty());
        if objects::is_deleting(&ns) && empty && objects::finalizers(&ns).is_empty() {
            match app.storage.delete(&key, rev).await {
                Ok(_) => return respond::value(200, format, &ns),
                Err(EngineError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_error(e)),
            }
        }
        if ns == old {
            return respond::value(200, format, &ns);
        }
        let spliced = Spliced::new(&mut ns);
        match app.storage.update(&key, rev, &spliced).await {
            Ok((bytes, _)) => return respond::object(200, format, bytes, |_| Value::Null),
            Err(EngineError::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(ApiError::conflict(
        "",
        "namespaces",
        &c.rr.name,
        "too many concurrent updates; try again",
    ))
}
