//! A JSON tree that keeps every object member in order, duplicates included (serde_json's
//! `Value` keeps only the last one), parsed by serde_json so syntax errors read the same.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

#[derive(Debug, PartialEq)]
pub(crate) enum Raw {
    Null,
    Bool(bool),
    /// An integer literal that fits i64/u64.
    Int(i128),
    /// Any other number.
    Float(f64),
    Str(String),
    Arr(Vec<Raw>),
    Obj(Vec<(String, Raw)>),
}

impl Raw {
    /// A decoded value as raw (a float prints as Rust's shortest form, where the body's
    /// literal may have been written otherwise: `1e3` is `1000`).
    pub(crate) fn of_value(v: &serde_json::Value) -> Raw {
        use serde_json::Value;
        match v {
            Value::Null => Raw::Null,
            Value::Bool(b) => Raw::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Raw::Int(i.into()),
                (_, Some(u)) => Raw::Int(u.into()),
                _ => Raw::Float(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => Raw::Str(s.clone()),
            Value::Array(a) => Raw::Arr(a.iter().map(Raw::of_value).collect()),
            Value::Object(m) => Raw::Obj(
                m.iter()
                    .map(|(k, v)| (k.clone(), Raw::of_value(v)))
                    .collect(),
            ),
        }
    }

    /// How upstream's decoder names the JSON value in a type error.
    pub(crate) fn json_kind(&self) -> String {
        match self {
            Raw::Null => "null".to_owned(),
            Raw::Bool(_) => "bool".to_owned(),
            Raw::Int(_) | Raw::Float(_) => "number".to_owned(),
            Raw::Str(_) => "string".to_owned(),
            Raw::Arr(_) => "array".to_owned(),
            Raw::Obj(_) => "object".to_owned(),
        }
    }
}

/// Parse a body; the error is serde_json's syntax error text.
pub(crate) fn parse(body: &[u8]) -> Result<Raw, String> {
    serde_json::from_slice(body).map_err(|e| e.to_string())
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::Int(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Raw::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut members = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Raw>()? {
            members.push((key, value));
        }
        Ok(Raw::Obj(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_duplicates_in_order() {
        let raw = parse(br#"{"a":1,"b":[true,null,"x",1.5],"a":2}"#).unwrap();
        let Raw::Obj(members) = raw else {
            panic!("not an object")
        };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "a"]);
        assert_eq!(members[2].1, Raw::Int(2));
        assert_eq!(
            members[1].1,
            Raw::Arr(vec![
                Raw::Bool(true),
                Raw::Null,
                Raw::Str("x".into()),
                Raw::Float(1.5)
            ])
        );
    }

    #[test]
    fn syntax_errors_are_values() {
        for bad in [&b""[..], b"{", b"{\"a\":}", b"[1,]", b"{} x", b"\xff"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
