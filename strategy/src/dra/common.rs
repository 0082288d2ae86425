//! Checks the DRA kinds share: bounded lists and sets, driver, pool, device and request
//! names, qualified attribute names, opaque parameters, taints and tolerations, node
//! selectors, binding conditions. Each takes the value and its field path and returns
//! upstream's errors in upstream's order.

use crate::errors::{Bad, FieldErr};
use keel_api::names::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
};
use keel_cel::Type;
use serde_json::Value;
use std::sync::LazyLock;

/// Upstream's size bounds (`pkg/apis/resource/types.go`).
pub const REQUESTS_MAX: usize = 32;
pub const CONSTRAINTS_MAX: usize = 32;
pub const CONFIG_MAX: usize = 32;
pub const SELECTORS_MAX: usize = 32;
pub const FIRST_AVAILABLE_MAX: usize = 8;
pub const CEL_EXPRESSION_BYTES_MAX: usize = 10 * 1024;
pub const OPAQUE_PARAMETERS_BYTES_MAX: usize = 10 * 1024;
pub const DRIVER_NAME_BYTES_MAX: usize = 63;
pub const POOL_NAME_BYTES_MAX: usize = 253;
pub const DEVICE_ID_BYTES_MAX: usize = 32;
pub const DEVICE_TAINTS_MAX: usize = 16;
pub const BINDING_CONDITIONS_MAX: usize = 4;
pub const RESERVED_FOR_MAX: usize = 256;
pub const ALLOCATION_RESULTS_MAX: usize = 32;
pub const DEVICE_STATUS_CONDITIONS_MAX: usize = 8;
pub const TAINT_RULE_CONDITIONS_MAX: usize = 8;

/// `Too many: <n>: must have at most <max> items`.
pub fn too_many(path: &str, n: usize, max: usize) -> FieldErr {
    let unit = if max == 1 { "item" } else { "items" };
    FieldErr {
        reason: "FieldValueTooMany",
        field: path.to_string(),
        message: format!("{path}: Too many: {n}: must have at most {max} {unit}"),
    }
}

/// `Too long: may not be more than <max> bytes` (upstream's `field.TooLong`).
pub fn too_long(path: &str, max: usize) -> FieldErr {
    let unit = if max == 1 { "byte" } else { "bytes" };
    FieldErr {
        reason: "FieldValueTooLong",
        field: path.to_string(),
        message: format!("{path}: Too long: may not be more than {max} {unit}"),
    }
}

