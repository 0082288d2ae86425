//! Evaluation of compiled expressions with the `cel` crate's interpreter, in an environment
//! with the standard library, the strings, lists and math extensions, and upstream's macros
//! (so a program parses exactly as [`crate::compile`] checked it).
//!
//! Errors are rendered as cel-go words them where the two differ in the common cases
//! (`no such key: x`, `type conversion error from 'string' to 'int'`); others keep the
//! interpreter's own text.
//!
//! Upstream's Kubernetes list library (`isSorted`, `sum`, `min`, `max`, list
//! `indexOf`/`lastIndexOf`), its regex library (`find`, `findAll`), cel-go's `sets` extension
//! `transformMap`'s insertion, and the quantity library (`quantity`, `isQuantity`,
//! comparisons, `add`/`sub`, `sign`, `isInteger`, `asInteger`, `asApproximateFloat`; values
//! held exactly to the nano unit, an error beyond about ±1.7e29) are added here; the URL
//! (`eval/url.rs`), IP and CIDR (`eval/net.rs`), format (`eval/format.rs`) and semver
//! (`eval/semver.rs`) libraries in their own modules, with upstream's results and errors.
//!
//! `duration` and `timestamp` values come from the `cel` crate (its `chrono` feature).
//!
//! Not done (the checker accepts it; a run reports an undeclared reference): `authz` (CRD
//! rules cannot use it); nor upstream's runtime cost accounting (callers bound the work instead, see
//! [`Program::work_bound`]). `base64.*` is not offered, as upstream's base environment
//! (v1.36) does not include cel-go's encoders: the checker refuses it.

use cel::common::ast::Expr;
use std::sync::{Arc, LazyLock};

mod format;
mod glue;
mod net;
mod semver;
mod url;

pub use cel::Value;

/// The interpreter's environment: parse and run with the same macros and functions.
static EXEC_ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib().with_optional_support(true);
    for m in crate::macros::all() {
        env.add_macro(m).expect("macros are distinct");
    }
    env.add_extension(cel::extensions::strings)
        .expect("strings extension declares distinct overloads");
    env.add_extension(cel::extensions::lists)
        .expect("lists extension declares distinct overloads");
    env.add_extension(cel::extensions::math)
        .expect("math extension declares distinct overloads");
    lists::declare(&mut env).expect("Kubernetes list functions are distinct overloads");
    more::declare(&mut env).expect("sets, regex and map-insert functions are distinct overloads");
    quantity::declare(&mut env).expect("quantity functions are distinct overloads");
    url::declare(&mut env).expect("URL functions are distinct overloads");
    net::declare(&mut env).expect("IP and CIDR functions are distinct overloads");
    semver::declare(&mut env).expect("semver functions are distinct overloads");
    format::declare(&mut env).expect("format functions are distinct overloads");
    // cel-go keeps the last of repeated map literal keys.
    env.set_error_on_duplicate_map_keys(false);
    Arc::new(env)
});

/// A string of OpenAPI `format` `format` as upstream types it for CEL: `date-time` and
/// `date` as timestamps, `duration` as a duration, `byte` as bytes (base64-decoded); other
/// formats, and strings that do not parse, stay strings.
pub fn formatted_string(format: &str, s: &str) -> Value {
    static TIMESTAMP: LazyLock<Program> =
        LazyLock::new(|| Program::parse("timestamp(s)").expect("constant expression"));
    static DURATION: LazyLock<Program> =
        LazyLock::new(|| Program::parse("duration(s)").expect("constant expression"));
    let parsed = match format {
        "date-time" | "datetime" => TIMESTAMP.execute(&[("s", Value::from(s))]).ok(),
        "date" => TIMESTAMP
            .execute(&[("s", Value::from(format!("{s}T00:00:00Z")))])
            .ok(),
        "duration" => DURATION.execute(&[("s", Value::from(s))]).ok(),
        "byte" => base64_decode(s).map(Value::from),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::from(s))
}

/// Standard base64 with padding, as Go's `encoding/base64.StdEncoding` decodes `format: byte`.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | digit(c)?;
        }
        n <<= 6 * pad as u32;
        let b = n.to_be_bytes();
        out.extend_from_slice(&b[1..4 - pad]);
    }
    Some(out)
}

/// An `optional_type` value: `optional.of(v)` or `optional.none()`.
pub fn optional(v: Option<Value>) -> Value {
    let o = match v {
        Some(v) => cel::objects::OptionalValue::of(v),
        None => cel::objects::OptionalValue::none(),
    };
    Value::Opaque(Arc::new(o))
}

