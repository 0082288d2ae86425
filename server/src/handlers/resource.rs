//! The verbs of a resource's own paths: each parses its query and body, calls the registry
//! and writes the response in the negotiated representation.

use super::body::{check_type, decode_body, decode_object, validate_fields, Decoding};
use super::call::Call;
use super::respond::{self, table_of, with_warnings};
use crate::objects;
use crate::registry::{CreateOptions, DeleteOptions, Tracking, UpdateOptions};
use crate::repr::{self, Format};
use crate::selection::Filter;
use crate::storage::ReadPoint;
use keel_api::rv;
use keel_api::status::ApiError;
use keel_http::Response;
use serde_json::{json, Value};

/// Patch media types keel accepts.
pub const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    super::apply::APPLY_PATCH,
];

/// Patch media types of custom resources: no strategic merge patch (they have no patch
/// strategies), as upstream's handler answers.
pub const CUSTOM_PATCH_TYPES: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    super::apply::APPLY_PATCH,
];

/// The patch media types the request's resource accepts.
pub fn patch_types(c: &Call<'_>) -> &'static [&'static str] {
    match c.res.custom {
        Some(_) => &CUSTOM_PATCH_TYPES,
        None => &PATCH_TYPES,
    }
}

/// The manager of a write (`fieldManager`, else from the User-Agent).
pub fn tracking(c: &Call<'_>) -> Result<Tracking, ApiError> {
    let manager = crate::fieldmanager::request_manager(
        c.query.get("fieldManager"),
        c.req.headers.get("user-agent"),
    )?;
    Ok(Tracking {
        manager: Some(manager),
        applied: false,
    })
}

// ---------------------------------------------------------------- reads

pub async fn get(c: &mut Call<'_>, st: &crate::state::State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let at = rv::plan_get(c.query.nonempty("resourceVersion"))?;
    let kv = st
        .registry
        .get(c.res, c.namespace(), c.name(), ReadPoint::from(at))
        .await?;
    let include = include_object(c)?;
    let (info, custom) = (c.info(), c.res.custom.as_deref());
    // Room for the newline a JSON body ends with.
    let mut bytes = Vec::with_capacity(kv.value().len() + 1);
    bytes.extend_from_slice(kv.value());
    respond::object(200, format, bytes, |obj| {
        repr::table(
            info,
            custom,
            &[obj],
            include,
            json!({"resourceVersion": objects::meta_str(obj, "resourceVersion").unwrap_or("")}),
        )
    })
}

pub fn include_object(c: &Call<'_>) -> Result<keel_catalog::IncludeObject, ApiError> {
    use keel_catalog::IncludeObject as I;
    match c.query.nonempty("includeObject") {
        None | Some("Metadata") => Ok(I::Metadata),
        Some("None") => Ok(I::None),
        Some("Object") => Ok(I::Object),
        Some(v) => Err(ApiError::bad_request(format!(
            "includeObject: unsupported value {v:?}: supported values: \"None\", \"Metadata\", \"Object\""
        ))),
    }
}

/// The selectors of a list, watch or deletecollection.
pub fn filter(c: &Call<'_>) -> Result<Filter, ApiError> {
    Filter::parse(
        c.query.nonempty("labelSelector"),
        c.query.nonempty("fieldSelector"),
        crate::selection::Fields::of(c.res),
    )
}

pub async fn list(c: &mut Call<'_>, st: &crate::state::State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let filter = filter(c)?;
    let plan = rv::plan_list(&rv::ListRequest {
        resource_version: c.query.get("resourceVersion"),
        resource_version_match: c.query.nonempty("resourceVersionMatch"),
        limit: c.query.int("limit")?,
        continue_token: c.query.nonempty("continue"),
        send_initial_events: c.query.get("sendInitialEvents"),
    })?;
    let page = st
        .registry
        .list(c.res, c.namespace(), &plan, &filter)
        .await?;
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), page.revision.to_string().into());
    if !page.continue_token.is_empty() {
        meta.insert("continue".into(), page.continue_token.clone().into());
    }
    if let Some(r) = page.remaining {
        meta.insert("remainingItemCount".into(), r.into());
    }
    let meta = Value::Object(meta);
    let list_kind = format!("{}List", c.info().kind);
    match format {
        Format::Json => {
            let size: usize = page.items.iter().map(|kv| kv.value().len() + 1).sum();
            if size > crate::limits::LIST_STREAM_THRESHOLD_BYTES && !super::pretty(c.req) {
                return Ok(respond::json_list_stream(
                    &c.api_version(),
                    &list_kind,
                    &meta,
                    page.items,
                ));
            }
            let body = respond::json_list(
                &c.api_version(),
                &list_kind,
                &meta,
                page.items.iter().map(|kv| kv.value()),
                size,
            );
            Ok(respond::response(200, repr::JSON, body))
        }
        Format::Protobuf | Format::Yaml => {
            let items = parse_all(&page.items)?;
            let list = json!({"kind": list_kind, "apiVersion": c.api_version(), "metadata": meta, "items": items});
            respond::value(200, format, &list)
        }
        Format::Metadata(m) => {
            if !m.list {
                return Err(m.mismatch(&c.api_version(), c.info().kind, true));
            }
            let items = page
                .items
                .iter()
                .map(|kv| m.of_stored(kv.value()))
                .collect::<Result<Vec<_>, _>>()?;
            let list = json!({"kind": m.kind(), "apiVersion": m.api_version(), "metadata": meta, "items": items});
            respond::metadata_response(200, m, &list)
        }
        Format::Table => {
            let items = parse_all(&page.items)?;
            let refs: Vec<&Value> = items.iter().collect();
            let t = repr::table(
                c.info(),
                c.res.custom.as_deref(),
                &refs,
                include_object(c)?,
                meta,
            );
            Ok(respond::json(
                200,
                repr::TABLE_MEDIA,
                serde_json::to_vec(&t).expect("JSON"),
            ))
        }
    }
}

