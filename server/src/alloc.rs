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

use crate::options::Cidr;
use crate::storage::Location;
use keel_api::status::ApiError;
use keel_strategy::{AllocError, ClusterIpNeed, FailedNeed, NodePortNeed, Request, Strategy};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;

/// How many ranges besides the default one (from user ServiceCIDRs) are served; more are
/// ignored (upstream bounds nothing, keel bounds the allocator's scan).
pub const SERVICE_RANGES_EXTRA_MAX: usize = 64;

/// The cluster IPs taken: each with the epoch of its taking, so that a sync from a listing
/// begun earlier never frees an IP taken after it began; `pending` are those whose create
/// has not finished (their objects may be missing from any listing).
#[derive(Debug, Default)]
struct IpSet {
    taken: HashMap<Ipv4Addr, u64>,
    pending: HashSet<Ipv4Addr>,
    epoch: u64,
}

impl IpSet {
    fn take(&mut self, ip: Ipv4Addr) {
        self.epoch += 1;
        self.taken.insert(ip, self.epoch);
    }
}

/// What one create took, so a failed write can give it back.
#[derive(Debug, Default)]
pub struct Allocation {
    ips: Vec<Ipv4Addr>,
    ports: Vec<u16>,
}

pub struct Allocators {
    /// `--service-cluster-ip-range`: the default ServiceCIDR's, always served.
    range: Cidr,
    /// The IPv4 ranges of the other ServiceCIDRs that are ready.
    extra_ranges: RwLock<Vec<Cidr>>,
    ports: (u16, u16),
    used_ips: Mutex<IpSet>,
    used_ports: Mutex<HashSet<u16>>,
    /// Where IPAddress objects live; `None` while they are not served.
    ip_objects: RwLock<Option<Location>>,
}

impl Allocators {
    pub fn new(range: Cidr, ports: (u16, u16)) -> Allocators {
        Allocators {
            range,
            extra_ranges: RwLock::new(Vec::new()),
            ports,
            used_ips: Mutex::new(IpSet::default()),
            used_ports: Mutex::new(HashSet::new()),
            ip_objects: RwLock::new(None),
        }
    }

    /// The first address of the range: the `kubernetes` service's.
    pub fn first_ip(&self) -> Ipv4Addr {
        self.range.nth(1)
    }

    /// The default range, as a ServiceCIDR writes it.
    pub fn default_cidr(&self) -> String {
        format!("{}/{}", self.range.base, self.range.prefix)
    }

    /// Records cluster IPs as IPAddress objects at `loc` from now on.
    pub fn use_ip_objects(&self, loc: Location) {
        *self.ip_objects.write() = Some(loc);
    }

    /// Where IPAddress objects live, when they are recorded.
    pub fn ip_objects(&self) -> Option<Location> {
        self.ip_objects.read().clone()
    }

    /// Serves `ranges` (the ready ServiceCIDRs' IPv4 ranges) besides the default one.
    pub fn set_extra_ranges(&self, mut ranges: Vec<Cidr>) {
        ranges.retain(|r| *r != self.range);
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
    pub fn sync_ips(&self, stored: &HashSet<Ipv4Addr>, epoch: u64) {
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
    pub fn mark_ip_taken(&self, ip: Ipv4Addr) {
        self.used_ips.lock().take(ip);
    }

    /// Whether a create in flight holds `ip` (its object may exist before its service).
    pub fn ip_pending(&self, ip: Ipv4Addr) -> bool {
        self.used_ips.lock().pending.contains(&ip)
    }

    /// Whether `ip` is taken by a finished create or a stored object (not one in flight).
    pub fn ip_taken_settled(&self, ip: Ipv4Addr) -> bool {
        let set = self.used_ips.lock();
        set.taken.contains_key(&ip) && !set.pending.contains(&ip)
    }

    /// Frees `ip`: the store shows nothing holds it (its IPAddress object was deleted).
    pub fn forget_ip(&self, ip: Ipv4Addr) {
        self.used_ips.lock().taken.remove(&ip);
    }

    /// A create that took `a` has finished (stored or given back).
    pub fn settle(&self, a: &Allocation) {
        let mut set = self.used_ips.lock();
        for ip in &a.ips {
            set.pending.remove(ip);
        }
    }

    /// Marks what a stored service holds (at start).
    pub fn restore(&self, strategy: &Strategy, svc: &Value) {
        let Some(held) = strategy.service_held(svc) else {
            return;
        };
        let mut ips = self.used_ips.lock();
        for ip in held.cluster_ips.iter().filter_map(|ip| ip.parse().ok()) {
            ips.take(ip);
        }
        drop(ips);
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
        let mut a = Allocation::default();
        let Some(needs) = strategy.service_allocation(svc) else {
            return Ok(a);
        };
        match &needs.cluster_ip {
            ClusterIpNeed::None => {
                if svc.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None") {
                    set_ips(svc, "None");
                }
            }
            ClusterIpNeed::Address(req) => match self.take_ip(req, dry_run, &mut a) {
                Ok(ip) => set_ips(svc, &ip.to_string()),
                Err(e) => {
                    self.release(&a);
                    return Err(e.to_status(svc, FailedNeed::ClusterIp(req)));
                }
            },
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
                    .pointer(&format!("/spec/ports/{j}/nodePort"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            };
            if let Some(p) = svc
                .pointer_mut(&format!("/spec/ports/{i}"))
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
        req: &Request<String>,
        dry_run: bool,
        a: &mut Allocation,
    ) -> Result<Ipv4Addr, AllocError> {
        let mut used = self.used_ips.lock();
        let extra = self.extra_ranges.read();
        let ranges = || std::iter::once(&self.range).chain(extra.iter());
        let ip = match req {
            Request::Any => ranges()
                .find_map(|r| free_ip(r, &used.taken))
                .ok_or(AllocError::Full)?,
            Request::Exactly(text) => {
                let outside = || AllocError::NotInRange(self.default_cidr());
                let ip: Ipv4Addr = text.parse().map_err(|_| outside())?;
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

    /// Gives back what a deleted object held.
    pub fn release_object(&self, strategy: &Strategy, obj: &Value) {
        let Some(held) = strategy.service_held(obj) else {
            return;
        };
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
    pub fn ips(&self) -> &[Ipv4Addr] {
        &self.ips
    }
}

/// Whether `ip` can be handed out from `r`: inside it, and neither its network nor its
/// broadcast address.
fn allocatable(r: &Cidr, ip: Ipv4Addr) -> bool {
    let first = u32::from(r.base);
    r.contains(ip) && u32::from(ip) != first && u32::from(ip) != first + (r.size() - 1)
}

/// A free address of `r`, scanning from a random one.
fn free_ip(r: &Cidr, taken: &HashMap<Ipv4Addr, u64>) -> Option<Ipv4Addr> {
    let hosts = r.size().checked_sub(2).filter(|n| *n > 0)?;
    let start = rand::random::<u32>() % hosts;
    (0..hosts)
        .map(|i| r.nth(1 + (start + i) % hosts))
        .find(|ip| !taken.contains_key(ip))
}

fn set_ips(svc: &mut Value, ip: &str) {
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("clusterIP".into(), ip.into());
        spec.insert("clusterIPs".into(), Value::Array(vec![ip.into()]));
    }
}
