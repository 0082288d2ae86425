//! Encryption at rest as kube-apiserver does it (`--encryption-provider-config`).
//!
//! Each resource named in the configuration gets a *chain*: the providers of every entry that
//! names it, in file order. Writes use the chain's first provider (its first key); reads try
//! the providers in order, each claiming the values that start with its prefix, so a key can
//! be rotated without downtime: put the new key first (new writes use it, old values still
//! read with the old one), rewrite every object (`kubectl get secrets -A -o json | kubectl
//! replace -f -`), then drop the old key.
//!
//! Stored values carry upstream's prefix `k8s:enc:<provider>:v1:<key name>:` and then the
//! provider's bytes (`providers`); `identity` stores plaintext and reads any value that does
//! not start with `k8s:enc:` (values keel writes are JSON, starting with `{`). A resource the
//! configuration does not name reads as through `identity` alone: plaintext is served as
//! stored, an encrypted value is an error (a server started without the keys it needs).
//! AES-GCM authenticates the storage key with the value, so a value copied to another key
//! does not decrypt.
//!
//! Errors carry upstream's texts: `identity transformer tried to read encrypted data`, `no
//! matching key was found for the provided AES transformer`, `no matching prefix found`.

pub mod config;
pub mod providers;

use config::{EncryptionConfiguration, GroupResource, ProviderConfiguration};
use foldhash::HashMap;
use providers::Cipher;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// What every encrypted value starts with (upstream reserves it: its identity provider
/// refuses to read values that start with it).
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// The configured chains, by the group-resource they apply to.
pub struct Encryption {
    /// Few (one per resource named in the file): a scan compares borrowed strings, where a
    /// map would need an owned key per lookup, and lookups run once per read.
    rules: Vec<(GroupResource, Arc<Chain>)>,
    /// Resources without a rule: read through identity, written as plaintext.
    unconfigured: Arc<Chain>,
}

/// The providers of one resource, in order.
pub struct Chain {
    providers: Vec<Provider>,
    /// The rule's resource (`secrets`, `*.apps`) for the metrics; `None` for resources
    /// without a rule (upstream counts no transformations for those either).
    resource: Option<String>,
    /// Writes sealed: [ok, failed].
    to_storage: [AtomicU64; 2],
    /// Reads by the provider that claimed the value (the last slot: none did): [ok, failed].
    from_storage: Vec<[AtomicU64; 2]>,
}

#[derive(Clone)]
enum Provider {
    Identity,
    Keyed { kind: Kind, keys: Vec<NamedKey> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    AesGcm,
    AesCbc,
    Secretbox,
}

impl Kind {
    /// The provider's prefix, as upstream writes it.
    pub fn prefix(self) -> &'static [u8] {
        match self {
            Kind::AesGcm => b"k8s:enc:aesgcm:v1:",
            Kind::AesCbc => b"k8s:enc:aescbc:v1:",
            Kind::Secretbox => b"k8s:enc:secretbox:v1:",
        }
    }

    fn no_key(self) -> &'static str {
        match self {
            Kind::AesGcm | Kind::AesCbc => {
                "no matching key was found for the provided AES transformer"
            }
            Kind::Secretbox => "no matching key was found for the provided Secretbox transformer",
        }
    }
}

#[derive(Clone)]
struct NamedKey {
    /// `<name>:`, what follows the provider prefix.
    tag: Vec<u8>,
    cipher: Cipher,
}

