//! Command line (fixed in docs/DESIGN.md) and its validation into a `Config`.

use crate::protocol::request::{parse_url, Body, RequestSpec};
use crate::schedule::Schedule;
use crate::units::{flag_duration, Think};
use crate::net::Backend;
use clap::Parser;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Parser, Debug, Clone)]
#[command(name = "loadgen", version, about = "HTTP/1.1 load generator: closed, open (coordinated-omission corrected) and session load")]
pub struct Args {
    /// Target, e.g. http://127.0.0.1:8080/delay?ms={uniform:95..105}
    pub url: String,
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request header "Name: value" (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body (templates allowed)
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body from a file (sent as is)
    #[arg(long)]
    pub body_file: Option<String>,
    /// Closed load: connections, each with one request (or --pipeline P) in flight
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// Measured duration, e.g. 10s, 500ms, 2m [default: 10s]
    #[arg(short = 'd', long)]
    pub duration: Option<String>,
    /// Stop after exactly N requests (responses or errors)
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: usize,
    /// Open load: requests per second (constant spacing unless --poisson)
    #[arg(long)]
    pub rate: Option<f64>,
    /// Open load: exponential (Poisson-process) spacing
    #[arg(long)]
    pub poisson: bool,
    /// Open load: cap on the connection pool
    #[arg(long, default_value_t = 1000)]
    pub max_connections: usize,
    /// Open load: most due requests waiting for a connection; requests due
    /// while it is full are dropped (counted, and recorded at their age)
    #[arg(long, default_value_t = 1_000_000)]
    pub max_backlog: usize,
    /// Open load: the send timer wakes at most once per this interval and sends
    /// every request due by then, so a send may be up to this late (included in
    /// the corrected latency, which counts from the intended time); 0 = wake for
    /// every send
    #[arg(long, default_value = "50us")]
    pub send_quantum: String,
    /// Sessions: virtual users
    #[arg(long)]
    pub users: Option<usize>,
    /// Sessions: users arrive linearly over this time
    #[arg(long, conflicts_with = "spawn_rate")]
    pub ramp: Option<String>,
    /// Sessions: users arrive at this many per second
    #[arg(long)]
    pub spawn_rate: Option<f64>,
    /// Sessions: requests per session, then the user closes its connection
    #[arg(long)]
    pub session_requests: Option<u64>,
    /// Sessions: think time between a user's requests: a duration (900ms) or
    /// a distribution in milliseconds (uniform:800..1000, normal:900,100, exp:900)
    #[arg(long)]
    pub think: Option<String>,
    /// Sessions: ± percent uniform jitter on a fixed think time
    #[arg(long, default_value_t = 0.0)]
    pub think_jitter: f64,
    /// Sessions: a user that finished its session starts another
    #[arg(long)]
    pub loop_sessions: bool,
    /// Piecewise-linear schedule "D:V,D:V" of the rate (--rate) or users (--users),
    /// starting from the --rate/--users value; time counts from the start of load
    #[arg(long)]
    pub stages: Option<String>,
    /// A new connection per request
    #[arg(long)]
    pub no_keepalive: bool,
    /// Closed load: requests in flight per connection
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    #[arg(long, default_value = "5s")]
    pub connect_timeout: String,
    /// Per-request timeout
    #[arg(long, default_value = "10s")]
    pub timeout: String,
    /// Run load for this long before measuring
    #[arg(long)]
    pub warmup: Option<String>,
    /// Seed for templates, think times and Poisson spacing
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the JSON result here ("-" = stdout)
    #[arg(long)]
    pub json: Option<String>,
    /// No progress line
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// This process is shard i of N ("0/2"): it runs its share of the
    /// connections, users, rate and requests, with its own seed; open load's
    /// constant spacing is phase-shifted so the N shards interleave
    #[arg(long)]
    pub shard: Option<String>,
    /// Wall-clock instant the measured window starts (RFC 3339, or Unix
    /// seconds); warm-up runs before it. Shards given the same instant start together
    #[arg(long)]
    pub start_at: Option<String>,
    /// Be killed (SIGKILL) when the parent process dies; also LOADGEN_DIE_WITH_PARENT=1
    #[arg(long)]
    pub die_with_parent: bool,
    /// I/O backend: epoll, uring, or auto (uring where the kernel allows it, else
    /// epoll). epoll is the default: uring saves at most 5 % of the client CPU
    /// per request, and none at open load (bench/loadgen_vs_wrk.sh)
    #[arg(long, default_value = "epoll")]
    pub io: String,
    #[command(flatten)]
    pub tls: crate::transport::tls::TlsArgs,
    #[command(flatten)]
    pub noise: crate::noise::NoiseArgs,
    #[command(flatten)]
    pub proto: crate::protocol::flags::ProtoArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Closed,
    Open,
    Sessions,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Closed => "closed",
            Mode::Open => "open",
            Mode::Sessions => "sessions",
        }
    }
}

