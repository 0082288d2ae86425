//! The relationships the Node authorizer decides by: which objects a node may read because a
//! pod bound to it needs them, as upstream's graph (`plugin/pkg/auth/authorizer/node/graph.go`)
//! holds them, kept here as counts instead of a general graph.
//!
//! Upstream's edges all point towards a node: `pod -> node`, `secret, configmap, pvc,
//! serviceaccount, resourceclaim -> pod`, `pv -> pvc`, `secret -> pv`, `volumeattachment ->
//! node`, `resourceslice -> node`. An object is related to a node when a path leads from it to
//! the node. Here each object a pod references holds, per node, the number of pods bound to
//! that node that reference it (upstream keeps such a "destination index" only for vertices
//! with 200 edges or more; here every such object has one, so a decision is a few hash
//! look-ups whatever the fan-in: `kube-root-ca.crt` is referenced by every pod). The two
//! edges without a node of their own (`secret -> pv -> pvc`) are followed at decision time:
//! a secret is related through a PV when the PV's claim is related.
//!
//! Worked example: pod `ns/a` on `n1` mounts secret `s` and claim `c`; pod `ns/b` on `n2`
//! mounts `s`; PV `v` is bound to `ns/c` and names secret `ns/csi` for node publishing.
//!
//! ```text
//! pods:          ns/a -> n1 [secret s, pvc c]       ns/b -> n2 [secret s]
//! secret ns/s:   {n1: 1, n2: 1}
//! pvc ns/c:      {n1: 1}
//! pv v:          claim ns/c, secrets [ns/csi]
//! pv secrets:    ns/csi -> {v: 1}
//! ```
//!
//! `related(Secret, ns, csi, n1)`: no pod names it, PV `v` does, `v`'s claim `ns/c` has `n1`:
//! true. Deleting pod `ns/a` takes `n1` out of `s` and `c` (`c` is then empty and removed):
//! the same question is then false.
//!
//! Invariants: every count is at least one (an object with no pods left is removed); a pod's
//! references are deduplicated, so a count is the number of pods; `edges` is the sum of the
//! edges the stored objects carry (one per pod, PV claim, attachment and slice, one per
//! reference) and never exceeds `edges_max`: an object that would take it past is not
//! stored (the node is then refused what it would have related, never granted more).

use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;

/// The kinds of object a pod references (in the order a pod's references are sorted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PodRef {
    Secret = 0,
    ConfigMap = 1,
    PersistentVolumeClaim = 2,
    ServiceAccount = 3,
    ResourceClaim = 4,
}

const POD_REF_KINDS: usize = 5;

/// What a decision asks about: the kinds of object the graph relates to nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Referenced(PodRef),
    PersistentVolume,
    Pod,
    VolumeAttachment,
    ResourceSlice,
}

/// A pod bound to a node, with what it references (in its own namespace), sorted and
/// deduplicated.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BoundPod {
    pub node: String,
    pub refs: Vec<(PodRef, String)>,
}

/// A persistent volume bound to a claim, with the secrets the kubelet uses for it
/// (namespace, name), sorted and deduplicated.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BoundVolume {
    pub claim_namespace: String,
    pub claim_name: String,
    pub secrets: Vec<(String, String)>,
}

/// One change to the graph, as a watch event or a listed object makes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A pod is bound (`Some`) or gone or unbound (`None`).
    Pod {
        namespace: String,
        name: String,
        bound: Option<BoundPod>,
    },
    /// A PV is bound to a claim (`Some`) or gone or unbound.
    Volume {
        name: String,
        bound: Option<BoundVolume>,
    },
    /// A VolumeAttachment for a node (`Some`), or gone.
    Attachment { name: String, node: Option<String> },
    /// A ResourceSlice of a node (`Some`), or gone or of no node.
    Slice { name: String, node: Option<String> },
}

/// Objects by namespace, then name (so that look-ups take `&str`s).
type Names<V> = HashMap<String, HashMap<String, V>>;

/// Pods per node, for one referenced object.
type NodeCounts = HashMap<Arc<str>, u32>;

#[derive(Default)]
struct Pod {
    node: Arc<str>,
    refs: Vec<(PodRef, String)>,
}

/// The refusal of a change that would take the graph past its edge bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full {
    pub edges: usize,
    pub edges_max: usize,
}

