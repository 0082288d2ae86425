//! Subresources with their own behaviour: `scale`, pods' `binding`, `eviction` and `log`, and
//! namespaces' `finalize` (`status` is the generic update and patch, on the subresource).
//! Each write is one `Registry::guaranteed_update` whose change function makes the
//! subresource's change and checks its own preconditions.

use super::body::decode_body;
use super::call::Call;
use super::resource::PATCH_TYPES;
use super::respond;
use crate::objects;
use crate::registry::{DeleteOptions, UpdateOptions};
use crate::repr::{self, Format};
use crate::state::State;
use keel_api::status::{ApiError, StatusCause};
use keel_http::Response;
use serde_json::{json, Value};

fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// The options of a subresource write that decides every field it changes.
fn own_write(dry_run: bool, subresource: &str) -> UpdateOptions<'_> {
    UpdateOptions {
        dry_run,
        subresource,
        replace: false,
        strategy: false,
    }
}

// ---------------------------------------------------------------- scale

fn scale_format(c: &Call<'_>) -> Result<Format, ApiError> {
    let proto = keel_proto::supports("autoscaling/v1", "Scale");
    repr::negotiate(c.accept(), false, proto)
}

pub async fn scale(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    let format = scale_format(c)?;
    let (group, plural) = (c.info().group, c.info().plural);
    let name = c.name().to_string();
    let scale_of = |obj: &Value| {
        keel_strategy::scale_from(group, plural, obj)
            .ok_or_else(|| ApiError::not_found(group, &format!("{plural}/scale"), &name))
    };
    if c.rr.verb == "get" {
        let (obj, _) = st.registry.get_latest(&c.res, c.namespace(), &name)?;
        return respond::value(200, format, &scale_of(&obj)?);
    }
    let dry_run = c.query.dry_run()?;
    let ctx = keel_strategy::Ctx {
        now_rfc3339: objects::now_rfc3339(),
    };
    let updated = st
        .registry
        .guaranteed_update(
            &c.res,
            c.namespace(),
            &name,
            &own_write(dry_run, "scale"),
            &mut |current| {
                let obj = current.ok_or_else(|| c.not_found(&name))?;
                let current_scale = scale_of(obj)?;
                let wanted = if c.rr.verb == "update" {
                    decode_body(c.content_type(), &c.req.body)?
                } else {
                    patched_scale(c, &current_scale)?
                };
                let rv = objects::meta_str(obj, "resourceVersion").unwrap_or("");
                if let Some(want) = objects::meta_str(&wanted, "resourceVersion") {
                    if !want.is_empty() && want != rv {
                        return Err(ApiError::conflict(group, plural, &name, "the object has been modified; please apply your changes to the latest version and try again"));
                    }
                }
                let replicas = wanted
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if replicas < 0 {
                    return Err(ApiError::invalid("autoscaling", "Scale", &name, vec![StatusCause {
                        reason: "FieldValueInvalid".into(),
                        message: format!("spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"),
                        field: "spec.replicas".into(),
                    }]));
                }
                let mut new = obj.clone();
                keel_strategy::apply_scale(&mut new, replicas);
                keel_strategy::prepare_for_update(group, plural, &mut new, obj, &ctx);
                Ok(new)
            },
        )
        .await?;
    let stored = objects::parse_stored(&updated.bytes)?;
    respond::value(200, format, &scale_of(&stored)?)
}

fn patched_scale(c: &Call<'_>, current: &Value) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(&c.req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let mut out = current.clone();
    match repr::media_of(c.content_type()).as_str() {
        "application/json-patch+json" => keel_api::patch::json_patch(&mut out, &patch)?,
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            keel_api::patch::merge_patch(&mut out, &patch)
        }
        _ => return Err(ApiError::unsupported_media_type(&PATCH_TYPES)),
    }
    Ok(out)
}

// ---------------------------------------------------------------- pods

/// `POST pods/<name>/binding` (and the `bindings` resource, `c` routed to pods): assigns the
/// pod to a node.
pub async fn binding(c: &mut Call<'_>, st: &State, pod_name: &str) -> Result<Response, ApiError> {
    let body = decode_body(c.content_type(), &c.req.body)?;
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
    let now = objects::now_rfc3339();
    st.registry
        .guaranteed_update(
            &c.res,
            c.namespace(),
            pod_name,
            &own_write(false, "binding"),
            &mut |current| {
                let pod = current.ok_or_else(|| ApiError::not_found("", "pods", pod_name))?;
                if objects::is_deleting(pod) {
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
                let mut pod = pod.clone();
                if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert("nodeName".into(), node.clone().into());
                }
                set_scheduled_condition(&mut pod, &now);
                Ok(pod)
            },
        )
        .await?;
    respond::value(201, Format::Json, &success(201))
}

fn set_scheduled_condition(pod: &mut Value, now: &str) {
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
pub async fn eviction(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    let body = decode_body(c.content_type(), &c.req.body)?;
    let mut opts = DeleteOptions {
        dry_run: c.query.dry_run()?,
        ..Default::default()
    };
    if let Some(d) = body.get("deleteOptions") {
        opts.merge_body(d);
    }
    st.registry
        .delete(&c.res, c.namespace(), c.name(), &opts)
        .await?;
    respond::value(201, Format::Json, &success(201))
}

/// `GET pods/<name>/log`. keel does not connect to kubelets, so a pod's log is never
/// available: a pod not on a node gets upstream's empty answer, a pod on a node without a
/// Node object upstream's 404, and otherwise the kubelet's answer for a container that has
/// not started, or 503.
pub async fn log(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    let (pod, _) = st.registry.get_latest(&c.res, c.namespace(), c.name())?;
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
                c.name()
            )))
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {}, choose one of: [{}]",
                c.name(),
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
    let routes = st.routes.load();
    if !st.registry.exists(routes.core("nodes"), "", node)? {
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
            c.name()
        )));
    }
    let mut e = ApiError::internal(format!(
        "keel does not proxy to kubelets: no log stream for container {container} of pod {}",
        c.name()
    ));
    e.code = 503;
    e.reason = "ServiceUnavailable";
    Err(e)
}

// ---------------------------------------------------------------- namespaces

/// `PUT namespaces/<name>/finalize`: replaces `spec.finalizers`; a terminating namespace
/// with no finalizers left is removed.
pub async fn finalize(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let body = decode_body(c.content_type(), &c.req.body)?;
    let wanted = body
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    let name = c.name().to_string();
    let updated = st
        .registry
        .guaranteed_update(
            &c.res,
            c.namespace(),
            &name,
            &own_write(false, "finalize"),
            &mut |current| {
                let mut ns = current.ok_or_else(|| c.not_found(&name))?.clone();
                if let Some(spec) = ns
                    .as_object_mut()
                    .map(|r| r.entry("spec").or_insert_with(|| json!({})))
                {
                    if let Some(spec) = spec.as_object_mut() {
                        spec.insert("finalizers".into(), wanted.clone());
                    }
                }
                Ok(ns)
            },
        )
        .await?;
    respond::object(200, format, updated.bytes, |_| Value::Null)
}