/// Closed load's flags.
#[derive(Debug, Clone)]
pub struct ClosedLoad {
    /// --connections, over every shard.
    pub connections: usize,
    /// --pipeline: requests in flight per connection.
    pub pipeline: usize,
}

/// Open load's flags (the rate itself is the schedule).
#[derive(Debug, Clone)]
pub struct OpenLoad {
    /// --rate as given: the schedule's start (None: not open load).
    pub rate: Option<f64>,
    pub poisson: bool,
    /// --max-connections and --max-backlog, over every shard.
    pub max_connections: usize,
    pub max_backlog: usize,
    /// Coalescing bound of the send timer.
    pub send_quantum: Duration,
}

/// Sessions' flags (the users over time are the schedule).
#[derive(Debug, Clone)]
pub struct SessionLoad {
    /// --users as given (None: not sessions).
    pub users: Option<usize>,
    pub ramp: Option<Duration>,
    pub spawn_rate: Option<f64>,
    pub session_requests: Option<u64>,
    pub think: Think,
    /// --think and --think-jitter as written, for the JSON's config.
    pub think_flag: Option<String>,
    pub think_jitter_pct: f64,
    pub loop_sessions: bool,
}

/// Where the result goes.
#[derive(Debug, Clone)]
pub struct OutputTo {
    /// --json: a file, "-" for stdout, None for the summary only.
    pub json: Option<String>,
    /// --quiet: no progress line.
    pub quiet: bool,
}

/// The command line, validated.
#[derive(Debug, Clone)]
pub struct Config {
    /// The URL as given (templates unexpanded).
    pub url: String,
    /// -H as written, for the JSON's config (`request` holds them parsed).
    pub header_flags: Vec<String>,
    pub mode: Mode,
    pub request: RequestSpec,
    /// Worker threads of this process.
    pub threads: usize,
    /// --seed as given; `seed()` is this shard's.
    pub base_seed: u64,
    /// -n over every shard (None: no request budget).
    pub requests: Option<u64>,
    /// None: until --requests are done
    pub duration: Option<Duration>,
    pub warmup: Duration,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub closed: ClosedLoad,
    pub open: OpenLoad,
    pub sessions: SessionLoad,
    /// Rate (open) or users (sessions) over time.
    pub schedule: Option<Schedule>,
    pub stages: Option<Vec<(f64, f64)>>,
    /// Most sockets open at once (this shard's).
    pub max_sockets: u64,
    /// (index, count): this process's shard; (0, 1) when not sharded.
    pub shard: (usize, usize),
    /// When the measured window starts (--start-at).
    pub start_at: Option<SystemTime>,
    /// The I/O backend --io resolved to.
    pub io: Backend,
    /// Noise beside the load (--noise), this shard's share.
    pub noise: Option<crate::noise::NoiseConfig>,
    /// `https://`: --tls-ca, --tls-resume and the client configuration.
    pub tls: Option<crate::transport::tls::TlsOptions>,
    /// --http2 (with --h2-window); None: HTTP/1.1.
    pub h2: Option<crate::protocol::http2::H2Options>,
    /// --streams: requests one HTTP/2 connection carries at once.
    pub streams: usize,
    pub output: OutputTo,
}

/// `--io`: auto takes io_uring where this kernel (and any seccomp filter) allows it.
pub fn resolve_io(flag: &str) -> Result<Backend, String> {
    match flag {
        "epoll" => Ok(Backend::Epoll),
        "uring" => match crate::uring::unavailable() {
            None => Ok(Backend::Uring),
            Some(why) => Err(format!("--io uring: {why}; use --io epoll")),
        },
        "auto" => Ok(if crate::uring::unavailable().is_none() { Backend::Uring } else { Backend::Epoll }),
        _ => Err(format!("--io `{flag}` must be uring, epoll or auto")),
    }
}

