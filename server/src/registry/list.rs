//! Lists: one page per the resourceVersion rules (a snapshot, `limit` + `continue`,
//! `remainingItemCount`), filtered by selectors.

use super::Registry;
use crate::limits::LIST_FILTER_BATCH;
use crate::routes::Resource;
use crate::selection::Filter;
use crate::storage::ReadPoint;
use keel_api::rv::{self, ListPlan};
use keel_api::status::ApiError;
use keel_engine::{KeyValue, Revision};

/// One page of a list, as stored bytes.
pub struct Page {
    pub items: Vec<KeyValue>,
    /// The snapshot the page was read at.
    pub revision: Revision,
    /// Empty unless more items remain after this page.
    pub continue_token: String,
    /// How many items remain after this page (unfiltered paged lists only).
    pub remaining: Option<u64>,
}

impl Registry {
    /// Reads one page per `plan`, keeping what `filter` selects.
    pub async fn list(
        &self,
        res: &Resource,
        namespace: &str,
        plan: &ListPlan,
        filter: &Filter,
    ) -> Result<Page, ApiError> {
        let prefix = res.loc.list_prefix(namespace);
        let mut at = ReadPoint::from(plan.read);
        let mut start: Option<Vec<u8>> = plan.start_after.as_ref().map(|s| {
            let mut k = prefix.clone();
            k.extend_from_slice(s.as_bytes());
            k
        });
        let want = plan.limit.unwrap_or(0);
        let mut items = Vec::new();
        let mut revision;
        let mut more;
        let mut remaining;
        loop {
            let batch = if filter.is_empty() {
                want
            } else {
                LIST_FILTER_BATCH
            };
            let r = self
                .storage
                .list(&prefix, start.as_deref(), batch, at)
                .await
                .map_err(|e| continue_expired(e, plan.start_after.is_some()))?;
            revision = r.revision;
            at = ReadPoint::Exact(revision);
            more = r.more;
            remaining = r.remaining;
            let mut last_seen = None;
            let mut taken_all = true;
            let n = r.items.len();
            for (i, kv) in r.items.into_iter().enumerate() {
                if want > 0 && items.len() == want {
                    taken_all = false;
                    // Keys remain after the last item we return.
                    remaining += (n - i) as u64;
                    more = true;
                    break;
                }
                if filter.matches_bytes(kv.value()) {
                    items.push(kv);
                    last_seen = None;
                } else {
                    last_seen = Some(kv);
                }
            }
            // The last key examined: the newest kept item, or a later one the filter dropped.
            let last_key = match n {
                0 => None,
                _ => last_seen
                    .as_ref()
                    .or(items.last())
                    .map(|kv| kv.key().to_vec()),
            };
            if !more || (want > 0 && items.len() == want) || !taken_all {
                break;
            }
            start = last_key;
            if start.is_none() {
                break;
            }
            // A filtered list goes through every object a batch at a time: let the core's
            // other requests run between batches, so that one long scan does not hold the
            // core (priority and fairness bounds how many run at once, not how long each
            // holds the thread).
            tokio::task::yield_now().await;
        }
        let continue_token = if more && want > 0 {
            let last = items
                .last()
                .map(|kv| kv.key()[prefix.len()..].to_vec())
                .unwrap_or_default();
            rv::encode_continue(revision, &String::from_utf8_lossy(&last))
        } else {
            String::new()
        };
        let remaining = (more && want > 0 && filter.is_empty()).then_some(remaining);
        Ok(Page {
            items: super::all_as_request(res, items).await?,
            revision,
            continue_token,
            remaining,
        })
    }

    /// Every object of `res` in `namespace` (all namespaces when empty), now, as stored (in
    /// whatever version): for controllers that read only metadata, which no version
    /// changes (the garbage collector, the namespace and CRD finalizers), so that they never
    /// wait on a conversion (a conversion webhook that is down does not stall them).
    pub async fn list_all_stored(
        &self,
        res: &Resource,
        namespace: &str,
    ) -> Result<Vec<KeyValue>, ApiError> {
        Ok(self.list_all_stored_at(res, namespace).await?.0)
    }

    /// As [`Registry::list_all_stored`], with the revision the list was read at.
    async fn list_all_stored_at(
        &self,
        res: &Resource,
        namespace: &str,
    ) -> Result<(Vec<KeyValue>, Revision), ApiError> {
        let r = self
            .storage
            .list(&res.loc.list_prefix(namespace), None, 0, ReadPoint::Latest)
            .await?;
        Ok((r.items, r.revision))
    }

    /// Every object of `res` in `namespace` (all namespaces when empty), now, in the
    /// request's version: what the controllers and deletecollection walk.
    pub async fn list_all(
        &self,
        res: &Resource,
        namespace: &str,
    ) -> Result<(Vec<KeyValue>, Revision), ApiError> {
        let (items, revision) = self.list_all_stored_at(res, namespace).await?;
        Ok((super::all_as_request(res, items).await?, revision))
    }
}

/// A compacted snapshot, as upstream words it for a continue token and for a list at an
/// exact resourceVersion.
fn continue_expired(e: ApiError, with_token: bool) -> ApiError {
    match (e.code, with_token) {
        (410, true) => ApiError::continue_token_expired(),
        (410, false) => ApiError::list_resource_version_expired(),
        _ => e,
    }
}
