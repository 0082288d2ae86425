//! Value validation as upstream's kube-openapi `SchemaValidator` does it for custom
//! resources, and the conversion of its results into field errors
//! (`kubeOpenAPIResultToFieldErrors`).
//!
//! Per node, the validators run in upstream's fixed order, all of them (no short cut after a
//! failure): type, allOf/anyOf/oneOf/not, string (first of maxLength, minLength, pattern),
//! format, number (range check, multipleOf, minimum, maximum), array (items, then minItems,
//! maxItems), enum, object (min/maxProperties, additionalProperties members in document order,
//! properties sorted by name, then `required` in schema order). A `null` meets only the type and
//! enum checks. Within one result an error whose text repeats an earlier one is dropped, as
//! upstream's `Result.AddErrors` does; `anyOf`/`oneOf` report the failures of the alternative
//! that got furthest (upstream's match count).
//!
//! Ratcheting (`validate_update`): a property, additionalProperties member or map-list item
//! whose new value equals the old one (upstream's `CachedDeepEqual`) has its errors dropped.

use crate::compile::{Additional, Node};
use crate::formats;
use crate::limits;
use crate::render::{bad_value, go_float, go_json, Num};
use keel_api::status::{field, StatusCause};
use serde_json::{Map, Value};
use std::fmt::{self, Display};

