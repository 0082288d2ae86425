//! YAML as kube-apiserver reads and writes it.
//!
//! Reading: a request body in YAML becomes the JSON value the same document sent as JSON would
//! be (`sigs.k8s.io/yaml.YAMLToJSON`), so that it takes the JSON bodies' path (field
//! validation, type checks) from there. The first document counts; an empty one is `null`.
//! Reading is bounded: at most `nodes_max` values in the expanded document (aliases expand
//! where they are used, so a few bytes can name billions of nodes: the "billion laughs") and at
//! most [`DEPTH_MAX`] levels of nesting. Errors carry go-yaml's wording (`yaml: line 6: did
//! not find expected ',' or ']'`, `yaml: document contains excessive aliasing`).
//!
//! Writing: [`encode`] writes a JSON value as `sigs.k8s.io/yaml.JSONToYAML` does through
//! go-yaml v2: keys in go-yaml's order (letters by code point, digit runs by value), two-space
//! indentation with sequences flush under their key, strings quoted only when a plain scalar
//! would read back as something else (`"true"`, `"1"`, `"2026-01-01T00:00:00Z"`, `"n"`),
//! single quotes where YAML syntax needs them, literal blocks for multi-line strings, lines
//! folded at spaces past column 80, floats as Go's `%g`.
//!
//! Known differences from go-yaml v2 when reading: plain `yes`/`no`/`on`/`off`/`y`/`n` read as
//! strings (YAML 1.2) where go-yaml reads booleans, and only the first duplicated key of a
//! document is reported.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt::{self, Write as _};

/// Nesting levels a YAML body may have: serde_yaml_ng's own recursion limit, which it
/// enforces before any value is built (go-yaml allows 10,000; a Kubernetes object needs far
/// fewer, and JSON bodies are bounded the same, by serde_json's 128).
pub const DEPTH_MAX: usize = 128;

/// A decoded YAML body.
#[derive(Debug, PartialEq)]
pub struct Decoded {
    pub value: Value,
    /// The first key set twice in one mapping, as go-yaml reports it
    /// (`line 7: key "a" already set in map`); the later value won.
    pub duplicate: Option<String>,
}

/// Marks our own errors inside serde_yaml_ng's messages.
const ALIASING: &str = "\u{1}aliasing";
const DUPLICATE: &str = "\u{1}duplicate:";

/// Decodes the first document of a YAML body into a JSON value, expanding at most `nodes_max`
/// values. The error is go-yaml's message (`yaml: ...`).
pub fn decode(body: &[u8], nodes_max: usize) -> Result<Decoded, String> {
    match decode_once(body, nodes_max, false) {
        Ok(value) => Ok(Decoded {
            value,
            duplicate: None,
        }),
        Err(e) => {
            let text = e.to_string();
            let Some(at) = text.find(DUPLICATE) else {
                return Err(go_message(&e, &text));
            };
            let key = &text[at + DUPLICATE.len()..];
            let key = key.split(" at line ").next().unwrap_or(key);
            let line = e.location().map_or(0, |l| l.line());
            let duplicate = Some(format!("line {line}: key {key} already set in map"));
            let value =
                decode_once(body, nodes_max, true).map_err(|e| go_message(&e, &e.to_string()))?;
            Ok(Decoded { value, duplicate })
        }
    }
}

fn decode_once(body: &[u8], nodes_max: usize, dups: bool) -> Result<Value, serde_yaml_ng::Error> {
    let ctx = Ctx {
        nodes_left: Cell::new(nodes_max),
        dups,
    };
    match serde_yaml_ng::Deserializer::from_slice(body).next() {
        None => Ok(Value::Null),
        Some(doc) => Node(&ctx).deserialize(doc),
    }
}

