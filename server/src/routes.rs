//! The served resources as the handlers route to them: each `Resource` carries its catalog
//! entry, its storage location and its strategy, resolved once when the resource is added, so
//! a request looks its resource up once and carries everything with it.
//!
//! Live: resources can be added and removed while serving (`LiveRoutes::apply`; the CRD
//! controller's `LiveRoutes::apply_custom`, whose resources carry their definitions). A
//! change builds the next `Routes` (catalog snapshot, discovery documents, resources) from
//! the current one and publishes it; discovery, OpenAPI and routing all read the snapshot a
//! request loaded, so a request never sees half of a change, and one loaded before a change
//! finishes with it.
//!
//! No lock and no shared write on the request path: every core keeps the snapshot it last
//! loaded in a thread-local cache, checked against the published generation (one atomic load
//! of a line only writers touch); a request holds its core's `Rc` of the snapshot. Only the
//! first request on a core after a change takes the publisher's lock to fetch the new one.

use crate::custom::Custom;
use crate::limits::ROUTES_CACHED_PER_THREAD_MAX;
use crate::storage::Location;
use crate::versions::Versions;
use keel_catalog::{Catalog, CatalogChange, CatalogError, ResourceId, ResourceInfo};
use keel_strategy::Strategy;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// One served resource at one group/version.
pub struct Resource {
    pub info: Arc<ResourceInfo>,
    /// Where its objects live (shared by every version of the resource).
    pub loc: Location,
    /// Its per-type policy, resolved once.
    pub strategy: &'static Strategy,
    /// A custom resource's definition (`None` for built-ins).
    pub custom: Option<Arc<Custom>>,
    /// How its objects convert between the versions it is served in (`None`: one version,
    /// or versions that share one form).
    pub versions: Option<Arc<Versions>>,
}

impl Resource {
    fn new(catalog: &Catalog, info: &Arc<ResourceInfo>, custom: Option<Arc<Custom>>) -> Resource {
        let strategy = match &custom {
            Some(_) => keel_strategy::custom_resource(
                info.namespaced,
                info.subresource("status").is_some(),
            ),
            None => keel_strategy::strategy(info.group, info.plural),
        };
        let versions = match &custom {
            Some(c) => c.versions.clone(),
            None => Versions::of_builtin(info).map(Arc::new),
        };
        Resource {
            loc: Location::of(catalog, info),
            strategy,
            info: info.clone(),
            custom,
            versions,
        }
    }

    /// The group-qualified resource, as error messages name it (`deployments.apps`).
    pub fn not_found(&self, name: &str) -> keel_api::status::ApiError {
        keel_api::status::ApiError::not_found(self.info.group, self.info.plural, name)
    }
}

/// A snapshot of everything served.
pub struct Routes {
    pub catalog: Arc<Catalog>,
    /// Every served resource, in discovery order.
    list: Vec<Resource>,
    /// Index into `list` by group, version and plural (looked up on every request: foldhash,
    /// as the catalog's own index, instead of std's SipHash).
    by_path:
        HashMap<(&'static str, &'static str, &'static str), usize, foldhash::fast::RandomState>,
    /// Resource descriptions for the OpenAPI documents, made on first use.
    descs: OnceLock<Vec<keel_schema::ResourceDesc>>,
    /// The definitions of the custom resources served.
    custom: CustomMap,
}

/// Custom resources' definitions by the id they are served at.
type CustomMap = HashMap<ResourceId, Arc<Custom>>;

impl Routes {
    pub fn new(catalog: Arc<Catalog>) -> Routes {
        Routes::with_custom(catalog, CustomMap::new())
    }

