//! Turns a `Config` into worker threads, and their recorders into one result.

use crate::cli::{Config, Mode};
use crate::limits;
use crate::models::{Closed, Model, Open, Sessions};
use crate::models::{open::OpenPlan, sessions::SessionsPlan};
use crate::net::Plan;
use crate::progress::{Progress, Shared};
use crate::record::Recorder;
use crate::protocol::request::RequestBytes;
use crate::worker;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

pub struct RunResult {
    pub started_at: SystemTime,
    /// Measured time in seconds (warm-up excluded).
    pub duration_s: f64,
    pub rec: Recorder,
    /// A signal ended the run early.
    pub interrupted: bool,
    /// How late the latest thread started load after the planned start.
    pub start_late_us: u64,
    /// What the noise connections saw (--noise).
    pub noise: Option<crate::noise::Report>,
}

#[derive(Debug)]
pub enum RunError {
    /// Bad options or limits: exit code 2.
    Usage(String),
    /// Something failed while running: exit code 1.
    Fatal(String),
}

pub fn build_plan(cfg: &Config, start: Instant) -> Result<Plan, RunError> {
    let req = RequestBytes::new(&cfg.request).map_err(RunError::Usage)?;
    let measure_start = start + cfg.warmup;
    Ok(Plan {
        addr: cfg.request.target.addr,
        req,
        keepalive: cfg.request.keepalive,
        connect_timeout: cfg.connect_timeout,
        timeout: cfg.timeout,
        threads: cfg.threads,
        seed: cfg.seed(),
        io: cfg.io,
        start,
        measure_start,
        end: cfg.duration.map(|d| measure_start + d),
        tls: cfg.tls.clone(),
        h2: cfg.h2,
    })
}

type Worker = JoinHandle<Result<Recorder, String>>;

fn spawn<M: Model + Send + 'static>(plan: &Arc<Plan>, shared: &Arc<Shared>, tid: usize, budget: Option<u64>, model: M) -> Result<Worker, RunError> {
    let (plan, shared) = (plan.clone(), shared.clone());
    std::thread::Builder::new()
        .name(format!("loadgen-{tid}"))
        .spawn(move || worker::run(&plan, &shared, tid, budget, model).map_err(|e| format!("worker {tid}: {e}")))
        .map_err(|e| RunError::Fatal(format!("cannot start worker thread: {e}")))
}

/// Thread `tid`'s worker, running the configured load model.
fn spawn_worker(cfg: &Config, plan: &Arc<Plan>, shared: &Arc<Shared>, tid: usize) -> Result<Worker, RunError> {
    // every shard's threads are lanes of one schedule (see Config::lane)
    let (lanes, lane) = cfg.lane(tid);
    let budget = cfg.requests.map(|n| cfg.share_of(n, tid));
    let schedule = || cfg.schedule.clone().expect("open load and sessions have a schedule");
    match cfg.mode {
        Mode::Closed => {
            let n = cfg.share_of(cfg.closed.connections as u64, tid) as usize;
            spawn(plan, shared, tid, budget, Closed::new(n, cfg.closed.pipeline))
        }
        Mode::Open => {
            let model = Open::new(OpenPlan {
                schedule: schedule(),
                poisson: cfg.open.poisson,
                start: plan.start,
                measure_start: plan.measure_start,
                end: plan.end,
                threads: lanes,
                tid: lane,
                seed: cfg.base_seed,
                quantum: cfg.open.send_quantum,
                pool_max: cfg.share_of(cfg.open.max_connections as u64, tid) as usize,
                max_backlog: cfg.share_of(cfg.open.max_backlog as u64, tid) as usize,
                streams: cfg.streams,
            });
            spawn(plan, shared, tid, budget, model)
        }
        Mode::Sessions => {
            let model = Sessions::new(SessionsPlan {
                schedule: schedule(),
                max_users: cfg.share_of(schedule().max_value().ceil() as u64, tid) as usize,
                session_requests: cfg.sessions.session_requests,
                think: cfg.sessions.think.clone(),
                loop_sessions: cfg.sessions.loop_sessions,
                start: plan.start,
                threads: lanes,
                tid: lane,
                seed: cfg.base_seed,
            });
            spawn(plan, shared, tid, budget, model)
        }
    }
}

