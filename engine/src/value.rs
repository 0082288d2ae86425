//! `Value`: a zero-copy handle on bytes that live in a memory-mapped segment (or, for the
//! in-memory model, on the heap). Cloning is a reference-count increment.

use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

/// Something that owns stable bytes (a segment mapping, a heap buffer).
///
/// Contract: `bytes` returns the same slice (address and length) for as long as the object
/// lives, and those bytes never change. `Value` keeps a pointer into that slice next to its
/// `Arc` of the backing, so reading a value costs no dynamic call.
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
    /// Keeps `ptr..ptr + len` alive (held, never read).
    #[allow(dead_code)]
    backing: Arc<dyn Backing>,
    ptr: NonNull<u8>,
    len: u32,
}

// SAFETY: `ptr` points into the immutable bytes `backing` owns (see `Backing`), and
// `backing` is `Send + Sync`: sharing or sending the view is sharing or sending `&[u8]`.
unsafe impl Send for Value {}
unsafe impl Sync for Value {}

impl Value {
    /// A view of `backing[start..start + len]`. Panics if the range is outside the backing:
    /// callers compute ranges from verified records.
    pub fn new(backing: Arc<dyn Backing>, start: usize, len: usize) -> Value {
        let bytes = backing.bytes();
        assert!(
            start + len <= bytes.len(),
            "value range {start}+{len} outside backing of {}",
            bytes.len()
        );
        let ptr = NonNull::from(&bytes[start..start + len]).cast::<u8>();
        Value {
            backing,
            ptr,
            len: len as u32,
        }
    }

    /// A view of `view`, which the caller took from `backing.bytes()` through the concrete
    /// type (the scan path builds millions of these without a dynamic call).
    pub(crate) fn of_view(backing: Arc<dyn Backing>, view: &[u8]) -> Value {
        debug_assert!({
            let b = backing.bytes().as_ptr_range();
            let v = view.as_ptr_range();
            b.start <= v.start && v.end <= b.end
        });
        Value {
            backing,
            ptr: NonNull::from(view).cast::<u8>(),
            len: view.len() as u32,
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
        // SAFETY: `ptr..ptr + len` lies inside `backing.bytes()` (checked or taken from it at
        // construction), which stays at the same address, unchanged, while `backing` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len as usize) }
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
