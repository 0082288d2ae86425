//! CEL expressions compiled as upstream's API server compiles them (cel-go): parsed, macros
//! expanded, type-checked against an environment's variables and upstream's function
//! libraries, with cel-go's error text (`ERROR: <input>:L:C: message`, the source line and a
//! caret under the column), so validation answers carry upstream's messages.
//!
//! Evaluation ([`eval`]) runs programs with the `cel` crate's interpreter (what the
//! checker accepts but the interpreter lacks is listed there).
//!
//! Cost estimation ([`cost`], [`compile_with_cost`]) is cel-go's static estimate with the
//! estimator upstream's API server installs: the worst-case cost of a checked expression
//! from the sizes its caller knows (a CRD's schema: `maxLength`, `maxItems`,
//! `maxProperties`). What it does not price as upstream does is listed there.
//!
//! Not done: the checks upstream's validators make of literal arguments other than a
//! `matches` pattern (durations, timestamps).

mod check;
pub mod cost;
pub mod eval;
mod macros;
mod stdlib;
pub mod types;

use cel::common::ast::SourceInfo;
use std::collections::HashMap;
use std::sync::LazyLock;
pub use types::Type;

/// What an expression may refer to beyond the libraries: variables and object types.
#[derive(Clone, Debug, Default)]
pub struct Env {
    variables: HashMap<String, Type>,
    objects: HashMap<String, HashMap<String, Type>>,
    /// The largest sizes of what the variables hold, for cost estimation.
    sizes: Option<std::sync::Arc<cost::Sizes>>,
}

impl Env {
    pub fn variable(mut self, name: &str, t: Type) -> Self {
        self.variables.insert(name.to_string(), t);
        self
    }

    /// The sizes every variable's paths are estimated from (upstream types all of an
    /// expression's variables, `self` and `oldSelf`, from one schema node).
    pub fn sizes(mut self, sizes: cost::Sizes) -> Self {
        self.sizes = Some(std::sync::Arc::new(sizes));
        self
    }

    /// Declares an object type and its fields (`Type::Object(name)`).
    pub fn object(mut self, name: &str, fields: &[(&str, Type)]) -> Self {
        self.objects.insert(
            name.to_string(),
            fields
                .iter()
                .map(|(f, t)| (f.to_string(), t.clone()))
                .collect(),
        );
        self
    }
}

/// The parser with upstream's macros and optional syntax.
static PARSER_ENV: LazyLock<cel::Env> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib().with_optional_support(true);
    for m in macros::all() {
        env.add_macro(m).expect("macros are distinct");
    }
    env
});

/// Compiles `source` in `env`: its output type, or cel-go's issues text.
pub fn compile(env: &Env, source: &str) -> Result<Type, String> {
    checked(env, source).map(|c| c.output)
}

/// Compiles `source` in `env` and estimates its cost from the env's sizes: its output type
/// and cost range, or cel-go's issues text.
pub fn compile_with_cost(env: &Env, source: &str) -> Result<(Type, cost::Estimate), String> {
    let c = checked(env, source)?;
    let types = c.checker.final_types();
    let mut coster = cost::Coster::new(&types, &c.checker.calls, env.sizes.as_deref());
    let estimate = coster.cost(&c.expr);
    Ok((c.output, estimate))
}

struct Checked<'e> {
    expr: cel::IdedExpr,
    checker: check::Checker<'e>,
    output: Type,
}

fn checked<'e>(env: &'e Env, source: &str) -> Result<Checked<'e>, String> {
    if source.is_empty() {
        return Err(format!(
            "ERROR: <input>:1:0: {}",
            syntax_expecting("mismatched input '<EOF>'")
        ));
    }
    let (expr, info) = match PARSER_ENV.parser().parse_with_source_info(source) {
        Ok(parsed) => parsed,
        Err(errors) => {
            let mut issues: Vec<((isize, isize), String)> = errors
                .errors
                .iter()
                .map(|e| (e.pos, e.msg.clone()))
                .collect();
            // The parser crate also reports the nodes a syntax error left incomplete;
            // cel-go reports only the syntax error.
            if issues.iter().any(|(_, m)| !m.starts_with("Incomplete ")) {
                issues.retain(|(_, m)| !m.starts_with("Incomplete "));
            }
            return Err(render(source, issues));
        }
    };
    let mut checker = check::Checker::new(env);
    let output = checker.check_root(&expr);
    if checker.errors.is_empty() {
        // cel-go's validators run on a program that type-checked.
        literal_patterns(&expr, &mut checker.errors, 0);
    }
    if checker.errors.is_empty() {
        return Ok(Checked {
            expr,
            checker,
            output,
        });
    }
    let issues = checker
        .errors
        .iter()
        .map(|(id, msg)| (position(source, &info, *id), msg.clone()))
        .collect();
    Err(render(source, issues))
}

