//! A Service's cluster IPs as IPAddress objects (`networking.k8s.io/v1`), written with the
//! Service as upstream's allocator does: the object is created before the Service is stored
//! (its existence is what makes the IP taken: a create that finds one already there did not
//! get the IP) and deleted when the Service gives the IP back.

use super::Registry;
use crate::alloc::Allocation;
use crate::objects::{self, Spliced};
use crate::storage::{storage_error, Location};
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_engine::Error as StoreError;
use keel_strategy::{AllocError, FailedNeed, Request, ServiceHeld, ServiceNeeds, Strategy};
use serde_json::{json, Value};
use std::net::IpAddr;

/// The label upstream's allocator puts on the IPAddress objects it manages, and its value.
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "ipallocator.k8s.io";
/// The label with the address's family.
pub const IP_FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";

/// How many free-looking IPs one create tries when each turns out to have an IPAddress
/// object (created by a user or another server meanwhile) before it gives up with a 500.
pub const IP_OBJECT_CLASHES_MAX: usize = 16;

/// The IPAddress object recording that `svc` holds `ip`.
pub fn ip_object(ip: IpAddr, svc: &Value) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": ip.to_string(),
            "uid": objects::new_uid(),
            "creationTimestamp": objects::now_rfc3339(),
            "labels": {IP_FAMILY_LABEL: family(ip), MANAGED_BY_LABEL: MANAGED_BY},
        },
        "spec": {"parentRef": {
            "resource": "services",
            "namespace": objects::meta_str(svc, "namespace").unwrap_or(""),
            "name": objects::name(svc),
        }},
    })
}

/// `IPv4` or `IPv6`, as the family label says.
pub fn family(ip: IpAddr) -> &'static str {
    if ip.is_ipv4() {
        "IPv4"
    } else {
        "IPv6"
    }
}

/// Whether the IPAddress `ip_obj` names `svc` as its holder.
pub fn held_by(ip_obj: &Value, svc_namespace: &str, svc_name: &str) -> bool {
    let p = ip_obj.at("/spec/parentRef").unwrap_or(&Value::Null);
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    text("group").is_empty()
        && text("resource") == "services"
        && text("namespace") == svc_namespace
        && text("name") == svc_name
}

impl Registry {
    /// Allocates what a new object needs (see `Allocators::allocate`) and, for a Service,
    /// creates an IPAddress object per cluster IP. An IP whose object already exists is taken:
    /// asked for, it is a 422 as upstream's; picked, another is picked.
    pub(super) async fn allocate_recorded(
        &self,
        needs: Option<ServiceNeeds>,
        obj: &mut Value,
        dry_run: bool,
    ) -> Result<Allocation, ApiError> {
        let Some(needs) = needs else {
            return Ok(Allocation::default());
        };
        let Some(loc) = self.alloc.ip_objects().filter(|_| !dry_run) else {
            return self.alloc.allocate_needs(&needs, obj, dry_run);
        };
        let original = obj.clone();
        self.forget_if_unrecorded(&loc, &needs);
        for _ in 0..IP_OBJECT_CLASHES_MAX {
            let allocation = self.alloc.allocate_needs(&needs, obj, false)?;
            // (Boxed: only Services record IP objects; every create's future holds this one.)
            match Box::pin(self.record_ips(&loc, &allocation, obj)).await {
                Ok(()) => return Ok(allocation),
                Err(Clash::Taken(ip)) => {
                    self.alloc.release(&allocation);
                    self.alloc.mark_ip_taken(ip);
                    let asked = needs
                        .cluster_ips
                        .iter()
                        .find(|n| matches!(&n.request, Request::Exactly(t) if t.parse() == Ok(ip)));
                    if let Some(n) = asked {
                        let failed = FailedNeed::ClusterIp(&n.request);
                        return Err(AllocError::Allocated.to_status(&original, failed));
                    }
                    *obj = original.clone();
                }
                Err(Clash::Failed(e)) => {
                    self.alloc.release(&allocation);
                    return Err(e);
                }
            }
        }
        Err(AllocError::Full.to_status(&original, FailedNeed::ClusterIp(&Request::Any)))
    }

    /// Defaults a Service's IP families for the families this cluster serves (a 422 when it
    /// cannot serve what the Service asks), before its allocation.
    pub(super) fn init_families(
        &self,
        strategy: &Strategy,
        svc: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let causes = strategy.service_init_families(svc, old, &self.alloc.families());
        if causes.is_empty() {
            return Ok(());
        }
        let name = objects::name(svc).to_string();
        Err(ApiError::invalid("", "Service", &name, causes))
    }

    /// The IPAddress object is the authority on whether an IP is taken: an IP the Service
    /// asks for that the taken set still holds although its object is gone (deleted by a
    /// user, and the controller has not synced yet) is free.
    fn forget_if_unrecorded(&self, loc: &Location, needs: &ServiceNeeds) {
        for need in &needs.cluster_ips {
            let Request::Exactly(text) = &need.request else {
                continue;
            };
            let Ok(ip) = text.parse::<IpAddr>() else {
                continue;
            };
            if self.alloc.ip_taken_settled(ip)
                && matches!(
                    self.storage.get_latest(&loc.key("", &ip.to_string())),
                    Ok(None)
                )
            {
                self.alloc.forget_ip(ip);
            }
        }
    }

