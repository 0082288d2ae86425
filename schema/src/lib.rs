//! Published Kubernetes OpenAPI schemas: OpenAPI documents, field validation, pruning, merge strategies
