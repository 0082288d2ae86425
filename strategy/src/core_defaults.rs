//! Defaults, admission additions and validation of core kinds without a module of their own:
//! Endpoints, PodTemplates, PersistentVolumes and claims, EndpointSlices, the Node taint and
//! the DaemonSet template generation added on create, upstream's event rules (create and
//! events.k8s.io update) and a PersistentVolume's volume source rules. The
//! StorageObjectInUseProtection finalizers are all here, storage.k8s.io's
//! VolumeAttributesClass's too, so that admission plugin's whole rule is in one place.
//!
//! Values were checked against kube-apiserver v1.36.2 create answers.

use crate::errors::{Bad, FieldErr};
use crate::gojson::{self, F, T};
use crate::json::{child, default, each_obj, str_at};
use crate::kind::Kind;
use crate::podspec_defaults::{default_plugin_sources, default_pod_template};
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Map, Value};

/// Finalizer upstream's StorageObjectInUseProtection admission puts on new PersistentVolumes.
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";
/// Finalizer upstream's StorageObjectInUseProtection admission puts on new claims.
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// Finalizer upstream's StorageObjectInUseProtection admission puts on new
/// VolumeAttributesClasses (every served version).
pub const VAC_PROTECTION_FINALIZER: &str = "kubernetes.io/vac-protection";
/// Taint upstream's TaintNodesByCondition admission puts on new Nodes.
pub const NOT_READY_TAINT_KEY: &str = "node.kubernetes.io/not-ready";
/// Annotation apps/v1 shows a DaemonSet's internal template generation in.
pub const DAEMONSET_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// Whether this module defaults the kind.
pub fn owns(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Endpoints
            | Kind::PodTemplate
            | Kind::PersistentVolume
            | Kind::PersistentVolumeClaim
            | Kind::EndpointSlice
            | Kind::Event
            | Kind::EventV1
    )
}

/// Sets `map[key] = value` when the key is absent (a present `null` stays).
fn absent(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.entry(key).or_insert(value);
}

/// The schema defaults of the kinds this module [`owns`].
pub fn apply(kind: Kind, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match kind {
        Kind::Endpoints => {
            for subset in each_obj(map, "subsets") {
                for port in each_obj(subset, "ports") {
                    default(port, "protocol", json!("TCP"));
                }
            }
        }
        Kind::PodTemplate => {
            if let Some(t) = map.get_mut("template") {
                default_pod_template(t);
            }
        }
        Kind::PersistentVolume => {
            if let Some(spec) = child(map, "spec") {
                let empty = |v: Option<&Value>| v.is_none_or(|x| x.is_null() || x == "");
                if empty(spec.get("persistentVolumeReclaimPolicy")) {
                    spec.insert("persistentVolumeReclaimPolicy".into(), json!("Retain"));
                }
                default(spec, "volumeMode", json!("Filesystem"));
                default_plugin_sources(spec);
            }
        }
        Kind::PersistentVolumeClaim => {
            if let Some(spec) = child(map, "spec") {
                default(spec, "volumeMode", json!("Filesystem"));
            }
        }
        Kind::EndpointSlice => {
            for ep in each_obj(map, "endpoints") {
                default(ep, "conditions", json!({}));
            }
            for port in each_obj(map, "ports") {
                default(port, "name", json!(""));
                default(port, "protocol", json!("TCP"));
            }
        }
        // What Go prints for an event's zero members without `omitempty` or of struct type:
        // zero times as `null`, empty sources and references as `{}`, strings as `""`.
        Kind::Event => {
            absent(map, "involvedObject", json!({}));
            absent(map, "source", json!({}));
            for key in ["firstTimestamp", "lastTimestamp", "eventTime"] {
                absent(map, key, Value::Null);
            }
            absent(map, "reportingComponent", json!(""));
            absent(map, "reportingInstance", json!(""));
        }
        Kind::EventV1 => {
            absent(map, "eventTime", Value::Null);
            absent(map, "regarding", json!({}));
            absent(map, "deprecatedSource", json!({}));
            absent(map, "deprecatedFirstTimestamp", Value::Null);
            absent(map, "deprecatedLastTimestamp", Value::Null);
        }
        _ => {}
    }
}

