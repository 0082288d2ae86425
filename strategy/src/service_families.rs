//! A Service's IP families: `ipFamilyPolicy`, `ipFamilies` and `clusterIPs` defaulted and
//! checked against the families the cluster serves (upstream's registry `initIPFamilyFields`,
//! run before allocation), and the checks of those fields that need no cluster
//! (`ValidateServiceClusterIPsRelatedFields`). The cluster's families enter as a value:
//! `["IPv4"]`, `["IPv6"]`, or both with the primary (the first `--service-cluster-ip-range`)
//! first.

use crate::errors::{Bad, FieldErr};
use crate::json::{arr_at, str_at};
use keel_api::jsonmap::JsonPointer;
use serde_json::{json, Value};
use std::net::IpAddr;

pub const IPV4: &str = "IPv4";
pub const IPV6: &str = "IPv6";
const FAMILIES: &[&str] = &[IPV4, IPV6];
pub const SINGLE_STACK: &str = "SingleStack";
pub const PREFER_DUAL_STACK: &str = "PreferDualStack";
pub const REQUIRE_DUAL_STACK: &str = "RequireDualStack";
const POLICIES: &[&str] = &[PREFER_DUAL_STACK, REQUIRE_DUAL_STACK, SINGLE_STACK];
/// At most one cluster IP per family.
pub const CLUSTER_IPS_MAX: usize = 2;

/// The family of an IP address text (`None` when it is not one).
pub fn family_of(ip: &str) -> Option<&'static str> {
    match ip.parse::<IpAddr>().ok()? {
        IpAddr::V4(_) => Some(IPV4),
        IpAddr::V6(_) => Some(IPV6),
    }
}

fn other_family(f: &str) -> &'static str {
    if f == IPV4 {
        IPV6
    } else {
        IPV4
    }
}

fn strings<'a>(svc: &'a Value, path: &str) -> Vec<&'a str> {
    arr_at(svc, path)
        .iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect()
}

fn raw_list(svc: &Value, path: &str) -> Bad {
    let v = svc
        .at(&format!("/{}", path.replace('.', "/")))
        .cloned()
        .filter(Value::is_array)
        .unwrap_or(json!([]));
    Bad::Raw(v.to_string())
}

fn is_headless(svc: &Value) -> bool {
    str_at(svc, "spec.clusterIP") == "None"
}

fn has_selector(svc: &Value) -> bool {
    svc.at("/spec/selector")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
}

