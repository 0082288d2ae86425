//! Service cluster IP and node port allocation: the allocators' state. What a Service needs
//! (cluster IP, node ports, health-check node port, honouring `allocateLoadBalancerNodePorts`
//! and `externalTrafficPolicy`) and what it holds are the Service strategy's decisions
//! (`keel_strategy::Strategy::service_allocation` / `service_held`); this module only takes
//! and gives back. The taken sets are rebuilt from the stored services at start and kept in
//! memory; every create takes from them and every delete gives back.

use crate::options::Cidr;
use keel_api::status::ApiError;
use keel_strategy::{AllocError, ClusterIpNeed, FailedNeed, NodePortNeed, Request, Strategy};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashSet;
use std::net::Ipv4Addr;

/// What one create took, so a failed write can give it back.
#[derive(Debug, Default)]
pub struct Allocation {
    ips: Vec<Ipv4Addr>,
    ports: Vec<u16>,
}

pub struct Allocators {
    range: Cidr,
    ports: (u16, u16),
    used_ips: Mutex<HashSet<Ipv4Addr>>,
    used_ports: Mutex<HashSet<u16>>,
}

impl Allocators {
    pub fn new(range: Cidr, ports: (u16, u16)) -> Allocators {
        Allocators {
            range,
            ports,
            used_ips: Mutex::new(HashSet::new()),
            used_ports: Mutex::new(HashSet::new()),
        }
    }

    /// The first address of the range: the `kubernetes` service's.
    pub fn first_ip(&self) -> Ipv4Addr {
        self.range.nth(1)
    }

    /// Marks what a stored service holds (at start).
    pub fn restore(&self, strategy: &Strategy, svc: &Value) {
        let Some(held) = strategy.service_held(svc) else {
            return;
        };
        let mut ips = self.used_ips.lock();
        ips.extend(
            held.cluster_ips
                .iter()
                .filter_map(|ip| ip.parse::<Ipv4Addr>().ok()),
        );
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
        let ip = match req {
            Request::Any => {
                let size = self.range.size();
                // Network and broadcast addresses are never handed out.
                let start = 1 + rand::random::<u32>() % (size - 2);
                (0..size - 2)
                    .map(|i| self.range.nth(1 + (start - 1 + i) % (size - 2)))
                    .find(|ip| !used.contains(ip))
                    .ok_or(AllocError::Full)?
            }
            Request::Exactly(text) => {
                let range =
                    || AllocError::NotInRange(format!("{}/{}", self.range.base, self.range.prefix));
                let ip: Ipv4Addr = text.parse().map_err(|_| range())?;
                if !self.range.contains(ip) {
                    return Err(range());
                }
                if used.contains(&ip) {
                    return Err(AllocError::Allocated);
                }
                ip
            }
        };
        if !dry_run {
            used.insert(ip);
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
            ips.remove(ip);
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
        self.used_ips.lock().len()
    }
}

fn set_ips(svc: &mut Value, ip: &str) {
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("clusterIP".into(), ip.into());
        spec.insert("clusterIPs".into(), Value::Array(vec![ip.into()]));
    }
}
