//! The create-only review resources that are answered, never stored: access reviews
//! (`selfsubjectaccessreviews`, `localsubjectaccessreviews`, `subjectaccessreviews`),
//! `selfsubjectrulesreviews`, `selfsubjectreviews` and `tokenreviews` (what `kubectl auth
//! can-i` and `kubectl auth whoami` use).

use super::body::decode_object;
use super::call::Call;
use super::respond;
use crate::auth::{self, Attributes, User, AUTHENTICATED_GROUP};
use crate::state::State;
use keel_api::jsonmap::JsonPointer;
use keel_api::status::{field, ApiError};
use keel_http::Response;
use serde_json::{json, Value};

/// Whether `(group, resource)` is a review answered by [`create`].
pub fn is_review(group: &str, resource: &str) -> bool {
    matches!(
        (group, resource),
        (
            "authorization.k8s.io",
            "selfsubjectaccessreviews"
                | "localsubjectaccessreviews"
                | "subjectaccessreviews"
                | "selfsubjectrulesreviews"
        ) | (
            "authentication.k8s.io",
            "selfsubjectreviews" | "tokenreviews"
        )
    )
}

/// `POST` of a review: the object comes back with its `status` filled in (201).
pub async fn create(c: &mut Call<'_>, app: &State) -> Result<Response, ApiError> {
    let format = c.format()?;
    let mut obj = decode_object(c)?;
    let status = match c.info().plural {
        "selfsubjectaccessreviews" => access(app, c, &obj, c.user)?,
        "localsubjectaccessreviews" | "subjectaccessreviews" => {
            let user = subject(&obj);
            access(app, c, &obj, &user)?
        }
        "selfsubjectrulesreviews" => {
            let namespace = obj.at("/spec/namespace").and_then(Value::as_str);
            app.authorizer.rules_for(c.user, namespace.unwrap_or(""))
        }
        "selfsubjectreviews" => json!({"userInfo": user_info(c.user)}),
        _ => token_review(app, &obj),
    };
    let root = obj.as_object_mut().expect("decoded objects are objects");
    let meta = root.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        keel_api::meta::drop_zero_creation_timestamp(m);
    }
    root.insert("status".into(), status);
    // Upstream's SelfSubjectReview alone says when it was made.
    if c.info().plural == "selfsubjectreviews" {
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        root["metadata"]["creationTimestamp"] = json!(now);
    }
    respond::value(201, format, &obj)
}

fn user_info(user: &User) -> Value {
    let mut groups = user.groups.clone();
    if !groups
        .iter()
        .any(|g| g == AUTHENTICATED_GROUP || g == auth::UNAUTHENTICATED_GROUP)
    {
        groups.push(AUTHENTICATED_GROUP.into());
    }
    let mut info = json!({"username": user.name});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    info["groups"] = json!(groups);
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

/// The user a (local) subject access review asks about.
fn subject(obj: &Value) -> User {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let text = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|g| g.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    User {
        name: text("user"),
        uid: text("uid"),
        groups: spec.get("groups").map(strings).unwrap_or_default(),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default(),
    }
}

/// Asks the authorizer what the review's attributes ask; 422 unless exactly one of
/// `resourceAttributes` and `nonResourceAttributes` is given.
fn access(app: &State, c: &Call<'_>, obj: &Value, user: &User) -> Result<Value, ApiError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let res = spec.get("resourceAttributes").filter(|v| v.is_object());
    let non = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    let s = |v: Option<&Value>, k: &str| -> String {
        v.and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if res.is_some() == non.is_some() {
        let detail = "exactly one of nonResourceAttributes or resourceAttributes must be specified";
        let cause = field::invalid(
            "spec.resourceAttributes",
            res.unwrap_or(&Value::Null),
            detail,
        );
        return Err(ApiError::invalid(
            c.info().group,
            c.info().kind,
            "",
            vec![cause],
        ));
    }
    let (verb, group, resource, sub, name) = (
        s(res.or(non), "verb"),
        s(res, "group"),
        s(res, "resource"),
        s(res, "subresource"),
        s(res, "name"),
    );
    let namespace = match c.info().plural {
        "localsubjectaccessreviews" => c.rr.namespace.clone(),
        _ => s(res, "namespace"),
    };
    let path = non.map(|_| s(non, "path"));
    let field_selector = res
        .and_then(|r| r.pointer("/fieldSelector/rawSelector"))
        .and_then(Value::as_str);
    let decision = app.authorizer.authorize(&Attributes {
        user,
        verb: &verb,
        group: &group,
        resource: &resource,
        subresource: &sub,
        namespace: &namespace,
        name: &name,
        path: path.as_deref(),
        field_selector,
    });
    let mut status = match &decision {
        auth::Decision::Allow(_) => json!({"allowed": true}),
        auth::Decision::Deny(_) => json!({"allowed": false, "denied": true}),
        auth::Decision::NoOpinion(_) => json!({"allowed": false}),
    };
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    Ok(status)
}

/// A TokenReview: the token checked by the authenticators a request's bearer token meets
/// (static tokens, then service account tokens), against `spec.audiences` when given (else
/// the API's); the user, the audiences in common, or upstream's error.
fn token_review(app: &State, obj: &Value) -> Value {
    let token = obj.at("/spec/token").and_then(Value::as_str).unwrap_or("");
    let wanted: Option<Vec<String>> = obj
        .at("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty());
    let api: Vec<String> = app
        .service_accounts
        .as_ref()
        .map(|i| i.audiences.clone())
        .unwrap_or_default();
    let header = format!("Bearer {token}");
    let found = match auth::authenticate(&app.tokens, Some(&header), None) {
        // A static token is good for the API's audiences.
        Some(user) if !token.is_empty() => {
            let common: Vec<String> = match &wanted {
                Some(w) => w.iter().filter(|a| api.contains(a)).cloned().collect(),
                None => api.clone(),
            };
            if wanted.is_some() && common.is_empty() {
                Err(format!(
                    "token audiences {} is invalid for the target audiences {}",
                    keel_api::gofmt::quote_list(&api),
                    keel_api::gofmt::quote_list(wanted.as_deref().unwrap_or(&[]))
                ))
            } else {
                Ok(Some((User::clone(&user), common)))
            }
        }
        _ if token.is_empty() => Ok(None),
        _ => super::review_service_account_token(app, token, wanted.as_deref().unwrap_or(&api)),
    };
    match found {
        Ok(Some((user, audiences))) => {
            let mut status = json!({"authenticated": true, "user": user_info(&user)});
            if !audiences.is_empty() {
                status["audiences"] = json!(audiences);
            }
            status
        }
        Ok(None) => json!({"user": {}}),
        // As upstream's, through the bearer token authenticator's error aggregate.
        Err(why) => json!({"user": {}, "error": format!("[invalid bearer token, {why}]")}),
    }
}
