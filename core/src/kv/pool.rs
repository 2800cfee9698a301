//! [`PagePool`]: fixed pages shared by every session, with reference counts.

use super::{KvError, KvGeometry};

/// A page-table entry with no page behind it.
pub const NO_PAGE: u32 = u32::MAX;

/// Every session's KV cache, in fixed pages from one pool.
///
/// Memory comes from the host and never grows: `data` holds `n_pages` pages of
/// [`KvGeometry::page_units`] `u16`s, and `meta` the `u32` bookkeeping, laid out as
/// ```text
/// refs   (n_pages)                        reference count of each page, 0 = free
/// free   (n_pages)                        stack of free page indices
/// tables (slots, pages_per_slot)          page of each (layer, page-of-layer), or NO_PAGE
/// ```
/// A session (slot) takes pages as it writes positions. Pages can be shared between slots
/// ([`PagePool::share_prefix`]): a shared page is copied before it is written (copy on write),
/// so a slot never sees another's later tokens.
///
/// With `n_pages = slots × pages_per_slot` (what [`crate::plan::Plan`] reserves) taking a
/// page never fails: a slot's table has `pages_per_slot` entries, and sharing only lowers the
/// count of distinct pages in use.
pub struct PagePool<D, M> {
    geo: KvGeometry,
    slots: usize,
    n_pages: usize,
    n_free: usize,
    data: D,
    meta: M,
}

/// `u32`s of `meta` for `slots` sessions over `n_pages` pages.
pub fn meta_len(geo: &KvGeometry, slots: usize, n_pages: usize) -> Result<usize, KvError> {
    let tables = slots
        .checked_mul(geo.pages_per_slot()?)
        .ok_or(KvError::Overflow)?;
    n_pages
        .checked_mul(2)
        .and_then(|x| x.checked_add(tables))
        .ok_or(KvError::Overflow)
}

/// `u16`s of `data` for `n_pages` pages.
pub fn data_len(geo: &KvGeometry, n_pages: usize) -> Result<usize, KvError> {
    n_pages
        .checked_mul(geo.page_units()?)
        .ok_or(KvError::Overflow)
}

impl<D: AsRef<[u16]> + AsMut<[u16]>, M: AsRef<[u32]> + AsMut<[u32]>> PagePool<D, M> {
    /// A pool of `n_pages` pages for `slots` sessions over host memory: `data` must hold
    /// [`data_len`] and `meta` [`meta_len`] elements (more is ignored). Every slot starts empty.
    pub fn new(
        geo: KvGeometry,
        slots: usize,
        n_pages: usize,
        data: D,
        mut meta: M,
    ) -> Result<Self, KvError> {
        if slots == 0 || n_pages >= NO_PAGE as usize {
            return Err(KvError::BadShape);
        }
        if data.as_ref().len() < data_len(&geo, n_pages)?
            || meta.as_ref().len() < meta_len(&geo, slots, n_pages)?
        {
            return Err(KvError::TooSmall);
        }
        let m = meta.as_mut();
        m[..n_pages].fill(0);
        // The free stack pops from the end: page 0 is handed out first.
        for (i, f) in m[n_pages..2 * n_pages].iter_mut().enumerate() {
            *f = (n_pages - 1 - i) as u32;
        }
        let tables = slots * geo.pages_per_slot()?;
        m[2 * n_pages..2 * n_pages + tables].fill(NO_PAGE);
        Ok(PagePool {
            geo,
            slots,
            n_pages,
            n_free: n_pages,
            data,
            meta,
        })
    }

    /// The geometry of every slot.
    pub fn geometry(&self) -> &KvGeometry {
        &self.geo
    }

    /// Sessions the pool serves.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Pages in the pool.
    pub fn pages(&self) -> usize {
        self.n_pages
    }

    /// Pages not held by any slot.
    pub fn free_pages(&self) -> usize {
        self.n_free
    }