/// cel-go's check of `matches` calls with a literal pattern: it must compile (RE2 syntax,
/// which the `regex` crate implements).
fn literal_patterns(e: &cel::IdedExpr, errors: &mut Vec<(u64, String)>, depth: usize) {
    use cel::common::ast::{EntryExpr, Expr, LiteralValue};
    if depth > 256 {
        return;
    }
    let d = depth + 1;
    match &e.expr {
        Expr::Call(c) => {
            if c.func_name == "matches" {
                if let Some(Expr::Literal(LiteralValue::String(p))) = c.args.last().map(|a| &a.expr)
                {
                    if regex::Regex::new(p.as_ref()).is_err() {
                        let id = c.args.last().map_or(e.id, |a| a.id);
                        errors.push((id, "invalid matches argument".into()));
                    }
                }
            }
            for x in c.target.iter().map(|t| t.as_ref()).chain(&c.args) {
                literal_patterns(x, errors, d);
            }
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                literal_patterns(x, errors, d);
            }
        }
        Expr::List(l) => l
            .elements
            .iter()
            .for_each(|x| literal_patterns(x, errors, d)),
        Expr::Map(_) | Expr::Struct(_) => {
            let entries = match &e.expr {
                Expr::Map(m) => &m.entries,
                Expr::Struct(st) => &st.entries,
                _ => unreachable!("matched above"),
            };
            for en in entries {
                match &en.expr {
                    EntryExpr::MapEntry(me) => {
                        literal_patterns(&me.key, errors, d);
                        literal_patterns(&me.value, errors, d);
                    }
                    EntryExpr::StructField(f) => literal_patterns(&f.value, errors, d),
                }
            }
        }
        Expr::Select(sel) => literal_patterns(&sel.operand, errors, d),
        _ => {}
    }
}

fn syntax_expecting(what: &str) -> String {
    format!(
        "Syntax error: {what} expecting {{'[', '{{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}}"
    )
}

/// Line and 1-based column (in characters) of an expression's start.
fn position(source: &str, info: &SourceInfo, id: u64) -> (isize, isize) {
    let Some((start, _)) = info.offset_for(id) else {
        return (1, 1);
    };
    let (mut line, mut col) = (1, 1);
    for c in source.chars().take(start as usize) {
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// cel-go's issues text: each error in source order, with its line and a caret.
fn render(source: &str, mut issues: Vec<((isize, isize), String)>) -> String {
    issues.sort_by_key(|(pos, _)| *pos);
    let lines: Vec<&str> = source.split('\n').collect();
    let mut out = Vec::with_capacity(issues.len());
    for ((line, col), msg) in issues {
        let mut text = format!("ERROR: <input>:{line}:{col}: {msg}");
        if let Some(snippet) = usize::try_from(line - 1).ok().and_then(|l| lines.get(l)) {
            let snippet = snippet.replace('\t', " ");
            let mut marker = String::new();
            let mut chars = snippet.chars();
            for _ in 1..col {
                match chars.next() {
                    Some(c) if c.len_utf8() > 1 => marker.push('\u{ff0e}'),
                    Some(_) => marker.push('.'),
                    None => break,
                }
            }
            marker.push(if chars.next().is_some_and(|c| c.len_utf8() > 1) {
                '\u{ff3e}'
            } else {
                '^'
            });
            text.push_str(&format!("\n | {snippet}\n | {marker}"));
        }
        out.push(text);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests;
