//! A run as two roles over one control channel: the client decides and times, the peer follows.
//!
//! The client sends `place`, then per transport × mode a `data` spec (the launch layer builds the
//! channel), then per benchmark × size a `run`; the peer answers `ready`, runs the responder loop
//! and reports `done` with where it ran and anything `--validate` found. Errors name the peer and
//! the phase (benchmark, size, transport, mode, iteration), because "connection reset" alone
//! tells a user nothing about which of forty measurements died.

use crate::buf::PageBuf;
use crate::config::{BenchConfig, Launcher};
use crate::cost;
use crate::extended;
use crate::limits::{self, LimitsError};
use crate::loggp::{self, Prtt};
use crate::machine;
use crate::patterns::{self, Buffers, LoopError, Mismatch, Scattered};
use commperf_core::{
    Benchmark, BufferUse, CostVariant, Disturbance, Finding, Limits, Mode, Options, Placement,
    ProcessId, Report, Row, RowError, TransportKind, Watch,
};
use commperf_model::pipeline::{PipelineModel, Plan};
use commperf_stats::{median_uncertainty, Summary};
use commperf_transport::bounds::{self, BoundError, SessionMemory};
use commperf_transport::clock::Clock;
use commperf_transport::cq::{EpollSet, UringPollSet};
use commperf_transport::launch::{
    self, AnyEndpoint, Control, DataSpec, LaunchError, LocalPeer, ServerHello,
};
use commperf_transport::sys::shm::{self, ShmCq};
use commperf_transport::text::printable;
use commperf_transport::{
    affinity, with_endpoint, Endpoint, FaultConfig, FaultInjector, SwitchMode, TransportError,
    VectoredSend,
};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

/// Client → peer.
// `Data` carries a data spec with two fragment plans; commands are sent a few times per
// measurement, so boxing it would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Cmd {
    /// Close the extra channels opened for the conns benchmark.
    DropExtras,
    /// Pin yourself to this CPU (or stay put) and say where you are; with `watch`, register
    /// and watch for disturbance until asked for the [`Cmd::Findings`] (a peer that is not
    /// the client's child: the client's watch does not cover it).
    Place {
        cpu: Option<usize>,
        #[serde(default)]
        watch: bool,
    },
    /// End your watch and send what it found ([`Reply::Findings`]).
    Findings,
    /// Build a data channel (handled by the launch layer; same shape as its `data` message).
    Data(DataSpec),
    /// Run the responder side of one measurement.
    Run(RunSpec),
    /// Announce every record your endpoints publish on this shm completion queue (their
    /// keys: 0 for the main channel, then the extras in order); `None`: stop announcing.
    Notify { segment: Option<String> },
    /// The session is over.
    Bye,
}

/// One measurement, as the peer needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub benchmark: Benchmark,
    pub size: u64,
    pub iterations: u64,
    pub warmup: u64,
    pub window: u32,
    pub validate: bool,
    /// The PRTT variant (loggp only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prtt: Option<Prtt>,
    /// Completion mode both ends switch to before this run, and checks spun before blocking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default)]
    pub block_spins: u32,
    /// noncontig: segments the message is scattered over, and whether it is packed first.
    #[serde(default)]
    pub segments: u32,
    #[serde(default)]
    pub packed: bool,
    /// bufmgmt: send and receive in the transport's registered memory, in place.
    #[serde(default)]
    pub in_place: bool,
}

