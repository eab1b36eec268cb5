//! The monitor's own workload: `commperf monitor run` (Liao et al.'s (1998) monitor on
//! commperf's transports) and the notes `commperf monitor report` adds to a saved run.
//!
//! Why here and not in the binary: the workload is the monitor's measurement (both ends of the
//! data channel, the rounds that alternate unmonitored and monitored blocks, the clock
//! synchronizations, the flushes that keep a run that dies), so it is usable and testable
//! without the command line; the binary only parses, prints and names the peer verb.
//!
//! [`run_local`] starts a local peer process (`__monitor-peer`, which calls [`peer`]), builds the
//! data channel, and runs a ping-pong or stream workload, in rounds that alternate the same loop
//! unmonitored and under [`Monitored`] on both ends (so the monitor's cost is measured in the
//! same run, as a difference). The global clock is synchronized before the first size and again
//! between sizes when its interval has passed, and once more at the end for the error bound. The
//! run is saved (`run.json`, optionally `trace.txt` for `predict` and `timeline.json`) before
//! the first size and after every size, so a run cut short leaves what it measured.
//!
//! [`RunConfig::new`] is the one place a run's settings are checked:
//!
//! ```
//! use commperf_monitor::workload::{PartSel, RunConfig, RunRequest};
//! let mut req = RunRequest::new("out".into());
//! req.sizes = "64,4k".into();
//! req.parts = vec![PartSel::All, PartSel::Send, PartSel::All];
//! let cfg = RunConfig::new(req.clone()).unwrap();
//! // The anchor `none` first, each part once, in the order given.
//! assert_eq!(cfg.parts(), &[PartSel::None, PartSel::All, PartSel::Send]);
//! assert_eq!(cfg.sizes(), &[64, 4096]);
//! req.trace = Some(100);
//! assert_eq!(
//!     RunConfig::new(req).unwrap_err().to_string(),
//!     "--trace keeps the records of a normal monitored run: use it without --parts (or with --parts none,all)"
//! );
//! ```

use crate::run::{
    load_baseline, ClockReport, PartFigures, RankClock, TraceInfo, Workload, PARTS_FILE, RUN_KIND,
};
use crate::trace::{write_timeline, write_trace, TraceEvent};
use crate::{
    Baseline, Correction, Histograms, MonitorConfig, MonitorError, MonitorRun, Monitored, Parts,
    SyncPolicy, TscClock, Wire, RUN_SCHEMA_VERSION, TRAILER,
};
use commperf_core::file::{write_file, OutDir};
use commperf_core::{Mode, TransportKind};
use commperf_stats::median;
use commperf_transport::bounds::{MAX_ITERS, MAX_SIZE, MAX_WINDOW};
use commperf_transport::launch::{self, AnyEndpoint, Control, DataSpec};
use commperf_transport::{with_endpoint, Endpoint};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

type Result<T, E = MonitorError> = std::result::Result<T, E>;

/// The most rounds `monitor run` makes: each is a block pair per size, its figures kept.
pub const MAX_ROUNDS: u64 = 1000;
/// The most per-message records `monitor run --trace` keeps per endpoint: they are held in
/// memory (tens of bytes each) until the run ends.
pub const MAX_TRACE_RECORDS: usize = 10_000_000;
/// The verb the launcher starts the peer process with; the binary routes it to [`peer`].
pub const PEER_VERB: &str = "__monitor-peer";

/// The workload's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Pattern {
    /// One message each way per iteration; the figure is the median one-way time.
    Pingpong,
    /// `window` messages one way per acknowledgement; the figure is bandwidth.
    Stream,
}

impl Pattern {
    /// The name the run file records (`pingpong`, `stream`).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pingpong => "pingpong",
            Pattern::Stream => "stream",
        }
    }
}

/// Which of the monitor's parts run in a block (Liao et al. 1998, Figures 7–10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum PartSel {
    /// No monitor: the inner endpoint alone (the anchor; always measured).
    None,
    /// The decorator with every part off (the stamp's place travels, nothing is read).
    Off,
    /// The sender's part only (clock reads, stamp, source stage).
    Send,
    /// The receiver's part only (clock reads; destination, wait).
    Recv,
    /// The clock only: both sides read and stamp, nothing is recorded.
    Clock,
    /// Everything (the monitor as it normally runs).
    All,
}

impl PartSel {
    fn parts(self) -> Option<Parts> {
        match self {
            PartSel::None => None,
            PartSel::Off => Some(Parts::OFF),
            PartSel::Send => Some(Parts::SEND),
            PartSel::Recv => Some(Parts::RECV),
            PartSel::Clock => Some(Parts::CLOCK),
            PartSel::All => Some(Parts::ALL),
        }
    }
    /// The name `parts.json` records.
    pub fn name(self) -> &'static str {
        match self {
            PartSel::None => "none",
            PartSel::Off => "off",
            PartSel::Send => "send",
            PartSel::Recv => "recv",
            PartSel::Clock => "clock",
            PartSel::All => "all",
        }
    }
}

