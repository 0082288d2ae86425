//! The `--encryption-provider-config` file: upstream's `apiserver.config.k8s.io/v1`
//! `EncryptionConfiguration` (YAML or JSON), decoded leniently as upstream's decoder does
//! (unknown fields ignored), then validated with upstream's rules and messages
//! (`field.ErrorList` form: `resources[0].providers[0].aesgcm.keys[0].secret: Invalid value:
//! "REDACTED": ...`, several errors as `[a, b]`). Secrets never appear in an error.

use serde::Deserialize;

pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
pub const KIND: &str = "EncryptionConfiguration";

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    #[serde(default, deserialize_with = "null_is_default")]
    pub api_version: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub kind: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub resources: Vec<ResourceConfiguration>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ResourceConfiguration {
    #[serde(default, deserialize_with = "null_is_default")]
    pub resources: Vec<String>,
    #[serde(default, deserialize_with = "null_is_default")]
    pub providers: Vec<ProviderConfiguration>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ProviderConfiguration {
    pub aesgcm: Option<KeysConfiguration>,
    pub aescbc: Option<KeysConfiguration>,
    pub secretbox: Option<KeysConfiguration>,
    pub identity: Option<serde_json::Value>,
    pub kms: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct KeysConfiguration {
    #[serde(default, deserialize_with = "null_is_default")]
    pub keys: Vec<Key>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Key {
    #[serde(default, deserialize_with = "null_is_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub secret: String,
}

/// A YAML `null` (`name:` with nothing after it) reads as the empty value, as upstream's
/// YAML-to-JSON decoding gives Go's zero value.
fn null_is_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A group-resource as upstream's `schema.ParseGroupResource` reads `resource.group`:
/// `secrets` (core), `deployments.apps`, `*.apps`, `*.` (all of core), `*.*` (everything).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn parse(s: &str) -> GroupResource {
        match s.split_once('.') {
            Some((resource, group)) => GroupResource {
                group: group.into(),
                resource: resource.into(),
            },
            None => GroupResource {
                group: String::new(),
                resource: s.into(),
            },
        }
    }

    /// As upstream names a rule in its masking error (`*.` for all of core).
    pub fn yaml_name(&self) -> String {
        if self.group.is_empty() && self.resource == "*" {
            "*.".into()
        } else if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// Decodes the file's bytes (YAML, of which JSON is a subset) and checks type and version.
pub fn decode(data: &[u8]) -> Result<EncryptionConfiguration, String> {
    // The type first, without the body in any message: the body holds the keys.
    let head: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(data).map_err(|e| redact_yaml_error(&e))?;
    let field = |name: &str| head.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if kind.is_empty() {
        return Err("Object 'Kind' is missing".into());
    }
    if api_version.is_empty() {
        return Err("Object 'apiVersion' is missing".into());
    }
    if api_version != API_VERSION || kind != KIND {
        return Err(format!(
            "no kind {kind:?} is registered for version {api_version:?}"
        ));
    }
    serde_yaml_ng::from_value(head).map_err(|e| redact_yaml_error(&e))
}

/// A YAML error's position and kind, never the text around it (it may be a secret).
fn redact_yaml_error(e: &serde_yaml_ng::Error) -> String {
    match e.location() {
        Some(l) => format!(
            "invalid encryption configuration at line {} column {}: {}",
            l.line(),
            l.column(),
            first_clause(&e.to_string())
        ),
        None => format!(
            "invalid encryption configuration: {}",
            first_clause(&e.to_string())
        ),
    }
}

/// serde's messages name what was expected and what was found (`invalid type: sequence,
/// expected a string`); YAML scanner messages may quote input, so keep to the first clause.
fn first_clause(msg: &str) -> &str {
    msg.split(" at line ").next().unwrap_or(msg)
}

/// One validation error, rendered as upstream's `field.Error`.
struct FieldError(String);

fn required(path: &str, detail: &str) -> FieldError {
    FieldError(format!("{path}: Required value: {detail}"))
}

fn invalid(path: &str, value: &str, detail: &str) -> FieldError {
    FieldError(format!("{path}: Invalid value: {value}: {detail}"))
}

/// Go's `%q` of a string (the characters config files hold need no more than this).
fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// Go's `%#v` of a `[]string`.
fn go_strings(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| quote(s)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// Upstream's `ValidateEncryptionConfiguration` (without reload), with its messages; several
/// errors are joined as upstream's aggregate does (`[a, b]`, duplicates once).
pub fn validate(c: &EncryptionConfiguration) -> Result<(), String> {
    let mut errs = Vec::new();
    if c.resources.is_empty() {
        errs.push(required("resources", "at least one resources is required"));
    }
    for (i, conf) in c.resources.iter().enumerate() {
        let r = format!("resources[{i}].resources");
        let p = format!("resources[{i}].providers");
        if conf.resources.is_empty() {
            errs.push(required(&r, &format!("at least one {r} is required")));
        }
        validate_overlap(&conf.resources, &r, &mut errs);
        validate_names(&conf.resources, &r, &mut errs);
        if conf.providers.is_empty() {
            errs.push(required(&p, &format!("at least one {p} is required")));
        }
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            validate_provider(provider, &path, &mut errs);
        }
    }
    aggregate(errs.into_iter().map(|e| e.0).collect())
}

/// Upstream's aggregate error text: one message as is, several as `[a, b]` (each once).
pub fn aggregate(msgs: Vec<String>) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    for m in msgs {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    match seen.len() {
        0 => Ok(()),
        1 => Err(seen.pop().expect("one")),
        _ => Err(format!("[{}]", seen.join(", "))),
    }
}

const OVERLAP: &str = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked";

fn validate_overlap(resources: &[String], path: &str, errs: &mut Vec<FieldError>) {
    if resources.len() < 2 {
        return;
    }
    let grs: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut overlap, mut duplicate) = (false, false);
    for (i, a) in grs.iter().enumerate() {
        for (j, b) in grs.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if a.group == "*" && a.resource == "*" {
                overlap = true;
                continue;
            }
            if a.group == b.group && (a.resource == "*" || b.resource == "*") {
                overlap = true;
            }
        }
    }
    let value = go_strings(resources);
    if duplicate {
        errs.push(invalid(
            path,
            &value,
            "the same resource cannot be specified multiple times",
        ));
    }
    if overlap {
        errs.push(invalid(path, &value, OVERLAP));
    }
}

fn validate_names(resources: &[String], path: &str, errs: &mut Vec<FieldError>) {
    for (j, res) in resources.iter().enumerate() {
        let at = format!("{path}[{j}]");
        let gr = GroupResource::parse(res);
        let detail = if res.to_lowercase() != *res {
            "resource name should not contain capital letters"
        } else if res == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            "resources which do not have REST API/s cannot be encrypted"
        } else if gr.group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
        } else if gr.group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if gr.group == "*" && gr.resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errs.push(invalid(&at, &quote(res), detail));
    }
}

