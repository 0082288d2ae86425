//! The custom resource the CRD benchmarks write: `Widget` of `bench.keel.dev/v1`, and the
//! CustomResourceDefinitions that serve it (`widgets.bench.keel.dev`, and the throw-away ones
//! of `crd-latency`). Pure: shapes and sizes only; `kube::crd` does the requests.
//!
//! A Widget's `spec` has 20 properties (strings, integers, booleans, an enum, a nested object,
//! a string list), every one described by the CRD's structural schema, and the spec carries
//! one CEL rule (`x-kubernetes-validations`: `self.minReplicas <= self.maxReplicas`), so a
//! create pays for schema validation, pruning and one CEL evaluation, as a typical operator's
//! custom resource does. The last property, `description`, is filled so that the widget's JSON
//! is as long as the ConfigMap of the same `--size` (`widget_overhead_bytes`): the two are
//! compared byte for byte in the same `loadgen compare` run.

use super::{self as objects, LOADGEN_LABEL};
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The group of the benchmark's custom resources.
pub const WIDGET_GROUP: &str = "bench.keel.dev";
/// Their version.
pub const WIDGET_VERSION: &str = "v1";
/// Their kind.
pub const WIDGET_KIND: &str = "Widget";

/// The names of one CustomResourceDefinition: its group, plural and kind (version `v1`,
/// namespaced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdNames {
    pub group: String,
    pub plural: String,
    pub kind: String,
}

impl CrdNames {
    /// `widgets.bench.keel.dev`, the CRD of `--kind widgets`.
    pub fn widgets() -> CrdNames {
        CrdNames {
            group: WIDGET_GROUP.into(),
            plural: objects::WIDGET_PLURAL.into(),
            kind: WIDGET_KIND.into(),
        }
    }

    /// The CRD's name: `<plural>.<group>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    /// `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/<name>`.
    pub fn crd_path(&self) -> String {
        format!("{CRD_COLLECTION}/{}", self.crd_name())
    }

    /// `/apis/<group>/v1/namespaces/<ns>/<plural>`.
    pub fn collection_path(&self, ns: &str) -> String {
        format!(
            "/apis/{}/{WIDGET_VERSION}/namespaces/{ns}/{}",
            self.group, self.plural
        )
    }
}

/// Where CustomResourceDefinitions are created.
pub const CRD_COLLECTION: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The CEL rule on a Widget's spec.
pub const WIDGET_RULE: &str = "self.minReplicas <= self.maxReplicas";

/// The values of the `tier` enum.
pub const WIDGET_TIERS: [&str; 3] = ["web", "api", "job"];

/// The structural schema of a Widget: every one of the 20 spec properties typed, `tier` an
/// enum, `resources` a nested object, `tags` a list of strings, the CEL rule on `spec`.
pub fn widget_schema() -> Value {
    let s = |extra: Value| {
        let mut v = json!({"type": "string"});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    let int = |min: i64| json!({"type": "integer", "minimum": min});
    let boolean = || json!({"type": "boolean"});
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["minReplicas", "maxReplicas"],
                "x-kubernetes-validations": [{
                    "rule": WIDGET_RULE,
                    "message": "minReplicas must not exceed maxReplicas"
                }],
                "properties": {
                    "replicas": int(0),
                    "minReplicas": int(0),
                    "maxReplicas": int(0),
                    "image": s(json!({"maxLength": 256})),
                    "tier": s(json!({"enum": WIDGET_TIERS})),
                    "enabled": boolean(),
                    "paused": boolean(),
                    "priority": int(0),
                    "owner": s(json!({"maxLength": 63})),
                    "region": s(json!({"maxLength": 63})),
                    "timeoutSeconds": int(1),
                    "retries": int(0),
                    "debug": boolean(),
                    "tags": {"type": "array", "maxItems": 16, "items": s(json!({"maxLength": 63}))},
                    "resources": {
                        "type": "object",
                        "properties": {"cpu": s(json!({})), "memory": s(json!({}))}
                    },
                    "endpoint": s(json!({"maxLength": 256})),
                    "protocol": s(json!({"maxLength": 8})),
                    "weight": int(0),
                    "schedule": s(json!({"maxLength": 63})),
                    "description": s(json!({}))
                }
            }
        }
    })
}

/// Properties of a Widget's spec (the issue's "20-property schema").
pub const WIDGET_SPEC_PROPERTIES: usize = 20;

/// The CustomResourceDefinition of `names`: namespaced, one served and stored version `v1`
/// with the Widget schema.
pub fn crd(names: &CrdNames) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": names.crd_name(), "labels": {LOADGEN_LABEL: "1"}},
        "spec": {
            "group": names.group,
            "scope": "Namespaced",
            "names": {
                "plural": names.plural,
                "singular": names.kind.to_lowercase(),
                "kind": names.kind,
                "listKind": format!("{}List", names.kind),
            },
            "versions": [{
                "name": WIDGET_VERSION,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": widget_schema()},
            }],
        }
    })
}

