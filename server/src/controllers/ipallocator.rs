//! The cluster-IP allocator's controller, as upstream's apiserver runs one since v1.33: it
//! keeps the default ServiceCIDR (`kubernetes`, the `--service-cluster-ip-range`, Ready),
//! serves the ranges of the other ready ServiceCIDRs, and repairs IPAddress objects: a
//! Service's cluster IP without its object gets one, an object the allocator made whose
//! Service no longer holds the IP is deleted, and the allocator's taken set is made equal to
//! what is stored. It runs once in bootstrap (restart consistency) and then on every change
//! of services, IPAddresses or ServiceCIDRs. Everything goes through the registry.

use crate::objects;
use crate::options::Cidr;
use crate::registry::{self, CreateOptions, DeleteOptions, Source, UpdateOptions};
use crate::routes::Resource;
use crate::selection::Selection;
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::ApiError;
use keel_engine::Revision;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// The default ServiceCIDR's name.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";
/// Its Ready condition's message.
const DEFAULT_READY_MESSAGE: &str = "Kubernetes default Service CIDR is ready";
/// How long an IPAddress the allocator made may lack its Service before it is deleted: a
/// create in flight writes the object before the Service (in this process such creates are
/// known; the grace covers another API server on the same store). Bootstrap uses none.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(30);
/// Resync period when nothing changes (objects deleted behind the watches' backs, grace
/// periods running out).
pub const RESYNC: Duration = Duration::from_secs(60);
/// Least time between two passes: a burst of changes is handled by one pass.
pub const PASS_INTERVAL_MIN: Duration = Duration::from_millis(200);

/// Runs the controller on its own thread with its own single-threaded runtime. `synced`:
/// the revision before bootstrap's pass began (the pass read everything as of then or
/// later) and how soon that pass wanted the next; the controller then watches from there
/// and passes again only on a change (a start-up reads the services once).
pub fn spawn(
    st: Arc<State>,
    synced: Option<(Revision, Option<Duration>)>,
) -> std::thread::JoinHandle<()> {
    super::spawn_thread("keel-ipallocator-controller", move || run(st, synced))
}

/// Watches of services, IPAddresses and ServiceCIDRs, after `from` (else from now).
async fn watches(st: &State, from: Option<Revision>) -> [Option<(Source, Selection)>; 3] {
    let routes = st.routes.load();
    let from = from.unwrap_or_else(|| st.registry.current_revision());
    let mut out = [None, None, None];
    out[0] = super::watch_all_after(st, routes.core("services"), from).await;
    if let Some(r) = ip_addresses(&routes) {
        out[1] = super::watch_all_after(st, r, from).await;
    }
    if let Some(r) = service_cidrs(&routes) {
        out[2] = super::watch_all_after(st, r, from).await;
    }
    out
}

async fn run(st: Arc<State>, synced: Option<(Revision, Option<Duration>)>) {
    let mut w = watches(&st, synced.map(|(rev, _)| rev)).await;
    // Bootstrap's pass stands for the first one when every watch replays from before it.
    let mut skip = synced.is_some() && w.iter().all(Option::is_some);
    let mut next = synced.and_then(|(_, n)| n).unwrap_or(RESYNC).min(RESYNC);
    loop {
        if !skip {
            let started = tokio::time::Instant::now();
            next = match reconcile(&st, ORPHAN_GRACE, false).await {
                Ok(n) => n.unwrap_or(RESYNC).min(RESYNC),
                Err(e) => {
                    eprintln!("ipallocator controller: {}", e.message);
                    RESYNC
                }
            };
            tokio::time::sleep_until(started + PASS_INTERVAL_MIN).await;
        }
        skip = false;
        if super::wait_for_change(&mut w, next).await {
            w = watches(&st, None).await;
        }
    }
}

fn ip_addresses(routes: &crate::routes::Routes) -> Option<&Resource> {
    routes.lookup("networking.k8s.io", "v1", "ipaddresses")
}

fn service_cidrs(routes: &crate::routes::Routes) -> Option<&Resource> {
    routes.lookup("networking.k8s.io", "v1", "servicecidrs")
}

