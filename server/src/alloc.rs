//! Service cluster IP and node port allocation: the allocators' state. What a Service needs
//! (cluster IP, node ports, health-check node port, honouring `allocateLoadBalancerNodePorts`
//! and `externalTrafficPolicy`) and what it holds are the Service strategy's decisions
//! (`keel_strategy::Strategy::service_allocation` / `service_held`); this module only takes
//! and gives back. The taken sets are kept in memory: every create takes from them and every
//! delete gives back.
//!
//! Cluster IPs are also recorded as `networking.k8s.io/v1` IPAddress objects, as upstream's
//! allocator does since v1.33: the registry writes one per allocated IP (the object, not this
//! set, is the authority: an IP whose object exists cannot be had) and the `ipallocator`
//! controller keeps this set equal to the objects and the services, and the ranges equal to
//! the ServiceCIDRs. This module holds no I/O: it is told where the objects live
//! ([`Allocators::use_ip_objects`]) and what is stored ([`Allocators::sync_ips`]).

use crate::options::{Cidr, IP_SCAN_MAX};
use crate::storage::Location;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_strategy::{
    AllocError, FailedNeed, NodePortNeed, Request, ServiceHeld, ServiceNeeds, Strategy,
};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

/// How many ranges besides the default one (from user ServiceCIDRs) are served; more are
/// ignored (upstream bounds nothing, keel bounds the allocator's scan).
pub const SERVICE_RANGES_EXTRA_MAX: usize = 64;

/// The cluster IPs taken: each with the epoch of its taking, so that a sync from a listing
/// begun earlier never frees an IP taken after it began; `pending` are those whose create
/// has not finished (their objects may be missing from any listing).
#[derive(Debug, Default)]
struct IpSet {
    taken: HashMap<IpAddr, u64>,
    pending: HashSet<IpAddr>,
    epoch: u64,
}

impl IpSet {
    fn take(&mut self, ip: IpAddr) {
        self.epoch += 1;
        self.taken.insert(ip, self.epoch);
    }
}

/// What one create took, so a failed write can give it back.
#[derive(Debug, Default)]
pub struct Allocation {
    ips: Vec<IpAddr>,
    ports: Vec<u16>,
}

pub struct Allocators {
    /// `--service-cluster-ip-range`: the default ServiceCIDR's, always served; one, or one
    /// per family (dual-stack), the primary first.
    ranges: Vec<Cidr>,
    /// The ranges of the other ServiceCIDRs that are ready.
    extra_ranges: RwLock<Vec<Cidr>>,
    ports: (u16, u16),
    used_ips: Mutex<IpSet>,
    used_ports: Mutex<HashSet<u16>>,
    /// Where IPAddress objects live; `None` while they are not served.
    ip_objects: RwLock<Option<Location>>,
}

impl Allocators {
    pub fn new(ranges: Vec<Cidr>, ports: (u16, u16)) -> Allocators {
        assert!(
            matches!(ranges.len(), 1 | 2),
            "one service range or two: {ranges:?}"
        );
        Allocators {
            ranges,
            extra_ranges: RwLock::new(Vec::new()),
            ports,
            used_ips: Mutex::new(IpSet::default()),
            used_ports: Mutex::new(HashSet::new()),
            ip_objects: RwLock::new(None),
        }
    }

    /// The first address of the primary range: the `kubernetes` service's.
    pub fn first_ip(&self) -> IpAddr {
        self.ranges[0].nth(1)
    }

    /// The default ranges, as the default ServiceCIDR writes them.
    pub fn default_cidrs(&self) -> Vec<String> {
        self.ranges.iter().map(ToString::to_string).collect()
    }

