//! Upstream's `ip_test.go` and `cidr_test.go` cases, with their error text.

use super::super::glue::testing::check;
use cel::Value;

fn t() -> Result<Value, &'static str> {
    Ok(Value::Bool(true))
}

fn f() -> Result<Value, &'static str> {
    Ok(Value::Bool(false))
}

#[test]
fn upstream_ip_cases() {
    check(&[
        (r#"ip("192.168.0.1") == ip("192.168.0.1")"#, t()),
        (
            r#"ip("192.168.0.1.0")"#,
            Err(
                r#"IP Address "192.168.0.1.0" parse error during conversion from string: ParseAddr("192.168.0.1.0"): IPv4 address too long"#,
            ),
        ),
        (r#"isIP("192.168.0.1")"#, t()),
        (r#"isIP("192.168.0.1.0")"#, f()),
        (r#"ip.isCanonical("127.0.0.1")"#, t()),
        (
            r#"ip.isCanonical("127.0.0.1.0")"#,
            Err(
                r#"IP Address "127.0.0.1.0" parse error during conversion from string: ParseAddr("127.0.0.1.0"): IPv4 address too long"#,
            ),
        ),
        (r#"ip("192.168.0.1").family()"#, Ok(Value::Int(4))),
        (r#"ip("0.0.0.0").isUnspecified()"#, t()),
        (r#"ip("127.0.0.1").isUnspecified()"#, f()),
        (r#"ip("127.0.0.1").isLoopback()"#, t()),
        (r#"ip("1.2.3.4").isLoopback()"#, f()),
        (r#"ip("224.0.0.1").isLinkLocalMulticast()"#, t()),
        (r#"ip("224.0.1.1").isLinkLocalMulticast()"#, f()),
        (r#"ip("169.254.169.254").isLinkLocalUnicast()"#, t()),
        (r#"ip("192.168.0.1").isLinkLocalUnicast()"#, f()),
        (r#"ip("192.168.0.1").isGlobalUnicast()"#, t()),
        (r#"ip("255.255.255.255").isGlobalUnicast()"#, f()),
        (r#"ip("2001:db8::68") == ip("2001:0db8:0:0:0:0:0:68")"#, t()),
        (
            r#"ip("2001:db8:::68")"#,
            Err(
                r#"IP Address "2001:db8:::68" parse error during conversion from string: ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit (at ":68")"#,
            ),
        ),
        (r#"isIP("2001:db8::68")"#, t()),
        (r#"isIP("2001:db8:::68")"#, f()),
        (r#"ip.isCanonical("2001:db8::68")"#, t()),
        (r#"ip.isCanonical("2001:DB8::68")"#, f()),
        (
            r#"ip.isCanonical("2001:db8:::68")"#,
            Err(
                r#"IP Address "2001:db8:::68" parse error during conversion from string: ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit (at ":68")"#,
            ),
        ),
        (r#"ip("2001:db8::68").family()"#, Ok(Value::Int(6))),
        (r#"ip("::").isUnspecified()"#, t()),
        (r#"ip("::1").isUnspecified()"#, f()),
        (r#"ip("::1").isLoopback()"#, t()),
        (r#"ip("2001:db8::abcd").isLoopback()"#, f()),
        (r#"ip("ff02::1").isLinkLocalMulticast()"#, t()),
        (r#"ip("fd00::1").isLinkLocalMulticast()"#, f()),
        (r#"ip("fe80::1").isLinkLocalUnicast()"#, t()),
        (r#"ip("fd80::1").isLinkLocalUnicast()"#, f()),
        (r#"ip("2001:db8::abcd").isGlobalUnicast()"#, t()),
        (r#"ip("ff00::1").isGlobalUnicast()"#, f()),
        (
            r#"string(ip("192.168.0.1"))"#,
            Ok(Value::from("192.168.0.1")),
        ),
    ]);
}

/// Upstream's refusals beyond `netip`'s, and `netip`'s own wording of common mistakes.
#[test]
fn ip_refusals() {
    check(&[
        (
            r#"ip("::ffff:1.2.3.4")"#,
            Err(r#"IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed"#),
        ),
        (
            r#"ip("fe80::1%eth0")"#,
            Err(r#"IP address "fe80::1%eth0" with zone value is not allowed"#),
        ),
        (
            r#"ip("010.0.0.1")"#,
            Err(
                r#"IP Address "010.0.0.1" parse error during conversion from string: ParseAddr("010.0.0.1"): IPv4 field has octet with leading zero"#,
            ),
        ),
        (
            r#"ip("1.2.3.256")"#,
            Err(
                r#"IP Address "1.2.3.256" parse error during conversion from string: ParseAddr("1.2.3.256"): IPv4 field has value >255"#,
            ),
        ),
        (
            r#"ip("foo")"#,
            Err(
                r#"IP Address "foo" parse error during conversion from string: ParseAddr("foo"): unable to parse IP"#,
            ),
        ),
        (
            r#"string(ip("2001:db8:0:0:1:0:0:1"))"#,
            Ok(Value::from("2001:db8::1:0:0:1")),
        ),
        (r#"string(ip("0:0:0:0:0:0:0:1"))"#, Ok(Value::from("::1"))),
        (r#"string(ip("1:0:0:0:0:0:0:0"))"#, Ok(Value::from("1::"))),
        (
            r#"string(ip("1:0:1:0:1:0:1:0"))"#,
            Ok(Value::from("1:0:1:0:1:0:1:0")),
        ),
        (r#"string(ip("::1.2.3.4"))"#, Ok(Value::from("::102:304"))),
    ]);
}

#[test]
fn upstream_cidr_cases() {
    check(&[
        (r#"cidr("192.168.0.0/24") == cidr("192.168.0.0/24")"#, t()),
        (
            r#"cidr("192.168.0.0/")"#,
            Err(
                r#"network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after slash: """#,
            ),
        ),
        (
            r#"cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))"#,
            t(),
        ),
        (
            r#"cidr("192.168.0.0/24").containsIP(ip("192.168.1.1"))"#,
            f(),
        ),
        (r#"cidr("192.168.0.0/24").containsIP("192.168.0.1")"#, t()),
        (r#"cidr("192.168.0.0/24").containsIP("192.168.1.1")"#, f()),
        (
            r#"cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))"#,
            t(),
        ),
        (
            r#"cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.1/32"))"#,
            t(),
        ),
        (
            r#"cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23"))"#,
            f(),
        ),
        (
            r#"cidr("192.168.0.0/24").containsCIDR(cidr("192.169.0.1/32"))"#,
            f(),
        ),
        (
            r#"cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")"#,
            t(),
        ),
        (
            r#"cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23")"#,
            f(),
        ),
        (r#"cidr("192.168.0.0/24").ip() == ip("192.168.0.0")"#, t()),
        (
            r#"cidr("192.168.0.0/24").masked() == cidr("192.168.0.0/24")"#,
            t(),
        ),
        (
            r#"cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24")"#,
            t(),
        ),
        (r#"cidr("192.168.0.1/24") == cidr("192.168.0.0/24")"#, f()),
        (
            r#"cidr("192.168.0.0/24").prefixLength()"#,
            Ok(Value::Int(24)),
        ),
        (r#"cidr("2001:db8::/32") == cidr("2001:db8::/32")"#, t()),
        (
            r#"cidr("2001:db8::/")"#,
            Err(
                r#"network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("2001:db8::/"): bad bits after slash: """#,
            ),
        ),
        (
            r#"cidr("2001:db8::/32").containsIP(ip("2001:db8::1"))"#,
            t(),
        ),
        (
            r#"cidr("2001:db8::/32").containsIP(ip("2001:dc8::1"))"#,
            f(),
        ),
        (r#"cidr("2001:db8::/32").containsIP("2001:db8::1")"#, t()),
        (r#"cidr("2001:db8::/32").containsIP("2001:dc8::1")"#, f()),
        (
            r#"cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))"#,
            t(),
        ),
        (
            r#"cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/31"))"#,
            f(),
        ),
        (
            r#"cidr("2001:db8::/32").containsCIDR("2001:db8::/33")"#,
            t(),
        ),
        (
            r#"cidr("2001:db8::/32").containsCIDR("2001:db8::/31")"#,
            f(),
        ),
        (r#"cidr("2001:db8::/32").ip() == ip("2001:db8::")"#, t()),
        (
            r#"cidr("2001:db8::/32").masked() == cidr("2001:db8::/32")"#,
            t(),
        ),
        (
            r#"cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32")"#,
            t(),
        ),
        (
            r#"cidr("2001:db8::/32").prefixLength()"#,
            Ok(Value::Int(32)),
        ),
        (
            r#"string(cidr("192.168.0.0/24"))"#,
            Ok(Value::from("192.168.0.0/24")),
        ),
        (
            r#"isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0/33") && !isCIDR("10.0.0.0/08")"#,
            t(),
        ),
        (r#"cidr("10.0.0.0/8").containsIP("::1")"#, f()),
        (
            r#"cidr("10.0.0.0/33")"#,
            Err(
                r#"network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range"#,
            ),
        ),
    ]);
}
