//! The live catalog: the current snapshot behind an atomically swapped pointer, shared by
//! every core.

use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;

use crate::catalog::Catalog;
use crate::change::CatalogChange;
use crate::error::CatalogError;
use crate::spec::{ResourceId, ResourceSpec};

/// The served resources, changeable while serving.
///
/// Readers call [`LiveCatalog::load`] once per request: no lock, and no write to memory
/// shared with other cores (arc-swap records the borrow in a per-thread slot instead of
/// bumping the snapshot's reference count). Measured by `examples/live_catalog_load.rs`
/// (release build, 2 reader threads on the 2-core VM, shared with other builds at load
/// average 3.6): `load()` + `lookup` costs 70-77 ns of CPU (100-107 ns wall) per request,
/// against 61-65 ns for `lookup` on a plain `&Catalog` (what a leaked catalog costs) and
/// 134-166 ns for `load_full()` + `lookup`, whose shared reference count the two threads
/// contend on; 71-74 ns while a writer swaps in a new snapshot every millisecond.
///
/// Writers ([`LiveCatalog::apply`], `add`, `remove`) are rare (a CRD created, changed or
/// deleted): they are serialized by a mutex, build the next snapshot from the current one
/// and swap it in. A snapshot already loaded stays valid, unchanged, for as long as its
/// holder keeps it; readers see the old snapshot or the new one, never a mix.
#[derive(Debug)]
pub struct LiveCatalog {
    current: ArcSwap<Catalog>,
    /// Serializes writers so no change is built from a snapshot another writer replaced.
    writer: Mutex<()>,
}

/// A loaded snapshot: derefs to [`Catalog`]. Hold it for one request; for longer (a watch),
/// keep [`CatalogGuard::to_arc`] or the `Arc<ResourceInfo>` you need instead: each thread
/// has only a few cheap guard slots, and guards beyond them fall back to reference counting.
pub struct CatalogGuard(arc_swap::Guard<Arc<Catalog>>);

impl Deref for CatalogGuard {
    type Target = Catalog;

    fn deref(&self) -> &Catalog {
        &self.0
    }
}

impl CatalogGuard {
    /// The snapshot as an owned reference, to keep beyond the current request.
    pub fn to_arc(&self) -> Arc<Catalog> {
        Arc::clone(&self.0)
    }
}

impl LiveCatalog {
    /// Starts serving `initial` (e.g. `Catalog::new(runtime_config)?.with_server_address(..)`).
    pub fn new(initial: Catalog) -> LiveCatalog {
        LiveCatalog {
            current: ArcSwap::from_pointee(initial),
            writer: Mutex::new(()),
        }
    }

    /// The current snapshot, for one request.
    pub fn load(&self) -> CatalogGuard {
        CatalogGuard(self.current.load())
    }

    /// The current snapshot as an owned reference (one contended reference-count increment:
    /// for long-lived holders, not per request).
    pub fn load_full(&self) -> Arc<Catalog> {
        self.current.load_full()
    }

    /// Applies `change` atomically and returns the snapshot now served. A refused change
    /// leaves the current snapshot in place.
    pub fn apply(&self, change: &CatalogChange) -> Result<Arc<Catalog>, CatalogError> {
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let current = self.current.load_full();
        let next = Arc::new(current.with_changes(change)?);
        assert!(
            next.generation() > current.generation(),
            "generation {} after {}",
            next.generation(),
            current.generation()
        );
        self.current.store(Arc::clone(&next));
        Ok(next)
    }

    /// Starts serving `resources` (all or none).
    pub fn add(&self, resources: Vec<ResourceSpec>) -> Result<Arc<Catalog>, CatalogError> {
        self.apply(&CatalogChange::add(resources))
    }

    /// Stops serving `resources` (all or none).
    pub fn remove(&self, resources: Vec<ResourceId>) -> Result<Arc<Catalog>, CatalogError> {
        self.apply(&CatalogChange::remove(resources))
    }
}
