//! Subresources with their own behaviour: `scale`, pods' `binding`, `eviction` and `log`, and
//! namespaces' `finalize` (`status` is the generic update and patch, on the subresource).
//! Each write is one `Registry::guaranteed_update` whose change function makes the
//! subresource's change and checks its own preconditions.

use super::body::decode_body;
use super::call::Call;
use super::respond;
use crate::objects;
use crate::registry::{DeleteOptions, UpdateOptions};
use crate::repr::{self, Format};
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
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
    let strategy = c.res.strategy;
    let custom = c.res.custom.clone();
    let scale_of = |obj: &Value| {
        let scale = match &custom {
            Some(cr) => cr.scale_from(obj).map_err(ApiError::internal)?,
            None => strategy.scale_from(obj),
        };
        scale.ok_or_else(|| ApiError::not_found(group, &format!("{plural}/scale"), &name))
    };
    // A custom resource's scale write is checked as an update of the object (its
    // definition's rules), not as a Scale.
    let kind = c.info().kind;
    let check_scaled = |new: &Value, old: &Value| match &custom {
        Some(cr) => {
            let causes = cr.validate(new, Some(old), "");
            if causes.is_empty() {
                Ok(())
            } else {
                Err(ApiError::invalid(group, kind, &name, causes))
            }
        }
        None => Ok(()),
    };
    if c.rr.verb == "get" {
        let (obj, _) = st.registry.get_latest(c.res, c.namespace(), &name).await?;
        return respond::value(200, format, &scale_of(&obj)?);
    }
    let dry_run = c.query.dry_run()?;
    let ctx = keel_strategy::Ctx::at(std::time::SystemTime::now());
    let is_apply =
        c.rr.verb == "patch" && repr::media_of(c.content_type()) == super::apply::APPLY_PATCH;
    let (applied_cfg, tracking, force) = if is_apply {
        let (cfg, t, force) = super::apply::scale_config(c, &name)?;
        (Some(cfg), t, force)
    } else {
        (None, super::resource::tracking(c)?, false)
    };
    let updated = st
        .registry
        .guaranteed_update_by(
            c.res,
            c.namespace(),
            &name,
            &own_write(dry_run, "scale"),
            &tracking,
            &mut |current| {
                let obj = current.ok_or_else(|| c.not_found(&name))?;
                if let Some(cfg) = &applied_cfg {
                    let mut new = super::apply::apply_scale(c, &tracking, force, obj, cfg)?;
                    if custom.is_none() {
                        let causes = strategy.validate_scale(&scale_of(&new)?);
                        if !causes.is_empty() {
                            return Err(ApiError::invalid("autoscaling", "Scale", &name, causes));
                        }
                    }
                    strategy.prepare_for_update(&mut new, obj, &ctx);
                    check_scaled(&new, obj)?;
                    return Ok(new);
                }
                let current_scale = scale_of(obj)?;
                let wanted = if c.rr.verb == "update" {
                    scale_body(c, &name)?
                } else {
                    patched_scale(c, &current_scale)?
                };
                let rv = objects::meta_str(obj, "resourceVersion").unwrap_or("");
                if let Some(want) = objects::meta_str(&wanted, "resourceVersion") {
                    if !want.is_empty() && want != rv {
                        return Err(ApiError::stale_update(group, plural, &name));
                    }
                }
                if custom.is_none() {
                    let causes = strategy.validate_scale(&wanted);
                    if !causes.is_empty() {
                        return Err(ApiError::invalid("autoscaling", "Scale", &name, causes));
                    }
                }
                let replicas = wanted
                    .at("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let mut new = obj.clone();
                match &custom {
                    Some(cr) => cr.apply_scale(&mut new, replicas),
                    None => strategy.apply_scale(&mut new, replicas),
                }
                strategy.prepare_for_update(&mut new, obj, &ctx);
                check_scaled(&new, obj)?;
                Ok(new)
            },
        )
        .await?;
    let stored = objects::parse_stored(&updated.bytes)?;
    respond::value(200, format, &scale_of(&stored)?)
}

