//! Consumable capacity (DRAConsumableCapacity, on by default in v1.36): the `requestPolicy`
//! of a capacity of a device that allows multiple allocations.
//!
//! Quantities are compared by value; in messages they are printed as written, which is
//! upstream's text whenever they are written in canonical form (`1Gi`, `10`, `500m`).

use super::common::{self as c, items};
use crate::errors::{Bad, FieldErr};
use crate::quantity::{self, Nanos};
use serde_json::Value;

/// Most discrete options of a policy.
const VALID_VALUES_MAX: usize = 10;
const NANOS_PER_UNIT: i128 = 1_000_000_000;

fn q(v: Option<&Value>) -> Option<(Nanos, String)> {
    let text = v?.as_str()?;
    quantity::parse(text).map(|n| (n, text.to_string()))
}

/// Upstream's `Quantity.Value()`: the value rounded up to an integer.
fn int_value(n: Nanos) -> i128 {
    let (d, r) = (n.0 / NANOS_PER_UNIT, n.0 % NANOS_PER_UNIT);
    if r > 0 {
        d + 1
    } else {
        d
    }
}

/// A capacity's `requestPolicy` against the capacity's value.
pub fn request_policy(capacity: &Value, policy: &Value, path: &str) -> Vec<FieldErr> {
    let Some(max) = q(capacity.get("value")) else {
        return Vec::new();
    };
    let values = items(policy.get("validValues"));
    let range = policy.get("validRange").filter(|r| !r.is_null());
    if !values.is_empty() && range.is_some() {
        return vec![FieldErr::forbidden(
            path,
            "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time",
        )];
    }
    let default = q(policy.get("default"));
    if !values.is_empty() {
        let Some(default) = default else {
            return vec![FieldErr::required(
                &format!("{path}.default"),
                "required when validValues is defined",
            )];
        };
        return valid_values(&default, &max, values, &format!("{path}.validValues"));
    }
    if let Some(range) = range {
        let Some(default) = default else {
            return vec![FieldErr::required(
                &format!("{path}.default"),
                "required when validRange is defined",
            )];
        };
        return valid_range(&default, &max, range, &format!("{path}.validRange"));
    }
    Vec::new()
}

fn valid_values(
    default: &(Nanos, String),
    max: &(Nanos, String),
    values: &[Value],
    path: &str,
) -> Vec<FieldErr> {
    let parsed: Vec<Option<(Nanos, String)>> = values.iter().map(|v| q(Some(v))).collect();
    let mut errs = Vec::new();
    for (i, pair) in parsed.windows(2).enumerate() {
        if let [Some(a), Some(b)] = pair {
            if a.0 > b.0 {
                errs.push(FieldErr::invalid(
                    &format!("{path}[{}]", i + 1),
                    b.1.as_str(),
                    "values must be sorted in ascending order",
                ));
            }
        }
    }
    let mut found = false;
    errs.extend(c::set(
        Some(&Value::Array(values.to_vec())),
        Some(VALID_VALUES_MAX),
        path,
        |v, p| {
            let Some(option) = q(Some(v)) else {
                return Vec::new();
            };
            if option.0 == default.0 {
                found = true;
            }
            if option.0 > max.0 {
                let detail = format!("option is larger than capacity value: {}", max.1);
                return vec![FieldErr::invalid(p, option.1.as_str(), &detail)];
            }
            Vec::new()
        },
        |v| Bad::Str(q(Some(v)).map_or(String::new(), |o| int_value(o.0).to_string())),
    ));
    if !found {
        errs.push(FieldErr::invalid(
            path,
            default.1.as_str(),
            "default value is not valid according to the requestPolicy",
        ));
    }
    errs
}

fn valid_range(
    default: &(Nanos, String),
    max: &(Nanos, String),
    range: &Value,
    path: &str,
) -> Vec<FieldErr> {
    let Some(min) = q(range.get("min")) else {
        return vec![FieldErr::required(
            &format!("{path}.min"),
            "required when validRange is defined",
        )];
    };
    let (min_path, max_path, step_path) = (
        format!("{path}.min"),
        format!("{path}.max"),
        format!("{path}.step"),
    );
    let mut errs = Vec::new();
    if min.0 > max.0 {
        let detail = format!("min is larger than capacity value: {}", max.1);
        errs.push(FieldErr::invalid(&min_path, min.1.as_str(), &detail));
    }
    if default.0 < min.0 {
        let detail = format!("default is less than min: {}", min.1);
        errs.push(FieldErr::invalid(&min_path, default.1.as_str(), &detail));
    }
    let range_max = q(range.get("max"));
    if let Some(rmax) = &range_max {
        if min.0 > rmax.0 {
            let detail = format!("min is larger than max: {}", rmax.1);
            errs.push(FieldErr::invalid(&max_path, min.1.as_str(), &detail));
        }
        if rmax.0 > max.0 {
            let detail = format!("max is larger than capacity value: {}", max.1);
            errs.push(FieldErr::invalid(&max_path, rmax.1.as_str(), &detail));
        }
        if default.0 > rmax.0 {
            let detail = format!("default is more than max: {}", rmax.1);
            errs.push(FieldErr::invalid(&max_path, default.1.as_str(), &detail));
        }
    }
    if let Some(step) = q(range.get("step")) {
        let added = Nanos(min.0 .0.saturating_add(step.0 .0));
        if added > max.0 {
            let detail = format!(
                "one step {} is larger than capacity value: {}",
                sum_text(&min.1, &step.1, added),
                max.1
            );
            errs.push(FieldErr::invalid(&step_path, step.1.as_str(), &detail));
        }
        errs.extend(on_step(default, &min, &step, &step_path));
        if let Some(rmax) = &range_max {
            errs.extend(on_step(rmax, &min, &step, &step_path));
        }
    }
    errs
}

/// `min + step` as upstream prints it: exact when both are integers with the same suffix.
fn sum_text(a: &str, b: &str, sum: Nanos) -> String {
    let split = |t: &str| {
        let at = t.find(|ch: char| !ch.is_ascii_digit()).unwrap_or(t.len());
        (t[..at].parse::<i128>().ok(), t[at..].to_string())
    };
    match (split(a), split(b)) {
        ((Some(x), sa), (Some(y), sb)) if sa == sb => format!("{}{sa}", x + y),
        _ => int_value(sum).to_string(),
    }
}

fn on_step(
    value: &(Nanos, String),
    min: &(Nanos, String),
    step: &(Nanos, String),
    path: &str,
) -> Vec<FieldErr> {
    let step_value = int_value(step.0);
    // Upstream divides by the step's integer value; a zero step is not reported here.
    if step_value == 0 || (int_value(value.0) - int_value(min.0)) % step_value == 0 {
        return Vec::new();
    }
    let detail = format!(
        "value is not a multiple of a given step ({}) from ({})",
        step.1, min.1
    );
    vec![FieldErr::invalid(path, value.1.as_str(), &detail)]
}
