//! CEL types as the checker sees them, their two textual forms (the checker's messages and a
//! type's own name), and assignability with type parameters bound as checking goes.

use std::collections::HashMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Type {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    /// Statically unknown: anything goes.
    Dyn,
    /// `google.protobuf.Any`: also unknown, but not a comprehension range.
    Any,
    /// The type of an expression that failed to check (no further errors about it).
    Error,
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// A type value (`type(x)`, `int`); `None` for `type` itself.
    TypeOf(Option<Box<Type>>),
    /// A named object (message) type: declared objects and upstream's library types
    /// (`kubernetes.Quantity`...).
    Object(String),
    /// A named opaque type with parameters (`optional_type(int)`, `net.IP`).
    Opaque(String, Vec<Type>),
    /// A type parameter, bound while an overload is resolved.
    Param(String),
}

impl Type {
    pub fn list(elem: Type) -> Type {
        Type::List(Box::new(elem))
    }

    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Box::new(key), Box::new(value))
    }

    pub fn optional(t: Type) -> Type {
        Type::Opaque(OPTIONAL.into(), vec![t])
    }

    pub fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn | Type::Any)
    }

    pub fn is_dyn_or_error(&self) -> bool {
        self.is_dyn() || *self == Type::Error
    }

    /// The inner type of an `optional_type(T)`.
    pub fn unwrap_optional(&self) -> Option<&Type> {
        match self {
            Type::Opaque(name, params) if name == OPTIONAL && params.len() == 1 => Some(&params[0]),
            _ => None,
        }
    }

    fn params(&self) -> Vec<&Type> {
        match self {
            Type::List(e) => vec![e],
            Type::Map(k, v) => vec![k, v],
            Type::TypeOf(Some(t)) => vec![t],
            Type::Opaque(_, p) => p.iter().collect(),
            _ => vec![],
        }
    }

    /// The type's own name (cel-go's `Type.String()`), as a compiled expression's output type
    /// is reported.
    pub fn name(&self) -> String {
        self.render(true)
    }

    fn render(&self, own_name: bool) -> String {
        let simple = match self {
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Uint => "uint",
            Type::Double => "double",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::Dyn => "dyn",
            Type::Error => "!error!",
            Type::Null if own_name => "null_type",
            Type::Null => "null",
            Type::Duration if own_name => "google.protobuf.Duration",
            Type::Duration => "duration",
            Type::Timestamp if own_name => "google.protobuf.Timestamp",
            Type::Timestamp => "timestamp",
            Type::Any if own_name => "google.protobuf.Any",
            Type::Any => "any",
            Type::TypeOf(None) => "type",
            Type::Object(name) | Type::Param(name) => return name.clone(),
            Type::Opaque(name, p) if p.is_empty() => return name.clone(),
            Type::List(_) | Type::Map(..) | Type::TypeOf(Some(_)) | Type::Opaque(..) => {
                let head = match self {
                    Type::List(_) => "list",
                    Type::Map(..) => "map",
                    Type::TypeOf(_) => "type",
                    Type::Opaque(name, _) => name,
                    _ => unreachable!(),
                };
                let params: Vec<String> =
                    self.params().iter().map(|p| p.render(own_name)).collect();
                return format!("{head}({})", params.join(", "));
            }
        };
        simple.to_string()
    }
}

/// As the checker's messages name a type (cel-go's `FormatCELType`).
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}

pub const OPTIONAL: &str = "optional_type";

/// Bindings of type parameters, made while checking one expression.
#[derive(Clone, Debug, Default)]
pub struct Mapping(HashMap<String, Type>);

impl Mapping {
    fn find(&self, t: &Type) -> Option<&Type> {
        match t {
            Type::Param(name) => self.0.get(name),
            _ => None,
        }
    }

    fn add(&mut self, param: &Type, t: Type) {
        if let Type::Param(name) = param {
            self.0.insert(name.clone(), t);
        }
    }

