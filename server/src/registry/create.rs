//! Creates: metadata the server owns, the type's create strategy and validation, the
//! namespace check, service allocations, and the write (with new names for `generateName`
//! clashes).

use super::{invalid, strategy_ctx, CreateOptions, Registry};
use crate::limits::GENERATE_NAME_ATTEMPTS_MAX;
use crate::objects::{self, Spliced};
use crate::routes::Resource;
use crate::storage::storage_error;
use keel_api::status::ApiError;
use keel_engine::Error as StoreError;
use serde_json::Value;

/// What a create stored (or, on a dry run, would have stored).
pub struct Created {
    /// The object with its `metadata.resourceVersion`.
    pub bytes: Vec<u8>,
}

impl Registry {
    /// Creates `obj` in `namespace`: decoded and type-checked by the caller, everything else
    /// decided here.
    pub async fn create(
        &self,
        res: &Resource,
        namespace: &str,
        mut obj: Value,
        opts: &CreateOptions,
    ) -> Result<Created, ApiError> {
        // Admission's refusals come before the type's own checks, as upstream's do.
        super::admission::check_definition(res, objects::name(&obj))?;
        prepare_meta_for_create(res, namespace, &mut obj)?;
        objects::drop_empty_meta(&mut obj);
        let generated = objects::meta_str(&obj, "name").is_none()
            || objects::meta(&obj).is_some_and(|m| m.contains_key("generateName"));
        let info = &res.info;
        let ctx = strategy_ctx().with_requester(opts.requester.clone());
        res.strategy.prepare_for_create(&mut obj, &ctx);
        let mut causes = self.admin_access_causes(res, namespace, "", &obj, None)?;
        causes.extend(res.strategy.validate_create(&obj));
        if let Some(custom) = &res.custom {
            causes.extend(custom.validate(&obj, None, ""));
        }
        if !causes.is_empty() {
            return Err(invalid(res, &obj, causes));
        }
        self.check_namespace(res, namespace, objects::name(&obj))?;
        // (The object is not read as a tree again: its entry may be JSON text.)
        opts.tracking.record_new(res, &mut obj);
        self.init_families(res.strategy, &mut obj, None)?;
        let allocation = self
            .allocate_recorded(
                res.strategy.service_allocation(&obj),
                &mut obj,
                opts.dry_run,
            )
            .await?;
        if opts.dry_run {
            // As the real create would: a taken name is 409 (upstream's dry-run storage
            // looks the key up too).
            let name = objects::name(&obj);
            if self
                .storage
                .get_latest(&res.loc.key(namespace, name))?
                .is_some()
            {
                return Err(ApiError::already_exists(info.group, info.plural, name));
            }
            return Ok(Created {
                bytes: objects::to_canonical_json(&obj),
            });
        }
        // Stored in the storage version; answered in the request's.
        super::to_storage(res, &mut obj).await?;
        let mut attempts = 0;
        loop {
            let name = objects::name(&obj).to_string();
            let key = res.loc.key(namespace, &name);
            let spliced = Spliced::new(&mut obj);
            match self.storage.create(&key, &spliced).await {
                Ok((bytes, _)) => {
                    self.alloc.settle(&allocation);
                    return Ok(Created {
                        bytes: super::answer_as_request(res, bytes).await?,
                    });
                }
                Err(StoreError::AlreadyExists { .. })
                    if generated && attempts < GENERATE_NAME_ATTEMPTS_MAX =>
                {
                    attempts += 1;
                    let prefix = objects::meta_str(&obj, "generateName")
                        .unwrap_or("")
                        .to_string();
                    let name = keel_api::names::generate_name(&prefix);
                    let clashed = obj.clone();
                    objects::set_meta(&mut obj, "name", name.into());
                    if let Err(e) = self.rerecord(&allocation, &clashed, &obj).await {
                        self.unrecord(&allocation, &clashed).await;
                        return Err(e);
                    }
                }
                Err(e) => {
                    self.unrecord(&allocation, &obj).await;
                    return Err(match e {
                        StoreError::AlreadyExists { .. } => {
                            ApiError::already_exists(info.group, info.plural, &name)
                        }
                        other => storage_error(other),
                    });
                }
            }
        }
    }
}

/// Metadata rules for a new object: namespace, name or generateName, server-set fields.
fn prepare_meta_for_create(res: &Resource, ns: &str, obj: &mut Value) -> Result<(), ApiError> {
    let m = objects::meta_mut(obj);
    if res.info.namespaced {
        match m.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                m.insert("namespace".into(), ns.into());
            }
            Some(n) if n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ))
            }
            _ => {}
        }
    } else {
        m.shift_remove("namespace");
    }
    let has_name = m
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !has_name {
        if let Some(prefix) = m
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        {
            let name = keel_api::names::generate_name(prefix);
            m.insert("name".into(), name.into());
        }
    }
    if let Some(rv) = m.get("resourceVersion").and_then(Value::as_str) {
        if !rv.is_empty() {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
    }
    m.insert("uid".into(), objects::new_uid().into());
    m.insert("creationTimestamp".into(), objects::now_rfc3339().into());
    m.shift_remove("deletionTimestamp");
    m.shift_remove("deletionGracePeriodSeconds");
    m.shift_remove("selfLink");
    Ok(())
}
