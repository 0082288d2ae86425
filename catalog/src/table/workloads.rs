//! Printers for pods and the workload controllers.

use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};

use super::time::{human_duration, parse_rfc3339, since};
use super::util::{
    arr, containers_and_images, created, deleting, has_true_condition, i, label_selector, name, s,
};
use super::{col, field, sentence, wide, Printer, Row, AGE, CONTAINERS, IMAGES, NAME};

pub(crate) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    match (group, kind) {
        ("", "Pod") => Some(&POD),
        ("", "ReplicationController") => Some(&REPLICATION_CONTROLLER),
        ("apps", "Deployment") => Some(&DEPLOYMENT),
        ("apps", "ReplicaSet") => Some(&REPLICA_SET),
        ("apps", "StatefulSet") => Some(&STATEFUL_SET),
        ("apps", "DaemonSet") => Some(&DAEMON_SET),
        ("batch", "Job") => Some(&JOB),
        ("batch", "CronJob") => Some(&CRON_JOB),
        _ => None,
    }
}

// ---- pods ----

const POD: Printer = Printer {
    columns: &[
        NAME,
        col("Ready", "string", sentence("The aggregate readiness state of this pod for accepting traffic.")),
        col("Status", "string", sentence("The aggregate status of the containers in this pod.")),
        col("Restarts", "string", sentence("The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.")),
        AGE,
        wide("IP", "string", field("io.k8s.api.core.v1.PodStatus", "podIP")),
        wide("Node", "string", field("io.k8s.api.core.v1.PodSpec", "nodeName")),
        wide("Nominated Node", "string", field("io.k8s.api.core.v1.PodStatus", "nominatedNodeName")),
        wide("Readiness Gates", "string", field("io.k8s.api.core.v1.PodSpec", "readinessGates")),
    ],
    print: print_pod,
};

/// Restart count and the latest restart time seen so far.
#[derive(Default)]
struct Restarts {
    count: i64,
    last: Option<i64>,
}

impl Restarts {
    fn add(&mut self, status: &Value) {
        self.count += i(status, "/restartCount");
        if let Some(t) = parse_rfc3339(s(status, "/lastState/terminated/finishedAt")) {
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
    }
}

fn is_restartable_init(pod: &Value, name: &str) -> bool {
    arr(pod, "/spec/initContainers")
        .iter()
        .any(|c| s(c, "/name") == name && s(c, "/restartPolicy") == "Always")
}

fn terminated_reason(state: &Value, prefix: &str) -> String {
    let reason = s(state, "/reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = i(state, "/signal");
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", i(state, "/exitCode"))
    }
}

/// Pod status text, ready/total counts and restarts, following upstream's `printPod`.
struct PodSummary {
    reason: String,
    ready: i64,
    total: i64,
    restarts: Restarts,
}

fn init_containers(pod: &Value, sum: &mut PodSummary, sidecar_restarts: &mut Restarts) -> bool {
    let init_total = arr(pod, "/spec/initContainers").len();
    for (idx, c) in arr(pod, "/status/initContainerStatuses").iter().enumerate() {
        sum.restarts.add(c);
        let restartable = is_restartable_init(pod, s(c, "/name"));
        if restartable {
            sidecar_restarts.add(c);
        }
        let terminated = c.at("/state/terminated").filter(|t| t.is_object());
        let waiting_reason = s(c, "/state/waiting/reason");
        if terminated.is_some_and(|t| i(t, "/exitCode") == 0) {
            continue;
        }
        if restartable && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                sum.ready += 1;
            }
            continue;
        }
        sum.reason = match terminated {
            Some(t) => terminated_reason(t, "Init:"),
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                format!("Init:{waiting_reason}")
            }
            None => format!("Init:{idx}/{init_total}"),
        };
        return true;
    }
    false
}