impl RunSpec {
    /// Checks every count and size against [`commperf_transport::bounds`], for a data channel
    /// carrying at most `max_message` bytes that gives up after `idle` without progress.
    pub fn check(&self, max_message: usize, idle: Duration) -> Result<(), BoundError> {
        use commperf_transport::bounds::*;
        at_most("size", self.size, max_message as u64).map_err(|mut e| {
            e.rule += " (the data channel's max_message)";
            e
        })?;
        at_most("iterations", self.iterations, MAX_ITERS)?;
        at_most("warmup", self.warmup, MAX_ITERS)?;
        within("window", self.window, 1, MAX_WINDOW)?;
        at_most("block_spins", self.block_spins, MAX_BLOCK_SPINS)?;
        at_most("segments", self.segments, MAX_SEGMENTS)?;
        if let Some(p) = &self.prtt {
            within("prtt.n", p.n, 1, MAX_PRTT_N)?;
            // A busy-wait checks nothing while it runs: a delay beyond the idle timeout would
            // time the other end out, and one of 1e300 ns would never end.
            let max = idle.as_nanos() as f64;
            for (field, d) in [
                ("prtt.client_delay_ns", p.client_delay_ns),
                ("prtt.server_delay_ns", p.server_delay_ns),
            ] {
                if !(0.0..=max).contains(&d) {
                    // 1e300, not three hundred digits.
                    let shown = if d.abs() < 1e15 {
                        d.to_string()
                    } else {
                        format!("{d:e}")
                    };
                    return Err(BoundError::new(
                        field,
                        shown,
                        format!("between 0 and {max} (the data channel's idle timeout)"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Memory this run allocates beside the session's message buffers (the same on both ends):
    /// bufmgmt's pools of fresh buffers, noncontig's scattered message and pack buffer.
    pub fn working_bytes(&self) -> u64 {
        match self.benchmark {
            Benchmark::Bufmgmt if !self.in_place => extended::fresh_pools_bytes(self.size),
            Benchmark::Noncontig => {
                extended::scattered_bytes(self.size, self.segments)
                    + if self.packed { self.size } else { 0 }
            }
            _ => 0,
        }
    }

    fn looping(&self) -> patterns::Loop {
        patterns::Loop {
            warmup: self.warmup,
            iters: self.iterations,
            window: self.window,
            validate: self.validate,
        }
    }
}

/// Peer → client.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Placed {
        cpu: Option<usize>,
        pinned: bool,
    },
    Ready,
    Done {
        cpu: Option<usize>,
        mismatch: Option<Mismatch>,
    },
    Error {
        message: String,
    },
    /// What disturbed the peer's end of the session (empty when it did not watch).
    Findings {
        findings: Vec<Finding>,
    },
}

/// What can end a run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("{phase}: {cause}")]
    Transfer {
        phase: String,
        cause: TransportError,
    },
    #[error(
        "--validate: {phase}: message {}, byte {}: expected {:#04x}, got {:#04x} (found by the {side})",
        .mismatch.iteration, .mismatch.offset, .mismatch.expected, .mismatch.got
    )]
    Validation {
        phase: String,
        mismatch: Mismatch,
        side: &'static str,
    },
    #[error("{peer} failed {phase}: {message}")]
    Peer {
        peer: String,
        phase: String,
        message: String,
    },
    #[error(transparent)]
    Limits(#[from] LimitsError),
    #[error("--cpus: {0}")]
    Pin(String),
    /// pipeline over a socket: its stages could not be timed or their fit used.
    #[error("timing the {transport} pipeline stages: {why}")]
    Stages {
        transport: TransportKind,
        why: String,
    },
    /// A request outside the bounds both ends share.
    #[error("{phase}: {error}")]
    Bound { phase: String, error: BoundError },
    /// A row given a figure its benchmark does not have (a bug, refused rather than written).
    #[error(transparent)]
    Row(#[from] RowError),
}

/// Progress of a long run (between measurements, never inside a timed loop).
pub trait Progress {
    /// The measurement `label` starts; `done` of `total` measurements are complete.
    fn update(&mut self, label: &str, done: usize, total: usize);
    /// A benchmark finished over one transport and mode, all its sizes: `what` names it
    /// (`latency over shm (poll)`); `done` of `total` such steps are complete.
    fn finished(&mut self, _what: &str, _done: usize, _total: usize) {}
    fn finish(&mut self) {}
    /// Something the user should know now, between measurements (a measurement taken again).
    fn note(&mut self, _line: &str) {}
    /// Whether the user asked the run to stop (an interrupt): checked between measurements,
    /// never inside one. The run then ends the session with the peer and returns what finished,
    /// marked partial ([`Report::partial`]).
    fn stop_requested(&self) -> bool {
        false
    }
}

impl Progress for () {
    fn update(&mut self, _: &str, _: usize, _: usize) {}
}

fn phase(b: Benchmark, size: u64, t: TransportKind, m: Mode) -> String {
    format!("{b} {size} B over {t} ({m})")
}

fn expect_reply(ctrl: &mut Control, phase: &str) -> Result<Reply, BenchError> {
    match ctrl.recv::<Reply>()? {
        Reply::Error { message } => Err(BenchError::Peer {
            peer: ctrl.peer().into(),
            phase: phase.into(),
            message,
        }),
        r => Ok(r),
    }
}

/// Runs the whole configured suite as the client and returns the report: the peer started
/// (`start_peer`) and placed (`place`), the physical limits measured, every benchmark run
/// (`run_suite`), the session ended (`end_session`) and the report assembled.
pub fn run(cfg: &BenchConfig, progress: &mut dyn Progress) -> Result<Report, BenchError> {
    let started_unix_s = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let clock = Clock::calibrate();
    let machine = machine::describe(clock.timer_info());
    let Peer {
        guard,
        mut ctrl,
        token,
        desc: peer_desc,
        server,
    } = start_peer(cfg)?;
    let placed = place(cfg, &mut ctrl)?;

    // Registered and sampled from here to the end: the limits are measurements too.
    let watch_cpus: Vec<usize> = (placed.mine.into_iter())
        .chain(placed.theirs.filter(|_| placed.local))
        .collect();
    let partners = server
        .process
        .iter()
        .chain(&cfg.partners)
        .cloned()
        .collect();
    let mut watch = Watch::start_among("bench", &watch_cpus, partners);
    let limits = physical_limits(cfg, &clock, &placed, progress)?;

    let ctx = Ctx {
        cfg,
        clock: &clock,
        token: &token,
        cpus: placed.cpus,
        limits: limits.as_ref(),
        max: cfg.max_message(),
    };
    let mut tally = Tally::new(cfg);
    run_suite(&ctx, &mut ctrl, &mut watch, &mut tally, progress)?;
    let (local_cpu, disturbance) = end_session(guard, ctrl, &server, &placed, watch, progress)?;
    Ok(Report {
        schema_version: commperf_core::SCHEMA_VERSION,
        tool: format!("commperf {}", env!("CARGO_PKG_VERSION")),
        started_unix_s,
        machine,
        options: report_options(cfg, peer_desc),
        placement: report_placement(cfg, &placed, local_cpu),
        limits,
        results: tally.results,
        disturbance,
        partial: tally.partial,
    })
}

/// The peer of a run, started (local) or reached (served, mpi), after the handshake.
struct Peer {
    /// A local peer's process, waited for when dropped.
    guard: Option<LocalPeer>,
    ctrl: Control,
    token: String,
    /// The served peer's address, for the report.
    desc: Option<String>,
    server: ServerHello,
}

/// Set-up: starts the local peer or connects to a served one, and shakes hands.
fn start_peer(cfg: &BenchConfig) -> Result<Peer, BenchError> {
    let token = launch::new_token();
    let (guard, mut ctrl, token, desc) = match &cfg.launcher {
        Launcher::Local { exe } => {
            commperf_transport::sys::shm::remove_stale_segments();
            let args = cfg.peer_hooks.peer_args();
            let (p, c) = LocalPeer::spawn(exe, &args, &[("COMMPERF_SESSION_TOKEN", &token)])?;
            (Some(p), c, token, None)
        }
        Launcher::Peer { addr, token } | Launcher::Mpi { addr, token } => {
            let c = launch::connect_peer(addr, Duration::from_secs(10))?;
            (None, c, token.clone(), Some(addr.clone()))
        }
    };
    ctrl.set_timeout(cfg.idle_timeout)?;
    let server = launch::client_handshake(&mut ctrl, &token)?;
    Ok(Peer {
        guard,
        ctrl,
        token,
        desc,
        server,
    })
}

/// Where the two ends run: the outcome of `place`.
struct Placed {
    /// The peer is our child (`Launcher::Local`).
    local: bool,
    /// The CPUs this end was allowed at the start, allowed again at the end.
    restore: Vec<usize>,
    /// This end's CPU, if pinned.
    mine: Option<usize>,
    /// The CPU the peer was asked to pin itself to.
    theirs: Option<usize>,
    /// Both ends pinned: the pair the physical limits are measured between.
    cpus: Option<(usize, usize)>,
    /// Where the peer says it is.
    peer_cpu: Option<usize>,
}

/// Placement: pins this end and asks the peer to pin itself (and, when it is not our child, to
/// watch its own end).
fn place(cfg: &BenchConfig, ctrl: &mut Control) -> Result<Placed, BenchError> {
    // Placement: --cpus; or for a local peer the first two allowed CPUs (peer on the first, as
    // the anchors were measured: server on core 0, client on core 1); or for a served peer this
    // end on the first allowed CPU (an unpinned end wanders, and on a loaded host 3 µs became
    // 4 ms) and the peer where its host puts it. Under mpirun, mpirun's binding stands.
    let local = matches!(cfg.launcher, Launcher::Local { .. });
    let restore = affinity::allowed_cpus();
    let (mine, theirs) = match (cfg.cpus, &cfg.launcher) {
        (Some((a, b)), _) => (Some(a), Some(b)),
        (None, Launcher::Local { .. }) if restore.len() >= 2 => {
            (Some(restore[1]), Some(restore[0]))
        }
        (None, Launcher::Peer { .. }) => (restore.first().copied(), None),
        _ => (None, None),
    };
    // Both ends pinned: the pair the physical limits are measured between.
    let cpus = mine.zip(theirs);
    if let Some(mine) = mine {
        affinity::pin_to(mine).map_err(|e| BenchError::Pin(e.to_string()))?;
    }
    // A peer that is not our child watches its own end (our watch covers a child's).
    ctrl.send(&Cmd::Place {
        cpu: theirs,
        watch: !local,
    })?;
    let Reply::Placed {
        cpu: peer_cpu,
        pinned: peer_pinned,
    } = expect_reply(ctrl, "placement")?
    else {
        return Err(unexpected(ctrl, "placement"));
    };
    if theirs.is_some() && !peer_pinned {
        return Err(BenchError::Pin(format!(
            "{} could not pin itself",
            ctrl.peer()
        )));
    }
    Ok(Placed {
        local,
        restore,
        mine,
        theirs,
        cpus,
        peer_cpu,
    })
}

/// The physical limits, for a local peer on another CPU when shm is measured; this end pinned
/// again afterwards (the measurement moves it).
fn physical_limits(
    cfg: &BenchConfig,
    clock: &Clock,
    placed: &Placed,
    progress: &mut dyn Progress,
) -> Result<Option<Limits>, BenchError> {
    let limits = match placed.cpus {
        Some((a, b)) if placed.local && a != b && cfg.transports.contains(&TransportKind::Shm) => {
            progress.update("measuring physical limits", 0, 1);
            Some(limits::measure(clock, [b, a])?)
        }
        _ => None,
    };
    if let Some(mine) = placed.mine {
        affinity::pin_to(mine).map_err(|e| BenchError::Pin(e.to_string()))?;
    }
    Ok(limits)
}

/// What every step of the suite measures with: the run's fixed parts.
struct Ctx<'a> {
    cfg: &'a BenchConfig,
    clock: &'a Clock,
    token: &'a str,
    /// (this end, the peer) when both are pinned.
    cpus: Option<(usize, usize)>,
    limits: Option<&'a Limits>,
    /// The largest message of the run ([`BenchConfig::max_message`]).
    max: usize,
}

/// The suite's running state: the rows so far, the counts progress reports, the buffers.
struct Tally {
    results: Vec<Row>,
    /// Measurements (one per benchmark and size) complete, of `total`.
    done: usize,
    total: usize,
    /// Steps (one per transport, mode and benchmark) complete, of `steps`.
    steps_done: usize,
    steps: usize,
    /// The two-CPU copy bandwidth measured per size (shm rows' limit), measured once a size.
    copy_bw: std::collections::BTreeMap<u64, f64>,
    sbuf: PageBuf,
    rbuf: PageBuf,
    /// The user asked to stop: what finished is returned, marked partial.
    partial: bool,
}

impl Tally {
    fn new(cfg: &BenchConfig) -> Self {
        let total = cfg.transports.len() * cfg.modes.len() * cfg.benchmarks.len() * cfg.sizes.len();
        let steps = cfg.transports.len() * cfg.modes.len() * cfg.benchmarks.len();
        let max = cfg.max_message();
        Tally {
            results: Vec::with_capacity(total),
            done: 0,
            total,
            steps_done: 0,
            steps,
            copy_bw: std::collections::BTreeMap::new(),
            sbuf: PageBuf::new(max),
            rbuf: PageBuf::new(max),
            partial: false,
        }
    }

    /// Whether the user asked to stop (checked between measurements); if so the run is partial.
    fn stopped(&mut self, progress: &dyn Progress) -> bool {
        if progress.stop_requested() {
            self.partial = true;
        }
        self.partial
    }

    /// One step (a benchmark over one transport and mode, all its sizes) is complete.
    fn step_finished(&mut self, what: &str, progress: &mut dyn Progress) {
        self.steps_done += 1;
        progress.finished(what, self.steps_done, self.steps);
    }
}

/// The data channels of one transport and mode: the run's own, and the extras conns holds open.
struct Channel {
    t: TransportKind,
    m: Mode,
    spec: DataSpec,
    ep: AnyEndpoint,
    extras: Vec<AnyEndpoint>,
}

/// The per-benchmark dispatch: every transport, mode and benchmark configured, in that order,
/// until done or the user asks to stop.
fn run_suite(
    ctx: &Ctx<'_>,
    ctrl: &mut Control,
    watch: &mut Watch,
    tally: &mut Tally,
    progress: &mut dyn Progress,
) -> Result<(), BenchError> {
    let cfg = ctx.cfg;
    for &t in &cfg.transports {
        for &m in &cfg.modes {
            if tally.stopped(progress) {
                return Ok(());
            }
            let spec = cfg.data_spec(t, m);
            let ep = launch::connect_data(ctrl, &spec, ctx.token)?;
            let mut ch = Channel {
                t,
                m,
                spec,
                ep,
                extras: Vec::new(),
            };
            for &b in &cfg.benchmarks {
                if tally.stopped(progress) {
                    return Ok(());
                }
                if b == Benchmark::Pipeline {
                    pipeline_step(ctx, ctrl, &mut ch, tally, progress)?;
                    continue;
                }
                benchmark_step(ctx, ctrl, &mut ch, b, tally, watch, progress)?;
                if tally.partial {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// pipeline over one transport and mode (shm and the sockets; skipped elsewhere): its own
/// channels, then the run's own channel again for the benchmarks after it.
fn pipeline_step(
    ctx: &Ctx<'_>,
    ctrl: &mut Control,
    ch: &mut Channel,
    tally: &mut Tally,
    progress: &mut dyn Progress,
) -> Result<(), BenchError> {
    let (t, m) = (ch.t, ch.m);
    if matches!(
        t,
        TransportKind::Shm | TransportKind::Tcp | TransportKind::Uds
    ) {
        let mut env = PipeEnv {
            ctrl: &mut *ctrl,
            clock: ctx.clock,
            token: ctx.token,
            cfg: ctx.cfg,
            cpus: ctx.cpus,
        };
        tally.results.extend(pipeline_rows(
            &mut env,
            t,
            m,
            &mut tally.sbuf,
            &mut tally.rbuf,
            progress,
        )?);
        // The run's own channel again, for the benchmarks after this one.
        ch.ep = launch::connect_data(ctrl, &ch.spec, ctx.token)?;
    }
    tally.done += ctx.cfg.sizes.len();
    let what = format!("{} over {t} ({m})", Benchmark::Pipeline);
    tally.step_finished(&what, progress);
    Ok(())
}

/// One measurement's place in the suite: what, how big, over what, and the phase errors name.
struct At {
    b: Benchmark,
    size: u64,
    t: TransportKind,
    m: Mode,
    ph: String,
    run: RunSpec,
}

/// One benchmark (not pipeline) over one transport and mode, every size; on a stop request
/// it returns early with [`Tally::partial`] set.
fn benchmark_step(
    ctx: &Ctx<'_>,
    ctrl: &mut Control,
    ch: &mut Channel,
    b: Benchmark,
    tally: &mut Tally,
    watch: &mut Watch,
    progress: &mut dyn Progress,
) -> Result<(), BenchError> {
    let (cfg, t, m) = (ctx.cfg, ch.t, ch.m);
    let mut prtts = Vec::new();
    // The sizes of a benchmark that finished before an interrupt are kept; its
    // loggp rows need every size, so an interrupted loggp leaves none.
    for &size in &cfg.sizes {
        if tally.stopped(progress) {
            return Ok(());
        }
        let ph = phase(b, size, t, m);
        progress.update(&ph, tally.done, tally.total);
        let run = size_run(cfg, b, size, m);
        let at = At {
            b,
            size,
            t,
            m,
            ph,
            run,
        };
        if matches!(b, Benchmark::Conns | Benchmark::Cq) {
            conns_step(ctx, ctrl, ch, &at, tally)?;
            tally.done += 1;
            break; // one size: both measure 16-byte messages only
        }
        let (s, r) = (&mut tally.sbuf[..size as usize], &mut tally.rbuf[..]);
        let mut link = Link {
            ctrl: &mut *ctrl,
            ep: &mut ch.ep,
            clock: ctx.clock,
        };
        match b {
            Benchmark::Loggp => prtts.push(loggp_size(ctx, &mut link, &at, s, r)?),
            Benchmark::Bufmgmt | Benchmark::Blocking | Benchmark::Noncontig => {
                let rows = cost_rows(ctx, &mut link, &at, s, r)?;
                tally.results.extend(rows);
            }
            _ => {
                let row = latency_size(ctx, &mut link, &at, &mut tally.copy_bw, s, r)?;
                tally.results.push(row);
                tally.done += 1;
                watch.check();
                continue;
            }
        }
        tally.done += 1;
    }
    if b == Benchmark::Loggp {
        tally.results.extend(loggp_rows(&prtts, t, m, cfg)?);
    }
    tally.step_finished(&format!("{b} over {t} ({m})"), progress);
    // Between steps both ends wait on the control channel: a fair moment to look
    // for measurements started since and at the run queue.
    watch.check();
    Ok(())
}

/// The run of one size of a benchmark as configured (latency and loggp: one message in flight).
fn size_run(cfg: &BenchConfig, b: Benchmark, size: u64, m: Mode) -> RunSpec {
    let (iters, warmup) = cfg.counts(b, size);
    let window = if b == Benchmark::Latency || b == Benchmark::Loggp {
        1
    } else {
        cfg.window
    };
    RunSpec {
        benchmark: b,
        size,
        iterations: iters,
        warmup,
        window,
        validate: cfg.validate,
        prtt: None,
        mode: Some(m),
        block_spins: 0,
        segments: 0,
        packed: false,
        in_place: false,
    }
}

/// conns or cq over one transport and mode, unless it means nothing there; the extra channels
/// dropped afterwards.
fn conns_step(
    ctx: &Ctx<'_>,
    ctrl: &mut Control,
    ch: &mut Channel,
    at: &At,
    tally: &mut Tally,
) -> Result<(), BenchError> {
    let (b, t, m) = (at.b, at.t, at.m);
    // conns sweeps by polling, so its block-mode pass means nothing; cq needs
    // endpoints a completion queue can watch (refused up front, or skipped
    // for `all`).
    let skip = (b == Benchmark::Conns && m == Mode::Block)
        || (b == Benchmark::Cq && !launch::has_completion_queue(t));
    if !skip {
        let mut env = ConnsEnv {
            ctrl: &mut *ctrl,
            ep: &mut ch.ep,
            extras: &mut ch.extras,
            clock: ctx.clock,
            spec: ch.spec,
            token: ctx.token,
            cfg: ctx.cfg,
        };
        let (s16, r) = (&mut tally.sbuf[..16], &mut tally.rbuf[..]);
        tally
            .results
            .extend(conns_rows(&mut env, b, at.run, s16, r)?);
        ch.extras.clear();
        ctrl.send(&Cmd::DropExtras)?;
    }
    Ok(())
}

/// What one measurement talks over: the control channel, the data channel and the clock.
struct Link<'a> {
    ctrl: &'a mut Control,
    ep: &'a mut AnyEndpoint,
    clock: &'a Clock,
}

impl Link<'_> {
    /// [`latency_row`] over this link.
    fn latency(
        &mut self,
        ph: &str,
        run: RunSpec,
        s: &mut [u8],
        r: &mut [u8],
    ) -> Result<Row, BenchError> {
        latency_row(self.ctrl, self.ep, self.clock, ph, run, s, r)
    }
}

/// loggp at one size: four parametrized round trips; the last two wait delays derived from
/// the first two (loggp::variants).
fn loggp_size(
    ctx: &Ctx<'_>,
    link: &mut Link<'_>,
    at: &At,
    s: &mut [u8],
    r: &mut [u8],
) -> Result<loggp::SizePrtt, BenchError> {
    let (ph, clock, warmup) = (&at.ph, link.clock, at.run.warmup);
    let mut samples = vec![0.0; at.run.iterations as usize];
    let mut figs = [loggp::Timing::default(); 4];
    for k in 0..4 {
        let p = loggp::variants(loggp::N, &figs)[k];
        let run = RunSpec {
            prtt: Some(p),
            ..at.run
        };
        // The delay is measured, not configured: checked here, as the
        // peer will.
        run.check(ctx.max, ctx.cfg.idle_timeout)
            .map_err(|error| BenchError::Bound {
                phase: ph.clone(),
                error,
            })?;
        let ep = &mut *link.ep;
        let (fig, _) = exchange(link.ctrl, ph, run, || {
            with_endpoint!(ep, e => loggp::prtt_client(
                e, clock, s, r, &p, warmup, &mut samples
            ))
        })?;
        figs[k] = fig;
    }
    Ok(loggp::SizePrtt::new(at.size, loggp::N, figs))
}

/// The variants an extended test measures at one size (see [`Variant`]).
fn cost_variants(cfg: &BenchConfig, at: &At) -> Vec<Variant> {
    let m = at.m;
    match at.b {
        Benchmark::Blocking => vec![
            (Mode::Block, 0, 0, false, false),
            (Mode::Block, cfg.block_spins, 0, false, false),
        ],
        Benchmark::Noncontig => extended::segment_counts(at.size)
            .into_iter()
            .flat_map(|k| [(m, 0, k, false, false), (m, 0, k, true, false)])
            .collect(),
        // Registered memory where the transport has it (the shm segment,
        // io_uring's fixed buffers); the baseline is the private-buffer
        // (copied) standard latency.
        _ if launch::has_registered_memory(at.t) => {
            vec![(m, 0, 0, false, false), (m, 0, 0, false, true)]
        }
        _ => vec![(m, 0, 0, false, false)],
    }
}

/// bufmgmt, blocking and noncontig at one size: the latency test with one thing changed,
/// against the standard latency measured on the same connection just before (and after).
fn cost_rows(
    ctx: &Ctx<'_>,
    link: &mut Link<'_>,
    at: &At,
    s: &mut [u8],
    r: &mut [u8],
) -> Result<Vec<Row>, BenchError> {
    let (b, t, ph) = (at.b, at.t, &at.ph);
    let base_mode = if b == Benchmark::Blocking {
        Mode::Poll
    } else {
        at.m
    };
    let base = RunSpec {
        benchmark: Benchmark::Latency,
        mode: Some(base_mode),
        ..at.run
    };
    let before = link.latency(ph, base, s, r)?;
    let variants = cost_variants(ctx.cfg, at);
    let mut measured = Vec::with_capacity(variants.len());
    for var in variants {
        let (v, vph) = variant_run(b, at.run, ph, var);
        let row = link.latency(&vph, v, s, r)?;
        measured.push((var, label_variant(row, b, t, var)?));
    }
    // The baseline again: how far the machine drifted while the variants
    // ran is part of the noise their costs are judged against.
    let after = link.latency(ph, base, s, r)?;
    let around = cost::Baseline::around(&before, &after);
    let mut rows = Vec::with_capacity(measured.len());
    for (var, row) in measured {
        rows.push(judge_variant(link, at, base, (var, row), around, s, r)?);
    }
    Ok(rows)
}

/// Judges one variant's row against its baseline; a row below it beyond the noise is measured
/// again, baseline and variant back to back, and judged once more.
fn judge_variant(
    link: &mut Link<'_>,
    at: &At,
    base: RunSpec,
    (var, mut row): (Variant, Row),
    around: Option<cost::Baseline>,
    s: &mut [u8],
    r: &mut [u8],
) -> Result<Row, BenchError> {
    // Registered memory used in place does less than the baseline,
    // which copies in and out: it can be faster.
    let saving = if var.4 {
        cost::Saving::Possible
    } else {
        cost::Saving::Impossible
    };
    if let cost::Verdict::BelowBaseline { by_us, band_us } =
        cost::judge(&mut row, around, saving, false)
    {
        // Below its baseline beyond noise: both again, back to back.
        let (v, vph) = variant_run(at.b, at.run, &at.ph, var);
        let base_again = link.latency(&at.ph, base, s, r)?;
        let again = link.latency(&vph, v, s, r)?;
        row = label_variant(again, at.b, at.t, var)?;
        row.notes.push(format!(
            "measured again: the first measurement was {by_us:.3} µs below its baseline, beyond the noise (±{band_us:.3} µs)"
        ));
        cost::judge(&mut row, cost::Baseline::of(&base_again), saving, true);
    }
    Ok(row)
}

/// latency, bandwidth, bibw and the other standard patterns at one size: the row, judged
/// against the physical limits over shm.
fn latency_size(
    ctx: &Ctx<'_>,
    link: &mut Link<'_>,
    at: &At,
    copy_bw: &mut std::collections::BTreeMap<u64, f64>,
    s: &mut [u8],
    r: &mut [u8],
) -> Result<Row, BenchError> {
    let (b, t, clock) = (at.b, at.t, ctx.clock);
    // The limit right before the row, while the peer's CPU is idle: on a VM the
    // two vCPUs move between cores (and their distance with them) during a run.
    let row_cacheline_us = match (ctx.limits, ctx.cpus) {
        (Some(_), Some((mine, theirs))) if t == TransportKind::Shm && b == Benchmark::Latency => {
            let ns = limits::cacheline_one_way_ns(clock, [theirs, mine], 5000, 5)?;
            affinity::pin_to(mine).map_err(|e| BenchError::Pin(e.to_string()))?;
            Some(ns / 1e3)
        }
        _ => None,
    };
    let mut row = link.latency(&at.ph, at.run, s, r)?;
    row.transport = t;
    row.mode = at.m;
    if let (TransportKind::Shm, Some(l)) = (t, ctx.limits) {
        let cl = row_cacheline_us.unwrap_or(l.cacheline_one_way_us);
        judge_limits(ctx, at, &mut row, cl, copy_bw)?;
    }
    Ok(row)
}

/// Judges a shm row against the physical limits (`cl`: the cache-line one-way time, µs); a
/// limit that does not hold is measured again, more carefully. This end is pinned again after.
fn judge_limits(
    ctx: &Ctx<'_>,
    at: &At,
    row: &mut Row,
    cl: f64,
    copy_bw: &mut std::collections::BTreeMap<u64, f64>,
) -> Result<(), BenchError> {
    let (clock, size, cpus) = (ctx.clock, at.size, ctx.cpus);
    // Both ends' CPUs copying at once: no transport between them can move
    // the bytes faster.
    let pair = cpus.map_or([0, 0], |(mine, theirs)| [theirs, mine]);
    let copy = match copy_bw.get(&size) {
        Some(&c) => c,
        None => {
            let c = limits::memcpy_two_cpus_mb_per_s(clock, size as usize, pair, 5)?;
            *copy_bw.entry(size).or_insert(c)
        }
    };
    if let limits::Judged::AboveLimit(_) = limits::judge(row, cl, copy, false) {
        // A limit that does not hold was measured in other conditions
        // (a vCPU moved): measure it again, more carefully, and judge once
        // more; the row keeps whichever limit is faster.
        let again = limits::memcpy_two_cpus_mb_per_s(clock, size as usize, pair, 15)?;
        let copy = copy.max(again);
        copy_bw.insert(size, copy);
        let cl = match (cpus, at.b) {
            (Some((mine, theirs)), Benchmark::Latency) => {
                let ns = limits::cacheline_one_way_ns(clock, [theirs, mine], 5000, 15)?;
                (ns / 1e3).min(cl)
            }
            _ => cl,
        };
        limits::judge(row, cl, copy, true);
    }
    if let Some((mine, _)) = cpus {
        affinity::pin_to(mine).map_err(|e| BenchError::Pin(e.to_string()))?;
    }
    Ok(())
}

/// Finishing: the peer's findings (a served peer's), goodbye, this end's CPUs restored, the
/// local peer waited for, and the disturbance both ends saw. Returns this end's CPU and that.
fn end_session(
    guard: Option<LocalPeer>,
    mut ctrl: Control,
    server: &ServerHello,
    placed: &Placed,
    watch: Watch,
    progress: &mut dyn Progress,
) -> Result<(Option<usize>, Disturbance), BenchError> {
    ctrl.set_phase("the end of the session");
    let local_cpu = affinity::current_cpu();
    let peer_found = if placed.local {
        Disturbance::default()
    } else {
        peer_findings(&mut ctrl)?
    };
    ctrl.send(&Cmd::Bye)?;
    progress.finish();
    let _ = affinity::set_allowed(&placed.restore);
    // The local peer is waited for first, so that its preemptions count with ours.
    drop(guard);
    let mut disturbance = watch.finish();
    let same_machine = server
        .process
        .as_ref()
        .is_some_and(|p| p.same_machine(&ProcessId::me()));
    let whose = format!(
        "the peer (pid {} on {})",
        server.pid,
        printable(&server.hostname)
    );
    disturbance.merge(&whose, peer_found, same_machine);
    Ok((local_cpu, disturbance))
}

/// The report's record of the options the run was given.
fn report_options(cfg: &BenchConfig, peer: Option<String>) -> Options {
    Options {
        benchmarks: cfg.benchmarks.clone(),
        transports: cfg.transports.clone(),
        modes: cfg.modes.clone(),
        sizes_bytes: cfg.sizes.clone(),
        iterations: cfg.iterations,
        warmup: cfg.warmup,
        window: cfg.window,
        validate: cfg.validate,
        launcher: match cfg.launcher {
            Launcher::Local { .. } => "local".into(),
            Launcher::Peer { .. } => "peer".into(),
            Launcher::Mpi { .. } => "mpi".into(),
        },
        peer,
        mpi_library: None,
        mpi_calls: None,
    }
}

/// The report's record of where the two ends ran.
fn report_placement(cfg: &BenchConfig, placed: &Placed, local_cpu: Option<usize>) -> Placement {
    Placement {
        pinned: placed.cpus.is_some(),
        local_cpu: placed.mine.or(local_cpu),
        peer_cpu: placed.peer_cpu,
        local_pinned: Some(placed.mine.is_some()),
        peer_pinned: Some(placed.theirs.is_some()),
        warning: cfg
            .shared_cpu()
            .map(|c| format!("both ends on cpu {c}: they take turns, latency is the scheduler's")),
    }
}

/// What the peer's watch found, its notes made printable (they go into our result and a
/// table's header, one line each).
fn peer_findings(ctrl: &mut Control) -> Result<Disturbance, BenchError> {
    let ph = "the peer's disturbance findings";
    ctrl.send(&Cmd::Findings)?;
    let Reply::Findings { mut findings } = expect_reply(ctrl, ph)? else {
        return Err(unexpected(ctrl, ph));
    };
    for f in &mut findings {
        f.note = printable(&f.note);
    }
    Ok(Disturbance { findings })
}

/// One variant of an extended test: (mode, spins before blocking, segments, packed, in place).
type Variant = (Mode, u32, u32, bool, bool);

/// The run of one variant of an extended test, and the phase its errors name (a noncontig size
/// runs up to fourteen variants after its baseline).
fn variant_run(b: Benchmark, run: RunSpec, ph: &str, var: Variant) -> (RunSpec, String) {
    let (mode, block_spins, segments, packed, in_place) = var;
    let vph = match b {
        Benchmark::Noncontig => format!(
            "{ph}, {segments} segment{}, {}",
            if segments == 1 { "" } else { "s" },
            if packed { "packed" } else { "vectored" }
        ),
        _ => ph.to_string(),
    };
    let v = RunSpec {
        mode: Some(mode),
        block_spins,
        segments,
        packed,
        in_place,
        ..run
    };
    (v, vph)
}

/// A variant's row with the keys that tell it from the others of its benchmark.
fn label_variant(
    mut row: Row,
    b: Benchmark,
    t: TransportKind,
    var: Variant,
) -> Result<Row, RowError> {
    let (mode, spins, segments, packed, in_place) = var;
    (row.transport, row.mode) = (t, mode);
    let key = match b {
        Benchmark::Blocking => CostVariant::Blocking {
            block_spins: Some(spins),
        },
        Benchmark::Noncontig => CostVariant::Noncontig {
            segments: Some(segments),
            packed: Some(packed),
        },
        Benchmark::Bufmgmt => CostVariant::Bufmgmt {
            buffers: Some(if in_place {
                BufferUse::Registered
            } else {
                BufferUse::Fresh
            }),
        },
        _ => return Ok(row),
    };
    row.set_variant(key)?;
    Ok(row)
}

/// One measurement as a conversation: tell the peer, wait until it is ready, do the timed
/// `work`, then collect the peer's report (and anything its validation found).
fn exchange<T>(
    ctrl: &mut Control,
    ph: &str,
    run: RunSpec,
    work: impl FnOnce() -> Result<T, LoopError>,
) -> Result<(T, Option<Mismatch>), BenchError> {
    ctrl.set_phase(ph.to_string());
    ctrl.send(&Cmd::Run(run))?;
    if !matches!(expect_reply(ctrl, ph)?, Reply::Ready) {
        return Err(unexpected(ctrl, ph));
    }
    let out = work().map_err(|le| BenchError::Transfer {
        phase: format!("{ph}, iteration {}", le.iteration),
        cause: le.source,
    })?;
    let Reply::Done { mismatch, .. } = expect_reply(ctrl, ph)? else {
        return Err(unexpected(ctrl, ph));
    };
    Ok((out, mismatch))
}

/// One measurement of the latency family (or any pattern [`measure`] runs): switches this end to
/// the run's completion mode, runs the exchange, and turns corruption found by either side into
/// an error.
fn latency_row(
    ctrl: &mut Control,
    ep: &mut AnyEndpoint,
    clock: &Clock,
    ph: &str,
    run: RunSpec,
    s: &mut [u8],
    r: &mut [u8],
) -> Result<Row, BenchError> {
    if let Some(mode) = run.mode {
        with_endpoint!(&mut *ep, e => e.set_mode(mode, run.block_spins)).map_err(|cause| {
            BenchError::Transfer {
                phase: format!("{ph}: switching to {mode} mode"),
                cause,
            }
        })?;
    }
    let ((row, mine), theirs) = exchange(
        ctrl,
        ph,
        run,
        || with_endpoint!(&mut *ep, e => measure(e, clock, run, s, r)),
    )?;
    for (mm, side) in [(mine, "client"), (theirs, "peer")] {
        if let Some(mismatch) = mm {
            return Err(BenchError::Validation {
                phase: ph.to_string(),
                mismatch,
                side,
            });
        }
    }
    Ok(row)
}

/// Asks the peer to announce its endpoints' records on the shm completion queue `segment`
/// (or to stop, with `None`).
fn notify(ctrl: &mut Control, ph: &str, segment: Option<String>) -> Result<(), BenchError> {
    ctrl.send(&Cmd::Notify { segment })?;
    match expect_reply(ctrl, ph)? {
        Reply::Ready => Ok(()),
        other => Err(BenchError::Peer {
            peer: ctrl.peer().into(),
            phase: ph.to_string(),
            message: format!("unexpected reply {other:?} to the completion-queue request"),
        }),
    }
}

/// The completion queue a transport's endpoints are watched through.
enum AnyCq {
    Epoll(EpollSet),
    Uring(Box<UringPollSet>),
    Shm(ShmCq),
}

/// What the conns and cq measurements work with.
struct ConnsEnv<'a> {
    ctrl: &'a mut Control,
    ep: &'a mut AnyEndpoint,
    extras: &'a mut Vec<AnyEndpoint>,
    clock: &'a Clock,
    spec: DataSpec,
    token: &'a str,
    cfg: &'a BenchConfig,
}

/// conns and cq: for N = 1, 2, 4 … endpoints held open (extra channels opened as N grows),
/// 16-byte latency with the reply found by sweeping all N (polling), and for cq also through a
/// completion queue over them, in the run's mode.
fn conns_rows(
    env: &mut ConnsEnv<'_>,
    b: Benchmark,
    run: RunSpec,
    s16: &mut [u8],
    r: &mut [u8],
) -> Result<Vec<Row>, BenchError> {
    let (t, m) = (env.spec.transport, env.spec.mode);
    let mut rows = Vec::new();
    let mut one_conn = None;
    for n in extended::conn_counts(env.cfg.conns_max) {
        while env.extras.len() + 1 < n as usize {
            let extra = env.spec.held_open();
            env.extras
                .push(launch::connect_data(env.ctrl, &extra, env.token)?);
        }
        let ph = format!("{b} with {n} endpoints over {t} ({m})");
        let switch = |ep: &mut AnyEndpoint, mode: Mode| {
            with_endpoint!(ep, e => e.set_mode(mode, 0)).map_err(|cause| BenchError::Transfer {
                phase: ph.clone(),
                cause,
            })
        };
        let new_row = |bench: Benchmark, samples: &[u64]| {
            let mut row = Row::new(bench, t, m, 16);
            (row.iterations, row.warmup) = (run.iterations, run.warmup);
            summarize_latency(&mut row, env.clock, samples);
            let key = match bench {
                Benchmark::Cq => CostVariant::Cq {
                    connections: Some(n),
                },
                _ => CostVariant::Conns {
                    connections: Some(n),
                },
            };
            row.set_variant(key).map(|()| row)
        };
        // Sweeping every endpoint, polling.
        let sweep = RunSpec {
            size: 16,
            benchmark: Benchmark::Conns,
            mode: Some(Mode::Poll),
            ..run
        };
        switch(env.ep, Mode::Poll)?;
        let lp = sweep.looping();
        let mut samples = vec![0u64; run.iterations as usize];
        let (ep, extras, clock, idle) =
            (&mut *env.ep, &*env.extras, env.clock, env.cfg.idle_timeout);
        exchange(env.ctrl, &ph, sweep, || {
            with_endpoint!(&mut *ep, e => patterns::latency_sweep_initiator(
                e, extras, clock, s16, r, &lp, idle, &mut samples
            ))
        })?;
        let mut row = new_row(Benchmark::Conns, &samples)?;
        if b == Benchmark::Conns {
            let base = *one_conn.get_or_insert(cost::Baseline::of(&row));
            cost::judge(&mut row, base, cost::Saving::Impossible, true);
            row.mode = Mode::Poll;
            rows.push(row);
            continue;
        }
        // A completion queue over the same endpoints, in the run's mode.
        let cq_failed = |cause| BenchError::Transfer {
            phase: ph.clone(),
            cause,
        };
        // The uring transports wait on an io_uring, the socket ones on epoll.
        // shm: a queue in shared memory that the peer's endpoints post to.
        let mut queue = if t == TransportKind::Shm {
            let mut q = ShmCq::create(m).map_err(cq_failed)?;
            notify(env.ctrl, &ph, Some(q.name().to_string()))?;
            q.unlink();
            AnyCq::Shm(q)
        } else if crate::config::is_uring(t) {
            AnyCq::Uring(Box::new(UringPollSet::new().map_err(cq_failed)?))
        } else {
            AnyCq::Epoll(EpollSet::new().map_err(cq_failed)?)
        };
        for (key, x) in std::iter::once(&*env.ep)
            .chain(env.extras.iter())
            .enumerate()
        {
            let fd = x.completion_fd();
            match (&mut queue, fd) {
                (AnyCq::Epoll(q), Some(fd)) => q.add(fd, key as u64),
                (AnyCq::Uring(q), Some(fd)) => q.add(fd, key as u64),
                _ => Ok(()),
            }
            .map_err(cq_failed)?;
        }
        let cq = RunSpec {
            size: 16,
            benchmark: Benchmark::Cq,
            mode: Some(m),
            ..run
        };
        switch(env.ep, m)?;
        let lp = cq.looping();
        let ep = &mut *env.ep;
        exchange(env.ctrl, &ph, cq, || match &mut queue {
            AnyCq::Epoll(q) => with_endpoint!(&mut *ep, e => patterns::latency_cq_initiator(
                e, q, 0, clock, s16, r, &lp, idle, &mut samples
            )),
            AnyCq::Uring(q) => with_endpoint!(&mut *ep, e => patterns::latency_cq_initiator(
                e, &mut **q, 0, clock, s16, r, &lp, idle, &mut samples
            )),
            AnyCq::Shm(q) => with_endpoint!(&mut *ep, e => patterns::latency_cq_initiator(
                e, q, 0, clock, s16, r, &lp, idle, &mut samples
            )),
        })?;
        if matches!(queue, AnyCq::Shm(_)) {
            notify(env.ctrl, &ph, None)?;
        }
        let mut cq_row = new_row(Benchmark::Cq, &samples)?;
        // One wait on a queue instead of a sweep over N endpoints can be faster: a saving.
        cost::judge(
            &mut cq_row,
            cost::Baseline::of(&row),
            cost::Saving::Possible,
            true,
        );
        rows.push(cq_row);
    }
    Ok(rows)
}

/// Rows of a loggp measurement: one per size, from the fit over all sizes.
/// The loggp rows of one transport and mode: LogGP per size from the PRTT figures.
pub fn loggp_rows(
    prtts: &[loggp::SizePrtt],
    t: TransportKind,
    m: Mode,
    cfg: &BenchConfig,
) -> Result<Vec<Row>, BenchError> {
    let fit = loggp::extract(prtts).ok_or_else(|| BenchError::Peer {
        peer: "this process".into(),
        phase: format!("loggp over {t} ({m})"),
        message: "g and G could not be fitted (at least two distinct sizes are needed)".into(),
    })?;
    let us = |ns: Option<f64>| ns.map(|v| v / 1e3);
    Ok(fit
        .rows
        .iter()
        .map(|l| {
            let p = &fit.pieces[l.piece];
            let mut row = Row::new(Benchmark::Loggp, t, m, l.size);
            (row.iterations, row.warmup) = cfg.counts(Benchmark::Loggp, l.size);
            if let Some(f) = row.loggp_mut() {
                f.p50_us = Some(l.latency_ns / 1e3);
                (f.o_s_us, f.o_r_us, f.gap_us) = (us(l.o_s_ns), us(l.o_r_ns), us(l.gap_ns));
                f.o_s_fixed_us = us(p.o_s_ns);
                f.O_s_us_per_byte = us(p.o_s_per_byte_ns);
                f.o_r_fixed_us = us(p.o_r_ns);
                f.O_r_us_per_byte = us(p.o_r_per_byte_ns);
                f.g_us = us(p.g_ns);
                f.gap_per_byte_us = us(p.gap_per_byte_ns);
                f.L_us = us(p.l_ns);
                f.overlap_us = us(p.overlap_ns);
                f.exchange_us = us(l.exchange_ns);
                f.send_wait_us = us(p.send_wait_ns);
                f.duplex_us = us(p.duplex_ns);
                f.model_us = us(p.one_way_ns(l.size));
                (f.piece_from_bytes, f.piece_to_bytes) = (Some(p.from_size), Some(p.to_size));
            }
            row.notes.clone_from(&l.notes);
            // A piece's notes once, on its first row.
            if l.size == p.from_size {
                row.notes.extend(p.notes.iter().cloned());
            }
            row
        })
        .collect())
}

fn unexpected(ctrl: &Control, phase: &str) -> BenchError {
    BenchError::Peer {
        peer: ctrl.peer().into(),
        phase: phase.into(),
        message: "answered out of turn".into(),
    }
}

/// Sets the one-way latency statistics of `row` from round-trip samples in ticks.
pub fn summarize_latency(row: &mut Row, clock: &Clock, samples: &[u64]) {
    let mut us: Vec<f64> = samples
        .iter()
        .map(|&t| clock.ticks_to_ns(t) / 2.0 / 1e3)
        .collect();
    let Some(p) = row.percentiles_mut() else {
        return;
    };
    if let Some(s) = Summary::from_unsorted(&mut us) {
        p.p50_us = Some(s.p50);
        p.p50_noise_us = median_uncertainty(&us);
        p.p90_us = Some(s.p90);
        p.p99_us = Some(s.p99);
        p.min_us = Some(s.min);
        p.max_us = Some(s.max);
        p.mean_us = Some(s.mean);
    }
}

/// Runs one measurement as the initiator; returns the row (transport and mode unset) and any
/// corruption the client saw.
fn measure<E: Endpoint + VectoredSend>(
    ep: &mut E,
    clock: &Clock,
    run: RunSpec,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
) -> Result<(Row, Option<Mismatch>), LoopError> {
    let mut row = Row::new(run.benchmark, ep.info().transport, ep.info().mode, run.size);
    row.iterations = run.iterations;
    row.warmup = run.warmup;
    row.validated = run.validate;
    let (w, it) = (run.window, run.iterations);
    let lp = run.looping();
    let secs = |ticks: u64| clock.ticks_to_ns(ticks) / 1e9;
    let mismatch = match run.benchmark {
        Benchmark::Loggp | Benchmark::Conns | Benchmark::Cq => {
            unreachable!("runs its own exchanges")
        }
        Benchmark::Noncontig => {
            let (mut mem, ranges) = extended::scattered(run.size as usize, run.segments as usize);
            let mut msg = Scattered::new(&mut mem, &ranges);
            let mut pack = run.packed.then(|| PageBuf::new(run.size as usize));
            let mut samples = vec![0u64; it as usize];
            let bad = patterns::scattered_initiator(
                ep,
                clock,
                &mut msg,
                pack.as_deref_mut(),
                rbuf,
                &lp,
                &mut samples,
            )?;
            summarize_latency(&mut row, clock, &samples);
            bad
        }
        Benchmark::Bufmgmt if run.in_place => {
            let mut samples = vec![0u64; it as usize];
            let bad =
                patterns::in_place_initiator(ep, clock, run.size as usize, &lp, &mut samples)?;
            summarize_latency(&mut row, clock, &samples);
            bad
        }
        Benchmark::Latency | Benchmark::Blocking | Benchmark::Bufmgmt | Benchmark::Pipeline => {
            let mut samples = vec![0u64; it as usize];
            let mut pools;
            let mut bufs = if run.benchmark == Benchmark::Bufmgmt {
                pools = extended::fresh_pools(run.size as usize);
                let (sp, rp, stride) = (&mut pools.0, &mut pools.1, pools.2);
                Buffers::rotating(sp, rp, run.size as usize, stride)
            } else {
                Buffers::reused(sbuf, rbuf)
            };
            let bad = patterns::latency_initiator(ep, clock, &mut bufs, &lp, &mut samples)?;
            summarize_latency(&mut row, clock, &samples);
            bad
        }
        Benchmark::Bw | Benchmark::Mr => {
            let ticks = patterns::stream_sender(ep, clock, sbuf, &lp)?;
            set_rates(&mut row, w, (w as u64 * it) as f64, secs(ticks));
            None
        }
        Benchmark::Bibw => {
            let (ticks, bad) = patterns::bidir(ep, clock, sbuf, rbuf, &lp)?;
            set_rates(&mut row, w, 2.0 * (w as u64 * it) as f64, secs(ticks));
            bad
        }
    };
    Ok((row, mismatch))
}

/// Sets a bw, bibw or mr row's window and rates: `msgs` messages of the row's size in `secs`.
pub fn set_rates(row: &mut Row, window: u32, msgs: f64, secs: f64) {
    let size = row.size_bytes;
    if let Some(s) = row.stream_mut() {
        s.window = Some(window);
        s.mb_per_s = Some(msgs * size as f64 / secs / 1e6);
        s.msgs_per_s = Some(msgs / secs);
    }
}

/// `--inject-corruption MESSAGE:OFFSET[:BENCHMARK]`: the peer sends byte OFFSET of its message
/// MESSAGE of every run (counted from 0, warm-up included) XORed with 0xFF, through a
/// [`FaultInjector`], so that a test can prove `--validate` finds it. With a benchmark, only runs
/// of that benchmark are corrupted: noncontig measures its latency baseline first, and a test of
/// the scattered messages must not be satisfied by the baseline's finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectCorruption {
    pub fault: FaultConfig,
    pub only: Option<Benchmark>,
}

/// An `--inject-corruption` value that is not `MESSAGE:OFFSET[:BENCHMARK]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not MESSAGE:OFFSET[:BENCHMARK] (e.g. 5:3 or 5:37:noncontig)")]
pub struct InjectParseError(String);

impl std::str::FromStr for InjectCorruption {
    type Err = InjectParseError;

    fn from_str(v: &str) -> Result<Self, Self::Err> {
        let bad = || InjectParseError(v.to_string());
        let mut it = v.splitn(3, ':');
        let fault = match (it.next(), it.next()) {
            (Some(m), Some(o)) => format!("{m}:{o}").parse().map_err(|_| bad())?,
            _ => return Err(bad()),
        };
        let only = it.next().map(str::parse).transpose().map_err(|_| bad())?;
        Ok(InjectCorruption { fault, only })
    }
}

impl std::fmt::Display for InjectCorruption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.fault)?;
        match self.only {
            Some(b) => write!(f, ":{b}"),
            None => Ok(()),
        }
    }
}

/// What the peer does beyond following the client, each switched on by an explicit, hidden
/// option of `commperf serve` (or of `bench`, for the peer it starts), never by the environment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerHooks {
    /// `--inject-corruption`.
    pub corrupt: Option<InjectCorruption>,
    /// `--announce-runs`: one line on stderr as the peer enters each measurement's loop
    /// (`commperf peer PID runs BENCHMARK SIZE B`), so a test that kills it can wait for a
    /// measurement that is really running instead of guessing how long set-up takes.
    pub announce_runs: bool,
    /// `--pause-shm-create POINT`: creating a shared-memory segment stops for good at POINT
    /// (saying so on stderr), so a test can kill the peer exactly there.
    pub pause_shm_create: Option<shm::ShmPause>,
}

