//! Label selectors: the string syntax, `metav1.LabelSelector` objects, printing and matching.

use super::lexer::{scan, Token};
use super::SELECTOR_LEN_MAX;
use crate::names::{is_qualified_name, is_valid_label_value};
use crate::status::{field, ApiError, StatusCause};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`
    NotIn,
    /// `key=v`
    Equals,
    /// `key==v`
    DoubleEquals,
    /// `key!=v`
    NotEquals,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>n`
    GreaterThan,
    /// `key<n`
    LessThan,
}

/// One `key op values` term; values are a sorted set, as upstream keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub operator: Operator,
    /// Sorted, de-duplicated values.
    pub values: Vec<String>,
}

/// The value of label `key` as selectors compare it: `None` when absent, `""` when not a
/// string.
pub fn label_value<'a>(labels: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    labels
        .and_then(|l| crate::jsonmap::get(l, key))
        .map(|v| v.as_str().unwrap_or(""))
}

/// A parsed label selector: all requirements must match. `nothing` is the selector of a null
/// `metav1.LabelSelector`, which matches no object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

/// Binary operators named in "expected" parse errors, in upstream's order.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

fn label_key_error(key: &str, path: &str) -> Option<StatusCause> {
    let errs = is_qualified_name(key);
    (!errs.is_empty()).then(|| field::invalid_str(path, key, &errs.join("; ")))
}

impl Requirement {
    /// Builds a validated requirement (upstream's `NewRequirement`); `path` prefixes the field
    /// paths of its errors (`""` for none).
    pub fn new(
        key: &str,
        operator: Operator,
        values: Vec<String>,
        path: &str,
    ) -> Result<Self, ApiError> {
        let child = |name: &str| {
            if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            }
        };
        let mut errs: Vec<StatusCause> = Vec::new();
        errs.extend(label_key_error(key, &child("key")));
        let values_path = child("values");
        let count_error = match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                Some("for 'in', 'notin' operators, values set can't be empty")
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                Some("exact-match compatibility requires one single value")
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                Some("values set must be empty for exists and does not exist")
            }
            Operator::GreaterThan | Operator::LessThan if values.len() != 1 => {
                Some("for 'Gt', 'Lt' operators, exactly one value is required")
            }
            _ => None,
        };
        let values_json = Value::Array(values.iter().cloned().map(Value::String).collect());
        if let Some(msg) = count_error {
            errs.push(field::invalid(&values_path, &values_json, msg));
        }
        if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(field::invalid_str(
                        &format!("{values_path}[{i}]"),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                errs.push(field::invalid_str(
                    &format!("{values_path}[{i}][{key}]"),
                    v,
                    &msgs.join("; "),
                ));
            }
        }
        if let Some(text) = field::aggregate(&errs) {
            return Err(ApiError::bad_request(text));
        }
        let values: BTreeSet<String> = values.into_iter().collect();
        Ok(Requirement {
            key: key.to_string(),
            operator,
            values: values.into_iter().collect(),
        })
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = label_value(labels, &self.key);
        match (self.operator, value) {
            (Operator::In | Operator::Equals | Operator::DoubleEquals, Some(v)) => {
                self.has_value(v)
            }
            (Operator::In | Operator::Equals | Operator::DoubleEquals, None) => false,
            (Operator::NotIn | Operator::NotEquals, Some(v)) => !self.has_value(v),
            (Operator::NotIn | Operator::NotEquals, None) => true,
            (Operator::Exists, v) => v.is_some(),
            (Operator::DoesNotExist, v) => v.is_none(),
            (Operator::GreaterThan | Operator::LessThan, v) => self.compare(v),
        }
    }

    fn compare(&self, value: Option<&str>) -> bool {
        let (Some(actual), [bound]) = (
            value.and_then(|v| v.parse::<i64>().ok()),
            self.values.as_slice(),
        ) else {
            return false;
        };
        let Ok(bound) = bound.parse::<i64>() else {
            return false;
        };
        match self.operator {
            Operator::GreaterThan => actual > bound,
            _ => actual < bound,
        }
    }
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, parens) = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => ("=", false),
            Operator::DoubleEquals => ("==", false),
            Operator::NotEquals => ("!=", false),
            Operator::In => (" in ", true),
            Operator::NotIn => (" notin ", true),
            Operator::GreaterThan => (">", false),
            Operator::LessThan => ("<", false),
        };
        let values = self.values.join(",");
        if parens {
            write!(f, "{op}({values})")
        } else {
            write!(f, "{op}{values}")
        }
    }
}