/// go-yaml's wording for a serde_yaml_ng error: `yaml: line N: problem`, where go-yaml counts
/// a parser error's line from zero and a scanner error's from one (upstream's quirk, kept).
fn go_message(e: &serde_yaml_ng::Error, text: &str) -> String {
    if text.contains(ALIASING) || text.contains("repetition limit exceeded") {
        return "yaml: document contains excessive aliasing".into();
    }
    let line1 = e.location().map_or(0, |l| l.line());
    if text.starts_with("recursion limit exceeded") {
        return format!("yaml: line {line1}: exceeded max depth of {DEPTH_MAX}");
    }
    let problem = text.split(" at line ").next().unwrap_or(text);
    let problem = problem.split(", while ").next().unwrap_or(problem);
    let scanner = text.contains(", while scanning");
    let mut line = if scanner {
        line1
    } else {
        line1.saturating_sub(1)
    };
    if line == 0 {
        // The context's line, when the problem is on the first.
        if let Some(ctx) = text.split(", while ").nth(1) {
            line = ctx
                .rsplit(" at line ")
                .next()
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse::<usize>().ok())
                .map_or(0, |n| n.saturating_sub(1));
        }
    }
    if line == 0 {
        format!("yaml: {problem}")
    } else {
        format!("yaml: line {line}: {problem}")
    }
}

struct Ctx {
    nodes_left: Cell<usize>,
    /// Whether a key set twice is let through (the later value wins).
    dups: bool,
}

impl Ctx {
    fn take<E: de::Error>(&self) -> Result<(), E> {
        match self.nodes_left.get() {
            0 => Err(E::custom(ALIASING)),
            n => {
                self.nodes_left.set(n - 1);
                Ok(())
            }
        }
    }
}