impl PeerHooks {
    /// The command line of a local peer (`commperf __peer …`) that carries these hooks.
    pub fn peer_args(&self) -> Vec<String> {
        let mut args = vec!["__peer".to_string()];
        if let Some(c) = self.corrupt {
            args.extend(["--inject-corruption".to_string(), c.to_string()]);
        }
        if self.announce_runs {
            args.push("--announce-runs".into());
        }
        if let Some(p) = self.pause_shm_create {
            args.extend(["--pause-shm-create".to_string(), p.to_string()]);
        }
        args
    }

    /// The fault to inject into `run`, if any.
    fn fault_for(&self, run: &RunSpec) -> Option<FaultConfig> {
        let c = self.corrupt?;
        c.only.is_none_or(|b| b == run.benchmark).then_some(c.fault)
    }
}

/// What a peer with `--announce-runs` prints as it enters a measurement's loop.
pub const ANNOUNCE_PREFIX: &str = "commperf peer ";

/// Most channels this process can hold open beside the data channel for a client, each taking
/// `per` descriptors ([`bounds::max_extra_channels`] of its descriptor limit), and why.
fn max_extra_channels(per: u64) -> (u64, String) {
    let limit = extended::open_file_limit();
    let max = bounds::max_extra_channels(limit, per);
    let why = if max == bounds::MAX_CONNS as u64 - 1 {
        format!("--conns-max {} less the data channel", bounds::MAX_CONNS)
    } else {
        format!(
            "this process may open {limit} descriptors, keeps {} for itself and each channel \
             takes {per}; raise `ulimit -n` where it runs",
            bounds::FD_RESERVE
        )
    };
    (max, why)
}

