//! keel-tools: `loadgen`, a load generator for any Kubernetes API server and for etcd shaped
//! the way the upstream API server uses it, and `loadgen compare`, which measures keel and etcd
//! side by side in one run.
//!
//! Layers: `kubeconfig` (connection settings) -> `client` (pooled HTTP/1.1 over rustls) ->
//! `driver` (concurrency, pacing, latency histograms, progress) -> `kube::*` and `etcd`
//! (workloads) -> `cli` (subcommands) and `compare` (the side-by-side run). Pure logic
//! (kubeconfig resolution, object shapes, gap/duplicate accounting, report formatting) has no
//! I/O and is unit-tested; workloads are tested against a real keel in `tests/`.
//!
//! Every buffer and count has a named bound in `limits`.

pub mod ceiling;
pub mod cli;
pub mod client;
pub mod compare;
pub mod driver;
pub mod etcd;
pub mod jsonscan;
pub mod kube;
pub mod kubeconfig;
pub mod limits;
pub mod objects;
pub mod procstat;
pub mod report;
pub mod watchcheck;
pub mod watchrun;
