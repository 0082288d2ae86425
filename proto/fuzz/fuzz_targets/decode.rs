//! `keel_proto::decode`, what the server runs on every `application/vnd.kubernetes.protobuf`
//! request body, on arbitrary bytes three ways: raw; behind the `k8s\0` prefix; and as the
//! object message of a well-formed `runtime.Unknown` envelope whose typeMeta names one of the
//! built-in kinds below (picked by the first byte), so every input reaches an object decoder.
//! Checks: never a panic; an object decoded from an envelope carries the envelope's
//! apiVersion and kind; whatever decodes is stable: if it encodes again, decoding that and
//! encoding once more gives the same bytes, and a second round trip the same JSON. (The first
//! JSON may differ from the second exactly where Go's does: a present but empty
//! `apiextensions.JSON` message prints as `null`, which decodes back as an absent pointer.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The kinds the envelope names: those of `../tests/fixtures` (the seeds), plus Lists.
const KINDS: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("v1", "Node"),
    ("v1", "Namespace"),
    ("v1", "Binding"),
    ("v1", "Status"),
    ("v1", "DeleteOptions"),
    ("v1", "APIResourceList"),
    ("v1", "ConfigMapList"),
    ("v1", "PodList"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ControllerRevision"),
    ("events.k8s.io/v1", "Event"),
    ("policy/v1", "Eviction"),
    ("coordination.k8s.io/v1", "Lease"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("autoscaling/v1", "Scale"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
];

fn check(body: &[u8]) -> Option<Value> {
    let first = keel_proto::decode(body).ok()?;
    // Some decodable values have no JSON->protobuf form (e.g. a time past year 9999).
    let Ok(again) = keel_proto::encode(&first) else {
        return Some(first);
    };
    let second = keel_proto::decode(&again).expect("our own encoding decodes");
    let again2 = keel_proto::encode(&second).expect("a re-decoded object encodes");
    assert_eq!(again, again2, "encode -> decode -> encode is not stable");
    let third = keel_proto::decode(&again2).expect("our own encoding decodes");
    assert_eq!(
        second, third,
        "a second decode -> encode -> decode is not stable"
    );
    Some(first)
}

/// Appends a protobuf varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field.
fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    bytes_field(&mut type_meta, 1, api_version.as_bytes());
    bytes_field(&mut type_meta, 2, kind.as_bytes());
    let mut out = keel_proto::MAGIC.to_vec();
    bytes_field(&mut out, 1, &type_meta);
    bytes_field(&mut out, 2, raw);
    out
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut prefixed = keel_proto::MAGIC.to_vec();
    prefixed.extend_from_slice(data);
    check(&prefixed);
    if let Some((&pick, raw)) = data.split_first() {
        let (api_version, kind) = KINDS[usize::from(pick) % KINDS.len()];
        if let Some(obj) = check(&envelope(api_version, kind, raw)) {
            assert_eq!(obj["apiVersion"], api_version, "{obj}");
            assert_eq!(obj["kind"], kind, "{obj}");
        }
    }
});
