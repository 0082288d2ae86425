//! keel-tools: `loadgen`, a load generator for any Kubernetes API server and for etcd shaped
//! the way the upstream API server uses it, and `loadgen compare`, which measures keel and etcd
//! side by side in one run, and `keel-torture`, which kills a server under write load,
//! damages its files and checks every acknowledged write after the restart, and `keel-admin`
//! (`admin`): online snapshots, restore into a new data directory, and an offline check.
//!
//! Layers: `keel_client` (its own crate: kubeconfig, pooled HTTP/1.1 over rustls, watch
//! streams) -> `driver` (concurrency, pacing, latency histograms, progress) -> `kube::*` and
//! `etcd` (workloads) -> `cli` (subcommands) and `compare` (the side-by-side run). Pure logic
//! (object shapes, among them `widgets`, the custom resource and its CRD; gap/duplicate
//! accounting, report formatting) has no I/O and is unit-tested; workloads are tested against
//! a real keel in `tests/`.
//!
//! Dependencies: keel-client for every API request; keel-server only for the
//! `keel-apiserver-under-test` binary the tests start, its duration parser and the watch
//! pacing constants `keel-ceiling` imitates; keel-http for `keel-ceiling`; keel-engine for
//! `keel-admin`'s snapshot format, restore and check.
//!
//! Every buffer and count has a named bound in `limits`.

pub mod admin;
pub mod apfflood;
pub mod ceiling;
pub mod cli;
pub mod compare;
pub mod driver;
pub mod etcd;
pub mod jsonscan;
pub mod kube;
pub mod limits;
pub mod objects;
pub mod procstat;
pub mod report;
pub mod torture;
pub mod watchcheck;
pub mod watchrun;

/// User-Agent of the load generator's requests.
pub const USER_AGENT: &str = "keel-loadgen";

/// A client for the API server at `ep` keeping up to `pool` idle connections, sending
/// `USER_AGENT`.
pub fn kube_client(
    ep: &keel_client::kubeconfig::Endpoint,
    pool: usize,
) -> Result<keel_client::KubeClient, String> {
    keel_client::KubeClient::with_user_agent(ep, pool, USER_AGENT)
}
