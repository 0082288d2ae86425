//! What the registry checks before a create that is not the type's own policy: the
//! namespace must exist and not be terminating (upstream's NamespaceLifecycle admission).
//! The admission chain of a later issue plugs in here.

use super::Registry;
use crate::objects;
use crate::routes::Resource;
use keel_api::status::ApiError;
use keel_engine::{KeyValue, Revision};

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
