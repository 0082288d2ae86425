//! The request parameters upstream publishes, by operation.

/// JSON type of a parameter.
#[derive(Clone, Copy)]
pub(crate) enum ParamType {
    String,
    Integer,
    Boolean,
}

/// A path or query parameter.
#[derive(Clone)]
pub(crate) struct Param {
    pub(crate) name: &'static str,
    pub(crate) in_path: bool,
    pub(crate) ty: ParamType,
    pub(crate) description: String,
}

fn query(name: &'static str, ty: ParamType, description: &str) -> Param {
    Param {
        name,
        in_path: false,
        ty,
        description: description.to_owned(),
    }
}

use ParamType::{Boolean, Integer, String as Str};

pub(crate) fn namespace() -> Param {
    Param {
        name: "namespace",
        in_path: true,
        ty: Str,
        description: "object name and auth scope, such as for teams and projects".to_owned(),
    }
}

pub(crate) fn name(kind: &str) -> Param {
    Param {
        name: "name",
        in_path: true,
        ty: Str,
        description: format!("name of the {kind}"),
    }
}

pub(crate) fn pretty() -> Param {
    query(
        "pretty",
        Str,
        "If 'true', then the output is pretty printed.",
    )
}

fn dry_run() -> Param {
    query(
        "dryRun",
        Str,
        "When present, indicates that modifications should not be persisted. Valid values: All.",
    )
}

fn field_manager() -> Param {
    query(
        "fieldManager",
        Str,
        "Name of the actor or entity making these changes; required for apply patches.",
    )
}

fn field_validation() -> Param {
    query("fieldValidation", Str, "How to handle unknown or duplicate fields in the request body: Ignore, Warn (default) or Strict.")
}

/// Parameters of list and watch (and the selection part of deletecollection).
pub(crate) fn list() -> Vec<Param> {
    vec![
        query(
            "allowWatchBookmarks",
            Boolean,
            "Requests watch events of type BOOKMARK.",
        ),
        query(
            "continue",
            Str,
            "Continue token of a previous paginated list.",
        ),
        query(
            "fieldSelector",
            Str,
            "Restrict the returned objects by their fields.",
        ),
        query(
            "labelSelector",
            Str,
            "Restrict the returned objects by their labels.",
        ),
        query(
            "limit",
            Integer,
            "Maximum number of responses for a list call.",
        ),
        query(
            "resourceVersion",
            Str,
            "Constraint on the resource versions a request may be served from.",
        ),
        query(
            "resourceVersionMatch",
            Str,
            "How resourceVersion is applied: Exact or NotOlderThan.",
        ),
        query(
            "sendInitialEvents",
            Boolean,
            "Start a watch with synthetic events for the current state.",
        ),
        query(
            "timeoutSeconds",
            Integer,
            "Timeout for the list/watch call.",
        ),
        query(
            "watch",
            Boolean,
            "Watch for changes to the described resources.",
        ),
    ]
}

pub(crate) fn create() -> Vec<Param> {
    vec![dry_run(), field_manager(), field_validation()]
}

pub(crate) fn update() -> Vec<Param> {
    create()
}

pub(crate) fn patch() -> Vec<Param> {
    let mut params = create();
    params.push(query(
        "force",
        Boolean,
        "Re-acquire fields owned by other managers (apply patches only).",
    ));
    params
}

fn delete_options() -> Vec<Param> {
    vec![
        dry_run(),
        query(
            "gracePeriodSeconds",
            Integer,
            "Seconds before the object is deleted; zero means immediately.",
        ),
        query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            Boolean,
            "Delete corrupt objects that cannot be read.",
        ),
        query(
            "orphanDependents",
            Boolean,
            "Deprecated: use propagationPolicy.",
        ),
        query(
            "propagationPolicy",
            Str,
            "Garbage collection policy: Orphan, Background or Foreground.",
        ),
    ]
}

pub(crate) fn delete() -> Vec<Param> {
    delete_options()
}

pub(crate) fn delete_collection() -> Vec<Param> {
    let mut params: Vec<Param> = list()
        .into_iter()
        .filter(|p| !matches!(p.name, "allowWatchBookmarks" | "watch"))
        .chain(delete_options())
        .collect();
    params.sort_by_key(|p| p.name);
    params
}