/// What a caller asks for, unchecked (the command line's `monitor run` options);
/// [`RunConfig::new`] checks it. [`RunRequest::new`] gives the command line's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub transport: TransportKind,
    pub mode: Mode,
    /// Message sizes as written (`64,4k,64k`).
    pub sizes: String,
    /// Messages per size in each of the unmonitored and the monitored halves.
    pub iters: u64,
    /// Rounds alternating unmonitored and monitored blocks.
    pub rounds: u64,
    pub pattern: Pattern,
    /// Messages in flight per acknowledgement (stream).
    pub window: u64,
    /// A monitor run of a quiet system (run.json) or a `calibrate` profile.
    pub baseline: Option<PathBuf>,
    /// Program tag stamped into every message.
    pub program: u32,
    /// Per-message records kept per endpoint (and trace.txt, timeline.json written).
    pub trace: Option<usize>,
    /// Seconds between global clock re-synchronizations.
    pub resync_s: f64,
    /// The parts to measure, interleaved in every round.
    pub parts: Vec<PartSel>,
    /// Directory for run.json (and parts.json, trace.txt, timeline.json).
    pub out: PathBuf,
}

impl RunRequest {
    /// The command line's defaults, writing into `out`.
    pub fn new(out: PathBuf) -> RunRequest {
        RunRequest {
            transport: TransportKind::Shm,
            mode: Mode::Poll,
            sizes: "64,4k,64k".into(),
            iters: 20_000,
            rounds: 5,
            pattern: Pattern::Pingpong,
            window: 64,
            baseline: None,
            program: 0,
            trace: None,
            resync_s: 300.0,
            parts: vec![PartSel::None, PartSel::All],
            out,
        }
    }
}

/// A checked [`RunRequest`]: sizes parsed and bounded, counts within their bounds, parts in
/// block order (the anchor `none` first, each once).
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    req: RunRequest,
    sizes: Vec<u64>,
    parts: Vec<PartSel>,
}

impl RunConfig {
    /// Checks `req`; every refusal names the option.
    pub fn new(req: RunRequest) -> Result<RunConfig> {
        if req.transport == TransportKind::Model {
            return Err(MonitorError::Config(
                "--transport model is the tests' in-process model; pick shm, tcp, uds, uring-tcp or uring-uds".into(),
            ));
        }
        let sizes = commperf_core::parse_sizes(&req.sizes).map_err(MonitorError::Sizes)?;
        if req.iters == 0 || req.rounds == 0 || req.window == 0 {
            return Err(MonitorError::Config(
                "--iters, --rounds and --window must be at least 1".into(),
            ));
        }
        // The command line bounds these too; a library caller gets the same limits.
        let bounds = [
            ("--iters", req.iters, MAX_ITERS),
            ("--rounds", req.rounds, MAX_ROUNDS),
            ("--window", req.window, MAX_WINDOW as u64),
            (
                "--trace",
                req.trace.unwrap_or(0) as u64,
                MAX_TRACE_RECORDS as u64,
            ),
            (
                "--sizes",
                sizes.iter().copied().max().unwrap_or(0),
                MAX_SIZE,
            ),
        ];
        for (flag, v, max) in bounds {
            if v > max {
                return Err(MonitorError::Config(format!(
                    "{flag} must be at most {max} (got {v})"
                )));
            }
        }
        // Duration::from_secs_f64 panics on an infinite or NaN interval.
        if !req.resync_s.is_finite() {
            return Err(MonitorError::Config(format!(
                "--resync-s must be a finite number of seconds (got {})",
                req.resync_s
            )));
        }
        // The anchor first, each part once, in the order given.
        let mut parts = vec![PartSel::None];
        for p in &req.parts {
            if !parts.contains(p) {
                parts.push(*p);
            }
        }
        if req.trace.is_some()
            && parts
                .iter()
                .any(|p| !matches!(p, PartSel::None | PartSel::All))
        {
            return Err(MonitorError::Config("--trace keeps the records of a normal monitored run: use it without --parts (or with --parts none,all)".into()));
        }
        Ok(RunConfig { req, sizes, parts })
    }
    /// The message sizes, in bytes, in the order given.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }
    /// The blocks of a round, the anchor `none` first.
    pub fn parts(&self) -> &[PartSel] {
        &self.parts
    }
    /// The directory the run is saved in.
    pub fn out(&self) -> &Path {
        &self.req.out
    }
    /// What was asked.
    pub fn request(&self) -> &RunRequest {
        &self.req
    }
    /// A plain run (no `--parts`): no parts.json, no parts table.
    pub fn plain_parts(&self) -> bool {
        self.parts == [PartSel::None, PartSel::All]
    }
}

