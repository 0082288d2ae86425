//! Upstream's format library: `format.named(name)` (an optional Format), `format.<name>()`
//! for each of its formats, and `Format.validate(s)`: `optional.none()` when `s` is valid,
//! else the messages upstream's validator gives.
//!
//! The name formats reuse keel-api's validators (upstream's messages). `uri` is Go's
//! `url.ParseRequestURI` ([`super::url`]); `uuid`, `byte`, `date` and `datetime` are
//! kube-openapi's `strfmt` checks (as `keel-apiext`'s `formats.rs` has them, which this
//! crate cannot depend on: apiext depends on it).

use super::glue::{no_overload, opaque_at, out, string_at};
use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};
use keel_api::names::{is_qualified_name, is_valid_label_value, NameRule};
use keel_api::strfmt;
use std::sync::Arc;

const TYPE_NAME: &str = "kubernetes.NamedFormat";

/// The formats, by the name `format.named` and `format.<name>()` use.
const NAMES: &[&str] = crate::stdlib::FORMATS;

/// One of [`NAMES`]; formats are equal when their names are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format(&'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

fn ty() -> Type {
    Type::new_opaque_type(TYPE_NAME)
}

type Call = for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError>;

/// `format.<name>()` for each format: a function per name, since overloads get no name.
macro_rules! constructors {
    ($($name:literal),*) => {
        [$(
            ($name, {
                fn make<'b, 'v>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
                    out(Value::Opaque(Arc::new(Format($name))))
                }
                make as Call
            }),
        )*]
    };
}

pub fn declare(env: &mut Env) -> Result<(), DeclarationError> {
    let made = constructors!(
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
        "datetime"
    );
    debug_assert!(made.iter().map(|(n, _)| *n).eq(NAMES.iter().copied()));
    for (name, f) in made {
        let qualified = format!("format.{name}");
        env.add_overload(&qualified, &qualified, vec![], f)?;
    }
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload(
        "validate",
        "format-validate",
        ty(),
        vec![STRING_TYPE],
        validate,
    )
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "format.named")?;
    let found = NAMES.iter().find(|n| **n == s);
    out(super::optional(
        found.map(|n| Value::Opaque(Arc::new(Format(n)))),
    ))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let f = opaque_at::<Format>(&args, 0, "validate")?;
    let s = string_at(&args, 1, "validate")?;
    let errors = messages(f.0, &s).ok_or_else(|| no_overload("validate"))?;
    let list = (!errors.is_empty())
        .then(|| Value::from(errors.into_iter().map(Value::from).collect::<Vec<_>>()));
    out(super::optional(list))
}

