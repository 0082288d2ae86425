//! The non-resource endpoints: discovery (`/api`, `/apis`, per group and version, and the
//! aggregated documents), OpenAPI (`/openapi/v2`, `/openapi/v3`, served by `openapi`),
//! `/version` and `/metrics`. Discovery and OpenAPI come from the routes snapshot the request
//! loads, so they follow resources added or removed at run time.

use super::{authorize, health, openapi, respond};
use crate::auth::{Attributes, User};
use crate::repr::JSON;
use crate::state::State;
use keel_api::status::ApiError;
use keel_http::{Request, Response};

/// Authorizes a `get` of the non-resource path `path` for `user`.
pub(super) fn authorize_path(st: &State, user: &User, path: &str) -> Result<(), ApiError> {
    authorize(
        st,
        &Attributes {
            user,
            verb: "get",
            group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path: Some(path),
            field_selector: None,
        },
    )
}

pub async fn discovery(
    st: &State,
    req: &Request,
    user: &User,
    core: bool,
    group: Option<&str>,
    version: Option<&str>,
) -> Result<Response, ApiError> {
    authorize_path(st, user, &req.path)?;
    if let (Some(g), Some(v)) = (group, version) {
        if let Some(remote) = st.aggregator.remote(g, v) {
            return Ok(super::proxy::proxy(st, req, user, &remote).await);
        }
    }
    let routes = st.routes.load();
    let catalog = &routes.catalog;
    let accept = req.headers.get("accept").unwrap_or("");
    // Aggregated APIs join the documents of `/apis` (rarely any: the built documents are
    // served as they are otherwise).
    let remotes = (!core && st.aggregator.any()).then(|| st.aggregator.snapshot());
    match (group, version) {
        (None, None) => {
            if let Some(v) = aggregated_version(accept) {
                let mut body = catalog.aggregated(core, v);
                if let Some(r) = &remotes {
                    let local = catalog.local_apiservices();
                    body = crate::aggregator::discovery::add_to_aggregated(&body, &local, r);
                }
                let ct = format!(
                    "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
                );
                return Ok(respond::json(200, &ct, body));
            }
            let body = if core {
                catalog.api_versions()
            } else {
                let list = catalog.api_group_list();
                match &remotes {
                    Some(r) => {
                        let local = catalog.local_apiservices();
                        crate::aggregator::discovery::add_to_group_list(&list, &local, r)
                    }
                    None => list,
                }
            };
            Ok(respond::json(200, JSON, body))
        }
        (Some(g), None) => remotes
            .as_ref()
            .and_then(|r| {
                crate::aggregator::discovery::api_group(&catalog.local_apiservices(), r, g)
            })
            .or_else(|| catalog.api_group(g))
            .map(|b| respond::json(200, JSON, b))
            .ok_or_else(ApiError::route_not_found),
        (g, Some(v)) => catalog
            .resource_list(g.unwrap_or(""), v)
            .map(|b| respond::json(200, JSON, b))
            .ok_or_else(ApiError::route_not_found),
    }
}

pub fn non_resource(st: &State, req: &Request, user: &User) -> Result<Response, ApiError> {
    let path = req.path.trim_end_matches('/');
    authorize_path(st, user, path)?;
    if req.method.as_str() != "GET" && req.method.as_str() != "HEAD" {
        return Err(ApiError::method_not_allowed());
    }
    match path {
        "/version" => Ok(respond::response(200, JSON, version_json(&st.emulation))),
        "/metrics" => Ok(respond::response(
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics_text(st).into_bytes(),
        )),
        "/openapi/v2" => openapi::v2(st, req),
        "/openapi/v3" => Ok(openapi::v3_root(st, req)),
        p if p.starts_with("/openapi/v3/") => openapi::v3_group_version(st, req, p),
        p if health::is_health_path(p) => Ok(health::serve(st, req)),
        "/.well-known/openid-configuration" | "/openid/v1/jwks" => issuer_discovery(st, path),
        _ => Err(ApiError::route_not_found()),
    }
}

