//! Kubernetes JSONPath templates, as client-go's `k8s.io/client-go/util/jsonpath` parses and
//! evaluates them over decoded JSON, for the printer columns of custom resources
//! (`additionalPrinterColumns[].jsonPath`, evaluated as the template `{<jsonPath>}`).
//!
//! The grammar and its quirks are upstream's, because a CRD author sees the columns upstream
//! shows: a bracketed key is reparsed as a dotted path (`['a.b']` is `.a.b`; only single quotes
//! make a key, `["a"]` is a parse error), a field's backslashes are dropped (`a\.b` is the key
//! `a.b`), `[i]` on a map is an error while `.k` on a list finds nothing, a filter over a
//! non-list is an error, comparisons across kinds (an integer with a float, anything with
//! `null`) are errors, and `.*` over a string yields its bytes. Errors while evaluating are
//! values the caller turns into an empty cell, never panics. Numbers are classified as Go
//! holds them in a stored object ([`go_number`]): an integral float below 1e21 is an
//! integer, because Go wrote it without a fraction and read it back.
//!
//! Not implemented: `{range ...}{end}` (upstream's loop rewrites its own parse tree, so a column
//! using it renders differently row by row); a template naming `range` or `end` parses, and
//! evaluating it is an error. Maps are visited (`.*`, `..`) in the order the decoded object
//! keeps its keys; upstream visits them in Go's random map order.
//!
//! Bounded: templates longer than [`JSONPATH_TEMPLATE_BYTES_MAX`] or with more than
//! [`JSONPATH_NODES_MAX`] steps do not parse; a step producing more than
//! [`JSONPATH_RESULTS_MAX`] values fails.

use std::fmt;

use serde_json::Value;

use crate::limits::{
    JSONPATH_NESTING_MAX, JSONPATH_NODES_MAX, JSONPATH_RESULTS_MAX, JSONPATH_TEMPLATE_BYTES_MAX,
};

/// Why a template did not parse (upstream's message where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// Why evaluating a parsed template failed (upstream's message where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EvalError {}

/// One value a template found: a part of the input, or a literal of the template. The
/// distinction matters where Go's types differ: a literal integer is a Go `int` (not the
/// `int64` of decoded JSON), a byte of a string is a `uint8`.
#[derive(Debug, Clone, PartialEq)]
pub enum Found<'a> {
    /// A value of the input (`null` included).
    Json(&'a Value),
    /// A byte of a string, from `.*` over it.
    Byte(u8),
    /// A quoted string of the template.
    Text(String),
    /// An integer literal of the template.
    Int(i64),
    /// A number literal of the template that is not an integer.
    Float(f64),
    /// `true` or `false` in the template.
    Bool(bool),
}

/// A parsed template (`JSONPath.Parse`), ready to evaluate any number of times.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    /// The top-level nodes: text outside braces, and one list per `{...}` action.
    root: Vec<Node>,
    allow_missing_keys: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    List(Vec<Node>),
    Text(String),
    Field(String),
    Array([Param; 3]),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Identifier(String),
}

/// One slice bound: start, end or step. `derived` marks the end of a single index (`[i]` is
/// `[i:i+1]`), which a negative index wraps with the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

impl JsonPath {
    /// Parses a template such as `{.status.conditions[?(@.type=="Ready")].status}`.
    pub fn parse(template: &str) -> Result<JsonPath, ParseError> {
        if template.len() > JSONPATH_TEMPLATE_BYTES_MAX {
            return Err(ParseError(format!(
                "template is {} bytes, more than {JSONPATH_TEMPLATE_BYTES_MAX}",
                template.len()
            )));
        }
        let mut parser = Parser {
            input: template,
            pos: 0,
            start: 0,
            nodes: 0,
            depth: 0,
        };
        let root = parser.parse_template()?;
        Ok(JsonPath {
            root,
            allow_missing_keys: false,
        })
    }

    /// Whether a missing field or map key is an empty result (true) or an error (false,
    /// the default), as upstream's `AllowMissingKeys`.
    pub fn allow_missing_keys(mut self, allow: bool) -> JsonPath {
        self.allow_missing_keys = allow;
        self
    }

