//! Service account token keys: the private key that signs (`--service-account-signing-key-file`)
//! and the public keys that verify (`--service-account-key-file`), read from PEM files in the
//! forms upstream accepts (PKCS#1 and PKCS#8 RSA keys, SEC1 and PKCS#8 EC keys on P-256 and
//! P-384, PKIX public keys, certificates). Signing and verification are ring's; this module
//! only moves keys between their encodings: a key's ID is, as upstream's, the unpadded
//! base64url SHA-256 of its PKIX (SubjectPublicKeyInfo) DER, and its JWK is what
//! `/openid/v1/jwks` publishes.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{json, Value};

/// The signature algorithms of service account tokens, as JWS names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    RS256,
    ES256,
    ES384,
}

impl Alg {
    pub fn name(self) -> &'static str {
        match self {
            Alg::RS256 => "RS256",
            Alg::ES256 => "ES256",
            Alg::ES384 => "ES384",
        }
    }

    pub fn from_name(name: &str) -> Option<Alg> {
        match name {
            "RS256" => Some(Alg::RS256),
            "ES256" => Some(Alg::ES256),
            "ES384" => Some(Alg::ES384),
            _ => None,
        }
    }
}

/// A public key that verifies tokens.
#[derive(Clone, Debug)]
pub struct PublicKey {
    pub alg: Alg,
    pub kid: String,
    /// The raw key ring verifies with: a PKCS#1 RSAPublicKey, or an uncompressed EC point.
    raw: Vec<u8>,
    /// The JWK's key members (`n`/`e`, or `crv`/`x`/`y`).
    jwk: Jwk,
}

#[derive(Clone, Debug)]
enum Jwk {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    Ec {
        crv: &'static str,
        x: Vec<u8>,
        y: Vec<u8>,
    },
}

impl PublicKey {
    /// Whether `sig` is this key's signature of `message` under `alg`.
    pub fn verify(&self, alg: Alg, message: &[u8], sig: &[u8]) -> bool {
        if alg != self.alg {
            return false;
        }
        let params: &dyn signature::VerificationAlgorithm = match alg {
            Alg::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
            Alg::ES256 => &signature::ECDSA_P256_SHA256_FIXED,
            Alg::ES384 => &signature::ECDSA_P384_SHA384_FIXED,
        };
        signature::UnparsedPublicKey::new(params, &self.raw)
            .verify(message, sig)
            .is_ok()
    }

    /// The key as `/openid/v1/jwks` lists it (members in go-jose's order).
    pub fn jwk(&self) -> Value {
        let b = |v: &[u8]| URL_SAFE_NO_PAD.encode(v);
        match &self.jwk {
            Jwk::Rsa { n, e } => json!({
                "use": "sig", "kty": "RSA", "kid": self.kid, "alg": self.alg.name(),
                "n": b(n), "e": b(e),
            }),
            Jwk::Ec { crv, x, y } => json!({
                "use": "sig", "kty": "EC", "kid": self.kid, "crv": crv, "alg": self.alg.name(),
                "x": b(x), "y": b(y),
            }),
        }
    }

    fn rsa(pkcs1: &[u8]) -> Result<PublicKey, String> {
        let (n, e) = rsa_components(pkcs1).ok_or("malformed RSA public key")?;
        let spki = der(
            0x30,
            &[
                der(0x30, &[oid(OID_RSA), vec![0x05, 0x00]].concat()),
                bit_string(pkcs1),
            ]
            .concat(),
        );
        Ok(PublicKey {
            alg: Alg::RS256,
            kid: key_id(&spki),
            raw: pkcs1.to_vec(),
            jwk: Jwk::Rsa { n, e },
        })
    }

    fn ec(alg: Alg, point: &[u8]) -> Result<PublicKey, String> {
        let (crv, curve_oid, len) = match alg {
            Alg::ES256 => ("P-256", OID_P256, 32),
            Alg::ES384 => ("P-384", OID_P384, 48),
            Alg::RS256 => unreachable!("an EC key"),
        };
        if point.len() != 1 + 2 * len || point[0] != 0x04 {
            return Err("malformed EC public key (not an uncompressed point)".into());
        }
        let spki = der(
            0x30,
            &[
                der(0x30, &[oid(OID_EC), oid(curve_oid)].concat()),
                bit_string(point),
            ]
            .concat(),
        );
        Ok(PublicKey {
            alg,
            kid: key_id(&spki),
            raw: point.to_vec(),
            jwk: Jwk::Ec {
                crv,
                x: point[1..1 + len].to_vec(),
                y: point[1 + len..].to_vec(),
            },
        })
    }

