//! `--controllers`: which of keel's in-process controllers run, named and parsed as
//! kube-controller-manager's flag (`*` all on-by-default controllers, `foo` enables `foo`,
//! `-foo` disables it; the first entry naming a controller decides; without `*` only the
//! named ones run). Only the controllers upstream runs in kube-controller-manager are
//! subject to it (namespace, garbage collection, volume protection, ClusterRole aggregation); the ones upstream runs
//! inside kube-apiserver (bootstrap, priority-and-fairness configuration, authentication
//! trust, the service IP repair and ServiceCIDR controllers) always run. A deployment that
//! runs an external kube-controller-manager turns keel's off by naming them, e.g.
//! `--controllers=-garbage-collector-controller,-namespace-controller,*`, or enables none
//! with a list that names none of them and has no `*` (`--controllers=-namespace`).

/// kube-controller-manager's controllers that keel runs in-process.
pub const NAMESPACE: &str = "namespace-controller";
pub const GARBAGE_COLLECTOR: &str = "garbage-collector-controller";
pub const PVC_PROTECTION: &str = "persistentvolumeclaim-protection-controller";
pub const PV_PROTECTION: &str = "persistentvolume-protection-controller";
pub const VAC_PROTECTION: &str = "volumeattributesclass-protection-controller";
pub const CLUSTERROLE_AGGREGATION: &str = "clusterrole-aggregation-controller";
pub const SERVICE_ACCOUNT: &str = "serviceaccount-controller";
pub const ROOT_CA_PUBLISHER: &str = "root-ca-certificate-publisher-controller";

/// Keel's in-process controllers that `--controllers` governs.
pub const KEEL_CONTROLLERS: &[&str] = &[
    NAMESPACE,
    GARBAGE_COLLECTOR,
    PVC_PROTECTION,
    PV_PROTECTION,
    VAC_PROTECTION,
    CLUSTERROLE_AGGREGATION,
    SERVICE_ACCOUNT,
    ROOT_CA_PUBLISHER,
];

/// Every controller kube-controller-manager v1.36 knows (cmd/kube-controller-manager/names):
/// a list meant for it is accepted here; the ones keel does not run change nothing.
const UPSTREAM_CONTROLLERS: &[&str] = &[
    "serviceaccount-token-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "endpointslice-mirroring-controller",
    "replicationcontroller-controller",
    "pod-garbage-collector-controller",
    "resourcequota-controller",
    NAMESPACE,
    "serviceaccount-controller",
    GARBAGE_COLLECTOR,
    "daemonset-controller",
    "job-controller",
    "deployment-controller",
    "replicaset-controller",
    "horizontal-pod-autoscaler-controller",
    "disruption-controller",
    "statefulset-controller",
    "cronjob-controller",
    "certificatesigningrequest-signing-controller",
    "certificatesigningrequest-approving-controller",
    "certificatesigningrequest-cleaner-controller",
    "podcertificaterequest-cleaner-controller",
    "ttl-controller",
    "bootstrap-signer-controller",
    "token-cleaner-controller",
    "node-ipam-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "device-taint-eviction-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-attach-detach-controller",
    "persistentvolume-expander-controller",
    CLUSTERROLE_AGGREGATION,
    PVC_PROTECTION,
    PV_PROTECTION,
    "podgroup-protection-controller",
    "ttl-after-finished-controller",
    "root-ca-certificate-publisher-controller",
    "service-ca-certificate-publisher-controller",
    "kube-apiserver-serving-clustertrustbundle-publisher-controller",
    "ephemeral-volume-controller",
    "storageversion-garbage-collector-controller",
    "resourceclaim-controller",
    "resourcepoolstatusrequest-controller",
    "legacy-serviceaccount-token-cleaner-controller",
    "validatingadmissionpolicy-status-controller",
    VAC_PROTECTION,
    "service-cidr-controller",
    "storage-version-migrator-controller",
    "selinux-warning-controller",
    // Cloud controllers, still accepted by name.
    "cloud-node-lifecycle-controller",
    "node-route-controller",
    "service-lb-controller",
];

