//! Feeds arbitrary bytes to the request-head parser and the chunked body decoder, as the
//! server does (head first, then the body after it), under small limits so the limit paths
//! are reached. Checks: no panic; a parsed head lies inside the input and within
//! `header_bytes_max`; "incomplete" only below that limit; errors are 400/431/501; a decoded
//! chunked body is within its limit and consumed no more than it was given.
#![no_main]

use keel_http::{decode_chunked, parse_request_head, Limits};
use libfuzzer_sys::fuzz_target;

const BODY_BYTES_MAX: usize = 256;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        header_bytes_max: 512,
        header_count_max: 16,
        ..Limits::default()
    };
    match parse_request_head(data, &limits) {
        Ok(Some(n)) => {
            assert!(n <= data.len() && n <= limits.header_bytes_max);
            check_chunked(&data[n..]);
        }
        Ok(None) => assert!(data.len() < limits.header_bytes_max),
        Err(code) => assert!([400, 431, 501].contains(&code), "status {code}"),
    }
    check_chunked(data);
});

fn check_chunked(body: &[u8]) {
    match decode_chunked(body, BODY_BYTES_MAX) {
        Ok(Some((decoded, used))) => {
            assert!(decoded.len() <= BODY_BYTES_MAX && used <= body.len());
            assert!(decoded.len() < used, "framing bytes are never body bytes");
        }
        Ok(None) => {}
        Err(code) => assert!(code == 400 || code == 413, "status {code}"),
    }
}
