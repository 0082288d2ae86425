//! Many concurrent watches of one collection (the shared per-core feed):
//! every watcher gets every event exactly once and in order, with the same bytes as a
//! selector watch matching everything sends for the same event; watches with different
//! selectors and representations on the same feed each get their own view of the changes.

mod common;

use common::Server;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// Watchers opened at once.
const WATCHERS: usize = 24;
/// Objects created while they watch.
const OBJECTS: usize = 40;

/// Runs `n` watches of `path` (its query must carry `timeoutSeconds`) while `act` runs;
/// returns each one's events once the server ends it.
fn watch_during(s: &'static Server, paths: &[String], act: impl FnOnce()) -> Vec<Vec<Value>> {
    let threads: Vec<_> = paths
        .iter()
        .cloned()
        .map(|p| std::thread::spawn(move || s.get(&p)))
        .collect();
    act();
    threads
        .into_iter()
        .map(|t| {
            let r = t.join().unwrap();
            assert_eq!(r.status, 200, "{}", r.text());
            assert_eq!(r.header("transfer-encoding"), Some("chunked"));
            json_events(&r.text())
        })
        .collect()
}

/// The events of a JSON watch stream, one per line.
fn json_events(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

static SERVER: OnceLock<Server> = OnceLock::new();

fn server() -> &'static Server {
    SERVER.get_or_init(|| Server::start(&[]))
}

