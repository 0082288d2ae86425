//! Resources added and removed while serving: once a resource is added, discovery (legacy and
//! aggregated), OpenAPI and routing serve it and its objects can be written and read through
//! the generic registry; once removed, all of them forget it. (In production the CRD
//! controller adds them, with their definitions: `custom_resources.rs`.)

mod in_process;

use in_process::{request, request_with};
use keel_catalog::{CatalogChange, ResourceId, ResourceSpec};
use keel_http::Method;
use serde_json::Value;
use std::sync::Arc;

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn an_added_resource_is_discovered_routed_and_served_then_forgotten() {
    let st = in_process::state(Arc::new(keel_engine::MemStore::default()));
    let widgets = "/apis/live.example.com/v1/namespaces/default/widgets";
    let widget = r#"{"apiVersion":"live.example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3}}"#;
    // Not served yet.
    assert_eq!(request(&st, Method::Get, widgets, "").0, 404);
    assert_eq!(
        request(&st, Method::Get, "/apis/live.example.com", "").0,
        404
    );
    let (_, openapi) = request(&st, Method::Get, "/openapi/v3", "");
    assert!(!openapi.contains("apis/live.example.com/v1"), "{openapi}");

    st.routes
        .apply(&CatalogChange::add(vec![ResourceSpec::custom(
            "live.example.com",
            "v1",
            "Widget",
            "widgets",
            true,
        )]))
        .unwrap();

    // Discovery: the group list, the group, the group version and the aggregated document.
    let (code, groups) = request(&st, Method::Get, "/apis", "");
    assert_eq!(code, 200);
    assert!(groups.contains("\"live.example.com\""), "{groups}");
    let (code, group) = request(&st, Method::Get, "/apis/live.example.com", "");
    assert_eq!(code, 200, "{group}");
    let (code, list) = request(&st, Method::Get, "/apis/live.example.com/v1", "");
    assert_eq!(code, 200);
    let resources = json(&list)["resources"].clone();
    assert_eq!(resources[0]["name"], "widgets", "{list}");
    assert_eq!(resources[0]["kind"], "Widget");
    assert_eq!(resources[0]["namespaced"], true);
    let accept = [(
        "Accept",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    )];
    let (code, aggregated) = request_with(&st, Method::Get, "/apis", "", &accept);
    assert_eq!(code, 200);
    let groups_found: Vec<String> = json(&aggregated)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        groups_found.iter().any(|g| g == "live.example.com"),
        "{aggregated}"
    );
    // OpenAPI lists the new group version.
    let (code, openapi) = request(&st, Method::Get, "/openapi/v3", "");
    assert_eq!(code, 200);
    assert!(openapi.contains("apis/live.example.com/v1"), "{openapi}");

    // Routing: the generic registry stores and serves its objects.
    let (code, created) = request(&st, Method::Post, widgets, widget);
    assert_eq!(code, 201, "{created}");
    let created = json(&created);
    assert_eq!(created["spec"]["size"], 3);
    assert!(created["metadata"]["uid"].is_string());
    let (code, got) = request(&st, Method::Get, &format!("{widgets}/w1"), "");
    assert_eq!(code, 200);
    assert_eq!(
        json(&got)["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    let (code, listed) = request(&st, Method::Get, widgets, "");
    assert_eq!(code, 200);
    assert_eq!(json(&listed)["kind"], "WidgetList");
    assert_eq!(json(&listed)["items"][0]["metadata"]["name"], "w1");

    st.routes
        .apply(&CatalogChange::remove(vec![ResourceId::new(
            "live.example.com",
            "v1",
            "widgets",
        )]))
        .unwrap();
    assert_eq!(
        request(&st, Method::Get, &format!("{widgets}/w1"), "").0,
        404
    );
    assert_eq!(
        request(&st, Method::Get, "/apis/live.example.com/v1", "").0,
        404
    );
    let (_, groups) = request(&st, Method::Get, "/apis", "");
    assert!(!groups.contains("\"live.example.com\""), "{groups}");
    let (_, openapi) = request(&st, Method::Get, "/openapi/v3", "");
    assert!(!openapi.contains("apis/live.example.com/v1"), "{openapi}");
}