/// What a session holds, so that each request is checked against the bounds before anything is
/// allocated for it.
#[derive(Debug, Default)]
struct Held {
    memory: SessionMemory,
    /// Of the held-open channels.
    extra_bytes: u64,
    /// The data channel's idle timeout (PRTT delays are bounded by it).
    idle: Duration,
}

impl Held {
    /// Checks a new data channel (the old one and its extras are gone).
    fn check_main(&mut self, spec: &DataSpec) -> Result<u64, BoundError> {
        spec.check()?;
        self.memory = SessionMemory::default();
        self.extra_bytes = 0;
        let need = spec.memory_bytes() + 2 * spec.max_message as u64;
        self.memory
            .check(need, "the data channel and its two message buffers")?;
        Ok(need)
    }

    fn check_extra(&self, spec: &DataSpec, open: usize) -> Result<u64, BoundError> {
        spec.check()?;
        let (max, why) = max_extra_channels(spec.descriptors());
        if open as u64 + 1 > max {
            return Err(BoundError::new(
                "extra data channels",
                open + 1,
                format!("at most {max} ({why})"),
            ));
        }
        let need = spec.memory_bytes();
        self.memory.check(need, "one more held-open channel")?;
        Ok(need)
    }

    fn drop_extras(&mut self) {
        self.memory.release(self.extra_bytes);
        self.extra_bytes = 0;
    }
}

