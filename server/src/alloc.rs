//! Service cluster IP and node port allocation. The allocated sets are rebuilt from the stored
//! services at start and kept in memory; every create takes from them and every delete returns.

use crate::options::Cidr;
use keel_api::status::{ApiError, StatusCause};
use keel_catalog::ResourceInfo;
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

fn is_services(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "services"
}

fn invalid(field: &str, msg: String) -> ApiError {
    ApiError::invalid(
        "",
        "Service",
        "",
        vec![StatusCause {
            reason: "FieldValueInvalid".into(),
            message: format!("{field}: {msg}"),
            field: field.into(),
        }],
    )
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
    pub fn restore(&self, svc: &Value) {
        for ip in cluster_ips(svc) {
            self.used_ips.lock().insert(ip);
        }
        for p in node_ports(svc) {
            self.used_ports.lock().insert(p);
        }
    }

    /// Assigns a cluster IP and node ports to a new service. On a dry run the values are
    /// chosen but not reserved.
    pub fn allocate(
        &self,
        info: &ResourceInfo,
        svc: &mut Value,
        dry_run: bool,
    ) -> Result<Allocation, ApiError> {
        let mut a = Allocation::default();
        if !is_services(info) {
            return Ok(a);
        }
        if let Err(e) = self
            .allocate_ip(svc, dry_run, &mut a)
            .and_then(|_| self.allocate_ports(svc, dry_run, &mut a))
        {
            self.release(&a);
            return Err(e);
        }
        if dry_run {
            return Ok(Allocation::default());
        }
        Ok(a)
    }

    fn allocate_ip(
        &self,
        svc: &mut Value,
        dry_run: bool,
        a: &mut Allocation,
    ) -> Result<(), ApiError> {
        let ty = svc
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        if ty == "ExternalName" {
            return Ok(());
        }
        let requested = svc
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if requested == "None" {
            set_ips(svc, "None");
            return Ok(());
        }
        let mut used = self.used_ips.lock();
        let ip = if requested.is_empty() {
            let size = self.range.size();
            // Network and broadcast addresses are never handed out.
            let start = 1 + rand::random::<u32>() % (size - 2);
            (0..size - 2)
                .map(|i| self.range.nth(1 + (start - 1 + i) % (size - 2)))
                .find(|ip| !used.contains(ip))
                .ok_or_else(|| {
                    invalid(
                        "spec.clusterIPs",
                        "Internal error: failed to allocate a serviceIP: range is full".into(),
                    )
                })?
        } else {
            let ip: Ipv4Addr = requested.parse().map_err(|_| {
                invalid("spec.clusterIPs[0]", format!("Invalid value: {requested:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
            })?;
            if !self.range.contains(ip) {
                return Err(invalid("spec.clusterIPs", format!("Invalid value: []string{{{requested:?}}}: failed to allocate IP {requested}: the provided IP ({requested}) is not in the valid range. The range of valid IPs is {}/{}", self.range.base, self.range.prefix)));
            }
            if used.contains(&ip) {
                return Err(invalid("spec.clusterIPs", format!("Invalid value: []string{{{requested:?}}}: failed to allocate IP {requested}: provided IP is already allocated")));
            }
            ip
        };
        if !dry_run {
            used.insert(ip);
            a.ips.push(ip);
        }
        set_ips(svc, &ip.to_string());
        Ok(())
    }

    fn allocate_ports(
        &self,
        svc: &mut Value,
        dry_run: bool,
        a: &mut Allocation,
    ) -> Result<(), ApiError> {
        let ty = svc
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string();
        if ty != "NodePort" && ty != "LoadBalancer" {
            return Ok(());
        }
        let Some(ports) = svc.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else {
            return Ok(());
        };
        let mut used = self.used_ports.lock();
        let (lo, hi) = self.ports;
        let span = (hi - lo) as u32 + 1;
        for (i, p) in ports.iter_mut().enumerate() {
            let requested = p.get("nodePort").and_then(Value::as_u64).unwrap_or(0);
            let port = if requested == 0 {
                let start = rand::random::<u32>() % span;
                (0..span)
                    .map(|k| lo + ((start + k) % span) as u16)
                    .find(|port| !used.contains(port))
                    .ok_or_else(|| {
                        invalid(
                            &format!("spec.ports[{i}].nodePort"),
                            "Internal error: failed to allocate a nodePort: range is full".into(),
                        )
                    })?
            } else {
                let r = requested as u16;
                if requested > u16::MAX as u64 || r < lo || r > hi {
                    return Err(invalid(&format!("spec.ports[{i}].nodePort"), format!("Invalid value: {requested}: provided port is not in the valid range. The range of valid ports is {lo}-{hi}")));
                }
                if used.contains(&r) {
                    return Err(invalid(
                        &format!("spec.ports[{i}].nodePort"),
                        format!("Invalid value: {requested}: provided port is already allocated"),
                    ));
                }
                r
            };
            if !dry_run {
                used.insert(port);
                a.ports.push(port);
            }
            if let Some(m) = p.as_object_mut() {
                m.insert("nodePort".into(), port.into());
            }
        }
        Ok(())
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

    /// Returns what a deleted object held.
    pub fn release_object(&self, info: &ResourceInfo, obj: &Value) {
        if !is_services(info) {
            return;
        }
        self.release(&Allocation {
            ips: cluster_ips(obj),
            ports: node_ports(obj),
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

fn cluster_ips(svc: &Value) -> Vec<Ipv4Addr> {
    svc.pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

fn node_ports(svc: &Value) -> Vec<u16> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| p.get("nodePort")?.as_u64())
                .filter(|p| *p > 0 && *p <= u16::MAX as u64)
                .map(|p| p as u16)
                .collect()
        })
        .unwrap_or_default()
}
