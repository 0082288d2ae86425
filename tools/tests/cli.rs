//! The `loadgen` binary end to end: flags, kubeconfig and --url connections, the JSON report,
//! exit codes; and the etcd target against a real etcd when one is installed.

mod common;

use common::{keel, list_items};
use keel_tools::cli::{execute, Cmd, ConnArgs, ExistingArgs, ObjArgs, RunArgs};
use keel_tools::objects::Kind;
use std::process::Command;

fn loadgen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadgen"))
}

#[test]
fn every_subcommand_has_help() {
    for sub in [
        "create",
        "get",
        "update",
        "patch",
        "delete",
        "list",
        "watch",
        "nodes",
        "churn",
        "compare",
        "crd-latency",
    ] {
        let out = loadgen().args([sub, "--help"]).output().unwrap();
        assert!(out.status.success(), "{sub} --help failed");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Usage: loadgen") && text.contains("--json"),
            "{sub}: {text}"
        );
    }
}

#[test]
fn bad_flags_are_errors_not_panics() {
    let out = loadgen()
        .args([
            "create",
            "--concurrency",
            "0",
            "--url",
            "http://127.0.0.1:1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("concurrency must be"));
    let out = loadgen()
        .env_remove("KUBECONFIG")
        .args(["get"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no --kubeconfig"));
}

#[test]
fn kubeconfig_run_writes_json_report() {
    let k = keel();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = loadgen()
        .args([
            "--kubeconfig",
            k.kubeconfig.to_str().unwrap(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ])
        .args([
            "create",
            "-n",
            "40",
            "-c",
            "4",
            "--namespace",
            "clijson",
            "--kind",
            "pods",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("p99.9 ms") && table.contains("create"),
        "{table}"
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["ops"][0]["name"], "create");
    assert_eq!(r["ops"][0]["ops"], 40);
    assert_eq!(r["ops"][0]["errors"], 0);
    for p in ["p50", "p90", "p99", "p999", "max"] {
        assert!(r["ops"][0]["latency_us"][p].as_u64().unwrap() > 0, "{p}");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let held = rt.block_on(list_items(&k.client(), "/api/v1/namespaces/clijson/pods"));
    assert_eq!(held.len(), 40);
}

#[test]
fn url_and_token_connect_and_failures_exit_3() {
    let k = keel();
    let url = format!("https://127.0.0.1:{}", k.port);
    let ca = k.dir.join("pki").join("ca.crt");
    let base = ["--url", &url, "--ca-file", ca.to_str().unwrap(), "-q"];
    let out = loadgen()
        .args(base)
        .args([
            "--token",
            &k.token,
            "create",
            "-n",
            "10",
            "--namespace",
            "cliurl",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = loadgen()
        .args(base)
        .args([
            "--token",
            &k.token,
            "get",
            "-n",
            "10",
            "--namespace",
            "cliurl",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Objects that do not exist: every GET fails, the run reports it and exits 3.
    let out = loadgen()
        .args(base)
        .args([
            "--token",
            &k.token,
            "get",
            "-n",
            "5",
            "--first",
            "100",
            "--namespace",
            "cliurl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("NotFound"));
    // A wrong token is refused by the server (401) for every operation.
    let out = loadgen()
        .args(base)
        .args([
            "--token",
            "wrong",
            "get",
            "-n",
            "5",
            "--namespace",
            "cliurl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("401"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_target_counts_match_the_store() {
    keel_tools::driver::PROGRESS.store(false, std::sync::atomic::Ordering::Relaxed);
    let Some(server) = common::etcd() else { return };
    let conn = ConnArgs {
        etcd: vec![server.endpoint.clone()],
        etcd_prefix: "/registry".into(),
        etcd_connections: 2,
        ..Default::default()
    };
    let o = ObjArgs {
        kind: Kind::Configmaps,
        prefix: "e".into(),
        namespace: "ens".into(),
        namespaces: 3,
        size: 256,
        size_spread: 0.0,
        first: 0,
    };
    let run = |c| RunArgs {
        concurrency: c,
        duration: None,
        rate: None,
    };
    let ok = |r: keel_tools::report::Report| {
        assert_eq!(r.errors(), 0, "{}", r.table());
        r
    };
    let r = ok(execute(
        &conn,
        &Cmd::Create {
            obj: o.clone(),
            run: run(8),
            count: 200,
        },
    )
    .await
    .unwrap());
    assert_eq!(r.ops[0].ops, 200);
    let store =
        keel_tools::etcd::Etcd::connect(std::slice::from_ref(&server.endpoint), 1, "/registry")
            .await
            .unwrap();
    assert_eq!(store.count("configmaps").await.unwrap(), 200);
    // Creating an existing key fails the txn comparison.
    let dup = execute(
        &conn,
        &Cmd::Create {
            obj: o.clone(),
            run: run(2),
            count: 3,
        },
    )
    .await
    .unwrap();
    assert_eq!(dup.errors(), 3);
    let existing = ExistingArgs {
        obj: o.clone(),
        run: run(8),
        count: 200,
        ops: Some(300),
    };
    assert_eq!(
        ok(execute(&conn, &Cmd::Get(existing.clone())).await.unwrap()).ops[0].ops,
        300
    );
    assert_eq!(
        ok(execute(&conn, &Cmd::Update(existing)).await.unwrap()).ops[0].ops,
        300
    );
    let list = ok(execute(
        &conn,
        &Cmd::List {
            obj: o.clone(),
            run: run(1),
            ops: 2,
            page_size: Some(30),
            streaming: false,
            in_namespace: None,
        },
    )
    .await
    .unwrap());
    assert_eq!(list.ops[0].objects, 400);
    let w = ObjArgs {
        prefix: "w".into(),
        namespace: "ewatch".into(),
        namespaces: 1,
        ..o.clone()
    };
    let r = ok(execute(
        &conn,
        &Cmd::Watch {
            obj: w,
            run: run(4),
            watchers: 10,
            count: 100,
            selectors: 0,
        },
    )
    .await
    .unwrap());
    assert_eq!(r.detail_u64("received_events"), 1000, "{}", r.table());
    assert_eq!(r.details["exact"], true, "{}", r.table());
    ok(execute(
        &conn,
        &Cmd::Delete {
            obj: o,
            run: run(8),
            count: 200,
        },
    )
    .await
    .unwrap());
    assert_eq!(
        store.count("configmaps").await.unwrap(),
        100,
        "the watch run's 100 remain"
    );
    assert!(execute(
        &conn,
        &Cmd::Patch(ExistingArgs {
            obj: w_obj(),
            run: run(1),
            count: 1,
            ops: None
        })
    )
    .await
    .unwrap_err()
    .contains("no etcd form"));
}

/// etcd has no CRDs: widgets go where kube-apiserver stores custom resources,
/// `/registry/<group>/<plural>/<ns>/<name>`, as the JSON a Widget create would send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_widgets_are_keyed_as_custom_resources() {
    keel_tools::driver::PROGRESS.store(false, std::sync::atomic::Ordering::Relaxed);
    let Some(server) = common::etcd() else { return };
    let conn = ConnArgs {
        etcd: vec![server.endpoint.clone()],
        etcd_prefix: "/registry".into(),
        etcd_connections: 2,
        ..Default::default()
    };
    let o = ObjArgs {
        kind: Kind::Widgets,
        prefix: "wd".into(),
        namespace: "wns".into(),
        namespaces: 1,
        size: 1024,
        size_spread: 0.0,
        first: 0,
    };
    let run = RunArgs {
        concurrency: 4,
        duration: None,
        rate: None,
    };
    let r = execute(
        &conn,
        &Cmd::Create {
            obj: o.clone(),
            run: run.clone(),
            count: 50,
        },
    )
    .await
    .unwrap();
    assert_eq!((r.ops[0].ops, r.errors()), (50, 0), "{}", r.table());
    let store =
        keel_tools::etcd::Etcd::connect(std::slice::from_ref(&server.endpoint), 1, "/registry")
            .await
            .unwrap();
    assert_eq!(store.count("bench.keel.dev/widgets").await.unwrap(), 50);
    assert_eq!(store.count("widgets").await.unwrap(), 0);
    let mut kv = etcd_client::Client::connect([server.endpoint.as_str()], None)
        .await
        .unwrap();
    let got = kv
        .get("/registry/bench.keel.dev/widgets/wns/wd-7", None)
        .await
        .unwrap();
    let value = got.kvs()[0].value();
    let widget: serde_json::Value = serde_json::from_slice(value).unwrap();
    assert_eq!(widget["apiVersion"], "bench.keel.dev/v1");
    assert_eq!(widget["kind"], "Widget");
    assert_eq!(widget["spec"].as_object().unwrap().len(), 20);
    // As long as the ConfigMap of the same size it is compared with.
    let cm = keel_tools::objects::object_json(
        &ObjArgs {
            kind: Kind::Configmaps,
            ..o.clone()
        }
        .naming(),
        7,
        1024,
        0,
    );
    assert_eq!(value.len(), cm.len());
    let get = execute(
        &conn,
        &Cmd::Get(ExistingArgs {
            obj: o.clone(),
            run,
            count: 50,
            ops: Some(100),
        }),
    )
    .await
    .unwrap();
    assert_eq!((get.ops[0].ops, get.errors()), (100, 0), "{}", get.table());
    let latency = execute(
        &conn,
        &Cmd::CrdLatency(keel_tools::cli::CrdLatencyArgs {
            count: 1,
            group_suffix: "crdlat.bench.keel.dev".into(),
            namespace: "x".into(),
        }),
    )
    .await
    .unwrap_err();
    assert!(latency.contains("no etcd form"), "{latency}");
}

#[test]
fn crd_latency_flags_are_checked_before_connecting() {
    for (args, want) in [
        (&["-n", "0"][..], "--count must be"),
        (&["--group-suffix", "nodot"][..], "not a DNS subdomain"),
        (
            &["--group-suffix", "Upper.example.com"][..],
            "not a DNS subdomain",
        ),
    ] {
        let out = loadgen()
            .args(["crd-latency", "--url", "http://127.0.0.1:1"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

fn w_obj() -> ObjArgs {
    ObjArgs {
        kind: Kind::Configmaps,
        prefix: "x".into(),
        namespace: "x".into(),
        namespaces: 1,
        size: 1,
        size_spread: 0.0,
        first: 0,
    }
}

/// The comparison's smoke mode, as CI runs it: both servers started, every workload run on
/// each (and on a third API server given by kubeconfig), a report section written.
#[test]
fn compare_smoke_writes_a_report() {
    if !common::etcd_installed() {
        return;
    }
    let k = keel();
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("REPORT.md");
    let out = loadgen()
        .args([
            "compare",
            "--smoke",
            "-q",
            "--out",
            out_path.to_str().unwrap(),
        ])
        .args([
            "--apiserver",
            env!("CARGO_BIN_EXE_keel-apiserver-under-test"),
        ])
        .args(["--dir", dir.path().to_str().unwrap()])
        .args([
            "--third-kubeconfig",
            k.kubeconfig.to_str().unwrap(),
            "--third-name",
            "keel2",
        ])
        .args(["--objects", "100", "--pods", "200"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(&out_path).unwrap();
    for want in [
        "## keel vs etcd",
        "| Figure | keel | keel-https | etcd | keel/etcd | keel-https/etcd | Target | keel2 | keel/keel2 |",
        "paginated list of the ConfigMaps (limit=500)",
        "paced watch: delivery p99",
        "start to ready",
        "full list of all Pods",
        "peak RSS over the run",
        "Load average",
        // keel-ceiling is built beside loadgen, so compare runs it by default.
        "| Workload | keel | ceiling | keel/ceiling | keel-https | ceiling-https | keel-https/ceiling-https |",
        "| create ops/s |",
        "| get ops/s |",
        "| paced watch: writes/s achieved |",
        "| paced watch: delivery p99 ms |",
    ] {
        assert!(report.contains(want), "missing {want:?} in\n{report}");
    }
    // 200 pods listed twice on each server.
    assert!(
        report.contains("| full list of all Pods | keel | 400 |"),
        "{report}"
    );
    assert!(
        report.contains("| full list of all Pods | etcd | 400 |"),
        "{report}"
    );
    // The third server is this test binary's shared keel: other tests' pods are listed too.
    assert!(
        report.contains("| full list of all Pods | keel2 |"),
        "{report}"
    );
    // Custom resources beside ConfigMaps (every API server here serves CRDs).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(common::assert_serves_crds(&k.client()));
    for want in [
        "Custom resources vs ConfigMaps of the same size",
        "| creates/s | keel |",
        "| GETs/s | keel-https |",
        "| watch delivery, events/s (unpaced writes) | etcd |",
        "| creates/s | keel2 |",
        "CRD create → first custom-resource create (3 of 3 CRDs; p50 / p90 / p99 / max) | keel |",
        "| create 1 KiB Widgets (custom resources) | keel | 100 |",
    ] {
        assert!(report.contains(want), "missing {want:?} in\n{report}");
    }
}
