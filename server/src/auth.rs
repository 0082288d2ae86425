//! Authentication's shared parts (the user, static bearer tokens, x509 client certificates,
//! the anonymous user) and the authorizer seam (the modes and their chain implement it in
//! the authz module, above this one; service account tokens are the serviceaccount
//! module's, also above).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use crate::limits::TOKEN_FILE_BYTES_MAX;

/// An authenticated caller.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// What the authenticator adds (a service account token's pod and credential ID,
    /// impersonated extras), by key.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    pub fn is_admin(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS_GROUP)
    }

    /// This user as the policy layer sees a requester: as upstream's authenticators report
    /// it, in `system:authenticated` too (a token file's groups do not list it) unless
    /// anonymous.
    pub fn requester(&self) -> keel_strategy::Requester {
        let mut groups = self.groups.clone();
        if !groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP)
        {
            groups.push(AUTHENTICATED_GROUP.into());
        }
        keel_strategy::Requester {
            name: self.name.clone(),
            uid: self.uid.clone(),
            groups,
        }
    }
}

/// Tokens from a file in kube-apiserver's `--token-auth-file` format:
/// `token,user,uid[,"group1,group2"]` per line.
#[derive(Default, Debug)]
pub struct TokenFile {
    /// Each token's user as authentication reports it (in `system:authenticated`, as
    /// upstream's authenticated-group adder puts every authenticated user; the file's groups
    /// need not list it), shared by the requests that present it.
    tokens: HashMap<String, Arc<User>, foldhash::fast::RandomState>,
    /// The longest token's length: a longer bearer token (a service account's JWT, ~1 KB)
    /// is not looked up at all (hashing it cost a service account's GET 3,000
    /// instructions, `benches/REPORT.md` 2026-12-03).
    longest: usize,
}

impl TokenFile {
    pub fn load(path: &Path) -> Result<TokenFile, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.len() > TOKEN_FILE_BYTES_MAX {
            return Err(format!(
                "{}: token file larger than {TOKEN_FILE_BYTES_MAX} bytes",
                path.display()
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        TokenFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let mut tokens = HashMap::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = split_csv(line);
            if fields.len() < 3 {
                return Err(format!("line {}: expected token,user,uid[,groups]", n + 1));
            }
            if fields[0].is_empty() {
                return Err(format!("line {}: empty token", n + 1));
            }
            let groups = fields
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let mut groups: Vec<String> = groups;
            if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
                groups.push(AUTHENTICATED_GROUP.into());
            }
            let user = User {
                name: fields[1].clone(),
                uid: fields[2].clone(),
                groups,
                extra: BTreeMap::new(),
            };
            if tokens.insert(fields[0].clone(), Arc::new(user)).is_some() {
                return Err(format!("line {}: duplicate token", n + 1));
            }
        }
        let longest = tokens.keys().map(String::len).max().unwrap_or(0);
        Ok(TokenFile { tokens, longest })
    }

    /// The user of `token`, shared, as authentication reports it.
    pub fn lookup(&self, token: &str) -> Option<Arc<User>> {
        if token.len() > self.longest {
            return None;
        }
        self.tokens.get(token).cloned()
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Splits one CSV line, honouring double quotes.
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

/// Who the request comes from, given its `Authorization` header and verified client
/// certificate (an unverified one is no identity: it was never passed here). `None` means
/// unauthenticated. As kube-apiserver's union of authenticators, the certificate is tried
/// before the bearer token: a verified certificate with a non-empty CommonName is the
/// identity whatever the token; otherwise a `Bearer` token must be known.
pub fn authenticate(
    tokens: &TokenFile,
    authorization: Option<&str>,
    client_cert: Option<(&str, &[String])>,
) -> Option<Arc<User>> {
    authenticate_bearer(tokens, bearer_token(authorization), client_cert)
}

/// [`authenticate`] given the header's bearer token ([`bearer_token`]), for a caller that
/// also hands the token to the service account authenticator (one scan of a ~1 KB JWT).
pub fn authenticate_bearer(
    tokens: &TokenFile,
    bearer: Option<&str>,
    client_cert: Option<(&str, &[String])>,
) -> Option<Arc<User>> {
    if let Some((cn, orgs)) = client_cert.filter(|(cn, _)| !cn.is_empty()) {
        let mut groups = orgs.to_vec();
        groups.push(AUTHENTICATED_GROUP.into());
        return Some(Arc::new(User {
            name: cn.to_string(),
            uid: String::new(),
            groups,
            extra: BTreeMap::new(),
        }));
    }
    tokens.lookup(bearer?)
}

/// The token of an `Authorization: Bearer <token>` header, as upstream's bearer token
/// authenticator reads it: the header trimmed, the scheme (`bearer` in any case) before its
/// first space, the token up to the next space; `None` for no header, another scheme or an
/// empty token. (The spaces are found with `memchr`: a service account's JWT is ~1 KB, which
/// `str::splitn` scanned a word at a time, 800 instructions a request.)
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    let header = authorization?.trim();
    let space = memchr::memchr(b' ', header.as_bytes())?;
    let (scheme, rest) = (&header[..space], &header[space + 1..]);
    let token = match memchr::memchr(b' ', rest.as_bytes()) {
        Some(end) => &rest[..end],
        None => rest,
    };
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Request-header (front-proxy) authentication: a client certificate signed by the
/// request-header CA, with one of `allowed_names` as its CommonName (any when empty), proves
/// a proxy that authenticated the user, whom its headers name (kube-apiserver's
/// `--requestheader-*` flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderAuth {
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_prefixes: Vec<String>,
}

impl RequestHeaderAuth {
    /// Whether a proxy certificate with this CommonName may name users.
    pub fn allows(&self, common_name: &str) -> bool {
        self.allowed_names.is_empty() || self.allowed_names.iter().any(|n| n == common_name)
    }

