//! A timerfd registered with mio: epoll_wait's millisecond timeout would make
//! open-load sends up to 1 ms late, which corrected latencies would then
//! include. A timerfd wakes the loop with microsecond precision.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

pub struct TimerFd {
    fd: RawFd,
    armed_for: Option<Instant>,
}

impl TimerFd {
    pub fn new(registry: &Registry, token: Token) -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the fd is owned by the returned value.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let t = TimerFd { fd, armed_for: None };
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
        let d = at.saturating_duration_since(now).max(Duration::from_micros(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long },
        };
        // SAFETY: valid fd and pointer to a live itimerspec.
        unsafe { libc::timerfd_settime(self.fd, 0, &spec, std::ptr::null_mut()) };
        self.armed_for = Some(at);
    }

    /// The timer fired: clear its readiness.
    pub fn fired(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into a local buffer.
        unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, 8) };
        self.armed_for = None;
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}