    /// Upstream's `FindResults`: the values of each top-level node, in order.
    pub fn find_results<'a>(&self, data: &'a Value) -> Result<Vec<Vec<Found<'a>>>, EvalError> {
        let input = [Found::Json(data)];
        let mut out = Vec::with_capacity(self.root.len());
        for node in &self.root {
            let found = self.walk(&input, node).map_err(|failure| failure.error)?;
            out.push(found);
        }
        Ok(out)
    }

    /// Upstream's `Execute`: every top-level node's values printed as [`print_results`] does.
    pub fn execute(&self, data: &Value) -> Result<String, EvalError> {
        let mut out = String::new();
        for found in self.find_results(data)? {
            out.push_str(&print_results(&found));
        }
        Ok(out)
    }
}

/// Upstream's `PrintResults` without JSON output: maps and lists as compact JSON (Go's
/// `json.Marshal`), everything else as Go's `fmt.Fprint` prints it, separated by spaces.
pub fn print_results(found: &[Found<'_>]) -> String {
    let mut out = String::new();
    for (i, f) in found.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        print_one(&mut out, f);
    }
    out
}

fn print_one(out: &mut String, found: &Found<'_>) {
    match found {
        Found::Json(v @ (Value::Object(_) | Value::Array(_))) => go_json(out, v),
        Found::Json(Value::Null) => out.push_str("null"),
        Found::Json(Value::Bool(b)) | Found::Bool(b) => {
            out.push_str(if *b { "true" } else { "false" })
        }
        Found::Json(Value::String(s)) => out.push_str(s),
        Found::Text(s) => out.push_str(s),
        Found::Json(Value::Number(n)) => match go_number(n) {
            GoNumber::Int(i) => out.push_str(&i.to_string()),
            GoNumber::Float(f) => out.push_str(&go_float_v(f)),
        },
        Found::Byte(b) => out.push_str(&b.to_string()),
        Found::Int(i) => out.push_str(&i.to_string()),
        Found::Float(f) => out.push_str(&go_float_v(*f)),
    }
}

/// A JSON number as Go holds it in an unstructured object: `int64` or `float64`.
pub use keel_api::gofmt::Num as GoNumber;

/// How upstream holds `n` in a stored object ([`GoNumber::of_stored`]): an integral float
/// below 1e21 is an integer (`2.0` is `2`), as a CRD author sees it.
pub fn go_number(n: &serde_json::Number) -> GoNumber {
    GoNumber::of_stored(n)
}

/// The integer Go's JSON encoder writes for an integral float below 1e21, if it fits.
pub(crate) use keel_api::gofmt::json_integer as go_json_integer;

/// `fmt.Fprint` of a `float64`: Go's `%v`.
pub(crate) fn go_float_v(f: f64) -> String {
    keel_api::gofmt::float(f)
}

/// `encoding/json.Marshal` of a stored object's JSON: numbers as [`go_number`] types them,
/// sorted keys, HTML-safe escaping with Go 1.22's `\b` and `\f`. Unbounded depth: the value
/// was parsed by serde_json, whose recursion limit already bounds it.
fn go_json(out: &mut String, v: &Value) {
    let style = keel_api::gofmt::JsonStyle {
        numbers: keel_api::gofmt::json_stored_number_to,
        sort_keys: true,
        escape: keel_api::gofmt::JsonEscape::Go122,
        depth_max: usize::MAX,
    };
    keel_api::gofmt::json_to(out, v, style);
}

// ---------------------------------------------------------------------------------------------
// Parsing.

struct Parser<'t> {
    input: &'t str,
    pos: usize,
    start: usize,
    /// Nodes created so far, bounded by `JSONPATH_NODES_MAX`.
    nodes: usize,
    /// Fragments (union parts, filter sides, quoted keys) this parser is nested in.
    depth: usize,
}

fn err<T>(message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(message.into()))
}

