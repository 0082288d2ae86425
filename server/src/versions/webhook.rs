//! Conversion webhooks: a CustomResourceDefinition with `conversion.strategy: Webhook` has its
//! objects converted by a ConversionReview POSTed to its webhook (`clientConfig.url`, HTTPS,
//! verified with `caBundle`), as upstream's API server does: one review per object read or
//! written, one per list page for the items not in the wanted version, answers checked
//! (review kind, uid, result, count, each object's version, kind, name, namespace and uid)
//! and each converted object's metadata restored from the original but for its labels and
//! annotations, which are validated as a write's when the webhook changed them. Every failure is upstream's `conversion webhook for <gvk> ...` text, answered
//! as a 500.
//!
//! A webhook named by `clientConfig.service` is reached where the Service resolves to at each
//! call (as upstream's webhooks and aggregated APIs: `crate::service_ref`), its certificate
//! verified for `<name>.<namespace>.svc`.
//!
//! Without `caBundle` the server certificate is verified with the system's roots, as
//! upstream's client does.
//!
//! Not done: label and annotation syntax in converted objects is not re-checked.

use crate::limits::{CONVERSION_WEBHOOK_IDLE_CONNECTIONS, CONVERSION_WEBHOOK_TIMEOUT};
use crate::service_ref::{ServiceRef, ServiceResolver};
use base64::Engine;
use keel_api::jsonmap::JsonPointer;
use keel_client::kubeconfig::Endpoint;
use keel_client::{KubeClient, Method};
use serde_json::{json, Map, Value};
use std::sync::Mutex;

/// One definition's conversion webhook.
pub struct Webhook {
    /// The review version sent (`v1`, else `v1beta1`; `None`: the definition lists neither).
    review: Option<&'static str>,
    /// The URL as errors quote it (with `?timeout=30s`).
    url: String,
    /// The path requests go to (with `?timeout=30s`).
    path: String,
    target: Target,
}

/// Where the webhook is.
enum Target {
    /// `clientConfig.url`: one client (or why there is none).
    Url(Result<KubeClient, String>),
    /// `clientConfig.service`: resolved at each call; a client per address (the last one).
    Service {
        svc: ServiceRef,
        ca_pem: Option<Vec<u8>>,
        resolver: Option<ServiceResolver>,
        client: Mutex<Option<(String, KubeClient)>>,
    },
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("url", &self.url).finish()
    }
}

impl PartialEq for Webhook {
    fn eq(&self, other: &Webhook) -> bool {
        self.url == other.url && self.review == other.review
    }
}

/// `?timeout=30s`, as upstream's client appends the webhook's timeout.
fn timeout_query() -> String {
    format!("?timeout={}s", CONVERSION_WEBHOOK_TIMEOUT.as_secs())
}

impl Webhook {
    /// The webhook of `spec.conversion.webhook` (`None` if absent); `resolver` finds where a
    /// webhook named by a Service is.
    pub fn of(conversion: &Value, resolver: Option<ServiceResolver>) -> Webhook {
        let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
        let versions: Vec<&str> = webhook
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        // The first version listed that the server speaks.
        let review = versions.iter().find_map(|v| match *v {
            "v1" => Some("v1"),
            "v1beta1" => Some("v1beta1"),
            _ => None,
        });
        let config = webhook.get("clientConfig").unwrap_or(&Value::Null);
        let (base, target) = match (
            config.get("url").and_then(Value::as_str),
            config.get("service"),
        ) {
            (Some(url), _) => (url.to_owned(), Target::Url(client(url, config))),
            (None, Some(svc)) => {
                let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
                let svc_ref = ServiceRef {
                    namespace: s("namespace").to_owned(),
                    name: s("name").to_owned(),
                    port: svc.get("port").and_then(Value::as_i64).unwrap_or(443),
                };
                let base = format!("https://{}:{}{}", svc_ref.host(), svc_ref.port, s("path"));
                let ca_pem = ca_bundle(config);
                let target = match ca_pem {
                    Ok(ca_pem) => Target::Service {
                        svc: svc_ref,
                        ca_pem,
                        resolver,
                        client: Mutex::new(None),
                    },
                    Err(e) => Target::Url(Err(e)),
                };
                (base, target)
            }
            (None, None) => (String::new(), Target::Url(Err("no clientConfig".into()))),
        };
        // `https://host:port` is where the client connects, the rest the path it posts to.
        let rest = base.split_once("://").map_or("", |(_, r)| r);
        let path = rest.find('/').map_or("/", |i| &rest[i..]);
        Webhook {
            review,
            path: format!("{path}{}", timeout_query()),
            url: format!("{base}{}", timeout_query()),
            target,
        }
    }

