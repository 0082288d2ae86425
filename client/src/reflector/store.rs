//! The reflector's cache: objects by `namespace/name`, the last resourceVersion seen, and the
//! pure rules that turn a watch event or a fresh list into the changes a consumer is told.
//!
//! Worked example (cache `{ns/a@5, ns/b@6}`, version `6`):
//! - `ADDED ns/c@7` -> `Added(c)`; cache `{a@5, b@6, c@7}`, version `7`.
//! - `MODIFIED ns/a@8` -> `Modified { old: a@5, new: a@8 }`; version `8`.
//! - `BOOKMARK @9` -> no change; version `9`.
//! - the watch is down while b is deleted and d created; the server's history no longer holds
//!   `9` (410); the re-list shows `{a@8, c@7, d@12}` at `12` -> `Deleted(b@6)` (the last state
//!   the cache saw), `Added(d@12)`; version `12`.

use crate::watch::WatchEvent;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// A cached object; shared by the cache and the changes that announce it.
pub type Object = Arc<Value>;

/// What changed in the cache, in the order it changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Added(Object),
    Modified {
        old: Object,
        new: Object,
    },
    /// The object as the cache last saw it: the final state from a `DELETED` event, or, for
    /// an object found gone by a re-list, its last state before the watch broke.
    Deleted(Object),
    /// The cache holds a whole list: after the first list, and again after each re-list once
    /// its differences were delivered.
    Synced,
}

/// `namespace/name`, or `name` for a cluster-scoped object (client-go's key).
pub fn object_key(obj: &Value) -> Option<String> {
    let meta = obj.get("metadata")?;
    let name = meta.get("name")?.as_str().filter(|n| !n.is_empty())?;
    Some(match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    })
}

fn version_of(obj: &Value) -> Option<&str> {
    obj.get("metadata")?.get("resourceVersion")?.as_str()
}

/// The same version of an object: equal resourceVersions (the server gives every write a new
/// one), or equal contents for objects without one.
fn unchanged(old: &Value, new: &Value) -> bool {
    match (version_of(old), version_of(new)) {
        (Some(a), Some(b)) => a == b,
        _ => old == new,
    }
}

/// Objects by key and the resourceVersion the cache is at.
#[derive(Debug, Default)]
pub struct Cache {
    objects: BTreeMap<String, Object>,
    resource_version: String,
}

impl Cache {
    /// Applies one watch event; the change it makes, if any (a bookmark, or the deletion of
    /// an object the cache does not hold, changes nothing but the version). `ADDED` of a
    /// known object is a modification and `MODIFIED` of an unknown one an addition: the
    /// change says what the cache saw.
    pub fn apply(&mut self, event: WatchEvent) -> Option<Change> {
        let (obj, deleted) = match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
            WatchEvent::Deleted(o) => (o, true),
            WatchEvent::Bookmark(o) => {
                self.advance(&o);
                return None;
            }
            WatchEvent::Error(_) => return None,
        };
        self.advance(&obj);
        let key = object_key(&obj)?;
        let obj = Arc::new(obj);
        if deleted {
            self.objects.remove(&key)?;
            return Some(Change::Deleted(obj));
        }
        Some(match self.objects.insert(key, obj.clone()) {
            Some(old) => Change::Modified { old, new: obj },
            None => Change::Added(obj),
        })
    }

    fn advance(&mut self, obj: &Value) {
        if let Some(rv) = version_of(obj).filter(|rv| !rv.is_empty()) {
            self.resource_version = rv.to_string();
        }
    }

    /// Makes the cache hold exactly `items` at `resource_version`; the differences from what
    /// it held: deletions first, then additions and modifications, each in key order. An
    /// object whose resourceVersion did not change is not reported.
    pub fn replace(&mut self, items: Vec<Value>, resource_version: String) -> Vec<Change> {
        let mut fresh: BTreeMap<String, Object> = items
            .into_iter()
            .filter_map(|o| Some((object_key(&o)?, Arc::new(o))))
            .collect();
        let mut changes: Vec<Change> = self
            .objects
            .iter()
            .filter(|(k, _)| !fresh.contains_key(*k))
            .map(|(_, o)| Change::Deleted(o.clone()))
            .collect();
        for (key, new) in &mut fresh {
            match self.objects.get(key) {
                None => changes.push(Change::Added(new.clone())),
                Some(old) if unchanged(old, new) => {
                    // Unchanged: keep sharing the object the consumer already has.
                    *new = old.clone();
                }
                Some(old) => changes.push(Change::Modified {
                    old: old.clone(),
                    new: new.clone(),
                }),
            }
        }
        self.objects = fresh;
        self.resource_version = resource_version;
        changes
    }

    pub fn get(&self, key: &str) -> Option<Object> {
        self.objects.get(key).cloned()
    }

    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }
}

/// A handle on a reflector's cache, for reading it (cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct Store {
    inner: Arc<RwLock<Cache>>,
}

impl Store {
    /// The object with key `namespace/name` (or `name`).
    pub fn get(&self, key: &str) -> Option<Object> {
        self.read().get(key)
    }

    /// Every cached object, in key order.
    pub fn list(&self) -> Vec<Object> {
        self.read().objects.values().cloned().collect()
    }

