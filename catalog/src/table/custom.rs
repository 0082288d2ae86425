//! Tables of custom resources: the columns a CRD version declares in
//! `additionalPrinterColumns`, as upstream's apiextensions `tableconvertor` renders them.
//!
//! A column's cell is the first value its JSONPath (`{<jsonPath>}`, missing keys allowed)
//! finds, or `null` when it finds none or fails. `string` columns print that value as
//! client-go's jsonpath prints it (maps and lists as JSON); `integer`, `number`, `boolean`
//! and `date` columns convert it (`cellForJSONValue`), and anything they cannot convert is
//! `null`. A column whose JSONPath does not parse ends the column list: upstream keeps the
//! columns before it and drops it and every later one (and serves the rest of the resource).

use std::time::SystemTime;

use serde_json::{json, Map, Value};

use super::{row_object, time, util, IncludeObject, AGE, NAME};
use crate::jsonpath::{
    go_json_integer, go_number, print_results, Found, GoNumber, JsonPath, ParseError,
};

/// The Table columns of one served CRD version, compiled once from its printer columns.
#[derive(Debug, Clone)]
pub struct CustomColumns {
    /// Column definitions as served (`TableColumnDefinition`), `Name` first.
    definitions: Vec<Value>,
    /// One per column after `Name`: its declared type and parsed JSONPath.
    columns: Vec<Column>,
    error: Option<ColumnError>,
}

#[derive(Debug, Clone)]
struct Column {
    ty: String,
    path: JsonPath,
}

/// A printer column whose JSONPath did not parse; it and later columns are not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnError {
    /// Its position in `additionalPrinterColumns`.
    pub index: usize,
    pub json_path: String,
    pub error: ParseError,
}

impl std::fmt::Display for ColumnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unrecognized column definition {:?}: {}",
            self.json_path, self.error
        )
    }
}

fn str_field<'a>(column: &'a Value, key: &str) -> &'a str {
    column.get(key).and_then(Value::as_str).unwrap_or("")
}

impl CustomColumns {
    /// Compiles a CRD version's `additionalPrinterColumns` (each `{name, type, format,
    /// description, priority, jsonPath}`). None means upstream's default single `Age`
    /// column (`.metadata.creationTimestamp`, type `date`).
    pub fn new(printer_columns: &[Value]) -> CustomColumns {
        let default_age;
        let printer_columns = if printer_columns.is_empty() {
            default_age = [json!({
                "name": AGE.name,
                "type": "date",
                "description": AGE.description.text(),
                "jsonPath": ".metadata.creationTimestamp",
            })];
            &default_age[..]
        } else {
            printer_columns
        };
        let mut out = CustomColumns {
            definitions: vec![super::column_json(&NAME)],
            columns: Vec::with_capacity(printer_columns.len()),
            error: None,
        };
        for (index, column) in printer_columns.iter().enumerate() {
            let json_path = str_field(column, "jsonPath");
            let path = match JsonPath::parse(&format!("{{{json_path}}}")) {
                Ok(path) => path.allow_missing_keys(true),
                Err(error) => {
                    out.error = Some(ColumnError {
                        index,
                        json_path: json_path.to_owned(),
                        error,
                    });
                    break;
                }
            };
            let description = match str_field(column, "description") {
                "" => {
                    format!("Custom resource definition column (in JSONPath format): {json_path}")
                }
                given => given.to_owned(),
            };
            let priority = column
                .get("priority")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0);
            let ty = str_field(column, "type");
            out.definitions.push(json!({
                "name": str_field(column, "name"),
                "type": ty,
                "format": str_field(column, "format"),
                "description": description,
                "priority": priority,
            }));
            out.columns.push(Column {
                ty: ty.to_owned(),
                path,
            });
        }
        out
    }

    /// The first printer column whose JSONPath did not parse, if any (upstream logs it and
    /// serves the columns before it).
    pub fn error(&self) -> Option<&ColumnError> {
        self.error.as_ref()
    }

    /// The column definitions served, `Name` first.
    pub fn definitions(&self) -> &[Value] {
        &self.definitions
    }

    fn row(&self, obj: &Value, now: i64) -> Vec<Value> {
        let mut cells = Vec::with_capacity(1 + self.columns.len());
        cells.push(json!(util::name(obj)));
        for column in &self.columns {
            cells.push(cell(column, obj, now));
        }
        cells
    }
}

fn cell(column: &Column, obj: &Value, now: i64) -> Value {
    let Ok(results) = column.path.find_results(obj) else {
        return Value::Null;
    };
    let Some(first) = results.first().and_then(|r| r.first()) else {
        return Value::Null;
    };
    if column.ty == "string" {
        // Upstream prints the value it took out of the result: a `null` is then no value at all.
        if matches!(first, Found::Json(Value::Null)) {
            return json!("<no value>");
        }
        return Value::String(print_results(std::slice::from_ref(first)));
    }
    cell_for_json_value(&column.ty, first, now)
}

/// A decoded value as the Go type upstream's unstructured objects hold.
enum GoValue<'v> {
    Int64(i64),
    Float64(f64),
    Bool(bool),
    Str(&'v str),
    Other,
}

fn go_value<'v>(found: &'v Found<'_>) -> GoValue<'v> {
    match found {
        Found::Json(Value::Number(n)) => match go_number(n) {
            GoNumber::Int(i) => GoValue::Int64(i),
            GoNumber::Float(f) => GoValue::Float64(f),
        },
        Found::Json(Value::Bool(b)) | Found::Bool(b) => GoValue::Bool(*b),
        Found::Json(Value::String(s)) => GoValue::Str(s),
        Found::Text(s) => GoValue::Str(s),
        Found::Float(f) => GoValue::Float64(*f),
        // A literal integer of the template is a Go `int`, which no case converts.
        _ => GoValue::Other,
    }
}

