//! resourceVersion semantics of get, list and watch as pure decisions, plus continue tokens.
//!
//! The tables of the spec ("Resource version semantics") map to [`plan_get`], [`plan_list`] and
//! [`plan_watch`]. Errors follow upstream: `ListOptions` validation failures are one 422
//! `ListOptions.meta.k8s.io "" is invalid: ...`; continue-token problems are 400; so is a
//! non-numeric resourceVersion, on every verb (see [`parse_resource_version`]).

use crate::status::{field, ApiError, StatusCause};
use base64::Engine as _;
pub use keel_revision::Revision;
use serde::{Deserialize, Serialize};

/// Where a read is served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAt {
    /// The latest state, read consistently (quorum read).
    MostRecent,
    /// Any available state; the newest is preferred, no consistency guarantee.
    Any,
    /// A state at least as new as the given version.
    NotOlderThan(Revision),
    /// Exactly the given version; 410 Expired if it was compacted away.
    Exact(Revision),
}

/// The list query parameters that decide how a list is served.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListRequest<'a> {
    /// `resourceVersion`.
    pub resource_version: Option<&'a str>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<&'a str>,
    /// `limit`; zero or negative means no limit.
    pub limit: Option<i64>,
    /// `continue`.
    pub continue_token: Option<&'a str>,
    /// `sendInitialEvents`: any value counts as given (a list refuses it).
    pub send_initial_events: Option<&'a str>,
}

/// How to serve a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPlan {
    /// Which state to read.
    pub read: ReadAt,
    /// Resume strictly after this key (from the continue token).
    pub start_after: Option<String>,
    /// Most items to return in this chunk; `None` for all.
    pub limit: Option<usize>,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Synthetic ADDED events for the most recent state (read consistently), then changes.
    StateAtMostRecent,
    /// Synthetic ADDED events for any recent state, then changes.
    StateAtAny,
    /// Only changes after the given version (no synthetic events).
    After(Revision),
    /// Synthetic ADDED events for a state not older than the given version (waiting for it
    /// if it is newer than the store's), then changes (`sendInitialEvents=true`).
    StateNotOlderThan(Revision),
    /// Only changes after the store's current version (`sendInitialEvents=false` with
    /// `resourceVersion` unset or `0`: start now, without the state).
    Now,
}

/// The annotation of the BOOKMARK that ends a streaming list's initial events.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";
/// Value of `resourceVersionMatch` that asks for exactly the given version.
pub const MATCH_EXACT: &str = "Exact";
/// Value of `resourceVersionMatch` that asks for at least the given version.
pub const MATCH_NOT_OLDER_THAN: &str = "NotOlderThan";
/// API version string carried inside continue tokens.
const CONTINUE_TOKEN_VERSION: &str = "meta.k8s.io/v1";
/// Longest continue token accepted (a token carries one key and a number).
pub const CONTINUE_TOKEN_LEN_MAX: usize = 4096;

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

/// Go's `strconv.ParseUint(s, 10, 64)` error text.
fn parse_uint_error(s: &str) -> Option<String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Some(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            crate::gofmt::quote(s)
        ));
    }
    s.parse::<u64>().err().map(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            crate::gofmt::quote(s)
        )
    })
}

/// The field error upstream's versioner produces for a non-numeric resourceVersion:
/// `resourceVersion: Invalid value: "x": strconv.ParseUint: parsing "x": invalid syntax`.
fn invalid_rv_text(s: &str, why: &str) -> String {
    field::error_text(&field::invalid_str("resourceVersion", s, why))
}

/// Parses a resourceVersion (`""` and `"0"` are 0). A malformed one is a 400 `invalid resource
/// version: ...` on every verb: what upstream answers where the request reaches storage (paged
/// and `Exact` lists, and since 1.36 every list); its watch and single-object GET still answer
/// 500 there, a bug by its own tracker (kubernetes issues 101350 and 139485), so keel answers
/// as the fix does (the spec README's rule for such 500s).
pub fn parse_resource_version(s: &str) -> Result<Revision, ApiError> {
    if s.is_empty() || s == "0" {
        return Ok(Revision::ZERO);
    }
    match parse_uint_error(s) {
        None => Ok(s.parse().unwrap_or_default()),
        Some(why) => Err(ApiError::bad_request(format!(
            "invalid resource version: {}",
            invalid_rv_text(s, &why)
        ))),
    }
}