    /// The user the headers name, as upstream's request-header authenticator reads them:
    /// the first non-empty username header (none: no user), the first uid header, every
    /// value of the group headers, and the extras of the prefixed headers (keys lowercased
    /// and percent-decoded).
    pub fn user<'h>(
        &self,
        headers: impl Iterator<Item = (&'h str, &'h str)> + Clone,
    ) -> Option<User> {
        let first = |names: &[String]| {
            names.iter().find_map(|n| {
                headers
                    .clone()
                    .find(|(k, v)| k.eq_ignore_ascii_case(n) && !v.is_empty())
                    .map(|(_, v)| v.to_string())
            })
        };
        let name = first(&self.username_headers)?;
        let uid = first(&self.uid_headers).unwrap_or_default();
        let groups = headers
            .clone()
            .filter(|(k, _)| self.group_headers.iter().any(|g| k.eq_ignore_ascii_case(g)))
            .map(|(_, v)| v.to_string())
            .collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in headers {
            let key = self.extra_prefixes.iter().find_map(|p| {
                k.get(..p.len())
                    .filter(|head| head.eq_ignore_ascii_case(p))
                    .map(|_| &k[p.len()..])
            });
            if let Some(key) = key.filter(|k| !k.is_empty()) {
                extra
                    .entry(percent_decoded(&key.to_ascii_lowercase()))
                    .or_default()
                    .push(v.to_string());
            }
        }
        Some(User {
            name,
            uid,
            groups,
            extra,
        })
    }
}

/// A header name's `%XX` escapes decoded (upstream unescapes extra keys).
pub fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The user of a request without credentials, when anonymous requests are allowed.
pub fn anonymous() -> User {
    User {
        name: ANONYMOUS_USER.into(),
        groups: vec![UNAUTHENTICATED_GROUP.into()],
        ..Default::default()
    }
}

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";

/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// The group whose members every request is allowed (upstream's privileged group).
pub const MASTERS_GROUP: &str = "system:masters";

/// What is being asked, in authorization terms.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    pub user: &'a User,
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// Set for non-resource requests (`/version`, `/openapi/v2`...).
    pub path: Option<&'a str>,
    /// A list's or watch's `fieldSelector`, as sent (upstream's authorizers see its
    /// requirements: the Node mode allows a node's pod list only with its `spec.nodeName`).
    pub field_selector: Option<&'a str>,
}

/// What a request asks, as its [`Attributes`] without the user, owned: what impersonation
/// asks about (`impersonate-on:<mode>:<verb>`) and what a request is authorized for on its
/// head.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// Set for a non-resource request.
    pub path: Option<String>,
}

impl Requested {
    /// The request's attributes for `user`, with `verb` for its own.
    pub fn attributes<'a>(&'a self, user: &'a User, verb: &'a str) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            group: &self.group,
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name: &self.name,
            path: self.path.as_deref(),
            field_selector: None,
        }
    }
}

/// An authorizer's verdict with its reason, as upstream's (`DecisionAllow`, `DecisionDeny`,
/// `DecisionNoOpinion`): a chain asks its next authorizer only after no opinion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    Deny(String),
    NoOpinion(String),
}

