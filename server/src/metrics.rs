//! `/metrics` in the Prometheus text format: requests by verb, resource and code, latency
//! histograms, stored objects and open watches, named as upstream's apiserver metrics.

use crate::limits::{METRIC_SERIES_MAX as SERIES_MAX, METRIC_SLOTS as SLOTS};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Latency buckets (seconds), as upstream's `apiserver_request_duration_seconds`.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Series {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    dry_run: &'static str,
    system_client: &'static str,
    code: u16,
}

impl Series {
    fn of(l: &RequestLabels<'_>, code: u16) -> Series {
        Series {
            verb: reported_verb(l.verb),
            group: l.group.into(),
            version: l.version.into(),
            resource: l.resource.into(),
            subresource: l.subresource.into(),
            scope: l.scope,
            dry_run: l.dry_run,
            system_client: l.system_client,
            code,
        }
    }

    fn matches(&self, l: &RequestLabels<'_>, code: u16) -> bool {
        self.code == code
            && self.resource == l.resource
            && self.verb == reported_verb(l.verb)
            && self.subresource == l.subresource
            && self.version == l.version
            && self.group == l.group
            && self.scope == l.scope
            && self.dry_run == l.dry_run
            && self.system_client == l.system_client
    }
}

#[derive(Clone)]
struct Hist {
    count: u64,
    sum: f64,
    buckets: [u64; LATENCY_BUCKETS.len()],
}

impl Hist {
    fn new() -> Hist {
        Hist {
            count: 0,
            sum: 0.0,
            buckets: [0; LATENCY_BUCKETS.len()],
        }
    }

    fn add(&mut self, secs: f64) {
        self.count += 1;
        self.sum += secs;
        for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.buckets[i] += 1;
            }
        }
    }

    fn merge(&mut self, o: &Hist) {
        self.count += o.count;
        self.sum += o.sum;
        for (a, b) in self.buckets.iter_mut().zip(o.buckets.iter()) {
            *a += b;
        }
    }
}

/// Open watches per (group, resource).
type WatchGauges = BTreeMap<(String, String), Arc<AtomicI64>>;
/// Request histograms merged over response codes.
type Merged = BTreeMap<
    (
        &'static str,
        &'static str,
        String,
        String,
        String,
        String,
        &'static str,
    ),
    Hist,
>;

/// One slot's series, bucketed by a hash of their labels.
#[derive(Default)]
struct Slot {
    series: HashMap<u64, Vec<(Series, Hist)>, foldhash::fast::RandomState>,
}

impl Slot {
    /// Adds an observation to the series of `l` and `code` if the slot has it.
    fn add(&mut self, l: &RequestLabels<'_>, code: u16, secs: f64) -> bool {
        let bucket = self.series.get_mut(&label_hash(l, code));
        match bucket.and_then(|b| b.iter_mut().find(|(s, _)| s.matches(l, code))) {
            Some((_, h)) => {
                h.add(secs);
                true
            }
            None => false,
        }
    }

    /// Starts the series of `l` and `code` with one observation.
    fn insert(&mut self, l: &RequestLabels<'_>, code: u16, secs: f64) {
        let mut h = Hist::new();
        h.add(secs);
        self.series
            .entry(label_hash(l, code))
            .or_default()
            .push((Series::of(l, code), h));
    }
}

/// (group, version, resource, subresource, removed release) of a deprecated API requested.
type DeprecatedApi = (String, String, String, String, String);

pub struct Metrics {
    slots: Vec<Mutex<Slot>>,
    /// Distinct series over all slots (bounded by `SERIES_MAX`).
    series: AtomicUsize,
    watches: Arc<Mutex<WatchGauges>>,
    /// Deprecated APIs requested since start: (group, version, resource, subresource,
    /// removed release). Bounded by the deprecated resources and their subresources.
    deprecated: Mutex<BTreeSet<DeprecatedApi>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            slots: (0..SLOTS).map(|_| Mutex::new(Slot::default())).collect(),
            series: AtomicUsize::new(0),
            watches: Arc::default(),
            deprecated: Mutex::default(),
        }
    }
}