pub fn run(cfg: &Config, show_progress: bool) -> Result<RunResult, RunError> {
    let limit = limits::raise_nofile();
    limits::check_sockets(cfg.max_sockets, cfg.threads as u64, limit, cfg.sockets_flag()).map_err(RunError::Usage)?;
    if let Some(n) = &cfg.noise {
        limits::check_with_noise(cfg.max_sockets, n.connections, cfg.threads as u64 + 1, limit, cfg.sockets_flag()).map_err(RunError::Usage)?;
    }
    // a short delay so every thread starts its schedule at the same instant;
    // with --start-at, load starts a warm-up before that wall-clock instant
    let (now_i, now_w) = (Instant::now(), SystemTime::now());
    let lead = match cfg.start_at {
        None => Duration::from_millis(20),
        Some(t) => t
            .checked_sub(cfg.warmup)
            .and_then(|s| s.duration_since(now_w).ok())
            .ok_or_else(|| RunError::Usage("--start-at is less than --warmup from now; give a later instant".into()))?,
    };
    // --noise-lead: the noise starts that long before the legitimate load (at
    // once with --start-at, if that leaves less)
    let noise_lead = cfg.noise.as_ref().map_or(Duration::ZERO, |n| n.lead);
    let extra = if cfg.start_at.is_none() { noise_lead } else { Duration::ZERO };
    let start = now_i + lead + extra;
    let plan = Arc::new(build_plan(cfg, start)?);
    let threads = cfg.threads;
    let shared = Arc::new(Shared::new(threads));
    let started_at = now_w + lead + extra + cfg.warmup;
    let mut handles = vec![];
    // noise runs on its own thread and poll, on the same plan
    let noise = match &cfg.noise {
        Some(n) => Some(
            crate::noise::Noise::spawn(n, plan.addr, plan.start.checked_sub(noise_lead).unwrap_or(now_i).max(now_i), plan.end)
                .map_err(|e| RunError::Fatal(format!("cannot start the noise thread: {e}")))?,
        ),
        None => None,
    };
    for tid in 0..threads {
        handles.push(spawn_worker(cfg, &plan, &shared, tid)?);
    }
    let progress = show_progress.then(|| Progress::start(shared.clone(), plan.measure_start, plan.end));
    let mut merged: Option<Recorder> = None;
    let mut failure = None;
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => match &mut merged {
                None => merged = Some(r),
                Some(m) => m.merge(&r).map_err(RunError::Fatal)?,
            },
            Ok(Err(e)) => failure = Some(e),
            Err(_) => failure = Some("a worker thread panicked".to_string()),
        }
    }
    let finished = Instant::now();
    let noise = noise.map(|n| n.finish()).transpose().map_err(RunError::Fatal)?;
    if let Some(p) = progress {
        p.stop();
    }
    if let Some(e) = failure {
        return Err(RunError::Fatal(e));
    }
    let mut rec = merged.ok_or_else(|| RunError::Fatal("no worker results".into()))?;
    let end = plan.end.map_or(finished, |e| e.min(finished));
    let duration_s = end.saturating_duration_since(plan.measure_start).as_secs_f64();
    if let Some(f) = &mut rec.fairness {
        f.whole_seconds(duration_s as usize);
    }
    // a signal after the planned end interrupted nothing
    let interrupted = crate::signals::interrupted() && plan.end.is_none_or(|e| finished < e);
    let start_late_us = shared.start_late_us.load(std::sync::atomic::Ordering::Relaxed);
    Ok(RunResult { started_at, duration_s, rec, interrupted, start_late_us, noise })
}
