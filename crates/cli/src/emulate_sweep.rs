//! `commperf emulate sweep --knob L=0,5,10,20us [--repeat N] -- COMMAND`: Martin's (1999)
//! sensitivity study as a command. The study itself (settings, interleaved order, medians,
//! slowdowns, noise band, exporters) is `commperf_emulate::sweep`; this module runs the program
//! once per setting under the interposer's knobs, each run in its own process group with a
//! timeout and its output in a log of its own, so a run that hangs or crashes is reported for
//! its setting and the sweep keeps the rest.
//!
//! With `--predict`, the program is first run once under `commperf monitor --trace` (knobs at
//! zero); `predict` then replays that trace with each knob raised, in LogGP mode and in
//! contention mode, and the table puts predicted beside measured slowdown.

use crate::output::{print, write_atomically};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use commperf_core::Watch;
use commperf_emulate::state::MachineProbe;
use commperf_emulate::sweep::{
    run_state, run_sweep, same_state, Runner, Setting, Statistic, SweepFormat, SweepPlan,
    SweepResult,
};
use commperf_emulate::{parse_knob_list, Knob, Knobs};
use commperf_model::tcom::Tcom;
use commperf_predict::engine::{self, Inputs, LogGp, Model, PredictConfig, SelfOverheads};
use commperf_predict::parse::{self, ParseOptions};
use commperf_predict::topology::{self, RankMap, TopologySpec};
use commperf_stats::median;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatisticArg {
    /// Round by round: each setting's run against the baseline's run of the same round
    Paired,
    /// Each setting's median run against the baseline's
    Median,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepFormatArg {
    Table,
    Json,
    Md,
    Csv,
    Svg,
}

fn knob_list(s: &str) -> Result<(Knob, Vec<f64>), String> {
    parse_knob_list(s).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A knob and its values, e.g. L=0,5,10,20,50us (G in ns per byte: G=0,0.5,1); repeat
    /// for more knobs. Each knob is swept alone; zero values are the shared baseline
    #[arg(long = "knob", value_name = "KNOB=VALUES", value_parser = knob_list, required = true)]
    pub knobs: Vec<(Knob, Vec<f64>)>,
    /// Rounds: every setting (and the baseline) runs this many times, interleaved
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// How run times become slowdowns: paired, the median over rounds of each setting's run
    /// minus the baseline's of the same round (a slow spell of the machine lands on both), or
    /// median, the setting's median against the baseline's
    #[arg(long, value_enum, default_value = "paired")]
    pub statistic: StatisticArg,
    /// Longest one run may take before it is stopped (SIGTERM, then SIGKILL 10 s later) and
    /// counted as failed
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = crate::cli::seconds)]
    pub timeout: Duration,
    /// Directory for the runs' logs, the monitor trace of --predict, and sweep.json
    /// [default: commperf-sweep-<unix time>]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Format of what goes to stdout
    #[arg(long, value_enum, default_value = "table")]
    pub format: SweepFormatArg,
    /// Also write the result to FILE, in the format its extension names (.json, .svg, .md,
    /// .csv; anything else: the table)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Vec<PathBuf>,
    /// The interposer to use (openmpi, mpich) [default: the program's MPI]
    #[arg(long, value_name = "MPI")]
    pub interposer: Option<String>,
    /// Also predict each setting's slowdown from a monitored run of the program (LogGP and
    /// contention models) and compare with the measured one
    #[arg(long)]
    pub predict: bool,
    /// The platform's LogGP parameters for --predict (ns; predict's --loggp syntax:
    /// L=…,o=…,g=…,G=…): the knobs add to them. Without it (and --profile) they are measured
    /// now: `bench loggp -t mpi` three times (a build with --features mpi, the program's MPI)
    #[arg(long, value_name = "L=NS,o=NS,g=NS,G=NS", value_parser = crate::predict::loggp_params)]
    pub loggp: Option<LogGp>,
    /// A profile from `commperf calibrate` for --predict (Tcom of the contention model, and
    /// LogGP when --loggp is not given)
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Messages up to this size are eager in the predictions
    #[arg(long, value_name = "SIZE", default_value = "64k", value_parser = crate::cli::size)]
    pub eager: u64,
    /// LogGP predictions: when a message's receive begins (as `predict --loggp-receive`).
    /// last-byte: G as the emulator slows it, the sender's wire with the receiving CPU free;
    /// first-byte: LogGOPSim's rule, the receive holding the CPU while the bytes come in
    #[arg(long, value_enum, default_value = "last-byte")]
    pub loggp_receive: crate::predict::LoggpReceiveArg,
    /// The program, e.g. mpirun -np 4 ./app
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs the program under `commperf emulate` (this executable), timing the child from spawn to
/// exit. A child process per run keeps a crash, a hang or a leftover rank of one setting from
/// touching the next: each run is its own process group, killed whole on timeout.
struct EmulatedRuns<'a> {
    args: &'a SweepArgs,
    dir: &'a Path,
    exe: PathBuf,
    n: usize,
    probe: Option<&'static MachineProbe>,
    watch: Watch,
}