/// Decrements the open-watch gauge when the stream ends.
pub struct WatchGuard(Arc<AtomicI64>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What one finished request is recorded as.
#[derive(Clone, Copy)]
pub struct RequestLabels<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub scope: &'static str,
    /// The request's `dryRun` values as upstream reports them ([`dry_run_label`]).
    pub dry_run: &'static str,
    /// The component that sent it, for upstream's own ([`system_client`]).
    pub system_client: &'static str,
}

/// The `dry_run` label: empty without `dryRun`, `All` for `dryRun=All` (however often
/// given), `invalid` for anything else (the request is refused too), as upstream's.
pub fn dry_run_label(values: &[String]) -> &'static str {
    match values {
        [] => "",
        v if v.iter().all(|x| x == "All") => "All",
        _ => "invalid",
    }
}

/// The `system_client` label: the User-Agent's program when it is one of upstream's own
/// control-plane components, else empty.
pub fn system_client(user_agent: Option<&str>) -> &'static str {
    let program = user_agent
        .and_then(|ua| ua.split_once('/'))
        .map_or("", |(p, _)| p);
    match program {
        "kube-apiserver" => "kube-apiserver",
        "kube-controller-manager" => "kube-controller-manager",
        "kube-scheduler" => "kube-scheduler",
        _ => "",
    }
}

/// The `verb` label as upstream reports it: the route's action (`POST`, `PUT`, `LIST`...).
pub fn reported_verb(verb: &str) -> &'static str {
    match verb {
        "get" => "GET",
        "list" => "LIST",
        "watch" => "WATCH",
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        _ => "UNKNOWN",
    }
}

/// This thread's slot index.
fn slot_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    }
    SLOT.with(|s| *s)
}

fn label_hash(l: &RequestLabels<'_>, code: u16) -> u64 {
    use std::hash::BuildHasher;
    static SEED: std::sync::OnceLock<foldhash::fast::RandomState> = std::sync::OnceLock::new();
    SEED.get_or_init(Default::default).hash_one((
        l.verb,
        l.group,
        l.version,
        l.resource,
        l.subresource,
        l.scope,
        l.dry_run,
        l.system_client,
        code,
    ))
}

impl Metrics {
    pub fn observe(&self, l: &RequestLabels<'_>, code: u16, took: Duration) {
        let secs = took.as_secs_f64();
        let mut slot = self.slots[slot_index()].lock();
        if slot.add(l, code, secs) {
            return;
        }
        if self.series.fetch_add(1, Ordering::Relaxed) >= SERIES_MAX {
            self.series.fetch_sub(1, Ordering::Relaxed);
            // Filed under the folded labels themselves, so every label set beyond the bound
            // shares one series (per slot) instead of adding its own.
            let other = RequestLabels {
                resource: "other",
                subresource: "",
                ..*l
            };
            if !slot.add(&other, code, secs) {
                slot.insert(&other, code, secs);
            }
            return;
        }
        slot.insert(l, code, secs);
    }

    /// Every series, merged over the slots.
    fn snapshot(&self) -> BTreeMap<Series, Hist> {
        let mut all: BTreeMap<Series, Hist> = BTreeMap::new();
        for slot in &self.slots {
            for (s, h) in slot.lock().series.values().flatten() {
                all.entry(s.clone())
                    .and_modify(|a| a.merge(h))
                    .or_insert_with(|| h.clone());
            }
        }
        all
    }

    /// Records a request to a deprecated API.
    pub fn requested_deprecated(
        &self,
        info: &keel_catalog::ResourceInfo,
        subresource: &str,
        removed_release: Option<&str>,
    ) {
        let key = (
            info.group.to_owned(),
            info.version.to_owned(),
            info.plural.to_owned(),
            subresource.to_owned(),
            removed_release.unwrap_or("").to_owned(),
        );
        self.deprecated.lock().insert(key);
    }

    pub fn watch_opened(&self, group: &str, resource: &str) -> WatchGuard {
        let g = self
            .watches
            .lock()
            .entry((group.to_string(), resource.to_string()))
            .or_default()
            .clone();
        g.fetch_add(1, Ordering::Relaxed);
        WatchGuard(g)
    }

