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
//! - a built-in resource upstream stores in one version of several (HorizontalPodAutoscalers,
//!   Events of both groups, the beta and alpha versions `--runtime-config` turns on): as
//!   `keel_strategy::convert` maps their fields;
//! - `strategy: Webhook`: the definition's conversion webhook converts them ([`webhook`]), one
//!   review per object, or per list page for its items in other versions. Watches of such a
//!   resource convert their events after selecting them (`handlers::watch`), since a feed's
//!   encodings are made without waiting.
//!
//! Objects stored before the storage version changed stay in their version until they are
//! written again (as upstream's, whose `status.storedVersions` lists them).

use keel_api::jsonmap::JsonPointer;
pub mod webhook;

use keel_api::status::ApiError;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// How the objects of one served version of a resource convert (shared by the versions'
/// routes of one definition).
#[derive(Debug, Clone, PartialEq)]
pub struct Versions {
    /// The `apiVersion` objects are stored in (`example.com/v1`).
    pub storage: String,
    /// The `apiVersion` of the route's requests (shared: watch encodings are keyed by it).
    pub request: Arc<str>,
    how: How,
}

#[derive(Debug, Clone, PartialEq)]
enum How {
    /// Only `apiVersion` changes.
    ApiVersion,
    /// The definition's conversion webhook.
    Webhook(Arc<webhook::Webhook>),
    /// A built-in resource's conversion (`keel_strategy::convert`).
    Builtin {
        group: &'static str,
        resource: &'static str,
    },
}

impl Versions {
    /// The conversion of a custom resource's version `version` per its definition `crd`
    /// (`None` when the definition has one version: nothing ever converts).
    pub fn of_custom(
        crd: &Value,
        version: &str,
        resolver: Option<&crate::service_ref::ServiceResolver>,
    ) -> Option<Versions> {
        let versions = crd.at("/spec/versions")?.as_array()?;
        if versions.len() < 2 {
            return None;
        }
        let group = crd.at("/spec/group")?.as_str()?;
        let storage = versions
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
            .get("name")?
            .as_str()?;
        let conversion = crd.at("/spec/conversion").unwrap_or(&Value::Null);
        let how = match conversion.get("strategy").and_then(Value::as_str) {
            Some("Webhook") => How::Webhook(Arc::new(webhook::Webhook::of(
                conversion,
                resolver.cloned(),
            ))),
            _ => How::ApiVersion,
        };
        Some(Versions {
            storage: format!("{group}/{storage}"),
            request: format!("{group}/{version}").into(),
            how,
        })
    }

    /// The conversion of a built-in resource served as `info`, if upstream stores it in
    /// one version and converts (`keel_strategy::storage_api_version`).
    pub fn of_builtin(info: &keel_catalog::ResourceInfo) -> Option<Versions> {
        let storage = keel_strategy::storage_api_version(info.group, info.plural)?;
        Some(Versions {
            storage: storage.to_owned(),
            request: info.api_version().into(),
            how: How::Builtin {
                group: info.group,
                resource: info.plural,
            },
        })
    }

    /// Whether objects convert without waiting (no webhook): what a watch feed's encoder
    /// can do as it encodes.
    pub fn converts_at_once(&self) -> bool {
        !matches!(self.how, How::Webhook(_))
    }