/// One value of the document.
struct Node<'c>(&'c Ctx);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn float<E: de::Error>(f: f64) -> Result<Value, E> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| E::custom(format!("json: unsupported value: {}", go_float(f))))
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.take()?;
        Ok(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.take()?;
        Ok(v.into())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        self.0.take()?;
        float(v as f64)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        self.0.take()?;
        float(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.take()?;
        float(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::String(v.into()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.take()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Node(self.0))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.take()?;
        let mut out = Map::new();
        while let Some(k) = map.next_key_seed(Key(self.0, &out))? {
            let v = map.next_value_seed(Node(self.0))?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// A mapping's key, as `YAMLToJSON` turns keys into JSON's strings (numbers and booleans as
/// they print), refused when the mapping has it already unless `Ctx::dups`.
struct Key<'c, 'm>(&'c Ctx, &'m Map<String, Value>);

impl<'de> DeserializeSeed<'de> for Key<'_, '_> {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl Key<'_, '_> {
    fn check<E: de::Error>(&self, k: String) -> Result<String, E> {
        if !self.0.dups && self.1.contains_key(&k) {
            return Err(E::custom(format!("{DUPLICATE}{}", crate::gofmt::quote(&k))));
        }
        Ok(k)
    }
}

impl<'de> Visitor<'de> for Key<'_, '_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping key")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        self.check(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        self.check(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        self.check(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        self.check(go_float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        self.check(v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        self.check("null".into())
    }
}

// ---------------------------------------------------------------- writing

/// Where go-yaml folds a long scalar: at the first space past this column.
const BEST_WIDTH: usize = 80;

/// Writes `v` as `JSONToYAML` does (go-yaml v2's layout and quoting), ending with a newline.
pub fn encode(v: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    match v {
        Value::Object(m) if !m.is_empty() => w.mapping(m, 0, false),
        Value::Array(a) if !a.is_empty() => w.sequence(a, 0, false),
        // A document that is one scalar: go-yaml indents its continuation lines (a literal
        // block's, a folded line's) by two, as the root node's indentation starts at -1.
        other => w.value_inline(other, 2),
    }
    if w.column > 0 {
        w.out.push('\n');
    }
    w.out.into_bytes()
}

#[derive(Default)]
struct Writer {
    out: String,
    /// Characters since the last line break (go-yaml counts characters, not bytes).
    column: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

impl Writer {
    fn push(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn push_str(&mut self, s: &str) {
        for c in s.chars() {
            self.push(c);
        }
    }

    /// A new line at `indent` (no break when the cursor is already at a line's start).
    fn line(&mut self, indent: usize) {
        if self.column > 0 {
            self.out.push('\n');
            self.column = 0;
        }
        while self.column < indent {
            self.push(' ');
        }
    }

    /// A block mapping whose keys start at column `indent`; `inline`: the first key goes
    /// where the cursor is (after a sequence's `- `).
    fn mapping(&mut self, m: &Map<String, Value>, indent: usize, inline: bool) {
        let mut keys: Vec<&String> = m.keys().collect();
        sort_keys(&mut keys);
        for (i, k) in keys.into_iter().enumerate() {
            if !(inline && i == 0) {
                self.line(indent);
            }
            self.string(k, indent, true);
            self.push(':');
            match &m[k] {
                Value::Object(c) if !c.is_empty() => self.mapping(c, indent + 2, false),
                Value::Array(a) if !a.is_empty() => self.sequence(a, indent, false),
                v => {
                    self.push(' ');
                    self.value_inline(v, indent + 2);
                }
            }
        }
    }

    /// A block sequence whose dashes are at column `indent`.
    fn sequence(&mut self, a: &[Value], indent: usize, inline: bool) {
        for (i, v) in a.iter().enumerate() {
            if !(inline && i == 0) {
                self.line(indent);
            }
            self.push_str("- ");
            match v {
                Value::Object(c) if !c.is_empty() => self.mapping(c, indent + 2, true),
                Value::Array(s) if !s.is_empty() => self.sequence(s, indent + 2, true),
                v => self.value_inline(v, indent + 2),
            }
        }
    }

    /// A scalar or an empty collection where the cursor is; `indent` is where its folded or
    /// literal lines go.
    fn value_inline(&mut self, v: &Value, indent: usize) {
        match v {
            Value::Null => self.push_str("null"),
            Value::Bool(b) => self.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => self.push_str(&i.to_string()),
                (_, Some(u), _) => self.push_str(&u.to_string()),
                (_, _, Some(f)) => self.push_str(&go_float(f)),
                _ => self.push_str(&n.to_string()),
            },
            Value::String(s) => self.string(s, indent, false),
            Value::Object(_) => self.push_str("{}"),
            Value::Array(_) => self.push_str("[]"),
        }
    }

    fn string(&mut self, s: &str, indent: usize, key: bool) {
        match style(s, key) {
            Style::Plain => self.plain(s, indent, !key),
            Style::Single => self.single(s, indent, !key),
            Style::Double => self.double(s, indent, !key),
            Style::Literal => self.literal(s, indent),
        }
    }

    /// Breaks a line at this space instead of writing it (go-yaml's folding).
    fn fold(&mut self, indent: usize) {
        self.out.push('\n');
        self.column = 0;
        while self.column < indent {
            self.push(' ');
        }
    }

    fn plain(&mut self, s: &str, indent: usize, breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if breaks && !spaces && self.column > BEST_WIDTH && chars.get(i + 1) != Some(&' ') {
                    self.fold(indent);
                } else {
                    self.push(c);
                }
                spaces = true;
            } else {
                self.push(c);
                spaces = false;
            }
        }
    }

    fn single(&mut self, s: &str, indent: usize, breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        self.push('\'');
        let (mut spaces, mut breaks_before) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if is_break(c) {
                // Only NEL, LS and PS get here (a `\n` makes a literal block or double
                // quotes): go-yaml writes them as they are and indents the next line, which
                // YAML 1.1 readers (go-yaml too) fold into a space.
                self.out.push(c);
                self.column = 0;
                breaks_before = true;
                spaces = false;
                continue;
            }
            if breaks_before {
                while self.column < indent {
                    self.push(' ');
                }
                breaks_before = false;
            }
            if c == ' ' {
                if breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.fold(indent);
                } else {
                    self.push(c);
                }
                spaces = true;
            } else {
                if c == '\'' {
                    self.push('\'');
                }
                self.push(c);
                spaces = false;
            }
        }
        self.push('\'');
    }

    fn double(&mut self, s: &str, indent: usize, breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        self.push('"');
        let mut spaces = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
                self.push('\\');
                match c {
                    '\0' => self.push('0'),
                    '\u{7}' => self.push('a'),
                    '\u{8}' => self.push('b'),
                    '\t' => self.push('t'),
                    '\n' => self.push('n'),
                    '\u{b}' => self.push('v'),
                    '\u{c}' => self.push('f'),
                    '\r' => self.push('r'),
                    '\u{1b}' => self.push('e'),
                    '"' => self.push('"'),
                    '\\' => self.push('\\'),
                    '\u{85}' => self.push('N'),
                    '\u{a0}' => self.push('_'),
                    '\u{2028}' => self.push('L'),
                    '\u{2029}' => self.push('P'),
                    c if (c as u32) <= 0xff => self.push_str(&format!("x{:02X}", c as u32)),
                    c if (c as u32) <= 0xffff => self.push_str(&format!("u{:04X}", c as u32)),
                    c => self.push_str(&format!("U{:08X}", c as u32)),
                }
                spaces = false;
            } else if c == ' ' {
                if breaks && !spaces && self.column > BEST_WIDTH && i != 0 && i + 1 != chars.len() {
                    self.fold(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.push('\\');
                    }
                } else {
                    self.push(c);
                }
                spaces = true;
            } else {
                self.push(c);
                spaces = false;
            }
            i += 1;
        }
        self.push('"');
    }

    fn literal(&mut self, s: &str, indent: usize) {
        self.push('|');
        if s.starts_with([' ', '\n']) {
            self.push('2');
        }
        if !s.ends_with('\n') {
            self.push('-');
        } else if s == "\n" || s[..s.len() - 1].ends_with('\n') {
            self.push('+');
        }
        let mut at_break = true;
        self.out.push('\n');
        self.column = 0;
        for c in s.chars() {
            if is_break(c) {
                // go-yaml's `write_break`: `\n` as a newline, NEL, LS and PS as they are.
                self.out.push(c);
                self.column = 0;
                at_break = true;
            } else {
                if at_break {
                    while self.column < indent {
                        self.push(' ');
                    }
                }
                self.push(c);
                at_break = false;
            }
        }
    }
}

