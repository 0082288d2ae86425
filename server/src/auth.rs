//! Authentication (static bearer tokens, x509 client certificates) and the authorizer seam
//! (the modes and their chain implement it in the authz module, above this one).

use std::collections::HashMap;
use std::path::Path;

use crate::limits::TOKEN_FILE_BYTES_MAX;

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl User {
    pub fn is_admin(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS_GROUP)
    }

    /// This user as the policy layer sees a requester: as upstream's authenticators report
    /// it, in `system:authenticated` too (a token file's groups do not list it).
    pub fn requester(&self) -> keel_strategy::Requester {
        let mut groups = self.groups.clone();
        if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
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
    tokens: HashMap<String, User>,
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
        let mut tokens = HashMap::new();
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
            let user = User {
                name: fields[1].clone(),
                uid: fields[2].clone(),
                groups,
            };
            if tokens.insert(fields[0].clone(), user).is_some() {
                return Err(format!("line {}: duplicate token", n + 1));
            }
        }
        Ok(TokenFile { tokens })
    }

    pub fn lookup(&self, token: &str) -> Option<&User> {
        self.tokens.get(token)
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
) -> Option<User> {
    if let Some((cn, orgs)) = client_cert.filter(|(cn, _)| !cn.is_empty()) {
        let mut groups = orgs.to_vec();
        groups.push(AUTHENTICATED_GROUP.into());
        return Some(User {
            name: cn.to_string(),
            uid: String::new(),
            groups,
        });
    }
    let token = authorization?
        .strip_prefix("Bearer ")
        .or_else(|| authorization?.strip_prefix("bearer "))?;
    let mut user = tokens.lookup(token.trim()).cloned()?;
    // As upstream's authenticated-group adder: every authenticated user is in it.
    if !user.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        user.groups.push(AUTHENTICATED_GROUP.into());
    }
    Some(user)
}

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
        assert_eq!(admin.groups, vec!["system:masters", "dev"]);
        assert!(admin.is_admin());
        assert!(f.lookup("xyz").unwrap().groups.is_empty());
        assert!(f.lookup("nope").is_none());
        assert!(TokenFile::parse("abc,admin").is_err());
        assert!(TokenFile::parse("a,b,c\na,d,e").is_err());
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