    /// The cache of session `slot`, for one forward call.
    pub fn slot(&mut self, slot: usize) -> Result<SlotKv<'_>, KvError> {
        if slot >= self.slots {
            return Err(KvError::NoSlot);
        }
        let pps = self.geo.pages_per_slot()?;
        let n = self.n_pages;
        let (refs, rest) = self.meta.as_mut().split_at_mut(n);
        let (free, tables) = rest.split_at_mut(n);
        Ok(SlotKv {
            geo: &self.geo,
            data: self.data.as_mut(),
            refs,
            free,
            n_free: &mut self.n_free,
            table: &mut tables[slot * pps..(slot + 1) * pps],
        })
    }

    /// Returns every page of `slot` to the pool (pages other slots share stay theirs).
    pub fn release(&mut self, slot: usize) -> Result<(), KvError> {
        let mut s = self.slot(slot)?;
        for i in 0..s.table.len() {
            let pg = s.table[i];
            if pg != NO_PAGE {
                s.unref(pg);
                s.table[i] = NO_PAGE;
            }
        }
        Ok(())
    }

    /// Gives `dst` (emptied first) the first `n` positions of `src` by sharing `src`'s pages,
    /// as when a new session starts with the same system prompt: nothing is copied until one
    /// of them writes a shared page. `src_len` is how many positions `src` holds.
    ///
    /// A sliding layer's ring must still hold the positions `dst` will read: this fails with
    /// [`KvError::NotShareable`] once `src` has written so far past `n` that the ring slots of
    /// the last window before `n` were overwritten.
    pub fn share_prefix(
        &mut self,
        src: usize,
        dst: usize,
        n: usize,
        src_len: usize,
    ) -> Result<(), KvError> {
        if src >= self.slots || dst >= self.slots || src == dst || n > src_len {
            return Err(KvError::NoSlot);
        }
        if n > self.geo.ctx {
            return Err(KvError::Range);
        }
        for il in 0..self.geo.n_layer {
            let cap = self.geo.cap(il);
            // Positions src_len - cap .. src_len are in the ring; dst needs the last
            // min(n, cap) before n (it reads at most the window, and the window ≤ cap).
            if src_len > cap && src_len - cap > n.saturating_sub(cap) {
                return Err(KvError::NotShareable);
            }
        }
        self.release(dst)?;
        let pps = self.geo.pages_per_slot()?;
        let n_pages = self.n_pages;
        let m = self.meta.as_mut();
        let (refs, rest) = m.split_at_mut(n_pages);
        let tables = &mut rest[n_pages..];
        for il in 0..self.geo.n_layer {
            let base = self.geo.table_base(il);
            let cap = self.geo.cap(il);
            let used = n.min(cap).div_ceil(super::PAGE_POSITIONS);
            for j in 0..used {
                let pg = tables[src * pps + base + j];
                if pg == NO_PAGE {
                    return Err(KvError::Range);
                }
                refs[pg as usize] = refs[pg as usize].checked_add(1).ok_or(KvError::Overflow)?;
                tables[dst * pps + base + j] = pg;
            }
        }
        Ok(())
    }
}

/// One session's view of the pool: writes take (or copy) pages, reads go through the table.
pub struct SlotKv<'a> {
    geo: &'a KvGeometry,
    data: &'a mut [u16],
    refs: &'a mut [u32],
    free: &'a mut [u32],
    n_free: &'a mut usize,
    table: &'a mut [u32],
}