    /// `objects` converted to `to` by the webhook; `gvk` names what is converted in errors
    /// (`example.com/v1, Kind=Widget`); `list`: the objects are a list's items (upstream's
    /// error texts differ).
    pub async fn convert(
        &self,
        objects: Vec<Value>,
        to: &str,
        gvk: &str,
        list: bool,
    ) -> Result<Vec<Value>, String> {
        let failed = |e: String| format!("conversion webhook for {gvk} failed: {e}");
        let review = self
            .review
            .ok_or_else(|| "no supported conversion review versions".to_string())?;
        let client = self
            .client()
            .await
            .map_err(|e| failed(self.post_error(&e)))?;
        let uid = uuid::Uuid::new_v4().to_string();
        let request = json!({
            "kind": "ConversionReview",
            "apiVersion": format!("apiextensions.k8s.io/{review}"),
            "request": {"uid": uid, "desiredAPIVersion": to, "objects": objects},
        });
        let body = bytes::Bytes::from(serde_json::to_vec(&request).expect("JSON"));
        let call = client.request(Method::POST, &self.path, Some((keel_client::JSON, body)));
        let answer =
            match tokio::time::timeout(CONVERSION_WEBHOOK_TIMEOUT, call).await {
                Err(_) => return Err(failed(self.post_error(
                    "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                ))),
                Ok(Err(e)) => return Err(failed(self.post_error(&e))),
                Ok(Ok(r)) => r,
            };
        if !(200..300).contains(&answer.status) {
            return Err(failed(format!(
                "the server responded with the status code {} but did not return more information",
                answer.status
            )));
        }
        let answer: Value =
            serde_json::from_slice(&answer.body).map_err(|e| failed(e.to_string()))?;
        let converted = converted_objects(&answer, review, &uid).map_err(failed)?;
        if converted.len() != objects.len() {
            return Err(format!(
                "conversion webhook for {gvk} returned {} objects, expected {}",
                converted.len(),
                objects.len()
            ));
        }
        let mut out = Vec::with_capacity(objects.len());
        for (i, (original, mut new)) in objects.into_iter().zip(converted).enumerate() {
            // Upstream's texts: a list item's index counts from 1 (its index moves on first).
            let (version_at, identity_at, meta_at) = if list {
                let at = format!("invalid converted object at index {}", i + 1);
                (
                    at.clone(),
                    at,
                    format!("invalid metadata in object at index {}", i + 1),
                )
            } else {
                let at = "invalid object".to_string();
                (
                    format!("{at} at index 0"),
                    at,
                    "invalid metadata".to_string(),
                )
            };
            let returned = |what: &str, e: String| {
                format!("conversion webhook for {gvk} returned {what}: {e}")
            };
            check_version(&original, &new, to).map_err(|e| returned(&version_at, e))?;
            check_identity(&original, &new).map_err(|e| returned(&identity_at, e))?;
            restore_meta(&original, &mut new).map_err(|e| returned(&meta_at, e))?;
            out.push(new);
        }
        Ok(out)
    }

    /// The client for the webhook now (a Service's resolved at this call).
    async fn client(&self) -> Result<KubeClient, String> {
        match &self.target {
            Target::Url(c) => c.clone(),
            Target::Service {
                svc,
                ca_pem,
                resolver,
                client,
            } => {
                let resolver = resolver
                    .as_ref()
                    .ok_or("no service resolver in this server")?;
                let authority = resolver(svc.clone()).await?;
                let mut cached = client.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((at, c)) = cached.as_ref() {
                    if *at == authority {
                        return Ok(c.clone());
                    }
                }
                let ep = Endpoint {
                    server: format!("https://{authority}"),
                    ca_pem: ca_pem.clone(),
                    tls_server_name: Some(svc.host()),
                    ..Endpoint::default()
                };
                let c = KubeClient::with_user_agent(
                    &ep,
                    CONVERSION_WEBHOOK_IDLE_CONNECTIONS,
                    "kube-apiserver",
                )?;
                *cached = Some((authority, c.clone()));
                Ok(c)
            }
        }
    }

    fn post_error(&self, e: &str) -> String {
        format!("Post \"{}\": {e}", self.url)
    }
}

/// The decoded `caBundle` of a client config.
fn ca_bundle(config: &Value) -> Result<Option<Vec<u8>>, String> {
    match config.get("caBundle").and_then(Value::as_str) {
        Some(b) => Ok(Some(
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("caBundle: {e}"))?,
        )),
        None => Ok(None),
    }
}

/// A client for the webhook at `url` trusting `caBundle`.
fn client(url: &str, config: &Value) -> Result<KubeClient, String> {
    let ca_pem = ca_bundle(config)?;
    let origin = match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", rest.split('/').next().unwrap_or("")),
        None => url.to_owned(),
    };
    let ep = Endpoint {
        server: origin,
        ca_pem,
        ..Endpoint::default()
    };
    KubeClient::with_user_agent(&ep, CONVERSION_WEBHOOK_IDLE_CONNECTIONS, "kube-apiserver")
}

/// The converted objects of a ConversionReview answer, checked as upstream checks it.
fn converted_objects(answer: &Value, review: &str, uid: &str) -> Result<Vec<Value>, String> {
    if review == "v1" {
        let (av, kind) = (text(answer, "/apiVersion"), text(answer, "/kind"));
        if av != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                gvk_text(&av, &kind)
            ));
        }
    }
    let response = answer
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    if review == "v1" && text(response, "/uid") != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            text(response, "/uid")
        ));
    }
    let status = text(response, "/result/status");
    if status != "Success" {
        let message = text(response, "/result/message");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message
        });
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// Go's `GroupVersionKind.String()` of an `apiVersion` and kind.
pub fn gvk_text(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

fn text(v: &Value, pointer: &str) -> String {
    v.at(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// A converted object is in the wanted version and of the original's kind.
fn check_version(original: &Value, new: &Value, to: &str) -> Result<(), String> {
    let got = text(new, "/apiVersion");
    if got != to {
        return Err(format!(
            "invalid groupVersion (expected {to}, received {got})"
        ));
    }
    let (want, kind) = (text(original, "/kind"), text(new, "/kind"));
    if want != kind {
        return Err(format!("invalid kind (expected {want}, received {kind})"));
    }
    Ok(())
}

/// A converted object is the original: same name, namespace and uid.
fn check_identity(original: &Value, new: &Value) -> Result<(), String> {
    for (k, name) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let pointer = format!("/metadata/{k}");
        let (a, b) = (text(original, &pointer), text(new, &pointer));
        if a != b {
            return Err(format!("must have the same {name}: {a} != {b}"));
        }
    }
    Ok(())
}

/// The original's metadata, with the converted object's labels and annotations.
fn restore_meta(original: &Value, new: &mut Value) -> Result<(), String> {
    let from_webhook = match new.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ))
        }
    };
    let mut meta: Map<String, Value> = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match from_webhook.get(field) {
            None | Some(Value::Null) => {
                meta.shift_remove(field);
            }
            Some(Value::Object(m)) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is {} in converted object",
                        go_type(v)
                    ));
                }
                // What the webhook changed is validated as a write's would be (upstream
                // names the annotations' path `metadata.annotation`).
                let before = meta.get(field).and_then(Value::as_object);
                let changed = before.map_or(0, Map::len) != m.len()
                    || m.iter()
                        .any(|(k, v)| before.and_then(|b| b.get(k)) != Some(v));
                if changed {
                    let errs = if field == "labels" {
                        keel_api::names::validate_labels(m, "metadata.labels")
                    } else {
                        keel_api::names::validate_annotations(m, "metadata.annotation")
                    };
                    if let Some(text) = keel_api::status::field::aggregate(&errs) {
                        return Err(text);
                    }
                }
                meta.insert(field.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        }
    }
    if let Some(o) = new.as_object_mut() {
        o.insert("metadata".into(), Value::Object(meta));
    }
    Ok(())
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}
