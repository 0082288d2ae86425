//! ServiceCIDR protection, as upstream's kube-controller-manager `service-cidr-controller`
//! does it (keel runs it in-process, one pass with the `ipallocator` controller's): every
//! ServiceCIDR carries the finalizer `networking.k8s.io/service-cidr-finalizer` and a Ready
//! condition; one being deleted keeps its finalizer, with Ready=False/Terminating, while an
//! allocator-made IPAddress in it is contained in no other ServiceCIDR, and loses it (so it
//! goes) once free and [`DELETION_GRACE`] after its deletion began. Upstream's API server
//! itself adds no finalizer: a ServiceCIDR is created without one (compared on v1.36.2 with
//! and without the controller manager).

use crate::objects;
use crate::options::Cidr;
use crate::registry::{self, UpdateOptions};
use crate::routes::Resource;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

pub const FINALIZER: &str = "networking.k8s.io/service-cidr-finalizer";
/// The Ready condition of a ServiceCIDR in use.
pub const READY_MESSAGE: &str = "Kubernetes Service CIDR is ready";
/// Ready=False while deletion waits for its IPAddresses.
pub const TERMINATING_REASON: &str = "Terminating";
pub const TERMINATING_MESSAGE: &str =
    "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR";
/// How long after its deletion began a free ServiceCIDR keeps its finalizer, as upstream's
/// (allocators that have not yet seen the deletion must not hand out its IPs meanwhile).
pub const DELETION_GRACE: Duration = Duration::from_secs(10);

/// What the controller does to one ServiceCIDR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing.
    None,
    /// Add the finalizer and/or set the condition `(status, reason, message)`.
    Protect {
        add_finalizer: bool,
        condition: Option<(bool, String, String)>,
    },
    /// Being deleted, still needed: set Ready=False/Terminating if it is not.
    Block,
    /// Being deleted and free: remove the finalizer once `wait` has passed.
    Release { wait: Duration },
}

fn cidrs_of(sc: &Value) -> Vec<Cidr> {
    let texts = sc.at("/spec/cidrs").and_then(Value::as_array);
    texts
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|t| Cidr::parse_any(t).ok())
        .collect()
}

fn ready(sc: &Value) -> Option<&Value> {
    sc.at("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type") == Some(&json!("Ready")))
}

fn condition_is(sc: &Value, status: bool, reason: &str, message: &str) -> bool {
    ready(sc).is_some_and(|c| {
        c.get("status") == Some(&json!(if status { "True" } else { "False" }))
            && c.get("reason").and_then(Value::as_str).unwrap_or("") == reason
            && c.get("message").and_then(Value::as_str).unwrap_or("") == message
    })
}

/// Whether a range of `b` contains all of `a`.
fn covers(b: &Cidr, a: &Cidr) -> bool {
    b.is_ipv4() == a.is_ipv4() && b.prefix <= a.prefix && b.contains(a.base)
}

/// Upstream's `canDeleteCIDR`: `sc` (of `all`) may go when each of its ranges is contained
/// in another ServiceCIDR, or when no allocator-made IPAddress (`managed_ips`) is contained
/// in it alone.
pub fn can_delete(sc: &Value, all: &[Value], managed_ips: &[IpAddr]) -> bool {
    let name = objects::name(sc);
    let others: Vec<(&str, Vec<Cidr>)> = all
        .iter()
        .map(|o| (objects::name(o), cidrs_of(o)))
        .collect();
    let own = cidrs_of(sc);
    let has_parent = own.iter().all(|c| {
        others
            .iter()
            .any(|(n, rs)| *n != name && rs.iter().any(|r| covers(r, c)))
    });
    if has_parent {
        return true;
    }
    !managed_ips.iter().any(|ip| {
        let holders: Vec<&str> = others
            .iter()
            .filter(|(_, rs)| rs.iter().any(|r| r.contains(*ip)))
            .map(|(n, _)| *n)
            .collect();
        holders == [name]
    })
}

/// What to do with `sc`; `since_deletion`: how long ago its deletion began.
pub fn decide(
    sc: &Value,
    all: &[Value],
    managed_ips: &[IpAddr],
    since_deletion: Option<Duration>,
) -> Action {
    let has_finalizer = objects::finalizers(sc).iter().any(|f| f == FINALIZER);
    if let Some(elapsed) = since_deletion {
        if !has_finalizer {
            return Action::None;
        }
        if !can_delete(sc, all, managed_ips) {
            if condition_is(sc, false, TERMINATING_REASON, TERMINATING_MESSAGE) {
                return Action::None;
            }
            return Action::Block;
        }
        return Action::Release {
            wait: DELETION_GRACE.saturating_sub(elapsed),
        };
    }
    let condition = (!condition_is(sc, true, "", READY_MESSAGE))
        .then(|| (true, String::new(), READY_MESSAGE.to_string()));
    if has_finalizer && condition.is_none() {
        return Action::None;
    }
    Action::Protect {
        add_finalizer: !has_finalizer,
        condition,
    }
}

fn since_deletion(sc: &Value) -> Option<Duration> {
    let at = objects::meta_str(sc, "deletionTimestamp")?;
    let t = chrono::DateTime::parse_from_rfc3339(at).ok()?;
    let elapsed = chrono::Utc::now().signed_duration_since(t);
    Some(elapsed.to_std().unwrap_or(Duration::ZERO))
}