/// The graph (see the module documentation).
pub struct Graph {
    pods: Names<Pod>,
    referenced: [Names<NodeCounts>; POD_REF_KINDS],
    volumes: HashMap<String, BoundVolume>,
    /// Secrets the kubelet uses for a PV -> PVs naming them (with their counts).
    volume_secrets: Names<HashMap<String, u32>>,
    attachments: HashMap<String, Arc<str>>,
    slices: HashMap<String, Arc<str>>,
    edges: usize,
    edges_max: usize,
}

fn get<'m, V>(m: &'m Names<V>, namespace: &str, name: &str) -> Option<&'m V> {
    m.get(namespace)?.get(name)
}

fn take<V>(m: &mut Names<V>, namespace: &str, name: &str) -> Option<V> {
    let names = m.get_mut(namespace)?;
    let v = names.remove(name);
    if names.is_empty() {
        m.remove(namespace);
    }
    v
}

/// The value at `namespace`/`name`, made (default) when absent; allocates only then.
fn slot<'m, V: Default>(m: &'m mut Names<V>, namespace: &str, name: &str) -> &'m mut V {
    if !m.contains_key(namespace) {
        m.insert(namespace.to_owned(), HashMap::new());
    }
    let names = m.get_mut(namespace).expect("inserted above");
    if !names.contains_key(name) {
        names.insert(name.to_owned(), V::default());
    }
    names.get_mut(name).expect("inserted above")
}

/// Takes one away from `key`'s count in `counts`; true when `counts` is then empty.
fn decrement<K: std::hash::Hash + Eq + std::borrow::Borrow<str>>(
    counts: &mut HashMap<K, u32>,
    key: &str,
) -> bool {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
    counts.is_empty()
}

impl Graph {
    pub fn new(edges_max: usize) -> Graph {
        Graph {
            pods: Names::new(),
            referenced: std::array::from_fn(|_| Names::new()),
            volumes: HashMap::new(),
            volume_secrets: Names::new(),
            attachments: HashMap::new(),
            slices: HashMap::new(),
            edges: 0,
            edges_max,
        }
    }

    /// Edges held now.
    pub fn edges(&self) -> usize {
        self.edges
    }

    /// Objects held now: pods, the objects they reference, PVs, attachments and slices.
    pub fn objects(&self) -> usize {
        let names = |m: &Names<NodeCounts>| m.values().map(HashMap::len).sum::<usize>();
        self.pods.values().map(HashMap::len).sum::<usize>()
            + self.referenced.iter().map(names).sum::<usize>()
            + self.volumes.len()
            + self.attachments.len()
            + self.slices.len()
    }

    /// Applies `change`; refused (and nothing stored for its object) when it would take the
    /// graph past its bound.
    pub fn apply(&mut self, change: Change) -> Result<(), Full> {
        match change {
            Change::Pod {
                namespace,
                name,
                bound,
            } => self.set_pod(&namespace, &name, bound),
            Change::Volume { name, bound } => self.set_volume(&name, bound),
            Change::Attachment { name, node } => {
                self.set_owned(|g| &mut g.attachments, &name, node.as_deref())
            }
            Change::Slice { name, node } => {
                self.set_owned(|g| &mut g.slices, &name, node.as_deref())
            }
        }
    }

    fn fits(&self, more: usize) -> Result<(), Full> {
        match self.edges.checked_add(more) {
            Some(total) if total <= self.edges_max => Ok(()),
            _ => Err(Full {
                edges: self.edges,
                edges_max: self.edges_max,
            }),
        }
    }

    fn set_pod(
        &mut self,
        namespace: &str,
        name: &str,
        bound: Option<BoundPod>,
    ) -> Result<(), Full> {
        if let (Some(old), Some(new)) = (get(&self.pods, namespace, name), &bound) {
            // Status updates (most pod events) change nothing the graph holds.
            if *old.node == *new.node && old.refs == new.refs {
                return Ok(());
            }
        }
        self.remove_pod(namespace, name);
        let Some(bound) = bound else {
            return Ok(());
        };
        debug_assert!(
            bound.refs.windows(2).all(|w| w[0] < w[1]),
            "pod references sorted and unique: {:?}",
            bound.refs
        );
        self.fits(1 + bound.refs.len())?;
        let node: Arc<str> = Arc::from(bound.node.as_str());
        for (kind, object) in &bound.refs {
            let counts = slot(&mut self.referenced[*kind as usize], namespace, object);
            match counts.get_mut(&*node) {
                Some(n) => *n += 1,
                None => {
                    counts.insert(node.clone(), 1);
                }
            }
        }
        self.edges += 1 + bound.refs.len();
        let pod = Pod {
            node,
            refs: bound.refs,
        };
        *slot(&mut self.pods, namespace, name) = pod;
        Ok(())
    }

