//! The write path as upstream v1.36 answers it, over raw HTTPS (kubectl sends JSON, so YAML
//! bodies go through curl): YAML request bodies and YAML responses, errors in the
//! representation the client asked for, JSON bodies ending with a newline.

mod common;

use common::server;
use serde_json::{json, Value};

const YAML_CT: &str = "Content-Type: application/yaml";
const YAML_ACCEPT: &str = "Accept: application/yaml";

fn yaml_of(r: &common::Http) -> Value {
    assert_eq!(
        r.header("content-type"),
        Some("application/yaml"),
        "{}",
        r.text()
    );
    keel_api::yaml::decode(&r.body, 1 << 20)
        .unwrap_or_else(|e| panic!("not YAML ({e}): {}", r.text()))
        .value
}

fn message(r: &common::Http) -> String {
    r.json()["message"].as_str().unwrap_or_default().to_string()
}

/// A YAML body creates and replaces as the same JSON body would, with field validation; the
/// object comes back as YAML (upstream's layout) when asked for.
#[test]
fn yaml_bodies_create_and_update() {
    let s = server();
    let ns = s.namespace("wpath-yaml");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\n  labels: {app: web}\ndata:\n  a: \"1\"\n  t: \"true\"\n  bogus: x\n";
    let r = s.http("POST", &base, &[YAML_CT], Some(body.as_bytes()));
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert_eq!(
        created["data"],
        json!({"a": "1", "t": "true", "bogus": "x"})
    );
    assert_eq!(created["metadata"]["labels"]["app"], "web");

    // Unknown fields: a warning by default, an error with fieldValidation=Strict.
    let body2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y2\nspec: {}\n";
    let r = s.http("POST", &base, &[YAML_CT], Some(body2.as_bytes()));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.header("warning"),
        Some("299 - \"unknown field \\\"spec\\\"\"")
    );
    let r = s.http(
        "POST",
        &format!("{base}?fieldValidation=Strict"),
        &[YAML_CT],
        Some(body2.replace("y2", "y3").as_bytes()),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        message(&r).ends_with("strict decoding error: unknown field \"spec\""),
        "{}",
        r.text()
    );

    // GET as YAML: upstream's layout (sorted keys, quoted strings that read as non-strings).
    let r = s.http("GET", &format!("{base}/y1"), &[YAML_ACCEPT], None);
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(text.starts_with("apiVersion: v1\ndata:\n  a: \"1\"\n  bogus: x\n  t: \"true\"\nkind: ConfigMap\nmetadata:\n"), "{text}");
    assert_eq!(yaml_of(&r), created);

    // PUT with a YAML body, answered in YAML.
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    let put = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\n  resourceVersion: \"{rv}\"\ndata:\n  a: \"2\"\n");
    let r = s.http(
        "PUT",
        &format!("{base}/y1"),
        &[YAML_CT, YAML_ACCEPT],
        Some(put.as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(yaml_of(&r)["data"], json!({"a": "2"}));

    // PATCH answered in YAML.
    let r = s.http(
        "PATCH",
        &format!("{base}/y1"),
        &["Content-Type: application/merge-patch+json", YAML_ACCEPT],
        Some(br#"{"data":{"b":"3"}}"#),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(yaml_of(&r)["data"], json!({"a": "2", "b": "3"}));

    // Lists in YAML.
    let r = s.http("GET", &base, &[YAML_ACCEPT], None);
    assert_eq!(r.status, 200);
    let list = yaml_of(&r);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);

    // DELETE answered in YAML, with YAML DeleteOptions.
    let r = s.http(
        "DELETE",
        &format!("{base}/y2"),
        &[YAML_CT, YAML_ACCEPT],
        Some(b"kind: DeleteOptions\napiVersion: v1\ngracePeriodSeconds: 0\n"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let st = yaml_of(&r);
    assert_eq!(
        (&st["status"], &st["details"]["name"]),
        (&json!("Success"), &json!("y2"))
    );

    // A YAML create asked for in YAML.
    let r = s.http(
        "POST",
        &base,
        &[YAML_CT, YAML_ACCEPT],
        Some(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y4\n"),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(yaml_of(&r)["metadata"]["name"], "y4");
}

/// Bad YAML bodies get upstream's code and wording (recorded from kube-apiserver v1.36.2).
#[test]
fn yaml_body_errors_read_as_upstream() {
    let s = server();
    let ns = s.namespace("wpath-yaml-errors");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let post = |path: &str, body: &str| s.http("POST", path, &[YAML_CT], Some(body.as_bytes()));

    let r = post(
        &base,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y2\ndata:\n  a: [1\n",
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        message(&r),
        "the object provided is unrecognized (must be of type ConfigMap): yaml: line 6: did not \
         find expected ',' or ']' (61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170 ...)"
    );

    // Duplicate keys: a warning, or with Strict upstream's strict decoding error.
    let dup =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y7\ndata:\n  a: \"1\"\n  a: \"2\"\n";
    let r = post(&base, dup);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.header("warning"),
        Some("299 - \"line 7: key \\\"a\\\" already set in map\"")
    );
    assert_eq!(r.json()["data"]["a"], "2");
    let r = post(
        &format!("{base}?fieldValidation=Strict"),
        &dup.replace("y7", "y8"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        message(&r),
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         yaml: unmarshal errors:\n  line 7: key \"a\" already set in map"
    );

    // Type errors as for JSON bodies, numbers out of range included.
    let r = post(&base, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y5\ndata:\n  a: 99999999999999999999999999\n");
    assert_eq!(r.status, 400);
    assert_eq!(
        message(&r),
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal \
         number into Go struct field ConfigMap.data of type string"
    );
    let r = post(&base, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y6\n  generation: 99999999999999999999999999\n");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(message(&r).starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number"), "{}", r.text());

    // A billion laughs is stopped by the bound on expanded values.
    let mut bomb = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y9\n  annotations:\n    x: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    let mut prev = "a".to_string();
    for i in 0..8 {
        let refs = vec![format!("*{prev}"); 9].join(",");
        bomb.push_str(&format!("    b{i}: &b{i} [{refs}]\n"));
        prev = format!("b{i}");
    }
    let r = post(&base, &bomb);
    assert_eq!(r.status, 400);
    assert!(
        message(&r).starts_with("the object provided is unrecognized (must be of type ConfigMap): yaml: document contains excessive aliasing ("),
        "{}",
        r.text()
    );

    // Too deep.
    let deep = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y10\n  annotations:\n    x: {}{}\n",
        "[".repeat(500),
        "]".repeat(500)
    );
    let r = post(&base, &deep);
    assert_eq!(r.status, 400);
    assert!(
        message(&r).contains("exceeded max depth of 128"),
        "{}",
        r.text()
    );

    // Not an object.
    let r = post(&base, "- a\n- b\n");
    assert_eq!(r.status, 400);
    assert_eq!(
        message(&r),
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get \
         version/kind; json parse error: json: cannot unmarshal array into Go value of type \
         struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \
         \"json:\\\"kind,omitempty\\\"\" } (2d20610a2d20620a)"
    );
    // An empty body is an empty object (upstream: name or generateName is required).
    let r = post(&base, "");
    assert_eq!(r.status, 422, "{}", r.text());

    // The 415 lists what is accepted, YAML included now that it is.
    let r = s.http("POST", &base, &["Content-Type: text/plain"], Some(b"x"));
    assert_eq!(r.status, 415);
    assert_eq!(
        message(&r),
        "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

/// Upstream has no YAML stream framing: a watch asking for YAML is 406, the Status in YAML.
#[test]
fn yaml_watches_are_not_acceptable() {
    let s = server();
    let ns = s.namespace("wpath-yaml-watch");
    let r = s.http(
        "GET",
        &format!("/api/v1/namespaces/{ns}/configmaps?watch=1&timeoutSeconds=1"),
        &[YAML_ACCEPT],
        None,
    );
    assert_eq!(r.status, 406);
    assert_eq!(
        r.text(),
        "apiVersion: v1\ncode: 406\nkind: Status\nmessage: 'only the following media types are \
         accepted: application/json;stream=watch,\n  application/vnd.kubernetes.protobuf;stream=watch'\n\
         metadata: {}\nreason: NotAcceptable\nstatus: Failure\n"
    );
}

/// Errors come in the representation the client accepts: protobuf for a protobuf client
/// (as client-go's protobuf clients expect), YAML for YAML, JSON otherwise.
#[test]
fn errors_in_the_accepted_representation() {
    let s = server();
    let ns = s.namespace("wpath-err-repr");
    let path = format!("/api/v1/namespaces/{ns}/configmaps/missing");
    let r = s.http(
        "GET",
        &path,
        &["Accept: application/vnd.kubernetes.protobuf, application/json"],
        None,
    );
    assert_eq!(r.status, 404);
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.kubernetes.protobuf")
    );
    let st = keel_proto::decode(&r.body).expect("protobuf Status");
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["reason"], "NotFound");
    assert_eq!(st["code"], 404);
    assert_eq!(st["message"], "configmaps \"missing\" not found");

    let r = s.http("GET", &path, &[YAML_ACCEPT], None);
    assert_eq!(r.status, 404);
    assert_eq!(yaml_of(&r)["reason"], "NotFound");

    let r = s.http("GET", &path, &["Accept: application/json"], None);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["reason"], "NotFound");
}

/// Go's `json.Encoder` ends every body with a newline: objects, lists (streamed ones too),
/// Tables, Status and discovery, as upstream's.
#[test]
fn json_bodies_end_with_a_newline() {
    let s = server();
    let ns = s.namespace("wpath-newline");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let r = s.send_json(
        "POST",
        &base,
        &json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
    );
    assert_eq!(r.status, 201);
    assert!(r.body.ends_with(b"}\n"), "{:?}", r.text());
    for (path, accept) in [
        (format!("{base}/c"), "application/json"),
        (base.clone(), "application/json"),
        (format!("{base}/missing"), "application/json"),
        (base.clone(), "application/json;as=Table;v=v1;g=meta.k8s.io"),
        ("/api/v1".to_string(), "application/json"),
        ("/apis".to_string(), "application/json"),
    ] {
        let r = s.http("GET", &path, &[&format!("Accept: {accept}")], None);
        assert!(
            r.body.ends_with(b"}\n") && !r.body.ends_with(b"}\n\n"),
            "{path} {accept}: {:?}",
            r.text()
        );
    }
    // A list big enough to be streamed from the store.
    let big = "x".repeat(70 * 1024);
    let r = s.send_json(
        "POST",
        &base,
        &json!({"metadata": {"name": "big"}, "data": {"a": big}}),
    );
    assert_eq!(r.status, 201);
    let r = s.get(&base);
    assert_eq!(r.status, 200);
    assert!(r.body.ends_with(b"]}\n"), "streamed list");
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 2);
}

/// `?pretty=true` indents JSON answers (objects, lists, errors) as upstream's
/// `json.MarshalIndent(obj, "", "  ")`, newline-terminated; `pretty=false` does not.
#[test]
fn pretty_indents_json() {
    let s = server();
    let ns = s.namespace("wpath-pretty");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let r = s.send_json(
        "POST",
        &base,
        &json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
    );
    assert_eq!(r.status, 201);
    for path in [
        format!("{base}/c?pretty=true"),
        format!("{base}?pretty=1"),
        format!("{base}/missing?pretty=True"),
    ] {
        let r = s.get(&path);
        let want = format!("{}\n", serde_json::to_string_pretty(&r.json()).unwrap());
        assert_eq!(r.text(), want, "{path}");
        assert!(
            r.text().starts_with("{\n  \"kind\": "),
            "{path}: {}",
            r.text()
        );
    }
    let r = s.get(&format!("{base}/c?pretty=false"));
    assert!(r.text().starts_with("{\"kind\":"), "{}", r.text());
}

/// Bad option values are 422 naming the options kind, as upstream words them.
#[test]
fn invalid_options_are_422_as_upstream() {
    let s = server();
    let ns = s.namespace("wpath-options");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let body = br#"{"metadata":{"name":"d1"}}"#;
    let ct = ["Content-Type: application/json"];
    let cases = [
        ("POST", format!("{base}?dryRun=Foo"), "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Foo\"]: supported values: \"All\""),
        ("POST", format!("{base}?dryRun=All&dryRun=Foo"), "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"All\",\"Foo\"]: supported values: \"All\""),
        ("POST", format!("{base}?fieldValidation=Foo"), "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Foo\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""),
        ("PUT", format!("{base}/d1?dryRun=x"), "UpdateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"x\"]: supported values: \"All\""),
        ("DELETE", format!("{base}/d1?propagationPolicy=Foo"), "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Foo\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""),
    ];
    for (method, path, want) in cases {
        let r = s.http(method, &path, &ct, Some(body));
        assert_eq!(r.status, 422, "{method} {path}: {}", r.text());
        let st = r.json();
        assert_eq!(st["message"], want, "{method} {path}");
        assert_eq!(st["reason"], "Invalid");
        assert_eq!(st["details"]["group"], "meta.k8s.io");
    }
    let r = s.http(
        "DELETE",
        &format!("{base}/d1"),
        &ct,
        Some(br#"{"propagationPolicy":"Foo"}"#),
    );
    assert_eq!(r.status, 422, "{}", r.text());
}

/// A dry-run create of a taken name is 409, as the real create would be.
#[test]
fn dry_run_create_of_a_taken_name_conflicts() {
    let s = server();
    let ns = s.namespace("wpath-dryrun");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let obj = json!({"metadata": {"name": "taken"}});
    assert_eq!(s.send_json("POST", &base, &obj).status, 201);
    let r = s.send_json("POST", &format!("{base}?dryRun=All"), &obj);
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["message"], "configmaps \"taken\" already exists");
    assert_eq!(r.json()["reason"], "AlreadyExists");
    let r = s.send_json(
        "POST",
        &format!("{base}?dryRun=All"),
        &json!({"metadata": {"name": "free"}}),
    );
    assert_eq!(r.status, 201);
}

/// A patch whose result does not decode into the Go type is upstream's 422 on the field
/// `patch`, quoting the patched object as Go writes a map (keys sorted, `<` escaped): the
/// text a v1.36.2 server gave for this patch. A body that does not decode stays a 400.
#[test]
fn a_patched_object_that_does_not_decode_is_invalid() {
    let s = server();
    let ns = s.namespace("wpath-patchtype");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = s.send_json("POST", &base, &json!({"metadata": {"name": "pz"}}));
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let r = s.http(
        "PATCH",
        &format!("{base}/pz"),
        &["Content-Type: application/merge-patch+json"],
        Some(br#"{"metadata": {"generation": "x", "labels": {"b": "c<"}}, "data": {"z": "1", "a": "2"}}"#),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    let patched = format!(
        r#"{{"apiVersion":"v1","data":{{"a":"2","z":"1"}},"kind":"ConfigMap","metadata":{{"creationTimestamp":"{}","generation":"x","labels":{{"b":"c\u003c"}},"name":"pz","namespace":"{ns}","resourceVersion":"{}","uid":"{}"}}}}"#,
        created["metadata"]["creationTimestamp"].as_str().unwrap(),
        created["metadata"]["resourceVersion"].as_str().unwrap(),
        created["metadata"]["uid"].as_str().unwrap(),
    );
    let cause = format!(
        "Invalid value: {}: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.generation of type int64",
        serde_json::to_string(&patched).unwrap()
    );
    assert_eq!(
        r.json()["message"],
        format!(" \"\" is invalid: patch: {cause}")
    );
    assert_eq!(r.json()["reason"], "Invalid");
    assert_eq!(
        r.json()["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": cause, "field": "patch"}])
    );
    let body = s.send_json(
        "POST",
        &base,
        &json!({"metadata": {"name": "p2", "generation": "x"}}),
    );
    assert_eq!(body.status, 400, "{}", body.text());
}

/// `metadata.uid` in a PUT is a precondition (409, upstream's storage error); in a patch it
/// is an immutable field (422, the cause listed twice as upstream lists it).
#[test]
fn uids_in_update_bodies() {
    let s = server();
    let ns = s.namespace("wpath-uid");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let r = s.send_json("POST", &base, &json!({"metadata": {"name": "y1"}}));
    let uid = r.json()["metadata"]["uid"].as_str().unwrap().to_string();
    let other = "6321d4bc-587e-4591-8335-000000000000";
    let r = s.send_json(
        "PUT",
        &format!("{base}/y1"),
        &json!({"metadata": {"name": "y1", "uid": other}, "data": {"x": "1"}}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        format!(
            "Operation cannot be fulfilled on configmaps \"y1\": StorageError: invalid object, \
             Code: 4, Key: /registry/configmaps/{ns}/y1, ResourceVersion: 0, AdditionalErrorMsg: \
             Precondition failed: UID in precondition: {other}, UID in object meta: {uid}"
        )
    );
    // Its own uid is fine.
    let r = s.send_json(
        "PUT",
        &format!("{base}/y1"),
        &json!({"metadata": {"name": "y1", "uid": uid}, "data": {"x": "1"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.send_json(
        "PATCH",
        &format!("{base}/y1"),
        &json!({"metadata": {"uid": other}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    let st = r.json();
    assert_eq!(
        st["message"],
        format!("ConfigMap \"y1\" is invalid: metadata.uid: Invalid value: \"{other}\": field is immutable")
    );
    assert_eq!(st["details"]["causes"].as_array().unwrap().len(), 2);
}

/// Once an object is being deleted no finalizer may be added (422, upstream's words); removing
/// them is what lets it go.
#[test]
fn no_new_finalizers_while_deleting() {
    let s = server();
    let ns = s.namespace("wpath-finalizers");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let r = s.send_json(
        "POST",
        &base,
        &json!({"metadata": {"name": "f1", "finalizers": ["example.com/a"]}}),
    );
    assert_eq!(r.status, 201);
    // Marked, not removed: the answer is the object.
    let r = s.http("DELETE", &format!("{base}/f1"), &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "ConfigMap");
    assert!(r.json()["metadata"]["deletionTimestamp"].is_string());
    let r = s.send_json(
        "PATCH",
        &format!("{base}/f1"),
        &json!({"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "ConfigMap \"f1\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be \
         added if the object is being deleted, found new finalizers []string{\"example.com/b\"}"
    );
    let r = s.send_json(
        "PATCH",
        &format!("{base}/f1"),
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(s.get(&format!("{base}/f1")).status, 404);
}

/// A DELETE that removes the object at once answers with a Success `Status` naming it, but
/// for the types upstream returns the deleted object for (pods, services, ...).
#[test]
fn delete_answers_per_type() {
    let s = server();
    let ns = s.namespace("wpath-delete");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let r = s.send_json("POST", &base, &json!({"metadata": {"name": "c"}}));
    let uid = r.json()["metadata"]["uid"].clone();
    let r = s.http("DELETE", &format!("{base}/c"), &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "c", "kind": "configmaps", "uid": uid}})
    );
    // In a group: the group is named.
    s.ok(&["create", "deployment", "d", "--image=nginx", "-n", &ns]);
    let r = s.http(
        "DELETE",
        &format!("/apis/apps/v1/namespaces/{ns}/deployments/d"),
        &[],
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["details"]["group"], "apps");
    assert_eq!(r.json()["details"]["kind"], "deployments");
    // A type that returns the deleted object.
    let sa = format!("/api/v1/namespaces/{ns}/serviceaccounts");
    assert_eq!(
        s.send_json("POST", &sa, &json!({"metadata": {"name": "sa"}}))
            .status,
        201
    );
    let r = s.http("DELETE", &format!("{sa}/sa"), &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "ServiceAccount");
    // kubectl reads either.
    s.ok(&["create", "configmap", "k", "-n", &ns]);
    s.ok(&["delete", "configmap", "k", "-n", &ns]);
}
