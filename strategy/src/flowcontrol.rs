//! API Priority and Fairness: upstream's `ValidatePriorityLevelConfiguration` (beyond
//! ObjectMeta, checked elsewhere) for flowcontrol.apiserver.k8s.io/v1, the only version keel
//! serves, on the defaulted object.
//!
//! The mandatory levels `exempt` and `catch-all` must keep their bootstrap spec (`exempt` may
//! change only its `spec.exempt`): keel's APF controller restores them, and upstream refuses
//! any other spec. The mismatch message shows the spec as Go prints the internal type (see
//! [`crate::gojson`]).

use crate::errors::{Bad, FieldErr};
use crate::gojson::{self, F, T};
use crate::json::str_at;
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};

/// The priority level that must be, and is the only one that may be, `type: Exempt`.
pub const EXEMPT_LEVEL: &str = "exempt";
/// The mandatory level unmatched requests fall into.
pub const CATCH_ALL_LEVEL: &str = "catch-all";
/// Most queues a level may have (upstream's `priorityLevelConfigurationQueuingMaxQueues`).
pub const QUEUES_MAX: i64 = 10_000_000;
/// Most hash bits shuffle sharding may consume (`shufflesharding.MaxHashBits`).
pub const SHUFFLE_SHARDING_HASH_BITS_MAX: u32 = 60;
/// The v1beta3 round-trip annotation, forbidden on stored objects.
pub const PRESERVE_ZERO_SHARES_ANNOTATION: &str =
    "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

const ENABLEMENTS: &[&str] = &["Exempt", "Limited"];
const LIMIT_RESPONSES: &[&str] = &["Queue", "Reject"];
const NON_NEGATIVE: &str = "must be a non-negative integer";
const PERCENT: &str = "must be between 0 and 100, inclusive";

const QUEUING: &[F] = &[
    F("Queues", "queues", T::Int),
    F("HandSize", "handSize", T::Int),
    F("QueueLengthLimit", "queueLengthLimit", T::Int),
];
const LIMIT_RESPONSE: &[F] = &[
    F("Type", "type", T::Str),
    F("Queuing", "queuing", T::Ptr(QUEUING)),
];
const LIMITED: &[F] = &[
    F(
        "NominalConcurrencyShares",
        "nominalConcurrencyShares",
        T::Int,
    ),
    F("LimitResponse", "limitResponse", T::Struct(LIMIT_RESPONSE)),
    F("LendablePercent", "lendablePercent", T::Scalar),
    F("BorrowingLimitPercent", "borrowingLimitPercent", T::Scalar),
];
const EXEMPT: &[F] = &[
    F(
        "NominalConcurrencyShares",
        "nominalConcurrencyShares",
        T::Scalar,
    ),
    F("LendablePercent", "lendablePercent", T::Scalar),
];
const SPEC: &[F] = &[
    F("Type", "type", T::Str),
    F("Limited", "limited", T::Ptr(LIMITED)),
    F("Exempt", "exempt", T::Ptr(EXEMPT)),
];

