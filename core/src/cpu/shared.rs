//! [`Shared`]: a mutable slice that parallel tasks write disjoint parts of.

use core::marker::PhantomData;
use core::ops::Range;

/// A `&mut [T]` split at run time between tasks of one [`Parallel::run`] call.
///
/// Tasks of a matmul write strided output ranges (a range of weight rows in every activation
/// row), which `chunks_mut` cannot express; this hands out sub-slices by range instead, and
/// the caller promises the ranges of concurrently live slices are disjoint.
///
/// [`Parallel::run`]: crate::exec::Parallel::run
pub(super) struct Shared<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Shared` is a `&mut [T]` whose parts go to different threads; with `T: Send` that
// is what `&mut [T]: Send` already allows, and `part` requires that no two threads get
// overlapping parts.
unsafe impl<T: Send> Sync for Shared<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Shared<'_, T> {}

impl<'a, T> Shared<'a, T> {
    /// Borrows `s` for as long as the `Shared` lives.
    pub(super) fn new(s: &'a mut [T]) -> Self {
        Shared {
            ptr: s.as_mut_ptr(),
            len: s.len(),
            _borrow: PhantomData,
        }
    }

    /// The elements in `r`, or `None` when `r` is not inside the slice.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no other slice obtained from this `Shared` (on any
    /// thread) may overlap `r`.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn part(&self, r: Range<usize>) -> Option<&mut [T]> {
        if r.start > r.end || r.end > self.len {
            return None;
        }
        // SAFETY: `r` lies inside the borrowed slice (checked above), which outlives `self`;
        // the caller guarantees no other live part overlaps it, so this is the only
        // reference to these elements.
        Some(unsafe { core::slice::from_raw_parts_mut(self.ptr.add(r.start), r.end - r.start) })
    }
}
