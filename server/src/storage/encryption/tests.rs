//! The transformer and the configuration, checked against upstream's formats and messages.

use super::*;

const K16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng=="; // "1234567890123456"
const K32A: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes
const K32B: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY="; // 32 other bytes

fn config(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{providers}"
    )
}

fn keyed(kind: &str, keys: &[(&str, &str)]) -> String {
    let mut s = format!("  - {kind}:\n      keys:\n");
    for (name, secret) in keys {
        s.push_str(&format!("      - name: {name}\n        secret: {secret}\n"));
    }
    s
}

fn chain(providers: &str) -> Arc<Chain> {
    let enc = Encryption::parse(config(providers).as_bytes()).expect("valid config");
    enc.chain(b"/core/secrets/ns/a")
        .expect("a resource")
        .clone()
}

const KEY: &[u8] = b"/core/secrets/ns/a";
const PLAIN: &[u8] = br#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}"#;

fn sealed(c: &Chain, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    c.seal(key, PLAIN, &mut out).expect("seal");
    out
}

#[test]
fn every_provider_round_trips_with_upstreams_prefix_and_layout() {
    for (kind, secret, overhead) in [
        ("aesgcm", K32A, 12 + 16),
        ("aesgcm", K16, 12 + 16),
        ("aesgcm", "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0", 12 + 16), // AES-192: RustCrypto
        ("aescbc", K16, 16 + (16 - PLAIN.len() % 16)),
        ("aescbc", K32A, 16 + (16 - PLAIN.len() % 16)),
        ("secretbox", K32A, 24 + 16),
    ] {
        let c = chain(&keyed(kind, &[("key1", secret)]));
        let stored = sealed(&c, KEY);
        let prefix = format!("k8s:enc:{kind}:v1:key1:");
        assert!(stored.starts_with(prefix.as_bytes()), "{kind}");
        assert_eq!(
            stored.len(),
            prefix.len() + PLAIN.len() + overhead,
            "{kind}"
        );
        assert!(
            !stored.windows(8).any(|w| w == b"aHVudGVy"),
            "{kind}: plaintext stored"
        );
        assert_eq!(
            c.open(KEY, &stored).unwrap().as_deref(),
            Some(PLAIN),
            "{kind}"
        );
        // Random nonces: the same value never encrypts twice the same.
        assert_ne!(sealed(&c, KEY), stored, "{kind}");
    }
}

/// The GCM layout is exactly upstream's: nonce, then ciphertext and tag as Go's `Seal`
/// appends them, authenticated with the storage key. Checked by decrypting independently.
#[test]
fn aesgcm_layout_is_nonce_then_sealed_with_the_key_as_additional_data() {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let c = chain(&keyed("aesgcm", &[("key1", K32A)]));
    let stored = sealed(&c, KEY);
    let body = &stored[b"k8s:enc:aesgcm:v1:key1:".len()..];
    let key = config::decode_secret(K32A).expect("base64");
    let gcm = aes_gcm::Aes256Gcm::new_from_slice(&key).unwrap();
    let payload = Payload {
        msg: &body[12..],
        aad: KEY,
    };
    assert_eq!(gcm.decrypt(body[..12].into(), payload).unwrap(), PLAIN);
}

#[test]
fn secretbox_layout_is_nacl_nonce_tag_ciphertext() {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let c = chain(&keyed("secretbox", &[("key1", K32A)]));
    let stored = sealed(&c, KEY);
    let body = &stored[b"k8s:enc:secretbox:v1:key1:".len()..];
    let key = config::decode_secret(K32A).expect("base64");
    let sb = crypto_secretbox::XSalsa20Poly1305::new_from_slice(&key).unwrap();
    assert_eq!(sb.decrypt(body[..24].into(), &body[24..]).unwrap(), PLAIN);
}

#[test]
fn a_value_moved_to_another_key_does_not_open_under_aesgcm() {
    let c = chain(&keyed("aesgcm", &[("key1", K32A)]));
    let stored = sealed(&c, KEY);
    assert_eq!(
        c.open(b"/core/secrets/ns/b", &stored).unwrap_err(),
        "cipher: message authentication failed"
    );
}

