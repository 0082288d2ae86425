//! Server-side apply and managedFields through real clients (kubectl 1.32 against the
//! apiserver binary). Expected texts were recorded from a v1.36.2 kube-apiserver running the
//! same commands (times, uids and resourceVersions left out).

mod common;

use common::{server, write};
use serde_json::{json, Value};

const CM1: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  labels:
    team: a
data:
  k1: v1
  k2: v2
";
const CM2: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  k1: other
";
const CM3: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  labels:
    team: a
data:
  k1: v1
";

/// kubectl's text for a refused apply, after the first line.
const CONFLICT_HELP: &str =
    "Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts
";

/// The entries of an object without their times.
fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("time");
            e
        })
        .collect()
}

fn managed(s: &common::Server, ns: &str, what: &str) -> Value {
    s.json(&["get", what, "-n", ns, "--show-managed-fields"])
}

#[test]
fn kubectl_apply_server_side_flow_matches_upstream() {
    let s = server();
    let ns = s.namespace("ssa-flow");
    let dir = tempfile::tempdir().unwrap();
    let (f1, f2, f3) = (
        write(dir.path(), "cm1.yaml", CM1),
        write(dir.path(), "cm2.yaml", CM2),
        write(dir.path(), "cm3.yaml", CM3),
    );
    let (f1, f2, f3) = (
        f1.to_str().unwrap(),
        f2.to_str().unwrap(),
        f3.to_str().unwrap(),
    );
    let out = s.ok(&["apply", "--server-side", "-n", &ns, "-f", f1]);
    assert_eq!(out, "configmap/app serverside-applied\n");

    // A second manager changing k1 conflicts, with upstream's message.
    let err = s.fails(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "-n",
        &ns,
        "-f",
        f2,
    ]);
    assert_eq!(
        err,
        format!("error: Apply failed with 1 conflict: conflict with \"kubectl\": .data.k1\n{CONFLICT_HELP}")
    );

    // A forced dry run answers the result and stores nothing.
    let dry = s.ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "--dry-run=server",
        "-n",
        &ns,
        "-f",
        f2,
        "-o",
        "jsonpath={.data}",
    ]);
    assert_eq!(dry, r#"{"k1":"other","k2":"v2"}"#);
    assert_eq!(s.json(&["get", "cm", "app", "-n", &ns])["data"]["k1"], "v1");

    // kubectl diff --server-side shows the change.
    let diff = s.kubectl(&[
        "diff",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-n",
        &ns,
        "-f",
        f2,
    ]);
    let text = String::from_utf8(diff.stdout).unwrap();
    let changed: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("- ") || l.starts_with("+ "))
        .collect();
    assert_eq!(changed, ["-  k1: v1", "+  k1: other"], "{text}");

    let out = s.ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-n",
        &ns,
        "-f",
        f2,
    ]);
    assert_eq!(out, "configmap/app serverside-applied\n");

    // The first manager now conflicts on k1 (which it still applies); k2 stays as it is.
    let err = s.fails(&["apply", "--server-side", "-n", &ns, "-f", f3]);
    assert_eq!(
        err,
        format!("error: Apply failed with 1 conflict: conflict with \"other\": .data.k1\n{CONFLICT_HELP}")
    );
    let cm = managed(s, &ns, "cm/app");
    assert_eq!(cm["data"], json!({"k1": "other", "k2": "v2"}));
    assert_eq!(
        entries(&cm),
        [
            json!({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k2": {}},
                "f:metadata": {"f:labels": {"f:team": {}}}}, "manager": "kubectl", "operation": "Apply"}),
            json!({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k1": {}}},
                "manager": "other", "operation": "Apply"}),
        ]
    );

    // A third manager applying the same value shares ownership: its entry has no time
    // (the object did not change) and so sorts first.
    s.ok(&[
        "apply",
        "--server-side",
        "--field-manager=third",
        "-n",
        &ns,
        "-f",
        f2,
    ]);
    let cm = managed(s, &ns, "cm/app");
    assert!(cm["metadata"]["managedFields"][0].get("time").is_none());
    let yaml = s.ok(&[
        "get",
        "cm",
        "app",
        "-n",
        &ns,
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    let kept: String = yaml
        .lines()
        .filter(|l| {
            !["time:", "uid:", "resourceVersion:", "creationTimestamp:"]
                .iter()
                .any(|k| l.trim_start().starts_with(k))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        kept,
        format!(
            "apiVersion: v1
data:
  k1: other
  k2: v2
kind: ConfigMap
metadata:
  labels:
    team: a
  managedFields:
  - apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:data:
        f:k1: {{}}
    manager: third
    operation: Apply
  - apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:data:
        f:k2: {{}}
      f:metadata:
        f:labels:
          f:team: {{}}
    manager: kubectl
    operation: Apply
  - apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:data:
        f:k1: {{}}
    manager: other
    operation: Apply
  name: app
  namespace: {ns}
"
        )
    );
}

/// Removing a field from the applied configuration removes it from the object (v1.36.2's
/// entry recorded).
#[test]
fn reapply_without_a_field_removes_it() {
    let s = server();
    let ns = s.namespace("ssa-prune");
    let dir = tempfile::tempdir().unwrap();
    let f1 = write(dir.path(), "cm1.yaml", CM1);
    let f3 = write(dir.path(), "cm3.yaml", CM3);
    s.ok(&[
        "apply",
        "--server-side",
        "-n",
        &ns,
        "-f",
        f1.to_str().unwrap(),
    ]);
    s.ok(&[
        "apply",
        "--server-side",
        "-n",
        &ns,
        "-f",
        f3.to_str().unwrap(),
    ]);
    let cm = managed(s, &ns, "cm/app");
    assert_eq!(cm["data"], json!({"k1": "v1"}));
    assert_eq!(
        entries(&cm),
        [
            json!({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k1": {}},
            "f:metadata": {"f:labels": {"f:team": {}}}}, "manager": "kubectl", "operation": "Apply"})
        ]
    );
}

/// `kubectl create`, `label` and `scale` record Update entries as v1.36.2 does (a create is
/// compared with the type's Go zero value: no `.` for structs Go prints empty).
#[test]
fn kubectl_create_label_scale_entries_match_upstream() {
    let s = server();
    let ns = s.namespace("ssa-update");
    s.ok(&["create", "configmap", "a", "-n", &ns, "--from-literal=k=v"]);
    s.ok(&["create", "configmap", "empty", "-n", &ns]);
    s.ok(&["label", "configmap", "a", "x=y", "-n", &ns]);
    assert_eq!(
        entries(&managed(s, &ns, "cm/a")),
        [
            json!({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:k": {}}},
                "manager": "kubectl-create", "operation": "Update"}),
            json!({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:x": {}}}},
                "manager": "kubectl-label", "operation": "Update"}),
        ]
    );
    assert!(managed(s, &ns, "cm/empty")["metadata"]
        .get("managedFields")
        .is_none());
    s.ok(&[
        "create",
        "deployment",
        "d",
        "-n",
        &ns,
        "--image=nginx",
        "--port=80",
    ]);
    let want = json!({"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
            "f:selector": {}, "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
            "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {
                "f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                    "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}},
                    "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {}}}}},
        "manager": "kubectl-create", "operation": "Update"});
    let d = managed(s, &ns, "deploy/d");
    assert!(
        entries(&d).contains(&want),
        "{:#}",
        d["metadata"]["managedFields"]
    );
    s.ok(&["scale", "deploy", "d", "--replicas=3", "-n", &ns]);
    let d = managed(s, &ns, "deploy/d");
    let scale = json!({"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
        "manager": "kubectl", "operation": "Update", "subresource": "scale"});
    assert!(
        entries(&d).contains(&scale),
        "{:#}",
        d["metadata"]["managedFields"]
    );
}