fn main_containers(pod: &Value, sum: &mut PodSummary) {
    let mut has_running = false;
    for c in arr(pod, "/status/containerStatuses").iter().rev() {
        sum.restarts.add(c);
        let waiting = s(c, "/state/waiting/reason");
        let terminated = c.at("/state/terminated").filter(|t| t.is_object());
        if !waiting.is_empty() {
            sum.reason = waiting.to_owned();
        } else if let Some(t) = terminated {
            sum.reason = terminated_reason(t, "");
        } else if c.get("ready").and_then(Value::as_bool) == Some(true)
            && c.at("/state/running").is_some_and(Value::is_object)
        {
            has_running = true;
            sum.ready += 1;
        }
    }
    if sum.reason == "Completed" && has_running {
        sum.reason = if has_true_condition(pod, "/status/conditions", "Ready") {
            "Running".to_owned()
        } else {
            "NotReady".to_owned()
        };
    }
}

fn summarize_pod(pod: &Value) -> PodSummary {
    let phase = s(pod, "/status/phase");
    let mut reason = if s(pod, "/status/reason").is_empty() {
        phase
    } else {
        s(pod, "/status/reason")
    }
    .to_owned();
    let gated = arr(pod, "/status/conditions")
        .iter()
        .any(|c| s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated");
    if gated {
        reason = "SchedulingGated".to_owned();
    }
    let sidecars = arr(pod, "/spec/initContainers")
        .iter()
        .filter(|c| s(c, "/restartPolicy") == "Always")
        .count();
    let total = (arr(pod, "/spec/containers").len() + sidecars) as i64;
    let mut sum = PodSummary {
        reason,
        ready: 0,
        total,
        restarts: Restarts::default(),
    };
    let mut sidecar_restarts = Restarts::default();
    let initializing = init_containers(pod, &mut sum, &mut sidecar_restarts);
    if !initializing || has_true_condition(pod, "/status/conditions", "Initialized") {
        sum.restarts = sidecar_restarts;
        main_containers(pod, &mut sum);
    }
    let terminal = matches!(phase, "Succeeded" | "Failed");
    if deleting(pod) && s(pod, "/status/reason") == "NodeLost" {
        sum.reason = "Unknown".to_owned();
    } else if deleting(pod) && !terminal {
        sum.reason = "Terminating".to_owned();
    }
    sum
}

fn readiness_gates(pod: &Value) -> String {
    let gates = arr(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return "<none>".to_owned();
    }
    let conditions = arr(pod, "/status/conditions");
    let true_count = gates
        .iter()
        .filter(|g| {
            let ty = s(g, "/conditionType");
            conditions
                .iter()
                .find(|c| s(c, "/type") == ty)
                .is_some_and(|c| s(c, "/status") == "True")
        })
        .count();
    format!("{true_count}/{}", gates.len())
}

fn print_pod(pod: &Value, now: i64) -> Row {
    let sum = summarize_pod(pod);
    let restarts = match sum.restarts.last {
        Some(t) if sum.restarts.count != 0 => {
            format!("{} ({} ago)", sum.restarts.count, human_duration(now - t))
        }
        _ => sum.restarts.count.to_string(),
    };
    let ip = arr(pod, "/status/podIPs")
        .first()
        .map(|p| s(p, "/ip"))
        .unwrap_or("");
    let none = |v: &str| {
        if v.is_empty() {
            "<none>".to_owned()
        } else {
            v.to_owned()
        }
    };
    let mut row = Row::new(vec![
        json!(name(pod)),
        json!(format!("{}/{}", sum.ready, sum.total)),
        json!(sum.reason),
        json!(restarts),
        json!(since(created(pod), now)),
        json!(none(ip)),
        json!(none(s(pod, "/spec/nodeName"))),
        json!(none(s(pod, "/status/nominatedNodeName"))),
        json!(readiness_gates(pod)),
    ]);
    row.conditions = match s(pod, "/status/phase") {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };
    row
}

// ---- controllers ----

fn template_cells(obj: &Value, with_selector: bool) -> Vec<Value> {
    let (containers, images) = containers_and_images(obj.at("/spec/template/spec"));
    let mut cells = vec![json!(containers), json!(images)];
    if with_selector {
        cells.push(json!(label_selector(obj.at("/spec/selector"))));
    }
    cells
}

const DEPLOYMENT: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Ready",
            "string",
            sentence("Number of the pod with ready state"),
        ),
        col(
            "Up-to-date",
            "string",
            field("io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas"),
        ),
        col(
            "Available",
            "string",
            field("io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            field("io.k8s.api.apps.v1.DeploymentSpec", "selector"),
        ),
    ],
    print: |d, now| {
        let mut cells = vec![
            json!(name(d)),
            json!(format!(
                "{}/{}",
                i(d, "/status/readyReplicas"),
                i(d, "/spec/replicas")
            )),
            json!(i(d, "/status/updatedReplicas")),
            json!(i(d, "/status/availableReplicas")),
            json!(since(created(d), now)),
        ];
        cells.extend(template_cells(d, true));
        Row::new(cells)
    },
};

