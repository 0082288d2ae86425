//! Resources served in several versions: objects are stored in one version (the storage
//! version) and each request sees them in its own, as upstream's API server converts them.
//!
//! A resource served in one version has no [`Versions`] and pays nothing. For the others the
//! registry converts a written object to the storage version before it is stored, and what it
//! reads (gets, list items, write answers, watch events) to the version of the request. An
//! object already in the wanted version is served as stored: the check reads the
//! `apiVersion` at the head of the stored bytes (keel writes `kind` and `apiVersion` first),
//! without parsing the object.
//!
//! How objects convert:
//! - a custom resource whose definition says `conversion.strategy: None`: only `apiVersion`
//!   changes (upstream's "nop" converter);
//! - a definition with `strategy: Webhook`: not implemented yet. An object in another version
//!   than the one asked for is refused with a 500 that says so (never served unconverted);
//!   objects already in the asked version are served.
//!
//! Objects stored before the storage version changed stay in their version until they are
//! written again (as upstream's, whose `status.storedVersions` lists them).

use keel_api::status::ApiError;
use serde_json::Value;
use std::borrow::Cow;

/// How the objects of one served version of a resource convert (shared by the versions'
/// routes of one definition).
#[derive(Debug, Clone, PartialEq)]
pub struct Versions {
    /// The `apiVersion` objects are stored in (`example.com/v1`).
    pub storage: String,
    /// The `apiVersion` of the route's requests.
    pub request: String,
    how: How,
}

#[derive(Debug, Clone, PartialEq)]
enum How {
    /// Only `apiVersion` changes.
    ApiVersion,
    /// A conversion webhook (not implemented): the definition's name, for the error.
    Webhook { crd: String },
}

impl Versions {
    /// The conversion of a custom resource's version `version` per its definition `crd`
    /// (`None` when the definition has one version: nothing ever converts).
    pub fn of_custom(crd: &Value, version: &str) -> Option<Versions> {
        let versions = crd.pointer("/spec/versions")?.as_array()?;
        if versions.len() < 2 {
            return None;
        }
        let group = crd.pointer("/spec/group")?.as_str()?;
        let storage = versions
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
            .get("name")?
            .as_str()?;
        let how = match crd
            .pointer("/spec/conversion/strategy")
            .and_then(Value::as_str)
        {
            Some("Webhook") => How::Webhook {
                crd: crd
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            },
            _ => How::ApiVersion,
        };
        Some(Versions {
            storage: format!("{group}/{storage}"),
            request: format!("{group}/{version}"),
            how,
        })
    }

    /// `obj` converted to `to` (an `apiVersion`); unchanged when it is in `to` already.
    pub fn convert(&self, obj: &mut Value, to: &str) -> Result<(), ApiError> {
        let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if from == to {
            return Ok(());
        }
        match &self.how {
            How::ApiVersion => {
                if let Some(o) = obj.as_object_mut() {
                    o.insert("apiVersion".into(), to.into());
                }
                Ok(())
            }
            How::Webhook { crd } => Err(ApiError::internal(format!(
                "conversion webhook for {crd} failed: conversion webhooks are not implemented \
                 by this server (object in {from}, wanted {to})"
            ))),
        }
    }

    /// A written object (in the request's version) as it is stored.
    pub fn to_storage(&self, obj: &mut Value) -> Result<(), ApiError> {
        self.convert(obj, &self.storage)
    }

    /// A read object (in whatever version it was stored) as the request sees it.
    pub fn to_request(&self, obj: &mut Value) -> Result<(), ApiError> {
        self.convert(obj, &self.request)
    }

    /// Whether the stored bytes of an object are in another version than the request's.
    pub fn converts(&self, stored: &[u8]) -> bool {
        stored_api_version(stored).as_deref() != Some(self.request.as_str())
    }

    /// Stored bytes as the request sees them: borrowed when already in its version.
    pub fn bytes_to_request<'a>(&self, stored: &'a [u8]) -> Result<Cow<'a, [u8]>, ApiError> {
        if !self.converts(stored) {
            return Ok(Cow::Borrowed(stored));
        }
        let mut obj = crate::objects::parse_stored(stored)?;
        self.to_request(&mut obj)?;
        Ok(Cow::Owned(crate::objects::to_canonical_json(&obj)))
    }

    /// [`Versions::bytes_to_request`] of an owned answer.
    pub fn vec_to_request(&self, stored: Vec<u8>) -> Result<Vec<u8>, ApiError> {
        Ok(match self.bytes_to_request(&stored)? {
            Cow::Borrowed(_) => stored,
            Cow::Owned(v) => v,
        })
    }
}