impl SlotKv<'_> {
    /// The geometry.
    pub fn geometry(&self) -> &KvGeometry {
        self.geo
    }

    fn unref(&mut self, pg: u32) {
        let r = &mut self.refs[pg as usize];
        *r = r.saturating_sub(1);
        if *r == 0 {
            self.free[*self.n_free] = pg;
            *self.n_free += 1;
        }
    }

    fn take(&mut self) -> Result<u32, KvError> {
        if *self.n_free == 0 {
            return Err(KvError::PoolEmpty);
        }
        *self.n_free -= 1;
        let pg = self.free[*self.n_free];
        self.refs[pg as usize] = 1;
        Ok(pg)
    }

    /// The `u16` units of position `pos` of `layer`, keys then values, ready to be written:
    /// the page is taken if the slot has none there, and copied first if it is shared.
    pub fn row_mut(
        &mut self,
        layer: usize,
        pos: usize,
    ) -> Result<(&mut [u16], &mut [u16]), KvError> {
        if layer >= self.geo.n_layer || pos >= self.geo.ctx {
            return Err(KvError::Range);
        }
        let cap = self.geo.cap(layer);
        let slot = pos % cap;
        let entry = self.geo.table_base(layer) + slot / super::PAGE_POSITIONS;
        let pu = self.geo.page_units()?;
        let mut pg = self.table[entry];
        if pg == NO_PAGE {
            pg = self.take()?;
            self.table[entry] = pg;
        } else if self.refs[pg as usize] > 1 {
            let fresh = self.take()?;
            let (a, b) = (pg as usize * pu, fresh as usize * pu);
            self.data.copy_within(a..a + pu, b);
            self.unref(pg);
            self.table[entry] = fresh;
            pg = fresh;
        }
        let ku = self.geo.row_units(self.geo.k_dim)?;
        let vu = self.geo.row_units(self.geo.v_dim)?;
        let page = &mut self.data[pg as usize * pu..(pg as usize + 1) * pu];
        let (keys, values) = page.split_at_mut(super::PAGE_POSITIONS * ku);
        let i = slot % super::PAGE_POSITIONS;
        Ok((
            &mut keys[i * ku..(i + 1) * ku],
            &mut values[i * vu..(i + 1) * vu],
        ))
    }

    /// A read view of `layer`.
    pub fn layer(&self, layer: usize) -> Result<LayerView<'_>, KvError> {
        if layer >= self.geo.n_layer {
            return Err(KvError::Range);
        }
        let base = self.geo.table_base(layer);
        let pages = self.geo.layer_pages(layer);
        let ku = self.geo.row_units(self.geo.k_dim)?;
        let vu = self.geo.row_units(self.geo.v_dim)?;
        Ok(LayerView {
            data: self.data,
            table: &self.table[base..base + pages],
            cap: self.geo.cap(layer),
            k_units: ku,
            v_units: vu,
            page_units: self.geo.page_units()?,
        })
    }
}

/// One layer of one session, for reading: position `t` is in slot `t % cap`.
#[derive(Clone, Copy)]
pub struct LayerView<'a> {
    data: &'a [u16],
    table: &'a [u32],
    /// Slots (positions kept).
    pub cap: usize,
    /// `u16` units of one position's keys.
    pub k_units: usize,
    /// `u16` units of one position's values.
    pub v_units: usize,
    page_units: usize,
}

impl<'a> LayerView<'a> {
    fn page(&self, t: usize) -> Option<(&'a [u16], usize)> {
        let slot = t % self.cap;
        let pg = *self.table.get(slot / super::PAGE_POSITIONS)?;
        if pg == NO_PAGE {
            return None;
        }
        let start = pg as usize * self.page_units;
        let page = self.data.get(start..start + self.page_units)?;
        Some((page, slot % super::PAGE_POSITIONS))
    }

    /// Keys of position `t` (`k_units` units), or `None` if it was never written.
    #[inline]
    pub fn key(&self, t: usize) -> Option<&'a [u16]> {
        let (page, i) = self.page(t)?;
        page.get(i * self.k_units..(i + 1) * self.k_units)
    }

    /// Values of position `t` (`v_units` units), or `None` if it was never written.
    #[inline]
    pub fn value(&self, t: usize) -> Option<&'a [u16]> {
        let (page, i) = self.page(t)?;
        let off = super::PAGE_POSITIONS * self.k_units + i * self.v_units;
        page.get(off..off + self.v_units)
    }

    /// Positions `t..t + n` stored back to back in one page, for reading a range without a
    /// page-table lookup per position: `n` is at most `max` and stops at the end of `t`'s
    /// page and where the ring wraps. Returns their keys (`n × k_units` units, position by
    /// position), their values (`n × v_units`) and `n`; `None` if the page was never written
    /// or `max` is 0.
    pub fn run(&self, t: usize, max: usize) -> Option<(&'a [u16], &'a [u16], usize)> {
        let (page, i) = self.page(t)?;
        let slot = t % self.cap;
        let n = max.min(super::PAGE_POSITIONS - i).min(self.cap - slot);
        if n == 0 {
            return None;
        }
        let keys = page.get(i * self.k_units..(i + n) * self.k_units)?;
        let off = super::PAGE_POSITIONS * self.k_units;
        let values = page.get(off + i * self.v_units..off + (i + n) * self.v_units)?;
        Some((keys, values, n))
    }
}
