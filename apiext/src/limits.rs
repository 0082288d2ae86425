//! Every bound this crate enforces, in one place.
//!
//! A CRD's schema was validated by the API (its size is bounded by the request body limit), but
//! objects and schemas are still client input: every recursion below is bounded so that a
//! deep document gives a value (a truncated walk or a compile error), never a stack overflow.

/// Nesting depth of a compiled schema (properties, items, additionalProperties, allOf/anyOf/
/// oneOf/not all count one level). Deeper schemas fail to compile. Upstream's CRD validation
/// bounds nothing here explicitly; a 3 MiB body can nest far deeper than any real schema.
pub const SCHEMA_DEPTH_MAX: usize = 128;
/// Schema nodes one compiled schema may hold. The largest real CRDs (e.g. Crossplane,
/// Prometheus Operator) have a few tens of thousands.
pub const SCHEMA_NODES_MAX: usize = 1 << 20;
/// Nesting depth of an object that pruning, defaulting, validation, comparison and rendering
/// descend into. Deeper parts are left as they are (prune, default), not validated further,
/// compared as unequal, or rendered as `null`. serde_json's parser already stops at 128 levels;
/// most walks follow the schema, whose depth is bounded by [`SCHEMA_DEPTH_MAX`].
pub const VALUE_DEPTH_MAX: usize = 256;
/// Validation errors one object collects at most (upstream has no bound; beyond this many the
/// request is rejected anyway and the response would only grow).
pub const ERRORS_MAX: usize = 1000;
/// Compiled size of one `pattern` regular expression.
pub const REGEX_BYTES_MAX: usize = 1 << 20;

const _: () = assert!(SCHEMA_DEPTH_MAX < VALUE_DEPTH_MAX);

/// Work one CEL rule run may do, in expression-node visits bounded beforehand (see
/// `celrules.rs`); upstream's per-call cost limit is 1,000,000 of its cost units.
pub const CEL_RULE_WORK_MAX: u64 = 1_000_000;
/// Work all CEL rule runs for one object may do; upstream's per-object runtime budget is
/// 10,000,000 cost units.
pub const CEL_OBJECT_WORK_MAX: u64 = 10_000_000;

const _: () = assert!(CEL_RULE_WORK_MAX <= CEL_OBJECT_WORK_MAX);
