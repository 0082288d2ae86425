use super::*;
use keel_revision::Revision;
use serde_json::json;

fn wire(err: &ApiError) -> String {
    String::from_utf8(err.to_json()).expect("utf8")
}

#[test]
fn not_found_core_and_named_group() {
    let core = ApiError::not_found("", "pods", "x");
    assert_eq!(
        wire(&core),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#
    );
    let apps = ApiError::not_found("apps", "deployments", "web");
    assert_eq!(apps.message, "deployments.apps \"web\" not found");
    assert_eq!(
        apps.to_value()["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments"})
    );
}

#[test]
fn constructors_codes_reasons_messages() {
    let rows: Vec<(ApiError, u16, &str, &str)> = vec![
        (ApiError::already_exists("", "configmaps", "c"), 409, "AlreadyExists", "configmaps \"c\" already exists"),
        (ApiError::conflict("apps", "deployments", "d", "boom"), 409, "Conflict", "Operation cannot be fulfilled on deployments.apps \"d\": boom"),
        (ApiError::stale_update("", "pods", "p"), 409, "Conflict", "Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again"),
        (ApiError::bad_request("nope"), 400, "BadRequest", "nope"),
        (ApiError::gone("old"), 410, "Gone", "old"),
        (ApiError::expired("old"), 410, "Expired", "old"),
        (ApiError::too_old_resource_version(Revision(5), Revision(10)), 410, "Expired", "too old resource version: 5 (10)"),
        (ApiError::list_resource_version_expired(), 410, "Expired", "The resourceVersion for the provided list is too old."),
        (ApiError::continue_token_expired(), 410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."),
        (ApiError::method_not_allowed(), 405, "MethodNotAllowed", "the server does not allow this method on the requested resource"),
        (ApiError::route_not_found(), 404, "NotFound", "the server could not find the requested resource"),
        (ApiError::service_unavailable("no kubelet"), 503, "ServiceUnavailable", "no kubelet"),
        (ApiError::too_many_requests_with("too many watches open (limit 2)", 1), 429, "TooManyRequests", "too many watches open (limit 2)"),
        (ApiError::method_not_supported("", "pods/log", "create"), 405, "MethodNotAllowed", "create is not supported on resources of kind \"pods/log\""),
        (ApiError::not_acceptable(&["application/json", "application/yaml"]), 406, "NotAcceptable", "only the following media types are accepted: application/json, application/yaml"),
        (ApiError::unsupported_media_type(&["application/json-patch+json", "application/merge-patch+json"]), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json"),
        (ApiError::too_many_requests(3), 429, "TooManyRequests", "Too many requests, please try again later."),
        (ApiError::request_entity_too_large("limit is 3145728"), 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"),
        (ApiError::unauthorized(), 401, "Unauthorized", "Unauthorized"),
        (ApiError::internal("disk on fire"), 500, "InternalError", "Internal error occurred: disk on fire"),
        (ApiError::timeout("slow"), 504, "Timeout", "Timeout: slow"),
        (ApiError::unknown(500, "raw"), 500, "", "raw"),
    ];
    for (err, code, reason, message) in rows {
        assert_eq!(
            (err.code, err.reason, err.message.as_str()),
            (code, reason, message)
        );
    }
}

#[test]
fn forbidden_message_shapes() {
    let ns = ApiError::forbidden("bob", "get", "", "pods", Some("default"), Some("x"));
    assert_eq!(
        ns.message,
        "pods \"x\" is forbidden: User \"bob\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let cluster = ApiError::forbidden("bob", "list", "", "nodes", None, None);
    assert_eq!(
        cluster.message,
        "nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
    );
    let apps = ApiError::forbidden(
        "system:anonymous",
        "patch",
        "apps",
        "deployments",
        Some("ns"),
        None,
    );
    assert_eq!(
        apps.message,
        "deployments.apps is forbidden: User \"system:anonymous\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"ns\""
    );
    assert_eq!(apps.code, 403);
    assert_eq!(
        apps.to_value()["details"],
        json!({"group": "apps", "kind": "deployments"})
    );
}

#[test]
fn invalid_aggregates_like_upstream() {
    let one = ApiError::invalid(
        "",
        "Pod",
        "p",
        vec![field::required(
            "metadata.name",
            "name or generateName is required",
        )],
    );
    assert_eq!(
        one.message,
        "Pod \"p\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    let two = ApiError::invalid(
        "apps",
        "Deployment",
        "d",
        vec![
            field::invalid_str("metadata.name", "A", "bad"),
            field::invalid_str("metadata.name", "A", "bad"),
            field::forbidden("metadata.namespace", "not allowed on this type"),
        ],
    );
    assert_eq!(
        two.message,
        "Deployment.apps \"d\" is invalid: [metadata.name: Invalid value: \"A\": bad, metadata.namespace: Forbidden: not allowed on this type]"
    );
    assert_eq!(
        two.causes.len(),
        3,
        "causes are not deduplicated, only the message is"
    );
    let v = two.to_value();
    assert_eq!(v["code"], json!(422));
    assert_eq!(v["reason"], json!("Invalid"));
    assert_eq!(v["details"]["kind"], json!("Deployment"));
    assert_eq!(
        v["details"]["causes"][0],
        json!({"reason": "FieldValueInvalid", "message": "Invalid value: \"A\": bad", "field": "metadata.name"})
    );
    let none = ApiError::invalid("", "Pod", "p", vec![]);
    assert_eq!(none.message, "Pod \"p\" is invalid");
}

#[test]
fn too_large_resource_version_shape() {
    let err = ApiError::too_large_resource_version(Revision(100), Revision(42));
    assert_eq!(
        wire(&err),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 100, current: 42","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#
    );
}

#[test]
fn details_presence_follows_upstream() {
    assert!(ApiError::bad_request("x")
        .to_value()
        .get("details")
        .is_none());
    assert_eq!(ApiError::timeout("x").to_value()["details"], json!({}));
    assert_eq!(
        ApiError::too_many_requests(7).to_value()["details"],
        json!({"retryAfterSeconds": 7})
    );
    assert_eq!(
        ApiError::unprocessable_generic().to_value()["details"],
        json!({})
    );
    assert!(ApiError::unknown(500, "x")
        .to_value()
        .get("reason")
        .is_none());
    let internal = ApiError::internal("boom").to_value();
    assert_eq!(
        internal["details"],
        json!({"causes": [{"message": "boom"}]})
    );
}

#[test]
fn to_json_and_to_value_agree() {
    let errs = [
        ApiError::not_found("apps", "deployments", "d"),
        ApiError::invalid("", "Pod", "p", vec![field::required("spec", "")]),
        ApiError::too_large_resource_version(Revision(3), Revision(2)),
        ApiError::internal("x"),
        ApiError::unknown(500, "y"),
    ];
    for err in errs {
        let parsed: Value = serde_json::from_slice(&err.to_json()).expect("valid json");
        assert_eq!(parsed, err.to_value());
    }
}

#[test]
fn success_status_shape() {
    let v = success_status("", "configmaps", "c", Some("u-1"));
    assert_eq!(
        v,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "c", "kind": "configmaps", "uid": "u-1"}})
    );
}

/// The router's answers carry an empty `details` object, as upstream's generic server
/// response does; the 503 and the custom 429 carry only what upstream sets.
#[test]
fn router_and_misc_wire_shapes() {
    assert_eq!(
        wire(&ApiError::method_not_allowed()),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}"#
    );
    assert_eq!(
        wire(&ApiError::route_not_found()),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#
    );
    assert!(ApiError::service_unavailable("x")
        .to_value()
        .get("details")
        .is_none());
    assert_eq!(
        ApiError::too_many_requests_with("busy", 3).to_value()["details"],
        json!({"retryAfterSeconds": 3})
    );
}

#[test]
fn namespace_terminating_shape() {
    let err = ApiError::namespace_terminating("", "configmaps", "c", "team-a");
    assert_eq!(
        wire(&err),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"c\" is forbidden: unable to create new content in namespace team-a because it is being terminated","reason":"Forbidden","details":{"name":"c","kind":"configmaps","causes":[{"reason":"NamespaceTerminating","message":"namespace team-a is being terminated","field":"metadata.namespace"}]},"code":403}"#
    );
    let apps = ApiError::namespace_terminating("apps", "deployments", "", "ns");
    assert_eq!(
        apps.message,
        "deployments.apps is forbidden: unable to create new content in namespace ns because it is being terminated"
    );
}

#[test]
fn resource_version_required_shape() {
    let err = ApiError::resource_version_required(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "w.example.com",
    );
    assert_eq!(
        err.message,
        "customresourcedefinitions.apiextensions.k8s.io \"w.example.com\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    );
    assert_eq!(
        err.to_value()["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": "Invalid value: 0x0: must be specified for an update", "field": "metadata.resourceVersion"}])
    );
}
