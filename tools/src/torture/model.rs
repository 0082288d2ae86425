//! What a torture run knows it wrote, and the verdict on what a restarted server holds.
//!
//! Each writer owns a fixed set of keys and writes them one at a time, so every key has at
//! most one write in flight. For each key the model keeps the last acknowledged state and the
//! write in flight, if any (a write cut by the kill may or may not have been applied). Every
//! acknowledged revision is remembered with the write it belongs to, so that a revision handed
//! out twice, an object rolled back to an older version and an object nobody wrote are told
//! apart. Pure: no I/O; the runner feeds it acknowledgements and listings.

use serde::Serialize;
use std::collections::HashMap;

/// One key: writer `w`'s key number `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub w: u32,
    pub k: u32,
}

/// What a key holds: nothing, or the write `seq` stored at revision `rv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Absent,
    Present { seq: u64, rv: u64 },
}

/// A write sent and not yet answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    /// A create or an update carrying `seq`.
    Put {
        seq: u64,
    },
    Delete,
}

#[derive(Clone, Copy, Debug, Default)]
struct KeyState {
    acked: Option<(u64, u64)>,
    pending: Option<Pending>,
}

/// A broken promise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Violation {
    /// A revision acknowledged for one write was acknowledged again for another.
    RevisionReused {
        rv: u64,
        first: String,
        second: String,
    },
    /// A write acknowledged after a restart got a revision at or below one acknowledged
    /// before it.
    RevisionNotAbove { rv: u64, floor: u64, key: String },
    /// The server holds a value for a key that no write of this run produced.
    Invented { key: String, seq: u64, rv: u64 },
}

/// What a listing showed against the model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Keys whose last acknowledged write is gone (absent, or an older version).
    pub lost: Vec<String>,
    /// Keys whose in-flight write turned out applied (not an error: it was never answered).
    pub adopted: usize,
    /// Keys as acknowledged.
    pub intact: usize,
    pub violations: Vec<Violation>,
}

/// The record of one run.
pub struct Model {
    keys: HashMap<Key, KeyState>,
    /// Every acknowledged (or found applied) revision and the write it carried.
    revisions: HashMap<u64, (Key, u64)>,
    /// Highest revision acknowledged or seen so far.
    max_rv: u64,
    /// Every write acknowledged by the current server process must be above this: the highest
    /// revision known before it started.
    floor: u64,
    next_seq: u64,
}

/// The name of `key`'s object.
pub fn name(key: Key) -> String {
    format!("t-{}-{}", key.w, key.k)
}

/// The key of an object named by [`name`].
pub fn parse_name(name: &str) -> Option<Key> {
    let rest = name.strip_prefix("t-")?;
    let (w, k) = rest.split_once('-')?;
    Some(Key {
        w: w.parse().ok()?,
        k: k.parse().ok()?,
    })
}

impl Model {
    pub fn new(writers: u32, keys: u32) -> Model {
        let mut m = HashMap::new();
        for w in 0..writers {
            for k in 0..keys {
                m.insert(Key { w, k }, KeyState::default());
            }
        }
        Model {
            keys: m,
            revisions: HashMap::new(),
            max_rv: 0,
            floor: 0,
            next_seq: 1,
        }
    }

    /// The last acknowledged state of `key` (what the next write starts from).
    pub fn acked(&self, key: Key) -> Value {
        match self.keys.get(&key).and_then(|s| s.acked) {
            Some((seq, rv)) => Value::Present { seq, rv },
            None => Value::Absent,
        }
    }