/// One pass: the default ServiceCIDR, the served ranges, the IPAddress objects, the taken
/// set and the ServiceCIDRs' finalizers (`servicecidrs`). `grace`: how old an orphaned
/// IPAddress must be to be deleted. `restore` (start-up): also mark the node ports of the
/// services listed taken (the IPs are synced from the same listing). Returns how soon the
/// next pass is needed, when a ServiceCIDR waits out its deletion grace.
pub async fn reconcile(
    st: &State,
    grace: Duration,
    restore: bool,
) -> Result<Option<Duration>, ApiError> {
    let routes = st.routes.load();
    let alloc = st.registry.allocators();
    let mut cidr_objs: Vec<Value> = Vec::new();
    if let Some(cidrs) = service_cidrs(&routes) {
        ensure_default_cidr(st, cidrs).await?;
        let (items, _) = st.registry.list_all(cidrs, "").await?;
        cidr_objs = items
            .iter()
            .filter_map(|kv| objects::parse_stored(kv.value()).ok())
            .collect();
        alloc.set_extra_ranges(ready_ranges(&cidr_objs));
    }
    let services = routes.core("services");
    let Some(ips) = ip_addresses(&routes) else {
        if restore {
            restore_without_objects(st, services).await?;
        }
        return Ok(None);
    };
    alloc.use_ip_objects(ips.loc.clone());
    let epoch = alloc.ip_epoch();
    let (ip_items, _) = st.registry.list_all(ips, "").await?;
    let (svc_items, _) = st.registry.list_all(services, "").await?;
    let mut ip_objs: HashMap<IpAddr, Value> = ip_items
        .iter()
        .filter_map(|kv| objects::parse_stored(kv.value()).ok())
        .filter_map(|o| Some((objects::name(&o).parse().ok()?, o)))
        .collect();
    let mut stored: HashSet<IpAddr> = ip_objs.keys().copied().collect();
    // (ip, namespace, name) of every cluster IP a Service holds.
    let mut holders: HashSet<(IpAddr, String, String)> = HashSet::new();
    for kv in &svc_items {
        let svc = objects::parse_stored(kv.value())?;
        let Some(held) = services.strategy.service_held(&svc) else {
            continue;
        };
        if restore {
            alloc.restore_ports(&held);
        }
        let ns = objects::meta_str(&svc, "namespace")
            .unwrap_or("")
            .to_string();
        for ip in held.cluster_ips.iter().filter_map(|ip| ip.parse().ok()) {
            stored.insert(ip);
            holders.insert((ip, ns.clone(), objects::name(&svc).to_string()));
            if !ip_objs.contains_key(&ip) {
                create_missing(st, ips, ip, &svc).await?;
            }
        }
    }
    let mut orphans = Vec::new();
    for (ip, obj) in &ip_objs {
        if is_orphan(obj, *ip, &holders) && !alloc.ip_pending(*ip) && older_than(obj, grace) {
            delete_orphan(st, ips, obj).await?;
            stored.remove(ip);
            orphans.push(*ip);
        }
    }
    alloc.sync_ips(&stored, epoch);
    for ip in orphans {
        ip_objs.remove(&ip);
    }
    match service_cidrs(&routes) {
        Some(cidrs) => super::servicecidrs::reconcile(st, cidrs, &cidr_objs, &ip_objs).await,
        None => Ok(None),
    }
}

/// Start-up without IPAddress objects (their API disabled): the services' cluster IPs and
/// node ports are what is taken.
async fn restore_without_objects(st: &State, services: &Resource) -> Result<(), ApiError> {
    let alloc = st.registry.allocators();
    let epoch = alloc.ip_epoch();
    let (items, _) = st.registry.list_all(services, "").await?;
    let mut taken = HashSet::new();
    for kv in &items {
        let svc = objects::parse_stored(kv.value())?;
        if let Some(held) = services.strategy.service_held(&svc) {
            alloc.restore_ports(&held);
            taken.extend(
                held.cluster_ips
                    .iter()
                    .filter_map(|ip| ip.parse::<IpAddr>().ok()),
            );
        }
    }
    alloc.sync_ips(&taken, epoch);
    Ok(())
}

/// An IPAddress the allocator made whose parent Service does not hold its IP.
fn is_orphan(obj: &Value, ip: IpAddr, holders: &HashSet<(IpAddr, String, String)>) -> bool {
    let managed = obj
        .at("/metadata/labels")
        .and_then(|l| l.get(registry::MANAGED_BY_LABEL))
        .and_then(Value::as_str)
        == Some(registry::MANAGED_BY);
    managed
        && !holders
            .iter()
            .any(|(h, ns, name)| *h == ip && registry::held_by(obj, ns, name))
}

fn older_than(obj: &Value, age: Duration) -> bool {
    if age.is_zero() {
        return true;
    }
    let created = objects::meta_str(obj, "creationTimestamp").unwrap_or("");
    chrono::DateTime::parse_from_rfc3339(created).map_or(true, |t| {
        let elapsed = chrono::Utc::now().signed_duration_since(t);
        elapsed.to_std().is_ok_and(|e| e >= age)
    })
}