/// A parsed expression, ready to run.
#[derive(Debug)]
pub struct Program {
    inner: cel::Program,
    /// The expression as run: two-variable comprehensions rewritten (see [`two_vars`]).
    run: cel::IdedExpr,
    /// Nesting depth of comprehensions (`all`, `exists`, `map`...): with the largest
    /// collection's size, what bounds the work one run does.
    comprehension_depth: u32,
    /// Expression nodes.
    nodes: u64,
    /// Calls that build a string or collection as large as their input ([`BUILDERS`]).
    builders: u64,
}

impl Program {
    /// Parses `source` (which [`crate::compile`] accepted) for evaluation.
    pub fn parse(source: &str) -> Result<Program, String> {
        let inner = EXEC_ENV
            .compile(source)
            .map_err(|e| format!("{:?}", e.errors.first().map(|e| &e.msg)))?;
        let Shape {
            depth: comprehension_depth,
            nodes,
            builders,
        } = shape(&inner.expression().expr, 0);
        let mut ids = REWRITE_ID_FIRST;
        let run = two_vars::rewrite(inner.expression(), &mut ids, 0);
        Ok(Program {
            run,
            inner,
            comprehension_depth,
            nodes,
            builders,
        })
    }

    /// The fields of variable `var` the expression reads, when it reads it only through field
    /// selections (`var.a`, `has(var.b)`): then a value of `var` holding just those fields
    /// gives the same result as the whole value (and costs less to build). `None` if it uses
    /// `var` otherwise (as a whole, in a call, ranged over) or a comprehension rebinds it.
    pub fn fields_of(&self, var: &str) -> Option<std::collections::BTreeSet<String>> {
        let mut out = std::collections::BTreeSet::new();
        selected_fields(&self.run.expr, var, &mut out, 0).then_some(out)
    }

    /// Whether the expression refers to variable `name` (`oldSelf` makes a transition rule).
    pub fn references(&self, name: &str) -> bool {
        self.inner.references().has_variable(name)
    }

    /// Whether the expression has comprehensions, so that [`Program::work_bound`] depends on
    /// the size of what it ranges over.
    pub fn ranges(&self) -> bool {
        self.comprehension_depth > 0 || self.builders > 0
    }

    /// An upper bound of the steps one run takes when no collection or string it ranges over
    /// or builds from is larger than `size_max`: every node once, and a call that builds a
    /// string or collection ([`BUILDERS`]) `size_max` times, per iteration of each enclosing
    /// comprehension. Comparing or searching large values (`==`, `matches`, `contains`) is
    /// counted as one step, though its time grows with their size (no memory grows).
    /// Saturates instead of overflowing.
    pub fn work_bound(&self, size_max: u64) -> u64 {
        let per = size_max.max(1);
        let mut bound = self.nodes.saturating_add(self.builders.saturating_mul(per));
        for _ in 0..self.comprehension_depth {
            bound = bound.saturating_mul(per);
        }
        bound
    }

    /// Runs with `vars` bound: the value, or the error text as cel-go words it.
    pub fn execute(&self, vars: &[(&str, Value)]) -> Result<Value, String> {
        let mut ctx = cel::Context::with_env(EXEC_ENV.clone());
        for (name, v) in vars {
            ctx.add_variable_from_value(*name, v.clone());
        }
        ctx.resolve(&self.run).map_err(|e| error_text(&e))
    }
}

