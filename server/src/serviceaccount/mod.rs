//! Service account tokens, as kube-apiserver issues and checks them: TokenRequest's signed
//! JWTs (`serviceaccounts/<name>/token`), their authentication (signature by one of the
//! verification keys, issuer, audiences, times, and the service account and bound object
//! still there with the UIDs the token names), the users they stand for
//! (`system:serviceaccount:<ns>:<name>` in `system:serviceaccounts` and
//! `system:serviceaccounts:<ns>`, with the pod, node and credential ID as extras) and the
//! issuer discovery documents (`/.well-known/openid-configuration`, `/openid/v1/jwks`).
//!
//! Successful authentications are cached for [`TOKEN_CACHE_TTL`] (upstream's token cache
//! keeps successes 10 seconds): a bound token stops working within that time of its object's
//! deletion, as upstream's. Failures are not cached.
//!
//! Not done: the legacy tokens of `kubernetes.io/service-account-token` Secrets (upstream's
//! token controller in kube-controller-manager fills them).

pub mod jwt;
pub mod keys;

use crate::auth::{User, AUTHENTICATED_GROUP};
use crate::limits::{TOKEN_CACHE_ENTRIES_MAX, TOKEN_CACHE_TTL};
use jwt::{Claims, Ref, Refusal};
use keys::{PublicKey, SigningKey};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

/// The issuer keel's tokens name unless `--service-account-issuer` says otherwise (kubeadm's
/// and most distributions' choice).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The group of every service account, and the prefix of each namespace's.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
pub const USERNAME_PREFIX: &str = "system:serviceaccount:";
/// The user extras a bound token adds.
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";
/// What a kubelet asks its projected tokens to last, and how long they then last when
/// `--service-account-extend-token-expiration` is on (upstream's constants).
pub const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;
pub const EXPIRATION_EXTENSION_SECONDS: i64 = 24 * 365 * 60 * 60;
/// How long the discovery documents may be cached (`Cache-Control: max-age`), as upstream's
/// static keys say.
pub const DISCOVERY_MAX_AGE_SECS: u64 = 3600;

/// The facts of a stored object a token's validity depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub uid: String,
    /// `metadata.deletionTimestamp`, in seconds since the epoch.
    pub deleted_at: Option<i64>,
}

/// Reads of stored objects (`serviceaccounts`, `pods`, `secrets`, `nodes`) for token checks.
pub trait Lookup {
    fn stored(&self, resource: &str, namespace: &str, name: &str) -> Option<Stored>;
}

/// The service account name of a `system:serviceaccount:<ns>:<name>` user.
pub fn split_username(name: &str) -> Option<(&str, &str)> {
    let (ns, sa) = name.strip_prefix(USERNAME_PREFIX)?.split_once(':')?;
    (!ns.is_empty() && !sa.is_empty() && !sa.contains(':')).then_some((ns, sa))
}

/// What `--service-account-*` and `--api-audiences` configure.
pub struct Issuer {
    /// Accepted issuers; the first is written into new tokens.
    pub issuers: Vec<String>,
    /// The API's audiences (`--api-audiences`, default the issuers).
    pub audiences: Vec<String>,
    signing: SigningKey,
    keys: Vec<PublicKey>,
    /// `--service-account-max-token-expiration` in seconds; 0: none.
    pub max_expiration: i64,
    pub extend_expiration: bool,
    discovery: std::sync::OnceLock<Discovery>,
    cache: Mutex<TokenCache>,
}

/// Successful authentications by token. Keyed by the hash of a token's length and last
/// [`TAIL`] bytes (its signature: a JWT's end, which only the issuer's key makes, so no one
/// can fill a bucket; hashing a whole ~1 KB token cost a request 560 instructions), each
/// entry holding the whole token, compared on look-up; a colliding token replaces the entry.
#[derive(Default)]
struct TokenCache {
    hasher: foldhash::fast::RandomState,
    entries: HashMap<u64, CachedToken, foldhash::fast::RandomState>,
}

struct CachedToken {
    token: Box<str>,
    user: Arc<User>,
    until: Instant,
}

const TAIL: usize = 32;