    /// A PKIX SubjectPublicKeyInfo.
    fn from_spki(spki: &[u8]) -> Result<PublicKey, String> {
        use x509_parser::prelude::FromDer;
        let (_, info) = x509_parser::x509::SubjectPublicKeyInfo::from_der(spki)
            .map_err(|e| format!("malformed public key: {e}"))?;
        let alg_oid = info.algorithm.algorithm.to_id_string();
        let data: &[u8] = &info.subject_public_key.data;
        match alg_oid.as_str() {
            "1.2.840.113549.1.1.1" => PublicKey::rsa(data),
            "1.2.840.10045.2.1" => {
                let curve = info
                    .algorithm
                    .parameters
                    .as_ref()
                    .and_then(|p| p.as_oid().ok())
                    .map(|o| o.to_id_string())
                    .unwrap_or_default();
                match curve.as_str() {
                    "1.2.840.10045.3.1.7" => PublicKey::ec(Alg::ES256, data),
                    "1.3.132.0.34" => PublicKey::ec(Alg::ES384, data),
                    other => Err(format!(
                        "unsupported EC curve {other} (P-256 and P-384 are)"
                    )),
                }
            }
            other => Err(format!(
                "unsupported public key algorithm {other} (RSA and ECDSA are)"
            )),
        }
    }
}

/// The private key that signs tokens, with its public half.
pub struct SigningKey {
    pair: Pair,
    pub public: PublicKey,
    rng: SystemRandom,
}

enum Pair {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// The JWS signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match &self.pair {
            Pair::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &self.rng, message, &mut sig)
                    .expect("RSA signing with a valid key");
                sig
            }
            Pair::Ec(k) => k
                .sign(&self.rng, message)
                .expect("ECDSA signing with a valid key")
                .as_ref()
                .to_vec(),
        }
    }

    fn from_pkcs8(doc: &[u8]) -> Result<SigningKey, String> {
        let rng = SystemRandom::new();
        if let Ok(k) = RsaKeyPair::from_pkcs8(doc) {
            return SigningKey::rsa(k, rng);
        }
        for (alg, params) in [
            (Alg::ES256, &signature::ECDSA_P256_SHA256_FIXED_SIGNING),
            (Alg::ES384, &signature::ECDSA_P384_SHA384_FIXED_SIGNING),
        ] {
            if let Ok(k) = EcdsaKeyPair::from_pkcs8(params, doc, &rng) {
                let public = PublicKey::ec(alg, k.public_key().as_ref())?;
                return Ok(SigningKey {
                    pair: Pair::Ec(k),
                    public,
                    rng,
                });
            }
        }
        Err("unsupported private key (RSA of 2048 bits or more, EC P-256 and P-384 are)".into())
    }

    fn rsa(k: RsaKeyPair, rng: SystemRandom) -> Result<SigningKey, String> {
        let public = PublicKey::rsa(k.public().as_ref())?;
        Ok(SigningKey {
            pair: Pair::Rsa(k),
            public,
            rng,
        })
    }

    /// Reads the first private key of a PEM file.
    pub fn from_pem(text: &str) -> Result<SigningKey, String> {
        for (label, der_bytes) in pem_blocks(text)? {
            match label.as_str() {
                "PRIVATE KEY" => return SigningKey::from_pkcs8(&der_bytes),
                "RSA PRIVATE KEY" => {
                    let k = RsaKeyPair::from_der(&der_bytes)
                        .map_err(|e| format!("malformed RSA private key: {e}"))?;
                    return SigningKey::rsa(k, SystemRandom::new());
                }
                "EC PRIVATE KEY" => {
                    // SEC1: wrapped as PKCS#8 for ring, trying each curve it may be on.
                    for curve in [OID_P256, OID_P384] {
                        let alg = der(0x30, &[oid(OID_EC), oid(curve)].concat());
                        let doc = der(
                            0x30,
                            &[vec![0x02, 0x01, 0x00], alg, der(0x04, &der_bytes)].concat(),
                        );
                        if let Ok(k) = SigningKey::from_pkcs8(&doc) {
                            return Ok(k);
                        }
                    }
                    return Err("unsupported EC private key (P-256 and P-384 are)".into());
                }
                _ => {}
            }
        }
        Err("data does not contain a valid RSA or ECDSA private key".into())
    }

    /// A new P-256 key, as PKCS#8 PEM (what keel writes on first start).
    pub fn generate_pem() -> Result<String, String> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "generating a key failed".to_string())?;
        Ok(pem_encode("PRIVATE KEY", doc.as_ref()))
    }
}

/// Every public key of a PEM file (`--service-account-key-file`): public keys, certificates'
/// keys and private keys' public halves, as upstream reads them.
pub fn public_keys_from_pem(text: &str) -> Result<Vec<PublicKey>, String> {
    let mut keys = Vec::new();
    for (label, der_bytes) in pem_blocks(text)? {
        match label.as_str() {
            "PUBLIC KEY" => keys.push(PublicKey::from_spki(&der_bytes)?),
            "RSA PUBLIC KEY" => keys.push(PublicKey::rsa(&der_bytes)?),
            "CERTIFICATE" => {
                let (_, cert) = x509_parser::parse_x509_certificate(&der_bytes)
                    .map_err(|e| format!("malformed certificate: {e}"))?;
                keys.push(PublicKey::from_spki(cert.public_key().raw)?);
            }
            "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" => {
                let block = pem_encode(&label, &der_bytes);
                keys.push(SigningKey::from_pem(&block)?.public);
            }
            _ => {}
        }
    }
    if keys.is_empty() {
        return Err("data does not contain any valid RSA or ECDSA public keys".into());
    }
    Ok(keys)
}

