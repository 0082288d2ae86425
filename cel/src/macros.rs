//! Macros upstream's environment has that the parser crate does not: cel-go's two-variable
//! comprehensions (`all(i, v, p)`, `exists`, `existsOne`, `transformList`, `transformMap`,
//! `transformMapEntry`) and `cel.bind`, expanded into comprehensions as cel-go expands them.

use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr,
};
use cel::parser::{Macro, MacroExprHelper, ParseError};

const ACCU: &str = "@result";

pub fn all() -> Vec<Macro> {
    let mut macros = vec![
        Macro::receiver("all", 3, |h, t, a| quantifier(h, t, a, Quantifier::All)),
        Macro::receiver("exists", 3, |h, t, a| {
            quantifier(h, t, a, Quantifier::Exists)
        }),
        Macro::receiver("existsOne", 3, |h, t, a| {
            quantifier(h, t, a, Quantifier::One)
        }),
        Macro::receiver("exists_one", 3, |h, t, a| {
            quantifier(h, t, a, Quantifier::One)
        }),
        Macro::receiver("bind", 3, bind),
    ];
    for arity in [3, 4] {
        macros.push(Macro::receiver("transformList", arity, |h, t, a| {
            transform(h, t, a, Transform::List)
        }));
        macros.push(Macro::receiver("transformMap", arity, |h, t, a| {
            transform(h, t, a, Transform::Map)
        }));
        macros.push(Macro::receiver("transformMapEntry", arity, |h, t, a| {
            transform(h, t, a, Transform::Entry)
        }));
    }
    macros
}

#[derive(Clone, Copy)]
enum Quantifier {
    All,
    Exists,
    One,
}

#[derive(Clone, Copy)]
enum Transform {
    List,
    Map,
    Entry,
}

fn ident(h: &mut MacroExprHelper<'_>, e: IdedExpr) -> Result<String, ParseError> {
    match e.expr {
        Expr::Ident(name) => Ok(name),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    }
}

fn call(h: &mut MacroExprHelper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr {
        func_name: name.to_string(),
        target: None,
        args,
    }))
}

fn accu(h: &mut MacroExprHelper<'_>) -> IdedExpr {
    h.next_expr(Expr::Ident(ACCU.to_string()))
}

fn literal(h: &mut MacroExprHelper<'_>, v: LiteralValue) -> IdedExpr {
    h.next_expr(Expr::Literal(v))
}

#[allow(clippy::too_many_arguments)]
fn comprehension(
    h: &mut MacroExprHelper<'_>,
    range: IdedExpr,
    var: String,
    var2: Option<String>,
    accu_var: String,
    init: IdedExpr,
    cond: IdedExpr,
    step: IdedExpr,
    result: IdedExpr,
) -> IdedExpr {
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: var,
        iter_var2: var2,
        accu_var,
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })))
}

fn quantifier(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    q: Quantifier,
) -> Result<Option<IdedExpr>, ParseError> {
    let Some(range) = target.take() else {
        return Ok(None);
    };
    let predicate = args.pop().expect("arity 3");
    let v2 = ident(h, args.pop().expect("arity 3"))?;
    let v1 = ident(h, args.pop().expect("arity 3"))?;
    let (init, cond, step, result) = match q {
        Quantifier::All | Quantifier::Exists => {
            let all = matches!(q, Quantifier::All);
            let init = literal(h, LiteralValue::Boolean(all.into()));
            let a = accu(h);
            let strict_arg = if all {
                a
            } else {
                call(h, operators::LOGICAL_NOT, vec![a])
            };
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![strict_arg]);
            let a = accu(h);
            let op = if all {
                operators::LOGICAL_AND
            } else {
                operators::LOGICAL_OR
            };
            let step = call(h, op, vec![a, predicate]);
            (init, cond, step, accu(h))
        }
        Quantifier::One => {
            let init = literal(h, LiteralValue::Int(0.into()));
            let cond = literal(h, LiteralValue::Boolean(true.into()));
            let (a, one) = (accu(h), literal(h, LiteralValue::Int(1.into())));
            let plus = call(h, operators::ADD, vec![a, one]);
            let a = accu(h);
            let step = call(h, operators::CONDITIONAL, vec![predicate, plus, a]);
            let (a, one) = (accu(h), literal(h, LiteralValue::Int(1.into())));
            let result = call(h, operators::EQUALS, vec![a, one]);
            (init, cond, step, result)
        }
    };
    Ok(Some(comprehension(
        h,
        range,
        v1,
        Some(v2),
        ACCU.into(),
        init,
        cond,
        step,
        result,
    )))
}

fn transform(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    t: Transform,
) -> Result<Option<IdedExpr>, ParseError> {
    let Some(range) = target.take() else {
        return Ok(None);
    };
    let value = args.pop().expect("arity 3 or 4");
    let filter = if args.len() == 3 { args.pop() } else { None };
    let v2 = ident(h, args.pop().expect("arity 3 or 4"))?;
    let v1 = ident(h, args.pop().expect("arity 3 or 4"))?;
    let init = match t {
        Transform::List => h.next_expr(Expr::List(ListExpr::new(vec![]))),
        Transform::Map | Transform::Entry => h.next_expr(Expr::Map(MapExpr { entries: vec![] })),
    };
    let a = accu(h);
    let step = match t {
        Transform::List => {
            let single = h.next_expr(Expr::List(ListExpr::new(vec![value])));
            call(h, operators::ADD, vec![a, single])
        }
        Transform::Map => {
            let key = h.next_expr(Expr::Ident(v1.clone()));
            call(h, "cel.@mapInsert", vec![a, key, value])
        }
        Transform::Entry => call(h, "cel.@mapInsert", vec![a, value]),
    };
    let step = match filter {
        Some(f) => {
            let a = accu(h);
            call(h, operators::CONDITIONAL, vec![f, step, a])
        }
        None => step,
    };
    let cond = literal(h, LiteralValue::Boolean(true.into()));
    let result = accu(h);
    Ok(Some(comprehension(
        h,
        range,
        v1,
        Some(v2),
        ACCU.into(),
        init,
        cond,
        step,
        result,
    )))
}

/// `cel.bind(name, init, body)`: `body` with `name` bound to `init`'s value.
fn bind(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
        return Ok(None);
    }
    let body = args.pop().expect("arity 3");
    let init = args.pop().expect("arity 3");
    let name = match args.pop().expect("arity 3") {
        IdedExpr {
            expr: Expr::Ident(name),
            ..
        } => name,
        other => {
            return Err(h.new_error(
                other.id,
                "cel.bind() variable names must be simple identifiers",
            ))
        }
    };
    let range = h.next_expr(Expr::List(ListExpr::new(vec![])));
    let cond = literal(h, LiteralValue::Boolean(false.into()));
    let step = h.next_expr(Expr::Ident(name.clone()));
    Ok(Some(comprehension(
        h,
        range,
        "#unused".into(),
        None,
        name,
        init,
        cond,
        step,
        body,
    )))
}