/// One pass over the ServiceCIDRs `all` with the IPAddress objects `ips`; returns how soon
/// the next pass is needed (a free ServiceCIDR waiting out its grace), if sooner than a
/// resync.
pub async fn reconcile(
    st: &State,
    res: &Resource,
    all: &[Value],
    ips: &HashMap<IpAddr, Value>,
) -> Result<Option<Duration>, ApiError> {
    let managed: Vec<IpAddr> = ips
        .iter()
        .filter(|(_, o)| {
            o.at("/metadata/labels")
                .and_then(|l| l.get(registry::MANAGED_BY_LABEL))
                .and_then(Value::as_str)
                == Some(registry::MANAGED_BY)
        })
        .map(|(ip, _)| *ip)
        .collect();
    let mut next: Option<Duration> = None;
    for sc in all {
        let name = objects::name(sc);
        match decide(sc, all, &managed, since_deletion(sc)) {
            Action::None => {}
            Action::Protect {
                add_finalizer,
                condition,
            } => {
                if add_finalizer {
                    super::set_finalizer(st, res, "", name, FINALIZER, true).await?;
                }
                if let Some((status, reason, message)) = condition {
                    set_condition(st, res, name, status, &reason, &message).await?;
                }
            }
            Action::Block => {
                set_condition(
                    st,
                    res,
                    name,
                    false,
                    TERMINATING_REASON,
                    TERMINATING_MESSAGE,
                )
                .await?;
            }
            Action::Release { wait } if wait.is_zero() => {
                super::set_finalizer(st, res, "", name, FINALIZER, false).await?;
            }
            Action::Release { wait } => {
                next = Some(next.map_or(wait, |n| n.min(wait)));
            }
        }
    }
    Ok(next)
}

async fn set_condition(
    st: &State,
    res: &Resource,
    name: &str,
    status: bool,
    reason: &str,
    message: &str,
) -> Result<(), ApiError> {
    let opts = UpdateOptions {
        subresource: "status",
        strategy: true,
        ..UpdateOptions::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, "", name, &opts, &mut |cur| {
            let mut new = cur.cloned().ok_or_else(|| res.not_found(name))?;
            objects::meta_mut(&mut new).shift_remove("resourceVersion");
            new["status"] = json!({"conditions": [{
                "type": "Ready", "status": if status { "True" } else { "False" },
                "lastTransitionTime": objects::now_rfc3339(),
                "reason": reason, "message": message,
            }]});
            Ok(new)
        })
        .await;
    super::gone_ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(name: &str, cidrs: Value, finalizer: bool, ready_msg: Option<&str>) -> Value {
        let mut v = json!({"metadata": {"name": name}, "spec": {"cidrs": cidrs}, "status": {}});
        if finalizer {
            v["metadata"]["finalizers"] = json!([FINALIZER]);
        }
        if let Some(m) = ready_msg {
            v["status"] = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "", "message": m}]});
        }
        v
    }

    /// Upstream's decisions: protect every ServiceCIDR; while deleting, block on an
    /// allocator-made IP contained in it alone, release once free and the grace is over.
    #[test]
    fn decisions_as_upstream() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let default = sc(
            "kubernetes",
            json!(["10.0.0.0/24", "fd00::/112"]),
            true,
            Some(READY_MESSAGE),
        );
        let extra = sc("extra", json!(["10.9.0.0/24"]), true, Some(READY_MESSAGE));
        let wide = sc("wide", json!(["10.9.0.0/16"]), true, Some(READY_MESSAGE));
        let fresh = sc("fresh", json!(["10.8.0.0/24"]), false, None);
        let all = vec![default.clone(), extra.clone(), fresh.clone()];
        let used = [ip("10.9.0.5"), ip("10.0.0.1")];
        let ready = || Some((true, String::new(), READY_MESSAGE.to_string()));
        assert_eq!(decide(&default, &all, &used, None), Action::None);
        assert_eq!(
            decide(&fresh, &all, &used, None),
            Action::Protect {
                add_finalizer: true,
                condition: ready()
            }
        );
        // Keel's bootstrap writes the API server's message; the controller's replaces it.
        let boot = sc(
            "kubernetes",
            json!(["10.0.0.0/24"]),
            false,
            Some("Kubernetes default Service CIDR is ready"),
        );
        assert_eq!(
            decide(&boot, &all, &used, None),
            Action::Protect {
                add_finalizer: true,
                condition: ready()
            }
        );
        let secs = Duration::from_secs;
        assert_eq!(decide(&extra, &all, &used, Some(secs(1))), Action::Block);
        assert!(!can_delete(&extra, &all, &used));
        // Free: released after the grace.
        assert_eq!(
            decide(&extra, &all, &[ip("10.0.0.1")], Some(secs(3))),
            Action::Release { wait: secs(7) }
        );
        assert_eq!(
            decide(&extra, &all, &[], Some(secs(30))),
            Action::Release {
                wait: Duration::ZERO
            }
        );
        // Covered by another ServiceCIDR: its IPs stay served, it may go.
        let with_wide = vec![default.clone(), extra.clone(), wide];
        assert!(can_delete(&extra, &with_wide, &used));
        // Already marked Terminating: nothing more to write.
        let mut marked = extra.clone();
        marked["status"] = json!({"conditions": [{"type": "Ready", "status": "False",
            "reason": TERMINATING_REASON, "message": TERMINATING_MESSAGE}]});
        assert_eq!(decide(&marked, &all, &used, Some(secs(1))), Action::None);
        // Without the finalizer a deletion is not the controller's.
        assert_eq!(decide(&fresh, &all, &used, Some(secs(1))), Action::None);
    }
}
