//! The OpenAPI documents: `/openapi/v2`, `/openapi/v3` (the discovery document) and
//! `/openapi/v3/<gv>`, made from the routes snapshot the request loads, so they follow
//! resources added or removed at run time.

use super::call::Query;
use super::respond;
use crate::repr::JSON;
use crate::state::State;
use keel_api::status::ApiError;
use keel_http::{Body, Request, Response};
use std::sync::Arc;

/// `/openapi/v2` in protobuf: gnostic's `openapi.v2.Document`. Clients ask for it under the
/// deprecated name ([`V2_PROTOBUF_SUBTYPE_DEPRECATED`], client-go's `OpenAPISchema()`) or this
/// one; the answer is always labelled with this one, as upstream labels it.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const V2_PROTOBUF_SUBTYPE: &str = "com.github.proto-openapi.spec.v2.v1.0+protobuf";
const V2_PROTOBUF_SUBTYPE_DEPRECATED: &str = "com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// Smallest document sent gzip-compressed (upstream's gzip wrapper, gziphandler, leaves
/// shorter bodies alone: its DefaultMinSize). Both documents are far larger.
const GZIP_BODY_BYTES_MIN: usize = 1400;

/// The two representations of `/openapi/v2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum V2Media {
    Json,
    Protobuf,
}

/// `GET /openapi/v2`, as kube-openapi's handler serves it: JSON or protobuf by `Accept`
/// (406 with an empty body when neither fits), `ETag` of the JSON document on both (304 when
/// `If-None-Match` names it), gzip when the client accepts it, `Vary: Accept-Encoding` and
/// `Vary: Accept` always. Not done: `Last-Modified`/`If-Modified-Since` and byte ranges
/// (upstream's `http.ServeContent` also answers those).
pub fn v2(st: &State, req: &Request) -> Result<Response, ApiError> {
    let vary = vec![
        ("Vary".to_owned(), "Accept-Encoding".to_owned()),
        ("Vary".to_owned(), "Accept".to_owned()),
    ];
    let Some(media) = negotiate_v2(req.headers.get("accept").unwrap_or("")) else {
        return Ok(Response {
            status: 406,
            headers: vary,
            body: Body::Full(Vec::new()),
        });
    };
    let routes = st.routes.load();
    let schemas = keel_schema::schemas();
    let local = schemas.openapi_v2_doc(routes.resource_descs());
    // With the aggregated servers' documents merged in, when there are any.
    let merged = st.aggregator.openapi.v2(&local.body, &local.etag);
    let unavailable =
        |e: String| ApiError::service_unavailable(format!("OpenAPI v2 in protobuf: {e}"));
    let (doc, content_type) = match (media, merged) {
        (V2Media::Json, None) => (Served::Local(local), JSON),
        (V2Media::Json, Some(m)) => (Served::Merged(m), JSON),
        (V2Media::Protobuf, None) => (
            Served::Local(
                schemas
                    .openapi_v2_protobuf_doc(routes.resource_descs())
                    .map_err(unavailable)?,
            ),
            V2_PROTOBUF,
        ),
        (V2Media::Protobuf, Some(m)) => (
            Served::Merged(m.protobuf_v2().map_err(unavailable)?),
            V2_PROTOBUF,
        ),
    };
    let mut headers = vary;
    headers.push(("Cache-Control".into(), "no-cache, private".into()));
    headers.push(("ETag".into(), format!("\"{}\"", doc.etag())));
    if if_none_match(req.headers.get("if-none-match"), doc.etag()) {
        return Ok(not_modified(headers));
    }
    headers.push(("Content-Type".into(), content_type.into()));
    let gzip = doc.body().len() >= GZIP_BODY_BYTES_MIN
        && accepts_gzip(req.headers.get("accept-encoding").unwrap_or(""));
    let body = if gzip {
        headers.push(("Content-Encoding".into(), "gzip".into()));
        doc.gzipped().to_vec()
    } else {
        doc.body().to_vec()
    };
    Ok(Response {
        status: 200,
        headers,
        body: Body::Full(body),
    })
}