/// go-yaml's `is_printable` (with `unicode` on, as `yaml.Marshal` sets it).
fn printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0a
        || (0x20..=0x7e).contains(&u)
        || u == 0x85
        || (0xa0..=0xd7ff).contains(&u)
        || ((0xe000..=0xfffd).contains(&u) && u != 0xfeff)
        || (0x10000..=0x10ffff).contains(&u)
}

/// A YAML line break (go-yaml's `is_break`, both versions).
pub fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The style go-yaml v2 writes a string in: what `encoder.stringv` asks for, then what the
/// emitter's scalar analysis allows (`yaml_emitter_select_scalar_style`).
fn style(s: &str, key: bool) -> Style {
    let wanted = if s.contains('\n') {
        Style::Literal
    } else if resolves_to_other_than_string(s) || base60_float(s) {
        Style::Double
    } else {
        Style::Plain
    };
    let a = analyze(s);
    let mut style = wanted;
    if key && a.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!a.block_plain || (s.is_empty() && key)) {
        style = Style::Single;
    }
    if style == Style::Single && !a.single_quoted {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block || key) {
        style = Style::Double;
    }
    style
}

struct Analysis {
    multiline: bool,
    block_plain: bool,
    single_quoted: bool,
    block: bool,
}

/// go-yaml's `yaml_emitter_analyze_scalar`, for block context.
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain: true,
            single_quoted: true,
            block: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let blank = |c: Option<&char>| matches!(c, None | Some(' ') | Some('\t'));
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = blank(chars.get(i + 1));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !printable(c) {
            special = true;
        }
        let last = i + 1 == chars.len();
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t') || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain: true,
        single_quoted: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.block_plain = false;
        a.single_quoted = false;
    }
    if space_break || special {
        a.block_plain = false;
        a.single_quoted = false;
        a.block = false;
    }
    if line_breaks || block_indicators {
        a.block_plain = false;
    }
    a
}

