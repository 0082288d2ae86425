//! What a field check finds, and where: the state and messages shared by `check` (which walks
//! a parsed body) and `decode` (which checks while decoding), so both report exactly alike.

use std::collections::HashSet;

use crate::{FieldReport, STRICT_ERRORS_MAX, TYPE_ERRORS_MAX};

pub(crate) struct Findings<'c> {
    pub report: FieldReport,
    /// Strict messages already reported (upstream deduplicates them).
    seen: HashSet<String>,
    /// Strict path: fields joined by `.`, list indexes as `[i]`, map keys as fields.
    pub path: String,
    /// Name of the innermost Go struct whose field is being decoded.
    pub go_struct: Option<&'c str>,
}

impl<'c> Findings<'c> {
    pub fn new() -> Findings<'c> {
        Findings {
            report: FieldReport::default(),
            seen: HashSet::new(),
            path: String::new(),
            go_struct: None,
        }
    }

    /// Appends `key` to the strict path.
    pub fn push_key(&mut self, key: &str) {
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
    }

    /// Records `unknown field "<path>.<key>"` or `duplicate field ...`.
    pub fn strict(&mut self, what: &str, key: &str) {
        if self.report.strict.len() >= STRICT_ERRORS_MAX {
            return;
        }
        let path = if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        };
        let msg = format!("{what} field {path:?}");
        if !self.seen.insert(msg.clone()) {
            return;
        }
        self.report.strict.push(msg.clone());
        match what {
            "unknown" => self.report.unknown.push(msg),
            _ => self.report.duplicate.push(msg),
        }
    }

    /// Records Go's unmarshal error for a `value` (JSON kind or literal) that does not fit
    /// `go_type`, at the Go decoder path `go_path` (struct field names joined by `.`).
    pub fn type_error(&mut self, go_path: &str, value: &str, go_type: &str) {
        if self.report.type_errors.len() >= TYPE_ERRORS_MAX {
            return;
        }
        let msg = match self.go_struct {
            Some(st) => format!(
                "json: cannot unmarshal {value} into Go struct field {st}.{go_path} of type {go_type}"
            ),
            None => format!("json: cannot unmarshal {value} into Go value of type {go_type}"),
        };
        self.report.type_errors.push(msg);
    }
}
