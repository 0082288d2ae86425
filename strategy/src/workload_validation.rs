//! Validation of workloads (apps/v1, batch/v1, core/v1 ReplicationController) and their updates.

use crate::errors::{Bad, FieldErr};
use crate::json::{at, str_at};
use crate::kind::Kind;
use crate::podspec_validation::validate_pod_spec;
use crate::selector;
use keel_api::jsonmap::JsonPointer;
use serde_json::Value;

const NONNEGATIVE: &str = "must be greater than or equal to 0";
const IMMUTABLE: &str = "field is immutable";
const JOB_RESTART_POLICIES: &[&str] = &["OnFailure", "Never"];
const CONCURRENCY_POLICIES: &[&str] = &["Allow", "Forbid", "Replace"];
/// CronJob names leave room for the 11-character suffix of their Jobs.
pub const CRONJOB_NAME_LEN_MAX: usize = 52;

/// Validates the spec of a workload kind.
pub fn validate(kind: Kind, obj: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match kind {
        Kind::Deployment => {
            replicated(spec, "deployment", &mut errs);
            deployment(spec, &mut errs);
        }
        Kind::ReplicaSet => replicated(spec, "deployment", &mut errs),
        Kind::StatefulSet => replicated(spec, "statefulset", &mut errs),
        Kind::DaemonSet => {
            selected_template(spec, "daemonset", &mut errs);
            enum_opt(
                spec,
                "spec.updateStrategy.type",
                &["OnDelete", "RollingUpdate"],
                &mut errs,
            );
        }
        Kind::ReplicationController => rc(spec, &mut errs),
        Kind::Job => job_spec(spec, "spec", &mut errs),
        Kind::CronJob => cronjob(obj, spec, &mut errs),
        _ => {}
    }
    errs
}

fn nonnegative(spec: &Value, field: &str, errs: &mut Vec<FieldErr>) {
    let key = field.rsplit('.').next().unwrap_or(field);
    if let Some(n) = spec.get(key).and_then(Value::as_i64) {
        if n < 0 {
            errs.push(FieldErr::invalid(field, n, NONNEGATIVE));
        }
    }
}

fn enum_opt(spec: &Value, field: &str, allowed: &[&str], errs: &mut Vec<FieldErr>) {
    let rel = field.strip_prefix("spec.").unwrap_or(field);
    if let Some(v) = at(spec, rel).and_then(Value::as_str) {
        if !allowed.contains(&v) {
            errs.push(FieldErr::not_supported(field, v, allowed));
        }
    }
}

/// Replicas, selector and a template whose labels the selector matches.
fn replicated(spec: &Value, empty_word: &str, errs: &mut Vec<FieldErr>) {
    nonnegative(spec, "spec.replicas", errs);
    nonnegative(spec, "spec.minReadySeconds", errs);
    nonnegative(spec, "spec.revisionHistoryLimit", errs);
    selected_template(spec, empty_word, errs);
}

fn selected_template(spec: &Value, empty_word: &str, errs: &mut Vec<FieldErr>) {
    let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) else {
        errs.push(FieldErr::required("spec.selector", ""));
        template(spec, &Value::Null, errs);
        return;
    };
    errs.extend(selector::validate(sel, "spec.selector"));
    if selector::is_empty(sel) {
        let msg = format!("empty selector is invalid for {empty_word}");
        errs.push(FieldErr::invalid("spec.selector", selector::bad(sel), &msg));
    }
    template(spec, sel, errs);
}