/// The peer's side of a session: follows the client's commands until `bye`. Every size the
/// client sends is checked against [`commperf_transport::bounds`] before it is used; a request
/// outside them is answered with the bound it broke and ends the session.
///
/// Asked to watch (a client that is not our parent), it registers as a `serve` measurement on
/// the CPU it was placed on, leaving the client (the handshake's partner) out of what it
/// finds, and sends its findings when asked; they are returned too, for the server's log.
pub fn serve_session(
    ctrl: &mut Control,
    token: &str,
    bind_ip: IpAddr,
) -> Result<Disturbance, BenchError> {
    serve_session_with(ctrl, token, bind_ip, PeerHooks::default())
}

/// [`serve_session`] with the hooks of `commperf serve`'s hidden options: each command is
/// handled by a `Served` method until `bye` or an error ends the session; this end's CPUs are
/// allowed again before the outcome is returned.
pub fn serve_session_with(
    ctrl: &mut Control,
    token: &str,
    bind_ip: IpAddr,
    hooks: PeerHooks,
) -> Result<Disturbance, BenchError> {
    let partners = ctrl.partners().to_vec();
    let restore = affinity::allowed_cpus();
    let mut served = Served::new(partners, token, bind_ip, hooks);
    let result = loop {
        match served.next(ctrl)? {
            Next::Wait => {}
            Next::End(r) => break r,
        }
    };
    let _ = affinity::set_allowed(&restore);
    result?;
    // A client that said bye without asking still had its session watched.
    if let Some(w) = served.watch {
        served.found = w.finish();
    }
    Ok(served.found)
}

