//! What the graph takes from the objects it follows, read from their JSON as the registry
//! serves it: a bound pod's references (upstream's `VisitPodSecretNames`,
//! `VisitPodConfigmapNames`, claims, ephemeral volumes, resource claims), a PV's claim and
//! the secrets the kubelet uses for it (`VisitPVSecretNames`, kubelet-visible ones only), a
//! VolumeAttachment's and a ResourceSlice's node.
//!
//! Only the fields used are decoded (the rest of an object is skipped unparsed, which a pod
//! status update costs); every field is optional and `null` counts as absent.

use super::graph::{BoundPod, BoundVolume, Change, PodRef};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// The annotation of a kubelet's mirror pod (`kubernetes.io/config.mirror`): a mirror pod
/// is bound to its node and relates nothing else (a node creates it, so it must not grant
/// the node anything through what it names).
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The resources the graph follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Followed {
    Pods,
    PersistentVolumes,
    VolumeAttachments,
    ResourceSlices,
}

impl Followed {
    pub const ALL: [Followed; 4] = [
        Followed::Pods,
        Followed::PersistentVolumes,
        Followed::VolumeAttachments,
        Followed::ResourceSlices,
    ];

    /// Group, version and resource, as the routes name them.
    pub fn gvr(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Followed::Pods => ("", "v1", "pods"),
            Followed::PersistentVolumes => ("", "v1", "persistentvolumes"),
            Followed::VolumeAttachments => ("storage.k8s.io", "v1", "volumeattachments"),
            Followed::ResourceSlices => ("resource.k8s.io", "v1", "resourceslices"),
        }
    }
}

/// Why an object or event was not understood.
#[derive(Debug)]
pub struct Unreadable(pub String);

/// The change one watch event line (`{"type": ..., "object": ...}`) makes; `None` for one
/// that changes nothing (a bookmark, an unbound pod).
pub fn change_from_event(what: Followed, line: &[u8]) -> Result<Option<Change>, Unreadable> {
    // An unbound pod (its create, and every update until the scheduler binds it) changes
    // nothing: skipped without parsing when the bytes cannot name a node.
    if what == Followed::Pods && memchr::memmem::find(line, b"\"nodeName\"").is_none() {
        return Ok(None);
    }
    #[derive(Deserialize)]
    struct Event<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(borrow)]
        object: &'a RawValue,
    }
    let ev: Event<'_> =
        serde_json::from_slice(line).map_err(|e| Unreadable(format!("watch event: {e}")))?;
    let deleted = match ev.kind {
        "ADDED" | "MODIFIED" => false,
        "DELETED" => true,
        _ => return Ok(None),
    };
    change_from_object(what, ev.object.get().as_bytes(), deleted)
}

/// The change an object makes when it is there (`deleted` false: listed, added, modified)
/// or gone.
pub fn change_from_object(
    what: Followed,
    bytes: &[u8],
    deleted: bool,
) -> Result<Option<Change>, Unreadable> {
    let bad = |e: serde_json::Error| Unreadable(format!("{what:?}: {e}"));
    Ok(match what {
        Followed::Pods => {
            let pod: Pod = serde_json::from_slice(bytes).map_err(bad)?;
            let meta = pod.metadata.as_ref();
            let bound = pod_refs(&pod);
            if bound.is_none() {
                // Never bound: the graph never held it (a pod's node cannot be unset).
                return Ok(None);
            }
            Some(Change::Pod {
                namespace: str_of(meta.and_then(|m| m.namespace.as_ref())),
                name: str_of(meta.and_then(|m| m.name.as_ref())),
                bound: if deleted { None } else { bound },
            })
        }
        Followed::PersistentVolumes => {
            let pv: Volume = serde_json::from_slice(bytes).map_err(bad)?;
            Some(Change::Volume {
                name: str_of(pv.metadata.as_ref().and_then(|m| m.name.as_ref())),
                bound: if deleted { None } else { volume_refs(&pv) },
            })
        }
        Followed::VolumeAttachments | Followed::ResourceSlices => {
            let o: NodeOwned = serde_json::from_slice(bytes).map_err(bad)?;
            let name = str_of(o.metadata.as_ref().and_then(|m| m.name.as_ref()));
            let node = o
                .spec
                .and_then(|s| s.node_name)
                .filter(|n| !n.is_empty() && !deleted);
            Some(match what {
                Followed::VolumeAttachments => Change::Attachment { name, node },
                _ => Change::Slice { name, node },
            })
        }
    })
}

