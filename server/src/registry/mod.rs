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
mod ipaddress;
mod list;
mod update;
mod watch;

pub use create::Created;
pub use delete::{DeleteOptions, Deleted};
pub use ipaddress::{held_by, ip_object, MANAGED_BY, MANAGED_BY_LABEL};
pub use list::Page;
pub use update::{UpdateOptions, Updated};
pub use watch::{Source, Step, Watch};

use crate::alloc::Allocators;
use crate::objects;
use crate::routes::Resource;
use crate::storage::{Location, ReadPoint, Storage};
use keel_api::status::{ApiError, StatusCause};
use keel_engine::{KeyValue, Revision};
use serde_json::Value;

/// Options of a create.
#[derive(Clone, Debug, Default)]
pub struct CreateOptions {
    /// Decide and answer everything, store nothing.
    pub dry_run: bool,
    /// Who asks (`None` for the server's own writes): policy may record it (a CSR's spec).
    pub requester: Option<keel_strategy::Requester>,
    /// Whose write this is, for `metadata.managedFields`.
    pub tracking: Tracking,
}

/// Who writes, for field ownership (`crate::fieldmanager`).
#[derive(Clone, Debug, Default)]
pub struct Tracking {
    /// The manager (`None`: keel's own writes, recorded as `kube-apiserver`).
    pub manager: Option<String>,
    /// The object comes from a server-side apply, its managedFields already computed:
    /// no Update entry is recorded.
    pub applied: bool,
}

impl Tracking {
    fn write<'a>(
        &'a self,
        res: &'a Resource,
        subresource: &'a str,
    ) -> crate::fieldmanager::Write<'a> {
        crate::fieldmanager::Write {
            group: res.info.group,
            version: res.info.version,
            kind: res.info.kind,
            subresource,
            manager: self.manager.as_deref(),
            custom: res.custom.as_deref(),
        }
    }

    /// An update's entries (`fieldmanager::record_update_taken`): the live object's
    /// `managedFields`, taken out of it (`live_managed`), move into `new` edited.
    fn record_taken(
        &self,
        res: &Resource,
        subresource: &str,
        live: &Value,
        live_managed: Option<Value>,
        new: &mut Value,
    ) {
        if !self.applied {
            let w = self.write(res, subresource);
            let now = objects::now_rfc3339();
            crate::fieldmanager::record_update_taken(&w, live, live_managed, new, &now);
        }
    }

    /// A create's entry, for an object that is encoded next and not read again
    /// (`fieldmanager::record_new`), unless a conversion reads it first (a resource served
    /// in several versions: a webhook is sent the object).
    fn record_new(&self, res: &Resource, new: &mut Value) {
        if !self.applied {
            let w = self.write(res, "");
            let now = objects::now_rfc3339();
            match res.versions {
                None => crate::fieldmanager::record_new(&w, new, &now),
                Some(_) => crate::fieldmanager::record_update(&w, None, new, &now),
            }
        }
    }
}

/// The registry: one per server, shared by every core and controller.
pub struct Registry {
    storage: Storage,
    alloc: Allocators,
    /// Where namespaces live (creates check theirs: NamespaceLifecycle).
    namespaces: Location,
    /// Woken whenever an object is deleted or marked for deletion: the garbage collector
    /// waits on it (an atomic store per delete; creates and updates do not touch it).
    pub gc_wake: std::sync::Arc<tokio::sync::Notify>,
}