/// The bootstrap spec of a mandatory level (upstream's `MandatoryPriorityLevelConfigurations`,
/// in v1 form as defaulted); `None` for other names.
pub fn mandatory_spec(name: &str) -> Option<Value> {
    match name {
        EXEMPT_LEVEL => Some(json!({"type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})),
        CATCH_ALL_LEVEL => Some(json!({"type": "Limited", "limited": {
            "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"},
            "lendablePercent": 0}})),
        _ => None,
    }
}

/// A named string type (`PriorityLevelEnablement`, `LimitResponseType`) as upstream prints it
/// in a message: through `json.Marshal`, not `%q`.
fn enum_value(s: &str) -> Bad {
    Bad::Raw(gojson::string(s))
}

fn int_at(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// Upstream's `ValidatePriorityLevelConfiguration` without ObjectMeta.
pub fn validate_priority_level(obj: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if obj
        .at("/metadata/annotations")
        .and_then(|a| a.get(PRESERVE_ZERO_SHARES_ANNOTATION))
        .is_some()
    {
        errs.push(FieldErr::forbidden(
            "metadata.annotations",
            &format!("annotation '{PRESERVE_ZERO_SHARES_ANNOTATION}' is forbidden"),
        ));
    }
    let name = str_at(obj, "metadata.name");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    spec_rules(spec, name, &mut errs);
    mandatory_rules(spec, name, &mut errs);
    status_rules(obj.get("status").unwrap_or(&Value::Null), &mut errs);
    errs
}

fn spec_rules(spec: &Value, name: &str, errs: &mut Vec<FieldErr>) {
    let kind = str_at(spec, "type");
    let present = |key: &str| spec.get(key).is_some_and(|v| !v.is_null());
    if (name == EXEMPT_LEVEL) != (kind == "Exempt") {
        errs.push(FieldErr::invalid(
            "spec.type",
            enum_value(kind),
            "must be 'Exempt' if and only if `name` is 'exempt'",
        ));
    }
    match kind {
        "Exempt" => {
            if present("limited") {
                errs.push(FieldErr::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(exempt) = spec.get("exempt").filter(|v| !v.is_null()) {
                exempt_rules(exempt, errs);
            }
        }
        "Limited" => {
            if present("exempt") {
                errs.push(FieldErr::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match spec.get("limited").filter(|v| !v.is_null()) {
                None => errs.push(FieldErr::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(limited) => limited_rules(limited, errs),
            }
        }
        other => errs.push(FieldErr::not_supported(
            "spec.type",
            enum_value(other),
            ENABLEMENTS,
        )),
    }
}

fn exempt_rules(exempt: &Value, errs: &mut Vec<FieldErr>) {
    if let Some(n) = int_at(exempt, "nominalConcurrencyShares").filter(|n| *n < 0) {
        errs.push(FieldErr::invalid(
            "spec.exempt.nominalConcurrencyShares",
            n,
            NON_NEGATIVE,
        ));
    }
    if let Some(p) = int_at(exempt, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        errs.push(FieldErr::invalid("spec.exempt.lendablePercent", p, PERCENT));
    }
}

fn limited_rules(limited: &Value, errs: &mut Vec<FieldErr>) {
    let shares = int_at(limited, "nominalConcurrencyShares").unwrap_or(0);
    if shares < 0 {
        errs.push(FieldErr::invalid(
            "spec.limited.nominalConcurrencyShares",
            shares,
            NON_NEGATIVE,
        ));
    }
    limit_response_rules(limited.get("limitResponse").unwrap_or(&Value::Null), errs);
    if let Some(p) = int_at(limited, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        errs.push(FieldErr::invalid(
            "spec.limited.lendablePercent",
            p,
            PERCENT,
        ));
    }
    if let Some(p) = int_at(limited, "borrowingLimitPercent").filter(|p| *p < 0) {
        errs.push(FieldErr::invalid(
            "spec.limited.borrowingLimitPercent",
            p,
            "if specified, must be a non-negative integer",
        ));
    }
}

fn limit_response_rules(response: &Value, errs: &mut Vec<FieldErr>) {
    const PATH: &str = "spec.limited.limitResponse";
    let queuing = response.get("queuing").filter(|v| !v.is_null());
    match str_at(response, "type") {
        "Reject" => {
            if queuing.is_some() {
                errs.push(FieldErr::forbidden(
                    &format!("{PATH}.queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match queuing {
            None => errs.push(FieldErr::required(
                &format!("{PATH}.queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => queuing_rules(q, errs),
        },
        other => errs.push(FieldErr::not_supported(
            &format!("{PATH}.type"),
            enum_value(other),
            LIMIT_RESPONSES,
        )),
    }
}

fn queuing_rules(q: &Value, errs: &mut Vec<FieldErr>) {
    const PATH: &str = "spec.limited.limitResponse.queuing";
    let queues = int_at(q, "queues").unwrap_or(0);
    let hand = int_at(q, "handSize").unwrap_or(0);
    let length = int_at(q, "queueLengthLimit").unwrap_or(0);
    if length <= 0 {
        errs.push(FieldErr::invalid(
            &format!("{PATH}.queueLengthLimit"),
            length,
            "must be positive",
        ));
    }
    if queues <= 0 {
        errs.push(FieldErr::invalid(
            &format!("{PATH}.queues"),
            queues,
            "must be positive",
        ));
    } else if queues > QUEUES_MAX {
        errs.push(FieldErr::invalid(
            &format!("{PATH}.queues"),
            queues,
            &format!("must not be greater than {QUEUES_MAX}"),
        ));
    }
    let hand_path = format!("{PATH}.handSize");
    if hand <= 0 {
        errs.push(FieldErr::invalid(&hand_path, hand, "must be positive"));
    } else if hand > queues {
        errs.push(FieldErr::invalid(
            &hand_path,
            hand,
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if ((queues as f64).log2() * hand as f64).ceil()
        > f64::from(SHUFFLE_SHARDING_HASH_BITS_MAX)
    {
        errs.push(FieldErr::invalid(
            &hand_path,
            hand,
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {SHUFFLE_SHARDING_HASH_BITS_MAX}"
            ),
        ));
    }
}

/// A mandatory level keeps its bootstrap spec; `exempt` may change only `spec.exempt`.
/// Compared as Go prints the internal specs (nil and set pointers differ, as in Go).
fn mandatory_rules(spec: &Value, name: &str, errs: &mut Vec<FieldErr>) {
    let Some(want) = mandatory_spec(name) else {
        return;
    };
    let mut have = spec.clone();
    let detail = if name == EXEMPT_LEVEL {
        if let Some(h) = have.as_object_mut() {
            h.insert("exempt".into(), want["exempt"].clone());
        }
        format!("spec of '{name}' except the 'spec.exempt' field must equal the fixed value")
    } else {
        format!("spec of '{name}' must equal the fixed value")
    };
    if gojson::of(SPEC, &have) != gojson::of(SPEC, &want) {
        errs.push(FieldErr::invalid(
            "spec",
            Bad::Raw(gojson::of(SPEC, spec)),
            &detail,
        ));
    }
}

fn status_rules(status: &Value, errs: &mut Vec<FieldErr>) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in crate::json::arr_at(status, "conditions").iter().enumerate() {
        let kind = str_at(c, "type");
        if seen.contains(&kind) {
            errs.push(FieldErr::duplicate(
                &format!("status.conditions[{i}].type"),
                enum_value(kind),
            ));
        }
        seen.push(kind);
        if kind.is_empty() {
            errs.push(FieldErr::required(
                &format!("status.conditions[{i}].type"),
                "",
            ));
        }
    }
}

#[cfg(test)]
mod tests;
