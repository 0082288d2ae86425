//! The per-core budget for request body bytes, and body buffers that grow as bytes arrive.
//!
//! A body is never given the room its `Content-Length` announces: its buffer starts at
//! [`BODY_BUFFER_FIRST_BYTES`] (or the body's size if smaller) and doubles each time it is
//! full, never past the body's size. Every growth is charged to the core's [`ByteBudget`]
//! before it is made; the charge is released when the request is done. Pure: no I/O.

use crate::limits::BODY_BUFFER_FIRST_BYTES;
use std::cell::Cell;
use std::rc::Rc;

/// Bytes one core may hold in body buffers at once.
#[derive(Debug)]
pub(crate) struct ByteBudget {
    max: usize,
    used: Cell<usize>,
}

impl ByteBudget {
    pub fn new(max: usize) -> ByteBudget {
        ByteBudget {
            max,
            used: Cell::new(0),
        }
    }

    /// Takes `n` bytes if they are free; returns whether it did.
    fn try_take(&self, n: usize) -> bool {
        let used = self.used.get();
        if n > self.max.saturating_sub(used) {
            return false;
        }
        self.used.set(used + n);
        true
    }

    /// Takes `n` bytes even past the maximum (an allocator that gave more than asked).
    fn take_anyway(&self, n: usize) {
        self.used.set(self.used.get() + n);
    }

    fn give_back(&self, n: usize) {
        let used = self.used.get();
        assert!(
            n <= used,
            "giving back {n} bytes of a budget with {used} taken"
        );
        self.used.set(used - n);
    }

    /// Bytes taken now.
    #[cfg(test)]
    pub fn used(&self) -> usize {
        self.used.get()
    }
}

/// Bytes taken from a [`ByteBudget`], given back on drop.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Rc<ByteBudget>,
    bytes: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

/// Why a body buffer could not grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GrowError {
    /// The body would pass its size limit (413).
    TooLarge,
    /// The core's budget has no room left (429).
    OverBudget,
}

/// A request body being read: its bytes and the budget charge for their buffer's capacity.
#[derive(Debug)]
pub(crate) struct BodyBuf {
    bytes: Vec<u8>,
    charge: Charge,
    /// The body's size (`Content-Length`) or size limit (chunked): the buffer never grows
    /// past it.
    limit: usize,
}