/// Collects the fields of `var` that `e` selects; `false` if `e` uses `var` in any other
/// way (see [`Program::fields_of`]).
fn selected_fields(
    e: &Expr,
    var: &str,
    out: &mut std::collections::BTreeSet<String>,
    depth: usize,
) -> bool {
    if depth > 256 {
        return false;
    }
    let mut each = |x: &Expr| selected_fields(x, var, out, depth + 1);
    match e {
        Expr::Select(s) => match &s.operand.expr {
            Expr::Ident(name) if name == var => {
                out.insert(s.field.clone());
                true
            }
            operand => each(operand),
        },
        Expr::Ident(name) => name != var,
        Expr::Call(c) => {
            c.target.iter().all(|t| each(&t.expr)) && c.args.iter().all(|a| each(&a.expr))
        }
        Expr::Comprehension(c) => {
            c.iter_var != var
                && c.iter_var2.as_deref() != Some(var)
                && c.accu_var != var
                && [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .into_iter()
                .all(|x| each(&x.expr))
        }
        Expr::List(l) => l.elements.iter().all(|x| each(&x.expr)),
        Expr::Map(m) => m.entries.iter().all(|x| entry(&x.expr, &mut each)),
        Expr::Struct(st) => st.entries.iter().all(|x| entry(&x.expr, &mut each)),
        Expr::Literal(_) | Expr::Unspecified => true,
    }
}

fn entry(e: &cel::common::ast::EntryExpr, each: &mut dyn FnMut(&Expr) -> bool) -> bool {
    match e {
        cel::common::ast::EntryExpr::StructField(f) => each(&f.value.expr),
        cel::common::ast::EntryExpr::MapEntry(m) => each(&m.key.expr) && each(&m.value.expr),
    }
}

/// Ids of nodes the rewrite adds: far above any the parser hands out.
const REWRITE_ID_FIRST: u64 = 1 << 48;

/// The interpreter binds only a comprehension's first variable; cel-go's two-variable forms
/// (`m.all(k, v, ...)`, `l.exists(i, v, ...)`, `transformList(i, v, ...)`) are rewritten
/// into one-variable ones that range over the keys (maps) or indices (lists) and bind the
/// second variable to `range[key]` for each step, as `cel.bind` does.
mod two_vars {
    use cel::common::ast::{
        CallExpr, ComprehensionExpr, EntryExpr, Expr, ListExpr, LiteralValue, SelectExpr,
    };
    use cel::IdedExpr;

    fn node(ids: &mut u64, expr: Expr) -> IdedExpr {
        *ids += 1;
        IdedExpr { id: *ids, expr }
    }

    fn ident(ids: &mut u64, name: &str) -> IdedExpr {
        node(ids, Expr::Ident(name.to_string()))
    }

    fn call(ids: &mut u64, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
        node(
            ids,
            Expr::Call(CallExpr {
                func_name: name.to_string(),
                target: None,
                args,
            }),
        )
    }

    /// `cel.bind(name, init, body)` as the parser expands it.
    fn bind(ids: &mut u64, name: &str, init: IdedExpr, body: IdedExpr) -> IdedExpr {
        let range = node(ids, Expr::List(ListExpr::new(vec![])));
        let cond = node(ids, Expr::Literal(LiteralValue::Boolean(false.into())));
        let step = ident(ids, name);
        node(
            ids,
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: range,
                iter_var: "#unused".into(),
                iter_var2: None,
                accu_var: name.to_string(),
                accu_init: init,
                loop_cond: cond,
                loop_step: step,
                result: body,
            })),
        )
    }

    pub fn rewrite(e: &IdedExpr, ids: &mut u64, depth: usize) -> IdedExpr {
        if depth > 256 {
            return e.clone();
        }
        let d = depth + 1;
        let expr = match &e.expr {
            Expr::Comprehension(c) => {
                let mut c = ComprehensionExpr {
                    iter_range: rewrite(&c.iter_range, ids, d),
                    iter_var: c.iter_var.clone(),
                    iter_var2: c.iter_var2.clone(),
                    accu_var: c.accu_var.clone(),
                    accu_init: rewrite(&c.accu_init, ids, d),
                    loop_cond: rewrite(&c.loop_cond, ids, d),
                    loop_step: rewrite(&c.loop_step, ids, d),
                    result: rewrite(&c.result, ids, d),
                };
                let Some(second) = c.iter_var2.take() else {
                    return IdedExpr {
                        id: e.id,
                        expr: Expr::Comprehension(Box::new(c)),
                    };
                };
                // bind(@range, R, [k in (R is a map ? R : lists.range(size(R)))] with
                // each step in bind(v, @range[k], step)).
                let range_var = format!("@range{}", e.id);
                let is_map = {
                    let r = ident(ids, &range_var);
                    let t = call(ids, "type", vec![r]);
                    let m = ident(ids, "map");
                    call(ids, "_==_", vec![t, m])
                };
                let indices = {
                    let r = ident(ids, &range_var);
                    let size = call(ids, "size", vec![r]);
                    call(ids, "lists.range", vec![size])
                };
                let keys = {
                    let r = ident(ids, &range_var);
                    call(ids, "_?_:_", vec![is_map, r, indices])
                };
                let element = {
                    let r = ident(ids, &range_var);
                    let k = ident(ids, &c.iter_var);
                    call(ids, "_[_]", vec![r, k])
                };
                let range = std::mem::replace(&mut c.iter_range, keys);
                let step = std::mem::take(&mut c.loop_step);
                c.loop_step = bind(ids, &second, element, step);
                let inner = node(ids, Expr::Comprehension(Box::new(c)));
                return bind(ids, &range_var, range, inner);
            }
            Expr::Call(c) => Expr::Call(CallExpr {
                func_name: c.func_name.clone(),
                target: c.target.as_ref().map(|t| Box::new(rewrite(t, ids, d))),
                args: c.args.iter().map(|a| rewrite(a, ids, d)).collect(),
            }),
            Expr::List(l) => {
                let mut l2 = l.clone();
                l2.elements = l.elements.iter().map(|x| rewrite(x, ids, d)).collect();
                Expr::List(l2)
            }
            Expr::Map(m) => {
                let mut m2 = m.clone();
                for en in &mut m2.entries {
                    if let EntryExpr::MapEntry(me) = &mut en.expr {
                        me.key = rewrite(&me.key, ids, d);
                        me.value = rewrite(&me.value, ids, d);
                    }
                }
                Expr::Map(m2)
            }
            Expr::Select(sel) => Expr::Select(SelectExpr {
                operand: Box::new(rewrite(&sel.operand, ids, d)),
                field: sel.field.clone(),
                test: sel.test,
            }),
            other => other.clone(),
        };
        IdedExpr { id: e.id, expr }
    }
}

