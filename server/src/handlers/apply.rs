//! Server-side apply: `PATCH` with `application/apply-patch+yaml` (a YAML or JSON body), on
//! a resource or its `status`/`scale` subresource. The handler checks the options and the
//! body as upstream's `patch.go` does; the merge and the ownership are
//! `crate::fieldmanager::apply`, run inside the registry's update loop (creating the object
//! when it is absent).

use super::body::{check_type, decode_clean_json, validate_fields, Decoding};
use super::call::{Call, FieldValidation};
use super::respond::{self, table_of, with_warnings};
use crate::fieldmanager::{self, Apply, Write};
use crate::objects;
use crate::registry::{Tracking, UpdateOptions};
use keel_api::jsonmap::JsonPointer;
use keel_api::status::{field, ApiError, StatusCause};
use keel_http::Response;
use serde_json::Value;

/// The media type of an apply patch.
pub const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// Upstream's 422 for bad `PatchOptions`.
pub fn patch_options_invalid(causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid("meta.k8s.io", "PatchOptions", "", causes)
}

/// The apply request's options: `fieldManager` (required), `force`.
pub(super) fn options(c: &Call<'_>) -> Result<(String, bool), ApiError> {
    let Some(manager) = c.query.nonempty("fieldManager") else {
        return Err(patch_options_invalid(vec![field::required(
            "fieldManager",
            "is required for apply patch",
        )]));
    };
    if manager.len() > fieldmanager::FIELD_MANAGER_LENGTH_MAX {
        // Upstream's ValidateFieldManager words this one its own way.
        return Err(patch_options_invalid(vec![StatusCause {
            reason: "FieldValueTooLong".into(),
            message: format!(
                "Too long: may not be more than {} bytes",
                fieldmanager::FIELD_MANAGER_LENGTH_MAX
            ),
            field: "fieldManager".into(),
        }]));
    }
    fieldmanager::validate_manager(manager)?;
    Ok((manager.to_string(), c.query.flag("force")))
}

/// The applied configuration: YAML (JSON is YAML) decoding to an object.
pub(super) fn decode_config(body: &[u8]) -> Result<Value, ApiError> {
    // Most clients send JSON (kubectl, client-go, controller-runtime): JSON is YAML, and a
    // JSON parser reads it several times faster (the YAML parser took a tenth of an apply's
    // CPU). Anything else, or JSON that does not parse, goes to the YAML parser, whose
    // errors are upstream's.
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        if let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(body) {
            return Ok(v);
        }
    }
    let v: Value = serde_yaml_ng::from_slice(body).map_err(|e| {
        // go-yaml's text is the first clause of the parser's (no position).
        let text = e.to_string();
        let first = text.split(", while").next().unwrap_or(&text);
        let first = first.split(" at line ").next().unwrap_or(first);
        ApiError::bad_request(format!(
            "error decoding YAML: error converting YAML to JSON: yaml: {first}"
        ))
    })?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration must be an object",
        ));
    }
    Ok(v)
}

