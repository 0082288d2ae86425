//! The ciphers of upstream's providers, each with upstream's stored layout (after the
//! `k8s:enc:<provider>:v1:<key>:` prefix, which `super` writes and strips):
//!
//! | provider  | layout                                   | authenticated data |
//! |-----------|------------------------------------------|--------------------|
//! | aesgcm    | nonce (12) ‖ ciphertext ‖ GCM tag (16)   | the storage key    |
//! | aescbc    | IV (16) ‖ AES-CBC(plaintext ‖ PKCS#7)    | none               |
//! | secretbox | nonce (24) ‖ Poly1305 tag (16) ‖ XSalsa20 ciphertext (NaCl `secretbox.Seal`) | none |
//!
//! Nonces and IVs come from the operating system's random source. Decryption failures carry
//! upstream's messages, which its users search for.

use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::AesGcm;
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, InnerIvInit};
use crypto_secretbox::XSalsa20Poly1305;
use std::sync::Arc;

type Aes192Gcm = AesGcm<aes::Aes192, U12>;

/// GCM's standard nonce (upstream refuses to run with any other: stored data depends on it).
pub const GCM_NONCE_BYTES: usize = 12;
/// AES's block, the CBC IV.
pub const AES_BLOCK_BYTES: usize = 16;
/// XSalsa20's extended nonce.
pub const SECRETBOX_NONCE_BYTES: usize = 24;
/// Poly1305's tag, stored before the secretbox ciphertext.
pub const SECRETBOX_TAG_BYTES: usize = 16;
/// AES key lengths upstream accepts (AES-128, -192, -256).
pub const AES_KEY_BYTES: [usize; 3] = [16, 24, 32];
/// Secretbox's one key length.
pub const SECRETBOX_KEY_BYTES: [usize; 1] = [32];

const SHORT: &str = "the stored data was shorter than the required size";

/// One key of one provider, ready to seal and open.
#[derive(Clone)]
pub enum Cipher {
    Gcm(Gcm),
    Cbc(Box<Cbc>),
    Secretbox(Box<XSalsa20Poly1305>),
}

/// AES-128 and AES-256 through `ring` (assembly, several times RustCrypto's speed here: a
/// list of 100 encrypted 1 KiB Secrets spent most of its time in RustCrypto's AES and
/// GHASH); AES-192, which `ring` lacks, through RustCrypto.
#[derive(Clone)]
pub enum Gcm {
    Ring(Arc<ring::aead::LessSafeKey>),
    A192(Box<Aes192Gcm>),
}

#[derive(Clone)]
pub enum Cbc {
    A128(aes::Aes128),
    A192(aes::Aes192),
    A256(aes::Aes256),
}

impl Cipher {
    /// An AES-GCM key; `key` has one of `AES_KEY_BYTES` lengths (validated before).
    pub fn aes_gcm(key: &[u8]) -> Cipher {
        let ring_key = |alg| {
            let key = ring::aead::UnboundKey::new(alg, key).expect("validated key length");
            Gcm::Ring(Arc::new(ring::aead::LessSafeKey::new(key)))
        };
        Cipher::Gcm(match key.len() {
            16 => ring_key(&ring::aead::AES_128_GCM),
            24 => Gcm::A192(Box::new(Aes192Gcm::new_from_slice(key).expect("24 bytes"))),
            n => {
                assert_eq!(n, 32, "AES key of {n} bytes passed validation");
                ring_key(&ring::aead::AES_256_GCM)
            }
        })
    }

    /// An AES-CBC key; `key` has one of `AES_KEY_BYTES` lengths (validated before).
    pub fn aes_cbc(key: &[u8]) -> Cipher {
        Cipher::Cbc(Box::new(match key.len() {
            16 => Cbc::A128(aes::Aes128::new_from_slice(key).expect("16 bytes")),
            24 => Cbc::A192(aes::Aes192::new_from_slice(key).expect("24 bytes")),
            n => {
                assert_eq!(n, 32, "AES key of {n} bytes passed validation");
                Cbc::A256(aes::Aes256::new_from_slice(key).expect("32 bytes"))
            }
        }))
    }

    /// A secretbox key of `SECRETBOX_KEY_BYTES` (validated before).
    pub fn secretbox(key: &[u8]) -> Cipher {
        Cipher::Secretbox(Box::new(
            XSalsa20Poly1305::new_from_slice(key).expect("32-byte secretbox key"),
        ))
    }

