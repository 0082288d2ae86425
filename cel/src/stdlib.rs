//! The functions an expression may call: CEL's standard library and the libraries upstream's
//! API server adds to every environment (its base environment as of v1.36: URLs, regex,
//! lists, authorization, quantity, IP/CIDR, format, semver, cel-go's strings v2, sets,
//! two-variable comprehensions, lists v3, bindings, optional types, cross-type numeric
//! comparisons). Signatures follow upstream's declarations; functions whose overloads are
//! many or generic enough that a narrow table here could reject a valid call (the
//! authorization checks, `flatten`, the optional helpers) are declared loosely: any
//! arguments, a `dyn` result.

use crate::types::{parse, Type};
use std::collections::HashMap;
use std::sync::LazyLock;

#[derive(Debug)]
pub struct Overload {
    pub member: bool,
    pub params: Vec<Type>,
    pub result: Type,
}

#[derive(Debug)]
pub enum Function {
    Typed(Vec<Overload>),
    /// Declared, arguments checked, result `dyn`.
    Loose,
    /// A macro of upstream's parser this one lacks: arguments bind names, so they are not
    /// checked; result `dyn`.
    Unchecked,
}

/// (name, "member"/"global", params, result); `_` marks an overload as both.
type Decl = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
);

const NUMERIC_COMPARE: &[(&str, &str)] = &[
    ("bool", "bool"),
    ("int", "int"),
    ("uint", "uint"),
    ("double", "double"),
    ("string", "string"),
    ("bytes", "bytes"),
    ("timestamp", "timestamp"),
    ("duration", "duration"),
    ("int", "uint"),
    ("int", "double"),
    ("uint", "int"),
    ("uint", "double"),
    ("double", "int"),
    ("double", "uint"),
];