    /// `t` with every bound parameter replaced; unbound ones become `dyn` when `params_to_dyn`.
    pub fn substitute(&self, t: &Type, params_to_dyn: bool) -> Type {
        if let Some(sub) = self.find(t) {
            return self.substitute(sub, params_to_dyn);
        }
        match t {
            Type::Param(_) if params_to_dyn => Type::Dyn,
            Type::List(e) => Type::list(self.substitute(e, params_to_dyn)),
            Type::Map(k, v) => Type::map(
                self.substitute(k, params_to_dyn),
                self.substitute(v, params_to_dyn),
            ),
            Type::TypeOf(Some(p)) => {
                Type::TypeOf(Some(Box::new(self.substitute(p, params_to_dyn))))
            }
            Type::Opaque(name, p) => Type::Opaque(
                name.clone(),
                p.iter()
                    .map(|p| self.substitute(p, params_to_dyn))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Whether a value of `value` can be given where `target` is expected, binding parameters
    /// on success (the mapping is left as it was on failure).
    pub fn assign(&mut self, target: &Type, value: &Type) -> bool {
        let mut trial = self.clone();
        if trial.assignable(target, value) {
            *self = trial;
            true
        } else {
            false
        }
    }

    pub fn assign_all(&mut self, targets: &[Type], values: &[Type]) -> bool {
        let mut trial = self.clone();
        if targets.len() == values.len()
            && targets
                .iter()
                .zip(values)
                .all(|(t, v)| trial.assignable(t, v))
        {
            *self = trial;
            true
        } else {
            false
        }
    }

    fn assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        if matches!(t2, Type::Param(_)) {
            let (valid, bound) = self.substitution(t1, t2);
            if valid {
                return true;
            }
            if bound {
                return false;
            }
        }
        if matches!(t1, Type::Param(_)) {
            return self.substitution(t2, t1).0;
        }
        if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
            return true;
        }
        if *t1 == Type::Null {
            return nullable(t2);
        }
        if *t2 == Type::Null {
            return nullable(t1);
        }
        match (t1, t2) {
            (Type::TypeOf(_), Type::TypeOf(_)) => true,
            (Type::List(a), Type::List(b)) => self.assignable(a, b),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                self.assignable(k1, k2) && self.assignable(v1, v2)
            }
            (Type::Opaque(n1, p1), Type::Opaque(n2, p2)) => {
                n1 == n2
                    && p1.len() == p2.len()
                    && p1.iter().zip(p2).all(|(a, b)| self.assignable(a, b))
            }
            _ => t1 == t2,
        }
    }

    /// Binds parameter `param` to `t` if it can be; (valid, whether it was already bound).
    fn substitution(&mut self, t: &Type, param: &Type) -> (bool, bool) {
        if t == param {
            return (true, true);
        }
        if let Some(sub) = self.find(param).cloned() {
            if *t == sub {
                return (true, true);
            }
            if self.assignable(t, &sub) {
                let general = most_general(t, &sub);
                if self.not_referenced_in(param, &general) {
                    self.add(param, general);
                }
                return (true, true);
            }
            return (false, true);
        }
        if self.not_referenced_in(param, t) {
            self.add(param, t.clone());
            return (true, false);
        }
        (false, false)
    }

    fn not_referenced_in(&self, param: &Type, within: &Type) -> bool {
        if param == within {
            return false;
        }
        match within {
            Type::Param(_) => match self.find(within) {
                Some(sub) => self.not_referenced_in(param, sub),
                None => true,
            },
            _ => within
                .params()
                .iter()
                .all(|p| self.not_referenced_in(param, p)),
        }
    }
}

fn nullable(t: &Type) -> bool {
    matches!(
        t,
        Type::Null
            | Type::Opaque(..)
            | Type::Object(_)
            | Type::Any
            | Type::Duration
            | Type::Timestamp
    )
}

/// Of two assignable types, the less specific (`dyn` over `int`).
pub fn most_general(t1: &Type, t2: &Type) -> Type {
    if less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

fn less_specific(t1: &Type, t2: &Type) -> bool {
    if t1.is_dyn() || matches!(t1, Type::Param(_)) {
        return true;
    }
    if t2.is_dyn() || matches!(t2, Type::Param(_)) {
        return false;
    }
    match (t1, t2) {
        (Type::Opaque(n1, p1), Type::Opaque(n2, p2)) => {
            n1 == n2 && p1.len() == p2.len() && p1.iter().zip(p2).all(|(a, b)| less_specific(a, b))
        }
        (Type::List(a), Type::List(b)) => less_specific(a, b),
        (Type::Map(k1, v1), Type::Map(k2, v2)) => less_specific(k1, k2) && less_specific(v1, v2),
        (Type::TypeOf(_), Type::TypeOf(_)) => true,
        _ => t1 == t2,
    }
}

/// Parses the declaration shorthand of `stdlib`: `int`, `list(A)`, `map(K, V)`, `opt(A)`,
/// single capitals for type parameters, library type names.
pub fn parse(s: &str) -> Type {
    let s = s.trim();
    if let Some(open) = s.find('(') {
        let head = &s[..open];
        let inner = &s[open + 1..s.len() - 1];
        let args = split_top(inner);
        return match head {
            "list" => Type::list(parse(args[0])),
            "map" => Type::map(parse(args[0]), parse(args[1])),
            "type" => Type::TypeOf(Some(Box::new(parse(args[0])))),
            "opt" => Type::optional(parse(args[0])),
            _ => panic!("unknown type constructor {head}"),
        };
    }
    match s {
        "bool" => Type::Bool,
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null" => Type::Null,
        "dyn" => Type::Dyn,
        "any" => Type::Any,
        "duration" => Type::Duration,
        "timestamp" => Type::Timestamp,
        "type" => Type::TypeOf(None),
        "Quantity" => Type::Object("kubernetes.Quantity".into()),
        "URL" => Type::Object("kubernetes.URL".into()),
        "Semver" => Type::Object("kubernetes.Semver".into()),
        "Format" => Type::Object("kubernetes.NamedFormat".into()),
        "IP" => Type::Opaque("net.IP".into(), vec![]),
        "CIDR" => Type::Opaque("net.CIDR".into(), vec![]),
        p if p.len() == 1 && p.chars().all(|c| c.is_ascii_uppercase()) => Type::Param(p.into()),
        other => panic!("unknown type {other}"),
    }
}

fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}
