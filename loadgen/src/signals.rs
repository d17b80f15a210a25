//! Ending a run from outside: SIGINT/SIGTERM end it early with what was
//! measured (the JSON says `interrupted`); `--die-with-parent` makes the
//! kernel kill loadgen when the process that started it dies.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // async-signal-safe: one atomic store
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// The first SIGINT or SIGTERM ends the run; the handler then resets, so a
/// second one kills loadgen the default way.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a handler that only stores an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Has a signal asked the run to end?
#[inline]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Die (SIGKILL) when the parent process dies, so a killed harness leaves no
/// load generator behind. Err if the parent is already gone.
pub fn die_with_parent() -> Result<(), String> {
    // SAFETY: getppid and prctl with integer arguments.
    unsafe {
        let parent = libc::getppid();
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(format!("--die-with-parent: prctl failed: {}", std::io::Error::last_os_error()));
        }
        // the parent may have died before prctl: then we were re-parented
        if libc::getppid() != parent {
            return Err("--die-with-parent: the parent process is already gone".into());
        }
    }
    Ok(())
}