/// A node's path as the validator reports it (`spec.ports[0]`), rendered only when an error
/// names it: the walk of a valid object allocates no path.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    /// A property: `<parent>.<name>`, or `<name>` below an empty path.
    Field(&'a Path<'a>, &'a str),
    /// An additionalProperties member: `<parent>.<name>` even at the root.
    Dot(&'a Path<'a>, &'a str),
    /// A list item: `<parent>[<i>]`.
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn is_empty(&self) -> bool {
        match self {
            Path::Root => true,
            Path::Field(p, k) => p.is_empty() && k.is_empty(),
            Path::Dot(..) | Path::Index(..) => false,
        }
    }
}

impl Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Field(p, k) if p.is_empty() => f.write_str(k),
            Path::Field(p, k) | Path::Dot(p, k) => write!(f, "{p}.{k}"),
            Path::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

/// What kind of kube-openapi error, with the data the field-error conversion needs.
#[derive(Clone, Debug)]
enum Kind {
    Required,
    Enum(Vec<Value>),
    TooLong(i64),
    /// maxItems or maxProperties: (actual, max).
    TooMany(i64, i64),
    InvalidType,
    /// Any other `*errors.Validation`.
    Validation,
    /// A plain error (anyOf/oneOf/allOf/not, range checks): reported at path `<nil>`.
    Plain,
}

#[derive(Clone, Debug)]
struct VErr {
    kind: Kind,
    /// The validator's path (`spec.x`, `.spec` for a root `required`).
    name: String,
    value: Option<Value>,
    message: String,
}

#[derive(Default, Debug)]
struct Res {
    errors: Vec<VErr>,
    match_count: u64,
}

impl Res {
    fn valid(&self) -> bool {
        self.errors.is_empty()
    }

    fn err(e: VErr) -> Res {
        Res {
            errors: vec![e],
            match_count: 0,
        }
    }

    fn add(&mut self, e: VErr) {
        if self.errors.len() >= limits::ERRORS_MAX {
            return;
        }
        if !self.errors.iter().any(|x| x.message == e.message) {
            self.errors.push(e);
        }
    }

    fn merge(&mut self, other: Res) {
        for e in other.errors {
            self.add(e);
        }
        self.match_count += other.match_count;
    }

    fn inc(&mut self) {
        self.match_count += 1;
    }
}

fn validation(kind: Kind, name: impl Display, value: Option<Value>, message: String) -> VErr {
    VErr {
        kind,
        name: name.to_string(),
        value,
        message,
    }
}

fn plain(message: String) -> VErr {
    validation(Kind::Plain, "", None, message)
}

fn invalid_type(name: &Path, type_name: &str, value: &str) -> VErr {
    let msg = format!(
        "{name} in body must be of type {type_name}: {}",
        keel_api::gofmt::quote(value)
    );
    validation(
        Kind::InvalidType,
        name,
        Some(Value::String(value.into())),
        msg,
    )
}

/// Upstream's `swag.IsFloat64AJSONInteger`.
pub fn is_float_integer(f: f64) -> bool {
    const MAX: f64 = 9007199254740991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let rounded = f.round();
    if f == rounded {
        return true;
    }
    if rounded == 0.0 {
        return false;
    }
    (f - rounded).abs() < 1e-9 * rounded.abs()
}

/// Ratcheting context for one node: the correlated old value, if any.
type Old<'a> = Option<&'a Value>;

pub struct Validator {
    pub ratchet: bool,
}

impl Validator {
    /// Validates the whole object; `old` is the stored object for an update with ratcheting.
    pub fn root(&self, n: &Node, obj: &Value, old: Old) -> Vec<StatusCause> {
        let res = self.ratcheted(n, obj, &Path::Root, old, true, 0);
        res.errors.iter().map(to_cause).collect()
    }

    /// A node validated with correlation to `old` (when ratcheting): errors dropped if the
    /// value did not change.
    fn ratcheted(
        &self,
        n: &Node,
        d: &Value,
        path: &Path,
        old: Old,
        root: bool,
        depth: usize,
    ) -> Res {
        let mut res = self.schema(n, d, path, old, root, depth);
        if let (true, Some(o)) = (self.ratchet, old) {
            if !res.valid() && deep_equal_correlated(d, o, Some(n), 0) {
                res.errors.clear();
            }
        }
        res
    }

    /// A child validator (upstream's `NewValidatorForField`/`ForIndex`).
    fn child(&self, n: &Node, d: &Value, path: &Path, old: Old, depth: usize) -> Res {
        if depth > limits::VALUE_DEPTH_MAX {
            return Res::default();
        }
        if self.ratchet && old.is_some() {
            self.ratcheted(n, d, path, old, false, depth)
        } else {
            self.schema(n, d, path, None, false, depth)
        }
    }

    fn schema(&self, n: &Node, d: &Value, path: &Path, old: Old, root: bool, depth: usize) -> Res {
        let mut res = Res::default();
        if d.is_null() {
            res.merge(type_check(n, d, path));
            res.merge(enum_check(n, d, path));
            return res;
        }
        if !n.types.is_empty() || !n.format.is_empty() {
            res.merge(type_check(n, d, path));
            res.inc();
        }
        res.merge(self.schema_props(n, d, path, depth));
        res.inc();
        if let Value::String(s) = d {
            res.merge(string_check(n, s, path));
            res.inc();
            if formats::known(&n.format) {
                res.merge(format_check(n, s, path));
                res.inc();
            }
        }
        if let Value::Number(num) = d {
            res.merge(number_check(n, Num::of(num), path));
            res.inc();
        }
        if let Value::Array(items) = d {
            res.merge(self.slice(n, items, path, old, depth));
            res.inc();
        }
        res.merge(enum_check(n, d, path));
        res.inc();
        if let Value::Object(m) = d {
            res.merge(self.object(n, m, path, old, root, depth));
            res.inc();
        }
        res.inc();
        res
    }

    fn schema_props(&self, n: &Node, d: &Value, path: &Path, depth: usize) -> Res {
        let mut main = Res::default();
        let quoted = || keel_api::gofmt::quote(&path.to_string());
        if !n.any_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            for s in &n.any_of {
                let r = self.schema(s, d, path, None, false, depth + 1);
                if r.valid() {
                    best = None;
                    first_success = Some(r);
                    break;
                }
                if best.as_ref().is_none_or(|b| r.match_count > b.match_count) {
                    best = Some(r);
                }
            }
            if first_success.is_none() {
                main.add(plain(format!(
                    "{} must validate at least one schema (anyOf)",
                    quoted()
                )));
            }
            if let Some(b) = best {
                main.merge(b);
            } else if let Some(s) = first_success {
                main.merge(s);
            }
        }
        if !n.one_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            let mut validated = 0;
            for s in &n.one_of {
                let r = self.schema(s, d, path, None, false, depth + 1);
                if r.valid() {
                    validated += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(r);
                    }
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| r.match_count > b.match_count) {
                    best = Some(r);
                }
            }
            if validated != 1 {
                let extra = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                main.add(plain(format!(
                    "{} must validate one and only one schema (oneOf). {extra}",
                    quoted()
                )));
                if let Some(b) = best {
                    main.merge(b);
                }
            } else if let Some(s) = first_success {
                main.merge(s);
            }
        }
        if !n.all_of.is_empty() {
            let mut validated = 0;
            for s in &n.all_of {
                let r = self.schema(s, d, path, None, false, depth + 1);
                if r.valid() {
                    validated += 1;
                }
                main.merge(r);
            }
            if validated != n.all_of.len() {
                let extra = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                main.add(plain(format!(
                    "{} must validate all the schemas (allOf){extra}",
                    quoted()
                )));
            }
        }
        if let Some(not) = &n.not {
            if self.schema(not, d, path, None, false, depth + 1).valid() {
                main.add(plain(format!(
                    "{} must not validate the schema (not)",
                    quoted()
                )));
            }
        }
        main.inc();
        main
    }

    fn slice(&self, n: &Node, items: &[Value], path: &Path, old: Old, depth: usize) -> Res {
        let mut res = Res::default();
        if let Some(item) = n.items.as_deref() {
            let olds = correlate_items(n, items, old);
            for (i, v) in items.iter().enumerate() {
                let p = Path::Index(path, i);
                res.merge(self.child(item, v, &p, olds.get(i).copied().flatten(), depth + 1));
            }
        }
        let size = items.len() as i64;
        if let Some(min) = n.min_items {
            if size < min {
                res.add(validation(
                    Kind::Validation,
                    path,
                    Some(Value::from(size)),
                    format!("{path} in body should have at least {min} items"),
                ));
            }
        }
        if let Some(max) = n.max_items {
            if size > max {
                res.add(validation(
                    Kind::TooMany(size, max),
                    path,
                    Some(Value::from(size)),
                    format!("{path} in body should have at most {max} items"),
                ));
            }
        }
        res.inc();
        res
    }

    fn object(
        &self,
        n: &Node,
        m: &Map<String, Value>,
        path: &Path,
        old: Old,
        root: bool,
        depth: usize,
    ) -> Res {
        let mut res = Res::default();
        let size = m.len() as i64;
        if let Some(min) = n.min_properties {
            if size < min {
                res.add(validation(
                    Kind::Validation,
                    path,
                    Some(Value::from(size)),
                    format!("{path} in body should have at least {min} properties"),
                ));
            }
        }
        if let Some(max) = n.max_properties {
            if size > max {
                res.add(validation(
                    Kind::TooMany(size, max),
                    path,
                    Some(Value::from(size)),
                    format!("{path} in body should have at most {max} properties"),
                ));
            }
        }
        let old_map = old.and_then(Value::as_object);
        // kind and apiVersion at the root are never correlated for ratcheting.
        let old_of = |k: &str| -> Old {
            if root && (k == "kind" || k == "apiVersion") {
                return None;
            }
            old_map.and_then(|o| o.get(k))
        };
        match &n.additional {
            Some(Additional::Bool(false)) => {
                for k in m.keys() {
                    if !n.properties.contains_key(k) {
                        res.add(validation(
                            Kind::Validation,
                            path,
                            Some(Value::String(k.clone())),
                            format!("{path}.{k} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Some(Additional::Schema(a)) => {
                for (k, v) in m {
                    if !n.properties.contains_key(k) {
                        let p = Path::Dot(path, k);
                        res.merge(self.child(a, v, &p, old_of(k), depth + 1));
                    }
                }
            }
            _ => {}
        }
        for (k, s) in &n.properties {
            if let Some(v) = m.get(k) {
                let p = Path::Field(path, k);
                res.merge(self.child(s, v, &p, old_of(k), depth + 1));
            }
        }
        for k in &n.required {
            if !m.contains_key(k) {
                let name = format!("{path}.{k}");
                let msg = format!("{name} in body is required");
                res.add(validation(Kind::Required, &name, None, msg));
            }
        }
        res
    }
}

fn type_name_of(d: &Value) -> (&'static str, &'static str) {
    match d {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match Num::of(n) {
            Num::Int(_) => ("integer", "int64"),
            Num::Float(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("null", ""),
    }
}

fn type_check(n: &Node, d: &Value, path: &Path) -> Res {
    let ok = Res {
        errors: Vec::new(),
        match_count: 1,
    };
    if d.is_null() {
        if !n.types.is_empty() && !n.has_type("null") && !n.nullable {
            return Res::err(invalid_type(path, &n.types.join(","), "null"));
        }
        return ok;
    }
    let (sch_type, format) = type_name_of(d);
    let is_float_int = match d {
        Value::Number(num) => match Num::of(num) {
            Num::Float(f) => is_float_integer(f) && n.has_type("integer"),
            Num::Int(_) => false,
        },
        _ => false,
    };
    let is_int_float = sch_type == "integer" && n.has_type("number");
    let string_or_slice = matches!(d, Value::String(_) | Value::Array(_));
    let has_format = !n.format.is_empty();
    let type_or_format_fits =
        n.has_type(sch_type) || format == n.format || is_float_int || is_int_float;
    // A non-string value must fit the format (if any) before its type is looked at.
    if has_format && !string_or_slice && !type_or_format_fits {
        return Res::err(invalid_type(path, &n.format, format));
    }
    // A string or list under a string format is accepted here; the format check follows.
    let numeric = n.has_type("number") || n.has_type("integer");
    if has_format && string_or_slice && !numeric {
        return ok;
    }
    if !(n.has_type(sch_type) || is_float_int || is_int_float) {
        return Res::err(invalid_type(path, &n.types.join(","), sch_type));
    }
    ok
}

fn string_check(n: &Node, s: &str, path: &Path) -> Res {
    let len = s.chars().count() as i64;
    let value = || Some(Value::String(s.to_string()));
    if let Some(max) = n.max_length {
        if len > max {
            let msg = format!("{path} in body should be at most {max} chars long");
            return Res::err(validation(Kind::TooLong(max), path, value(), msg));
        }
    }
    if let Some(min) = n.min_length {
        if len < min {
            let msg = format!("{path} in body should be at least {min} chars long");
            return Res::err(validation(Kind::Validation, path, value(), msg));
        }
    }
    if let Some(p) = &n.pattern {
        let shown = match &p.regex {
            Ok(re) if re.is_match(s) => return Res::default(),
            Ok(_) => p.source.clone(),
            Err(e) => format!("{}, but pattern is invalid: {e}", p.source),
        };
        let msg = format!("{path} in body should match '{shown}'");
        return Res::err(validation(Kind::Validation, path, value(), msg));
    }
    Res::default()
}

fn format_check(n: &Node, s: &str, path: &Path) -> Res {
    if formats::valid(&n.format, s) {
        Res::default()
    } else {
        Res::err(invalid_type(path, &n.format, s))
    }
}

/// Whether `x` is representable in the type and format: upstream prints the number as Go's
/// `FormatFloat(x, 'f', -1, 64)` and parses that back as the type. Decided on the number
/// itself, as that round trip decides: an integer type takes integral values within its range
/// (a fraction or an exponent does not parse), `float` takes what does not overflow `f32`.
fn fits_range(x: Num, type_name: &str, format: &str) -> bool {
    // 2^63 and 2^31 are exact in f64.
    const I64_END: f64 = 9_223_372_036_854_775_808.0;
    const I32_END: f64 = 2_147_483_648.0;
    match (type_name, format, x) {
        ("integer", "int32", Num::Int(i)) => i32::try_from(i).is_ok(),
        ("integer", "int32", Num::Float(f)) => f.fract() == 0.0 && (-I32_END..I32_END).contains(&f),
        ("integer", _, Num::Int(_)) => true,
        // Below 2^62 the printed digits stay within the range; nearer its ends they are
        // rounded digits padded with zeros (`9223372036854776000`), so the text decides.
        ("integer", _, Num::Float(f)) if f.abs() < I64_END / 2.0 => f.fract() == 0.0,
        ("integer", _, Num::Float(_)) => fits_by_text(x, type_name, format),
        (_, "float", x) => !(x.as_f64() as f32).is_infinite(),
        _ => true,
    }
}

/// Upstream's round trip, spelled out: print as `FormatFloat(x, 'f', -1, 64)`, parse back
/// as the type.
fn fits_by_text(x: Num, type_name: &str, format: &str) -> bool {
    let rep = match x {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => {
            let s = go_float(f);
            // Rust's Display of f64 is the shortest round-trip decimal without exponent.
            if s.contains('e') {
                format!("{f}")
            } else {
                s
            }
        }
    };
    match (type_name, format) {
        ("integer", "int32") => rep.parse::<i32>().is_ok(),
        ("integer", _) => rep.parse::<i64>().is_ok(),
        (_, "float") => rep.parse::<f64>().is_ok_and(|f| !(f as f32).is_infinite()),
        _ => true,
    }
}

/// Upstream's `IsValueValidAgainstRange`: can `x` be represented in the node's type/format?
fn range_check(x: Num, type_name: &str, format: &str, prefix: &str, path: &Path) -> Option<VErr> {
    if fits_range(x, type_name, format) {
        return None;
    }
    let msg = if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    };
    Some(plain(msg))
}

fn num_value(x: Num) -> Value {
    match x {
        Num::Int(i) => Value::from(i),
        Num::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
    }
}

fn number_check(n: &Node, x: Num, path: &Path) -> Res {
    let (type_name, format) = match n.types.as_slice() {
        [t] if t == "integer" => (
            "integer",
            if n.format == "int32" || n.format == "int64" {
                n.format.as_str()
            } else {
                ""
            },
        ),
        [t] if t == "number" => (
            "number",
            if n.format == "float" || n.format == "double" {
                n.format.as_str()
            } else {
                ""
            },
        ),
        _ => ("", ""),
    };
    let mut res = Res::default();
    if let Some(e) = range_check(x, type_name, format, "Checked", path) {
        res.add(e);
    }
    let value = Some(num_value(x));
    let data = x.as_f64();
    let mut res_multiple = Res::default();
    if let Some(factor) = n.multiple_of {
        let range = range_check(Num::Float(factor), type_name, format, "MultipleOf", path);
        let native = range.is_none();
        if let Some(e) = range {
            res_multiple.add(e);
        }
        let failure = match (native, x) {
            (true, Num::Int(i)) => {
                let f = factor as i64;
                if f <= 0 {
                    Some((
                        Kind::Validation,
                        format!("factor MultipleOf declared for {path} must be positive: {f}"),
                    ))
                } else if i % f != 0 {
                    Some((
                        Kind::Validation,
                        format!("{path} in body should be a multiple of {f}"),
                    ))
                } else {
                    None
                }
            }
            _ => multiple_of_float(path, data, factor),
        };
        if let Some((kind, msg)) = failure {
            res_multiple.add(validation(kind, path, value.clone(), msg));
        }
    }
    let mut res_min = Res::default();
    if let Some(min) = n.minimum {
        let range = range_check(Num::Float(min), type_name, format, "Minimum boundary", path);
        let native = range.is_none();
        if let Some(e) = range {
            res_min.add(e);
        }
        let excl = n.exclusive_minimum;
        let (fails, shown) = match (native, x) {
            (true, Num::Int(i)) => {
                let m = min as i64;
                ((!excl && i < m) || (excl && i <= m), m.to_string())
            }
            _ => (
                (!excl && data < min) || (excl && data <= min),
                go_float(min),
            ),
        };
        if fails {
            let word = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let msg = format!("{path} in body should be {word} {shown}");
            res_min.add(validation(Kind::Validation, path, value.clone(), msg));
        }
    }
    let mut res_max = Res::default();
    if let Some(max) = n.maximum {
        let range = range_check(Num::Float(max), type_name, format, "Maximum boundary", path);
        let native = range.is_none();
        if let Some(e) = range {
            res_max.add(e);
        }
        let excl = n.exclusive_maximum;
        let (fails, shown) = match (native, x) {
            (true, Num::Int(i)) => {
                let m = max as i64;
                ((!excl && i > m) || (excl && i >= m), m.to_string())
            }
            _ => (
                (!excl && data > max) || (excl && data >= max),
                go_float(max),
            ),
        };
        if fails {
            let word = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            let msg = format!("{path} in body should be {word} {shown}");
            res_max.add(validation(Kind::Validation, path, value.clone(), msg));
        }
    }
    res.merge(res_multiple);
    res.merge(res_min);
    res.merge(res_max);
    res.inc();
    res
}

fn multiple_of_float(path: &Path, data: f64, factor: f64) -> Option<(Kind, String)> {
    if factor <= 0.0 {
        return Some((
            Kind::Validation,
            format!(
                "factor MultipleOf declared for {path} must be positive: {}",
                go_float(factor)
            ),
        ));
    }
    let mult = if factor < 1.0 {
        1.0 / factor * data
    } else {
        data / factor
    };
    if is_float_integer(mult) {
        None
    } else {
        Some((
            Kind::Validation,
            format!(
                "{path} in body should be a multiple of {}",
                go_float(factor)
            ),
        ))
    }
}

/// Go's `reflect.DeepEqual` over decoded values: `int64` and `float64` differ.
pub fn typed_equal(a: &Value, b: &Value) -> bool {
    typed_equal_at(a, b, 0)
}

fn typed_equal_at(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > limits::VALUE_DEPTH_MAX {
        return false;
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Num::of(x) == Num::of(y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| typed_equal_at(p, q, depth + 1))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| typed_equal_at(v, w, depth + 1)))
        }
        _ => a == b,
    }
}

/// Does `d` equal the enum member `e` after Go's conversion of `d` to `e`'s type?
fn enum_matches(d: &Value, e: &Value) -> bool {
    match (d, e) {
        (_, Value::Null) | (Value::Null, _) => false,
        (Value::Number(x), Value::Number(y)) => match (Num::of(x), Num::of(y)) {
            (Num::Int(a), Num::Int(b)) => a == b,
            (Num::Float(a), Num::Int(b)) => a as i64 == b,
            (a, Num::Float(b)) => a.as_f64() == b,
        },
        // Go converts an integer to the string of that code point.
        (Value::Number(x), Value::String(s)) => match Num::of(x) {
            Num::Int(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                s.chars().eq(std::iter::once(c))
            }
            Num::Float(_) => false,
        },
        _ => typed_equal(d, e),
    }
}

fn enum_check(n: &Node, d: &Value, path: &Path) -> Res {
    if n.enum_values.is_empty() || n.enum_values.iter().any(|e| enum_matches(d, e)) {
        return Res::default();
    }
    let msg = format!(
        "{path} in body should be one of {}",
        go_slice(&n.enum_values)
    );
    Res::err(validation(
        Kind::Enum(n.enum_values.clone()),
        path,
        Some(d.clone()),
        msg,
    ))
}

/// Go's `%v` of a `[]interface{}` (only the message of an enum error, which the conversion
/// to a field error drops; kept for the duplicate check).
fn go_slice(values: &[Value]) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => go_json(other),
        })
        .collect();
    format!("[{}]", parts.join(" "))
}