/// Go's `isTerminator`: what ends a field or identifier.
fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn consume_text(&mut self) -> &str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    fn push(&mut self, list: &mut Vec<Node>, node: Node) -> Result<(), ParseError> {
        self.nodes += 1;
        if self.nodes > JSONPATH_NODES_MAX {
            return err(format!("template has more than {JSONPATH_NODES_MAX} steps"));
        }
        list.push(node);
        Ok(())
    }

    /// Text and actions up to the end of the input.
    fn parse_template(&mut self) -> Result<Vec<Node>, ParseError> {
        let mut root = Vec::new();
        loop {
            match self.rest().find('{') {
                Some(offset) => {
                    self.pos += offset;
                    if self.pos > self.start {
                        let text = self.consume_text().to_owned();
                        self.push(&mut root, Node::Text(text))?;
                    }
                    self.pos += 1;
                    self.consume_text();
                    let action = self.parse_action()?;
                    self.push(&mut root, Node::List(action))?;
                }
                None => {
                    self.pos = self.input.len();
                    if self.pos > self.start {
                        let text = self.consume_text().to_owned();
                        self.push(&mut root, Node::Text(text))?;
                    }
                    return Ok(root);
                }
            }
        }
    }

    /// The inside of one `{...}`, up to and including its `}`.
    fn parse_action(&mut self) -> Result<Vec<Node>, ParseError> {
        let mut cur = Vec::new();
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume_text();
                return Ok(cur);
            }
            if rest.starts_with("[?(") {
                self.parse_filter(&mut cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.parse_recursive(&mut cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return err("unclosed action"),
                Some(' ' | '@' | '$') => {
                    self.consume_text();
                }
                Some('[') => self.parse_array(&mut cur)?,
                Some(q @ ('"' | '\'')) => self.parse_quote(&mut cur, q)?,
                Some('.') => self.parse_field(&mut cur)?,
                Some(c) if c == '+' || c == '-' || c.is_numeric() => {
                    self.pos -= c.len_utf8();
                    self.parse_number(&mut cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.pos -= c.len_utf8();
                    self.parse_identifier(&mut cur)?;
                }
                Some(c) => {
                    return err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        u32::from(c)
                    ))
                }
            }
        }
    }

    fn parse_identifier(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        while !is_terminator(self.peek()) {
            self.next();
        }
        let node = match self.consume_text() {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            other => Node::Identifier(other.to_owned()),
        };
        self.push(cur, node)
    }

    fn parse_recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return err("invalid multiple recursive descent");
        }
        self.pos += 2;
        self.consume_text();
        self.push(cur, Node::Recursive)?;
        if self.peek().is_some_and(is_alphanumeric) {
            self.parse_field(cur)?;
        }
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        while self.peek().is_some_and(|c| c == '.' || c.is_numeric()) {
            self.next();
        }
        let text = self.consume_text();
        let node = if let Ok(i) = text.parse::<i64>() {
            Node::Int(i)
        } else if let Some(f) = go_parse_float(text) {
            Node::Float(f)
        } else {
            return err(format!("cannot parse number {text}"));
        };
        self.push(cur, node)
    }

    fn parse_array(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated array"),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let text = self.consume_text();
        let mut text = &text[1..text.len() - 1];
        if text == "*" {
            text = ":";
        }
        let text = text.to_owned();

        // A union: each part is an index, slice or key of its own.
        if text.contains(',') {
            let mut union = Vec::new();
            for part in text.split(',') {
                let part = format!("[{}]", part.trim_matches(' '));
                union.push(self.parse_nested(&part)?);
            }
            return self.push(cur, Node::Union(union));
        }

        // A single-quoted key, reparsed as a dotted path.
        if let Some(key) = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .filter(|k| !k.contains('\''))
        {
            for node in self.parse_nested(&format!(".{key}"))? {
                self.push(cur, node)?;
            }
            return Ok(());
        }

        let params = parse_slice(&text)?;
        self.push(cur, Node::Array(params))
    }

    /// Upstream's `parseAction`: a fragment parsed as the action `{fragment}`, its first list.
    fn parse_nested(&mut self, fragment: &str) -> Result<Vec<Node>, ParseError> {
        if self.depth >= JSONPATH_NESTING_MAX {
            return err(format!(
                "template nests more than {JSONPATH_NESTING_MAX} filters, unions or keys"
            ));
        }
        let wrapped = format!("{{{fragment}}}");
        let mut parser = Parser {
            input: &wrapped,
            pos: 0,
            start: 0,
            nodes: self.nodes,
            depth: self.depth + 1,
        };
        let mut root = parser.parse_template()?;
        self.nodes = parser.nodes;
        match root.swap_remove(0) {
            Node::List(nodes) => Ok(nodes),
            _ => err("nested template did not start with an action"),
        }
    }

    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        self.pos += 3;
        self.consume_text();
        let (mut begin, mut end) = (false, false);
        let mut pair = '\0';
        loop {
            let before = self.input.as_bytes()[..self.pos].last().copied();
            match self.next() {
                None | Some('\n') => return err("unterminated filter"),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if before != Some(b'\\') && q == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return err("unclosed array expect ]");
        }
        let text = self.consume_text();
        let text = text[..text.len() - 2].to_owned();
        let node = match split_comparison(&text) {
            None => Node::Filter {
                left: self.parse_nested(&text)?,
                right: Vec::new(),
                op: "exists".to_owned(),
            },
            Some((left, op, right)) => Node::Filter {
                left: self.parse_nested(left)?,
                right: self.parse_nested(right)?,
                op: op.to_owned(),
            },
        };
        self.push(cur, node)
    }

    fn parse_quote(&mut self, cur: &mut Vec<Node>, quote: char) -> Result<(), ParseError> {
        loop {
            let before = self.input.as_bytes()[..self.pos].last().copied();
            match self.next() {
                None | Some('\n') => return err("unterminated quoted string"),
                Some(c) if c == quote && before != Some(b'\\') => break,
                Some(_) => {}
            }
        }
        let quoted = self.consume_text();
        let text = unquote_extend(quoted)
            .ok_or_else(|| ParseError(format!("unquote string {quoted} error invalid syntax")))?;
        self.push(cur, Node::Text(text))
    }

    fn parse_field(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        self.consume_text();
        loop {
            match self.peek() {
                Some('\\') => {
                    self.next();
                    self.next();
                }
                c if is_terminator(c) => break,
                _ => {
                    self.next();
                }
            }
        }
        let node = match self.consume_text() {
            "*" => Node::Wildcard,
            name => Node::Field(name.replace('\\', "")),
        };
        self.push(cur, node)
    }
}

