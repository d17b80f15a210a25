//! A timerfd registered with mio: epoll_wait's millisecond timeout would make
//! open-load sends up to 1 ms late, which corrected latencies would then
//! include. A timerfd wakes the loop with microsecond precision.
//!
//! Cost per wake-up is what limits open load at high rates, so the timer is
//! armed with an absolute deadline (no drift from the time spent between
//! reading the clock and arming) and its expirations are never read: mio
//! registers edge-triggered, every expiry is a new edge, and
//! timerfd_settime resets the expiry count — one syscall per wake saved.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::RawFd;
use std::time::Instant;

pub struct TimerFd {
    fd: RawFd,
    armed_for: Option<Instant>,
    clock: Monotonic,
}

fn monotonic_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// An `Instant` as CLOCK_MONOTONIC nanoseconds, for absolute kernel deadlines.
pub struct Monotonic {
    /// The same moment as an `Instant` and as a CLOCK_MONOTONIC reading
    /// (`Instant` is CLOCK_MONOTONIC on Linux but does not expose it).
    base: Instant,
    base_ns: u128,
}

impl Monotonic {
    pub fn new() -> Monotonic {
        // bracket the clock reading with two Instants and take the middle
        let a = Instant::now();
        let ns = monotonic_ns();
        let b = Instant::now();
        Monotonic { base: a + (b - a) / 2, base_ns: ns }
    }

    /// `at` in CLOCK_MONOTONIC ns (at least 1 ns after the base: never 0).
    pub fn ns(&self, at: Instant) -> u128 {
        self.base_ns + at.saturating_duration_since(self.base).as_nanos().max(1)
    }
}

impl Default for Monotonic {
    fn default() -> Self {
        Monotonic::new()
    }
}

impl TimerFd {
    pub fn new(registry: &Registry, token: Token) -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the fd is owned by the returned value.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let t = TimerFd { fd, armed_for: None, clock: Monotonic::new() };
        registry.register(&mut SourceFd(&fd), token, Interest::READABLE)?;
        // Default timer slack (50 µs) would blur open-load send times.
        // SAFETY: prctl with an integer argument affects only this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        Ok(t)
    }

    /// Make sure the loop wakes by `at`. An earlier pending arm is kept;
    /// waking early is harmless.
    pub fn arm(&mut self, at: Instant, now: Instant) {
        if let Some(a) = self.armed_for {
            if a <= at && a > now {
                return;
            }
        }
        // never 0: an all-zero it_value would disarm
        let ns = self.clock.ns(at);
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid fd and pointer to a live itimerspec. A deadline in the
        // past fires at once.
        unsafe { libc::timerfd_settime(self.fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        self.armed_for = Some(at);
    }

    /// The timer fired. Its readiness is not cleared with a read (see the
    /// module comment); the next arm resets it.
    pub fn fired(&mut self) {
        self.armed_for = None;
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};
    use std::time::Duration;

    #[test]
    fn wakes_at_absolute_deadlines_without_reads() {
        let mut poll = Poll::new().unwrap();
        let mut t = TimerFd::new(poll.registry(), Token(7)).unwrap();
        let mut events = Events::with_capacity(8);
        for ms in [3u64, 1, 2] {
            let now = Instant::now();
            let at = now + Duration::from_millis(ms);
            t.arm(at, now);
            let mut woke = false;
            while !woke {
                poll.poll(&mut events, Some(Duration::from_secs(2))).unwrap();
                assert!(!events.is_empty(), "timer did not fire");
                woke = events.iter().any(|e| e.token() == Token(7));
            }
            t.fired();
            let late = Instant::now().saturating_duration_since(at);
            // the Instant <-> CLOCK_MONOTONIC mapping is exact to well under 50 µs
            assert!(Instant::now() + Duration::from_micros(50) >= at, "woke before the deadline");
            assert!(late < Duration::from_millis(500), "woke {late:?} late");
        }
    }
}
