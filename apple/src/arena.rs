//! The activation arena on the GPU: the Layout's `f32` arena, split into storage buffers that
//! each fit the adapter's largest binding.
//!
//! Splits fall only between groups of overlapping regions, so every region the forward pass
//! names (and every prefix or row range of one) lies inside one buffer.

use glimmer_core::exec::Buf;

use crate::GpuError;

/// Element ranges `[start, end)` of the arena buffers, in order.
///
/// `regions` are the named regions of the arena (empty ones are ignored), `total` its length in
/// elements and `max` the most elements one buffer may hold.
pub(crate) fn split(
    regions: &[Buf],
    total: usize,
    max: usize,
) -> Result<Vec<(usize, usize)>, GpuError> {
    let mut iv: Vec<(usize, usize)> = regions
        .iter()
        .filter(|b| b.len > 0)
        .map(|b| Ok((b.off, b.off.checked_add(b.len).ok_or(GpuError::BadRegion)?)))
        .collect::<Result<_, GpuError>>()?;
    if iv.iter().any(|&(_, e)| e > total) {
        return Err(GpuError::BadRegion);
    }
    iv.sort_unstable();
    // Clusters of overlapping regions.
    let mut clusters: Vec<(usize, usize)> = Vec::new();
    for (s, e) in iv {
        match clusters.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => clusters.push((s, e)),
        }
    }
    let mut segs: Vec<(usize, usize)> = Vec::new();
    for (s, e) in clusters {
        if e - s > max {
            return Err(GpuError::TooLarge);
        }
        match segs.last_mut() {
            Some(last) if e - last.0 <= max => last.1 = e,
            _ => segs.push((s, e)),
        }
    }
    if segs.is_empty() {
        segs.push((0, total.clamp(1, max.max(1))));
    }
    Ok(segs)
}

/// Which buffer holds `b`, and `b`'s offset inside it.
pub(crate) fn locate(segs: &[(usize, usize)], b: Buf) -> Result<(usize, u32), GpuError> {
    let end = b.off.checked_add(b.len).ok_or(GpuError::BadRegion)?;
    let i = segs
        .iter()
        .position(|&(s, e)| s <= b.off && end <= e)
        .ok_or(GpuError::BadRegion)?;
    u32::try_from(b.off - segs[i].0)
        .map(|o| (i, o))
        .map_err(|_| GpuError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(off: usize, len: usize) -> Buf {
        Buf { off, len }
    }

    #[test]
    fn one_buffer_when_it_fits() {
        let s = split(&[b(0, 10), b(5, 10), b(32, 4)], 36, 100).unwrap();
        assert_eq!(s, vec![(0, 36)]);
    }

    #[test]
    fn splits_between_clusters_only() {
        // Regions 0..10 and 5..15 overlap: they must share a buffer.
        let regs = [b(0, 10), b(5, 10), b(16, 8), b(30, 10)];
        let s = split(&regs, 40, 16).unwrap();
        assert_eq!(s, vec![(0, 15), (16, 24), (30, 40)]);
        for r in regs {
            let (i, off) = locate(&s, r).unwrap();
            assert_eq!(s[i].0 + off as usize, r.off);
        }
        assert_eq!(locate(&s, b(12, 6)), Err(GpuError::BadRegion));
        assert_eq!(split(&regs, 40, 12), Err(GpuError::TooLarge));
    }
}