const DECLS: &[Decl] = &[
    ("!_", "global", &["bool"], "bool"),
    ("-_", "global", &["int"], "int"),
    ("-_", "global", &["double"], "double"),
    ("_&&_", "global", &["bool", "bool"], "bool"),
    ("_||_", "global", &["bool", "bool"], "bool"),
    ("_?_:_", "global", &["bool", "A", "A"], "A"),
    ("_==_", "global", &["A", "A"], "bool"),
    ("_!=_", "global", &["A", "A"], "bool"),
    ("@not_strictly_false", "global", &["bool"], "bool"),
    ("_+_", "global", &["int", "int"], "int"),
    ("_+_", "global", &["uint", "uint"], "uint"),
    ("_+_", "global", &["double", "double"], "double"),
    ("_+_", "global", &["string", "string"], "string"),
    ("_+_", "global", &["bytes", "bytes"], "bytes"),
    ("_+_", "global", &["list(A)", "list(A)"], "list(A)"),
    ("_+_", "global", &["timestamp", "duration"], "timestamp"),
    ("_+_", "global", &["duration", "timestamp"], "timestamp"),
    ("_+_", "global", &["duration", "duration"], "duration"),
    ("_-_", "global", &["int", "int"], "int"),
    ("_-_", "global", &["uint", "uint"], "uint"),
    ("_-_", "global", &["double", "double"], "double"),
    ("_-_", "global", &["timestamp", "timestamp"], "duration"),
    ("_-_", "global", &["timestamp", "duration"], "timestamp"),
    ("_-_", "global", &["duration", "duration"], "duration"),
    ("_*_", "global", &["int", "int"], "int"),
    ("_*_", "global", &["uint", "uint"], "uint"),
    ("_*_", "global", &["double", "double"], "double"),
    ("_/_", "global", &["int", "int"], "int"),
    ("_/_", "global", &["uint", "uint"], "uint"),
    ("_/_", "global", &["double", "double"], "double"),
    ("_%_", "global", &["int", "int"], "int"),
    ("_%_", "global", &["uint", "uint"], "uint"),
    ("_[_]", "global", &["list(A)", "int"], "A"),
    ("_[_]", "global", &["map(K, V)", "K"], "V"),
    ("_[?_]", "global", &["list(A)", "int"], "opt(A)"),
    ("_[?_]", "global", &["map(K, V)", "K"], "opt(V)"),
    ("_[?_]", "global", &["opt(list(A))", "int"], "opt(A)"),
    ("_[?_]", "global", &["opt(map(K, V))", "K"], "opt(V)"),
    ("@in", "global", &["A", "list(A)"], "bool"),
    ("@in", "global", &["A", "map(A, B)"], "bool"),
    ("size", "_", &["string"], "int"),
    ("size", "_", &["bytes"], "int"),
    ("size", "_", &["list(A)"], "int"),
    ("size", "_", &["map(K, V)"], "int"),
    ("contains", "member", &["string", "string"], "bool"),
    ("startsWith", "member", &["string", "string"], "bool"),
    ("endsWith", "member", &["string", "string"], "bool"),
    ("matches", "_", &["string", "string"], "bool"),
    ("int", "global", &["int"], "int"),
    ("int", "global", &["uint"], "int"),
    ("int", "global", &["double"], "int"),
    ("int", "global", &["string"], "int"),
    ("int", "global", &["timestamp"], "int"),
    ("int", "global", &["duration"], "int"),
    ("uint", "global", &["uint"], "uint"),
    ("uint", "global", &["int"], "uint"),
    ("uint", "global", &["double"], "uint"),
    ("uint", "global", &["string"], "uint"),
    ("double", "global", &["double"], "double"),
    ("double", "global", &["int"], "double"),
    ("double", "global", &["uint"], "double"),
    ("double", "global", &["string"], "double"),
    ("string", "global", &["string"], "string"),
    ("string", "global", &["int"], "string"),
    ("string", "global", &["uint"], "string"),
    ("string", "global", &["double"], "string"),
    ("string", "global", &["bool"], "string"),
    ("string", "global", &["bytes"], "string"),
    ("string", "global", &["timestamp"], "string"),
    ("string", "global", &["duration"], "string"),
    ("string", "global", &["IP"], "string"),
    ("string", "global", &["CIDR"], "string"),
    ("bytes", "global", &["bytes"], "bytes"),
    ("bytes", "global", &["string"], "bytes"),
    ("bool", "global", &["bool"], "bool"),
    ("bool", "global", &["string"], "bool"),
    ("dyn", "global", &["A"], "dyn"),
    ("type", "global", &["A"], "type(A)"),
    ("duration", "global", &["duration"], "duration"),
    ("duration", "global", &["string"], "duration"),
    ("timestamp", "global", &["timestamp"], "timestamp"),
    ("timestamp", "global", &["string"], "timestamp"),
    ("timestamp", "global", &["int"], "timestamp"),
    // Optional types.
    ("optional.of", "global", &["A"], "opt(A)"),
    ("optional.ofNonZeroValue", "global", &["A"], "opt(A)"),
    ("optional.none", "global", &[], "opt(A)"),
    ("value", "member", &["opt(A)"], "A"),
    ("hasValue", "member", &["opt(A)"], "bool"),
    ("or", "member", &["opt(A)", "opt(A)"], "opt(A)"),
    ("orValue", "member", &["opt(A)", "A"], "A"),
    // URLs.
    ("url", "global", &["string"], "URL"),
    ("isURL", "global", &["string"], "bool"),
    ("getScheme", "member", &["URL"], "string"),
    ("getHost", "member", &["URL"], "string"),
    ("getHostname", "member", &["URL"], "string"),
    ("getPort", "member", &["URL"], "string"),
    ("getEscapedPath", "member", &["URL"], "string"),
    ("getQuery", "member", &["URL"], "map(string, list(string))"),
    // Regex.
    ("find", "member", &["string", "string"], "string"),
    ("findAll", "member", &["string", "string"], "list(string)"),
    (
        "findAll",
        "member",
        &["string", "string", "int"],
        "list(string)",
    ),
    // Lists (upstream declares these per comparable/summable type; a parameter admits them
    // all).
    ("isSorted", "member", &["list(A)"], "bool"),
    ("sum", "member", &["list(A)"], "A"),
    ("min", "member", &["list(A)"], "A"),
    ("max", "member", &["list(A)"], "A"),
    ("indexOf", "member", &["list(A)", "A"], "int"),
    ("lastIndexOf", "member", &["list(A)", "A"], "int"),
    // Quantity.
    ("quantity", "global", &["string"], "Quantity"),
    ("isQuantity", "global", &["string"], "bool"),
    ("sign", "member", &["Quantity"], "int"),
    ("isInteger", "member", &["Quantity"], "bool"),
    ("asInteger", "member", &["Quantity"], "int"),
    ("asApproximateFloat", "member", &["Quantity"], "double"),
    ("add", "member", &["Quantity", "Quantity"], "Quantity"),
    ("add", "member", &["Quantity", "int"], "Quantity"),
    ("sub", "member", &["Quantity", "Quantity"], "Quantity"),
    ("sub", "member", &["Quantity", "int"], "Quantity"),
    ("isLessThan", "member", &["Quantity", "Quantity"], "bool"),
    ("isGreaterThan", "member", &["Quantity", "Quantity"], "bool"),
    ("compareTo", "member", &["Quantity", "Quantity"], "int"),
    // Semver.
    ("semver", "global", &["string"], "Semver"),
    ("semver", "global", &["string", "bool"], "Semver"),
    ("isSemver", "global", &["string"], "bool"),
    ("isSemver", "global", &["string", "bool"], "bool"),
    ("major", "member", &["Semver"], "int"),
    ("minor", "member", &["Semver"], "int"),
    ("patch", "member", &["Semver"], "int"),
    ("isLessThan", "member", &["Semver", "Semver"], "bool"),
    ("isGreaterThan", "member", &["Semver", "Semver"], "bool"),
    ("compareTo", "member", &["Semver", "Semver"], "int"),
    // IP and CIDR.
    ("ip", "global", &["string"], "IP"),
    ("isIP", "global", &["string"], "bool"),
    ("ip.isCanonical", "global", &["string"], "bool"),
    ("family", "member", &["IP"], "int"),
    ("isUnspecified", "member", &["IP"], "bool"),
    ("isLoopback", "member", &["IP"], "bool"),
    ("isLinkLocalMulticast", "member", &["IP"], "bool"),
    ("isLinkLocalUnicast", "member", &["IP"], "bool"),
    ("isGlobalUnicast", "member", &["IP"], "bool"),
    ("cidr", "global", &["string"], "CIDR"),
    ("isCIDR", "global", &["string"], "bool"),
    ("containsIP", "member", &["CIDR", "string"], "bool"),
    ("containsIP", "member", &["CIDR", "IP"], "bool"),
    ("containsCIDR", "member", &["CIDR", "string"], "bool"),
    ("containsCIDR", "member", &["CIDR", "CIDR"], "bool"),
    ("ip", "member", &["CIDR"], "IP"),
    ("masked", "member", &["CIDR"], "CIDR"),
    ("prefixLength", "member", &["CIDR"], "int"),
    // Format.
    ("format.named", "global", &["string"], "opt(Format)"),
    (
        "validate",
        "member",
        &["Format", "string"],
        "opt(list(string))",
    ),
    // Strings (cel-go ext, version 2).
    ("charAt", "member", &["string", "int"], "string"),
    ("indexOf", "member", &["string", "string"], "int"),
    ("indexOf", "member", &["string", "string", "int"], "int"),
    ("lastIndexOf", "member", &["string", "string"], "int"),
    ("lastIndexOf", "member", &["string", "string", "int"], "int"),
    ("lowerAscii", "member", &["string"], "string"),
    ("upperAscii", "member", &["string"], "string"),
    (
        "replace",
        "member",
        &["string", "string", "string"],
        "string",
    ),
    (
        "replace",
        "member",
        &["string", "string", "string", "int"],
        "string",
    ),
    ("split", "member", &["string", "string"], "list(string)"),
    (
        "split",
        "member",
        &["string", "string", "int"],
        "list(string)",
    ),
    ("substring", "member", &["string", "int"], "string"),
    ("substring", "member", &["string", "int", "int"], "string"),
    ("trim", "member", &["string"], "string"),
    ("join", "member", &["list(string)"], "string"),
    ("join", "member", &["list(string)", "string"], "string"),
    ("strings.quote", "global", &["string"], "string"),
    ("reverse", "member", &["string"], "string"),
    ("format", "member", &["string", "list(dyn)"], "string"),
    // Sets.
    ("sets.contains", "global", &["list(A)", "list(A)"], "bool"),
    ("sets.equivalent", "global", &["list(A)", "list(A)"], "bool"),
    ("sets.intersects", "global", &["list(A)", "list(A)"], "bool"),
    // Lists (cel-go ext, version 3).
    ("lists.range", "global", &["int"], "list(int)"),
    ("slice", "member", &["list(A)", "int", "int"], "list(A)"),
    ("sort", "member", &["list(A)"], "list(A)"),
    ("distinct", "member", &["list(A)"], "list(A)"),
    ("reverse", "member", &["list(A)"], "list(A)"),
    // What the two-variable comprehensions expand to.
    (
        "cel.@mapInsert",
        "global",
        &["map(K, V)", "K", "V"],
        "map(K, V)",
    ),
    (
        "cel.@mapInsert",
        "global",
        &["map(K, V)", "map(K, V)"],
        "map(K, V)",
    ),
];

