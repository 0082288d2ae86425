//! Protobuf envelope and JSON<->protobuf transcoding for built-in Kubernetes types
