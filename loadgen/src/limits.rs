//! The open-files limit: raised to the hard limit, and checked against the
//! connections a run needs before any load starts.

/// File descriptors a run needs besides its sockets (stdio, epoll, timers, …).
const OVERHEAD_PER_THREAD: u64 = 4;
const OVERHEAD: u64 = 32;

/// Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force.
pub fn raise_nofile() -> u64 {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return 1024;
        }
        if rl.rlim_cur < rl.rlim_max {
            let want = libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                rl.rlim_cur = rl.rlim_max;
            }
        }
    }
    rl.rlim_cur
}

/// Err with a one-line explanation when `sockets` cannot all be open at once.
pub fn check_sockets(sockets: u64, threads: u64, limit: u64, what: &str) -> Result<(), String> {
    let need = sockets + OVERHEAD + OVERHEAD_PER_THREAD * threads;
    if need > limit {
        return Err(format!(
            "{what} {sockets} needs about {need} open files but the limit is {limit}; lower {what} or raise the hard limit (ulimit -Hn)"
        ));
    }
    Ok(())
}

/// Err with a one-line explanation when the legitimate `sockets` and the
/// `noise` connections cannot all be open at once.
pub fn check_with_noise(sockets: u64, noise: u64, threads: u64, limit: u64, what: &str) -> Result<(), String> {
    let need = sockets + noise + OVERHEAD + OVERHEAD_PER_THREAD * threads;
    if need > limit {
        return Err(format!(
            "{what} {sockets} and --noise-connections {noise} need about {need} open files but the limit is {limit}; lower them or raise the hard limit (ulimit -Hn)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_check() {
        assert!(check_sockets(100, 1, 20_000, "--connections").is_ok());
        let e = check_sockets(30_000, 1, 20_000, "--connections").unwrap_err();
        assert!(e.contains("--connections 30000") && e.contains("20000"), "{e}");
        assert!(raise_nofile() >= 1024);
        assert!(check_with_noise(100, 10_000, 2, 20_000, "--connections").is_ok());
        let e = check_with_noise(10_000, 10_000, 2, 20_000, "--connections").unwrap_err();
        assert!(e.contains("--connections 10000 and --noise-connections 10000") && !e.contains('\n'), "{e}");
    }
}