#[test]
fn wrong_key_and_tampered_bytes_fail_with_upstreams_messages() {
    for (kind, msg) in [
        ("aesgcm", "cipher: message authentication failed"),
        (
            "secretbox",
            "output array was not large enough for encryption",
        ),
    ] {
        let good = chain(&keyed(kind, &[("key1", K32A)]));
        let wrong = chain(&keyed(kind, &[("key1", K32B)]));
        let stored = sealed(&good, KEY);
        assert_eq!(
            wrong.open(KEY, &stored).unwrap_err(),
            msg,
            "{kind} wrong key"
        );
        let mut tampered = stored.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(
            good.open(KEY, &tampered).unwrap_err(),
            msg,
            "{kind} tampered"
        );
        let short = &stored[..b"k8s:enc::v1:key1:".len() + kind.len() + 3];
        assert_eq!(
            good.open(KEY, short).unwrap_err(),
            "the stored data was shorter than the required size"
        );
    }
    // CBC has no authentication: a wrong key shows up as bad padding (or, 1 time in 256,
    // as garbage that fails to parse later), a cut as a partial block.
    let good = chain(&keyed("aescbc", &[("key1", K32A)]));
    let stored = sealed(&good, KEY);
    assert!(good
        .open(KEY, &stored[..stored.len() - 1])
        .unwrap_err()
        .contains("block size"));
    let wrong = chain(&keyed("aescbc", &[("key1", K32B)]));
    match wrong.open(KEY, &stored) {
        Err(e) => assert!(e.contains("PKCS7") || e.contains("padding"), "{e}"),
        Ok(v) => assert_ne!(v.as_deref(), Some(PLAIN)),
    }
}

#[test]
fn unknown_key_names_and_providers_fail_as_upstream() {
    let key1 = chain(&keyed("aesgcm", &[("key1", K32A)]));
    let key2 = chain(&keyed("aesgcm", &[("key2", K32A)]));
    let stored = sealed(&key1, KEY);
    assert_eq!(
        key2.open(KEY, &stored).unwrap_err(),
        "no matching key was found for the provided AES transformer"
    );
    let sb = chain(&keyed("secretbox", &[("key1", K32A)]));
    assert_eq!(
        sb.open(KEY, &stored).unwrap_err(),
        "no matching prefix found"
    );
    assert_eq!(sb.open(KEY, PLAIN).unwrap_err(), "no matching prefix found");
    let identity = chain("  - identity: {}\n");
    assert_eq!(
        identity.open(KEY, &stored).unwrap_err(),
        "identity transformer tried to read encrypted data"
    );
    assert_eq!(
        identity.open(KEY, PLAIN).unwrap(),
        None,
        "plaintext as stored"
    );
}

/// Rotation as upstream documents it: new key first (writes use it, old values still read),
/// rewrite, old key removed.
#[test]
fn rotation_writes_with_the_first_key_and_reads_with_any() {
    let old = chain(&keyed("aesgcm", &[("key1", K32A)]));
    let both = chain(&keyed("aesgcm", &[("key2", K32B), ("key1", K32A)]));
    let new = chain(&keyed("aesgcm", &[("key2", K32B)]));
    let v1 = sealed(&old, KEY);
    assert_eq!(both.open(KEY, &v1).unwrap().as_deref(), Some(PLAIN));
    let v2 = sealed(&both, KEY);
    assert!(v2.starts_with(b"k8s:enc:aesgcm:v1:key2:"));
    // Read with the second key: stale, so an unchanged update still rewrites it.
    assert!(both.open_with_staleness(KEY, &v1).unwrap().1);
    assert!(!both.open_with_staleness(KEY, &v2).unwrap().1);
    assert_eq!(new.open(KEY, &v2).unwrap().as_deref(), Some(PLAIN));
    assert!(new.open(KEY, &v1).is_err());
    // Migrating to or from encryption: identity before or after a keyed provider.
    let to_plain = chain(&format!(
        "  - identity: {{}}\n{}",
        keyed("aesgcm", &[("key1", K32A)])
    ));
    assert!(to_plain.writes_plaintext());
    assert_eq!(to_plain.open(KEY, &v1).unwrap().as_deref(), Some(PLAIN));
    assert_eq!(to_plain.open(KEY, PLAIN).unwrap(), None);
    let from_plain = chain(&format!(
        "{}  - identity: {{}}\n",
        keyed("aesgcm", &[("key1", K32A)])
    ));
    assert!(!from_plain.writes_plaintext());
    assert_eq!(from_plain.open(KEY, PLAIN).unwrap(), None);
    assert!(
        from_plain.open_with_staleness(KEY, PLAIN).unwrap().1,
        "plaintext gets encrypted"
    );
    assert!(!to_plain.open_with_staleness(KEY, PLAIN).unwrap().1);
}

#[test]
fn resources_match_exactly_then_by_group_then_everything() {
    let enc = Encryption::parse(
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
             - resources: [secrets]\n  providers:\n{}\
             - resources: ['*.apps']\n  providers:\n{}\
             - resources: ['*.*']\n  providers:\n  - identity: {{}}\n",
            keyed("aesgcm", &[("s", K32A)]),
            keyed("secretbox", &[("a", K32A)])
        )
        .as_bytes(),
    )
    .unwrap();
    let prefix = |key: &[u8]| enc.chain(key).unwrap().write_prefix();
    assert_eq!(prefix(b"/core/secrets/ns/a"), "k8s:enc:aesgcm:v1:");
    assert_eq!(prefix(b"/core/secrets/"), "k8s:enc:aesgcm:v1:");
    assert_eq!(prefix(b"/apps/deployments/ns/d"), "k8s:enc:secretbox:v1:");
    assert_eq!(prefix(b"/core/configmaps/ns/c"), "identity");
    assert!(
        enc.chain(b"/core/").is_none(),
        "a prefix spanning resources"
    );
    assert!(enc.chain(b"/").is_none());
}