/// A document served: keel's own, or one with aggregated servers' documents merged in.
enum Served {
    Local(keel_schema::OpenApiDoc),
    Merged(Arc<crate::aggregator::openapi::Doc>),
}

impl Served {
    fn body(&self) -> &[u8] {
        match self {
            Served::Local(d) => &d.body,
            Served::Merged(d) => &d.body,
        }
    }

    fn etag(&self) -> &str {
        match self {
            Served::Local(d) => &d.etag,
            Served::Merged(d) => &d.etag,
        }
    }

    fn gzipped(&self) -> Arc<[u8]> {
        match self {
            Served::Local(d) => d.gzipped(),
            Served::Merged(d) => d.gzipped(),
        }
    }
}

/// 304 with `headers` (Go's ServeContent keeps the validators and caching headers already set
/// and drops the content headers). The body is an empty stream, not an empty full body: the
/// HTTP layer frames a full body with `Content-Length`, and a 304 must not carry one unless it
/// is the 200's length (RFC 9110 8.6); kubectl's HTTP cache copies a 304's headers onto its
/// stored response. Upstream sends none.
fn not_modified(headers: Vec<(String, String)>) -> Response {
    Response {
        status: 304,
        headers,
        body: Body::Stream(Box::pin(futures_util::stream::empty())),
    }
}

/// kube-openapi's choice for `/openapi/v2`: the `Accept` ranges ordered as its parser
/// (goautoneg) orders them, then the first range that fits JSON, the deprecated protobuf name
/// or the protobuf name, tried in that order. An empty `Accept` is `*/*`. As upstream: type
/// names are compared case-sensitively and a range with `q=0` still counts.
fn negotiate_v2(accept: &str) -> Option<V2Media> {
    let accept = if accept.is_empty() { "*/*" } else { accept };
    let offers = [
        ("json", V2Media::Json),
        (V2_PROTOBUF_SUBTYPE_DEPRECATED, V2Media::Protobuf),
        (V2_PROTOBUF_SUBTYPE, V2Media::Protobuf),
    ];
    media_ranges(accept).into_iter().find_map(|r| {
        offers
            .iter()
            .find(|(subtype, _)| {
                (r.main == "application" || r.main == "*") && (r.sub == *subtype || r.sub == "*")
            })
            .map(|(_, media)| *media)
    })
}

/// One range of an `Accept` header.
#[derive(Debug)]
struct MediaRange<'a> {
    main: &'a str,
    sub: &'a str,
    q: f64,
}

/// goautoneg's `ParseAccept`: ranges split on `,`, a bare `*` read as `*/*`, anything else
/// without exactly one `/` dropped, `q` defaulting to 1 (0 when unparsable), then sorted by an
/// insertion sort (what Go's sort does for short lists) on: higher `q` first, else a concrete
/// type before `*`, else a concrete subtype before `*`.
fn media_ranges(accept: &str) -> Vec<MediaRange<'_>> {
    let mut ranges: Vec<MediaRange> = accept
        .split(',')
        .filter_map(|part| {
            let mut params = part.trim_matches(' ').split(';');
            let range = params.next().unwrap_or("");
            let mut names = range.split('/');
            let main = names.next().unwrap_or("").trim_matches(' ');
            let sub = match (names.next(), names.next()) {
                (None, None) if main == "*" => "*",
                (Some(sub), None) => sub.trim_matches(' '),
                _ => return None,
            };
            let mut q = 1.0;
            for p in params {
                if let Some((name, value)) = p.split_once('=') {
                    if name.trim_matches(' ') == "q" {
                        q = value.parse::<f32>().map_or(0.0, f64::from);
                    }
                }
            }
            Some(MediaRange { main, sub, q })
        })
        .collect();
    let before = |a: &MediaRange, b: &MediaRange| {
        a.q > b.q || (a.main != "*" && b.main == "*") || (a.sub != "*" && b.sub == "*")
    };
    for i in 1..ranges.len() {
        let mut j = i;
        while j > 0 && before(&ranges[j], &ranges[j - 1]) {
            ranges.swap(j, j - 1);
            j -= 1;
        }
    }
    ranges
}

