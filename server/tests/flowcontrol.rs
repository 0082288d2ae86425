//! API Priority and Fairness against the real binary: upstream's bootstrap objects exist,
//! responses name the FlowSchema and priority level they were classified into, a
//! kubectl-applied FlowSchema changes classification at once, and a flood of slow lists from
//! one user is refused with 429 and `Retry-After` for that user only, while `/readyz`, a
//! `system:masters` client and another user keep being served.

mod common;

use common::{eventually, Server};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const ADMIN: &str = "admin-token-0123456789";
const FLOODER: &str = "flooder-token-0123456789";
const VICTIM: &str = "victim-token-0123456789";

fn tokens(dir: &std::path::Path) -> std::path::PathBuf {
    common::write(
        dir,
        "tokens.csv",
        &format!(
            "{ADMIN},admin,admin,\"system:masters\"\n{FLOODER},flooder,flooder\n{VICTIM},victim,victim\n"
        ),
    )
}

/// One HTTPS request as the user of `token` (none: anonymous): status and headers.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn request(s: &Server, token: Option<&str>, path: &str) -> Option<Reply> {
    request_at(s, token, path, None)
}

/// As `request`, reading the response at most `rate` bytes a second (a slow client).
fn request_at(s: &Server, token: Option<&str>, path: &str, rate: Option<&str>) -> Option<Reply> {
    let url = format!("https://127.0.0.1:{}{path}", s.port);
    let mut cmd = Command::new("curl");
    if let Some(r) = rate {
        cmd.args(["--limit-rate", r]);
    }
    cmd.args(["-s", "-i", "--max-time", "30", "-o", "-"])
        .args(["--cacert", s.ca_file().to_str().unwrap()]);
    if let Some(t) = token {
        cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd
        .arg(&url)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let raw = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Reply {
        status,
        headers,
        body: body.to_string(),
    })
}

fn uid(s: &Server, kind: &str, name: &str) -> String {
    s.ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"])
}

const FS: &str = "x-kubernetes-pf-flowschema-uid";
const PL: &str = "x-kubernetes-pf-prioritylevel-uid";

/// A server whose token file (in its data directory, where the server keeps it) has an
/// admin, the flooder and the victim; one core and a concurrency limit of 8 seats.
fn start() -> Server {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    tokens(&dir);
    Server::start_at(
        tmp,
        dir,
        &[
            "--cores",
            "1",
            "--max-requests-inflight",
            "4",
            "--max-mutating-requests-inflight",
            "4",
        ],
    )
}

#[test]
fn bootstrap_objects_headers_and_flood_isolation() {
    let s = start();
    // Upstream's bootstrap configuration, as objects.
    let listed = s.ok(&[
        "get",
        "flowschemas,prioritylevelconfigurations",
        "-o",
        "name",
    ]);
    for name in [
        "flowschema.flowcontrol.apiserver.k8s.io/exempt",
        "flowschema.flowcontrol.apiserver.k8s.io/probes",
        "flowschema.flowcontrol.apiserver.k8s.io/system-leader-election",
        "flowschema.flowcontrol.apiserver.k8s.io/workload-leader-election",
        "flowschema.flowcontrol.apiserver.k8s.io/service-accounts",
        "flowschema.flowcontrol.apiserver.k8s.io/global-default",
        "flowschema.flowcontrol.apiserver.k8s.io/catch-all",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/exempt",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/leader-election",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/workload-high",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/workload-low",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/global-default",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/catch-all",
    ] {
        assert!(
            listed.lines().any(|l| l == name),
            "{name} missing:\n{listed}"
        );
    }
    let dangling = s.ok(&[
        "get",
        "flowschema",
        "global-default",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Dangling\")].status}",
    ]);
    assert_eq!(dangling, "False");

    // Headers: a user's request is global-default's; system:masters exempt; probes exempt.
    let r = request(&s, Some(VICTIM), "/api/v1/namespaces/default/configmaps").unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header(FS),
        Some(uid(&s, "flowschema", "global-default").as_str())
    );
    assert_eq!(
        r.header(PL),
        Some(uid(&s, "prioritylevelconfiguration", "global-default").as_str())
    );
    let r = request(&s, Some(ADMIN), "/api/v1/namespaces").unwrap();
    assert_eq!(r.header(FS), Some(uid(&s, "flowschema", "exempt").as_str()));
    let r = request(&s, None, "/readyz").unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header(FS), Some(uid(&s, "flowschema", "probes").as_str()));
    assert_eq!(
        r.header(PL),
        Some(uid(&s, "prioritylevelconfiguration", "exempt").as_str())
    );

    // A deleted mandatory object comes back.
    s.ok(&["delete", "prioritylevelconfiguration", "catch-all"]);
    assert!(eventually(Duration::from_secs(10), || s
        .kubectl(&["get", "prioritylevelconfiguration", "catch-all"])
        .status
        .success()));

    // Slow lists: 1,000 configmaps of 10 KiB, a 10 MB list, more than the socket buffers
    // hold, so that a client reading it slowly keeps the list (and its seat) busy.
    let value = "x".repeat(10 * 1024);
    let mut yaml = String::new();
    for i in 0..1000 {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: default\ndata:\n  v: {value}\n"
        ));
    }
    let out = s.kubectl_stdin(&["create", "-f", "-", "-o", "name"], &yaml);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The flooder gets a level of its own with short queues and no borrowing.
    let applied = s.kubectl_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: flood
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 1, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: flooder
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: flood}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: flooder}}]
    resourceRules:
    - {verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}
