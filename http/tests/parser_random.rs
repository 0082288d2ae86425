//! The request parser and chunked decoder never panic: random bytes and randomly mutated
//! valid requests go in, only values (a head, "incomplete", or an error status) come out.

use keel_http::{decode_chunked, parse_request_head, Limits};

/// xorshift64*: a deterministic PRNG, so a failing seed reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SEEDS: [&[u8]; 4] = [
    b"GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n",
    b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
    b"PUT /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: 1\r\n\r\n",
    b"GET http://h/%41?a=%zz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
];

/// Bytes that matter to the grammar, so mutations hit interesting paths.
const ALPHABET: &[u8] = b"\r\n :;%/?=,0123456789abcdefABCDEF\t\x00\x7f\xff";

fn mutate(rng: &mut Rng, input: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let at = rng.below(input.len() + 1);
        match rng.below(4) {
            0 if at < input.len() => input[at] = ALPHABET[rng.below(ALPHABET.len())],
            1 => input.insert(at, ALPHABET[rng.below(ALPHABET.len())]),
            2 if at < input.len() => {
                input.remove(at);
            }
            _ => input.truncate(at),
        }
    }
}

fn check(input: &[u8], limits: &Limits) {
    match parse_request_head(input, limits) {
        Ok(Some(n)) => {
            assert!(
                n <= input.len() && n <= limits.header_bytes_max,
                "{input:?}"
            );
            let _ = decode_chunked(&input[n..], 64);
        }
        Ok(None) => assert!(input.len() < limits.header_bytes_max, "{input:?}"),
        Err(code) => assert!([400, 431, 501].contains(&code), "{code} for {input:?}"),
    }
    if let Ok(Some((data, used))) = decode_chunked(input, 64) {
        assert!(data.len() <= 64 && used <= input.len());
    }
}

#[test]
fn random_and_mutated_input_never_panics() {
    let limits = Limits {
        header_bytes_max: 256,
        header_count_max: 8,
        ..Limits::default()
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..50_000 {
        let input = if i % 2 == 0 {
            let mut v = SEEDS[rng.below(SEEDS.len())].to_vec();
            mutate(&mut rng, &mut v);
            v
        } else {
            (0..rng.below(300)).map(|_| rng.next() as u8).collect()
        };
        check(&input, &limits);
    }
}
