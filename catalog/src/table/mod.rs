//! Server-side Table rendering (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`).
//!
//! Each printer is a pure function from one object (JSON) and "now" to a row of cells, with the
//! same columns, cell types and formats as upstream's printers for that kind. The server renders
//! every column (priority 0 and 1); clients hide priority-1 columns unless asked (`-o wide`).
//! Types without a printer get the default two columns, `Name` and `Created At`. Custom
//! resources get the columns their CRD version declares ([`CustomColumns`], [`custom_table`]).
//!
//! Column definitions are upstream's byte for byte (`tests/upstream_tables.rs` compares them
//! with a recording): most descriptions are the OpenAPI description of the field the column
//! shows, named as a [`Desc::Field`] and read from the schemas `keel_schema` embeds; the rest
//! are the sentences upstream's printers write themselves.

use keel_api::jsonmap::JsonPointer;
mod cluster;
mod core;
mod custom;
mod infra;
mod other;
mod time;
mod util;
mod workloads;

#[cfg(test)]
mod tests;

use std::time::SystemTime;

use serde_json::{json, Map, Value};

use crate::types::ResourceInfo;

pub use custom::{custom_table, ColumnError, CustomColumns};

/// The `includeObject` query parameter: what each row's `object` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object (`"object": null`).
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter value (`None`, `Metadata`, `Object`); empty means default.
    pub fn parse(value: &str) -> Option<IncludeObject> {
        match value {
            "" | "Metadata" => Some(IncludeObject::Metadata),
            "None" => Some(IncludeObject::None),
            "Object" => Some(IncludeObject::Object),
            _ => None,
        }
    }
}

/// One column definition (`TableColumnDefinition`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Col {
    pub name: &'static str,
    pub ty: &'static str,
    pub format: &'static str,
    pub description: Desc,
    pub priority: i32,
}

/// Where a column's description comes from. Upstream's printers describe most columns with the
/// API documentation of the field they show (`ServiceSpec{}.SwaggerDoc()["type"]`), which is
/// that field's description in the published OpenAPI schemas; the rest with a sentence of
/// their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Desc {
    /// The description of `property` of `definition` in the published OpenAPI v2 definitions
    /// (`keel_schema`), e.g. `io.k8s.api.core.v1.ServiceSpec` / `type`.
    Field {
        definition: &'static str,
        property: &'static str,
    },
    /// A sentence of upstream's printer, as its server answers it (some are the documentation
    /// of a field in an API version no longer published, e.g. rbac v1beta1).
    Sentence(&'static str),
}

/// The description of a property of a published OpenAPI definition.
pub(crate) const fn field(definition: &'static str, property: &'static str) -> Desc {
    Desc::Field {
        definition,
        property,
    }
}

/// A description upstream's printer writes itself.
pub(crate) const fn sentence(text: &'static str) -> Desc {
    Desc::Sentence(text)
}

impl Desc {
    /// The text. A `Field` the embedded schemas lack is a programmer error the tests catch
    /// (`every_field_description_resolves`); served, it is an empty description.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Desc::Sentence(text) => text,
            Desc::Field {
                definition,
                property,
            } => keel_schema::schemas()
                .definition(definition)
                .and_then(|d| d.at(&format!("/properties/{property}/description")))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default(),
        }
    }
}

/// A column of priority 0 (shown by default).
pub(crate) const fn col(name: &'static str, ty: &'static str, description: Desc) -> Col {
    Col {
        name,
        ty,
        format: "",
        description,
        priority: 0,
    }
}

/// A column of priority 1 (shown with `-o wide`).
pub(crate) const fn wide(name: &'static str, ty: &'static str, description: Desc) -> Col {
    Col {
        name,
        ty,
        format: "",
        description,
        priority: 1,
    }
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

pub(crate) const NAME: Col = Col {
    name: "Name",
    ty: "string",
    format: "name",
    description: field(OBJECT_META, "name"),
    priority: 0,
};
pub(crate) const AGE: Col = col("Age", "string", field(OBJECT_META, "creationTimestamp"));
pub(crate) const CONTAINERS: Col = wide(
    "Containers",
    "string",
    sentence("Names of each container in the template."),
);
pub(crate) const IMAGES: Col = wide(
    "Images",
    "string",
    sentence("Images referenced by each container in the template."),
);

/// A rendered row: its cells and optional row conditions.
pub(crate) struct Row {
    pub cells: Vec<Value>,
    pub conditions: Option<Value>,
}

impl Row {
    pub(crate) fn new(cells: Vec<Value>) -> Row {
        Row {
            cells,
            conditions: None,
        }
    }
}

/// A printer: the columns and the function producing a row (object, now in Unix seconds).
pub(crate) struct Printer {
    pub columns: &'static [Col],
    pub print: fn(&Value, i64) -> Row,
}

const DEFAULT_COLUMNS: &[Col] = &[
    NAME,
    Col {
        name: "Created At",
        ty: "date",
        format: "",
        description: field(OBJECT_META, "creationTimestamp"),
        priority: 0,
    },
];

fn print_default(obj: &Value, _now: i64) -> Row {
    // Go formats a zero (missing) creationTimestamp as year 1.
    let created = time::parse_rfc3339(util::s(obj, "/metadata/creationTimestamp"))
        .map(util::format_rfc3339)
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_owned());
    Row::new(vec![json!(util::name(obj)), json!(created)])
}

const DEFAULT_PRINTER: Printer = Printer {
    columns: DEFAULT_COLUMNS,
    print: print_default,
};

/// The printer for a resource: upstream has one per (group, kind), shared by all versions.
fn printer_for(info: &ResourceInfo) -> &'static Printer {
    workloads::printer(info.group, info.kind)
        .or_else(|| core::printer(info.group, info.kind))
        .or_else(|| other::printer(info.group, info.kind))
        .or_else(|| infra::printer(info.group, info.kind))
        .or_else(|| cluster::printer(info.group, info.kind))
        .unwrap_or(&DEFAULT_PRINTER)
}

fn column_json(c: &Col) -> Value {
    json!({"name": c.name, "type": c.ty, "format": c.format, "description": c.description.text(), "priority": c.priority})
}

fn row_object(obj: &Value, include: IncludeObject) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    }
}

/// Renders `objects` (all of kind `info.kind`) as a `meta.k8s.io/v1` Table.
///
/// `list_meta` becomes the Table's `metadata` (`resourceVersion`, `continue`,
/// `remainingItemCount`); `null` means none. Ages are computed against `now`.
pub fn table(
    info: &ResourceInfo,
    objects: &[&Value],
    include: IncludeObject,
    list_meta: Value,
    now: SystemTime,
) -> Value {
    let printer = printer_for(info);
    let now = time::unix_seconds(now);
    let mut objects = objects.to_vec();
    if let Some(order) = cluster::row_order(info.group, info.kind) {
        objects.sort_by(|a, b| order(a, b));
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let row = (printer.print)(obj, now);
            let mut out = Map::new();
            out.insert("cells".to_owned(), Value::Array(row.cells));
            if let Some(c) = row.conditions {
                out.insert("conditions".to_owned(), c);
            }
            out.insert("object".to_owned(), row_object(obj, include));
            Value::Object(out)
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
        "columnDefinitions": printer.columns.iter().map(column_json).collect::<Vec<_>>(),
        "rows": rows,
    })
}
