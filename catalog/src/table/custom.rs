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
    /// Go's zero time, 0001-01-01T00:00:00Z, which prints as unknown.
    const ZERO_TIME_UNIX: i64 = -62_135_596_800;
    if text.is_empty() || text == "null" {
        return "<unknown>".to_owned();
    }
    match time::parse_rfc3339(text) {
        None => "<invalid>".to_owned(),
        Some(ZERO_TIME_UNIX) => "<unknown>".to_owned(),
        Some(t) => time::human_duration(now - t),
    }
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
