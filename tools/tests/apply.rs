//! `loadgen apply` against a real keel: the applies and the PUTs of `--update` all succeed, and
//! the Deployments then hold the last round's values, owned by the apply's field manager.

mod common;

use common::keel;
use keel_client::Method;
use keel_tools::cli::{execute, ApplyArgs, Cmd, RunArgs};
use keel_tools::objects::{deployment_image, ROUND_ANNOTATION};
use keel_tools::report::Report;
use serde_json::Value;

fn args(ops: u64, first_round: u64, update: bool) -> ApplyArgs {
    ApplyArgs {
        run: RunArgs {
            // One at a time: two rounds of one object in flight together may land in
            // either order, and the tests check the last round's values.
            concurrency: 1,
            duration: None,
            rate: None,
        },
        prefix: "web".into(),
        namespace: "applied".into(),
        namespaces: 2,
        first: 0,
        count: 6,
        ops,
        first_round,
        field_manager: "loadgen".into(),
        update,
        assume_exist: false,
    }
}

async fn exec(a: ApplyArgs) -> Report {
    let cmd = Cmd::Apply(a);
    let r = execute(&keel().conn(), &cmd)
        .await
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert_eq!(r.errors(), 0, "{}", r.table());
    r
}

async fn get(i: u64) -> Value {
    let path = format!(
        "/apis/apps/v1/namespaces/applied-{}/deployments/web-{i}",
        i % 2
    );
    keel()
        .client()
        .request(Method::GET, &path, None)
        .await
        .unwrap()
        .ok()
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .json()
        .unwrap()
}

/// The object holds round `round`'s values.
fn assert_round(d: &Value, round: u64) {
    let meta = &d["metadata"];
    assert_eq!(
        meta["annotations"][ROUND_ANNOTATION],
        round.to_string(),
        "{meta}"
    );
    assert_eq!(d["spec"]["replicas"], 1 + round % 5);
    let c0 = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c0["image"], deployment_image(0, round));
    let env = c0["env"].as_array().unwrap();
    let rev = env.iter().find(|e| e["name"] == "CONFIG_REVISION").unwrap();
    assert_eq!(rev["value"], round.to_string());
}

fn managers(d: &Value) -> Vec<(String, String)> {
    d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_string();
            (s("manager"), s("operation"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_then_updates_write_every_round() {
    // 20 applies of 6 objects: rounds 0..=3, the first creating; objects 0 and 1 reach round
    // 3, the others round 2.
    let r = exec(args(20, 0, false)).await;
    assert_eq!(r.ops[0].name, "apply");
    assert_eq!(r.ops[0].ops, 20);
    for (i, round) in [(0, 3), (1, 3), (2, 2), (5, 2)] {
        let d = get(i).await;
        assert_round(&d, round);
        let m = managers(&d);
        assert!(
            m.contains(&("loadgen".into(), "Apply".into())),
            "web-{i}: {m:?}"
        );
    }

    // The same objects as plain PUTs, from round 10: 12 updates are rounds 10 and 11.
    let r = exec(args(12, 10, true)).await;
    assert_eq!(r.ops[0].name, "apply-as-update");
    assert_eq!(r.ops[0].ops, 12);
    for i in [0, 3, 5] {
        let d = get(i).await;
        assert_round(&d, 11);
        assert!(
            managers(&d).iter().any(|(_, op)| op == "Update"),
            "web-{i}: {:?}",
            managers(&d)
        );
    }

    // Applying again takes the fields back (force).
    exec(args(6, 12, false)).await;
    let d = get(4).await;
    assert_round(&d, 12);
    assert!(managers(&d).contains(&("loadgen".into(), "Apply".into())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_mode_creates_missing_objects_first() {
    let mut a = args(8, 1, true);
    a.prefix = "fresh".into();
    a.namespace = "fresh".into();
    a.namespaces = 1;
    a.count = 4;
    let r = exec(a).await;
    assert_eq!(r.ops[0].ops, 8);
    let d: Value = keel()
        .client()
        .request(
            Method::GET,
            "/apis/apps/v1/namespaces/fresh/deployments/fresh-3",
            None,
        )
        .await
        .unwrap()
        .ok()
        .unwrap()
        .json()
        .unwrap();
    assert_round(&d, 2);
}
