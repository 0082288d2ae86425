//! Impersonation as v1.36 upstream does it (`Impersonate-User`, `-Uid`, `-Group`,
//! `-Extra-<key>`), with constrained impersonation (KEP 5284, beta and on by default in
//! v1.36): the modes are tried in upstream's order, `associated-node`, `arbitrary-node`,
//! `serviceaccount`, `user-info`, then the legacy `impersonate` verb; the first that allows
//! the identity asked for wins, and when none does the first refusal met is the answer.
//!
//! A constrained mode applies only to the identities it is made for (a node its service
//! account runs on; any node; a service account; any other user, the only one with groups,
//! a UID or extras), and asks two things of the authorizer: `impersonate-on:<mode>:<verb>`
//! on the request itself (what may be done as that identity), then `impersonate:<mode>` on
//! each field asked for, in group `authentication.k8s.io` (`users`, `nodes`,
//! `serviceaccounts`, `uids`, `groups`, `userextras/<key>`). It refuses the empty group,
//! `system:masters` and malformed extras outright, and a node is in `system:nodes` only. The
//! legacy mode asks `impersonate` on `users`, `groups` and `serviceaccounts` of the core
//! group and `uids`, `userextras` of `authentication.k8s.io`, as since v1.3.
//!
//! Worked example: carol (no permissions) sends `Impersonate-User: alice` with a list of
//! pods in `ns`. `user-info` applies to alice and asks `impersonate-on:user-info:list` on
//! pods in `ns`: refused, the first refusal; legacy asks `impersonate` on users `alice`:
//! refused too. The answer is the first: `pods is forbidden: User "carol" cannot
//! impersonate-on:user-info:list resource "pods" in API group "" in the namespace "ns"`.
//!
//! Not done: upstream's caches (a per-mode memo of allowed identities and the index of the
//! mode that last succeeded for a request, which it tries first: after such a success the
//! refusal reported for a later request can be that mode's).

use std::collections::BTreeMap;
use std::sync::Arc;

use keel_api::status::ApiError;

use crate::auth::{
    Attributes, Authorizer, Decision, Requested, User, ANONYMOUS_USER, AUTHENTICATED_GROUP,
    MASTERS_GROUP, UNAUTHENTICATED_GROUP,
};
use crate::authz::forbidden;
use crate::serviceaccount::{split_username as service_account, ALL_SERVICE_ACCOUNTS_GROUP};

const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
const NODE_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";
/// From this many groups or extra values on, a constrained mode first asks for all at once
/// (`*`), then one by one (upstream's `manyAuthorizationChecksInLoop`).
const MANY_CHECKS: usize = 4;

/// The identity the headers ask for, as sent.
#[derive(Debug, Default)]
struct Wanted<'h> {
    name: &'h str,
    uid: &'h str,
    groups: Vec<&'h str>,
    /// By key (lower-cased, percent-decoded), values in header order.
    extra: BTreeMap<String, Vec<&'h str>>,
}

impl Wanted<'_> {
    fn only_name(&self) -> bool {
        self.uid.is_empty() && self.groups.is_empty() && self.extra.is_empty()
    }

    /// Go's `%#v` of the `*user.DefaultInfo` upstream builds from the headers.
    fn go_syntax(&self) -> String {
        let q = keel_api::gofmt::quote;
        let groups = if self.groups.is_empty() {
            "[]string(nil)".to_owned()
        } else {
            let g: Vec<String> = self.groups.iter().map(|g| q(g)).collect();
            format!("[]string{{{}}}", g.join(", "))
        };
        let extra = if self.extra.is_empty() {
            "map[string][]string(nil)".to_owned()
        } else {
            let e: Vec<String> = self
                .extra
                .iter()
                .map(|(k, v)| {
                    let v: Vec<String> = v.iter().map(|x| q(x)).collect();
                    format!("{}:[]string{{{}}}", q(k), v.join(", "))
                })
                .collect();
            format!("map[string][]string{{{}}}", e.join(", "))
        };
        format!(
            "&user.DefaultInfo{{Name:{}, UID:{}, Groups:{groups}, Extra:{extra}}}",
            q(self.name),
            q(self.uid)
        )
    }
}

fn node_name(username: &str) -> Option<&str> {
    username
        .strip_prefix(NODE_PREFIX)
        .filter(|n| keel_api::names::is_dns1123_subdomain(n).is_empty())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    AssociatedNode,
    ArbitraryNode,
    ServiceAccount,
    UserInfo,
    Legacy,
}

impl Mode {
    const ALL: [Mode; 5] = [
        Mode::AssociatedNode,
        Mode::ArbitraryNode,
        Mode::ServiceAccount,
        Mode::UserInfo,
        Mode::Legacy,
    ];

