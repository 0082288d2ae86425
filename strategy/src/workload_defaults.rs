//! Defaults and initial status of apps/v1 and batch/v1 workloads and core/v1
//! ReplicationControllers, plus the Job selector generation.

use crate::json::{child, child_if, default, each_obj, str_at};
use crate::kind::Kind;
use crate::podspec_defaults::default_pod_template;
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Map, Value};

/// Default `revisionHistoryLimit` of Deployments, StatefulSets and DaemonSets.
pub const REVISION_HISTORY_LIMIT_DEFAULT: i64 = 10;
/// Default `progressDeadlineSeconds` of Deployments.
pub const PROGRESS_DEADLINE_SECONDS_DEFAULT: i64 = 600;
/// Default `backoffLimit` of Jobs.
pub const BACKOFF_LIMIT_DEFAULT: i64 = 6;
/// `backoffLimit` when `backoffLimitPerIndex` is set (math.MaxInt32).
pub const BACKOFF_LIMIT_UNLIMITED: i64 = i32::MAX as i64;

/// Applies the defaults of a workload kind (no-op for other kinds).
pub fn apply(kind: Kind, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match kind {
        Kind::Deployment => deployment(map),
        Kind::ReplicaSet => replicas_and_template(map),
        Kind::StatefulSet => statefulset(map),
        Kind::DaemonSet => daemonset(map),
        Kind::Job => job(map),
        Kind::CronJob => cronjob(map),
        Kind::ReplicationController => replication_controller(map),
        _ => {}
    }
}

/// Status a newly created workload starts with (what upstream's zero status serializes to).
pub fn initial_status(kind: Kind) -> Option<Value> {
    Some(match kind {
        Kind::Deployment | Kind::Job | Kind::CronJob => json!({}),
        Kind::ReplicaSet | Kind::ReplicationController => json!({"replicas": 0}),
        Kind::StatefulSet => json!({"replicas": 0, "availableReplicas": 0}),
        Kind::DaemonSet => json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                  "desiredNumberScheduled": 0, "numberReady": 0}),
        _ => return None,
    })
}

fn template_defaults(spec: &mut Map<String, Value>) {
    if let Some(t) = spec.get_mut("template") {
        default_pod_template(t);
    }
}

fn replicas_and_template(map: &mut Map<String, Value>) {
    if let Some(spec) = child(map, "spec") {
        default(spec, "replicas", json!(1));
        template_defaults(spec);
    }
}

fn deployment(map: &mut Map<String, Value>) {
    replicas_and_template(map);
    let Some(spec) = child(map, "spec") else {
        return;
    };
    let Some(strategy) = child(spec, "strategy") else {
        return;
    };
    default(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        if let Some(ru) = child(strategy, "rollingUpdate") {
            default(ru, "maxUnavailable", json!("25%"));
            default(ru, "maxSurge", json!("25%"));
        }
    }
    default(
        spec,
        "revisionHistoryLimit",
        json!(REVISION_HISTORY_LIMIT_DEFAULT),
    );
    default(
        spec,
        "progressDeadlineSeconds",
        json!(PROGRESS_DEADLINE_SECONDS_DEFAULT),
    );
}

fn statefulset(map: &mut Map<String, Value>) {
    replicas_and_template(map);
    let Some(spec) = child(map, "spec") else {
        return;
    };
    default(spec, "podManagementPolicy", json!("OrderedReady"));
    if let Some(us) = child(spec, "updateStrategy") {
        default(us, "type", json!("RollingUpdate"));
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            if let Some(ru) = child(us, "rollingUpdate") {
                default(ru, "partition", json!(0));
            }
        }
    }
    default(
        spec,
        "revisionHistoryLimit",
        json!(REVISION_HISTORY_LIMIT_DEFAULT),
    );
    if let Some(p) = child(spec, "persistentVolumeClaimRetentionPolicy") {
        default(p, "whenDeleted", json!("Retain"));
        default(p, "whenScaled", json!("Retain"));
    }
    for pvc in each_obj(spec, "volumeClaimTemplates") {
        if let Some(meta) = child(pvc, "metadata") {
            keel_api::meta::drop_zero_creation_timestamp(meta);
        }
        if let Some(s) = child(pvc, "spec") {
            default(s, "volumeMode", json!("Filesystem"));
        }
        if let Some(st) = child(pvc, "status") {
            default(st, "phase", json!("Pending"));
        }
    }
}