"#,
    );
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let flooder_fs = uid(&s, "flowschema", "flooder");
    assert!(
        eventually(Duration::from_secs(10), || request(
            &s,
            Some(FLOODER),
            "/api/v1/namespaces/default/configmaps?limit=1"
        )
        .is_some_and(|r| r.header(FS) == Some(flooder_fs.as_str()))),
        "the applied FlowSchema does not classify the flooder"
    );

    // Flood: 12 clients listing everything back to back, each reading at 1 MB/s, so that
    // every list holds its seat for seconds.
    let s = Arc::new(s);
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, refused, bad_refusals) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let flooders: Vec<_> = (0..12)
        .map(|_| {
            let (s, stop, ok, refused, bad) = (
                s.clone(),
                stop.clone(),
                ok.clone(),
                refused.clone(),
                bad_refusals.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(r) = request_at(&s, Some(FLOODER), "/api/v1/configmaps", Some("1M"))
                    else {
                        continue;
                    };
                    match r.status {
                        200 => ok.fetch_add(1, Ordering::Relaxed),
                        429 => {
                            if r.header("retry-after").is_none()
                                || !r
                                    .body
                                    .contains("Too many requests, please try again later.")
                                || r.header(FS).is_none()
                            {
                                bad.fetch_add(1, Ordering::Relaxed);
                            }
                            refused.fetch_add(1, Ordering::Relaxed)
                        }
                        other => panic!("flooder got {other}: {}", r.body),
                    };
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // The flood holds the level's one seat (a list is as wide as the level allows: 1 here).
    let seats_line = "apiserver_flowcontrol_current_executing_seats{flow_schema=\"flooder\",priority_level=\"flood\"} 1";
    assert!(
        eventually(Duration::from_secs(5), || request(
            &s,
            Some(ADMIN),
            "/metrics"
        )
        .is_some_and(|r| r.body.lines().any(|l| l == seats_line))),
        "no executing seat counted for the flood"
    );
    // Meanwhile: the victim, /readyz and an admin are always answered.
    let mut victim = Vec::new();
    let mut readyz = Vec::new();
    let mut admin = Vec::new();
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < until {
        victim.push(
            request(
                &s,
                Some(VICTIM),
                "/api/v1/namespaces/default/configmaps/cm-7",
            )
            .map(|r| r.status),
        );
        readyz.push(request(&s, None, "/readyz").map(|r| r.status));
        admin.push(request(&s, Some(ADMIN), "/api/v1/namespaces/default").map(|r| r.status));
    }
    stop.store(true, Ordering::Relaxed);
    for f in flooders {
        f.join().unwrap();
    }
    let all_ok = |v: &[Option<u16>]| v.iter().all(|c| *c == Some(200));
    assert!(all_ok(&victim), "victim: {victim:?}");
    assert!(all_ok(&readyz), "readyz: {readyz:?}");
    assert!(all_ok(&admin), "admin: {admin:?}");
    let (ok, refused) = (ok.load(Ordering::Relaxed), refused.load(Ordering::Relaxed));
    assert!(refused > 0, "the flood was never refused ({ok} served)");
    assert_eq!(
        bad_refusals.load(Ordering::Relaxed),
        0,
        "429 without Retry-After or message"
    );
    eprintln!(
        "flood: {ok} served, {refused} refused; victim {} GETs, readyz {}, admin {}",
        victim.len(),
        readyz.len(),
        admin.len()
    );

    // The metrics count the refusals.
    let metrics = request(&s, Some(ADMIN), "/metrics").unwrap().body;
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"flooder\",priority_level=\"flood\",reason=\"queue-full\"}"
        )),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("flowcontrol"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(metrics
        .contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"}"));
    assert!(metrics.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"global-default\",priority_level=\"global-default\"}"));

    // A FlowSchema whose level does not exist is marked dangling and not used.
    let applied = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: flooder\nspec:\n  matchingPrecedence: 500\n  priorityLevelConfiguration: {name: nowhere}\n  rules:\n  - subjects: [{kind: User, user: {name: flooder}}]\n    nonResourceRules: [{verbs: [\"*\"], nonResourceURLs: [\"*\"]}]\n    resourceRules:\n    - {verbs: [\"*\"], apiGroups: [\"*\"], resources: [\"*\"], namespaces: [\"*\"], clusterScope: true}\n",
    );
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    assert!(eventually(Duration::from_secs(10), || s.ok(&[
        "get",
        "flowschema",
        "flooder",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Dangling\")].status}"
    ]) == "True"));
    let global = uid(&s, "flowschema", "global-default");
    assert!(eventually(Duration::from_secs(10), || request(
        &s,
        Some(FLOODER),
        "/api/v1/namespaces/default/configmaps?limit=1"
    )
    .is_some_and(|r| r.header(FS) == Some(global.as_str()))));
}

/// `--enable-priority-and-fairness=false`: no classification, no headers.
#[test]
fn disabled_means_no_headers() {
    let s = Server::start(&["--enable-priority-and-fairness=false"]);
    let r = s.get("/api/v1/namespaces");
    assert_eq!(r.status, 200);
    assert!(r.header(FS).is_none() && r.header(PL).is_none());
}