/// "i/N" with i < N.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("--shard `{s}` must be i/N with 0 <= i < N, e.g. 0/2");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if n == 0 || i >= n || n > 4096 {
        return Err(bad());
    }
    Ok((i, n))
}

/// RFC 3339 ("2026-11-23T22:00:00.5Z") or Unix seconds ("1795000000.25").
pub fn parse_instant(s: &str) -> Result<SystemTime, String> {
    let t = s.trim();
    if let Ok(v) = t.parse::<f64>() {
        if v.is_finite() && v > 0.0 {
            return Ok(UNIX_EPOCH + Duration::from_secs_f64(v));
        }
    }
    humantime::parse_rfc3339_weak(t).map_err(|_| format!("--start-at `{s}` is not an RFC 3339 instant or Unix seconds"))
}

/// -m, -H, --body, --body-file and --no-keepalive: the request every connection sends.
fn request_of(a: &Args) -> Result<RequestSpec, String> {
    let target = parse_url(&a.url)?;
    let mut headers = vec![];
    for h in &a.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| format!("-H `{h}` must look like \"Name: value\""))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => Some(Body::Text(b.clone())),
        (None, Some(f)) => Some(Body::Bytes(
            std::fs::read(f).map_err(|e| format!("--body-file {f}: {e}"))?,
        )),
        (None, None) => None,
    };
    Ok(RequestSpec { method: a.method.clone(), target, headers, body, keepalive: !a.no_keepalive })
}

/// --rate makes open load, --users sessions, neither closed load.
fn mode_of(a: &Args) -> Result<Mode, String> {
    match (a.rate, a.users) {
        (Some(_), Some(_)) => Err("--rate (open load) and --users (sessions) cannot be combined".into()),
        (Some(_), None) => Ok(Mode::Open),
        (None, Some(_)) => Ok(Mode::Sessions),
        (None, None) => Ok(Mode::Closed),
    }
}

/// Threads, pipeline, connections, request budget, pool and backlog.
fn check_counts(a: &Args, mode: Mode) -> Result<(), String> {
    if a.threads == 0 || a.threads > 256 {
        return Err(format!("--threads {} must be in 1..256", a.threads));
    }
    if a.pipeline == 0 || a.pipeline > 1024 {
        return Err(format!("--pipeline {} must be in 1..1024", a.pipeline));
    }
    if a.pipeline > 1 && (mode != Mode::Closed || a.no_keepalive) {
        return Err("--pipeline needs closed load with keep-alive (no --rate, --users or --no-keepalive)".into());
    }
    if mode == Mode::Closed && a.connections == 0 {
        return Err("--connections must be at least 1".into());
    }
    if a.requests == Some(0) {
        return Err("--requests must be at least 1".into());
    }
    if a.max_connections == 0 {
        return Err("--max-connections must be at least 1".into());
    }
    if a.max_backlog == 0 {
        return Err("--max-backlog must be at least 1".into());
    }
    Ok(())
}

/// Flags of one load model given with another.
fn check_mode_flags(a: &Args, mode: Mode) -> Result<(), String> {
    if mode != Mode::Sessions
        && (a.ramp.is_some() || a.spawn_rate.is_some() || a.session_requests.is_some() || a.think.is_some() || a.loop_sessions)
    {
        return Err("--ramp, --spawn-rate, --session-requests, --think and --loop-sessions need --users".into());
    }
    if a.stages.is_some() && mode == Mode::Closed {
        return Err("--stages needs --rate or --users to say what it schedules".into());
    }
    if a.poisson && mode != Mode::Open {
        return Err("--poisson needs --rate".into());
    }
    Ok(())
}

/// The durations other than --duration.
struct Times {
    warmup: Duration,
    connect_timeout: Duration,
    timeout: Duration,
    ramp: Option<Duration>,
    send_quantum: Duration,
}

