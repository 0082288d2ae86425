//! An object schema's `properties`: iterated sorted by name (Go visits them in random order;
//! a CRD as stored lists them sorted), looked up by hash. Every walk of a custom resource
//! (pruning, defaulting, the validators, CEL) looks up each member of the object in its
//! schema node; with a `BTreeMap` those lookups were the largest part of the memory
//! comparisons of a Widget create (about 250 `memcmp` calls each).

use std::collections::HashMap;

/// Up to this many properties a lookup compares names in turn (no hashing).
const SCAN_MAX: usize = 4;

/// A node's `properties` (`N`: the schema node type), sorted by name.
#[derive(Debug)]
pub struct Properties<N> {
    entries: Vec<(String, N)>,
    /// Name → index into `entries`, when there are more than [`SCAN_MAX`].
    index: HashMap<String, u32, foldhash::fast::RandomState>,
}

impl<N> Default for Properties<N> {
    fn default() -> Self {
        Properties {
            entries: Vec::new(),
            index: HashMap::default(),
        }
    }
}

impl<N> Properties<N> {
    /// From `(name, node)` pairs with distinct names (a JSON object's members).
    pub fn new(mut entries: Vec<(String, N)>) -> Properties<N> {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|a, b| a.0 == b.0);
        let index = match entries.len() > SCAN_MAX {
            true => entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i as u32))
                .collect(),
            false => HashMap::default(),
        };
        Properties { entries, index }
    }

    /// The schema of property `key`.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&N> {
        if self.entries.len() <= SCAN_MAX {
            return self.entries.iter().find(|(k, _)| k == key).map(|(_, n)| n);
        }
        let i = *self.index.get(key)?;
        self.entries.get(i as usize).map(|(_, n)| n)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &N)> {
        self.entries.iter().map(|(k, n)| (k, n))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &N> {
        self.entries.iter().map(|(_, n)| n)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut N> {
        self.entries.iter_mut().map(|(_, n)| n)
    }
}

impl<'a, N> IntoIterator for &'a Properties<N> {
    type Item = (&'a String, &'a N);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (String, N)>, Pair<'a, N>>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(pair)
    }
}

type Pair<'a, N> = fn(&'a (String, N)) -> (&'a String, &'a N);

fn pair<N>((k, n): &(String, N)) -> (&String, &N) {
    (k, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(format: &str) -> String {
        format.to_string()
    }

    #[test]
    fn sorted_and_found_below_and_above_the_scan_threshold() {
        for n in [0, 1, SCAN_MAX, SCAN_MAX + 1, 40] {
            let names: Vec<String> = (0..n).rev().map(|i| format!("p{i:02}")).collect();
            let p = Properties::new(names.iter().map(|k| (k.clone(), node(k))).collect());
            assert_eq!(p.len(), n);
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(p.keys().cloned().collect::<Vec<_>>(), sorted);
            for k in &names {
                assert_eq!(p.get(k), Some(k));
                assert!(p.contains_key(k));
            }
            assert!(p.get("p").is_none() && p.get("p000").is_none() && p.get("").is_none());
            assert_eq!((&p).into_iter().count(), n);
        }
    }

    #[test]
    fn a_repeated_name_is_kept_once() {
        let p = Properties::new(vec![
            ("a".into(), node("1")),
            ("b".into(), node("2")),
            ("a".into(), node("3")),
        ]);
        assert_eq!(p.len(), 2);
        assert!(p.get("a").is_some() && p.get("b").is_some());
    }
}