fn str_of(s: Option<&String>) -> String {
    s.cloned().unwrap_or_default()
}

/// A bound pod's node and references; `None` when it has no node.
pub fn pod_refs(pod: &Pod) -> Option<BoundPod> {
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.as_deref().filter(|n| !n.is_empty())?;
    let mut refs: Vec<(PodRef, String)> = Vec::new();
    let mirror = pod
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.as_ref())
        .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION));
    if !mirror {
        visit_pod(pod, spec, &mut |kind, name| {
            if !name.is_empty() {
                refs.push((kind, name.to_owned()));
            }
        });
        refs.sort_unstable();
        refs.dedup();
    }
    Some(BoundPod {
        node: node.to_owned(),
        refs,
    })
}

fn visit_pod(pod: &Pod, spec: &PodSpec, add: &mut dyn FnMut(PodRef, &str)) {
    use PodRef::*;
    if let Some(sa) = spec.service_account_name.as_deref() {
        add(ServiceAccount, sa);
    }
    for r in spec.image_pull_secrets.iter().flatten() {
        add(Secret, name(&r.name));
    }
    let containers = [
        &spec.init_containers,
        &spec.containers,
        &spec.ephemeral_containers,
    ];
    for c in containers.into_iter().flatten().flatten() {
        for e in c.env_from.iter().flatten() {
            if let Some(r) = &e.secret_ref {
                add(Secret, name(&r.name));
            }
            if let Some(r) = &e.config_map_ref {
                add(ConfigMap, name(&r.name));
            }
        }
        for e in c.env.iter().flatten() {
            let Some(from) = &e.value_from else { continue };
            if let Some(r) = &from.secret_key_ref {
                add(Secret, name(&r.name));
            }
            if let Some(r) = &from.config_map_key_ref {
                add(ConfigMap, name(&r.name));
            }
        }
    }
    let pod_name = pod
        .metadata
        .as_ref()
        .and_then(|m| m.name.as_deref())
        .unwrap_or("");
    for v in spec.volumes.iter().flatten() {
        visit_volume_secret(v, &mut |s| add(Secret, s));
        if let Some(p) = &v.projected {
            for s in p.sources.iter().flatten() {
                if let Some(c) = &s.config_map {
                    add(ConfigMap, name(&c.name));
                }
            }
        } else if let Some(c) = &v.config_map {
            add(ConfigMap, name(&c.name));
        }
        if let Some(c) = &v.persistent_volume_claim {
            add(PersistentVolumeClaim, name(&c.claim_name));
        } else if v.ephemeral.is_some() {
            // The claim an ephemeral volume gets: `<pod>-<volume>`.
            add(
                PersistentVolumeClaim,
                &format!("{pod_name}-{}", name(&v.name)),
            );
        }
    }
    let status = pod.status.as_ref();
    for claim in spec.resource_claims.iter().flatten() {
        if let Some(n) = &claim.resource_claim_name {
            add(ResourceClaim, n);
        } else if claim.resource_claim_template_name.is_some() {
            // The claim made from the template, once the status names it.
            let made = status
                .and_then(|s| s.resource_claim_statuses.as_ref())
                .into_iter()
                .flatten()
                .find(|s| name(&s.name) == name(&claim.name))
                .and_then(|s| s.resource_claim_name.as_deref());
            if let Some(n) = made {
                add(ResourceClaim, n);
            }
        }
    }
    if let Some(n) = status
        .and_then(|s| s.extended_resource_claim_status.as_ref())
        .and_then(|e| e.resource_claim_name.as_deref())
    {
        add(ResourceClaim, n);
    }
}

