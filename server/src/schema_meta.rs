//! Strategic merge patch metadata of built-in types, read from the published schemas.

use keel_api::patch::{ListStrategy, MergeMeta};

/// Merge keys and strategies of one kind.
pub struct SchemaMerge {
    pub gvk: (&'static str, &'static str, &'static str),
}

impl SchemaMerge {
    fn gvk(&self) -> keel_schema::Gvk<'static> {
        keel_schema::Gvk {
            group: self.gvk.0,
            version: self.gvk.1,
            kind: self.gvk.2,
        }
    }
}

impl MergeMeta for SchemaMerge {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match keel_schema::schemas().list_strategy(&self.gvk(), path) {
            keel_schema::ListStrategy::Atomic => ListStrategy::Atomic,
            keel_schema::ListStrategy::MergeByKey(k) => ListStrategy::MergeByKey(k),
            keel_schema::ListStrategy::MergePrimitives => ListStrategy::MergePrimitives,
        }
    }

    fn retain_keys(&self, path: &[&str]) -> bool {
        keel_schema::schemas().retain_keys(&self.gvk(), path)
    }
}
