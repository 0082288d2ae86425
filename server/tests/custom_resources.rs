//! CustomResourceDefinitions with kubectl against the real binary: a definition is accepted,
//! established and served at once on every core; its objects are written and read like any
//! resource; names another definition holds are refused; deleting it deletes its objects
//! (refusing new ones meanwhile) and then stops serving it; a restart serves it again.

mod common;

use common::{eventually, json_watch_events, server, Server};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// A namespaced definition in `group` with the given names.
fn definition(group: &str, plural: &str, kind: &str, short: &[&str], scope: &str) -> String {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": plural,
                "singular": kind.to_lowercase(),
                "kind": kind,
                "shortNames": short,
                "categories": ["all"]
            },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
                    }
                }}
            }]
        }
    })
    .to_string()
}

fn apply(s: &Server, doc: &str) -> String {
    let out = s.kubectl_stdin(&["apply", "-f", "-"], doc);
    assert!(
        out.status.success(),
        "apply failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn condition<'a>(crd: &'a Value, kind: &str) -> &'a Value {
    crd["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

fn established(s: &Server, name: &str) {
    let crd = format!("crd/{name}");
    s.ok(&["wait", "--for=condition=Established", &crd, "--timeout=20s"]);
}

#[test]
fn a_definition_is_established_and_its_objects_are_served() {
    let s = server();
    apply(
        s,
        &definition(
            "cr1.example.com",
            "widgets",
            "Widget",
            &["wdg"],
            "Namespaced",
        ),
    );
    established(s, "widgets.cr1.example.com");
    let crd = s.json(&["get", "crd", "widgets.cr1.example.com"]);
    assert_eq!(
        crd["status"]["acceptedNames"],
        json!({"plural": "widgets", "singular": "widget", "shortNames": ["wdg"],
               "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]})
    );
    let names = condition(&crd, "NamesAccepted");
    assert_eq!(
        (&names["status"], &names["reason"], &names["message"]),
        (
            &json!("True"),
            &json!("NoConflicts"),
            &json!("no conflicts found")
        )
    );
    let est = condition(&crd, "Established");
    assert_eq!(
        (&est["status"], &est["reason"], &est["message"]),
        (
            &json!("True"),
            &json!("InitialNamesAccepted"),
            &json!("the initial names have been accepted")
        )
    );
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    // Discovered, with its short name and category.
    let resources = s.ok(&["api-resources", "--api-group=cr1.example.com", "-o", "wide"]);
    assert!(
        resources.contains("widgets") && resources.contains("wdg"),
        "{resources}"
    );
    assert!(resources.contains("Widget"), "{resources}");

    let ns = s.namespace("cr1");
    let w = json!({"apiVersion": "cr1.example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w1", "namespace": ns}, "spec": {"size": 3}});
    apply(s, &w.to_string());
    let got = s.json(&["get", "wdg", "w1", "-n", &ns]);
    assert_eq!(got["spec"]["size"], 3);
    assert_eq!(got["metadata"]["generation"], 1);
    assert!(s
        .ok(&["get", "all", "-n", &ns, "-o", "name"])
        .contains("widget.cr1.example.com/w1"));

    // Spec changes move the generation; the status subresource writes only the status.
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"size":4},"status":{"ready":true}}"#,
    ]);
    let got = s.json(&["get", "widget", "w1", "-n", &ns]);
    assert_eq!(
        (
            got["spec"]["size"].clone(),
            got["metadata"]["generation"].clone()
        ),
        (json!(4), json!(2))
    );
    assert!(
        got.get("status").is_none(),
        "status changes only through /status: {got}"
    );
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "-n",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"ready":true},"spec":{"size":9}}"#,
    ]);
    let got = s.json(&["get", "widget", "w1", "-n", &ns]);
    assert_eq!(got["status"]["ready"], true);
    assert_eq!(
        (
            got["spec"]["size"].clone(),
            got["metadata"]["generation"].clone()
        ),
        (json!(4), json!(2))
    );

    // Server-side apply records its manager.
    let applied = json!({"apiVersion": "cr1.example.com/v1", "kind": "Widget",
                         "metadata": {"name": "w2", "namespace": ns}, "spec": {"size": 5}});
    let out = s.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=tester",
            "-f",
            "-",
        ],
        &applied.to_string(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = s.json(&["get", "widget", "w2", "-n", &ns, "--show-managed-fields"]);
    assert_eq!(got["metadata"]["managedFields"][0]["manager"], "tester");
    assert_eq!(got["metadata"]["managedFields"][0]["operation"], "Apply");

    s.ok(&["delete", "widget", "w1", "w2", "-n", &ns]);
    assert!(s
        .ok(&["get", "widgets", "-n", &ns, "-o", "name"])
        .trim()
        .is_empty());
}

