//! Service account tokens as JWTs (JWS compact serialization): the claims upstream's token
//! generator writes (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti` and the private
//! `kubernetes.io` claim naming the namespace, service account and bound object), signing,
//! and the checks of a presented token that need no stored object (signature, issuer,
//! audiences, times). Pure: the time is passed in.

use super::keys::{Alg, PublicKey, SigningKey};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Map, Value};

/// go-jose's error for a signature that does not verify.
pub const BAD_SIGNATURE: &str = "go-jose/go-jose: error in cryptographic primitive";

/// Leeway on the time claims, as go-jose's `jwt.DefaultLeeway` that upstream validates with.
pub const LEEWAY_SECS: i64 = 60;

/// A name and UID in the private claim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ref {
    pub name: String,
    pub uid: String,
}

impl Ref {
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if !self.name.is_empty() {
            m.insert("name".into(), json!(self.name));
        }
        if !self.uid.is_empty() {
            m.insert("uid".into(), json!(self.uid));
        }
        Value::Object(m)
    }

    fn of(v: Option<&Value>) -> Option<Ref> {
        let v = v?.as_object()?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(Ref {
            name: s("name"),
            uid: s("uid"),
        })
    }
}

/// What a token says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    pub issuer: String,
    pub subject: String,
    pub audiences: Vec<String>,
    pub expiry: i64,
    pub issued_at: i64,
    pub not_before: i64,
    pub id: String,
    pub namespace: String,
    pub service_account: Ref,
    pub pod: Option<Ref>,
    pub secret: Option<Ref>,
    pub node: Option<Ref>,
    pub warn_after: Option<i64>,
}

impl Claims {
    /// The payload, with its members sorted as go-jose's merged claims are.
    pub fn to_json(&self) -> Value {
        let mut k8s = Map::new();
        // Sorted: namespace, node, pod, secret, serviceaccount, warnafter.
        if !self.namespace.is_empty() {
            k8s.insert("namespace".into(), json!(self.namespace));
        }
        for (key, r) in [
            ("node", &self.node),
            ("pod", &self.pod),
            ("secret", &self.secret),
        ] {
            if let Some(r) = r {
                k8s.insert(key.into(), r.to_value());
            }
        }
        k8s.insert("serviceaccount".into(), self.service_account.to_value());
        if let Some(w) = self.warn_after {
            k8s.insert("warnafter".into(), json!(w));
        }
        let mut m = Map::new();
        m.insert("aud".into(), json!(self.audiences));
        m.insert("exp".into(), json!(self.expiry));
        m.insert("iat".into(), json!(self.issued_at));
        m.insert("iss".into(), json!(self.issuer));
        if !self.id.is_empty() {
            m.insert("jti".into(), json!(self.id));
        }
        m.insert("kubernetes.io".into(), Value::Object(k8s));
        m.insert("nbf".into(), json!(self.not_before));
        m.insert("sub".into(), json!(self.subject));
        Value::Object(m)
    }

    fn from_json(v: &Value) -> Option<Claims> {
        let o = v.as_object()?;
        let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let n = |k: &str| o.get(k).and_then(Value::as_f64).map(|f| f as i64);
        // `aud` is a string or a list of strings.
        let audiences = match o.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()?,
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return None,
        };
        let k8s = o.get("kubernetes.io");
        let ks = |k: &str| {
            k8s.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Some(Claims {
            issuer: s("iss"),
            subject: s("sub"),
            audiences,
            expiry: n("exp").unwrap_or(0),
            issued_at: n("iat").unwrap_or(0),
            not_before: n("nbf").unwrap_or(0),
            id: s("jti"),
            namespace: ks("namespace"),
            service_account: Ref::of(k8s.and_then(|m| m.get("serviceaccount"))).unwrap_or_default(),
            pod: Ref::of(k8s.and_then(|m| m.get("pod"))),
            secret: Ref::of(k8s.and_then(|m| m.get("secret"))),
            node: Ref::of(k8s.and_then(|m| m.get("node"))),
            warn_after: k8s
                .and_then(|m| m.get("warnafter"))
                .and_then(Value::as_f64)
                .map(|f| f as i64),
        })
    }
}