    /// Creates the IPAddress objects of `a`; on failure deletes those it made.
    async fn record_ips(&self, loc: &Location, a: &Allocation, svc: &Value) -> Result<(), Clash> {
        for (i, ip) in a.ips().iter().enumerate() {
            let mut obj = ip_object(*ip, svc);
            let key = loc.key("", &ip.to_string());
            let failed = match self.storage.create(&key, &Spliced::new(&mut obj)).await {
                Ok(_) => continue,
                Err(StoreError::AlreadyExists { .. }) => Clash::Taken(*ip),
                Err(e) => Clash::Failed(storage_error(e)),
            };
            for made in &a.ips()[..i] {
                self.drop_ip_object(loc, *made, svc).await;
            }
            return Err(failed);
        }
        Ok(())
    }

    /// Moves the IPAddress objects of `a` from `old` (a Service whose generated name clashed)
    /// to `new`, the same Service under its next name.
    pub(super) async fn rerecord(
        &self,
        a: &Allocation,
        old: &Value,
        new: &Value,
    ) -> Result<(), ApiError> {
        let Some(loc) = self.alloc.ip_objects() else {
            return Ok(());
        };
        for ip in a.ips() {
            self.drop_ip_object(&loc, *ip, old).await;
        }
        match self.record_ips(&loc, a, new).await {
            Ok(()) => Ok(()),
            Err(Clash::Failed(e)) => Err(e),
            Err(Clash::Taken(ip)) => Err(ApiError::internal(format!(
                "failed to allocate a serviceIP: IPAddress {ip} was created meanwhile"
            ))),
        }
    }

    /// Undoes [`Registry::allocate_recorded`] for a Service that was not stored.
    pub(super) async fn unrecord(&self, a: &Allocation, svc: &Value) {
        if let Some(loc) = self.alloc.ip_objects() {
            for ip in a.ips() {
                self.drop_ip_object(&loc, *ip, svc).await;
            }
        }
        self.alloc.release(a);
    }

    /// Gives back what a deleted object held, deleting the IPAddress objects of its cluster
    /// IPs.
    pub(super) async fn release_held(&self, strategy: &Strategy, obj: &Value) {
        if let Some(held) = strategy.service_held(obj) {
            self.release_values(&held, obj).await;
        }
    }

    /// Gives back `held`, values `holder` (a stored Service) had, deleting the IPAddress
    /// objects of its cluster IPs.
    async fn release_values(&self, held: &ServiceHeld, holder: &Value) {
        self.alloc.release_held(held);
        let Some(loc) = self.alloc.ip_objects() else {
            return;
        };
        for ip in held.cluster_ips.iter().filter_map(|ip| ip.parse().ok()) {
            self.drop_ip_object(&loc, ip, holder).await;
        }
    }

    /// Allocates what an update of a Service from `old` to `new` needs beyond what `old`
    /// holds (a type change from `ExternalName` takes a cluster IP and records it, a change
    /// to NodePort takes node ports), as upstream's `allocateUpdate`.
    pub(super) async fn allocate_update(
        &self,
        strategy: &Strategy,
        new: &mut Value,
        old: &Value,
        dry_run: bool,
    ) -> Result<Allocation, ApiError> {
        self.init_families(strategy, new, Some(old))?;
        let needs = strategy.service_update_allocation(new, old);
        self.allocate_recorded(needs, new, dry_run).await
    }

    /// An update that took `a` was stored: what it took is settled, and `released` (what the
    /// stored object `old` held that the update let go) is given back, its IPAddress objects
    /// deleted. Upstream releases on commit, so a failed update never loses a value.
    pub(super) async fn finish_update(
        &self,
        a: &Allocation,
        released: Option<&ServiceHeld>,
        old: &Value,
    ) {
        self.alloc.settle(a);
        if let Some(r) = released.filter(|r| **r != ServiceHeld::default()) {
            self.release_values(r, old).await;
        }
    }

    /// Deletes the IPAddress of `ip` if `svc` holds it (a user's object for the same IP is
    /// left alone). Failures are left to the `ipallocator` controller, which removes orphans.
    async fn drop_ip_object(&self, loc: &Location, ip: IpAddr, svc: &Value) {
        let key = loc.key("", &ip.to_string());
        let Ok(Some(kv)) = self.storage.get_latest(&key) else {
            return;
        };
        let ns = objects::meta_str(svc, "namespace").unwrap_or("");
        let ours =
            objects::parse_stored(kv.value()).is_ok_and(|o| held_by(&o, ns, objects::name(svc)));
        if ours {
            if let Err(e) = self.storage.delete(&key, kv.mod_revision).await {
                eprintln!(
                    "ipaddress {ip}: delete failed ({e}); left to the ipallocator controller"
                );
            }
        }
    }
}

/// Why the IPAddress objects of an allocation could not all be created.
enum Clash {
    /// An object for this IP exists.
    Taken(IpAddr),
    /// The store failed.
    Failed(ApiError),
}