    /// `objects` converted to `to` (an `apiVersion`); those in `to` already are left as they
    /// are. `list`: they are the items of a list (one webhook review for them all).
    pub async fn convert(
        &self,
        objects: &mut [Value],
        to: &str,
        list: bool,
    ) -> Result<(), ApiError> {
        let differs = |o: &Value| o.get("apiVersion").and_then(Value::as_str) != Some(to);
        match &self.how {
            How::ApiVersion => {
                for o in objects.iter_mut().filter(|o| differs(o)) {
                    set_api_version(o, to);
                }
                Ok(())
            }
            How::Builtin { group, resource } => {
                for o in objects.iter_mut().filter(|o| differs(o)) {
                    *o = builtin(group, resource, std::mem::take(o), to)?;
                }
                Ok(())
            }
            How::Webhook(hook) => {
                let at: Vec<usize> = (0..objects.len())
                    .filter(|&i| differs(&objects[i]))
                    .collect();
                let Some(&first) = at.first() else {
                    return Ok(());
                };
                let text = |k: &str| {
                    objects[first]
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let kind = if list {
                    format!("{}List", text("kind"))
                } else {
                    text("kind")
                };
                let gvk = webhook::gvk_text(&text("apiVersion"), &kind);
                let sent: Vec<Value> = at
                    .iter()
                    .map(|&i| std::mem::take(&mut objects[i]))
                    .collect();
                let converted = hook
                    .convert(sent, to, &gvk, list)
                    .await
                    .map_err(|e| ApiError::unknown(500, e))?;
                for (i, o) in at.into_iter().zip(converted) {
                    objects[i] = o;
                }
                Ok(())
            }
        }
    }

    /// [`Versions::convert`] of one object without waiting; `None` if that takes a webhook.
    pub fn convert_at_once(&self, obj: &mut Value, to: &str) -> Option<()> {
        if obj.get("apiVersion").and_then(Value::as_str) == Some(to) {
            return Some(());
        }
        match &self.how {
            How::ApiVersion => set_api_version(obj, to),
            How::Builtin { group, resource } => {
                // A conversion that fails leaves the object as it is (callers that must not
                // serve it unconverted use `convert`).
                if let Ok(o) = builtin(group, resource, obj.clone(), to) {
                    *obj = o;
                }
            }
            How::Webhook(_) => return None,
        }
        Some(())
    }

    /// A written object (in the request's version) as it is stored.
    pub async fn to_storage(&self, obj: &mut Value) -> Result<(), ApiError> {
        self.convert(std::slice::from_mut(obj), &self.storage.clone(), false)
            .await
    }

    /// A read object (in whatever version it was stored) as the request sees it.
    pub async fn to_request(&self, obj: &mut Value) -> Result<(), ApiError> {
        self.convert(std::slice::from_mut(obj), &self.request.clone(), false)
            .await
    }

    /// Whether the stored bytes of an object are in another version than the request's.
    pub fn converts(&self, stored: &[u8]) -> bool {
        stored_api_version(stored).as_deref() != Some(&*self.request)
    }

    /// Stored bytes as the request sees them: borrowed when already in its version.
    pub async fn bytes_to_request<'a>(&self, stored: &'a [u8]) -> Result<Cow<'a, [u8]>, ApiError> {
        if !self.converts(stored) {
            return Ok(Cow::Borrowed(stored));
        }
        let mut obj = crate::objects::parse_stored(stored)?;
        self.to_request(&mut obj).await?;
        Ok(Cow::Owned(crate::objects::to_canonical_json(&obj)))
    }

    /// [`Versions::bytes_to_request`] without waiting; `None` if that takes a webhook.
    pub fn bytes_to_request_at_once<'a>(
        &self,
        stored: &'a [u8],
    ) -> Option<Result<Cow<'a, [u8]>, ApiError>> {
        if !self.converts(stored) {
            return Some(Ok(Cow::Borrowed(stored)));
        }
        if !self.converts_at_once() {
            return None;
        }
        let request = self.request.clone();
        Some(crate::objects::parse_stored(stored).and_then(|mut obj| {
            match &self.how {
                How::Builtin { group, resource } => {
                    obj = builtin(group, resource, obj, &request)?;
                }
                _ => set_api_version(&mut obj, &request),
            }
            Ok(Cow::Owned(crate::objects::to_canonical_json(&obj)))
        }))
    }

    /// [`Versions::bytes_to_request`] of an owned answer.
    pub async fn vec_to_request(&self, stored: Vec<u8>) -> Result<Vec<u8>, ApiError> {
        Ok(match self.bytes_to_request(&stored).await? {
            Cow::Borrowed(_) => stored,
            Cow::Owned(v) => v,
        })
    }

    /// Stored objects (a list page's items) as the request sees them: one conversion for
    /// all that are in another version.
    pub async fn items_to_request(
        &self,
        stored: Vec<&[u8]>,
    ) -> Result<Vec<Option<Vec<u8>>>, ApiError> {
        let at: Vec<usize> = (0..stored.len())
            .filter(|&i| self.converts(stored[i]))
            .collect();
        let mut out: Vec<Option<Vec<u8>>> = vec![None; stored.len()];
        if at.is_empty() {
            return Ok(out);
        }
        let mut objects = at
            .iter()
            .map(|&i| crate::objects::parse_stored(stored[i]))
            .collect::<Result<Vec<_>, _>>()?;
        self.convert(&mut objects, &self.request.clone(), true)
            .await?;
        for (i, o) in at.into_iter().zip(objects) {
            out[i] = Some(crate::objects::to_canonical_json(&o));
        }
        Ok(out)
    }
}