fn apply_patch(s: &common::Server, path: &str, body: &str) -> common::Http {
    s.http(
        "PATCH",
        path,
        &["Content-Type: application/apply-patch+yaml"],
        Some(body.as_bytes()),
    )
}

/// Upstream's refusals, texts recorded from v1.36.2.
#[test]
fn apply_errors_match_upstream() {
    let s = server();
    let ns = s.namespace("ssa-errors");
    let base = format!("/api/v1/namespaces/{ns}/configmaps/e");
    let cfg = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\ndata:\n  a: \"1\"\n";
    let r = apply_patch(s, &base, cfg);
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let long = "x".repeat(129);
    let r = apply_patch(s, &format!("{base}?fieldManager={long}"), cfg);
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    let r = apply_patch(s, &format!("{base}?fieldManager=m"), cfg);
    assert_eq!(r.status, 201);
    let r = s.http(
        "PATCH",
        &format!("{base}?force=true"),
        &["Content-Type: application/merge-patch+json"],
        Some(br#"{"data":{"b":"2"}}"#),
    );
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    let cases = [
        (
            cfg.replace("apiVersion: v1", "apiVersion: v2"),
            "invalid object type: /v2, Kind=ConfigMap",
        ),
        (
            cfg.replace("kind: ConfigMap", "kind: Secret"),
            "invalid object type: /v1, Kind=Secret",
        ),
        (
            cfg.replace("name: e", "name: f"),
            "the name of the object (f) does not match the name on the URL (e)",
        ),
        (
            cfg.replace("name: e", "name: e\n  namespace: zz"),
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            cfg.replace("name: e", "name: e\n  managedFields: []"),
            "metadata.managedFields must be nil",
        ),
        (
            ": : [".to_string(),
            "error decoding YAML: error converting YAML to JSON: yaml: did not find expected key",
        ),
    ];
    for (body, want) in cases {
        let r = apply_patch(s, &format!("{base}?fieldManager=m"), &body);
        assert_eq!(
            (r.status, r.json()["message"].clone()),
            (400, json!(want)),
            "{body}"
        );
    }
    // A JSON body is YAML too.
    let r = apply_patch(
        s,
        &format!("{base}?fieldManager=j"),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e"},"data":{"a":"2"}}"#,
    );
    assert_eq!(r.status, 409);
    let st = r.json();
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(st["details"]["causes"][0]["reason"], "FieldManagerConflict");
    assert_eq!(st["details"]["causes"][0]["field"], ".data.a");
    // A dry-run apply that would create stores nothing.
    let r = apply_patch(
        s,
        &format!("/api/v1/namespaces/{ns}/configmaps/new?fieldManager=m&dryRun=All"),
        &cfg.replace("name: e", "name: new"),
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        s.get(&format!("/api/v1/namespaces/{ns}/configmaps/new"))
            .status,
        404
    );
}

/// Rule 15 (keel follows the documents, not v1.36.2): only `[{}]` resets, `[]` keeps.
#[test]
fn only_list_of_one_empty_entry_resets_managed_fields() {
    let s = server();
    let ns = s.namespace("ssa-reset");
    s.ok(&["create", "configmap", "r", "-n", &ns, "--from-literal=k=v"]);
    let path = format!("/api/v1/namespaces/{ns}/configmaps/r");
    let merge = |body: &[u8]| {
        s.http(
            "PATCH",
            &path,
            &["Content-Type: application/merge-patch+json"],
            Some(body),
        )
    };
    let r = merge(br#"{"metadata":{"managedFields":[]}}"#);
    assert_eq!(
        r.json()["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let r = merge(br#"{"metadata":{"managedFields":[{}]}}"#);
    assert!(r.json()["metadata"].get("managedFields").is_none());
}

/// Apply to the status and scale subresources records entries with their subresource; a
/// forced scale apply takes `spec.replicas` from the earlier appliers.
#[test]
fn apply_to_status_and_scale() {
    let s = server();
    let ns = s.namespace("ssa-sub");
    let dir = tempfile::tempdir().unwrap();
    let dep = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: nginx
        ports:
        - containerPort: 80
";
    let f = write(dir.path(), "dep.yaml", dep);
    s.ok(&[
        "apply",
        "--server-side",
        "-n",
        &ns,
        "-f",
        f.to_str().unwrap(),
    ]);
    let base = format!("/apis/apps/v1/namespaces/{ns}/deployments/web");
    let r = apply_patch(
        s,
        &format!("{base}/status?fieldManager=st"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nstatus:\n  observedGeneration: 7\n",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = apply_patch(
        s,
        &format!("{base}/scale?fieldManager=sc&force=true"),
        "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: web\nspec:\n  replicas: 4\n",
    );
    assert_eq!(r.json()["spec"]["replicas"], 4, "{}", r.text());
    let d = managed(s, &ns, "deploy/web");
    let got = entries(&d);
    assert!(got.contains(&json!({"apiVersion": "apps/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}}, "manager": "sc", "operation": "Apply", "subresource": "scale"})), "{got:#?}");
    assert!(got.contains(&json!({"apiVersion": "apps/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:observedGeneration": {}}}, "manager": "st", "operation": "Apply", "subresource": "status"})), "{got:#?}");
    let kubectl = got.iter().find(|e| e["manager"] == "kubectl").unwrap();
    assert!(
        kubectl["fieldsV1"]["f:spec"].get("f:replicas").is_none(),
        "{kubectl}"
    );
    assert!(
        kubectl["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]
            ["f:ports"]
            .get("k:{\"containerPort\":80,\"protocol\":\"TCP\"}")
            .is_some(),
        "{kubectl}"
    );
}

/// Field validation of applied configurations, JSON and YAML: a clean configuration is
/// applied without re-checking the merged object; an unknown field is refused when
/// `Strict`, dropped when `Ignore`; an invalid `fieldValidation` is a 422 either way.
#[test]
fn apply_field_validation() {
    let s = server();
    let ns = s.namespace("ssa-validation");
    let base = format!("/api/v1/namespaces/{ns}/configmaps/v");
    let json_cfg = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"v"},"data":{"a":"1"},"bogus":1}"#;
    let yaml_cfg =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: v\ndata:\n  a: \"1\"\nbogus: 1\n";
    for cfg in [json_cfg, yaml_cfg] {
        let r = apply_patch(
            s,
            &format!("{base}?fieldManager=m&fieldValidation=Strict"),
            cfg,
        );
        assert_eq!(r.status, 400, "{cfg}");
        assert!(
            r.json()["message"].as_str().unwrap().contains("bogus"),
            "{cfg}"
        );
        let r = apply_patch(
            s,
            &format!("{base}?fieldManager=m&fieldValidation=Nope"),
            cfg,
        );
        assert_eq!(r.status, 422, "{cfg}");
        let r = apply_patch(
            s,
            &format!("{base}?fieldManager=m&fieldValidation=Ignore"),
            cfg,
        );
        assert!(r.status == 200 || r.status == 201, "{cfg}: {}", r.status);
        assert!(r.json().get("bogus").is_none(), "{cfg}");
    }
    let clean =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"v"},"data":{"a":"2"}}"#;
    let r = apply_patch(
        s,
        &format!("{base}?fieldManager=m&fieldValidation=Nope"),
        clean,
    );
    assert_eq!(r.status, 422);
    let r = apply_patch(
        s,
        &format!("{base}?fieldManager=m&fieldValidation=Strict"),
        clean,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"]["a"], "2");
}