/// Upstream's older names (`ControllerDescriptor` aliases) and the names they stand for.
const ALIASES: &[(&str, &str)] = &[
    ("daemonset", "daemonset-controller"),
    ("statefulset", "statefulset-controller"),
    ("replicaset", "replicaset-controller"),
    ("deployment", "deployment-controller"),
    (
        "horizontalpodautoscaling",
        "horizontal-pod-autoscaler-controller",
    ),
    ("job", "job-controller"),
    ("cronjob", "cronjob-controller"),
    ("bootstrapsigner", "bootstrap-signer-controller"),
    ("tokencleaner", "token-cleaner-controller"),
    ("csrsigning", "certificatesigningrequest-signing-controller"),
    (
        "csrapproving",
        "certificatesigningrequest-approving-controller",
    ),
    ("csrcleaner", "certificatesigningrequest-cleaner-controller"),
    (
        "root-ca-cert-publisher",
        "root-ca-certificate-publisher-controller",
    ),
    (
        "service-ca-cert-publisher",
        "service-ca-certificate-publisher-controller",
    ),
    ("service", "service-lb-controller"),
    ("nodeipam", "node-ipam-controller"),
    ("nodelifecycle", "node-lifecycle-controller"),
    ("cloud-node-lifecycle", "cloud-node-lifecycle-controller"),
    ("route", "node-route-controller"),
    (
        "persistentvolume-binder",
        "persistentvolume-binder-controller",
    ),
    ("attachdetach", "persistentvolume-attach-detach-controller"),
    (
        "persistentvolume-expander",
        "persistentvolume-expander-controller",
    ),
    ("ephemeral-volume", "ephemeral-volume-controller"),
    ("endpoint", "endpoints-controller"),
    ("replicationcontroller", "replicationcontroller-controller"),
    ("podgc", "pod-garbage-collector-controller"),
    ("resourcequota", "resourcequota-controller"),
    ("namespace", NAMESPACE),
    ("serviceaccount", "serviceaccount-controller"),
    ("ttl", "ttl-controller"),
    ("garbagecollector", GARBAGE_COLLECTOR),
    ("pvc-protection", PVC_PROTECTION),
    ("pv-protection", PV_PROTECTION),
    ("ttl-after-finished", "ttl-after-finished-controller"),
    (
        "legacy-service-account-token-cleaner",
        "legacy-serviceaccount-token-cleaner-controller",
    ),
    (
        "storage-version-gc",
        "storageversion-garbage-collector-controller",
    ),
    ("endpointslice", "endpointslice-controller"),
    (
        "endpointslicemirroring",
        "endpointslice-mirroring-controller",
    ),
    ("disruption", "disruption-controller"),
    (
        "clusterrole-aggregation",
        "clusterrole-aggregation-controller",
    ),
    ("resource-claim-controller", "resourceclaim-controller"),
    ("serviceaccount-token", "serviceaccount-token-controller"),
    ("svm", "storage-version-migrator-controller"),
];

/// One `--controllers` entry, names resolved to their current form.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    All,
    On(&'static str),
    Off(&'static str),
}

/// The parsed `--controllers` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enabled(Vec<Entry>);

impl Default for Enabled {
    /// `*`: every controller.
    fn default() -> Enabled {
        Enabled(vec![Entry::All])
    }
}

fn canonical(name: &str) -> Option<&'static str> {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map(|(_, to)| *to)
        .or_else(|| UPSTREAM_CONTROLLERS.iter().find(|c| **c == name).copied())
}

impl Enabled {
    /// Parses the entries as upstream validates them: each is `*`, a known controller or
    /// alias, or one with `-` before it.
    pub fn parse(entries: &[String]) -> Result<Enabled, String> {
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let e = e.trim();
            if e == "*" {
                out.push(Entry::All);
                continue;
            }
            let (off, name) = match e.strip_prefix('-') {
                Some(n) => (true, n),
                None => (false, e),
            };
            let c = canonical(name)
                .ok_or_else(|| format!("{name:?} is not in the list of known controllers"))?;
            out.push(if off { Entry::Off(c) } else { Entry::On(c) });
        }
        Ok(Enabled(out))
    }

    /// Upstream's `IsControllerEnabled`: the first entry naming `name` decides; else `*`
    /// enables it; else it is off.
    pub fn is_enabled(&self, name: &str) -> bool {
        let mut star = false;
        for e in &self.0 {
            match e {
                Entry::On(c) if *c == name => return true,
                Entry::Off(c) if *c == name => return false,
                Entry::All => star = true,
                _ => {}
            }
        }
        star
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Enabled, String> {
        let v: Vec<String> = s.split(',').map(String::from).collect();
        Enabled::parse(&v)
    }

    #[test]
    fn entries_decide_as_kube_controller_manager() {
        // (flag, controller, enabled)
        let rows = [
            ("*", GARBAGE_COLLECTOR, true),
            ("-garbage-collector-controller,*", GARBAGE_COLLECTOR, false),
            ("-garbage-collector-controller,*", NAMESPACE, true),
            ("*,-garbage-collector-controller", GARBAGE_COLLECTOR, false),
            ("-garbagecollector", GARBAGE_COLLECTOR, false),
            ("-garbagecollector", NAMESPACE, false),
            ("namespace", NAMESPACE, true),
            ("namespace", GARBAGE_COLLECTOR, false),
            ("pvc-protection,-pvc-protection", PVC_PROTECTION, true),
            ("-pv-protection,*", PV_PROTECTION, false),
            ("-deployment-controller,*", VAC_PROTECTION, true),
        ];
        for (flag, name, want) in rows {
            assert_eq!(parse(flag).unwrap().is_enabled(name), want, "{flag} {name}");
        }
        assert!(Enabled::default().is_enabled(NAMESPACE));
    }

    #[test]
    fn unknown_names_are_refused() {
        assert_eq!(
            parse("*,-gc").unwrap_err(),
            "\"gc\" is not in the list of known controllers"
        );
        assert!(parse("").is_err());
    }

    #[test]
    fn keel_controllers_and_aliases_are_known() {
        for c in KEEL_CONTROLLERS {
            assert_eq!(canonical(c), Some(*c));
        }
        for (_, to) in ALIASES {
            assert!(UPSTREAM_CONTROLLERS.contains(to), "{to}");
        }
    }
}