/// A built-in object converted; a failure is a 500 (the object is as stored, its
/// annotations are what does not decode).
fn builtin(group: &str, resource: &str, obj: Value, to: &str) -> Result<Value, ApiError> {
    keel_strategy::convert(group, resource, obj, to).map_err(ApiError::internal)
}

fn set_api_version(obj: &mut Value, to: &str) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".into(), to.into());
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
    use futures_executor::block_on;
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
        assert_eq!(
            Versions::of_custom(&crd(None, &[("v1", true)]), "v1", None),
            None
        );
        // No storage version (refused by validation, but never panics here).
        assert_eq!(
            Versions::of_custom(&crd(None, &[("v1", false), ("v2", false)]), "v1", None),
            None
        );
    }

    #[test]
    fn strategy_none_changes_only_the_api_version() {
        let v = Versions::of_custom(
            &crd(Some("None"), &[("v1", false), ("v2", true)]),
            "v1",
            None,
        )
        .unwrap();
        assert_eq!(v.storage, "example.com/v2");
        assert_eq!(&*v.request, "example.com/v1");
        let mut o = json!({"kind": "Widget", "apiVersion": "example.com/v1",
            "metadata": {"name": "a"}, "spec": {"x": 1}});
        block_on(v.to_storage(&mut o)).unwrap();
        assert_eq!(
            o,
            json!({"kind": "Widget", "apiVersion": "example.com/v2",
            "metadata": {"name": "a"}, "spec": {"x": 1}})
        );
        block_on(v.to_request(&mut o)).unwrap();
        assert_eq!(o["apiVersion"], "example.com/v1");
        // No strategy is None.
        let d =
            Versions::of_custom(&crd(None, &[("v1", true), ("v2", false)]), "v2", None).unwrap();
        assert_eq!(d.how, How::ApiVersion);
    }

    #[test]
    fn stored_bytes_convert_only_when_in_another_version() {
        let v =
            Versions::of_custom(&crd(None, &[("v1", true), ("v2", false)]), "v2", None).unwrap();
        let at_v2 = br#"{"kind":"Widget","apiVersion":"example.com/v2","metadata":{"name":"a"}}"#;
        assert!(matches!(
            block_on(v.bytes_to_request(at_v2)).unwrap(),
            Cow::Borrowed(_)
        ));
        let at_v1 = br#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"a"},"spec":{"apiVersion":"x"}}"#;
        let out = block_on(v.bytes_to_request(at_v1)).unwrap();
        assert_eq!(
            v.bytes_to_request_at_once(at_v1).unwrap().unwrap(),
            out,
            "the same without waiting"
        );
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"kind":"Widget","apiVersion":"example.com/v2","metadata":{"name":"a"},"spec":{"apiVersion":"x"}}"#
        );
    }

    #[test]
    fn a_webhook_that_cannot_be_reached_fails_as_upstream_says() {
        let mut c = crd(Some("Webhook"), &[("v1", true), ("v2", false)]);
        c["spec"]["conversion"]["webhook"] = json!({"conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "conv", "namespace": "ns", "path": "/convert"}}});
        // The Service is resolved at the call (here: it is missing).
        let missing: crate::service_ref::ServiceResolver = Arc::new(|svc| {
            Box::pin(async move { Err(format!("service \"{}\" not found", svc.name)) })
        });
        let v = Versions::of_custom(&c, "v2", Some(&missing)).unwrap();
        assert!(!v.converts_at_once());
        let mut o = json!({"kind": "Widget", "apiVersion": "example.com/v1"});
        assert_eq!(v.convert_at_once(&mut o, "example.com/v2"), None);
        let e = block_on(v.to_request(&mut o)).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "conversion webhook for example.com/v1, Kind=Widget failed: Post \"https://conv.ns.svc:443/convert?timeout=30s\": service \"conv\" not found"
        );
        // Already in the wanted version: nothing to call.
        let mut o = json!({"kind": "Widget", "apiVersion": "example.com/v2"});
        block_on(v.to_request(&mut o)).unwrap();
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