    fn remove_pod(&mut self, namespace: &str, name: &str) {
        let Some(pod) = take(&mut self.pods, namespace, name) else {
            return;
        };
        for (kind, object) in &pod.refs {
            let names = &mut self.referenced[*kind as usize];
            let emptied = names
                .get_mut(namespace)
                .and_then(|n| n.get_mut(object.as_str()))
                .is_some_and(|counts| decrement(counts, &pod.node));
            if emptied {
                take(names, namespace, object);
            }
        }
        self.edges -= 1 + pod.refs.len();
    }

    fn set_volume(&mut self, name: &str, bound: Option<BoundVolume>) -> Result<(), Full> {
        if let Some(old) = self.volumes.remove(name) {
            for (ns, secret) in &old.secrets {
                let emptied = self
                    .volume_secrets
                    .get_mut(ns.as_str())
                    .and_then(|n| n.get_mut(secret.as_str()))
                    .is_some_and(|pvs| decrement(pvs, name));
                if emptied {
                    take(&mut self.volume_secrets, ns, secret);
                }
            }
            self.edges -= 1 + old.secrets.len();
        }
        let Some(bound) = bound else {
            return Ok(());
        };
        self.fits(1 + bound.secrets.len())?;
        for (ns, secret) in &bound.secrets {
            *slot(&mut self.volume_secrets, ns, secret)
                .entry(name.to_owned())
                .or_insert(0) += 1;
        }
        self.edges += 1 + bound.secrets.len();
        self.volumes.insert(name.to_owned(), bound);
        Ok(())
    }

    fn set_owned(
        &mut self,
        map: impl Fn(&mut Graph) -> &mut HashMap<String, Arc<str>>,
        name: &str,
        node: Option<&str>,
    ) -> Result<(), Full> {
        let node = node.filter(|n| !n.is_empty());
        if map(self).remove(name).is_some() {
            self.edges -= 1;
        }
        let Some(node) = node else {
            return Ok(());
        };
        self.fits(1)?;
        map(self).insert(name.to_owned(), Arc::from(node));
        self.edges += 1;
        Ok(())
    }

    /// Whether a path leads from the object of `kind` at `namespace`/`name` to `node`.
    pub fn related(&self, kind: Kind, namespace: &str, name: &str, node: &str) -> bool {
        match kind {
            Kind::Referenced(r) => {
                self.has_node(r, namespace, name, node)
                    || (r == PodRef::Secret && self.related_through_volumes(namespace, name, node))
            }
            Kind::PersistentVolume => self.volume_related(name, node),
            Kind::Pod => get(&self.pods, namespace, name).is_some_and(|p| &*p.node == node),
            Kind::VolumeAttachment => self.attachments.get(name).is_some_and(|n| &**n == node),
            Kind::ResourceSlice => self.slices.get(name).is_some_and(|n| &**n == node),
        }
    }

    fn has_node(&self, kind: PodRef, namespace: &str, name: &str, node: &str) -> bool {
        get(&self.referenced[kind as usize], namespace, name).is_some_and(|c| c.contains_key(node))
    }

    fn volume_related(&self, volume: &str, node: &str) -> bool {
        self.volumes.get(volume).is_some_and(|v| {
            self.has_node(
                PodRef::PersistentVolumeClaim,
                &v.claim_namespace,
                &v.claim_name,
                node,
            )
        })
    }

    /// A secret a PV names is related when the PV is: one look-up per PV that names it (as
    /// upstream's walk from the secret, which has no index of its own).
    fn related_through_volumes(&self, namespace: &str, name: &str, node: &str) -> bool {
        get(&self.volume_secrets, namespace, name)
            .is_some_and(|pvs| pvs.keys().any(|pv| self.volume_related(pv, node)))
    }
}
