//! A TLS client connection driven through rustls's unbuffered API.
//!
//! Why not `tokio-rustls`: its buffered rustls connection reads the socket at most 4 KiB at a
//! time (and shrinks its buffer back to 4 KiB whenever it empties), so a watcher that receives
//! 40 KiB per round of events makes ten `recv` calls and ten buffer reallocations for it; with
//! a thousand watchers on the same two cores as the server that was a third of the load
//! generator's CPU. Here the connection owns one fixed buffer of received TLS bytes that each
//! socket read fills as far as it can (`limits::TLS_READ_BUFFER_BYTES`), rustls decrypts the
//! records from it, and their plaintext goes straight into the caller's buffer.
//!
//! ```text
//!   inbuf:  [ processed | start .. end: received, not yet processed | free ]
//!   spill:  decrypted bytes that did not fit the caller's buffer, handed out first
//! ```

use crate::limits;
use rustls::client::UnbufferedClientConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest TLS record on the wire: 5 header bytes and at most 2^14 + 256 bytes of ciphertext.
const TLS_RECORD_BYTES_MAX: usize = 5 + (1 << 14) + 256;
const _: () = assert!(limits::TLS_READ_BUFFER_BYTES >= 2 * TLS_RECORD_BYTES_MAX);

/// One client connection: TCP and the TLS session over it.
pub struct TlsIo {
    tcp: TcpStream,
    conn: UnbufferedClientConnection,
    inbuf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Decrypted bytes not yet handed out: `spill[spill_at..]`.
    spill: Vec<u8>,
    spill_at: usize,
    /// Encoded TLS bytes to send.
    out: Vec<u8>,
    /// The server sent close_notify (or closed TCP): reads return 0 once `spill` is empty.
    eof: bool,
}

/// What one pass over the received records asks for next.
enum Next {
    /// Progress was made (bytes handed out, records consumed or TLS bytes sent): call again.
    Again,
    /// Everything received is processed; more must be read from the socket.
    Read,
    /// The handshake is complete and nothing received is left to process.
    Ready,
    /// The peer closed the TLS session.
    Closed,
}

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}"))
}

