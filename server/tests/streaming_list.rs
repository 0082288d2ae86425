//! Streaming lists (`sendInitialEvents`, client-go's WatchList) over raw HTTPS: the state as
//! ADDED events, then a BOOKMARK annotated `k8s.io/initial-events-end` at the state's
//! resourceVersion, then changes; with selectors, with and without bookmarks, from a given
//! version, `sendInitialEvents=false`, in protobuf, upstream's 422 answers, and the end
//! bookmark a watch of the state gets without asking (as upstream 1.36 defaults it).

mod common;

use common::{server, Server};
use serde_json::{json, Value};
use std::time::Duration;

type Events = Vec<(String, Value)>;
/// (event type, object name) pairs.
type Named = Vec<(String, String)>;

const END: &str = "k8s.io/initial-events-end";
const STREAM: &str = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";

fn parse_events(body: &[u8]) -> Events {
    common::json_watch_events(body)
}

fn cms(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

fn create_cm(s: &Server, ns: &str, name: &str, app: &str) -> Value {
    let r = s.send_json(
        "POST",
        &cms(ns),
        &json!({"metadata": {"name": name, "labels": {"app": app}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

/// Runs the watch at `path` (which ends by its `timeoutSeconds`) in a thread; `act` runs
/// meanwhile, once the watch has had time to start.
fn watch_during(s: &'static Server, path: &str, act: impl FnOnce()) -> (u16, Events) {
    let path = path.to_string();
    let t = std::thread::spawn(move || s.get(&path));
    std::thread::sleep(Duration::from_millis(500));
    act();
    let r = t.join().unwrap();
    (r.status, parse_events(&r.body))
}

fn is_end(obj: &Value) -> bool {
    obj["metadata"]["annotations"][END] == "true"
}

/// The events before the end bookmark, the end bookmark, and the events after it (periodic
/// and closing bookmarks left out).
fn split(events: &Events) -> (Named, Value, Named) {
    let at = events
        .iter()
        .position(|(t, o)| t == "BOOKMARK" && is_end(o))
        .unwrap_or_else(|| panic!("no end bookmark: {events:?}"));
    let named = |evs: &[(String, Value)]| {
        evs.iter()
            .filter(|(t, _)| t != "BOOKMARK")
            .map(|(t, o)| (t.clone(), name(o).to_string()))
            .collect::<Named>()
    };
    (
        named(&events[..at]),
        events[at].1.clone(),
        named(&events[at + 1..]),
    )
}

fn added(names: &[&str]) -> Named {
    names
        .iter()
        .map(|n| ("ADDED".to_string(), n.to_string()))
        .collect()
}

/// The state as ADDED events (only what the selector selects), the end bookmark at the
/// state's version, then changes.
#[test]
fn initial_events_then_end_bookmark_then_changes() {
    let s = server();
    let ns = s.namespace("sl-json");
    create_cm(s, &ns, "a1", "a");
    create_cm(s, &ns, "b1", "b");
    let last = create_cm(s, &ns, "a2", "a");
    let path = format!(
        "{}?{STREAM}&allowWatchBookmarks=true&labelSelector=app%3Da&timeoutSeconds=2",
        cms(&ns)
    );
    let mut later = Value::Null;
    let (status, events) = watch_during(s, &path, || {
        create_cm(s, &ns, "b2", "b");
        later = create_cm(s, &ns, "a3", "a");
    });
    assert_eq!(status, 200);
    let (before, end, after) = split(&events);
    assert_eq!(before, added(&["a1", "a2"]), "{events:?}");
    assert_eq!(after, added(&["a3"]), "{events:?}");
    // The bookmark carries the state's version: at least the last write before the watch,
    // below the first write after it; the kind and only the metadata that says so.
    let end_rv = rv(&end);
    assert!(end_rv >= rv(&last) && end_rv < rv(&later), "{end}");
    assert_eq!(end["kind"], "ConfigMap");
    assert_eq!(end["apiVersion"], "v1");
    assert_eq!(end["metadata"]["annotations"], json!({END: "true"}));
    // The initial events carry the objects as stored.
    assert_eq!(events[0].1["metadata"]["labels"]["app"], "a");
}

/// An empty collection still ends its (empty) state with the bookmark; a namespace's list
/// does not see another namespace's objects.
#[test]
fn empty_state_still_ends_with_the_bookmark() {
    let s = server();
    let ns = s.namespace("sl-empty");
    let other = s.namespace("sl-empty-other");
    create_cm(s, &other, "elsewhere", "a");
    let path = format!(
        "{}?{STREAM}&allowWatchBookmarks=true&timeoutSeconds=1",
        cms(&ns)
    );
    let r = s.get(&path);
    assert_eq!(r.status, 200);
    let events = parse_events(&r.body);
    let (before, end, after) = split(&events);
    assert!(before.is_empty() && after.is_empty(), "{events:?}");
    assert!(rv(&end) > 0);
}

/// A plain watch that sends the state (resourceVersion unset or 0) with bookmarks allowed
/// ends it with the same bookmark, as upstream 1.36 does; from a version it does not.
#[test]
fn legacy_watch_of_the_state_ends_with_the_bookmark() {
    let s = server();
    let ns = s.namespace("sl-legacy");
    let made = create_cm(s, &ns, "l1", "a");
    for rv in ["", "&resourceVersion=0"] {
        let r = s.get(&format!(
            "{}?watch=1&allowWatchBookmarks=true&timeoutSeconds=1{rv}",
            cms(&ns)
        ));
        let events = parse_events(&r.body);
        let (before, _, after) = split(&events);
        assert_eq!(before, added(&["l1"]), "{rv}: {events:?}");
        assert!(after.is_empty(), "{rv}: {events:?}");
    }
    let r = s.get(&format!(
        "{}?watch=1&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion={}",
        cms(&ns),
        rv(&made)
    ));
    let events = parse_events(&r.body);
    assert!(
        !events.iter().any(|(_, o)| is_end(o)),
        "from a version: {events:?}"
    );
}

/// Without `allowWatchBookmarks` the state is sent but no end bookmark (as upstream).
#[test]
fn no_end_bookmark_without_bookmarks() {
    let s = server();
    let ns = s.namespace("sl-nobm");
    create_cm(s, &ns, "x", "a");
    let r = s.get(&format!("{}?{STREAM}&timeoutSeconds=1", cms(&ns)));
    assert_eq!(r.status, 200);
    let events = parse_events(&r.body);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "ADDED");
}

/// `resourceVersion=N` with `sendInitialEvents=true`: the whole state (not only changes
/// after N); `sendInitialEvents=false`: only changes, from now when the version is unset.
#[test]
fn from_a_version_and_without_initial_events() {
    let s = server();
    let ns = s.namespace("sl-rv");
    let first = create_cm(s, &ns, "one", "a");
    create_cm(s, &ns, "two", "a");
    let path = format!(
        "{}?{STREAM}&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds=1",
        cms(&ns),
        rv(&first)
    );
    let r = s.get(&path);
    let events = parse_events(&r.body);
    let (before, _, _) = split(&events);
    assert_eq!(before, added(&["one", "two"]), "{events:?}");

    let path = format!(
        "{}?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=2",
        cms(&ns)
    );
    let (status, events) = watch_during(s, &path, || {
        create_cm(s, &ns, "three", "a");
    });
    assert_eq!(status, 200);
    let named: Named = events
        .iter()
        .map(|(t, o)| (t.clone(), name(o).to_string()))
        .collect();
    assert_eq!(named, added(&["three"]), "{events:?}");
}

/// A version the store has not reached yet: the watch waits for it, then answers 504 as a
/// list does (upstream's "Too large resource version").
#[test]
fn future_version_times_out_as_a_list_does() {
    let s = server();
    let ns = s.namespace("sl-future");
    let r = s.get(&format!(
        "{}?{STREAM}&resourceVersion=999999999&timeoutSeconds=1",
        cms(&ns)
    ));
    let list = s.get(&format!("{}?resourceVersion=999999999", cms(&ns)));
    assert_eq!(r.status, list.status, "{}", r.text());
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(r.json()["reason"], list.json()["reason"]);
}

/// The same sequence in protobuf.
#[test]
fn protobuf_stream() {
    let s = server();
    let ns = s.namespace("sl-proto");
    create_cm(s, &ns, "p1", "a");
    let path = format!(
        "{}?{STREAM}&allowWatchBookmarks=true&timeoutSeconds=1",
        cms(&ns)
    );
    let r = s.http(
        "GET",
        &path,
        &["Accept: application/vnd.kubernetes.protobuf"],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.kubernetes.protobuf;stream=watch")
    );
    let events = common::proto_watch_frames(&r.body);
    let (before, end, _) = split(&events);
    assert_eq!(before, added(&["p1"]), "{events:?}");
    assert_eq!(end["kind"], "ConfigMap");
    assert!(rv(&end) > 0, "{end}");
}

/// Upstream's answers to invalid combinations: one 422 listing every failure; and how a
/// value that is not `true` or `false` reads.
#[test]
fn invalid_combinations() {
    let s = server();
    let ns = s.namespace("sl-invalid");
    let base = cms(&ns);
    let invalid = "ListOptions.meta.k8s.io \"\" is invalid: ";
    let rows = [
        (
            "watch=1&sendInitialEvents=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact",
            "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]",
        ),
        (
            "watch=1&resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
        (
            "sendInitialEvents=true",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ),
    ];
    for (query, message) in rows {
        let r = s.get(&format!("{base}?{query}"));
        assert_eq!(r.status, 422, "{query}: {}", r.text());
        let st = r.json();
        assert_eq!(st["reason"], "Invalid", "{query}");
        assert_eq!(st["message"], format!("{invalid}{message}"), "{query}");
    }
    // As upstream decodes booleans: present and neither `0` nor `false` is true, even empty.
    for (value, streams) in [("yes", true), ("", true), ("False", false), ("0", false)] {
        let r = s.get(&format!(
            "{base}?watch=1&sendInitialEvents={value}&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
        ));
        assert_eq!(r.status, 200, "{value:?}: {}", r.text());
        let ends = parse_events(&r.body)
            .iter()
            .any(|(t, o)| t == "BOOKMARK" && is_end(o));
        assert_eq!(ends, streams, "{value:?}");
    }
    let r = s.get(&format!("{base}?sendInitialEvents="));
    assert_eq!(r.status, 422, "{}", r.text());
}