/// The secret a pod's volume names, in upstream's order of volume sources (a valid volume
/// has one source).
fn visit_volume_secret(v: &PodVolume, add: &mut dyn FnMut(&str)) {
    if let Some(a) = &v.azure_file {
        add(name(&a.secret_name));
    } else if v.cephfs.is_some() {
        if let Some(r) = secret_ref(&v.cephfs) {
            add(name(&r.name));
        }
    } else if v.cinder.is_some() {
        if let Some(r) = secret_ref(&v.cinder) {
            add(name(&r.name));
        }
    } else if v.flex_volume.is_some() {
        if let Some(r) = secret_ref(&v.flex_volume) {
            add(name(&r.name));
        }
    } else if let Some(p) = &v.projected {
        for s in p.sources.iter().flatten() {
            if let Some(r) = &s.secret {
                add(name(&r.name));
            }
        }
    } else if v.rbd.is_some() {
        if let Some(r) = secret_ref(&v.rbd) {
            add(name(&r.name));
        }
    } else if let Some(s) = &v.secret {
        add(name(&s.secret_name));
    } else if v.scale_io.is_some() {
        if let Some(r) = secret_ref(&v.scale_io) {
            add(name(&r.name));
        }
    } else if v.iscsi.is_some() {
        if let Some(r) = secret_ref(&v.iscsi) {
            add(name(&r.name));
        }
    } else if v.storageos.is_some() {
        if let Some(r) = secret_ref(&v.storageos) {
            add(name(&r.name));
        }
    } else if let Some(c) = &v.csi {
        if let Some(r) = &c.node_publish_secret_ref {
            add(name(&r.name));
        }
    }
}

fn secret_ref(r: &Option<HasSecretRef>) -> Option<&Named> {
    r.as_ref().and_then(|r| r.secret_ref.as_ref())
}

fn volume_secret_ref(r: &Option<HasNamespacedRef>) -> Option<&NamespacedName> {
    r.as_ref().and_then(|r| r.secret_ref.as_ref())
}

fn name(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

/// A PV's claim and kubelet-visible secrets; `None` without a claim.
pub fn volume_refs(pv: &Volume) -> Option<BoundVolume> {
    let spec = pv.spec.as_ref()?;
    let claim = spec.claim_ref.as_ref()?;
    let claim_ns = name(&claim.namespace);
    let mut secrets: Vec<(String, String)> = Vec::new();
    let mut add = |ns: &str, n: &str| {
        if !n.is_empty() {
            secrets.push((ns.to_owned(), n.to_owned()));
        }
    };
    // A reference without a namespace of its own means the claim's, for the sources whose
    // reference may omit it (as upstream).
    let in_claim_ns = |r: &NamespacedName| {
        let ns = name(&r.namespace);
        if ns.is_empty() {
            claim_ns.to_owned()
        } else {
            ns.to_owned()
        }
    };
    if let Some(a) = &spec.azure_file {
        let ns = a
            .secret_namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(claim_ns);
        add(ns, name(&a.secret_name));
    } else if spec.cephfs.is_some() {
        if let Some(r) = volume_secret_ref(&spec.cephfs) {
            add(&in_claim_ns(r), name(&r.name));
        }
    } else if spec.cinder.is_some() {
        if let Some(r) = volume_secret_ref(&spec.cinder) {
            add(name(&r.namespace), name(&r.name));
        }
    } else if spec.flex_volume.is_some() {
        if let Some(r) = volume_secret_ref(&spec.flex_volume) {
            add(&in_claim_ns(r), name(&r.name));
        }
    } else if spec.rbd.is_some() {
        if let Some(r) = volume_secret_ref(&spec.rbd) {
            add(&in_claim_ns(r), name(&r.name));
        }
    } else if spec.scale_io.is_some() {
        if let Some(r) = volume_secret_ref(&spec.scale_io) {
            add(&in_claim_ns(r), name(&r.name));
        }
    } else if spec.iscsi.is_some() {
        if let Some(r) = volume_secret_ref(&spec.iscsi) {
            add(&in_claim_ns(r), name(&r.name));
        }
    } else if spec.storageos.is_some() {
        if let Some(r) = volume_secret_ref(&spec.storageos) {
            add(name(&r.namespace), name(&r.name));
        }
    } else if let Some(c) = &spec.csi {
        // The controller's secrets (publish, expand) are not the kubelet's to read.
        for r in [
            &c.node_publish_secret_ref,
            &c.node_stage_secret_ref,
            &c.node_expand_secret_ref,
        ]
        .into_iter()
        .flatten()
        {
            add(name(&r.namespace), name(&r.name));
        }
    }
    secrets.sort_unstable();
    secrets.dedup();
    Some(BoundVolume {
        claim_namespace: claim_ns.to_owned(),
        claim_name: name(&claim.name).to_owned(),
        secrets,
    })
}

// The decoded subsets. Every field is an `Option` so that `null` and absence read the same.

#[derive(Deserialize, Default)]
pub struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    annotations: Option<BTreeMap<String, IgnoredAny>>,
}