    /// Renders every metric. `objects` gives stored object counts per (group, resource).
    pub fn render(&self, objects: &[(String, String, u64)]) -> String {
        let mut out = String::new();
        out.push_str("# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        let map = self.snapshot();
        for (s, h) in map.iter() {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{}\",component=\"apiserver\",dry_run=\"{}\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",system_client=\"{}\",verb=\"{}\",version=\"{}\"}} {}",
                s.code,
                s.dry_run,
                s.group,
                s.resource,
                s.scope,
                s.subresource,
                s.system_client,
                s.verb,
                s.version,
                h.count
            );
        }
        out.push_str("# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        let mut merged: Merged = BTreeMap::new();
        for (s, h) in map.iter() {
            merged
                .entry((
                    s.verb,
                    s.dry_run,
                    s.group.clone(),
                    s.version.clone(),
                    s.resource.clone(),
                    s.subresource.clone(),
                    s.scope,
                ))
                .and_modify(|m| m.merge(h))
                .or_insert_with(|| h.clone());
        }
        for ((verb, dry_run, group, version, resource, sub, scope), h) in merged {
            let (count, sum, buckets) = (h.count, h.sum, h.buckets);
            let labels = format!("component=\"apiserver\",dry_run=\"{dry_run}\",group=\"{group}\",resource=\"{resource}\",scope=\"{scope}\",subresource=\"{sub}\",verb=\"{verb}\",version=\"{version}\"");
            for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} {}",
                    buckets[i]
                );
            }
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_sum{{{labels}}} {sum}"
            );
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_count{{{labels}}} {count}"
            );
        }
        out.push_str("# HELP apiserver_storage_objects [STABLE] (Deprecated since 1.34.0) [DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.\n# TYPE apiserver_storage_objects gauge\n");
        for (group, resource, n) in objects {
            let name = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            let _ = writeln!(out, "apiserver_storage_objects{{resource=\"{name}\"}} {n}");
        }
        out.push_str("# HELP apiserver_resource_objects [ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.\n# TYPE apiserver_resource_objects gauge\n");
        for (group, resource, n) in objects {
            let _ = writeln!(
                out,
                "apiserver_resource_objects{{group=\"{group}\",resource=\"{resource}\"}} {n}"
            );
        }
        out.push_str("# HELP apiserver_longrunning_requests [STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.\n# TYPE apiserver_longrunning_requests gauge\n");
        for ((group, resource), g) in self.watches.lock().iter() {
            let _ = writeln!(
                out,
                "apiserver_longrunning_requests{{component=\"apiserver\",group=\"{group}\",resource=\"{resource}\",scope=\"resource\",subresource=\"\",verb=\"WATCH\"}} {}",
                g.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP apiserver_requested_deprecated_apis [STABLE] Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.\n# TYPE apiserver_requested_deprecated_apis gauge\n");
        for (group, version, resource, sub, removed) in self.deprecated.lock().iter() {
            let _ = writeln!(
                out,
                "apiserver_requested_deprecated_apis{{group=\"{group}\",removed_release=\"{removed}\",resource=\"{resource}\",subresource=\"{sub}\",version=\"{version}\"}} 1"
            );
        }
        crate::storage::encryption::render_metrics(&mut out);
        out
    }
}

