//! `commperf emulate calibrate`: Martin's (1999) calibration of the LogGP knobs on a real
//! transport. The options and the output are here; the measurement and the judging are
//! [`commperf_emulate::calibrate`] (its doc says how), and the peer process
//! (`__emulate-peer`) is its [`peer`](commperf_emulate::calibrate::peer).

use crate::output::{print, write_atomically};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use commperf_core::{Mode, TransportKind};
use commperf_emulate::calibrate::{self as cal, CalibrateConfig};
use commperf_emulate::{parse_knob_list, Knob};
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EmulateArgs {
    #[command(subcommand)]
    pub cmd: Option<EmulateCmd>,
    /// Without a subcommand: an unmodified MPI program under the knobs (`emulate_mpi`)
    #[command(flatten)]
    pub run: crate::emulate_mpi::RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum EmulateCmd {
    /// Set each knob alone to each value on a local pair of processes, measure LogGP (PRTT), and
    /// judge whether it moves only its own parameter, by the set amount
    Calibrate(CalibrateArgs),
    /// Run a program at each setting of each knob (the sensitivity study of Martin 1999) and
    /// report its slowdown per setting; with --predict, beside what `predict` expects
    Sweep(Box<crate::emulate_sweep::SweepArgs>),
}

/// One `--knob` value, read by the library's parser so that the CLI and the library refuse
/// the same things with the same words.
fn knob_list(s: &str) -> Result<(Knob, Vec<f64>), String> {
    parse_knob_list(s).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Transport: shm, tcp, uds, uring-tcp, uring-uds
    #[arg(short = 't', long, default_value = "shm")]
    pub transport: TransportKind,
    /// Completion mode: poll or block
    #[arg(long, default_value = "poll")]
    pub mode: Mode,
    /// A knob and its values, e.g. o=0,1,2,5us (G in ns per byte: G=0,0.5); repeat for more
    /// knobs. Default: o=0,1,2,5us g=0,1,2,5us G=0,0.5 L=0,5,20us
    #[arg(long = "knob", value_name = "KNOB=VALUES", value_parser = knob_list)]
    pub knobs: Vec<(Knob, Vec<f64>)>,
    /// Message sizes of the PRTT fit (one protocol piece: at most five sizes, each at most 1G)
    #[arg(long, default_value = "64,256,1k,4k,16k", value_parser = crate::cli::bounded_sizes)]
    pub sizes: String,
    /// Timed repetitions of each PRTT figure (at most 10^8)
    #[arg(long, default_value_t = 1000, value_parser = crate::cli::iters)]
    pub iters: u64,
    /// Rounds: every setting and every baseline is measured this many times, interleaved
    /// (round after round), and judged by its median; the spread is reported
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Messages per configuration of the knobs-at-zero cost check (0: skip it; at most 10^8)
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(0..=commperf_bench::MAX_ITERS))]
    pub cost_iters: u64,
    /// Write the calibration as JSON to FILE (the table is still printed)
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    pub out: Option<PathBuf>,
}

pub fn run(a: &EmulateArgs) -> Result<()> {
    match &a.cmd {
        Some(EmulateCmd::Calibrate(c)) => calibrate(c),
        Some(EmulateCmd::Sweep(s)) => crate::emulate_sweep::run(s),
        None => crate::emulate_mpi::run(&a.run),
    }
}

fn calibrate(c: &CalibrateArgs) -> Result<()> {
    crate::output::preflight(&[("-o", c.out.as_deref())])?;
    if c.transport == TransportKind::Mpi {
        return crate::emulate_mpi::calibrate(c);
    }
    let sizes = commperf_core::parse_sizes(&c.sizes).context("--sizes")?;
    let cfg = CalibrateConfig::new(
        c.transport,
        c.mode,
        &sizes,
        c.iters,
        c.repeat,
        c.cost_iters,
        &c.knobs,
    )?;
    let cal = cal::calibrate(&cfg)?;
    if let Some(path) = &c.out {
        write_atomically(
            path,
            (serde_json::to_string_pretty(&cal)? + "\n").as_bytes(),
        )?;
    }
    print(&cal.render())
}

/// The hidden `__emulate-peer` process: the other end of a calibration's pair.
pub fn peer() -> Result<()> {
    Ok(cal::peer()?)
}