#[test]
fn names_another_definition_of_the_group_holds_are_not_accepted() {
    let s = server();
    apply(
        s,
        &definition("cr2.example.com", "foos", "Foo", &["fo"], "Cluster"),
    );
    established(s, "foos.cr2.example.com");
    // Same kind (and so list kind) as the first one: refused, never established, never
    // served. Upstream checks the names in order and reports the last conflict found.
    apply(
        s,
        &definition("cr2.example.com", "bars", "Foo", &[], "Cluster"),
    );
    let mut crd = Value::Null;
    assert!(eventually(WAIT, || {
        crd = s.json(&["get", "crd", "bars.cr2.example.com"]);
        condition(&crd, "NamesAccepted")["status"] == "False"
    }));
    let names = condition(&crd, "NamesAccepted");
    assert_eq!(names["reason"], "ListKindConflict");
    assert_eq!(names["message"], "\"FooList\" is already in use");
    let est = condition(&crd, "Established");
    assert_eq!(
        (&est["status"], &est["reason"]),
        (&json!("False"), &json!("NotAccepted"))
    );
    assert_eq!(crd["status"]["acceptedNames"]["plural"], "bars");
    let resources = s.ok(&["api-resources", "--api-group=cr2.example.com", "-o", "name"]);
    assert!(
        resources.contains("foos") && !resources.contains("bars"),
        "{resources}"
    );
    // A short name already held conflicts too.
    apply(
        s,
        &definition("cr2.example.com", "bazs", "Baz", &["fo"], "Cluster"),
    );
    assert!(eventually(WAIT, || {
        let crd = s.json(&["get", "crd", "bazs.cr2.example.com"]);
        condition(&crd, "NamesAccepted")["reason"] == "ShortNamesConflict"
    }));
}

#[test]
fn deleting_a_definition_deletes_its_objects_then_stops_serving_it() {
    let s = server();
    apply(
        s,
        &definition("cr3.example.com", "gadgets", "Gadget", &[], "Namespaced"),
    );
    established(s, "gadgets.cr3.example.com");
    let ns = s.namespace("cr3");
    for name in ["g1", "g2"] {
        let g = json!({"apiVersion": "cr3.example.com/v1", "kind": "Gadget",
                       "metadata": {"name": name, "namespace": ns, "finalizers": ["example.com/hold"]}});
        apply(s, &g.to_string());
    }
    s.ok(&["delete", "crd", "gadgets.cr3.example.com", "--wait=false"]);
    // Held by the objects' finalizers: terminating, its objects being deleted, no new ones.
    let mut crd = Value::Null;
    assert!(
        eventually(WAIT, || {
            crd = s.json(&["get", "crd", "gadgets.cr3.example.com"]);
            condition(&crd, "Terminating")["reason"] == "InstanceDeletionInProgress"
        }),
        "{crd}"
    );
    assert_eq!(
        crd["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert!(crd["metadata"]["deletionTimestamp"].is_string());
    let g1 = s.json(&["get", "gadget", "g1", "-n", &ns]);
    assert!(g1["metadata"]["deletionTimestamp"].is_string(), "{g1}");
    let g3 = json!({"apiVersion": "cr3.example.com/v1", "kind": "Gadget",
                    "metadata": {"name": "g3", "namespace": ns}});
    let out = s.kubectl_stdin(&["create", "-f", "-"], &g3.to_string());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gadgets.cr3.example.com \"g3\" is forbidden: create not allowed while custom resource definition is terminating"),
        "{err}"
    );
    // Once the objects go, so does the definition, and its resource with it.
    for name in ["g1", "g2"] {
        s.ok(&[
            "patch",
            "gadget",
            name,
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ]);
    }
    assert!(eventually(WAIT, || {
        !s.kubectl(&["get", "crd", "gadgets.cr3.example.com"])
            .status
            .success()
    }));
    assert!(eventually(WAIT, || {
        !s.ok(&["api-resources", "--api-group=cr3.example.com", "-o", "name"])
            .contains("gadgets")
    }));
    let gone = s.get(&format!("/apis/cr3.example.com/v1/namespaces/{ns}/gadgets"));
    assert_eq!(gone.status, 404, "{}", gone.text());
}

#[test]
fn definitions_are_served_again_after_a_restart() {
    if !common::persistent_backend() {
        return;
    }
    let s = Server::start(&[]);
    apply(
        &s,
        &definition("cr4.example.com", "things", "Thing", &[], "Cluster"),
    );
    established(&s, "things.cr4.example.com");
    apply(
        &s,
        r#"{"apiVersion":"cr4.example.com/v1","kind":"Thing","metadata":{"name":"t1"},"spec":{"size":1}}"#,
    );
    s.signal("TERM");
    s.wait_exit(WAIT).expect("server stops");
    let (tmp, dir) = s.into_data();
    let s = Server::start_at(tmp, dir, &[]);
    // Served from the first request on.
    let t = s.json(&["get", "things", "t1"]);
    assert_eq!(t["spec"]["size"], 1);
}

#[test]
fn requests_to_a_deprecated_version_are_warned_and_counted() {
    let s = server();
    let mut crd: Value = serde_json::from_str(&definition(
        "cr5.example.com",
        "dials",
        "Dial",
        &[],
        "Cluster",
    ))
    .unwrap();
    let v1 = crd["spec"]["versions"][0].clone();
    let mut beta = v1.clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    beta["deprecated"] = json!(true);
    crd["spec"]["versions"] = json!([beta, v1]);
    apply(s, &crd.to_string());
    established(s, "dials.cr5.example.com");
    let out = s.kubectl(&["get", "dials.v1beta1.cr5.example.com"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "Warning: cr5.example.com/v1beta1 Dial is deprecated; use cr5.example.com/v1 Dial"
        ),
        "{err}"
    );
    let out = s.kubectl(&["get", "dials.v1.cr5.example.com"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("deprecated"));
    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("apiserver_requested_deprecated_apis{")
                && l.contains("group=\"cr5.example.com\"")
                && l.contains("version=\"v1beta1\"")
                && l.contains("resource=\"dials\"")),
        "no deprecated-API count for dials"
    );
}