fn parse_all(items: &[keel_engine::KeyValue]) -> Result<Vec<Value>, ApiError> {
    items
        .iter()
        .map(|kv| objects::parse_stored(kv.value()))
        .collect()
}

// ---------------------------------------------------------------- writes

/// A write of a role or binding passes upstream's RBAC storage checks (escalation, bind).
pub(super) fn rbac_write(
    c: &Call<'_>,
    st: &crate::state::State,
    obj: &serde_json::Value,
) -> Result<(), ApiError> {
    if !c.rr.subresource.is_empty() || c.info().group != "rbac.authorization.k8s.io" {
        return Ok(());
    }
    crate::authz::check_rbac_write(
        &st.rbac,
        &*st.authorizer,
        c.user,
        c.info().plural,
        c.namespace(),
        c.name(),
        obj,
    )
}

pub async fn create(c: &mut Call<'_>, st: &crate::state::State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let opts = CreateOptions {
        dry_run: c.query.dry_run()?,
        requester: Some(c.user.requester()),
        tracking: tracking(c)?,
    };
    let obj = decode_object(c)?;
    rbac_write(c, st, &obj)?;
    let created = st.registry.create(c.res, c.namespace(), obj, &opts).await?;
    let resp = respond::object(201, format, created.bytes, |o| table_of(c, o))?;
    Ok(with_warnings(resp, c))
}

pub async fn update(c: &mut Call<'_>, st: &crate::state::State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let obj = decode_object(c)?;
    if objects::name(&obj) != c.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({})",
            objects::name(&obj),
            c.name()
        )));
    }
    if c.info().namespaced {
        if let Some(ns) = objects::meta_str(&obj, "namespace").filter(|n| !n.is_empty()) {
            if ns != c.namespace() {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
    }
    rbac_write(c, st, &obj)?;
    let opts = UpdateOptions {
        dry_run: c.query.dry_run()?,
        subresource: &c.rr.subresource,
        replace: true,
        strategy: true,
    };
    let tracking = tracking(c)?;
    let updated = st
        .registry
        .guaranteed_update_by(
            c.res,
            c.namespace(),
            c.name(),
            &opts,
            &tracking,
            &mut |_| Ok(obj.clone()),
        )
        .await?;
    let status = if updated.created { 201 } else { 200 };
    let resp = respond::object(status, format, updated.bytes, |o| table_of(c, o))?;
    Ok(with_warnings(resp, c))
}

pub async fn patch(c: &mut Call<'_>, st: &crate::state::State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let media = repr::media_of(c.content_type());
    let accepted = patch_types(c);
    if !accepted.contains(&media.as_str()) {
        return Err(ApiError::unsupported_media_type(accepted));
    }
    if media == super::apply::APPLY_PATCH {
        return super::apply::apply(c, st).await;
    }
    if c.query.get("force").is_some() {
        return Err(super::apply::patch_options_invalid(vec![
            keel_api::status::field::forbidden("force", "may not be specified for non-apply patch"),
        ]));
    }
    let tracking = tracking(c)?;
    let (res, ns, name) = (c.res, c.rr.namespace.clone(), c.rr.name.clone());
    let subresource = c.rr.subresource.clone();
    let opts = UpdateOptions {
        dry_run: c.query.dry_run()?,
        subresource: &subresource,
        replace: false,
        strategy: true,
    };
    let updated = st
        .registry
        .guaranteed_update_by(res, &ns, &name, &opts, &tracking, &mut |current| {
            let Some(current) = current else {
                return Err(res.not_found(&name));
            };
            let mut v = apply_patch(c, current, &media)?;
            check_type(c, &mut v)?;
            res.strategy.canonicalize_input(&mut v);
            keel_proto::drop_go_omitted(&mut v);
            let bytes = serde_json::to_vec(&v).expect("JSON");
            validate_fields(c, &bytes, &mut v, Decoding::Patch)?;
            rbac_write(c, st, &v)?;
            Ok(v)
        })
        .await?;
    let resp = respond::object(200, format, updated.bytes, |o| table_of(c, o))?;
    Ok(with_warnings(resp, c))
}

/// Applies the request's patch document (of media type `media`) to `current`.
fn apply_patch(c: &Call<'_>, current: &Value, media: &str) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(&c.req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    match media {
        "application/merge-patch+json" => {
            let mut out = current.clone();
            keel_api::patch::merge_patch(&mut out, &patch);
            Ok(out)
        }
        "application/json-patch+json" => {
            let mut out = current.clone();
            keel_api::patch::json_patch(&mut out, &patch)?;
            Ok(out)
        }
        _ => {
            let info = c.info();
            let meta = crate::schema_meta::SchemaMerge {
                gvk: (info.group, info.version, info.kind),
            };
            keel_api::patch::strategic_merge_patch(current, &patch, &meta)
        }
    }
}

