//! keel's API server binary