impl TlsIo {
    /// Runs the handshake over `tcp`.
    pub async fn connect(
        tcp: TcpStream,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<TlsIo> {
        let conn = UnbufferedClientConnection::new(config, name).map_err(tls_err)?;
        let mut io = TlsIo {
            tcp,
            conn,
            inbuf: vec![0; limits::TLS_READ_BUFFER_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            spill: Vec::new(),
            spill_at: 0,
            out: Vec::new(),
            eof: false,
        };
        loop {
            match io.step(None).await? {
                Next::Again => {}
                Next::Ready => return Ok(io),
                Next::Read => {
                    if io.read_socket().await? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "connection closed during the TLS handshake",
                        ));
                    }
                }
                Next::Closed => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "TLS session closed during the handshake",
                    ))
                }
            }
        }
    }

    /// The TCP stream (for readiness probes).
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// Decrypted bytes are waiting to be read.
    pub fn has_buffered(&self) -> bool {
        self.spill_at < self.spill.len() || self.start < self.end
    }

    /// Reads decrypted bytes into `into` (as many as are received, waiting only while there
    /// are none); 0 at the end of the stream.
    pub async fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        let mut got = self.take_spill(into);
        while got < into.len() && !self.eof {
            match self.step(Some((&mut *into, &mut got))).await? {
                Next::Again => {}
                Next::Closed => self.eof = true,
                Next::Read | Next::Ready if got > 0 => break,
                Next::Read | Next::Ready => {
                    if self.read_socket().await? == 0 {
                        // TCP closed without close_notify: the HTTP layer judges whether the
                        // response was complete.
                        self.eof = true;
                    }
                }
            }
        }
        Ok(got)
    }

    /// Waits until [`TlsIo::drain_with`] has plaintext to hand out: spilled bytes or a whole
    /// record received (reading the socket only when neither is there). False at the end of
    /// the stream. Cancel-safe.
    pub async fn fill(&mut self) -> io::Result<bool> {
        loop {
            if self.spill_at < self.spill.len() || self.has_record() {
                return Ok(true);
            }
            if self.eof {
                return Ok(false);
            }
            if self.read_socket().await? == 0 {
                // TCP closed without close_notify: the HTTP layer judges the response.
                self.eof = true;
            }
        }
    }

    /// A whole TLS record is received and not yet processed.
    fn has_record(&self) -> bool {
        let b = &self.inbuf[self.start..self.end];
        b.len() >= 5 && b.len() - 5 >= usize::from(u16::from_be_bytes([b[3], b[4]]))
    }

    /// Hands `each` all plaintext received so far, in order, without reading the socket:
    /// spilled bytes first, then every whole record, decrypted in place and passed where it
    /// lies (no copy). What `each` fails with is returned.
    pub async fn drain_with(
        &mut self,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            if self.spill_at < self.spill.len() {
                let spilled = std::mem::take(&mut self.spill);
                let r = each(&spilled[self.spill_at..]);
                self.spill = spilled;
                self.spill.clear();
                self.spill_at = 0;
                r?;
            }
            let UnbufferedStatus { mut discard, state } = self
                .conn
                .process_tls_records(&mut self.inbuf[self.start..self.end]);
            match state.map_err(|e| format!("TLS: {e}"))? {
                ConnectionState::ReadTraffic(mut r) => {
                    let mut failed = None;
                    while let Some(record) = r.next_record() {
                        let record = record.map_err(|e| format!("TLS: {e}"))?;
                        discard += record.discard;
                        if let Err(e) = each(record.payload) {
                            failed = Some(e);
                            break;
                        }
                    }
                    self.start += discard;
                    if let Some(e) = failed {
                        return Err(e);
                    }
                }
                // Records were consumed (session tickets): look again.
                ConnectionState::WriteTraffic(_) if discard > 0 => self.start += discard,
                // Nothing whole is left.
                ConnectionState::WriteTraffic(_) => return Ok(()),
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    self.start += discard;
                    self.eof = true;
                    return Ok(());
                }
                // Anything else (a reply rustls must send, say) is `step`'s to do; data it
                // meets goes to the spill, handed out above.
                _ => match self.step(None).await.map_err(|e| e.to_string())? {
                    Next::Again => {}
                    Next::Closed => self.eof = true,
                    Next::Read | Next::Ready => return Ok(()),
                },
            }
        }
    }

    /// Encrypts and sends all of `data`.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        // Process what was received first (session tickets; anything else is kept for reads),
        // until rustls lets us write.
        loop {
            match self.step(None).await? {
                Next::Again => {}
                Next::Ready | Next::Read => break,
                Next::Closed => {
                    return Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "the server closed the TLS session",
                    ))
                }
            }
        }
        let UnbufferedStatus { discard, state } = self
            .conn
            .process_tls_records(&mut self.inbuf[self.start..self.end]);
        let n = match state.map_err(tls_err)? {
            ConnectionState::WriteTraffic(mut w) => {
                self.out.clear();
                loop {
                    match w.encrypt(data, &mut self.out) {
                        Ok(n) => break n,
                        Err(EncryptError::InsufficientSize(s)) => {
                            self.out.resize(s.required_size, 0)
                        }
                        Err(e) => return Err(io::Error::other(format!("TLS: {e}"))),
                    }
                }
            }
            other => {
                return Err(io::Error::other(format!(
                    "TLS: cannot send in state {other:?}"
                )))
            }
        };
        self.start += discard;
        self.tcp.write_all(&self.out[..n]).await
    }

    /// Hands out spilled plaintext.
    fn take_spill(&mut self, into: &mut [u8]) -> usize {
        let left = &self.spill[self.spill_at..];
        let n = left.len().min(into.len());
        into[..n].copy_from_slice(&left[..n]);
        self.spill_at += n;
        if self.spill_at == self.spill.len() {
            self.spill.clear();
            self.spill_at = 0;
        }
        n
    }

    /// One call of rustls's state machine over the received bytes. Application data goes to
    /// `into` (counting in `got`) while it fits and to `spill` when there is no `into` or a
    /// record overflows it; handshake bytes rustls produces are sent.
    async fn step(&mut self, mut into: Option<(&mut [u8], &mut usize)>) -> io::Result<Next> {
        let TlsIo {
            tcp,
            conn,
            inbuf,
            start,
            end,
            spill,
            out,
            ..
        } = self;
        let UnbufferedStatus { mut discard, state } =
            conn.process_tls_records(&mut inbuf[*start..*end]);
        let next = match state.map_err(tls_err)? {
            ConnectionState::ReadTraffic(mut r) => {
                while let Some(record) = r.next_record() {
                    let record = record.map_err(tls_err)?;
                    discard += record.discard;
                    let mut payload = record.payload;
                    if let Some((buf, got)) = into.as_mut() {
                        let n = payload.len().min(buf.len() - **got);
                        buf[**got..**got + n].copy_from_slice(&payload[..n]);
                        **got += n;
                        payload = &payload[n..];
                    }
                    spill.extend_from_slice(payload);
                    if matches!(&into, Some((buf, got)) if **got == buf.len()) {
                        break;
                    }
                }
                Next::Again
            }
            ConnectionState::EncodeTlsData(mut e) => {
                let at = out.len();
                out.resize(at + TLS_RECORD_BYTES_MAX, 0);
                loop {
                    match e.encode(&mut out[at..]) {
                        Ok(n) => {
                            out.truncate(at + n);
                            break;
                        }
                        Err(EncodeError::InsufficientSize(s)) => {
                            out.resize(at + s.required_size, 0)
                        }
                        Err(err) => return Err(io::Error::other(format!("TLS: {err}"))),
                    }
                }
                Next::Again
            }
            ConnectionState::TransmitTlsData(t) => {
                tcp.write_all(out).await?;
                out.clear();
                t.done();
                Next::Again
            }
            ConnectionState::BlockedHandshake => Next::Read,
            // Records were consumed (session tickets): look again.
            ConnectionState::WriteTraffic(_) if discard > 0 => Next::Again,
            ConnectionState::WriteTraffic(_) if *start == *end => Next::Ready,
            // A partial record is left.
            ConnectionState::WriteTraffic(_) => Next::Read,
            ConnectionState::PeerClosed | ConnectionState::Closed => Next::Closed,
            other => return Err(io::Error::other(format!("TLS: unexpected state {other:?}"))),
        };
        *start += discard;
        Ok(next)
    }

    /// Reads from the socket into the free end of `inbuf`. Unprocessed bytes (a partial
    /// record) are moved to its front only when less than a whole record's room is left
    /// behind them: moving them on every read copied a third of what was received.
    async fn read_socket(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.inbuf.len() - self.end < TLS_RECORD_BYTES_MAX {
            self.inbuf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.inbuf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "TLS record larger than the read buffer",
            ));
        }
        let n = self.tcp.read(&mut self.inbuf[self.end..]).await?;
        self.end += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio::net::TcpListener;

    /// `f`, or a panic if it takes over 10 s (a lost byte must fail the test, not hang it).
    async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(std::time::Duration::from_secs(10), f)
            .await
            .expect("no progress within 10 s")
    }

    /// A pattern that shows any lost, repeated or reordered byte.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    fn configs() -> (Arc<rustls::ServerConfig>, Arc<ClientConfig>) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let der = CertificateDer::from(cert.cert.der().to_vec());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![der.clone()], key)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der).unwrap();
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        (Arc::new(server), Arc::new(client))
    }

    /// Starts a TLS server (`server_cfg`) that runs `serve` on its first connection once the
    /// handshake succeeded, and connects to it with `client_cfg`.
    async fn connect_to<F, Fut>(
        server_cfg: Arc<rustls::ServerConfig>,
        client_cfg: Arc<ClientConfig>,
        serve: F,
    ) -> (io::Result<TlsIo>, tokio::task::JoinHandle<()>)
    where
        F: FnOnce(tokio_rustls::server::TlsStream<TcpStream>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            if let Ok(tls) = tokio_rustls::TlsAcceptor::from(server_cfg)
                .accept(tcp)
                .await
            {
                serve(tls).await;
            }
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        (TlsIo::connect(tcp, client_cfg, name).await, server)
    }

    /// A connected client of a server that runs `serve` on it.
    async fn pair<F, Fut>(serve: F) -> (TlsIo, tokio::task::JoinHandle<()>)
    where
        F: FnOnce(tokio_rustls::server::TlsStream<TcpStream>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let (server_cfg, client_cfg) = configs();
        let (io, server) = connect_to(server_cfg, client_cfg, serve).await;
        (io.unwrap(), server)
    }

    /// Sends `data` in writes of many sizes (records split and joined across socket reads),
    /// then closes the session.
    async fn send_in_writes_of_many_sizes(
        mut tls: tokio_rustls::server::TlsStream<TcpStream>,
        data: Vec<u8>,
    ) {
        let mut at = 0;
        for size in [1usize, 5, 16_384, 16_385, 40_000, 3].iter().cycle() {
            let end = (at + size).min(data.len());
            tls.write_all(&data[at..end]).await.unwrap();
            tls.flush().await.unwrap();
            at = end;
            if at == data.len() {
                break;
            }
        }
        tls.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn reads_every_byte_in_order_into_buffers_of_any_size() {
        let sent = pattern(300_000);
        let to_send = sent.clone();
        let (mut io, server) = pair(|tls| send_in_writes_of_many_sizes(tls, to_send)).await;
        let mut got = Vec::new();
        // Caller buffers smaller and larger than a record: the rest of a record is kept.
        for size in [1usize, 7, 100, 20_000, 70_000].iter().cycle() {
            let mut buf = vec![0; *size];
            let n = within(io.read(&mut buf)).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got.len(), sent.len());
        assert!(got == sent, "bytes differ");
        // The end of the stream stays the end.
        assert_eq!(within(io.read(&mut [0; 10])).await.unwrap(), 0);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn drain_hands_out_every_byte_in_order_where_it_was_decrypted() {
        let sent = pattern(300_000);
        let to_send = sent.clone();
        let (mut io, server) = pair(|tls| send_in_writes_of_many_sizes(tls, to_send)).await;
        // A small first read leaves the rest of its record spilled (as a response head's
        // read does); drain hands that out first.
        let mut got = vec![0; 3];
        let n = within(io.read(&mut got)).await.unwrap();
        got.truncate(n);
        let mut drains = 0;
        while within(io.fill()).await.unwrap() {
            within(io.drain_with(|p| {
                got.extend_from_slice(p);
                Ok(())
            }))
            .await
            .unwrap();
            drains += 1;
        }
        assert_eq!(got.len(), sent.len());
        assert!(got == sent, "bytes differ");
        assert!(drains > 1, "the stream came in more than one drain");
        assert!(!within(io.fill()).await.unwrap());
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_failing_drain_callback_stops_the_drain() {
        let (mut io, server) = pair(|mut tls| async move {
            for record in [&b"one"[..], b"two", b"three"] {
                tls.write_all(record).await.unwrap();
                tls.flush().await.unwrap();
            }
            tls.shutdown().await.unwrap();
        })
        .await;
        let (mut seen, mut failed) = (Vec::new(), 0);
        // (Bounded: a record handed out again and again must fail the test, not hang it.)
        while seen.len() < 10 && within(io.fill()).await.unwrap() {
            let r = within(io.drain_with(|p| {
                seen.push(String::from_utf8_lossy(p).into_owned());
                Err("stop".to_string())
            }))
            .await;
            if r.is_err() {
                assert_eq!(r, Err("stop".to_string()));
                failed += 1;
            }
        }
        // The failure stopped each drain after one record, and that record was consumed.
        assert_eq!(seen, ["one", "two", "three"]);
        assert_eq!(failed, 3);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn requests_and_responses_alternate_on_one_session() {
        let (mut io, server) = pair(|mut tls| async move {
            let mut buf = vec![0; 64 << 10];
            // The client goes away without a close_notify: a read error ends the loop too.
            while let Ok(n @ 1..) = tls.read(&mut buf).await {
                // Echo each request back twice (a response larger than a record).
                let mut reply = buf[..n].to_vec();
                reply.extend_from_slice(&buf[..n]);
                tls.write_all(&reply).await.unwrap();
                tls.flush().await.unwrap();
            }
        })
        .await;
        for len in [1usize, 1000, 20_000] {
            let req = pattern(len);
            io.write_all(&req).await.unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0; 4096];
            while got.len() < 2 * len {
                let n = within(io.read(&mut buf)).await.unwrap();
                assert!(n > 0, "stream ended early");
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got.len(), 2 * len);
            assert!(got[..len] == req[..] && got[len..] == req[..]);
            assert!(!io.has_buffered());
        }
        drop(io);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_tcp_close_without_close_notify_ends_the_stream() {
        let (mut io, server) = pair(|mut tls| async move {
            tls.write_all(b"partial").await.unwrap();
            tls.flush().await.unwrap();
            // Drop the TCP stream without a TLS close_notify.
            let (tcp, _) = tls.into_inner();
            drop(tcp);
        })
        .await;
        let mut buf = [0u8; 64];
        let n = within(io.read(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], b"partial");
        assert_eq!(within(io.read(&mut buf)).await.unwrap(), 0);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_handshake_with_an_untrusted_server_fails() {
        let (server_cfg, _) = configs();
        let (_, other_client) = configs();
        let (io, server) = connect_to(server_cfg, other_client, |_| async {}).await;
        let err = io.err().unwrap();
        assert!(err.to_string().contains("TLS"), "{err}");
        server.await.unwrap();
    }
}
