//! Watch streams and resourceVersion semantics over raw HTTPS: selector transitions,
//! bookmarks, timeouts, single-object watches, list/get versions, continue tokens, and the
//! 410 answers once history is compacted (on a second server with a short history).

mod common;

use common::{eventually, Server};
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A watch stream's events, in order.
type Events = Vec<(String, Value)>;

static SERVER: OnceLock<Server> = OnceLock::new();

/// The shared server of this binary, with bookmarks every 300ms.
fn server() -> &'static Server {
    SERVER.get_or_init(|| Server::start(&["--watch-bookmark-interval", "300ms"]))
}

fn parse_events(body: &[u8]) -> Events {
    common::json_watch_events(body)
}

/// Runs a watch (its query must carry `timeoutSeconds`) while `act` runs; returns the
/// HTTP status and events once the server ends the stream.
fn watch_during(s: &'static Server, path: &str, act: impl FnOnce()) -> (u16, Events) {
    let path = path.to_string();
    let t = std::thread::spawn(move || s.get(&path));
    act();
    let r = t.join().unwrap();
    (r.status, parse_events(&r.body))
}

fn list_rv(s: &Server, path: &str) -> String {
    let r = s.get(path);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

fn cms(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

fn create_cm(s: &Server, ns: &str, name: &str, labels: Value) -> Value {
    let r = s.send_json(
        "POST",
        &cms(ns),
        &json!({"metadata": {"name": name, "labels": labels}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn patch_cm(s: &Server, ns: &str, name: &str, patch: Value) -> Value {
    let r = s.send_json("PATCH", &format!("{}/{name}", cms(ns)), &patch);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn rv_of(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

fn types(events: &Events) -> Vec<&str> {
    events.iter().map(|(t, _)| t.as_str()).collect()
}

#[test]
fn objects_entering_and_leaving_a_selector() {
    let s = server();
    let ns = s.namespace("watch-selector");
    let rv = list_rv(s, &cms(&ns));
    let path = format!(
        "{}?watch=true&labelSelector=tier%3Dweb&resourceVersion={rv}&timeoutSeconds=2",
        cms(&ns)
    );
    let mut leave_rv = String::new();
    let (status, events) = watch_during(s, &path, || {
        create_cm(s, &ns, "x", json!({"tier": "none"}));
        create_cm(s, &ns, "other", json!({"tier": "db"}));
        patch_cm(
            s,
            &ns,
            "x",
            json!({"metadata": {"labels": {"tier": "web"}}}),
        );
        patch_cm(s, &ns, "x", json!({"data": {"a": "1"}}));
        let left = patch_cm(s, &ns, "x", json!({"metadata": {"labels": {"tier": "db"}}}));
        leave_rv = rv_of(&left);
        patch_cm(
            s,
            &ns,
            "x",
            json!({"metadata": {"labels": {"tier": "web"}}}),
        );
        let r = s.http("DELETE", &format!("{}/x", cms(&ns)), &[], None);
        assert_eq!(r.status, 200);
    });
    assert_eq!(status, 200);
    assert_eq!(
        types(&events),
        ["ADDED", "MODIFIED", "DELETED", "ADDED", "DELETED"],
        "{events:?}"
    );
    assert!(events.iter().all(|(_, o)| o["metadata"]["name"] == "x"));
    // Leaving the selector: the last matching state, at the revision of the change.
    let (_, left) = &events[2];
    assert_eq!(left["metadata"]["labels"]["tier"], "web", "{left}");
    assert_eq!(left["data"]["a"], "1");
    assert_eq!(rv_of(left), leave_rv);
}

#[test]
fn watch_start_lists_current_state_then_follows() {
    let s = server();
    let ns = s.namespace("watch-start");
    create_cm(s, &ns, "a", json!({}));
    create_cm(s, &ns, "b", json!({}));
    for start in ["", "&resourceVersion=0"] {
        let path = format!("{}?watch=1&timeoutSeconds=1{start}", cms(&ns));
        let (status, events) = watch_during(s, &path, || {});
        assert_eq!(status, 200);
        let names: Vec<&str> = events
            .iter()
            .map(|(t, o)| {
                assert_eq!(t, "ADDED");
                o["metadata"]["name"].as_str().unwrap()
            })
            .collect();
        assert_eq!(names, ["a", "b"], "start {start:?}");
    }
}

#[test]
fn bookmarks_only_when_allowed() {
    let s = server();
    let ns = s.namespace("watch-bookmarks");
    let created = create_cm(s, &ns, "a", json!({}));
    let rv: u64 = rv_of(&created).parse().unwrap();
    let path = format!(
        "{}?watch=1&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=2",
        cms(&ns)
    );
    let (status, events) = watch_during(s, &path, || {});
    assert_eq!(status, 200);
    let marks: Vec<&Value> = events
        .iter()
        .filter(|(t, _)| t == "BOOKMARK")
        .map(|(_, o)| o)
        .collect();
    assert!(marks.len() >= 2, "bookmarks every 300ms: {events:?}");
    assert_eq!(
        marks.len(),
        events.len(),
        "nothing else happened: {events:?}"
    );
    for m in marks {
        assert_eq!(m["kind"], "ConfigMap");
        assert_eq!(m["apiVersion"], "v1");
        let at: u64 = rv_of(m).parse().unwrap();
        assert!(at >= rv, "{m}");
        assert!(m["metadata"].get("name").is_none(), "{m}");
    }
    let plain = format!("{}?watch=1&resourceVersion={rv}&timeoutSeconds=1", cms(&ns));
    let (_, events) = watch_during(s, &plain, || {});
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn timeout_seconds_ends_the_stream() {
    let s = server();
    let ns = s.namespace("watch-timeout");
    let rv = list_rv(s, &cms(&ns));
    let started = Instant::now();
    let r = s.get(&format!(
        "{}?watch=1&resourceVersion={rv}&timeoutSeconds=1",
        cms(&ns)
    ));
    let took = started.elapsed();
    assert_eq!(r.status, 200);
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "{:?}",
        r.headers
    );
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
}

#[test]
fn negative_timeout_seconds_ends_the_watch_at_once() {
    let s = server();
    let ns = s.namespace("watch-timeout-negative");
    create_cm(s, &ns, "a", json!({}));
    let rv = list_rv(s, &cms(&ns));
    // From a revision: nothing to send, the stream ends at once (a client that mishandled
    // this would hang here until the test harness's own request timeout).
    let r = s.get(&format!(
        "{}?watch=1&resourceVersion={rv}&timeoutSeconds=-1",
        cms(&ns)
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(parse_events(&r.body).is_empty(), "{}", r.text());
    // Without one: the current state, then the end.
    let r = s.get(&format!("{}?watch=1&timeoutSeconds=-1", cms(&ns)));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(types(&parse_events(&r.body)), ["ADDED"], "{}", r.text());
}

#[test]
fn malformed_resource_version_is_400_on_every_verb() {
    let s = server();
    let ns = s.namespace("rv-malformed");
    create_cm(s, &ns, "a", json!({}));
    let paths = [
        format!("{}/a?resourceVersion=abc", cms(&ns)),
        format!("{}?resourceVersion=abc", cms(&ns)),
        format!("{}?resourceVersion=abc&limit=1", cms(&ns)),
        format!(
            "{}?resourceVersion=abc&resourceVersionMatch=NotOlderThan",
            cms(&ns)
        ),
        format!("{}?watch=1&resourceVersion=abc", cms(&ns)),
        format!(
            "{}?watch=1&resourceVersion=abc&fieldSelector=metadata.name%3Da",
            cms(&ns)
        ),
    ];
    for path in paths {
        let r = s.get(&path);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        let st = r.json();
        assert_eq!(st["reason"], "BadRequest", "{path}: {st}");
        assert_eq!(
            st["message"],
            "invalid resource version: resourceVersion: Invalid value: \"abc\": \
             strconv.ParseUint: parsing \"abc\": invalid syntax",
            "{path}"
        );
    }
}

#[test]
fn single_object_watch() {
    let s = server();
    let ns = s.namespace("watch-one");
    let rv = list_rv(s, &cms(&ns));
    let path = format!(
        "{}?watch=1&fieldSelector=metadata.name%3Dme&resourceVersion={rv}&timeoutSeconds=2",
        cms(&ns)
    );
    let (_, events) = watch_during(s, &path, || {
        create_cm(s, &ns, "me", json!({}));
        create_cm(s, &ns, "someone-else", json!({}));
        patch_cm(s, &ns, "someone-else", json!({"data": {"x": "1"}}));
        patch_cm(s, &ns, "me", json!({"data": {"x": "1"}}));
    });
    assert_eq!(types(&events), ["ADDED", "MODIFIED"], "{events:?}");
    assert!(events.iter().all(|(_, o)| o["metadata"]["name"] == "me"));
}

#[test]
fn list_resource_version_semantics() {
    let s = server();
    let ns = s.namespace("list-rv");
    let first = create_cm(s, &ns, "a", json!({"v": "1"}));
    let old_rv = rv_of(&first);
    patch_cm(s, &ns, "a", json!({"metadata": {"labels": {"v": "2"}}}));
    create_cm(s, &ns, "b", json!({}));

    // rv=0: any state, at least as new as nothing; here the current one.
    let any = s.get(&format!("{}?resourceVersion=0", cms(&ns))).json();
    assert_eq!(any["items"].as_array().unwrap().len(), 2, "{any}");

    // Exact at an older revision: the state of then.
    let old = s
        .get(&format!(
            "{}?resourceVersion={old_rv}&resourceVersionMatch=Exact",
            cms(&ns)
        ))
        .json();
    assert_eq!(old["metadata"]["resourceVersion"], old_rv.as_str());
    let items = old["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{old}");
    assert_eq!(items[0]["metadata"]["labels"]["v"], "1");

    // NotOlderThan a future revision: 504 with Retry-After.
    let future = old_rv.parse::<u64>().unwrap() + 1_000_000;
    let r = s.get(&format!(
        "{}?resourceVersion={future}&resourceVersionMatch=NotOlderThan",
        cms(&ns)
    ));
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("1"));
    let st = r.json();
    assert_eq!(st["reason"], "Timeout");
    assert!(
        st["message"].as_str().unwrap().starts_with(&format!(
            "Timeout: Too large resource version: {future}, current: "
        )),
        "{st}"
    );
    assert_eq!(
        st["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );

    // Exact needs a non-zero version.
    let r = s.get(&format!(
        "{}?resourceVersion=0&resourceVersionMatch=Exact",
        cms(&ns)
    ));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.json()["details"]["kind"], "ListOptions");

    // A continue token with an explicit version is refused; so is a bad token.
    let page = s.get(&format!("{}?limit=1", cms(&ns))).json();
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let r = s.get(&format!(
        "{}?limit=1&continue={token}&resourceVersion={old_rv}",
        cms(&ns)
    ));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "specifying resource version is not allowed when using continue"
    );
    let r = s.get(&format!("{}?limit=1&continue=garbage", cms(&ns)));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["reason"], "BadRequest");
    let next = s
        .get(&format!("{}?limit=1&continue={token}", cms(&ns)))
        .json();
    assert_eq!(next["items"][0]["metadata"]["name"], "b");
    assert!(next["metadata"].get("continue").is_none(), "{next}");
}

/// With one second of history, old versions become unavailable: watches get an ERROR event
/// with 410, exact lists and continue tokens get 410 Expired.
#[test]
fn compacted_history_answers_410() {
    let s = Box::leak(Box::new(Server::start(&[
        "--watch-history",
        "1s",
        "--storage-maintenance-interval",
        "100ms",
    ])));
    let ns = s.namespace("compacted");
    let first = create_cm(s, &ns, "a", json!({}));
    let old_rv = rv_of(&first);
    create_cm(s, &ns, "b", json!({}));
    let page = s.get(&format!("{}?limit=1", cms(&ns))).json();
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    patch_cm(s, &ns, "a", json!({"data": {"x": "1"}}));
    let watch_old = format!(
        "{}?watch=1&resourceVersion={old_rv}&timeoutSeconds=1",
        cms(&ns)
    );
    let mut last = None;
    assert!(
        eventually(Duration::from_secs(10), || {
            let r = s.get(&watch_old);
            let events = parse_events(&r.body);
            let expired = events.first().is_some_and(|(t, _)| t == "ERROR");
            last = Some((r.status, events));
            expired
        }),
        "history was not compacted: {last:?}"
    );
    let (status, events) = last.unwrap();
    assert_eq!(status, 200, "upstream answers 200 and an ERROR event");
    assert_eq!(events.len(), 1, "{events:?}");
    let st = &events[0].1;
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["code"], 410);
    assert_eq!(st["reason"], "Expired");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("too old resource version: {old_rv} (")),
        "{st}"
    );

    let r = s.get(&format!(
        "{}?resourceVersion={old_rv}&resourceVersionMatch=Exact",
        cms(&ns)
    ));
    assert_eq!(r.status, 410, "{}", r.text());
    assert_eq!(r.json()["reason"], "Expired");

    // The token's revision (after b's create) is newer than `old_rv`: compaction may pass
    // the one a maintenance tick before the other.
    let continue_path = format!("{}?limit=1&continue={token}", cms(&ns));
    let mut last = None;
    eventually(Duration::from_secs(10), || {
        let r = s.get(&continue_path);
        let expired = r.status == 410;
        last = Some(r);
        expired
    });
    let r = last.unwrap();
    assert_eq!(r.status, 410, "{}", r.text());
    let st = r.json();
    assert_eq!(st["reason"], "Expired");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("The provided continue parameter is too old"),
        "{st}"
    );
    // The current state is still there.
    let now = s.get(&cms(&ns)).json();
    assert_eq!(now["items"].as_array().unwrap().len(), 2);
}