/// The Scale of a PUT: named as the URL (400 otherwise, as upstream's update handler), its
/// namespace filled from the URL when absent.
fn scale_body(c: &Call<'_>, name: &str) -> Result<Value, ApiError> {
    let mut v = decode_body(c.content_type(), &c.req.body)?;
    let Some(root) = v.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let meta = root.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    let body_name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        meta.insert("namespace".into(), c.namespace().into());
    }
    Ok(v)
}

fn patched_scale(c: &Call<'_>, current: &Value) -> Result<Value, ApiError> {
    let media = repr::media_of(c.content_type());
    let accepted = super::resource::patch_types(c);
    if !accepted.contains(&media.as_str()) {
        return Err(ApiError::unsupported_media_type(accepted));
    }
    let patch: Value = serde_json::from_slice(&c.req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let mut out = current.clone();
    match media.as_str() {
        "application/json-patch+json" => keel_api::patch::json_patch(&mut out, &patch)?,
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            keel_api::patch::merge_patch(&mut out, &patch)
        }
        _ => return Err(ApiError::unsupported_media_type(accepted)),
    }
    Ok(out)
}

// ---------------------------------------------------------------- pods

/// `POST pods/<name>/binding` (and the `bindings` resource, `c` routed to pods): assigns the
/// pod to a node.
pub async fn binding(c: &mut Call<'_>, st: &State, pod_name: &str) -> Result<Response, ApiError> {
    let body = decode_body(c.content_type(), &c.req.body)?;
    let strategy = c.res.strategy;
    let causes = strategy.validate_binding(&body);
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Binding", pod_name, causes));
    }
    if c.query.dry_run()? {
        return respond::value(201, Format::Json, &success(201));
    }
    let ctx = keel_strategy::Ctx::at(std::time::SystemTime::now());
    st.registry
        .guaranteed_update(
            c.res,
            c.namespace(),
            pod_name,
            &own_write(false, "binding"),
            &mut |current| {
                let mut pod = current
                    .ok_or_else(|| ApiError::not_found("", "pods", pod_name))?
                    .clone();
                strategy
                    .bind(&mut pod, &body, &ctx)
                    .map_err(|detail| ApiError::conflict("", "pods/binding", pod_name, &detail))?;
                Ok(pod)
            },
        )
        .await?;
    respond::value(201, Format::Json, &success(201))
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
        .delete(c.res, c.namespace(), c.name(), &opts)
        .await?;
    respond::value(201, Format::Json, &success(201))
}

/// `GET pods/<name>/log`. keel does not connect to kubelets, so a pod's log is never
/// available: a pod not on a node gets upstream's empty answer, a pod on a node without a
/// Node object upstream's 404, and otherwise the kubelet's answer for a container that has
/// not started, or 503.
pub async fn log(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    let (pod, _) = st
        .registry
        .get_latest(c.res, c.namespace(), c.name())
        .await?;
    let containers: Vec<String> = pod
        .at("/spec/containers")
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
        .at("/spec/nodeName")
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
        .at("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|s| s.get("name").and_then(Value::as_str) == Some(&container))
        })
        .is_some_and(|s| s.at("/state/running").is_some() || s.at("/state/terminated").is_some());
    if !running {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{}\" is waiting to start: ContainerCreating",
            c.name()
        )));
    }
    Err(ApiError::service_unavailable(format!(
        "keel does not proxy to kubelets: no log stream for container {container} of pod {}",
        c.name()
    )))
}

// ---------------------------------------------------------------- namespaces

/// `PUT namespaces/<name>/finalize`: an update of the namespace whose strategy takes
/// everything but `status` from the body, as upstream's; a terminating namespace left with no
/// finalizers is removed.
pub async fn finalize(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    super::resource::update(c, st).await
}
