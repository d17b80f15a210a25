//! Turns a `Config` into worker threads, and their recorders into one result.

use crate::cli::{Config, Mode};
use crate::limits;
use crate::progress::Progress;
use crate::record::Recorder;
use crate::request::RequestBytes;
use crate::worker::{share, Kind, Plan, Shared, Worker};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

pub struct RunResult {
    pub started_at: SystemTime,
    /// Measured time in seconds (warm-up excluded).
    pub duration_s: f64,
    pub rec: Recorder,
}

#[derive(Debug)]
pub enum RunError {
    /// Bad options or limits: exit code 2.
    Usage(String),
    /// Something failed while running: exit code 1.
    Fatal(String),
}

pub fn build_plan(cfg: &Config, start: Instant) -> Result<Plan, RunError> {
    let a = &cfg.args;
    let req = RequestBytes::new(&cfg.request).map_err(RunError::Usage)?;
    let kind = match cfg.mode {
        Mode::Closed => Kind::Closed { connections: a.connections, pipeline: a.pipeline },
        Mode::Open => Kind::Open {
            schedule: cfg.schedule.clone().expect("open load has a schedule"),
            poisson: a.poisson,
            max_connections: a.max_connections,
        },
        Mode::Sessions => Kind::Sessions {
            schedule: cfg.schedule.clone().expect("sessions have a schedule"),
            max_users: cfg.max_sockets as usize,
            session_requests: a.session_requests,
            think: cfg.think.clone(),
            loop_sessions: a.loop_sessions,
        },
    };
    let measure_start = start + cfg.warmup;
    Ok(Plan {
        addr: cfg.request.target.addr,
        req,
        kind,
        keepalive: !a.no_keepalive,
        send_quantum: cfg.send_quantum,
        connect_timeout: cfg.connect_timeout,
        timeout: cfg.timeout,
        threads: a.threads,
        seed: a.seed,
        start,
        measure_start,
        end: cfg.duration.map(|d| measure_start + d),
    })
}

pub fn run(cfg: &Config, show_progress: bool) -> Result<RunResult, RunError> {
    let limit = limits::raise_nofile();
    limits::check_sockets(cfg.max_sockets, cfg.args.threads as u64, limit, cfg.sockets_flag()).map_err(RunError::Usage)?;
    // a short delay so every thread starts its schedule at the same instant
    let start = Instant::now() + Duration::from_millis(20);
    let plan = Arc::new(build_plan(cfg, start)?);
    let threads = cfg.args.threads;
    let shared = Arc::new(Shared::new(threads));
    let started_at = SystemTime::now() + cfg.warmup + Duration::from_millis(20);
    let mut handles = vec![];
    for tid in 0..threads {
        let (plan, shared) = (plan.clone(), shared.clone());
        let budget = cfg.args.requests.map(|n| share(n, threads, tid));
        let h = std::thread::Builder::new()
            .name(format!("loadgen-{tid}"))
            .spawn(move || -> Result<Recorder, String> {
                let w = Worker::new(&plan, &shared, tid, budget).map_err(|e| format!("worker {tid}: {e}"))?;
                Ok(w.run())
            })
            .map_err(|e| RunError::Fatal(format!("cannot start worker thread: {e}")))?;
        handles.push(h);
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
    if let Some(p) = progress {
        p.stop();
    }
    if let Some(e) = failure {
        return Err(RunError::Fatal(e));
    }
    let rec = merged.ok_or_else(|| RunError::Fatal("no worker results".into()))?;
    let end = plan.end.map_or(finished, |e| e.min(finished));
    let duration_s = end.saturating_duration_since(plan.measure_start).as_secs_f64();
    Ok(RunResult { started_at, duration_s, rec })
}
