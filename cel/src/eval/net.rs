//! Upstream's IP and CIDR libraries (`ip`, `isIP`, `ip.isCanonical`, `family`, the `is*`
//! predicates, `cidr`, `isCIDR`, `containsIP`, `containsCIDR`, `masked`, `prefixLength`,
//! `string`), which are Go's `net/netip` with upstream's refusals: no zones, no IPv4-mapped
//! IPv6 addresses. `netip` refuses IPv4 octets with leading zeros, as does this parser.
//!
//! Parsing is hand-written to follow `netip.ParseAddr` / `ParsePrefix` step by step: their
//! error text (`ParseAddr("1.2.3.4.5"): IPv4 address too long`) is part of upstream's answer,
//! and `std::net` words its errors otherwise.

use super::glue::{fail, go_quote, no_overload, opaque_at, out, string_at, values};
use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::sync::Arc;

const IP_TYPE: &str = "net.IP";
const CIDR_TYPE: &str = "net.CIDR";

/// An address: 4 bytes (IPv4) or 16 (IPv6), without zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ip {
    bytes: [u8; 16],
    v4: bool,
}

/// A prefix as written: the address is not masked (`192.168.0.1/24` keeps its `.1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    ip: Ip,
    bits: u8,
}

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_TYPE
    }
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_TYPE
    }
}

fn ip_ty() -> Type {
    Type::new_opaque_type(IP_TYPE)
}

fn cidr_ty() -> Type {
    Type::new_opaque_type(CIDR_TYPE)
}

pub fn declare(env: &mut Env) -> Result<(), DeclarationError> {
    let ip = ip_ty;
    let cidr = cidr_ty;
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        is_canonical,
    )?;
    env.add_member_overload("family", "ip_family", ip(), vec![], family)?;
    for (name, id, f) in [
        ("isUnspecified", "ip_is_unspecified", is_unspecified as Pred),
        ("isLoopback", "ip_is_loopback", is_loopback),
        (
            "isLinkLocalMulticast",
            "ip_is_link_local_multicast",
            is_link_local_multicast,
        ),
        (
            "isLinkLocalUnicast",
            "ip_is_link_local_unicast",
            is_link_local_unicast,
        ),
        ("isGlobalUnicast", "ip_is_global_unicast", is_global_unicast),
    ] {
        env.add_member_overload(name, id, ip(), vec![], f)?;
    }
    env.add_overload("string", "ip_to_string", vec![ip()], ip_string)?;
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        cidr(),
        vec![ip()],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr(),
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        cidr(),
        vec![cidr()],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr(),
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        cidr(),
        vec![],
        prefix_length,
    )?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], cidr_string)
}

type Pred = for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError>;

/// `netip`'s `parseAddrError` text.
fn addr_error(input: &str, msg: &str, at: Option<&str>) -> String {
    match at {
        Some(at) if !at.is_empty() => format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(input),
            go_quote(at)
        ),
        _ => format!("ParseAddr({}): {msg}", go_quote(input)),
    }
}

