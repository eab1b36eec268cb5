//! `commperf monitor`: Liao et al.'s (1998) monitor on commperf's own transports.
//!
//! `monitor run` starts a local peer process (the bench launcher), builds the data channel,
//! and runs a ping-pong or stream workload, in rounds that alternate the same loop unmonitored
//! and under `Monitored` on both ends (so the monitor's cost is measured in the same run, as a
//! difference). The global clock is synchronized before the first size and again between sizes
//! when its interval has passed, and once more at the end for the error bound. It saves the
//! run (`run.json`, optionally `trace.txt` for `predict`) and prints the signature.
//! `monitor report` re-renders a saved run. The MPI form, `monitor [-o DIR] -- COMMAND`, comes from
//! the `pmpi` crate (the interposer) and slots into [`MonitorArgs::command`].

use crate::output::{print, write_atomically};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use commperf_core::{Mode, TransportKind};
use commperf_monitor::run::{load_baseline, ClockReport, RankClock, TraceInfo, Workload, RUN_KIND};
use commperf_monitor::run::{PartFigures, PARTS_FILE};
use commperf_monitor::trace::{write_timeline, write_trace, TraceEvent};
use commperf_monitor::{
    Correction, Histograms, MonitorConfig, MonitorRun, Monitored, Parts, Signature, SyncPolicy,
    TableFormat, TscClock, Wire, RUN_SCHEMA_VERSION, TRAILER,
};
use commperf_stats::median;
use commperf_transport::launch::{self, AnyEndpoint, Control, DataSpec};
use commperf_transport::{with_endpoint, Endpoint};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The most rounds `monitor run` makes: each is a block pair per size, its figures kept.
const MAX_ROUNDS: u64 = 1000;
/// The most per-message records `monitor run --trace` keeps per endpoint: they are held in
/// memory (tens of bytes each) until the run ends.
const MAX_TRACE_RECORDS: usize = 10_000_000;
use commperf_transport::bounds::MAX_WINDOW;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct MonitorArgs {
    #[command(subcommand)]
    pub cmd: Option<MonitorCmd>,
    /// MPI programs: directory for the per-rank files, run.json and summary.json (default:
    /// commperf-monitor-<unix time> in the current directory)
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// MPI programs: program tag recorded with every rank (two programs monitored at once stay
    /// apart)
    #[arg(long, default_value = "")]
    pub tag: String,
    /// MPI programs: start with monitoring off; the program turns it on with MPI_Pcontrol(1)
    #[arg(long)]
    pub start_disabled: bool,
    /// MPI programs: use this interposer instead of the one matching the program (openmpi,
    /// mpich)
    #[arg(long, value_name = "MPI")]
    pub interposer: Option<String>,
    /// MPI programs: also write DIR/trace.txt (a trace `commperf predict --trace` replays),
    /// DIR/timeline.json (Chrome trace events: Perfetto, chrome://tracing) and the OTF2 archive
    /// DIR/traces.otf2 (Score-P's format: Vampir, Scalasca; predict reads it too)
    #[arg(long)]
    pub trace: bool,
    /// An unmodified MPI program to monitor: `commperf monitor -- mpirun -np 4 ./app`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum MonitorCmd {
    /// Monitor a ping-pong or stream workload between two local processes over a transport
    Run(RunArgs),
    /// Re-render a saved monitor run (DIR or its run.json)
    Report(ReportArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum Pattern {
    Pingpong,
    Stream,
}

/// Which of the monitor's parts run in a block (Liao et al. 1998, Figures 7–10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum PartSel {
    /// No monitor: the inner endpoint alone (the anchor; always measured)
    None,
    /// The decorator with every part off (the stamp's place travels, nothing is read)
    Off,
    /// The sender's part only (clock reads, stamp, source stage)
    Send,
    /// The receiver's part only (clock reads; destination, wait)
    Recv,
    /// The clock only: both sides read and stamp, nothing is recorded
    Clock,
    /// Everything (the monitor as it normally runs)
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
    fn name(self) -> &'static str {
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

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Transport: shm, tcp, uds, uring-tcp, uring-uds
    #[arg(short = 't', long, default_value = "shm")]
    pub transport: TransportKind,
    /// Completion mode: poll or block
    #[arg(long, default_value = "poll")]
    pub mode: Mode,
    /// Message sizes (e.g. 64,4k,64k), each at most 1G
    #[arg(long, default_value = "64,4k,64k", value_parser = crate::cli::bounded_sizes)]
    pub sizes: String,
    /// Messages per size in each of the unmonitored and the monitored halves (at most 10^8)
    #[arg(long, default_value_t = 20_000, value_parser = crate::cli::iters)]
    pub iters: u64,
    /// Rounds alternating unmonitored and monitored blocks (drift of a shared machine hits
    /// both), at most 1000
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=MAX_ROUNDS))]
    pub rounds: u64,
    #[arg(long, value_enum, default_value = "pingpong")]
    pub pattern: Pattern,
    /// Messages in flight per acknowledgement (stream), at most 65536
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=MAX_WINDOW as u64))]
    pub window: u64,
    /// Baseline: a monitor run of a quiet system (run.json) or a `calibrate` profile
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Program tag stamped into every message
    #[arg(long, default_value_t = 0)]
    pub program: u32,
    /// Also keep per-message records (at most this many per endpoint) and write trace.txt (a
    /// trace `commperf predict --trace` replays) and timeline.json (Chrome trace events:
    /// Perfetto, chrome://tracing); at most 10^7 (each record is kept in memory)
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=MAX_TRACE_RECORDS as u64))]
    pub trace: Option<usize>,
    /// Seconds between global clock re-synchronizations
    #[arg(long, default_value_t = 300.0)]
    pub resync_s: f64,
    /// The monitor's parts to measure one at a time, interleaved in every round (after Liao,
    /// Martonosi and Clark 1998, Figures 7–10): none (no monitor: the anchor, always
    /// measured), off (the decorator with every part off), send, recv, clock (clock reads and
    /// stamps, no histograms), all. Prints each one's cost per message and bandwidth change
    /// against the anchor; the saved histograms hold the `all` blocks only
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none,all")]
    pub parts: Vec<PartSel>,
    /// Directory for run.json (and trace.txt)
    #[arg(
        short = 'o',
        long = "output",
        value_name = "DIR",
        default_value = "commperf-monitor"
    )]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Table,
    Json,
    Csv,
    Md,
    Svg,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A monitor run directory or its run.json
    #[arg(value_name = "DIR|FILE")]
    pub input: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Compare against this baseline instead of the one saved with the run
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Only this program tag
    #[arg(long)]
    pub program: Option<u32>,
    /// Write to FILE instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// MPI runs: also write the run as a trace `commperf predict --trace` replays
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// MPI runs: also write the run as a Chrome trace-event timeline (Perfetto, chrome://tracing)
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
}

