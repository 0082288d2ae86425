//! The served resources as the handlers route to them: each `Resource` carries its catalog
//! entry, its storage location and its strategy, resolved once when the resource is added, so
//! a request looks its resource up once and carries everything with it.
//!
//! Live: resources can be added and removed while serving. `LiveRoutes` holds the current
//! `Routes` snapshot behind an atomically swapped pointer; every core loads it without a lock
//! (one atomic load and a reference count per request) and keeps the snapshot it loaded for
//! the whole request, so a request never sees half of a change. Discovery documents come with
//! the catalog snapshot; the OpenAPI documents' resource descriptions are derived once per
//! snapshot.

use crate::storage::Location;
use arc_swap::ArcSwap;
use keel_catalog::{Catalog, ResourceInfo};
use keel_strategy::Strategy;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// One served resource at one group/version.
pub struct Resource {
    pub info: Arc<ResourceInfo>,
    /// Where its objects live (shared by every version of the resource).
    pub loc: Location,
    /// Its per-type policy, resolved once.
    pub strategy: &'static Strategy,
}

impl Resource {
    fn new(catalog: &Catalog, info: &ResourceInfo) -> Resource {
        Resource {
            loc: Location::of(catalog, info),
            strategy: keel_strategy::strategy(info.group, info.plural),
            info: Arc::new(info.clone()),
        }
    }

    /// `apiVersion` of the objects.
    pub fn api_version(&self) -> String {
        self.info.api_version()
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
    list: Vec<Arc<Resource>>,
    /// Index into `list` by group, version and plural.
    by_path: HashMap<(&'static str, &'static str, &'static str), usize>,
    /// Resource descriptions for the OpenAPI documents, made on first use.
    descs: OnceLock<Vec<keel_schema::ResourceDesc>>,
}

impl Routes {
    pub fn new(catalog: Arc<Catalog>) -> Routes {
        let list: Vec<Arc<Resource>> = catalog
            .resources()
            .map(|r| Arc::new(Resource::new(&catalog, r)))
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
        }
    }

    /// The served resource at `group/version/plural` (core group: `""`).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<Resource>> {
        let i = self.by_path.get(&(group, version, plural))?;
        self.list.get(*i)
    }

    /// A resource every server serves (`namespaces`, `pods`, `services`, ...).
    pub fn core(&self, plural: &str) -> &Arc<Resource> {
        self.lookup("", "v1", plural)
            .unwrap_or_else(|| panic!("core resource {plural} is always served"))
    }

    /// Every served resource, in discovery order.
    pub fn resources(&self) -> impl Iterator<Item = &Arc<Resource>> {
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

/// The current routes, swapped whole when resources are added or removed.
pub struct LiveRoutes {
    current: ArcSwap<Routes>,
}

impl LiveRoutes {
    pub fn new(catalog: Catalog) -> LiveRoutes {
        LiveRoutes {
            current: ArcSwap::from_pointee(Routes::new(Arc::new(catalog))),
        }
    }

    /// The current snapshot (no lock; hold it for the whole request).
    pub fn load(&self) -> Arc<Routes> {
        self.current.load_full()
    }

    /// Serves `catalog` from now on: requests that already loaded the previous snapshot
    /// finish with it.
    pub fn replace(&self, catalog: Catalog) {
        self.current.store(Arc::new(Routes::new(Arc::new(catalog))));
    }
}