/// Functions whose result can be as large as their input (or larger): what a rule could use
/// to grow memory inside a comprehension. `_+_` appending to a comprehension's accumulator
/// (`map`, `filter`) is not among them: the interpreter appends in place.
const BUILDERS: &[&str] = &[
    "_+_",
    "split",
    "join",
    "replace",
    "format",
    "sort",
    "distinct",
    "flatten",
    "reverse",
    "lowerAscii",
    "upperAscii",
    "trim",
    "substring",
    "slice",
    "findAll",
    "lists.range",
    "cel.@mapInsert",
    "@sortByAssociatedKeys",
];

/// What [`Program::work_bound`] is computed from.
#[derive(Default)]
struct Shape {
    /// Comprehension nesting depth.
    depth: u32,
    nodes: u64,
    builders: u64,
}

impl Shape {
    fn join(self, o: Shape) -> Shape {
        Shape {
            depth: self.depth.max(o.depth),
            nodes: self.nodes.saturating_add(o.nodes),
            builders: self.builders.saturating_add(o.builders),
        }
    }
}

fn shape(e: &Expr, depth: usize) -> Shape {
    if depth > 256 {
        return Shape {
            depth: u32::MAX / 2,
            nodes: u64::MAX / 2,
            builders: 0,
        };
    }
    let sub = |es: &mut dyn Iterator<Item = &Expr>| -> Shape {
        es.map(|x| shape(x, depth + 1))
            .fold(Shape::default(), Shape::join)
    };
    let mut out = match e {
        Expr::Call(c) => {
            let mut inner = sub(&mut c
                .target
                .iter()
                .map(|t| &t.expr)
                .chain(c.args.iter().map(|a| &a.expr)));
            let appends_to_accumulator = c.func_name == "_+_"
                && matches!(c.args.first().map(|a| &a.expr), Some(Expr::Ident(n)) if n.starts_with('@'));
            if BUILDERS.contains(&c.func_name.as_str()) && !appends_to_accumulator {
                inner.builders = inner.builders.saturating_add(1);
            }
            // `lists.range(n)` builds n items whatever the data: n must be a small literal.
            let namespaced_range = c.func_name == "range"
                && matches!(c.target.as_deref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "lists");
            if c.func_name == "lists.range" || namespaced_range {
                let n = match c.args.first().map(|a| &a.expr) {
                    Some(Expr::Literal(cel::common::ast::LiteralValue::Int(n))) => {
                        u64::try_from(**n).unwrap_or(0)
                    }
                    _ => u64::MAX / 2,
                };
                inner.nodes = inner.nodes.saturating_add(n);
            }
            inner
        }
        Expr::Comprehension(c) => {
            let range = sub(&mut [&c.iter_range.expr, &c.accu_init.expr].into_iter());
            let mut body =
                sub(&mut [&c.loop_cond.expr, &c.loop_step.expr, &c.result.expr].into_iter());
            body.depth += 1;
            range.join(body)
        }
        Expr::List(l) => sub(&mut l.elements.iter().map(|x| &x.expr)),
        Expr::Map(m) => sub(&mut m.entries.iter().flat_map(|en| match &en.expr {
            cel::common::ast::EntryExpr::MapEntry(me) => vec![&me.key.expr, &me.value.expr],
            cel::common::ast::EntryExpr::StructField(f) => vec![&f.value.expr],
        })),
        Expr::Select(s) => sub(&mut std::iter::once(&s.operand.expr)),
        Expr::Struct(s) => sub(&mut s.entries.iter().flat_map(|en| match &en.expr {
            cel::common::ast::EntryExpr::MapEntry(me) => vec![&me.key.expr, &me.value.expr],
            cel::common::ast::EntryExpr::StructField(f) => vec![&f.value.expr],
        })),
        _ => Shape::default(),
    };
    out.nodes = out.nodes.saturating_add(1);
    out
}