impl TokenCache {
    fn key(&self, token: &str) -> u64 {
        use std::hash::BuildHasher;
        let b = token.as_bytes();
        self.hasher
            .hash_one((b.len(), &b[b.len().saturating_sub(TAIL)..]))
    }

    /// The user of `token` if it was authenticated less than its time-to-live ago.
    fn get(&self, token: &str, now: Instant) -> Option<&Arc<User>> {
        self.entries
            .get(&self.key(token))
            .filter(|e| *e.token == *token && now < e.until)
            .map(|e| &e.user)
    }

    fn insert(&mut self, token: &str, user: Arc<User>, until: Instant) {
        if self.entries.len() >= TOKEN_CACHE_ENTRIES_MAX {
            let now = Instant::now();
            self.entries.retain(|_, e| e.until > now);
            if self.entries.len() >= TOKEN_CACHE_ENTRIES_MAX {
                self.entries.clear();
            }
        }
        let key = self.key(token);
        self.entries.insert(
            key,
            CachedToken {
                token: token.into(),
                user,
                until,
            },
        );
    }
}

/// The issuer discovery documents, made once the server's address is known.
struct Discovery {
    configuration: Vec<u8>,
    keyset: Vec<u8>,
}

/// What a TokenRequest asks for, checked.
pub struct Request<'a> {
    pub namespace: &'a str,
    pub service_account: Ref,
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    pub pod: Option<Ref>,
    pub secret: Option<Ref>,
    pub node: Option<Ref>,
    /// Seconds after which a stale token is reported (`warnafter`), when extended.
    pub warn_after: Option<i64>,
}

impl Issuer {
    pub fn new(
        issuers: Vec<String>,
        audiences: Vec<String>,
        signing: SigningKey,
        keys: Vec<PublicKey>,
        max_expiration: i64,
        extend_expiration: bool,
    ) -> Result<Issuer, String> {
        if issuers.iter().all(|i| i.is_empty()) {
            return Err("--service-account-issuer: at least one issuer is required".into());
        }
        if let Some(i) = issuers.iter().find(|i| i.contains(':') && !is_url(i)) {
            return Err(format!(
                "--service-account-issuer {} contained a ':' but was not a valid URL",
                keel_api::gofmt::quote(i)
            ));
        }
        if max_expiration != 0 && max_expiration < 3600 {
            return Err("--service-account-max-token-expiration must be longer than 1h".into());
        }
        let audiences = if audiences.is_empty() {
            issuers.clone()
        } else {
            audiences
        };
        let keys = if keys.is_empty() {
            vec![signing.public.clone()]
        } else {
            keys
        };
        Ok(Issuer {
            issuers,
            audiences,
            signing,
            keys,
            max_expiration,
            extend_expiration,
            discovery: std::sync::OnceLock::new(),
            cache: Mutex::new(TokenCache::default()),
        })
    }

    /// Whether the audiences are all the API's own (only then is a kubelet's token extended).
    pub fn is_api_audiences(&self, audiences: &[String]) -> bool {
        !audiences.is_empty() && audiences.iter().all(|a| self.audiences.contains(a))
    }

    /// A signed token for `req`, issued at `now` (seconds), with its ID.
    pub fn issue(&self, req: &Request<'_>, now: i64) -> String {
        let claims = Claims {
            issuer: self.issuers[0].clone(),
            subject: format!(
                "{USERNAME_PREFIX}{}:{}",
                req.namespace, req.service_account.name
            ),
            audiences: req.audiences.clone(),
            expiry: now + req.expiration_seconds,
            issued_at: now,
            not_before: now,
            id: uuid::Uuid::new_v4().to_string(),
            namespace: req.namespace.to_string(),
            service_account: req.service_account.clone(),
            pod: req.pod.clone(),
            secret: req.secret.clone(),
            node: req.node.clone(),
            warn_after: req.warn_after.map(|w| now + w),
        };
        jwt::sign(&self.signing, &claims)
    }