/// `selectableFields` make fields of the objects usable in field selectors (lists and
/// watches), with what upstream v1.36.2 answers for the same queries; others are refused.
#[test]
fn selectable_fields_select_custom_resources() {
    let s = server();
    let mut crd: Value = serde_json::from_str(&definition(
        "cr6.example.com",
        "shirts",
        "Shirt",
        &[],
        "Namespaced",
    ))
    .unwrap();
    crd["spec"]["versions"][0]["selectableFields"] =
        json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.on"}]);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = json!({"color": {"type": "string"}, "size": {"type": "integer"}, "on": {"type": "boolean"}});
    apply(s, &crd.to_string());
    established(s, "shirts.cr6.example.com");
    let ns = s.namespace("cr6");
    for (name, spec) in [
        ("a", json!({"color": "blue", "size": 3, "on": true})),
        ("b", json!({"color": "red"})),
        ("c", json!({})),
    ] {
        let o = json!({"apiVersion": "cr6.example.com/v1", "kind": "Shirt",
                       "metadata": {"name": name, "namespace": ns}, "spec": spec});
        apply(s, &o.to_string());
    }
    let names = |selector: &str| -> String {
        s.ok(&[
            "get",
            "shirts",
            "-n",
            &ns,
            "--field-selector",
            selector,
            "-o",
            "name",
        ])
        .replace("shirt.cr6.example.com/", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(",")
    };
    assert_eq!(names("spec.color=blue"), "a");
    assert_eq!(names("spec.color="), "c");
    assert_eq!(names("spec.size=3"), "a");
    assert_eq!(names("spec.on=true"), "a");
    assert_eq!(names("spec.color!=blue"), "b,c");
    assert_eq!(names("metadata.name=b"), "b");
    let err = s.fails(&["get", "shirts", "-n", &ns, "--field-selector", "spec.foo=x"]);
    assert!(err.contains("field label not supported: spec.foo"), "{err}");
}

/// `additionalPrinterColumns` are the Table's columns (JSONPath cells, priority-1 columns
/// only with `-o wide`), as upstream v1.36.2 prints the same definition and object; without
/// any, the columns are upstream's default `NAME AGE`, in watches too.
#[test]
fn printer_columns_make_the_table() {
    let s = server();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "jobs.cr7.example.com"},
        "spec": {"group": "cr7.example.com", "scope": "Namespaced", "names": {"plural": "jobs", "kind": "Job"},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "additionalPrinterColumns": [
              {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
              {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
              {"name": "Tags", "type": "string", "jsonPath": ".spec.tags", "priority": 1},
              {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}},
              "status": {"type": "object", "properties": {"conditions": {"type": "array", "items": {"type": "object",
                "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}}}}}}}}]}});
    apply(s, &crd.to_string());
    established(s, "jobs.cr7.example.com");
    let ns = s.namespace("cr7");
    let job = json!({"apiVersion": "cr7.example.com/v1", "kind": "Job",
                     "metadata": {"name": "j1", "namespace": ns}, "spec": {"size": 4, "tags": ["a", "b"]}});
    apply(s, &job.to_string());
    s.ok(&[
        "patch",
        "jobs.cr7.example.com",
        "j1",
        "-n",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    let wide = s.ok(&["get", "jobs.cr7.example.com", "-n", &ns, "-o", "wide"]);
    let rows: Vec<Vec<&str>> = wide
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        ["NAME", "SIZE", "READY", "TAGS", "CREATED"],
        "{wide}"
    );
    assert_eq!(rows[1][..4], ["j1", "4", "True", r#"["a","b"]"#], "{wide}");
    let narrow = s.ok(&["get", "jobs.cr7.example.com", "-n", &ns]);
    assert!(
        narrow.starts_with("NAME   SIZE   READY   CREATED"),
        "{narrow}"
    );

    apply(
        s,
        &definition("cr7.example.com", "plains", "Plain", &[], "Namespaced"),
    );
    established(s, "plains.cr7.example.com");
    apply(
        s,
        &json!({"apiVersion": "cr7.example.com/v1", "kind": "Plain",
                     "metadata": {"name": "p1", "namespace": ns}})
        .to_string(),
    );
    let plain = s.ok(&["get", "plains", "-n", &ns]);
    assert!(plain.starts_with("NAME   AGE\np1     "), "{plain}");
}

/// The version's schema as upstream applies it: unknown fields pruned (refused under
/// kubectl's strict field validation, with upstream's message), defaults filled in, values
/// checked (422 with upstream's cause), and server-side apply merging a `map` list by its
/// keys so two managers own one item each.
#[test]
fn the_schema_prunes_defaults_validates_and_drives_apply() {
    let s = server();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "racks.cr8.example.com"},
        "spec": {"group": "cr8.example.com", "scope": "Namespaced", "names": {"plural": "racks", "kind": "Rack"},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "maximum": 10},
                "mode": {"type": "string", "default": "auto"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}}}]}});
    apply(s, &crd.to_string());
    established(s, "racks.cr8.example.com");
    let ns = s.namespace("cr8");
    let rack = |spec: Value| {
        json!({"apiVersion": "cr8.example.com/v1", "kind": "Rack",
               "metadata": {"name": "r1", "namespace": ns}, "spec": spec})
        .to_string()
    };
    let out = s.kubectl_stdin(
        &["create", "-f", "-"],
        &rack(json!({"size": 1, "extra": true})),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"strict decoding error: unknown field "spec.extra""#),
        "{err}"
    );
    let out = s.kubectl_stdin(&["create", "-f", "-"], &rack(json!({"size": 11})));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"The Rack "r1" is invalid: spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"#),
        "{err}"
    );
    let out = s.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=a", "-f", "-"],
        &rack(json!({"size": 2, "ports": [{"name": "http", "port": 80}]})),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=b", "-f", "-"],
        &rack(json!({"ports": [{"name": "grpc", "port": 90}]})),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = s.json(&["get", "rack", "r1", "-n", &ns, "--show-managed-fields"]);
    assert_eq!(got["spec"]["mode"], "auto", "defaulted: {got}");
    let ports: Vec<&str> = got["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(ports, ["http", "grpc"], "merged by key: {got}");
    let b = got["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "b")
        .unwrap();
    assert!(
        b["fieldsV1"]["f:spec"]["f:ports"]
            .get(r#"k:{"name":"grpc"}"#)
            .is_some(),
        "{b}"
    );
    // The root metadata is kept as upstream's typed ObjectMeta keeps it: empty maps, lists
    // and strings and a zero generation are not stored.
    let r2 = json!({"apiVersion": "cr8.example.com/v1", "kind": "Rack",
        "metadata": {"name": "r2", "namespace": ns, "generateName": "", "uid": "", "labels": {},
                     "finalizers": [], "annotations": {"a": ""}}, "spec": {"size": 1}});
    let out = s.kubectl_stdin(&["create", "-f", "-"], &r2.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = s.json(&["get", "rack", "r2", "-n", &ns]);
    let meta = got["metadata"].as_object().unwrap();
    for gone in ["generateName", "labels", "finalizers"] {
        assert!(!meta.contains_key(gone), "{gone} kept: {got}");
    }
    assert_eq!(meta["annotations"], json!({"a": ""}), "{got}");
    assert_eq!(meta["generation"], 1, "{got}");
    // A metadata that does not decode as an ObjectMeta is refused, nothing stored (a label
    // value must be a string); Go's path starts at ObjectMeta, as upstream's.
    let path = format!("/apis/cr8.example.com/v1/namespaces/{ns}/racks");
    let bad = json!({"apiVersion": "cr8.example.com/v1", "kind": "Rack",
        "metadata": {"name": "r3", "labels": {"a": 5}}});
    let refused = s.send_json("POST", &path, &bad);
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(
        refused.json()["message"],
        "Rack in version \"v1\" cannot be handled as a Rack: json: cannot unmarshal number \
         into Go struct field ObjectMeta.labels of type string"
    );
    assert_eq!(s.get(&format!("{path}/r3")).status, 404);
    let patch = s.http(
        "PATCH",
        &format!("{path}/r2"),
        &["Content-Type: application/merge-patch+json"],
        Some(br#"{"metadata": {"generation": "x"}}"#),
    );
    // A patched object that does not decode is upstream's 422 on the field `patch`.
    assert_eq!(patch.status, 422, "{}", patch.text());
    let message = patch.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with(r#" "" is invalid: patch: Invalid value: "{\"apiVersion\":\"cr8.example.com/v1\",\"kind\":\"Rack\",\"metadata\":{"#)
            && message.ends_with(r#"": json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64"#),
        "{message}"
    );
}

/// An invalid definition is refused with every cause, in upstream's order and words (the
/// same text a v1.36.2 server answers for this definition), and nothing is served.
#[test]
fn invalid_definitions_get_every_cause() {
    let s = server();
    let schema = json!({"openAPIV3Schema": {"type": "object",
                        "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "bads.cr9.example.com"},
        "spec": {"group": "cr9.example.com", "scope": "Everywhere", "names": {"plural": "bads", "kind": "Bad"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema},
                              {"name": "v2", "served": true, "storage": true, "schema": schema}]}});
    let out = s.kubectl_stdin(&["create", "-f", "-"], &crd.to_string());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let version = |v: &str| {
        format!(
            r#"{{"Name":"{v}","Served":true,"Storage":true,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}}"#
        )
    };
    let expected = format!(
        "The CustomResourceDefinition \"bads.cr9.example.com\" is invalid: \n\
         * spec.scope: Unsupported value: \"Everywhere\": supported values: \"Cluster\", \"Namespaced\"\n\
         * spec.versions: Invalid value: [{},{}]: must have exactly one version marked as storage version\n\
         * spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields\n\
         * status.storedVersions: Invalid value: [\"v1\"]: must have the storage version v2\n",
        version("v1"),
        version("v2")
    );
    assert_eq!(err, expected);
    assert!(!s
        .kubectl(&["get", "crd", "bads.cr9.example.com"])
        .status
        .success());
}

/// A definition with two versions: objects are stored in the storage version whatever
/// version wrote them, and every read (get, list, watch, write answers) gives them in the
/// version asked for; a new storage version is recorded in `status.storedVersions`.
#[test]
fn objects_are_stored_in_one_version_and_read_in_any() {
    let s = server();
    let mut crd: Value = serde_json::from_str(&definition(
        "cr10.example.com",
        "gears",
        "Gear",
        &[],
        "Namespaced",
    ))
    .unwrap();
    let v1 = crd["spec"]["versions"][0].clone();
    let mut beta = v1.clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    crd["spec"]["versions"] = json!([beta, v1]);
    apply(s, &crd.to_string());
    established(s, "gears.cr10.example.com");
    let ns = s.namespace("gears");
    // Written through v1beta1 (kubectl's answer is in v1beta1 too).
    let written = s.kubectl_stdin(
        &["create", "-n", &ns, "-o", "json", "-f", "-"],
        &json!({"apiVersion": "cr10.example.com/v1beta1", "kind": "Gear",
                "metadata": {"name": "g1"}, "spec": {"size": 3}})
        .to_string(),
    );
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let written: Value = serde_json::from_slice(&written.stdout).unwrap();
    assert_eq!(written["apiVersion"], "cr10.example.com/v1beta1");
    let at = |version: &str| {
        s.json(&[
            "get",
            "-n",
            &ns,
            &format!("gears.{version}.cr10.example.com"),
            "g1",
            "-o",
            "json",
        ])
    };
    for version in ["v1", "v1beta1"] {
        let got = at(version);
        assert_eq!(got["apiVersion"], format!("cr10.example.com/{version}"));
        assert_eq!(got["spec"]["size"], 3);
        assert_eq!(
            got["metadata"]["resourceVersion"],
            written["metadata"]["resourceVersion"]
        );
    }
    // Lists and watches of each version.
    for version in ["v1", "v1beta1"] {
        let path = format!("/apis/cr10.example.com/{version}/namespaces/{ns}/gears");
        let list = s.get(&path).json();
        assert_eq!(list["apiVersion"], format!("cr10.example.com/{version}"));
        assert_eq!(
            list["items"][0]["apiVersion"],
            format!("cr10.example.com/{version}")
        );
        let w = s.get(&format!(
            "{path}?watch=1&resourceVersion=0&timeoutSeconds=1"
        ));
        let events = common::json_watch_events(&w.body);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(
            events[0].1["apiVersion"],
            format!("cr10.example.com/{version}")
        );
    }
    // A server-side apply through v1 (taking the field from the creator) updates the object
    // written through v1beta1; its answer and later reads through v1beta1 agree.
    let applied = s.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-n",
            &ns,
            "-o",
            "json",
            "-f",
            "-",
        ],
        &json!({"apiVersion": "cr10.example.com/v1", "kind": "Gear",
                "metadata": {"name": "g1"}, "spec": {"size": 5}})
        .to_string(),
    );
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let applied: Value = serde_json::from_slice(&applied.stdout).unwrap();
    assert_eq!(applied["apiVersion"], "cr10.example.com/v1");
    let beta_now = at("v1beta1");
    assert_eq!(beta_now["apiVersion"], "cr10.example.com/v1beta1");
    assert_eq!(beta_now["spec"]["size"], 5);
    // A watch of v1beta1 from before the apply sees the change in v1beta1.
    let rv = written["metadata"]["resourceVersion"].as_str().unwrap();
    let w = s.get(&format!(
        "/apis/cr10.example.com/v1beta1/namespaces/{ns}/gears?watch=1&resourceVersion={rv}&timeoutSeconds=1"
    ));
    let events = common::json_watch_events(&w.body);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "MODIFIED");
    assert_eq!(events[0].1["apiVersion"], "cr10.example.com/v1beta1");
    assert_eq!(events[0].1["spec"]["size"], 5);
    // Moving storage to v1beta1 records it; objects written since are stored there and
    // still read through v1.
    crd["spec"]["versions"][0]["storage"] = json!(true);
    crd["spec"]["versions"][1]["storage"] = json!(false);
    apply(s, &crd.to_string());
    let stored = s.json(&["get", "crd", "gears.cr10.example.com", "-o", "json"]);
    assert_eq!(stored["status"]["storedVersions"], json!(["v1", "v1beta1"]));
    assert!(eventually(WAIT, || {
        let out = s.kubectl_stdin(
            &["create", "-n", &ns, "-f", "-"],
            &json!({"apiVersion": "cr10.example.com/v1", "kind": "Gear",
                    "metadata": {"name": "g2"}, "spec": {"size": 1}})
            .to_string(),
        );
        out.status.success()
    }));
    let list = s.json(&["get", "-n", &ns, "gears.v1.cr10.example.com", "-o", "json"]);
    let versions: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["apiVersion"])
        .collect();
    assert_eq!(
        versions,
        [&json!("cr10.example.com/v1"), &json!("cr10.example.com/v1")]
    );
}

/// A conversion webhook the test starts (HTTPS with the server's own certificate, trusted
/// through `caBundle`): it keeps v1's `spec.size` as v2's `spec.length`.
struct ConversionWebhook {
    child: std::process::Child,
    port: u16,
}

impl ConversionWebhook {
    fn start(s: &Server) -> ConversionWebhook {
        let pki = s.ca_file().parent().unwrap().to_path_buf();
        ConversionWebhook::start_with(&pki.join("apiserver.crt"), &pki.join("apiserver.key"))
    }

    /// The webhook serving with the certificate and key given.
    fn start_with(cert: &std::path::Path, key: &std::path::Path) -> ConversionWebhook {
        let (child, port) = common::python_server("conversion_webhook.py", &[cert, key]);
        ConversionWebhook { child, port }
    }
}

impl Drop for ConversionWebhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The definition of `shafts.<group>`: v1 (`spec.size`, stored) and v2 (`spec.length`),
/// converted by the webhook of `client_config`.
fn shaft_crd(group: &str, client_config: Value) -> Value {
    let version = |name: &str, storage: bool, field: &str| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("shafts.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "shafts", "singular": "shaft", "kind": "Shaft"},
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"], "clientConfig": client_config}},
            "versions": [version("v1", true, "size"), version("v2", false, "length")]
        }
    })
}

/// A conversion webhook without `caBundle` is verified with the system's roots (here the
/// server's `SSL_CERT_FILE` names the webhook's CA); a server whose roots lack that CA
/// refuses the webhook's certificate.
#[test]
fn a_webhook_without_ca_bundle_is_verified_with_the_system_roots() {
    let pki = tempfile::tempdir().unwrap();
    let files = keel_http::tls::load_or_create(pki.path(), &[]).unwrap();
    let hook = ConversionWebhook::start_with(&files.cert, &files.key);
    let url = format!("https://127.0.0.1:{}/convert", hook.port);
    let trusting = Server::start_env(&[], &[("SSL_CERT_FILE", &files.ca_cert)]);
    for (s, trusted) in [(&trusting, true), (server(), false)] {
        let group = if trusted {
            "cr13.example.com"
        } else {
            "cr14.example.com"
        };
        apply(s, &shaft_crd(group, json!({"url": url})).to_string());
        established(s, &format!("shafts.{group}"));
        let created = s.send_json(
            "POST",
            &format!("/apis/{group}/v2/namespaces/default/shafts"),
            &json!({"apiVersion": format!("{group}/v2"), "kind": "Shaft",
                    "metadata": {"name": "s1"}, "spec": {"length": 7}}),
        );
        if trusted {
            assert_eq!(created.status, 201, "{}", created.text());
            let v1 = s
                .get(&format!("/apis/{group}/v1/namespaces/default/shafts/s1"))
                .json();
            assert_eq!(v1["spec"], json!({"size": 7}));
        } else {
            assert_eq!(created.status, 500, "{}", created.text());
            let message = created.json()["message"].as_str().unwrap().to_owned();
            assert!(message.contains("certificate"), "{message}");
        }
    }
}

/// A conversion webhook named by a Service (here an `ExternalName` one) is reached where the
/// Service resolves to at each call, its certificate verified for `<name>.<namespace>.svc`;
/// without the Service, conversions fail with the resolver's error.
#[test]
fn a_conversion_webhook_named_by_a_service_is_reached_through_it() {
    use base64::Engine;
    let s = server();
    let ns = s.namespace("conv-svc");
    let pki = tempfile::tempdir().unwrap();
    let files = keel_http::tls::load_or_create(pki.path(), &[format!("conv.{ns}.svc")]).unwrap();
    let hook = ConversionWebhook::start_with(&files.cert, &files.key);
    s.ok(&[
        "-n",
        &ns,
        "create",
        "service",
        "externalname",
        "conv",
        "--external-name",
        "localhost",
    ]);
    let version = |name: &str, storage: bool, field: &str| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}}})
    };
    let ca = std::fs::read(&files.ca_cert).unwrap();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "shafts.cr12.example.com"},
        "spec": {
            "group": "cr12.example.com",
            "scope": "Namespaced",
            "names": {"plural": "shafts", "singular": "shaft", "kind": "Shaft"},
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {
                    "service": {"namespace": ns, "name": "conv", "port": hook.port, "path": "/convert"},
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)}}},
            "versions": [version("v1", true, "size"), version("v2", false, "length")]
        }
    });
    apply(s, &crd.to_string());
    established(s, "shafts.cr12.example.com");
    let base = |v: &str| format!("/apis/cr12.example.com/{v}/namespaces/{ns}/shafts");
    let created = s.send_json(
        "POST",
        &base("v2"),
        &json!({"apiVersion": "cr12.example.com/v2", "kind": "Shaft",
                "metadata": {"name": "s1"}, "spec": {"length": 7}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let v1 = s.get(&format!("{}/s1", base("v1"))).json();
    assert_eq!(v1["spec"], json!({"size": 7}));
    s.ok(&["-n", &ns, "delete", "service", "conv"]);
    let failed = s.get(&format!("{}/s1", base("v2")));
    assert_eq!(failed.status, 500, "{}", failed.text());
    assert_eq!(
        failed.json()["message"],
        format!(
            "conversion webhook for cr12.example.com/v1, Kind=Shaft failed: Post \"https://conv.{ns}.svc:{}/convert?timeout=30s\": service \"conv\" not found",
            hook.port
        )
    );
}

/// Objects of a definition with `conversion.strategy: Webhook` are converted by its webhook
/// on every write and read (get, list, watch); a webhook's refusal and an unreachable
/// webhook are 500s with upstream's texts.
#[test]
fn a_conversion_webhook_converts_between_versions() {
    use base64::Engine;
    let s = server();
    let mut hook = ConversionWebhook::start(s);
    let ca = std::fs::read(s.ca_file()).unwrap();
    let version = |name: &str, storage: bool, field: &str| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}}})
    };
    let url = format!("https://127.0.0.1:{}/convert", hook.port);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "shafts.cr11.example.com"},
        "spec": {
            "group": "cr11.example.com",
            "scope": "Namespaced",
            "names": {"plural": "shafts", "singular": "shaft", "kind": "Shaft"},
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": url,
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)}}},
            "versions": [version("v1", true, "size"), version("v2", false, "length")]
        }
    });
    apply(s, &crd.to_string());
    established(s, "shafts.cr11.example.com");
    let ns = s.namespace("shafts");
    let base = |v: &str| format!("/apis/cr11.example.com/{v}/namespaces/{ns}/shafts");
    // Written through v2: stored as v1 by the webhook, answered in v2.
    let created = s.send_json(
        "POST",
        &base("v2"),
        &json!({"apiVersion": "cr11.example.com/v2", "kind": "Shaft",
                "metadata": {"name": "s1", "labels": {"a": "b"}}, "spec": {"length": 7}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    assert_eq!(created["apiVersion"], "cr11.example.com/v2");
    assert_eq!(created["spec"], json!({"length": 7}));
    let v1 = s.json(&[
        "get",
        "-n",
        &ns,
        "shafts.v1.cr11.example.com",
        "s1",
        "-o",
        "json",
    ]);
    assert_eq!(v1["apiVersion"], "cr11.example.com/v1");
    assert_eq!(v1["spec"], json!({"size": 7}));
    assert_eq!(v1["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(v1["metadata"]["labels"], json!({"a": "b"}));
    let v2 = s.json(&[
        "get",
        "-n",
        &ns,
        "shafts.v2.cr11.example.com",
        "s1",
        "-o",
        "json",
    ]);
    assert_eq!(v2["spec"], json!({"length": 7}));
    let list = s.get(&base("v2")).json();
    assert_eq!(list["items"][0]["apiVersion"], "cr11.example.com/v2");
    assert_eq!(list["items"][0]["spec"], json!({"length": 7}));
    let w = s.get(&format!(
        "{}?watch=1&resourceVersion=0&timeoutSeconds=1",
        base("v2")
    ));
    let events = common::json_watch_events(&w.body);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].1["spec"], json!({"length": 7}));
    // kubectl's Table of v2 objects (its watch-less get) works through the webhook too.
    let table = s.ok(&["get", "-n", &ns, "shafts.v2.cr11.example.com"]);
    assert!(table.contains("s1"), "{table}");
    // The webhook refuses an object: the write is a 500 with its message, nothing stored.
    let refused = s.send_json(
        "POST",
        &base("v2"),
        &json!({"apiVersion": "cr11.example.com/v2", "kind": "Shaft",
                "metadata": {"name": "s2", "labels": {"convert": "refuse"}}}),
    );
    assert_eq!(refused.status, 500, "{}", refused.text());
    assert_eq!(
        refused.json()["message"],
        "conversion webhook for cr11.example.com/v2, Kind=Shaft failed: refused by the test webhook"
    );
    assert_eq!(s.get(&format!("{}/s2", base("v1"))).status, 404);
    // Labels the webhook changes are validated as a write's: an invalid key is a 500 naming
    // it, nothing stored.
    let bad = s.send_json(
        "POST",
        &base("v2"),
        &json!({"apiVersion": "cr11.example.com/v2", "kind": "Shaft",
                "metadata": {"name": "s3", "labels": {"convert": "bad-label"}}}),
    );
    assert_eq!(bad.status, 500, "{}", bad.text());
    let message = bad.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with(
            "conversion webhook for cr11.example.com/v2, Kind=Shaft returned invalid metadata: \
             metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters"
        ),
        "{message}"
    );
    assert_eq!(s.get(&format!("{}/s3", base("v1"))).status, 404);
    // An unreachable webhook: reads in the stored version still work, others fail.
    hook.child.kill().unwrap();
    hook.child.wait().unwrap();
    assert_eq!(s.get(&format!("{}/s1", base("v1"))).status, 200);
    let failed = s.get(&format!("{}/s1", base("v2")));
    assert_eq!(failed.status, 500, "{}", failed.text());
    let message = failed.json()["message"].as_str().unwrap().to_owned();
    let prefix = format!(
        "conversion webhook for cr11.example.com/v1, Kind=Shaft failed: Post \"https://127.0.0.1:{}/convert?timeout=30s\": ",
        hook.port
    );
    assert!(message.starts_with(&prefix), "{message}");
    // A DELETE through v2 cannot answer in v2: it fails as the GET does, and deletes nothing
    // (upstream converts before it removes); through the stored version it deletes.
    let refused = s.send_json("DELETE", &format!("{}/s1", base("v2")), &json!({}));
    assert_eq!(refused.status, 500, "{}", refused.text());
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .starts_with(&prefix),
        "{}",
        refused.text()
    );
    assert_eq!(s.get(&format!("{}/s1", base("v1"))).status, 200);
    let deleted = s.send_json("DELETE", &format!("{}/s1", base("v1")), &json!({}));
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_eq!(deleted.json()["status"], "Success", "{}", deleted.text());
    assert_eq!(deleted.json()["details"]["uid"], created["metadata"]["uid"]);
    assert_eq!(s.get(&format!("{}/s1", base("v1"))).status, 404);
}