/// `netip.ParseAddr`: the address and its zone (`""` if none).
fn parse_addr(s: &str) -> Result<(Ip, &str), String> {
    for c in s.bytes() {
        match c {
            b'.' => return parse_v4(s, s).map(|b| (v4(b), "")),
            b':' => return parse_v6(s),
            b'%' => return Err(addr_error(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", None))
}

fn v4(b: [u8; 4]) -> Ip {
    let mut bytes = [0; 16];
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    bytes[12..].copy_from_slice(&b);
    Ip { bytes, v4: true }
}

/// `netip`'s `parseIPv4Fields` of `s`, a part of `input`.
fn parse_v4(input: &str, s: &str) -> Result<[u8; 4], String> {
    let b = s.as_bytes();
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for i in 0..b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                if digits == 1 && val == 0 {
                    return Err(addr_error(
                        input,
                        "IPv4 field has octet with leading zero",
                        None,
                    ));
                }
                val = val * 10 + u32::from(c - b'0');
                digits += 1;
                if val > 255 {
                    return Err(addr_error(input, "IPv4 field has value >255", None));
                }
            }
            b'.' => {
                if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                    return Err(addr_error(
                        input,
                        "IPv4 field must have at least one digit",
                        Some(&s[i..]),
                    ));
                }
                if pos == 3 {
                    return Err(addr_error(input, "IPv4 address too long", None));
                }
                fields[pos] = val as u8;
                pos += 1;
                val = 0;
                digits = 0;
            }
            _ => {
                return Err(addr_error(
                    input,
                    "unexpected character",
                    Some(s.get(i..).unwrap_or("")),
                ))
            }
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", None));
    }
    fields[3] = val as u8;
    Ok(fields)
}

/// `netip`'s `parseIPv6`.
fn parse_v6(input: &str) -> Result<(Ip, &str), String> {
    let err = |msg: &str, at: Option<&str>| Err(addr_error(input, msg, at));
    let (mut s, zone) = match input.find('%') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, ""),
    };
    if input.contains('%') && zone.is_empty() {
        return err("zone must be a non-empty string", None);
    }
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok((
                Ip {
                    bytes: ip,
                    v4: false,
                },
                zone,
            ));
        }
    }
    let mut i = 0;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < b.len() {
            let Some(d) = (b[off] as char).to_digit(16) else {
                break;
            };
            acc = (acc << 4) + d;
            if off > 3 {
                return err("each group must have 4 or less digits", Some(s));
            }
            if acc > 0xffff {
                return err("IPv6 field has value >=2^16", Some(s));
            }
            off += 1;
        }
        if off == 0 {
            return err(
                "each colon-separated field must have at least one digit",
                Some(s),
            );
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return err(
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                );
            }
            if i + 4 > 16 {
                return err(
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                );
            }
            let f = parse_v4(input, s)?;
            ip[i..i + 4].copy_from_slice(&f);
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return err("unexpected character, want colon", Some(s));
        } else if s.len() == 1 {
            return err("colon must be followed by more characters", Some(s));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return err("multiple :: in address", Some(s));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return err("trailing garbage after address", Some(s));
    }
    if i < 16 {
        let Some(e) = ellipsis else {
            return err("address string too short", None);
        };
        let n = 16 - i;
        ip.copy_within(e..i, e + n);
        ip[e..e + n].fill(0);
    } else if ellipsis.is_some() {
        return err("the :: must expand to at least one field of zeros", None);
    }
    Ok((
        Ip {
            bytes: ip,
            v4: false,
        },
        zone,
    ))
}

impl Ip {
    fn is_4in6(&self) -> bool {
        !self.v4 && self.bytes[..10] == [0; 10] && self.bytes[10..12] == [0xff, 0xff]
    }

    /// The address bytes: 4 for IPv4, 16 for IPv6.
    fn octets(&self) -> &[u8] {
        if self.v4 {
            &self.bytes[12..]
        } else {
            &self.bytes
        }
    }

    fn bit_len(&self) -> u8 {
        if self.v4 {
            32
        } else {
            128
        }
    }

    fn is_unspecified(&self) -> bool {
        self.octets().iter().all(|&b| b == 0)
    }

    fn is_loopback(&self) -> bool {
        if self.v4 {
            self.bytes[12] == 127
        } else {
            self.bytes[..15] == [0; 15] && self.bytes[15] == 1
        }
    }

    fn is_multicast(&self) -> bool {
        if self.v4 {
            self.bytes[12] & 0xf0 == 0xe0
        } else {
            self.bytes[0] == 0xff
        }
    }

    fn is_link_local_multicast(&self) -> bool {
        if self.v4 {
            self.bytes[12..15] == [224, 0, 0]
        } else {
            self.bytes[0] == 0xff && self.bytes[1] & 0x0f == 0x02
        }
    }