/// What the client tells the peer to do (the same schedule runs on both ends).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct Job {
    sizes: Vec<u64>,
    iters: u64,
    rounds: u64,
    pattern: Pattern,
    window: u64,
    program: u32,
    trace: usize,
    resync_s: f64,
    rendezvous_from: Option<usize>,
    cpu: Option<usize>,
    /// The launcher's TSC scale (ns per tick), shared so that both ends convert alike.
    ns_per_tick: f64,
    /// Between the two first synchronizations, so drift is known before recording starts.
    sync_gap_ms: u64,
    /// The blocks of every round, in order (the anchor `none` first); odd rounds reverse it.
    parts: Vec<PartSel>,
}

/// What the peer sends back after every size (without its trace) and at the end.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct PeerReport {
    histograms: Histograms,
    correction: Correction,
    error_bound_ns: f64,
    trace: Vec<TraceEvent>,
    dropped: u64,
}

const FRAME: usize = 256 << 20;
/// Tags: data, the stream's ack, the between-sizes decision (on the inner endpoint).
const DATA: u32 = 1;
const ACK: u32 = 2;
const DECIDE: u32 = 3;

/// A finished `monitor run`, saved in [`LocalRun::file`]'s directory: what the verb prints.
#[derive(Debug, Clone)]
pub struct LocalRun {
    /// The run as saved in run.json.
    pub run: MonitorRun,
    /// Each kind of block's figure per size (as saved in parts.json for a `--parts` run).
    pub parts: Vec<PartFigures>,
    /// The run file written.
    pub file: PathBuf,
    /// How long the run took.
    pub elapsed: Duration,
}

/// Runs the workload `cfg` describes between this process and a local peer (started as
/// [`PEER_VERB`]) and saves it in [`RunConfig::out`].
pub fn run_local(cfg: &RunConfig) -> Result<LocalRun> {
    // Fails now, not after the run, when the directory cannot take our files; removed again
    // if the run ends before writing any.
    let _out = OutDir::create("-o", cfg.out())?;
    let baseline = cfg
        .request()
        .baseline
        .as_deref()
        .map(load_baseline)
        .transpose()?;
    let max = *cfg.sizes().iter().max().unwrap_or(&0) as usize;

    let (mut peer, mut ctrl, theirs, token) =
        launch::spawn_local_pair(PEER_VERB, Duration::from_secs(60))?;
    let spec = DataSpec::new(cfg.request().transport, cfg.request().mode, max + TRAILER);
    let clock = TscClock::calibrate();
    let job = job_of(cfg, &spec, theirs, clock);
    ctrl.send(&job)?;
    let mut ep = launch::connect_data(&mut ctrl, &spec, &token)?;
    let started = Instant::now();
    let saver = Saver {
        cfg,
        clock,
        baseline,
        machine: commperf_bench::machine::describe(clock.clock.timer_info()),
    };
    let out = match drive(&mut ep, &job, clock, &mut ctrl, &saver) {
        Ok(o) => o,
        Err(e) => {
            peer.finish(Duration::from_secs(5));
            return Err(e);
        }
    };
    let peer_report: PeerReport =
        recv_chunked(&mut ctrl).map_err(|e| e.within("the peer's histograms"))?;
    peer.finish(Duration::from_secs(5));
    finish(cfg, &saver, out, peer_report, started)
}

/// The schedule both ends follow.
fn job_of(cfg: &RunConfig, spec: &DataSpec, cpu: Option<usize>, clock: TscClock) -> Job {
    let r = cfg.request();
    Job {
        sizes: cfg.sizes().to_vec(),
        iters: r.iters,
        rounds: r.rounds,
        pattern: r.pattern,
        window: r.window,
        program: r.program,
        trace: r.trace.unwrap_or(0),
        resync_s: r.resync_s,
        rendezvous_from: match r.transport {
            TransportKind::Shm => spec.shm_single_copy_from,
            _ => None,
        },
        cpu,
        ns_per_tick: clock.scale(),
        sync_gap_ms: 200,
        parts: cfg.parts().to_vec(),
    }
}

/// The client's side of the run over the data endpoint, saving at every flush; an error says
/// how far the run got and where what it measured was saved.
fn drive(
    ep: &mut AnyEndpoint,
    job: &Job,
    clock: TscClock,
    ctrl: &mut Control,
    saver: &Saver<'_>,
) -> Result<ClientOut> {
    // Saved before the first size and after every size (complete: false), so a run that dies
    // leaves what it measured up to there, marked cut short.
    let mut flushed = 0usize;
    let mut flush = |f: Flush<'_>| -> Result<()> {
        let mut hist = f.hist.clone();
        hist.merge(&f.peer.histograms);
        let run = saver.run(hist, f.syncs.to_vec(), &f.peer, f.figures, None, false);
        saver.save(&run, f.figures)?;
        flushed = f.sizes_done;
        Ok(())
    };
    // Both ends pick the wire by the same rule (the transport), so they agree.
    let res = match ep {
        AnyEndpoint::Shm(e) => client(
            e,
            job,
            clock,
            Monitored::with_sideband_clock,
            ctrl,
            &mut flush,
        ),
        other => {
            with_endpoint!(other, e => client(e, job, clock, Monitored::with_clock, ctrl, &mut flush))
        }
    };
    let out = saver.cfg.out();
    res.map_err(|e| MonitorError::Stopped {
        flushed,
        sizes: job.sizes.len(),
        run_file: out.join("run.json").display().to_string(),
        dir: out.display().to_string(),
        source: Box::new(e),
    })
}

