//! `commperf app`: Kutluğ's (2000) Table 5.1 as a command. Runs programs (the NAS-pattern kit of
//! `apps/nas/`, compiled on demand with each MPI's mpicc, or any MPI command after `--`) over a
//! list of MPI stacks, each run under the monitor's interposer (the launch `commperf monitor --
//! mpirun …` uses), and prints the completion time per program × stack beside the program's
//! message profile and the stacks' MPI-layer micro-benchmark figures (`commperf bench latency bw
//! --transport mpi` under the stack's own launcher and options) at the program's dominant message
//! size, with the figure whose ordering of the stacks best matches the programs' (Spearman).

use crate::progress::RunProgress;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use commperf_bench::Progress;
use commperf_pmpi::Flavour;
use commperf_stats::median;
use commperf_study::verdict::{self, Builtin, Judge, Pattern, TimePattern};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The kit: name, source, and the arguments of the study's default (short) run. Each
/// communicating program warms up for two untimed rounds first (`warmup=2`, `nas_warmup` in
/// `nas_common.h`): the default runs time loops of a millisecond or less, and MPICH's
/// shared-memory cells, touched for the first time, cost up to half of that (pipeline on
/// mpich-shm 0.67 ms cold, 0.29 ms warm).
const KIT: &[(&str, &str, &str)] = &[
    (
        "halo",
        include_str!("../../../apps/nas/halo.c"),
        "n=64 iters=200 warmup=2",
    ),
    (
        "transpose",
        include_str!("../../../apps/nas/transpose.c"),
        "elems=1024 iters=50 p2p=1 warmup=2",
    ),
    (
        "wavefront",
        include_str!("../../../apps/nas/wavefront.c"),
        "bx=8 by=8 nz=50 iters=10 warmup=2",
    ),
    (
        "cg",
        include_str!("../../../apps/nas/cg.c"),
        "m=1024 hw=4 iters=500 dots=2 warmup=2",
    ),
    (
        "pipeline",
        include_str!("../../../apps/nas/pipeline.c"),
        "bs=128 blocks=16 iters=20 warmup=2",
    ),
    (
        "ep",
        include_str!("../../../apps/nas/ep.c"),
        "n=1048576 work=64",
    ),
];
const KIT_HEADER: &str = include_str!("../../../apps/nas/nas_common.h");

