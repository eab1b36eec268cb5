//! `commperf emulate sweep --knob L=0,5,10,20us [--repeat N] -- COMMAND`: Martin's (1999)
//! sensitivity study as a command. The study (settings, interleaved order, medians, slowdowns,
//! noise band, exporters), the runs of the program under the knobs and the predictions of
//! `--predict` are `commperf_emulate::sweep`; this module turns the options into a checked
//! [`SweepConfig`], shows the progress, and writes and prints the result.

use crate::output::{print, write_atomically};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use commperf_emulate::sweep::{
    PredictOptions, Setting, Statistic, SweepConfig, SweepFormat, SweepProgress, SweepResult,
    SweepSpec,
};
use commperf_emulate::{parse_knob_list, Knob};
use commperf_predict::engine::LogGp;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

// Used by the application study too; their home is the sweep's library.

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
    #[arg(long, value_name = "L=NS,o=NS,g=NS,G=NS", value_parser = commperf_predict::values::parse_loggp_params)]
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

/// The sweep's progress: a bar on a terminal, a line per run otherwise.
/// The bar is made at the first run, after the lines before the runs.
struct Progress {
    tty: bool,
    bar: Option<indicatif::ProgressBar>,
}

impl SweepProgress for Progress {
    fn before_run(&mut self, done: usize, total: usize, s: &Setting) {
        if self.tty && self.bar.is_none() {
            self.bar = Some(indicatif::ProgressBar::new(total as u64));
        }
        if let Some(b) = &self.bar {
            b.set_position(done as u64);
            b.set_message(s.label());
        } else {
            crate::say(&format!(
                "commperf: run {}/{total}: {}",
                done + 1,
                s.label()
            ));
        }
    }

    fn runs_ended(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
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

impl SweepArgs {
    /// The checked sweep these options ask for (its directory: --dir, or
    /// `commperf-sweep-<unix time>`).
    fn to_config(&self) -> Result<SweepConfig> {
        let dir = self.dir.clone().unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            PathBuf::from(format!("commperf-sweep-{t}"))
        });
        let spec = SweepSpec {
            knobs: self.knobs.clone(),
            repeat: self.repeat,
            statistic: match self.statistic {
                StatisticArg::Paired => Statistic::Paired,
                StatisticArg::Median => Statistic::Median,
            },
            command: self.command.clone(),
            interposer: self.interposer.clone(),
            timeout: self.timeout,
            dir,
            predict: self.predict.then(|| PredictOptions {
                loggp: self.loggp,
                profile: self.profile.clone(),
                eager: self.eager,
                loggp_receive: self.loggp_receive.into(),
            }),
        };
        Ok(SweepConfig::new(spec, own_mpi())?)
    }
}

pub fn run(a: &SweepArgs) -> Result<()> {
    let cfg = a.to_config()?;
    let dir = &cfg.spec().dir;
    // Output problems are reported now, before a long sweep, not at its end.
    let outs: Vec<(&str, Option<&Path>)> =
        a.out.iter().map(|p| ("-o", Some(p.as_path()))).collect();
    crate::output::preflight(&outs)?;
    let _dir_guard = crate::output::OutDir::create("--dir", dir)?;
    commperf_launch::interrupt::install();
    let exe = std::env::current_exe().context("cannot find the commperf executable")?;
    let mut progress = Progress {
        tty: std::io::stderr().is_terminal(),
        bar: None,
    };
    let result = commperf_emulate::sweep::run(&cfg, &exe, &mut progress);
    let result = result?;
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
