//! One compiled `x-kubernetes-validations` entry of a schema node (what `compile` keeps on
//! the node and `celrules` evaluates): its programs, message, reason and field path.

use keel_api::status::field;
use keel_cel::eval::Program;
use serde_json::Value;

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub struct Rule {
    pub(crate) source: String,
    pub(crate) program: Program,
    pub(crate) message: String,
    pub(crate) message_expression: Option<Program>,
    pub(crate) reason: String,
    pub(crate) field_path: String,
    pub(crate) transition: bool,
    pub(crate) optional_old_self: bool,
    /// The fields of `self` the rule and its message expression read, when they read it
    /// only by field (`Program::fields_of`): `self` is then built with those alone.
    pub(crate) self_fields: Option<std::collections::BTreeSet<String>>,
}

impl Rule {
    /// The rule as stored in the CRD; `None` when it is not an object or does not parse.
    pub fn compile(v: &Value) -> Option<Rule> {
        let m = v.as_object()?;
        let text = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let source = text("rule");
        let program = Program::parse(&source).ok()?;
        let message_expression = match text("messageExpression") {
            e if e.is_empty() => None,
            e => Program::parse(&e).ok(),
        };
        let reason = match text("reason") {
            r if r.is_empty() => field::REASON_INVALID.to_string(),
            r => r,
        };
        let self_fields = match (program.fields_of("self"), &message_expression) {
            (Some(f), None) => Some(f),
            (Some(mut f), Some(m)) => m.fields_of("self").map(|g| {
                f.extend(g);
                f
            }),
            (None, _) => None,
        };
        Some(Rule {
            self_fields,
            transition: program.references("oldSelf"),
            source,
            program,
            message: text("message"),
            message_expression,
            reason,
            field_path: text("fieldPath"),
            optional_old_self: m
                .get("optionalOldSelf")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// `message`, else `failed rule: <rule>`.
    pub(crate) fn message_or_default(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.source.trim())
        } else {
            self.message.clone()
        }
    }
}
