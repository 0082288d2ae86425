//! Defaults of `PodSpec` and `Container` (upstream `SetDefaults_PodSpec`, `SetDefaults_Container`
//! and the nested defaulters), shared by pods and by the pod templates of workloads.

use crate::json::{child, child_if, default, each_obj};
use serde_json::{json, Map, Value};

/// Default `terminationGracePeriodSeconds`.
pub const TERMINATION_GRACE_PERIOD_SECONDS_DEFAULT: i64 = 30;
/// Default mode of secret / configMap / downwardAPI / projected volumes (0644).
pub const VOLUME_DEFAULT_MODE: i64 = 0o644;
/// Default `expirationSeconds` of a projected service account token.
pub const TOKEN_EXPIRATION_SECONDS_DEFAULT: i64 = 3600;

const CONTAINER_LISTS: &[&str] = &["initContainers", "containers", "ephemeralContainers"];

/// Defaults a pod spec in place (no-op on a non-object).
pub fn default_pod_spec(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    default(s, "dnsPolicy", json!("ClusterFirst"));
    default(s, "restartPolicy", json!("Always"));
    default(s, "securityContext", json!({}));
    default(
        s,
        "terminationGracePeriodSeconds",
        json!(TERMINATION_GRACE_PERIOD_SECONDS_DEFAULT),
    );
    default(s, "schedulerName", json!("default-scheduler"));
    let host_network = s.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for list in CONTAINER_LISTS {
        for c in each_obj(s, list) {
            default_container(c, host_network);
        }
    }
    for v in each_obj(s, "volumes") {
        default_volume(v);
    }
}

/// Upstream's image pull policy rule: `Always` for `:latest` or an untagged, undigested image.
pub fn image_pull_policy_for(image: &str) -> &'static str {
    if image.is_empty() {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    match (tag, digest) {
        (Some("latest"), _) | (None, false) => "Always",
        _ => "IfNotPresent",
    }
}

fn default_container(c: &mut Map<String, Value>, host_network: bool) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    default(c, "imagePullPolicy", json!(image_pull_policy_for(&image)));
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    for p in each_obj(c, "ports") {
        default(p, "protocol", json!("TCP"));
        if host_network {
            if let Some(cp) = p.get("containerPort").cloned() {
                default(p, "hostPort", cp);
            }
        }
    }
    for e in each_obj(c, "env") {
        if let Some(from) = child_if(e, "valueFrom") {
            default_field_ref(from);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child_if(c, probe) {
            default_probe(p);
        }
    }
    if let Some(lc) = child_if(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = child_if(lc, hook) {
                default_handler(h);
            }
        }
    }
}

fn default_field_ref(holder: &mut Map<String, Value>) {
    if let Some(f) = child_if(holder, "fieldRef") {
        default(f, "apiVersion", json!("v1"));
    }
}

fn default_probe(p: &mut Map<String, Value>) {
    default(p, "timeoutSeconds", json!(1));
    default(p, "periodSeconds", json!(10));
    default(p, "successThreshold", json!(1));
    default(p, "failureThreshold", json!(3));
    default_handler(p);
}

fn default_handler(h: &mut Map<String, Value>) {
    if let Some(g) = child_if(h, "httpGet") {
        default(g, "path", json!("/"));
        default(g, "scheme", json!("HTTP"));
    }
}

const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn default_volume(v: &mut Map<String, Value>) {
    let has_source = VOLUME_SOURCES
        .iter()
        .any(|k| v.get(*k).is_some_and(|x| !x.is_null()));
    if !has_source {
        v.insert("emptyDir".into(), json!({}));
    }
    for src in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = child_if(v, src) {
            default(s, "defaultMode", json!(VOLUME_DEFAULT_MODE));
        }
    }
    // A claim template's metadata is a struct upstream: Go prints an empty one as `{}`.
    if let Some(template) =
        child_if(v, "ephemeral").and_then(|e| child_if(e, "volumeClaimTemplate"))
    {
        if let Some(meta) = child(template, "metadata") {
            keel_api::meta::drop_zero_creation_timestamp(meta);
        }
        if let Some(spec) = child_if(template, "spec") {
            default(spec, "volumeMode", json!("Filesystem"));
        }
    }
    default_plugin_sources(v);
    if let Some(d) = child_if(v, "downwardAPI") {
        for item in each_obj(d, "items") {
            default_field_ref(item);
        }
    }
    if let Some(p) = child_if(v, "projected") {
        for source in each_obj(p, "sources") {
            default_projection(source);
        }
    }
}

