//! Each workload runs for a few seconds against a real keel; the counts it reports must match
//! what the server then holds (read back over HTTP), and watches must receive exactly the
//! events written.

mod common;

use common::{keel, list_items};
use keel_client::Method;
use keel_tools::cli::{execute, Cmd, ExistingArgs, ObjArgs, RunArgs, SlowBodiesArgs};
use keel_tools::kube::slowbodies::Trickle;
use keel_tools::objects::Kind;
use keel_tools::report::Report;
use std::time::Duration;

fn obj(kind: Kind, prefix: &str, namespace: &str, namespaces: u32) -> ObjArgs {
    ObjArgs {
        kind,
        prefix: prefix.into(),
        namespace: namespace.into(),
        namespaces,
        size: 512,
        size_spread: 0.5,
        first: 0,
    }
}

fn run(concurrency: usize) -> RunArgs {
    RunArgs {
        concurrency,
        duration: None,
        rate: None,
    }
}

async fn exec(cmd: Cmd) -> Report {
    let r = execute(&keel().conn(), &cmd)
        .await
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert_eq!(r.errors(), 0, "{}", r.table());
    r
}

/// Objects of `plural` labelled by loadgen in namespaces `<ns>-0..n`.
async fn count_in(plural: &str, ns: &str, n: u32) -> usize {
    let c = keel().client();
    let mut total = 0;
    for i in 0..n {
        total += list_items(&c, &format!("/api/v1/namespaces/{ns}-{i}/{plural}"))
            .await
            .len();
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_counts_match_the_server() {
    let o = obj(Kind::Configmaps, "cm", "crud", 3);
    let r = exec(Cmd::Create {
        obj: o.clone(),
        run: run(8),
        count: 300,
    })
    .await;
    assert_eq!(r.ops[0].ops, 300);
    assert_eq!(count_in("configmaps", "crud", 3).await, 300);

    let existing = ExistingArgs {
        obj: o.clone(),
        run: run(8),
        count: 300,
        ops: Some(450),
    };
    let r = exec(Cmd::Get(existing.clone())).await;
    assert_eq!(r.ops[0].ops, 450);
    let r = exec(Cmd::Update(existing.clone())).await;
    assert_eq!(r.ops[0].ops, 450);
    let r = exec(Cmd::Patch(ExistingArgs {
        ops: None,
        ..existing.clone()
    }))
    .await;
    assert_eq!(r.ops[0].ops, 300);

    // Update i wrote generation i / count + 1, so objects 0..150 are at generation 2 and
    // the rest at 1; the patch stamped every object.
    let c = keel().client();
    for (i, generation) in [(0u64, "2"), (149, "2"), (150, "1"), (299, "1")] {
        let path = format!("/api/v1/namespaces/crud-{}/configmaps/cm-{i}", i % 3);
        let v = c
            .request(Method::GET, &path, None)
            .await
            .unwrap()
            .ok()
            .unwrap()
            .json()
            .unwrap();
        let ann = &v["metadata"]["annotations"];
        assert_eq!(
            ann["loadgen.keel.dev/generation"], generation,
            "{path}: {ann}"
        );
        assert!(ann["loadgen.keel.dev/patched"].is_string(), "{path}: {ann}");
    }

    let r = exec(Cmd::Delete {
        obj: o,
        run: run(8),
        count: 300,
    })
    .await;
    assert_eq!(r.ops[0].ops, 300);
    assert_eq!(count_in("configmaps", "crud", 3).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_and_lists_count_every_object() {
    let o = obj(Kind::Pods, "web", "lists", 2);
    let r = exec(Cmd::Create {
        obj: o.clone(),
        run: run(8),
        count: 250,
    })
    .await;
    assert_eq!(r.ops[0].ops, 250);
    let held = count_in("pods", "lists", 2).await;
    assert_eq!(held, 250);

    let full = exec(Cmd::List {
        obj: o.clone(),
        run: run(2),
        ops: 4,
        page_size: None,
        streaming: false,
        in_namespace: Some("lists-0".into()),
    })
    .await;
    assert_eq!(full.ops[0].ops, 4);
    assert_eq!(full.detail_u64("objects_per_list"), 125);
    assert_eq!(full.ops[0].objects, 4 * 125);

    let paged = exec(Cmd::List {
        obj: o,
        run: run(1),
        ops: 2,
        page_size: Some(40),
        streaming: false,
        in_namespace: Some("lists-1".into()),
    })
    .await;
    assert_eq!(paged.ops[0].objects, 2 * 125);
    assert_eq!(
        paged.detail_u64("pages"),
        2 * 4,
        "125 objects in pages of 40"
    );
    assert!(paged.ops[0].bytes_per_s > 0.0);

    // Streaming lists: every object once as an initial event, up to the end bookmark.
    let streamed = exec(Cmd::List {
        obj: obj(Kind::Pods, "web", "lists", 2),
        run: run(2),
        ops: 3,
        page_size: None,
        streaming: true,
        in_namespace: Some("lists-1".into()),
    })
    .await;
    assert_eq!(streamed.ops[0].ops, 3);
    assert_eq!(streamed.ops[0].objects, 3 * 125);
    assert_eq!(streamed.detail_u64("objects_per_list"), 125);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_receive_exactly_the_events_written() {
    let o = obj(Kind::Configmaps, "w", "watched", 1);
    let r = exec(Cmd::Watch {
        obj: o,
        run: run(4),
        watchers: 20,
        count: 200,
        selectors: 0,
    })
    .await;
    assert_eq!(r.detail_u64("written"), 200);
    assert_eq!(r.detail_u64("received_events"), 20 * 200, "{}", r.table());
    for k in [
        "missing_events",
        "duplicate_events",
        "out_of_order_events",
        "watcher_errors",
    ] {
        assert_eq!(r.detail_u64(k), 0, "{k}: {}", r.table());
    }
    assert_eq!(r.details["exact"], true);
    let deliver = r.op("deliver").unwrap();
    assert_eq!(deliver.ops, 4000);
    assert!(deliver.latency_us.p50 > 0 && deliver.latency_us.max >= deliver.latency_us.p99);
    let held = list_items(&keel().client(), "/api/v1/namespaces/watched/configmaps").await;
    assert_eq!(held.len(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_watchers_receive_exactly_their_groups_events() {
    let o = obj(Kind::Configmaps, "g", "grouped", 1);
    let r = exec(Cmd::Watch {
        obj: o,
        run: run(4),
        watchers: 12,
        count: 90,
        selectors: 3,
    })
    .await;
    // Each object is selected by the 4 watchers of its group (i mod 3).
    assert_eq!(r.detail_u64("watch_groups"), 3);
    assert_eq!(r.detail_u64("expected_events"), 4 * 90);
    assert_eq!(r.detail_u64("received_events"), 4 * 90, "{}", r.table());
    assert_eq!(r.details["exact"], true, "{}", r.table());
    let c = keel().client();
    let sel = "labelSelector=loadgen.keel.dev%2Fwatch-group%3D2";
    let held = list_items(&c, &format!("/api/v1/namespaces/grouped/configmaps?{sel}")).await;
    assert_eq!(held.len(), 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_nodes_renew_leases_and_run_pods() {
    let cmd = Cmd::Nodes {
        nodes: 3,
        prefix: "sim".into(),
        lease_interval: Duration::from_millis(500),
        status_interval: Duration::from_secs(1),
        duration: Duration::from_secs(4),
        concurrency: 4,
    };
    let sim = tokio::spawn(async move { execute(&keel().conn(), &cmd).await });
    let c = keel().client();
    keel_tools::kube::ensure_namespaces(&c, &["simpods".into()])
        .await
        .unwrap();
    // Pods bound to simulated nodes (as a scheduler would bind them).
    for i in 0..4 {
        let pod = keel_tools::objects::pod(
            "simpods",
            &format!("p{i}"),
            Some(&format!("sim-{}", i % 2)),
            0,
        );
        keel_tools::kube::create_if_absent(&c, "/api/v1/namespaces/simpods/pods", &pod)
            .await
            .unwrap()
            .ok()
            .unwrap();
    }
    let running = |items: &[serde_json::Value]| {
        items
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count()
    };
    wait_for(|| async { running(&list_items(&c, "/api/v1/namespaces/simpods/pods").await) == 4 })
        .await;
    // A running pod on a node is deleted gracefully; the simulated kubelet finishes it.
    c.request(Method::DELETE, "/api/v1/namespaces/simpods/pods/p0", None)
        .await
        .unwrap()
        .ok()
        .unwrap();
    wait_for(|| async {
        list_items(&c, "/api/v1/namespaces/simpods/pods")
            .await
            .len()
            == 3
    })
    .await;

    let r = sim.await.unwrap().unwrap();
    assert_eq!(r.errors(), 0, "{}", r.table());
    assert_eq!(r.detail_u64("pods_started"), 4);
    assert_eq!(r.detail_u64("pods_deleted"), 1);
    let leases = r.detail_u64("leases_renewed");
    assert!(
        (18..=24).contains(&leases),
        "3 nodes x 4s / 0.5s = 24 renewals (less the registration time): {leases}"
    );
    let statuses = r.detail_u64("node_status_updates");
    assert!((9..=12).contains(&statuses), "{statuses}");
    let nodes = list_items(&c, "/api/v1/nodes").await;
    let sim_nodes: Vec<_> = nodes
        .iter()
        .filter(|n| n["metadata"]["name"].as_str().unwrap().starts_with("sim-"))
        .collect();
    assert_eq!(sim_nodes.len(), 3);
    assert!(sim_nodes
        .iter()
        .all(|n| n["status"]["conditions"][0]["type"] == "Ready"));
    let leases = list_items(
        &c,
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
    )
    .await;
    let sim_leases: Vec<_> = leases
        .iter()
        .filter(|l| l["metadata"]["name"].as_str().unwrap().starts_with("sim-"))
        .collect();
    assert_eq!(sim_leases.len(), 3);
    assert!(sim_leases
        .iter()
        .all(|l| l["spec"]["renewTime"].is_string()));
    let held = list_items(&c, "/api/v1/namespaces/simpods/pods").await;
    assert_eq!(running(&held), 3);
    assert!(held.iter().all(|p| p["status"]["podIP"].is_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churn_leaves_exactly_the_live_groups() {
    let cmd = Cmd::Churn {
        prefix: "ch".into(),
        namespaces: 2,
        group_size: 3,
        groups: 8,
        qps: 300.0,
        duration: Duration::from_secs(3),
        concurrency: 4,
        configmap_size: 256,
    };
    let r = exec(cmd).await;
    assert!(r.op("group-create").unwrap().ops >= 8, "{}", r.table());
    assert!(r.op("group-delete").unwrap().ops > 0, "{}", r.table());
    assert_eq!(r.detail_u64("groups_broken"), 0);
    let c = keel().client();
    let sel = "labelSelector=loadgen.keel.dev%2Fchurn%3Dch";
    let pods = list_items(&c, &format!("/api/v1/pods?{sel}")).await.len() as u64;
    let cms = list_items(&c, &format!("/api/v1/configmaps?{sel}"))
        .await
        .len() as u64;
    assert_eq!(pods, r.detail_u64("pods_live"), "{}", r.table());
    assert_eq!(cms, r.detail_u64("configmaps_live"), "{}", r.table());
    assert_eq!(pods, 3 * cms);
}

async fn wait_for<F, Fut>(mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond().await {
        assert!(
            std::time::Instant::now() < deadline,
            "condition not met within 10s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn slow_bodies(connections: usize, trickle: Trickle) -> SlowBodiesArgs {
    SlowBodiesArgs {
        connections,
        announce_bytes: 3 << 20,
        trickle,
        trickle_interval: Duration::from_millis(200),
        idle: Duration::from_millis(500),
        hold: Duration::from_secs(1),
        settle: Duration::from_millis(500),
        reconnect: false,
        open_concurrency: 8,
        probe_rate: 20.0,
        probe_path: "/api/v1/namespaces/default".into(),
        server_pid: keel().pid(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_are_refused_on_their_heads_and_slow_heads_held() {
    let r = exec(Cmd::SlowBodies(slow_bodies(20, Trickle::Body))).await;
    let names: Vec<&str> = r.ops.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        ["get-idle", "get-during", "get-after"],
        "{}",
        r.table()
    );
    assert!(r.ops.iter().all(|o| o.ops > 0), "{}", r.table());
    assert_eq!(r.detail_u64("opened"), 20, "{}", r.table());
    assert_eq!(r.details["closed_by_status"]["401"], 20, "{}", r.table());
    assert!(r.detail_u64("rss_base_bytes") > 0 && r.detail_u64("rss_peak_bytes") > 0);
    // A head that never ends is held (until the header timeout): still open at the end.
    let r = exec(Cmd::SlowBodies(slow_bodies(10, Trickle::Head))).await;
    assert_eq!(r.detail_u64("open_at_end_of_hold"), 10, "{}", r.table());
}

/// Widgets (`--kind widgets`) against a server that serves CRDs: loadgen makes the CRD and
/// waits for it, the counts match what the server holds, watchers get every event, and
/// `crd-latency` measures each fresh CRD and leaves none behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn widgets_and_crd_latency_against_the_server() {
    let c = keel().client();
    common::assert_serves_crds(&c).await;
    let o = obj(Kind::Widgets, "wd", "widgets", 2);
    let r = exec(Cmd::Create {
        obj: o.clone(),
        run: run(4),
        count: 40,
    })
    .await;
    assert_eq!(r.ops[0].ops, 40);
    let crd = c
        .request(
            Method::GET,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.bench.keel.dev",
            None,
        )
        .await
        .unwrap()
        .ok()
        .unwrap()
        .json()
        .unwrap();
    assert!(keel_tools::objects::widgets::established(&crd), "{crd}");
    let mut held = 0;
    for ns in ["widgets-0", "widgets-1"] {
        let items = list_items(
            &c,
            &format!("/apis/bench.keel.dev/v1/namespaces/{ns}/widgets"),
        )
        .await;
        for w in &items {
            assert_eq!(w["spec"].as_object().unwrap().len(), 20, "{w}");
        }
        held += items.len();
    }
    assert_eq!(held, 40);
    let get = exec(Cmd::Get(ExistingArgs {
        obj: o.clone(),
        run: run(4),
        count: 40,
        ops: Some(80),
    }))
    .await;
    assert_eq!(get.ops[0].ops, 80);
    let w = exec(Cmd::Watch {
        obj: obj(Kind::Widgets, "w", "widgetwatch", 1),
        run: run(4),
        watchers: 5,
        count: 50,
        selectors: 0,
    })
    .await;
    assert_eq!(w.detail_u64("received_events"), 5 * 50, "{}", w.table());
    assert_eq!(w.details["exact"], true, "{}", w.table());
    let lat = exec(Cmd::CrdLatency(keel_tools::cli::CrdLatencyArgs {
        count: 3,
        group_suffix: "crdlat.test.keel.dev".into(),
        namespace: "crdlat".into(),
    }))
    .await;
    let first = lat.op("first-create").unwrap();
    assert_eq!(first.ops, 3, "{}", lat.table());
    assert!(first.latency_us.max >= first.latency_us.p50 && first.latency_us.p50 > 0);
    assert!(lat.detail_u64("object_creates_tried") >= 3);
    assert_eq!(lat.op("crd-delete").unwrap().ops, 3);
    let crds = list_items(
        &c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    let left: Vec<_> = crds
        .iter()
        .filter_map(|d| d["metadata"]["name"].as_str())
        .filter(|n| n.ends_with(".crdlat.test.keel.dev"))
        .collect();
    assert!(left.is_empty(), "CRDs left behind: {left:?}");
}
