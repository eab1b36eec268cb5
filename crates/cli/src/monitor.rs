//! `commperf monitor`: Liao et al.'s (1998) monitor, the verb's command line.
//!
//! `monitor run` checks its options into [`commperf_monitor::workload::RunConfig`], runs the
//! workload there ([`commperf_monitor::workload::run_local`]: the local peer, the rounds, the
//! flushes, the saved run) and prints the signature, the monitor's cost and, for `--parts`, the
//! parts table. `monitor report` re-renders a saved run. The hidden `__monitor-peer` verb is the
//! workload's other end ([`commperf_monitor::workload::peer`]). The MPI form,
//! `monitor [-o DIR] -- COMMAND`, comes from the `pmpi` crate (the interposer) and slots into
//! [`MonitorArgs::command`].
//!
//! The pattern and the parts are clap enums here (their doc comments are the `--help` text) and
//! plain enums in the library, which never sees clap; `From` converts.

use crate::output::{print, write_atomically};
use anyhow::{bail, Result};
use clap::{Args, Subcommand, ValueEnum};
use commperf_core::{Mode, TransportKind};
use commperf_monitor::run::load_baseline;
use commperf_monitor::workload::{
    self, RunConfig, RunRequest, SavedRun, MAX_ROUNDS, MAX_TRACE_RECORDS,
};
use commperf_monitor::{Signature, TableFormat};
use commperf_transport::bounds::MAX_WINDOW;
use std::path::PathBuf;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Pattern {
    Pingpong,
    Stream,
}

/// Which of the monitor's parts run in a block (Liao et al. 1998, Figures 7–10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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

impl From<PartSel> for workload::PartSel {
    fn from(p: PartSel) -> Self {
        match p {
            PartSel::None => workload::PartSel::None,
            PartSel::Off => workload::PartSel::Off,
            PartSel::Send => workload::PartSel::Send,
            PartSel::Recv => workload::PartSel::Recv,
            PartSel::Clock => workload::PartSel::Clock,
            PartSel::All => workload::PartSel::All,
        }
    }
}

impl From<Pattern> for workload::Pattern {
    fn from(p: Pattern) -> Self {
        match p {
            Pattern::Pingpong => workload::Pattern::Pingpong,
            Pattern::Stream => workload::Pattern::Stream,
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

/// `monitor run`: the options checked into the library's config, the run, its tables printed.
fn run_local(r: &RunArgs) -> Result<()> {
    let cfg = RunConfig::new(RunRequest {
        transport: r.transport,
        mode: r.mode,
        sizes: r.sizes.clone(),
        iters: r.iters,
        rounds: r.rounds,
        pattern: r.pattern.into(),
        window: r.window,
        baseline: r.baseline.clone(),
        program: r.program,
        trace: r.trace,
        resync_s: r.resync_s,
        parts: r.parts.iter().map(|&p| p.into()).collect(),
        out: r.out.clone(),
    })?;
    crate::output::preflight(&[])?;
    let done = workload::run_local(&cfg)?;
    let run = &done.run;
    let sig = Signature::new(&run.histograms, run.baseline.as_ref(), None);
    print(&sig.render_table(TableFormat::Text))?;
    print(&workload::cost_lines(run))?;
    if !cfg.plain_parts() {
        print(&workload::parts_table(&run.workload.pattern, &done.parts))?;
    }
    crate::say(&format!(
        "monitor: {} s; saved {}",
        done.elapsed.as_secs(),
        done.file.display()
    ));
    Ok(())
}

/// The hidden `__monitor-peer` process.
pub fn peer() -> Result<()> {
    Ok(workload::peer()?)
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
    let SavedRun {
        run,
        mpi_table,
        parts_dir,
    } = workload::load_saved(&r.input)?;
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
        text += &workload::report_notes(&run, parts_dir.as_deref())?;
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