fn knob_flags(k: &Knobs) -> Vec<String> {
    let mut v = Vec::new();
    for knob in Knob::ALL {
        let x = k.get(knob);
        if x > 0.0 {
            v.push(format!("--{knob}"));
            // ns for o, g and L; ns per byte for G (its parser's default unit).
            v.push(format!("{x}ns"));
        }
    }
    v
}

/// How long a child run has, once asked to stop (an interrupt passed on, its timeout past), to
/// stop its command and clean up before its process group is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Waits for `child` (spawned with `process_group(0)`) up to `timeout`. Past it, the child is
/// asked to stop (SIGTERM: `commperf emulate` passes it on to its mpirun, which stops its ranks
/// and removes its files), and its process group is killed if it still runs [`STOP_GRACE`]
/// later. An interrupt meanwhile is passed on to the child ([`commperf_launch::interrupt::Child`]), which
/// then has the same grace. Returns the exit status and the instant the child ended (taken by
/// the waiting thread, not at the next poll).
fn wait_timeout(
    mut child: std::process::Child,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, Instant), String> {
    let pid = child.id() as i32;
    let _child = commperf_launch::interrupt::Child::of(child.id());
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let r = child.wait();
        let _ = tx.send((r, Instant::now()));
    });
    let mut deadline = Instant::now() + timeout;
    let (mut interrupted, mut timed_out) = (false, false);
    loop {
        let slice = deadline
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        match rx.recv_timeout(slice) {
            Ok((Ok(_), _)) if timed_out => {
                let _ = waiter.join();
                return Err(format!("timed out after {timeout:?}; stopped"));
            }
            Ok((Ok(st), at)) => {
                let _ = waiter.join();
                return Ok((st, at));
            }
            Ok((Err(e), _)) => return Err(format!("cannot wait for the program: {e}")),
            Err(_) if Instant::now() < deadline => {
                if !interrupted && !timed_out && commperf_launch::interrupt::requested() {
                    interrupted = true;
                    deadline = deadline.min(Instant::now() + STOP_GRACE);
                }
            }
            Err(_) if !interrupted && !timed_out => {
                timed_out = true;
                deadline = Instant::now() + STOP_GRACE;
                // SAFETY: kill(2) on our own child, not yet reaped; no memory is involved.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            Err(_) => break,
        }
    }
    // SAFETY: kill(2) on the child's own process group (it was spawned with process_group(0),
    // so its pgid is its pid); no memory is involved.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let _ = rx.recv();
    let _ = waiter.join();
    Err(if interrupted {
        format!("interrupted; still running {STOP_GRACE:?} later; killed")
    } else {
        format!("timed out after {timeout:?}; still running {STOP_GRACE:?} later; killed")
    })
}

impl Runner for EmulatedRuns<'_> {
    fn probe(&mut self) -> Option<f64> {
        self.probe?.read()
    }

    fn stop_requested(&mut self) -> bool {
        // The program runs in its own process group, out of the terminal's reach: an
        // interrupt is passed on to the run in hand (`wait_timeout`), which stops, and is left
        // out of the figures (a run cut short is not a measurement).
        commperf_launch::interrupt::requested()
    }

    fn run(&mut self, setting: &Setting) -> Result<f64, String> {
        // Between runs nothing of ours spins: measurements started since, and the run queue.
        self.watch.check();
        self.n += 1;
        let log = self.dir.join(format!("run-{:03}.log", self.n));
        let file = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("cannot reopen {}: {e}", log.display()))?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("emulate").args(knob_flags(&setting.knobs()));
        if !setting.untouched {
            // Every setting and the baseline run the whole apparatus, L's side band included,
            // so its own per-message cost is in the anchor as in each setting
            // (commperf_emulate::sweep).
            cmd.arg("--engaged");
        }
        if let Some(i) = &self.args.interposer {
            cmd.args(["--interposer", i]);
        }
        cmd.arg("--")
            .args(&self.args.command)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        commperf_launch::interrupt::die_with_parent(&mut cmd);
        let start = Instant::now();
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()))?;
        let (st, end) = wait_timeout(child, self.args.timeout)
            .map_err(|e| format!("{e} (log {})", log.display()))?;
        if !st.success() {
            let last = crate::app::last_lines(&std::fs::read(&log).unwrap_or_default(), 1);
            return Err(format!("{st}: {last} (log {})", log.display()));
        }
        Ok(end.duration_since(start).as_secs_f64())
    }
}