/// Go's `int64(f)` on amd64: truncation, and the minimum for anything out of range.
fn go_int64_of_float(f: f64) -> i64 {
    if f.is_finite() && f > -9_223_372_036_854_775_809.0 && f < 9_223_372_036_854_775_808.0 {
        f.trunc() as i64
    } else {
        i64::MIN
    }
}

/// A `float64` cell. Go's encoder writes an integral value below 1e21 without a fraction, with
/// its shortest digits padded with zeros; the same integer here makes the same bytes.
fn float_cell(f: f64) -> Value {
    match go_json_integer(f) {
        Some(i) if !(f == 0.0 && f.is_sign_negative()) => json!(i),
        _ => json!(f),
    }
}

/// Upstream's `cellForJSONValue` for every column type but `string`.
fn cell_for_json_value(ty: &str, found: &Found<'_>, now: i64) -> Value {
    match (ty, go_value(found)) {
        ("integer", GoValue::Int64(i)) => json!(i),
        ("integer", GoValue::Float64(f)) => json!(go_int64_of_float(f)),
        ("number", GoValue::Int64(i)) => float_cell(i as f64),
        ("number", GoValue::Float64(f)) => float_cell(f),
        ("boolean", GoValue::Bool(b)) => json!(b),
        ("date", GoValue::Str(s)) => json!(date_cell(s, now)),
        _ => Value::Null,
    }
}

/// `metav1.Time.UnmarshalQueryParameter` then `ConvertToHumanReadableDateType`.
fn date_cell(text: &str, now: i64) -> String {
    if text.is_empty() || text == "null" {
        return "<unknown>".to_owned();
    }
    match go_parse_rfc3339(text) {
        None => "<invalid>".to_owned(),
        Some(GoTime { unix, zero: true }) => {
            debug_assert_eq!(unix, GO_ZERO_TIME_UNIX);
            "<unknown>".to_owned()
        }
        Some(GoTime { unix, .. }) => time::human_duration(now - unix),
    }
}

/// Go's zero time, 0001-01-01T00:00:00Z, which prints as unknown.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

struct GoTime {
    /// Whole seconds since the Unix epoch (fractions dropped, as the built-in ages do).
    unix: i64,
    /// Whether it is Go's zero time exactly (no fraction).
    zero: bool,
}

/// What Go's `time.Parse(time.RFC3339, text)` accepts, which is stricter than keel's
/// timestamps in some ways (`T` and `Z` upper case, a day that exists in its month, second
/// below 60) and looser in others (a one-digit hour, a comma before the fraction, offsets up
/// to 24:60).
fn go_parse_rfc3339(text: &str) -> Option<GoTime> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || b.get(10) != Some(&b'T') {
        return None;
    }
    let hour_digits = if b.get(12) == Some(&b':') { 1 } else { 2 };
    let hour = num(11..11 + hour_digits)?;
    let at = 11 + hour_digits;
    if b.get(at) != Some(&b':') || b.get(at + 3) != Some(&b':') {
        return None;
    }
    let (minute, second) = (num(at + 1..at + 3)?, num(at + 4..at + 6)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let valid = (1..=12).contains(&month)
        && day >= 1
        && usize::try_from(month - 1)
            .ok()
            .and_then(|m| month_days.get(m))
            .is_some_and(|&max| day <= max)
        && hour < 24
        && minute < 60
        && second < 60;
    if !valid {
        return None;
    }
    let mut rest = &text[at + 6..];
    let mut fraction_nonzero = false;
    if rest.len() >= 2
        && matches!(rest.as_bytes()[0], b'.' | b',')
        && rest.as_bytes()[1].is_ascii_digit()
    {
        let n = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
        // Go keeps nanoseconds: nine digits.
        fraction_nonzero = rest[1..1 + n.min(9)].bytes().any(|d| d != b'0');
        rest = &rest[1 + n..];
    }
    let offset = match rest.as_bytes() {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()) =>
        {
            let hours = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let minutes = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            if hours > 24 || minutes > 60 {
                return None;
            }
            let seconds = hours * 3600 + minutes * 60;
            if *sign == b'-' {
                -seconds
            } else {
                seconds
            }
        }
        _ => return None,
    };
    let utc = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z");
    let unix = time::parse_rfc3339(&utc)? - offset;
    Some(GoTime {
        unix,
        zero: unix == GO_ZERO_TIME_UNIX && !fraction_nonzero,
    })
}

/// Renders custom resources as a `meta.k8s.io/v1` Table with the columns of their CRD
/// version (see [`CustomColumns`]); rows in the order given.
///
/// `list_meta` becomes the Table's `metadata` (`null` means none); ages are computed against
/// `now`; each row's `object` follows `include` as in the built-in tables.
pub fn custom_table(
    columns: &CustomColumns,
    objects: &[&Value],
    include: IncludeObject,
    list_meta: Value,
    now: SystemTime,
) -> Value {
    let now = time::unix_seconds(now);
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let mut row = Map::new();
            row.insert("cells".to_owned(), Value::Array(columns.row(obj, now)));
            row.insert("object".to_owned(), row_object(obj, include));
            Value::Object(row)
        })
        .collect();
    let metadata = match list_meta {
        Value::Object(m) => Value::Object(m),
        _ => json!({}),
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns.definitions,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests;
