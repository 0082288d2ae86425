//! Response serialization: status line, headers and body framing. Pure (writes into a
//! `Vec<u8>`); the connection decides when to flush it.

use crate::response::reason_phrase;
use std::cell::RefCell;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// How the response body is framed on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    /// `Content-Length: n`.
    Length(usize),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Neither: the body runs until the connection closes (HTTP/1.0 streams).
    UntilClose,
    /// No body and no length header allowed (1xx, 204).
    None,
}

/// Headers the server owns; a handler's values for them are dropped.
fn is_server_owned(name: &str) -> bool {
    ["content-length", "transfer-encoding", "connection", "date"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

/// Appends the status line and headers of a response to `out`. `keep_alive_http10` adds
/// `Connection: keep-alive` for HTTP/1.0 clients that asked for it.
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    headers: &[(String, String)],
    framing: BodyFraming,
    close: bool,
    keep_alive_http10: bool,
) {
    let _ = write!(out, "HTTP/1.1 {} {}\r\n", status, reason_phrase(status));
    for (name, value) in headers.iter().filter(|(n, _)| !is_server_owned(n)) {
        // Header injection guard: CR/LF in a value would end the field early.
        if value.bytes().any(|b| b == b'\r' || b == b'\n') || name.is_empty() {
            continue;
        }
        let _ = write!(out, "{name}: {value}\r\n");
    }
    match framing {
        BodyFraming::Length(n) => {
            let _ = write!(out, "Content-Length: {n}\r\n");
        }
        BodyFraming::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        BodyFraming::UntilClose | BodyFraming::None => {}
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if keep_alive_http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"Date: ");
    with_http_date(|d| out.extend_from_slice(d.as_bytes()));
    out.extend_from_slice(b"\r\n\r\n");
}

/// Appends one chunk of a chunked body (`data` must be non-empty: an empty chunk ends it).
#[cfg(test)]
pub(crate) fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    write_chunk_head(out, data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends the size line of a chunk of `len` bytes (`len` must be non-zero: an empty chunk
/// ends the body). The chunk's data and a CR LF follow it.
pub(crate) fn write_chunk_head(out: &mut Vec<u8>, len: usize) {
    debug_assert!(len != 0, "an empty chunk would terminate the body");
    let _ = write!(out, "{len:x}\r\n");
}

/// The last chunk of a chunked body, with no trailers.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

thread_local! {
    /// The formatted `Date` value and the second it was formatted for: formatting once per
    /// second per core instead of per response.
    static DATE_CACHE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

fn with_http_date(f: impl FnOnce(&str)) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    DATE_CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.0 != now {
            *cache = (now, http_date(now));
        }
        f(&cache.1);
    });
}

/// Formats Unix seconds as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(crate) fn http_date(unix_secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_secs / 86_400;
    let secs = unix_secs % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        let cases: &[(u64, &str)] = &[
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_700_000_000, "Tue, 14 Nov 2023 22:13:20 GMT"),
        ];
        for (secs, want) in cases {
            assert_eq!(http_date(*secs), *want);
        }
    }

    #[test]
    fn head_drops_server_owned_and_unsafe_headers() {
        let mut out = Vec::new();
        let headers = vec![
            ("Content-Type".to_string(), "text/plain".to_string()),
            ("content-length".to_string(), "999".to_string()),
            ("X-Evil".to_string(), "a\r\nSet-Cookie: x".to_string()),
        ];
        write_head(&mut out, 200, &headers, BodyFraming::Length(5), true, false);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"),
            "{text}"
        );
        assert!(text.contains("Content-Length: 5\r\n"));
        assert!(!text.contains("999"));
        assert!(!text.contains("Set-Cookie"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with(" GMT\r\n\r\n"));
    }

    #[test]
    fn chunk_encoding() {
        let mut out = Vec::new();
        write_chunk(&mut out, &[b'x'; 26]);
        out.extend_from_slice(LAST_CHUNK);
        assert_eq!(
            out,
            format!("1a\r\n{}\r\n0\r\n\r\n", "x".repeat(26)).as_bytes()
        );
    }
}
