//! keel's pure API semantics: Status errors, names, selectors, patches, resourceVersion rules, continue tokens
