//! Resources defined at run time (a CRD's versions, an aggregated API's resources): their
//! definitions with owned names, checked, then interned into `ResourceInfo`s.

use crate::error::CatalogError;
use crate::intern::Interner;
use crate::limits::{GROUP_BYTES_MAX, NAMES_PER_LIST_MAX, NAME_BYTES_MAX};
use crate::storage::StorageVersion;
use crate::types::{ResourceInfo, SubresourceInfo};

/// Verbs of a custom resource, in the order upstream's CRD discovery lists them (not sorted).
pub const CUSTOM_RESOURCE_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// Verbs of the `status` and `scale` subresources.
const STATUS_SCALE_VERBS: &[&str] = &["get", "patch", "update"];

/// Names one served resource: `group/version/plural`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceId {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl ResourceId {
    pub fn new(group: &str, version: &str, plural: &str) -> ResourceId {
        ResourceId {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
        }
    }

    /// The id of a served resource.
    pub fn of(info: &ResourceInfo) -> ResourceId {
        ResourceId::new(info.group, info.version, info.plural)
    }
}

/// One resource at one group/version, defined at run time. Every field is given as discovery
/// lists it: verbs keep their order (CRDs list [`CUSTOM_RESOURCE_VERBS`], unsorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSpec {
    /// API group; must be named (run-time resources never join the core group).
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    /// Singular name; may be empty (older aggregated servers publish none).
    pub singular: String,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Subresources, in the order discovery lists them.
    pub subresources: Vec<SubresourceSpec>,
    /// The version of this group/resource its objects are stored as (a CRD's `storage: true`
    /// version); every served version of one group/resource must name the same.
    pub storage_version: String,
}

/// A subresource of a run-time resource. Empty `group`, `version` or `kind` mean the parent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubresourceSpec {
    pub name: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

impl SubresourceSpec {
    /// `<plural>/status` as CRDs serve it: the parent's kind, get/patch/update.
    pub fn status() -> SubresourceSpec {
        SubresourceSpec {
            name: "status".into(),
            group: String::new(),
            version: String::new(),
            kind: String::new(),
            verbs: strings(STATUS_SCALE_VERBS),
        }
    }

    /// `<plural>/scale` as CRDs serve it: `autoscaling/v1` `Scale`, get/patch/update.
    pub fn scale() -> SubresourceSpec {
        SubresourceSpec {
            name: "scale".into(),
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
            verbs: strings(STATUS_SCALE_VERBS),
        }
    }
}

impl ResourceSpec {
    /// A custom resource version with upstream's CRD defaults: singular name = lower-case
    /// kind, [`CUSTOM_RESOURCE_VERBS`], stored as this version, no short names, categories
    /// or subresources.
    pub fn custom(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
    ) -> ResourceSpec {
        ResourceSpec {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
            singular: kind.to_lowercase(),
            namespaced,
            verbs: strings(CUSTOM_RESOURCE_VERBS),
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: Vec::new(),
            storage_version: version.to_owned(),
        }
    }

    pub fn id(&self) -> ResourceId {
        ResourceId::new(&self.group, &self.version, &self.plural)
    }

    /// Checks the names' shape; says which field is wrong and why.
    pub(crate) fn validate(&self) -> Result<(), CatalogError> {
        self.check().map_err(|reason| CatalogError::Invalid {
            resource: format!("{}/{}/{}", self.group, self.version, self.plural),
            reason,
        })
    }