    /// Appends the sealed form of `plain` to `out`; `aad` is the storage key.
    pub fn seal(&self, aad: &[u8], plain: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Cipher::Gcm(g) => {
                let mut nonce = [0u8; GCM_NONCE_BYTES];
                random(&mut nonce)?;
                out.extend_from_slice(&nonce);
                match g {
                    Gcm::Ring(k) => {
                        // Sealed in place after the nonce: ciphertext, then the tag.
                        let mut sealed = plain.to_vec();
                        k.seal_in_place_append_tag(
                            ring::aead::Nonce::assume_unique_for_key(nonce),
                            ring::aead::Aad::from(aad),
                            &mut sealed,
                        )
                        .map_err(|_| "AES-GCM encryption failed".to_string())?;
                        out.extend_from_slice(&sealed);
                    }
                    Gcm::A192(c) => {
                        let payload = Payload { msg: plain, aad };
                        let sealed = c
                            .encrypt((&nonce).into(), payload)
                            .map_err(|_| "AES-GCM encryption failed".to_string())?;
                        out.extend_from_slice(&sealed);
                    }
                }
            }
            Cipher::Cbc(c) => {
                let mut iv = [0u8; AES_BLOCK_BYTES];
                random(&mut iv).map_err(|_| "unable to read sufficient random bytes")?;
                // PKCS#7: always 1..=16 bytes of padding, each holding the padding length.
                let pad = AES_BLOCK_BYTES - plain.len() % AES_BLOCK_BYTES;
                let mut buf = Vec::with_capacity(plain.len() + pad);
                buf.extend_from_slice(plain);
                buf.resize(plain.len() + pad, pad as u8);
                let sealed = match &**c {
                    Cbc::A128(k) => cbc::Encryptor::inner_iv_init(k.clone(), (&iv).into())
                        .encrypt_padded_vec_mut::<NoPadding>(&buf),
                    Cbc::A192(k) => cbc::Encryptor::inner_iv_init(k.clone(), (&iv).into())
                        .encrypt_padded_vec_mut::<NoPadding>(&buf),
                    Cbc::A256(k) => cbc::Encryptor::inner_iv_init(k.clone(), (&iv).into())
                        .encrypt_padded_vec_mut::<NoPadding>(&buf),
                };
                out.extend_from_slice(&iv);
                out.extend_from_slice(&sealed);
            }
            Cipher::Secretbox(c) => {
                let mut nonce = [0u8; SECRETBOX_NONCE_BYTES];
                random(&mut nonce).map_err(|_| "unable to read sufficient random bytes")?;
                let sealed = c
                    .encrypt((&nonce).into(), plain)
                    .map_err(|_| "secretbox encryption failed".to_string())?;
                out.extend_from_slice(&nonce);
                out.extend_from_slice(&sealed);
            }
        }
        Ok(())
    }

    /// The plaintext of `data` (what `seal` appended), or upstream's error text.
    pub fn open(&self, aad: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Cipher::Gcm(g) => {
                if data.len() < GCM_NONCE_BYTES {
                    return Err(SHORT.into());
                }
                let (nonce, sealed) = data.split_at(GCM_NONCE_BYTES);
                let failed = || "cipher: message authentication failed".to_string();
                match g {
                    Gcm::Ring(k) => {
                        let nonce = ring::aead::Nonce::try_assume_unique_for_key(nonce)
                            .expect("split at the nonce length");
                        let mut buf = sealed.to_vec();
                        let n = k
                            .open_in_place(nonce, ring::aead::Aad::from(aad), &mut buf)
                            .map_err(|_| failed())?
                            .len();
                        buf.truncate(n);
                        Ok(buf)
                    }
                    Gcm::A192(c) => c
                        .decrypt(nonce.into(), Payload { msg: sealed, aad })
                        .map_err(|_| failed()),
                }
            }
            Cipher::Cbc(c) => {
                if data.len() < AES_BLOCK_BYTES {
                    return Err(SHORT.into());
                }
                let (iv, sealed) = data.split_at(AES_BLOCK_BYTES);
                if sealed.len() % AES_BLOCK_BYTES != 0 {
                    return Err("the stored data is not a multiple of the block size".into());
                }
                let iv: &[u8; AES_BLOCK_BYTES] = iv.try_into().expect("split at the block");
                let plain = match &**c {
                    Cbc::A128(k) => cbc::Decryptor::inner_iv_init(k.clone(), iv.into())
                        .decrypt_padded_vec_mut::<NoPadding>(sealed),
                    Cbc::A192(k) => cbc::Decryptor::inner_iv_init(k.clone(), iv.into())
                        .decrypt_padded_vec_mut::<NoPadding>(sealed),
                    Cbc::A256(k) => cbc::Decryptor::inner_iv_init(k.clone(), iv.into())
                        .decrypt_padded_vec_mut::<NoPadding>(sealed),
                }
                .map_err(|_| "the stored data is not a multiple of the block size".to_string())?;
                unpad_pkcs7(plain)
            }
            Cipher::Secretbox(c) => {
                if data.len() < SECRETBOX_NONCE_BYTES + SECRETBOX_TAG_BYTES {
                    return Err(SHORT.into());
                }
                let (nonce, sealed) = data.split_at(SECRETBOX_NONCE_BYTES);
                // Upstream's text for a failed open, odd as it is.
                c.decrypt(nonce.into(), sealed)
                    .map_err(|_| "output array was not large enough for encryption".to_string())
            }
        }
    }
}

/// Removes and checks PKCS#7 padding, with upstream's messages (CBC has no authentication: a
/// wrong key or tampered bytes show up here, or as garbage that fails to parse later).
fn unpad_pkcs7(mut plain: Vec<u8>) -> Result<Vec<u8>, String> {
    let Some(&last) = plain.last() else {
        return Err("invalid PKCS7 data (empty or not padded)".into());
    };
    let pad = last as usize;
    if pad == 0 || pad > plain.len() {
        return Err("invalid PKCS7 data (empty or not padded)".into());
    }
    let size = plain.len() - pad;
    if plain[size..].iter().any(|&b| b != last) {
        return Err("invalid padding on input".into());
    }
    plain.truncate(size);
    Ok(plain)
}

fn random(buf: &mut [u8]) -> Result<(), String> {
    getrandom::fill(buf).map_err(|e| format!("failed to write nonce: {e}"))
}