use commperf_study::schema::{
    Cell, Explanation, Micro, Profile, StackBench, Study, STUDY_SCHEMA, STUDY_SCHEMA_VERSION,
};
pub use commperf_study::stack::Stack;
use commperf_study::table::render;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AppArgs {
    #[command(subcommand)]
    pub cmd: Option<AppCmd>,
    /// Programs, comma-separated: the kit's halo, transpose, wavefront, cg, pipeline, ep, and
    /// Debian's hpcc and lammps [default: the kit's six; none when a command follows `--`]
    #[arg(long, value_name = "LIST")]
    pub programs: Option<String>,
    /// Stacks, comma-separated: ompi-shm, ompi-tcp, mpich-shm, mpich-tcp, and (root) the TCP
    /// stacks over rate-limited network namespaces, one rank per namespace: ompi-tcp@RATE,
    /// mpich-tcp@RATE (e.g. ompi-tcp@100mbit)
    #[arg(
        long,
        value_name = "LIST",
        default_value = "ompi-shm,ompi-tcp,mpich-shm,mpich-tcp"
    )]
    pub stacks: String,
    /// Ranks per run (Open MPI gets --oversubscribe when they outnumber the CPUs)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub np: u32,
    /// Runs per program and stack; the table gives their median
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// A kit program's argument instead of the study's default, as PROGRAM:NAME=VALUE
    /// (`--arg halo:iters=50`); may be repeated
    #[arg(long = "arg", value_name = "PROGRAM:NAME=VALUE")]
    pub args: Vec<String>,
    /// Directory for each run's monitor files (DIR/PROGRAM/STACK/run-K) and DIR/study.json
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the study as JSON instead of the tables
    #[arg(long)]
    pub json: bool,
    /// Also write the study as one self-contained HTML page (tables and SVG figures)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where the kit's binaries are compiled (one per program and MPI)
    /// [default: $XDG_CACHE_HOME/commperf/apps, else ~/.cache/commperf/apps]
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// A commperf built with MPICH (`MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich cargo build
    /// --release --features mpi`: target/mpich/release/commperf, beside the Open MPI build) for
    /// the MPICH stacks' micro-benchmarks (this one serves the MPI it links)
    #[arg(long, value_name = "PATH")]
    pub mpich_commperf: Option<PathBuf>,
    /// A commperf built with Open MPI for the Open MPI stacks' micro-benchmarks
    #[arg(long, value_name = "PATH")]
    pub openmpi_commperf: Option<PathBuf>,
    /// Leave out the stacks' micro-benchmarks
    #[arg(long)]
    pub no_bench: bool,
    /// Also close the loop: measure each stack's LogGP parameters (`bench loggp --transport
    /// mpi`), predict every program on every stack from its monitored trace on the reference
    /// stack (the least o_s + L + o_r), and emulate each other stack there with the knobs set to
    /// the parameters' differences (costs one more run per program, other stack and --repeat)
    #[arg(long = "loop")]
    pub loop_: bool,
    /// Also sweep each program's sensitivity to a LogGP knob (after Martin 1999) on one stack, as
    /// `commperf emulate sweep --knob` does: e.g. --sweep L=0,5,20us --sweep o=0,2us; rounds:
    /// --repeat, at least 3 (the sweep's noise band needs repeats)
    #[arg(long = "sweep", value_name = "KNOB=VALUES", value_parser = knob_list)]
    pub sweep: Vec<(commperf_emulate::Knob, Vec<f64>)>,
    /// The stack the sweeps run on [default: the first of --stacks]
    #[arg(long, value_name = "STACK")]
    pub sweep_stack: Option<String>,
    /// Where `scripts/build_mpich_apps.sh [--lammps]` put hpcc and lmp built against MPICH
    /// (DIR/bin/hpcc, DIR/bin/lmp), for hpcc and lammps on the MPICH stacks
    #[arg(long, value_name = "DIR")]
    pub mpich_apps: Option<PathBuf>,
    /// Seconds one run may take before it is stopped and reported as failed
    #[arg(long, default_value_t = 300, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub timeout: u64,
    /// The command's own time (the command after `--`): a regex matched against each line of
    /// its output, with one capture group holding seconds, or named groups among h, min, s, ms,
    /// us, ns, added up (`took (?P<ms>[0-9.]+) ms`); replaces the built-in pattern of a program
    /// recognised by its banner (NAS, LAMMPS, a kit binary). An output without it fails the cell
    #[arg(long, value_name = "REGEX", value_parser = time_pattern)]
    pub time_pattern: Option<TimePattern>,
    /// A line the command after `--` must print, else its cell fails (may be repeated; replaces
    /// the built-in ones, NAS's `Verification = SUCCESSFUL`)
    #[arg(long, value_name = "REGEX", value_parser = success_pattern)]
    pub success_pattern: Vec<Pattern>,
    /// A line that fails the cell of the command after `--` when printed (may be repeated;
    /// added to the built-in ones, NAS's `Verification = UNSUCCESSFUL`)
    #[arg(long, value_name = "REGEX", value_parser = failure_pattern)]
    pub failure_pattern: Vec<Pattern>,
    /// Any MPI program, run on every stack as `LAUNCHER -np N COMMAND…` (built for one MPI, it
    /// fails on the other's stacks, and its cells say so)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum AppCmd {
    /// Re-render a saved study (DIR or its study.json)
    Report(ReportArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Table,
    Json,
    Html,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A study directory (`commperf app -o DIR`) or its study.json
    #[arg(value_name = "DIR|FILE")]
    pub input: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Write to FILE instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

fn time_pattern(s: &str) -> Result<TimePattern, String> {
    TimePattern::new(s, "--time-pattern").map_err(|e| e.to_string())
}

fn success_pattern(s: &str) -> Result<Pattern, String> {
    Pattern::new(s, "--success-pattern").map_err(|e| e.to_string())
}

fn failure_pattern(s: &str) -> Result<Pattern, String> {
    Pattern::new(s, "--failure-pattern").map_err(|e| e.to_string())
}

fn knob_list(s: &str) -> Result<(commperf_emulate::Knob, Vec<f64>), String> {
    commperf_emulate::parse_knob_list(s).map_err(|e| e.to_string())
}

/// One program of a study.
#[derive(Debug, Clone)]
pub struct Program {
    pub name: String,
    /// The kit's source, or None for a command.
    kit: Option<&'static str>,
    /// An installed program (hpcc, lammps): `args` are its `name=value` arguments.
    installed: Option<crate::app_installed::Installed>,
    /// Kit: `name=value` arguments; command: the whole command.
    args: Vec<String>,
    /// What its output and exit must say, and where its own time is.
    pub judge: Judge,
}

impl Program {
    /// One of the kit's programs, which start their clock at the end of a barrier (the loop's
    /// window starts there); any other program's barriers say nothing of where its timed part is.
    pub(crate) fn is_kit(&self) -> bool {
        self.kit.is_some()
    }

    /// The files the program writes its results to, which its verdict reads beside its
    /// output: hpcc's `hpccoutf.txt` in its working directory.
    pub(crate) fn output_files(&self, root: &Path, s: Stack) -> Vec<PathBuf> {
        match self.installed {
            Some(crate::app_installed::Installed::Hpcc) => {
                vec![workdir(root, &self.name, s).join("hpccoutf.txt")]
            }
            _ => Vec::new(),
        }
    }
}

/// The working directory of program `name` on stack `s` (an installed program's input).
fn workdir(root: &Path, name: &str, s: Stack) -> PathBuf {
    root.join(name).join(s.name()).join("input")
}

/// The validated study.
#[derive(Debug)]
pub struct Config {
    pub programs: Vec<Program>,
    pub stacks: Vec<Stack>,
    /// Where `--sweep` runs (None: no sweep).
    pub sweep_stack: Option<Stack>,
}

impl AppArgs {
    pub fn to_config(&self) -> Result<Config, String> {
        let stacks = commperf_study::stack::parse_stacks(&split(&self.stacks).collect::<Vec<_>>())
            .map_err(|e| format!("--stacks: {e}"))?;
        if stacks.is_empty() {
            return Err("--stacks: empty list".into());
        }
        let kit_names = || KIT.iter().map(|k| k.0).collect::<Vec<_>>().join(", ");
        let installed = crate::app_installed::INSTALLED;
        let names: Vec<&str> = match &self.programs {
            Some(p) => split(p).collect(),
            None if self.command.is_empty() => KIT.iter().map(|k| k.0).collect(),
            None => Vec::new(),
        };
        let mut programs = Vec::new();
        for n in names {
            if programs.iter().any(|p: &Program| p.name == n) {
                return Err(format!("--programs: '{n}' is named twice"));
            }
            let (kit, inst, defaults) = if let Some((_, src, d)) = KIT.iter().find(|k| k.0 == n) {
                (Some(*src), None, *d)
            } else if let Some((_, i, d)) = installed.iter().find(|k| k.0 == n) {
                (None, Some(*i), *d)
            } else {
                return Err(format!(
                    "--programs: unknown program '{n}' (the kit has: {}; installed: {}; run any \
                     other after --)",
                    kit_names(),
                    installed.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
                ));
            };
            let judge = match (kit, inst) {
                (Some(_), _) => Judge::builtin(Builtin::Kit),
                (_, Some(i)) => Judge::builtin(crate::app_installed::builtin(i)),
                (None, None) => Judge::none(),
            };
            programs.push(Program {
                name: n.to_string(),
                kit,
                installed: inst,
                args: defaults.split_whitespace().map(String::from).collect(),
                judge,
            });
        }
        for a in &self.args {
            let bad = || format!("--arg {a}: expected PROGRAM:NAME=VALUE (`halo:iters=50`)");
            let (prog, kv) = a.split_once(':').ok_or_else(bad)?;
            let (k, _) = kv.split_once('=').ok_or_else(bad)?;
            if k.is_empty() {
                return Err(bad());
            }
            let Some(p) = programs.iter_mut().find(|p| p.name == prog) else {
                return Err(format!(
                    "--arg {a}: '{prog}' is not a kit program of this study (it has: {})",
                    programs
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            // The program itself checks the name and value (and refuses a bad one by name).
            p.args.retain(|x| !x.starts_with(&format!("{k}=")));
            p.args.push(kv.to_string());
        }
        if !self.command.is_empty() {
            let name = Path::new(&self.command[0])
                .file_name()
                .map_or_else(|| self.command[0].clone(), |n| n.to_string_lossy().into());
            // A command commperf does not know by name: the built-in patterns of the program
            // whose banner its output carries, under the user's.
            let user = verdict::Rules {
                time: self.time_pattern.clone(),
                success: self.success_pattern.clone(),
                failure: self.failure_pattern.clone(),
            };
            programs.push(Program {
                name,
                kit: None,
                installed: None,
                args: self.command.clone(),
                judge: Judge::recognise().with_user(user),
            });
        } else {
            let given = [
                ("--time-pattern", self.time_pattern.is_some()),
                ("--success-pattern", !self.success_pattern.is_empty()),
                ("--failure-pattern", !self.failure_pattern.is_empty()),
            ];
            if let Some((o, _)) = given.iter().find(|g| g.1) {
                return Err(format!(
                    "{o}: applies to the command after --, and none is given (the kit, hpcc and \
                     lammps have their own patterns)"
                ));
            }
        }
        if programs.is_empty() {
            return Err("--programs: empty list".into());
        }
        for p in &programs {
            if let Some(i) = p.installed {
                crate::app_installed::check_args(i, &p.args).map_err(|e| format!("--arg {e}"))?;
            }
        }
        if let Some(h) = &self.html {
            let parent = h.parent().filter(|p| !p.as_os_str().is_empty());
            if parent.is_some_and(|p| !p.is_dir()) || h.is_dir() {
                return Err(format!(
                    "--html {}: not a file in an existing directory",
                    h.display()
                ));
            }
        }
        if self.sweep_stack.is_some() && self.sweep.is_empty() {
            return Err("--sweep-stack: no --sweep to run".into());
        }
        let sweep_stack = match (&self.sweep_stack, self.sweep.is_empty()) {
            (_, true) => None,
            (None, false) => Some(stacks[0]),
            (Some(n), false) => Some(stacks.iter().copied().find(|s| s.name() == *n).ok_or_else(
                || format!("--sweep-stack {n}: not one of the study's stacks (--stacks)"),
            )?),
        };
        Ok(Config {
            programs,
            stacks,
            sweep_stack,
        })
    }
}

fn split(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

pub fn run(a: &AppArgs, cfg: Config) -> Result<()> {
    let start = Instant::now();
    crate::output::preflight(&[("--html", a.html.as_deref())])?;
    let scratch;
    let out_dir;
    let root = match &a.out {
        Some(d) => {
            out_dir = crate::monitor_mpi::prepare_dir("-o", d)?;
            out_dir.path().to_path_buf()
        }
        None => {
            scratch = TempDir::new()?;
            scratch.0.clone()
        }
    };
    let cache = a.cache.clone().unwrap_or_else(default_cache);
    // Ctrl-C (or SIGTERM) stops the running launch and unwinds the study, so that the clusters
    // of the network stacks and the scratch directory are removed.
    commperf_testbed::run::install_interrupt_handler();
    let nets = crate::app_stack::Nets::build(&cfg.stacks, a.np);
    for n in nets.notes() {
        crate::say(&format!("commperf: {n}"));
    }
    let mut progress = RunProgress::new();
    let runs = cfg.programs.len() * cfg.stacks.len() * a.repeat as usize;
    let sweeps = if cfg.sweep_stack.is_some() {
        cfg.programs.len()
    } else {
        0
    };
    let total = runs
        + sweeps
        + if a.no_bench { 0 } else { cfg.stacks.len() }
        + if a.loop_ {
            crate::app_loop::steps(&cfg, a.repeat)
        } else {
            0
        };
    // Its own `bench` and `emulate sweep` children are part of it, not disturbances
    // ([`commperf_core::disturbance`] leaves out a measurement's ancestors and descendants).
    let mut watch = commperf_core::Watch::start("app", &[]);
    let mut done = 0;
    // The loop's parameters first: its emulated runs go in the same rounds as the real ones.
    let measured = a.loop_.then(|| {
        let mut steps = crate::app_loop::Steps {
            progress: &mut progress,
            done: &mut done,
            total,
        };
        crate::app_loop::measure(a, &cfg, &nets, &root, &mut steps)
    });
    let mut cells = Vec::new();
    let mut emulations = Vec::new();
    for p in &cfg.programs {
        let mut mine: Vec<(Cell, Option<Vec<String>>, Vec<f64>)> = Vec::new();
        for &s in &cfg.stacks {
            let mut cell = Cell {
                program: p.name.clone(),
                stack: s.name(),
                error: None,
                failures: Vec::new(),
                time_s: None,
                time_source: None,
                time_pattern: None,
                times_s: Vec::new(),
                wall_s: None,
                profile: None,
                micro: None,
                monitor_dirs: Vec::new(),
                notes: Vec::new(),
                run_states_ns: Vec::new(),
            };
            let command = match launch_of(a, &nets, p, s, &cache, &root) {
                Ok(c) => Some(c),
                Err(e) => {
                    cell.error = Some(format!("{e:#}"));
                    done += a.repeat as usize;
                    None
                }
            };
            mine.push((cell, command, Vec::new()));
        }
        // Planned after the first round's runs: the knobs come from the pieces covering the
        // program's typical message on the reference, known from its first monitored run.
        let mut emus: Vec<crate::app_loop::EmuRuns> = Vec::new();
        // Rounds: each stack once, then each emulation once; load that drifts over the study
        // (the machine is shared) then reaches every stack's runs alike.
        for k in 0..a.repeat {
            for (&s, (cell, command, walls)) in cfg.stacks.iter().zip(&mut mine) {
                let Some(command) = command else { continue };
                if cell.error.is_some() {
                    continue;
                }
                let label = format!("{} on {} (run {}/{})", p.name, s.name(), k + 1, a.repeat);
                // Between runs nothing of ours spins: measurements started since, the run queue.
                watch.check();
                progress.update(&label, done, total);
                let dir = root.join(&p.name).join(s.name()).join(format!("run-{k}"));
                let r = monitored_run(
                    command,
                    a.np,
                    &dir,
                    Duration::from_secs(a.timeout),
                    &[],
                    p.kit.is_some(),
                    &Verdict {
                        judge: &p.judge,
                        files: &p.output_files(&root, s),
                    },
                );
                if commperf_testbed::run::interrupted() {
                    progress.finish();
                    bail!("interrupted: the study stopped during {label}");
                }
                done += 1;
                progress.finished(&label, done, total);
                cell.monitor_dirs.push(dir);
                match r {
                    Ok(run) => {
                        if let Some(n) = run.note {
                            cell.notes.push(format!("run {}: {n}", k + 1));
                        }
                        if cell.profile.is_none() {
                            cell.profile = Some(run.profile);
                        }
                        // Every run of a program has the same rules: a time pattern gives
                        // each run its time or fails it, so a cell never mixes the two.
                        cell.time_source = Some(
                            if run.program_s.is_some() {
                                "program"
                            } else {
                                "wall"
                            }
                            .into(),
                        );
                        cell.time_pattern = run.time_pattern;
                        cell.times_s.push(run.program_s.unwrap_or(run.wall_s));
                        cell.run_states_ns.push(run.state_ns);
                        walls.push(run.wall_s);
                    }
                    Err(e) => {
                        cell.error = Some(format!("{e:#}"));
                        cell.failures = e
                            .downcast_ref::<verdict::Failed>()
                            .map(|f| f.failures.clone())
                            .unwrap_or_default();
                        done += (a.repeat - k - 1) as usize;
                    }
                }
            }
            if let Some(m) = &measured {
                if k == 0 {
                    let size = m
                        .reference()
                        .and_then(|ri| mine.get(ri))
                        .and_then(|(cell, _, _)| cell.profile.as_ref())
                        .and_then(|p| p.dominant_mean_bytes);
                    emus = crate::app_loop::plan(a, p, &cfg, m, &nets, &root, &cache, size);
                }
                let mut steps = crate::app_loop::Steps {
                    progress: &mut progress,
                    done: &mut done,
                    total,
                };
                for e in &mut emus {
                    crate::app_loop::emulate_round(a, p, m, &cfg, e, k, &root, &mut steps);
                    if commperf_testbed::run::interrupted() {
                        steps.progress.finish();
                        bail!(
                            "interrupted: the study stopped during the emulations of {}",
                            p.name
                        );
                    }
                }
            }
        }
        for (mut cell, _, walls) in mine {
            if cell.error.is_none() {
                cell.time_s = median(&cell.times_s);
                cell.wall_s = median(&walls);
            }
            cells.push(cell);
        }
        emulations.push(emus);
    }
    let mut benches = Vec::new();
    if !a.no_bench {
        // Every stack is measured at every program's dominant size (the mean size of the bin
        // with the most messages).
        let mut sizes: Vec<u64> = cells
            .iter()
            .filter_map(|c| c.profile.as_ref()?.dominant_mean_bytes)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        for &s in &cfg.stacks {
            let label = format!("micro-benchmarks on {}", s.name());
            progress.update(&label, done, total);
            let b = match nets.check(s) {
                Ok(()) => stack_bench(a, s, &sizes, &root),
                Err(e) => StackBench {
                    stack: s.name(),
                    error: Some(e),
                    note: None,
                    file: None,
                    figures: Vec::new(),
                },
            };
            if commperf_testbed::run::interrupted() {
                progress.finish();
                bail!("interrupted: the study stopped during {label}");
            }
            done += 1;
            progress.finished(&label, done, total);
            benches.push(b);
        }
        for c in &mut cells {
            let (Some(size), Some(b)) = (
                c.profile.as_ref().and_then(|p| p.dominant_mean_bytes),
                benches.iter().find(|b| b.stack == c.stack),
            ) else {
                continue;
            };
            c.micro = b.figures.iter().find(|m| m.size_bytes == size).cloned();
        }
    }
    let loop_study = measured.map(|m| crate::app_loop::finish(&cfg, &cells, m, emulations));
    let mut sensitivity = Vec::new();
    if let Some(s) = cfg.sweep_stack {
        for p in &cfg.programs {
            let label = format!("sensitivity of {} on {} (emulate sweep)", p.name, s.name());
            progress.update(&label, done, total);
            let r = launch_of(a, &nets, p, s, &cache, &root).and_then(|c| {
                crate::app_sweep::sweep(
                    &c,
                    &a.sweep,
                    a.repeat.max(3),
                    Duration::from_secs(a.timeout),
                    &root.join(&p.name).join(s.name()).join("sweep"),
                )
            });
            if commperf_testbed::run::interrupted() {
                progress.finish();
                bail!("interrupted: the study stopped during {label}");
            }
            done += 1;
            progress.finished(&label, done, total);
            let (sweep, error) = match r {
                Ok(r) => (Some(r), None),
                Err(e) => (None, Some(format!("{e:#}"))),
            };
            sensitivity.push(commperf_study::schema::Sensitivity {
                program: p.name.clone(),
                stack: s.name(),
                error,
                sweep,
            });
        }
    }
    progress.finish();
    let explanations = cfg
        .programs
        .iter()
        .map(|p| Explanation::of(&p.name, &cells, a.no_bench))
        .collect();
    let study = Study {
        schema: STUDY_SCHEMA.into(),
        schema_version: STUDY_SCHEMA_VERSION,
        np: a.np,
        repeat: a.repeat,
        programs: cfg.programs.iter().map(|p| p.name.clone()).collect(),
        stacks: cfg.stacks.iter().map(|s| s.name()).collect(),
        wall_time_s: start.elapsed().as_secs_f64(),
        oversubscribed: oversubscribed(a.np),
        cells,
        benches,
        explanations,
        loop_study,
        sensitivity,
        disturbance: watch.finish(),
    };
    if let (Some(l), Some(_)) = (&study.loop_study, &a.out) {
        let path = root.join("loop.svg");
        crate::output::write_atomically(&path, commperf_study::html::loop_svg(l).as_bytes())?;
        crate::say(&format!("commperf: wrote {}", path.display()));
    }
    let json = serde_json::to_string_pretty(&study)? + "\n";
    if a.out.is_some() {
        let path = root.join("study.json");
        crate::output::write_atomically(&path, json.as_bytes())?;
        crate::say(&format!("commperf: wrote {}", path.display()));
    }
    if let Some(h) = &a.html {
        crate::output::write_atomically(h, commperf_study::html::page(&study).as_bytes())?;
        crate::say(&format!("commperf: wrote {}", h.display()));
    }
    if a.json {
        crate::output::print(&json)?;
    } else {
        crate::output::print(&render(&study))?;
    }
    if study.cells.iter().all(|c| c.error.is_some()) {
        bail!("every run of the study failed (the cells above say why)");
    }
    Ok(())
}

/// `app report`: a saved study as the tables, JSON or the HTML page.
pub fn report(r: &ReportArgs) -> Result<()> {
    let study = load_study(&r.input)?;
    let text = match r.format {
        ReportFormat::Table => render(&study),
        ReportFormat::Json => serde_json::to_string_pretty(&study)? + "\n",
        ReportFormat::Html => commperf_study::html::page(&study),
    };
    match &r.out {
        Some(p) => crate::output::write_atomically(p, text.as_bytes()),
        None => crate::output::print(&text),
    }
}

/// A study saved by `app -o DIR`: DIR/study.json, or the file itself.
pub fn load_study(input: &Path) -> Result<Study> {
    let file = if input.is_dir() {
        input.join("study.json")
    } else {
        input.to_path_buf()
    };
    let text = commperf_core::read_text(&file)?;
    let mut v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not JSON (truncated or corrupt?)", file.display()))?;
    if v["schema"] != STUDY_SCHEMA {
        bail!(
            "{}: not a commperf app study (schema {}, expected {STUDY_SCHEMA})",
            file.display(),
            v["schema"]
        );
    }
    let found = v["schema_version"].clone();
    if commperf_formats::upgrade(commperf_formats::Kind::Study, &mut v).is_err() {
        bail!(
            "{}: study schema_version {}, this commperf reads 1 to {STUDY_SCHEMA_VERSION}",
            file.display(),
            found
        );
    }
    serde_json::from_value(v).with_context(|| format!("{}: not a complete study", file.display()))
}

/// What running more ranks than CPUs does to the stacks, which the 2-rank micro-benchmarks
/// cannot show.
fn oversubscribed(np: u32) -> Option<String> {
    let cpus = commperf_transport::affinity::allowed_cpus().len();
    (np as usize > cpus).then(|| {
        format!(
            "{np} ranks on {cpus} CPUs: Open MPI's ranks yield the CPU while they wait \
             (--oversubscribe), MPICH's keep polling, so MPICH's times include waiting for a CPU; \
             the micro-benchmarks (2 ranks) do not see that"
        )
    })
}

/// A directory removed when dropped (the runs' monitor files when no `-o DIR` keeps them).
struct TempDir(PathBuf);
impl TempDir {
    fn new() -> Result<TempDir> {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!("commperf-app-{}-{t}", std::process::id()));
        std::fs::create_dir_all(&p).with_context(|| format!("cannot create {}", p.display()))?;
        Ok(TempDir(p))
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn default_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("commperf").join("apps")
}

/// The launch of program `p` on stack `s` (kit, installed or command), or why it cannot run
/// there (its network was not built, its build failed, no binary for that MPI).
pub(crate) fn launch_of(
    a: &AppArgs,
    nets: &crate::app_stack::Nets,
    p: &Program,
    s: Stack,
    cache: &Path,
    root: &Path,
) -> Result<Vec<String>> {
    nets.check(s).map_err(anyhow::Error::msg)?;
    match p.installed {
        Some(i) => crate::app_installed::command(
            i,
            &p.args,
            s,
            a.np,
            a.mpich_apps.as_deref(),
            &workdir(root, &p.name, s),
        ),
        None => command_for(p, s, a.np, cache),
    }
}

/// The full launch of program `p` on stack `s`: the kit's program compiled for the stack's MPI.
pub(crate) fn command_for(p: &Program, s: Stack, np: u32, cache: &Path) -> Result<Vec<String>> {
    let mut cmd = s.launch(np);
    match p.kit {
        Some(src) => {
            let bin = compile(&p.name, src, s, cache)?;
            cmd.push(bin.display().to_string());
            cmd.extend(p.args.iter().cloned());
        }
        None => cmd.extend(p.args.iter().cloned()),
    }
    Ok(cmd)
}

/// Compiles a kit program with the stack's mpicc into the cache (once per source and MPI: the
/// file name carries a hash of the sources).
fn compile(name: &str, src: &str, s: Stack, cache: &Path) -> Result<PathBuf> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (src, KIT_HEADER).hash(&mut h);
    let flavour = match s.flavour() {
        Flavour::OpenMpi => "openmpi",
        _ => "mpich",
    };
    let bin = cache.join(format!("{name}-{flavour}-{:016x}", h.finish()));
    if bin.is_file() {
        return Ok(bin);
    }
    std::fs::create_dir_all(cache)
        .with_context(|| format!("cannot create the cache directory {}", cache.display()))?;
    let dir = cache.join(format!("src-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).with_context(|| format!("cannot write {}", c.display()))?;
    std::fs::write(dir.join("nas_common.h"), KIT_HEADER)
        .with_context(|| format!("cannot write {}", dir.display()))?;
    let tmp = dir.join(name);
    let o = Command::new(s.compiler())
        .args(["-O2", "-I"])
        .arg(&dir)
        .arg("-o")
        .arg(&tmp)
        .arg(&c)
        .output();
    let r = match o {
        Err(e) => Err(anyhow::anyhow!(
            "cannot run {} to build {name}: {e} (install {}'s development package)",
            s.compiler(),
            s.flavour().name()
        )),
        Ok(o) if !o.status.success() => Err(anyhow::anyhow!(
            "{} {name}.c failed: {}",
            s.compiler(),
            last_lines(&o.stderr, 3)
        )),
        Ok(_) => std::fs::rename(&tmp, &bin)
            .with_context(|| format!("cannot move {} to {}", tmp.display(), bin.display())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    r.map(|()| bin)
}

/// The last `n` non-empty lines of a program's output, joined by ` | ` (for one-line errors).
pub(crate) fn last_lines(b: &[u8], n: usize) -> String {
    let t = String::from_utf8_lossy(b);
    let v: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(n)..].join(" | ")
}

pub(crate) struct RunResult {
    pub wall_s: f64,
    pub note: Option<String>,
    /// The program's own time, and the pattern that found it.
    pub program_s: Option<f64>,
    pub time_pattern: Option<String>,
    pub profile: Profile,
    /// The machine's state over the run ([`commperf_emulate::state::around`], ns).
    pub state_ns: Option<f64>,
}

/// How a run is judged: the program's [`Judge`] and the files it writes its results to.
pub(crate) struct Verdict<'a> {
    pub judge: &'a Judge,
    pub files: &'a [PathBuf],
}

/// One monitored run: the command under the interposer (as `commperf monitor -o DIR -- …`),
/// with `extra` variables beside the monitor's (the loop's emulation knobs). `timed_loop`: the
/// program times a loop from the end of its last MPI_Barrier (the kit's programs), and its
/// profile is of that window. A run the verdict fails is an error holding
/// [`verdict::Failed`].
pub(crate) fn monitored_run(
    command: &[String],
    np: u32,
    dir: &Path,
    timeout: Duration,
    extra: &[(String, String)],
    timed_loop: bool,
    verdict: &Verdict<'_>,
) -> Result<RunResult> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    crate::monitor_mpi::clear_rank_files(dir)?;
    // hpcc appends to its hpccoutf.txt: an earlier run's results must not be judged as this
    // one's.
    for f in verdict.files {
        match std::fs::remove_file(f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", f.display()))
            }
            _ => {}
        }
    }
    let dir = std::fs::canonicalize(dir)?;
    let plan = commperf_launch::preload::plan(command, None)?;
    let preload = plan.preload()?;
    let mut vars = vec![
        ("LD_PRELOAD".to_string(), preload),
        ("COMMPERF_PMPI_DIR".to_string(), dir.display().to_string()),
        ("COMMPERF_PMPI_TAG".to_string(), String::new()),
    ];
    vars.extend(extra.iter().cloned());
    let mut cmd = plan.command(command, &vars);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Done: every rank's monitor file is complete (the interposer writes it in MPI_Finalize,
    // before the library's own finalization).
    let all_finalized = || {
        crate::monitor_mpi::load(&dir)
            .is_ok_and(|(s, _)| !s.cut_short && s.missing_ranks.is_empty() && s.ranks == np)
    };
    let ((finished, wall_s), state_ns) = commperf_emulate::state::around(|| {
        let t0 = Instant::now();
        let r = run_with_timeout(cmd, timeout, &all_finalized);
        (r, t0.elapsed().as_secs_f64())
    });
    let (status, out, err, after) =
        finished.with_context(|| format!("cannot run {}", command[0]))?;
    std::fs::write(dir.join("stdout.txt"), &out)?;
    std::fs::write(dir.join("stderr.txt"), &err)?;
    let text = String::from_utf8_lossy(&out);
    let note = after.then(|| {
        "stopped 10 s after every rank had finalized its monitor file (MPI_Finalize did not \
         return)"
            .to_string()
    });
    // A run stopped after its results has no exit status to judge (None).
    let status = match status {
        Some(st) => Some(verdict::Status::from(st)),
        None if after => None,
        None => bail!("stopped after {} s (--timeout)", timeout.as_secs()),
    };
    let mut files = Vec::new();
    for f in verdict.files {
        // A file the program did not write is judged empty: its patterns name what is missing.
        let t = std::fs::read(f).unwrap_or_default();
        if let Some(name) = f.file_name() {
            std::fs::write(dir.join(name), &t)?;
        }
        files.push((
            f.file_name().map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            String::from_utf8_lossy(&t).into_owned(),
        ));
    }
    let errtext = String::from_utf8_lossy(&err);
    let output = verdict::Output {
        files: files
            .iter()
            .map(|(name, text)| verdict::Text { name, text })
            .collect(),
        stdout: &text,
        stderr: &errtext,
        status,
    };
    let passed = verdict.judge.judge(&output)?;
    let mut run = commperf_pmpi::read_dir(&dir).with_context(|| {
        "the interposer recorded nothing: the program does not use MPI, or not the stack's MPI"
    })?;
    let s = commperf_pmpi::summarize(&run);
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&s)?)?;
    if s.cut_short {
        bail!(
            "the monitor's record is cut short (ranks {:?} never reached MPI_Finalize)",
            s.unfinished_ranks
        );
    }
    // A kit program's profile is its timed loop's (its warm-up and set-up before the barrier
    // that starts it left out), the part the study times and the loop replays.
    let profile = if timed_loop && crate::app_loop::window(&mut run) {
        let mut p = Profile::of(&commperf_pmpi::summarize(&run));
        p.from_barrier = true;
        p
    } else {
        Profile::of(&s)
    };
    Ok(RunResult {
        wall_s,
        program_s: passed.time.as_ref().map(|t| t.seconds),
        time_pattern: passed.time.map(|t| t.pattern),
        profile,
        note,
        state_ns,
    })
}

/// How a command ended: its status (None: stopped), stdout, stderr, and whether it was stopped
/// after writing its results.
type Finished = (Option<std::process::ExitStatus>, Vec<u8>, Vec<u8>, bool);

/// Runs `cmd` (stdout and stderr piped) for at most `timeout`; None: it was stopped (SIGTERM to
/// the launcher, which passes it on to the ranks; SIGKILL 10 s later).
///
/// `done`: whether the command's work is complete (checked once a second); when it has been for
/// 10 s and the command still runs (MPICH 4.0.2 over UCX's TCP transport was seen spinning in
/// MPI_Finalize for minutes after the ranks had written everything), the command is stopped the
/// same way and the last element says so.
fn run_with_timeout(
    mut cmd: Command,
    timeout: Duration,
    done: &dyn Fn() -> bool,
) -> Result<Finished> {
    use std::io::Read;
    let mut shm = commperf_launch::run_dir::RunDir::ompi(&mut cmd)?;
    let mut child = commperf_launch::interrupt::die_with_parent(&mut cmd).spawn()?;
    shm.launched(child.id());
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|x| Box::new(x) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|x| Box::new(x) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    let mut status = None;
    let mut termed: Option<Instant> = None;
    let mut results_seen: Option<Instant> = None;
    let mut after_results = false;
    let mut checked = Instant::now();
    loop {
        if let Some(st) = child.try_wait()? {
            if termed.is_none() {
                status = Some(st);
            }
            break;
        }
        if results_seen.is_none() && checked.elapsed() > Duration::from_secs(1) {
            checked = Instant::now();
            if done() {
                results_seen = Some(checked);
            }
        }
        let hung = results_seen.is_some_and(|t| t.elapsed() > Duration::from_secs(10));
        if termed.is_none() && hung {
            after_results = true;
        }
        let stop = t0.elapsed() > timeout || hung || commperf_testbed::run::interrupted();
        if termed.is_none() && stop {
            // SAFETY: kill on our own child's pid.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            termed = Some(Instant::now());
        }
        if termed.is_some_and(|t| t.elapsed() > Duration::from_secs(10)) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    Ok((status, out, err, after_results))
}

/// The commperf that measures the stack's MPI layer: the one given for its MPI, else this one
/// when it links that MPI.
fn bench_binary(a: &AppArgs, f: Flavour) -> Result<PathBuf> {
    let given = match f {
        Flavour::OpenMpi => &a.openmpi_commperf,
        _ => &a.mpich_commperf,
    };
    if let Some(p) = given {
        return Ok(p.clone());
    }
    if !commperf_mpi::AVAILABLE {
        bail!("{}", commperf_mpi::NOT_BUILT);
    }
    let exe = std::env::current_exe().context("locate the commperf binary")?;
    match commperf_launch::preload::program_flavour(&exe) {
        Some((mine, _)) if mine == f => Ok(exe),
        mine => bail!(
            "this commperf links {}, not {}: {}",
            mine.map_or("no MPI", |m| m.0.name()),
            f.name(),
            build_hint(f)
        ),
    }
}

/// How to build a commperf that links `f`'s MPI and give it to `app`: each MPI in a target
/// directory of its own (`CARGO_TARGET_DIR`), so that building one does not overwrite the
/// binary built with the other, which the other stacks use.
pub(crate) fn build_hint(f: Flavour) -> String {
    let key = f.key();
    format!(
        "build one with `MPICC=mpicc.{key} CARGO_TARGET_DIR=target/{key} cargo build --release \
         --features mpi` and give it as `--{key}-commperf target/{key}/release/commperf`"
    )
}

/// `commperf bench ARGS --format json -o FILE` with 2 ranks under the stack's launch, by the
/// commperf that links the stack's MPI; returns a note when the launch had to be stopped after
/// the bench wrote its results.
pub(crate) fn launch_bench(
    a: &AppArgs,
    s: Stack,
    bench_args: &[String],
    file: &Path,
) -> Result<Option<String>> {
    let exe = bench_binary(a, s.flavour())?;
    let mut cmd = s.launch(2);
    cmd.push(exe.display().to_string());
    cmd.push("bench".into());
    cmd.extend(bench_args.iter().cloned());
    cmd.extend(["--format".into(), "json".into(), "-o".into()]);
    cmd.push(file.display().to_string());
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let _ = std::fs::remove_file(file);
    let (status, _, err, after) =
        run_with_timeout(c, Duration::from_secs(a.timeout), &|| file.is_file())?;
    let note = after.then(|| {
        "the launch was stopped 10 s after the bench wrote its results (MPI_Finalize did \
         not return)"
            .to_string()
    });
    match status {
        None if after => {}
        None => bail!("stopped after {} s (--timeout)", a.timeout),
        Some(st) if !st.success() => {
            bail!(
                "{} exited with {st}: {}",
                cmd.join(" "),
                last_lines(&err, 2)
            )
        }
        Some(_) => {}
    }
    Ok(note)
}

/// `commperf bench latency bw --transport mpi` with 2 ranks under the stack's launch.
fn stack_bench(a: &AppArgs, s: Stack, sizes: &[u64], root: &Path) -> StackBench {
    let mut b = StackBench {
        stack: s.name(),
        error: None,
        note: None,
        file: None,
        figures: Vec::new(),
    };
    if sizes.is_empty() {
        b.error = Some("no program sent a point-to-point message: nothing to measure".into());
        return b;
    }
    let mut note = None;
    let r = (|| -> Result<(PathBuf, Vec<Micro>)> {
        let file = root.join(format!("bench-{}.json", s.name()));
        let sizes = sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let args = ["latency", "bw", "--transport", "mpi", "--sizes", &sizes].map(String::from);
        note = launch_bench(a, s, &args, &file)?;
        let text = commperf_core::read_text(&file)?;
        let rep = commperf_report::load_json(&text).with_context(|| file.display().to_string())?;
        let mut figures = Vec::new();
        for size in sizes.split(',').filter_map(|x| x.parse::<u64>().ok()) {
            let row = |bm: commperf_core::Benchmark| {
                rep.results
                    .iter()
                    .find(|r| r.benchmark == bm && r.size_bytes == size)
            };
            let (Some(lat), Some(bw)) = (
                row(commperf_core::Benchmark::Latency).and_then(|r| r.p50_us),
                row(commperf_core::Benchmark::Bw),
            ) else {
                continue;
            };
            let (Some(mbps), Some(rate)) = (bw.mb_per_s, bw.msgs_per_s) else {
                continue;
            };
            figures.push(Micro {
                size_bytes: size,
                latency_us: lat,
                bandwidth_mb_per_s: mbps,
                gap_us: 1e6 / rate,
            });
        }
        Ok((file, figures))
    })();
    b.note = note;
    match r {
        Ok((file, figures)) => {
            b.file = a.out.is_some().then_some(file);
            b.figures = figures;
        }
        Err(e) => b.error = Some(format!("{e:#}")),
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hint for a commperf of the other MPI: its own target directory per MPI (the MPICH
    /// build must not overwrite the Open MPI one), and an option that exists, given the path
    /// the build writes.
    #[test]
    fn the_build_hint_keeps_each_mpis_binary_apart() {
        use clap::Parser;
        let (ompi, mpich) = (build_hint(Flavour::OpenMpi), build_hint(Flavour::Mpich));
        assert_eq!(
            mpich,
            "build one with `MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich cargo build \
             --release --features mpi` and give it as `--mpich-commperf \
             target/mpich/release/commperf`"
        );
        assert!(
            ompi.contains("MPICC=mpicc.openmpi CARGO_TARGET_DIR=target/openmpi "),
            "{ompi}"
        );
        let mut dirs = Vec::new();
        for hint in [&ompi, &mpich] {
            let parts: Vec<&str> = hint.split('`').collect();
            let (build, option) = (parts[1], parts[3]);
            let dir = build
                .split_whitespace()
                .find_map(|w| w.strip_prefix("CARGO_TARGET_DIR="))
                .unwrap();
            dirs.push(dir);
            // The binary the build writes is the one the option gives.
            assert!(
                option.ends_with(&format!(" {dir}/release/commperf")),
                "{hint}"
            );
            let mut argv = vec!["commperf", "app"];
            argv.extend(option.split_whitespace());
            crate::cli::Cli::try_parse_from(&argv)
                .unwrap_or_else(|e| panic!("{argv:?}: {}", crate::cli::one_line(&e)));
        }
        assert_eq!(dirs, ["target/openmpi", "target/mpich"]);
    }
}