    fn is_link_local_unicast(&self) -> bool {
        if self.v4 {
            self.bytes[12..14] == [169, 254]
        } else {
            self.bytes[0] == 0xfe && self.bytes[1] & 0xc0 == 0x80
        }
    }

    fn is_global_unicast(&self) -> bool {
        if self.v4 && self.bytes[12..] == [255; 4] {
            return false;
        }
        !self.is_unspecified()
            && !self.is_loopback()
            && !self.is_multicast()
            && !self.is_link_local_unicast()
    }

    /// The first `bits` bits kept, the rest zero.
    fn masked(&self, bits: u8) -> Ip {
        let mut m = *self;
        let start = if self.v4 { 12 } else { 0 };
        for (i, b) in m.bytes[start..].iter_mut().enumerate() {
            let keep = usize::from(bits).saturating_sub(i * 8).min(8);
            *b &= (0xff00u16 >> keep) as u8;
        }
        m
    }

    /// `netip.Addr.String`: dotted IPv4; IPv6 in RFC 5952 form (the first longest run of
    /// two or more zero groups as `::`).
    fn text(&self) -> String {
        if self.v4 {
            let b = &self.bytes[12..];
            return format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]);
        }
        let groups: Vec<u16> = self
            .bytes
            .chunks(2)
            .map(|c| u16::from(c[0]) << 8 | u16::from(c[1]))
            .collect();
        let (mut best, mut best_len) = (usize::MAX, 1);
        let mut i = 0;
        while i < 8 {
            let run = groups[i..].iter().take_while(|&&g| g == 0).count();
            if run > best_len {
                (best, best_len) = (i, run);
            }
            i += run.max(1);
        }
        let mut s = String::new();
        let mut i = 0;
        while i < 8 {
            if i == best {
                s.push_str("::");
                i += best_len;
                continue;
            }
            if i > 0 && !s.ends_with(':') {
                s.push(':');
            }
            s.push_str(&format!("{:x}", groups[i]));
            i += 1;
        }
        s
    }
}

/// Upstream's `parseIPAddr`.
fn parse_ip(s: &str) -> Result<Ip, String> {
    let (ip, zone) = parse_addr(s).map_err(|e| {
        format!(
            "IP Address {} parse error during conversion from string: {e}",
            go_quote(s)
        )
    })?;
    if !zone.is_empty() {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            go_quote(s)
        ));
    }
    if ip.is_4in6() {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(s)
        ));
    }
    Ok(ip)
}

/// `netip.ParsePrefix`, its error text.
fn parse_prefix(s: &str) -> Result<Cidr, String> {
    let err = |msg: &str| Err(format!("netip.ParsePrefix({}): {msg}", go_quote(s)));
    let Some(i) = s.rfind('/') else {
        return err("no '/'");
    };
    let (ip, zone) = match parse_addr(&s[..i]) {
        Ok(x) => x,
        Err(e) => return err(&e),
    };
    if !ip.v4 && !zone.is_empty() {
        return err("IPv6 zones cannot be present in a prefix");
    }
    let bits_str = &s[i + 1..];
    let bad = || err(&format!("bad bits after slash: {}", go_quote(bits_str)));
    if bits_str.len() > 1 && !matches!(bits_str.as_bytes()[0], b'1'..=b'9') {
        return bad();
    }
    // Go's `strconv.Atoi`: an optional sign, then digits.
    let digits = bits_str.strip_prefix(['+', '-']).unwrap_or(bits_str);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return bad();
    }
    let Ok(bits) = bits_str.parse::<i64>() else {
        return bad();
    };
    if bits < 0 || bits > i64::from(ip.bit_len()) {
        return err("prefix length out of range");
    }
    Ok(Cidr {
        ip,
        bits: bits as u8,
    })
}

/// Upstream's `parseCIDR` (its message says "during conversion" twice, as upstream's does).
fn parse_cidr(s: &str) -> Result<Cidr, String> {
    let c = parse_prefix(s).map_err(|e| {
        format!("network address parse error during conversion from string: network address parse error during conversion from string: {e}")
    })?;
    if c.ip.is_4in6() {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(s)
        ));
    }
    Ok(c)
}