    /// The user a request's bearer token stands for, for the API's audiences: `Ok(None)`
    /// when it is not one of this issuer's tokens (another authenticator may know it),
    /// `Err` with upstream's reason when it is but is not valid. Successes are cached.
    pub fn authenticate(
        &self,
        token: &str,
        objects: &dyn Lookup,
        now: i64,
    ) -> Result<Option<Arc<User>>, String> {
        if let Some(user) = self.cache.lock().get(token, Instant::now()) {
            return Ok(Some(Arc::clone(user)));
        }
        let Some((claims, user, _)) = self.check(token, &self.audiences, objects, now)? else {
            return Ok(None);
        };
        let user = Arc::new(user);
        let ttl_end = (claims.expiry + jwt::LEEWAY_SECS - now).max(0) as u64;
        let until = Instant::now() + TOKEN_CACHE_TTL.min(std::time::Duration::from_secs(ttl_end));
        self.cache.lock().insert(token, user.clone(), until);
        Ok(Some(user))
    }

    /// [`Issuer::authenticate`] for a TokenReview: against `audiences` (the review's, or
    /// the API's), never cached, with the audiences the token and they have in common.
    pub fn review(
        &self,
        token: &str,
        audiences: &[String],
        objects: &dyn Lookup,
        now: i64,
    ) -> Result<Option<(User, Vec<String>)>, String> {
        Ok(self
            .check(token, audiences, objects, now)?
            .map(|(_, user, common)| (user, common)))
    }

    fn check(
        &self,
        token: &str,
        audiences: &[String],
        objects: &dyn Lookup,
        now: i64,
    ) -> Result<Option<(Claims, User, Vec<String>)>, String> {
        let (claims, common) = match jwt::verify(token, &self.keys, &self.issuers, audiences, now) {
            Ok(v) => v,
            Err(Refusal::NotOurs) => return Ok(None),
            Err(Refusal::Invalid(why)) => return Err(why),
        };
        let user = validate(&claims, objects, now)?;
        Ok(Some((claims, user, common)))
    }

    /// Makes the discovery documents for a server reached at `external` (`host:port`), with
    /// `jwks_uri` when given. They are served only when the first issuer is an https URL
    /// without query or fragment, as upstream requires.
    pub fn publish(&self, jwks_uri: &str, external: &str) -> Result<(), String> {
        let iss = &self.issuers[0];
        if !iss.starts_with("https://") || iss.contains('?') || iss.contains('#') {
            return Ok(());
        }
        let jwks_uri = if jwks_uri.is_empty() {
            format!("https://{external}/openid/v1/jwks")
        } else if !jwks_uri.starts_with("https://") {
            return Err(format!(
                "--service-account-jwks-uri: jwksURI requires https scheme, parsed as: {jwks_uri}"
            ));
        } else {
            jwks_uri.to_string()
        };
        let mut algs: Vec<&str> = self.keys.iter().map(|k| k.alg.name()).collect();
        algs.sort_unstable();
        algs.dedup();
        let configuration = json!({
            "issuer": iss,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algs,
        });
        let keys: Vec<Value> = self.keys.iter().map(PublicKey::jwk).collect();
        let _ = self.discovery.set(Discovery {
            configuration: configuration.to_string().into_bytes(),
            keyset: json!({ "keys": keys }).to_string().into_bytes(),
        });
        Ok(())
    }

    /// `/.well-known/openid-configuration`, when published.
    pub fn openid_configuration(&self) -> Option<&[u8]> {
        self.discovery.get().map(|d| d.configuration.as_slice())
    }

    /// `/openid/v1/jwks`, when published.
    pub fn jwks(&self) -> Option<&[u8]> {
        self.discovery.get().map(|d| d.keyset.as_slice())
    }
}

fn is_url(s: &str) -> bool {
    match s.split_once("://") {
        Some((scheme, rest)) => {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
        }
        None => false,
    }
}