    /// Records a write about to be sent; returns its `seq` for a put.
    pub fn begin(&mut self, key: Key, delete: bool) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let p = if delete {
            Pending::Delete
        } else {
            Pending::Put { seq }
        };
        if let Some(s) = self.keys.get_mut(&key) {
            s.pending = Some(p);
        }
        seq
    }

    /// The write in flight was refused: it was not applied.
    pub fn refused(&mut self, key: Key) {
        if let Some(s) = self.keys.get_mut(&key) {
            s.pending = None;
        }
    }

    /// The put in flight was acknowledged at `rv`.
    pub fn ack_put(&mut self, key: Key, seq: u64, rv: u64) -> Vec<Violation> {
        let v = self.remember(key, seq, rv, true);
        if let Some(s) = self.keys.get_mut(&key) {
            s.pending = None;
            s.acked = Some((seq, rv));
        }
        v
    }

    /// The delete in flight was acknowledged.
    pub fn ack_delete(&mut self, key: Key) {
        if let Some(s) = self.keys.get_mut(&key) {
            s.pending = None;
            s.acked = None;
        }
    }

    /// Acknowledged writes' revisions known so far.
    pub fn revisions_known(&self) -> usize {
        self.revisions.len()
    }

    fn remember(&mut self, key: Key, seq: u64, rv: u64, check_floor: bool) -> Vec<Violation> {
        let mut out = Vec::new();
        if check_floor && rv <= self.floor {
            out.push(Violation::RevisionNotAbove {
                rv,
                floor: self.floor,
                key: name(key),
            });
        }
        match self.revisions.get(&rv) {
            Some(&(k0, s0)) if (k0, s0) != (key, seq) => out.push(Violation::RevisionReused {
                rv,
                first: format!("{} seq {s0}", name(k0)),
                second: format!("{} seq {seq}", name(key)),
            }),
            Some(_) => {}
            None => {
                self.revisions.insert(rv, (key, seq));
            }
        }
        self.max_rv = self.max_rv.max(rv);
        out
    }

    /// Compares what a freshly started server holds (`actual`: key → (seq, rv); `strangers`:
    /// objects whose names no writer uses) with the record, then takes it as the new state
    /// (writes in flight resolved) and raises the floor above every revision known: the next
    /// server process must hand out revisions above all of them.
    pub fn reconcile(
        &mut self,
        actual: &HashMap<Key, (u64, u64)>,
        strangers: &[String],
    ) -> Verdict {
        let mut verdict = Verdict::default();
        for name in strangers {
            verdict.violations.push(Violation::Invented {
                key: name.clone(),
                seq: 0,
                rv: 0,
            });
        }
        for (key, _) in actual.iter() {
            if !self.keys.contains_key(key) {
                verdict.violations.push(Violation::Invented {
                    key: name(*key),
                    seq: 0,
                    rv: 0,
                });
            }
        }
        let mut keys: Vec<Key> = self.keys.keys().copied().collect();
        keys.sort();
        for key in keys {
            let st = self.keys[&key];
            let found = actual.get(&key).copied();
            let as_acked = found == st.acked;
            let as_pending = match (st.pending, found) {
                (Some(Pending::Put { seq }), Some((s, _))) => s == seq,
                (Some(Pending::Delete), None) => true,
                _ => false,
            };
            if as_acked {
                verdict.intact += 1;
            } else if as_pending {
                verdict.adopted += 1;
                if let Some((seq, rv)) = found {
                    // Applied by the process that was killed: above that process's floor,
                    // but not necessarily above the writes acknowledged after it was sent.
                    let v = self.remember(key, seq, rv, false);
                    verdict.violations.extend(v);
                }
            } else {
                match found {
                    None => verdict.lost.push(name(key)),
                    Some((seq, rv)) => match self.revisions.get(&rv) {
                        // An older acknowledged version of this key came back.
                        Some(&(k0, s0)) if k0 == key && s0 == seq => verdict.lost.push(name(key)),
                        _ => verdict.violations.push(Violation::Invented {
                            key: name(key),
                            seq,
                            rv,
                        }),
                    },
                }
            }
            let s = self.keys.get_mut(&key).expect("listed above");
            s.acked = found;
            s.pending = None;
        }
        for &(_, rv) in actual.values() {
            self.max_rv = self.max_rv.max(rv);
        }
        self.floor = self.max_rv;
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Key = Key { w: 0, k: 0 };
    const B: Key = Key { w: 0, k: 1 };

    fn listing(items: &[(Key, u64, u64)]) -> HashMap<Key, (u64, u64)> {
        items.iter().map(|&(k, s, r)| (k, (s, r))).collect()
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(
            parse_name(&name(Key { w: 3, k: 17 })),
            Some(Key { w: 3, k: 17 })
        );
        assert_eq!(parse_name("t-3"), None);
        assert_eq!(parse_name("x-1-2"), None);
    }

    #[test]
    fn everything_acknowledged_found_is_intact() {
        let mut m = Model::new(1, 2);
        let s = m.begin(A, false);
        assert!(m.ack_put(A, s, 10).is_empty());
        let v = m.reconcile(&listing(&[(A, s, 10)]), &[]);
        assert_eq!((v.intact, v.adopted, v.lost.len()), (2, 0, 0));
        assert!(v.violations.is_empty());
    }

    #[test]
    fn a_missing_or_rolled_back_write_is_lost() {
        let mut m = Model::new(1, 2);
        let s1 = m.begin(A, false);
        m.ack_put(A, s1, 10);
        let s2 = m.begin(A, false);
        m.ack_put(A, s2, 11);
        let t = m.begin(B, false);
        m.ack_put(B, t, 12);
        // A back at its first version, B gone.
        let v = m.reconcile(&listing(&[(A, s1, 10)]), &[]);
        assert_eq!(v.lost, vec![name(A), name(B)]);
        assert!(v.violations.is_empty());
    }

    #[test]
    fn a_write_in_flight_may_or_may_not_be_applied() {
        let mut m = Model::new(1, 2);
        let s1 = m.begin(A, false);
        m.ack_put(A, s1, 10);
        let s2 = m.begin(A, false); // cut by the kill, applied
        let t = m.begin(B, false); // cut by the kill, not applied
        let v = m.reconcile(&listing(&[(A, s2, 11)]), &[]);
        assert_eq!((v.intact, v.adopted), (1, 1), "{v:?}");
        assert!(v.lost.is_empty() && v.violations.is_empty());
        let _ = t;
        // A delete in flight, applied.
        m.begin(A, true);
        let v = m.reconcile(&listing(&[]), &[]);
        assert_eq!(v.adopted, 1);
    }

    #[test]
    fn a_value_nobody_wrote_is_invented() {
        let mut m = Model::new(1, 1);
        let v = m.reconcile(&listing(&[(A, 99, 5)]), &["other".to_string()]);
        assert_eq!(v.violations.len(), 2, "{v:?}");
        assert!(v
            .violations
            .iter()
            .all(|x| matches!(x, Violation::Invented { .. })));
    }

    #[test]
    fn revisions_must_never_be_reused_and_must_pass_the_floor() {
        let mut m = Model::new(1, 2);
        let s = m.begin(A, false);
        assert!(m.ack_put(A, s, 10).is_empty());
        m.reconcile(&listing(&[(A, s, 10)]), &[]);
        // The next process hands out 10 again, for another write.
        let t = m.begin(B, false);
        let v = m.ack_put(B, t, 10);
        assert!(v
            .iter()
            .any(|x| matches!(x, Violation::RevisionReused { rv: 10, .. })));
        assert!(v.iter().any(|x| matches!(
            x,
            Violation::RevisionNotAbove {
                rv: 10,
                floor: 10,
                ..
            }
        )));
        // Above the floor: fine.
        let u = m.begin(B, false);
        assert!(m.ack_put(B, u, 11).is_empty());
    }
}