impl Encryption {
    /// Reads, decodes, validates and builds the configuration in `path`, with upstream's
    /// messages for each way it can be wrong.
    pub fn load(path: &std::path::Path) -> Result<Encryption, String> {
        use std::io::Read;
        let max = crate::limits::ENCRYPTION_CONFIG_BYTES_MAX;
        let mut data = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(max + 1).read_to_end(&mut data))
            .map_err(|e| {
                format!(
                    "error opening encryption provider configuration file {:?}: {e}",
                    path.display().to_string()
                )
            })?;
        if data.is_empty() {
            return Err(format!(
                "encryption provider configuration file {:?} is empty",
                path.display().to_string()
            ));
        }
        if data.len() as u64 > max {
            return Err(format!(
                "encryption provider configuration file {:?} is larger than {max} bytes",
                path.display().to_string()
            ));
        }
        Encryption::parse(&data).map_err(|e| format!("error while parsing file: {e}"))
    }

    /// Decodes, validates and builds a configuration from the file's bytes.
    pub fn parse(data: &[u8]) -> Result<Encryption, String> {
        let c = config::decode(data)?;
        config::validate(&c)?;
        Encryption::build(&c)
    }

    fn build(c: &EncryptionConfiguration) -> Result<Encryption, String> {
        let mut chains: HashMap<GroupResource, Vec<usize>> = HashMap::default();
        let mut providers: Vec<Provider> = Vec::new();
        for (i, entry) in c.resources.iter().enumerate() {
            let first = providers.len();
            for (j, p) in entry.providers.iter().enumerate() {
                providers.push(provider(p, i, j)?);
            }
            let ids: Vec<usize> = (first..providers.len()).collect();
            for r in &entry.resources {
                let gr = GroupResource::parse(r);
                for wider in [
                    GroupResource {
                        group: gr.group.clone(),
                        resource: "*".into(),
                    },
                    GroupResource {
                        group: "*".into(),
                        resource: "*".into(),
                    },
                ] {
                    if chains.contains_key(&wider) {
                        return Err(format!(
                            "resource {:?} is masked by earlier rule {:?}",
                            gr.yaml_name(),
                            wider.yaml_name()
                        ));
                    }
                }
                chains.entry(gr).or_default().extend(&ids);
            }
        }
        let rules = chains
            .into_iter()
            .map(|(gr, ids)| {
                let providers = ids.iter().map(|&i| providers[i].clone()).collect();
                let chain = Chain::new(providers, Some(gr.yaml_name()));
                (gr, Arc::new(chain))
            })
            .collect();
        Ok(Encryption {
            rules,
            unconfigured: Arc::new(Chain::new(vec![Provider::Identity], None)),
        })
    }

    /// The chain for the resource a storage key or list prefix (`/<group or core>/<plural>/`)
    /// belongs to: the exact rule, else `*.<group>`, else `*.*`, else identity.
    /// `None` when `key` names no single resource (a prefix shorter than one).
    pub fn chain(&self, key: &[u8]) -> Option<&Arc<Chain>> {
        let (group, resource) = resource_of(key)?;
        let group = if group == "core" { "" } else { group };
        let find = |g: &str, r: &str| {
            self.rules
                .iter()
                .find(|(gr, _)| gr.group == g && gr.resource == r)
                .map(|(_, c)| c)
        };
        Some(
            find(group, resource)
                .or_else(|| find(group, "*"))
                .or_else(|| find("*", "*"))
                .unwrap_or(&self.unconfigured),
        )
    }
}

/// `(group, plural)` of `/<group>/<plural>/...`, if the key is that long.
fn resource_of(key: &[u8]) -> Option<(&str, &str)> {
    let s = std::str::from_utf8(key).ok()?;
    let mut parts = s.strip_prefix('/')?.splitn(3, '/');
    let group = parts.next()?;
    let resource = parts.next()?;
    // A prefix must reach past the plural (`/core/secrets/`), or it may span resources.
    parts.next()?;
    (!group.is_empty() && !resource.is_empty()).then_some((group, resource))
}

