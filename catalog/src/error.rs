//! Why a change to the served resources was refused.

use std::fmt;

/// A refused change. The catalog (or live catalog) is left as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogError {
    /// The definition itself is not acceptable (empty or malformed name, duplicate verb...).
    Invalid { resource: String, reason: String },
    /// `group/version/plural` is already served (or added twice in one change).
    PathTaken {
        group: String,
        version: String,
        plural: String,
    },
    /// `group/version` already serves objects of `kind`, as `plural`.
    KindTaken {
        group: String,
        version: String,
        kind: String,
        plural: String,
    },
    /// `group/plural` is a built-in resource (served or disabled by `--runtime-config`): its
    /// storage belongs to the built-in type and cannot be served or removed at run time.
    BuiltIn { group: String, plural: String },
    /// Versions of one `group/plural` share one storage prefix, so they must agree on kind,
    /// scope and storage version.
    Inconsistent {
        group: String,
        plural: String,
        reason: String,
    },
    /// A removal names a resource that is not served.
    NotServed {
        group: String,
        version: String,
        plural: String,
    },
    /// The snapshot would serve more than `max` resources.
    TooManyResources { max: usize },
    /// Interning the new names would pass the interner's bound.
    InternerFull {
        needed: usize,
        used: usize,
        max: usize,
    },
}

fn gv(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::Invalid { resource, reason } => {
                write!(f, "invalid resource {resource}: {reason}")
            }
            CatalogError::PathTaken {
                group,
                version,
                plural,
            } => write!(
                f,
                "resource {plural} in {} is already served",
                gv(group, version)
            ),
            CatalogError::KindTaken {
                group,
                version,
                kind,
                plural,
            } => write!(
                f,
                "kind {kind} in {} is already served as {plural}",
                gv(group, version)
            ),
            CatalogError::BuiltIn { group, plural } => write!(
                f,
                "{plural}.{group} is a built-in resource and cannot be added or removed at run time",
                group = if group.is_empty() { "core" } else { group }
            ),
            CatalogError::Inconsistent {
                group,
                plural,
                reason,
            } => write!(f, "versions of {plural}.{group} disagree: {reason}"),
            CatalogError::NotServed {
                group,
                version,
                plural,
            } => write!(
                f,
                "resource {plural} in {} is not served",
                gv(group, version)
            ),
            CatalogError::TooManyResources { max } => {
                write!(f, "a catalog serves at most {max} resources")
            }
            CatalogError::InternerFull { needed, used, max } => write!(
                f,
                "resource names need {needed} more interned bytes; {used} of {max} are used"
            ),
        }
    }
}

impl std::error::Error for CatalogError {}
