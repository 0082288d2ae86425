//! How upstream prints an immutable DRA value in `field is immutable`: Go's `json.Marshal`
//! of the *internal* type, which has no JSON tags, so every field appears under its Go name,
//! unset ones as `""`, `0`, `null`. The layouts below follow
//! `pkg/apis/resource/types.go` (v1.36) field by field; the JSON input is the v1 object.

use serde_json::Value;

/// The shape of one internal field.
enum T {
    Str,
    Int,
    /// `*T` of a scalar: `null` when unset, else the scalar as given.
    Scalar,
    /// A struct value (never null).
    Struct(&'static [F]),
    /// `*Struct`.
    Ptr(&'static [F]),
    /// `[]T`: `null` when unset.
    List(&'static T),
    /// `map[string]T` (keys sorted, as Go does): `null` when unset.
    Map(&'static T),
    /// `runtime.RawExtension`: the JSON as given, `null` when unset.
    Raw,
}

/// A field: Go name, v1 JSON name (empty: an inline struct whose fields are promoted), shape.
struct F(&'static str, &'static str, T);

const STRINGS: T = T::List(&T::Str);

const TOLERATION: &[F] = &[
    F("Key", "key", T::Str),
    F("Operator", "operator", T::Str),
    F("Value", "value", T::Str),
    F("Effect", "effect", T::Str),
    F("TolerationSeconds", "tolerationSeconds", T::Scalar),
];
const CEL: &[F] = &[F("Expression", "expression", T::Str)];
const SELECTOR: &[F] = &[F("CEL", "cel", T::Ptr(CEL))];
const CAPACITY: &[F] = &[F("Requests", "requests", T::Map(&T::Scalar))];
const EXACT: &[F] = &[
    F("DeviceClassName", "deviceClassName", T::Str),
    F("Selectors", "selectors", T::List(&T::Struct(SELECTOR))),
    F("AllocationMode", "allocationMode", T::Str),
    F("Count", "count", T::Int),
    F("AdminAccess", "adminAccess", T::Scalar),
    F(
        "Tolerations",
        "tolerations",
        T::List(&T::Struct(TOLERATION)),
    ),
    F("Capacity", "capacity", T::Ptr(CAPACITY)),
];
const SUB: &[F] = &[
    F("Name", "name", T::Str),
    F("DeviceClassName", "deviceClassName", T::Str),
    F("Selectors", "selectors", T::List(&T::Struct(SELECTOR))),
    F("AllocationMode", "allocationMode", T::Str),
    F("Count", "count", T::Int),
    F(
        "Tolerations",
        "tolerations",
        T::List(&T::Struct(TOLERATION)),
    ),
    F("Capacity", "capacity", T::Ptr(CAPACITY)),
];
const REQUEST: &[F] = &[
    F("Name", "name", T::Str),
    F("Exactly", "exactly", T::Ptr(EXACT)),
    F("FirstAvailable", "firstAvailable", T::List(&T::Struct(SUB))),
];
const CONSTRAINT: &[F] = &[
    F("Requests", "requests", STRINGS),
    F("MatchAttribute", "matchAttribute", T::Scalar),
    F("DistinctAttribute", "distinctAttribute", T::Scalar),
];
const OPAQUE: &[F] = &[
    F("Driver", "driver", T::Str),
    F("Parameters", "parameters", T::Raw),
];
const CLAIM_CONFIG: &[F] = &[
    F("Requests", "requests", STRINGS),
    F("Opaque", "opaque", T::Ptr(OPAQUE)),
];
const DEVICE_CLAIM: &[F] = &[
    F("Requests", "requests", T::List(&T::Struct(REQUEST))),
    F(
        "Constraints",
        "constraints",
        T::List(&T::Struct(CONSTRAINT)),
    ),
    F("Config", "config", T::List(&T::Struct(CLAIM_CONFIG))),
];
const CLAIM_SPEC: &[F] = &[F("Devices", "devices", T::Struct(DEVICE_CLAIM))];

const NODE_REQUIREMENT: &[F] = &[
    F("Key", "key", T::Str),
    F("Operator", "operator", T::Str),
    F("Values", "values", STRINGS),
];
const NODE_TERM: &[F] = &[
    F(
        "MatchExpressions",
        "matchExpressions",
        T::List(&T::Struct(NODE_REQUIREMENT)),
    ),
    F(
        "MatchFields",
        "matchFields",
        T::List(&T::Struct(NODE_REQUIREMENT)),
    ),
];
const NODE_SELECTOR: &[F] = &[F(
    "NodeSelectorTerms",
    "nodeSelectorTerms",
    T::List(&T::Struct(NODE_TERM)),
)];
const RESULT: &[F] = &[
    F("Request", "request", T::Str),
    F("Driver", "driver", T::Str),
    F("Pool", "pool", T::Str),
    F("Device", "device", T::Str),
    F("AdminAccess", "adminAccess", T::Scalar),
    F(
        "Tolerations",
        "tolerations",
        T::List(&T::Struct(TOLERATION)),
    ),
    F("BindingConditions", "bindingConditions", STRINGS),
    F(
        "BindingFailureConditions",
        "bindingFailureConditions",
        STRINGS,
    ),
    F("ShareID", "shareID", T::Scalar),
    F("ConsumedCapacity", "consumedCapacity", T::Map(&T::Scalar)),
];
const ALLOCATION_CONFIG: &[F] = &[
    F("Source", "source", T::Str),
    F("Requests", "requests", STRINGS),
    F("Opaque", "opaque", T::Ptr(OPAQUE)),
];
const DEVICE_ALLOCATION: &[F] = &[
    F("Results", "results", T::List(&T::Struct(RESULT))),
    F("Config", "config", T::List(&T::Struct(ALLOCATION_CONFIG))),
];
const ALLOCATION: &[F] = &[
    F("Devices", "devices", T::Struct(DEVICE_ALLOCATION)),
    F("NodeSelector", "nodeSelector", T::Ptr(NODE_SELECTOR)),
    F("AllocationTimestamp", "allocationTimestamp", T::Scalar),
];

/// Go's JSON string encoding (HTML-safe: `<`, `>`, `&` and U+2028/9 escaped; `\b`/`\f` as
/// `\u0008`/`\u000c`, as these messages always printed them).
fn go_string(s: &str, out: &mut String) {
    keel_api::gofmt::json_string_to(out, s, keel_api::gofmt::JsonEscape::PreGo122);
}

/// A JSON value as Go's encoder prints a decoded one (compact, keys in input order for raw
/// values, sorted for maps). Numbers print as given (serde_json's text), not as Go's
/// `float64`: a `RawExtension` is echoed as its bytes.
fn go_value(v: &Value, sort: bool, out: &mut String) {
    let style = keel_api::gofmt::JsonStyle {
        numbers: |out, n| out.push_str(&n.to_string()),
        escape: keel_api::gofmt::JsonEscape::PreGo122,
        sort_keys: sort,
        depth_max: usize::MAX,
    };
    keel_api::gofmt::json_to(out, v, style);
}

fn render(t: &T, v: Option<&Value>, out: &mut String) {
    let v = v.filter(|x| !x.is_null());
    match t {
        T::Str => go_string(v.and_then(Value::as_str).unwrap_or(""), out),
        T::Int => out.push_str(&v.and_then(Value::as_i64).unwrap_or(0).to_string()),
        T::Scalar | T::Raw => match v {
            Some(x) => go_value(x, false, out),
            None => out.push_str("null"),
        },
        T::Struct(fields) => fields_of(fields, v.unwrap_or(&Value::Null), out),
        T::Ptr(fields) => match v {
            Some(x) => fields_of(fields, x, out),
            None => out.push_str("null"),
        },
        T::List(item) => match v.and_then(Value::as_array) {
            Some(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    render(item, Some(x), out);
                }
                out.push(']');
            }
            None => out.push_str("null"),
        },
        T::Map(item) => match v.and_then(Value::as_object) {
            Some(m) => {
                let escape = keel_api::gofmt::JsonEscape::PreGo122;
                keel_api::gofmt::json_object_to(out, m, escape, true, |out, x| {
                    render(item, Some(x), out)
                });
            }
            None => out.push_str("null"),
        },
    }
}

fn fields_of(fields: &[F], v: &Value, out: &mut String) {
    out.push('{');
    for (i, F(go, json, t)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        go_string(go, out);
        out.push(':');
        render(t, v.get(*json), out);
    }
    out.push('}');
}

fn of(fields: &[F], v: &Value) -> String {
    let mut out = String::new();
    fields_of(fields, v, &mut out);
    out
}

/// A claim's `spec` as upstream prints it.
pub fn claim_spec(spec: &Value) -> String {
    of(CLAIM_SPEC, spec)
}

/// A claim's `status.allocation` as upstream prints it.
pub fn allocation(a: &Value) -> String {
    of(ALLOCATION, a)
}

/// A template's `spec`: its embedded `ObjectMeta` (JSON-tagged, promoted) and `Spec`.
pub fn template_spec(spec: &Value) -> String {
    let meta = spec.get("metadata").unwrap_or(&Value::Null);
    let mut out = String::from("{");
    for key in keel_api::meta::OBJECT_META_ORDER {
        let v = meta.get(*key).filter(|v| !v.is_null());
        let empty = match v {
            None => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        };
        if !empty {
            go_string(key, &mut out);
            out.push(':');
            go_value(v.unwrap_or(&Value::Null), true, &mut out);
            out.push(',');
        }
    }
    out.push_str("\"Spec\":");
    out.push_str(&claim_spec(spec.get("spec").unwrap_or(&Value::Null)));
    out.push('}');
    out
}

const ATTRIBUTE: &[F] = &[
    F("IntValue", "int", T::Scalar),
    F("BoolValue", "bool", T::Scalar),
    F("StringValue", "string", T::Scalar),
    F("VersionValue", "version", T::Scalar),
    F("IntValues", "ints", T::List(&T::Scalar)),
    F("BoolValues", "bools", T::List(&T::Scalar)),
    F("StringValues", "strings", STRINGS),
    F("VersionValues", "versions", STRINGS),
];

/// A device attribute as upstream prints it.
pub fn attribute(a: &Value) -> String {
    of(ATTRIBUTE, a)
}

/// A scalar or list as Go prints a decoded value (a pointer's target, a slice).
pub fn value(v: Option<&Value>) -> String {
    let mut out = String::new();
    render(&T::Scalar, v, &mut out);
    out
}

/// A node selector's `nodeSelectorTerms` as upstream prints them.
pub fn node_terms(terms: Option<&Value>) -> String {
    let mut out = String::new();
    render(&T::List(&T::Struct(NODE_TERM)), terms, &mut out);
    out
}