/// `text` without the metrics named in `disabled` (`--disabled-metrics`): their HELP and
/// TYPE lines and samples (a histogram's `_bucket`, `_sum` and `_count` too).
pub fn without_disabled(text: String, disabled: &[String]) -> String {
    if disabled.is_empty() {
        return text;
    }
    let of = |line: &str, name: &str| {
        let rest = line
            .strip_prefix("# HELP ")
            .or_else(|| line.strip_prefix("# TYPE "))
            .unwrap_or(line);
        let Some(after) = rest.strip_prefix(name) else {
            return false;
        };
        let after = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| after.strip_prefix(s))
            .unwrap_or(after);
        after.starts_with(['{', ' '])
    };
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if !disabled.iter().any(|d| of(line, d)) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Appends keel's own storage metrics (the embedded engine's counters) to `out`.
pub fn render_store(out: &mut String, st: &keel_engine::Stats) {
    let metrics: [(&str, &str, &str, u64); 8] = [
        (
            "keel_storage_revision",
            "gauge",
            "Newest visible resource version.",
            st.revision.get(),
        ),
        (
            "keel_storage_compacted_revision",
            "gauge",
            "Revision below which history has been compacted.",
            st.compacted.get(),
        ),
        (
            "keel_storage_keys",
            "gauge",
            "Live keys in the store.",
            st.keys,
        ),
        (
            "keel_storage_versions",
            "gauge",
            "Versions held in the index, history included.",
            st.versions,
        ),
        (
            "keel_storage_segment_bytes",
            "gauge",
            "Bytes of segment files on disk.",
            st.segment_bytes,
        ),
        (
            "keel_storage_batches_written_total",
            "counter",
            "Write batches (group commits) written since start.",
            st.batches_written,
        ),
        (
            "keel_storage_syncs_total",
            "counter",
            "fdatasync calls since start.",
            st.syncs,
        ),
        (
            "keel_storage_bytes_written_total",
            "counter",
            "Bytes written by batches since start.",
            st.bytes_written,
        ),
    ];
    for (name, kind, help, v) in metrics {
        let _ = writeln!(
            out,
            "# HELP {name} [ALPHA] {help}\n# TYPE {name} {kind}\n{name} {v}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP keel_storage_watchers [ALPHA] Open engine watchers.\n# TYPE keel_storage_watchers gauge\nkeel_storage_watchers {}",
        st.watchers
    );
}

/// Appends priority and fairness's metrics (`apiserver_flowcontrol_*`, upstream's names and
/// labels) to `out`.
pub fn render_flowcontrol(out: &mut String, s: &crate::flowcontrol::Snapshot) {
    use crate::flowcontrol::WAIT_BUCKETS;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    out.push_str("# HELP apiserver_flowcontrol_rejected_requests_total [BETA] Number of requests rejected by API Priority and Fairness subsystem\n# TYPE apiserver_flowcontrol_rejected_requests_total counter\n");
    for (fs, pl, st) in &s.schemas {
        for (i, reason) in ["queue-full", "concurrency-limit", "time-out"]
            .iter()
            .enumerate()
        {
            let n = load(&st.rejected[i]);
            if n > 0 {
                let _ = writeln!(out, "apiserver_flowcontrol_rejected_requests_total{{flow_schema=\"{fs}\",priority_level=\"{pl}\",reason=\"{reason}\"}} {n}");
            }
        }
    }
    out.push_str("# HELP apiserver_flowcontrol_dispatched_requests_total [BETA] Number of requests executed by API Priority and Fairness subsystem\n# TYPE apiserver_flowcontrol_dispatched_requests_total counter\n");
    for (fs, pl, st) in &s.schemas {
        let _ = writeln!(out, "apiserver_flowcontrol_dispatched_requests_total{{flow_schema=\"{fs}\",priority_level=\"{pl}\"}} {}", load(&st.dispatched));
    }
    out.push_str("# HELP apiserver_flowcontrol_current_inqueue_requests [BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem\n# TYPE apiserver_flowcontrol_current_inqueue_requests gauge\n");
    for (fs, pl, st) in &s.schemas {
        let _ = writeln!(out, "apiserver_flowcontrol_current_inqueue_requests{{flow_schema=\"{fs}\",priority_level=\"{pl}\"}} {}", st.inqueue.load(Ordering::Relaxed));
    }
    out.push_str("# HELP apiserver_flowcontrol_current_executing_requests [BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem\n# TYPE apiserver_flowcontrol_current_executing_requests gauge\n");
    for (fs, pl, st) in &s.schemas {
        let _ = writeln!(out, "apiserver_flowcontrol_current_executing_requests{{flow_schema=\"{fs}\",priority_level=\"{pl}\"}} {}", st.executing.load(Ordering::Relaxed));
    }
    out.push_str("# HELP apiserver_flowcontrol_current_executing_seats [BETA] Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem\n# TYPE apiserver_flowcontrol_current_executing_seats gauge\n");
    for (fs, pl, st) in &s.schemas {
        let _ = writeln!(out, "apiserver_flowcontrol_current_executing_seats{{flow_schema=\"{fs}\",priority_level=\"{pl}\"}} {}", st.executing_seats.load(Ordering::Relaxed));
    }
    out.push_str("# HELP apiserver_flowcontrol_request_wait_duration_seconds [BETA] Length of time a request spent waiting in its queue\n# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram\n");
    for (fs, pl, st) in &s.schemas {
        let labels = format!("execute=\"true\",flow_schema=\"{fs}\",priority_level=\"{pl}\"");
        let mut cumulative = 0;
        for (i, b) in WAIT_BUCKETS.iter().enumerate() {
            cumulative += load(&st.wait_buckets[i]);
            let _ = writeln!(out, "apiserver_flowcontrol_request_wait_duration_seconds_bucket{{{labels},le=\"{b}\"}} {cumulative}");
        }
        let count = load(&st.wait_count);
        let _ = writeln!(out, "apiserver_flowcontrol_request_wait_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_request_wait_duration_seconds_sum{{{labels}}} {}",
            load(&st.wait_sum_micros) as f64 / 1e6
        );
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_request_wait_duration_seconds_count{{{labels}}} {count}"
        );
    }
    out.push_str("# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats configured for each priority level\n# TYPE apiserver_flowcontrol_nominal_limit_seats gauge\n");
    for (pl, n) in &s.levels {
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{pl}\"}} {n}"
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn verbs_are_reported_as_upstream_actions() {
        for (verb, reported) in [
            ("get", "GET"),
            ("list", "LIST"),
            ("watch", "WATCH"),
            ("create", "POST"),
            ("update", "PUT"),
            ("patch", "PATCH"),
            ("delete", "DELETE"),
            ("deletecollection", "DELETECOLLECTION"),
            ("connect", "UNKNOWN"),
        ] {
            assert_eq!(reported_verb(verb), reported);
        }
    }

    use super::*;

    #[test]
    fn dry_run_and_system_client_labels_as_upstream() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(dry_run_label(&[]), "");
        assert_eq!(dry_run_label(&s(&["All"])), "All");
        assert_eq!(dry_run_label(&s(&["All", "All"])), "All");
        assert_eq!(dry_run_label(&s(&["All", "x"])), "invalid");
        assert_eq!(dry_run_label(&s(&[""])), "invalid");
        for (ua, want) in [
            (
                Some("kube-controller-manager/v1.36.2 (linux/amd64) kubernetes/abc"),
                "kube-controller-manager",
            ),
            (Some("kube-scheduler/v1.36.2"), "kube-scheduler"),
            (Some("kube-apiserver/v1.36.2"), "kube-apiserver"),
            (Some("kubectl/v1.32.0 (linux/amd64)"), ""),
            (Some("kube-scheduler"), ""),
            (None, ""),
        ] {
            assert_eq!(system_client(ua), want, "{ua:?}");
        }
        let m = Metrics::default();
        let l = RequestLabels {
            verb: "create",
            group: "",
            version: "v1",
            resource: "configmaps",
            subresource: "",
            scope: "resource",
            dry_run: "All",
            system_client: "kube-scheduler",
        };
        m.observe(&l, 201, Duration::from_millis(3));
        let text = m.render(&[]);
        assert!(text.contains("apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"All\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",system_client=\"kube-scheduler\",verb=\"POST\",version=\"v1\"} 1"), "{text}");
        assert!(text.contains("apiserver_request_duration_seconds_count{component=\"apiserver\",dry_run=\"All\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 1"), "{text}");
    }

    #[test]
    fn counts_and_gauges() {
        let m = Metrics::default();
        let l = RequestLabels {
            verb: "get",
            group: "",
            version: "v1",
            resource: "pods",
            subresource: "",
            scope: "resource",
            dry_run: "",
            system_client: "",
        };
        m.observe(&l, 200, Duration::from_millis(3));
        m.observe(&l, 404, Duration::from_millis(30));
        let g = m.watch_opened("", "pods");
        let text = m.render(&[("".into(), "pods".into(), 7)]);
        assert!(text.contains("apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",system_client=\"\",verb=\"GET\",version=\"v1\"} 1"), "{text}");
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("apiserver_request_duration_seconds_count{component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"} 2"));
        assert!(text.contains("apiserver_storage_objects{resource=\"pods\"} 7"));
        assert!(text.contains("verb=\"WATCH\"} 1"));
        drop(g);
        assert!(m.render(&[]).contains("verb=\"WATCH\"} 0"));
    }

    #[test]
    fn series_from_many_threads_are_merged() {
        let m = Arc::new(Metrics::default());
        let threads: Vec<_> = (0..SLOTS + 3)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    let l = RequestLabels {
                        verb: "create",
                        group: "apps",
                        version: "v1",
                        resource: "deployments",
                        subresource: "",
                        scope: "resource",
                        dry_run: "",
                        system_client: "",
                    };
                    m.observe(&l, 201, Duration::from_millis(1));
                    m.observe(&l, 201, Duration::from_secs(2));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = m.render(&[]);
        let n = 2 * (SLOTS + 3);
        assert!(text.contains(&format!("code=\"201\",component=\"apiserver\",dry_run=\"\",group=\"apps\",resource=\"deployments\",scope=\"resource\",subresource=\"\",system_client=\"\",verb=\"POST\",version=\"v1\"}} {n}")), "{text}");
        assert!(
            text.contains(&format!(
                "verb=\"POST\",version=\"v1\",le=\"0.005\"}} {}",
                n / 2
            )),
            "{text}"
        );
        assert!(text.contains(&format!("verb=\"POST\",version=\"v1\"}} {n}")));
    }

    #[test]
    fn series_beyond_the_bound_fold_into_other() {
        let m = Metrics::default();
        for i in 0..SERIES_MAX + 5 {
            let resource = format!("r{i}");
            let l = RequestLabels {
                verb: "get",
                group: "example.com",
                version: "v1",
                resource: &resource,
                subresource: "status",
                scope: "resource",
                dry_run: "",
                system_client: "",
            };
            m.observe(&l, 404, Duration::from_millis(1));
        }
        assert_eq!(m.series.load(Ordering::Relaxed), SERIES_MAX);
        // The five label sets beyond the bound share one folded series.
        let held: usize = m
            .slots
            .iter()
            .map(|s| s.lock().series.values().map(Vec::len).sum::<usize>())
            .sum();
        assert_eq!(held, SERIES_MAX + 1);
        let text = m.render(&[]);
        assert!(text.contains("group=\"example.com\",resource=\"other\",scope=\"resource\",subresource=\"\",system_client=\"\",verb=\"GET\",version=\"v1\"} 5"), "folded series missing");
    }
    /// The wait histogram counts each request once and renders cumulative buckets; the
    /// executing seats are rendered per schema.
    #[test]
    fn flowcontrol_wait_histogram_is_cumulative() {
        use std::time::Duration;
        let st = std::sync::Arc::new(crate::flowcontrol::SchemaStats::default());
        for ms in [0, 3, 30, 100_000] {
            st.waited(Duration::from_millis(ms));
        }
        st.executing_seats.store(4, Ordering::Relaxed);
        let snap = crate::flowcontrol::Snapshot {
            schemas: vec![("fs".into(), "pl".into(), st)],
            levels: vec![("pl".into(), 10)],
        };
        let mut out = String::new();
        render_flowcontrol(&mut out, &snap);
        let bucket = |le: &str| {
            let prefix = format!("apiserver_flowcontrol_request_wait_duration_seconds_bucket{{execute=\"true\",flow_schema=\"fs\",priority_level=\"pl\",le=\"{le}\"}} ");
            out.lines()
                .find_map(|l| l.strip_prefix(prefix.as_str()))
                .unwrap_or_else(|| panic!("no bucket {le}:\n{out}"))
                .to_string()
        };
        assert_eq!(bucket("0"), "1");
        assert_eq!(bucket("0.005"), "2");
        assert_eq!(bucket("0.02"), "2");
        assert_eq!(bucket("0.05"), "3");
        assert_eq!(bucket("30"), "3");
        assert_eq!(bucket("+Inf"), "4");
        assert!(out.contains("apiserver_flowcontrol_current_executing_seats{flow_schema=\"fs\",priority_level=\"pl\"} 4"));
    }
}