async fn create_missing(
    st: &State,
    ips: &Resource,
    ip: IpAddr,
    svc: &Value,
) -> Result<(), ApiError> {
    let mut obj = registry::ip_object(ip, svc);
    // The registry's create sets these itself.
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("uid");
        m.remove("creationTimestamp");
    }
    match st
        .registry
        .create(ips, "", obj, &CreateOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn delete_orphan(st: &State, ips: &Resource, obj: &Value) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        uid: objects::meta_str(obj, "uid").map(String::from),
        ..DeleteOptions::default()
    };
    match st.registry.delete(ips, "", objects::name(obj), &opts).await {
        Ok(_) => Ok(()),
        // Gone or replaced meanwhile: the next pass looks again.
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The ranges of the ServiceCIDRs that are ready: not being deleted, and with a Ready
/// condition that is not False (upstream treats one without the condition as ready: nothing
/// may have set it yet). Ranges the allocator cannot serve (IPv4 shorter than
/// `IPV4_PREFIX_MIN`, IPv6 shorter than /64, as upstream's) are skipped.
pub fn ready_ranges(cidrs: &[Value]) -> Vec<Cidr> {
    let mut out = Vec::new();
    for sc in cidrs {
        if objects::is_deleting(sc) {
            continue;
        }
        let ready = sc
            .at("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c.get("type") == Some(&json!("Ready"))))
            .is_none_or(|c| c.get("status") == Some(&json!("True")));
        if !ready {
            continue;
        }
        let texts = sc.at("/spec/cidrs").and_then(Value::as_array);
        for text in texts.into_iter().flatten().filter_map(Value::as_str) {
            if let Ok(c) = Cidr::parse(text) {
                if c.to_string() == text {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// Creates the default ServiceCIDR when it is missing and marks it Ready.
async fn ensure_default_cidr(st: &State, res: &Resource) -> Result<(), ApiError> {
    let cidrs = st.registry.allocators().default_cidrs();
    if !st.registry.exists(res, "", DEFAULT_SERVICE_CIDR)? {
        let obj = json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": DEFAULT_SERVICE_CIDR},
            "spec": {"cidrs": cidrs},
        });
        match st
            .registry
            .create(res, "", obj, &CreateOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    let (current, _) = st
        .registry
        .get_latest(res, "", DEFAULT_SERVICE_CIDR)
        .await?;
    if has_default_ready(&current) {
        return Ok(());
    }
    let opts = UpdateOptions {
        subresource: "status",
        strategy: true,
        ..UpdateOptions::default()
    };
    st.registry
        .guaranteed_update(res, "", DEFAULT_SERVICE_CIDR, &opts, &mut |cur| {
            let mut new = cur
                .cloned()
                .ok_or_else(|| res.not_found(DEFAULT_SERVICE_CIDR))?;
            objects::meta_mut(&mut new).shift_remove("resourceVersion");
            new["status"] = json!({"conditions": [{
                "type": "Ready", "status": "True",
                "lastTransitionTime": objects::now_rfc3339(),
                "reason": "", "message": DEFAULT_READY_MESSAGE,
            }]});
            Ok(new)
        })
        .await?;
    Ok(())
}

fn has_default_ready(sc: &Value) -> bool {
    sc.at("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True"))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(cidrs: Value, status: Value) -> Value {
        json!({"metadata": {"name": "x"}, "spec": {"cidrs": cidrs}, "status": status})
    }

    /// Which ServiceCIDRs the allocator serves: ready or without a Ready condition, not
    /// being deleted, IPv4 ranges it can hold.
    #[test]
    fn ready_ranges_table() {
        let ready = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let not_ready = json!({"conditions": [{"type": "Ready", "status": "False"}]});
        let mut deleting = sc(json!(["10.3.0.0/24"]), json!({}));
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let rows = vec![
            (
                sc(json!(["10.1.0.0/24"]), ready.clone()),
                vec!["10.1.0.0/24"],
            ),
            (
                sc(json!(["10.2.0.0/24", "2001:db8::/64"]), json!({})),
                vec!["10.2.0.0/24", "2001:db8::/64"],
            ),
            (sc(json!(["10.4.0.0/24"]), not_ready), vec![]),
            (deleting, vec![]),
            (sc(json!(["10.0.0.0/4", "2001:db8::/48"]), ready), vec![]),
        ];
        for (obj, want) in rows {
            let got: Vec<String> = ready_ranges(std::slice::from_ref(&obj))
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{obj}");
        }
    }

    #[test]
    fn orphans_are_managed_objects_without_their_holder() {
        let ip: IpAddr = "10.0.0.9".parse().unwrap();
        let svc = json!({"metadata": {"name": "s", "namespace": "d"}});
        let obj = registry::ip_object(ip, &svc);
        let holder = HashSet::from([(ip, "d".to_string(), "s".to_string())]);
        let other = HashSet::from([(ip, "d".to_string(), "t".to_string())]);
        assert!(!is_orphan(&obj, ip, &holder));
        assert!(is_orphan(&obj, ip, &other));
        assert!(is_orphan(&obj, ip, &HashSet::new()));
        let mut users = obj.clone();
        users["metadata"].as_object_mut().unwrap().remove("labels");
        assert!(!is_orphan(&users, ip, &HashSet::new()));
    }
}
