//! Upstream's semver library (`semver`, `isSemver`, `major`, `minor`, `patch`,
//! `isGreaterThan`, `isLessThan`, `compareTo`), which is blang/semver v4's `Parse` with
//! upstream's optional normalisation.
//!
//! Hand-written rather than the `semver` crate: blang's error text is upstream's answer
//! (`No Major.Minor.Patch elements found`), and the two differ at the edges (blang accepts
//! `v1.0.0` is refused by both, but blang reports an empty number with `strconv`'s text and
//! the crate's `Version` equality counts build metadata, which blang's does not).

use super::glue::{fail, no_overload, opaque_at, out, string_at, values};
use cel::common::types::{Type, BOOL_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::cmp::Ordering;
use std::sync::Arc;

const TYPE_NAME: &str = "kubernetes.Semver";

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Str(String),
}

/// A version; build metadata is checked but, as in blang, does not take part in comparing.
#[derive(Clone, Debug)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

/// blang's `EQ`: equal when they compare equal (build metadata ignored).
impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

fn ty() -> Type {
    Type::new_opaque_type(TYPE_NAME)
}

pub fn declare(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload("major", "semver_major", ty(), vec![], major)?;
    env.add_member_overload("minor", "semver_minor", ty(), vec![], minor)?;
    env.add_member_overload("patch", "semver_patch", ty(), vec![], patch)?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        ty(),
        vec![ty()],
        greater,
    )?;
    env.add_member_overload("isLessThan", "semver_is_less_than", ty(), vec![ty()], less)?;
    env.add_member_overload(
        "compareTo",
        "semver_compare_to",
        ty(),
        vec![ty()],
        compare_to,
    )
}

const NUMBERS: &str = "0123456789";

fn contains_only(s: &str, set: impl Fn(char) -> bool) -> bool {
    s.chars().all(set)
}

fn alphanum(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// Go's `strconv.ParseUint(s, 10, 64)` on digits, with its error text.
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go(s)
        ));
    }
    s.parse::<u64>()
        .map_err(|_| format!("strconv.ParseUint: parsing {}: value out of range", go(s)))
}

fn go(s: &str) -> String {
    super::glue::go_quote(s)
}

/// A numeric part: digits only, no leading zero.
fn number(s: &str, what: &str, capital: &str) -> Result<u64, String> {
    if !contains_only(s, |c| NUMBERS.contains(c)) {
        return Err(format!(
            "Invalid character(s) found in {what} number {}",
            go(s)
        ));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(format!(
            "{capital} number must not contain leading zeroes {}",
            go(s)
        ));
    }
    parse_uint(s)
}

/// blang's `Parse`.
fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let major = number(parts[0], "major", "Major")?;
    let minor = number(parts[1], "minor", "Minor")?;
    let mut patch = parts[2];
    let mut build: Vec<&str> = Vec::new();
    let mut pre: Vec<&str> = Vec::new();
    if let Some(i) = patch.find('+') {
        build = patch[i + 1..].split('.').collect();
        patch = &patch[..i];
    }
    if let Some(i) = patch.find('-') {
        pre = patch[i + 1..].split('.').collect();
        patch = &patch[..i];
    }
    let patch = number(patch, "patch", "Patch")?;
    let pre = pre
        .into_iter()
        .map(|p| {
            if p.is_empty() {
                Err("Prerelease is empty".to_string())
            } else if contains_only(p, |c| c.is_ascii_digit()) {
                if p.len() > 1 && p.starts_with('0') {
                    return Err(format!(
                        "Numeric PreRelease version must not contain leading zeroes {}",
                        go(p)
                    ));
                }
                parse_uint(p).map(Pre::Num)
            } else if contains_only(p, alphanum) {
                Ok(Pre::Str(p.to_string()))
            } else {
                Err(format!(
                    "Invalid character(s) found in prerelease {}",
                    go(p)
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    for b in build {
        if b.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !contains_only(b, alphanum) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                go(b)
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre,
    })
}

/// Upstream's `normalizeAndParse`: a leading `v` dropped, leading zeros trimmed, missing
/// minor and patch numbers filled in with 0.
fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_string();
            }
            let t = p.trim_start_matches('0');
            if t.starts_with(|c: char| c.is_ascii_digit()) {
                t.to_string()
            } else {
                format!("0{t}")
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".to_string());
    }
    parse(&parts.join("."))
}

impl Semver {
    /// blang's `Compare`.
    fn compare(&self, o: &Semver) -> Ordering {
        let core = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let c = match (a, b) {
                (Pre::Num(a), Pre::Num(b)) => a.cmp(b),
                (Pre::Num(_), Pre::Str(_)) => Ordering::Less,
                (Pre::Str(_), Pre::Num(_)) => Ordering::Greater,
                (Pre::Str(a), Pre::Str(b)) => a.cmp(b),
            };
            if c != Ordering::Equal {
                return c;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

/// The string and the `normalize` flag (false when absent).
fn args_of(args: &[CowVal<'_, '_>], f: &str) -> Result<(String, bool), ExecutionError> {
    let s = string_at(args, 0, f)?;
    let normalize = match values(args, f)?.get(1) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(no_overload(f)),
    };
    Ok((s, normalize))
}

fn parse_with(s: &str, normalize: bool) -> Result<Semver, String> {
    if normalize {
        normalize_and_parse(s)
    } else {
        parse(s)
    }
}

fn to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, normalize) = args_of(&args, "semver")?;
    let v = parse_with(&s, normalize).map_err(|e| fail("semver", e))?;
    out(Value::Opaque(Arc::new(v)))
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, normalize) = args_of(&args, "isSemver")?;
    out(Value::Bool(parse_with(&s, normalize).is_ok()))
}