fn times_of(a: &Args) -> Result<Times, String> {
    let warmup = a.warmup.as_deref().map(|w| flag_duration("--warmup", w)).transpose()?.unwrap_or_default();
    let connect_timeout = flag_duration("--connect-timeout", &a.connect_timeout)?;
    let timeout = flag_duration("--timeout", &a.timeout)?;
    if connect_timeout.is_zero() || timeout.is_zero() {
        return Err("--timeout and --connect-timeout must be more than 0".into());
    }
    let ramp = a.ramp.as_deref().map(|r| flag_duration("--ramp", r)).transpose()?;
    let send_quantum = flag_duration("--send-quantum", &a.send_quantum)?;
    if send_quantum > Duration::from_millis(10) {
        return Err(format!("--send-quantum {} must be at most 10ms", a.send_quantum));
    }
    Ok(Times { warmup, connect_timeout, timeout, ramp, send_quantum })
}

/// Open load's rate over time: --rate, then --stages.
fn rate_schedule(a: &Args, stages: Option<&[(f64, f64)]>) -> Result<Schedule, String> {
    let r = a.rate.unwrap_or(0.0);
    if !r.is_finite() || r < 0.0 || (r == 0.0 && stages.is_none()) {
        return Err(format!("--rate {r} must be a number > 0 (0 only as the start of --stages)"));
    }
    Ok(match stages {
        Some(s) => Schedule::stages(r, s),
        None => Schedule::constant(r),
    })
}

/// Sessions' users over time: --users, arriving per --stages, --ramp or --spawn-rate.
fn users_schedule(a: &Args, stages: Option<&[(f64, f64)]>, ramp: Option<Duration>) -> Result<Schedule, String> {
    let u = a.users.unwrap_or(0) as f64;
    if u == 0.0 && stages.is_none() {
        return Err("--users must be at least 1 (0 only as the start of --stages)".into());
    }
    Ok(match (stages, ramp, a.spawn_rate) {
        (Some(s), _, _) => {
            if ramp.is_some() || a.spawn_rate.is_some() {
                return Err("--stages replaces --ramp/--spawn-rate; give one of them".into());
            }
            Schedule::stages(u, s)
        }
        (None, Some(r), _) => Schedule::stages(0.0, &[(r.as_secs_f64(), u)]),
        (None, None, Some(sr)) => {
            if !(sr.is_finite() && sr > 0.0) {
                return Err(format!("--spawn-rate {sr} must be > 0"));
            }
            Schedule::stages(0.0, &[(u / sr, u)])
        }
        (None, None, None) => Schedule::constant(u),
    })
}

/// -d; without it, -n runs until its requests are done, --stages until they
/// end (after the warm-up), anything else 10 s.
fn duration_of(a: &Args, staged: Option<&Schedule>, warmup: Duration) -> Result<Option<Duration>, String> {
    let duration = match (&a.duration, a.requests, staged) {
        (Some(d), _, _) => Some(flag_duration("--duration", d)?),
        (None, Some(_), _) => None,
        (None, None, Some(s)) => {
            let d = s.total_duration() - warmup.as_secs_f64();
            if d <= 0.0 {
                return Err("--stages are over before --warmup ends; give --duration".into());
            }
            Some(Duration::from_secs_f64(d))
        }
        _ => Some(Duration::from_secs(10)),
    };
    if duration.is_some_and(|d| d.is_zero()) {
        return Err("--duration must be more than 0".into());
    }
    Ok(duration)
}