/// The array at `v` (absent, null and non-arrays are empty).
pub fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The string member `key` of `v`, or `""`.
pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Whether `v` has a non-null member `key`.
pub fn has(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// Upstream's `validateSlice`: at most `max` items (the only error when exceeded), then
/// each item's errors.
pub fn list(
    v: Option<&Value>,
    max: Option<usize>,
    path: &str,
    mut each: impl FnMut(&Value, &str) -> Vec<FieldErr>,
) -> Vec<FieldErr> {
    let all = items(v);
    if let Some(max) = max.filter(|m| all.len() > *m) {
        return vec![too_many(path, all.len(), max)];
    }
    let mut errs = Vec::new();
    for (i, item) in all.iter().enumerate() {
        errs.extend(each(item, &format!("{path}[{i}]")));
    }
    errs
}

/// Upstream's `validateSet`: as [`list`], then a `Duplicate value` for each repeated key.
pub fn set(
    v: Option<&Value>,
    max: Option<usize>,
    path: &str,
    each: impl FnMut(&Value, &str) -> Vec<FieldErr>,
    key: impl Fn(&Value) -> Bad,
) -> Vec<FieldErr> {
    let all = items(v);
    let mut errs = list(v, max, path, each);
    if max.is_some_and(|m| all.len() > m) {
        return errs;
    }
    let mut seen: Vec<String> = Vec::new();
    for (i, item) in all.iter().enumerate() {
        let k = key(item);
        let text = format!("{k:?}");
        if seen.contains(&text) {
            errs.push(FieldErr::duplicate(&format!("{path}[{i}]"), k));
        } else {
            seen.push(text);
        }
    }
    errs
}

/// A set of strings keyed by themselves.
pub fn string_key(v: &Value) -> Bad {
    Bad::Str(v.as_str().unwrap_or("").to_string())
}

/// `Invalid value` for each message of a name check.
fn each_invalid(path: &str, value: &str, msgs: Vec<String>) -> Vec<FieldErr> {
    msgs.iter()
        .map(|m| FieldErr::invalid(path, value, m))
        .collect()
}

/// A DNS-1123 label (device, request, counter names).
pub fn dns_label(value: &str, path: &str) -> Vec<FieldErr> {
    each_invalid(path, value, is_dns1123_label(value))
}

/// A DNS-1123 subdomain (device class names, node names).
pub fn dns_subdomain(value: &str, path: &str) -> Vec<FieldErr> {
    each_invalid(path, value, is_dns1123_subdomain(value))
}

/// A driver name (upstream reuses the CSI driver name rule): required, at most 63 bytes, a
/// DNS subdomain once lowercased.
pub fn driver_name(value: &str, path: &str) -> Vec<FieldErr> {
    if value.is_empty() {
        return vec![FieldErr::required(path, "")];
    }
    let mut errs = Vec::new();
    if value.len() > DRIVER_NAME_BYTES_MAX {
        errs.push(too_long(path, DRIVER_NAME_BYTES_MAX));
    }
    errs.extend(each_invalid(
        path,
        value,
        is_dns1123_subdomain(&value.to_lowercase()),
    ));
    errs
}

/// A pool name: required, at most 253 bytes, DNS subdomains separated by slashes.
pub fn pool_name(value: &str, path: &str) -> Vec<FieldErr> {
    if value.is_empty() {
        return vec![FieldErr::required(path, "")];
    }
    let mut errs = Vec::new();
    if value.len() > POOL_NAME_BYTES_MAX {
        errs.push(too_long(path, POOL_NAME_BYTES_MAX));
    }
    for part in value.split('/') {
        errs.extend(dns_subdomain(part, path));
    }
    errs
}

/// A label key (`metav1validation.ValidateLabelName`).
pub fn label_name(value: &str, path: &str) -> Vec<FieldErr> {
    each_invalid(path, value, is_qualified_name(value))
}

/// A label value.
pub fn label_value(value: &str, path: &str) -> Vec<FieldErr> {
    each_invalid(path, value, is_valid_label_value(value))
}

/// A node name (`ValidateNodeName`: a DNS subdomain).
pub fn node_name(value: &str, path: &str) -> Vec<FieldErr> {
    dns_subdomain(value, path)
}

/// A C identifier of at most 32 bytes (the name part of an attribute or capacity name).
fn c_identifier(id: &str, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if id.len() > DEVICE_ID_BYTES_MAX {
        errs.push(too_long(path, DEVICE_ID_BYTES_MAX));
    }
    let b = id.as_bytes();
    let ok = !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if !ok {
        errs.push(FieldErr::invalid(path, id, "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"));
    }
    errs
}

/// An attribute or capacity name: `<identifier>` or `<driver-like domain>/<identifier>`.
pub fn qualified_name(name: &str, path: &str) -> Vec<FieldErr> {
    let parts: Vec<&str> = name.split('/').collect();
    let mut errs = Vec::new();
    match parts.as_slice() {
        [id] => errs.extend(c_identifier(id, path)),
        [domain, id] => {
            if domain.is_empty() {
                errs.push(FieldErr::invalid(path, "", "the domain must not be empty"));
            } else {
                errs.extend(driver_name(domain, path));
            }
            if id.is_empty() {
                errs.push(FieldErr::invalid(path, "", "the name must not be empty"));
            } else {
                errs.extend(c_identifier(id, path));
            }
        }
        // Upstream accepts names with more than one slash (a known gap it keeps).
        _ => {}
    }
    errs
}

/// A qualified name that must have its domain (`matchAttribute`, `distinctAttribute`).
pub fn fully_qualified_name(name: &str, path: &str) -> Vec<FieldErr> {
    let mut errs = qualified_name(name, path);
    if !name.contains('/') {
        errs.push(FieldErr::invalid(
            path,
            name,
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
    errs
}

/// Opaque driver parameters: a JSON object, at most 10 KiB when new.
pub fn raw_object(v: Option<&Value>, path: &str, stored: bool, max: usize) -> Vec<FieldErr> {
    let Some(v) = v else {
        return vec![FieldErr::required(path, "")];
    };
    if !stored && serde_json::to_string(v).map_or(0, |t| t.len()) > max {
        return vec![too_long(path, max)];
    }
    match v {
        Value::Null => vec![FieldErr::required(path, "")],
        Value::Object(_) => Vec::new(),
        _ => vec![FieldErr::invalid(
            path,
            "<value omitted>",
            "must be a valid JSON object",
        )],
    }
}

/// `DeviceConfiguration`: exactly an `opaque` driver configuration.
pub fn device_configuration(config: &Value, path: &str, stored: bool) -> Vec<FieldErr> {
    let Some(opaque) = config.get("opaque").filter(|o| !o.is_null()) else {
        return vec![FieldErr::required(&format!("{path}.opaque"), "")];
    };
    let mut errs = driver_name(s(opaque, "driver"), &format!("{path}.opaque.driver"));
    errs.extend(raw_object(
        opaque.get("parameters"),
        &format!("{path}.opaque.parameters"),
        stored,
        OPAQUE_PARAMETERS_BYTES_MAX,
    ));
    errs
}

/// What a device selector may refer to (upstream's DRA environment with its default feature
/// gates: consumable capacity on, list-type attributes off, so attributes are of unknown type).
static DEVICE_ENV: LazyLock<keel_cel::Env> = LazyLock::new(|| {
    let quantity = Type::Object("kubernetes.Quantity".into());
    keel_cel::Env::default()
        .object(
            "kubernetes.DRADevice",
            &[
                ("driver", Type::String),
                ("allowMultipleAllocations", Type::Bool),
                (
                    "attributes",
                    Type::map(Type::String, Type::map(Type::String, Type::Any)),
                ),
                (
                    "capacity",
                    Type::map(Type::String, Type::map(Type::String, quantity)),
                ),
            ],
        )
        .variable("device", Type::Object("kubernetes.DRADevice".into()))
});

/// A device selector: a `cel` expression that compiles in the device environment to a
/// boolean (or an attribute, whose type is unknown until a device is seen). Upstream also
/// estimates the expression's worst-case cost and refuses one over its limit; keel does not.
pub fn selector(sel: &Value, path: &str) -> Vec<FieldErr> {
    let Some(cel) = sel.get("cel").filter(|c| !c.is_null()) else {
        return vec![FieldErr::required(&format!("{path}.cel"), "")];
    };
    let expr = s(cel, "expression");
    let field = format!("{path}.cel.expression");
    if expr.len() > CEL_EXPRESSION_BYTES_MAX {
        return vec![too_long(&field, CEL_EXPRESSION_BYTES_MAX)];
    }
    match keel_cel::compile(&DEVICE_ENV, expr) {
        Err(issues) => vec![FieldErr::invalid(
            &field,
            expr,
            &format!("compilation failed: {issues}"),
        )],
        Ok(Type::Bool | Type::Any) => Vec::new(),
        Ok(other) => vec![FieldErr::invalid(
            &field,
            expr,
            &format!(
                "must evaluate to bool or the unknown type, not {}",
                other.name()
            ),
        )],
    }
}

/// A list of at most 32 selectors.
pub fn selectors(v: Option<&Value>, path: &str) -> Vec<FieldErr> {
    list(v, Some(SELECTORS_MAX), path, selector)
}

const TAINT_EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "None"];
const TOLERATION_OPERATORS: &[&str] = &["Equal", "Exists"];

/// A device taint; with `old`, the effect is only checked when it changed.
pub fn device_taint(taint: &Value, old: Option<&Value>, path: &str) -> Vec<FieldErr> {
    let mut errs = label_name(s(taint, "key"), &format!("{path}.key"));
    let value = s(taint, "value");
    if !value.is_empty() {
        errs.extend(label_value(value, &format!("{path}.value")));
    }
    let effect = s(taint, "effect");
    if old.is_none_or(|o| s(o, "effect") != effect) {
        let field = format!("{path}.effect");
        if effect.is_empty() {
            errs.push(FieldErr::required(&field, ""));
        } else if !TAINT_EFFECTS.contains(&effect) {
            errs.push(FieldErr::not_supported(&field, effect, TAINT_EFFECTS));
        }
    }
    errs
}

/// A device toleration (after defaulting: an empty operator means `Equal`).
pub fn device_toleration(t: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let key = s(t, "key");
    if !key.is_empty() {
        errs.extend(label_name(key, &format!("{path}.key")));
    }
    let value = s(t, "value");
    match s(t, "operator") {
        "Exists" => {
            if !value.is_empty() {
                errs.push(FieldErr::invalid(
                    &format!("{path}.value"),
                    value,
                    "must be empty for operator `Exists`",
                ));
            }
        }
        "Equal" => errs.extend(label_value(value, &format!("{path}.value"))),
        "" => errs.push(FieldErr::required(&format!("{path}.operator"), "")),
        op => errs.push(FieldErr::not_supported(
            &format!("{path}.operator"),
            op,
            TOLERATION_OPERATORS,
        )),
    }
    let effect = s(t, "effect");
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        errs.push(FieldErr::not_supported(
            &format!("{path}.effect"),
            effect,
            TAINT_EFFECTS,
        ));
    }
    errs
}

/// Tolerations (upstream bounds them only in its schema docs, not in validation).
pub fn tolerations(v: Option<&Value>, path: &str) -> Vec<FieldErr> {
    list(v, None, path, device_toleration)
}

/// Go's `%#v`-free rendering of a string list as upstream prints a nil or empty slice.
fn string_list_bad(v: Option<&Value>) -> Bad {
    match v.and_then(Value::as_array) {
        Some(a) => Bad::Raw(serde_json::to_string(a).unwrap_or_default()),
        None => Bad::Raw("null".into()),
    }
}

/// `bindingConditions` and `bindingFailureConditions` of a device or allocation result.
pub fn binding_parameters(obj: &Value, path: &str) -> Vec<FieldErr> {
    let conds_path = format!("{path}.bindingConditions");
    let fails_path = format!("{path}.bindingFailureConditions");
    let mut errs = list(
        obj.get("bindingConditions"),
        Some(BINDING_CONDITIONS_MAX),
        &conds_path,
        |c, p| label_name(c.as_str().unwrap_or(""), p),
    );
    errs.extend(list(
        obj.get("bindingFailureConditions"),
        Some(BINDING_CONDITIONS_MAX),
        &fails_path,
        |c, p| label_name(c.as_str().unwrap_or(""), p),
    ));
    let conds: Vec<&str> = items(obj.get("bindingConditions"))
        .iter()
        .map(|c| c.as_str().unwrap_or(""))
        .collect();
    let fails: Vec<&str> = items(obj.get("bindingFailureConditions"))
        .iter()
        .map(|c| c.as_str().unwrap_or(""))
        .collect();
    for (i, c) in conds.iter().enumerate() {
        if conds[..i].contains(c) {
            errs.push(FieldErr::duplicate(&format!("{conds_path}[{i}]"), *c));
        }
    }
    for (i, c) in fails.iter().enumerate() {
        if fails[..i].contains(c) {
            errs.push(FieldErr::duplicate(&format!("{fails_path}[{i}]"), *c));
        }
        if conds.contains(c) {
            errs.push(FieldErr::invalid(
                &format!("{fails_path}[{i}]"),
                *c,
                "bindingFailureConditions must not overlap with bindingConditions",
            ));
        }
    }
    if conds.is_empty() && !fails.is_empty() {
        errs.push(FieldErr::invalid(
            &conds_path,
            string_list_bad(obj.get("bindingConditions")),
            "bindingConditions are required to use bindingFailureConditions",
        ));
    }
    if fails.is_empty() && !conds.is_empty() {
        errs.push(FieldErr::invalid(
            &fails_path,
            string_list_bad(obj.get("bindingFailureConditions")),
            "bindingFailureConditions are required to use bindingConditions",
        ));
    }
    errs
}

/// `ValidateNodeSelector` (core/v1) with label values checked.
pub fn node_selector(sel: &Value, path: &str) -> Vec<FieldErr> {
    let terms_path = format!("{path}.nodeSelectorTerms");
    let terms = items(sel.get("nodeSelectorTerms"));
    if terms.is_empty() {
        return vec![FieldErr::required(
            &terms_path,
            "must have at least one node selector term",
        )];
    }
    let mut errs = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let tp = format!("{terms_path}[{i}]");
        for (j, rq) in items(term.get("matchExpressions")).iter().enumerate() {
            errs.extend(node_selector_requirement(
                rq,
                &format!("{tp}.matchExpressions[{j}]"),
            ));
        }
        for (j, rq) in items(term.get("matchFields")).iter().enumerate() {
            errs.extend(node_field_requirement(
                rq,
                &format!("{tp}.matchFields[{j}]"),
            ));
        }
    }
    errs
}

fn node_selector_requirement(rq: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let values = items(rq.get("values"));
    let vp = format!("{path}.values");
    match s(rq, "operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldErr::required(
            &vp,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldErr::forbidden(
            &vp,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errs.push(FieldErr::required(
            &vp,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        op => errs.push(FieldErr::invalid(
            &format!("{path}.operator"),
            op,
            "not a valid selector operator",
        )),
    }
    errs.extend(label_name(s(rq, "key"), &format!("{path}.key")));
    for (i, v) in values.iter().enumerate() {
        errs.extend(label_value(v.as_str().unwrap_or(""), &format!("{vp}[{i}]")));
    }
    errs
}

fn node_field_requirement(rq: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let values = items(rq.get("values"));
    match s(rq, "operator") {
        "In" | "NotIn" => {
            if values.len() != 1 {
                errs.push(FieldErr::required(
                    &format!("{path}.values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        op => errs.push(FieldErr::invalid(
            &format!("{path}.operator"),
            op,
            "not a valid selector operator",
        )),
    }
    let key = s(rq, "key");
    if key != "metadata.name" {
        errs.push(FieldErr::invalid(
            &format!("{path}.key"),
            key,
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in values.iter().enumerate() {
            errs.extend(node_name(
                v.as_str().unwrap_or(""),
                &format!("{path}.values[{i}]"),
            ));
        }
    }
    errs
}

/// metav1 `ValidateConditions`: unique types, then each condition's fields.
pub fn conditions(v: Option<&Value>, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let all = items(v);
    for (i, cond) in all.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let ty = s(cond, "type");
        if all[..i].iter().any(|o| s(o, "type") == ty) {
            errs.push(FieldErr::duplicate(&format!("{p}.type"), ty));
        }
        errs.extend(label_name(ty, &format!("{p}.type")));
        let status = s(cond, "status");
        if !["False", "True", "Unknown"].contains(&status) {
            errs.push(FieldErr::not_supported(
                &format!("{p}.status"),
                status,
                &["False", "True", "Unknown"],
            ));
        }
        if let Some(g) = cond.get("observedGeneration").and_then(Value::as_i64) {
            if g < 0 {
                errs.push(FieldErr::invalid(
                    &format!("{p}.observedGeneration"),
                    g,
                    "must be greater than or equal to zero",
                ));
            }
        }
        if s(cond, "lastTransitionTime").is_empty() {
            errs.push(FieldErr::required(&format!("{p}.lastTransitionTime"), ""));
        }
        let reason = s(cond, "reason");
        let rp = format!("{p}.reason");
        if reason.is_empty() {
            errs.push(FieldErr::required(&rp, ""));
        } else {
            if !is_condition_reason(reason) {
                errs.push(FieldErr::invalid(&rp, reason, CONDITION_REASON_MSG));
            }
            if reason.len() > CONDITION_REASON_BYTES_MAX {
                errs.push(too_long(&rp, CONDITION_REASON_BYTES_MAX));
            }
        }
        if s(cond, "message").len() > CONDITION_MESSAGE_BYTES_MAX {
            errs.push(too_long(
                &format!("{p}.message"),
                CONDITION_MESSAGE_BYTES_MAX,
            ));
        }
    }
    errs
}

const CONDITION_REASON_BYTES_MAX: usize = 1024;
const CONDITION_MESSAGE_BYTES_MAX: usize = 32 * 1024;
const CONDITION_REASON_MSG: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";

/// `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`
fn is_condition_reason(r: &str) -> bool {
    let b = r.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
    let last = b[b.len() - 1];
    b[0].is_ascii_alphabetic()
        && b.iter().all(inner)
        && (b.len() == 1 || last.is_ascii_alphanumeric() || last == b'_')
}

/// A UID in RFC 4122 normalized form (`shareID`); the parse errors are those of
/// `github.com/google/uuid`'s `Validate`.
pub fn uid(value: &str, path: &str) -> Vec<FieldErr> {
    if let Err(e) = uuid_validate(value) {
        return vec![FieldErr::invalid(
            path,
            value,
            &format!("error validating uid: {e}"),
        )];
    }
    if value.len() != 36 || value != value.to_lowercase() {
        return vec![FieldErr::invalid(path, value, "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters")];
    }
    Vec::new()
}

fn uuid_validate(value: &str) -> Result<(), String> {
    let b = value.as_bytes();
    let hex_pairs = |s: &[u8], at: &[usize]| {
        at.iter()
            .all(|i| s[*i].is_ascii_hexdigit() && s[*i + 1].is_ascii_hexdigit())
    };
    let s: &[u8] = match b.len() {
        36 => b,
        45 => {
            let prefix = &value[..9];
            if !prefix.eq_ignore_ascii_case("urn:uuid:") {
                return Err(format!(
                    "invalid urn prefix: {}",
                    crate::errors::quote(prefix)
                ));
            }
            &b[9..]
        }
        // Braced form: upstream drops the first byte only, so no further checks apply.
        38 => return Ok(()),
        32 => {
            let pairs: Vec<usize> = (0..32).step_by(2).collect();
            return if hex_pairs(b, &pairs) {
                Ok(())
            } else {
                Err("invalid UUID format".into())
            };
        }
        n => return Err(format!("invalid UUID length: {n}")),
    };
    let dashes = s[8] == b'-' && s[13] == b'-' && s[18] == b'-' && s[23] == b'-';
    let pairs = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    if dashes && hex_pairs(s, &pairs) {
        Ok(())
    } else {
        Err("invalid UUID format".into())
    }
}

/// An interface address in CIDR form (`networkData.ips`), canonical as Go prints it.
pub fn interface_address(value: &str, path: &str) -> Vec<FieldErr> {
    let parsed = value.split_once('/').and_then(|(ip, bits)| {
        let ip: std::net::IpAddr = ip.parse().ok()?;
        let ok_digits = !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit());
        let bits: u32 = bits.parse().ok().filter(|_| ok_digits)?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        (bits <= max).then_some((ip, bits))
    });
    let Some((ip, bits)) = parsed else {
        return vec![FieldErr::invalid(
            path,
            value,
            "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
        )];
    };
    // Go prints an IPv4-mapped IPv6 address as IPv4, its prefix shortened to match.
    let canonical = match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) if bits > 32 => format!("{v4}/{}", bits - 96),
            Some(v4) => format!("{v4}/{bits}"),
            None => format!("{v6}/{bits}"),
        },
        std::net::IpAddr::V4(v4) => format!("{v4}/{bits}"),
    };
    if canonical == value {
        return Vec::new();
    }
    let detail = format!(
        "must be in canonical form ({})",
        crate::errors::quote(&canonical)
    );
    vec![FieldErr::invalid(path, value, &detail)]
}
