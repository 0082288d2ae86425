//! `/openapi/v2` in protobuf (issue 22), and the OpenAPI documents' conditional requests.
//! kubectl 1.32 validates a `kind: List` on the client:
//! client-go fetches `/openapi/v2` with only
//! `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and builds its models
//! from gnostic's `openapi.v2.Document`. When keel answered that with 406,
//! `kubectl create -f list.yaml` failed with "the server was unable to respond with a content
//! type that the client supports".

mod common;

use common::{server, write};
use keel_proto::openapi_v2::gnostic::Document;
use prost::Message;

const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

fn config_map_list(names: [&str; 2], second_item_extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: List\nitems:\n\
         - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: {}\n  data:\n    a: \"1\"\n\
         - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: {}\n{second_item_extra}  data:\n    b: \"2\"\n",
        names[0], names[1]
    )
}

/// The regression: a List of two ConfigMaps is created, both items.
#[test]
fn kubectl_creates_a_list() {
    let s = server();
    let ns = s.namespace("v2-list");
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "list.yaml",
        &config_map_list(["one", "two"], ""),
    );
    let out = s.ok(&["create", "-n", &ns, "-f", f.to_str().unwrap()]);
    assert!(
        out.contains("configmap/one created") && out.contains("configmap/two created"),
        "{out}"
    );
    assert_eq!(s.json(&["get", "cm", "one", "-n", &ns])["data"]["a"], "1");
    assert_eq!(s.json(&["get", "cm", "two", "-n", &ns])["data"]["b"], "2");
}

/// kubectl's client-side validation reads the protobuf document: an unknown field in an item
/// is refused before anything is created (the message names the definition), and
/// `--validate=false` skips the check.
#[test]
fn kubectl_validates_list_items_against_the_protobuf_document() {
    let s = server();
    let ns = s.namespace("v2-validate");
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "bad.yaml",
        &config_map_list(["three", "four"], "  bogus: true\n"),
    );
    let err = s.fails(&["create", "-n", &ns, "-f", f.to_str().unwrap()]);
    assert!(
        err.contains(
            "ValidationError(ConfigMap): unknown field \"bogus\" in io.k8s.api.core.v1.ConfigMap"
        ),
        "{err}"
    );
    let names = s.ok(&["get", "cm", "-n", &ns, "-o", "name"]);
    assert!(
        !names.contains("configmap/three") && !names.contains("configmap/four"),
        "{names}"
    );
    s.ok(&[
        "create",
        "-n",
        &ns,
        "-f",
        f.to_str().unwrap(),
        "--validate=false",
    ]);
    let four = s.json(&["get", "cm", "four", "-n", &ns]);
    assert!(four.get("bogus").is_none(), "{four}");
}

/// The document over raw HTTPS, framed as upstream frames it: the protobuf media type under
/// either name, the JSON document's ETag on both forms, 304 for a matching `If-None-Match`,
/// gzip on request, and a bare 406 when nothing fits.
#[test]
fn protobuf_document_over_https() {
    let s = server();
    let pb = s.http(
        "GET",
        "/openapi/v2",
        &[&format!("Accept: {PROTOBUF_DEPRECATED}")],
        None,
    );
    assert_eq!(pb.status, 200);
    assert_eq!(pb.header("content-type"), Some(PROTOBUF));
    assert_eq!(pb.header("content-encoding"), None);
    let doc = Document::decode(&pb.body[..]).expect("gnostic Document");
    assert_eq!(doc.swagger, "2.0");
    let defs = &doc.definitions.as_ref().unwrap().additional_properties;
    let cm = defs
        .iter()
        .find(|d| d.name == "io.k8s.api.core.v1.ConfigMap")
        .and_then(|d| d.value.as_ref())
        .expect("ConfigMap definition");
    let gvk = cm
        .vendor_extension
        .iter()
        .find(|e| e.name == "x-kubernetes-group-version-kind")
        .and_then(|e| e.value.as_ref())
        .expect("GVK extension");
    assert_eq!(
        gvk.yaml,
        "- group: \"\"\n  kind: ConfigMap\n  version: v1\n"
    );
    let etag = pb.header("etag").expect("ETag").to_owned();
    assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
    assert!(pb.headers.iter().any(|(k, v)| k == "vary" && v == "Accept"));

    let pb2 = s.http(
        "GET",
        "/openapi/v2",
        &[&format!("Accept: {PROTOBUF}")],
        None,
    );
    assert_eq!(pb2.header("content-type"), Some(PROTOBUF));
    assert_eq!(pb2.body, pb.body);

    let json = s.http("GET", "/openapi/v2", &["Accept: application/json"], None);
    assert_eq!(json.header("content-type"), Some("application/json"));
    assert_eq!(json.header("etag"), Some(etag.as_str()));
    let json = json.json();
    assert_eq!(
        json["definitions"].as_object().unwrap().len(),
        defs.len(),
        "the protobuf document has every definition of the JSON one"
    );

    let not_modified = s.http(
        "GET",
        "/openapi/v2",
        &[
            &format!("Accept: {PROTOBUF_DEPRECATED}"),
            &format!("If-None-Match: {etag}"),
        ],
        None,
    );
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    assert_eq!(not_modified.header("content-length"), None);
    let stale = s.http(
        "GET",
        "/openapi/v2",
        &[&format!("Accept: {PROTOBUF}"), "If-None-Match: \"0\""],
        None,
    );
    assert_eq!(stale.status, 200);

    let gz = s.http(
        "GET",
        "/openapi/v2",
        &[&format!("Accept: {PROTOBUF}"), "Accept-Encoding: gzip"],
        None,
    );
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert_eq!(gz.header("content-type"), Some(PROTOBUF));
    assert!(gz.body.starts_with(&[0x1f, 0x8b]) && gz.body.len() < pb.body.len());

    let refused = s.http("GET", "/openapi/v2", &["Accept: text/plain"], None);
    assert_eq!(refused.status, 406);
    assert!(refused.body.is_empty());
}

/// The v3 documents answer `If-None-Match` the same way (upstream's handler3 serves them with
/// Go's ServeContent too), keeping their caching headers on the 304.
#[test]
fn v3_documents_answer_if_none_match() {
    let s = server();
    let root = s.get("/openapi/v3");
    let etag = root.header("etag").expect("ETag").to_owned();
    let not_modified = s.http(
        "GET",
        "/openapi/v3",
        &[&format!("If-None-Match: {etag}")],
        None,
    );
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("content-length"), None);
    assert_eq!(
        not_modified.header("cache-control"),
        Some("no-cache, private")
    );

    let url = root.json()["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let core = s.get(&url);
    assert_eq!(core.status, 200);
    assert_eq!(core.header("content-type"), Some("application/json"));
    let etag = core.header("etag").unwrap().to_owned();
    let not_modified = s.http("GET", &url, &[&format!("If-None-Match: W/{etag}")], None);
    assert_eq!(not_modified.status, 304);
    assert_eq!(
        not_modified.header("cache-control"),
        Some("public, immutable")
    );
    assert!(not_modified.header("expires").is_some());
    let changed = s.http("GET", &url, &["If-None-Match: \"0\""], None);
    assert_eq!(changed.status, 200);
}
