//! A CRD rule using upstream's Kubernetes CEL libraries (URL, IP, CIDR, format, semver) runs
//! on a custom resource: passing objects give no cause, failing ones name the rule, and an
//! argument the library refuses gives the library's error text.

use keel_apiext::Schema;
use serde_json::{json, Value};

fn schema() -> Schema {
    Schema::compile(&json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {
            "endpoint": {"type": "string", "maxLength": 100},
            "addr": {"type": "string", "maxLength": 40},
            "net": {"type": "string", "maxLength": 40},
            "name": {"type": "string", "maxLength": 63},
            "version": {"type": "string", "maxLength": 20}
        },
        "x-kubernetes-validations": [
            {"rule": "isURL(self.endpoint) && ip(self.addr).family() == 4"},
            {"rule": "cidr(self.net).containsIP(self.addr)", "message": "addr outside net"},
            {"rule": "!format.dns1123Label().validate(self.name).hasValue()", "messageExpression": "format.dns1123Label().validate(self.name).value()[0]"},
            {"rule": "semver(self.version, true).isGreaterThan(semver('1.0.0'))"},
            {"rule": "url(self.endpoint).getScheme() == 'https'"}
        ]
    }}}))
    .expect("schema compiles")
}

fn obj(spec: Value) -> Value {
    json!({"apiVersion": "c.example.com/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": spec})
}

fn causes(s: &Schema, spec: Value) -> Vec<String> {
    s.validate(&obj(spec))
        .into_iter()
        .map(|c| format!("{}|{}", c.field, c.message))
        .collect()
}

#[test]
fn passing_object_has_no_causes() {
    let spec = json!({"endpoint": "https://example.com/path", "addr": "10.0.0.1",
                      "net": "10.0.0.0/8", "name": "my-name", "version": "v1.2"});
    assert_eq!(causes(&schema(), spec), Vec::<String>::new());
}

#[test]
fn failing_object_names_each_rule() {
    let spec = json!({"endpoint": "http://example.com/", "addr": "2001:db8::1",
                      "net": "10.0.0.0/8", "name": "Not A Label", "version": "0.9.0"});
    assert_eq!(
        causes(&schema(), spec),
        vec![
            "spec|Invalid value: failed rule: isURL(self.endpoint) && ip(self.addr).family() == 4",
            "spec|Invalid value: addr outside net",
            "spec|Invalid value: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec|Invalid value: failed rule: semver(self.version, true).isGreaterThan(semver('1.0.0'))",
            "spec|Invalid value: failed rule: url(self.endpoint).getScheme() == 'https'",
        ]
    );
}

#[test]
fn refused_argument_gives_the_library_error() {
    let spec = json!({"endpoint": "https://example.com/", "addr": "10.0.0.1.5",
                      "net": "10.0.0.0/8", "name": "ok", "version": "1.2.3"});
    let got = causes(&schema(), spec);
    assert!(
        got.iter().any(|c| c.contains(r#"IP Address "10.0.0.1.5" parse error during conversion from string: ParseAddr("10.0.0.1.5"): IPv4 address too long evaluating rule: isURL(self.endpoint) && ip(self.addr).family() == 4"#)),
        "{got:#?}"
    );
}