/// Whether `If-None-Match` (its first field only, as Go reads it) names `etag` (the unquoted
/// ETag) or is `*`: Go's `http.ServeContent` weak comparison, which ignores `W/`.
fn if_none_match(header: Option<&str>, etag: &str) -> bool {
    let mut rest = header.unwrap_or("");
    loop {
        rest = rest.trim_matches([' ', '\t']);
        if rest.is_empty() {
            return false;
        }
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
            continue;
        }
        if rest.starts_with('*') {
            return true;
        }
        let tagged = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(quoted) = tagged.strip_prefix('"') else {
            return false;
        };
        let Some(end) = quoted.find(|c: char| c == '"' || !etag_char(c)) else {
            return false;
        };
        if !quoted[end..].starts_with('"') {
            return false;
        }
        if &quoted[..end] == etag {
            return true;
        }
        rest = &quoted[end + 1..];
    }
}

/// The characters an ETag's opaque part may hold (RFC 7232 `etagc`).
fn etag_char(c: char) -> bool {
    c == '!' || ('#'..='~').contains(&c) || !c.is_ascii()
}

/// gziphandler's test: the coding `gzip` (case-insensitive) with a `q` above 0. Its quirks are
/// kept: the `q` that counts is that of the coding's last parameter (1 when that is not `q`),
/// and a coding with an unparsable `q` is ignored.
fn accepts_gzip(accept_encoding: &str) -> bool {
    let mut q_gzip = 0.0;
    for coding in accept_encoding.split(',') {
        let (mut name, mut q, mut unparsable) = (String::new(), 1.0, false);
        for (i, part) in coding.split(';').map(str::trim).enumerate() {
            q = 1.0;
            if i == 0 {
                name = part.to_ascii_lowercase();
            } else if let Some(v) = part.strip_prefix("q=") {
                match v.parse::<f64>() {
                    Ok(v) => q = v.clamp(0.0, 1.0),
                    Err(_) => unparsable = true,
                }
            }
        }
        if name == "gzip" && !unparsable {
            q_gzip = q;
        }
    }
    q_gzip > 0.0
}

/// `GET /openapi/v3`.
/// `GET /openapi/v3`: keel's index, with the aggregated servers' group versions when any
/// was fetched.
pub fn v3_root(st: &State, req: &Request) -> Response {
    let routes = st.routes.load();
    let doc = keel_schema::schemas().openapi_v3_root_doc(routes.resource_descs());
    match st.aggregator.openapi.v3_root(&doc.body, &doc.etag) {
        Some(m) => v3_response(req, &m.body, &m.etag, None, ""),
        None => v3_response(req, &doc.body, &doc.etag, None, ""),
    }
}

/// `GET /openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`; `path` is the request path.
pub fn v3_group_version(st: &State, req: &Request, path: &str) -> Result<Response, ApiError> {
    let rest = &path["/openapi/v3/".len()..];
    let (group, version) = match rest.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return Err(ApiError::route_not_found()),
    };
    let hash = Query::from_request(req).nonempty("hash").map(String::from);
    // An aggregated server's, as last fetched (its hash is the remote's own).
    if st.aggregator.any() {
        if let Some(doc) = st.aggregator.openapi.v3(group, version) {
            return Ok(v3_response(
                req,
                &doc.body,
                &doc.hash,
                hash.as_deref(),
                path,
            ));
        }
    }
    let routes = st.routes.load();
    let doc = keel_schema::schemas()
        .openapi_v3_group_version_doc(group, version, routes.resource_descs())
        .ok_or_else(ApiError::route_not_found)?;
    Ok(v3_response(
        req,
        &doc.body,
        &doc.etag,
        hash.as_deref(),
        path,
    ))
}