/// What upstream's admission plugins and create strategies add to a new object: the
/// protection finalizers of volumes, claims and volume attributes classes, the not-ready taint of a Node, and the
/// template generation of a DaemonSet. Upstream does none of this on update.
pub fn admit_create(kind: Kind, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match kind {
        Kind::PersistentVolume => add_finalizer(map, PV_PROTECTION_FINALIZER),
        Kind::PersistentVolumeClaim => add_finalizer(map, PVC_PROTECTION_FINALIZER),
        Kind::VolumeAttributesClass => add_finalizer(map, VAC_PROTECTION_FINALIZER),
        Kind::Node => add_not_ready_taint(map),
        Kind::DaemonSet => {
            let generation = template_generation(map).max(1);
            set_template_generation(map, generation);
        }
        _ => {}
    }
}

/// What an update keeps or bumps beyond the generic rules: a DaemonSet's template
/// generation (the stored one, plus one when the pod template changed) and an EndpointSlice's
/// generation (also bumped on label changes). Call after the generic update preparation.
pub fn prepare_update(kind: Kind, new: &mut Value, old: &Value) {
    match kind {
        Kind::DaemonSet => {
            let old_generation = old.as_object().map(template_generation).unwrap_or_default();
            let changed = new.at("/spec/template") != old.at("/spec/template");
            if let Some(map) = new.as_object_mut() {
                set_template_generation(map, old_generation + i64::from(changed));
            }
        }
        Kind::EndpointSlice => {
            let old_gen = old
                .at("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let same_gen = new.at("/metadata/generation").and_then(Value::as_i64) == Some(old_gen);
            let labels = |o: &Value| {
                o.at("/metadata/labels")
                    .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
                    .cloned()
            };
            if same_gen && labels(new) != labels(old) {
                crate::generic::bump_generation(new, old_gen);
            }
        }
        _ => {}
    }
}

/// A write to a DaemonSet's status keeps its stored template generation.
pub fn prepare_status_update(kind: Kind, new: &mut Value, old: &Value) {
    if kind != Kind::DaemonSet {
        return;
    }
    let old_generation = old.as_object().map(template_generation).unwrap_or_default();
    if let Some(map) = new.as_object_mut() {
        set_template_generation(map, old_generation);
    }
}

fn add_finalizer(map: &mut Map<String, Value>, finalizer: &str) {
    let Some(meta) = child(map, "metadata") else {
        return;
    };
    if !matches!(meta.get("finalizers"), Some(Value::Array(_))) {
        meta.insert("finalizers".into(), json!([]));
    }
    if let Some(list) = meta.get_mut("finalizers").and_then(Value::as_array_mut) {
        if !list.iter().any(|f| f == finalizer) {
            list.push(json!(finalizer));
        }
    }
}

/// Appends `{key: not-ready, effect: NoSchedule}` unless a taint with that key and effect is
/// there (upstream matches on key and effect only).
fn add_not_ready_taint(map: &mut Map<String, Value>) {
    let Some(spec) = child(map, "spec") else {
        return;
    };
    if !matches!(spec.get("taints"), Some(Value::Array(_))) {
        spec.insert("taints".into(), json!([]));
    }
    let Some(taints) = spec.get_mut("taints").and_then(Value::as_array_mut) else {
        return;
    };
    let present = taints
        .iter()
        .any(|t| str_at(t, "key") == NOT_READY_TAINT_KEY && str_at(t, "effect") == "NoSchedule");
    if !present {
        taints.push(json!({"key": NOT_READY_TAINT_KEY, "effect": "NoSchedule"}));
    }
}

/// The template generation a DaemonSet's annotation carries (0 when absent or not a number).
fn template_generation(map: &Map<String, Value>) -> i64 {
    map.get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(DAEMONSET_TEMPLATE_GENERATION))
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn set_template_generation(map: &mut Map<String, Value>, generation: i64) {
    if let Some(annotations) = child(map, "metadata").and_then(|m| child(m, "annotations")) {
        annotations.insert(
            DAEMONSET_TEMPLATE_GENERATION.into(),
            json!(generation.to_string()),
        );
    }
}

/// A PersistentVolume's volume sources in the order upstream's `ValidatePersistentVolumeSpec`
/// visits them: (member, path its "more than 1" error names). `flexVolume` counts but is
/// never refused as a second source, as upstream.
const PV_SOURCES: &[(&str, &str)] = &[
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

/// Part of upstream's `ValidatePersistentVolumeSpec`: one volume source at most, and the
/// rules of a `scaleIO` source (`validateScaleIOPersistentVolumeSource`). The other rules
/// (access modes, capacity, the other sources' members, a missing source) are not done.
pub fn validate_persistent_volume(obj: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut sources = 0;
    for (member, path) in PV_SOURCES {
        let Some(source) = spec.get(*member).filter(|v| !v.is_null()) else {
            continue;
        };
        if sources > 0 && *member != "flexVolume" {
            errs.push(FieldErr::forbidden(
                &format!("spec.{path}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        sources += 1;
        if *member == "scaleIO" {
            for key in ["gateway", "system", "volumeName"] {
                if str_at(source, key).is_empty() {
                    errs.push(FieldErr::required(&format!("spec.scaleIO.{key}"), ""));
                }
            }
        }
    }
    errs
}

/// Longest `reportingInstance`, `action` and `reason` upstream accepts on a new-style event.
pub const EVENT_SHORT_FIELD_MAX: usize = 128;
/// Longest message (`note` in events.k8s.io) of a new-style event.
pub const EVENT_NOTE_MAX: usize = 1024;

/// The members of an event in the API version it was written in; upstream validates the
/// internal form and reports its field names for both versions.
struct EventView<'a> {
    obj: &'a Value,
    /// events.k8s.io/v1 (strict validation; its own member names).
    v1: bool,
}

impl EventView<'_> {
    fn member(&self, core: &str, events_v1: &str) -> &Value {
        let key = if self.v1 { events_v1 } else { core };
        self.obj.get(key).unwrap_or(&Value::Null)
    }
    fn text(&self, core: &str, events_v1: &str) -> &str {
        self.member(core, events_v1).as_str().unwrap_or("")
    }
    fn is_set(&self, core: &str, events_v1: &str) -> bool {
        let v = self.member(core, events_v1);
        !v.is_null() && v != "" && v != 0
    }
}

/// Upstream's `ValidateEventCreate`: the rules every event passes (`strict` false: core/v1),
/// and for events.k8s.io/v1 (`strict` true) those of new-style events. Paths and messages are
/// upstream's, which names the core members even for events.k8s.io.
pub fn validate_event(obj: &Value, strict: bool) -> Vec<FieldErr> {
    let ev = EventView { obj, v1: strict };
    let mut errs = legacy_event_rules(&ev);
    if strict {
        errs.extend(strict_event_rules(&ev));
    }
    errs
}

/// The rules of an update through events.k8s.io/v1 (upstream's `ValidateEventUpdate`): the
/// rules every event passes, not the strict create rules; instead what those rules fixed may
/// not change. (A core/v1 update passes [`validate_event`] with `strict` false only.)
pub fn validate_event_v1_update(new: &Value, old: &Value) -> Vec<FieldErr> {
    let (ev, was) = (
        EventView { obj: new, v1: true },
        EventView { obj: old, v1: true },
    );
    let mut errs = legacy_event_rules(&ev);
    let series = |e: &EventView| gojson::field(&T::Ptr(EVENT_SERIES), e.obj.get("series"));
    if series(&ev) != series(&was) {
        errs.extend(series_rules(&ev));
    }
    for (core, v1, shape) in EVENT_IMMUTABLE {
        let value = |e: &EventView| e.obj.get(*v1).filter(|v| !v.is_null()).cloned();
        let (n, o) = (value(&ev), value(&was));
        let shown = match shape {
            T::Str => {
                let (n, o) = (ev.text(core, v1), was.text(core, v1));
                (n != o).then(|| Bad::from(n))
            }
            T::Int => {
                let count = |v: &Option<Value>| v.as_ref().and_then(Value::as_i64).unwrap_or(0);
                (count(&n) != count(&o)).then(|| Bad::Int(count(&n)))
            }
            shape => {
                let (n, o) = (
                    gojson::field(shape, n.as_ref()),
                    gojson::field(shape, o.as_ref()),
                );
                (n != o).then_some(Bad::Raw(n))
            }
        };
        if let Some(shown) = shown {
            errs.push(FieldErr::invalid(core, shown, "field is immutable"));
        }
    }
    errs
}

/// Go's internal `core.ObjectReference` and `core.EventSource` (no JSON tags).
const OBJECT_REFERENCE: &[F] = &[
    F("Kind", "kind", T::Str),
    F("Namespace", "namespace", T::Str),
    F("Name", "name", T::Str),
    F("UID", "uid", T::Str),
    F("APIVersion", "apiVersion", T::Str),
    F("ResourceVersion", "resourceVersion", T::Str),
    F("FieldPath", "fieldPath", T::Str),
];
const EVENT_SOURCE: &[F] = &[
    F("Component", "component", T::Str),
    F("Host", "host", T::Str),
];
const EVENT_SERIES: &[F] = &[
    F("Count", "count", T::Int),
    F("LastObservedTime", "lastObservedTime", T::MicroTime),
];

/// What an events.k8s.io/v1 update may not change, in upstream's order: (core name reported,
/// events.k8s.io member, internal shape). `reason` is checked twice upstream, so reported twice.
const EVENT_IMMUTABLE: &[(&str, &str, T)] = &[
    ("involvedObject", "regarding", T::Struct(OBJECT_REFERENCE)),
    ("reason", "reason", T::Str),
    ("message", "note", T::Str),
    ("source", "deprecatedSource", T::Struct(EVENT_SOURCE)),
    ("firstTimestamp", "deprecatedFirstTimestamp", T::Time),
    ("lastTimestamp", "deprecatedLastTimestamp", T::Time),
    ("count", "deprecatedCount", T::Int),
    ("reason", "reason", T::Str),
    ("type", "type", T::Str),
    // Compared at microsecond precision, as upstream truncates before comparing.
    ("eventTime", "eventTime", T::MicroTime),
    ("action", "action", T::Str),
    ("related", "related", T::Ptr(OBJECT_REFERENCE)),
    ("reportingController", "reportingController", T::Str),
    ("reportingInstance", "reportingInstance", T::Str),
];

/// Upstream's `legacyValidateEvent`: what every event, old or new style, meets.
fn legacy_event_rules(ev: &EventView) -> Vec<FieldErr> {
    let obj = ev.obj;
    let mut errs = Vec::new();
    let namespace = str_at(obj, "metadata.namespace");
    let involved_ns = str_at(ev.member("involvedObject", "regarding"), "namespace");
    let mismatch = || {
        FieldErr::invalid(
            "involvedObject.namespace",
            involved_ns,
            "does not match event.namespace",
        )
    };
    let controller_field = if ev.v1 {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if !ev.is_set("eventTime", "eventTime") {
        let ok = if involved_ns.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_ns
        };
        if !ok {
            errs.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
            errs.push(mismatch());
        }
        let controller = ev.text("reportingComponent", "reportingController");
        if controller.is_empty() {
            errs.push(FieldErr::required(controller_field, ""));
        }
        for msg in keel_api::names::is_qualified_name(controller) {
            errs.push(FieldErr::invalid(controller_field, controller, &msg));
        }
        let limited = [
            ("reportingInstance", "reportingInstance", true),
            ("action", "action", true),
            ("reason", "reason", true),
        ];
        for (core, v1, required) in limited {
            let value = ev.text(core, v1);
            if required && value.is_empty() {
                errs.push(FieldErr::required(core, ""));
            }
            if value.len() > EVENT_SHORT_FIELD_MAX {
                errs.push(at_most(core, EVENT_SHORT_FIELD_MAX));
            }
        }
        if ev.text("message", "note").len() > EVENT_NOTE_MAX {
            errs.push(at_most("message", EVENT_NOTE_MAX));
        }
    }
    errs
}

fn at_most(field: &str, max: usize) -> FieldErr {
    FieldErr::invalid(field, "", &format!("can have at most {max} characters"))
}

/// The rules only events.k8s.io/v1 writes meet (beyond ObjectMeta, checked elsewhere).
fn strict_event_rules(ev: &EventView) -> Vec<FieldErr> {
    let mut errs = series_rules(ev);
    if !ev.is_set("eventTime", "eventTime") {
        errs.push(FieldErr::required("eventTime", ""));
    }
    let kind = ev.text("type", "type");
    if kind != "Normal" && kind != "Warning" {
        errs.push(FieldErr::invalid(
            "type",
            "",
            &format!("has invalid value: {kind}"),
        ));
    }
    let unset = [
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
        ("count", "deprecatedCount"),
    ];
    for (core, v1) in unset {
        if ev.is_set(core, v1) {
            errs.push(FieldErr::invalid(core, "", "needs to be unset"));
        }
    }
    let source = ev.member("source", "deprecatedSource");
    if !str_at(source, "component").is_empty() || !str_at(source, "host").is_empty() {
        errs.push(FieldErr::invalid("source", "", "needs to be unset"));
    }
    errs
}

/// Upstream's `validateV1EventSeries`.
fn series_rules(ev: &EventView) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if let Some(series) = ev.obj.get("series").filter(|s| s.is_object()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            errs.push(FieldErr::invalid(
                "series.count",
                "",
                "should be at least 2",
            ));
        }
        if series
            .get("lastObservedTime")
            .is_none_or(|t| t.is_null() || t == "")
        {
            errs.push(FieldErr::required("series.lastObservedTime", ""));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(errs: Vec<FieldErr>) -> Vec<String> {
        errs.into_iter().map(|e| e.message).collect()
    }

    #[test]
    fn defaults_table() {
        let cases = [
            (
                Kind::Endpoints,
                json!({"subsets": [{"ports": [{"port": 80}, {"port": 81, "protocol": "UDP"}]}]}),
                json!({"subsets": [{"ports": [{"port": 80, "protocol": "TCP"},
                                              {"port": 81, "protocol": "UDP"}]}]}),
            ),
            (
                Kind::PersistentVolume,
                json!({"spec": {"hostPath": {"path": "/x"}}}),
                json!({"spec": {"hostPath": {"path": "/x", "type": ""},
                                "persistentVolumeReclaimPolicy": "Retain",
                                "volumeMode": "Filesystem"}}),
            ),
            (
                Kind::PersistentVolume,
                json!({"spec": {"rbd": {"monitors": ["1.2.3.4"], "image": "foo"},
                                "persistentVolumeReclaimPolicy": "Delete"}}),
                json!({"spec": {"rbd": {"monitors": ["1.2.3.4"], "image": "foo",
                                        "pool": "rbd", "user": "admin",
                                        "keyring": "/etc/ceph/keyring"},
                                "persistentVolumeReclaimPolicy": "Delete",
                                "volumeMode": "Filesystem"}}),
            ),
            (
                Kind::PersistentVolume,
                json!({"spec": {"azureDisk": {"diskName": "d", "diskURI": "https://x"},
                                "iscsi": {"iqn": "q", "lun": 0}}}),
                json!({"spec": {"azureDisk": {"diskName": "d", "diskURI": "https://x",
                                              "cachingMode": "ReadWrite", "fsType": "ext4",
                                              "kind": "Shared", "readOnly": false},
                                "iscsi": {"iqn": "q", "lun": 0, "iscsiInterface": "default"},
                                "persistentVolumeReclaimPolicy": "Retain",
                                "volumeMode": "Filesystem"}}),
            ),
            (
                Kind::PersistentVolumeClaim,
                json!({"spec": {"accessModes": ["ReadWriteOnce"]}}),
                json!({"spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}}),
            ),
            (
                Kind::EndpointSlice,
                json!({"endpoints": [{"addresses": ["10.1.2.3"]}], "ports": [{"port": 80}]}),
                json!({"endpoints": [{"addresses": ["10.1.2.3"], "conditions": {}}],
                       "ports": [{"port": 80, "name": "", "protocol": "TCP"}]}),
            ),
            (
                Kind::PodTemplate,
                json!({"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}),
                json!({"template": {"metadata": {}, "spec": {
                    "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                                    "resources": {},
                                    "terminationMessagePath": "/dev/termination-log",
                                    "terminationMessagePolicy": "File"}],
                    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                    "schedulerName": "default-scheduler", "securityContext": {},
                    "terminationGracePeriodSeconds": 30}}}),
            ),
            (
                Kind::Event,
                json!({"involvedObject": {"kind": "Pod"}, "reason": "R"}),
                json!({"involvedObject": {"kind": "Pod"}, "reason": "R", "source": {},
                       "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
                       "reportingComponent": "", "reportingInstance": ""}),
            ),
            (
                Kind::EventV1,
                json!({"eventTime": "2024-01-01T00:00:00.000000Z", "regarding": {"kind": "Pod"}}),
                json!({"eventTime": "2024-01-01T00:00:00.000000Z", "regarding": {"kind": "Pod"},
                       "deprecatedSource": {}, "deprecatedFirstTimestamp": null,
                       "deprecatedLastTimestamp": null}),
            ),
        ];
        for (kind, mut obj, want) in cases {
            assert!(owns(kind));
            apply(kind, &mut obj);
            assert_eq!(obj, want, "{kind:?}");
        }
    }

    #[test]
    fn admission_on_create_table() {
        let cases = [
            (
                Kind::PersistentVolume,
                json!({"metadata": {"name": "v"}}),
                json!({"metadata": {"name": "v", "finalizers": ["kubernetes.io/pv-protection"]}}),
            ),
            (
                Kind::PersistentVolumeClaim,
                json!({"metadata": {"finalizers": ["a", "kubernetes.io/pvc-protection"]}}),
                json!({"metadata": {"finalizers": ["a", "kubernetes.io/pvc-protection"]}}),
            ),
            (
                Kind::VolumeAttributesClass,
                json!({"metadata": {"name": "c"}, "driverName": "d.example.com"}),
                json!({"metadata": {"name": "c", "finalizers": ["kubernetes.io/vac-protection"]},
                       "driverName": "d.example.com"}),
            ),
            // Appended after the class's own finalizers, never twice.
            (
                Kind::VolumeAttributesClass,
                json!({"metadata": {"finalizers": ["a", "kubernetes.io/vac-protection", "b"]}}),
                json!({"metadata": {"finalizers": ["a", "kubernetes.io/vac-protection", "b"]}}),
            ),
            (
                Kind::VolumeAttributesClass,
                json!({"metadata": {"finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": ["a", "kubernetes.io/vac-protection"]}}),
            ),
            (
                Kind::Node,
                json!({"metadata": {}}),
                json!({"metadata": {}, "spec": {"taints": [
                    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}),
            ),
            // Appended after the node's own taints; the same key with another effect is not a
            // match.
            (
                Kind::Node,
                json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}}),
                json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}),
            ),
            (
                Kind::Node,
                json!({"spec": {"taints": [{"key": "node.kubernetes.io/not-ready",
                    "effect": "NoSchedule", "value": "x"}]}}),
                json!({"spec": {"taints": [{"key": "node.kubernetes.io/not-ready",
                    "effect": "NoSchedule", "value": "x"}]}}),
            ),
            (
                Kind::DaemonSet,
                json!({"metadata": {}}),
                json!({"metadata": {"annotations": {
                    "deprecated.daemonset.template.generation": "1"}}}),
            ),
            (
                Kind::DaemonSet,
                json!({"metadata": {"annotations": {
                    "deprecated.daemonset.template.generation": "7"}}}),
                json!({"metadata": {"annotations": {
                    "deprecated.daemonset.template.generation": "7"}}}),
            ),
        ];
        for (kind, mut obj, want) in cases {
            admit_create(kind, &mut obj);
            assert_eq!(obj, want, "{kind:?}");
        }
    }

    /// Upstream's StorageObjectInUseProtection admission gives every new VolumeAttributesClass
    /// (v1 and v1beta1 alike) the finalizer, and adds nothing on update: a class whose
    /// finalizer was taken off keeps it off until the protection controller puts it back.
    #[test]
    fn volume_attributes_class_finalizer_on_create_only() {
        let s = crate::registry::strategy("storage.k8s.io", "volumeattributesclasses");
        assert_eq!(s.kind(), Kind::VolumeAttributesClass);
        let ctx = crate::Ctx::default();
        for version in ["v1", "v1beta1"] {
            let mut obj = json!({"apiVersion": format!("storage.k8s.io/{version}"),
                "kind": "VolumeAttributesClass", "metadata": {"name": "c"},
                "driverName": "d.example.com"});
            s.prepare_for_create(&mut obj, &ctx);
            assert_eq!(
                obj["metadata"]["finalizers"],
                json!(["kubernetes.io/vac-protection"]),
                "{version}"
            );
            let old = obj.clone();
            obj["metadata"]
                .as_object_mut()
                .unwrap()
                .shift_remove("finalizers");
            s.prepare_for_update(&mut obj, &old, &ctx);
            assert_eq!(obj["metadata"].get("finalizers"), None, "{version}");
        }
    }

    #[test]
    fn daemonset_template_generation_on_update() {
        let ann = |g: &str| json!({"deprecated.daemonset.template.generation": g});
        let old = json!({"metadata": {"annotations": ann("3")},
                         "spec": {"template": {"spec": {"x": 1}}, "minReadySeconds": 0}});
        // Same template: the stored value, whatever the request says.
        let mut new = json!({"metadata": {"annotations": ann("9")},
                             "spec": {"template": {"spec": {"x": 1}}, "minReadySeconds": 5}});
        prepare_update(Kind::DaemonSet, &mut new, &old);
        assert_eq!(new["metadata"]["annotations"], ann("3"));
        // Template changed: one more.
        let mut new = json!({"metadata": {}, "spec": {"template": {"spec": {"x": 2}}}});
        prepare_update(Kind::DaemonSet, &mut new, &old);
        assert_eq!(new["metadata"]["annotations"], ann("4"));
        // A status write keeps the stored value.
        let mut new = json!({"metadata": {"annotations": {}}});
        prepare_status_update(Kind::DaemonSet, &mut new, &old);
        assert_eq!(new["metadata"]["annotations"], ann("3"));
    }

    #[test]
    fn endpointslice_generation_bumps_on_label_change() {
        let old = json!({"metadata": {"generation": 2, "labels": {"a": "b"}}});
        let mut new = json!({"metadata": {"generation": 2, "labels": {"a": "c"}}});
        prepare_update(Kind::EndpointSlice, &mut new, &old);
        assert_eq!(new["metadata"]["generation"], 3);
        let mut same = old.clone();
        prepare_update(Kind::EndpointSlice, &mut same, &old);
        assert_eq!(same["metadata"]["generation"], 2);
    }

    #[test]
    fn event_validation_table() {
        let ns = |n: &str| json!({"namespace": n});
        let qualified_regex = format!(
            "reportingComponent: Invalid value: \"\": {}",
            keel_api::names::is_qualified_name("")[1]
        );
        let cases: Vec<(Value, bool, Vec<&str>)> = vec![
            (
                json!({"metadata": ns("x"), "involvedObject": {"kind": "Pod"}}),
                false,
                vec![
                    r#"involvedObject.namespace: Invalid value: "": does not match event.namespace"#,
                ],
            ),
            (
                json!({"metadata": ns("default"), "involvedObject": {"kind": "Pod"}}),
                false,
                vec![],
            ),
            (
                json!({"metadata": ns("x"), "involvedObject": {"namespace": "y"}}),
                false,
                vec![
                    r#"involvedObject.namespace: Invalid value: "y": does not match event.namespace"#,
                ],
            ),
            (
                json!({"metadata": ns("x"), "involvedObject": {"namespace": "x"}}),
                false,
                vec![],
            ),
            (
                json!({"metadata": ns("kube-system"), "eventTime": "2024-01-01T00:00:00.000000Z",
                       "involvedObject": {}}),
                false,
                vec![
                    "reportingComponent: Required value",
                    "reportingComponent: Invalid value: \"\": name part must be non-empty",
                    qualified_regex.as_str(),
                    "reportingInstance: Required value",
                    "action: Required value",
                    "reason: Required value",
                ],
            ),
            (
                json!({"metadata": ns("x"), "eventTime": "2024-01-01T00:00:00.000000Z",
                       "reportingController": "a.b/c", "reportingInstance": "i",
                       "action": "A", "reason": "R", "type": "Normal",
                       "regarding": {"namespace": "x"}}),
                true,
                vec![],
            ),
            (
                json!({"metadata": ns("x"), "reportingController": "a.b/c",
                       "reportingInstance": "i", "action": "A", "reason": "R", "type": "Bad",
                       "regarding": {"namespace": "x"}, "deprecatedCount": 3,
                       "deprecatedSource": {"component": "c"},
                       "series": {"count": 1}}),
                true,
                vec![
                    "series.count: Invalid value: \"\": should be at least 2",
                    "series.lastObservedTime: Required value",
                    "eventTime: Required value",
                    "type: Invalid value: \"\": has invalid value: Bad",
                    "count: Invalid value: \"\": needs to be unset",
                    "source: Invalid value: \"\": needs to be unset",
                ],
            ),
        ];
        for (obj, strict, want) in cases {
            assert_eq!(texts(validate_event(&obj, strict)), want, "{obj}");
        }
    }

    #[test]
    fn persistent_volume_source_table() {
        let scaleio = json!({"gateway": "https://g", "system": "s", "secretRef": {"name": "x"}});
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({"spec": {"hostPath": {"path": "/x"}}}), vec![]),
            (
                json!({"spec": {"scaleIO": scaleio}}),
                vec!["spec.scaleIO.volumeName: Required value"],
            ),
            (
                json!({"spec": {"scaleIO": {"volumeName": "v"}}}),
                vec![
                    "spec.scaleIO.gateway: Required value",
                    "spec.scaleIO.system: Required value",
                ],
            ),
            // A second source is refused, not validated; flexVolume is never the refused one.
            (
                json!({"spec": {"nfs": {"server": "s", "path": "/"}, "scaleIO": scaleio,
                                "cephfs": {"monitors": ["m"]}}}),
                vec![
                    "spec.cephFS: Forbidden: may not specify more than 1 volume type",
                    "spec.scaleIO: Forbidden: may not specify more than 1 volume type",
                ],
            ),
            (
                json!({"spec": {"nfs": {"server": "s", "path": "/"},
                                "flexVolume": {"driver": "d"}}}),
                vec![],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(texts(validate_persistent_volume(&obj)), want, "{obj}");
        }
    }

    /// events.k8s.io/v1 updates (upstream's `ValidateEventUpdate`): the members a new-style
    /// event was created with may not change, reported under their core names with the new
    /// value as Go prints the internal type; the strict create rules are not re-applied.
    #[test]
    fn event_v1_update_table() {
        let old = json!({"metadata": {"namespace": "x", "name": "e"},
            "eventTime": "2026-01-02T03:04:05.123456Z", "series": {"count": 2,
                "lastObservedTime": "2026-01-02T03:04:06.000000Z"},
            "reportingController": "a.b/c", "reportingInstance": "i", "action": "A",
            "reason": "R", "note": "n", "type": "Normal",
            "regarding": {"kind": "Pod", "namespace": "x", "name": "p"}});
        let with = |patch: Value| {
            let mut new = old.clone();
            for (k, v) in patch.as_object().unwrap() {
                new[k] = v.clone();
            }
            new
        };
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (old.clone(), vec![]),
            // Sub-microsecond differences are tolerated; the series may change when valid.
            (
                with(json!({"eventTime": "2026-01-02T03:04:05.1234569Z",
                    "series": {"count": 3, "lastObservedTime": "2026-01-02T03:04:07.000000Z"}})),
                vec![],
            ),
            (
                with(json!({"series": {"count": 1}})),
                vec![
                    r#"series.count: Invalid value: "": should be at least 2"#,
                    "series.lastObservedTime: Required value",
                ],
            ),
            (
                with(
                    json!({"reason": "S", "note": "m", "type": "Warning", "action": "B",
                    "reportingInstance": "j"}),
                ),
                vec![
                    r#"reason: Invalid value: "S": field is immutable"#,
                    r#"message: Invalid value: "m": field is immutable"#,
                    r#"reason: Invalid value: "S": field is immutable"#,
                    r#"type: Invalid value: "Warning": field is immutable"#,
                    r#"action: Invalid value: "B": field is immutable"#,
                    r#"reportingInstance: Invalid value: "j": field is immutable"#,
                ],
            ),
            (
                with(
                    json!({"regarding": {"kind": "Pod", "namespace": "x", "name": "q<"},
                    "deprecatedSource": {"host": "h"}, "deprecatedCount": 2,
                    "deprecatedFirstTimestamp": "2026-01-02T03:04:05Z",
                    "eventTime": "2026-01-02T03:04:05.124Z",
                    "related": {"kind": "Node", "name": "n"}}),
                ),
                vec![
                    r#"involvedObject: Invalid value: {"Kind":"Pod","Namespace":"x","Name":"q\u003c","UID":"","APIVersion":"","ResourceVersion":"","FieldPath":""}: field is immutable"#,
                    r#"source: Invalid value: {"Component":"","Host":"h"}: field is immutable"#,
                    r#"firstTimestamp: Invalid value: "2026-01-02T03:04:05Z": field is immutable"#,
                    "count: Invalid value: 2: field is immutable",
                    r#"eventTime: Invalid value: "2026-01-02T03:04:05.124000Z": field is immutable"#,
                    r#"related: Invalid value: {"Kind":"Node","Namespace":"","Name":"n","UID":"","APIVersion":"","ResourceVersion":"","FieldPath":""}: field is immutable"#,
                ],
            ),
            // Removing what was set shows Go's zero values (and, with no eventTime, the event
            // is held to the old-style rules only).
            (
                with(json!({"reportingController": null, "eventTime": null})),
                vec![
                    "eventTime: Invalid value: null: field is immutable",
                    r#"reportingController: Invalid value: "": field is immutable"#,
                ],
            ),
        ];
        for (new, want) in cases {
            assert_eq!(texts(validate_event_v1_update(&new, &old)), want, "{new}");
        }
    }
}
