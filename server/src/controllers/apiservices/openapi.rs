//! The OpenAPI fetcher: after each pass of the availability controller, the documents of
//! every available aggregated API server that is due are fetched in the background (never in
//! a request's way) and kept in `aggregator::openapi`, as upstream's OpenAPI aggregation
//! controllers download them:
//! - as `system:aggregator` (no groups) through the proxy's transport;
//! - `/openapi/v3`, then the document its index gives for the APIService's group version
//!   (again only when that URL, whose `hash` names the document, changed); a 404 index means
//!   a server without OpenAPI v3 (upstream converts its v2 document then; keel lists none);
//! - `/openapi/v2` with the ETag of the last one (`If-None-Match`), kept to the group
//!   version's paths; a 404 means none.
//!
//! Each fetch is bounded by `APISERVICE_OPENAPI_FETCH_TIMEOUT` and
//! `APISERVICE_OPENAPI_BYTES_MAX`. A remote is due at once when it is new, changed
//! (group, version, service, trust) or became available; again `APISERVICE_OPENAPI_REFRESH`
//! after a success; after failures, a wait doubling from that up to
//! `APISERVICE_OPENAPI_BACKOFF_MAX`. A failed document keeps the last good one. Documents of
//! APIServices gone (or without a service now) are dropped.

use super::{get_bounded, resolve, Get};
use crate::aggregator::openapi::{filter_by_paths, sha512_hex, Fetched, V3Doc};
use crate::aggregator::{user_headers, Remote, ServiceRef, Trust};
use crate::limits::{
    APISERVICE_OPENAPI_BACKOFF_MAX, APISERVICE_OPENAPI_BYTES_MAX, APISERVICE_OPENAPI_FETCH_TIMEOUT,
    APISERVICE_OPENAPI_REFRESH,
};
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// The user upstream's downloaders send.
const USER: &str = "system:aggregator";

/// What a remote's documents were fetched for: a change fetches them again at once.
#[derive(Clone, PartialEq)]
struct Key {
    group: String,
    version: String,
    service: ServiceRef,
    trust: Trust,
    available: bool,
}

impl Key {
    fn of(r: &Remote) -> Key {
        Key {
            group: r.group.clone(),
            version: r.version.clone(),
            service: r.service.clone(),
            trust: r.trust.clone(),
            available: r.available,
        }
    }
}

struct Due {
    key: Key,
    at: Instant,
    failures: u32,
    in_flight: bool,
}

/// When each remote's documents are due (the controller's, across its passes).
#[derive(Default, Clone)]
pub struct Schedule(Arc<Mutex<HashMap<String, Due>>>);

/// The wait after `failures` failed fetches in a row.
fn backoff(failures: u32) -> std::time::Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    APISERVICE_OPENAPI_REFRESH
        .saturating_mul(factor)
        .min(APISERVICE_OPENAPI_BACKOFF_MAX)
}

/// Drops the documents of remotes gone and starts the fetches that are due.
pub fn schedule(st: &Arc<State>, schedule: &Schedule) {
    let remotes = st.aggregator.snapshot();
    let all: Vec<Arc<Remote>> = remotes
        .groups()
        .into_iter()
        .flat_map(|(_, rs)| rs.iter().cloned())
        .collect();
    let names: HashSet<&str> = all.iter().map(|r| r.name.as_str()).collect();
    st.aggregator.openapi.retain(&names);
    let now = Instant::now();
    let mut dues = schedule.0.lock().unwrap_or_else(|e| e.into_inner());
    dues.retain(|name, _| names.contains(name.as_str()));
    for r in &all {
        let key = Key::of(r);
        let due = dues.entry(r.name.clone()).or_insert_with(|| Due {
            key: key.clone(),
            at: now,
            failures: 0,
            in_flight: false,
        });
        if due.key != key {
            *due = Due {
                key,
                at: now,
                failures: 0,
                in_flight: due.in_flight,
            };
        }
        if !r.available || due.in_flight || due.at > now {
            continue;
        }
        due.in_flight = true;
        let (st, r, schedule) = (st.clone(), r.clone(), schedule.clone());
        // The controller's thread runs a `LocalSet`.
        tokio::task::spawn_local(async move {
            let previous = st.aggregator.openapi.fetched().get(&r.name).cloned();
            let (fetched, error) = fetch(&st, &r, previous.as_deref()).await;
            if let Some(e) = &error {
                eprintln!(
                    "aggregator: loading OpenAPI spec for {:?} failed with: {e}",
                    r.name
                );
            }
            // Stored unless the remote went meanwhile (the next pass drops it anyway).
            let mut dues = schedule.0.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(due) = dues.get_mut(&r.name) {
                st.aggregator.openapi.store(fetched);
                due.in_flight = false;
                due.failures = if error.is_some() { due.failures + 1 } else { 0 };
                due.at = Instant::now()
                    + if error.is_some() {
                        backoff(due.failures)
                    } else {
                        APISERVICE_OPENAPI_REFRESH
                    };
            }
        });
    }
}

