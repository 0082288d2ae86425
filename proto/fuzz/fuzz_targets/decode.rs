//! `keel_proto::decode` on arbitrary bodies (raw, and behind the `k8s\0` prefix so the
//! fuzzer reaches the object decoder at once): never panic, and whatever decodes is stable:
//! if its JSON encodes again, decoding that gives the same JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn check(body: &[u8]) {
    let Ok(first) = keel_proto::decode(body) else {
        return;
    };
    // Some decodable values have no JSON->protobuf form (e.g. a time past year 9999).
    let Ok(again) = keel_proto::encode(&first) else {
        return;
    };
    let second = keel_proto::decode(&again).expect("our own encoding decodes");
    assert_eq!(first, second, "decode -> encode -> decode is not stable");
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut prefixed = keel_proto::MAGIC.to_vec();
    prefixed.extend_from_slice(data);
    check(&prefixed);
});