/// Upstream's filter regex `^([^!<>=]+)([!<>=]+)(.+?)$`: a non-empty left side free of
/// operator characters, the longest run of them, and a non-empty right side.
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let after = &text[op_start..];
    let op_len = after.find(|c: char| !is_op(c)).unwrap_or(after.len());
    let right = &after[op_len..];
    if right.is_empty() || right.contains('\n') {
        return None;
    }
    Some((&text[..op_start], &after[..op_len], right))
}

/// Upstream's slice syntax `^(-?\d*)(:-?\d*)?(:-?\d*)?$` and its defaults.
fn parse_slice(text: &str) -> Result<[Param; 3], ParseError> {
    let invalid = || ParseError(format!("invalid array index {text}"));
    let bytes = text.as_bytes();
    let mut groups: [Option<&str>; 3] = [None; 3];
    let mut pos = 0;
    let scan = |pos: &mut usize| {
        if bytes.get(*pos) == Some(&b'-') {
            *pos += 1;
        }
        while bytes.get(*pos).is_some_and(u8::is_ascii_digit) {
            *pos += 1;
        }
    };
    scan(&mut pos);
    groups[0] = Some(&text[..pos]);
    for group in &mut groups[1..] {
        if bytes.get(pos) == Some(&b':') {
            let start = pos;
            pos += 1;
            scan(&mut pos);
            *group = Some(&text[start..pos]);
        }
    }
    if pos != bytes.len() {
        return Err(invalid());
    }
    let mut params = [Param::default(); 3];
    for i in 0..3 {
        let group = groups[i].unwrap_or("");
        if group.is_empty() {
            if i == 1 {
                params[1] = Param {
                    value: params[0].value.wrapping_add(1),
                    known: true,
                    derived: true,
                };
            }
            continue;
        }
        let number = if i > 0 { &group[1..] } else { group };
        if i > 0 && number.is_empty() {
            continue;
        }
        let value = number
            .parse::<i64>()
            .map_err(|_| ParseError(format!("array index {number} is not a number")))?;
        params[i] = Param {
            value,
            known: true,
            derived: false,
        };
    }
    Ok(params)
}

