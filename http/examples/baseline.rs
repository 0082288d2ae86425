//! Load-test baseline: the least an HTTP server on tokio can do (multi-thread runtime, one
//! task per connection, canned response per `\r\n\r\n` seen, no parsing). Compare
//! `hello` against it in the same run: `cargo run --release -p keel-http --example baseline -- ADDR`.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8081".to_string());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        loop {
            let (mut s, _) = listener.accept().await?;
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut out = Vec::new();
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    let requests = buf[..n].windows(4).filter(|w| w == b"\r\n\r\n").count();
                    out.clear();
                    for _ in 0..requests {
                        out.extend_from_slice(RESPONSE);
                    }
                    if s.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    })
}