/// A signed token: `base64url(header).base64url(payload).base64url(signature)`.
pub fn sign(key: &SigningKey, claims: &Claims) -> String {
    let header = json!({"alg": key.public.alg.name(), "kid": key.public.kid});
    let mut out = URL_SAFE_NO_PAD.encode(header.to_string());
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(claims.to_json().to_string()));
    let sig = key.sign(out.as_bytes());
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(sig));
    out
}

/// Why a token is not accepted. `NotOurs` is no opinion (another authenticator may know the
/// token); the rest fail the request, as upstream's JWT authenticator's errors do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    NotOurs,
    Invalid(String),
}

/// The issuer of a compact JWT's payload, read without checking anything, as upstream's
/// `hasCorrectIssuer` peeks before verifying.
pub fn peek_issuer(token: &str) -> Option<String> {
    if token.trim_start().starts_with('{') {
        return None;
    }
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("iss")?.as_str().map(String::from)
}

/// What upstream's JWT authenticator checks before looking at stored objects: one of `keys`
/// signed it, its issuer is one of `issuers`, its audiences meet `audiences`, and its times
/// hold at `now` (with [`LEEWAY_SECS`]). Returns the claims and the audiences in common.
pub fn verify(
    token: &str,
    keys: &[PublicKey],
    issuers: &[String],
    audiences: &[String],
    now: i64,
) -> Result<(Claims, Vec<String>), Refusal> {
    match peek_issuer(token) {
        Some(iss) if issuers.contains(&iss) => {}
        _ => return Err(Refusal::NotOurs),
    }
    let mut parts = token.split('.');
    let (h, p, s) = match (parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(p), Some(s)) => (h, p, s),
        _ => return Err(Refusal::NotOurs),
    };
    let decode = |x: &str| URL_SAFE_NO_PAD.decode(x).map_err(|_| Refusal::NotOurs);
    let header: Value = serde_json::from_slice(&decode(h)?).map_err(|_| Refusal::NotOurs)?;
    // A signature that does not decode is a bad signature (go-jose reads it leniently).
    let sig = URL_SAFE_NO_PAD.decode(s).unwrap_or_default();
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Alg::from_name)
        .ok_or(Refusal::NotOurs)?;
    let kid = header.get("kid").and_then(Value::as_str).unwrap_or("");
    let candidates: Vec<&PublicKey> = keys
        .iter()
        .filter(|k| kid.is_empty() || k.kid == kid)
        .collect();
    if candidates.is_empty() {
        return Err(Refusal::Invalid("invalid signature, no keys found".into()));
    }
    let signed = &token[..h.len() + 1 + p.len()];
    if !candidates
        .iter()
        .any(|k| k.verify(alg, signed.as_bytes(), &sig))
    {
        return Err(Refusal::Invalid(BAD_SIGNATURE.into()));
    }
    let payload: Value = serde_json::from_slice(&decode(p)?).map_err(|_| Refusal::NotOurs)?;
    let claims = Claims::from_json(&payload).ok_or(Refusal::NotOurs)?;
    if !issuers.contains(&claims.issuer) {
        return Err(Refusal::Invalid(format!(
            "token issuer {} is invalid",
            keel_api::gofmt::quote(&claims.issuer)
        )));
    }
    let token_auds = if claims.audiences.is_empty() {
        audiences.to_vec()
    } else {
        claims.audiences.clone()
    };
    let common: Vec<String> = token_auds
        .iter()
        .filter(|a| audiences.contains(a))
        .cloned()
        .collect();
    if common.is_empty() && !audiences.is_empty() {
        return Err(Refusal::Invalid(format!(
            "token audiences {} is invalid for the target audiences {}",
            keel_api::gofmt::quote_list(&token_auds),
            keel_api::gofmt::quote_list(audiences)
        )));
    }
    if claims.expiry != 0 && now - LEEWAY_SECS > claims.expiry {
        return Err(Refusal::Invalid("service account token has expired".into()));
    }
    if claims.not_before != 0 && now + LEEWAY_SECS < claims.not_before {
        return Err(Refusal::Invalid(
            "service account token is not valid yet".into(),
        ));
    }
    if claims.issued_at != 0 && now + LEEWAY_SECS < claims.issued_at {
        return Err(Refusal::Invalid(
            "service account token is issued in the future".into(),
        ));
    }
    Ok((claims, common))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::from_pem(&SigningKey::generate_pem().unwrap()).unwrap()
    }

    fn claims() -> Claims {
        Claims {
            issuer: "https://kubernetes.default.svc.cluster.local".into(),
            subject: "system:serviceaccount:ns:sa".into(),
            audiences: vec!["https://kubernetes.default.svc.cluster.local".into()],
            expiry: 2_000,
            issued_at: 1_000,
            not_before: 1_000,
            id: "id-1".into(),
            namespace: "ns".into(),
            service_account: Ref {
                name: "sa".into(),
                uid: "u1".into(),
            },
            pod: Some(Ref {
                name: "p".into(),
                uid: "u2".into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn tokens_round_trip_and_payload_order() {
        let k = key();
        let c = claims();
        let t = sign(&k, &c);
        let iss = vec![c.issuer.clone()];
        let (back, auds) = verify(&t, std::slice::from_ref(&k.public), &iss, &iss, 1_500).unwrap();
        assert_eq!(back, c);
        assert_eq!(auds, iss);
        let payload = URL_SAFE_NO_PAD
            .decode(t.split('.').nth(1).unwrap())
            .unwrap();
        let text = String::from_utf8(payload).unwrap();
        assert!(text.starts_with(r#"{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":2000,"iat":1000,"iss":"#));
        assert!(text.contains(r#""kubernetes.io":{"namespace":"ns","pod":{"name":"p","uid":"u2"},"serviceaccount":{"name":"sa","uid":"u1"}},"nbf":1000,"sub":"system:serviceaccount:ns:sa"}"#), "{text}");
    }

    #[test]
    fn bad_tokens_are_refused() {
        let k = key();
        let other = key();
        let c = claims();
        let iss = vec![c.issuer.clone()];
        let keys = [k.public.clone()];
        let t = sign(&k, &c);
        // Times, with the leeway.
        assert!(verify(&t, &keys, &iss, &iss, 2_060).is_ok());
        assert_eq!(
            verify(&t, &keys, &iss, &iss, 2_061).unwrap_err(),
            Refusal::Invalid("service account token has expired".into())
        );
        assert!(matches!(
            verify(&t, &keys, &iss, &iss, 900),
            Err(Refusal::Invalid(_))
        ));
        // Another key's signature, a forged payload.
        let forged = sign(&other, &c);
        let kid_of_ours = {
            let mut p: Vec<&str> = forged.split('.').collect();
            let h =
                URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": k.public.kid}).to_string());
            p[0] = &h;
            p.join(".")
        };
        assert!(matches!(
            verify(&kid_of_ours, &keys, &iss, &iss, 1_500),
            Err(Refusal::Invalid(_))
        ));
        assert_eq!(
            verify(&forged, &keys, &iss, &iss, 1_500).unwrap_err(),
            Refusal::Invalid("invalid signature, no keys found".into())
        );
        let mut parts: Vec<String> = t.split('.').map(String::from).collect();
        let mut evil = c.clone();
        evil.subject = "system:serviceaccount:kube-system:admin".into();
        parts[1] = URL_SAFE_NO_PAD.encode(evil.to_json().to_string());
        assert!(matches!(
            verify(&parts.join("."), &keys, &iss, &iss, 1_500),
            Err(Refusal::Invalid(_))
        ));
        // Audiences.
        let api = vec!["api".to_string()];
        assert_eq!(
            verify(&t, &keys, &iss, &api, 1_500).unwrap_err(),
            Refusal::Invalid(r#"token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["api"]"#.into())
        );
        // Another issuer's token, and things that are no JWT, are someone else's.
        assert_eq!(
            verify(&t, &keys, &["https://x".into()], &iss, 1_500).unwrap_err(),
            Refusal::NotOurs
        );
        for junk in ["", "abc", "a.b.c", "{\"iss\":1}", "a.b.c.d"] {
            assert_eq!(
                verify(junk, &keys, &iss, &iss, 1_500).unwrap_err(),
                Refusal::NotOurs
            );
        }
    }
}
