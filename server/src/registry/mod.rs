//! The typed registry: get, list, watch, create, one optimistic read-modify-write loop
//! (`guaranteed_update`), delete and deletecollection over objects of any served resource,
//! with the per-type policy delegated to keel-strategy and errors as `metav1.Status` values
//! (`ApiError`: code and reason say which, e.g. 404 NotFound, 409 Conflict / AlreadyExists,
//! 422 Invalid).
//!
//! No HTTP here: the handlers parse queries and bodies into the options below and turn the
//! results into responses; bootstrap and the namespace controller call the same methods, and
//! so will every later in-process controller and cache (never raw storage).
//!
//! Objects come in as parsed JSON (`serde_json::Value`) and go out as their stored bytes
//! (with `metadata.resourceVersion`), which responses serve without re-encoding.

mod admission;
mod create;
mod delete;
mod list;
mod update;
mod watch;

pub use delete::DeleteOptions;
pub use list::Page;
pub use update::{UpdateOptions, Updated};
pub use watch::{Source, Step, Watch};

use crate::alloc::Allocators;
use crate::objects;
use crate::routes::Resource;
use crate::storage::{Location, ReadPoint, Storage};
use keel_api::status::{ApiError, StatusCause};
use keel_engine::KeyValue;
use serde_json::Value;

/// Options of a create.
#[derive(Clone, Copy, Debug, Default)]
pub struct CreateOptions {
    /// Decide and answer everything, store nothing.
    pub dry_run: bool,
}

/// The registry: one per server, shared by every core and controller.
pub struct Registry {
    storage: Storage,
    alloc: Allocators,
    /// Where namespaces live (creates check theirs: NamespaceLifecycle).
    namespaces: Location,
}

impl Registry {
    pub fn new(storage: Storage, alloc: Allocators, namespaces: Location) -> Registry {
        Registry {
            storage,
            alloc,
            namespaces,
        }
    }

    /// The storage behind the registry, for health checks and `/metrics` (reads of objects go
    /// through the methods below).
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    pub fn allocators(&self) -> &Allocators {
        &self.alloc
    }

    /// The object `name`, read at `at`.
    pub async fn get(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
        at: ReadPoint,
    ) -> Result<KeyValue, ApiError> {
        self.storage
            .get(&res.loc.key(namespace, name), at)
            .await?
            .ok_or_else(|| res.not_found(name))
    }

    /// The latest version of `name`, parsed, with its revision.
    pub fn get_latest(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<(Value, KeyValue), ApiError> {
        let kv = self
            .storage
            .get_latest(&res.loc.key(namespace, name))?
            .ok_or_else(|| res.not_found(name))?;
        Ok((objects::parse_stored(kv.value())?, kv))
    }

    /// Whether `name` exists now.
    pub fn exists(&self, res: &Resource, namespace: &str, name: &str) -> Result<bool, ApiError> {
        Ok(self
            .storage
            .get_latest(&res.loc.key(namespace, name))?
            .is_some())
    }

    /// How many objects of `res` are stored (all namespaces).
    pub fn count(&self, res: &Resource) -> Result<u64, ApiError> {
        self.storage.count(&res.loc.list_prefix(""))
    }
}

/// The strategy's field errors as `Status` causes, metadata first.
fn validation_errors(res: &Resource, obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let info = &res.info;
    let mut causes: Vec<StatusCause> = keel_api::names::validate_object_meta(
        obj.get("metadata").unwrap_or(&Value::Null),
        info.namespaced,
        name_rule(info),
    );
    // Object metadata was validated just above; the strategy adds the type's own rules.
    let errs = match old {
        None => keel_strategy::validate_type(info.group, info.plural, obj),
        Some(old) => keel_strategy::validate_update_type(info.group, info.plural, obj, old),
    };
    for e in errs {
        let cause = StatusCause {
            reason: e.reason.to_string(),
            message: error_body(&e.field, &e.message).to_string(),
            field: e.field,
        };
        if !causes.contains(&cause) {
            causes.push(cause);
        }
    }
    causes
}

/// A cause's message is upstream's `ErrorBody()`: the error text without its field path.
fn error_body<'m>(field: &str, message: &'m str) -> &'m str {
    message
        .strip_prefix(field)
        .and_then(|m| m.strip_prefix(": "))
        .filter(|_| !field.is_empty())
        .unwrap_or(message)
}

/// Which name format a type requires, as upstream's per-type validation.
fn name_rule(info: &keel_catalog::ResourceInfo) -> keel_api::names::NameRule {
    use keel_api::names::NameRule;
    match (info.group, info.plural) {
        ("", "namespaces") => NameRule::Dns1123Label,
        ("", "services") => NameRule::Dns1035Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

fn invalid(res: &Resource, obj: &Value, causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid(res.info.group, res.info.kind, objects::name(obj), causes)
}

fn strategy_ctx() -> keel_strategy::Ctx {
    keel_strategy::Ctx {
        now_rfc3339: objects::now_rfc3339(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cause_messages_drop_the_field_path() {
        for (field, message, body) in [
            (
                "metadata.name",
                "metadata.name: Required value",
                "Required value",
            ),
            (
                "data[a b]",
                "data[a b]: Invalid value: \"a b\"",
                "Invalid value: \"a b\"",
            ),
            ("spec", "Invalid value: 1", "Invalid value: 1"),
            ("", ": odd", ": odd"),
            ("spec.x", "spec.xy: other field", "spec.xy: other field"),
        ] {
            assert_eq!(error_body(field, message), body, "{field} {message}");
        }
    }
}
