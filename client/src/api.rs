//! Typed-enough requests for controllers and the scheduler: get, list (one page, or every page
//! following continue tokens), create, update, patch and delete on any `ResourcePath`, each
//! returning the response's JSON (or, with `call`, its bytes) or an `Error` carrying the
//! server's `Status`.

use crate::error::Error;
use crate::limits;
use crate::resource::{ListParams, Patch, ResourcePath};
use crate::transport::{KubeClient, Method, Response, JSON};
use bytes::Bytes;
use serde_json::Value;

/// One page of a list, or a whole list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectList {
    pub items: Vec<Value>,
    /// `metadata.resourceVersion`: the state the list shows (watch from here).
    pub resource_version: String,
    /// `metadata.continue`: set when more pages remain.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`, when the server counted them.
    pub remaining_item_count: Option<u64>,
}

impl ObjectList {
    /// Reads a `*List` document.
    pub fn from_value(mut v: Value) -> Result<ObjectList, Error> {
        let items = match v.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            Some(Value::Null) => Vec::new(),
            _ => return Err(Error::Decode("a list without an items array".into())),
        };
        let meta = &v["metadata"];
        let text = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_string);
        Ok(ObjectList {
            items,
            resource_version: text("resourceVersion").unwrap_or_default(),
            continue_token: text("continue").filter(|c| !c.is_empty()),
            remaining_item_count: meta.get("remainingItemCount").and_then(Value::as_u64),
        })
    }
}

fn json_body(v: &Value) -> Result<Bytes, Error> {
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(|e| Error::Request(format!("body is not serializable: {e}")))
}

fn parse(body: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(body).map_err(|e| Error::Decode(format!("not JSON: {e}")))
}

/// The body of a 2xx response, else the error it carries.
fn success(resp: Response) -> Result<Bytes, Error> {
    if (200..300).contains(&resp.status) {
        Ok(resp.body)
    } else {
        Err(Error::from_response(resp.status, &resp.body))
    }
}

