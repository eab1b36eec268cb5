//! `commperf app`: Kutluğ's (2000) Table 5.1 as a command. Runs programs (the NAS-pattern kit of
//! `apps/nas/`, compiled on demand with each MPI's mpicc, or any MPI command after `--`) over a
//! list of MPI stacks, each run under the monitor's interposer (the launch `commperf monitor --
//! mpirun …` uses), and prints the completion time per program × stack beside the program's
//! message profile and the stacks' MPI-layer micro-benchmark figures (`commperf bench latency bw
//! --transport mpi` under the stack's own launcher and options) at the program's dominant message
//! size, with the figure whose ordering of the stacks best matches the programs' (Spearman).
//!
//! The study itself is [`commperf_study`]'s: this module holds its options, turns them into a
//! [`StudyConfig`], runs it with the progress on stderr, and writes and prints the study.

use crate::progress::RunProgress;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use commperf_study::schema::{Study, STUDY_SCHEMA, STUDY_SCHEMA_VERSION};
use commperf_study::table::render;
use commperf_study::verdict::{Pattern, TimePattern};
use commperf_study::{ConfigError, Options, StudyConfig};
use std::path::{Path, PathBuf};

/// For `emulate sweep`'s one-line errors.

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

impl AppArgs {
    /// The study these options ask for, checked.
    pub fn to_config(&self) -> Result<StudyConfig, ConfigError> {
        StudyConfig::new(Options {
            programs: self.programs.clone(),
            stacks: self.stacks.clone(),
            np: self.np,
            repeat: self.repeat,
            args: self.args.clone(),
            out: self.out.clone(),
            html: self.html.clone(),
            cache: self.cache.clone(),
            mpich_commperf: self.mpich_commperf.clone(),
            openmpi_commperf: self.openmpi_commperf.clone(),
            no_bench: self.no_bench,
            loop_: self.loop_,
            sweep: self.sweep.clone(),
            sweep_stack: self.sweep_stack.clone(),
            mpich_apps: self.mpich_apps.clone(),
            timeout_s: self.timeout,
            time_pattern: self.time_pattern.clone(),
            success_pattern: self.success_pattern.clone(),
            failure_pattern: self.failure_pattern.clone(),
            command: self.command.clone(),
        })
    }
}

/// Runs the study and writes and prints it: under `-o DIR` its study.json (and the loop's
/// figure), the HTML page with `--html`, the tables (or the JSON) on stdout.
pub fn run(a: &AppArgs, cfg: StudyConfig) -> Result<()> {
    crate::output::preflight(&[("--html", a.html.as_deref())])?;
    let workspace = commperf_study::run::Workspace::new(cfg.out.as_deref())?;
    let root = workspace.root();
    // Ctrl-C (or SIGTERM) stops the running launch and unwinds the study, so that the clusters
    // of the network stacks and the scratch directory are removed.
    commperf_testbed::run::install_interrupt_handler();
    let mut progress = RunProgress::new();
    let study = commperf_study::run::run(&cfg, root, &mut progress)?;
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
    Ok(commperf_study::run::check_any_ran(&study)?)
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

#[cfg(test)]
mod tests {
    use commperf_pmpi::Flavour;
    use commperf_study::launch::build_hint;

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
