//! What the Kubernetes library modules share: turning call arguments into [`Value`]s and
//! results back, and the error a function raises.

use cel::common::value::{CowVal, Val};
use cel::{ExecutionError, Value};

/// The call's arguments as values (the receiver first for a member call).
pub fn values(args: &[CowVal<'_, '_>], f: &str) -> Result<Vec<Value>, ExecutionError> {
    args.iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<_, _>>()
        .map_err(|_| ExecutionError::function_error(f, "unsupported argument"))
}

/// A function's result.
pub fn out<'b, 'v>(v: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Box::<dyn Val>::try_from(v)
        .map(CowVal::Owned)
        .map_err(|_| ExecutionError::function_error("cel", "unrepresentable value"))
}

/// An error whose text is `message` exactly, as cel-go's `types.NewErr` reports it.
pub fn fail(f: &str, message: impl Into<String>) -> ExecutionError {
    ExecutionError::function_error(f, message.into())
}

pub fn no_overload(f: &str) -> ExecutionError {
    fail(f, "no such overload")
}

/// The string argument at `i`.
pub fn string_at(args: &[CowVal<'_, '_>], i: usize, f: &str) -> Result<String, ExecutionError> {
    match values(args, f)?.get(i) {
        Some(Value::String(s)) => Ok(s.to_string()),
        _ => Err(no_overload(f)),
    }
}

/// The opaque argument at `i`, of type `T`.
pub fn opaque_at<T: cel::objects::Opaque + Clone>(
    args: &[CowVal<'_, '_>],
    i: usize,
    f: &str,
) -> Result<T, ExecutionError> {
    match values(args, f)?.get(i) {
        Some(Value::Opaque(o)) => o.downcast_ref::<T>().cloned().ok_or_else(|| no_overload(f)),
        _ => Err(no_overload(f)),
    }
}

/// Go's `strconv.Quote` for the strings error messages quote: printable characters as they
/// are, `"` and `\` escaped, control characters as escapes.
pub fn go_quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            '\u{7}' => q.push_str("\\a"),
            '\u{8}' => q.push_str("\\b"),
            '\u{c}' => q.push_str("\\f"),
            '\u{b}' => q.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                q.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
pub mod testing {
    use cel::Value;

    /// Type-checks `expr` as the API server would, then runs it.
    pub fn eval(expr: &str) -> Result<Value, String> {
        crate::compile(&crate::Env::default(), expr).map_err(|e| format!("compile: {e}"))?;
        crate::eval::Program::parse(expr)?.execute(&[])
    }

    /// Runs each `(expression, expected)`; every expression must compile.
    pub fn check(cases: &[(&str, Result<Value, &str>)]) {
        for (expr, want) in cases {
            let got = eval(expr);
            let want = want.clone().map_err(str::to_string);
            assert_eq!(got, want, "{expr}");
        }
    }
}