impl KubeClient {
    /// Sends `method` to `path` (path and query) with an optional body (content type, bytes):
    /// the bytes of a 2xx response, else the error.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Bytes, Error> {
        success(
            self.request(method, path, body)
                .await
                .map_err(Error::Transport)?,
        )
    }

    async fn call_json(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Value, Error> {
        parse(&self.call(method, path, body).await?)
    }

    /// GETs one object (or a subresource).
    pub async fn get(&self, at: &ResourcePath) -> Result<Value, Error> {
        self.call_json(Method::GET, &at.path()?, None).await
    }

    /// One list request: a whole list, or one page when `params.limit` is set (follow its
    /// `continue_token`).
    pub async fn list(&self, at: &ResourcePath, params: &ListParams) -> Result<ObjectList, Error> {
        let path = at.collection().path()? + &params.query();
        ObjectList::from_value(self.call_json(Method::GET, &path, None).await?)
    }

    /// Every item of the collection, fetched in pages of `page_size` that follow continue
    /// tokens (all pages show the first page's state, whose resourceVersion the result
    /// carries). At most `LIST_ITEMS_MAX` items.
    pub async fn list_all(
        &self,
        at: &ResourcePath,
        params: &ListParams,
        page_size: u64,
    ) -> Result<ObjectList, Error> {
        let mut page_params = ListParams {
            limit: Some(page_size.max(1)),
            continue_token: None,
            ..params.clone()
        };
        let mut all = ObjectList::default();
        loop {
            let page = self.list(at, &page_params).await?;
            if all.items.len() + page.items.len() > limits::LIST_ITEMS_MAX {
                return Err(Error::Decode(format!(
                    "list of more than {} items",
                    limits::LIST_ITEMS_MAX
                )));
            }
            if all.resource_version.is_empty() {
                all.resource_version = page.resource_version;
            }
            all.items.extend(page.items);
            match page.continue_token {
                Some(token) => {
                    // Later pages come from the first page's snapshot; a version would be
                    // refused beside the token.
                    page_params.resource_version = None;
                    page_params.resource_version_match = None;
                    page_params.continue_token = Some(token);
                }
                None => return Ok(all),
            }
        }
    }

    /// POSTs `obj` to the collection of `at`; the created object.
    pub async fn create(&self, at: &ResourcePath, obj: &Value) -> Result<Value, Error> {
        let path = at.collection().path()?;
        self.call_json(Method::POST, &path, Some((JSON, json_body(obj)?)))
            .await
    }

    /// PUTs `obj` at `at` (an object or its subresource, e.g. `status`); the stored object.
    /// With `metadata.resourceVersion` set, a stale version is refused with 409 Conflict.
    pub async fn update(&self, at: &ResourcePath, obj: &Value) -> Result<Value, Error> {
        self.call_json(Method::PUT, &at.path()?, Some((JSON, json_body(obj)?)))
            .await
    }

    /// PATCHes `at`; the patched object.
    pub async fn patch(&self, at: &ResourcePath, patch: &Patch) -> Result<Value, Error> {
        let body = (patch.content_type(), json_body(patch.body())?);
        self.call_json(Method::PATCH, &at.path()?, Some(body)).await
    }

    /// DELETEs `at`, with a `DeleteOptions` body if given (preconditions, grace period,
    /// propagation policy); the server's answer: the object (still terminating, or as it
    /// was) or a Success `Status`.
    pub async fn delete(&self, at: &ResourcePath, options: Option<&Value>) -> Result<Value, Error> {
        let body = match options {
            Some(o) => Some((JSON, json_body(o)?)),
            None => None,
        };
        self.call_json(Method::DELETE, &at.path()?, body).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{client, server, Act};
    use serde_json::json;

    fn reply(status: &str, body: &str) -> Act {
        Act::Reply(vec![format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()])
    }

    #[tokio::test]
    async fn requests_go_to_their_paths_and_errors_carry_the_status() {
        let not_found = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#;
        let s = server(move |n| match n {
            0 => reply("404 Not Found", not_found),
            1 => reply("201 Created", r#"{"metadata":{"name":"a"}}"#),
            2 => reply("200 OK", r#"{"metadata":{"name":"a","labels":{"x":"1"}}}"#),
            3 => reply("200 OK", r#"{"metadata":{"name":"a"}}"#),
            4 => reply("200 OK", r#"{"kind":"Status","status":"Success"}"#),
            _ => reply("200 OK", "not json"),
        })
        .await;
        let c = client(s.port);
        let cms = ResourcePath::new("", "v1", "configmaps").in_namespace("ns");
        let err = c.get(&cms.clone().named("x")).await.unwrap_err();
        let st = err.status().expect("a Status");
        assert_eq!((st.code, st.reason.as_str()), (404, "NotFound"));
        assert_eq!(st.message, r#"configmaps "x" not found"#);
        assert!(err.is_not_found());
        let a = json!({"metadata": {"name": "a"}});
        assert_eq!(
            c.create(&cms.clone().named("ignored"), &a).await.unwrap(),
            a
        );
        let p = Patch::Strategic(json!({"metadata": {"labels": {"x": "1"}}}));
        let patched = c.patch(&cms.clone().named("a"), &p).await.unwrap();
        assert_eq!(patched["metadata"]["labels"]["x"], "1");
        c.update(&cms.clone().named("a").subresource("status"), &a)
            .await
            .unwrap();
        let opts = json!({"preconditions": {"uid": "u"}});
        let gone = c
            .delete(&cms.clone().named("a"), Some(&opts))
            .await
            .unwrap();
        assert_eq!(gone["status"], "Success");
        let bad = c.get(&cms.clone().named("a")).await.unwrap_err();
        assert!(matches!(bad, Error::Decode(_)), "{bad:?}");

        let reqs = s.requests.lock().unwrap().clone();
        let line = |i: usize| reqs[i].lines().next().unwrap().to_string();
        assert_eq!(
            line(0),
            "GET /prefix/api/v1/namespaces/ns/configmaps/x HTTP/1.1"
        );
        assert_eq!(
            line(1),
            "POST /prefix/api/v1/namespaces/ns/configmaps HTTP/1.1"
        );
        assert!(reqs[1].ends_with(r#"{"metadata":{"name":"a"}}"#));
        assert_eq!(
            line(2),
            "PATCH /prefix/api/v1/namespaces/ns/configmaps/a HTTP/1.1"
        );
        assert!(reqs[2].contains("Content-Type: application/strategic-merge-patch+json\r\n"));
        assert_eq!(
            line(3),
            "PUT /prefix/api/v1/namespaces/ns/configmaps/a/status HTTP/1.1"
        );
        assert_eq!(
            line(4),
            "DELETE /prefix/api/v1/namespaces/ns/configmaps/a HTTP/1.1"
        );
        assert!(reqs[4].ends_with(r#"{"preconditions":{"uid":"u"}}"#));
        // A path that cannot be sent is refused before anything is sent.
        let refused = c.get(&cms.named("a/b")).await.unwrap_err();
        assert!(matches!(refused, Error::Request(_)), "{refused:?}");
        assert_eq!(s.requests.lock().unwrap().len(), 6);
    }

    #[tokio::test]
    async fn list_all_follows_continue_tokens_at_the_first_pages_version() {
        let s = server(|n| match n {
            0 => reply(
                "200 OK",
                r#"{"metadata":{"resourceVersion":"7","continue":"t+1"},"items":[{"n":0},{"n":1}]}"#,
            ),
            1 => reply(
                "200 OK",
                r#"{"metadata":{"resourceVersion":"7","continue":"t/2"},"items":[{"n":2},{"n":3}]}"#,
            ),
            _ => reply(
                "200 OK",
                r#"{"metadata":{"resourceVersion":"7"},"items":[{"n":4}]}"#,
            ),
        })
        .await;
        let c = client(s.port);
        let params = ListParams {
            label_selector: Some("a=b".into()),
            resource_version: Some("0".into()),
            ..Default::default()
        };
        let all = c
            .list_all(&ResourcePath::new("", "v1", "pods"), &params, 2)
            .await
            .unwrap();
        let ns: Vec<u64> = all.items.iter().map(|i| i["n"].as_u64().unwrap()).collect();
        assert_eq!(ns, [0, 1, 2, 3, 4]);
        assert_eq!(
            (all.resource_version.as_str(), all.continue_token),
            ("7", None)
        );
        let lines: Vec<String> = s
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.lines().next().unwrap().to_string())
            .collect();
        assert_eq!(
            lines,
            [
                "GET /prefix/api/v1/pods?labelSelector=a%3Db&limit=2&resourceVersion=0 HTTP/1.1",
                "GET /prefix/api/v1/pods?labelSelector=a%3Db&limit=2&continue=t%2B1 HTTP/1.1",
                "GET /prefix/api/v1/pods?labelSelector=a%3Db&limit=2&continue=t%2F2 HTTP/1.1",
            ]
        );
    }

    #[test]
    fn lists_read() {
        let l = ObjectList::from_value(json!({
            "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "12", "continue": "tok", "remainingItemCount": 3},
            "items": [{"metadata": {"name": "a"}}]
        }))
        .unwrap();
        assert_eq!(l.items.len(), 1);
        assert_eq!(
            (l.resource_version.as_str(), l.continue_token.as_deref()),
            ("12", Some("tok"))
        );
        assert_eq!(l.remaining_item_count, Some(3));
        let last =
            ObjectList::from_value(json!({"metadata": {"continue": ""}, "items": null})).unwrap();
        assert_eq!((last.items.len(), last.continue_token), (0, None));
        assert!(ObjectList::from_value(json!({"kind": "ConfigMap"})).is_err());
        assert!(ObjectList::from_value(json!({"items": {}})).is_err());
    }
}