fn print_replicas(obj: &Value, now: i64, selector: String) -> Row {
    let (containers, images) = containers_and_images(obj.at("/spec/template/spec"));
    Row::new(vec![
        json!(name(obj)),
        json!(i(obj, "/spec/replicas")),
        json!(i(obj, "/status/replicas")),
        json!(i(obj, "/status/readyReplicas")),
        json!(since(created(obj), now)),
        json!(containers),
        json!(images),
        json!(selector),
    ])
}

const REPLICA_SET: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Desired",
            "integer",
            field("io.k8s.api.apps.v1.ReplicaSetSpec", "replicas"),
        ),
        col(
            "Current",
            "integer",
            field("io.k8s.api.apps.v1.ReplicaSetStatus", "replicas"),
        ),
        col(
            "Ready",
            "integer",
            field("io.k8s.api.apps.v1.ReplicaSetStatus", "readyReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            field("io.k8s.api.apps.v1.ReplicaSetSpec", "selector"),
        ),
    ],
    print: |rs, now| print_replicas(rs, now, label_selector(rs.at("/spec/selector"))),
};

const REPLICATION_CONTROLLER: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Desired",
            "integer",
            field("io.k8s.api.core.v1.ReplicationControllerSpec", "replicas"),
        ),
        col(
            "Current",
            "integer",
            field("io.k8s.api.core.v1.ReplicationControllerStatus", "replicas"),
        ),
        col(
            "Ready",
            "integer",
            field(
                "io.k8s.api.core.v1.ReplicationControllerStatus",
                "readyReplicas",
            ),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            field("io.k8s.api.core.v1.ReplicationControllerSpec", "selector"),
        ),
    ],
    // A ReplicationController's selector is a plain label map.
    print: |rc, now| {
        let selector = super::util::format_labels(rc.at("/spec/selector"));
        let selector = if selector == "<none>" {
            String::new()
        } else {
            selector
        };
        print_replicas(rc, now, selector)
    },
};

const STATEFUL_SET: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Ready",
            "string",
            sentence("Number of the pod with ready state"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
    ],
    print: |ss, now| {
        let mut cells = vec![
            json!(name(ss)),
            json!(format!(
                "{}/{}",
                i(ss, "/status/readyReplicas"),
                i(ss, "/spec/replicas")
            )),
            json!(since(created(ss), now)),
        ];
        cells.extend(template_cells(ss, false));
        Row::new(cells)
    },
};

const DAEMON_SET: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Desired",
            "integer",
            field(
                "io.k8s.api.apps.v1.DaemonSetStatus",
                "desiredNumberScheduled",
            ),
        ),
        col(
            "Current",
            "integer",
            field(
                "io.k8s.api.apps.v1.DaemonSetStatus",
                "currentNumberScheduled",
            ),
        ),
        col(
            "Ready",
            "integer",
            field("io.k8s.api.apps.v1.DaemonSetStatus", "numberReady"),
        ),
        col(
            "Up-to-date",
            "integer",
            field(
                "io.k8s.api.apps.v1.DaemonSetStatus",
                "updatedNumberScheduled",
            ),
        ),
        col(
            "Available",
            "integer",
            field("io.k8s.api.apps.v1.DaemonSetStatus", "numberAvailable"),
        ),
        col(
            "Node Selector",
            "string",
            field("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            field("io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
        ),
    ],
    print: |ds, now| {
        let mut cells = vec![
            json!(name(ds)),
            json!(i(ds, "/status/desiredNumberScheduled")),
            json!(i(ds, "/status/currentNumberScheduled")),
            json!(i(ds, "/status/numberReady")),
            json!(i(ds, "/status/updatedNumberScheduled")),
            json!(i(ds, "/status/numberAvailable")),
            json!(super::util::format_labels(
                ds.at("/spec/template/spec/nodeSelector")
            )),
            json!(since(created(ds), now)),
        ];
        cells.extend(template_cells(ds, true));
        Row::new(cells)
    },
};

