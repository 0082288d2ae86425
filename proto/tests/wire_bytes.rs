//! Decoding of hand-assembled bodies (bytes derived from the protobuf encoding rules, not
//! from this crate's encoder), and rejection of malformed ones.

use keel_proto::{decode, encode, ProtoError};
use proptest::prelude::*;
use serde_json::json;

/// A ConfigMap written out field by field.
fn configmap_body() -> Vec<u8> {
    let mut b = b"k8s\0".to_vec();
    // Unknown.typeMeta (1): apiVersion (1) "v1", kind (2) "ConfigMap".
    b.extend([0x0a, 15, 0x0a, 2]);
    b.extend(b"v1");
    b.extend([0x12, 9]);
    b.extend(b"ConfigMap");
    // Unknown.raw (2): the ConfigMap message, 51 bytes.
    b.extend([0x12, 51]);
    // metadata (1), 30 bytes: name (1) "cm", namespace (3) "ns", creationTimestamp (8)
    // {seconds (1) 1714564800, nanos (2) 0 (Go writes it)}, labels (11) {"app": "web"}.
    b.extend([0x0a, 30, 0x0a, 2, b'c', b'm', 0x1a, 2, b'n', b's']);
    b.extend([0x42, 8, 0x08, 0xc0, 0xdd, 0xc8, 0xb1, 0x06, 0x10, 0x00]);
    b.extend([
        0x5a, 10, 0x0a, 3, b'a', b'p', b'p', 0x12, 3, b'w', b'e', b'b',
    ]);
    // data (2) {"k": "v"}, binaryData (3) {"b": [0xff, 0x00]}, immutable (4) true.
    b.extend([0x12, 6, 0x0a, 1, b'k', 0x12, 1, b'v']);
    b.extend([0x1a, 7, 0x0a, 1, b'b', 0x12, 2, 0xff, 0x00]);
    b.extend([0x20, 0x01]);
    // contentEncoding (3) and contentType (4), empty as Go writes them.
    b.extend([0x1a, 0, 0x22, 0]);
    b
}

#[test]
fn hand_assembled_configmap_decodes() {
    let got = decode(&configmap_body()).expect("decodes");
    let want = json!({
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cm", "namespace": "ns", "creationTimestamp": "2024-05-01T12:00:00Z", "labels": {"app": "web"}},
        "immutable": true, "data": {"k": "v"}, "binaryData": {"b": "/wA="}
    });
    assert_eq!(got, want);
    // Go field order: kind, apiVersion, metadata, immutable, data, binaryData.
    let keys: Vec<&String> = got.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        [
            "kind",
            "apiVersion",
            "metadata",
            "immutable",
            "data",
            "binaryData"
        ]
    );
    // And our encoder writes exactly these bytes back.
    assert_eq!(encode(&want).expect("encodes"), configmap_body());
}

#[test]
fn hand_assembled_lease_with_microtime_and_negative_int32_decodes() {
    let mut b = b"k8s\0".to_vec();
    b.extend([0x0a, 31, 0x0a, 22]);
    b.extend(b"coordination.k8s.io/v1");
    b.extend([0x12, 5]);
    b.extend(b"Lease");
    b.extend([0x12, 37]); // raw: Lease, 37 bytes (contentEncoding/contentType omitted)
    b.extend([0x0a, 3, 0x0a, 1, b'l']); // metadata {name "l"}
    b.extend([0x12, 30]); // spec, 30 bytes
    b.extend([0x0a, 2, b'n', b'1']); // holderIdentity
    b.extend([0x10, 40]); // leaseDurationSeconds
                          // acquireTime {seconds 1714564800, nanos 123456000}
    b.extend([
        0x1a, 11, 0x08, 0xc0, 0xdd, 0xc8, 0xb1, 0x06, 0x10, 0x80, 0x94, 0xef, 0x3a,
    ]);
    // leaseTransitions -1: int32 negatives are sign-extended 10-byte varints.
    b.extend([
        0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ]);
    let got = decode(&b).expect("decodes");
    let want = json!({
        "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "l"},
        "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "acquireTime": "2024-05-01T12:00:00.123456Z", "leaseTransitions": -1}
    });
    assert_eq!(got, want);
}

#[test]
fn wrong_prefix_and_short_bodies_are_rejected() {
    let cases: [(&[u8], &str); 6] = [
        (b"{\"kind\":\"Pod\"}", "BadMagic"),
        (b"k8s\x01\x0a\x00", "BadMagic"),
        (b"K8S\0", "BadMagic"),
        (b"", "Truncated"),
        (b"k8s", "Truncated"),
        (b"k8s\0\x0a\x05\x0a", "Truncated"),
    ];
    for (body, want) in cases {
        let err = decode(body).expect_err("must fail");
        assert!(format!("{err:?}").starts_with(want), "{body:?}: {err:?}");
    }
}

#[test]
fn every_cut_inside_the_object_is_truncation() {
    let body = configmap_body();
    let raw_start = 4 + 17 + 2; // magic, typeMeta field, raw tag + length
    for cut in raw_start..raw_start + 51 {
        let err = decode(&body[..cut]).expect_err("cut body must fail");
        assert!(
            matches!(err, ProtoError::Truncated),
            "cut at {cut}: {err:?}"
        );
    }
}

#[test]
fn envelope_problems_are_reported() {
    let mut unknown_kind = b"k8s\0".to_vec();
    unknown_kind.extend([0x0a, 20, 0x0a, 14]);
    unknown_kind.extend(b"example.com/v1");
    unknown_kind.extend([0x12, 2]);
    unknown_kind.extend(b"Wd");
    let err = decode(&unknown_kind).expect_err("unknown kind");
    assert!(
        matches!(&err, ProtoError::UnknownKind { api_version, kind } if api_version == "example.com/v1" && kind == "Wd"),
        "{err:?}"
    );

    let mut gzip = configmap_body();
    let n = gzip.len();
    gzip.truncate(n - 4);
    gzip.extend([0x1a, 4]);
    gzip.extend(b"gzip");
    let err = decode(&gzip).expect_err("compressed raw");
    assert!(err.to_string().contains("contentEncoding"), "{err}");

    // A string field sent with the varint wire type.
    let mut bad = b"k8s\0".to_vec();
    bad.extend([0x0a, 15, 0x0a, 2]);
    bad.extend(b"v1");
    bad.extend([0x12, 9]);
    bad.extend(b"ConfigMap");
    bad.extend([0x12, 4, 0x0a, 2, 0x08, 0x01]);
    let err = decode(&bad).expect_err("wire type mismatch");
    assert!(
        matches!(&err, ProtoError::Decode(m) if m.contains("metadata.name")),
        "{err:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn decode_never_panics_on_random_bodies(tail in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut body = b"k8s\0".to_vec();
        body.extend(tail);
        let _ = decode(&body);
    }

    /// Also the fuzz target's property: what decodes and re-encodes decodes the same again.
    #[test]
    fn mutated_valid_bodies_never_panic_and_decode_stably(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut body = configmap_body();
        for (at, byte) in edits {
            let at = 4 + at % (body.len() - 4);
            body[at] = byte;
        }
        if let Ok(first) = decode(&body) {
            if let Ok(again) = encode(&first) {
                prop_assert_eq!(decode(&again).expect("own encoding decodes"), first);
            }
        }
    }
}