fn daemonset(map: &mut Map<String, Value>) {
    let Some(spec) = child(map, "spec") else {
        return;
    };
    template_defaults(spec);
    if let Some(us) = child(spec, "updateStrategy") {
        default(us, "type", json!("RollingUpdate"));
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            if let Some(ru) = child(us, "rollingUpdate") {
                default(ru, "maxUnavailable", json!(1));
                default(ru, "maxSurge", json!(0));
            }
        }
    }
    default(
        spec,
        "revisionHistoryLimit",
        json!(REVISION_HISTORY_LIMIT_DEFAULT),
    );
}

fn job_spec(spec: &mut Map<String, Value>) {
    let unset = |s: &Map<String, Value>, k: &str| s.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    default(spec, "parallelism", json!(1));
    let limit = if unset(spec, "backoffLimitPerIndex") {
        BACKOFF_LIMIT_DEFAULT
    } else {
        BACKOFF_LIMIT_UNLIMITED
    };
    default(spec, "backoffLimit", json!(limit));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    default(spec, "podReplacementPolicy", json!(replacement));
    template_defaults(spec);
}

fn job(map: &mut Map<String, Value>) {
    let Some(spec) = child(map, "spec") else {
        return;
    };
    job_spec(spec);
    // A Job's own default; a CronJob's job template does not get it.
    default(spec, "manualSelector", json!(false));
    let template_labels = spec
        .get("template")
        .and_then(|t| t.at("/metadata/labels"))
        .cloned();
    let Some(meta) = child(map, "metadata") else {
        return;
    };
    let no_labels = meta
        .get("labels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if let (true, Some(l)) = (no_labels, template_labels) {
        meta.insert("labels".into(), l);
    }
}

fn cronjob(map: &mut Map<String, Value>) {
    let Some(spec) = child(map, "spec") else {
        return;
    };
    default(spec, "concurrencyPolicy", json!("Allow"));
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    let Some(jt) = child_if(spec, "jobTemplate") else {
        return;
    };
    if let Some(meta) = child(jt, "metadata") {
        keel_api::meta::drop_zero_creation_timestamp(meta);
    }
    if let Some(js) = child_if(jt, "spec") {
        template_defaults(js);
    }
}

fn replication_controller(map: &mut Map<String, Value>) {
    replicas_and_template(map);
    let template_labels = map
        .get("spec")
        .and_then(|s| s.at("/template/metadata/labels"))
        .cloned();
    let Some(labels) = template_labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
    else {
        return;
    };
    if let Some(spec) = child(map, "spec") {
        let empty = spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if empty {
            spec.insert("selector".into(), labels.clone());
        }
    }
    if let Some(meta) = child(map, "metadata") {
        let empty = meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if empty {
            meta.insert("labels".into(), labels);
        }
    }
}

/// Label keys upstream puts on a Job's pods and selector.
const JOB_UID_LABELS: &[&str] = &["controller-uid", "batch.kubernetes.io/controller-uid"];
const JOB_NAME_LABELS: &[&str] = &["job-name", "batch.kubernetes.io/job-name"];

/// Generates a Job's selector and template labels from its uid (unless `manualSelector`).
/// Upstream does this during validation, after the uid is assigned; no-op without a uid.
pub fn job_generate_selector(job: &mut Value) {
    let uid = str_at(job, "metadata.uid").to_string();
    let name = str_at(job, "metadata.name").to_string();
    let manual = job.at("/spec/manualSelector").and_then(Value::as_bool) == Some(true);
    if uid.is_empty() || manual {
        return;
    }
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(labels) = child(spec, "template")
        .and_then(|t| child(t, "metadata"))
        .and_then(|m| child(m, "labels"))
    {
        for k in JOB_UID_LABELS {
            labels.entry(*k).or_insert(json!(uid));
        }
        for k in JOB_NAME_LABELS {
            labels.entry(*k).or_insert(json!(name));
        }
    }
    if let Some(ml) = child(spec, "selector").and_then(|s| child(s, "matchLabels")) {
        ml.entry(JOB_UID_LABELS[1]).or_insert(json!(uid));
    }
}