impl LabelSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// The selector that matches nothing (a null `metav1.LabelSelector`).
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses the string syntax (`a=b,c!=d,e in (f,g),!h,i`). Errors are 400 BadRequest with
    /// upstream's parser messages.
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        if input.len() > SELECTOR_LEN_MAX {
            return Err(ApiError::bad_request(format!(
                "label selector is longer than {SELECTOR_LEN_MAX} bytes"
            )));
        }
        let mut parser = Parser {
            items: scan(input),
            pos: 0,
        };
        let mut requirements = parser.parse().map_err(|e| match e {
            ParseError::Message(m) => ApiError::bad_request(m),
            ParseError::Api(a) => a,
        })?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    /// Converts a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`); null
    /// selects nothing, `{}` selects everything.
    pub fn from_json(selector: &Value) -> Result<Self, ApiError> {
        let obj = match selector {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(o) => o,
            other => {
                return Err(ApiError::bad_request(format!(
                    "label selector must be an object, got {other}"
                )))
            }
        };
        let mut requirements = Vec::new();
        if let Some(labels) = obj.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                let value = v.as_str().unwrap_or("").to_string();
                requirements.push(Requirement::new(k, Operator::Equals, vec![value], "")?);
            }
        }
        if let Some(exprs) = obj.get("matchExpressions").and_then(Value::as_array) {
            for expr in exprs {
                requirements.push(expression_requirement(expr)?);
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    /// Whether an object with these labels (`None`: no labels) is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// True when the selector places no constraint (matches everything).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The single value a key must equal (`key=v`, `key==v` or `key in (v)`), for index lookups.
    pub fn requires_exact(&self, key: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find_map(|r| match (r.operator, r.values.as_slice()) {
                (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) if r.key == key => {
                    Some(v.as_str())
                }
                _ => None,
            })
    }
}

impl std::fmt::Display for LabelSelector {
    /// Upstream's canonical form: requirements sorted by key, joined by `,`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

fn expression_requirement(expr: &Value) -> Result<Requirement, ApiError> {
    let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
    let op_name = expr.get("operator").and_then(Value::as_str).unwrap_or("");
    let operator = match op_name {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(ApiError::bad_request(format!(
                "{} is not a valid label selector operator",
                crate::gofmt::quote(other)
            )))
        }
    };
    let values = expr
        .get("values")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    Requirement::new(key, operator, values, "")
}

enum ParseError {
    Message(String),
    Api(ApiError),
}

type ParseResult<T> = Result<T, ParseError>;

fn fail<T>(msg: String) -> ParseResult<T> {
    Err(ParseError::Message(msg))
}

/// Recursive-descent parser over the scanned tokens (upstream's `labels.Parser`).
struct Parser {
    items: Vec<(Token, String)>,
    pos: usize,
}

impl Parser {
    /// Next token without consuming; in value context `in`/`notin` are plain identifiers.
    fn lookahead(&self, values: bool) -> (Token, String) {
        let (tok, lit) = self.items[self.pos.min(self.items.len() - 1)].clone();
        (
            if values && matches!(tok, Token::In | Token::NotIn) {
                Token::Identifier
            } else {
                tok
            },
            lit,
        )
    }

    fn consume(&mut self, values: bool) -> (Token, String) {
        let item = self.lookahead(values);
        if self.pos < self.items.len() - 1 {
            self.pos += 1;
        }
        item
    }

    fn parse(&mut self) -> ParseResult<Vec<Requirement>> {
        let mut out = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(true);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.requirement().map_err(|e| match e {
                        ParseError::Message(m) => {
                            ParseError::Message(format!("unable to parse requirement: {m}"))
                        }
                        ParseError::Api(a) => ParseError::Message(format!(
                            "unable to parse requirement: {}",
                            a.message
                        )),
                    })?;
                    out.push(r);
                    let (t, l) = self.consume(true);
                    match t {
                        Token::End => return Ok(out),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(true);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return fail(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return fail(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::End => return Ok(out),
                _ => {
                    return fail(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ))
                }
            }
        }
    }

    fn requirement(&mut self) -> ParseResult<Requirement> {
        let (key, inferred) = self.key_and_inferred_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(&key, op, Vec::new(), "").map_err(ParseError::Api);
        }
        let op = self.operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        Requirement::new(&key, op, values, "").map_err(ParseError::Api)
    }

    fn key_and_inferred_operator(&mut self) -> ParseResult<(String, Option<Operator>)> {
        let (mut tok, mut lit) = self.consume(true);
        let negated = tok == Token::DoesNotExist;
        if negated {
            (tok, lit) = self.consume(true);
        }
        if tok != Token::Identifier {
            return fail(format!("found '{lit}', expected: identifier"));
        }
        if let Some(cause) = label_key_error(&lit, "<nil>") {
            return fail(field::error_text(&cause));
        }
        let (next, _) = self.lookahead(true);
        if next == Token::End || next == Token::Comma {
            let op = if negated {
                Operator::DoesNotExist
            } else {
                Operator::Exists
            };
            return Ok((lit, Some(op)));
        }
        if negated {
            return fail(format!("found '{lit}', expected: ',' or 'end of string'"));
        }
        Ok((lit, None))
    }

    fn operator(&mut self) -> ParseResult<Operator> {
        let (tok, lit) = self.consume(false);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return fail(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn values(&mut self) -> ParseResult<Vec<String>> {
        let (tok, lit) = self.consume(true);
        if tok != Token::OpenPar {
            return fail(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(true);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.identifiers_list()?;
                let (close, _) = self.consume(true);
                if close != Token::ClosedPar {
                    return fail(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(true);
                Ok(vec![String::new()])
            }
            _ => fail(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn identifiers_list(&mut self) -> ParseResult<Vec<String>> {
        let mut set: BTreeSet<String> = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(true);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (t2, l2) = self.lookahead(true);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return fail(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (t2, _) = self.lookahead(true);
                    if t2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if t2 == Token::Comma {
                        self.consume(true);
                        set.insert(String::new());
                    }
                }
                _ => return fail(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> ParseResult<Vec<String>> {
        let (tok, _) = self.lookahead(true);
        if tok == Token::End || tok == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(true);
        if tok == Token::Identifier {
            return Ok(vec![lit]);
        }
        fail(format!("found '{lit}', expected: identifier"))
    }
}