/// Go's `strconv.ParseFloat` for what `parseNumber` scans: a sign, digits and dots.
fn go_parse_float(text: &str) -> Option<f64> {
    let digits = text.trim_start_matches(['+', '-']);
    if digits.is_empty()
        || digits == "."
        || text.len() - digits.len() > 1
        || !digits.bytes().any(|b| b.is_ascii_digit())
    {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Upstream's `UnquoteExtend`: Go's `strconv.Unquote` rules for a `"..."` or `'...'` string.
fn unquote_extend(quoted: &str) -> Option<String> {
    let quote = quoted.chars().next()?;
    if quoted.len() < 2 || !quoted.ends_with(quote) || !matches!(quote, '"' | '\'') {
        return None;
    }
    let body = &quoted[1..quoted.len() - 1];
    if !body.contains('\\') && !body.contains(quote) {
        return Some(body.to_owned());
    }
    let mut out: Vec<u8> = Vec::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let escape = chars.next()?;
        let simple = match escape {
            'a' => Some(7u8),
            'b' => Some(8),
            'f' => Some(12),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(11),
            '\\' => Some(b'\\'),
            '\'' | '"' if escape == quote => Some(escape as u8),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            continue;
        }
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| {
            let mut value = 0u32;
            for _ in 0..n {
                value = value * 16 + chars.next()?.to_digit(16)?;
            }
            Some(value)
        };
        match escape {
            'x' => out.push(u8::try_from(hex(&mut chars, 2)?).ok()?),
            'u' | 'U' => {
                let n = if escape == 'u' { 4 } else { 8 };
                let c = char::from_u32(hex(&mut chars, n)?)?;
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            '0'..='7' => {
                let mut value = escape.to_digit(8)?;
                for _ in 0..2 {
                    value = value * 8 + chars.next()?.to_digit(8)?;
                }
                out.push(u8::try_from(value).ok()?);
            }
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

// ---------------------------------------------------------------------------------------------
// Evaluation.

/// A failed step: the error, and the values the failing step hands back anyway (upstream's
/// functions return a value with their error, and an existence filter looks at it).
struct Failure<'a> {
    error: EvalError,
    partial: Vec<Found<'a>>,
}

type Step<'a> = Result<Vec<Found<'a>>, Failure<'a>>;

fn fail<'a>(partial: Vec<Found<'a>>, message: impl Into<String>) -> Step<'a> {
    Err(Failure {
        error: EvalError(message.into()),
        partial,
    })
}

fn bounded<'a>(found: Vec<Found<'a>>) -> Step<'a> {
    if found.len() > JSONPATH_RESULTS_MAX {
        return fail(
            Vec::new(),
            format!("more than {JSONPATH_RESULTS_MAX} results"),
        );
    }
    Ok(found)
}

/// Go's type name of a found value, for error messages.
fn type_name(found: &Found<'_>) -> &'static str {
    match found {
        Found::Json(Value::Object(_)) => "map[string]interface {}",
        Found::Json(Value::Array(_)) => "[]interface {}",
        Found::Json(Value::String(_)) | Found::Text(_) => "string",
        Found::Json(Value::Bool(_)) | Found::Bool(_) => "bool",
        Found::Json(Value::Number(n)) => match go_number(n) {
            GoNumber::Int(_) => "int64",
            GoNumber::Float(_) => "float64",
        },
        Found::Json(Value::Null) => "interface {}",
        Found::Byte(_) => "uint8",
        Found::Int(_) => "int",
        Found::Float(_) => "float64",
    }
}

/// The children `.*` and `..` visit: map values, list items, a string's bytes.
fn children<'a>(found: &Found<'a>) -> Vec<Found<'a>> {
    match found {
        Found::Json(Value::Object(map)) => map.values().map(Found::Json).collect(),
        Found::Json(Value::Array(items)) => items.iter().map(Found::Json).collect(),
        Found::Json(Value::String(s)) => s.bytes().map(Found::Byte).collect(),
        Found::Text(s) => s.bytes().map(Found::Byte).collect(),
        _ => Vec::new(),
    }
}

