//! One worker thread: a hand-written event loop that runs a load model over
//! the connection machinery, on the chosen I/O backend, until the run ends.
//! Owns: the loop and its timing. May use: `net`, the backends (`epoll`,
//! `uring`), `models`, `record`, `progress`, `signals`.

use crate::epoll::Epoll;
use crate::fairness::SlotCounts;
use crate::models::{seed_for, Model};
use crate::net::{Backend, Net, Plan, Sockets};
use crate::progress::Shared;
use crate::record::Recorder;
use crate::signals;
use crate::uring::Uring;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn publish(shared: &Shared, tid: usize, rec: &Recorder) {
    shared.requests[tid].store(rec.requests(), Ordering::Relaxed);
    shared.errors[tid].store(rec.errors.iter().sum(), Ordering::Relaxed);
}

/// Run `model` on thread `tid` with up to `budget` measured requests.
pub fn run<M: Model>(plan: &Plan, shared: &Shared, tid: usize, budget: Option<u64>, model: M) -> io::Result<Recorder> {
    match plan.io {
        Backend::Epoll => run_on(Epoll::new()?, plan, shared, tid, budget, model),
        Backend::Uring => run_on(Uring::new()?, plan, shared, tid, budget, model),
    }
}

fn run_on<S: Sockets, M: Model>(sock: S, plan: &Plan, shared: &Shared, tid: usize, budget: Option<u64>, mut model: M) -> io::Result<Recorder> {
    // default timer slack (50 µs) would blur open-load send times
    // SAFETY: prctl with an integer argument affects only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut rec = Recorder::new(plan.measure_start, M::SERVICE_TIME);
    rec.warmup_start = plan.start;
    let rng = Pcg64Mcg::seed_from_u64(seed_for(plan.seed, tid, 0));
    let mut net = Net::new(plan, sock, rec, rng, budget);
    let window = plan.end.map(|e| e.saturating_duration_since(plan.measure_start));
    net.fair = model.fair_slots().map(|n| SlotCounts::new(n, plan.measure_start, window));
    let shortest = plan.timeout.min(plan.connect_timeout);
    let scan_every = (shortest / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));

    let now = Instant::now();
    if plan.start > now {
        std::thread::sleep(plan.start - now);
    }
    let now = Instant::now();
    let late = now.saturating_duration_since(plan.start).as_micros() as u64;
    shared.start_late_us.fetch_max(late, Ordering::Relaxed);
    model.start(&mut net, now);
    S::flush_dirty(&mut net, &mut model, now);
    let mut next_scan = now + scan_every;
    let mut second = usize::MAX;
    loop {
        let now = Instant::now();
        if net.ended || plan.end.is_some_and(|e| now >= e) || signals::interrupted() {
            break;
        }
        if net.budget == Some(0) && net.inflight_total == 0 && model.queued() == 0 {
            break;
        }
        model.tick(&mut net, now);
        S::flush_dirty(&mut net, &mut model, now);
        if plan.end.is_none() && net.inflight_total == 0 && model.exhausted(now) {
            break; // -n without -d, but the schedule or the users are done first
        }
        if now >= next_scan {
            net.scan_timeouts(&mut model, now);
            S::flush_dirty(&mut net, &mut model, now);
            next_scan = now + scan_every;
            publish(shared, tid, &net.rec);
        }
        let sec = net.rec.touch(now, net.active_conns, model.active_users());
        if sec != second {
            if sec > 0 && second != usize::MAX {
                shared.p99_us[tid].store(net.rec.last_p99_us, Ordering::Relaxed);
            }
            second = sec;
        }
        let mut wake = next_scan;
        if let Some(e) = plan.end {
            wake = wake.min(e);
        }
        if let Some(t) = model.wake_at(now) {
            wake = wake.min(t);
        }
        if let Err(e) = S::wait(&mut net, &mut model, wake, now) {
            eprintln!("loadgen: waiting for I/O failed: {e}");
            break;
        }
    }
    // the run's end: responses after the planned end are not part of it
    let now = Instant::now();
    let end = plan.end.map_or(now, |e| e.min(now));
    model.catch_up(&mut net, end);
    net.end_of_run(end);
    model.finish(&mut net.rec, end);
    net.rec.fairness = net.fair.as_ref().map(|f| f.summary(end, plan.timeout));
    net.rec.finish();
    publish(shared, tid, &net.rec);
    // sockets close as `net` drops
    Ok(net.rec)
}
