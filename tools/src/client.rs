//! A pooled HTTP/1.1 client for one API server: hyper 1 over rustls, keep-alive, TCP_NODELAY,
//! bearer token or x509 client certificate, a bound on every response body and a timeout on
//! every request.

use crate::kubeconfig::Endpoint;
use crate::limits;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::sync::Arc;
use std::time::Duration;

/// Content types of request bodies.
pub const JSON: &str = "application/json";
pub const MERGE_PATCH: &str = "application/merge-patch+json";
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// A client for one API server; cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct KubeClient {
    base: Arc<str>,
    auth: Option<HeaderValue>,
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

/// A whole response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: Bytes,
}

impl Response {
    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("response is not JSON: {e}"))
    }

    /// Ok for 2xx, else an error naming the status and the start of the body.
    pub fn ok(self) -> Result<Response, String> {
        if (200..300).contains(&self.status) {
            Ok(self)
        } else {
            Err(status_error(self.status, &self.body))
        }
    }
}

/// `HTTP 409: <first 200 bytes of the body>`.
pub fn status_error(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    let reason = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_string));
    match reason {
        Some(r) => format!("HTTP {status} {r}"),
        None => format!("HTTP {status}: {text}"),
    }
}

impl KubeClient {
    /// A client keeping up to `pool` idle keep-alive connections.
    pub fn new(ep: &Endpoint, pool: usize) -> Result<KubeClient, String> {
        let tls = tls_config(ep)?;
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        let builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http();
        let builder = match &ep.tls_server_name {
            Some(name) => {
                let name = ServerName::try_from(name.clone())
                    .map_err(|e| format!("tls-server-name {name:?}: {e}"))?;
                builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
            }
            None => builder,
        };
        let connector = builder.enable_http1().wrap_connector(http);
        let http = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(pool.max(1))
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        let auth = match &ep.token {
            Some(t) => Some(
                HeaderValue::from_str(&format!("Bearer {t}"))
                    .map_err(|_| "token has characters not allowed in a header".to_string())?,
            ),
            None => None,
        };
        if !ep.server.starts_with("https://") && !ep.server.starts_with("http://") {
            return Err(format!(
                "server {:?}: expected http:// or https://",
                ep.server
            ));
        }
        Ok(KubeClient {
            base: ep.server.trim_end_matches('/').into(),
            auth,
            http,
        })
    }

    /// Sends one request and reads the whole response (up to `RESPONSE_BYTES_MAX`).
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Response, String> {
        self.request_accept(method, path, body, JSON).await
    }

    /// As `request`, with an explicit Accept header.
    pub async fn request_accept(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
        accept: &'static str,
    ) -> Result<Response, String> {
        let timeout = Duration::from_secs(limits::REQUEST_TIMEOUT_S);
        let exchange = async {
            let resp = self.send(method, path, body, accept).await?;
            let status = resp.status().as_u16();
            let body = Limited::new(resp.into_body(), limits::RESPONSE_BYTES_MAX)
                .collect()
                .await
                .map_err(|e| format!("reading response: {e}"))?
                .to_bytes();
            Ok(Response { status, body })
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("no response within {timeout:?}"))?
    }

    /// GETs `path` and hands the body to `each` frame by frame as it arrives (nothing is
    /// buffered); returns the body's length. A status other than 200 is an error.
    pub async fn get_streamed(
        &self,
        path: &str,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, String> {
        let timeout = Duration::from_secs(limits::REQUEST_TIMEOUT_S);
        let exchange = async {
            let mut body = self.stream(path).await?;
            let mut len = 0u64;
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| format!("reading response: {e}"))?;
                if let Ok(data) = frame.into_data() {
                    len += data.len() as u64;
                    each(&data)?;
                }
            }
            Ok(len)
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("no response within {timeout:?}"))?
    }

    /// Opens a streaming GET (a watch); the caller reads the body frame by frame.
    pub async fn stream(&self, path: &str) -> Result<Incoming, String> {
        let resp = self.send(Method::GET, path, None, JSON).await?;
        let status = resp.status().as_u16();
        if status != 200 {
            let body = Limited::new(resp.into_body(), 64 << 10)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            return Err(status_error(status, &body));
        }
        Ok(resp.into_body())
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
        accept: &'static str,
    ) -> Result<hyper::Response<Incoming>, String> {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header(ACCEPT, accept);
        if let Some(a) = &self.auth {
            req = req.header(AUTHORIZATION, a.clone());
        }
        let body = match body {
            Some((ct, bytes)) => {
                req = req.header(CONTENT_TYPE, ct);
                Full::new(bytes)
            }
            None => Full::new(Bytes::new()),
        };
        let req = req
            .body(body)
            .map_err(|e| format!("bad request {path}: {e}"))?;
        self.http.request(req).await.map_err(|e| {
            let mut msg = format!("{e}");
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            msg
        })
    }
}

fn tls_config(ep: &Endpoint) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = &ep.ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("CA data: {e}"))?;
            roots.add(cert).map_err(|e| format!("CA data: {e}"))?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    match (&ep.client_cert_pem, &ep.client_key_pem) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("client certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("client key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate: {e}"))
        }
        (None, None) => Ok(builder.with_no_client_auth()),
        _ => Err("a client certificate needs both the certificate and the key".into()),
    }
}