/// What the client tells the peer to do (the same schedule runs on both ends).
#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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

pub fn run(a: &MonitorArgs) -> Result<()> {
    match &a.cmd {
        Some(MonitorCmd::Run(r)) => run_local(r),
        Some(MonitorCmd::Report(r)) => report(r),
        None if !a.command.is_empty() => crate::monitor_mpi::run(&crate::monitor_mpi::MonitorArgs {
            dir: a.dir.clone(),
            tag: a.tag.clone(),
            start_disabled: a.start_disabled,
            interposer: a.interposer.clone(),
            trace: a.trace,
            command: a.command.clone(),
        }),
        None => bail!(
            "say what to monitor: `commperf monitor run …` (commperf's transports), `commperf monitor [-o DIR] -- mpirun …` (an MPI program), or `commperf monitor report DIR`"
        ),
    }
}

fn run_local(r: &RunArgs) -> Result<()> {
    if r.transport == TransportKind::Model {
        bail!("--transport model is the tests' in-process model; pick shm, tcp, uds, uring-tcp or uring-uds");
    }
    let sizes = commperf_core::parse_sizes(&r.sizes).context("--sizes")?;
    if r.iters == 0 || r.rounds == 0 || r.window == 0 {
        bail!("--iters, --rounds and --window must be at least 1");
    }
    // The anchor first, each part once, in the order given.
    let mut parts = vec![PartSel::None];
    for p in &r.parts {
        if !parts.contains(p) {
            parts.push(*p);
        }
    }
    if r.trace.is_some()
        && parts
            .iter()
            .any(|p| !matches!(p, PartSel::None | PartSel::All))
    {
        bail!("--trace keeps the records of a normal monitored run: use it without --parts (or with --parts none,all)");
    }
    // Fails now, not after the run, when the directory cannot take our files; removed again
    // if the run ends before writing any.
    let _out = crate::output::OutDir::create("-o", &r.out)?;
    crate::output::preflight(&[])?;
    let baseline = r.baseline.as_deref().map(load_baseline).transpose()?;
    let max = *sizes.iter().max().unwrap_or(&0) as usize;

    let (mut peer, mut ctrl, theirs, token) =
        commperf_transport::launch::spawn_local_pair("__monitor-peer", Duration::from_secs(60))?;
    let spec = DataSpec::new(r.transport, r.mode, max + TRAILER);
    let clock = TscClock::calibrate();
    let job = Job {
        sizes: sizes.clone(),
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
        cpu: theirs,
        ns_per_tick: clock.scale(),
        sync_gap_ms: 200,
        parts,
    };
    ctrl.send(&job)?;
    let mut ep = launch::connect_data(&mut ctrl, &spec, &token)?;
    let started = Instant::now();
    let saver = Saver {
        r,
        sizes: sizes.clone(),
        clock,
        baseline,
        machine: commperf_bench::machine::describe(clock.clock.timer_info()),
        plain_parts: job.parts == [PartSel::None, PartSel::All],
    };
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
    let res = match &mut ep {
        AnyEndpoint::Shm(e) => client(
            e,
            &job,
            clock,
            Monitored::with_sideband_clock,
            &mut ctrl,
            &mut flush,
        ),
        other => {
            with_endpoint!(other, e => client(e, &job, clock, Monitored::with_clock, &mut ctrl, &mut flush))
        }
    };
    let out = match res {
        Ok(o) => o,
        Err(e) => {
            peer.finish(Duration::from_secs(5));
            return Err(e.context(format!(
                "the monitored workload stopped after {flushed} of {} sizes; {} holds what was \
                 measured up to there, marked cut short (`commperf monitor report {}`)",
                sizes.len(),
                r.out.join("run.json").display(),
                r.out.display()
            )));
        }
    };
    let peer_report: PeerReport = recv_chunked(&mut ctrl).context("the peer's histograms")?;
    peer.finish(Duration::from_secs(5));

    let mut hist = out.hist;
    hist.merge(&peer_report.histograms);
    let trace_info = if job.trace > 0 {
        let ranks = [(0, out.trace), (1, peer_report.trace.clone())];
        let (text, cut) = write_trace(&ranks, out.dropped + peer_report.dropped);
        let file = r.out.join("trace.txt");
        write_atomically(&file, text.as_bytes())?;
        write_atomically(
            &r.out.join("timeline.json"),
            write_timeline(
                &ranks,
                &format!("commperf monitor run: {} {:?}", r.transport, r.pattern),
            )
            .as_bytes(),
        )?;
        Some(TraceInfo {
            file: file.display().to_string(),
            records: text
                .lines()
                .filter(|l| l.starts_with("send") || l.starts_with("recv"))
                .count() as u64,
            dropped: out.dropped + peer_report.dropped,
            cut: cut as u64,
        })
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
    let file = r.out.join("run.json");
    let parts = to_part_figures(&out.figures);
    let sig = Signature::new(&run.histograms, run.baseline.as_ref(), None);
    print(&sig.render_table(TableFormat::Text))?;
    print(&cost_lines(&run))?;
    if !saver.plain_parts {
        print(&parts_table(&run.workload.pattern, &parts))?;
    }
    crate::say(&format!(
        "monitor: {} s; saved {}",
        started.elapsed().as_secs(),
        file.display()
    ));
    Ok(())
}

/// What a flush hands over: the client's records and figures so far and the peer's latest
/// report.
struct Flush<'a> {
    sizes_done: usize,
    hist: &'a Histograms,
    syncs: &'a [commperf_monitor::clock::OffsetSample],
    figures: &'a [(PartSel, Vec<(u64, f64)>)],
    peer: PeerReport,
}