/// The spec values that vary with the object's index: (replicas, maxReplicas, tier,
/// priority, weight). Each integer keeps its number of digits, so every widget of one size is
/// as long as every other.
fn varying(i: u64) -> (u64, u64, &'static str, u64, u64) {
    (
        1 + i % 5,
        5 + i % 5,
        WIDGET_TIERS[(i % 3) as usize],
        100 + i % 900,
        10 + i % 90,
    )
}

/// Widget `name` in `ns` (index `i`, version counter `generation`) as a `Value`, its
/// `description` `description_bytes` long: the reference `widget_json` is checked against.
pub fn widget(ns: &str, name: &str, i: u64, description_bytes: usize, generation: u64) -> Value {
    let (replicas, max, tier, priority, weight) = varying(i);
    let fill = char::from(objects::payload_fill(generation));
    json!({
        "apiVersion": format!("{WIDGET_GROUP}/{WIDGET_VERSION}"),
        "kind": WIDGET_KIND,
        "metadata": objects::metadata(ns, name, generation),
        "spec": {
            "replicas": replicas,
            "minReplicas": 1,
            "maxReplicas": max,
            "image": WIDGET_IMAGE,
            "tier": tier,
            "enabled": true,
            "paused": false,
            "priority": priority,
            "owner": "team-widgets",
            "region": "eu-west-1",
            "timeoutSeconds": 30,
            "retries": 3,
            "debug": false,
            "tags": ["bench", "loadgen", "crd"],
            "resources": {"cpu": "500m", "memory": "256Mi"},
            "endpoint": "http://widget.example.com:8080",
            "protocol": "TCP",
            "weight": weight,
            "schedule": "*/5 * * * *",
            "description": fill.to_string().repeat(description_bytes),
        }
    })
}

const WIDGET_IMAGE: &str = "registry.example.com/team/widget-server:1.27.3";