/// Timestamp and duration accessors: on a timestamp with an optional time zone, on a
/// duration for the units it has.
const TIME_GETTERS: &[&str] = &[
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
];

const LOOSE: &[&str] = &[
    // Authorization (its checks chain on types only the admission environments declare).
    "path",
    "group",
    "resource",
    "subresource",
    "namespace",
    "name",
    "check",
    "allowed",
    "reason",
    "error",
    "errored",
    "serviceAccount",
    "fieldSelector",
    "labelSelector",
    "flatten",
    "@sortByAssociatedKeys",
    "cel.@block",
];

/// Macros cel-go's parser expands and this one does not.
const UNCHECKED: &[&str] = &["optMap", "optFlatMap", "sortBy"];

/// The names of the `format` library's formats.
pub(crate) const FORMATS: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

pub static FUNCTIONS: LazyLock<HashMap<String, Function>> = LazyLock::new(|| {
    let mut typed: HashMap<String, Vec<Overload>> = HashMap::new();
    let mut add = |name: &str, member: bool, params: Vec<Type>, result: Type| {
        typed.entry(name.to_string()).or_default().push(Overload {
            member,
            params,
            result,
        });
    };
    for (name, style, params, result) in DECLS {
        let params: Vec<Type> = params.iter().map(|p| parse(p)).collect();
        let result = parse(result);
        if *style != "member" {
            add(name, false, params.clone(), result.clone());
        }
        if *style != "global" {
            add(name, true, params, result);
        }
    }
    for (l, r) in NUMERIC_COMPARE {
        for op in ["_<_", "_<=_", "_>_", "_>=_"] {
            add(op, false, vec![parse(l), parse(r)], Type::Bool);
        }
    }
    for getter in TIME_GETTERS {
        add(getter, true, vec![Type::Timestamp], Type::Int);
        add(getter, true, vec![Type::Timestamp, Type::String], Type::Int);
    }
    for getter in ["getHours", "getMinutes", "getSeconds", "getMilliseconds"] {
        add(getter, true, vec![Type::Duration], Type::Int);
    }
    for format in FORMATS {
        add(&format!("format.{format}"), false, vec![], parse("Format"));
    }
    let mut all: HashMap<String, Function> = typed
        .into_iter()
        .map(|(k, v)| (k, Function::Typed(v)))
        .collect();
    for name in LOOSE {
        all.insert(name.to_string(), Function::Loose);
    }
    for name in UNCHECKED {
        all.insert(name.to_string(), Function::Unchecked);
    }
    all
});

/// Identifiers that name types (`type(x) == int`).
pub fn type_ident(name: &str) -> Option<Type> {
    let t = match name {
        "bool" => Type::Bool,
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null_type" => Type::Null,
        "list" => Type::list(Type::Dyn),
        "map" => Type::map(Type::Dyn, Type::Dyn),
        "type" => Type::TypeOf(None),
        "dyn" => Type::Dyn,
        "google.protobuf.Duration" => Type::Duration,
        "google.protobuf.Timestamp" => Type::Timestamp,
        _ => return None,
    };
    Some(Type::TypeOf(Some(Box::new(t))))
}
