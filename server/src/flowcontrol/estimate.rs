//! The work estimate of a request: how many seats of its priority level it takes (upstream's
//! `WorkEstimator`). A list takes one seat per `FLOWCONTROL_OBJECTS_PER_SEAT` objects it is
//! expected to go through, from the resource's object count; everything else takes one. The
//! level then bounds it (`Dispatcher::max_width`).
//!
//! What a list goes through here: the objects of its page (`limit`) or all of them; all of
//! them when a label or field selector filters (the store reads every object to test it);
//! one when a field selector names the object (`metadata.name=`). Upstream estimates from
//! the same count with rules for its watch cache and etcd; keel reads a page at a time from
//! its index, so the page's size is what a paged list costs.
//!
//! Not modelled: upstream's extra seats held after a mutating request for the watchers it
//! notifies, and the estimate of a watch's initial events (a watch here releases its seat as
//! soon as it is established).

use crate::limits::{
    FLOWCONTROL_MAX_SEATS, FLOWCONTROL_OBJECTS_PER_SEAT, FLOWCONTROL_OBJECT_COUNTS_MAX,
    FLOWCONTROL_OBJECT_COUNT_MAX_AGE,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

/// What of a list request its estimate depends on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListShape {
    /// `limit`, when set and positive.
    pub limit: Option<u64>,
    /// A label or field selector is set.
    pub filtered: bool,
    /// The field selector names one object (`metadata.name=<name>`).
    pub single: bool,
}

impl ListShape {
    /// From the query's `limit`, `labelSelector` and `fieldSelector`.
    pub fn from_query(limit: Option<&str>, label: Option<&str>, field: Option<&str>) -> Self {
        let field = field.unwrap_or("").trim();
        let label = label.unwrap_or("").trim();
        ListShape {
            limit: limit
                .and_then(|l| l.trim().parse::<u64>().ok())
                .filter(|l| *l > 0),
            filtered: !label.is_empty() || !field.is_empty(),
            single: label.is_empty() && names_one(field),
        }
    }
}

/// `metadata.name=x` or `metadata.name==x`, alone.
fn names_one(field: &str) -> bool {
    if field.contains(',') {
        return false;
    }
    let rest = match field.strip_prefix("metadata.name") {
        Some(r) => r.trim_start(),
        None => return false,
    };
    let value = rest
        .strip_prefix("==")
        .or_else(|| rest.strip_prefix('='))
        .map(str::trim);
    value.is_some_and(|v| !v.is_empty())
}

/// Seats of a list of a resource holding `count` objects (before the level's bound).
pub fn list_seats(count: u64, shape: ListShape) -> u32 {
    let page = shape.limit.map_or(count, |l| l.min(count));
    let objects = if shape.single {
        1
    } else if shape.filtered {
        count
    } else {
        page
    };
    let seats = objects.div_ceil(FLOWCONTROL_OBJECTS_PER_SEAT);
    seats.clamp(1, u64::from(FLOWCONTROL_MAX_SEATS)) as u32
}

thread_local! {
    /// This core's recent object counts, by (group, resource).
    static COUNTS: RefCell<HashMap<(String, String), (u64, Instant)>> =
        RefCell::new(HashMap::new());
}

/// The object count of `group/resource`, from this core's cache when younger than
/// `FLOWCONTROL_OBJECT_COUNT_MAX_AGE`, else from `count` (not called while the cache is
/// borrowed). `None` when `count` fails (an unknown resource).
pub fn object_count(
    group: &str,
    resource: &str,
    count: impl FnOnce() -> Option<u64>,
) -> Option<u64> {
    let now = Instant::now();
    let cached = COUNTS.with(|c| {
        c.borrow()
            .get(&(group.to_string(), resource.to_string()))
            .filter(|(_, at)| now.duration_since(*at) < FLOWCONTROL_OBJECT_COUNT_MAX_AGE)
            .map(|(n, _)| *n)
    });
    if cached.is_some() {
        return cached;
    }
    let n = count()?;
    COUNTS.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= FLOWCONTROL_OBJECT_COUNTS_MAX {
            c.clear();
        }
        c.insert((group.to_string(), resource.to_string()), (n, now));
    });
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(limit: Option<&str>, label: Option<&str>, field: Option<&str>) -> ListShape {
        ListShape::from_query(limit, label, field)
    }

    #[test]
    fn list_seats_follow_the_objects_gone_through() {
        let all = shape(None, None, None);
        // (count, shape, seats)
        let cases = [
            (0, all, 1),
            (1, all, 1),
            (100, all, 1),
            (101, all, 2),
            (950, all, 10),
            (1_000_000, all, 10),
            // A page costs its size.
            (1_000_000, shape(Some("500"), None, None), 5),
            (1_000_000, shape(Some("50"), None, None), 1),
            (300, shape(Some("500"), None, None), 3),
            // limit=0 or junk: no limit.
            (300, shape(Some("0"), None, None), 3),
            (300, shape(Some("x"), None, None), 3),
            // A selector goes through everything, whatever the page.
            (1_000, shape(Some("10"), Some("app=a"), None), 10),
            (250, shape(None, None, Some("status.phase=Running")), 3),
            // One named object.
            (1_000_000, shape(None, None, Some("metadata.name=x")), 1),
            (1_000_000, shape(None, None, Some("metadata.name==x")), 1),
            (
                1_000_000,
                shape(None, None, Some("metadata.name=x,a=b")),
                10,
            ),
            (
                1_000_000,
                shape(None, Some("a=b"), Some("metadata.name=x")),
                10,
            ),
            (1_000_000, shape(None, None, Some("metadata.name!=x")), 10),
        ];
        for (count, s, want) in cases {
            assert_eq!(list_seats(count, s), want, "{count} {s:?}");
        }
    }

    #[test]
    fn counts_are_cached_per_resource() {
        let mut calls = 0;
        let mut count = |n| {
            calls += 1;
            Some(n)
        };
        assert_eq!(object_count("g-test", "r", || count(5)), Some(5));
        assert_eq!(object_count("g-test", "r", || count(9)), Some(5));
        assert_eq!(object_count("g-test", "other", || count(7)), Some(7));
        assert_eq!(calls, 2);
        assert_eq!(object_count("g-test", "missing", || None), None);
    }
}