fn render(r: &SweepResult, f: SweepFormatArg) -> Result<String> {
    Ok(match f {
        SweepFormatArg::Table => r.render(SweepFormat::Text),
        SweepFormatArg::Md => r.render(SweepFormat::Markdown),
        SweepFormatArg::Csv => r.render(SweepFormat::Csv),
        SweepFormatArg::Svg => r.render_svg(),
        SweepFormatArg::Json => serde_json::to_string_pretty(r)? + "\n",
    })
}

fn format_for(path: &Path) -> SweepFormatArg {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => SweepFormatArg::Json,
        Some("svg") => SweepFormatArg::Svg,
        Some("md") => SweepFormatArg::Md,
        Some("csv") => SweepFormatArg::Csv,
        _ => SweepFormatArg::Table,
    }
}

pub fn run(a: &SweepArgs) -> Result<()> {
    let plan = SweepPlan::new(&a.knobs, a.repeat)?.with_statistic(match a.statistic {
        StatisticArg::Paired => Statistic::Paired,
        StatisticArg::Median => Statistic::Median,
    });
    if a.predict && a.loggp.is_none() && a.profile.is_none() {
        can_measure_loggp(a)?;
    }
    let dir = a.dir.clone().unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from(format!("commperf-sweep-{t}"))
    });
    // Output problems are reported now, before a long sweep, not at its end.
    let outs: Vec<(&str, Option<&Path>)> =
        a.out.iter().map(|p| ("-o", Some(p.as_path()))).collect();
    crate::output::preflight(&outs)?;
    let _dir_guard = crate::output::OutDir::create("--dir", &dir)?;
    commperf_launch::interrupt::install();
    let exe = std::env::current_exe().context("cannot find the commperf executable")?;
    let trace = if a.predict {
        Some(monitored_trace(a, &dir, &exe)?)
    } else {
        None
    };
    let total = plan.schedule().len();
    crate::say(&format!(
        "commperf: sweep of {} settings × {} rounds = {total} runs; logs in {}",
        plan.settings().len(),
        a.repeat,
        dir.display()
    ));
    let tty = std::io::stderr().is_terminal();
    let bar = tty.then(|| indicatif::ProgressBar::new(total as u64));
    let mut runs = EmulatedRuns {
        args: a,
        dir: &dir,
        exe: exe.clone(),
        n: 0,
        probe: commperf_emulate::state::shared(),
        // The cache-line probe tells the machine's state, not whether the program shared its
        // CPUs: the watch does, over the whole sweep.
        watch: Watch::start("emulate sweep", &[]),
    };
    let mut result = run_sweep(&plan, &mut runs, &a.command, |done, _, s| {
        if let Some(b) = &bar {
            b.set_position(done as u64);
            b.set_message(s.label());
        } else {
            crate::say(&format!(
                "commperf: run {}/{total}: {}",
                done + 1,
                s.label()
            ));
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result.disturbance = runs.watch.finish();
    let save = |r: &SweepResult| -> Result<()> {
        let json = serde_json::to_string_pretty(r)? + "\n";
        write_atomically(&dir.join("sweep.json"), json.as_bytes())
    };
    // An interrupted sweep is saved at once: its predictions would compare partial figures.
    if result.partial && trace.is_some() {
        result
            .notes
            .push("Not predicted: the sweep was interrupted.".into());
    }
    let trace = trace.filter(|_| !result.partial);
    if let Some(trace) = &trace {
        // The measurements are on disk before any prediction runs: a replay can take long.
        save(&result)?;
        crate::say("commperf: --predict: replaying the trace with each knob raised");
        // The measured sweep is kept whatever happens to its prediction.
        if let Err(e) = add_predictions(&mut result, a, trace, &exe, &dir, runs.probe) {
            result.notes.push(format!("not predicted: {e:#}"));
        }
    }
    save(&result)?;
    for p in &a.out {
        write_atomically(p, render(&result, format_for(p))?.as_bytes())?;
        crate::say(&format!("commperf: wrote {}", p.display()));
    }
    print(&render(&result, a.format)?)?;
    let finished = result
        .settings
        .iter()
        .map(|s| s.runs_s.len() + s.failures.len())
        .sum();
    commperf_launch::interrupt::Interrupted::check(result.partial, finished, "run")?;
    let failed = result
        .settings
        .iter()
        .filter(|s| s.runs_s.is_empty())
        .count();
    if failed == result.settings.len() {
        bail!("every run failed; see the logs in {}", dir.display());
    }
    Ok(())
}

/// Runs the program once under `commperf monitor --trace` and returns the trace it wrote.
fn monitored_trace(a: &SweepArgs, dir: &Path, exe: &Path) -> Result<PathBuf> {
    let mdir = dir.join("monitor");
    let log = dir.join("monitor.log");
    let file =
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut cmd = Command::new(exe);
    cmd.arg("monitor").arg("--trace").arg("-o").arg(&mdir);
    if let Some(i) = &a.interposer {
        cmd.args(["--interposer", i]);
    }
    cmd.arg("--")
        .args(&a.command)
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    commperf_launch::interrupt::die_with_parent(&mut cmd);
    crate::say("commperf: --predict: one monitored run for the trace");
    let child = cmd.spawn().context("cannot start commperf monitor")?;
    let (st, _) = wait_timeout(child, a.timeout).map_err(anyhow::Error::msg)?;
    if !st.success() {
        bail!(
            "the monitored run for --predict failed ({st}); see {}",
            log.display()
        );
    }
    let trace = mdir.join("trace.txt");
    if !trace.is_file() {
        bail!("the monitored run wrote no {}", trace.display());
    }
    Ok(trace)
}

/// The knobs' deltas on LogGP parameters: o on both sides, g, G and L as they are.
fn raised(base: LogGp, knob: Knob, v: f64) -> LogGp {
    let mut p = base;
    match knob {
        Knob::O => {
            p.o_s_ns += v;
            p.o_r_ns += v;
        }
        Knob::LowerG => p.g_ns += v,
        Knob::UpperG => p.G_ns_per_byte += v,
        Knob::L => p.L_ns += v,
    }
    p
}

/// The MPI this binary's `bench -t mpi` runs on (None: built without MPI).
fn own_mpi() -> Option<commperf_pmpi::Flavour> {
    #[cfg(feature = "mpi")]
    {
        commperf_launch::preload::flavour_from(&commperf_mpi::library_version())
    }
    #[cfg(not(feature = "mpi"))]
    {
        None
    }
}

/// `--predict` without `--loggp` or `--profile`: refused now, before the sweep, when this
/// binary cannot measure the parameters for the program's MPI.
fn can_measure_loggp(a: &SweepArgs) -> Result<()> {
    let prog = commperf_launch::preload::plan(&a.command, a.interposer.as_deref())?.flavour;
    match own_mpi() {
        None => bail!(
            "--predict needs the platform's parameters the knobs add to: --loggp L=…,o=…,g=…,G=… \
             (ns, from `commperf bench loggp -t mpi`) or --profile FILE (from `commperf \
             calibrate`); a commperf built with --features mpi measures them itself"
        ),
        Some(own) if own != prog => bail!(
            "--predict would measure LogGP with this commperf's {} but the program runs {}: \
             give --loggp (from `commperf bench loggp -t mpi` built against {})",
            own.key(),
            prog.key(),
            prog.key()
        ),
        Some(_) => Ok(()),
    }
}

/// The size of each point-to-point send of `w` (collectives expanded).
fn send_sizes(w: &commperf_predict::workload::Workload) -> impl Iterator<Item = u64> + '_ {
    w.ops()
        .iter()
        .filter_map(|op| op.send_parts().map(|(_, _, bytes, _)| bytes))
}

/// The median message size of a workload's sends (collectives expanded), by count, bytes;
/// `None` when it sends none.
pub(crate) fn median_send_bytes(w: &commperf_predict::workload::Workload) -> Option<u64> {
    let mut sizes: Vec<u64> = send_sizes(w).collect();
    if sizes.is_empty() {
        return None;
    }
    let mid = sizes.len() / 2;
    Some(*sizes.select_nth_unstable(mid).1)
}

/// The share of `w`'s point-to-point bytes (%) in messages larger than `size`; None without
/// any.
pub(crate) fn send_bytes_above_percent(
    w: &commperf_predict::workload::Workload,
    size: u64,
) -> Option<f64> {
    let (mut all, mut above) = (0u128, 0u128);
    for bytes in send_sizes(w) {
        all += u128::from(bytes);
        if bytes > size {
            above += u128::from(bytes);
        }
    }
    (all > 0).then(|| 100.0 * above as f64 / all as f64)
}

/// The parameters of one LogGOPS piece as one `bench loggp` run fitted them, in ns (per byte
/// for G and O), in [`PIECE_KEYS`] order; `None` where the fit could not identify one (bench
/// omits it and says why in the row's notes, kept in `notes`).
#[derive(Debug, Clone, PartialEq)]
struct Piece {
    span: (u64, u64),
    values: [Option<f64>; 6],
    notes: Vec<String>,
}

const PIECE_KEYS: [&str; 6] = ["L", "o_s", "o_r", "g", "G", "O"];

/// From `bench loggp --format json`, the LogGOPS piece covering `size` bytes (the nearest piece,
/// by size on a log scale, when it falls between two).
fn loggp_piece(text: &str, size: u64) -> Result<Piece> {
    let v: serde_json::Value = serde_json::from_str(text).context("bench loggp JSON")?;
    let rows: Vec<&serde_json::Value> = v["results"]
        .as_array()
        .map(|r| r.iter().filter(|r| r["benchmark"] == "loggp").collect())
        .unwrap_or_default();
    let span = |r: &serde_json::Value| -> Option<(u64, u64)> {
        Some((
            r["piece_from_bytes"].as_u64()?,
            r["piece_to_bytes"].as_u64()?,
        ))
    };
    let distance = |r: &&serde_json::Value| -> f64 {
        span(r).map_or(f64::INFINITY, |(lo, hi)| {
            commperf_study::rounds::piece_distance(size, lo, hi)
        })
    };
    let row = rows
        .iter()
        .filter(|r| span(r).is_some())
        .min_by(|a, b| distance(a).total_cmp(&distance(b)))
        .context("bench loggp fitted no LogGOPS piece")?;
    let ns = |k: &str| row[k].as_f64().map(|x| x * 1e3);
    // predict's LogGOPS has one O for both ends: their mean.
    let o = ns("O_s_us_per_byte")
        .zip(ns("O_r_us_per_byte"))
        .map(|(a, b)| (a + b) / 2.0);
    Ok(Piece {
        span: span(row).expect("filtered"),
        values: [
            ns("L_us"),
            ns("o_s_fixed_us"),
            ns("o_r_fixed_us"),
            ns("g_us"),
            ns("G_us_per_byte"),
            o,
        ],
        notes: row["notes"]
            .as_array()
            .map(|n| {
                n.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// Each parameter's median over the runs that identified it; refused, naming the parameter and
/// quoting bench's reason, when none did.
fn median_loggp(runs: &[Piece]) -> Result<LogGp> {
    let mut m = [0.0; 6];
    for (i, key) in PIECE_KEYS.iter().enumerate() {
        let v: Vec<f64> = runs.iter().filter_map(|p| p.values[i]).collect();
        let Some(value) = median(&v) else {
            let why = runs
                .iter()
                .flat_map(|p| &p.notes)
                .find(|n| n.starts_with(&format!("{key} ")))
                .map_or(String::new(), |n| format!(": {n}"));
            bail!(
                "bench loggp identified no {key} in any of its {} runs{why}; give --loggp",
                runs.len()
            );
        };
        m[i] = value;
    }
    Ok(LogGp {
        L_ns: m[0],
        o_s_ns: m[1],
        o_r_ns: m[2],
        g_ns: m[3],
        G_ns_per_byte: m[4],
        O_ns_per_byte: m[5],
    })
}

/// How many times `bench loggp` runs when --predict measures the parameters: the VM this was
/// built on moved single fits by 20–50 % between runs.
const LOGGP_RUNS: usize = 3;

/// The machine's state the LogGP measurement should be in, the baseline's usual one: when
/// `insist` (most settings were compared over runs in the same state), runs in another are
/// measured again (at most [`LOGGP_EXTRA_RUNS`] more) and left out.
struct WantedState<'a> {
    probe: &'a MachineProbe,
    reference_ns: f64,
    insist: bool,
}

/// Runs of `bench loggp` beyond [`LOGGP_RUNS`] when the machine was in another state.
const LOGGP_EXTRA_RUNS: usize = 3;

/// `--predict` without `--loggp` or `--profile`: the platform's LogGP at the MPI layer, measured
/// now on this machine by `bench loggp -t mpi` (this binary under its MPI's mpirun, 2 ranks),
/// [`LOGGP_RUNS`] times (in the state `state` asks for, when it can), each parameter the median
/// over the runs of the piece covering `size` (the trace's median message). Parameters from
/// another machine were the largest error of the study they were added for. Returns them and
/// the notes saying how.
fn measure_loggp(
    exe: &Path,
    dir: &Path,
    size: u64,
    timeout: Duration,
    state: Option<WantedState<'_>>,
) -> Result<(LogGp, Vec<String>)> {
    // The ladder, and the typical message itself: it is then inside the fit of its piece
    // rather than between two (a 2 KiB message took the 4 KiB – 1 MiB piece's fixed o of 2 µs).
    let mut ladder: Vec<u64> = vec![8, 64, 512, 4096, 32768, 262144, 1 << 20];
    ladder.push(size.clamp(1, 4 << 20));
    ladder.sort_unstable();
    ladder.dedup();
    let sizes = ladder
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut runs: Vec<(Piece, bool)> = Vec::new();
    let clean = |runs: &[(Piece, bool)]| runs.iter().filter(|r| r.1).count();
    let mut probes: Vec<String> = Vec::new();
    for i in 0..LOGGP_RUNS + LOGGP_EXTRA_RUNS {
        let enough = match &state {
            Some(w) if w.insist => clean(&runs) >= LOGGP_RUNS,
            _ => runs.len() >= LOGGP_RUNS,
        };
        if enough {
            break;
        }
        crate::say(&format!(
            "commperf: --predict: measuring LogGP at the MPI layer (run {})",
            i + 1
        ));
        let before = state.as_ref().and_then(|w| w.probe.read());
        let json = dir.join(format!("loggp-{}.json", i + 1));
        let log = dir.join(format!("loggp-{}.log", i + 1));
        let file = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut cmd = Command::new(exe);
        cmd.args(["bench", "loggp", "-t", "mpi", "--sizes", &sizes])
            .args(["--format", "json", "-o"])
            .arg(&json)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        commperf_launch::interrupt::die_with_parent(&mut cmd);
        let child = cmd.spawn().context("cannot start commperf bench loggp")?;
        let (st, _) = wait_timeout(child, timeout).map_err(anyhow::Error::msg)?;
        if !st.success() {
            bail!("bench loggp -t mpi failed ({st}); see {}", log.display());
        }
        let text = std::fs::read_to_string(&json)
            .with_context(|| format!("reading {}", json.display()))?;
        let p = loggp_piece(&text, size).with_context(|| format!("reading {}", json.display()))?;
        let after = state.as_ref().and_then(|w| w.probe.read());
        let ok = match (&state, before, after) {
            (Some(w), Some(b), Some(a)) => {
                probes.push(format!("{b:.0}/{a:.0}"));
                same_state(run_state([b, a]), Some(w.reference_ns))
            }
            _ => true,
        };
        runs.push((p, ok));
    }
    let mut notes = Vec::new();
    if let Some(w) = &state {
        let kept = clean(&runs);
        let n = runs.len();
        notes.push(format!(
            "machine probe around the LogGP runs (ns before/after): {}; the baseline's usual state {:.0} ns: {}",
            probes.join(", "),
            w.reference_ns,
            match (kept, w.insist) {
                (k, _) if k == n => "every run in it".to_string(),
                (0, true) => "no run in it: the parameters describe another state of the machine than the runs compared".to_string(),
                (k, true) => format!("{k} of {n} runs in it, the others left out"),
                (k, false) => format!("{k} of {n} runs in it, all kept: most settings were compared over runs in other states too"),
            }
        ));
        if w.insist && kept > 0 {
            runs.retain(|r| r.1);
        }
    }
    let runs: Vec<Piece> = runs.into_iter().map(|r| r.0).collect();
    let m = median_loggp(&runs)?;
    // Each run fits its own pieces: when they differ, say which each run took, in order.
    let mut spans: Vec<String> = runs
        .iter()
        .map(|p| format!("{}–{} B", p.span.0, p.span.1))
        .collect();
    if spans.iter().all(|x| *x == spans[0]) {
        spans.truncate(1);
    }
    notes.insert(
        0,
        format!(
            "LogGP measured for --predict: `bench loggp -t mpi`, {} runs kept (DIR/loggp-N.json), \
             each parameter's median over the runs that identified it, of the piece {} covering the trace's median message of {size} B",
            runs.len(),
            spans.join(" / ")
        ),
    );
    Ok((m, notes))
}

/// `probe`: the sweep's own machine probe, which holds the LogGP runs to the state the sweep's
/// runs were compared in.
fn add_predictions(
    result: &mut SweepResult,
    a: &SweepArgs,
    trace: &Path,
    exe: &Path,
    dir: &Path,
    probe: Option<&MachineProbe>,
) -> Result<()> {
    // A trace with dropped events is not the program: the replay would pair the wrong sends and
    // receives (or deadlock). Refused by name rather than predicted from.
    let stats_path = trace.with_file_name("trace-stats.json");
    if let Ok(text) = std::fs::read_to_string(&stats_path) {
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not JSON", stats_path.display()))?;
        let drops = v["drops"].as_u64().unwrap_or(0);
        if drops > 0 {
            bail!(
                "the monitored run dropped {drops} events (its call rate outran the monitor's \
                 writer), so {} is incomplete; predict from a run with fewer calls per second",
                trace.display()
            );
        }
    }
    let (workload, fmt) = parse::read_trace_as(trace, None, &ParseOptions::default())
        .with_context(|| format!("reading trace {}", trace.display()))?;
    let profile = crate::predict::read_profile(a.profile.as_deref())?;
    let measured = match (a.loggp, &profile) {
        (None, None) => {
            let size = median_send_bytes(&workload).unwrap_or(8);
            // The parameters should describe the machine in the state the runs were compared
            // in: when most settings compared runs in one state, LogGP runs in another are
            // measured again.
            let knobs: Vec<_> = result
                .settings
                .iter()
                .filter(|s| s.knob.is_some())
                .collect();
            let insist = 2 * knobs.iter().filter(|s| s.compared_same_state).count() > knobs.len();
            let state = probe
                .zip(result.probe_reference_ns)
                .map(|(probe, reference_ns)| WantedState {
                    probe,
                    reference_ns,
                    insist,
                });
            let (l, notes) = measure_loggp(exe, dir, size, a.timeout, state)?;
            result.notes.extend(notes);
            Some(l)
        }
        _ => None,
    };
    let given = a.loggp.or(measured);
    let tcom = match &profile {
        Some(p) => Tcom::from_profile(p).context("the profile's Tcom")?,
        None => {
            // No profile: the contention model's Tcom from the LogGP (a lone message costs
            // o_s + L + o_r + G·s end to end).
            Tcom::from_loggp(&given.expect("--loggp, or measured above"))
        }
    };
    let base = given.unwrap_or_else(|| LogGp::from_profile(profile.as_ref(), &tcom));
    let net = topology::build(&TopologySpec::Crossbar, workload.nranks(), 1)?;
    let map = RankMap::identity(workload.nranks(), &*net)?;
    let trace_name = trace.display().to_string();
    let fmt_name = fmt.to_string();
    let predict_ns = |model: Model, loggp: &LogGp, tcom: &Tcom| -> Result<f64, String> {
        // The knobs leave a message to oneself alone (it never leaves the library): it costs
        // the unknobbed overheads in every setting. And the g knob paces a rank's sends, not its
        // receives: no receive gap (the preset's).
        let cfg = PredictConfig {
            model,
            loggp_receive: a.loggp_receive.into(),
            ..PredictConfig::one_node_mpi(a.eager, SelfOverheads::of(&base))
        };
        let inputs = Inputs {
            workload: &workload,
            network: &*net,
            rank_map: &map,
            tcom,
            loggp: Some(loggp),
            trace_name: &trace_name,
            trace_format: &fmt_name,
            profile_name: "sweep",
        };
        engine::predict(&inputs, &cfg)
            .map(|o| o.prediction.total_us * 1e3)
            .map_err(|e| e.to_string())
    };
    let base_loggp = predict_ns(Model::LogGp, &base, &tcom).map_err(anyhow::Error::msg)?;
    result.add_prediction("loggp", |k, v| {
        predict_ns(Model::LogGp, &raised(base, k, v), &tcom).map(|t| (t - base_loggp) * 1e-9)
    });
    let base_cont = predict_ns(Model::Contention, &base, &tcom).map_err(anyhow::Error::msg)?;
    result.add_prediction("contention", |k, v| {
        // Papaefstathiou's (2001) model has a message's end-to-end cost and the links, no separate
        // overhead or gap: L and 2·o shift Tcom, G raises its slope; g has no place in it.
        let t = match k {
            Knob::L => tcom.shifted(v, 0.0),
            Knob::O => tcom.shifted(2.0 * v, 0.0),
            Knob::UpperG => tcom.shifted(0.0, v),
            Knob::LowerG => {
                return Err("the contention model has no gap: g is not predicted".into())
            }
        };
        predict_ns(Model::Contention, &base, &t).map(|t| (t - base_cont) * 1e-9)
    });
    result.notes.push(format!(
        "predictions replay {} (one monitored run, knobs at zero) with LogGP L={:.1} o_s={:.1} o_r={:.1} g={:.1} ns G={:.4} O={:.4} ns/B plus each knob; LogGP mode {}",
        trace.display(),
        base.L_ns,
        base.o_s_ns,
        base.o_r_ns,
        base.g_ns,
        base.G_ns_per_byte,
        base.O_ns_per_byte,
        match a.loggp_receive {
            crate::predict::LoggpReceiveArg::LastByte =>
                "with LogGP's own receive (last byte: the receiving CPU is free while the bytes travel, as the emulator slows G; --loggp-receive first-byte for LogGOPSim's)",
            crate::predict::LoggpReceiveArg::FirstByte =>
                "with LogGOPSim's receive (first byte: the receive holds the CPU while the bytes come in)",
        }
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_flags_name_only_the_set_knobs() {
        assert_eq!(
            knob_flags(&Knobs::only(Knob::L, 5000.0)),
            vec!["--L".to_string(), "5000ns".to_string()]
        );
        assert!(knob_flags(&Knobs::default()).is_empty());
    }

    /// Two pieces as `bench loggp --format json` writes them (µs), one row per size.
    const BENCH: &str = r#"{"results": [
        {"benchmark": "latency", "size_bytes": 8},
        {"benchmark": "loggp", "size_bytes": 8, "piece_from_bytes": 8, "piece_to_bytes": 512,
         "o_s_fixed_us": 0.05, "o_r_fixed_us": 0.16, "g_us": 0.12, "G_us_per_byte": 0.00024, "L_us": 0.0,
         "O_s_us_per_byte": 0.0003, "O_r_us_per_byte": 0.0001},
        {"benchmark": "loggp", "size_bytes": 512, "piece_from_bytes": 8, "piece_to_bytes": 512,
         "o_s_fixed_us": 0.05, "o_r_fixed_us": 0.16, "g_us": 0.12, "G_us_per_byte": 0.00024, "L_us": 0.0,
         "O_s_us_per_byte": 0.0003, "O_r_us_per_byte": 0.0001},
        {"benchmark": "loggp", "size_bytes": 4096, "piece_from_bytes": 4096, "piece_to_bytes": 1048576,
         "o_s_fixed_us": 1.7, "o_r_fixed_us": 1.6, "g_us": 1.6, "G_us_per_byte": 0.00006, "L_us": 0.3,
         "O_s_us_per_byte": 0.00005, "O_r_us_per_byte": 0.00007}
    ]}"#;

    #[test]
    fn the_measured_piece_is_the_one_covering_the_typical_message() {
        let p = loggp_piece(BENCH, 32).unwrap();
        assert_eq!(p.span, (8, 512));
        let [l, o_s, o_r, _, g_big, o_big] = p.values.map(Option::unwrap);
        assert!((o_s - 50.0).abs() < 1e-9 && (o_r - 160.0).abs() < 1e-9);
        assert!((g_big - 0.24).abs() < 1e-9 && l == 0.0);
        assert!((o_big - 0.2).abs() < 1e-9, "the mean of O_s and O_r");
        let p = loggp_piece(BENCH, 65536).unwrap();
        assert_eq!(p.span.0, 4096);
        assert!((p.values[0].unwrap() - 300.0).abs() < 1e-9);
        assert!((p.values[4].unwrap() - 0.06).abs() < 1e-9);
        // Between the pieces: the nearer on a log scale (1 KiB is 2× from 512, 4× from 4096).
        assert_eq!(loggp_piece(BENCH, 1024).unwrap().span, (8, 512));
        assert_eq!(loggp_piece(BENCH, 3000).unwrap().span, (4096, 1048576));
        let e = loggp_piece(r#"{"results": []}"#, 8).unwrap_err();
        assert!(e.to_string().contains("no LogGOPS piece"), "{e}");
    }

    #[test]
    fn measured_parameters_are_each_the_median_of_the_runs_that_identified_them() {
        let p = |x: f64, l: Option<f64>| Piece {
            span: (8, 512),
            values: [
                l,
                Some(2.0 * x),
                Some(100.0 - x),
                Some(x),
                Some(x / 10.0),
                Some(x / 100.0),
            ],
            notes: Vec::new(),
        };
        let m = median_loggp(&[p(1.0, None), p(9.0, Some(7.0)), p(4.0, Some(3.0))]).unwrap();
        assert_eq!((m.o_s_ns, m.o_r_ns), (8.0, 96.0));
        assert_eq!(m.L_ns, 5.0, "the median of the two runs that had L");
        assert!((m.G_ns_per_byte - 0.4).abs() < 1e-12);
        assert!((m.O_ns_per_byte - 0.04).abs() < 1e-12);
        // No run identified L: refused by name, with bench's reason.
        let mut q = p(1.0, None);
        q.notes = vec!["L is not identifiable over sizes 8 to 512: fit -0.001 µs".into()];
        let e = median_loggp(&[q, p(2.0, None)]).unwrap_err().to_string();
        assert!(
            e.contains("identified no L in any of its 2 runs: L is not identifiable"),
            "{e}"
        );
    }

    #[test]
    fn raised_adds_each_knob_to_its_own_parameter() {
        let b = LogGp {
            L_ns: 1.0,
            o_s_ns: 2.0,
            o_r_ns: 3.0,
            g_ns: 4.0,
            G_ns_per_byte: 0.5,
            O_ns_per_byte: 0.0,
        };
        let o = raised(b, Knob::O, 10.0);
        assert_eq!((o.o_s_ns, o.o_r_ns, o.L_ns, o.g_ns), (12.0, 13.0, 1.0, 4.0));
        assert_eq!(raised(b, Knob::UpperG, 0.25).G_ns_per_byte, 0.75);
        assert_eq!(raised(b, Knob::L, 7.0).L_ns, 8.0);
        assert_eq!(raised(b, Knob::LowerG, 7.0).g_ns, 11.0);
    }
}
