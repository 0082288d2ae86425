//! The request context policy reads: the server's clock and who is asking, passed in as
//! values so every function here stays pure.
//!
//! Times are whole seconds, written as upstream writes `metav1.Time` (`keel_api::time`).

use keel_api::time::{format_rfc3339, parse_rfc3339, unix_seconds};
use std::time::SystemTime;

/// Request context the policy needs (the server's clock, the requester).
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    /// Current time, RFC 3339 (`2024-01-02T03:04:05Z`): condition timestamps are this text,
    /// deletion timestamps are computed from it (`deletionTimestamp = now + grace`).
    pub now_rfc3339: String,
    /// The authenticated user the request comes from; `None` for the server's own writes
    /// (bootstrap, controllers).
    pub requester: Option<Requester>,
}

/// An authenticated user, as upstream's `user.Info` (a CSR records it in its spec).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requester {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl Ctx {
    /// The context of a request served at `now` (seconds are truncated, as upstream's
    /// `metav1.Time` serializes them).
    pub fn at(now: SystemTime) -> Ctx {
        Ctx::at_unix_seconds(unix_seconds(now))
    }

    /// The context of a request served at `secs` seconds after the Unix epoch.
    pub fn at_unix_seconds(secs: i64) -> Ctx {
        Ctx {
            now_rfc3339: format_rfc3339(secs),
            requester: None,
        }
    }

    /// This context, for a request from `requester`.
    pub fn with_requester(self, requester: Option<Requester>) -> Ctx {
        Ctx { requester, ..self }
    }

    /// Now, in seconds after the Unix epoch; `None` when `now_rfc3339` is not RFC 3339.
    pub(crate) fn now_unix_seconds(&self) -> Option<i64> {
        parse_rfc3339(&self.now_rfc3339)
    }

    /// The timestamp `secs` seconds from now. A context without a readable clock yields its
    /// own text unchanged (the best the policy can do without inventing a time).
    pub(crate) fn rfc3339_after(&self, secs: i64) -> String {
        match self.now_unix_seconds() {
            Some(now) => format_rfc3339(now.saturating_add(secs)),
            None => self.now_rfc3339.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctx_from_system_time_and_offsets() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_704_067_200_900);
        let ctx = Ctx::at(t);
        assert_eq!(ctx.now_rfc3339, "2024-01-01T00:00:00Z");
        assert_eq!(ctx.rfc3339_after(30), "2024-01-01T00:00:30Z");
        assert_eq!(ctx.rfc3339_after(-1), "2023-12-31T23:59:59Z");
        let blind = Ctx {
            now_rfc3339: "later".into(),
            requester: None,
        };
        assert_eq!(blind.rfc3339_after(30), "later");
    }
}