    /// Every key, in order.
    pub fn keys(&self) -> Vec<String> {
        self.read().objects.keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The last resourceVersion the cache saw (empty before the first list).
    pub fn resource_version(&self) -> String {
        self.read().resource_version.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the cache under the write lock (never held across an await).
    pub(super) fn update<T>(&self, f: impl FnOnce(&mut Cache) -> T) -> T {
        f(&mut self.inner.write().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;
    use serde_json::json;

    fn cm(ns: &str, name: &str, rv: u64) -> Value {
        json!({"kind": "ConfigMap", "metadata": {"namespace": ns, "name": name, "resourceVersion": rv.to_string()}})
    }

    fn names(changes: &[Change]) -> Vec<String> {
        changes
            .iter()
            .map(|c| match c {
                Change::Added(o) => format!("+{}", object_key(o).unwrap()),
                Change::Modified { old, new } => format!(
                    "~{}@{}->{}",
                    object_key(new).unwrap(),
                    version_of(old).unwrap(),
                    version_of(new).unwrap()
                ),
                Change::Deleted(o) => {
                    format!("-{}@{}", object_key(o).unwrap(), version_of(o).unwrap())
                }
                Change::Synced => "synced".into(),
            })
            .collect()
    }

    #[test]
    fn keys() {
        assert_eq!(object_key(&cm("ns", "a", 1)).as_deref(), Some("ns/a"));
        let node = json!({"metadata": {"name": "n1"}});
        assert_eq!(object_key(&node).as_deref(), Some("n1"));
        let empty_ns = json!({"metadata": {"name": "n1", "namespace": ""}});
        assert_eq!(object_key(&empty_ns).as_deref(), Some("n1"));
        assert_eq!(object_key(&json!({"metadata": {}})), None);
        assert_eq!(object_key(&json!({"metadata": {"name": ""}})), None);
    }

    #[test]
    fn the_worked_example() {
        let mut c = Cache::default();
        let first = c.replace(vec![cm("ns", "b", 6), cm("ns", "a", 5)], "6".into());
        assert_eq!(names(&first), ["+ns/a", "+ns/b"]);
        let steps = [
            (WatchEvent::Added(cm("ns", "c", 7)), Some("+ns/c"), "7"),
            (
                WatchEvent::Modified(cm("ns", "a", 8)),
                Some("~ns/a@5->8"),
                "8",
            ),
            (
                WatchEvent::Bookmark(json!({"metadata": {"resourceVersion": "9"}})),
                None,
                "9",
            ),
        ];
        for (event, want, rv) in steps {
            let got = c.apply(event).map(|ch| names(&[ch])[0].clone());
            assert_eq!(got.as_deref(), want);
            assert_eq!(c.resource_version(), rv);
        }
        let relist = c.replace(
            vec![cm("ns", "a", 8), cm("ns", "c", 7), cm("ns", "d", 12)],
            "12".into(),
        );
        assert_eq!(names(&relist), ["-ns/b@6", "+ns/d"]);
        assert_eq!(c.resource_version(), "12");
        assert_eq!(c.objects.len(), 3);
    }

    #[test]
    fn events_change_what_the_cache_saw() {
        let mut c = Cache::default();
        c.replace(vec![cm("ns", "a", 1)], "1".into());
        let cases: Vec<(WatchEvent, Option<&str>)> = vec![
            // ADDED of a known object: a modification.
            (WatchEvent::Added(cm("ns", "a", 2)), Some("~ns/a@1->2")),
            // MODIFIED of an unknown object: an addition.
            (WatchEvent::Modified(cm("ns", "b", 3)), Some("+ns/b")),
            (WatchEvent::Deleted(cm("ns", "a", 4)), Some("-ns/a@4")),
            // Deleting what the cache does not hold changes nothing but the version.
            (WatchEvent::Deleted(cm("ns", "zz", 5)), None),
            (
                WatchEvent::Added(json!({"metadata": {"resourceVersion": "6"}})),
                None,
            ),
            (
                WatchEvent::Error(Status {
                    code: 500,
                    ..Default::default()
                }),
                None,
            ),
        ];
        for (event, want) in cases {
            let got = c.apply(event.clone()).map(|ch| names(&[ch])[0].clone());
            assert_eq!(got.as_deref(), want, "{event:?}");
        }
        assert_eq!(c.resource_version(), "6");
        assert_eq!(c.objects.keys().collect::<Vec<_>>(), ["ns/b"]);
    }

    #[test]
    fn a_relist_reports_only_differences() {
        let mut c = Cache::default();
        c.replace(
            vec![cm("x", "keep", 1), cm("x", "bump", 2), cm("x", "gone", 3)],
            "3".into(),
        );
        let kept = c.get("x/keep").unwrap();
        let diff = c.replace(
            vec![cm("x", "keep", 1), cm("x", "bump", 9), cm("a", "new", 8)],
            "9".into(),
        );
        assert_eq!(names(&diff), ["-x/gone@3", "+a/new", "~x/bump@2->9"]);
        assert!(
            Arc::ptr_eq(&kept, &c.get("x/keep").unwrap()),
            "an unchanged object keeps its shared copy"
        );
        let same: Vec<Value> = c.objects.values().map(|o| (**o).clone()).collect();
        assert!(c.replace(same, "9".into()).is_empty());
        let all_gone = c.replace(Vec::new(), "10".into());
        assert_eq!(names(&all_gone), ["-a/new@8", "-x/bump@9", "-x/keep@1"]);
    }
}