/// Upstream's validator for `format`, `None` for a name it does not know.
fn messages(format: &str, s: &str) -> Option<Vec<String>> {
    let one = |ok: bool, msg: &str| if ok { vec![] } else { vec![msg.to_string()] };
    Some(match format {
        "dns1123Label" => NameRule::Dns1123Label.check(s, false),
        "dns1123Subdomain" => NameRule::Dns1123Subdomain.check(s, false),
        "dns1035Label" => NameRule::Dns1035Label.check(s, false),
        "qualifiedName" => is_qualified_name(s),
        "dns1123LabelPrefix" => NameRule::Dns1123Label.check(s, true),
        "dns1123SubdomainPrefix" => NameRule::Dns1123Subdomain.check(s, true),
        "dns1035LabelPrefix" => NameRule::Dns1035Label.check(s, true),
        "labelValue" => is_valid_label_value(s),
        "uri" => super::url::parse_request_uri(s).err().into_iter().collect(),
        "uuid" => one(strfmt::is_uuid(s), "does not match the UUID format"),
        "byte" => one(strfmt::is_base64(s), "invalid base64"),
        "date" => one(strfmt::is_date(s), "invalid date"),
        "datetime" => one(strfmt::is_date_time(s), "invalid datetime"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::glue::testing::check;
    use super::NAMES;
    use cel::Value;

    fn none() -> Result<Value, &'static str> {
        Ok(crate::eval::optional(None))
    }

    fn errs(m: &[&str]) -> Result<Value, &'static str> {
        let list: Vec<Value> = m.iter().map(|s| Value::from(*s)).collect();
        Ok(crate::eval::optional(Some(Value::from(list))))
    }

    /// Upstream's `format_test.go` cases.
    #[test]
    fn upstream_format_cases() {
        const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        const SUBDOMAIN: &str = r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        const QUALIFIED: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        check(&[
            (r#"format.dns1123Label().validate("my-label-name")"#, none()),
            (
                r#"format.dns1123Subdomain().validate("apiextensions.k8s.io")"#,
                none(),
            ),
            (
                r#"format.qualifiedName().validate("apiextensions.k8s.io/v1beta1")"#,
                none(),
            ),
            (
                r#"format.dns1123LabelPrefix().validate("my-label-prefix-")"#,
                none(),
            ),
            (
                r#"format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-")"#,
                none(),
            ),
            (
                r#"format.dns1035LabelPrefix().validate("my-label-prefix-")"#,
                none(),
            ),
            (r#"format.uri().validate("http://example.com")"#, none()),
            (
                r#"format.uuid().validate("123e4567-e89b-12d3-a456-426614174000")"#,
                none(),
            ),
            (r#"format.byte().validate("aGVsbG8=")"#, none()),
            (r#"format.date().validate("2021-01-01")"#, none()),
            (
                r#"format.datetime().validate("2021-01-01T00:00:00Z")"#,
                none(),
            ),
            (
                r#"format.dns1123Label().validate("contains a space")"#,
                errs(&[LABEL]),
            ),
            (
                r#"format.dns1123Subdomain().validate("contains a space")"#,
                errs(&[SUBDOMAIN]),
            ),
            (
                r#"format.dns1035Label().validate("contains a space")"#,
                errs(&[DNS1035]),
            ),
            (
                r#"format.qualifiedName().validate("contains a space")"#,
                errs(&[QUALIFIED]),
            ),
            (
                r#"format.dns1123LabelPrefix().validate("contains a space-")"#,
                errs(&[LABEL]),
            ),
            (
                r#"format.dns1123SubdomainPrefix().validate("contains a space-")"#,
                errs(&[SUBDOMAIN]),
            ),
            (
                r#"format.dns1035LabelPrefix().validate("contains a space-")"#,
                errs(&[DNS1035]),
            ),
            (r#"format.dns1123Label().validate("my-label-name")"#, none()),
            (
                r#"format.dns1123Subdomain().validate("example.com")"#,
                none(),
            ),
            (r#"format.dns1035Label().validate("my-label-name")"#, none()),
            (r#"format.qualifiedName().validate("my.name")"#, none()),
            (
                r#"format.byte().validate("aGVsbG8")"#,
                errs(&["invalid base64"]),
            ),
            (r#"format.date().validate("2020-01-01")"#, none()),
            (
                r#"format.date().validate("2020-01-32")"#,
                errs(&["invalid date"]),
            ),
            (
                r#"format.datetime().validate("2020-01-01T00:00:00Z")"#,
                none(),
            ),
            (
                r#"format.datetime().validate("2020-01-32T00:00:00Z")"#,
                errs(&["invalid datetime"]),
            ),
            (
                r#"format.named("unknown").hasValue()"#,
                Ok(Value::Bool(false)),
            ),
            (
                r#"format.labelValue().validate("my-cool-label-Value")"#,
                none(),
            ),
            (
                "format.labelValue().validate(\"my-cool-label-Value!!\\n\\n!!!\")",
                errs(&[LABEL_VALUE]),
            ),
            (
                r#"format.uuid().validate("not-a-uuid")"#,
                errs(&["does not match the UUID format"]),
            ),
            (
                r#"format.uri().validate("../x")"#,
                errs(&[r#"parse "../x": invalid URI for request"#]),
            ),
        ]);
    }

    /// Upstream also checks every format by name, and that distinct formats differ.
    #[test]
    fn every_format_by_name() {
        for &lhs in NAMES {
            check(&[
                (
                    &format!("format.named('{lhs}').hasValue()"),
                    Ok(Value::Bool(true)),
                ),
                (
                    &format!("format.named('{lhs}').value() == format.{lhs}()"),
                    Ok(Value::Bool(true)),
                ),
            ]);
            for rhs in NAMES.iter().filter(|r| **r != lhs) {
                check(&[(
                    &format!("format.{lhs}() == format.{rhs}()"),
                    Ok(Value::Bool(false)),
                )]);
            }
        }
    }
}
