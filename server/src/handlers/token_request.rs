//! `POST serviceaccounts/<name>/token` (TokenRequest, what `kubectl create token` and
//! kubelets use): a signed token for the service account, for the audiences asked (else the
//! API's), lasting `expirationSeconds` (default an hour, at most
//! `--service-account-max-token-expiration`), optionally bound to a Pod, Secret or Node so
//! that it stops working when that object goes. Answered, never stored.

use super::body::decode_body;
use super::call::Call;
use super::respond;
use crate::repr;
use crate::serviceaccount::WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS;
use crate::serviceaccount::{jwt::Ref, Request, EXPIRATION_EXTENSION_SECONDS};
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::{field, ApiError};
use keel_http::Response;
use serde_json::{json, Value};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
/// Validation's bounds on `spec.expirationSeconds`, as upstream's.
const MIN_TOKEN_AGE_SECS: i64 = 10 * 60;
const MAX_TOKEN_AGE_SECS: i64 = 1 << 32;

pub async fn create(c: &mut Call<'_>, st: &State) -> Result<Response, ApiError> {
    let format = repr::negotiate(
        c.accept(),
        false,
        keel_proto::supports("authentication.k8s.io/v1", KIND),
    )?;
    let Some(issuer) = &st.service_accounts else {
        return Err(ApiError::method_not_allowed());
    };
    let req = decode_body(c.content_type(), &c.req.body)?;
    let (namespace, name) = (c.namespace().to_string(), c.name().to_string());
    let meta_text = |k: &str| -> String {
        req.at(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (req_name, req_ns, req_uid) = (meta_text("name"), meta_text("namespace"), meta_text("uid"));
    if !req_name.is_empty() && req_name != name {
        let cause = field::invalid(
            "metadata.name",
            &json!(req_name),
            "must match the service account name if specified",
        );
        return Err(ApiError::invalid(GROUP, KIND, &name, vec![cause]));
    }
    if !req_ns.is_empty() && req_ns != namespace {
        let cause = field::invalid(
            "metadata.namespace",
            &json!(req_ns),
            "must match the service account namespace if specified",
        );
        return Err(ApiError::invalid(GROUP, KIND, &name, vec![cause]));
    }
    let (sa, _) = st.registry.get_latest(c.res, &namespace, &name).await?;
    let sa_uid = sa
        .at("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !req_uid.is_empty() && req_uid != sa_uid {
        return Err(ApiError::conflict(
            GROUP,
            KIND,
            &name,
            &format!(
                "the UID in the token request ({req_uid}) does not match the UID of the service account ({sa_uid})"
            ),
        ));
    }
    let spec = req.get("spec").cloned().unwrap_or(Value::Null);
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        _ => issuer.audiences.clone(),
    };
    let requested_expiration = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(3600);
    let mut expiration = requested_expiration;
    let now = chrono::Utc::now();
    let mut causes = Vec::new();
    if expiration < MIN_TOKEN_AGE_SECS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_TOKEN_AGE_SECS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(GROUP, KIND, "", causes));
    }
    let bound = spec.get("boundObjectRef").filter(|v| v.is_object());
    let (mut pod, mut secret, mut node) = (None, None, None);
    if let Some(r) = bound {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (api_version, kind, ref_name, ref_uid) =
            (s("apiVersion"), s("kind"), s("name"), s("uid"));
        let routes = st.routes.load();
        let (group, _) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
        let (resource, scoped) = match (group, kind.as_str()) {
            ("", "Pod") => ("pods", true),
            ("", "Node") => ("nodes", false),
            ("", "Secret") => ("secrets", true),
            _ => {
                let version = api_version.rsplit('/').next().unwrap_or("");
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {}",
                    gvk_string(group, version, &kind)
                )));
            }
        };
        let res = routes.core(resource);
        let ns = if scoped { namespace.as_str() } else { "" };
        let (obj, _) = st.registry.get_latest(res, ns, &ref_name).await?;
        let uid = obj
            .at("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if kind == "Pod" {
            let pod_sa = obj
                .at("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if pod_sa != name {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                    keel_api::gofmt::quote(&name)
                )));
            }
        }
        if !ref_uid.is_empty() && ref_uid != uid {
            return Err(ApiError::conflict(
                "",
                &kind,
                &ref_name,
                &format!("the UID in the bound object reference ({ref_uid}) does not match the UID in record. The object might have been deleted and then recreated"),
            ));
        }
        let this = Some(Ref {
            name: ref_name.clone(),
            uid,
        });
        match kind.as_str() {
            "Pod" => {
                // The node the pod runs on, by name even when its Node object is missing.
                let node_name = obj
                    .at("/spec/nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !node_name.is_empty() {
                    let node_uid = st
                        .registry
                        .get_latest_metadata(routes.core("nodes"), "", node_name)
                        .ok()
                        .and_then(|n| n.at("/metadata/uid")?.as_str().map(String::from))
                        .unwrap_or_default();
                    node = Some(Ref {
                        name: node_name.to_string(),
                        uid: node_uid,
                    });
                }
                pod = this;
            }
            "Secret" => secret = this,
            _ => node = this,
        }
    }
    if issuer.max_expiration > 0 && expiration > issuer.max_expiration {
        c.warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {} seconds",
            issuer.max_expiration
        ));
        expiration = issuer.max_expiration;
    }
    let (mut lifetime, mut warn_after) = (expiration, None);
    if issuer.extend_expiration
        && pod.is_some()
        && expiration == WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
        && issuer.is_api_audiences(&audiences)
    {
        warn_after = Some(expiration);
        lifetime = EXPIRATION_EXTENSION_SECONDS;
    }
    let token = issuer.issue(
        &Request {
            namespace: &namespace,
            service_account: Ref {
                name: name.clone(),
                uid: sa_uid.clone(),
            },
            audiences: audiences.clone(),
            expiration_seconds: lifetime,
            pod,
            secret,
            node,
            warn_after,
        },
        now.timestamp(),
    );
    let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let expires = now + chrono::Duration::seconds(expiration);
    // As upstream's create handler: the request's fields, as decoded and defaulted, are the
    // manager's (an Update entry on the `token` subresource).
    let manager = crate::fieldmanager::request_manager(
        c.query.get("fieldManager"),
        c.req.headers.get("user-agent"),
    )?;
    let mut sent_spec = spec
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .collect::<serde_json::Map<String, Value>>();
    sent_spec
        .entry("expirationSeconds")
        .or_insert(json!(requested_expiration));
    let mut tracked = json!({"kind": KIND, "apiVersion": "authentication.k8s.io/v1", "metadata": {}, "spec": sent_spec});
    crate::fieldmanager::record_update(
        &crate::fieldmanager::Write {
            group: GROUP,
            version: "v1",
            kind: KIND,
            subresource: "token",
            manager: Some(&manager),
            custom: None,
        },
        None,
        &mut tracked,
        &at(now),
    );
    let mut metadata =
        json!({"name": name, "namespace": namespace, "uid": sa_uid, "creationTimestamp": at(now)});
    if let Some(m) = tracked.pointer("/metadata/managedFields") {
        metadata["managedFields"] = m.clone();
    }
    let out = json!({
        "kind": KIND,
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": metadata,
        "spec": {
            "audiences": audiences,
            "expirationSeconds": expiration,
            "boundObjectRef": bound.cloned().unwrap_or(Value::Null),
        },
        "status": {"token": token, "expirationTimestamp": at(expires)},
    });
    Ok(respond::with_warnings(
        respond::value(201, format, &out)?,
        c,
    ))
}

/// A group, version and kind as Go's `schema.GroupVersionKind.String()` prints them.
fn gvk_string(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}