/// cel-go's wording of the common runtime errors.
fn error_text(e: &cel::ExecutionError) -> String {
    use cel::ExecutionError as E;
    match e {
        E::NoSuchKey(k) => format!("no such key: {k}"),
        E::DivisionByZero(_) => "division by zero".into(),
        E::RemainderByZero(_) => "modulus by zero".into(),
        E::IndexOutOfBounds(v) => format!("index out of bounds: {}", plain(v)),
        E::Overflow(..) => "integer overflow".into(),
        E::FunctionError { function, message }
            if matches!(function.as_str(), "int" | "uint" | "double") =>
        {
            let _ = message;
            format!("type conversion error from 'string' to '{function}'")
        }
        E::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// Upstream's Kubernetes list library, on any list.
mod lists {
    use cel::common::types::{DYN_TYPE, LIST_TYPE};
    use cel::common::value::{CowVal, Val};
    use cel::{DeclarationError, Env, ExecutionError, Value};
    use std::cmp::Ordering;

    pub fn declare(env: &mut Env) -> Result<(), DeclarationError> {
        env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
        env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
        env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
        env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
        env.add_member_overload(
            "indexOf",
            "list_index_of",
            LIST_TYPE,
            vec![DYN_TYPE],
            index_of,
        )?;
        env.add_member_overload(
            "lastIndexOf",
            "list_last_index_of",
            LIST_TYPE,
            vec![DYN_TYPE],
            last_index_of,
        )
    }

    fn items(args: &[CowVal<'_, '_>], want: usize, f: &str) -> Result<Vec<Value>, ExecutionError> {
        if args.len() != want {
            return Err(ExecutionError::invalid_argument_count(want, args.len()));
        }
        match Value::try_from(args[0].as_ref()) {
            Ok(Value::List(l)) => Ok(l.as_ref().clone()),
            _ => Err(ExecutionError::function_error(f, "receiver is not a list")),
        }
    }

    fn out<'b, 'v>(v: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Box::<dyn Val>::try_from(v)
            .map(CowVal::Owned)
            .map_err(|_| ExecutionError::function_error("list", "unrepresentable value"))
    }

    fn order(a: &Value, b: &Value, f: &str) -> Result<Ordering, ExecutionError> {
        a.partial_cmp(b)
            .ok_or_else(|| ExecutionError::function_error(f, "list elements are not comparable"))
    }

    fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let l = items(&args, 1, "isSorted")?;
        for w in l.windows(2) {
            if order(&w[0], &w[1], "isSorted")? == Ordering::Greater {
                return out(Value::Bool(false));
            }
        }
        out(Value::Bool(true))
    }

    fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let l = items(&args, 1, "sum")?;
        let overflow = || ExecutionError::function_error("sum", "integer overflow");
        let total = match l.first() {
            None | Some(Value::Int(_)) => {
                let mut t: i64 = 0;
                for v in &l {
                    let Value::Int(i) = v else {
                        return Err(ExecutionError::function_error("sum", "mixed types"));
                    };
                    t = t.checked_add(*i).ok_or_else(overflow)?;
                }
                Value::Int(t)
            }
            Some(Value::UInt(_)) => {
                let mut t: u64 = 0;
                for v in &l {
                    let Value::UInt(u) = v else {
                        return Err(ExecutionError::function_error("sum", "mixed types"));
                    };
                    t = t.checked_add(*u).ok_or_else(overflow)?;
                }
                Value::UInt(t)
            }
            Some(Value::Float(_)) => {
                let mut t = 0.0;
                for v in &l {
                    let Value::Float(f) = v else {
                        return Err(ExecutionError::function_error("sum", "mixed types"));
                    };
                    t += f;
                }
                Value::Float(t)
            }
            Some(_) => return Err(ExecutionError::function_error("sum", "no such overload")),
        };
        out(total)
    }

    fn extreme<'b, 'v>(
        args: Vec<CowVal<'b, 'v>>,
        f: &str,
        keep: Ordering,
    ) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let l = items(&args, 1, f)?;
        let mut it = l.into_iter();
        let Some(mut best) = it.next() else {
            return Err(ExecutionError::function_error(
                f,
                format!("{f} called on empty list"),
            ));
        };
        for v in it {
            if order(&v, &best, f)? == keep {
                best = v;
            }
        }
        out(best)
    }

    fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        extreme(args, "min", Ordering::Less)
    }

    fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        extreme(args, "max", Ordering::Greater)
    }

    fn find<'b, 'v>(
        args: Vec<CowVal<'b, 'v>>,
        last: bool,
    ) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let l = items(&args, 2, "indexOf")?;
        let x = Value::try_from(args[1].as_ref())
            .map_err(|_| ExecutionError::function_error("indexOf", "unsupported value"))?;
        let pos = if last {
            l.iter().rposition(|v| *v == x)
        } else {
            l.iter().position(|v| *v == x)
        };
        out(Value::Int(pos.map_or(-1, |p| p as i64)))
    }

    fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        find(args, false)
    }

    fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        find(args, true)
    }
}