/// Whether go-yaml v2's `resolve` reads the plain scalar `s` as anything but a string (so it
/// has to be quoted to stay one).
fn resolves_to_other_than_string(s: &str) -> bool {
    const WORDS: [&str; 39] = [
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF",
    ];
    if WORDS.contains(&s) || s == "<<" {
        return true;
    }
    match s.as_bytes()[0] {
        b'.' => yaml_style_float(s),
        b'0'..=b'9' | b'+' | b'-' => {
            if timestamp(s) {
                return true;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            go_int(&plain)
                || (yaml_style_float(&plain) && plain.parse::<f64>().is_ok_and(f64::is_finite))
                || plain
                    .strip_prefix("0b")
                    .or_else(|| plain.strip_prefix("-0b"))
                    .is_some_and(|d| {
                        !d.is_empty() && d.len() <= 64 && d.bytes().all(|b| b == b'0' || b == b'1')
                    })
        }
        _ => false,
    }
}

/// go-yaml's float pattern `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (the same
/// in go-yaml v2, which upstream's responses use, and v3, which keel-proto's OpenAPI YAML
/// mirrors).
pub fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeds: optional sign (int
/// only), then `0x`/`0o`/`0b` prefixed digits, a leading-zero octal, or decimal digits.
pub fn go_int(s: &str) -> bool {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    match u64::from_str_radix(digits, radix) {
        Ok(v) if neg => v <= 1 << 63,
        Ok(_) => true,
        Err(_) => false,
    }
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$` (quoted for YAML 1.1 readers).
fn base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        match (b.get(i), b.get(i + 1)) {
            (Some(b'0'..=b'5'), Some(d)) if d.is_ascii_digit() => i += 2,
            (Some(d), _) if d.is_ascii_digit() => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml's `parseTimestamp`: `2006-1-2`, `2006-1-2T15:4:5.999999999Z07:00` (`T` or `t`) and
/// `2006-1-2 15:4:5.999999999`.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |i: &mut usize, max: usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && *i - start < max && b[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i > start).then(|| s[start..*i].parse().ok()).flatten()
    };
    let sep = |i: &mut usize, c: u8| -> bool {
        let ok = b.get(*i) == Some(&c);
        *i += usize::from(ok);
        ok
    };
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let mut i = 4;
    if !sep(&mut i, b'-') {
        return false;
    }
    let Some(month) = num(&mut i, 2) else {
        return false;
    };
    if !sep(&mut i, b'-') {
        return false;
    }
    let Some(day) = num(&mut i, 2) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zoned = match b[i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    i += 1;
    let (Some(h), true, Some(m), true, Some(sec)) = (
        num(&mut i, 2),
        sep(&mut i, b':'),
        num(&mut i, 2),
        sep(&mut i, b':'),
        num(&mut i, 2),
    ) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    if sep(&mut i, b'.') {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    if !zoned {
        return i == b.len();
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let z = &b[i + 1..];
            z.len() == 5 && z[2] == b':' && z[..2].iter().chain(&z[3..]).all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// Sorts keys by [`key_order`] without trusting it to be a total order (it is not: digit runs
/// against other characters can contradict each other, and `slice::sort_by` may panic on
/// that; a client chooses the keys). Go sorts up to 12 elements by insertion, as here, so
/// small mappings come out exactly as upstream's whatever the keys; larger ones are merged,
/// which agrees with Go wherever the order is consistent.
fn sort_keys(keys: &mut [&String]) {
    let less = |a: &str, b: &str| key_order(a, b) == std::cmp::Ordering::Less;
    if keys.len() <= 12 {
        for i in 1..keys.len() {
            let mut j = i;
            while j > 0 && less(keys[j], keys[j - 1]) {
                keys.swap(j, j - 1);
                j -= 1;
            }
        }
        return;
    }
    let mid = keys.len() / 2;
    sort_keys(&mut keys[..mid]);
    sort_keys(&mut keys[mid..]);
    let mut merged = Vec::with_capacity(keys.len());
    let (mut i, mut j) = (0, mid);
    while i < mid && j < keys.len() {
        if less(keys[j], keys[i]) {
            merged.push(keys[j]);
            j += 1;
        } else {
            merged.push(keys[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&keys[i..mid]);
    merged.extend_from_slice(&keys[j..]);
    keys.copy_from_slice(&merged);
}

/// go-yaml's key order (`keyList.Less` for strings): runes compared one by one, letters by
/// code point and before anything else, runs of digits by their value.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` as go-yaml writes floats (`.inf`, `-.inf`,
/// `.nan` for the non-finite).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` gives the shortest digits that read back, as Go's -1 precision does.
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if f < 0.0 {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        exponent_form(&mut out, &digits, exp);
    } else if exp >= 0 {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
        out.push_str(&digits);
    }
    out
}

/// `d.ddde±XX`, Go's `%e` with at least two exponent digits.
fn exponent_form(out: &mut String, digits: &str, exp: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
}

#[cfg(test)]
mod tests;
