//! Graceful shutdown of the real binary: on SIGTERM under write and watch load, `/readyz`
//! fails during `--shutdown-delay-duration` while `/livez` holds and requests are served;
//! then the watch ends with a clean end of its stream, the process exits 0, and every write
//! it acknowledged is there after a restart. With `--shutdown-send-retry-after`, new requests
//! after the delay are answered 429 with `Retry-After` and `Connection: close`.

mod common;

use common::{eventually, Server};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn status(s: &Server, path: &str) -> Option<u16> {
    s.try_http("GET", path, &[], None).ok().map(|r| r.status)
}

#[test]
fn sigterm_under_load_loses_nothing_and_ends_watches_cleanly() {
    let s = Arc::new(Server::start(&["--shutdown-delay-duration", "3s"]));
    assert_eq!(status(&s, "/readyz"), Some(200));
    let rv = s.get(CMS).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    // A watch that would last a minute: the shutdown must end it cleanly (curl fails on a
    // chunked stream cut short).
    let watch = {
        let s = s.clone();
        std::thread::spawn(move || {
            s.try_http(
                "GET",
                &format!("{CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=60"),
                &[],
                None,
            )
        })
    };
    // A writer that records every create the server acknowledged, until it cannot connect.
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (s, acked, stop) = (s.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut refused = 0;
            for i in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let name = format!("w-{i}");
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name}, "data": {"i": i.to_string()}});
                match s.try_http(
                    "POST",
                    CMS,
                    &["Content-Type: application/json"],
                    Some(body.to_string().as_bytes()),
                ) {
                    Ok(r) if r.status == 201 => {
                        acked.lock().unwrap().insert(name);
                    }
                    Ok(r) => panic!("create {name}: {} {}", r.status, r.text()),
                    Err(_) => {
                        refused += 1;
                        if refused > 20 {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        })
    };
    assert!(eventually(Duration::from_secs(10), || acked
        .lock()
        .unwrap()
        .len()
        >= 10));

    s.signal("TERM");
    // During the delay: not ready, still live, still serving.
    assert!(
        eventually(Duration::from_secs(2), || status(&s, "/readyz")
            == Some(500)),
        "readyz kept passing after SIGTERM"
    );
    let verbose = s.get("/readyz?verbose").text();
    assert!(verbose.contains("[-]shutdown failed"), "{verbose}");
    assert_eq!(status(&s, "/livez"), Some(200));
    let before = acked.lock().unwrap().len();
    assert!(
        eventually(Duration::from_secs(2), || acked.lock().unwrap().len()
            > before),
        "writes stopped during the delay"
    );

    let exit = s.wait_exit(Duration::from_secs(30));
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert!(
        exit.is_some_and(|e| e.success()),
        "exit after SIGTERM: {exit:?}"
    );
    let w = watch
        .join()
        .unwrap()
        .expect("the watch stream ended cleanly");
    assert_eq!(w.status, 200);
    let watched: BTreeSet<String> = w
        .text()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["type"], "ADDED", "{l}");
            v["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();

    // Every acknowledged write survives the restart (of a store that outlives the process).
    if !common::persistent_backend() {
        return;
    }
    let acked = acked.lock().unwrap().clone();
    let s = Arc::into_inner(s).expect("no other user of the server");
    let (tmp, dir) = s.into_data();
    let s = Server::start_at(tmp, dir, &[]);
    let stored: BTreeSet<String> = s.get(CMS).json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let lost: Vec<_> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // The watch saw only writes that happened (a prefix of them, in order of creation).
    assert!(watched.is_subset(&stored), "{watched:?}");
}

#[test]
fn draining_answers_new_requests_429_with_retry_after() {
    let s = Arc::new(Server::start(&[
        "--shutdown-delay-duration",
        "1s",
        "--shutdown-send-retry-after",
    ]));
    s.signal("TERM");
    assert!(eventually(Duration::from_secs(2), || status(&s, "/readyz")
        == Some(500)));
    // A request in flight across the end of the delay keeps the server draining: a list at
    // a future resourceVersion waits 3 s for it, then answers 504.
    let slow = {
        let s = s.clone();
        std::thread::spawn(move || {
            s.try_http(
                "GET",
                &format!("{CMS}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan"),
                &[],
                None,
            )
        })
    };
    let mut seen = None;
    assert!(
        eventually(Duration::from_secs(3), || {
            seen = s.try_http("GET", CMS, &[], None).ok();
            seen.as_ref().is_some_and(|r| r.status == 429)
        }),
        "no 429 while draining: {:?}",
        seen.map(|r| (r.status, r.text()))
    );
    let r = seen.unwrap();
    assert_eq!(r.header("retry-after"), Some("5"));
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(
        r.text(),
        "The apiserver is shutting down, please try again later.\n"
    );
    // Health probes are still answered while draining.
    assert_eq!(status(&s, "/livez"), Some(200));
    // The request in flight got its own answer, then the process exited 0.
    let slow = slow
        .join()
        .unwrap()
        .expect("the request in flight was answered");
    assert_eq!(slow.status, 504, "{}", slow.text());
    let exit = s.wait_exit(Duration::from_secs(30));
    assert!(exit.is_some_and(|e| e.success()), "{exit:?}");
}