/// For a map list, the old item with the same keys as each new item.
pub(crate) fn correlate_items<'a>(
    n: &Node,
    items: &[Value],
    old: Old<'a>,
) -> Vec<Option<&'a Value>> {
    let Some(Value::Array(old_items)) = old else {
        return Vec::new();
    };
    if n.list_type.as_deref() != Some("map") {
        return Vec::new();
    }
    items
        .iter()
        .map(|it| find_by_keys(&n.list_map_keys, it, old_items))
        .collect()
}

fn map_key(keys: &[String], item: &Value) -> Option<Vec<Option<Value>>> {
    let m = item.as_object()?;
    Some(keys.iter().map(|k| m.get(k).cloned()).collect())
}

fn find_by_keys<'a>(keys: &[String], item: &Value, olds: &'a [Value]) -> Option<&'a Value> {
    let want = map_key(keys, item)?;
    olds.iter().find(|o| {
        map_key(keys, o).is_some_and(|k| {
            k.len() == want.len()
                && k.iter().zip(&want).all(|(a, b)| match (a, b) {
                    (Some(a), Some(b)) => typed_equal(a, b),
                    (None, None) => true,
                    _ => false,
                })
        })
    })
}

/// Upstream's `CachedDeepEqual`: maps compare member by member through the schema (a member
/// without schema makes them unequal), map lists item by item matched on their keys, anything
/// else with `DeepEqual`.
pub(crate) fn deep_equal_correlated(
    new: &Value,
    old: &Value,
    s: Option<&Node>,
    depth: usize,
) -> bool {
    if depth > limits::VALUE_DEPTH_MAX {
        return false;
    }
    match (new, old) {
        (Value::Array(n), Value::Array(o)) => {
            if n.len() != o.len() {
                return false;
            }
            match s {
                Some(node) if node.list_type.as_deref() == Some("map") && node.items.is_some() => {
                    let item = node.items.as_deref();
                    n.iter().all(|it| {
                        find_by_keys(&node.list_map_keys, it, o)
                            .is_some_and(|ov| deep_equal_correlated(it, ov, item, depth + 1))
                    })
                }
                _ => typed_equal(new, old),
            }
        }
        (Value::Object(n), Value::Object(o)) => {
            if n.len() != o.len() {
                return false;
            }
            n.iter().all(|(k, v)| {
                let Some(ov) = o.get(k) else { return false };
                let Some(Ok(child)) = s.and_then(|x| x.member(k)) else {
                    return false;
                };
                deep_equal_correlated(v, ov, Some(child), depth + 1)
            })
        }
        _ => typed_equal(new, old),
    }
}