impl Decision {
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(r) | Decision::Deny(r) | Decision::NoOpinion(r) => r,
        }
    }
}

/// The authorization seam, which the authz module's chain of modes implements.
pub trait Authorizer: Send + Sync {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision;

    /// [`Authorizer::authorize`] for serving a request, which drops an allowed decision's
    /// reason: an implementation may leave that reason empty (denials keep theirs).
    fn authorize_request(&self, attrs: &Attributes<'_>) -> Decision {
        self.authorize(attrs)
    }

    /// What `user` may do in `namespace`, as a SelfSubjectRulesReview's status says it.
    fn rules_for(&self, user: &User, namespace: &str) -> serde_json::Value;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_format() {
        let f =
            TokenFile::parse("# comment\nabc,admin,1,\"system:masters,dev\"\nxyz,bob,2\n").unwrap();
        let admin = f.lookup("abc").unwrap();
        assert_eq!(admin.name, "admin");
        assert_eq!(
            admin.groups,
            vec!["system:masters", "dev", "system:authenticated"]
        );
        assert!(admin.is_admin());
        assert_eq!(f.lookup("xyz").unwrap().groups, ["system:authenticated"]);
        assert!(f.lookup("nope").is_none());
        assert!(TokenFile::parse("abc,admin").is_err());
        assert!(TokenFile::parse("a,b,c\na,d,e").is_err());
    }

    #[test]
    fn request_headers_name_the_proxied_user() {
        let rh = RequestHeaderAuth {
            allowed_names: vec!["front-proxy-client".into()],
            username_headers: vec!["X-Remote-User".into(), "X-Other-User".into()],
            uid_headers: vec!["X-Remote-Uid".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_prefixes: vec!["X-Remote-Extra-".into()],
        };
        assert!(rh.allows("front-proxy-client") && !rh.allows("other"));
        assert!(RequestHeaderAuth::default().allows("anyone"));
        let headers = [
            ("x-remote-user", ""),
            ("X-Other-User", "alice"),
            ("X-Remote-Group", "a"),
            ("x-remote-group", "b"),
            ("X-Remote-Uid", "42"),
            ("X-Remote-Extra-Acme.com%2Fproject", "p1"),
            ("X-Remote-Extra-", "ignored"),
        ];
        let u = rh.user(headers.iter().copied()).unwrap();
        assert_eq!((u.name.as_str(), u.uid.as_str()), ("alice", "42"));
        assert_eq!(u.groups, ["a", "b"]);
        assert_eq!(u.extra.len(), 1);
        assert_eq!(u.extra["acme.com/project"], ["p1"]);
        assert!(rh.user([("X-Remote-Group", "a")].iter().copied()).is_none());
        assert_eq!(bearer_token(Some("bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(Some("Basic abc")), None);
        // As upstream's: the header trimmed, the token ends at the next space, a scheme
        // alone is no token.
        assert_eq!(bearer_token(Some("  Bearer abc def ")), Some("abc"));
        assert_eq!(bearer_token(Some("BEARER  abc")), None);
        assert_eq!(bearer_token(Some("Bearer")), None);
        assert_eq!(bearer_token(Some("Bearerabc")), None);
        assert_eq!(bearer_token(None), None);
        assert!(anonymous().requester().groups == ["system:unauthenticated"]);
    }

    #[test]
    fn bearer_and_cert_authentication() {
        let f = TokenFile::parse("abc,admin,1,system:masters").unwrap();
        assert_eq!(
            authenticate(&f, Some("Bearer abc"), None).unwrap().name,
            "admin"
        );
        assert!(authenticate(&f, Some("Bearer nope"), None).is_none());
        assert!(authenticate(&f, Some("Basic abc"), None).is_none());
        let orgs = vec!["system:nodes".to_string()];
        let u = authenticate(&f, None, Some(("system:node:n1", &orgs))).unwrap();
        assert_eq!(u.name, "system:node:n1");
        assert!(u.groups.contains(&"system:nodes".to_string()));
        assert!(authenticate(&f, None, None).is_none());
        // The certificate is tried first, as upstream: a bad token beside it does not matter,
        // and a certificate without a CommonName is no identity.
        let u = authenticate(&f, Some("Bearer nope"), Some(("system:node:n1", &orgs))).unwrap();
        assert_eq!(u.name, "system:node:n1");
        let u = authenticate(&f, Some("Bearer abc"), Some(("", &orgs))).unwrap();
        assert_eq!(u.name, "admin");
        assert!(authenticate(&f, None, Some(("", &orgs))).is_none());
    }
}