impl BodyBuf {
    /// An empty body of at most `limit` bytes, charged to `budget`.
    pub fn new(budget: Rc<ByteBudget>, limit: usize) -> BodyBuf {
        BodyBuf {
            bytes: Vec::new(),
            charge: Charge { budget, bytes: 0 },
            limit,
        }
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Unused room in the buffer.
    pub fn spare(&self) -> usize {
        self.bytes.capacity() - self.bytes.len()
    }

    /// Makes room for `additional` more bytes: nothing if there is room, else the capacity
    /// doubles (at least [`BODY_BUFFER_FIRST_BYTES`], at least what is needed, at most the
    /// limit), and the growth is charged first.
    pub fn reserve(&mut self, additional: usize) -> Result<(), GrowError> {
        if self.spare() >= additional {
            return Ok(());
        }
        let (len, cap) = (self.bytes.len(), self.bytes.capacity());
        let needed = len.checked_add(additional).ok_or(GrowError::TooLarge)?;
        if needed > self.limit {
            return Err(GrowError::TooLarge);
        }
        let target = (cap * 2)
            .max(BODY_BUFFER_FIRST_BYTES)
            .min(self.limit)
            .max(needed);
        if !self.charge.budget.try_take(target - cap) {
            return Err(GrowError::OverBudget);
        }
        self.charge.bytes += target - cap;
        self.bytes.reserve_exact(target - len);
        let extra = self.bytes.capacity() - target;
        self.charge.budget.take_anyway(extra);
        self.charge.bytes += extra;
        Ok(())
    }

    /// Appends `data`, growing the buffer as [`BodyBuf::reserve`] does.
    pub fn append(&mut self, data: &[u8]) -> Result<(), GrowError> {
        self.reserve(data.len())?;
        self.bytes.extend_from_slice(data);
        Ok(())
    }

    /// The buffer, to read into its spare room (callers do not grow it themselves).
    pub fn vec_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// The bytes, and the charge to hold until they are no longer needed.
    pub fn into_parts(self) -> (Vec<u8>, Charge) {
        (self.bytes, self.charge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: usize = BODY_BUFFER_FIRST_BYTES;

    #[test]
    fn buffer_grows_with_arrivals_not_announcements() {
        let budget = Rc::new(ByteBudget::new(1 << 30));
        let announced = 3 << 20;
        let mut body = BodyBuf::new(budget.clone(), announced);
        assert_eq!(budget.used(), 0, "nothing is charged before a byte arrives");
        body.append(b"x").unwrap();
        assert_eq!(body.bytes.capacity(), FIRST);
        assert_eq!(budget.used(), FIRST);
        // Filling the buffer doubles it; the charge follows the capacity.
        body.append(&vec![0; FIRST - 1]).unwrap();
        body.append(b"y").unwrap();
        assert_eq!(body.bytes.capacity(), 2 * FIRST);
        assert_eq!(budget.used(), 2 * FIRST);
        // A body never gets more room than its size.
        let mut small = BodyBuf::new(budget.clone(), 100);
        small.reserve(10).unwrap();
        assert_eq!(small.bytes.capacity(), 100);
        assert_eq!(budget.used(), 2 * FIRST + 100);
        drop(small);
        assert_eq!(budget.used(), 2 * FIRST);
    }

    #[test]
    fn growth_is_capped_by_the_limit() {
        let budget = Rc::new(ByteBudget::new(1 << 30));
        let limit = 3 * FIRST + 7;
        let mut body = BodyBuf::new(budget.clone(), limit);
        let mut caps = Vec::new();
        while body.len() < limit {
            body.append(&[1]).unwrap();
            if caps.last() != Some(&body.bytes.capacity()) {
                caps.push(body.bytes.capacity());
            }
        }
        assert_eq!(caps, vec![FIRST, 2 * FIRST, limit]);
        assert_eq!(body.append(&[1]), Err(GrowError::TooLarge));
        let (bytes, charge) = body.into_parts();
        assert_eq!(bytes.len(), limit);
        assert_eq!(budget.used(), limit);
        drop(bytes);
        drop(charge);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn an_exhausted_budget_refuses_growth_until_given_back() {
        let budget = Rc::new(ByteBudget::new(3 * FIRST));
        let mut a = BodyBuf::new(budget.clone(), 1 << 20);
        let mut b = BodyBuf::new(budget.clone(), 1 << 20);
        a.reserve(2 * FIRST).unwrap();
        b.reserve(1).unwrap();
        assert_eq!(budget.used(), 3 * FIRST);
        // Room already given is used without a new charge; more is refused.
        b.append(&vec![0; FIRST]).unwrap();
        assert_eq!(b.append(&[0]), Err(GrowError::OverBudget));
        let mut c = BodyBuf::new(budget.clone(), 10);
        assert_eq!(c.reserve(1), Err(GrowError::OverBudget));
        assert_eq!(budget.used(), 3 * FIRST, "a refused growth takes nothing");
        drop(a);
        c.reserve(1).unwrap();
        assert_eq!(budget.used(), FIRST + 10);
    }

    #[test]
    fn impossible_sizes_are_too_large_not_a_panic() {
        let budget = Rc::new(ByteBudget::new(usize::MAX));
        let mut body = BodyBuf::new(budget, 10);
        body.append(b"0123456789").unwrap();
        assert_eq!(body.reserve(usize::MAX), Err(GrowError::TooLarge));
        assert_eq!(body.append(b"!"), Err(GrowError::TooLarge));
    }
}