/// Upstream's `ValidateServiceClusterIPsRelatedFields` (ExternalName services skip it).
pub fn validate_related(svc: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    if str_at(svc, "spec.type") == "ExternalName" {
        return errs;
    }
    let ip = str_at(svc, "spec.clusterIP");
    let ips = strings(svc, "spec.clusterIPs");
    if !ip.is_empty() {
        match ips.first() {
            None => errs.push(FieldErr::required("spec.clusterIPs", "")),
            Some(first) if *first != ip => errs.push(FieldErr::invalid(
                "spec.clusterIPs",
                raw_list(svc, "spec.clusterIPs"),
                "first value must match `clusterIP`",
            )),
            _ => {}
        }
    } else if !ips.is_empty() {
        errs.push(FieldErr::invalid(
            "spec.clusterIPs",
            raw_list(svc, "spec.clusterIPs"),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen = Vec::new();
    for (i, f) in strings(svc, "spec.ipFamilies").into_iter().enumerate() {
        let field = format!("spec.ipFamilies[{i}]");
        if !FAMILIES.contains(&f) {
            errs.push(FieldErr::not_supported(&field, f, FAMILIES));
        }
        if seen.contains(&f) {
            errs.push(FieldErr::duplicate(&field, f));
        }
        seen.push(f);
    }
    let policy = str_at(svc, "spec.ipFamilyPolicy");
    if svc.at("/spec/ipFamilyPolicy").is_some_and(Value::is_string) && !POLICIES.contains(&policy) {
        errs.push(FieldErr::not_supported(
            "spec.ipFamilyPolicy",
            policy,
            POLICIES,
        ));
    }
    let mut bad_ips = false;
    for (i, text) in ips.iter().enumerate() {
        if i == 0 && *text == "None" {
            if ips.len() > 1 {
                bad_ips = true;
                errs.push(FieldErr::invalid(
                    "spec.clusterIPs",
                    raw_list(svc, "spec.clusterIPs"),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if family_of(text).is_none() {
            bad_ips = true;
            errs.push(FieldErr::invalid(
                &format!("spec.clusterIPs[{i}]"),
                *text,
                "must be empty, 'None', or a valid IP address",
            ));
        }
    }
    if ips.len() > CLUSTER_IPS_MAX {
        errs.push(FieldErr::invalid(
            "spec.clusterIPs",
            raw_list(svc, "spec.clusterIPs"),
            "may only hold up to 2 values",
        ));
    }
    if bad_ips {
        return errs;
    }
    if ips.len() > 1 && (ips.len() != 2 || family_of(ips[0]) == family_of(ips[1])) {
        errs.push(FieldErr::invalid(
            "spec.clusterIPs",
            raw_list(svc, "spec.clusterIPs"),
            "may specify no more than one IP for each IP family",
        ));
    }
    let families = strings(svc, "spec.ipFamilies");
    if !is_headless(svc) {
        for (i, text) in ips.iter().enumerate().take(families.len()) {
            let want = families[i];
            if (want == IPV4 || want == IPV6) && family_of(text) != Some(want) {
                errs.push(FieldErr::invalid(
                    &format!("spec.clusterIPs[{i}]"),
                    *text,
                    &format!("expected an {want} value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
    errs
}

/// Upstream's `isMatchingPreferDualStackClusterIPFields`: an unchanged PreferDualStack
/// service is neither upgraded nor downgraded when the cluster's families change.
fn unchanged_prefer_dual_stack(svc: &Value, old: Option<&Value>) -> bool {
    let Some(old) = old else {
        return false;
    };
    fn ty(v: &Value) -> &str {
        match str_at(v, "spec.type") {
            "" => "ClusterIP",
            t => t,
        }
    }
    ty(svc) == ty(old)
        && matches!(ty(svc), "ClusterIP" | "NodePort" | "LoadBalancer")
        && str_at(svc, "spec.ipFamilyPolicy") == PREFER_DUAL_STACK
        && matches!(str_at(old, "spec.ipFamilyPolicy"), "" | PREFER_DUAL_STACK)
        && strings(svc, "spec.clusterIPs") == strings(old, "spec.clusterIPs")
        && strings(svc, "spec.ipFamilies") == strings(old, "spec.ipFamilies")
}

fn set(svc: &mut Value, key: &str, v: Value) {
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert(key.into(), v);
    }
}

/// Upstream's `initIPFamilyFields`: defaults `ipFamilyPolicy` (the stored one on update;
/// RequireDualStack for a headless service without selector; else SingleStack) and
/// `ipFamilies` (from the cluster IPs given, the cluster's primary family, and the other
/// family for a dual-stack policy on a dual-stack cluster), trims a downgrade to
/// SingleStack, and refuses what the cluster cannot serve. `cluster`: the families served,
/// primary first. The errors are a 422's causes.
pub fn init_ip_families(svc: &mut Value, old: Option<&Value>, cluster: &[&str]) -> Vec<FieldErr> {
    if str_at(svc, "spec.type") == "ExternalName" || unchanged_prefer_dual_stack(svc, old) {
        return Vec::new();
    }
    if !svc.at("/spec/ipFamilyPolicy").is_some_and(Value::is_string) {
        let policy = match old.map(|o| str_at(o, "spec.ipFamilyPolicy")) {
            Some(p) if !p.is_empty() => p.to_string(),
            _ if is_headless(svc) && !has_selector(svc) => REQUIRE_DUAL_STACK.into(),
            _ => SINGLE_STACK.into(),
        };
        set(svc, "ipFamilyPolicy", json!(policy));
    }
    let errs = validate_related(svc);
    if !errs.is_empty() {
        return errs;
    }
    let policy = str_at(svc, "spec.ipFamilyPolicy").to_string();
    let mut errs = Vec::new();
    let policy_bad = || Bad::Str(policy.clone());
    if let Some(old) = old {
        let owned = |v: &Value, path: &str| -> Vec<String> {
            strings(v, path).into_iter().map(String::from).collect()
        };
        let (ips, old_ips) = (owned(svc, "spec.clusterIPs"), owned(old, "spec.clusterIPs"));
        let (fams, old_fams) = (owned(svc, "spec.ipFamilies"), owned(old, "spec.ipFamilies"));
        if policy == SINGLE_STACK {
            // Clear intent: keep the primary only (it cannot change).
            if ips == old_ips && ips.len() > 1 {
                set(svc, "clusterIPs", json!([ips[0]]));
            }
            if fams == old_fams && fams.len() > 1 {
                set(svc, "ipFamilies", json!([fams[0]]));
            }
        } else {
            if !ips.is_empty() && ips.len() < old_ips.len() {
                errs.push(FieldErr::invalid(
                    "spec.ipFamilyPolicy",
                    policy_bad(),
                    "must be 'SingleStack' to release the secondary cluster IP",
                ));
            }
            if !fams.is_empty() && fams.len() < old_fams.len() {
                errs.push(FieldErr::invalid(
                    "spec.ipFamilyPolicy",
                    policy_bad(),
                    "must be 'SingleStack' to release the secondary IP family",
                ));
            }
        }
    }
    if policy == SINGLE_STACK {
        if strings(svc, "spec.clusterIPs").len() == 2 {
            errs.push(FieldErr::invalid(
                "spec.ipFamilyPolicy",
                policy_bad(),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if strings(svc, "spec.ipFamilies").len() == 2 {
            errs.push(FieldErr::invalid(
                "spec.ipFamilyPolicy",
                policy_bad(),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    // Families inferred from the cluster IPs given.
    let mut families: Vec<String> = strings(svc, "spec.ipFamilies")
        .into_iter()
        .map(String::from)
        .collect();
    let ips: Vec<String> = strings(svc, "spec.clusterIPs")
        .into_iter()
        .map(String::from)
        .collect();
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        let fam = family_of(ip).unwrap_or(IPV4);
        if i >= families.len() {
            if cluster.contains(&fam) {
                families.push(fam.to_string());
            } else {
                errs.push(FieldErr::invalid(
                    &format!("spec.clusterIPs[{i}]"),
                    raw_list(svc, "spec.clusterIPs"),
                    &format!("{fam} is not configured on this cluster"),
                ));
            }
        }
    }
    if !errs.is_empty() {
        return errs;
    }
    let primary = cluster.first().copied().unwrap_or(IPV4);
    if is_headless(svc) && !has_selector(svc) {
        if families.is_empty() {
            families.push(primary.into());
        }
        if families.len() < 2 && policy != SINGLE_STACK {
            let other = other_family(&families[0]);
            families.push(other.into());
        }
        set(svc, "ipFamilies", json!(families));
        return errs;
    }
    if policy == REQUIRE_DUAL_STACK && cluster.len() < 2 {
        errs.push(FieldErr::invalid(
            "spec.ipFamilyPolicy",
            policy_bad(),
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, f) in families.iter().enumerate() {
        if !cluster.contains(&f.as_str()) {
            errs.push(FieldErr::invalid(
                &format!("spec.ipFamilies[{i}]"),
                f.as_str(),
                "not configured on this cluster",
            ));
        }
    }
    if !errs.is_empty() {
        return errs;
    }
    if families.is_empty() {
        families.push(primary.into());
    }
    if policy != SINGLE_STACK && families.len() == 1 && cluster.len() == 2 {
        let other = other_family(&families[0]);
        families.push(other.into());
    }
    set(svc, "ipFamilies", json!(families));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "s"}, "spec": spec})
    }

    fn messages(errs: &[FieldErr]) -> Vec<String> {
        errs.iter()
            .map(|e| {
                let c = e.clone().into_cause();
                format!("{}: {}", c.field, c.message)
            })
            .collect()
    }

    /// The policy and families after, or the messages.
    type Want = Result<(&'static str, Value), Vec<&'static str>>;

    const V4: &[&str] = &[IPV4];
    const DUAL: &[&str] = &[IPV4, IPV6];
    const DUAL6: &[&str] = &[IPV6, IPV4];

    /// Defaults and refusals on create, messages as upstream v1.36's (observed on the
    /// dual-stack kit, `10.0.0.0/24,fd00:10:96::/112`, and its source for single-stack).
    #[test]
    fn init_on_create_table() {
        // (cluster, spec, policy and families after, or the messages)
        let rows: Vec<(&[&str], Value, Want)> = vec![
            (V4, json!({}), Ok((SINGLE_STACK, json!(["IPv4"])))),
            (DUAL, json!({}), Ok((SINGLE_STACK, json!(["IPv4"])))),
            (DUAL6, json!({}), Ok((SINGLE_STACK, json!(["IPv6"])))),
            (DUAL, json!({"ipFamilyPolicy": "PreferDualStack"}), Ok((PREFER_DUAL_STACK, json!(["IPv4", "IPv6"])))),
            (V4, json!({"ipFamilyPolicy": "PreferDualStack"}), Ok((PREFER_DUAL_STACK, json!(["IPv4"])))),
            (DUAL, json!({"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv6"]}), Ok((REQUIRE_DUAL_STACK, json!(["IPv6", "IPv4"])))),
            (DUAL, json!({"ipFamilies": ["IPv6"]}), Ok((SINGLE_STACK, json!(["IPv6"])))),
            (DUAL, json!({"clusterIP": "fd00::5", "clusterIPs": ["fd00::5"]}), Ok((SINGLE_STACK, json!(["IPv6"])))),
            (V4, json!({"clusterIP": "None", "clusterIPs": ["None"]}), Ok((REQUIRE_DUAL_STACK, json!(["IPv4", "IPv6"])))),
            (V4, json!({"clusterIP": "None", "clusterIPs": ["None"], "selector": {"a": "b"}}), Ok((SINGLE_STACK, json!(["IPv4"])))),
            (V4, json!({"ipFamilyPolicy": "RequireDualStack"}),
             Err(vec!["spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services"])),
            (V4, json!({"ipFamilies": ["IPv6"]}),
             Err(vec!["spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"])),
            (V4, json!({"clusterIP": "fd00::5", "clusterIPs": ["fd00::5"]}),
             Err(vec!["spec.clusterIPs[0]: Invalid value: [\"fd00::5\"]: IPv6 is not configured on this cluster"])),
            (DUAL, json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4", "IPv6"]}),
             Err(vec!["spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"])),
            (DUAL, json!({"ipFamilyPolicy": "SingleStack", "clusterIP": "10.0.0.77", "clusterIPs": ["10.0.0.77", "fd00:10:96::77"]}),
             Err(vec!["spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"])),
            (DUAL, json!({"ipFamilies": ["IPv6"], "clusterIP": "10.0.0.78", "clusterIPs": ["10.0.0.78"]}),
             Err(vec!["spec.clusterIPs[0]: Invalid value: \"10.0.0.78\": expected an IPv6 value as indicated by `ipFamilies[0]`"])),
            (DUAL, json!({"ipFamilyPolicy": "PreferDualStack", "clusterIP": "10.0.0.79", "clusterIPs": ["10.0.0.79", "10.0.0.80"]}),
             Err(vec!["spec.clusterIPs: Invalid value: [\"10.0.0.79\",\"10.0.0.80\"]: may specify no more than one IP for each IP family"])),
            (DUAL, json!({"ipFamilyPolicy": "Bogus"}),
             Err(vec!["spec.ipFamilyPolicy: Unsupported value: \"Bogus\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\""])),
            (DUAL, json!({"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv4", "IPv4"]}),
             Err(vec!["spec.ipFamilies[1]: Duplicate value: \"IPv4\""])),
            (DUAL, json!({"ipFamilies": ["IPv5"]}),
             Err(vec!["spec.ipFamilies[0]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\""])),
            (DUAL, json!({"clusterIPs": ["10.0.0.81"]}),
             Err(vec!["spec.clusterIPs: Invalid value: [\"10.0.0.81\"]: must be empty when `clusterIP` is not specified"])),
        ];
        for (cluster, spec, want) in rows {
            let mut s = svc(spec.clone());
            let errs = init_ip_families(&mut s, None, cluster);
            match want {
                Ok((policy, families)) => {
                    assert_eq!(messages(&errs), Vec::<String>::new(), "{spec}");
                    assert_eq!(
                        (&s["spec"]["ipFamilyPolicy"], &s["spec"]["ipFamilies"]),
                        (&json!(policy), &families),
                        "{spec}"
                    );
                }
                Err(msgs) => assert_eq!(messages(&errs), msgs, "{spec}"),
            }
        }
    }

    /// Updates: the stored policy is kept, SingleStack downgrades, other policies cannot
    /// drop the secondary, an unchanged PreferDualStack service is left as it is.
    #[test]
    fn init_on_update_table() {
        let dual = svc(
            json!({"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv4", "IPv6"],
            "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5", "fd00::5"]}),
        );
        let mut down = dual.clone();
        down["spec"]["ipFamilyPolicy"] = json!("SingleStack");
        assert!(init_ip_families(&mut down, Some(&dual), DUAL).is_empty());
        assert_eq!(down["spec"]["clusterIPs"], json!(["10.0.0.5"]));
        assert_eq!(down["spec"]["ipFamilies"], json!(["IPv4"]));
        let mut cut = dual.clone();
        cut["spec"]["clusterIPs"] = json!(["10.0.0.5"]);
        cut["spec"]["ipFamilies"] = json!(["IPv4"]);
        assert_eq!(
            messages(&init_ip_families(&mut cut, Some(&dual), DUAL)),
            vec![
                "spec.ipFamilyPolicy: Invalid value: \"PreferDualStack\": must be 'SingleStack' to release the secondary cluster IP",
                "spec.ipFamilyPolicy: Invalid value: \"PreferDualStack\": must be 'SingleStack' to release the secondary IP family",
            ]
        );
        // On a cluster that lost IPv6 an unchanged PreferDualStack service stays.
        let mut same = dual.clone();
        assert!(init_ip_families(&mut same, Some(&dual), V4).is_empty());
        assert_eq!(same, dual);
        // Policy omitted: the stored one.
        let single = svc(
            json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
            "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"]}),
        );
        let mut up = svc(json!({"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"]}));
        assert!(init_ip_families(&mut up, Some(&single), DUAL).is_empty());
        assert_eq!(up["spec"]["ipFamilyPolicy"], json!("SingleStack"));
        // Upgrade: PreferDualStack adds the other family (its IP is allocated).
        let mut up = single.clone();
        up["spec"]["ipFamilyPolicy"] = json!("PreferDualStack");
        assert!(init_ip_families(&mut up, Some(&single), DUAL).is_empty());
        assert_eq!(up["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    }
}