/// `kubeOpenAPIResultToFieldErrors`: one kube-openapi error as a field error.
fn to_cause(e: &VErr) -> StatusCause {
    let path = match e.kind {
        Kind::Plain => "<nil>".to_string(),
        _ if e.name.is_empty() || e.name == "." => "<nil>".to_string(),
        _ => e.name.strip_prefix('.').unwrap_or(&e.name).to_string(),
    };
    let empty = Value::String(String::new());
    let value = e.value.as_ref().unwrap_or(&empty);
    match &e.kind {
        Kind::Required => field::required(&path, ""),
        Kind::Enum(values) => {
            let shown: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => go_json(other),
                })
                .collect();
            let quoted: Vec<String> = shown.iter().map(|s| keel_api::gofmt::quote(s)).collect();
            let mut msg = format!("Unsupported value: {}", bad_value(value));
            if !quoted.is_empty() {
                msg.push_str(": supported values: ");
                msg.push_str(&quoted.join(", "));
            }
            cause(field::REASON_NOT_SUPPORTED, &path, msg)
        }
        Kind::TooLong(max) => {
            let unit = if *max == 1 { "byte" } else { "bytes" };
            let msg = if *max >= 0 {
                format!("Too long: may not be more than {max} {unit}")
            } else {
                "Too long: value is too long".to_string()
            };
            cause(field::REASON_TOO_LONG, &path, msg)
        }
        Kind::TooMany(actual, max) => {
            let unit = if *max == 1 { "item" } else { "items" };
            let msg = format!("Too many: {actual}: must have at most {max} {unit}");
            cause(field::REASON_TOO_MANY, &path, msg)
        }
        Kind::InvalidType => cause(
            field::REASON_TYPE_INVALID,
            &path,
            format!("Invalid value: {}: {}", bad_value(value), e.message),
        ),
        Kind::Validation | Kind::Plain => cause(
            field::REASON_INVALID,
            &path,
            format!("Invalid value: {}: {}", bad_value(value), e.message),
        ),
    }
}

