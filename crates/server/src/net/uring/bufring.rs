//! A provided-buffer ring (`IORING_REGISTER_PBUF_RING`): the buffers a worker's multishot receives fill.
//!
//! The ring is shared (`Rc`) by its worker and the worker's connections: a buffer the kernel filled is
//! read by its connection's `Conn` straight out of the ring (`UringSocket` keeps the buffer ids, not a
//! copy), so the bytes a worker has received and not yet handed to a session live in this fixed-size
//! allocation, whatever the number of connections or how fast they send.
//!
//! Invariants: the ring's entry array is page aligned and lives, like the buffers, until the `BufRing` is
//! dropped, which happens only after the io_uring instance it was registered with is gone (the worker
//! declares its ring first, so it drops first; connections hold the other references and drop after
//! it). A buffer id the kernel hands back in a completion is owned by user space until
//! [`BufRing::recycle`] puts it back, and only then; [`BufRing::commit`] publishes recycled entries with
//! one release store of the tail. User space reads a buffer only while it owns it, and never writes one.

use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// Alignment the kernel requires of the entry array.
const RING_ALIGN: usize = 4096;

/// A registered ring of `entries` buffers of `buf_bytes` each, in buffer group `bgid`. Single-threaded:
/// used only by the worker thread that made it (hence the `Cell`s and no `Send`).
pub struct BufRing {
    entries: *mut BufRingEntry,
    entries_layout: Layout,
    bufs: *mut u8,
    bufs_layout: Layout,
    buf_bytes: usize,
    count: u16,
    mask: u16,
    tail: Cell<u16>,
    pending: Cell<bool>,
    /// Buffers user space owns now (handed out by completions, not yet recycled).
    held: Cell<u16>,
}

impl BufRing {
    /// Allocates the ring and its buffers, registers them with `ring` as group `bgid`, and provides every
    /// buffer. `entries` must be a power of two (at most 32768).
    pub fn new(ring: &IoUring, entries: u16, buf_bytes: usize, bgid: u16) -> io::Result<BufRing> {
        assert!(entries.is_power_of_two() && entries <= 32768 && buf_bytes > 0);
        let entries_layout = Layout::from_size_align(
            entries as usize * std::mem::size_of::<BufRingEntry>(),
            RING_ALIGN,
        )
        .map_err(io::Error::other)?;
        let bufs_layout = Layout::from_size_align(entries as usize * buf_bytes, RING_ALIGN)
            .map_err(io::Error::other)?;
        // SAFETY: both layouts have a non-zero size. The buffers are left uninitialised (user space reads
        // only bytes the kernel wrote), so their pages become resident as receives first use them.
        let (ptr, bufs) = unsafe { (alloc_zeroed(entries_layout), alloc(bufs_layout)) };
        if ptr.is_null() || bufs.is_null() {
            // SAFETY: whichever allocation succeeded was made with that layout just above.
            unsafe {
                if !ptr.is_null() {
                    dealloc(ptr, entries_layout);
                }
                if !bufs.is_null() {
                    dealloc(bufs, bufs_layout);
                }
            }
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let me = BufRing {
            entries: ptr as *mut BufRingEntry,
            entries_layout,
            bufs,
            bufs_layout,
            buf_bytes,
            count: entries,
            mask: entries - 1,
            tail: Cell::new(0),
            pending: Cell::new(false),
            held: Cell::new(entries),
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

    /// Bytes per buffer.
    pub fn buf_bytes(&self) -> usize {
        self.buf_bytes
    }

    /// A completion handed buffer `bid` to user space (counted until it is recycled).
    pub fn taken(&self, bid: u16) {
        debug_assert!(bid < self.count && self.held.get() < self.count);
        self.held.set(self.held.get() + 1);
    }

    /// How many buffers user space holds now.
    pub fn held(&self) -> u16 {
        self.held.get()
    }

    /// The first `len` bytes of buffer `bid` (as a completion reported them). The caller owns `bid`
    /// (a completion handed it over and it was not recycled since).
    pub fn data(&self, bid: u16, len: usize) -> &[u8] {
        assert!(bid < self.count);
        // SAFETY: in bounds (checked above and by the `min`); the kernel does not write a buffer user space
        // owns, so nothing changes these bytes while the slice lives.
        unsafe {
            std::slice::from_raw_parts(
                self.bufs.add(bid as usize * self.buf_bytes),
                len.min(self.buf_bytes),
            )
        }
    }

    /// Gives buffer `bid` back to the kernel (published by the next [`BufRing::commit`]).
    pub fn recycle(&self, bid: u16) {
        assert!(bid < self.count);
        let tail = self.tail.get();
        // SAFETY: `tail & mask` indexes the entry array this value owns; the kernel reads entries only up
        // to the published tail, and this one is past it.
        let entry = unsafe { &mut *self.entries.add((tail & self.mask) as usize) };
        // SAFETY: in bounds of the buffer allocation.
        entry.set_addr(unsafe { self.bufs.add(bid as usize * self.buf_bytes) } as u64);
        entry.set_len(self.buf_bytes as u32);
        entry.set_bid(bid);
        self.tail.set(tail.wrapping_add(1));
        self.pending.set(true);
        self.held.set(self.held.get() - 1);
    }

    /// Publishes the recycled buffers to the kernel.
    pub fn commit(&self) {
        if !self.pending.replace(false) {
            return;
        }
        // SAFETY: the tail field overlays entry 0's reserved field, which the kernel reads atomically.
        let tail = unsafe { &*(BufRingEntry::tail(self.entries) as *const AtomicU16) };
        tail.store(self.tail.get(), Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with these layouts.
        unsafe {
            dealloc(self.entries as *mut u8, self.entries_layout);
            dealloc(self.bufs, self.bufs_layout);
        }
    }
}