/// `widget(...)` as JSON bytes, written straight into the buffer as ConfigMaps are
/// (`objects::object_json`), so that the load generator spends no more CPU per widget than
/// per ConfigMap.
pub fn widget_json(
    ns: &str,
    name: &str,
    i: u64,
    description_bytes: usize,
    generation: u64,
) -> Vec<u8> {
    let (replicas, max, tier, priority, weight) = varying(i);
    let mut out = Vec::with_capacity(description_bytes + 900);
    objects::write_head(
        &mut out,
        &format!("{WIDGET_GROUP}/{WIDGET_VERSION}"),
        WIDGET_KIND,
        ns,
        name,
        generation,
    );
    let spec = format!(
        concat!(
            r#","spec":{{"replicas":{},"minReplicas":1,"maxReplicas":{},"image":"{}","tier":"{}","#,
            r#""enabled":true,"paused":false,"priority":{},"owner":"team-widgets","#,
            r#""region":"eu-west-1","timeoutSeconds":30,"retries":3,"debug":false,"#,
            r#""tags":["bench","loadgen","crd"],"resources":{{"cpu":"500m","memory":"256Mi"}},"#,
            r#""endpoint":"http://widget.example.com:8080","protocol":"TCP","weight":{},"#,
            r#""schedule":"*/5 * * * *","description":""#
        ),
        replicas, max, WIDGET_IMAGE, tier, priority, weight
    );
    out.extend_from_slice(spec.as_bytes());
    out.resize(
        out.len() + description_bytes,
        objects::payload_fill(generation),
    );
    out.extend_from_slice(br#""}}"#);
    out
}

/// How many bytes longer a widget with an empty `description` is than a ConfigMap of the same
/// name, namespace and generation with an empty payload. Measured once (not a hand-counted
/// constant, so that it stays right when either shape changes).
pub fn widget_overhead_bytes() -> usize {
    static OVERHEAD: OnceLock<usize> = OnceLock::new();
    *OVERHEAD.get_or_init(|| {
        let (ns, name) = ("ns", "w-0");
        let w = widget_json(ns, name, 0, 0, 0).len();
        let cm = objects::object_json(
            &objects::Naming {
                kind: objects::Kind::Configmaps,
                prefix: "w".into(),
                ns_prefix: ns.into(),
                namespaces: 1,
            },
            0,
            0,
            0,
        )
        .len();
        w.saturating_sub(cm)
    })
}

/// The `description` length that makes a widget as long as a ConfigMap of `payload_bytes`
/// (0 when the payload is shorter than the widget's other properties: such a widget is
/// longer than its ConfigMap).
pub fn description_bytes(payload_bytes: usize) -> usize {
    payload_bytes.saturating_sub(widget_overhead_bytes())
}

/// Whether `status` (a CRD's `status`) has the condition `Established` = `True`.
pub fn established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::{Kind, Naming, SENT_ANNOTATION};

    #[test]
    fn widget_json_is_the_widget() {
        let without_time = |mut v: Value| {
            let ann = v["metadata"]["annotations"].as_object_mut().unwrap();
            let sent = ann.remove(SENT_ANNOTATION).unwrap();
            assert!(sent.as_str().unwrap().parse::<u128>().is_ok());
            v
        };
        for (name, i, desc, generation) in [("w-7", 7, 500, 0), ("we\"ird", 13, 0, 27)] {
            let got: Value = serde_json::from_slice(&widget_json("ns", name, i, desc, generation))
                .expect("valid JSON");
            assert_eq!(
                without_time(got),
                without_time(widget("ns", name, i, desc, generation)),
                "{name}"
            );
        }
    }

    #[test]
    fn widget_spec_has_twenty_schema_properties_and_satisfies_the_rule() {
        let schema = widget_schema();
        let props = schema["properties"]["spec"]["properties"]
            .as_object()
            .unwrap();
        assert_eq!(props.len(), WIDGET_SPEC_PROPERTIES);
        for i in 0..30 {
            let w = widget("ns", "w", i, 3, 0);
            let spec = w["spec"].as_object().unwrap();
            // Every property of the object is in the schema and the other way round:
            // nothing is pruned, nothing is left unset.
            let mut have: Vec<_> = spec.keys().collect();
            let mut want: Vec<_> = props.keys().collect();
            have.sort();
            want.sort();
            assert_eq!(have, want);
            assert!(spec["minReplicas"].as_u64() <= spec["maxReplicas"].as_u64());
            assert!(WIDGET_TIERS.contains(&spec["tier"].as_str().unwrap()));
            for (k, v) in spec {
                let ty = props[k]["type"].as_str().unwrap();
                let ok = match ty {
                    "string" => v.is_string(),
                    "integer" => v.is_u64(),
                    "boolean" => v.is_boolean(),
                    "array" => v.is_array(),
                    "object" => v.is_object(),
                    _ => false,
                };
                assert!(ok, "{k}: {v} is not {ty}");
            }
        }
        let types: std::collections::BTreeSet<_> = props
            .values()
            .map(|p| p["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types.into_iter().collect::<Vec<_>>(),
            ["array", "boolean", "integer", "object", "string"]
        );
    }

    #[test]
    fn crd_names_paths_and_rule() {
        let names = CrdNames::widgets();
        assert_eq!(names.crd_name(), "widgets.bench.keel.dev");
        assert_eq!(
            names.crd_path(),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.bench.keel.dev"
        );
        assert_eq!(
            names.collection_path("lg"),
            "/apis/bench.keel.dev/v1/namespaces/lg/widgets"
        );
        let c = crd(&names);
        assert_eq!(c["metadata"]["name"], "widgets.bench.keel.dev");
        assert_eq!(c["spec"]["scope"], "Namespaced");
        assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(c["spec"]["names"]["singular"], "widget");
        let v = &c["spec"]["versions"][0];
        assert_eq!(
            (&v["name"], &v["served"], &v["storage"]),
            (&json!("v1"), &json!(true), &json!(true))
        );
        let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["x-kubernetes-validations"][0]["rule"], WIDGET_RULE);
        assert_eq!(
            spec["x-kubernetes-validations"].as_array().unwrap().len(),
            1
        );
        // The workload's paths are the CRD's.
        let n = Naming {
            kind: Kind::Widgets,
            prefix: "w".into(),
            ns_prefix: "lg".into(),
            namespaces: 1,
        };
        assert_eq!(n.collection_path("lg"), names.collection_path("lg"));
    }

    /// A widget is as long as the ConfigMap of the same size it is compared with.
    #[test]
    fn widgets_are_as_long_as_their_configmaps() {
        let overhead = widget_overhead_bytes();
        assert!((300..900).contains(&overhead), "overhead {overhead}");
        for size in [1024usize, 4096, 100_000] {
            for (i, generation) in [(0u64, 0u64), (7, 1), (123_456, 9)] {
                let naming = |kind| Naming {
                    kind,
                    prefix: "lg".into(),
                    ns_prefix: "loadgen".into(),
                    namespaces: 1,
                };
                let cm = objects::object_json(&naming(Kind::Configmaps), i, size, generation);
                let w = objects::object_json(&naming(Kind::Widgets), i, size, generation);
                assert_eq!(w.len(), cm.len(), "size {size}, object {i}");
            }
        }
        // Too small to match: the widget keeps its properties and an empty description.
        assert_eq!(description_bytes(overhead / 2), 0);
    }

    #[test]
    fn established_reads_the_condition() {
        let with = |status: &str| {
            json!({"status": {"conditions": [
                {"type": "NamesAccepted", "status": "True"},
                {"type": "Established", "status": status}
            ]}})
        };
        assert!(established(&with("True")));
        assert!(!established(&with("False")));
        assert!(!established(&json!({"status": {"conditions": null}})));
        assert!(!established(&json!({})));
    }
}
