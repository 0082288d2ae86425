//! Per-type policy of built-in Kubernetes resources: defaulting, validation, status/spec split, field selectors.
