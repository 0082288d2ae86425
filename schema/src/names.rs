//! Upstream's naming of OpenAPI tags and operation ids for a group/version.

/// `""` → `core`, `apps` → `apps`, `rbac.authorization.k8s.io` → `rbacAuthorization`,
/// `flowcontrol.apiserver.k8s.io` → `flowcontrolApiserver`, `stable.example.com` →
/// `stableExampleCom`.
pub(crate) fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "core".to_owned();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    let mut out = String::new();
    for (i, part) in trimmed.split(['.', '-']).enumerate() {
        if i == 0 {
            out.push_str(part);
        } else {
            out.push_str(&capitalize(part));
        }
    }
    out
}

/// Tag of every operation of a group/version: `core_v1`, `apps_v1`, `rbacAuthorization_v1`.
pub(crate) fn tag(group: &str, version: &str) -> String {
    format!("{}_{version}", group_camel(group))
}

/// Operation id infix: `CoreV1`, `AppsV1`, `RbacAuthorizationV1`, `AutoscalingV2`.
pub(crate) fn op_prefix(group: &str, version: &str) -> String {
    format!("{}{}", capitalize(&group_camel(group)), capitalize(version))
}

/// `status` → `Status`, `ephemeralcontainers` → `Ephemeralcontainers`.
pub(crate) fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Discovery path of a group/version under `/openapi/v3/`: `api/v1`, `apis/apps/v1`.
pub(crate) fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_prefixes_follow_upstream() {
        let cases = [
            ("", "v1", "core_v1", "CoreV1"),
            ("apps", "v1", "apps_v1", "AppsV1"),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "rbacAuthorization_v1",
                "RbacAuthorizationV1",
            ),
            (
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "flowcontrolApiserver_v1",
                "FlowcontrolApiserverV1",
            ),
            ("networking.k8s.io", "v1", "networking_v1", "NetworkingV1"),
            ("autoscaling", "v2", "autoscaling_v2", "AutoscalingV2"),
            (
                "stable.example.com",
                "v1",
                "stableExampleCom_v1",
                "StableExampleComV1",
            ),
        ];
        for (group, version, tag_want, prefix_want) in cases {
            assert_eq!(tag(group, version), tag_want);
            assert_eq!(op_prefix(group, version), prefix_want);
        }
    }
}
