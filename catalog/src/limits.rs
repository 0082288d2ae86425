//! Every bound of the catalog, in one place.

/// Longest accepted `--runtime-config` value, in bytes.
pub const RUNTIME_CONFIG_BYTES_MAX: usize = 64 * 1024;

/// Most resources one snapshot serves (each group/version/resource counts once).
///
/// Why this size: the largest installations known have about 2,500 CRDs (Crossplane's full
/// AWS, Azure and GCP provider families), most with one or two served versions; 16,384 holds
/// that three times over. Measured at this bound (a CRD-like resource with a short name, a
/// category, status and scale; release build, shared 2-core VM): the aggregated `/apis`
/// document, which every kubectl run fetches, is 8.9 MB, and one change, which rebuilds
/// every document, takes 180 ms.
pub const SERVED_RESOURCES_MAX: usize = 16_384;

/// Most bytes the process-wide interner leaks for names known only at run time: the bytes of
/// every distinct string (group, version, kind, plural, singular, short name, category, verb,
/// subresource name) plus 16 bytes per element of every distinct list (verbs, short names,
/// categories). Each is leaked once, ever, so this is also the most memory names can take
/// however often resources come and go; the interner's own table adds about 40 bytes per
/// entry on top. When it is reached, additions that need new names fail with
/// `CatalogError::InternerFull`.
///
/// Why this size: a resource's names take about 100-250 bytes (a 30-byte group is shared by
/// its resources, versions by everyone), so [`SERVED_RESOURCES_MAX`] resources with distinct
/// names fit in 4 MiB; 8 MiB leaves as much again for names that were served once and
/// removed (CRDs renamed or deleted and recreated under other names).
pub const INTERNED_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Longest group name: a DNS subdomain.
pub const GROUP_BYTES_MAX: usize = 253;

/// Longest version, kind, plural, singular, short name, category, verb or subresource name:
/// a DNS label (upstream validates CRD names as DNS-1035 labels).
pub const NAME_BYTES_MAX: usize = 63;

/// Most verbs, short names, categories or subresources of one resource. Upstream has about
/// ten verbs and at most nine subresources (pods); a list longer than this is a mistake.
pub const NAMES_PER_LIST_MAX: usize = 64;

const _: () = assert!(GROUP_BYTES_MAX + 4 * NAME_BYTES_MAX < INTERNED_BYTES_MAX);

/// Longest JSONPath template a printer column may use, in bytes (`{` + `jsonPath` + `}`).
/// Upstream sets no bound; printer columns seen in practice are under 200 bytes, and a CRD
/// author with a longer one gets a parse error (the column is not shown), not a slow server.
pub const JSONPATH_TEMPLATE_BYTES_MAX: usize = 4 * 1024;

/// Most steps (fields, indexes, filters, literals) one JSONPath template parses into.
pub const JSONPATH_NODES_MAX: usize = 1024;

/// Deepest nesting of filters, unions and quoted keys inside one another in a JSONPath
/// template: the parser recurses once per level.
pub const JSONPATH_NESTING_MAX: usize = 16;

/// Most values one JSONPath step may produce (`..` over a large object, a wide `[*]`);
/// more is an evaluation error, which a printer column shows as an empty cell.
pub const JSONPATH_RESULTS_MAX: usize = 100_000;

const _: () = assert!(JSONPATH_NODES_MAX <= JSONPATH_TEMPLATE_BYTES_MAX);