    fn name(self) -> &'static str {
        match self {
            Mode::AssociatedNode => "associated-node",
            Mode::ArbitraryNode => "arbitrary-node",
            Mode::ServiceAccount => "serviceaccount",
            Mode::UserInfo => "user-info",
            Mode::Legacy => "",
        }
    }

    /// Whether the mode is made for this identity asked by this requester.
    fn applies(self, wanted: &Wanted<'_>, requester: &User) -> bool {
        match self {
            Mode::AssociatedNode => {
                wanted.only_name()
                    && node_name(wanted.name).is_some_and(|node| {
                        service_account(&requester.name).is_some()
                            && requester
                                .extra
                                .get(crate::serviceaccount::NODE_NAME_KEY)
                                .is_some_and(|v| v.len() == 1 && v[0] == node)
                    })
            }
            Mode::ArbitraryNode => wanted.only_name() && node_name(wanted.name).is_some(),
            Mode::ServiceAccount => wanted.only_name() && service_account(wanted.name).is_some(),
            Mode::UserInfo => {
                node_name(wanted.name).is_none() && service_account(wanted.name).is_none()
            }
            Mode::Legacy => true,
        }
    }
}

/// One authorization check: `Ok` when the chain allows, upstream's 403 otherwise.
fn check(chain: &dyn Authorizer, attrs: &Attributes<'_>) -> Result<(), ApiError> {
    match chain.authorize_request(attrs) {
        Decision::Allow(_) => Ok(()),
        d => Err(forbidden(attrs, d.reason())),
    }
}

/// One field of the identity asked for, as the resource an `impersonate` verb is checked on.
#[derive(Clone, Copy)]
struct Field<'a> {
    resource: &'static str,
    sub: &'a str,
    namespace: &'a str,
    name: &'a str,
    group: &'static str,
}

impl<'a> Field<'a> {
    fn attributes(self, requester: &'a User, verb: &'a str) -> Attributes<'a> {
        Attributes {
            user: requester,
            verb,
            group: self.group,
            resource: self.resource,
            subresource: self.sub,
            namespace: self.namespace,
            name: self.name,
            path: None,
            field_selector: None,
        }
    }
}

/// The identity `wanted` under `mode`, if the chain allows `requester` it; `Ok(None)`: the
/// mode is not made for it.
fn try_mode(
    chain: &dyn Authorizer,
    mode: Mode,
    wanted: &Wanted<'_>,
    requester: &User,
    requested: &Requested,
) -> Result<Option<User>, ApiError> {
    if !mode.applies(wanted, requester) {
        return Ok(None);
    }
    let constrained = mode != Mode::Legacy;
    let verb = match mode {
        Mode::Legacy => "impersonate".to_owned(),
        m => format!("impersonate:{}", m.name()),
    };
    // The attributes of one field asked for: `verb` on `resource[/sub]` named `name`.
    let field = |resource: &'static str, sub, namespace, name, group| Field {
        resource,
        sub,
        namespace,
        name,
        group,
    };
    let ask = |f: Field<'_>| check(chain, &f.attributes(requester, &verb));
    let refuse = |f: Field<'_>, why: &str| Err(forbidden(&f.attributes(requester, &verb), why));
    if constrained {
        let on = format!("impersonate-on:{}:{}", mode.name(), requested.verb);
        check(chain, &requested.attributes(requester, &on))?;
    }
    // Users and groups: the core group for the legacy mode, authentication.k8s.io else.
    let who_group = if constrained {
        AUTHENTICATION_GROUP
    } else {
        ""
    };
    let mut groups: Vec<String> = wanted.groups.iter().map(|g| g.to_string()).collect();
    match (
        constrained.then(|| node_name(wanted.name)).flatten(),
        service_account(wanted.name),
    ) {
        (Some(node), _) => {
            let name = if mode == Mode::AssociatedNode {
                "*"
            } else {
                node
            };
            ask(field("nodes", "", "", name, who_group))?;
            groups = vec![NODES_GROUP.to_owned()];
        }
        (None, Some((ns, sa))) => {
            ask(field("serviceaccounts", "", ns, sa, who_group))?;
            if wanted.groups.is_empty() {
                groups = vec![
                    ALL_SERVICE_ACCOUNTS_GROUP.to_owned(),
                    format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{ns}"),
                ];
            }
        }
        (None, None) => ask(field("users", "", "", wanted.name, who_group))?,
    }
    if !wanted.uid.is_empty() {
        ask(field("uids", "", "", wanted.uid, AUTHENTICATION_GROUP))?;
    }
    if !wanted.groups.is_empty() {
        let group = |name| field("groups", "", "", name, who_group);
        if constrained && wanted.groups.contains(&"") {
            return refuse(
                group(""),
                "impersonating the empty string group is not allowed",
            );
        }
        if constrained && wanted.groups.contains(&MASTERS_GROUP) {
            return refuse(
                group(MASTERS_GROUP),
                "impersonating the system:masters group is not allowed",
            );
        }
        let all = constrained && wanted.groups.len() >= MANY_CHECKS && ask(group("*")).is_ok();
        if !all {
            for g in &wanted.groups {
                ask(group(g))?;
            }
        }
    }
    if !wanted.extra.is_empty() {
        if constrained {
            if let Some(why) = invalid_extra(&wanted.extra) {
                return refuse(field("userextras", "", "", "", AUTHENTICATION_GROUP), &why);
            }
        }
        let values: usize = wanted.extra.values().map(Vec::len).sum();
        let all = constrained
            && (wanted.extra.len() >= MANY_CHECKS || values >= MANY_CHECKS)
            && ask(field("userextras", "*", "", "*", AUTHENTICATION_GROUP)).is_ok();
        if !all {
            for (key, vals) in &wanted.extra {
                for v in vals {
                    ask(field("userextras", key, "", v, AUTHENTICATION_GROUP))?;
                }
            }
        }
    }
    if wanted.name == ANONYMOUS_USER {
        if !groups.iter().any(|g| g == UNAUTHENTICATED_GROUP) {
            groups.push(UNAUTHENTICATED_GROUP.into());
        }
    } else if !groups
        .iter()
        .any(|g| g == UNAUTHENTICATED_GROUP || g == AUTHENTICATED_GROUP)
    {
        groups.push(AUTHENTICATED_GROUP.into());
    }
    let extra = wanted
        .extra
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().map(|x| x.to_string()).collect()))
        .collect();
    Ok(Some(User {
        name: wanted.name.to_owned(),
        uid: wanted.uid.to_owned(),
        groups,
        extra,
    }))
}

