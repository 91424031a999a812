//! A provided-buffer ring (`IORING_REGISTER_PBUF_RING`): the buffers a worker's multishot receives fill.
//!
//! Invariants: the ring's entry array is page aligned and lives, like the buffers, until the `BufRing` is
//! dropped, which the owner does only after the io_uring instance it was registered with is gone (the
//! worker declares its ring first, so it drops first). A buffer id the kernel hands back in a completion
//! is owned by user space until [`BufRing::recycle`] puts it back; [`BufRing::commit`] publishes recycled
//! entries with one release store of the tail.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// Alignment the kernel requires of the entry array.
const RING_ALIGN: usize = 4096;

/// A registered ring of `entries` buffers of `buf_bytes` each, in buffer group `bgid`.
pub struct BufRing {
    entries: *mut BufRingEntry,
    layout: Layout,
    bufs: Box<[u8]>,
    buf_bytes: usize,
    mask: u16,
    tail: u16,
    pending: bool,
}

// SAFETY: the raw pointer is an allocation this value owns; it is used only by the owning thread.
unsafe impl Send for BufRing {}

impl BufRing {
    /// Allocates the ring and its buffers, registers them with `ring` as group `bgid`, and provides every
    /// buffer. `entries` must be a power of two (at most 32768).
    pub fn new(ring: &IoUring, entries: u16, buf_bytes: usize, bgid: u16) -> io::Result<BufRing> {
        assert!(entries.is_power_of_two() && entries <= 32768);
        let layout = Layout::from_size_align(
            entries as usize * std::mem::size_of::<BufRingEntry>(),
            RING_ALIGN,
        )
        .map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) } as *mut BufRingEntry;
        if ptr.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut me = BufRing {
            entries: ptr,
            layout,
            bufs: vec![0u8; entries as usize * buf_bytes].into_boxed_slice(),
            buf_bytes,
            mask: entries - 1,
            tail: 0,
            pending: false,
        };
        // SAFETY: the entry array and the buffers live until `me` drops, after the ring (see the module
        // notes).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(ptr as u64, entries, bgid, 0)?;
        }
        for bid in 0..entries {
            me.recycle(bid);
        }
        me.commit();
        Ok(me)
    }

    /// The first `len` bytes of buffer `bid` (as a completion reported them).
    pub fn data(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * self.buf_bytes;
        &self.bufs[start..start + len.min(self.buf_bytes)]
    }

    /// Gives buffer `bid` back to the kernel (published by the next [`BufRing::commit`]).
    pub fn recycle(&mut self, bid: u16) {
        let addr = self.bufs.as_ptr() as u64 + bid as u64 * self.buf_bytes as u64;
        // SAFETY: `tail & mask` indexes the entry array this value owns; the kernel reads entries only up
        // to the published tail, and this one is past it.
        let entry = unsafe { &mut *self.entries.add((self.tail & self.mask) as usize) };
        entry.set_addr(addr);
        entry.set_len(self.buf_bytes as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        self.pending = true;
    }

    /// Publishes the recycled buffers to the kernel.
    pub fn commit(&mut self) {
        if !self.pending {
            return;
        }
        self.pending = false;
        // SAFETY: the tail field overlays entry 0's reserved field, which the kernel reads atomically.
        let tail = unsafe { &*(BufRingEntry::tail(self.entries) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.entries as *mut u8, self.layout) };
    }
}