fn parse_err(yaml: &str) -> String {
    match Encryption::parse(yaml.as_bytes()) {
        Ok(_) => panic!("accepted:\n{yaml}"),
        Err(e) => e,
    }
}

const HEAD: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";

#[test]
fn invalid_configurations_are_refused_with_upstreams_messages() {
    let cases: &[(String, &str)] = &[
        (format!("{HEAD}resources: []\n"), "resources: Required value: at least one resources is required"),
        (
            format!("{HEAD}resources:\n- resources: [secrets]\n"),
            "resources[0].providers: Required value: at least one resources[0].providers is required",
        ),
        (
            config(&keyed("aesgcm", &[("key1", "MTIzNDU2Nzg=")])),
            "resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 8, expected one of [16 24 32]",
        ),
        (
            config(&keyed("secretbox", &[("key1", K16)])),
            "resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]",
        ),
        (
            config(&keyed("aescbc", &[("key1", "not base64!")])),
            "resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded",
        ),
        (
            config(&keyed("aesgcm", &[("", K32A)])),
            "resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key",
        ),
        (
            config("  - aesgcm:\n      keys: []\n"),
            "resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required",
        ),
        (
            config(&format!("  - identity: {{}}\n    aesgcm:\n      keys:\n      - name: k\n        secret: {K32A}\n")),
            "resources[0].providers[0]: Invalid value: {...}: more than one provider specified in a single element, should split into different list elements",
        ),
        (
            format!("{HEAD}resources:\n- resources: [secrets, secrets]\n  providers:\n  - identity: {{}}\n"),
            "resources[0].resources: Invalid value: []string{\"secrets\", \"secrets\"}: the same resource cannot be specified multiple times",
        ),
        (
            format!("{HEAD}resources:\n- resources: [secrets, '*.']\n  providers:\n  - identity: {{}}\n"),
            "resources[0].resources: Invalid value: []string{\"secrets\", \"*.\"}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
        ),
        (
            format!("{HEAD}resources:\n- resources: ['*']\n  providers:\n  - identity: {{}}\n"),
            "resources[0].resources[0]: Invalid value: \"*\": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources",
        ),
        (
            format!("{HEAD}resources:\n- resources: [Secrets]\n  providers:\n  - identity: {{}}\n"),
            "resources[0].resources[0]: Invalid value: \"Secrets\": resource name should not contain capital letters",
        ),
        (
            format!("{HEAD}resources:\n- resources: ['secrets.*']\n  providers:\n  - identity: {{}}\n"),
            "resources[0].resources[0]: Invalid value: \"secrets.*\": encrypting the same resource across groups is not supported",
        ),
        (
            format!("{HEAD}resources:\n- resources: ['*.']\n  providers:\n  - identity: {{}}\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n"),
            "resource \"secrets\" is masked by earlier rule \"*.\"",
        ),
        (
            config("  - kms:\n      apiVersion: v2\n      name: k\n      endpoint: unix:///tmp/k.sock\n"),
            "resources[0].providers[0].kms: the kms provider is not supported by keel (use aesgcm, aescbc, secretbox or identity)",
        ),
        ("kind: EncryptionConfiguration\nresources: []\n".into(), "Object 'apiVersion' is missing"),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: Pod\n".into(),
            "no kind \"Pod\" is registered for version \"apiserver.config.k8s.io/v1\"",
        ),
    ];
    for (yaml, want) in cases {
        assert_eq!(&parse_err(yaml), want, "for:\n{yaml}");
    }
    // Several errors at once, as upstream's aggregate: `[a, b]`.
    let two = parse_err(&format!(
        "{HEAD}resources:\n- resources: []\n  providers: []\n"
    ));
    assert!(
        two.starts_with("[resources[0].resources: Required value"),
        "{two}"
    );
    // A secret never appears in a message.
    let bad = parse_err(&config(&keyed("aesgcm", &[("k", "c2VjcmV0LXNlY3JldA==")])));
    assert!(!bad.contains("c2VjcmV0"), "{bad}");
}

#[test]
fn json_configurations_are_accepted_as_upstream_accepts_them() {
    let json = format!(
        r#"{{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration","resources":[{{"resources":["secrets"],"providers":[{{"aescbc":{{"keys":[{{"name":"k","secret":"{K32A}"}}]}}}},{{"identity":{{}}}}]}}]}}"#
    );
    let enc = Encryption::parse(json.as_bytes()).unwrap();
    assert_eq!(enc.chain(KEY).unwrap().write_prefix(), "k8s:enc:aescbc:v1:");
}