    /// The IP families the cluster serves, the primary first.
    pub fn families(&self) -> Vec<&'static str> {
        self.ranges.iter().map(Cidr::family).collect()
    }

    /// Records cluster IPs as IPAddress objects at `loc` from now on.
    pub fn use_ip_objects(&self, loc: Location) {
        *self.ip_objects.write() = Some(loc);
    }

    /// Where IPAddress objects live, when they are recorded.
    pub fn ip_objects(&self) -> Option<Location> {
        self.ip_objects.read().clone()
    }

    /// Serves `ranges` (the ready ServiceCIDRs' ranges) besides the default ones.
    pub fn set_extra_ranges(&self, mut ranges: Vec<Cidr>) {
        ranges.retain(|r| !self.ranges.contains(r));
        ranges.dedup();
        ranges.truncate(SERVICE_RANGES_EXTRA_MAX);
        *self.extra_ranges.write() = ranges;
    }

    /// The epoch of the IP set now: pass it to [`Allocators::sync_ips`] with a listing begun
    /// after this call.
    pub fn ip_epoch(&self) -> u64 {
        self.used_ips.lock().epoch
    }

    /// Makes the taken IPs those `stored` (IPAddress objects and services' cluster IPs, listed
    /// after `epoch` was read), keeping what was taken since and what creates in flight hold.
    pub fn sync_ips(&self, stored: &HashSet<IpAddr>, epoch: u64) {
        let mut set = self.used_ips.lock();
        let IpSet { taken, pending, .. } = &mut *set;
        taken.retain(|ip, at| *at > epoch || pending.contains(ip) || stored.contains(ip));
        for ip in stored {
            if !set.taken.contains_key(ip) {
                set.take(*ip);
            }
        }
    }

    /// Marks `ip` taken: an IPAddress object holds it.
    pub fn mark_ip_taken(&self, ip: IpAddr) {
        self.used_ips.lock().take(ip);
    }

    /// Whether a create in flight holds `ip` (its object may exist before its service).
    pub fn ip_pending(&self, ip: IpAddr) -> bool {
        self.used_ips.lock().pending.contains(&ip)
    }

    /// Whether `ip` is taken by a finished create or a stored object (not one in flight).
    pub fn ip_taken_settled(&self, ip: IpAddr) -> bool {
        let set = self.used_ips.lock();
        set.taken.contains_key(&ip) && !set.pending.contains(&ip)
    }

    /// Frees `ip`: the store shows nothing holds it (its IPAddress object was deleted).
    pub fn forget_ip(&self, ip: IpAddr) {
        self.used_ips.lock().taken.remove(&ip);
    }

    /// A create that took `a` has finished (stored or given back).
    pub fn settle(&self, a: &Allocation) {
        let mut set = self.used_ips.lock();
        for ip in &a.ips {
            set.pending.remove(ip);
        }
    }

    /// Marks the node ports a stored service holds taken (at start; its cluster IPs come
    /// with the IPAddress objects through [`Allocators::sync_ips`]).
    pub fn restore_ports(&self, held: &ServiceHeld) {
        let mut ports = self.used_ports.lock();
        ports.extend(
            held.node_ports
                .iter()
                .filter_map(|p| u16::try_from(*p).ok()),
        );
    }

    /// Assigns what a new object needs (a Service: cluster IP and node ports; other types
    /// nothing), writing the values into it. On a dry run the values are chosen but not
    /// reserved.
    pub fn allocate(
        &self,
        strategy: &Strategy,
        svc: &mut Value,
        dry_run: bool,
    ) -> Result<Allocation, ApiError> {
        match strategy.service_allocation(svc) {
            Some(needs) => self.allocate_needs(&needs, svc, dry_run),
            None => Ok(Allocation::default()),
        }
    }

    /// Assigns `needs` (decided by the Service strategy: all a new Service needs, or what an
    /// update needs beyond what the stored object holds), writing the values into `svc`.
    pub fn allocate_needs(
        &self,
        needs: &ServiceNeeds,
        svc: &mut Value,
        dry_run: bool,
    ) -> Result<Allocation, ApiError> {
        let mut a = Allocation::default();
        for need in &needs.cluster_ips {
            match self.take_ip(&need.family, &need.request, dry_run, &mut a) {
                Ok(ip) => set_ip(svc, need.index, &ip.to_string()),
                Err(e) => {
                    self.release(&a);
                    return Err(e.to_status(svc, FailedNeed::ClusterIp(&need.request)));
                }
            }
        }
        for (i, need) in &needs.node_ports {
            let port = match need {
                NodePortNeed::Allocate(req) => match self.take_port(req, dry_run, &mut a) {
                    Ok(p) => i64::from(p),
                    Err(e) => {
                        self.release(&a);
                        return Err(e.to_status(svc, FailedNeed::NodePort(*i, req)));
                    }
                },
                NodePortNeed::SameAs(j) => svc
                    .at(&format!("/spec/ports/{j}/nodePort"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            };
            if let Some(p) = svc
                .at_mut(&format!("/spec/ports/{i}"))
                .and_then(Value::as_object_mut)
            {
                p.insert("nodePort".into(), port.into());
            }
        }
        if let Some(req) = &needs.health_check_node_port {
            match self.take_port(req, dry_run, &mut a) {
                Ok(p) => {
                    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.insert("healthCheckNodePort".into(), p.into());
                    }
                }
                Err(e) => {
                    self.release(&a);
                    return Err(e.to_status(svc, FailedNeed::HealthCheckNodePort(req)));
                }
            }
        }
        if dry_run {
            return Ok(Allocation::default());
        }
        Ok(a)
    }

    fn take_ip(
        &self,
        family: &str,
        req: &Request<String>,
        dry_run: bool,
        a: &mut Allocation,
    ) -> Result<IpAddr, AllocError> {
        let mut used = self.used_ips.lock();
        let extra = self.extra_ranges.read();
        let ranges = || self.ranges.iter().chain(extra.iter());
        let ip = match req {
            Request::Any => ranges()
                .filter(|r| r.family() == family)
                .find_map(|r| free_ip(r, &used.taken))
                .ok_or(AllocError::Full)?,
            Request::Exactly(text) => {
                let outside = || AllocError::NotInRange(self.default_cidrs().join(","));
                let ip: IpAddr = text.parse().map_err(|_| outside())?;
                if !ranges().any(|r| allocatable(r, ip)) {
                    return Err(outside());
                }
                if used.taken.contains_key(&ip) {
                    return Err(AllocError::Allocated);
                }
                ip
            }
        };
        if !dry_run {
            used.take(ip);
            used.pending.insert(ip);
            a.ips.push(ip);
        }
        Ok(ip)
    }

    fn take_port(
        &self,
        req: &Request<i64>,
        dry_run: bool,
        a: &mut Allocation,
    ) -> Result<u16, AllocError> {
        let mut used = self.used_ports.lock();
        let (lo, hi) = self.ports;
        let port = match req {
            Request::Any => {
                let span = u32::from(hi - lo) + 1;
                let start = rand::random::<u32>() % span;
                (0..span)
                    .map(|k| lo + ((start + k) % span) as u16)
                    .find(|port| !used.contains(port))
                    .ok_or(AllocError::Full)?
            }
            Request::Exactly(n) => {
                let port = u16::try_from(*n)
                    .ok()
                    .filter(|p| (lo..=hi).contains(p))
                    .ok_or_else(|| AllocError::NotInRange(format!("{lo}-{hi}")))?;
                if used.contains(&port) {
                    return Err(AllocError::Allocated);
                }
                port
            }
        };
        if !dry_run {
            used.insert(port);
            a.ports.push(port);
        }
        Ok(port)
    }

    pub fn release(&self, a: &Allocation) {
        let mut ips = self.used_ips.lock();
        for ip in &a.ips {
            ips.taken.remove(ip);
            ips.pending.remove(ip);
        }
        drop(ips);
        let mut ports = self.used_ports.lock();
        for p in &a.ports {
            ports.remove(p);
        }
    }

    /// Gives back `held` (what a deleted Service held, or what an update let go).
    pub fn release_held(&self, held: &ServiceHeld) {
        self.release(&Allocation {
            ips: held
                .cluster_ips
                .iter()
                .filter_map(|ip| ip.parse().ok())
                .collect(),
            ports: held
                .node_ports
                .iter()
                .filter_map(|p| u16::try_from(*p).ok())
                .collect(),
        });
    }

    pub fn used_ip_count(&self) -> usize {
        self.used_ips.lock().taken.len()
    }
}

