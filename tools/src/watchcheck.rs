//! Delivery accounting for watches: which written revisions each watcher received, how many
//! twice, how many never, and in what order. Pure.

use serde::Serialize;
use std::collections::HashMap;

/// What one watcher received compared with what was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Delivery {
    /// Events received, all of them.
    pub received: u64,
    /// Written revisions this watcher never received (gaps).
    pub missing: u64,
    /// Extra copies of revisions received more than once.
    pub duplicates: u64,
    /// Revisions received that this run did not write (other writers; not an error).
    pub unexpected: u64,
    /// Events whose revision was not above the previous event's.
    pub out_of_order: u64,
}

impl Delivery {
    pub fn add(&mut self, o: &Delivery) {
        self.received += o.received;
        self.missing += o.missing;
        self.duplicates += o.duplicates;
        self.unexpected += o.unexpected;
        self.out_of_order += o.out_of_order;
    }

    /// No gap, no duplicate, in order.
    pub fn exact(&self) -> bool {
        self.missing == 0 && self.duplicates == 0 && self.out_of_order == 0
    }
}

/// Compares the revisions a watcher `received` (in arrival order) with those `written`.
pub fn check(written: &[u64], received: &[u64]) -> Delivery {
    let mut seen: HashMap<u64, u32> = HashMap::with_capacity(received.len());
    let mut d = Delivery {
        received: received.len() as u64,
        ..Default::default()
    };
    let mut last = 0u64;
    for &rv in received {
        if rv <= last {
            d.out_of_order += 1;
        }
        last = last.max(rv);
        *seen.entry(rv).or_default() += 1;
    }
    let mut written_set = std::collections::HashSet::with_capacity(written.len());
    for &rv in written {
        written_set.insert(rv);
        if !seen.contains_key(&rv) {
            d.missing += 1;
        }
    }
    for (rv, n) in seen {
        d.duplicates += u64::from(n - 1);
        if !written_set.contains(&rv) {
            d.unexpected += 1;
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let d = |received, missing, duplicates, unexpected, out_of_order| Delivery {
            received,
            missing,
            duplicates,
            unexpected,
            out_of_order,
        };
        let cases: &[(&[u64], &[u64], Delivery)] = &[
            (&[3, 5, 9], &[3, 5, 9], d(3, 0, 0, 0, 0)),
            (&[3, 5, 9], &[3, 9], d(2, 1, 0, 0, 0)),
            (&[3, 5, 9], &[3, 5, 5, 9], d(4, 0, 1, 0, 1)),
            (&[3, 5, 9], &[3, 4, 5, 9], d(4, 0, 0, 1, 0)),
            (&[3, 5, 9], &[5, 3, 9], d(3, 0, 0, 0, 1)),
            (&[], &[], d(0, 0, 0, 0, 0)),
            (&[7], &[], d(0, 1, 0, 0, 0)),
        ];
        for (written, received, want) in cases {
            assert_eq!(
                check(written, received),
                *want,
                "{written:?} vs {received:?}"
            );
        }
        assert!(check(&[1, 2], &[1, 2, 3]).exact());
        assert!(!check(&[1, 2], &[2]).exact());
    }
}