impl Config {
    pub fn from_args(a: Args) -> Result<Config, String> {
        let request = request_of(&a)?;
        let mode = mode_of(&a)?;
        let body = match &request.body {
            Some(Body::Bytes(b)) => b.len(),
            Some(Body::Text(t)) => t.len(),
            None => 0,
        };
        let h2 = crate::protocol::flags::resolve(&a.proto, mode == Mode::Closed, mode == Mode::Sessions, a.pipeline, !a.no_keepalive, body)?;
        let t = &request.target;
        let tls = crate::transport::tls::options_of(t.tls, &t.host, &a.tls, h2.is_some(), a.noise.noise.is_some())?;
        check_counts(&a, mode)?;
        check_mode_flags(&a, mode)?;
        let stages = a.stages.as_deref().map(Schedule::parse_stages).transpose()?;
        let t = times_of(&a)?;
        let schedule = match mode {
            Mode::Closed => None,
            Mode::Open => Some(rate_schedule(&a, stages.as_deref())?),
            Mode::Sessions => Some(users_schedule(&a, stages.as_deref(), t.ramp)?),
        };
        let duration = duration_of(&a, schedule.as_ref().filter(|_| stages.is_some()), t.warmup)?;
        let think = Think::parse(a.think.as_deref(), a.think_jitter)?;
        let shard = a.shard.as_deref().map(parse_shard).transpose()?.unwrap_or((0, 1));
        let start_at = a.start_at.as_deref().map(parse_instant).transpose()?;
        let total_sockets = match mode {
            Mode::Closed => a.connections as u64,
            Mode::Open => a.max_connections as u64,
            Mode::Sessions => schedule.as_ref().map(|s| s.max_value().ceil() as u64).unwrap_or(0),
        };
        let io = resolve_io(&a.io)?;
        let noise_share = |n| crate::models::share(n, shard.1, shard.0);
        let noise = crate::noise::NoiseConfig::from_args(&a.noise, &request.target.authority, t.timeout, t.connect_timeout, noise_share)?;
        let mut cfg = Config {
            url: a.url,
            header_flags: a.headers,
            mode,
            request,
            threads: a.threads,
            base_seed: a.seed,
            requests: a.requests,
            duration,
            warmup: t.warmup,
            connect_timeout: t.connect_timeout,
            timeout: t.timeout,
            closed: ClosedLoad { connections: a.connections, pipeline: a.pipeline.max(a.proto.streams) },
            open: OpenLoad { rate: a.rate, poisson: a.poisson, max_connections: a.max_connections, max_backlog: a.max_backlog, send_quantum: t.send_quantum },
            sessions: SessionLoad {
                users: a.users,
                ramp: t.ramp,
                spawn_rate: a.spawn_rate,
                session_requests: a.session_requests,
                think,
                think_flag: a.think,
                think_jitter_pct: a.think_jitter,
                loop_sessions: a.loop_sessions,
            },
            schedule,
            stages,
            max_sockets: 0,
            shard,
            start_at,
            io,
            noise,
            tls,
            h2,
            streams: a.proto.streams,
            output: OutputTo { json: a.json, quiet: a.quiet },
        };
        cfg.max_sockets = (0..cfg.threads).map(|t| cfg.share_of(total_sockets, t)).sum();
        if cfg.max_sockets == 0 && mode == Mode::Closed {
            return Err(format!("--connections {} gives shard {}/{} none; give at least one per shard", cfg.closed.connections, shard.0, shard.1));
        }
        Ok(cfg)
    }

    /// Threads of all shards share the load as lanes: thread `tid` of shard i
    /// of N is lane tid*N + i of threads*N, so the N shards interleave (open
    /// load's request n goes to lane n mod lanes). Returns (lanes, lane).
    pub fn lane(&self, tid: usize) -> (usize, usize) {
        let (i, n) = self.shard;
        (self.threads * n, tid * n + i)
    }

    /// Thread `tid`'s share of a total over every shard.
    pub fn share_of(&self, total: u64, tid: usize) -> u64 {
        let (lanes, lane) = self.lane(tid);
        crate::models::share(total, lanes, lane)
    }

    /// This shard's seed for the worker threads' random streams.
    pub fn seed(&self) -> u64 {
        match self.shard {
            (_, 1) => self.base_seed,
            (i, _) => crate::models::seed_for(self.base_seed, i, 0x5AAD_5AAD_5AAD_5AAD),
        }
    }