impl Cidr {
    fn contains(&self, ip: &Ip) -> bool {
        ip.v4 == self.ip.v4 && ip.masked(self.bits) == self.ip.masked(self.bits)
    }

    /// `netip.Prefix.Overlaps`.
    fn overlaps(&self, o: &Cidr) -> bool {
        let bits = self.bits.min(o.bits);
        self.ip.v4 == o.ip.v4 && self.ip.masked(bits) == o.ip.masked(bits)
    }
}

fn ip_value(ip: Ip) -> Value {
    Value::Opaque(Arc::new(ip))
}

fn cidr_value(c: Cidr) -> Value {
    Value::Opaque(Arc::new(c))
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "ip")?;
    out(ip_value(parse_ip(&s).map_err(|e| fail("ip", e))?))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "isIP")?;
    out(Value::Bool(parse_ip(&s).is_ok()))
}

fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "ip.isCanonical")?;
    let ip = parse_ip(&s).map_err(|e| fail("ip.isCanonical", e))?;
    out(Value::Bool(ip.text() == s))
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let ip = opaque_at::<Ip>(&args, 0, "family")?;
    out(Value::Int(if ip.v4 { 4 } else { 6 }))
}

fn predicate<'b, 'v>(
    args: &[CowVal<'b, 'v>],
    f: &str,
    p: fn(&Ip) -> bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::Bool(p(&opaque_at::<Ip>(args, 0, f)?)))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(&args, "isUnspecified", Ip::is_unspecified)
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(&args, "isLoopback", Ip::is_loopback)
}

fn is_link_local_multicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(&args, "isLinkLocalMulticast", Ip::is_link_local_multicast)
}

fn is_link_local_unicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(&args, "isLinkLocalUnicast", Ip::is_link_local_unicast)
}

fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(&args, "isGlobalUnicast", Ip::is_global_unicast)
}

fn ip_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::from(opaque_at::<Ip>(&args, 0, "string")?.text()))
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "cidr")?;
    out(cidr_value(parse_cidr(&s).map_err(|e| fail("cidr", e))?))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_at(&args, 0, "isCIDR")?;
    out(Value::Bool(parse_cidr(&s).is_ok()))
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let f = "containsIP";
    let c = opaque_at::<Cidr>(&args, 0, f)?;
    let ip = match values(&args, f)?.get(1) {
        Some(Value::String(s)) => parse_ip(s).map_err(|e| fail(f, e))?,
        Some(Value::Opaque(o)) => *o.downcast_ref::<Ip>().ok_or_else(|| no_overload(f))?,
        _ => return Err(no_overload(f)),
    };
    out(Value::Bool(c.contains(&ip)))
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let f = "containsCIDR";
    let c = opaque_at::<Cidr>(&args, 0, f)?;
    let other = match values(&args, f)?.get(1) {
        Some(Value::String(s)) => parse_cidr(s).map_err(|e| fail(f, e))?,
        Some(Value::Opaque(o)) => *o.downcast_ref::<Cidr>().ok_or_else(|| no_overload(f))?,
        _ => return Err(no_overload(f)),
    };
    out(Value::Bool(c.overlaps(&other) && c.bits <= other.bits))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(ip_value(opaque_at::<Cidr>(&args, 0, "ip")?.ip))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let c = opaque_at::<Cidr>(&args, 0, "masked")?;
    out(cidr_value(Cidr {
        ip: c.ip.masked(c.bits),
        bits: c.bits,
    }))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Value::Int(i64::from(
        opaque_at::<Cidr>(&args, 0, "prefixLength")?.bits,
    )))
}

fn cidr_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let c = opaque_at::<Cidr>(&args, 0, "string")?;
    out(Value::from(format!("{}/{}", c.ip.text(), c.bits)))
}

#[cfg(test)]
mod tests;
