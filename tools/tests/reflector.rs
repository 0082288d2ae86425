//! keel-client's reflector against a real keel: it lists and watches ConfigMaps, its cache
//! converges to exactly what the server holds through creates, updates and deletes, it resumes
//! from its last resourceVersion when the server ends a watch (`timeoutSeconds`), and when its
//! version was compacted away while it was cut off (410) it lists again and reports the
//! deletions it missed.
//!
//! The reflector reaches the server through a TCP proxy in this test that can cut every
//! connection and refuse new ones: a network partition, during which the test writes and
//! waits for the server (`--watch-history 1s`) to compact the history the reflector needs.

mod common;

use common::Keel;
use keel_client::kubeconfig::{self, Endpoint};
use keel_client::reflector::object_key;
use keel_client::{
    Change, KubeClient, Patch, Reflector, ReflectorConfig, ResourcePath, Store, WatchEvent,
    WatchParams,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How long the cache may take to converge, or the server to compact.
const WAIT_MAX: Duration = Duration::from_secs(30);
/// The reflector's watch timeout: short, so that the test sees the server end watches.
const WATCH_TIMEOUT_S: u32 = 2;
const NS: &str = "reflected";

/// A loopback TCP proxy to `upstream` that can cut its connections and refuse new ones.
struct Proxy {
    port: u16,
    blocked: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    _accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let blocked = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (b, c) = (blocked.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                if b.load(Ordering::SeqCst) {
                    continue; // dropped: the client sees its connection closed
                }
                let relay = tokio::spawn(async move {
                    if let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                });
                c.lock().unwrap().push(relay);
            }
        });
        Proxy {
            port,
            blocked,
            conns,
            _accept: accept,
        }
    }

    /// Cuts every connection and refuses new ones until `unblock`.
    fn block(&self) {
        self.blocked.store(true, Ordering::SeqCst);
        for relay in self.conns.lock().unwrap().drain(..) {
            relay.abort();
        }
    }

    fn unblock(&self) {
        self.blocked.store(false, Ordering::SeqCst);
    }
}

/// `namespace/name -> resourceVersion` of every ConfigMap in `NS` on the server.
async fn server_state(c: &KubeClient) -> BTreeMap<String, String> {
    let cms = ResourcePath::new("", "v1", "configmaps").in_namespace(NS);
    let list = c.list(&cms, &Default::default()).await.unwrap();
    list.items.iter().map(key_and_version).collect()
}

fn cache_state(store: &Store) -> BTreeMap<String, String> {
    store.list().iter().map(|o| key_and_version(o)).collect()
}

fn key_and_version(o: &Value) -> (String, String) {
    let rv = o["metadata"]["resourceVersion"].as_str().unwrap();
    (object_key(o).unwrap(), rv.to_string())
}

/// Waits until `check` holds, polling; panics with `what` after `WAIT_MAX`.
async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut check: impl FnMut() -> F,
) {
    let deadline = tokio::time::Instant::now() + WAIT_MAX;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} not within {WAIT_MAX:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the cache holds exactly what the server holds.
async fn converges(c: &KubeClient, store: &Store, when: &str) {
    eventually(&format!("{when}: cache converged"), move || async move {
        server_state(c).await == cache_state(store)
    })
    .await;
}

/// The changes delivered so far, as `+key`, `~key`, `-key@rv` and `synced`.
type Seen = Arc<Mutex<Vec<String>>>;

fn record(mut rx: tokio::sync::mpsc::Receiver<Change>) -> Seen {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Some(change) = rx.recv().await {
            let line = match change {
                Change::Added(o) => format!("+{}", object_key(&o).unwrap()),
                Change::Modified { new, .. } => format!("~{}", object_key(&new).unwrap()),
                Change::Deleted(o) => {
                    let (key, rv) = key_and_version(&o);
                    format!("-{key}@{rv}")
                }
                Change::Synced => "synced".into(),
            };
            s.lock().unwrap().push(line);
        }
    });
    seen
}

fn since(seen: &Seen, from: usize) -> Vec<String> {
    seen.lock().unwrap()[from..].to_vec()
}

fn cm(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NS}, "data": {"v": value}})
}

