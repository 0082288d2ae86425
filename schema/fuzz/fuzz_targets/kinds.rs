//! The endpoints' kinds a fuzz input picks from with its first byte: built-in kinds with
//! deep schemas (maps, merge-keyed lists, quantities, int-or-strings) and one kind without a
//! schema (a custom resource's path, where the server decodes plain JSON).

use keel_schema::Gvk;

pub const KINDS: &[(&str, &str, &str)] = &[
    ("", "v1", "Pod"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "Service"),
    ("", "v1", "Node"),
    ("", "v1", "Namespace"),
    ("", "v1", "Binding"),
    ("", "v1", "PersistentVolumeClaim"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "ControllerRevision"),
    ("apps", "v1", "StatefulSet"),
    ("batch", "v1", "CronJob"),
    ("events.k8s.io", "v1", "Event"),
    ("policy", "v1", "Eviction"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("autoscaling", "v1", "Scale"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("example.com", "v1", "Widget"),
];

/// The kind picked by `pick`, and the rest of the input.
pub fn split(data: &[u8]) -> Option<(Gvk<'static>, &[u8])> {
    let (&pick, rest) = data.split_first()?;
    let (group, version, kind) = KINDS[usize::from(pick) % KINDS.len()];
    Some((
        Gvk {
            group,
            version,
            kind,
        },
        rest,
    ))
}
