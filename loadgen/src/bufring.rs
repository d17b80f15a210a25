//! A ring of provided buffers for io_uring receives (kernel 5.19+): the
//! kernel picks a free buffer when data arrives, so an idle connection holds
//! none; the loop copies the bytes out and hands the buffer straight back.

use io_uring::types::BufRingEntry;
use io_uring::IoUring;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

pub struct BufRing {
    /// Entries shared with the kernel (page-aligned, mmap'd).
    ring: *mut BufRingEntry,
    entries: u16,
    tail: u16,
    bufs: Vec<u8>,
    size: usize,
    pub bgid: u16,
}

impl BufRing {
    /// `entries` (a power of two) buffers of `size` bytes, registered as group `bgid`.
    pub fn new(uring: &IoUring, entries: u16, size: usize, bgid: u16) -> io::Result<BufRing> {
        assert!(entries.is_power_of_two());
        let bytes = entries as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping; checked for failure below.
        let ring = unsafe {
            libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut b = BufRing { ring: ring as *mut BufRingEntry, entries, tail: 0, bufs: vec![0; entries as usize * size], size, bgid };
        // SAFETY: the mapping lives until `b` drops, which unregisters it first.
        unsafe { uring.submitter().register_buf_ring_with_flags(ring as u64, entries, bgid, 0)? };
        for bid in 0..entries {
            b.push(bid);
        }
        b.publish();
        Ok(b)
    }

    /// Queue buffer `bid` as free again (seen by the kernel at `publish`).
    fn push(&mut self, bid: u16) {
        let slot = (self.tail & (self.entries - 1)) as usize;
        // SAFETY: slot < entries, inside the mapping.
        let e = unsafe { &mut *self.ring.add(slot) };
        e.set_addr(self.bufs[bid as usize * self.size..].as_ptr() as u64);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&mut self) {
        // SAFETY: the ring's tail is the u16 at byte 14 of its first entry
        // (io_uring_buf_ring's layout); the kernel reads it with acquire.
        let tail = unsafe { &*((self.ring as *mut u8).add(14) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }

    /// The first `len` bytes of buffer `bid`, which the kernel filled. The
    /// slice stays valid until `recycle(bid)`; it is not tied to `self` so the
    /// caller can go on using the connection machinery meanwhile.
    pub fn data<'x>(&self, bid: u16, len: usize) -> &'x [u8] {
        let start = bid as usize * self.size;
        assert!(len <= self.size && start + len <= self.bufs.len());
        // SAFETY: in bounds (checked); `bufs` is never resized, and buffer
        // `bid` is neither given to the kernel nor written until recycled.
        unsafe { std::slice::from_raw_parts(self.bufs.as_ptr().add(start), len) }
    }

    /// Hand buffer `bid` back to the kernel.
    pub fn recycle(&mut self, bid: u16) {
        self.push(bid);
        self.publish();
    }

    /// Unregister from `uring` (before the mapping goes).
    pub fn unregister(&mut self, uring: &IoUring) {
        let _ = uring.submitter().unregister_buf_ring(self.bgid);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        let bytes = self.entries as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: our own mapping, unregistered by the owner before this drop.
        unsafe { libc::munmap(self.ring as *mut libc::c_void, bytes) };
    }
}