    /// Routes for `catalog`, whose custom resources are defined by `custom`.
    fn with_custom(catalog: Arc<Catalog>, custom: CustomMap) -> Routes {
        let list: Vec<Resource> = catalog
            .resources()
            .map(|r| Resource::new(&catalog, r, custom.get(&ResourceId::of(r)).cloned()))
            .collect();
        let by_path = list
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.info.group, r.info.version, r.info.plural), i))
            .collect();
        Routes {
            catalog,
            list,
            by_path,
            descs: OnceLock::new(),
            custom,
        }
    }

    /// The generation of the catalog snapshot these routes serve.
    pub fn generation(&self) -> u64 {
        self.catalog.generation()
    }

    /// The served resource at `group/version/plural` (core group: `""`).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&Resource> {
        let i = self.by_path.get(&(group, version, plural))?;
        self.list.get(*i)
    }

    /// A resource every server serves (`namespaces`, `pods`, `services`, ...).
    pub fn core(&self, plural: &str) -> &Resource {
        self.lookup("", "v1", plural)
            .unwrap_or_else(|| panic!("core resource {plural} is always served"))
    }

    /// Every served resource, in discovery order.
    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.list.iter()
    }

    /// Resource descriptions for the OpenAPI documents.
    pub fn resource_descs(&self) -> &[keel_schema::ResourceDesc] {
        self.descs.get_or_init(|| {
            self.catalog
                .resources()
                .map(|r| keel_schema::ResourceDesc {
                    group: r.group.into(),
                    version: r.version.into(),
                    kind: r.kind.into(),
                    plural: r.plural.into(),
                    namespaced: r.namespaced,
                    custom_schema: self
                        .custom
                        .get(&ResourceId::of(r))
                        .map(|c| c.schema.clone()),
                    verbs: r.verbs.iter().map(|v| v.to_string()).collect(),
                    subresources: r
                        .subresources
                        .iter()
                        .map(|s| {
                            let kind = if s.group == r.group && s.version == r.version {
                                s.kind.to_string()
                            } else {
                                format!("{}/{}/{}", s.group, s.version, s.kind)
                            };
                            (
                                s.name.to_string(),
                                kind,
                                s.verbs.iter().map(|v| v.to_string()).collect(),
                            )
                        })
                        .collect(),
                })
                .collect()
        })
    }
}

/// The current routes, replaced whole when resources are added or removed.
pub struct LiveRoutes {
    /// Tells this instance's entries apart in the per-thread caches (tests run several).
    id: usize,
    /// The generation of `current`: what readers compare their cached snapshot with.
    generation: AtomicU64,
    /// The published snapshot; also serializes writers.
    current: Mutex<Arc<Routes>>,
}

/// Distinct `LiveRoutes` made in the process (their ids).
static INSTANCES: AtomicUsize = AtomicUsize::new(0);

/// A loaded snapshot, to hold for a request: an `Rc` of the shared `Arc`, so taking and
/// dropping it per request touches only this thread's count, never a line the other cores
/// share.
#[derive(Clone)]
#[allow(clippy::redundant_allocation)]
pub struct Snapshot(Rc<Arc<Routes>>);

impl std::ops::Deref for Snapshot {
    type Target = Routes;

    fn deref(&self) -> &Routes {
        &self.0
    }
}

thread_local! {
    /// This thread's last loaded snapshot per `LiveRoutes` (by id).
    static CACHED: RefCell<Vec<(usize, Snapshot)>> = const { RefCell::new(Vec::new()) };
}

impl LiveRoutes {
    pub fn new(catalog: Catalog) -> LiveRoutes {
        let routes = Routes::new(Arc::new(catalog));
        LiveRoutes {
            id: INSTANCES.fetch_add(1, Ordering::Relaxed),
            generation: AtomicU64::new(routes.generation()),
            current: Mutex::new(Arc::new(routes)),
        }
    }

    /// The current snapshot: hold it for the whole request (it stays valid and unchanged).
    pub fn load(&self) -> Snapshot {
        let generation = self.generation.load(Ordering::Acquire);
        CACHED.with(|cached| {
            let mut cached = cached.borrow_mut();
            if let Some((_, r)) = cached
                .iter()
                .find(|(id, r)| *id == self.id && r.generation() == generation)
            {
                return r.clone();
            }
            let fresh = Snapshot(Rc::new(self.current.lock().clone()));
            cached.retain(|(id, _)| *id != self.id);
            if cached.len() == ROUTES_CACHED_PER_THREAD_MAX {
                cached.remove(0);
            }
            cached.push((self.id, fresh.clone()));
            fresh
        })
    }

    /// Adds and removes resources (all of `change` or nothing) and serves the result from
    /// now on; returns the routes now served. Requests that already loaded the previous
    /// snapshot finish with it.
    pub fn apply(&self, change: &CatalogChange) -> Result<Arc<Routes>, CatalogError> {
        self.apply_custom(change, Vec::new())
    }