/// What a command leaves the serving session to do. (An `Err` beside it, from a reply that
/// could not be sent, ends the session at once.)
enum Next {
    /// Wait for the next command.
    Wait,
    /// End the session with this outcome.
    End(Result<(), BenchError>),
}

/// The peer's side of one session: what it was given and what it holds between commands.
struct Served<'a> {
    /// The handshake's partners, left out of what the watch finds.
    partners: Vec<ProcessId>,
    token: &'a str,
    bind_ip: IpAddr,
    hooks: PeerHooks,
    watch: Option<Watch>,
    found: Disturbance,
    /// Calibrated: the PRTT server busy-waits exact delays.
    clock: Clock,
    ep: Option<AnyEndpoint>,
    /// Channels the client keeps open for the conns benchmark; never used here.
    extras: Vec<AnyEndpoint>,
    bufs: (PageBuf, PageBuf),
    held: Held,
}

/// Tells the client which bound its request broke, and ends the session.
fn refuse(ctrl: &mut Control, phase: String, error: BoundError, setup: bool) -> BenchError {
    let message = format!("refused: {error}");
    let sent = if setup {
        ctrl.send(&launch::SetupMsg::Error { message })
    } else {
        ctrl.send(&Reply::Error { message })
    };
    match sent {
        Ok(()) => BenchError::Bound { phase, error },
        Err(e) => e.into(),
    }
}

impl<'a> Served<'a> {
    fn new(partners: Vec<ProcessId>, token: &'a str, bind_ip: IpAddr, hooks: PeerHooks) -> Self {
        Served {
            partners,
            token,
            bind_ip,
            hooks,
            watch: None,
            found: Disturbance::default(),
            clock: Clock::calibrate(),
            ep: None,
            extras: Vec::new(),
            bufs: (PageBuf::new(0), PageBuf::new(0)),
            held: Held::default(),
        }
    }

    /// Waits for the client's next command and handles it.
    fn next(&mut self, ctrl: &mut Control) -> Result<Next, BenchError> {
        ctrl.set_phase("waiting for the next command");
        let cmd = match ctrl.recv::<Cmd>() {
            Ok(c) => c,
            // Said to the client before the session ends, as the handshake says it to a
            // stranger: a client that sent what we cannot read learns why, not just "closed".
            Err(e @ launch::LaunchError::Malformed { .. }) => {
                let _ = ctrl.send(&Reply::Error {
                    message: e.to_string(),
                });
                return Ok(Next::End(Err(e.into())));
            }
            Err(e) => return Ok(Next::End(Err(e.into()))),
        };
        match cmd {
            Cmd::Place { cpu, watch } => self.place(ctrl, cpu, watch),
            Cmd::Findings => {
                if let Some(w) = self.watch.take() {
                    self.found = w.finish();
                }
                ctrl.send(&Reply::Findings {
                    findings: self.found.findings.clone(),
                })?;
                Ok(Next::Wait)
            }
            Cmd::DropExtras => {
                self.extras.clear();
                self.held.drop_extras();
                Ok(Next::Wait)
            }
            Cmd::Notify { segment } => self.notify(ctrl, segment),
            Cmd::Data(spec) if spec.extra => Ok(self.open_extra(ctrl, &spec)),
            Cmd::Data(spec) => Ok(self.open_main(ctrl, &spec)),
            Cmd::Run(run) => self.run(ctrl, run),
            Cmd::Bye => Ok(Next::End(Ok(()))),
        }
    }

    /// Pins this end where asked (or leaves it), starts the watch if asked, says where it is.
    fn place(
        &mut self,
        ctrl: &mut Control,
        cpu: Option<usize>,
        w: bool,
    ) -> Result<Next, BenchError> {
        let pinned = match cpu {
            Some(c) => affinity::pin_to(c).is_ok(),
            None => false,
        };
        if w && self.watch.is_none() {
            let cpus: Vec<usize> = cpu.filter(|_| pinned).into_iter().collect();
            self.watch = Some(Watch::start_among("serve", &cpus, self.partners.clone()));
        }
        ctrl.send(&Reply::Placed {
            cpu: affinity::current_cpu(),
            pinned,
        })?;
        Ok(Next::Wait)
    }

    /// Announces (or stops announcing) every endpoint's records on the client's shm
    /// completion queue.
    fn notify(&mut self, ctrl: &mut Control, segment: Option<String>) -> Result<Next, BenchError> {
        let attached = segment.as_deref().map(shm::attach_cq).transpose();
        match attached {
            Ok(att) => {
                let all = self.ep.iter_mut().chain(self.extras.iter_mut());
                for (key, x) in all.enumerate() {
                    if let AnyEndpoint::Shm(e) = x {
                        e.set_notify(att.as_ref().map(|a| a.poster(key as u64)));
                    }
                }
                ctrl.send(&Reply::Ready)?;
            }
            Err(e) => ctrl.send(&Reply::Error {
                message: e.to_string(),
            })?,
        }
        Ok(Next::Wait)
    }

    /// One more held-open channel, checked against the bounds first.
    fn open_extra(&mut self, ctrl: &mut Control, spec: &DataSpec) -> Next {
        let need = match self.held.check_extra(spec, self.extras.len()) {
            Ok(n) => n,
            Err(e) => {
                return Next::End(Err(refuse(ctrl, "held-open channel setup".into(), e, true)))
            }
        };
        let pause = self.hooks.pause_shm_create;
        match launch::serve_data(ctrl, spec, self.bind_ip, self.token, pause) {
            Ok(e) => {
                self.extras.push(e);
                self.held.extra_bytes += need;
                // Checked just above.
                let _ = self.held.memory.add(need, "");
                Next::Wait
            }
            Err(e) => Next::End(Err(e.into())),
        }
    }

