//! core/v1 Event <-> events.k8s.io/v1 Event. Upstream keeps both as one object set stored as
//! core v1; each field has a counterpart under another name (`message`/`note`,
//! `involvedObject`/`regarding`, `source`/`deprecatedSource`, `reportingComponent`/
//! `reportingController`, the timestamps and count as `deprecated*`), the rest keep theirs.
//! Members each version always prints (Go struct values and non-omitempty fields) are
//! written even when unset, as upstream prints them (`"source": {}`, `"eventTime": null`,
//! core's `"reportingComponent": ""`); unset omitempty ones are left out.

use serde_json::{json, Map, Value};

/// Whether a version prints a member when it is unset.
#[derive(Clone, Copy)]
enum Unset {
    /// Left out (Go `omitempty`: empty string, zero, null).
    Omit,
    /// `{}` (a struct value).
    EmptyObject,
    /// `null` (a time that is zero).
    Null,
    /// `""` (a string without omitempty).
    EmptyString,
}

/// `(core name, events.k8s.io name, core when unset, events.k8s.io when unset)`.
type Row = (&'static str, &'static str, Unset, Unset);

/// In core v1's field order.
const CORE_ORDER: &[Row] = &[
    (
        "involvedObject",
        "regarding",
        Unset::EmptyObject,
        Unset::EmptyObject,
    ),
    ("reason", "reason", Unset::Omit, Unset::Omit),
    ("message", "note", Unset::Omit, Unset::Omit),
    (
        "source",
        "deprecatedSource",
        Unset::EmptyObject,
        Unset::EmptyObject,
    ),
    (
        "firstTimestamp",
        "deprecatedFirstTimestamp",
        Unset::Null,
        Unset::Null,
    ),
    (
        "lastTimestamp",
        "deprecatedLastTimestamp",
        Unset::Null,
        Unset::Null,
    ),
    ("count", "deprecatedCount", Unset::Omit, Unset::Omit),
    ("type", "type", Unset::Omit, Unset::Omit),
    ("eventTime", "eventTime", Unset::Null, Unset::Null),
    ("series", "series", Unset::Omit, Unset::Omit),
    ("action", "action", Unset::Omit, Unset::Omit),
    ("related", "related", Unset::Omit, Unset::Omit),
    (
        "reportingComponent",
        "reportingController",
        Unset::EmptyString,
        Unset::Omit,
    ),
    (
        "reportingInstance",
        "reportingInstance",
        Unset::EmptyString,
        Unset::Omit,
    ),
];

/// events.k8s.io/v1's field order, as indexes into [`CORE_ORDER`].
const EVENTS_ORDER: &[usize] = &[8, 9, 12, 13, 10, 1, 0, 11, 2, 7, 3, 4, 5, 6];

const CORE: &str = "v1";
const EVENTS: &str = "events.k8s.io/v1";

pub(super) fn convert(obj: Value, from: &str, to: &str) -> Result<Value, String> {
    let to_core = match (from, to) {
        (EVENTS, CORE) => true,
        (CORE, EVENTS) => false,
        _ => return Err(format!("no conversion of events from {from:?} to {to:?}")),
    };
    let Value::Object(mut inp) = obj else {
        return Err("an Event must be a JSON object".into());
    };
    let mut out = Map::new();
    out.insert("kind".into(), inp.remove("kind").unwrap_or(json!("Event")));
    out.insert("apiVersion".into(), json!(to));
    if let Some(meta) = inp.remove("metadata") {
        out.insert("metadata".into(), meta);
    }
    let rows: Vec<&Row> = if to_core {
        CORE_ORDER.iter().collect()
    } else {
        EVENTS_ORDER.iter().map(|i| &CORE_ORDER[*i]).collect()
    };
    for (core, events, core_unset, events_unset) in rows {
        let (src, dst, unset) = if to_core {
            (events, core, core_unset)
        } else {
            (core, events, events_unset)
        };
        if let Some(v) = inp.remove(*src).filter(|v| !is_empty(v)) {
            out.insert(dst.to_string(), v);
            continue;
        }
        let fill = match unset {
            Unset::Omit => continue,
            Unset::EmptyObject => json!({}),
            Unset::Null => Value::Null,
            Unset::EmptyString => json!(""),
        };
        out.insert(dst.to_string(), fill);
    }
    Ok(Value::Object(out))
}

/// What Go's `omitempty` leaves out.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_name_the_same_rows() {
        let mut seen: Vec<usize> = EVENTS_ORDER.to_vec();
        seen.sort_unstable();
        assert_eq!(seen, (0..CORE_ORDER.len()).collect::<Vec<_>>());
    }
}