/// Merges both ends' records, writes the trace files when asked and saves the finished run.
fn finish(
    cfg: &RunConfig,
    saver: &Saver<'_>,
    out: ClientOut,
    peer_report: PeerReport,
    started: Instant,
) -> Result<LocalRun> {
    let mut hist = out.hist;
    hist.merge(&peer_report.histograms);
    let trace_info = if cfg.request().trace.unwrap_or(0) > 0 {
        let ranks = [(0, out.trace), (1, peer_report.trace.clone())];
        Some(save_trace(cfg, &ranks, out.dropped + peer_report.dropped)?)
    } else {
        None
    };
    let run = saver.run(
        hist,
        out.syncs,
        &peer_report,
        &out.figures,
        trace_info,
        true,
    );
    saver.save(&run, &out.figures)?;
    Ok(LocalRun {
        run,
        parts: to_part_figures(&out.figures),
        file: cfg.out().join("run.json"),
        elapsed: started.elapsed(),
    })
}

/// Writes trace.txt (for `predict --trace`) and timeline.json (Chrome trace events).
fn save_trace(
    cfg: &RunConfig,
    ranks: &[(u32, Vec<TraceEvent>)],
    dropped: u64,
) -> Result<TraceInfo> {
    let (text, cut) = write_trace(ranks, dropped);
    let file = cfg.out().join("trace.txt");
    write_file(&file, text.as_bytes())?;
    let r = cfg.request();
    write_file(
        &cfg.out().join("timeline.json"),
        write_timeline(
            ranks,
            &format!("commperf monitor run: {} {:?}", r.transport, r.pattern),
        )
        .as_bytes(),
    )?;
    Ok(TraceInfo {
        file: file.display().to_string(),
        records: text
            .lines()
            .filter(|l| l.starts_with("send") || l.starts_with("recv"))
            .count() as u64,
        dropped,
        cut: cut as u64,
    })
}

/// What a flush hands over: the client's records and figures so far and the peer's latest
/// report.
struct Flush<'a> {
    sizes_done: usize,
    hist: &'a Histograms,
    syncs: &'a [crate::clock::OffsetSample],
    figures: &'a [(PartSel, Vec<(u64, f64)>)],
    peer: PeerReport,
}

/// Builds and writes the run file, at every flush and at the end.
struct Saver<'a> {
    cfg: &'a RunConfig,
    clock: TscClock,
    baseline: Option<Baseline>,
    machine: commperf_core::Machine,
}

fn to_part_figures(figures: &[(PartSel, Vec<(u64, f64)>)]) -> Vec<PartFigures> {
    figures
        .iter()
        .map(|(p, f)| PartFigures {
            parts: p.name().to_string(),
            figures: f.clone(),
        })
        .collect()
}

impl Saver<'_> {
    fn run(
        &self,
        histograms: Histograms,
        syncs: Vec<crate::clock::OffsetSample>,
        peer: &PeerReport,
        figures: &[(PartSel, Vec<(u64, f64)>)],
        trace: Option<TraceInfo>,
        complete: bool,
    ) -> MonitorRun {
        let pick = |sel: PartSel| {
            figures
                .iter()
                .find(|(p, _)| *p == sel)
                .map(|(_, f)| f.clone())
                .unwrap_or_default()
        };
        let r = self.cfg.request();
        MonitorRun {
            schema_version: RUN_SCHEMA_VERSION,
            kind: RUN_KIND.into(),
            created_unix_s: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            complete,
            machine: Some(self.machine.clone()),
            workload: Workload {
                pattern: r.pattern.name().to_string(),
                transport: r.transport.to_string(),
                mode: r.mode.to_string(),
                sizes_bytes: self.cfg.sizes().to_vec(),
                iterations: r.iters,
            },
            clock: ClockReport {
                source: self.clock.clock.timer_info().source,
                syncs,
                ranks: vec![
                    RankClock::new(0, &Correction::default(), 0.0),
                    RankClock::new(1, &peer.correction, peer.error_bound_ns),
                ],
            },
            reference_one_way_us: pick(PartSel::None),
            monitored_one_way_us: pick(PartSel::All),
            histograms,
            trace,
            baseline: self.baseline.clone(),
        }
    }

    /// Writes run.json (and parts.json for a --parts run; a plain run removes a stale one).
    fn save(&self, run: &MonitorRun, figures: &[(PartSel, Vec<(u64, f64)>)]) -> Result<()> {
        write_file(&self.cfg.out().join("run.json"), run.to_json().as_bytes())?;
        let parts_file = self.cfg.out().join(PARTS_FILE);
        if self.cfg.plain_parts() {
            let _ = std::fs::remove_file(&parts_file);
        } else {
            let parts = to_part_figures(figures);
            write_file(
                &parts_file,
                serde_json::to_string_pretty(&parts)?.as_bytes(),
            )?;
        }
        Ok(())
    }
}

