//! The process-wide interner for names known only at run time.
//!
//! `ResourceInfo` holds `&'static str` names, so the server can keep matching on
//! `(info.group, info.plural)` and every map keyed by them stays borrow-free. A name that
//! arrives at run time (a CRD's kind, an aggregated API's group) is leaked once, ever: asking
//! for the same string again returns the same `&'static str`. Memory is therefore bounded by
//! the distinct names ever seen, and [`INTERNED_BYTES_MAX`] bounds that: past it, additions
//! needing new names are refused. Built-in names are already static and are seeded for free,
//! so a run-time resource reusing them (`v1`, `get`, `autoscaling`, `Scale`) costs nothing.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError};

use crate::builtin::builtin_types;
use crate::data::RESOURCES;
use crate::error::CatalogError;
use crate::limits::INTERNED_BYTES_MAX;

/// Interned strings and lists, and the bytes they took.
#[derive(Debug)]
pub(crate) struct Interner {
    strings: HashSet<&'static str>,
    lists: HashSet<&'static [&'static str]>,
    used_bytes: usize,
    max_bytes: usize,
}

/// Bytes one interned list element takes (a `&str`: pointer and length).
const LIST_ELEMENT_BYTES: usize = std::mem::size_of::<&str>();

/// What one batch interned: its strings and lists, in the order they were given.
pub(crate) struct Interned {
    pub strings: Vec<&'static str>,
    pub lists: Vec<&'static [&'static str]>,
}

impl Interner {
    /// An empty interner that leaks at most `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> Interner {
        Interner {
            strings: HashSet::new(),
            lists: HashSet::new(),
            used_bytes: 0,
            max_bytes,
        }
    }

    /// An interner that already knows every built-in name and list (at no cost).
    fn seeded(max_bytes: usize) -> Interner {
        let mut i = Interner::new(max_bytes);
        for t in builtin_types() {
            i.strings.extend([t.group, t.version, t.kind, t.plural]);
        }
        for r in RESOURCES {
            i.strings.insert(r.singular);
            for list in [r.verbs, r.short_names, r.categories] {
                i.strings.extend(list);
                i.lists.insert(list);
            }
            for s in r.subresources {
                i.strings.extend([s.name, s.group, s.version, s.kind]);
                i.strings.extend(s.verbs);
                i.lists.insert(s.verbs);
            }
        }
        i
    }

    /// Bytes leaked so far.
    pub(crate) fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// Interns every string and list, or nothing if that would pass the bound.
    pub(crate) fn intern(
        &mut self,
        strings: &[&str],
        lists: &[&[&str]],
    ) -> Result<Interned, CatalogError> {
        let needed = self.bytes_needed(strings, lists);
        if needed > self.max_bytes - self.used_bytes {
            return Err(CatalogError::InternerFull {
                needed,
                used: self.used_bytes,
                max: self.max_bytes,
            });
        }
        let strings = strings.iter().map(|s| self.string(s)).collect();
        let lists = lists.iter().map(|l| self.list(l)).collect();
        Ok(Interned { strings, lists })
    }

    /// An upper bound on what interning the batch would leak (a string new to the interner
    /// and repeated within the batch counts each time).
    fn bytes_needed(&self, strings: &[&str], lists: &[&[&str]]) -> usize {
        let string_bytes = |s: &str| if self.strings.contains(s) { 0 } else { s.len() };
        let list_bytes = |l: &[&str]| -> usize {
            let known: Option<Vec<&'static str>> =
                l.iter().map(|s| self.strings.get(*s).copied()).collect();
            let own = match known {
                Some(k) if l.is_empty() || self.lists.contains(k.as_slice()) => 0,
                _ => l.len() * LIST_ELEMENT_BYTES,
            };
            own + l.iter().map(|s| string_bytes(s)).sum::<usize>()
        };
        strings.iter().map(|s| string_bytes(s)).sum::<usize>()
            + lists.iter().map(|l| list_bytes(l)).sum::<usize>()
    }

    fn string(&mut self, s: &str) -> &'static str {
        if let Some(known) = self.strings.get(s) {
            return known;
        }
        let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
        self.used_bytes += leaked.len();
        self.strings.insert(leaked);
        leaked
    }

    fn list(&mut self, items: &[&str]) -> &'static [&'static str] {
        if items.is_empty() {
            return &[];
        }
        let items: Vec<&'static str> = items.iter().map(|s| self.string(s)).collect();
        if let Some(known) = self.lists.get(items.as_slice()) {
            return known;
        }
        let leaked: &'static [&'static str] = Box::leak(items.into_boxed_slice());
        self.used_bytes += leaked.len() * LIST_ELEMENT_BYTES;
        self.lists.insert(leaked);
        leaked
    }
}

/// The one interner of the process.
static INTERNER: LazyLock<Mutex<Interner>> =
    LazyLock::new(|| Mutex::new(Interner::seeded(INTERNED_BYTES_MAX)));

/// Runs `f` on the process-wide interner. Every step of the interner leaves it consistent, so
/// a panic elsewhere while it was held does not make it unusable.
pub(crate) fn with_global<R>(f: impl FnOnce(&mut Interner) -> R) -> R {
    let mut guard = INTERNER.lock().unwrap_or_else(PoisonError::into_inner);
    f(&mut guard)
}

/// Bytes the process-wide interner has leaked for run-time names (at most
/// [`INTERNED_BYTES_MAX`]); for metrics.
pub fn interned_bytes() -> usize {
    with_global(|i| i.used_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_string_is_leaked_once_and_the_bound_refuses_more() {
        let mut i = Interner::new(44);
        let a = i.intern(&["widgets"], &[]).unwrap();
        let b = i.intern(&["widgets"], &[]).unwrap();
        assert!(std::ptr::eq(a.strings[0], b.strings[0]));
        assert_eq!(i.used_bytes(), 7);
        // A list: its new strings plus 16 bytes per element; the same list again is free.
        let l = i.intern(&[], &[&["get", "widgets"]]).unwrap();
        assert_eq!(i.used_bytes(), 7 + 3 + 2 * LIST_ELEMENT_BYTES);
        let again = i.intern(&[], &[&["get", "widgets"]]).unwrap();
        assert!(std::ptr::eq(l.lists[0], again.lists[0]));
        assert_eq!(i.used_bytes(), 42);
        // Anything new now passes the bound: refused, and nothing of the batch is kept.
        let err = i.intern(&["widgets", "gadget"], &[]).err();
        assert_eq!(
            err,
            Some(CatalogError::InternerFull {
                needed: 6,
                used: 42,
                max: 44
            })
        );
        assert_eq!(i.used_bytes(), 42);
        assert!(i.intern(&["gadget"], &[]).is_err(), "gadget was not kept");
        assert!(
            i.intern(&["widgets", "get"], &[&[]]).is_ok(),
            "known names are free"
        );
    }

    #[test]
    fn built_in_names_are_free() {
        let mut i = Interner::seeded(0);
        let got = i
            .intern(
                &["apps", "v1", "Deployment", "autoscaling", "Scale"],
                &[crate::data::CRUD, &["get", "patch", "update"], &["all"]],
            )
            .unwrap();
        assert_eq!(i.used_bytes(), 0);
        assert_eq!(got.lists[0], crate::data::CRUD);
    }
}
