//! Client certificate subjects with several Organizations.
//!
//! Kubernetes reads every subject `O` of a client certificate as a group, but rcgen keeps one
//! value per attribute type. So a client certificate is issued with a placeholder subject,
//! and its DER is rewritten here: the placeholder `Name` is replaced by one with the real CN
//! and one RDN per Organization, and the TBS certificate is signed again with the CA key.
//! Only the minimal DER (tag, length, value) handling this needs is implemented.

use rcgen::SigningKey;

const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_OID: u8 = 0x06;
const TAG_UTF8_STRING: u8 = 0x0c;
const TAG_BIT_STRING: u8 = 0x03;
/// DER contents of OID 2.5.4.3 (commonName).
const OID_COMMON_NAME: [u8; 3] = [0x55, 0x04, 0x03];
/// DER contents of OID 2.5.4.10 (organizationName).
const OID_ORGANIZATION: [u8; 3] = [0x55, 0x04, 0x0a];

/// Encodes one DER element.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

fn attribute(oid: &[u8], value: &str) -> Vec<u8> {
    let mut seq = tlv(TAG_OID, oid);
    seq.extend(tlv(TAG_UTF8_STRING, value.as_bytes()));
    tlv(TAG_SET, &tlv(TAG_SEQUENCE, &seq))
}

/// The DER `Name` with `CN=cn` followed by one `O=` RDN per organization (the encoding rcgen
/// uses for a single UTF-8 attribute, so `der_name(x, &[])` matches rcgen's output).
pub(crate) fn der_name(cn: &str, orgs: &[String]) -> Vec<u8> {
    let mut rdns = attribute(&OID_COMMON_NAME, cn);
    for org in orgs {
        rdns.extend(attribute(&OID_ORGANIZATION, org));
    }
    tlv(TAG_SEQUENCE, &rdns)
}

/// Reads the element at `pos`: returns (tag, start of contents, end of element).
fn read_tlv(buf: &[u8], pos: usize) -> Result<(u8, usize, usize), String> {
    let err = || "truncated DER".to_string();
    let tag = *buf.get(pos).ok_or_else(err)?;
    let first = *buf.get(pos + 1).ok_or_else(err)?;
    let (len, header) = if first < 0x80 {
        (first as usize, 2)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 {
            return Err("unsupported DER length".to_string());
        }
        let bytes = buf.get(pos + 2..pos + 2 + n).ok_or_else(err)?;
        (
            bytes.iter().fold(0usize, |acc, b| acc << 8 | *b as usize),
            2 + n,
        )
    };
    let end = pos + header + len;
    if end > buf.len() {
        return Err(err());
    }
    Ok((tag, pos + header, end))
}

/// Replaces the one occurrence of `old_name` in the certificate's TBS part by `new_name`
/// and signs the result with `ca_key` (whose algorithm the certificate already names).
pub(crate) fn replace_subject(
    cert_der: &[u8],
    old_name: &[u8],
    new_name: &[u8],
    ca_key: &impl SigningKey,
) -> Result<Vec<u8>, String> {
    let (tag, body, end) = read_tlv(cert_der, 0)?;
    if tag != TAG_SEQUENCE || end != cert_der.len() {
        return Err("not a DER certificate".to_string());
    }
    let (_, tbs_body, tbs_end) = read_tlv(cert_der, body)?;
    let (_, _, alg_end) = read_tlv(cert_der, tbs_end)?;
    let sig_alg = &cert_der[tbs_end..alg_end];
    let tbs = &cert_der[tbs_body..tbs_end];
    let at = tbs
        .windows(old_name.len())
        .position(|w| w == old_name)
        .ok_or("placeholder subject not found")?;
    let mut new_tbs_body = tbs[..at].to_vec();
    new_tbs_body.extend_from_slice(new_name);
    new_tbs_body.extend_from_slice(&tbs[at + old_name.len()..]);
    let new_tbs = tlv(TAG_SEQUENCE, &new_tbs_body);
    let signature = ca_key.sign(&new_tbs).map_err(|e| e.to_string())?;
    let mut bits = vec![0u8]; // no unused bits
    bits.extend(signature);
    let mut cert = new_tbs;
    cert.extend_from_slice(sig_alg);
    cert.extend(tlv(TAG_BIT_STRING, &bits));
    Ok(tlv(TAG_SEQUENCE, &cert))
}

/// PEM-encodes a DER certificate.
pub(crate) fn cert_pem(der: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::with_capacity(der.len() * 4 / 3 + 4);
    for chunk in der.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths() {
        let cases: &[(usize, &[u8])] = &[
            (0, &[0x04, 0x00]),
            (127, &[0x04, 0x7f]),
            (128, &[0x04, 0x81, 0x80]),
            (300, &[0x04, 0x82, 0x01, 0x2c]),
        ];
        for (len, header) in cases {
            let enc = tlv(0x04, &vec![0u8; *len]);
            assert_eq!(&enc[..header.len()], *header, "len {len}");
            assert_eq!(read_tlv(&enc, 0).unwrap(), (0x04, header.len(), enc.len()));
        }
        assert!(read_tlv(&[0x30, 0x05, 0x00], 0).is_err());
    }

    #[test]
    fn pem_matches_known_base64() {
        let pem = cert_pem(b"foob");
        assert_eq!(
            pem,
            "-----BEGIN CERTIFICATE-----\nZm9vYg==\n-----END CERTIFICATE-----\n"
        );
        assert!(cert_pem(b"fooba").contains("\nZm9vYmE=\n"));
        assert!(cert_pem(b"foobar").contains("\nZm9vYmFy\n"));
    }
}