/// `sets.contains`/`equivalent`/`intersects`, the regex library's `find`/`findAll`, and
/// `cel.@mapInsert` (what `transformMap` expands to).
mod more {
    use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, MAP_TYPE, STRING_TYPE};
    use cel::common::value::{CowVal, Val};
    use cel::objects::{Key, Map};
    use cel::{DeclarationError, Env, ExecutionError, Value};
    use std::sync::Arc;

    pub fn declare(env: &mut Env) -> Result<(), DeclarationError> {
        env.add_overload(
            "sets.contains",
            "sets_contains",
            vec![LIST_TYPE, LIST_TYPE],
            contains,
        )?;
        env.add_overload(
            "sets.equivalent",
            "sets_equivalent",
            vec![LIST_TYPE, LIST_TYPE],
            equivalent,
        )?;
        env.add_overload(
            "sets.intersects",
            "sets_intersects",
            vec![LIST_TYPE, LIST_TYPE],
            intersects,
        )?;
        env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
        env.add_member_overload(
            "findAll",
            "string_find_all",
            STRING_TYPE,
            vec![STRING_TYPE],
            find_all,
        )?;
        env.add_member_overload(
            "findAll",
            "string_find_all_n",
            STRING_TYPE,
            vec![STRING_TYPE, INT_TYPE],
            find_all_n,
        )?;
        env.add_overload(
            "cel.@mapInsert",
            "map_insert_key_value",
            vec![MAP_TYPE, DYN_TYPE, DYN_TYPE],
            map_insert,
        )?;
        env.add_overload(
            "cel.@mapInsert",
            "map_insert_map",
            vec![MAP_TYPE, MAP_TYPE],
            map_merge,
        )
    }

    fn values(args: &[CowVal<'_, '_>], f: &str) -> Result<Vec<Value>, ExecutionError> {
        args.iter()
            .map(|a| Value::try_from(a.as_ref()))
            .collect::<Result<_, _>>()
            .map_err(|_| ExecutionError::function_error(f, "unsupported argument"))
    }

    fn out<'b, 'v>(v: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Box::<dyn Val>::try_from(v)
            .map(CowVal::Owned)
            .map_err(|_| ExecutionError::function_error("cel", "unrepresentable value"))
    }

    fn two_lists(
        args: &[CowVal<'_, '_>],
        f: &str,
    ) -> Result<(Vec<Value>, Vec<Value>), ExecutionError> {
        match values(args, f)?.as_slice() {
            [Value::List(a), Value::List(b)] => Ok((a.as_ref().clone(), b.as_ref().clone())),
            _ => Err(ExecutionError::function_error(f, "no such overload")),
        }
    }

    fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (a, b) = two_lists(&args, "sets.contains")?;
        out(Value::Bool(b.iter().all(|x| a.contains(x))))
    }

    fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (a, b) = two_lists(&args, "sets.equivalent")?;
        out(Value::Bool(
            b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x)),
        ))
    }

    fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (a, b) = two_lists(&args, "sets.intersects")?;
        out(Value::Bool(b.iter().any(|x| a.contains(x))))
    }

    fn pattern(args: &[CowVal<'_, '_>], f: &str) -> Result<(String, regex::Regex), ExecutionError> {
        match values(args, f)?.as_slice() {
            [Value::String(s), Value::String(p), ..] => {
                let re = regex::Regex::new(p)
                    .map_err(|e| ExecutionError::function_error(f, e.to_string()))?;
                Ok((s.to_string(), re))
            }
            _ => Err(ExecutionError::function_error(f, "no such overload")),
        }
    }

    fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (s, re) = pattern(&args, "find")?;
        let found = re.find(&s).map_or("", |m| m.as_str());
        out(Value::from(found))
    }

    fn all_matches(s: &str, re: &regex::Regex, n: i64) -> Value {
        let limit = usize::try_from(n).unwrap_or(usize::MAX);
        let found: Vec<Value> = re
            .find_iter(s)
            .take(limit)
            .map(|m| Value::from(m.as_str()))
            .collect();
        Value::from(found)
    }

    fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (s, re) = pattern(&args, "findAll")?;
        out(all_matches(&s, &re, -1))
    }

    fn find_all_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (s, re) = pattern(&args, "findAll")?;
        let n = match values(&args, "findAll")?.get(2) {
            Some(Value::Int(n)) => *n,
            _ => {
                return Err(ExecutionError::function_error(
                    "findAll",
                    "no such overload",
                ))
            }
        };
        out(all_matches(&s, &re, n))
    }

    fn map_insert<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let mut vs = values(&args, "cel.@mapInsert")?.into_iter();
        let (Some(Value::Map(m)), Some(k), Some(v)) = (vs.next(), vs.next(), vs.next()) else {
            return Err(ExecutionError::function_error(
                "cel.@mapInsert",
                "no such overload",
            ));
        };
        let key: Key = k
            .try_into()
            .map_err(|_| ExecutionError::function_error("cel.@mapInsert", "unsupported key"))?;
        let mut entries = m.map.as_ref().clone();
        entries.insert(key, v);
        out(Value::Map(Map {
            map: Arc::new(entries),
        }))
    }

    fn map_merge<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        match values(&args, "cel.@mapInsert")?.as_slice() {
            [Value::Map(a), Value::Map(b)] => {
                let mut entries = a.map.as_ref().clone();
                for (k, v) in b.map.iter() {
                    entries.insert(k.clone(), v.clone());
                }
                out(Value::Map(Map {
                    map: Arc::new(entries),
                }))
            }
            _ => Err(ExecutionError::function_error(
                "cel.@mapInsert",
                "no such overload",
            )),
        }
    }
}

