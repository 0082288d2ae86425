//! keel-benches: the benchmark harness for `keel-engine` (binary `engine-bench`).
//!
//! Everything runs in process against a store in a temporary directory. See `README.md`
//! for the scenarios, how each is measured and the targets.

pub mod alloc;
pub mod backend;
pub mod hist;
pub mod report;
pub mod scenarios;
pub mod sys;