fn major<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    // Go converts the uint64 to int64 as is.
    out(Value::Int(
        opaque_at::<Semver>(&args, 0, "major")?.major as i64,
    ))
}

fn minor<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::Int(
        opaque_at::<Semver>(&args, 0, "minor")?.minor as i64,
    ))
}

fn patch<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::Int(
        opaque_at::<Semver>(&args, 0, "patch")?.patch as i64,
    ))
}

fn cmp(args: &[CowVal<'_, '_>], f: &str) -> Result<Ordering, ExecutionError> {
    let a = opaque_at::<Semver>(args, 0, f)?;
    let b = opaque_at::<Semver>(args, 1, f)?;
    Ok(a.compare(&b))
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

#[cfg(test)]
mod tests {
    use super::super::glue::testing::check;
    use cel::Value;

    /// Upstream's `semver_test.go` cases, and blang's precedence and errors.
    #[test]
    fn upstream_semver_cases() {
        let t = || Ok(Value::Bool(true));
        let f = || Ok(Value::Bool(false));
        check(&[
            (r#"semver("1.2.3") == semver("1.2.3+build")"#, t()),
            (
                r#"semver("v1.0")"#,
                Err("No Major.Minor.Patch elements found"),
            ),
            (r#"isSemver("1.2.3-beta.1+build.1")"#, t()),
            (r#"isSemver("")"#, f()),
            (r#"isSemver("v1.0.0")"#, f()),
            (r#"isSemver(" 1.0.0")"#, f()),
            (r#"isSemver("1. 0.0")"#, f()),
            (r#"isSemver("1.0.0 ")"#, f()),
            (r#"isSemver("01.01.01")"#, f()),
            (r#"isSemver("1")"#, f()),
            (r#"isSemver("1.1")"#, f()),
            (r#"isSemver("", true)"#, f()),
            (r#"isSemver(" 1.0.0", true)"#, f()),
            (r#"isSemver("1. 0.0", true)"#, f()),
            (r#"isSemver("1.0.0 ", true)"#, f()),
            (r#"isSemver("v1.0.0", true)"#, t()),
            (r#"isSemver("01.01.01", true)"#, t()),
            (r#"isSemver("1", true)"#, t()),
            (r#"isSemver("1.1", true)"#, t()),
            (r#"semver("v01.01", true) == semver("1.1.0")"#, t()),
            (r#"semver("1.2.3") == semver("1.2.3")"#, t()),
            (r#"semver("1.2.3") == semver("1.0.0")"#, f()),
            (r#"semver("1.0.0").isLessThan(semver("1.2.3"))"#, t()),
            (r#"semver("1.0.0").isLessThan(semver("1.0.0"))"#, f()),
            (r#"semver("1.2.3").isGreaterThan(semver("1.0.0"))"#, t()),
            (r#"semver("1.0.0").isGreaterThan(semver("1.0.0"))"#, f()),
            (
                r#"semver("1.2.3").compareTo(semver("1.2.3"))"#,
                Ok(Value::Int(0)),
            ),
            (
                r#"semver("1.0.0").compareTo(semver("1.2.3"))"#,
                Ok(Value::Int(-1)),
            ),
            (
                r#"semver("1.2.3").compareTo(semver("1.0.0"))"#,
                Ok(Value::Int(1)),
            ),
            (r#"semver("1.2.3").major()"#, Ok(Value::Int(1))),
            (r#"semver("1.2.3").minor()"#, Ok(Value::Int(2))),
            (r#"semver("1.2.3").patch()"#, Ok(Value::Int(3))),
            // blang's precedence: a pre-release is lower; numeric identifiers below others.
            (r#"semver("1.0.0-alpha").isLessThan(semver("1.0.0"))"#, t()),
            (
                r#"semver("1.0.0-1").isLessThan(semver("1.0.0-alpha"))"#,
                t(),
            ),
            (
                r#"semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))"#,
                t(),
            ),
            (r#"semver("1.0.0-2").isLessThan(semver("1.0.0-10"))"#, t()),
            (
                r#"semver("01.0.0")"#,
                Err(r#"Major number must not contain leading zeroes "01""#),
            ),
            (
                r#"semver("1.x.0")"#,
                Err(r#"Invalid character(s) found in minor number "x""#),
            ),
            (
                r#"semver("1.2.3-01")"#,
                Err(r#"Numeric PreRelease version must not contain leading zeroes "01""#),
            ),
            (r#"semver("1.2", true).patch()"#, Ok(Value::Int(0))),
            (
                r#"semver("1.2-rc", true)"#,
                Err("short version cannot contain PreRelease/Build meta data"),
            ),
        ]);
    }
}
