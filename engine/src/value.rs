//! `Value`: a zero-copy handle on bytes that live in a memory-mapped segment (or, for the
//! in-memory model, on the heap). Cloning is a reference-count increment.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Something that owns stable bytes (a segment mapping, a heap buffer).
pub trait Backing: Send + Sync + 'static {
    fn bytes(&self) -> &[u8];
}

impl Backing for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Immutable bytes of one stored version.
#[derive(Clone)]
pub struct Value {
    backing: Arc<dyn Backing>,
    start: u32,
    len: u32,
}

impl Value {
    /// A view of `backing[start..start + len]`. Panics if the range is outside the backing:
    /// callers compute ranges from verified records.
    pub fn new(backing: Arc<dyn Backing>, start: usize, len: usize) -> Value {
        assert!(
            start + len <= backing.bytes().len(),
            "value range {start}+{len} outside backing of {}",
            backing.bytes().len()
        );
        Value {
            backing,
            start: start as u32,
            len: len as u32,
        }
    }

    /// A view the caller guarantees to be inside `backing` (computed from a verified record):
    /// the scan path builds millions of these and skips the bounds check's dynamic call.
    pub(crate) fn new_trusted(backing: Arc<dyn Backing>, start: usize, len: usize) -> Value {
        debug_assert!(start + len <= backing.bytes().len());
        Value {
            backing,
            start: start as u32,
            len: len as u32,
        }
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A heap copy; used by the model and in tests.
    pub fn from_vec(v: Vec<u8>) -> Value {
        let len = v.len();
        Value::new(Arc::new(v), 0, len)
    }
}

impl Deref for Value {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let s = self.start as usize;
        &self.backing.bytes()[s..s + self.len as usize]
    }
}

impl AsRef<[u8]> for Value {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        **self == **other
    }
}

impl Eq for Value {}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b: &[u8] = self;
        if b.len() <= 64 {
            write!(f, "Value({:?})", String::from_utf8_lossy(b))
        } else {
            write!(f, "Value({} bytes)", b.len())
        }
    }
}
