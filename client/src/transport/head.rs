//! HTTP/1.1 response heads, parsed with `httparse`: the status, how the body is framed and
//! whether the connection may be reused. Pure.

use super::body::Framing;
use crate::limits;

/// What the client needs from a response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub framing: Framing,
    /// The server will close the connection after this response (or is HTTP/1.0).
    pub close: bool,
}

/// Parses the response head at the start of `buf`: `Ok(None)` when it is incomplete (read
/// more), else the head and its length in bytes. Interim (1xx) responses are skipped. A head
/// longer than `RESPONSE_HEAD_BYTES_MAX`, or with more than `RESPONSE_HEADERS_MAX` fields, is
/// an error.
pub fn parse(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut at = 0;
    loop {
        match parse_one(&buf[at..])? {
            None if buf.len() >= limits::RESPONSE_HEAD_BYTES_MAX => {
                return Err(format!(
                    "response head longer than {} bytes",
                    limits::RESPONSE_HEAD_BYTES_MAX
                ))
            }
            None => return Ok(None),
            Some((head, len)) if (100..200).contains(&head.status) && head.status != 101 => {
                at += len
            }
            Some((head, len)) => return Ok(Some((head, at + len))),
        }
    }
}

fn parse_one(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; limits::RESPONSE_HEADERS_MAX];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad response head: {e}")),
    };
    let status = resp.code.unwrap_or_default();
    let mut close = resp.version != Some(1);
    let (mut length, mut chunked, mut coded) = (None, false, false);
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = content_length(h.value)?;
            if length.is_some_and(|l| l != n) {
                return Err("conflicting Content-Length headers".into());
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            coded = true;
            chunked = last_coding_is_chunked(h.value);
        } else if name.eq_ignore_ascii_case(b"connection") {
            close |= has_token(h.value, b"close");
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if coded {
        // Transfer-Encoding overrides Content-Length; without chunked last, the body ends at
        // close (RFC 9112 6.3).
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else {
        match length {
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    };
    close |= framing == Framing::UntilClose;
    Ok(Some((
        Head {
            status,
            framing,
            close,
        },
        len,
    )))
}

/// The header fields of the (complete, final) response head at the start of `buf`, names and
/// values as sent (values not valid UTF-8 are read lossily).
pub fn fields(buf: &[u8]) -> Vec<(String, String)> {
    let mut headers = [httparse::EMPTY_HEADER; limits::RESPONSE_HEADERS_MAX];
    let mut at = 0;
    loop {
        let mut resp = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(len)) = resp.parse(&buf[at..]) else {
            return Vec::new();
        };
        if resp
            .code
            .is_some_and(|c| (100..200).contains(&c) && c != 101)
        {
            at += len;
            continue;
        }
        return resp
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_string(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect();
    }
}

fn content_length(v: &[u8]) -> Result<u64, String> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "bad Content-Length {:?}",
            String::from_utf8_lossy(v)
        ));
    }
    Ok(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

fn last_coding_is_chunked(v: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .next_back()
        .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

fn has_token(v: &[u8], token: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(status: u16, framing: Framing, close: bool) -> Head {
        Head {
            status,
            framing,
            close,
        }
    }

    #[test]
    fn heads_parse() {
        let cases: &[(&str, Option<Head>)] = &[
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nbody",
                Some(head(200, Framing::Length(12), false)),
            ),
            (
                "HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n",
                Some(head(201, Framing::Chunked, false)),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n",
                Some(head(200, Framing::Chunked, false)),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                Some(head(200, Framing::UntilClose, true)),
            ),
            (
                "HTTP/1.1 200 OK\r\n\r\n",
                Some(head(200, Framing::UntilClose, true)),
            ),
            (
                "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
                Some(head(204, Framing::Empty, false)),
            ),
            (
                "HTTP/1.1 404 Not Found\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n",
                Some(head(404, Framing::Length(0), true)),
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n",
                Some(head(200, Framing::Length(2), true)),
            ),
            (
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n",
                Some(head(200, Framing::Length(1), false)),
            ),
            ("HTTP/1.1 200 OK\r\nContent-Len", None),
            ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2", None),
            ("", None),
        ];
        for (text, want) in cases {
            // A complete head ends at the last blank line of these texts.
            let want = want.map(|h| (h, text.rfind("\r\n\r\n").unwrap() + 4));
            assert_eq!(parse(text.as_bytes()).unwrap(), want, "{text:?}");
        }
    }

    #[test]
    fn the_head_parses_the_same_at_every_length() {
        let text = b"HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 5\r\n\r\nhello";
        let whole = parse(text).unwrap().unwrap();
        for cut in 0..whole.1 {
            assert_eq!(parse(&text[..cut]).unwrap(), None, "cut at {cut}");
        }
        for cut in whole.1..=text.len() {
            assert_eq!(parse(&text[..cut]).unwrap(), Some(whole), "cut at {cut}");
        }
    }

    #[test]
    fn bad_heads_are_errors() {
        let many = format!(
            "HTTP/1.1 200 OK\r\n{}\r\n",
            "X-A: 1\r\n".repeat(limits::RESPONSE_HEADERS_MAX + 1)
        );
        let long = format!(
            "HTTP/1.1 200 OK\r\nX-Long: {}",
            "a".repeat(limits::RESPONSE_HEAD_BYTES_MAX)
        );
        let bad = [
            "HTTX/1.1 200 OK\r\n\r\n",
            "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
            many.as_str(),
            long.as_str(),
        ];
        for text in bad {
            assert!(parse(text.as_bytes()).is_err(), "{:.60?}", text);
        }
    }
}