/// The monitor's cost, unmonitored against monitored in the same run, and the clock bound.
pub fn cost_lines(run: &MonitorRun) -> String {
    let mut s = String::new();
    let unit = if run.workload.pattern == "stream" {
        "MB/s"
    } else {
        "us one-way p50"
    };
    for ((size, p), (_, m)) in run
        .reference_one_way_us
        .iter()
        .zip(&run.monitored_one_way_us)
    {
        let extra = if run.workload.pattern == "stream" {
            format!("{:+.1} %", (m / p - 1.0) * 100.0)
        } else {
            format!("{:+.0} ns per message", (m - p) * 1e3)
        };
        s += &format!(
            "# cost at {}: unmonitored {p:.3}, monitored {m:.3} {unit} ({extra})\n",
            commperf_core::format_size(*size)
        );
    }
    for rc in &run.clock.ranks {
        if rc.rank != 0 {
            s += &format!(
                "# clock: rank {} offset {:.0} ns, drift {:.3} ppm, error bound ±{:.0} ns after {} syncs\n",
                rc.rank, rc.offset_ns, rc.drift_ppm, rc.error_bound_ns, rc.syncs
            );
        }
    }
    s
}

/// Liao et al. (1998) Figures 7–10 as a table: each kind of block's figure, its cost per message
/// and its bandwidth change against the unmonitored anchor (`none`) of the same run.
pub fn parts_table(pattern: &str, parts: &[PartFigures]) -> String {
    let stream = pattern == "stream";
    let Some(anchor) = parts.iter().find(|p| p.parts == "none") else {
        return String::new();
    };
    let unit = if stream { "MB/s" } else { "us one-way p50" };
    let mut s = format!(
        "# monitor parts (after Liao, Martonosi and Clark 1998, Figures 7-10), against the unmonitored anchor `none` of the same run\n\
         # {:>7}  {:<5}  {:>10} {:<14}  {:>13}  {:>10}\n",
        "size", "parts", "figure", "", "cost/message", "bandwidth"
    );
    for (i, &(size, a)) in anchor.figures.iter().enumerate() {
        for p in parts {
            let Some(&(_, v)) = p.figures.get(i) else {
                continue;
            };
            // Per message in ns, and bandwidth (monitored / anchor − 1).
            let (cost_ns, bw) = if stream {
                (
                    (size as f64 / v - size as f64 / a) * 1e3,
                    (v / a - 1.0) * 100.0,
                )
            } else {
                ((v - a) * 1e3, (a / v - 1.0) * 100.0)
            };
            s += &format!(
                "# {:>7}  {:<5}  {v:>10.3} {unit:<14}  {cost_ns:>+10.0} ns  {bw:>+8.1} %\n",
                commperf_core::format_size(size),
                p.parts
            );
        }
    }
    s
}

struct ClientOut {
    hist: Histograms,
    trace: Vec<TraceEvent>,
    dropped: u64,
    syncs: Vec<crate::clock::OffsetSample>,
    /// Per block kind of `Job::parts`: its figure per size.
    figures: Vec<(PartSel, Vec<(u64, f64)>)>,
}

fn cfg(job: &Job, rank: u32) -> MonitorConfig {
    let mut c = MonitorConfig::new(rank, 1 - rank);
    c.program = job.program;
    c.trace_capacity = job.trace;
    c.rendezvous_from = job.rendezvous_from;
    c.sync = SyncPolicy {
        samples: 50,
        interval: Duration::from_secs_f64(job.resync_s.max(0.0)),
    };
    c
}

/// One block of the workload as the initiator; per-iteration round trips into `rtt` (ping-pong)
/// or the block's ticks (stream).
fn initiate<E: Endpoint>(
    e: &mut E,
    job: &Job,
    buf: &mut [u8],
    rtt: &mut [u64],
    clock: &TscClock,
) -> Result<u64> {
    let n = rtt.len();
    let mut ack = [0u8; 1];
    let t0 = clock.clock.now();
    match job.pattern {
        Pattern::Pingpong => {
            let mut prev = t0;
            for slot in rtt.iter_mut() {
                e.send(DATA, buf)?;
                e.recv(buf)?;
                let t = clock.clock.now();
                *slot = t - prev;
                prev = t;
            }
        }
        Pattern::Stream => {
            for _ in 0..n.div_ceil(job.window as usize) {
                for _ in 0..job.window {
                    e.send(DATA, buf)?;
                }
                e.recv(&mut ack)?;
            }
        }
    }
    Ok(clock.clock.now() - t0)
}