/// An OpenAPI v3 document with upstream's caching headers (kube-openapi's handler3): a `hash`
/// query naming the current document is immutable; a stale one is redirected to the current
/// URL; an `If-None-Match` naming the ETag gets a 304.
fn v3_response(req: &Request, body: &[u8], etag: &str, hash: Option<&str>, path: &str) -> Response {
    if let Some(h) = hash {
        if h != etag {
            let mut r = respond::response(301, JSON, Vec::new());
            r.headers
                .push(("Location".into(), format!("{path}?hash={etag}")));
            return r;
        }
    }
    let mut headers = vec![
        ("ETag".to_owned(), format!("\"{etag}\"")),
        ("Vary".to_owned(), "Accept".to_owned()),
    ];
    if hash.is_some() {
        headers.push(("Cache-Control".into(), "public, immutable".into()));
        let expires = chrono::Utc::now() + chrono::Duration::days(365);
        headers.push((
            "Expires".into(),
            expires.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
        ));
    } else {
        headers.push(("Cache-Control".into(), "no-cache, private".into()));
    }
    if if_none_match(req.headers.get("if-none-match"), etag) {
        return not_modified(headers);
    }
    headers.insert(0, ("Content-Type".into(), JSON.into()));
    Response {
        status: 200,
        headers,
        body: Body::Full(body.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_negotiation_follows_kube_openapi() {
        use V2Media::{Json, Protobuf};
        let cases = [
            // client-go's OpenAPISchema() sends only the deprecated protobuf name.
            ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", Some(Protobuf)),
            ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", Some(Protobuf)),
            ("application/json", Some(Json)),
            ("application/json;charset=utf-8", Some(Json)),
            ("", Some(Json)),
            ("*/*", Some(Json)),
            ("*", Some(Json)),
            ("application/*", Some(Json)),
            ("text/plain", None),
            ("application/yaml", None),
            ("Application/JSON", None), // compared case-sensitively, as upstream
            ("application/vnd.kubernetes.protobuf", None),
            // Order by q, then the first range that fits.
            (
                "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                Some(Protobuf),
            ),
            (
                "application/com.github.proto-openapi.spec.v2.v1.0+protobuf;q=0.9, application/json",
                Some(Json),
            ),
            ("text/html, */*;q=0.8", Some(Json)),
            // A concrete type sorts before a wildcard whatever the q (goautoneg's order).
            ("*/*, application/com.github.proto-openapi.spec.v2.v1.0+protobuf;q=0.1", Some(Protobuf)),
            ("application/json;q=0", Some(Json)), // q=0 still counts upstream
            ("application/json;q=abc", Some(Json)),
            ("application/json/x, text/plain", None),
        ];
        for (accept, want) in cases {
            assert_eq!(negotiate_v2(accept), want, "Accept: {accept:?}");
        }
    }

    #[test]
    fn if_none_match_compares_weakly() {
        let etag = "ABC123";
        let cases = [
            (None, false),
            (Some(""), false),
            (Some("\"ABC123\""), true),
            (Some("W/\"ABC123\""), true),
            (Some("\"other\", \"ABC123\""), true),
            (Some(" ,\"ABC123\""), true),
            (Some("*"), true),
            (Some("\"abc123\""), false),
            (Some("ABC123"), false),
            (Some("\"ABC123"), false),
            (Some("\"other\""), false),
            (Some("\"a b\", \"ABC123\""), false), // unparsable: Go stops reading
        ];
        for (header, want) in cases {
            assert_eq!(
                if_none_match(header, etag),
                want,
                "If-None-Match: {header:?}"
            );
        }
    }

    #[test]
    fn gzip_acceptance_follows_gziphandler() {
        let cases = [
            ("gzip", true),
            ("gzip, deflate, br", true),
            ("GZIP", true),
            ("deflate", false),
            ("", false),
            ("*", false),
            ("gzip;q=0", false),
            ("gzip;q=0.5", true),
            ("gzip;q=0, gzip", true),
            ("gzip;q=0;level=1", true), // the last parameter's q counts: none, so 1
            ("gzip;q=x", false),
            ("gzip, gzip;q=x", true), // the unparsable one is ignored
        ];
        for (header, want) in cases {
            assert_eq!(accepts_gzip(header), want, "Accept-Encoding: {header:?}");
        }
    }
}