/// Objects stored before their schema changed are read as the schema now says: unknown
/// fields pruned and defaults applied (as upstream v1.36.2 answered the same steps), without
/// rewriting them.
#[test]
fn objects_older_than_the_schema_are_pruned_and_defaulted_when_read() {
    let s = server();
    let mut crd: Value = serde_json::from_str(&definition(
        "cr12.example.com",
        "bolts",
        "Bolt",
        &[],
        "Namespaced",
    ))
    .unwrap();
    let spec_schema = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    crd.pointer_mut(spec_schema).unwrap()["x-kubernetes-preserve-unknown-fields"] = json!(true);
    apply(s, &crd.to_string());
    established(s, "bolts.cr12.example.com");
    let ns = s.namespace("bolts");
    let out = s.kubectl_stdin(
        &["create", "-n", &ns, "-f", "-"],
        &json!({"apiVersion": "cr12.example.com/v1", "kind": "Bolt",
                "metadata": {"name": "b1"}, "spec": {"size": 1, "extra": "x"}})
        .to_string(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = s.json(&["get", "-n", &ns, "bolts", "b1", "-o", "json"]);
    assert_eq!(before["spec"], json!({"size": 1, "extra": "x"}));
    let schema = crd.pointer_mut(spec_schema).unwrap();
    schema
        .as_object_mut()
        .unwrap()
        .remove("x-kubernetes-preserve-unknown-fields");
    schema["properties"]["length"] = json!({"type": "integer", "default": 5});
    apply(s, &crd.to_string());
    let path = format!("/apis/cr12.example.com/v1/namespaces/{ns}/bolts");
    assert!(
        eventually(WAIT, || s.get(&format!("{path}/b1")).json()["spec"]
            == json!({"size": 1, "length": 5})),
        "{}",
        s.get(&format!("{path}/b1")).text()
    );
    let list = s.get(&path).json();
    assert_eq!(list["items"][0]["spec"], json!({"size": 1, "length": 5}));
    // Read as it is now, not rewritten: the same resourceVersion.
    assert_eq!(
        list["items"][0]["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    // Watches see it as the schema says too: in the initial events, and in the event of its
    // deletion (whose object is the stored one).
    let initial = s.get(&format!(
        "{path}?watch=1&resourceVersion=0&timeoutSeconds=1"
    ));
    let events = json_watch_events(&initial.body);
    assert_eq!(events[0].0, "ADDED", "{}", initial.text());
    assert_eq!(
        events[0].1["spec"],
        json!({"size": 1, "length": 5}),
        "{}",
        initial.text()
    );
    let listed = list["metadata"]["resourceVersion"].as_str().unwrap();
    assert_eq!(
        s.send_json("DELETE", &format!("{path}/b1"), &json!({}))
            .status,
        200
    );
    let replay = s.get(&format!(
        "{path}?watch=1&resourceVersion={listed}&timeoutSeconds=1"
    ));
    let events = json_watch_events(&replay.body);
    assert_eq!(events.len(), 1, "{}", replay.text());
    assert_eq!(events[0].0, "DELETED", "{}", replay.text());
    assert_eq!(
        events[0].1["spec"],
        json!({"size": 1, "length": 5}),
        "{}",
        replay.text()
    );
}

/// A watch open while its definition changes ends (upstream tears the old definition's
/// storage down, and every watch with it, within about a second), so its client watches
/// again and sees objects as the new definition serves them: it ends without an event to
/// wake it, and nothing made through the new definition goes out through the old.
#[test]
fn a_watch_ends_when_its_definition_changes() {
    let s = server();
    let mut crd: Value = serde_json::from_str(&definition(
        "cr13.example.com",
        "nuts",
        "Nut",
        &[],
        "Namespaced",
    ))
    .unwrap();
    apply(s, &crd.to_string());
    established(s, "nuts.cr13.example.com");
    let ns = s.namespace("nuts");
    let path = format!("/apis/cr13.example.com/v1/namespaces/{ns}/nuts");
    let listed = s.get(&path).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let watch_path = format!("{path}?watch=1&resourceVersion={listed}&timeoutSeconds=60");
    let started = std::time::Instant::now();
    let watcher = std::thread::spawn(move || s.get(&watch_path));
    std::thread::sleep(Duration::from_millis(300));
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["size"]["default"] = json!(4);
    apply(s, &crd.to_string());
    // No object is written until the watch has ended.
    assert!(
        eventually(WAIT, || watcher.is_finished()),
        "the watch is still open {:?} after its definition changed",
        started.elapsed()
    );
    let watched = watcher.join().unwrap();
    let nut = json!({"apiVersion": "cr13.example.com/v1", "kind": "Nut",
                     "metadata": {"name": "n1"}, "spec": {}});
    assert!(
        eventually(WAIT, || {
            let _ = s.send_json("DELETE", &format!("{path}/n1"), &json!({}));
            s.send_json("POST", &path, &nut).json()["spec"]["size"] == 4
        }),
        "the new schema is not served"
    );
    assert_eq!(watched.status, 200);
    let events = json_watch_events(&watched.body);
    assert!(
        events.iter().all(|(_, o)| o["spec"].get("size").is_none()),
        "an object made through the new definition went out through the old: {}",
        watched.text()
    );
}