fn validate_provider(p: &ProviderConfiguration, path: &str, errs: &mut Vec<FieldError>) {
    let found = [
        p.kms.is_some(),
        p.aesgcm.is_some(),
        p.aescbc.is_some(),
        p.secretbox.is_some(),
        p.identity.is_some(),
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    // Upstream prints the provider struct here; keel prints none of it (it holds keys).
    if found == 0 {
        errs.push(invalid(path, "{}", "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"));
        return;
    }
    if found > 1 {
        errs.push(invalid(path, "{...}", "more than one provider specified in a single element, should split into different list elements"));
        return;
    }
    let (name, keys, sizes): (&str, _, &[usize]) = if let Some(k) = &p.aesgcm {
        ("aesgcm", k, &super::providers::AES_KEY_BYTES)
    } else if let Some(k) = &p.aescbc {
        ("aescbc", k, &super::providers::AES_KEY_BYTES)
    } else if let Some(k) = &p.secretbox {
        ("secretbox", k, &super::providers::SECRETBOX_KEY_BYTES)
    } else {
        return; // identity has nothing to check; kms is refused when the chains are built
    };
    validate_keys(&keys.keys, &format!("{path}.{name}.keys"), sizes, errs);
}

fn validate_keys(keys: &[Key], path: &str, sizes: &[usize], errs: &mut Vec<FieldError>) {
    if keys.is_empty() {
        errs.push(required(path, "at least one keys is required"));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if key.name.is_empty() {
            errs.push(required(
                &format!("{at}.name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(required(
                &format!("{at}.secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        let secret = format!("{at}.secret");
        match decode_secret(&key.secret).ok_or(()) {
            Err(()) => errs.push(invalid(
                &secret,
                "\"REDACTED\"",
                "secrets must be base64 encoded",
            )),
            Ok(bytes) if !sizes.contains(&bytes.len()) => {
                let expected: Vec<String> = sizes.iter().map(|n| n.to_string()).collect();
                errs.push(invalid(
                    &secret,
                    "\"REDACTED\"",
                    &format!(
                        "secret is not of the expected length, got {}, expected one of [{}]",
                        bytes.len(),
                        expected.join(" ")
                    ),
                ));
            }
            Ok(_) => {}
        }
    }
}

/// A key's secret: standard base64 with padding, as upstream's `base64.StdEncoding`.
pub fn decode_secret(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}