impl Allocation {
    /// The cluster IPs taken.
    pub fn ips(&self) -> &[IpAddr] {
        &self.ips
    }
}

/// Whether `ip` can be handed out from `r`: inside it and not its network address, nor, in
/// IPv4, its broadcast address (upstream hands out an IPv6 range's last address).
fn allocatable(r: &Cidr, ip: IpAddr) -> bool {
    let offset = r.offset(ip);
    r.contains(ip) && offset != 0 && !(r.is_ipv4() && offset == r.size() - 1)
}

/// A free address of `r`, scanning at most [`IP_SCAN_MAX`] of them from a random one.
fn free_ip(r: &Cidr, taken: &HashMap<IpAddr, u64>) -> Option<IpAddr> {
    let reserved = if r.is_ipv4() { 2 } else { 1 };
    let hosts = r.size().checked_sub(reserved).filter(|n| *n > 0)?;
    let start = rand::random::<u128>() % hosts;
    (0..hosts.min(IP_SCAN_MAX))
        .map(|i| r.nth(1 + (start + i) % hosts))
        .find(|ip| !taken.contains_key(ip))
}

/// Writes `ip` as `spec.clusterIPs[index]` (and `spec.clusterIP` for the primary).
fn set_ip(svc: &mut Value, index: usize, ip: &str) {
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if index == 0 {
        spec.insert("clusterIP".into(), ip.into());
    }
    let ips = spec
        .entry("clusterIPs")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !ips.is_array() {
        *ips = Value::Array(Vec::new());
    }
    let list = ips.as_array_mut().expect("array");
    if list.len() <= index {
        list.resize(index + 1, Value::from(""));
    }
    list[index] = ip.into();
}