impl Registry {
    pub fn new(storage: Storage, alloc: Allocators, namespaces: Location) -> Registry {
        Registry {
            storage,
            alloc,
            namespaces,
            gc_wake: Default::default(),
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
        let kv = self
            .storage
            .get(&res.loc.key(namespace, name), at)
            .await?
            .ok_or_else(|| res.not_found(name))?;
        as_request(res, kv).await
    }

    /// The latest version of `name`, parsed, with its revision.
    pub async fn get_latest(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<(Value, KeyValue), ApiError> {
        let kv = self
            .storage
            .get_latest(&res.loc.key(namespace, name))?
            .ok_or_else(|| res.not_found(name))?;
        let kv = as_request(res, kv).await?;
        Ok((objects::parse_stored(kv.value())?, kv))
    }

    /// The latest version of `name`, parsed, in the version it is stored in (for readers of
    /// its metadata only, which no version changes).
    pub fn get_latest_metadata(
        &self,
        res: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let kv = self
            .storage
            .get_latest(&res.loc.key(namespace, name))?
            .ok_or_else(|| res.not_found(name))?;
        objects::parse_stored(kv.value())
    }

    /// Whether `name` exists now.
    pub fn exists(&self, res: &Resource, namespace: &str, name: &str) -> Result<bool, ApiError> {
        Ok(self
            .storage
            .get_latest(&res.loc.key(namespace, name))?
            .is_some())
    }

    /// The newest revision whose changes (and all before it) are visible: where a list or
    /// watch "now" stands.
    pub fn current_revision(&self) -> Revision {
        self.storage.current()
    }

    /// How many objects of `res` are stored (all namespaces).
    pub fn count(&self, res: &Resource) -> Result<u64, ApiError> {
        self.storage.count(&res.loc.list_prefix(""))
    }
}

// Conversions run only for resources served in several versions, and a webhook's is an
// HTTPS exchange: its future (about 4.8 KiB) is boxed where it is awaited, so that every
// other request's futures, which hold these, stay small (each `.await` of a request's
// nested futures copies them into place: 9,000 instructions of a ConfigMap create's
// copying before this).

/// A stored object as the requests of `res` see it: in their version (`crate::versions`).
/// A custom resource stored before its schema changed is pruned and defaulted as read
/// (`Custom::decodes_read`).
async fn as_request(res: &Resource, kv: KeyValue) -> Result<KeyValue, ApiError> {
    let kv = match &res.versions {
        Some(v) if v.converts(kv.value()) => {
            let bytes = Box::pin(v.bytes_to_request(kv.value())).await?;
            KeyValue::from_parts(kv.key(), &bytes, kv.mod_revision)
        }
        _ => kv,
    };
    decoded(res, kv)
}

/// A custom resource's stored object pruned and defaulted if it may predate the schema.
fn decoded(res: &Resource, kv: KeyValue) -> Result<KeyValue, ApiError> {
    match &res.custom {
        Some(c) if c.decodes_read(kv.mod_revision) => {
            let bytes = c.decode_stored(kv.value())?;
            Ok(KeyValue::from_parts(kv.key(), &bytes, kv.mod_revision))
        }
        _ => Ok(kv),
    }
}

/// Stored objects as the requests of `res` see them (one conversion for all of them).
async fn all_as_request(res: &Resource, items: Vec<KeyValue>) -> Result<Vec<KeyValue>, ApiError> {
    let items = match &res.versions {
        None => items,
        Some(v) => {
            let converted =
                Box::pin(v.items_to_request(items.iter().map(KeyValue::value).collect())).await?;
            items
                .into_iter()
                .zip(converted)
                .map(|(kv, c)| match c {
                    Some(bytes) => KeyValue::from_parts(kv.key(), &bytes, kv.mod_revision),
                    None => kv,
                })
                .collect()
        }
    };
    if res.custom.is_none() {
        return Ok(items);
    }
    items.into_iter().map(|kv| decoded(res, kv)).collect()
}

/// An answer's stored bytes as the request sees them.
async fn answer_as_request(res: &Resource, bytes: Vec<u8>) -> Result<Vec<u8>, ApiError> {
    match &res.versions {
        Some(v) => Box::pin(v.vec_to_request(bytes)).await,
        None => Ok(bytes),
    }
}

/// A written object as it is stored.
async fn to_storage(res: &Resource, obj: &mut Value) -> Result<(), ApiError> {
    match &res.versions {
        Some(v) => Box::pin(v.to_storage(obj)).await,
        None => Ok(()),
    }
}

fn invalid(res: &Resource, obj: &Value, causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid(res.info.group, res.info.kind, objects::name(obj), causes)
}

/// The policy's view of the request: the server's clock now (and no requester: callers
/// that know one add it).
fn strategy_ctx() -> keel_strategy::Ctx {
    keel_strategy::Ctx::at(std::time::SystemTime::now())
}
