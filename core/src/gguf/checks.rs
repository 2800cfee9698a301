//! Whole-table checks without allocation: duplicate names and overlapping byte ranges.
//!
//! Both work in chunks of [`CHUNK`] entries held on the stack. A chunk is sorted and checked
//! against itself, then every later entry of the table is looked up in it by binary search.
//! That finds every offending pair `(i, j)`, `i < j`, because `i` lies in some chunk and `j`
//! is either in the same chunk or after it. The table is re-walked once per chunk, so the
//! cost is `O(n² / CHUNK · log CHUNK)`: one walk for tables of up to [`CHUNK`] entries, and
//! bounded for the largest tables the reader accepts ([`super::MAX_TENSORS`],
//! [`super::MAX_KVS`]).

use core::cmp::Ordering;

/// Entries per chunk. 128 entries of at most 32 bytes: 4 KiB of stack.
pub(crate) const CHUNK: usize = 128;

/// 64-bit FNV-1a: cheap, and good enough to spread names over a sorted chunk.
fn fnv1a(s: &[u8]) -> u64 {
    s.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Finds two equal names among those `walk` yields (each call must yield the same sequence).
/// Returns the indices of the two occurrences, earlier first.
pub(crate) fn find_duplicate<'a, I>(walk: impl Fn() -> I) -> Option<(usize, usize)>
where
    I: Iterator<Item = &'a [u8]>,
{
    let by_hash_then_name = |a: &(u64, usize, &[u8]), b: &(u64, usize, &[u8])| -> Ordering {
        a.0.cmp(&b.0).then_with(|| a.2.cmp(b.2))
    };
    let mut start = 0usize;
    loop {
        let mut buf = [(0u64, 0usize, &[][..]); CHUNK];
        let mut rest = walk().enumerate().skip(start);
        let mut len = 0usize;
        for (slot, (i, name)) in buf.iter_mut().zip(rest.by_ref()) {
            *slot = (fnv1a(name), i, name);
            len += 1;
        }
        let chunk = buf.get_mut(..len)?;
        if chunk.is_empty() {
            return None;
        }
        chunk.sort_unstable_by(by_hash_then_name);
        for pair in chunk.windows(2) {
            if let [a, b] = pair {
                if a.0 == b.0 && a.2 == b.2 {
                    return Some((a.1.min(b.1), a.1.max(b.1)));
                }
            }
        }
        for (j, name) in rest {
            let h = fnv1a(name);
            let lo = chunk.partition_point(|e| e.0 < h);
            let same_hash = chunk
                .get(lo..)
                .unwrap_or(&[])
                .iter()
                .take_while(|e| e.0 == h);
            for e in same_hash {
                if e.2 == name {
                    return Some((e.1, j));
                }
            }
        }
        start = start.checked_add(len)?;
    }
}

/// What a single pass over ranges in table order found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SortedCheck {
    /// Starts never decrease and no range overlaps the next: all are disjoint.
    Disjoint,
    /// The ranges at these indices overlap.
    Overlap(usize, usize),
    /// A range starts before its predecessor; the pass proves nothing.
    Unsorted,
}

/// The O(n) check for tables in offset order (every real file): with non-decreasing starts,
/// ranges are disjoint iff each ends by the next one's start.
pub(crate) fn check_sorted(ranges: impl Iterator<Item = (u64, u64)>) -> SortedCheck {
    let mut prev: Option<(u64, u64, usize)> = None;
    for (i, (lo, hi)) in ranges.enumerate() {
        if let Some((plo, phi, pi)) = prev {
            if lo < plo {
                return SortedCheck::Unsorted;
            }
            if phi > lo {
                return SortedCheck::Overlap(pi, i);
            }
        }
        prev = Some((lo, hi, i));
    }
    SortedCheck::Disjoint
}

/// Finds two overlapping half-open ranges `start..end` among those `walk` yields (each call
/// must yield the same sequence; every range must be non-empty). Returns their indices,
/// earlier first.
pub(crate) fn find_overlap<I>(walk: impl Fn() -> I) -> Option<(usize, usize)>
where
    I: Iterator<Item = (u64, u64)>,
{
    let mut start = 0usize;
    loop {
        let mut buf = [(0u64, 0u64, 0usize); CHUNK];
        let mut rest = walk().enumerate().skip(start);
        let mut len = 0usize;
        for (slot, (i, (lo, hi))) in buf.iter_mut().zip(rest.by_ref()) {
            *slot = (lo, hi, i);
            len += 1;
        }
        let chunk = buf.get_mut(..len)?;
        if chunk.is_empty() {
            return None;
        }
        chunk.sort_unstable_by_key(|e| e.0);
        // Sorted by start, the chunk's ranges are disjoint iff each ends by the next's start.
        for pair in chunk.windows(2) {
            if let [a, b] = pair {
                if a.1 > b.0 {
                    return Some((a.2.min(b.2), a.2.max(b.2)));
                }
            }
        }
        // For a later range, only the chunk range with the greatest start below its end can
        // overlap it: every earlier chunk range ends before that one starts.
        for (j, (lo, hi)) in rest {
            let k = chunk.partition_point(|e| e.0 < hi);
            if let Some(e) = k.checked_sub(1).and_then(|k| chunk.get(k)) {
                if e.1 > lo {
                    return Some((e.2, j));
                }
            }
        }
        start = start.checked_add(len)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_found_across_and_within_chunks() {
        extern crate std;
        use std::format;
        use std::string::String;
        use std::vec::Vec;
        let mut names: Vec<String> = (0..3 * CHUNK + 5).map(|i| format!("t{i}")).collect();
        let walk = |v: &Vec<String>| find_duplicate(|| v.iter().map(|s| s.as_bytes()));
        assert_eq!(walk(&names), None);
        names[2 * CHUNK + 7] = String::from("t3"); // across chunks
        assert_eq!(walk(&names), Some((3, 2 * CHUNK + 7)));
        names[2 * CHUNK + 7] = String::from("x");
        names[CHUNK + 9] = format!("t{}", CHUNK + 2); // within one chunk
        assert_eq!(walk(&names), Some((CHUNK + 2, CHUNK + 9)));
    }

    #[test]
    fn overlaps_found_in_any_order() {
        extern crate std;
        use std::vec::Vec;
        // Disjoint ranges of 10 bytes at 16-byte steps, listed in a scrambled order.
        let n = 2 * CHUNK + 3;
        let order: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % n as u64).collect();
        let mut ranges: Vec<(u64, u64)> = order.iter().map(|&k| (k * 16, k * 16 + 10)).collect();
        let walk = |r: &Vec<(u64, u64)>| find_overlap(|| r.iter().copied());
        assert_eq!(walk(&ranges), None);
        assert_eq!(check_sorted(ranges.iter().copied()), SortedCheck::Unsorted);
        let mut sorted = ranges.clone();
        sorted.sort_unstable();
        assert_eq!(check_sorted(sorted.iter().copied()), SortedCheck::Disjoint);
        sorted[7].1 = sorted[8].0 + 1;
        assert_eq!(
            check_sorted(sorted.iter().copied()),
            SortedCheck::Overlap(7, 8)
        );
        // Make the last range cover one byte of a range that sits in the first chunk.
        let victim = ranges[5];
        ranges[n - 1] = (victim.1 - 1, victim.1 + 3);
        assert_eq!(walk(&ranges), Some((5, n - 1)));
        // A range that swallows another whole.
        ranges[n - 1] = (100_000, 100_010);
        ranges[CHUNK + 1] = (victim.0 - 3, victim.1 + 3);
        assert_eq!(walk(&ranges), Some((5, CHUNK + 1)));
    }
}