#[derive(Deserialize, Default)]
pub struct Pod {
    metadata: Option<Meta>,
    spec: Option<PodSpec>,
    status: Option<PodStatus>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    node_name: Option<String>,
    service_account_name: Option<String>,
    image_pull_secrets: Option<Vec<Named>>,
    init_containers: Option<Vec<Container>>,
    containers: Option<Vec<Container>>,
    ephemeral_containers: Option<Vec<Container>>,
    volumes: Option<Vec<PodVolume>>,
    resource_claims: Option<Vec<PodResourceClaim>>,
}

#[derive(Deserialize, Default, Clone)]
struct Named {
    name: Option<String>,
}

#[derive(Deserialize, Default, Clone)]
struct NamespacedName {
    name: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Container {
    env: Option<Vec<EnvVar>>,
    env_from: Option<Vec<EnvFrom>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvVar {
    value_from: Option<EnvVarSource>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvVarSource {
    secret_key_ref: Option<Named>,
    config_map_key_ref: Option<Named>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct EnvFrom {
    secret_ref: Option<Named>,
    config_map_ref: Option<Named>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodVolume {
    name: Option<String>,
    azure_file: Option<SecretNamed>,
    cephfs: Option<HasSecretRef>,
    cinder: Option<HasSecretRef>,
    flex_volume: Option<HasSecretRef>,
    projected: Option<Projected>,
    rbd: Option<HasSecretRef>,
    secret: Option<SecretNamed>,
    #[serde(rename = "scaleIO")]
    scale_io: Option<HasSecretRef>,
    iscsi: Option<HasSecretRef>,
    storageos: Option<HasSecretRef>,
    csi: Option<PodCsi>,
    config_map: Option<Named>,
    persistent_volume_claim: Option<ClaimSource>,
    ephemeral: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SecretNamed {
    secret_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct HasSecretRef {
    secret_ref: Option<Named>,
}

#[derive(Deserialize, Default)]
struct Projected {
    sources: Option<Vec<ProjectedSource>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ProjectedSource {
    secret: Option<Named>,
    config_map: Option<Named>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodCsi {
    node_publish_secret_ref: Option<Named>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ClaimSource {
    claim_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodResourceClaim {
    name: Option<String>,
    resource_claim_name: Option<String>,
    resource_claim_template_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodStatus {
    resource_claim_statuses: Option<Vec<ClaimStatus>>,
    extended_resource_claim_status: Option<ExtendedClaimStatus>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ClaimStatus {
    name: Option<String>,
    resource_claim_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ExtendedClaimStatus {
    resource_claim_name: Option<String>,
}

#[derive(Deserialize, Default)]
pub struct Volume {
    metadata: Option<Meta>,
    spec: Option<VolumeSpec>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct VolumeSpec {
    claim_ref: Option<NamespacedName>,
    azure_file: Option<AzureFileVolume>,
    cephfs: Option<HasNamespacedRef>,
    cinder: Option<HasNamespacedRef>,
    flex_volume: Option<HasNamespacedRef>,
    rbd: Option<HasNamespacedRef>,
    #[serde(rename = "scaleIO")]
    scale_io: Option<HasNamespacedRef>,
    iscsi: Option<HasNamespacedRef>,
    storageos: Option<HasNamespacedRef>,
    csi: Option<VolumeCsi>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AzureFileVolume {
    secret_name: Option<String>,
    secret_namespace: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct HasNamespacedRef {
    secret_ref: Option<NamespacedName>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct VolumeCsi {
    node_publish_secret_ref: Option<NamespacedName>,
    node_stage_secret_ref: Option<NamespacedName>,
    node_expand_secret_ref: Option<NamespacedName>,
}

#[derive(Deserialize, Default)]
struct NodeOwned {
    metadata: Option<Meta>,
    spec: Option<NodeNamed>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeNamed {
    node_name: Option<String>,
}