fn list_rv(s: &Server, ns: &str) -> String {
    let r = s.get(&cms(ns));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

fn cms(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

fn rv_of(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

fn summary(events: &[Value]) -> Vec<(String, String, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                e["object"]["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn every_watcher_gets_every_event_once_in_order() {
    let s = server();
    let ns = s.namespace("fanout");
    let rv = list_rv(s, &ns);
    let plain = format!("{}?watch=1&resourceVersion={rv}&timeoutSeconds=8", cms(&ns));
    let mut paths = vec![plain.clone(); WATCHERS];
    // A selector matching everything: the feed's selective path (parsed, tested, typed).
    paths.push(format!("{plain}&labelSelector=app%3Dfan"));
    let mut want = Vec::new();
    let mut watches = watch_during(s, &paths, || {
        for i in 0..OBJECTS {
            let body = json!({"metadata": {"name": format!("cm-{i}"), "labels": {"app": "fan"}},
                              "data": {"i": i.to_string()}});
            let r = s.send_json("POST", &cms(&ns), &body);
            assert_eq!(r.status, 201, "{}", r.text());
            want.push(("ADDED".to_string(), format!("cm-{i}"), rv_of(&r.json())));
        }
        let r = s.send_json(
            "PATCH",
            &format!("{}/cm-0", cms(&ns)),
            &json!({"data": {"i": "patched"}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        want.push(("MODIFIED".into(), "cm-0".into(), rv_of(&r.json())));
        let r = s.http("DELETE", &format!("{}/cm-1", cms(&ns)), &[], None);
        assert_eq!(r.status, 200, "{}", r.text());
        // The deletion's revision is only known from the events.
        want.push(("DELETED".into(), "cm-1".into(), String::new()));
    });
    let reference = watches.pop().unwrap();
    let got = summary(&reference);
    assert_eq!(got.len(), want.len(), "{got:?}");
    let n = want.len();
    assert!(got[n - 1].2.parse::<u64>().unwrap() > want[n - 2].2.parse::<u64>().unwrap());
    want[n - 1].2 = got[n - 1].2.clone();
    assert_eq!(got, want);
    for (i, events) in watches.iter().enumerate() {
        assert_eq!(summary(events), want, "watcher {i}");
        assert_eq!(
            events, &reference,
            "watcher {i}: same bytes as the selector watch"
        );
    }
}

#[test]
fn watchers_joining_later_start_at_their_own_revision() {
    let s = server();
    let ns = s.namespace("fanout-join");
    let first_rv = list_rv(s, &ns);
    let path = |rv: &str| format!("{}?watch=1&resourceVersion={rv}&timeoutSeconds=6", cms(&ns));
    let mut rvs = Vec::new();
    let mut late = Vec::new();
    let early = watch_during(s, &[path(&first_rv)], || {
        for i in 0..6 {
            let r = s.send_json(
                "POST",
                &cms(&ns),
                &json!({"metadata": {"name": format!("j-{i}")}}),
            );
            assert_eq!(r.status, 201);
            rvs.push(rv_of(&r.json()));
        }
        // Starts while the feed runs, in the middle of what it already holds.
        late = watch_during(s, &[path(&rvs[2])], || {
            let r = s.send_json("POST", &cms(&ns), &json!({"metadata": {"name": "j-6"}}));
            assert_eq!(r.status, 201);
            rvs.push(rv_of(&r.json()));
        });
    });
    let revs = |events: &[Value]| -> Vec<String> {
        summary(events).into_iter().map(|(_, _, rv)| rv).collect()
    };
    assert_eq!(revs(&early[0]), rvs);
    assert_eq!(revs(&late[0]), rvs[3..]);
}

#[test]
fn selective_watchers_joining_later_read_what_the_feed_holds_for_them() {
    let s = server();
    let ns = s.namespace("fanout-join-sel");
    let first_rv = list_rv(s, &ns);
    let path = |rv: &str, sel: &str| {
        format!(
            "{}?watch=1&resourceVersion={rv}&timeoutSeconds=6{sel}",
            cms(&ns)
        )
    };
    let mut rvs = Vec::new();
    let mut late = Vec::new();
    let create = |i: usize| {
        let tier = if i.is_multiple_of(2) { "web" } else { "db" };
        let body = json!({"metadata": {"name": format!("s-{i}"), "labels": {"tier": tier}}});
        let r = s.send_json("POST", &cms(&ns), &body);
        assert_eq!(r.status, 201);
        rv_of(&r.json())
    };
    // Live watches (on either core) keep the feeds running and holding these lines.
    let live = [path(&first_rv, ""), path(&first_rv, "")];
    watch_during(s, &live, || {
        for i in 0..8 {
            rvs.push(create(i));
        }
        // Start in the middle of what the feeds hold, selecting by label and by name.
        let late_paths = [
            path(&rvs[2], "&labelSelector=tier%3Dweb"),
            path(&rvs[2], "&labelSelector=tier%3Ddb"),
            path(&rvs[2], "&fieldSelector=metadata.name%3Ds-5"),
        ];
        late = watch_during(s, &late_paths, || rvs.push(create(8)));
    });
    let names = |events: &[Value]| -> Vec<String> {
        summary(events).into_iter().map(|(_, n, _)| n).collect()
    };
    assert_eq!(names(&late[0]), ["s-4", "s-6", "s-8"]);
    assert_eq!(names(&late[1]), ["s-3", "s-5", "s-7"]);
    assert_eq!(names(&late[2]), ["s-5"]);
}

#[test]
fn selectors_and_representations_share_a_feed_each_with_its_own_view() {
    let s = server();
    let ns = s.namespace("fanout-mixed");
    let rv = list_rv(s, &ns);
    let base = format!("{}?watch=1&resourceVersion={rv}&timeoutSeconds=6", cms(&ns));
    let watches: Vec<(&str, String)> = vec![
        ("json", base.clone()),
        ("web", format!("{base}&labelSelector=tier%3Dweb")),
        ("web2", format!("{base}&labelSelector=tier%3Dweb")),
        ("db", format!("{base}&labelSelector=tier%3Ddb")),
        ("b", format!("{base}&fieldSelector=metadata.name%3Db")),
        ("proto", base.clone()),
        ("proto-web", format!("{base}&labelSelector=tier%3Dweb")),
    ];
    let threads: Vec<_> = watches
        .iter()
        .map(|(name, path)| {
            let (proto, path) = (name.starts_with("proto"), path.clone());
            std::thread::spawn(move || {
                let h: &[&str] = if proto {
                    &["Accept: application/vnd.kubernetes.protobuf"]
                } else {
                    &[]
                };
                server().http("GET", &path, h, None)
            })
        })
        .collect();
    // The watches start from `rv`, so they see every change below whenever they connect.
    let mut rvs = Vec::new();
    let mut put = |method: &str, path: String, body: Value| {
        let r = s.send_json(method, &path, &body);
        assert!(r.status < 300, "{}", r.text());
        rvs.push(rv_of(&r.json()));
    };
    let cm = |name: &str, tier: &str| json!({"metadata": {"name": name, "labels": {"tier": tier}}});
    put("POST", cms(&ns), cm("a", "web"));
    put("POST", cms(&ns), cm("b", "db"));
    let patch = |tier: &str| json!({"metadata": {"labels": {"tier": tier}}});
    put("PATCH", format!("{}/a", cms(&ns)), patch("db"));
    put("PATCH", format!("{}/b", cms(&ns)), patch("web"));
    let r = s.http("DELETE", &format!("{}/b", cms(&ns)), &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let mut got = std::collections::HashMap::new();
    for ((name, _), t) in watches.iter().zip(threads) {
        let r = t.join().unwrap();
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        let events: Vec<(String, Value)> = if name.starts_with("proto") {
            common::proto_watch_frames(&r.body)
        } else {
            json_events(&r.text())
                .into_iter()
                .map(|e| (e["type"].as_str().unwrap().to_string(), e["object"].clone()))
                .collect()
        };
        let seen: Vec<(String, String, String)> = events
            .iter()
            .map(|(t, o)| {
                (
                    t.clone(),
                    o["metadata"]["name"].as_str().unwrap().into(),
                    rv_of(o),
                )
            })
            .collect();
        got.insert(*name, seen);
    }
    let deleted_rv = got["json"].last().unwrap().2.clone();
    let e = |t: &str, n: &str, rv: &str| (t.to_string(), n.to_string(), rv.to_string());
    let all = vec![
        e("ADDED", "a", &rvs[0]),
        e("ADDED", "b", &rvs[1]),
        e("MODIFIED", "a", &rvs[2]),
        e("MODIFIED", "b", &rvs[3]),
        e("DELETED", "b", &deleted_rv),
    ];
    assert_eq!(got["json"], all);
    assert_eq!(got["proto"], all, "protobuf frames carry the same events");
    // a leaves tier=web (DELETED at the patch's revision), b enters it, then is deleted.
    let web = vec![
        e("ADDED", "a", &rvs[0]),
        e("DELETED", "a", &rvs[2]),
        e("ADDED", "b", &rvs[3]),
        e("DELETED", "b", &deleted_rv),
    ];
    assert_eq!(got["web"], web);
    assert_eq!(got["web2"], web);
    assert_eq!(got["proto-web"], web);
    let db = vec![
        e("ADDED", "b", &rvs[1]),
        e("ADDED", "a", &rvs[2]),
        e("DELETED", "b", &rvs[3]),
    ];
    assert_eq!(got["db"], db);
    let only_b = vec![
        e("ADDED", "b", &rvs[1]),
        e("MODIFIED", "b", &rvs[3]),
        e("DELETED", "b", &deleted_rv),
    ];
    assert_eq!(got["b"], only_b);
}

#[test]
fn a_watch_from_before_the_feed_s_history_reads_on_its_own() {
    let s = server();
    let ns = s.namespace("fanout-old");
    let rv0 = list_rv(s, &ns);
    // A live watch keeps this collection's feed running and reads everything, so the feed
    // drops all but its newest WATCH_FEED_RETAIN_EVENTS lines behind it. (Its timeout leaves
    // room for the creates, ~6 s of curl here, and the second watch.)
    let live = format!(
        "{}?watch=1&resourceVersion={rv0}&timeoutSeconds=20",
        cms(&ns)
    );
    let live = std::thread::spawn(move || server().get(&live));
    let n = keel_server::watch_feed::WATCH_FEED_RETAIN_EVENTS + 200;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let ns = ns.clone();
            std::thread::spawn(move || {
                for i in (t..n).step_by(8) {
                    let tier = if i % 2 == 0 { "web" } else { "db" };
                    let body = json!({"metadata": {"name": format!("cm-{i}"),
                                                   "labels": {"tier": tier}}});
                    let r = server().send_json("POST", &cms(&ns), &body);
                    assert_eq!(r.status, 201, "{}", r.text());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // From before every create: older than what the feed still holds once the live watch
    // has read on, so this watch gets an engine watcher of its own.
    let old = format!(
        "{}?watch=1&resourceVersion={rv0}&labelSelector=tier%3Dweb&timeoutSeconds=3",
        cms(&ns)
    );
    let r = s.get(&old);
    assert_eq!(r.status, 200, "{}", r.text());
    let events = json_events(&r.text());
    assert_eq!(events.len(), n / 2, "every web ConfigMap, once");
    let mut last = 0u64;
    for e in &events {
        assert_eq!(e["type"], "ADDED");
        assert_eq!(e["object"]["metadata"]["labels"]["tier"], "web");
        let rv: u64 = rv_of(&e["object"]).parse().unwrap();
        assert!(rv > last, "in order");
        last = rv;
    }
    let r = live.join().unwrap();
    assert_eq!(json_events(&r.text()).len(), n);
}
