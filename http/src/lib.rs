//! keel's HTTP/1.1 front end: per-core runtime, SO_REUSEPORT, httparse, TLS, limits