    /// The flag that sets the socket count, for error messages.
    pub fn sockets_flag(&self) -> &'static str {
        match self.mode {
            Mode::Closed => "--connections",
            Mode::Open => "--max-connections",
            Mode::Sessions => "--users",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(argv: &[&str]) -> Result<Config, String> {
        let mut v = vec!["loadgen"];
        v.extend_from_slice(argv);
        Config::from_args(Args::try_parse_from(v).map_err(|e| e.to_string())?)
    }

    #[test]
    fn modes_and_defaults() {
        let c = cfg(&["http://127.0.0.1:1/"]).unwrap();
        assert_eq!((c.mode, c.duration), (Mode::Closed, Some(Duration::from_secs(10))));
        let c = cfg(&["http://127.0.0.1:1/", "-n", "5"]).unwrap();
        assert_eq!(c.duration, None, "-n alone has no time limit");
        let c = cfg(&["http://127.0.0.1:1/", "--rate", "100", "--stages", "2s:200,3s:0"]).unwrap();
        assert_eq!((c.mode, c.duration), (Mode::Open, Some(Duration::from_secs(5))));
        let c = cfg(&["http://127.0.0.1:1/", "--users", "50", "--ramp", "2s", "--think", "900ms", "--think-jitter", "10"]).unwrap();
        assert_eq!(c.mode, Mode::Sessions);
        assert_eq!(c.max_sockets, 50);
        assert_eq!(c.sessions.think, Think::Fixed(Duration::from_millis(900), 0.1));
        assert_eq!((c.sessions.think_flag.as_deref(), c.sessions.think_jitter_pct, c.sessions.ramp), (Some("900ms"), 10.0, Some(Duration::from_secs(2))));
        // the validated fields the run, the JSON and main read
        let c = cfg(&["http://127.0.0.1:1/", "-c", "7", "--pipeline", "3", "-t", "2", "--seed", "9", "-H", "A:b", "--json", "-", "-q"]).unwrap();
        assert_eq!((c.closed.connections, c.closed.pipeline, c.threads, c.base_seed), (7, 3, 2, 9));
        assert_eq!((c.header_flags.clone(), c.request.headers.clone()), (vec!["A:b".to_string()], vec![("A".to_string(), "b".to_string())]));
        assert_eq!((c.output.json.as_deref(), c.output.quiet, c.request.keepalive), (Some("-"), true, true));
        let c = cfg(&["http://127.0.0.1:1/", "--rate", "5", "--poisson", "--max-connections", "3", "--send-quantum", "1ms"]).unwrap();
        assert_eq!((c.open.rate, c.open.poisson, c.open.max_connections, c.open.max_backlog), (Some(5.0), true, 3, 1_000_000));
        assert_eq!((c.open.send_quantum, c.max_sockets, c.output.json.as_deref()), (Duration::from_millis(1), 3, None));
        assert!(!cfg(&["http://127.0.0.1:1/", "--no-keepalive"]).unwrap().request.keepalive);
    }

    #[test]
    fn shards_split_the_load_exactly_and_interleave() {
        let (threads, n) = (3usize, 4usize);
        let shards: Vec<Config> = (0..n)
            .map(|i| cfg(&["http://127.0.0.1:1/", "-c", "101", "-t", "3", "-n", "1003", "--shard", &format!("{i}/{n}")]).unwrap())
            .collect();
        let sum = |total: u64| -> u64 { shards.iter().map(|c| (0..threads).map(|t| c.share_of(total, t)).sum::<u64>()).sum() };
        assert_eq!((sum(101), sum(1003)), (101, 1003));
        assert_eq!(shards.iter().map(|c| c.max_sockets).sum::<u64>(), 101);
        // every lane once: open load's request k goes to exactly one thread of one shard
        let mut lanes: Vec<usize> = shards.iter().flat_map(|c| (0..threads).map(|t| c.lane(t).1)).collect();
        lanes.sort();
        assert_eq!(lanes, (0..threads * n).collect::<Vec<_>>());
        assert_ne!(shards[0].seed(), shards[1].seed());
        assert!(cfg(&["http://127.0.0.1:1/", "-c", "1", "--shard", "1/2"]).is_err(), "a shard without connections");
        for bad in ["2/2", "x", "1/0"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
        let t = parse_instant("2026-11-23T12:00:00.500Z").unwrap();
        assert_eq!(t, parse_instant("1795435200.5").unwrap());
    }

    #[test]
    fn bad_options_are_one_line_errors() {
        for argv in [
            &["ftp://x/"][..],
            &["http://127.0.0.1:1/", "--rate", "5", "--users", "5"],
            &["http://127.0.0.1:1/", "--pipeline", "4", "--rate", "5"],
            &["http://127.0.0.1:1/", "-d", "ten"],
            &["http://127.0.0.1:1/", "--stages", "1s:5"],
            &["http://127.0.0.1:1/", "--think", "1s"],
            &["http://127.0.0.1:1/", "-H", "novalue"],
            &["http://127.0.0.1:1/", "--rate", "0"],
        ] {
            let e = cfg(argv).unwrap_err();
            assert!(!e.trim().is_empty() && !e.trim().contains('\n'), "{argv:?}: {e}");
        }
    }
}