fn respond<E: Endpoint>(e: &mut E, job: &Job, n: u64, buf: &mut [u8]) -> Result<()> {
    match job.pattern {
        Pattern::Pingpong => {
            for _ in 0..n {
                let k = e.recv(buf)?.len;
                e.send(DATA, &buf[..k])?;
            }
        }
        Pattern::Stream => {
            for _ in 0..n.div_ceil(job.window) {
                for _ in 0..job.window {
                    e.recv(buf)?;
                }
                e.send(ACK, &[0])?;
            }
        }
    }
    Ok(())
}

/// The blocks of round `r` in order (both ends follow it: a monitored message needs a
/// monitored receiver): `parts` as given in even rounds, reversed in odd ones (ABBA), so a bias
/// of position (the first block after a switch, a warm cache) falls on every kind alike.
fn round_order(parts: &[PartSel], r: usize) -> Vec<(usize, PartSel)> {
    let mut v: Vec<(usize, PartSel)> = parts.iter().copied().enumerate().collect();
    if r % 2 == 1 {
        v.reverse();
    }
    v
}

/// Runs `$body` with `$e` bound to the endpoint of a block with the parts `$sel` on: the inner
/// endpoint (unmonitored) for `none`, else the monitored one. Only the `all` blocks' records are
/// kept: the others' are measured for their cost and dropped (their histograms are swapped out
/// around the block, outside its timing). `$m` is a `&mut Monitored`.
macro_rules! in_block {
    ($m:ident, $sel:expr, |$e:ident| $body:expr) => {{
        match $sel.parts() {
            None => {
                let $e = $m.get_mut();
                $body
            }
            Some(p) if p == Parts::ALL => {
                $m.set_parts(p);
                let $e = &mut *$m;
                $body
            }
            Some(p) => {
                $m.set_parts(p);
                let keep = $m.replace_histograms(Histograms::new());
                let r = {
                    let $e = &mut *$m;
                    $body
                };
                $m.replace_histograms(keep);
                $m.set_parts(Parts::ALL);
                r
            }
        }
    }};
}

fn block_iters(job: &Job) -> u64 {
    job.iters.div_ceil(job.rounds)
}

/// Wraps an endpoint in the monitor: with the stamp in shm's record header, else the trailer.
type Wrap<E, W> = fn(E, MonitorConfig, TscClock) -> Monitored<E, TscClock, W>;

