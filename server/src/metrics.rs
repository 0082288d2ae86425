//! `/metrics` in the Prometheus text format: requests by verb, resource and code, latency
//! histograms, stored objects and open watches, named as upstream's apiserver metrics.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Latency buckets (seconds), as upstream's `apiserver_request_duration_seconds`.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];
/// Distinct label sets kept; beyond it new series are folded into `resource="other"`.
pub const SERIES_MAX: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Series {
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    code: u16,
}

#[derive(Default)]
struct Hist {
    count: u64,
    sum: f64,
    buckets: Vec<u64>,
}

/// Open watches per (group, resource).
type WatchGauges = BTreeMap<(String, String), Arc<AtomicI64>>;
/// Request histograms merged over response codes.
type Merged =
    BTreeMap<(String, String, String, String, String, &'static str), (u64, f64, Vec<u64>)>;

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<Series, Hist>>,
    watches: Arc<Mutex<WatchGauges>>,
}

/// Decrements the open-watch gauge when the stream ends.
pub struct WatchGuard(Arc<AtomicI64>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What one finished request is recorded as.
pub struct RequestLabels<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub scope: &'static str,
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

impl Metrics {
    pub fn observe(&self, l: &RequestLabels<'_>, code: u16, took: Duration) {
        let mut s = Series {
            verb: reported_verb(l.verb).into(),
            group: l.group.into(),
            version: l.version.into(),
            resource: l.resource.into(),
            subresource: l.subresource.into(),
            scope: l.scope,
            code,
        };
        let mut map = self.requests.lock();
        if map.len() >= SERIES_MAX && !map.contains_key(&s) {
            s.resource = "other".into();
            s.subresource.clear();
        }
        let h = map.entry(s).or_insert_with(|| Hist {
            buckets: vec![0; LATENCY_BUCKETS.len()],
            ..Default::default()
        });
        let secs = took.as_secs_f64();
        h.count += 1;
        h.sum += secs;
        for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
            if secs <= *b {
                h.buckets[i] += 1;
            }
        }
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
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        let map = self.requests.lock();
        for (s, h) in map.iter() {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{}\",component=\"apiserver\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"}} {}",
                s.code, s.group, s.resource, s.scope, s.subresource, s.verb, s.version, h.count
            );
        }
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        let mut merged: Merged = BTreeMap::new();
        for (s, h) in map.iter() {
            let e = merged
                .entry((
                    s.verb.clone(),
                    s.group.clone(),
                    s.version.clone(),
                    s.resource.clone(),
                    s.subresource.clone(),
                    s.scope,
                ))
                .or_insert_with(|| (0, 0.0, vec![0; LATENCY_BUCKETS.len()]));
            e.0 += h.count;
            e.1 += h.sum;
            for (i, b) in h.buckets.iter().enumerate() {
                e.2[i] += b;
            }
        }
        drop(map);
        for ((verb, group, version, resource, sub, scope), (count, sum, buckets)) in merged {
            let labels = format!("component=\"apiserver\",group=\"{group}\",resource=\"{resource}\",scope=\"{scope}\",subresource=\"{sub}\",verb=\"{verb}\",version=\"{version}\"");
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
        out.push_str("# HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind.\n# TYPE apiserver_storage_objects gauge\n");
        for (group, resource, n) in objects {
            let name = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            let _ = writeln!(out, "apiserver_storage_objects{{resource=\"{name}\"}} {n}");
        }
        out.push_str("# HELP apiserver_longrunning_requests Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component.\n# TYPE apiserver_longrunning_requests gauge\n");
        for ((group, resource), g) in self.watches.lock().iter() {
            let _ = writeln!(
                out,
                "apiserver_longrunning_requests{{component=\"apiserver\",group=\"{group}\",resource=\"{resource}\",scope=\"resource\",subresource=\"\",verb=\"WATCH\"}} {}",
                g.load(Ordering::Relaxed)
            );
        }
        out
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
    fn counts_and_gauges() {
        let m = Metrics::default();
        let l = RequestLabels {
            verb: "get",
            group: "",
            version: "v1",
            resource: "pods",
            subresource: "",
            scope: "resource",
        };
        m.observe(&l, 200, Duration::from_millis(3));
        m.observe(&l, 404, Duration::from_millis(30));
        let g = m.watch_opened("", "pods");
        let text = m.render(&[("".into(), "pods".into(), 7)]);
        assert!(text.contains("apiserver_request_total{code=\"200\",component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"} 1"), "{text}");
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("apiserver_request_duration_seconds_count{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"} 2"));
        assert!(text.contains("apiserver_storage_objects{resource=\"pods\"} 7"));
        assert!(text.contains("verb=\"WATCH\"} 1"));
        drop(g);
        assert!(m.render(&[]).contains("verb=\"WATCH\"} 0"));
    }
}