/// Kubernetes quantities (`resource.Quantity`) as CEL values.
mod quantity {
    use cel::common::types::{Type, DYN_TYPE, STRING_TYPE};
    use cel::common::value::{CowVal, Val};
    use cel::objects::Opaque;
    use cel::{DeclarationError, Env, ExecutionError, Value};
    use std::cmp::Ordering;
    use std::sync::Arc;

    const TYPE_NAME: &str = "kubernetes.Quantity";
    const SYNTAX: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    /// Nano units in one unit.
    const NANO: i128 = 1_000_000_000;

    /// A quantity's value in nano units (upstream keeps arbitrary precision; nano is the
    /// finest suffix).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Quantity(i128);

    impl Opaque for Quantity {
        fn runtime_type_name(&self) -> &str {
            TYPE_NAME
        }
    }

    fn ty() -> Type {
        Type::new_opaque_type(TYPE_NAME)
    }

    pub fn declare(env: &mut Env) -> Result<(), DeclarationError> {
        env.add_overload(
            "quantity",
            "string_to_quantity",
            vec![STRING_TYPE],
            to_quantity,
        )?;
        env.add_overload(
            "isQuantity",
            "is_quantity_string",
            vec![STRING_TYPE],
            is_quantity,
        )?;
        env.add_member_overload("sign", "quantity_sign", ty(), vec![], sign)?;
        env.add_member_overload("isInteger", "quantity_is_integer", ty(), vec![], is_integer)?;
        env.add_member_overload("asInteger", "quantity_as_integer", ty(), vec![], as_integer)?;
        env.add_member_overload(
            "asApproximateFloat",
            "quantity_as_float",
            ty(),
            vec![],
            as_float,
        )?;
        env.add_member_overload("isGreaterThan", "quantity_gt", ty(), vec![ty()], greater)?;
        env.add_member_overload("isLessThan", "quantity_lt", ty(), vec![ty()], less)?;
        env.add_member_overload("compareTo", "quantity_cmp", ty(), vec![ty()], compare_to)?;
        env.add_member_overload("add", "quantity_add", ty(), vec![DYN_TYPE], add)?;
        env.add_member_overload("sub", "quantity_sub", ty(), vec![DYN_TYPE], sub)
    }

    /// Parses `s` (`1.5Gi`, `500m`, `1e3`) to nano units; `None` when malformed or too large.
    fn parse(s: &str) -> Option<i128> {
        let num_len = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
            .unwrap_or(s.len());
        let (num, suffix) = s.split_at(num_len);
        let (negative, digits) = match num.as_bytes().first()? {
            b'-' => (true, &num[1..]),
            b'+' => (false, &num[1..]),
            _ => (false, num),
        };
        let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if (whole.is_empty() && frac.is_empty())
            || !whole
                .bytes()
                .chain(frac.bytes())
                .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let (binary_pow, decimal_exp): (u32, i32) = match suffix {
            "" => (0, 0),
            "Ki" => (10, 0),
            "Mi" => (20, 0),
            "Gi" => (30, 0),
            "Ti" => (40, 0),
            "Pi" => (50, 0),
            "Ei" => (60, 0),
            "n" => (0, -9),
            "u" => (0, -6),
            "m" => (0, -3),
            "k" => (0, 3),
            "M" => (0, 6),
            "G" => (0, 9),
            "T" => (0, 12),
            "P" => (0, 15),
            "E" => (0, 18),
            other => {
                let exp = other.strip_prefix(['e', 'E'])?;
                (0, exp.parse::<i32>().ok()?)
            }
        };
        let mut mantissa: i128 = 0;
        for b in whole.bytes().chain(frac.bytes()) {
            mantissa = mantissa
                .checked_mul(10)?
                .checked_add(i128::from(b - b'0'))?;
        }
        mantissa = mantissa.checked_mul(1i128 << binary_pow)?;
        // value = mantissa * 10^(exp - 9) units: nano units are mantissa * 10^exp.
        let exp = i64::from(decimal_exp) - frac.len() as i64 + 9;
        let nano = if exp >= 0 {
            mantissa.checked_mul(10i128.checked_pow(u32::try_from(exp).ok()?)?)?
        } else {
            // Finer than nano rounds up, as upstream's canonical form does.
            match u32::try_from(-exp).ok().and_then(|e| 10i128.checked_pow(e)) {
                Some(div) => mantissa / div + i128::from(mantissa % div != 0),
                None => i128::from(mantissa != 0),
            }
        };
        Some(if negative { -nano } else { nano })
    }