/// Semantics of `resourceVersion` on get: unset → most recent, `0` → any, else not older than.
pub fn plan_get(resource_version: Option<&str>) -> Result<ReadAt, ApiError> {
    match nonempty(resource_version) {
        None => Ok(ReadAt::MostRecent),
        Some("0") => Ok(ReadAt::Any),
        Some(rv) => parse_resource_version(rv).map(ReadAt::NotOlderThan),
    }
}

/// Upstream's `ValidateListOptions` for a list (not a watch).
fn validate_list(req: &ListRequest) -> Vec<StatusCause> {
    let mut errs = validate_list_match(req);
    if req.send_initial_events.is_some() {
        errs.push(field::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    errs
}

/// The `resourceVersionMatch` rules of a list.
fn validate_list_match(req: &ListRequest) -> Vec<StatusCause> {
    let mut errs = Vec::new();
    let Some(matching) = nonempty(req.resource_version_match) else {
        return errs;
    };
    let rv = nonempty(req.resource_version);
    let path = "resourceVersionMatch";
    if rv.is_none() {
        errs.push(field::forbidden(
            path,
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if nonempty(req.continue_token).is_some() {
        errs.push(field::forbidden(
            path,
            "resourceVersionMatch is forbidden when continue is provided",
        ));
    }
    if matching != MATCH_EXACT && matching != MATCH_NOT_OLDER_THAN {
        let value = serde_json::Value::String(matching.to_string());
        errs.push(field::not_supported(
            path,
            &value,
            &[MATCH_EXACT, MATCH_NOT_OLDER_THAN, ""],
        ));
    }
    if matching == MATCH_EXACT && rv == Some("0") {
        errs.push(field::forbidden(
            path,
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    errs
}

/// Semantics of `resourceVersion`, `resourceVersionMatch`, `limit` and `continue` on list.
pub fn plan_list(req: &ListRequest) -> Result<ListPlan, ApiError> {
    let errs = validate_list(req);
    if !errs.is_empty() {
        return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", errs));
    }
    let limit = req
        .limit
        .filter(|n| *n > 0)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let rv = nonempty(req.resource_version);
    if let Some(token) = nonempty(req.continue_token) {
        let (token_rv, start_after) = decode_continue(token)?;
        if rv.is_some_and(|rv| rv != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        return Ok(ListPlan {
            read: ReadAt::Exact(token_rv),
            start_after: Some(start_after),
            limit,
        });
    }
    let read = list_read(rv, nonempty(req.resource_version_match), limit.is_some())?;
    Ok(ListPlan {
        read,
        start_after: None,
        limit,
    })
}

/// The read of a list without a continue token (options already validated).
fn list_read(rv: Option<&str>, matching: Option<&str>, paged: bool) -> Result<ReadAt, ApiError> {
    let rv = match rv {
        None => return Ok(ReadAt::MostRecent),
        Some("0") => return Ok(ReadAt::Any),
        Some(rv) => rv,
    };
    let n = parse_resource_version(rv)?;
    Ok(match matching {
        Some(MATCH_EXACT) => ReadAt::Exact(n),
        Some(_) => ReadAt::NotOlderThan(n),
        None if paged => ReadAt::Exact(n),
        None => ReadAt::NotOlderThan(n),
    })
}

/// Semantics of `resourceVersion` and `sendInitialEvents` on watch (options already
/// validated by [`validate_watch_match`]). Without `sendInitialEvents`: unset → state at most
/// recent, `0` → state at any, else changes after that version. With `true` (a streaming
/// list): the state, at most recent, any, or not older than the version. With `false`: no
/// state; changes from now (unset or `0`) or after the version.
pub fn plan_watch(
    resource_version: Option<&str>,
    send_initial_events: Option<bool>,
) -> Result<WatchStart, ApiError> {
    let rv = nonempty(resource_version);
    Ok(match (send_initial_events, rv) {
        (None | Some(true), None) => WatchStart::StateAtMostRecent,
        (None | Some(true), Some("0")) => WatchStart::StateAtAny,
        (None, Some(rv)) => WatchStart::After(parse_resource_version(rv)?),
        (Some(true), Some(rv)) => WatchStart::StateNotOlderThan(parse_resource_version(rv)?),
        (Some(false), None | Some("0")) => WatchStart::Now,
        (Some(false), Some(rv)) => WatchStart::After(parse_resource_version(rv)?),
    })
}

/// The watch query parameters upstream validates beyond `resourceVersion`.
#[derive(Debug, Clone, Copy, Default)]
pub struct WatchRequest<'a> {
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<&'a str>,
    /// `continue`.
    pub continue_token: Option<&'a str>,
    /// `sendInitialEvents`: any value counts as given (`false` too, as upstream's pointer).
    pub send_initial_events: Option<&'a str>,
}

/// Upstream's `ValidateListOptions` for a watch, with the WatchList feature on (streaming
/// lists): `sendInitialEvents` needs `resourceVersionMatch=NotOlderThan`, and
/// `resourceVersionMatch` is forbidden without it and supports only `NotOlderThan`. All
/// failures are one 422 `ListOptions.meta.k8s.io "" is invalid: ...`, as for a list.
pub fn validate_watch_match(req: &WatchRequest) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let path = "resourceVersionMatch";
    let matching = nonempty(req.resource_version_match);
    if req.send_initial_events.is_some() && matching != Some(MATCH_NOT_OLDER_THAN) {
        errs.push(field::forbidden(
            path,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if let Some(matching) = matching {
        if req.send_initial_events.is_none() {
            errs.push(field::forbidden(
                path,
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if matching != MATCH_NOT_OLDER_THAN {
            let value = serde_json::Value::String(matching.to_string());
            errs.push(field::not_supported(path, &value, &[MATCH_NOT_OLDER_THAN]));
        }
        if nonempty(req.continue_token).is_some() {
            errs.push(field::forbidden(
                path,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", errs))
}

/// The JSON inside a continue token, member names as upstream's.
#[derive(Serialize, Deserialize)]
struct ContinueToken {
    #[serde(default)]
    v: String,
    #[serde(default)]
    rv: i64,
    #[serde(default)]
    start: String,
}

/// Encodes a continue token in upstream's shape: unpadded URL-safe base64 of
/// `{"v":"meta.k8s.io/v1","rv":<rv>,"start":"<key>\u0000"}`, where the start key is the
/// first key strictly after `start_after_key`.
pub fn encode_continue(rv: Revision, start_after_key: &str) -> String {
    let token = ContinueToken {
        v: CONTINUE_TOKEN_VERSION.to_string(),
        rv: i64::try_from(rv.get()).unwrap_or(i64::MAX),
        start: format!("{start_after_key}\0"),
    };
    let json = serde_json::to_vec(&token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn invalid_token(detail: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "invalid continue token: continue key is not valid: {detail}"
    ))
}

fn base64_error_text(e: &base64::DecodeError, len: usize) -> String {
    let at = match e {
        base64::DecodeError::InvalidByte(offset, _)
        | base64::DecodeError::InvalidLastSymbol(offset, _) => *offset,
        _ => len,
    };
    format!("illegal base64 data at input byte {at}")
}

/// `path.Clean("/" + key) == "/" + key`: no empty, `.` or `..` segments, no trailing `/`.
fn is_clean_key(key: &str) -> bool {
    !key.ends_with('/')
        && key
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

/// Decodes a token made by [`encode_continue`] into `(rv, start_after_key)`, rejecting
/// malformed tokens with upstream's 400 messages (`invalid continue token: continue key is
/// not valid: ...`).
pub fn decode_continue(token: &str) -> Result<(Revision, String), ApiError> {
    if token.len() > CONTINUE_TOKEN_LEN_MAX {
        return Err(invalid_token(format!(
            "token is longer than {CONTINUE_TOKEN_LEN_MAX} bytes"
        )));
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|e| invalid_token(base64_error_text(&e, token.len())))?;
    let parsed: ContinueToken = serde_json::from_slice(&bytes).map_err(invalid_token)?;
    if parsed.v != CONTINUE_TOKEN_VERSION {
        return Err(invalid_token(format!(
            "server does not recognize this encoded version {}",
            crate::gofmt::quote(&parsed.v)
        )));
    }
    let rv = u64::try_from(parsed.rv)
        .ok()
        .filter(|rv| *rv > 0)
        .ok_or_else(|| {
            invalid_token("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        })?;
    if parsed.start.is_empty() {
        return Err(invalid_token(
            "encoded start key empty (version meta.k8s.io/v1)",
        ));
    }
    let key = parsed.start.strip_prefix('/').unwrap_or(&parsed.start);
    let start_after = key
        .strip_suffix('\0')
        .filter(|k| is_clean_key(key) && !k.is_empty());
    match start_after {
        Some(k) => Ok((Revision(rv), k.to_string())),
        None => Err(invalid_token(&parsed.start)),
    }
}

#[cfg(test)]
mod tests;