fn client<E: Endpoint, W: Wire<E>>(
    e: E,
    job: &Job,
    clock: TscClock,
    wrap: Wrap<E, W>,
    ctrl: &mut Control,
    flush: &mut dyn FnMut(Flush<'_>) -> Result<()>,
) -> Result<ClientOut> {
    let max = *job.sizes.iter().max().unwrap_or(&0) as usize;
    let mut buf = vec![0u8; max.max(1)];
    let per = block_iters(job) as usize;
    let kinds = job.parts.len();
    let mut rtts = vec![vec![0u64; per * job.rounds as usize]; kinds];
    let mut m = wrap(e, cfg(job, 0), clock);
    let mut syncs = vec![m.sync_as_master()?];
    std::thread::sleep(Duration::from_millis(job.sync_gap_ms));
    syncs.push(m.sync_as_master()?);
    let mut figures: Vec<(PartSel, Vec<(u64, f64)>)> =
        job.parts.iter().map(|p| (*p, Vec::new())).collect();
    flush(Flush {
        sizes_done: 0,
        hist: m.histograms(),
        syncs: &syncs,
        figures: &figures,
        peer: PeerReport::default(),
    })?;
    for (i, &size) in job.sizes.iter().enumerate() {
        let ticks = measure_size(&mut m, job, size, &mut buf, &mut rtts, &clock)?;
        for (k, (_, fig)) in figures.iter_mut().enumerate() {
            fig.push((size, figure(job, size, &rtts[k], ticks[k], &clock)?));
        }
        // Re-synchronize between sizes when the interval has passed, and always at the end (so
        // the report carries a bound measured at the end of the run).
        let last = i + 1 == job.sizes.len();
        let now = last || m.resync_due();
        m.get_mut().send(DECIDE, &[now as u8])?;
        if now {
            syncs.push(m.sync_as_master()?);
        }
        let peer: PeerReport =
            recv_chunked(ctrl).map_err(|e| e.within("the peer's histograms so far"))?;
        flush(Flush {
            sizes_done: i + 1,
            hist: m.histograms(),
            syncs: &syncs,
            figures: &figures,
            peer,
        })?;
    }
    let (trace, dropped) = m.take_trace();
    Ok(ClientOut {
        hist: m.take_histograms(),
        trace,
        dropped,
        syncs,
        figures,
    })
}

/// One size of the workload: an unrecorded warm-up, then every round's blocks in
/// [`round_order`]; the round trips go into `rtts` (per block kind), the ticks per kind are
/// returned.
fn measure_size<E: Endpoint, W: Wire<E>>(
    m: &mut Monitored<E, TscClock, W>,
    job: &Job,
    size: u64,
    buf: &mut [u8],
    rtts: &mut [Vec<u64>],
    clock: &TscClock,
) -> Result<Vec<u64>> {
    let s = size as usize;
    let per = block_iters(job) as usize;
    let mut ticks = vec![0u64; job.parts.len()];
    // Warm-up, unrecorded.
    m.pause();
    initiate(m, job, &mut buf[..s], &mut rtts[0][..per.min(1000)], clock)?;
    m.resume();
    for r in 0..job.rounds as usize {
        let w = r * per..(r + 1) * per;
        for (k, sel) in round_order(&job.parts, r) {
            let rtt = &mut rtts[k][w.clone()];
            ticks[k] += in_block!(m, sel, |ep| initiate(ep, job, &mut buf[..s], rtt, clock))?;
        }
    }
    Ok(ticks)
}

/// One block kind's figure at `size`: the median one-way time in us (ping-pong, from its round
/// trips) or the bandwidth in MB/s (stream, from its ticks).
fn figure(job: &Job, size: u64, rtts: &[u64], ticks: u64, clock: &TscClock) -> Result<f64> {
    Ok(match job.pattern {
        Pattern::Pingpong => {
            let ns: Vec<f64> = rtts.iter().map(|&t| clock.clock.ticks_to_ns(t)).collect();
            let Some(rtt_ns) = median(&ns) else {
                return Err(MonitorError::NoRoundTrip { size });
            };
            rtt_ns / 2.0 / 1e3
        }
        Pattern::Stream => {
            let per = block_iters(job) as usize;
            let bytes = (per * job.rounds as usize).div_ceil(job.window as usize)
                * job.window as usize
                * size as usize;
            bytes as f64 / clock.clock.ticks_to_ns(ticks) * 1e3
        }
    })
}

fn peer_side<E: Endpoint, W: Wire<E>>(
    e: E,
    job: &Job,
    clock: TscClock,
    wrap: Wrap<E, W>,
    ctrl: &mut Control,
) -> Result<PeerReport> {
    let max = *job.sizes.iter().max().unwrap_or(&0) as usize;
    let mut buf = vec![0u8; max.max(1)];
    let per = block_iters(job);
    let mut m = wrap(e, cfg(job, 1), clock);
    m.sync_as_follower()?;
    m.sync_as_follower()?;
    for _ in &job.sizes {
        m.pause();
        respond(&mut m, job, per.min(1000), &mut buf)?;
        m.resume();
        for r in 0..job.rounds as usize {
            for (_, sel) in round_order(&job.parts, r) {
                let mr = &mut m;
                in_block!(mr, sel, |ep| respond(ep, job, per, &mut buf))?;
            }
        }
        let mut d = [0u8; 1];
        m.get_mut().recv(&mut d)?;
        if d[0] == 1 {
            m.sync_as_follower()?;
        }
        // What this end recorded so far, for the launcher's flush (not the trace: that comes
        // once, at the end).
        let c = *m.correction();
        send_chunked(
            ctrl,
            &PeerReport {
                histograms: m.histograms().clone(),
                correction: c,
                error_bound_ns: c.error_bound_at(crate::LocalClock::now_ns(&clock)),
                trace: Vec::new(),
                dropped: 0,
            },
        )?;
    }
    let (trace, dropped) = m.take_trace();
    let c = *m.correction();
    Ok(PeerReport {
        histograms: m.take_histograms(),
        correction: c,
        error_bound_ns: c.error_bound_at(crate::LocalClock::now_ns(&clock)),
        trace,
        dropped,
    })
}

/// The peer process's side ([`PEER_VERB`]): accepts the launcher's job and data channel, runs
/// its end of the workload and sends back what it recorded.
pub fn peer() -> Result<()> {
    let (mut ctrl, job, mut ep) =
        launch::accept_local_pair(Duration::from_secs(600), |j: &Job| j.cpu)?;
    let clock = TscClock::calibrate().with_scale(job.ns_per_tick);
    let rep = match &mut ep {
        AnyEndpoint::Shm(e) => peer_side(e, &job, clock, Monitored::with_sideband_clock, &mut ctrl),
        other => {
            with_endpoint!(other, e => peer_side(e, &job, clock, Monitored::with_clock, &mut ctrl))
        }
    }?;
    send_chunked(&mut ctrl, &rep)
}

/// Control frames are bounded (1 MiB); a report with a long trace goes as several.
const CHUNK: usize = 256 << 10;

fn send_chunked<T: Serialize>(ctrl: &mut Control, v: &T) -> Result<()> {
    let text = serde_json::to_string(v)?;
    let mut parts = Vec::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    ctrl.send(&parts.len())?;
    for p in parts {
        ctrl.send(&p)?;
    }
    Ok(())
}

fn recv_chunked<T: serde::de::DeserializeOwned>(ctrl: &mut Control) -> Result<T> {
    let n: usize = ctrl.recv()?;
    if n > FRAME / CHUNK {
        return Err(MonitorError::TooManyParts {
            n,
            max: FRAME / CHUNK,
        });
    }
    let mut text = String::new();
    for _ in 0..n {
        text += &ctrl.recv::<String>()?;
    }
    Ok(serde_json::from_str(&text)?)
}

/// A saved run as `monitor report` reads it.
#[derive(Debug, Clone)]
pub struct SavedRun {
    pub run: MonitorRun,
    /// An MPI run's per-pair table (from its rank files), shown above the signature.
    pub mpi_table: Option<String>,
    /// Where a `monitor run`'s parts file would be (None for an MPI run).
    pub parts_dir: Option<PathBuf>,
}

/// Reads a saved run: an MPI program's directory is re-read from its rank files (they are the
/// record, and a damaged one is named); else `input` is a run directory or its run.json.
pub fn load_saved(input: &Path) -> Result<SavedRun> {
    if input.is_dir() && commperf_pmpi::holds_rank_files(input) {
        let (s, run) = crate::mpi::load(input)?;
        return Ok(SavedRun {
            run,
            mpi_table: Some(crate::mpi::table(&s) + "\n"),
            parts_dir: None,
        });
    }
    let (file, dir) = if input.is_dir() {
        (input.join("run.json"), input.to_path_buf())
    } else {
        let dir = input.parent().map(Path::to_path_buf).unwrap_or_default();
        (input.to_path_buf(), dir)
    };
    Ok(SavedRun {
        run: MonitorRun::load(&file)?,
        mpi_table: None,
        parts_dir: Some(dir),
    })
}

/// The lines `monitor report` adds under a saved run's table: the monitor's cost and the
/// clock bound, the parts table when the run directory `parts_dir` holds a parts file (None for
/// an MPI run, which has none), and a note when the run was cut short.
pub fn report_notes(run: &MonitorRun, parts_dir: Option<&Path>) -> Result<String> {
    let mut text = cost_lines(run);
    if let Some(dir) = parts_dir {
        if let Some(parts) = load_parts(dir)? {
            text += &parts_table(&run.workload.pattern, &parts);
        }
    }
    if !run.complete {
        text += &cut_short_note(run, parts_dir.is_none());
    }
    Ok(text)
}

/// The parts file of a run directory, if it has one.
fn load_parts(dir: &Path) -> Result<Option<Vec<PartFigures>>> {
    let pf = dir.join(PARTS_FILE);
    if !pf.exists() {
        return Ok(None);
    }
    let path = pf.display().to_string();
    let t = std::fs::read_to_string(&pf).map_err(|source| MonitorError::PartsRead {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&t)
        .map(Some)
        .map_err(|source| MonitorError::PartsParse { path, source })
}

/// Says how much of a run that was cut short its figures cover.
fn cut_short_note(run: &MonitorRun, mpi: bool) -> String {
    if mpi {
        return "# this run was cut short: the figures cover only what was recorded\n".into();
    }
    let done: Vec<String> = run
        .reference_one_way_us
        .iter()
        .map(|(s, _)| commperf_core::format_size(*s))
        .collect();
    format!(
        "# this run was cut short after {} of {} sizes ({}): the figures cover only \
         what was saved at its last flush\n",
        done.len(),
        run.workload.sizes_bytes.len(),
        if done.is_empty() {
            "none measured".to_string()
        } else {
            format!("measured: {}", done.join(", "))
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(f: impl FnOnce(&mut RunRequest)) -> String {
        let mut req = RunRequest::new("out".into());
        f(&mut req);
        format!("{:#}", RunConfig::new(req).unwrap_err())
    }

    #[test]
    fn the_config_refuses_with_the_options_name() {
        assert_eq!(
            refused(|r| r.transport = TransportKind::Model),
            "--transport model is the tests' in-process model; pick shm, tcp, uds, uring-tcp or uring-uds"
        );
        assert!(refused(|r| r.sizes = "64,x".into()).starts_with("--sizes"));
        assert_eq!(
            refused(|r| r.window = 0),
            "--iters, --rounds and --window must be at least 1"
        );
        assert_eq!(
            refused(|r| r.rounds = MAX_ROUNDS + 1),
            "--rounds must be at most 1000 (got 1001)"
        );
        assert_eq!(
            refused(|r| r.sizes = "2G".into()),
            "--sizes must be at most 1073741824 (got 2147483648)"
        );
        assert_eq!(
            refused(|r| r.resync_s = f64::INFINITY),
            "--resync-s must be a finite number of seconds (got inf)"
        );
    }

    #[test]
    fn a_plain_run_is_the_anchor_and_all() {
        let cfg = RunConfig::new(RunRequest::new("out".into())).unwrap();
        assert!(cfg.plain_parts());
        assert_eq!(cfg.sizes(), &[64, 4096, 65536]);
        let mut req = RunRequest::new("out".into());
        req.parts = vec![PartSel::Clock];
        let cfg = RunConfig::new(req).unwrap();
        assert_eq!(cfg.parts(), &[PartSel::None, PartSel::Clock]);
        assert!(!cfg.plain_parts());
    }
}
