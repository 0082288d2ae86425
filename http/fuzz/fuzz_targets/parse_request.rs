//! Feeds arbitrary bytes to the request-head parser and the chunked body decoder, as the
//! server does (head first, then the body after it), under small limits so the limit paths
//! are reached. Checks: no panic; a parsed head lies inside the input and within
//! `header_bytes_max`; "incomplete" only below that limit; errors are 400/431/501; a decoded
//! chunked body is within its limit and consumed no more than it was given; and the body
//! decoded from pieces (as the connection feeds `decode_span` whatever the socket gave it) is
//! byte for byte what decoding it whole gives, with the same outcome. The query of the
//! request line also goes through `parse_query` (the server's query parser).
#![no_main]

use keel_http::{
    decode_chunked, parse_query, parse_request_head, ChunkedDecoder, ChunkedError, Limits,
};
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
            check_query(&data[..n]);
            check_chunked(&data[n..]);
        }
        Ok(None) => assert!(data.len() < limits.header_bytes_max),
        Err(code) => assert!([400, 431, 501].contains(&code), "status {code}"),
    }
    check_chunked(data);
});

/// The query of an accepted request line decodes into pairs without panicking; a query
/// without `%`, `+` or `&` is one pair whose text is the query's.
fn check_query(head: &[u8]) {
    let Some(line) = head.split(|&b| b == b'\n').next() else {
        return;
    };
    let Ok(line) = std::str::from_utf8(line) else {
        return;
    };
    let Some(target) = line.split(' ').nth(1) else {
        return;
    };
    let Some((_, query)) = target.split_once('?') else {
        return;
    };
    let pairs = parse_query(query);
    assert!(pairs.len() <= query.len());
    if !query.is_empty() && !query.contains(['%', '+', '&']) {
        let (k, v) = query.split_once('=').unwrap_or((query, ""));
        assert_eq!(pairs, vec![(k.to_string(), v.to_string())]);
    }
}

fn check_chunked(body: &[u8]) {
    let whole = decode_chunked(body, BODY_BYTES_MAX);
    match &whole {
        Ok(Some((decoded, used))) => {
            assert!(decoded.len() <= BODY_BYTES_MAX && *used <= body.len());
            assert!(decoded.len() < *used, "framing bytes are never body bytes");
        }
        Ok(None) => {}
        Err(code) => assert!(*code == 400 || *code == 413, "status {code}"),
    }
    // The same bytes arriving in pieces: the piece sizes come from the body's own bytes.
    let pieces = decode_in_pieces(body);
    let pieces = match pieces {
        Ok((out, used, true)) => Ok(Some((out, used))),
        Ok((_, _, false)) => Ok(None),
        Err(ChunkedError::TooLarge) => Err(413),
        Err(ChunkedError::Malformed(_)) => Err(400),
    };
    assert_eq!(
        whole, pieces,
        "decoding in pieces differs from decoding whole"
    );
}

/// Decodes `body` as the connection does: span by span over reads of varying sizes, until the
/// body ends or the input runs out. Returns (payload, bytes consumed, done).
fn decode_in_pieces(body: &[u8]) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
    // The trailer limit `decode_chunked` uses (the default header limit).
    let trailer_bytes_max = Limits::default().header_bytes_max;
    let mut decoder = ChunkedDecoder::new(BODY_BYTES_MAX, trailer_bytes_max);
    let mut out = Vec::new();
    let (mut read_end, mut at, mut k) = (0usize, 0usize, 0usize);
    while read_end < body.len() && !decoder.is_done() {
        let step = 1 + usize::from(body[k % body.len()] % 7);
        k += 1;
        read_end = (read_end + step).min(body.len());
        while at < read_end && !decoder.is_done() {
            let (n, payload) = decoder.decode_span(&body[at..read_end])?;
            // The connection loops while bytes remain and the body is not done: a span that
            // consumes nothing there would spin it forever.
            assert!(
                n > 0,
                "decode_span consumed nothing of {} bytes",
                read_end - at
            );
            out.extend_from_slice(payload);
            at += n;
        }
    }
    Ok((out, at, decoder.is_done()))
}
