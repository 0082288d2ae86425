//! keel's built-in resource catalog: resource table, discovery documents, Table columns, per-type strategies
