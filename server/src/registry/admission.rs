//! What the registry checks of a write that is not the type's own policy: the namespace must
//! exist and not be terminating (upstream's NamespaceLifecycle admission), and admin access
//! to devices needs the namespace's label (upstream's DRA strategies read the namespace).
//! The admission chain of a later issue plugs in here.

use super::Registry;
use crate::objects;
use crate::routes::Resource;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::{ApiError, StatusCause};
use keel_engine::{KeyValue, Revision};
use serde_json::Value;

/// A custom resource whose definition is being deleted takes no new objects (upstream's
/// handler wraps admission with this refusal for creates while its CRD is terminating).
pub(super) fn check_definition(res: &Resource, name: &str) -> Result<(), ApiError> {
    match &res.custom {
        Some(c) if c.terminating => Err(ApiError::forbidden_with(
            res.info.group,
            res.info.plural,
            name,
            "create not allowed while custom resource definition is terminating",
        )),
        _ => Ok(()),
    }
}

impl Registry {
    /// NamespaceLifecycle: creates in a namespace need the namespace, not terminating.
    pub(super) fn check_namespace(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        if !res.info.namespaced || namespace.is_empty() {
            return Ok(());
        }
        let key = self.namespaces.key("", namespace);
        let kv = self
            .storage
            .get_latest(&key)?
            .ok_or_else(|| ApiError::not_found("", "namespaces", namespace))?;
        if namespace_is_deleting(&key, &kv)? {
            return Err(ApiError::namespace_terminating(
                res.info.group,
                res.info.plural,
                name,
                namespace,
            ));
        }
        Ok(())
    }
}

impl Registry {
    /// The refusal of a write that asks for admin access to devices (claims, claim templates,
    /// a claim's allocation) in a namespace without `resource.kubernetes.io/admin-access:
    /// "true"`; it heads the causes of the write's 422, as upstream lists it first. A missing
    /// namespace is NotFound, as upstream's namespace read fails.
    pub(super) fn admin_access_causes(
        &self,
        res: &Resource,
        namespace: &str,
        subresource: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<StatusCause>, ApiError> {
        let Some(path) = res.strategy.admin_access_field(subresource, new, old) else {
            return Ok(Vec::new());
        };
        let key = self.namespaces.key("", namespace);
        let kv = self
            .storage
            .get_latest(&key)?
            .ok_or_else(|| ApiError::not_found("", "namespaces", namespace))?;
        let ns = objects::parse_stored(kv.value())?;
        let labelled = ns
            .at("/metadata/labels")
            .and_then(|l| l.get(keel_strategy::ADMIN_ACCESS_LABEL))
            .and_then(Value::as_str)
            == Some("true");
        Ok(if labelled {
            Vec::new()
        } else {
            vec![keel_strategy::admin_access_forbidden(&path).into_cause()]
        })
    }
}

/// Whether the stored namespace `kv` (at `key`) is being deleted. A create reads its
/// namespace every time; the answer is remembered per thread for the version last read (a
/// version's bytes never change), so a run of creates in one namespace parses it once.
fn namespace_is_deleting(key: &[u8], kv: &KeyValue) -> Result<bool, ApiError> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(Vec<u8>, Revision, bool)>> =
            const { std::cell::RefCell::new(None) };
    }
    let rev = kv.mod_revision;
    let cached = LAST.with_borrow(|last| match last {
        Some((k, r, deleting)) if *r == rev && k.as_slice() == key => Some(*deleting),
        _ => None,
    });
    if let Some(deleting) = cached {
        return Ok(deleting);
    }
    let deleting = objects::stored_is_deleting(kv.value())?;
    LAST.with_borrow_mut(|last| *last = Some((key.to_vec(), rev, deleting)));
    Ok(deleting)
}