    /// A new data channel and its two message buffers, in place of the old ones (and their
    /// extras), checked against the bounds first.
    fn open_main(&mut self, ctrl: &mut Control, spec: &DataSpec) -> Next {
        drop(self.ep.take());
        self.extras.clear();
        // The old buffers go before the new are counted (and allocated).
        drop(std::mem::replace(
            &mut self.bufs,
            (PageBuf::new(0), PageBuf::new(0)),
        ));
        let need = match self.held.check_main(spec) {
            Ok(n) => n,
            Err(e) => return Next::End(Err(refuse(ctrl, "data channel setup".into(), e, true))),
        };
        let pause = self.hooks.pause_shm_create;
        let e = match launch::serve_data(ctrl, spec, self.bind_ip, self.token, pause) {
            Ok(e) => e,
            Err(e) => return Next::End(Err(e.into())),
        };
        self.bufs = (
            PageBuf::new(spec.max_message),
            PageBuf::new(spec.max_message),
        );
        let _ = self.held.memory.add(need, "");
        self.held.idle = Duration::from_millis(spec.idle_timeout_ms);
        self.ep = Some(e);
        Next::Wait
    }

    /// The responder side of one measurement: checked against the bounds, this end switched
    /// to the run's mode, the client told it may start, then the timed loop ([`respond`]).
    fn run(&mut self, ctrl: &mut Control, run: RunSpec) -> Result<Next, BenchError> {
        let ph = format!("{} {} B", run.benchmark, run.size);
        let Some(e) = self.ep.as_mut() else {
            ctrl.send(&Reply::Error {
                message: "no data channel".into(),
            })?;
            return Ok(Next::Wait);
        };
        let checked = run.check(self.bufs.0.len(), self.held.idle).and_then(|()| {
            let what = format!("{ph}: the benchmark's working buffers");
            self.held.memory.check(run.working_bytes(), &what)
        });
        if let Err(err) = checked {
            return Ok(Next::End(Err(refuse(ctrl, ph, err, false))));
        }
        if let Some(mode) = run.mode {
            let switched = with_endpoint!(&mut *e, e => e.set_mode(mode, run.block_spins));
            if let Err(err) = switched {
                ctrl.send(&Reply::Error {
                    message: format!("{ph}: {err}"),
                })?;
                return Ok(Next::Wait);
            }
        }
        ctrl.send(&Reply::Ready)?;
        if self.hooks.announce_runs {
            eprintln!("{ANNOUNCE_PREFIX}{} runs {ph}", std::process::id());
        }
        let (s, r) = (&mut self.bufs.0[..run.size as usize], &mut self.bufs.1[..]);
        let clock = &self.clock;
        // Wrapped afresh for each run: the fault's message counts from the run's first.
        let out = with_endpoint!(e, e => match self.hooks.fault_for(&run) {
            Some(f) => respond(&mut FaultInjector::new(e, f), clock, run, s, r),
            None => respond(e, clock, run, s, r),
        });
        self.ran(ctrl, &ph, out)
    }

    /// Tells the client how a run ended: done (with what validation found), or the error that
    /// ends the session.
    fn ran(
        &mut self,
        ctrl: &mut Control,
        ph: &str,
        out: Result<Option<Mismatch>, LoopError>,
    ) -> Result<Next, BenchError> {
        match out {
            Ok(mismatch) => {
                ctrl.send(&Reply::Done {
                    cpu: affinity::current_cpu(),
                    mismatch,
                })?;
                // Between runs, as the client looks: measurements started since.
                if let Some(w) = self.watch.as_mut() {
                    w.check();
                }
                Ok(Next::Wait)
            }
            Err(le) => {
                let phase = format!("{ph}, iteration {}", le.iteration);
                let _ = ctrl.send(&Reply::Error {
                    message: format!("{phase}: {}", le.source),
                });
                Ok(Next::End(Err(BenchError::Transfer {
                    phase,
                    cause: le.source,
                })))
            }
        }
    }
}

fn respond<E: Endpoint + VectoredSend>(
    ep: &mut E,
    clock: &Clock,
    run: RunSpec,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
) -> Result<Option<Mismatch>, LoopError> {
    let lp = run.looping();
    match run.benchmark {
        Benchmark::Latency
        | Benchmark::Blocking
        | Benchmark::Conns
        | Benchmark::Cq
        | Benchmark::Pipeline => {
            patterns::latency_responder(ep, &mut Buffers::reused(sbuf, rbuf), &lp)
        }
        Benchmark::Noncontig => {
            let (mut mem, ranges) = extended::scattered(run.size as usize, run.segments as usize);
            let mut msg = Scattered::new(&mut mem, &ranges);
            let mut pack = run.packed.then(|| PageBuf::new(run.size as usize));
            patterns::scattered_responder(ep, &mut msg, pack.as_deref_mut(), rbuf, &lp)
        }
        Benchmark::Bufmgmt if run.in_place => {
            patterns::in_place_responder(ep, run.size as usize, &lp)
        }
        Benchmark::Bufmgmt => {
            let (mut sp, mut rp, stride) = extended::fresh_pools(run.size as usize);
            let mut bufs = Buffers::rotating(&mut sp, &mut rp, run.size as usize, stride);
            patterns::latency_responder(ep, &mut bufs, &lp)
        }
        // Streams flow client → peer only: the peer has nothing to corrupt there.
        Benchmark::Bw | Benchmark::Mr => patterns::stream_receiver(ep, rbuf, &lp),
        Benchmark::Bibw => patterns::bidir(ep, clock, sbuf, rbuf, &lp).map(|(_, bad)| bad),
        Benchmark::Loggp => {
            let p = run.prtt.unwrap_or(Prtt::plain(1));
            loggp::prtt_server(
                ep,
                clock,
                sbuf,
                rbuf,
                &p,
                lp.warmup.saturating_add(lp.iters),
            )
            .map(|()| None)
        }
    }
}

/// What the pipeline benchmark needs of the session.
struct PipeEnv<'a> {
    ctrl: &'a mut Control,
    clock: &'a Clock,
    token: &'a str,
    cfg: &'a BenchConfig,
    /// (this end, the peer) when both are pinned: for the copy limit of shm rows.
    cpus: Option<(usize, usize)>,
}

/// Rounds each pipeline row is measured in (variants interleaved; the median is kept).
const PIPELINE_ROUNDS: usize = 5;

