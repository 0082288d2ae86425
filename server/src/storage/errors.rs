//! Store errors as API errors: the one mapping from `keel_engine::Error` to `metav1.Status`.
//! Verb-specific outcomes (NotFound, AlreadyExists, Conflict of a write) are decided by the
//! registry, which knows the resource and name; everything else comes through here.

use keel_api::status::ApiError;
use keel_engine::Error as StoreError;

/// Store errors on reads: compacted history is 410 Expired, a future revision 504.
pub fn read_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Compacted {
            requested,
            compacted,
        } => ApiError::too_old_resource_version(requested, compacted),
        StoreError::FutureRevision { requested, current } => {
            ApiError::too_large_resource_version(requested, current)
        }
        other => storage_error(other),
    }
}

/// Store errors not specific to one verb.
pub fn storage_error(e: StoreError) -> ApiError {
    match e {
        StoreError::KeyTooLarge { len, max } => {
            ApiError::bad_request(format!("object key of {len} bytes exceeds {max}"))
        }
        StoreError::ValueTooLarge { .. } => {
            ApiError::request_entity_too_large("etcdserver: request is too large")
        }
        StoreError::Busy => ApiError::too_many_requests(1),
        other => ApiError::internal(other.to_string()),
    }
}
