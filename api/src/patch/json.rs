//! JSON patch (RFC 6902) with upstream's statuses: an undecodable document is 400, more than
//! [`JSON_PATCH_OPERATIONS_MAX`] operations is 413, an operation that cannot be applied is 422.

use crate::status::ApiError;
use json_patch::PatchOperation;
use serde_json::Value;

/// Most operations in one JSON patch (upstream's `maxJSONPatchOperations`).
pub const JSON_PATCH_OPERATIONS_MAX: usize = 10_000;
/// Most bytes that `copy` operations of one patch may duplicate in total; without it a few
/// dozen self-copies grow a small document exponentially.
pub const JSON_PATCH_COPY_BYTES_MAX: usize = 3 * 1024 * 1024;

fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn decode(patch: &Value) -> Result<Vec<&Value>, ApiError> {
    let ops = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(ops) => ops,
        other => {
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_json_type(other)
            )))
        }
    };
    if let Some(bad) = ops.iter().find(|op| !op.is_object()) {
        return Err(ApiError::bad_request(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
            go_json_type(bad)
        )));
    }
    if ops.len() > JSON_PATCH_OPERATIONS_MAX {
        return Err(ApiError::request_entity_too_large(format!(
            "The allowed maximum operations in a JSON patch is {JSON_PATCH_OPERATIONS_MAX}, got {}",
            ops.len()
        )));
    }
    Ok(ops.iter().collect())
}

/// Bytes a `copy` operation would duplicate (0 for other operations or a missing source,
/// which the operation itself then rejects).
fn copied_bytes(doc: &Value, op: &PatchOperation) -> usize {
    let PatchOperation::Copy(copy) = op else {
        return 0;
    };
    doc.pointer(copy.from.as_str())
        .and_then(|v| serde_json::to_vec(v).ok())
        .map_or(0, |b| b.len())
}

/// Applies an RFC 6902 patch atomically: on error `target` is left unchanged.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let ops = decode(patch)?;
    let mut doc = target.clone();
    let mut copied_total = 0usize;
    for raw in ops {
        let op: PatchOperation =
            serde_json::from_value(raw.clone()).map_err(|_| ApiError::unprocessable_generic())?;
        copied_total = copied_total.saturating_add(copied_bytes(&doc, &op));
        if copied_total > JSON_PATCH_COPY_BYTES_MAX {
            return Err(ApiError::unprocessable_generic());
        }
        json_patch::patch(&mut doc, std::slice::from_ref(&op))
            .map_err(|_| ApiError::unprocessable_generic())?;
    }
    *target = doc;
    Ok(())
}