/// Upstream's checks of impersonated extras in the constrained modes: the reason one is
/// refused, if it is.
fn invalid_extra(extra: &BTreeMap<String, Vec<&str>>) -> Option<String> {
    for (key, values) in extra {
        if key.is_empty() {
            return Some("impersonating the empty string key in extra is not allowed".into());
        }
        if let Some(e) = keel_rbac::gofmt::aggregate(&domain_prefixed_path_errors(key)) {
            return Some(format!(
                "impersonating an invalid key in extra is not allowed: {e}"
            ));
        }
        if values.is_empty() {
            return Some("impersonating empty values in extra is not allowed".into());
        }
        if values.contains(&"") {
            return Some("impersonating the empty string value in extra is not allowed".into());
        }
    }
    None
}

/// Upstream's `IsDomainPrefixedPath` of an extra's key, as field errors of `extra.key`.
fn domain_prefixed_path_errors(key: &str) -> Vec<String> {
    let q = keel_api::gofmt::quote;
    let invalid =
        |value: &str, detail: &str| format!("extra.key: Invalid value: {}: {detail}", q(value));
    let Some((host, path)) = key
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return vec![invalid(
            key,
            r#"must be a domain-prefixed path (such as "acme.io/foo")"#,
        )];
    };
    let mut errors: Vec<String> = keel_api::names::is_dns1123_subdomain(host)
        .iter()
        .map(|e| invalid(host, e))
        .collect();
    let path_ok = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !path_ok {
        errors.push(invalid(
            path,
            r"Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')",
        ));
    }
    errors
}

/// The user a request acts as: the requester when it sends no impersonation header; the
/// identity the headers ask for when a mode allows it (see the module's documentation);
/// upstream's 400 for groups, a UID or extras without a user, and its 403 otherwise.
/// `requested` gives the request's attributes (asked only when impersonating).
pub fn impersonate<'h>(
    chain: &dyn Authorizer,
    headers: impl Iterator<Item = (&'h str, &'h str)>,
    requester: Arc<User>,
    requested: impl FnOnce() -> Requested,
) -> Result<Arc<User>, ApiError> {
    let mut wanted = Wanted::default();
    let mut any = false;
    // Every request passes here: header names are compared in place, nothing allocated
    // unless a request impersonates. The first User and Uid headers count, as Go's
    // `Header.Get`.
    let (mut name, mut uid) = (None, None);
    for (k, v) in headers {
        let Some(rest) = k
            .get(..12)
            .filter(|p| p.eq_ignore_ascii_case("impersonate-"))
            .map(|_| &k[12..])
        else {
            continue;
        };
        if rest.eq_ignore_ascii_case("user") {
            name.get_or_insert(v);
        } else if rest.eq_ignore_ascii_case("group") {
            wanted.groups.push(v);
            any = true;
        } else if rest.eq_ignore_ascii_case("uid") {
            uid.get_or_insert(v);
        } else if let Some(key) = rest
            .get(..6)
            .filter(|p| p.eq_ignore_ascii_case("extra-"))
            .map(|_| &rest[6..])
        {
            wanted
                .extra
                .entry(crate::auth::percent_decoded(&key.to_ascii_lowercase()))
                .or_default()
                .push(v);
            any = true;
        }
    }
    wanted.name = name.unwrap_or("");
    wanted.uid = uid.unwrap_or("");
    any |= !wanted.uid.is_empty();
    if wanted.name.is_empty() {
        if !any {
            return Ok(requester);
        }
        return Err(ApiError::bad_request(format!(
            "requested {} without impersonating a user name",
            wanted.go_syntax()
        )));
    }
    let requested = requested();
    let mut first: Option<ApiError> = None;
    for mode in Mode::ALL {
        match try_mode(chain, mode, &wanted, &requester, &requested) {
            Ok(Some(user)) => return Ok(Arc::new(user)),
            Ok(None) => {}
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    // The legacy mode applies to every identity: it gave an answer if none allowed.
    Err(first.unwrap_or_else(|| ApiError::internal("all impersonation modes failed")))
}

#[cfg(test)]
mod tests;