impl JsonPath {
    fn walk<'a>(&self, input: &[Found<'a>], node: &Node) -> Step<'a> {
        match node {
            Node::List(nodes) => self.eval_list(input, nodes),
            Node::Text(text) => Ok(vec![Found::Text(text.clone())]),
            Node::Field(name) => self.eval_field(input, name),
            Node::Array(params) => eval_array(input, params),
            Node::Filter { left, right, op } => self.eval_filter(input, left, right, op),
            Node::Int(i) => Ok(vec![Found::Int(*i); input.len()]),
            Node::Float(f) => Ok(vec![Found::Float(*f); input.len()]),
            Node::Bool(b) => Ok(vec![Found::Bool(*b); input.len()]),
            Node::Wildcard => bounded(input.iter().flat_map(children).collect()),
            Node::Recursive => eval_recursive(input),
            Node::Union(lists) => {
                let mut out = Vec::new();
                for list in lists {
                    match self.eval_list(input, list) {
                        Ok(found) => out.extend(found),
                        Err(failure) => return fail(input.to_vec(), failure.error.0),
                    }
                }
                bounded(out)
            }
            Node::Identifier(name) => match name.as_str() {
                "range" | "end" => fail(
                    input.to_vec(),
                    format!("{name} is not supported in printer columns"),
                ),
                _ => fail(input.to_vec(), format!("unrecognized identifier {name}")),
            },
        }
    }

    fn eval_list<'a>(&self, input: &[Found<'a>], nodes: &[Node]) -> Step<'a> {
        let mut cur = input.to_vec();
        for node in nodes {
            cur = self.walk(&cur, node)?;
        }
        Ok(cur)
    }

    fn eval_field<'a>(&self, input: &[Found<'a>], name: &str) -> Step<'a> {
        let found: Vec<Found<'a>> = input
            .iter()
            .filter_map(|value| match value {
                Found::Json(Value::Object(map)) => map.get(name).map(Found::Json),
                _ => None,
            })
            .collect();
        if found.is_empty() && !input.is_empty() && !self.allow_missing_keys {
            return fail(found, format!("{name} is not found"));
        }
        Ok(found)
    }

    fn eval_filter<'a>(
        &self,
        input: &[Found<'a>],
        left: &[Node],
        right: &[Node],
        op: &str,
    ) -> Step<'a> {
        let mut out = Vec::new();
        for value in input {
            let Found::Json(Value::Array(items)) = value else {
                return fail(
                    input.to_vec(),
                    format!(
                        "{} is not array or slice and cannot be filtered",
                        type_name(value)
                    ),
                );
            };
            for item in items {
                let element = [Found::Json(item)];
                let lefts = self.eval_list(&element, left);
                if op == "exists" {
                    let lefts = match lefts {
                        Ok(found) => found,
                        Err(failure) => failure.partial,
                    };
                    if !lefts.is_empty() {
                        out.push(Found::Json(item));
                    }
                    continue;
                }
                let lefts = lefts.map_err(|f| Failure {
                    error: f.error,
                    partial: input.to_vec(),
                })?;
                let left = match lefts.as_slice() {
                    [] => continue,
                    [one] => one.clone(),
                    _ => return fail(input.to_vec(), "can only compare one element at a time"),
                };
                let rights = self.eval_list(&element, right).map_err(|f| Failure {
                    error: f.error,
                    partial: input.to_vec(),
                })?;
                let right = match rights.as_slice() {
                    [] => continue,
                    [one] => one.clone(),
                    _ => return fail(input.to_vec(), "can only compare one element at a time"),
                };
                match compare(op, &left, &right) {
                    Ok(true) => out.push(Found::Json(item)),
                    Ok(false) => {}
                    Err(message) => return fail(out, message),
                }
            }
        }
        bounded(out)
    }
}

fn eval_array<'a>(input: &[Found<'a>], params: &[Param; 3]) -> Step<'a> {
    let mut out = Vec::new();
    for value in input {
        let items = match value {
            Found::Json(Value::Null) => continue,
            Found::Json(Value::Array(items)) => items,
            other => {
                return fail(
                    input.to_vec(),
                    format!("{} is not array or slice", type_name(other)),
                )
            }
        };
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let mut p = *params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value = p[0].value.wrapping_add(len);
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value = p[1].value.wrapping_add(len);
        }
        let (start, end) = (p[0].value, p[1].value);
        if start == end {
            // Upstream returns here: later inputs are not visited.
            return Ok(out);
        }
        if start >= len || start < 0 {
            return fail(
                input.to_vec(),
                format!("array index out of bounds: index {start}, length {len}"),
            );
        }
        if end > len || end < 0 {
            return fail(
                input.to_vec(),
                format!(
                    "array index out of bounds: index {}, length {len}",
                    end.wrapping_sub(1)
                ),
            );
        }
        if start > end {
            return fail(
                input.to_vec(),
                format!("starting index {start} is greater than ending index {end}"),
            );
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return fail(input.to_vec(), "step must be > 0");
            }
            usize::try_from(p[2].value).unwrap_or(usize::MAX)
        } else {
            1
        };
        // Both bounds are within 0..=len here.
        let (start, end) = (start as usize, end as usize);
        out.extend(items[start..end].iter().step_by(step).map(Found::Json));
        if out.len() > JSONPATH_RESULTS_MAX {
            return bounded(out);
        }
    }
    Ok(out)
}