// ---- batch ----

fn job_status(job: &Value) -> &'static str {
    let has = |ty| has_true_condition(job, "/status/conditions", ty);
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if deleting(job) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

fn job_completions(job: &Value) -> String {
    let succeeded = i(job, "/status/succeeded");
    if let Some(c) = job.at("/spec/completions").and_then(Value::as_i64) {
        return format!("{succeeded}/{c}");
    }
    let parallelism = i(job, "/spec/parallelism");
    if parallelism > 1 {
        format!("{succeeded}/1 of {parallelism}")
    } else {
        format!("{succeeded}/1")
    }
}

fn job_duration(job: &Value, now: i64) -> String {
    let Some(start) = parse_rfc3339(s(job, "/status/startTime")) else {
        return String::new();
    };
    match parse_rfc3339(s(job, "/status/completionTime")) {
        Some(end) => human_duration(end - start),
        None => human_duration(now - start),
    }
}

const JOB: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", sentence("Status of the job.")),
        col(
            "Completions",
            "string",
            field("io.k8s.api.batch.v1.JobStatus", "succeeded"),
        ),
        col(
            "Duration",
            "string",
            sentence("Time required to complete the job."),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            field("io.k8s.api.batch.v1.JobSpec", "selector"),
        ),
    ],
    print: |job, now| {
        let mut cells = vec![
            json!(name(job)),
            json!(job_status(job)),
            json!(job_completions(job)),
            json!(job_duration(job, now)),
            json!(since(created(job), now)),
        ];
        cells.extend(template_cells(job, true));
        Row::new(cells)
    },
};

const CRON_JOB: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Schedule",
            "string",
            field("io.k8s.api.batch.v1.CronJobSpec", "schedule"),
        ),
        col(
            "Timezone",
            "string",
            field("io.k8s.api.batch.v1.CronJobSpec", "timeZone"),
        ),
        col(
            "Suspend",
            "boolean",
            field("io.k8s.api.batch.v1.CronJobSpec", "suspend"),
        ),
        col(
            "Active",
            "integer",
            field("io.k8s.api.batch.v1.CronJobStatus", "active"),
        ),
        col(
            "Last Schedule",
            "string",
            field("io.k8s.api.batch.v1.CronJobStatus", "lastScheduleTime"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            field("io.k8s.api.batch.v1.JobSpec", "selector"),
        ),
    ],
    print: |cj, now| {
        let suspend = match cj.at("/spec/suspend").and_then(Value::as_bool) {
            None => "<unset>",
            Some(true) => "True",
            Some(false) => "False",
        };
        let last = match cj.at("/status/lastScheduleTime").and_then(Value::as_str) {
            Some(t) => since(Some(t), now),
            None => "<none>".to_owned(),
        };
        let tz = cj
            .at("/spec/timeZone")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        let (containers, images) =
            containers_and_images(cj.at("/spec/jobTemplate/spec/template/spec"));
        let selector = label_selector(cj.at("/spec/jobTemplate/spec/selector"));
        Row::new(vec![
            json!(name(cj)),
            json!(s(cj, "/spec/schedule")),
            json!(tz),
            json!(suspend),
            json!(arr(cj, "/status/active").len()),
            json!(last),
            json!(since(created(cj), now)),
            json!(containers),
            json!(images),
            json!(super::util::or_none(selector)),
        ])
    },
};
