//! keel-revision: the resource version newtype, one type from the store through the API
//! semantics (`keel-api`'s resourceVersion rules and continue tokens) to the server.
//!
//! The embedded engine hands revisions out from one global sequencer: strictly increasing in
//! commit order across every shard (an etcd backend uses etcd's revisions, which have the same
//! order). Clients see them as decimal strings; inside keel they are never passed around as
//! bare integers. No dependencies.

use std::fmt;
use std::str::FromStr;

/// A globally ordered revision. `Revision::ZERO` means "before the first write".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Revision(pub u64);

impl Revision {
    pub const ZERO: Revision = Revision(0);
    pub const MAX: Revision = Revision(u64::MAX);

    pub fn get(self) -> u64 {
        self.0
    }

    pub fn next(self) -> Revision {
        Revision(self.0 + 1)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Revision {
    type Err = std::num::ParseIntError;

    /// Parses the decimal form clients send back (`metadata.resourceVersion`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<u64>().map(Revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_round_trip() {
        let r: Revision = "18446744073709551615".parse().unwrap();
        assert_eq!(r.to_string(), "18446744073709551615");
        assert!("-1".parse::<Revision>().is_err());
        assert!("abc".parse::<Revision>().is_err());
        assert!(Revision(2) > Revision(1));
    }
}