    fn check(&self) -> Result<(), String> {
        if self.group.is_empty() {
            return Err("resources added at run time need a named group".into());
        }
        if self.group == "core" {
            return Err(
                "group \"core\" is reserved: it names the core group in storage keys".into(),
            );
        }
        check_name("group", &self.group, GROUP_BYTES_MAX, is_lower_dns)?;
        check_name("version", &self.version, NAME_BYTES_MAX, is_lower_dns)?;
        check_name("kind", &self.kind, NAME_BYTES_MAX, |c| {
            c.is_ascii_alphanumeric()
        })?;
        check_name("plural", &self.plural, NAME_BYTES_MAX, is_lower_dns)?;
        if !self.singular.is_empty() {
            check_name("singular", &self.singular, NAME_BYTES_MAX, is_lower_dns)?;
        }
        check_name(
            "storage version",
            &self.storage_version,
            NAME_BYTES_MAX,
            is_lower_dns,
        )?;
        if self.verbs.is_empty() {
            return Err("a resource needs at least one verb".into());
        }
        check_list("verb", &self.verbs, |c| c.is_ascii_lowercase())?;
        check_list("short name", &self.short_names, is_lower_dns)?;
        check_list("category", &self.categories, is_lower_dns)?;
        let names: Vec<String> = self.subresources.iter().map(|s| s.name.clone()).collect();
        check_list("subresource", &names, is_lower_dns)?;
        for s in &self.subresources {
            let field = |f: &str| format!("subresource {} {f}", s.name);
            if !s.group.is_empty() {
                check_name(&field("group"), &s.group, GROUP_BYTES_MAX, is_lower_dns)?;
            }
            if !s.version.is_empty() {
                check_name(&field("version"), &s.version, NAME_BYTES_MAX, is_lower_dns)?;
            }
            if !s.kind.is_empty() {
                check_name(&field("kind"), &s.kind, NAME_BYTES_MAX, |c| {
                    c.is_ascii_alphanumeric()
                })?;
            }
            if s.verbs.is_empty() {
                return Err(format!("subresource {} needs at least one verb", s.name));
            }
            check_list(&field("verb"), &s.verbs, |c| c.is_ascii_lowercase())?;
        }
        Ok(())
    }

    /// Interns the names (all or none) into the served form and its storage version.
    /// The spec must have passed [`ResourceSpec::validate`].
    pub(crate) fn intern(
        &self,
        interner: &mut Interner,
    ) -> Result<(ResourceInfo, StorageVersion), CatalogError> {
        let subs: Vec<[&str; 4]> = self
            .subresources
            .iter()
            .map(|s| {
                [
                    s.name.as_str(),
                    non_empty_or(&s.group, &self.group),
                    non_empty_or(&s.version, &self.version),
                    non_empty_or(&s.kind, &self.kind),
                ]
            })
            .collect();
        let mut strs: Vec<&str> = vec![
            &self.group,
            &self.version,
            &self.kind,
            &self.plural,
            &self.singular,
            &self.storage_version,
        ];
        strs.extend(subs.iter().flatten());
        let mut lists = vec![
            as_strs(&self.verbs),
            as_strs(&self.short_names),
            as_strs(&self.categories),
        ];
        lists.extend(self.subresources.iter().map(|s| as_strs(&s.verbs)));
        let list_refs: Vec<&[&str]> = lists.iter().map(Vec::as_slice).collect();
        let got = interner.intern(&strs, &list_refs)?;
        let (s, l) = (&got.strings, &got.lists);
        let subresources = (0..subs.len())
            .map(|i| SubresourceInfo {
                name: s[6 + 4 * i],
                group: s[7 + 4 * i],
                version: s[8 + 4 * i],
                kind: s[9 + 4 * i],
                verbs: l[3 + i],
            })
            .collect();
        let info = ResourceInfo {
            group: s[0],
            version: s[1],
            kind: s[2],
            plural: s[3],
            singular: s[4],
            namespaced: self.namespaced,
            verbs: l[0],
            short_names: l[1],
            categories: l[2],
            subresources,
        };
        let storage = StorageVersion {
            group: s[0],
            version: s[5],
            kind: s[2],
        };
        Ok((info, storage))
    }
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn non_empty_or<'a>(own: &'a str, parent: &'a str) -> &'a str {
    if own.is_empty() {
        parent
    } else {
        own
    }
}

/// Characters of a lower-case DNS name (labels, subdomains).
fn is_lower_dns(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'
}

fn check_name(
    field: &str,
    value: &str,
    bytes_max: usize,
    ok: fn(char) -> bool,
) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("{field} must not be empty"));
    }
    if value.len() > bytes_max {
        return Err(format!(
            "{field} {value:?} is longer than {bytes_max} bytes"
        ));
    }
    if let Some(c) = value.chars().find(|c| !ok(*c)) {
        return Err(format!("{field} {value:?} must not contain {c:?}"));
    }
    Ok(())
}

fn check_list(what: &str, items: &[String], ok: fn(char) -> bool) -> Result<(), String> {
    if items.len() > NAMES_PER_LIST_MAX {
        return Err(format!("more than {NAMES_PER_LIST_MAX} of {what}s"));
    }
    for (i, item) in items.iter().enumerate() {
        check_name(what, item, NAME_BYTES_MAX, ok)?;
        if items[..i].contains(item) {
            return Err(format!("{what} {item:?} is listed twice"));
        }
    }
    Ok(())
}