    /// [`LiveRoutes::apply`] for custom resources: each added resource of `defined` is served
    /// with its definition (the others stay as they were; removed ones lose theirs).
    pub fn apply_custom(
        &self,
        change: &CatalogChange,
        defined: Vec<(ResourceId, Arc<Custom>)>,
    ) -> Result<Arc<Routes>, CatalogError> {
        let mut current = self.current.lock();
        let catalog = Arc::new(current.catalog.with_changes(change)?);
        let mut custom = current.custom.clone();
        for id in &change.remove {
            custom.remove(id);
        }
        custom.extend(defined);
        let next = Arc::new(Routes::with_custom(catalog, custom));
        *current = next.clone();
        self.generation.store(next.generation(), Ordering::Release);
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_catalog::{ResourceId, ResourceSpec};
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    fn widgets(version: &str) -> ResourceSpec {
        ResourceSpec {
            storage_version: "v1".into(),
            ..ResourceSpec::custom("routes.example.com", version, "Widget", "widgets", true)
        }
    }

    /// Every snapshot a reader loads is whole: both widget versions or neither, each with its
    /// route, storage location and strategy, and discovery agreeing with the routes.
    fn check(r: &Routes, last_generation: &mut u64) {
        assert!(r.generation() >= *last_generation);
        *last_generation = r.generation();
        let v1 = r.lookup("routes.example.com", "v1", "widgets");
        let v2 = r.lookup("routes.example.com", "v2", "widgets");
        assert_eq!(v1.is_some(), v2.is_some(), "generation {}", r.generation());
        if let (Some(v1), Some(v2)) = (v1, v2) {
            assert_eq!(v1.loc, v2.loc, "versions share their storage");
            assert_eq!(v1.loc.prefix, "/routes.example.com/widgets/");
        }
        assert_eq!(
            r.catalog.api_group("routes.example.com").is_some(),
            v1.is_some()
        );
    }

    #[test]
    fn readers_never_see_a_change_half_made_and_keep_what_they_loaded() {
        /// Distinct snapshots each reader must see before it stops.
        const GENERATIONS_SEEN_MIN: usize = 20;
        const DEADLINE: Duration = Duration::from_secs(60);
        let live = LiveRoutes::new(Catalog::new("").unwrap());
        let held = live.load();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let ids = || {
                    vec![
                        ResourceId::new("routes.example.com", "v1", "widgets"),
                        ResourceId::new("routes.example.com", "v2", "widgets"),
                    ]
                };
                while !done.load(Ordering::Relaxed) {
                    live.apply(&CatalogChange::add(vec![widgets("v1"), widgets("v2")]))
                        .unwrap();
                    live.apply(&CatalogChange::remove(ids())).unwrap();
                }
            });
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let (mut last, mut seen) = (0, std::collections::BTreeSet::new());
                        let start = Instant::now();
                        while seen.len() < GENERATIONS_SEEN_MIN {
                            assert!(start.elapsed() < DEADLINE, "saw {} snapshots", seen.len());
                            let r = live.load();
                            check(&r, &mut last);
                            seen.insert(r.generation());
                        }
                    })
                })
                .collect();
            let failed = readers.into_iter().filter_map(|r| r.join().err()).next();
            done.store(true, Ordering::Relaxed);
            if let Some(panic) = failed {
                std::panic::resume_unwind(panic);
            }
        });
        // A snapshot loaded before the changes answers as before.
        assert!(held.lookup("routes.example.com", "v1", "widgets").is_none());
        assert!(held.lookup("", "v1", "pods").is_some());
    }

    #[test]
    fn a_refused_change_leaves_the_routes_as_they_were() {
        let live = LiveRoutes::new(Catalog::new("").unwrap());
        let before = live.load().generation();
        let err = live.apply(&CatalogChange::remove(vec![ResourceId::new(
            "", "v1", "pods",
        )]));
        assert!(err.is_err());
        assert_eq!(live.load().generation(), before);
        let added = live
            .apply(&CatalogChange::add(vec![widgets("v1")]))
            .unwrap();
        assert!(added.generation() > before);
        let now = live.load();
        assert_eq!(now.generation(), added.generation());
        let w = now.lookup("routes.example.com", "v1", "widgets").unwrap();
        assert_eq!(w.info.kind, "Widget");
        assert!(std::ptr::eq(
            w.strategy,
            keel_strategy::strategy("routes.example.com", "widgets")
        ));
    }
}