/// Whether a watch from `rv` is refused with 410 now (the history after it is compacted).
async fn compacted(c: &KubeClient, rv: &str) -> bool {
    let cms = ResourcePath::new("", "v1", "configmaps").in_namespace(NS);
    let params = WatchParams {
        resource_version: Some(rv.to_string()),
        timeout_seconds: Some(1),
        ..Default::default()
    };
    match c.watch(&cms, &params).await {
        Err(e) => e.is_gone(),
        Ok(mut w) => matches!(w.next().await, Ok(Some(WatchEvent::Error(s))) if s.code == 410),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_converges_resumes_and_relists_after_410() {
    let server = tokio::task::spawn_blocking(|| {
        Keel::start_with(&[
            "--watch-history",
            "1s",
            "--storage-maintenance-interval",
            "100ms",
        ])
    })
    .await
    .unwrap();
    let direct = server.client();
    keel_tools::kube::ensure_namespaces(&direct, &[NS.to_string()])
        .await
        .unwrap();
    let cms = ResourcePath::new("", "v1", "configmaps").in_namespace(NS);
    for name in ["a", "b", "c"] {
        direct.create(&cms, &cm(name, "0")).await.unwrap();
    }

    // The reflector reaches the server through the proxy (same certificate, same host).
    let proxy = Proxy::start(server.port).await;
    let ep: Endpoint = kubeconfig::load(&server.kubeconfig, None).unwrap();
    let via_proxy = Endpoint {
        server: format!("https://127.0.0.1:{}", proxy.port),
        ..ep
    };
    let client = KubeClient::new(&via_proxy, 2).unwrap();
    let mut config = ReflectorConfig::new(cms.clone());
    config.page_size = 2; // the three objects take two pages
    config.watch_timeout_s = WATCH_TIMEOUT_S;
    let (reflector, rx) = Reflector::start(client, config);
    let store = reflector.store();
    let seen = record(rx);
    let (seen_ref, refl) = (&seen, &reflector);

    // The first list: every object added, then synced.
    eventually("synced", move || async move {
        since(seen_ref, 0).contains(&"synced".to_string())
    })
    .await;
    assert_eq!(
        since(&seen, 0),
        ["+reflected/a", "+reflected/b", "+reflected/c", "synced"]
    );
    assert_eq!(cache_state(&store), server_state(&direct).await);

    // Changes while watching.
    let mark = since(&seen, 0).len();
    direct.create(&cms, &cm("d", "0")).await.unwrap();
    let merge = Patch::Merge(json!({"data": {"v": "1"}}));
    direct.patch(&cms.clone().named("a"), &merge).await.unwrap();
    direct.delete(&cms.clone().named("b"), None).await.unwrap();
    converges(&direct, &store, "after writes").await;
    let changes = since(&seen, mark);
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert_eq!(changes[..2], ["+reflected/d", "~reflected/a"]);
    assert!(changes[2].starts_with("-reflected/b@"), "{changes:?}");

    // The server ends each watch after WATCH_TIMEOUT_S; the reflector watches again from
    // its version, without listing again.
    let watches = reflector.stats().watches;
    eventually("two more watches", move || async move {
        refl.stats().watches >= watches + 2
    })
    .await;
    direct.create(&cms, &cm("e", "0")).await.unwrap();
    converges(&direct, &store, "after the watch was resumed").await;
    let stats = reflector.stats();
    assert_eq!((stats.lists, stats.gone), (1, 0), "{stats:?}");

    // Cut off, the reflector misses a deletion, a creation and an update, and its version
    // is compacted away before it is back.
    proxy.block();
    let mark = since(&seen, 0).len();
    let rv_before = store.resource_version();
    let c = direct.get(&cms.clone().named("c")).await.unwrap();
    let c_rv = c["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    direct.delete(&cms.clone().named("c"), None).await.unwrap();
    direct.create(&cms, &cm("f", "0")).await.unwrap();
    direct.patch(&cms.clone().named("d"), &merge).await.unwrap();
    let (d, rv) = (&direct, rv_before.as_str());
    eventually("the reflector's version compacted", move || {
        compacted(d, rv)
    })
    .await;
    assert_eq!(
        since(&seen, mark),
        Vec::<String>::new(),
        "nothing arrives while cut off"
    );
    proxy.unblock();

    converges(&direct, &store, "after the re-list").await;
    eventually("synced again", move || async move {
        since(seen_ref, mark).last().is_some_and(|l| l == "synced")
    })
    .await;
    assert_eq!(
        since(&seen, mark),
        [
            format!("-reflected/c@{c_rv}"),
            "~reflected/d".to_string(),
            "+reflected/f".to_string(),
            "synced".to_string(),
        ],
        "the re-list reports what was missed: c gone as last seen, then d changed and f new"
    );
    let stats = reflector.stats();
    assert!(stats.gone >= 1 && stats.lists == 2, "{stats:?}");
    assert!(
        stats.retries >= 1,
        "the cut-off watch was retried: {stats:?}"
    );

    // And it keeps watching after the re-list.
    direct.create(&cms, &cm("g", "0")).await.unwrap();
    converges(&direct, &store, "after the re-list, watching").await;
    reflector.stop().await;
}
