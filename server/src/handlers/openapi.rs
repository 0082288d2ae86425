//! The OpenAPI documents: `/openapi/v2`, `/openapi/v3` (the discovery document) and
//! `/openapi/v3/<gv>`, made from the routes snapshot the request loads, so they follow
//! resources added or removed at run time.

use super::call::Query;
use super::respond;
use crate::repr::JSON;
use crate::state::State;
use keel_api::status::ApiError;
use keel_http::{Request, Response};

/// `GET /openapi/v2`.
pub fn v2(st: &State, req: &Request) -> Result<Response, ApiError> {
    let accept = req.headers.get("accept").unwrap_or("");
    if !accept.is_empty() && !accept.contains("json") && !accept.contains("*/*") {
        return Err(ApiError::not_acceptable(&[JSON]));
    }
    let routes = st.routes.load();
    Ok(respond::response(
        200,
        JSON,
        keel_schema::schemas().openapi_v2(routes.resource_descs()),
    ))
}

/// `GET /openapi/v3`.
pub fn v3_root(st: &State) -> Response {
    let routes = st.routes.load();
    let doc = keel_schema::schemas().openapi_v3_root_doc(routes.resource_descs());
    v3_response(doc, None, "")
}

/// `GET /openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`; `path` is the request path.
pub fn v3_group_version(st: &State, req: &Request, path: &str) -> Result<Response, ApiError> {
    let rest = &path["/openapi/v3/".len()..];
    let (group, version) = match rest.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return Err(ApiError::route_not_found()),
    };
    let routes = st.routes.load();
    let doc = keel_schema::schemas()
        .openapi_v3_group_version_doc(group, version, routes.resource_descs())
        .ok_or_else(ApiError::route_not_found)?;
    let hash = Query::from_request(req).nonempty("hash").map(String::from);
    Ok(v3_response(doc, hash.as_deref(), path))
}

/// An OpenAPI v3 document with upstream's caching headers: a `hash` query naming the current
/// document is immutable; a stale one is redirected to the current URL.
fn v3_response(doc: keel_schema::OpenApiDoc, hash: Option<&str>, path: &str) -> Response {
    if let Some(h) = hash {
        if h != doc.etag {
            let mut r = respond::response(301, JSON, Vec::new());
            r.headers
                .push(("Location".into(), format!("{path}?hash={}", doc.etag)));
            return r;
        }
    }
    let mut r = respond::response(200, JSON, doc.body.to_vec());
    r.headers.push(("ETag".into(), format!("\"{}\"", doc.etag)));
    r.headers.push(("Vary".into(), "Accept".into()));
    if hash.is_some() {
        r.headers
            .push(("Cache-Control".into(), "public, immutable".into()));
        let expires = chrono::Utc::now() + chrono::Duration::days(365);
        r.headers.push((
            "Expires".into(),
            expires.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
        ));
    } else {
        r.headers
            .push(("Cache-Control".into(), "no-cache, private".into()));
    }
    r
}