fn provider(p: &ProviderConfiguration, i: usize, j: usize) -> Result<Provider, String> {
    let keyed = |kind: Kind, keys: &config::KeysConfiguration, make: fn(&[u8]) -> Cipher| {
        let keys = keys
            .keys
            .iter()
            .map(|k| {
                let secret = config::decode_secret(&k.secret)
                    .ok_or_else(|| format!("could not obtain secret for named key {}", k.name))?;
                Ok(NamedKey {
                    tag: format!("{}:", k.name).into_bytes(),
                    cipher: make(&secret),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Provider::Keyed { kind, keys })
    };
    if let Some(k) = &p.aesgcm {
        keyed(Kind::AesGcm, k, Cipher::aes_gcm)
    } else if let Some(k) = &p.aescbc {
        keyed(Kind::AesCbc, k, Cipher::aes_cbc)
    } else if let Some(k) = &p.secretbox {
        keyed(Kind::Secretbox, k, Cipher::secretbox)
    } else if p.identity.is_some() {
        Ok(Provider::Identity)
    } else {
        Err(format!(
            "resources[{i}].providers[{j}].kms: the kms provider is not supported by keel \
             (use aesgcm, aescbc, secretbox or identity)"
        ))
    }
}

impl Chain {
    fn new(providers: Vec<Provider>, resource: Option<String>) -> Chain {
        let from_storage = (0..=providers.len()).map(|_| Default::default()).collect();
        Chain {
            providers,
            resource,
            to_storage: Default::default(),
            from_storage,
        }
    }

    fn count(&self, counter: &[AtomicU64; 2], ok: bool) {
        if self.resource.is_some() {
            counter[usize::from(!ok)].fetch_add(1, Ordering::Relaxed);
        }
    }
    /// Whether writes store plaintext (the first provider is identity): the value is written
    /// as built, with no copy.
    pub fn writes_plaintext(&self) -> bool {
        matches!(self.providers.first(), Some(Provider::Identity))
    }

    /// Upstream's `transformer_prefix` label of what writes use.
    pub fn write_prefix(&self) -> &'static str {
        match self.providers.first() {
            Some(Provider::Keyed { kind, .. }) => {
                std::str::from_utf8(kind.prefix()).expect("ASCII")
            }
            _ => "identity",
        }
    }

    /// Appends the stored form of `plain` under storage key `key` to `out`.
    pub fn seal(&self, key: &[u8], plain: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match self.providers.first() {
            Some(Provider::Keyed { kind, keys }) => {
                let k = keys.first().expect("validated: a provider has a key");
                out.extend_from_slice(kind.prefix());
                out.extend_from_slice(&k.tag);
                let r = k.cipher.seal(key, plain, out);
                self.count(&self.to_storage, r.is_ok());
                r
            }
            _ => {
                out.extend_from_slice(plain);
                Ok(())
            }
        }
    }

    /// The plaintext of stored `value` under `key`: `Ok(None)` when it is the stored bytes
    /// themselves (identity: no copy), or upstream's error.
    pub fn open(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.open_with_staleness(key, value).map(|(plain, _)| plain)
    }

    /// `open`, and whether the value was read with other than the provider and key writes
    /// use now (upstream's "stale"): such a value is rewritten by an update even when the
    /// object did not change, which is what makes `kubectl replace` re-encrypt.
    pub fn open_with_staleness(
        &self,
        key: &[u8],
        value: &[u8],
    ) -> Result<(Option<Vec<u8>>, bool), String> {
        let mut identity_failed = false;
        for (i, p) in self.providers.iter().enumerate() {
            match p {
                Provider::Identity => {
                    if !value.starts_with(ENCRYPTED_PREFIX) {
                        self.count(&self.from_storage[i], true);
                        return Ok((None, i != 0));
                    }
                    // As upstream: an identity listed before the provider that can read the
                    // value must not hide it; try the rest.
                    identity_failed = true;
                }
                Provider::Keyed { kind, keys } => {
                    let Some(rest) = value.strip_prefix(kind.prefix()) else {
                        continue;
                    };
                    for (j, k) in keys.iter().enumerate() {
                        if let Some(body) = rest.strip_prefix(k.tag.as_slice()) {
                            let plain = k.cipher.open(key, body);
                            self.count(&self.from_storage[i], plain.is_ok());
                            return Ok((Some(plain?), i != 0 || j != 0));
                        }
                    }
                    self.count(&self.from_storage[i], false);
                    return Err(kind.no_key().into());
                }
            }
        }
        self.count(&self.from_storage[self.providers.len()], false);
        Err(if identity_failed {
            "identity transformer tried to read encrypted data".into()
        } else {
            "no matching prefix found".into()
        })
    }
}

/// The configuration `/metrics` reports on (the process's one; set at start).
static METRICS_SOURCE: OnceLock<Arc<Encryption>> = OnceLock::new();

/// Has `/metrics` report `encryption`'s transformations (the first one set stays).
pub fn report_metrics_of(encryption: &Arc<Encryption>) {
    let _ = METRICS_SOURCE.set(encryption.clone());
}

/// Appends upstream's `apiserver_storage_transformation_operations_total` (labels as
/// upstream: `resource`, `status` `OK` or `Unknown`, `transformation_type` `to_storage` or
/// `from_storage`, `transformer_prefix` the provider's prefix, `identity` or `unknown`). A
/// wildcard rule's series carry the rule (`*.apps`) as their resource.
pub fn render_metrics(out: &mut String) {
    let Some(enc) = METRICS_SOURCE.get() else {
        return;
    };
    out.push_str("# HELP apiserver_storage_transformation_operations_total [ALPHA] Total number of transformations. Successful transformation will have a status 'OK' and a varied status string when the transformation fails.\n# TYPE apiserver_storage_transformation_operations_total counter\n");
    let mut chains: Vec<_> = enc.rules.iter().map(|(_, c)| c).collect();
    chains.sort_by(|a, b| a.resource.cmp(&b.resource));
    for c in chains {
        let resource = c.resource.as_deref().unwrap_or("");
        let name = |p: Option<&Provider>| match p {
            Some(Provider::Keyed { kind, .. }) => {
                std::str::from_utf8(kind.prefix()).expect("ASCII")
            }
            Some(Provider::Identity) => "identity",
            None => "unknown",
        };
        let mut series = vec![("to_storage", name(c.providers.first()), &c.to_storage)];
        for (i, counter) in c.from_storage.iter().enumerate() {
            series.push(("from_storage", name(c.providers.get(i)), counter));
        }
        for (kind, prefix, counter) in series {
            for (slot, status) in ["OK", "Unknown"].into_iter().enumerate() {
                let n = counter[slot].load(Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(out, "apiserver_storage_transformation_operations_total{{resource=\"{resource}\",status=\"{status}\",transformation_type=\"{kind}\",transformer_prefix=\"{prefix}\"}} {n}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
