//! A reference to a Service as webhooks and APIServices name one (namespace, name, port), and
//! the resolver that finds where it is reached (the aggregator provides it; callers below
//! the state, such as conversion webhooks, get it handed down).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Where a Service is: namespace, name, port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: i64,
}

impl ServiceRef {
    /// The DNS name its serving certificate is verified for (`<name>.<namespace>.svc`).
    pub fn host(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }
}

/// Finds where a Service is reached now: `host:port`, or upstream's error text.
pub type ServiceResolver =
    Arc<dyn Fn(ServiceRef) -> Pin<Box<dyn Future<Output = Result<String, String>>>> + Send + Sync>;