// ---------------------------------------------------------------- delete

/// `DeleteOptions` from the query and the body (JSON or protobuf).
pub fn delete_options(c: &Call<'_>) -> Result<DeleteOptions, ApiError> {
    let mut o = DeleteOptions {
        grace_period: c.query.int("gracePeriodSeconds")?,
        propagation: c.query.nonempty("propagationPolicy").map(String::from),
        orphan_dependents: c.query.get("orphanDependents").map(super::call::query_bool),
        dry_run: c.query.dry_run()?,
        ..Default::default()
    };
    if !c.req.body.is_empty() {
        let v = decode_body(c.content_type(), &c.req.body)?;
        o.merge_body(&v);
    }
    o.validate()?;
    Ok(o)
}

pub async fn delete(c: &mut Call<'_>, st: &crate::state::State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let opts = delete_options(c)?;
    let deleted = st
        .registry
        .delete(c.res, c.namespace(), c.name(), &opts)
        .await?;
    if deleted.removed && !c.res.strategy.returns_deleted_object() {
        let obj = objects::parse_stored(&deleted.bytes)?;
        return respond::value(200, format, &deleted_status(c, &obj));
    }
    respond::object(200, format, deleted.bytes, |o| table_of(c, o))
}

/// What upstream answers a DELETE that removed the object at once, for types that do not
/// return the deleted object: a `Status` of `Success` naming it (no code).
fn deleted_status(c: &Call<'_>, obj: &Value) -> Value {
    let mut details = serde_json::Map::new();
    details.insert("name".into(), c.name().into());
    if !c.info().group.is_empty() {
        details.insert("group".into(), c.info().group.into());
    }
    details.insert("kind".into(), c.info().plural.into());
    if let Some(uid) = objects::meta_str(obj, "uid") {
        details.insert("uid".into(), uid.into());
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

pub async fn delete_collection(
    c: &mut Call<'_>,
    st: &crate::state::State,
) -> Result<Response, ApiError> {
    let format = c.format()?;
    let opts = delete_options(c)?;
    let filter = filter(c)?;
    let deleted = st
        .registry
        .delete_collection(c.res, c.namespace(), &filter, &opts)
        .await?;
    let meta = json!({"resourceVersion": st.registry.current_revision().to_string()});
    let list_kind = format!("{}List", c.info().kind);
    match format {
        Format::Json => Ok(respond::response(
            200,
            repr::JSON,
            respond::json_list(
                &c.api_version(),
                &list_kind,
                &meta,
                deleted.iter().map(Vec::as_slice),
                0,
            ),
        )),
        _ => {
            let items: Result<Vec<Value>, ApiError> =
                deleted.iter().map(|b| objects::parse_stored(b)).collect();
            let list = json!({"kind": list_kind, "apiVersion": c.api_version(), "metadata": meta, "items": items?});
            respond::value(200, format, &list)
        }
    }
}