/// `..`: every value with children, each before its descendants (depth first).
fn eval_recursive<'a>(input: &[Found<'a>]) -> Step<'a> {
    let mut out = Vec::new();
    let mut stack: Vec<Found<'a>> = input.iter().rev().cloned().collect();
    while let Some(value) = stack.pop() {
        let kids = children(&value);
        if kids.is_empty() {
            continue;
        }
        out.push(value);
        if out.len() > JSONPATH_RESULTS_MAX {
            return bounded(out);
        }
        stack.extend(kids.into_iter().rev());
    }
    Ok(out)
}

/// A value as Go's template comparison functions classify it.
#[derive(Debug, Clone, PartialEq)]
enum Basic<'v> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'v str),
}

fn basic<'v>(found: &'v Found<'_>) -> Result<Basic<'v>, String> {
    Ok(match found {
        Found::Json(Value::Bool(b)) | Found::Bool(b) => Basic::Bool(*b),
        Found::Json(Value::Number(n)) => match go_number(n) {
            GoNumber::Int(i) => Basic::Int(i),
            GoNumber::Float(f) => Basic::Float(f),
        },
        Found::Json(Value::String(s)) => Basic::Str(s),
        Found::Text(s) => Basic::Str(s),
        Found::Int(i) => Basic::Int(*i),
        Found::Float(f) => Basic::Float(*f),
        Found::Byte(b) => Basic::Uint(u64::from(*b)),
        Found::Json(Value::Null | Value::Array(_) | Value::Object(_)) => {
            return Err("invalid type for comparison".to_owned())
        }
    })
}

const INCOMPATIBLE: &str = "incompatible types for comparison";

fn equal(a: &Basic<'_>, b: &Basic<'_>) -> Result<bool, String> {
    Ok(match (a, b) {
        (Basic::Bool(x), Basic::Bool(y)) => x == y,
        (Basic::Int(x), Basic::Int(y)) => x == y,
        (Basic::Uint(x), Basic::Uint(y)) => x == y,
        (Basic::Float(x), Basic::Float(y)) => x == y,
        (Basic::Str(x), Basic::Str(y)) => x == y,
        (Basic::Int(x), Basic::Uint(y)) | (Basic::Uint(y), Basic::Int(x)) => {
            u64::try_from(*x).is_ok_and(|x| x == *y)
        }
        _ => return Err(INCOMPATIBLE.to_owned()),
    })
}

fn less(a: &Basic<'_>, b: &Basic<'_>) -> Result<bool, String> {
    Ok(match (a, b) {
        (Basic::Bool(_), Basic::Bool(_)) => return Err("invalid type for comparison".to_owned()),
        (Basic::Int(x), Basic::Int(y)) => x < y,
        (Basic::Uint(x), Basic::Uint(y)) => x < y,
        (Basic::Float(x), Basic::Float(y)) => x < y,
        (Basic::Str(x), Basic::Str(y)) => x < y,
        (Basic::Int(x), Basic::Uint(y)) => u64::try_from(*x).map_or(true, |x| x < *y),
        (Basic::Uint(x), Basic::Int(y)) => u64::try_from(*y).is_ok_and(|y| *x < y),
        _ => return Err(INCOMPATIBLE.to_owned()),
    })
}

/// A filter comparison, as Go's `text/template` functions decide it (errors included).
fn compare(op: &str, left: &Found<'_>, right: &Found<'_>) -> Result<bool, String> {
    let a = basic(left)?;
    let b = basic(right)?;
    match op {
        "==" => equal(&a, &b),
        "!=" => equal(&a, &b).map(|e| !e),
        "<" => less(&a, &b),
        "<=" => Ok(less(&a, &b)? || equal(&a, &b)?),
        ">" => Ok(!(less(&a, &b)? || equal(&a, &b)?)),
        ">=" => less(&a, &b).map(|l| !l),
        _ => Err(format!("unrecognized filter operator {op}")),
    }
}

#[cfg(test)]
mod tests;
