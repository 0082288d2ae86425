//! Stored objects read with their managedFields' FieldsV1 kept as JSON text.
//!
//! A stored object's `metadata.managedFields[*].fieldsV1` often holds more JSON values than
//! the rest of the object (a Pod's is 3 KiB of small objects), and most updates never read
//! it: their tracking keeps the entries as they are (the field manager's fast path for
//! updates that change only values their writer alone owns).
//! [`parse_stored_raw_fields`] therefore parses every other value as
//! [`super::parse_stored`] does and keeps each such FieldsV1 as its text, marked as
//! [`super::raw_json`] marks it, which the encoder writes back as it is. Whoever reads an
//! entry's fields must first [`materialize`] them.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;

/// [`super::parse_stored`], with each `metadata.managedFields[*].fieldsV1` object kept as
/// its JSON text ([`super::raw_json`]). Anything else at those places is parsed as usual.
pub fn parse_stored_raw_fields(bytes: &[u8]) -> Result<Value, keel_api::status::ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = At(Level::Root)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| {
        keel_api::status::ApiError::internal(format!("stored object is not valid JSON: {e}"))
    })
}

/// The FieldsV1 of every managedFields entry of `entries` (a `managedFields` value) that
/// holds it as text, parsed. Text that does not parse (never written by keel) is left a
/// string, which tracking treats as a malformed entry, as it would a client's.
pub fn materialize(entries: &mut Value) {
    let Value::Array(entries) = entries else {
        return;
    };
    for e in entries {
        if let Some(Value::String(s)) = e.get_mut("fieldsV1") {
            if let Some(Ok(v)) = super::raw_json_text(s).map(serde_json::from_str::<Value>) {
                e["fieldsV1"] = v;
            }
        }
    }
}

/// Whether any entry of `entries` holds its FieldsV1 as text.
pub fn has_raw(entries: &Value) -> bool {
    entries.as_array().is_some_and(|a| {
        a.iter().any(|e| {
            e.get("fieldsV1")
                .and_then(Value::as_str)
                .is_some_and(|s| super::raw_json_text(s).is_some())
        })
    })
}

/// Where in the object a value is read.
#[derive(Clone, Copy)]
enum Level {
    Root,
    Metadata,
    Entries,
    Entry,
}

/// Reads one value at a level (any JSON value: only objects and arrays are treated apart).
struct At(Level);

impl<'de> DeserializeSeed<'de> for At {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for At {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        match self.0 {
            Level::Entries => {
                while let Some(v) = seq.next_element_seed(At(Level::Entry))? {
                    out.push(v);
                }
            }
            _ => {
                while let Some(v) = seq.next_element::<Value>()? {
                    out.push(v);
                }
            }
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = match (self.0, key.as_str()) {
                (Level::Root, "metadata") => map.next_value_seed(At(Level::Metadata))?,
                (Level::Metadata, "managedFields") => map.next_value_seed(At(Level::Entries))?,
                (Level::Entry, "fieldsV1") => {
                    let raw: &RawValue = map.next_value()?;
                    let text = raw.get();
                    if text.starts_with('{') {
                        super::raw_json(text)
                    } else {
                        serde_json::from_str(text).map_err(serde::de::Error::custom)?
                    }
                }
                _ => map.next_value::<Value>()?,
            };
            // A repeated key keeps its place and takes the new value, as serde_json's own.
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The object of the plain parse, once its FieldsV1 are materialized; written back, the
    /// same bytes. Odd shapes parse as the plain parse does.
    #[test]
    fn raw_fields_read_back_as_the_plain_parse() {
        let docs = [
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k\"":{}}}},{"manager":"n","fieldsV1":"text"},{"fieldsV1":null},7]},"data":{"k\"":"v","fieldsV1":{"a":1}}}"#,
            r#"{"metadata":"odd","managedFields":[{"fieldsV1":{}}]}"#,
            r#"{"metadata":{"managedFields":{"fieldsV1":{}}}}"#,
            r#"{"metadata":{"managedFields":[{"fieldsV1":{"f:a":{}},"fieldsV1":{"f:b":{}}}]}}"#,
            r#"[1,{"metadata":{}}]"#,
            r#"{"a":1.5e300,"b":-3,"c":18446744073709551615,"d":true,"e":null}"#,
        ];
        for doc in docs {
            let plain: Value = serde_json::from_str(doc).unwrap();
            let mut raw = parse_stored_raw_fields(doc.as_bytes()).unwrap();
            assert_eq!(
                super::super::to_canonical_json(&raw),
                super::super::to_canonical_json(&plain),
                "{doc}"
            );
            if let Some(entries) = raw.pointer_mut("/metadata/managedFields") {
                materialize(entries);
            }
            assert_eq!(raw, plain, "{doc}");
        }
        let raw = parse_stored_raw_fields(docs[0].as_bytes()).unwrap();
        let entries = &raw["metadata"]["managedFields"];
        assert!(has_raw(entries));
        assert!(super::super::raw_json_text(entries[0]["fieldsV1"].as_str().unwrap()).is_some());
        assert_eq!(entries[1]["fieldsV1"], json!("text"), "a string stays one");
        assert_eq!(
            raw["data"]["fieldsV1"],
            json!({"a": 1}),
            "only under managedFields"
        );
        assert!(!has_raw(&json!([{"fieldsV1": {}}])));
    }

    #[test]
    fn invalid_json_is_the_servers_error() {
        for doc in [
            &b"{"[..],
            b"{\"metadata\":{\"managedFields\":[{\"fieldsV1\":{]}}",
            b"{} x",
        ] {
            let e = parse_stored_raw_fields(doc).unwrap_err();
            assert_eq!(e.code, 500, "{:?}", String::from_utf8_lossy(doc));
            assert!(
                e.message.contains("stored object is not valid JSON"),
                "{}",
                e.message
            );
        }
    }
}