/// Fetches a remote's documents; what failed keeps `previous`'s, and the first error is
/// returned with them.
async fn fetch(st: &State, r: &Remote, previous: Option<&Fetched>) -> (Fetched, Option<String>) {
    let mut out = Fetched {
        name: r.name.clone(),
        group: r.group.clone(),
        version: r.version.clone(),
        group_priority: r.group_priority,
        v2: previous.and_then(|p| p.v2.clone()),
        v3: previous.and_then(|p| p.v3.clone()),
    };
    // Where the availability check resolved the Service, else read again.
    let address = match r.address() {
        Some(a) => Ok(a.to_string()),
        None => resolve::resolve(st, &r.service, st.aggregator.endpoint_routing()).await,
    };
    let client = match address.and_then(|a| Ok((r.client(&a, st.aggregator.identity())?, a))) {
        Ok(c) => c,
        Err(e) => return (out, Some(e)),
    };
    let remote = Fetcher {
        client: &client.0,
        authority: &client.1,
        user: user_headers(USER, "", &[]),
    };
    let v3 = remote.v3(r, out.v3.as_ref()).await;
    let v2 = remote
        .v2(r, out.v2.as_ref().and_then(|(_, etag)| etag.as_deref()))
        .await;
    let mut error = None;
    match v3 {
        Ok(v3) => out.v3 = v3,
        Err(e) => error = Some(e),
    }
    match v2 {
        Ok(Some(v2)) => out.v2 = v2,
        Ok(None) => {}
        Err(e) => error = error.or(Some(e)),
    }
    (out, error)
}

struct Fetcher<'a> {
    client: &'a keel_client::KubeClient,
    authority: &'a str,
    user: Vec<(String, String)>,
}

impl Fetcher<'_> {
    async fn get(
        &self,
        path: &str,
        extra: &[(&str, &str)],
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), String> {
        let url = format!("https://{}{path}", self.authority);
        get_bounded(
            self.client,
            &Get {
                path,
                url: &url,
                user: &self.user,
                extra,
                timeout: APISERVICE_OPENAPI_FETCH_TIMEOUT,
                bytes_max: APISERVICE_OPENAPI_BYTES_MAX,
                what: "OpenAPI document",
            },
        )
        .await
    }

    /// The group version's v3 document (`None`: the server has none); `previous` is reused
    /// while the index gives the same URL.
    async fn v3(&self, r: &Remote, previous: Option<&V3Doc>) -> Result<Option<V3Doc>, String> {
        let (status, _, body) = self.get("/openapi/v3", &[]).await?;
        match status {
            404 => return Ok(None),
            200 => {}
            _ => return Err("Error, could not get list of group versions for APIService".into()),
        }
        let index: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let key = format!("apis/{}/{}", r.group, r.version);
        let Some(url) = index
            .at(&format!(
                "/paths/{}",
                key.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(|p| p.get("serverRelativeURL"))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        if let Some(p) = previous.filter(|p| p.url == url) {
            return Ok(Some(p.clone()));
        }
        if !url.starts_with('/') {
            return Err(format!("serverRelativeURL {url:?} is not a path"));
        }
        let (status, _, body) = self.get(url, &[]).await?;
        if status != 200 {
            return Err(format!("{url}: status {status}"));
        }
        serde_json::from_slice::<Value>(&body).map_err(|e| format!("{url}: {e}"))?;
        let hash = url
            .split_once('?')
            .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("hash=")))
            .filter(|h| !h.is_empty())
            .map_or_else(|| sha512_hex(&body), str::to_owned);
        Ok(Some(V3Doc {
            url: url.to_owned(),
            hash,
            body: body.into(),
        }))
    }

    /// The v2 document kept to the group version's paths, with its ETag: `Some(None)` when
    /// the server has none, `None` when the last one is still current (304).
    #[allow(clippy::type_complexity)]
    async fn v2(
        &self,
        r: &Remote,
        etag: Option<&str>,
    ) -> Result<Option<Option<(Arc<Value>, Option<String>)>>, String> {
        let extra: Vec<(&str, &str)> = etag.map(|e| ("If-None-Match", e)).into_iter().collect();
        let (status, headers, body) = self.get("/openapi/v2", &extra).await?;
        match status {
            304 if etag.is_some() => return Ok(None),
            404 => return Ok(Some(None)),
            200 => {}
            _ => {
                return Err(format!(
                    "failed to retrieve openAPI spec, http error: {status}"
                ))
            }
        }
        let spec: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let prefix = format!("/apis/{}/{}/", r.group, r.version);
        let etag = headers
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("etag"))
            .map(|(_, v)| v);
        Ok(Some(Some((
            Arc::new(filter_by_paths(&spec, &[&prefix])),
            etag,
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_up_to_the_bound() {
        assert_eq!(backoff(1), APISERVICE_OPENAPI_REFRESH);
        assert_eq!(backoff(2), APISERVICE_OPENAPI_REFRESH * 2);
        assert_eq!(backoff(3), APISERVICE_OPENAPI_REFRESH * 4);
        assert_eq!(backoff(40), APISERVICE_OPENAPI_BACKOFF_MAX);
    }
}