/// What upstream refuses in the body before merging.
fn check_config(c: &Call<'_>, cfg: &Value) -> Result<(), ApiError> {
    if objects::meta(cfg).is_some_and(|m| m.get("managedFields").is_some_and(|v| !v.is_null())) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let av = cfg.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = cfg.get("kind").and_then(Value::as_str).unwrap_or("");
    if av != c.api_version() || kind != c.info().kind {
        // Go's GroupVersionKind.String(): `group/version, Kind=kind` (`/v1` for the core group).
        let gv = if av.contains('/') {
            av.to_string()
        } else {
            format!("/{av}")
        };
        return Err(ApiError::bad_request(format!(
            "invalid object type: {gv}, Kind={kind}"
        )));
    }
    let name = objects::name(cfg);
    if name != c.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            c.name()
        )));
    }
    if c.info().namespaced {
        if let Some(ns) = objects::meta_str(cfg, "namespace").filter(|n| !n.is_empty()) {
            if ns != c.namespace() {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
    }
    Ok(())
}

pub async fn apply(c: &mut Call<'_>, st: &crate::state::State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let (manager, force) = options(c)?;
    let dry_run = c.query.dry_run()?;
    // Unknown fields and type errors can only come from the configuration (the live object
    // was checked when written): when it has none, the merged object need not be checked.
    let (cfg, clean) = match decode_clean_json(c, &c.req.body) {
        Some(decoded) => decoded,
        None => (decode_config(&c.req.body)?, false),
    };
    check_config(c, &cfg)?;
    FieldValidation::from_query(&c.query)?;
    let (res, ns, name) = (c.res, c.rr.namespace.clone(), c.rr.name.clone());
    let subresource = c.rr.subresource.clone();
    let opts = UpdateOptions {
        dry_run,
        subresource: &subresource,
        replace: false,
        strategy: true,
    };
    let tracking = Tracking {
        manager: Some(manager.clone()),
        applied: true,
    };
    let info = c.info();
    let a = Apply {
        write: Write {
            group: info.group,
            version: info.version,
            kind: info.kind,
            subresource: &subresource,
            manager: Some(&manager),
            custom: c.res.custom.as_deref(),
        },
        force,
    };
    let mut created = false;
    let updated = st
        .registry
        .guaranteed_update_by(res, &ns, &name, &opts, &tracking, &mut |current| {
            if current.is_none() && !subresource.is_empty() {
                return Err(res.not_found(&name));
            }
            created = current.is_none();
            let mut v = fieldmanager::apply(&a, current, &cfg, &objects::now_rfc3339())?;
            check_type(c, &mut v)?;
            res.strategy.canonicalize_input(&mut v);
            keel_proto::drop_go_omitted(&mut v);
            if !clean {
                let bytes = serde_json::to_vec(&v).expect("JSON");
                validate_fields(c, &bytes, &mut v, Decoding::Body)?;
            }
            super::resource::rbac_write(c, st, &v)?;
            Ok(v)
        })
        .await?;
    let code = if updated.created || created { 201 } else { 200 };
    let resp = respond::object(code, format, updated.bytes, |o| table_of(c, o))?;
    Ok(with_warnings(resp, c))
}

/// An apply to `scale`: the Scale configuration as the parent's (`spec.replicas`), applied
/// by its manager with subresource `scale`, as upstream's ScaleHandler records it.
pub(super) fn scale_config(c: &Call<'_>, name: &str) -> Result<(Value, Tracking, bool), ApiError> {
    let (manager, force) = options(c)?;
    let cfg = decode_config(&c.req.body)?;
    let av = cfg.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = cfg.get("kind").and_then(Value::as_str).unwrap_or("");
    if av != "autoscaling/v1" || kind != "Scale" {
        let gv = if av.contains('/') {
            av.to_string()
        } else {
            format!("/{av}")
        };
        return Err(ApiError::bad_request(format!(
            "invalid object type: {gv}, Kind={kind}"
        )));
    }
    if objects::meta(&cfg).is_some_and(|m| m.get("managedFields").is_some_and(|v| !v.is_null())) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let body_name = objects::name(&cfg);
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let mut parent = serde_json::json!({
        "apiVersion": c.api_version(),
        "kind": c.info().kind,
        "metadata": {"name": name},
    });
    if let Some(r) = cfg.at("/spec/replicas") {
        parent["spec"] = serde_json::json!({"replicas": r});
    }
    let tracking = Tracking {
        manager: Some(manager),
        applied: true,
    };
    Ok((parent, tracking, force))
}

/// The parent object after a `scale` apply of `parent_cfg` by `tracking`'s manager.
pub(super) fn apply_scale(
    c: &Call<'_>,
    tracking: &Tracking,
    force: bool,
    live: &Value,
    parent_cfg: &Value,
) -> Result<Value, ApiError> {
    let info = c.info();
    let a = Apply {
        write: Write {
            group: info.group,
            version: info.version,
            kind: info.kind,
            subresource: "scale",
            manager: tracking.manager.as_deref(),
            custom: c.res.custom.as_deref(),
        },
        force,
    };
    fieldmanager::apply(&a, Some(live), parent_cfg, &objects::now_rfc3339())
}