    fn out<'b, 'v>(v: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Box::<dyn Val>::try_from(v)
            .map(CowVal::Owned)
            .map_err(|_| ExecutionError::function_error("quantity", "unrepresentable value"))
    }

    fn value(q: i128) -> Value {
        Value::Opaque(Arc::new(Quantity(q)))
    }

    fn arg(v: &CowVal<'_, '_>, f: &str) -> Result<i128, ExecutionError> {
        match Value::try_from(v.as_ref()) {
            Ok(Value::Opaque(o)) => o
                .downcast_ref::<Quantity>()
                .map(|q| q.0)
                .ok_or_else(|| ExecutionError::function_error(f, "not a quantity")),
            Ok(Value::Int(i)) => i128::from(i)
                .checked_mul(NANO)
                .ok_or_else(|| ExecutionError::function_error(f, "overflow")),
            _ => Err(ExecutionError::function_error(f, "no such overload")),
        }
    }

    fn string_arg(args: &[CowVal<'_, '_>], f: &str) -> Result<String, ExecutionError> {
        match args.first().map(|a| Value::try_from(a.as_ref())) {
            Some(Ok(Value::String(s))) => Ok(s.to_string()),
            _ => Err(ExecutionError::function_error(f, "no such overload")),
        }
    }

    fn to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let s = string_arg(&args, "quantity")?;
        let q = parse(&s).ok_or_else(|| ExecutionError::function_error("quantity", SYNTAX))?;
        out(value(q))
    }

    fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let s = string_arg(&args, "isQuantity")?;
        out(Value::Bool(parse(&s).is_some()))
    }

    fn receiver(args: &[CowVal<'_, '_>], f: &str) -> Result<i128, ExecutionError> {
        match args.first() {
            Some(a) => arg(a, f),
            None => Err(ExecutionError::invalid_argument_count(1, 0)),
        }
    }

    fn other(args: &[CowVal<'_, '_>], f: &str) -> Result<i128, ExecutionError> {
        match args.get(1) {
            Some(a) => arg(a, f),
            None => Err(ExecutionError::invalid_argument_count(2, args.len())),
        }
    }

    fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        out(Value::Int(receiver(&args, "sign")?.signum() as i64))
    }

    fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let q = receiver(&args, "isInteger")?;
        out(Value::Bool(
            q % NANO == 0 && i64::try_from(q / NANO).is_ok(),
        ))
    }

    fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let q = receiver(&args, "asInteger")?;
        match i64::try_from(q / NANO) {
            Ok(i) if q % NANO == 0 => out(Value::Int(i)),
            _ => Err(ExecutionError::function_error(
                "asInteger",
                "cannot convert value to integer",
            )),
        }
    }

    fn as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let q = receiver(&args, "asApproximateFloat")?;
        out(Value::Float(q as f64 / NANO as f64))
    }

    fn cmp(args: &[CowVal<'_, '_>], f: &str) -> Result<Ordering, ExecutionError> {
        Ok(receiver(args, f)?.cmp(&other(args, f)?))
    }

    fn greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        out(Value::Bool(
            cmp(&args, "isGreaterThan")? == Ordering::Greater,
        ))
    }

    fn less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        out(Value::Bool(cmp(&args, "isLessThan")? == Ordering::Less))
    }

    fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        out(Value::Int(cmp(&args, "compareTo")? as i64))
    }

    fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let sum = receiver(&args, "add")?
            .checked_add(other(&args, "add")?)
            .ok_or_else(|| ExecutionError::function_error("add", "overflow"))?;
        out(value(sum))
    }

    fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let diff = receiver(&args, "sub")?
            .checked_sub(other(&args, "sub")?)
            .ok_or_else(|| ExecutionError::function_error("sub", "overflow"))?;
        out(value(diff))
    }
}