/// The `(label, DER)` blocks of a PEM text.
fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines().map(str::trim) {
        if let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        {
            current = Some((label.to_string(), String::new()));
        } else if line.starts_with("-----END ") {
            if let Some((label, body)) = current.take() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(body.as_bytes())
                    .map_err(|e| format!("malformed PEM block {label}: {e}"))?;
                out.push((label, bytes));
            }
        } else if let Some((_, body)) = current.as_mut() {
            if !line.contains(':') {
                body.push_str(line);
            }
        }
    }
    Ok(out)
}

fn pem_encode(label: &str, der_bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der_bytes);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn key_id(spki: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, spki))
}

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];

/// One DER element: tag, definite length, content.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|&b| b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn oid(body: &[u8]) -> Vec<u8> {
    der(0x06, body)
}

fn bit_string(bytes: &[u8]) -> Vec<u8> {
    der(0x03, &[&[0u8][..], bytes].concat())
}

/// The modulus and exponent of a PKCS#1 RSAPublicKey (leading zero bytes dropped).
fn rsa_components(pkcs1: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (seq, rest) = der_read(pkcs1, 0x30)?;
    if !rest.is_empty() {
        return None;
    }
    let (n, rest) = der_read(seq, 0x02)?;
    let (e, rest) = der_read(rest, 0x02)?;
    if !rest.is_empty() {
        return None;
    }
    let strip = |v: &[u8]| {
        let i = v.iter().position(|&b| b != 0).unwrap_or(v.len());
        v[i..].to_vec()
    };
    Some((strip(n), strip(e)))
}

/// The content of the DER element with `tag` at the start of `data`, and what follows it.
fn der_read(data: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, data) = data.split_first()?;
    if t != tag {
        return None;
    }
    let (&l, mut data) = data.split_first()?;
    let len = if l < 0x80 {
        l as usize
    } else {
        let k = (l & 0x7f) as usize;
        if k == 0 || k > 4 || data.len() < k {
            return None;
        }
        let n = data[..k].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        data = &data[k..];
        n
    };
    (data.len() >= len).then(|| data.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Generated with `openssl genrsa 2048` (PKCS#1) and `openssl ecparam -genkey -name
    // prime256v1` (SEC1) for these tests only.
    const RSA_PKCS1: &str = include_str!("testdata/rsa.pem");
    const EC_SEC1: &str = include_str!("testdata/ec.pem");
    const EC_PUB: &str = include_str!("testdata/ec.pub.pem");
    const RSA_PUB: &str = include_str!("testdata/rsa.pub.pem");

    #[test]
    fn keys_sign_and_verify_in_every_form() {
        for (private, public) in [(RSA_PKCS1, RSA_PUB), (EC_SEC1, EC_PUB)] {
            let k = SigningKey::from_pem(private).unwrap();
            let sig = k.sign(b"message");
            assert!(k.public.verify(k.public.alg, b"message", &sig));
            assert!(!k.public.verify(k.public.alg, b"massage", &sig));
            let pubs = public_keys_from_pem(public).unwrap();
            assert_eq!(pubs.len(), 1);
            // The same key ID from the PKIX file as from the private key (the ID is the
            // hash of the PKIX DER, so the DER made here is byte for byte openssl's).
            assert_eq!(pubs[0].kid, k.public.kid);
            assert!(pubs[0].verify(k.public.alg, b"message", &sig));
            // A private key file verifies too (its public half).
            let again = public_keys_from_pem(private).unwrap();
            assert_eq!(again[0].kid, k.public.kid);
        }
    }

    #[test]
    fn generated_keys_are_p256_pkcs8() {
        let pem = SigningKey::generate_pem().unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        let k = SigningKey::from_pem(&pem).unwrap();
        assert_eq!(k.public.alg, Alg::ES256);
        let jwk = k.public.jwk();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert_eq!(jwk["x"].as_str().unwrap().len(), 43);
        let rsa = SigningKey::from_pem(RSA_PKCS1).unwrap().public.jwk();
        assert_eq!(rsa["e"], "AQAB");
        assert_eq!(rsa["alg"], "RS256");
    }

    #[test]
    fn bad_key_files_are_refused() {
        assert!(SigningKey::from_pem("").is_err());
        assert!(SigningKey::from_pem(RSA_PUB).is_err());
        assert!(public_keys_from_pem("not pem").is_err());
        assert!(
            public_keys_from_pem("-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----\n")
                .is_err()
        );
        assert!(public_keys_from_pem(
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"
        )
        .is_err());
    }
}