fn template(spec: &Value, sel: &Value, errs: &mut Vec<FieldErr>) {
    let Some(t) = spec.get("template") else {
        errs.push(FieldErr::required("spec.template", ""));
        return;
    };
    let labels = t.at("/metadata/labels");
    if !sel.is_null() && !selector::is_empty(sel) && !selector::matches(sel, labels) {
        errs.push(FieldErr::invalid(
            "spec.template.metadata.labels",
            Bad::Raw(crate::errors::go_string_map(labels)),
            "`selector` does not match template `labels`",
        ));
    }
    pod_template(t, "spec.template", errs);
    let rp = str_at(t, "spec.restartPolicy");
    if rp != "Always" {
        errs.push(FieldErr::not_supported(
            "spec.template.spec.restartPolicy",
            rp,
            &["Always"],
        ));
    }
    if t.at("/spec/activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        errs.push(FieldErr::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
}

fn pod_template(t: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    errs.extend(crate::selector::validate_labels(
        t.at("/metadata/labels"),
        &format!("{path}.metadata.labels"),
    ));
    let spec = t.get("spec").unwrap_or(&Value::Null);
    errs.extend(validate_pod_spec(spec, &format!("{path}.spec")));
}

fn deployment(spec: &Value, errs: &mut Vec<FieldErr>) {
    enum_opt(
        spec,
        "spec.strategy.type",
        &["Recreate", "RollingUpdate"],
        errs,
    );
    let strategy = spec.get("strategy").unwrap_or(&Value::Null);
    if str_at(strategy, "type") == "Recreate"
        && strategy.get("rollingUpdate").is_some_and(|v| !v.is_null())
    {
        errs.push(FieldErr::forbidden(
            "spec.strategy.rollingUpdate",
            "may not be specified when strategy `type` is 'Recreate'",
        ));
    }
    if let Some(ru) = strategy.get("rollingUpdate") {
        rolling_update(ru, "spec.strategy.rollingUpdate", errs);
    }
    let pds = spec.get("progressDeadlineSeconds").and_then(Value::as_i64);
    let mrs = spec
        .get("minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(p) = pds {
        if p < 0 {
            errs.push(FieldErr::invalid(
                "spec.progressDeadlineSeconds",
                p,
                NONNEGATIVE,
            ));
        } else if p <= mrs {
            errs.push(FieldErr::invalid(
                "spec.progressDeadlineSeconds",
                p,
                "must be greater than minReadySeconds",
            ));
        }
    }
}

/// An int-or-percent: `(value, is_percent)`; `None` when malformed.
fn int_or_percent(v: &Value) -> Option<(i64, bool)> {
    match v {
        Value::Number(n) => n.as_i64().map(|n| (n, false)),
        Value::String(s) => s.strip_suffix('%')?.parse().ok().map(|n| (n, true)),
        _ => None,
    }
}

fn rolling_update(ru: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    let mut zero = [false; 2];
    for (i, key) in ["maxUnavailable", "maxSurge"].iter().enumerate() {
        let Some(v) = ru.get(*key).filter(|v| !v.is_null()) else {
            continue;
        };
        let field = format!("{path}.{key}");
        match int_or_percent(v) {
            None => errs.push(FieldErr::invalid(&field, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")),
            Some((n, _)) if n < 0 => errs.push(FieldErr::invalid(&field, v, NONNEGATIVE)),
            Some((n, true)) if n > 100 && *key == "maxUnavailable" => {
                errs.push(FieldErr::invalid(&field, v, "must not be greater than 100%"))
            }
            Some((n, _)) => zero[i] = n == 0,
        }
    }
    if zero[0] && zero[1] {
        let v = ru.get("maxUnavailable").cloned().unwrap_or_default();
        errs.push(FieldErr::invalid(
            &format!("{path}.maxUnavailable"),
            &v,
            "may not be 0 when `maxSurge` is 0",
        ));
    }
}

fn rc(spec: &Value, errs: &mut Vec<FieldErr>) {
    nonnegative(spec, "spec.replicas", errs);
    nonnegative(spec, "spec.minReadySeconds", errs);
    let sel = spec.get("selector").cloned().unwrap_or(Value::Null);
    if sel.as_object().is_none_or(|m| m.is_empty()) {
        errs.push(FieldErr::required("spec.selector", ""));
    }
    errs.extend(crate::selector::validate_labels(
        Some(&sel),
        "spec.selector",
    ));
    let as_selector = serde_json::json!({ "matchLabels": sel });
    template(spec, &as_selector, errs);
}

fn job_spec(spec: &Value, path: &str, errs: &mut Vec<FieldErr>) {
    for key in [
        "parallelism",
        "completions",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ] {
        nonnegative(spec, &format!("{path}.{key}"), errs);
    }
    if let Some(ads) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if ads <= 0 {
            let f = format!("{path}.activeDeadlineSeconds");
            errs.push(FieldErr::invalid(
                &f,
                ads,
                "must be greater than or equal to 1",
            ));
        }
    }
    enum_opt(
        spec,
        &format!("{path}.completionMode"),
        &["NonIndexed", "Indexed"],
        errs,
    );
    let indexed = str_at(spec, "completionMode") == "Indexed";
    if indexed && spec.get("completions").is_none_or(Value::is_null) {
        errs.push(FieldErr::required(
            &format!("{path}.completions"),
            "when completion mode is Indexed",
        ));
    }
    let Some(t) = spec.get("template") else {
        errs.push(FieldErr::required(&format!("{path}.template"), ""));
        return;
    };
    let tpath = format!("{path}.template");
    pod_template(t, &tpath, errs);
    let rp = str_at(t, "spec.restartPolicy");
    if !JOB_RESTART_POLICIES.contains(&rp) {
        let f = format!("{tpath}.spec.restartPolicy");
        errs.push(FieldErr::not_supported(&f, rp, JOB_RESTART_POLICIES));
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        errs.extend(selector::validate(sel, &format!("{path}.selector")));
        let labels = t.at("/metadata/labels");
        if !selector::matches(sel, labels) {
            errs.push(FieldErr::invalid(
                &format!("{tpath}.metadata.labels"),
                Bad::Raw(crate::errors::go_string_map(labels)),
                "`selector` does not match template `labels`",
            ));
        }
    }
}

fn cronjob(obj: &Value, spec: &Value, errs: &mut Vec<FieldErr>) {
    let name = str_at(obj, "metadata.name");
    if name.len() > CRONJOB_NAME_LEN_MAX {
        let msg = crate::names::max_len_error(CRONJOB_NAME_LEN_MAX);
        errs.push(FieldErr::invalid("metadata.name", name, &msg));
    }
    let schedule = str_at(spec, "schedule");
    if schedule.is_empty() {
        errs.push(FieldErr::required("spec.schedule", ""));
    } else if let Err(msg) = crate::cron::check(schedule) {
        errs.push(FieldErr::invalid("spec.schedule", schedule, &msg));
    }
    enum_opt(spec, "spec.concurrencyPolicy", CONCURRENCY_POLICIES, errs);
    for key in [
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
        "startingDeadlineSeconds",
    ] {
        nonnegative(spec, &format!("spec.{key}"), errs);
    }
    match spec.at("/jobTemplate/spec") {
        Some(js) => job_spec(js, "spec.jobTemplate.spec", errs),
        None => errs.push(FieldErr::required("spec.jobTemplate.spec", "")),
    }
}

/// Update rules: immutable selectors, Job template/completions, StatefulSet spec limits.
pub fn validate_update(kind: Kind, new: &Value, old: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let immutable = |path: &str, errs: &mut Vec<FieldErr>| {
        let (n, o) = (new.at(path), old.at(path));
        if n.filter(|v| !v.is_null()) != o.filter(|v| !v.is_null()) {
            let field = path.trim_start_matches('/').replace('/', ".");
            let shown = n.map_or(Bad::Raw("null".into()), |v| Bad::Raw(v.to_string()));
            errs.push(FieldErr::invalid(&field, shown, IMMUTABLE));
        }
    };
    match kind {
        Kind::Deployment | Kind::ReplicaSet | Kind::DaemonSet => {
            immutable("/spec/selector", &mut errs)
        }
        Kind::StatefulSet => statefulset_update(new, old, &mut errs),
        Kind::Job => {
            immutable("/spec/selector", &mut errs);
            immutable("/spec/completions", &mut errs);
            immutable("/spec/completionMode", &mut errs);
            let suspended = new.at("/spec/suspend") == Some(&Value::Bool(true))
                || old.at("/spec/suspend") == Some(&Value::Bool(true));
            if !suspended {
                immutable("/spec/template", &mut errs);
            }
        }
        _ => {}
    }
    errs
}

const STS_MUTABLE: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

fn statefulset_update(new: &Value, old: &Value, errs: &mut Vec<FieldErr>) {
    let strip = |v: &Value| {
        let mut s = v.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(m) = s.as_object_mut() {
            m.retain(|k, v| !STS_MUTABLE.contains(&k.as_str()) && !v.is_null());
        }
        s
    };
    if strip(new) != strip(old) {
        errs.push(FieldErr::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}