pub fn cause(reason: &str, path: &str, message: String) -> StatusCause {
    StatusCause {
        reason: reason.to_string(),
        message,
        field: path.to_string(),
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    #[test]
    fn range_fit_is_the_text_round_trip() {
        let ints = [
            0,
            1,
            -1,
            i32::MAX as i64,
            i32::MAX as i64 + 1,
            i32::MIN as i64,
            i32::MIN as i64 - 1,
            i64::MAX,
            i64::MIN,
        ];
        let floats = [
            0.0,
            -0.0,
            0.5,
            -1.5,
            1e-7,
            5.0,
            1e18,
            1e19,
            -1e19,
            2147483647.0,
            2147483648.0,
            -2147483648.0,
            -2147483649.0,
            9223372036854774784.0,
            9223372036854775808.0,
            -9223372036854775808.0,
            3.4e38,
            3.5e38,
            -3.5e38,
            f64::MAX,
            1e300,
            123.456,
        ];
        let xs = ints
            .iter()
            .map(|&i| Num::Int(i))
            .chain(floats.iter().map(|&f| Num::Float(f)));
        for x in xs {
            for (t, f) in [
                ("integer", "int32"),
                ("integer", "int64"),
                ("integer", ""),
                ("number", "float"),
                ("number", "double"),
                ("number", ""),
                ("", ""),
            ] {
                assert_eq!(fits_range(x, t, f), fits_by_text(x, t, f), "{x:?} {t} {f}");
            }
        }
    }
}
