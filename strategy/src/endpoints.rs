//! core/v1 Endpoints validation, as upstream v1.36 answers it (observed side by side): each
//! subset has addresses, every address a usable IP (not unspecified, loopback or link-local),
//! ports numbered and, when there are several, named.

use crate::errors::FieldErr;
use keel_api::names;
use serde_json::Value;
use std::net::IpAddr;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// The rules of an Endpoints object's subsets.
pub fn validate(obj: &Value) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let subsets = obj.get("subsets").and_then(Value::as_array);
    for (i, subset) in subsets.into_iter().flatten().enumerate() {
        let path = format!("subsets[{i}]");
        let list = |key: &str| {
            subset
                .get(key)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        let (ready, not_ready) = (list("addresses"), list("notReadyAddresses"));
        if ready.is_empty() && not_ready.is_empty() {
            errs.push(FieldErr::required(
                &path,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (key, addresses) in [("addresses", ready), ("notReadyAddresses", not_ready)] {
            for (j, a) in addresses.iter().enumerate() {
                errs.extend(address(a, &format!("{path}.{key}[{j}]")));
            }
        }
        let ports = list("ports");
        for (j, p) in ports.iter().enumerate() {
            errs.extend(port(p, &format!("{path}.ports[{j}]"), ports.len() > 1));
        }
    }
    errs
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn address(a: &Value, path: &str) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let hostname = text(a, "hostname");
    if !hostname.is_empty() {
        for msg in names::is_dns1123_label(hostname) {
            errs.push(FieldErr::invalid(
                &format!("{path}.hostname"),
                hostname,
                &msg,
            ));
        }
    }
    let node = text(a, "nodeName");
    if !node.is_empty() {
        for msg in names::is_dns1123_subdomain(node) {
            errs.push(FieldErr::invalid(&format!("{path}.nodeName"), node, &msg));
        }
    }
    let field = format!("{path}.ip");
    let ip = text(a, "ip");
    for msg in ip_errors(ip) {
        errs.push(FieldErr::invalid(&field, ip, &msg));
    }
    errs
}

/// Why `ip` cannot be an endpoint's address; empty when it can.
pub fn ip_errors(ip: &str) -> Vec<String> {
    let Ok(parsed) = ip.parse::<IpAddr>() else {
        return vec![
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into(),
            "must be a valid IP address".into(),
        ];
    };
    let v6_link_local = |s: &[u16; 8]| s[0] & 0xffc0 == 0xfe80;
    let v6_link_local_multicast = |s: &[u16; 8]| s[0] & 0xff0f == 0xff02;
    let (unspecified, loopback, link_local, link_local_multicast) = match parsed {
        IpAddr::V4(v4) => (
            v4.is_unspecified(),
            v4.is_loopback(),
            v4.is_link_local(),
            v4.octets()[..3] == [224, 0, 0],
        ),
        IpAddr::V6(v6) => (
            v6.is_unspecified(),
            v6.is_loopback(),
            v6_link_local(&v6.segments()),
            v6_link_local_multicast(&v6.segments()),
        ),
    };
    let mut errs = Vec::new();
    if unspecified {
        errs.push(format!("may not be unspecified ({ip})"));
    }
    if loopback {
        errs.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".into());
    }
    if link_local {
        errs.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".into());
    }
    if link_local_multicast {
        errs.push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into());
    }
    errs
}

fn port(p: &Value, path: &str, several: bool) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let name = text(p, "name");
    let name_path = format!("{path}.name");
    if name.is_empty() {
        if several {
            errs.push(FieldErr::required(&name_path, ""));
        }
    } else {
        for msg in names::is_dns1123_label(name) {
            errs.push(FieldErr::invalid(&name_path, name, &msg));
        }
    }
    let number = p.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&number) {
        errs.push(FieldErr::invalid(
            &format!("{path}.port"),
            number,
            "must be between 1 and 65535, inclusive",
        ));
    }
    let protocol = text(p, "protocol");
    if protocol.is_empty() {
        errs.push(FieldErr::required(&format!("{path}.protocol"), ""));
    } else if !PROTOCOLS.contains(&protocol) {
        errs.push(FieldErr::not_supported(
            &format!("{path}.protocol"),
            protocol,
            PROTOCOLS,
        ));
    }
    if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
        for msg in names::is_qualified_name(app) {
            errs.push(FieldErr::invalid(&format!("{path}.appProtocol"), app, &msg));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(subsets: Value) -> Vec<String> {
        let obj = json!({"apiVersion": "v1", "kind": "Endpoints", "subsets": subsets});
        validate(&obj).into_iter().map(|e| e.message).collect()
    }

    const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

    /// Recorded from upstream v1.36.2 (protocols as defaulting leaves them).
    #[test]
    fn rows() {
        assert!(messages(json!([{"addresses": [{"ip": "10.1.2.3"}],
            "ports": [{"port": 80, "protocol": "TCP"}]}]))
        .is_empty());
        assert_eq!(
            messages(json!([{"addresses": [{"ip": "10.1.2.3"}],
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 81, "name": "b", "protocol": "TCP"}]}])),
            vec!["subsets[0].ports[0].name: Required value"]
        );
        assert_eq!(
            messages(json!([{"addresses": [{"ip": "10.1.2.3"}],
                "ports": [{"port": 0, "name": "Bad_", "protocol": "TCP"},
                          {"port": 81, "name": "Bad_", "protocol": "XX"}]}])),
            vec![
                format!("subsets[0].ports[0].name: Invalid value: \"Bad_\": {LABEL}"),
                "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                format!("subsets[0].ports[1].name: Invalid value: \"Bad_\": {LABEL}"),
                "subsets[0].ports[1].protocol: Unsupported value: \"XX\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
            ]
        );
        let got = messages(
            json!([{"addresses": [{"ip": "169.254.1.1", "hostname": "A_b"}],
            "notReadyAddresses": [{"ip": "224.0.0.1"}, {"ip": "0.0.0.0"}],
            "ports": [{"port": 70000, "protocol": "TCP"}]}]),
        );
        assert_eq!(
            got,
            vec![
                format!("subsets[0].addresses[0].hostname: Invalid value: \"A_b\": {LABEL}"),
                "subsets[0].addresses[0].ip: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)".into(),
                "subsets[0].notReadyAddresses[0].ip: Invalid value: \"224.0.0.1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into(),
                "subsets[0].notReadyAddresses[1].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)".into(),
                "subsets[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive".into(),
            ]
        );
        assert_eq!(
            messages(json!([{"ports": [{"port": 1, "protocol": "TCP"}]}])),
            vec!["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"]
        );
        assert_eq!(
            messages(json!([{"addresses": [{"ip": "fd00::1"}, {"ip": "::1"}, {"ip": "fe80::1"}],
                "ports": [{"port": 1, "protocol": "TCP"}]}])),
            vec![
                "subsets[0].addresses[1].ip: Invalid value: \"::1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "subsets[0].addresses[2].ip: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
            ]
        );
        assert_eq!(
            messages(json!([{"addresses": [{"ip": "bad"}], "ports": [{"port": 1, "protocol": "TCP"}]}])),
            vec![
                "subsets[0].addresses[0].ip: Invalid value: \"bad\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "subsets[0].addresses[0].ip: Invalid value: \"bad\": must be a valid IP address",
            ]
        );
    }
}