/// Upstream's validator: the service account (and a bound secret, pod or node) still stored
/// with the UID the token names and not deleted more than the leeway ago; the user with its
/// extras.
fn validate(c: &Claims, objects: &dyn Lookup, now: i64) -> Result<User, String> {
    let ns = &c.namespace;
    let sa = &c.service_account;
    let gone_before = now - jwt::LEEWAY_SECS;
    let deleted = |s: &Stored| s.deleted_at.is_some_and(|t| t < gone_before);
    let stored = objects
        .stored("serviceaccounts", ns, &sa.name)
        .ok_or_else(|| {
            format!(
                "serviceaccounts {} not found",
                keel_api::gofmt::quote(&sa.name)
            )
        })?;
    if stored.uid != sa.uid {
        return Err(format!(
            "service account UID ({}) does not match claim ({})",
            stored.uid, sa.uid
        ));
    }
    if deleted(&stored) {
        return Err(format!("service account {ns}/{} has been deleted", sa.name));
    }
    let invalidated = || "service account token has been invalidated".to_string();
    let check = |resource: &str, r: &Ref, namespace: &str, what: &str| -> Result<(), String> {
        let s = objects
            .stored(resource, namespace, &r.name)
            .ok_or_else(invalidated)?;
        if s.uid != r.uid {
            return Err(format!(
                "{what} UID ({}) does not match service account {} ref claim ({})",
                s.uid,
                what.to_lowercase(),
                r.uid
            ));
        }
        if deleted(&s) {
            return Err(invalidated());
        }
        Ok(())
    };
    let mut extra = BTreeMap::new();
    if let Some(s) = &c.secret {
        check("secrets", s, ns, "secret")?;
    }
    if let Some(p) = &c.pod {
        check("pods", p, ns, "pod")?;
        extra.insert(POD_NAME_KEY.to_string(), vec![p.name.clone()]);
        extra.insert(POD_UID_KEY.to_string(), vec![p.uid.clone()]);
    }
    if let Some(n) = &c.node {
        if c.pod.is_none() {
            check("nodes", n, "", "node")?;
        }
        extra.insert(NODE_NAME_KEY.to_string(), vec![n.name.clone()]);
        if !n.uid.is_empty() {
            extra.insert(NODE_UID_KEY.to_string(), vec![n.uid.clone()]);
        }
    }
    if !c.id.is_empty() {
        extra.insert(CREDENTIAL_ID_KEY.to_string(), vec![format!("JTI={}", c.id)]);
    }
    Ok(User {
        name: format!("{USERNAME_PREFIX}{ns}:{}", sa.name),
        uid: sa.uid.clone(),
        groups: vec![
            ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
            format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{ns}"),
            AUTHENTICATED_GROUP.to_string(),
        ],
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Objects(HashMap<(String, String, String), Stored>);

    impl Lookup for Objects {
        fn stored(&self, resource: &str, namespace: &str, name: &str) -> Option<Stored> {
            self.0
                .get(&(resource.into(), namespace.into(), name.into()))
                .cloned()
        }
    }

    fn objects(entries: &[(&str, &str, &str, &str, Option<i64>)]) -> Objects {
        Objects(
            entries
                .iter()
                .map(|(r, ns, n, uid, del)| {
                    (
                        (r.to_string(), ns.to_string(), n.to_string()),
                        Stored {
                            uid: uid.to_string(),
                            deleted_at: *del,
                        },
                    )
                })
                .collect(),
        )
    }

    fn issuer() -> Issuer {
        let key = SigningKey::from_pem(&SigningKey::generate_pem().unwrap()).unwrap();
        Issuer::new(vec![DEFAULT_ISSUER.into()], vec![], key, vec![], 0, true).unwrap()
    }

    fn request(pod: Option<Ref>) -> Request<'static> {
        Request {
            namespace: "ns",
            service_account: Ref {
                name: "sa".into(),
                uid: "sa-uid".into(),
            },
            audiences: vec![DEFAULT_ISSUER.into()],
            expiration_seconds: 3600,
            pod,
            secret: None,
            node: None,
            warn_after: None,
        }
    }

    #[test]
    fn bound_tokens_name_their_user_until_their_objects_go() {
        let iss = issuer();
        let now = 1_000_000;
        let pod = Ref {
            name: "p".into(),
            uid: "pod-uid".into(),
        };
        let t = iss.issue(&request(Some(pod)), now);
        let live = objects(&[
            ("serviceaccounts", "ns", "sa", "sa-uid", None),
            ("pods", "ns", "p", "pod-uid", None),
        ]);
        let (user, auds) = iss
            .review(&t, &iss.audiences, &live, now + 10)
            .unwrap()
            .unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(user.uid, "sa-uid");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        assert_eq!(user.extra[POD_NAME_KEY], ["p"]);
        assert_eq!(user.extra[POD_UID_KEY], ["pod-uid"]);
        assert!(user.extra[CREDENTIAL_ID_KEY][0].starts_with("JTI="));
        assert_eq!(auds, [DEFAULT_ISSUER]);
        // The pod deleted, or replaced by another of its name; the service account too.
        let aud = iss.audiences.as_slice();
        let no_pod = objects(&[("serviceaccounts", "ns", "sa", "sa-uid", None)]);
        assert_eq!(
            iss.review(&t, aud, &no_pod, now).unwrap_err(),
            "service account token has been invalidated"
        );
        let other_pod = objects(&[
            ("serviceaccounts", "ns", "sa", "sa-uid", None),
            ("pods", "ns", "p", "pod-2", None),
        ]);
        assert_eq!(
            iss.review(&t, aud, &other_pod, now).unwrap_err(),
            "pod UID (pod-2) does not match service account pod ref claim (pod-uid)"
        );
        let deleting = objects(&[
            ("serviceaccounts", "ns", "sa", "sa-uid", None),
            ("pods", "ns", "p", "pod-uid", Some(now - 61)),
        ]);
        assert!(iss.review(&t, aud, &deleting, now).is_err());
        let just_deleting = objects(&[
            ("serviceaccounts", "ns", "sa", "sa-uid", None),
            ("pods", "ns", "p", "pod-uid", Some(now - 5)),
        ]);
        assert!(iss.review(&t, aud, &just_deleting, now).is_ok());
        assert_eq!(
            iss.review(&t, aud, &objects(&[]), now).unwrap_err(),
            "serviceaccounts \"sa\" not found"
        );
        // Another issuer's tokens and static tokens are not this authenticator's.
        assert_eq!(iss.review("abc", aud, &live, now), Ok(None));
    }

    #[test]
    fn request_successes_are_cached_and_reviews_are_not() {
        let iss = issuer();
        let now = chrono::Utc::now().timestamp();
        let t = iss.issue(&request(None), now);
        let live = objects(&[("serviceaccounts", "ns", "sa", "sa-uid", None)]);
        assert!(iss.authenticate(&t, &live, now).unwrap().is_some());
        // Cached: the service account's deletion is seen only when the entry expires.
        assert!(iss.authenticate(&t, &objects(&[]), now).unwrap().is_some());
        // A review (a TokenReview's audiences) is checked afresh.
        assert!(iss.review(&t, &iss.audiences, &objects(&[]), now).is_err());
        // A token that ends as the cached one but differs before is not the cached one's.
        let mut forged = t.clone();
        forged.replace_range(10..11, if &t[10..11] == "A" { "B" } else { "A" });
        assert_eq!(&forged[forged.len() - TAIL..], &t[t.len() - TAIL..]);
        assert!(!matches!(
            iss.authenticate(&forged, &live, now),
            Ok(Some(_))
        ));
        assert!(iss.authenticate(&t, &objects(&[]), now).unwrap().is_some());
    }

    #[test]
    fn discovery_documents() {
        let iss = issuer();
        assert!(iss.openid_configuration().is_none());
        iss.publish("", "127.0.0.1:6443").unwrap();
        let c: Value = serde_json::from_slice(iss.openid_configuration().unwrap()).unwrap();
        assert_eq!(
            c.to_string(),
            format!(
                r#"{{"issuer":"{DEFAULT_ISSUER}","jwks_uri":"https://127.0.0.1:6443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}}"#
            )
        );
        let k: Value = serde_json::from_slice(iss.jwks().unwrap()).unwrap();
        assert_eq!(k["keys"][0]["kid"], json!(iss.signing.public.kid));
        // Only an https issuer is published.
        let key = SigningKey::from_pem(&SigningKey::generate_pem().unwrap()).unwrap();
        let plain = Issuer::new(vec!["kubernetes".into()], vec![], key, vec![], 0, true).unwrap();
        plain.publish("", "127.0.0.1:6443").unwrap();
        assert!(plain.jwks().is_none());
        assert_eq!(
            split_username("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        assert_eq!(split_username("system:serviceaccount:ns"), None);
    }
}