/// The service account issuer's discovery documents (404 when the issuer is not an https
/// URL, as upstream then serves none).
fn issuer_discovery(st: &State, path: &str) -> Result<Response, ApiError> {
    let issuer = st
        .service_accounts
        .as_ref()
        .ok_or_else(ApiError::route_not_found)?;
    let (body, content_type) = match path {
        "/openid/v1/jwks" => (issuer.jwks(), "application/jwk-set+json"),
        _ => (issuer.openid_configuration(), JSON),
    };
    let body = body.ok_or_else(ApiError::route_not_found)?;
    let mut r = respond::response(200, content_type, body.to_vec());
    r.headers.push((
        "Cache-Control".into(),
        format!(
            "public, max-age={}",
            crate::serviceaccount::DISCOVERY_MAX_AGE_SECS
        ),
    ));
    Ok(r)
}

/// `/metrics`: request series, stored objects per resource, open watches, the store's
/// counters.
fn metrics_text(st: &State) -> String {
    let mut text = st.metrics.render(&object_counts(st));
    if let Some(stats) = st.registry.storage().stats() {
        crate::metrics::render_store(&mut text, &stats);
    }
    if st.flowcontrol.enabled {
        crate::metrics::render_flowcontrol(&mut text, &st.flowcontrol.snapshot());
    }
    crate::metrics::without_disabled(text, &st.disabled_metrics)
}

/// Stored objects per resource, for `/metrics` (each storage location counted once).
fn object_counts(st: &State) -> Vec<(String, String, u64)> {
    let routes = st.routes.load();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for r in routes.resources() {
        if !seen.insert(r.loc.prefix.clone()) {
            continue;
        }
        if let Ok(n) = st.registry.count(r) {
            if n > 0 {
                out.push((r.info.group.to_string(), r.info.plural.to_string(), n));
            }
        }
    }
    out
}

fn aggregated_version(accept: &str) -> Option<&'static str> {
    for range in accept.split(',') {
        let r = range.replace(' ', "");
        if !r.contains("as=APIGroupDiscoveryList") || !r.contains("g=apidiscovery.k8s.io") {
            if r.starts_with("application/json") && !r.contains("as=") {
                return None;
            }
            continue;
        }
        if r.contains("v=v2beta1") {
            return Some("v2beta1");
        }
        if r.contains("v=v2") {
            return Some("v2");
        }
    }
    None
}

/// Go's name for an architecture (`GOARCH`), as `/version` reports it.
fn go_arch(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

/// `/version`: the binary's release (v1.36), the emulated one and the oldest compatible one,
/// in upstream's field order.
pub fn version_json(emulation: &keel_catalog::Emulation) -> Vec<u8> {
    serde_json::to_vec_pretty(&serde_json::json!({
        "major": "1",
        "minor": keel_catalog::BINARY_VERSION_MINOR.to_string(),
        "emulationMajor": "1",
        "emulationMinor": emulation.emulated_minor.to_string(),
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": emulation.min_compatibility_minor.to_string(),
        "gitVersion": format!("v1.{}.0-keel.{}", keel_catalog::BINARY_VERSION_MINOR, env!("CARGO_PKG_VERSION")),
        "gitCommit": option_env!("KEEL_GIT_COMMIT").unwrap_or("unknown"),
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (rust)",
        "compiler": "rustc",
        "platform": format!("linux/{}", go_arch(std::env::consts::ARCH)),
    }))
    .expect("JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_reports_release_emulation_and_go_arch() {
        let e = keel_catalog::Emulation::parse("1.34", "").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&version_json(&e)).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys[..7],
            [
                "major",
                "minor",
                "emulationMajor",
                "emulationMinor",
                "minCompatibilityMajor",
                "minCompatibilityMinor",
                "gitVersion"
            ]
        );
        assert_eq!(
            (
                &v["minor"],
                &v["emulationMinor"],
                &v["minCompatibilityMinor"]
            ),
            (&"36".into(), &"34".into(), &"33".into())
        );
        assert!(v["gitVersion"]
            .as_str()
            .unwrap()
            .starts_with("v1.36.0-keel."));
        assert_eq!(go_arch("x86_64"), "amd64");
        assert_eq!(go_arch("aarch64"), "arm64");
    }

    #[test]
    fn aggregated_discovery_negotiation() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_version(kubectl), Some("v2"));
        assert_eq!(
            aggregated_version(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            ),
            Some("v2beta1")
        );
        assert_eq!(aggregated_version("application/json"), None);
        assert_eq!(aggregated_version(""), None);
    }
}