/// Builds and writes the run file, at every flush and at the end.
struct Saver<'a> {
    r: &'a RunArgs,
    sizes: Vec<u64>,
    clock: TscClock,
    baseline: Option<commperf_monitor::Baseline>,
    machine: commperf_core::Machine,
    /// A plain run (no --parts): no parts.json.
    plain_parts: bool,
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
        syncs: Vec<commperf_monitor::clock::OffsetSample>,
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
        let r = self.r;
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
                pattern: format!("{:?}", r.pattern).to_lowercase(),
                transport: r.transport.to_string(),
                mode: r.mode.to_string(),
                sizes_bytes: self.sizes.clone(),
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
        write_atomically(&self.r.out.join("run.json"), run.to_json().as_bytes())?;
        let parts_file = self.r.out.join(PARTS_FILE);
        if self.plain_parts {
            let _ = std::fs::remove_file(&parts_file);
        } else {
            let parts = to_part_figures(figures);
            write_atomically(
                &parts_file,
                serde_json::to_string_pretty(&parts)?.as_bytes(),
            )?;
        }
        Ok(())
    }
}

/// The monitor's cost, unmonitored against monitored in the same run, and the clock bound.
fn cost_lines(run: &MonitorRun) -> String {
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
fn parts_table(pattern: &str, parts: &[PartFigures]) -> String {
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
    syncs: Vec<commperf_monitor::clock::OffsetSample>,
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
/// around the block, outside its timing).
macro_rules! in_block {
    ($m:ident, $sel:expr, |$e:ident| $body:expr) => {{
        match $sel.parts() {
            None => {
                let $e = $m.get_mut();
                $body
            }
            Some(p) if p == Parts::ALL => {
                $m.set_parts(p);
                let $e = &mut $m;
                $body
            }
            Some(p) => {
                $m.set_parts(p);
                let keep = $m.replace_histograms(Histograms::new());
                let r = {
                    let $e = &mut $m;
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
        let s = size as usize;
        let mut ticks = vec![0u64; kinds];
        // Warm-up, unrecorded.
        m.pause();
        initiate(
            &mut m,
            job,
            &mut buf[..s],
            &mut rtts[0][..per.min(1000)],
            &clock,
        )?;
        m.resume();
        for r in 0..job.rounds as usize {
            let w = r * per..(r + 1) * per;
            for (k, sel) in round_order(&job.parts, r) {
                let rtt = &mut rtts[k][w.clone()];
                ticks[k] += in_block!(m, sel, |ep| initiate(ep, job, &mut buf[..s], rtt, &clock))?;
            }
        }
        for (k, (_, fig)) in figures.iter_mut().enumerate() {
            fig.push((
                size,
                match job.pattern {
                    Pattern::Pingpong => {
                        let ns: Vec<f64> = rtts[k].iter().map(|&t| clock.clock.ticks_to_ns(t)).collect();
                        let Some(rtt_ns) = median(&ns) else {
                            bail!("monitor: no round trip was timed at {size} B (--iters and --rounds must be at least 1)");
                        };
                        rtt_ns / 2.0 / 1e3
                    }
                    Pattern::Stream => {
                        let bytes = (per * job.rounds as usize).div_ceil(job.window as usize)
                            * job.window as usize
                            * s;
                        bytes as f64 / clock.clock.ticks_to_ns(ticks[k]) * 1e3
                    }
                },
            ));
        }
        // Re-synchronize between sizes when the interval has passed, and always at the end (so
        // the report carries a bound measured at the end of the run).
        let last = i + 1 == job.sizes.len();
        let now = last || m.resync_due();
        m.get_mut().send(DECIDE, &[now as u8])?;
        if now {
            syncs.push(m.sync_as_master()?);
        }
        let peer: PeerReport = recv_chunked(ctrl).context("the peer's histograms so far")?;
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
                in_block!(m, sel, |ep| respond(ep, job, per, &mut buf))?;
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
                error_bound_ns: c.error_bound_at(commperf_monitor::LocalClock::now_ns(&clock)),
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
        error_bound_ns: c.error_bound_at(commperf_monitor::LocalClock::now_ns(&clock)),
        trace,
        dropped,
    })
}

/// The hidden `__monitor-peer` process.
pub fn peer() -> Result<()> {
    let (mut ctrl, job, mut ep) =
        commperf_transport::launch::accept_local_pair(Duration::from_secs(600), |j: &Job| j.cpu)?;
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
        bail!(
            "the peer announced {n} parts of a report, more than the {} allowed",
            FRAME / CHUNK
        );
    }
    let mut text = String::new();
    for _ in 0..n {
        text += &ctrl.recv::<String>()?;
    }
    Ok(serde_json::from_str(&text)?)
}

fn report(r: &ReportArgs) -> Result<()> {
    crate::output::preflight(&[
        ("-o", r.out.as_deref()),
        ("--trace", r.trace.as_deref()),
        ("--timeline", r.timeline.as_deref()),
    ])?;
    // An MPI program's directory is re-read from its rank files: they are the record, and a
    // damaged one is named.
    let mpi = r.input.is_dir() && commperf_pmpi::holds_rank_files(&r.input);
    if r.trace.is_some() || r.timeline.is_some() {
        if !mpi {
            bail!(
                "--trace/--timeline convert an MPI run's directory (rank-N.cpmpi files), and {} is not one; `monitor run --trace N` writes its own trace.txt",
                r.input.display()
            );
        }
        crate::monitor_mpi::write_trace(
            &r.input,
            r.trace.as_deref(),
            r.timeline.as_deref(),
            None,
            None,
        )?;
    }
    let (run, mpi_table) = if mpi {
        let (s, run) = crate::monitor_mpi::load(&r.input)?;
        (run, Some(crate::monitor_mpi::table(&s) + "\n"))
    } else {
        let file = if r.input.is_dir() {
            r.input.join("run.json")
        } else {
            r.input.clone()
        };
        (MonitorRun::load(&file)?, None)
    };
    let baseline = match &r.baseline {
        Some(p) => Some(load_baseline(p)?),
        None => run.baseline.clone(),
    };
    let sig = Signature::new(&run.histograms, baseline.as_ref(), r.program);
    let mut text = match r.format {
        ReportFormat::Table => sig.render_table(TableFormat::Text),
        ReportFormat::Md => sig.render_table(TableFormat::Markdown),
        ReportFormat::Csv => sig.render_table(TableFormat::Csv),
        ReportFormat::Json => serde_json::to_string_pretty(&sig)? + "\n",
        ReportFormat::Svg => sig.render_svg(),
    };
    if r.format == ReportFormat::Table {
        if let Some(t) = mpi_table {
            text = t + &text;
        }
        text += &cost_lines(&run);
        if !mpi {
            let dir = if r.input.is_dir() {
                r.input.clone()
            } else {
                r.input.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            let pf = dir.join(PARTS_FILE);
            if pf.exists() {
                let t = std::fs::read_to_string(&pf)
                    .with_context(|| format!("{}: cannot read it", pf.display()))?;
                let parts: Vec<PartFigures> = serde_json::from_str(&t).with_context(|| {
                    format!(
                        "{}: not a monitor parts file (truncated or corrupt?)",
                        pf.display()
                    )
                })?;
                text += &parts_table(&run.workload.pattern, &parts);
            }
        }
        if !run.complete {
            if mpi {
                text += "# this run was cut short: the figures cover only what was recorded\n";
            } else {
                let done: Vec<String> = run
                    .reference_one_way_us
                    .iter()
                    .map(|(s, _)| commperf_core::format_size(*s))
                    .collect();
                text += &format!(
                    "# this run was cut short after {} of {} sizes ({}): the figures cover only \
                     what was saved at its last flush\n",
                    done.len(),
                    run.workload.sizes_bytes.len(),
                    if done.is_empty() {
                        "none measured".to_string()
                    } else {
                        format!("measured: {}", done.join(", "))
                    }
                );
            }
        }
    }
    match &r.out {
        Some(p) => write_atomically(p, text.as_bytes()),
        None => print(&text),
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    /// The command lines a text advises, between backticks, `DIR` made a directory name.
    fn advised(text: &str) -> Vec<Vec<String>> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(|c| {
                c.split_whitespace()
                    .map(|w| w.replace("DIR", "commperf-monitor-1700000000"))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_no_baseline_verdict_advises_command_lines_that_exist() {
        let text = commperf_monitor::signature::NO_BASELINE;
        let lines = advised(text);
        assert_eq!(lines.len(), 3, "{text}");
        for argv in &lines {
            assert_eq!(argv[0], "commperf", "{argv:?}");
            if let Err(e) = Cli::try_parse_from(argv) {
                panic!("{argv:?} does not parse: {}", crate::cli::one_line(&e));
            }
        }
        // The one that takes the baseline is `monitor report`, for every kind of run; the MPI
        // form of the monitor has no --baseline.
        let last = lines.last().unwrap().join(" ");
        assert!(
            last.starts_with("commperf monitor report ") && last.contains(" --baseline "),
            "{last}"
        );
        assert!(Cli::try_parse_from([
            "commperf",
            "monitor",
            "--baseline",
            "q.json",
            "--",
            "mpirun",
            "./app"
        ])
        .is_err());
        // What the first two save is what the third reads: quiet/run.json, quiet.json.
        assert!(
            lines[0].join(" ").ends_with("monitor run -o quiet"),
            "{lines:?}"
        );
        assert!(text.contains("--baseline quiet/run.json"), "{text}");
    }
}
