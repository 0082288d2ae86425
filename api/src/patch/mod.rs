//! The three PATCH formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
//! Kubernetes strategic merge patch, with upstream's error statuses.

mod json;
mod merge;
mod strategic;

pub use json::{json_patch, JSON_PATCH_COPY_BYTES_MAX, JSON_PATCH_OPERATIONS_MAX};
pub use merge::merge_patch;
pub use strategic::{strategic_merge_patch, ListStrategy, MergeMeta};

#[cfg(test)]
mod tests;