/// pipeline: for each fragment variant (the fixed ladder, then the adaptive plan) its own data
/// channel and the latency ping-pong at every size on it, [`PIPELINE_ROUNDS`] times over with
/// the variants interleaved, so that drift in the machine hits them all alike. One row per
/// variant and size: the median round's figures, bandwidth = size / one-way time, and the
/// model's `T(L, P)` beside (the exact recurrence; eq. 7's value in a note).
fn pipeline_rows(
    env: &mut PipeEnv<'_>,
    t: TransportKind,
    m: Mode,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
    progress: &mut dyn Progress,
) -> Result<Vec<Row>, BenchError> {
    use crate::config::FragmentSetting;
    use crate::pipeline::{fixed_ladder, rule_words};
    let cfg = env.cfg;
    // The variants, the model the rows are set beside, and which variant is today's behaviour
    // (shm: 64 KiB fragments; sockets: whole messages). The adaptive variant comes last.
    let (variants, model, today, plan): (Vec<FragmentSetting>, PipelineModel, usize, Plan) =
        if t == TransportKind::Shm {
            let max = bounds::max_shm_frag_bytes(cfg.shm_ring_bytes);
            let ladder = fixed_ladder(max);
            let today = ladder.iter().position(|&f| f == 64 << 10).unwrap_or(0);
            let v = (ladder.into_iter().map(FragmentSetting::Fixed))
                .chain([FragmentSetting::Adaptive])
                .collect();
            (v, cfg.shm_pipeline.clone(), today, cfg.shm_plan().1.clone())
        } else {
            // The socket's stages, timed and fitted here between the run's CPUs.
            progress.update(&format!("timing the {t} pipeline stages"), 0, 1);
            // Unpinned runs: the first two CPUs this process may use (or its only one).
            let allowed = affinity::allowed_cpus();
            let (mine, theirs) = env.cpus.unwrap_or((
                allowed.get(1).or(allowed.first()).copied().unwrap_or(0),
                allowed.first().copied().unwrap_or(0),
            ));
            let stages = |why: String| BenchError::Stages { transport: t, why };
            let prof = crate::pipeline::socket_profile(env.clock, [theirs, mine], t)
                .map_err(|e| stages(e.to_string()))?;
            match env.cpus {
                Some((mine, _)) => affinity::pin_to(mine),
                None => affinity::set_allowed(&allowed),
            }
            .map_err(|e| BenchError::Pin(e.to_string()))?;
            let model = PipelineModel::from_profile(&prof).map_err(|e| stages(e.to_string()))?;
            let (fp, plan) = crate::pipeline::fragment_plan(&model, cfg.max_message() as u64);
            let ladder: Vec<usize> = (12..=18).map(|k| 1usize << k).chain([1 << 20]).collect();
            let today = ladder.len();
            let v = (ladder.into_iter().map(FragmentSetting::Fixed))
                .chain([FragmentSetting::Adaptive, FragmentSetting::Planned(fp)])
                .collect();
            (v, model, today, plan)
        };
    let rounds = if cfg.quick { 1 } else { PIPELINE_ROUNDS };
    let total = rounds * variants.len() * cfg.sizes.len();
    let mut measured: Vec<Vec<Row>> = vec![Vec::new(); variants.len() * cfg.sizes.len()];
    let mut done = 0;
    for round in 0..rounds {
        for (vi, &v) in variants.iter().enumerate() {
            let spec = cfg.data_spec_with(t, m, v);
            let mut ep = launch::connect_data(env.ctrl, &spec, env.token)?;
            for (si, &size) in cfg.sizes.iter().enumerate() {
                let what = match v {
                    FragmentSetting::Fixed(n) => format!("fragment {n} B"),
                    FragmentSetting::Adaptive if t != TransportKind::Shm => "whole".into(),
                    _ => "adaptive fragment".into(),
                };
                let ph = format!(
                    "{} ({what}, round {})",
                    phase(Benchmark::Pipeline, size, t, m),
                    round + 1
                );
                progress.update(&ph, done, total);
                let (iterations, warmup) = cfg.counts(Benchmark::Pipeline, size);
                let run = RunSpec {
                    benchmark: Benchmark::Pipeline,
                    size,
                    iterations,
                    warmup,
                    window: 1,
                    validate: cfg.validate,
                    prtt: None,
                    mode: Some(m),
                    block_spins: 0,
                    segments: 0,
                    packed: false,
                    in_place: false,
                };
                let s = &mut sbuf[..size as usize];
                let row = latency_row(env.ctrl, &mut ep, env.clock, &ph, run, s, rbuf)?;
                measured[vi * cfg.sizes.len() + si].push(row);
                done += 1;
            }
        }
    }
    let mut copy_limit = std::collections::BTreeMap::new();
    let mut rows = Vec::with_capacity(measured.len());
    for (vi, &v) in variants.iter().enumerate() {
        for (si, &size) in cfg.sizes.iter().enumerate() {
            let mut got = std::mem::take(&mut measured[vi * cfg.sizes.len() + si]);
            got.sort_by(|a, b| {
                a.p50_us()
                    .partial_cmp(&b.p50_us())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let p50s: Vec<f64> = got.iter().filter_map(|r| r.p50_us()).collect();
            let mut row = got.swap_remove(got.len() / 2);
            row.transport = t;
            row.mode = m;
            let Some(f) = row.pipeline_mut() else {
                // Not a pipeline row (cannot happen: measured as one); kept in its place so
                // the verdicts' indices hold.
                rows.push(row);
                continue;
            };
            // The rounds' agreement: the median distance of the other rounds' p50 from the
            // median round's (one disturbed round of five does not make a row noisy).
            if p50s.len() > 1 {
                let m = p50s[p50s.len() / 2];
                let mut dev: Vec<f64> = (p50s.iter().enumerate())
                    .filter(|&(i, _)| i != p50s.len() / 2)
                    .map(|(_, p)| (p - m).abs())
                    .collect();
                let spread = Summary::from_unsorted(&mut dev).map_or(0.0, |s| s.p50);
                f.pct.p50_noise_us = Some(f.pct.p50_noise_us.unwrap_or(0.0).max(spread));
            }
            let adaptive = vi + 1 == variants.len();
            let (frag, words) = match v {
                FragmentSetting::Fixed(n) => (n as u64, rule_words(None)),
                _ if adaptive => {
                    let (f, rule) = plan.for_len(size);
                    (f.min(model.max_fragment_bytes), rule_words(Some(rule)))
                }
                // Sockets: whole messages, one `sendmsg` each (today's behaviour).
                _ => (size, "whole".into()),
            };
            // A fixed row keeps its configured size (a message up to it goes whole); the
            // others show what they used.
            f.fragment_bytes = Some(if adaptive {
                frag.min(size.max(1))
            } else {
                frag
            });
            let frag = frag.min(size.max(1));
            f.fragment_rule = Some(words);
            if let Some(p) = f.pct.p50_us.filter(|p| *p > 0.0) {
                f.mb_per_s = Some(size as f64 / p);
            }
            f.model_us = Some(model.time_us(size, frag));
            f.eq7_us = Some(model.eq7_at(frag).time_us(size, frag));
            // The pipeline's limit: each core copies every byte once, the two copies overlap,
            // so no pipeline moves the message faster than one memcpy of it (EPOS's "hardware
            // limit" is likewise its slowest stage's rate).
            if t == TransportKind::Shm && env.cpus.is_some_and(|(a, b)| a != b) {
                let copy = *copy_limit
                    .entry(size)
                    .or_insert_with(|| limits::memcpy_mb_per_s(env.clock, size as usize, 5));
                limits::judge(&mut row, 0.0, copy, true);
            }
            rows.push(row);
        }
    }
    pipeline_verdicts(&mut rows, cfg.sizes.len(), variants.len(), today);
    Ok(rows)
}

/// Notes on each adaptive row (the last variant) against the others of its size: the share of
/// the best fixed fragment's bandwidth it reaches, and its gain over today's behaviour (variant
/// `today`: shm's 64 KiB fragments, sockets' whole messages) beside the noise.
fn pipeline_verdicts(rows: &mut [Row], sizes: usize, variants: usize, today: usize) {
    if variants < 2 {
        return;
    }
    for si in 0..sizes {
        let at = |vi: usize| vi * sizes + si;
        let fixed: Vec<(u64, f64, f64)> = (0..variants - 1)
            .filter_map(|vi| {
                let r = rows[at(vi)].pipeline()?;
                if r.fragment_rule.as_deref() != Some("fixed") {
                    return None;
                }
                Some((
                    r.fragment_bytes?,
                    r.mb_per_s?,
                    r.pct.p50_noise_us.unwrap_or(0.0) / r.pct.p50_us?,
                ))
            })
            .collect();
        let best = fixed
            .iter()
            .copied()
            .fold(None::<(u64, f64, f64)>, |b, f| match b {
                Some(b) if b.1 >= f.1 => Some(b),
                _ => Some(f),
            });
        let Some(today_row) = rows[at(today)].pipeline() else {
            continue;
        };
        let base = match (today_row.mb_per_s, today_row.pct.p50_us) {
            (Some(b), Some(p)) if p > 0.0 => {
                Some((b, today_row.pct.p50_noise_us.unwrap_or(0.0) / p))
            }
            _ => None,
        };
        let today_words = match today_row.fragment_rule.as_deref() {
            Some("whole") => "whole messages".to_string(),
            _ => format!("{} B fragments", today_row.fragment_bytes.unwrap_or(0)),
        };
        let a = &mut rows[at(variants - 1)];
        let Some(af) = a.pipeline() else {
            continue;
        };
        let (Some(bw), Some(p)) = (af.mb_per_s, af.pct.p50_us) else {
            continue;
        };
        let noise = af.pct.p50_noise_us.unwrap_or(0.0) / p;
        if let Some((frag, best_bw, _)) = best {
            a.notes.push(format!(
                "adaptive reaches {:.1} % of the best fixed fragment ({frag} B, {best_bw:.0} MB/s)",
                bw / best_bw * 100.0
            ));
        }
        if let Some((b64, n64)) = base {
            a.notes.push(format!(
                "against {today_words}: {:+.1} % bandwidth (noise ±{:.1} %)",
                (bw / b64 - 1.0) * 100.0,
                (noise + n64) * 100.0
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_field_is_refused_one_past_its_bound_and_named() {
        use commperf_transport::bounds::*;
        let idle = Duration::from_secs(60);
        let ok = RunSpec {
            benchmark: Benchmark::Loggp,
            size: 4096,
            iterations: MAX_ITERS,
            warmup: MAX_ITERS,
            window: MAX_WINDOW,
            validate: false,
            prtt: Some(Prtt {
                n: MAX_PRTT_N,
                client_delay_ns: idle.as_nanos() as f64,
                server_delay_ns: 0.0,
            }),
            mode: None,
            block_spins: MAX_BLOCK_SPINS,
            segments: MAX_SEGMENTS,
            packed: false,
            in_place: false,
        };
        ok.check(4096, idle).unwrap();
        let p = ok.prtt.unwrap();
        let over = [
            ("size", RunSpec { size: 4097, ..ok }),
            (
                "iterations",
                RunSpec {
                    iterations: MAX_ITERS + 1,
                    ..ok
                },
            ),
            (
                "warmup",
                RunSpec {
                    warmup: MAX_ITERS + 1,
                    ..ok
                },
            ),
            (
                "window",
                RunSpec {
                    window: MAX_WINDOW + 1,
                    ..ok
                },
            ),
            ("window", RunSpec { window: 0, ..ok }),
            (
                "block_spins",
                RunSpec {
                    block_spins: MAX_BLOCK_SPINS + 1,
                    ..ok
                },
            ),
            (
                "segments",
                RunSpec {
                    segments: MAX_SEGMENTS + 1,
                    ..ok
                },
            ),
            (
                "prtt.n",
                RunSpec {
                    prtt: Some(Prtt {
                        n: MAX_PRTT_N + 1,
                        ..p
                    }),
                    ..ok
                },
            ),
            (
                "prtt.n",
                RunSpec {
                    prtt: Some(Prtt { n: 0, ..p }),
                    ..ok
                },
            ),
            (
                "prtt.client_delay_ns",
                RunSpec {
                    prtt: Some(Prtt {
                        client_delay_ns: idle.as_nanos() as f64 + 1.0,
                        ..p
                    }),
                    ..ok
                },
            ),
            (
                "prtt.server_delay_ns",
                RunSpec {
                    prtt: Some(Prtt {
                        server_delay_ns: -1.0,
                        ..p
                    }),
                    ..ok
                },
            ),
        ];
        for (field, run) in over {
            let e = run.check(4096, idle).unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
        let hang = RunSpec {
            prtt: Some(Prtt {
                server_delay_ns: 1e300,
                ..p
            }),
            ..ok
        };
        assert_eq!(
            hang.check(4096, idle).unwrap_err().to_string(),
            "prtt.server_delay_ns = 1e300 is out of bounds: between 0 and 60000000000 (the data \
             channel's idle timeout)"
        );
    }

    #[test]
    fn working_memory_is_what_the_responder_allocates() {
        let run = |benchmark, size, segments, packed, in_place| RunSpec {
            benchmark,
            size,
            iterations: 1,
            warmup: 0,
            window: 1,
            validate: false,
            prtt: None,
            mode: None,
            block_spins: 0,
            segments,
            packed,
            in_place,
        };
        let (s, r, _) = extended::fresh_pools(1 << 20);
        assert_eq!(
            run(Benchmark::Bufmgmt, 1 << 20, 0, false, false).working_bytes(),
            (s.len() + r.len()) as u64
        );
        assert_eq!(
            run(Benchmark::Bufmgmt, 1 << 20, 0, false, true).working_bytes(),
            0
        );
        let (m, _) = extended::scattered(1 << 20, 8);
        assert_eq!(
            run(Benchmark::Noncontig, 1 << 20, 8, true, false).working_bytes(),
            m.len() as u64 + (1 << 20)
        );
        assert_eq!(
            run(Benchmark::Latency, 1 << 30, 0, false, false).working_bytes(),
            0
        );
    }

    #[test]
    fn the_injected_corruption_can_be_limited_to_one_benchmark() {
        let fault = FaultConfig {
            message: 5,
            offset: 3,
        };
        let all = InjectCorruption { fault, only: None };
        let noncontig = InjectCorruption {
            fault,
            only: Some(Benchmark::Noncontig),
        };
        assert_eq!("5:3".parse(), Ok(all));
        assert_eq!("5:3:noncontig".parse(), Ok(noncontig));
        assert_eq!(noncontig.to_string(), "5:3:noncontig");
        for bad in ["", "5", "5:x", "5:3:nope", "5:3:latency:1"] {
            assert_eq!(
                bad.parse::<InjectCorruption>(),
                Err(InjectParseError(bad.into())),
                "{bad:?}"
            );
        }
        let run = |benchmark| RunSpec {
            benchmark,
            size: 64,
            iterations: 10,
            warmup: 1,
            window: 1,
            validate: true,
            prtt: None,
            mode: None,
            block_spins: 0,
            segments: 1,
            packed: false,
            in_place: false,
        };
        let hooks = |corrupt| PeerHooks {
            corrupt,
            ..PeerHooks::default()
        };
        let limited = hooks(Some(noncontig));
        assert_eq!(limited.fault_for(&run(Benchmark::Noncontig)), Some(fault));
        assert_eq!(limited.fault_for(&run(Benchmark::Latency)), None);
        assert_eq!(
            hooks(Some(all)).fault_for(&run(Benchmark::Latency)),
            Some(fault)
        );
        assert_eq!(hooks(None).fault_for(&run(Benchmark::Latency)), None);
        // The local peer's command line carries them.
        assert_eq!(
            PeerHooks {
                corrupt: Some(noncontig),
                announce_runs: true,
                pause_shm_create: Some(shm::ShmPause::Named),
            }
            .peer_args(),
            [
                "__peer",
                "--inject-corruption",
                "5:3:noncontig",
                "--announce-runs",
                "--pause-shm-create",
                "named"
            ]
        );
        assert_eq!(hooks(None).peer_args(), ["__peer"]);
    }
}
