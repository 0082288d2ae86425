//! Errors of API requests. When the server refused a request with a `metav1.Status` body (its
//! errors always are), the error carries that Status: code, reason and message, as the server
//! wrote them. Pure.

use serde_json::Value;

/// The fields of a `metav1.Status` that callers act on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    /// The HTTP status code it stands for (`code`).
    pub code: u16,
    /// Machine-readable cause: `NotFound`, `AlreadyExists`, `Conflict`, `Expired`, `Gone`...
    /// (empty when the server gave none).
    pub reason: String,
    /// Human-readable description.
    pub message: String,
    /// `details` (name, group, kind, causes), as sent.
    pub details: Option<Value>,
}

impl Status {
    /// Reads a Status document: `None` unless it is an object of kind `Status` (or, without a
    /// kind, one with a numeric `code`).
    pub fn from_value(v: &Value) -> Option<Status> {
        let kind = v.get("kind").and_then(Value::as_str);
        let code = v.get("code").and_then(Value::as_u64);
        match (kind, code) {
            (Some("Status"), _) | (None, Some(_)) => {}
            _ => return None,
        }
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(Status {
            code: code.and_then(|c| u16::try_from(c).ok()).unwrap_or(0),
            reason: text("reason"),
            message: text("message"),
            details: v.get("details").cloned(),
        })
    }

    /// `from_value` of a JSON body.
    pub fn from_body(body: &[u8]) -> Option<Status> {
        Status::from_value(&serde_json::from_slice(body).ok()?)
    }
}

/// How much of a non-Status error body an `Error::Http` keeps for its message.
const ERROR_TEXT_BYTES_MAX: usize = 512;

/// Why an API request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The server refused the request and said why in a `metav1.Status` (boxed: it is the
    /// largest variant, and errors travel in every `Result` of the client).
    Api(Box<Status>),
    /// The server answered with a status other than 2xx and a body that is not a Status (a
    /// proxy's error page, say): the code and the start of the body.
    Http { code: u16, body: String },
    /// No usable answer: connecting, TLS, sending, reading or framing failed, or the request
    /// timed out.
    Transport(String),
    /// A 2xx answer whose body is not what the request returns (not JSON, not a list, an
    /// event line over its bound).
    Decode(String),
    /// The request could not be made: a path segment or parameter that is not allowed.
    Request(String),
}

impl Error {
    /// The error for a non-2xx response.
    pub fn from_response(code: u16, body: &[u8]) -> Error {
        match Status::from_body(body) {
            Some(mut s) => {
                if s.code == 0 {
                    s.code = code;
                }
                Error::Api(Box::new(s))
            }
            None => Error::Http {
                code,
                body: String::from_utf8_lossy(&body[..body.len().min(ERROR_TEXT_BYTES_MAX)])
                    .into_owned(),
            },
        }
    }

    /// The server's Status, if it sent one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(s) => Some(s),
            _ => None,
        }
    }

    /// The HTTP status code the server answered with (the Status's code when it sent one).
    pub fn code(&self) -> Option<u16> {
        match self {
            Error::Api(s) => Some(s.code),
            Error::Http { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409) && !self.is_already_exists()
    }

    pub fn is_already_exists(&self) -> bool {
        self.status().is_some_and(|s| s.reason == "AlreadyExists")
    }

    /// 410: the resourceVersion asked for is older than the server's history (`Expired`,
    /// `Gone`): list again.
    pub fn is_gone(&self) -> bool {
        self.code() == Some(410)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Api(s) if s.reason.is_empty() => write!(f, "HTTP {}: {}", s.code, s.message),
            Error::Api(s) => write!(f, "HTTP {} {}: {}", s.code, s.reason, s.message),
            Error::Http { code, body } => write!(f, "HTTP {code}: {body}"),
            Error::Transport(e) => write!(f, "transport: {e}"),
            Error::Decode(e) => write!(f, "decoding the response: {e}"),
            Error::Request(e) => write!(f, "bad request: {e}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_become_errors() {
        let conflict = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the object has been modified","reason":"Conflict","details":{"name":"a","kind":"configmaps"},"code":409}"#;
        let e = Error::from_response(409, conflict);
        let s = e.status().unwrap();
        assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
        assert_eq!(s.message, "the object has been modified");
        assert_eq!(s.details.as_ref().unwrap()["name"], "a");
        assert!(e.is_conflict() && !e.is_already_exists() && !e.is_gone());
        assert_eq!(
            e.to_string(),
            "HTTP 409 Conflict: the object has been modified"
        );

        let exists = br#"{"kind":"Status","reason":"AlreadyExists","code":409}"#;
        let e = Error::from_response(409, exists);
        assert!(e.is_already_exists() && !e.is_conflict());

        // A Status without a code takes the response's.
        let e = Error::from_response(410, br#"{"kind":"Status","reason":"Expired"}"#);
        assert!(e.is_gone());

        // Not a Status: the code and the start of the body.
        let page = "<html>".to_string() + &"x".repeat(2000);
        let e = Error::from_response(502, page.as_bytes());
        match &e {
            Error::Http { code: 502, body } => assert_eq!(body.len(), ERROR_TEXT_BYTES_MAX),
            other => panic!("{other:?}"),
        }
        assert_eq!(e.code(), Some(502));
        let e = Error::from_response(404, br#"{"kind":"ConfigMap","code":1}"#);
        assert!(matches!(e, Error::Http { code: 404, .. }), "{e:?}");
        assert!(e.is_not_found());
        assert_eq!(Error::Transport("x".into()).code(), None);
    }
}