/// Defaults of the volume plugins' sources that pod volumes and PersistentVolumes share
/// (`hostPath`, `iscsi`, `rbd`, `azureDisk`, `scaleIO`); `v` holds the sources as members.
pub(crate) fn default_plugin_sources(v: &mut Map<String, Value>) {
    if let Some(h) = child_if(v, "hostPath") {
        default(h, "type", json!(""));
    }
    // These members are plain strings upstream: an empty one is defaulted like a missing one.
    let default_str = |m: &mut Map<String, Value>, k: &str, val: &str| {
        if m.get(k)
            .is_none_or(|x| x.is_null() || x.as_str() == Some(""))
        {
            m.insert(k.into(), json!(val));
        }
    };
    if let Some(i) = child_if(v, "iscsi") {
        default_str(i, "iscsiInterface", "default");
    }
    if let Some(r) = child_if(v, "rbd") {
        default_str(r, "pool", "rbd");
        default_str(r, "user", "admin");
        default_str(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(a) = child_if(v, "azureDisk") {
        default(a, "cachingMode", json!("ReadWrite"));
        default(a, "fsType", json!("ext4"));
        default(a, "readOnly", json!(false));
        default(a, "kind", json!("Shared"));
    }
    if let Some(s) = child_if(v, "scaleIO") {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    }
}

fn default_projection(source: &mut Map<String, Value>) {
    if let Some(t) = child_if(source, "serviceAccountToken") {
        default(
            t,
            "expirationSeconds",
            json!(TOKEN_EXPIRATION_SECONDS_DEFAULT),
        );
    }
    if let Some(d) = child_if(source, "downwardAPI") {
        for item in each_obj(d, "items") {
            default_field_ref(item);
        }
    }
}

/// Defaults a `PodTemplateSpec` (workload templates): no zero `metadata.creationTimestamp`
/// (upstream omits it since v1.35), and the pod spec defaults.
pub fn default_pod_template(template: &mut Value) {
    let Some(t) = template.as_object_mut() else {
        return;
    };
    if let Some(meta) = child(t, "metadata") {
        keel_api::meta::drop_zero_creation_timestamp(meta);
    }
    if let Some(spec) = t.get_mut("spec") {
        default_pod_spec(spec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pod volumes get the same source defaults as upstream's generated pod defaulters
    /// (checked on v1.36.2 through a PodTemplate).
    #[test]
    fn volume_source_defaults() {
        let mut spec = json!({"volumes": [
            {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
            {"name": "i", "iscsi": {"iqn": "q", "lun": 0}},
            {"name": "s", "scaleIO": {"gateway": "g", "system": "s", "fsType": ""}}
        ]});
        default_pod_spec(&mut spec);
        assert_eq!(
            spec["volumes"],
            json!([
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {"metadata": {},
                    "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}}}},
                {"name": "i", "iscsi": {"iqn": "q", "lun": 0, "iscsiInterface": "default"}},
                {"name": "s", "scaleIO": {"gateway": "g", "system": "s", "fsType": "xfs",
                                          "storageMode": "ThinProvisioned"}}
            ])
        );
    }

    #[test]
    fn pull_policy_table() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
            ("", "IfNotPresent"),
        ];
        for (image, want) in cases {
            assert_eq!(image_pull_policy_for(image), want, "{image}");
        }
    }

    #[test]
    fn container_probe_and_volume_defaults() {
        let mut spec = json!({
            "hostNetwork": true,
            "containers": [{
                "name": "c", "image": "x:1",
                "ports": [{"containerPort": 80}],
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "livenessProbe": {"httpGet": {"port": 80}}
            }],
            "volumes": [{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}},
                        {"name": "h", "hostPath": {"path": "/x"}}]
        });
        default_pod_spec(&mut spec);
        let want = json!({
            "hostNetwork": true,
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler",
            "containers": [{
                "name": "c", "image": "x:1",
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "resources": {},
                "ports": [{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}],
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                                  "timeoutSeconds": 1, "periodSeconds": 10,
                                  "successThreshold": 1, "failureThreshold": 3}
            }],
            "volumes": [{"name": "a", "emptyDir": {}},
                        {"name": "b", "secret": {"secretName": "s", "defaultMode": 420}},
                        {"name": "h", "hostPath": {"path": "/x", "type": ""}}]
        });
        assert_eq!(spec, want);
    }
}