/// The `apiVersion` of a stored object. keel stores `{"kind":"...","apiVersion":"..."`
/// first, which is read without parsing; anything else (bytes written otherwise, escapes in
/// either string) is parsed.
pub fn stored_api_version(bytes: &[u8]) -> Option<Cow<'_, str>> {
    fn plain_string(b: &[u8]) -> Option<(&[u8], &[u8])> {
        let end = b.iter().position(|&c| c == b'"' || c == b'\\')?;
        (b[end] == b'"').then(|| (&b[..end], &b[end + 1..]))
    }
    let fast = || {
        let rest = bytes.strip_prefix(b"{\"kind\":\"")?;
        let (_, rest) = plain_string(rest)?;
        let rest = rest.strip_prefix(b",\"apiVersion\":\"")?;
        let (v, _) = plain_string(rest)?;
        std::str::from_utf8(v).ok()
    };
    if let Some(v) = fast() {
        return Some(Cow::Borrowed(v));
    }
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(rename = "apiVersion")]
        api_version: Option<String>,
    }
    serde_json::from_slice::<Head>(bytes)
        .ok()?
        .api_version
        .map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(strategy: Option<&str>, versions: &[(&str, bool)]) -> Value {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(n, s)| json!({"name": n, "served": true, "storage": s}))
            .collect();
        let mut c = json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "versions": versions}});
        if let Some(s) = strategy {
            c["spec"]["conversion"] = json!({"strategy": s});
        }
        c
    }

    #[test]
    fn one_version_never_converts() {
        assert_eq!(Versions::of_custom(&crd(None, &[("v1", true)]), "v1"), None);
        // No storage version (refused by validation, but never panics here).
        assert_eq!(
            Versions::of_custom(&crd(None, &[("v1", false), ("v2", false)]), "v1"),
            None
        );
    }

    #[test]
    fn strategy_none_changes_only_the_api_version() {
        let v =
            Versions::of_custom(&crd(Some("None"), &[("v1", false), ("v2", true)]), "v1").unwrap();
        assert_eq!(v.storage, "example.com/v2");
        assert_eq!(v.request, "example.com/v1");
        let mut o = json!({"kind": "Widget", "apiVersion": "example.com/v1",
            "metadata": {"name": "a"}, "spec": {"x": 1}});
        v.to_storage(&mut o).unwrap();
        assert_eq!(
            o,
            json!({"kind": "Widget", "apiVersion": "example.com/v2",
            "metadata": {"name": "a"}, "spec": {"x": 1}})
        );
        v.to_request(&mut o).unwrap();
        assert_eq!(o["apiVersion"], "example.com/v1");
        // No strategy is None.
        let d = Versions::of_custom(&crd(None, &[("v1", true), ("v2", false)]), "v2").unwrap();
        assert_eq!(d.how, How::ApiVersion);
    }

    #[test]
    fn stored_bytes_convert_only_when_in_another_version() {
        let v = Versions::of_custom(&crd(None, &[("v1", true), ("v2", false)]), "v2").unwrap();
        let at_v2 = br#"{"kind":"Widget","apiVersion":"example.com/v2","metadata":{"name":"a"}}"#;
        assert!(matches!(
            v.bytes_to_request(at_v2).unwrap(),
            Cow::Borrowed(_)
        ));
        let at_v1 = br#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"a"},"spec":{"apiVersion":"x"}}"#;
        let out = v.bytes_to_request(at_v1).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"kind":"Widget","apiVersion":"example.com/v2","metadata":{"name":"a"},"spec":{"apiVersion":"x"}}"#
        );
    }

    #[test]
    fn webhook_conversion_is_refused_not_skipped() {
        let v = Versions::of_custom(&crd(Some("Webhook"), &[("v1", true), ("v2", false)]), "v2")
            .unwrap();
        let mut o = json!({"kind": "Widget", "apiVersion": "example.com/v1"});
        let e = v.to_request(&mut o).unwrap_err();
        assert_eq!(e.code, 500);
        assert!(e.message.contains("widgets.example.com"), "{}", e.message);
        // Already in the wanted version: nothing to call.
        let mut o = json!({"kind": "Widget", "apiVersion": "example.com/v2"});
        v.to_request(&mut o).unwrap();
    }

    #[test]
    fn api_version_is_read_from_the_head_or_parsed() {
        let cases: [(&[u8], Option<&str>); 6] = [
            (
                br#"{"kind":"K","apiVersion":"g/v1","metadata":{}}"#,
                Some("g/v1"),
            ),
            (
                br#"{"metadata":{},"apiVersion":"g/v2","kind":"K"}"#,
                Some("g/v2"),
            ),
            (br#"{"kind":"K\"","apiVersion":"g/v3"}"#, Some("g/v3")),
            (br#"{"kind":"K","apiVersion":"g\/v4"}"#, Some("g/v4")),
            (br#"{"kind":"K"}"#, None),
            (b"not json", None),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                stored_api_version(bytes).as_deref(),
                want,
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
