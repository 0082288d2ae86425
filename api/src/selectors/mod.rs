//! Label selectors (`labelSelector=` and `metav1.LabelSelector`) and field selectors
//! (`fieldSelector=`), parsed, validated, printed and matched as upstream does.

mod fields;
mod labels;
mod lexer;

pub use fields::{escape_value, unescape_value, FieldSelector, FieldTerm};
pub use labels::{label_value, LabelSelector, Operator, Requirement};

/// Longest selector string accepted; longer ones are rejected before parsing.
pub const SELECTOR_LEN_MAX: usize = 64 * 1024;

#[cfg(test)]
mod tests;
