//! `commperf gen-trace`: writes workloads of any size whose shape is known — for benchmarks of
//! the predictor, for the testbed, and for other tools (LogGOPSim reads the GOAL ones).

use crate::output::StdoutError;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use commperf_predict::collectives::Algorithms;
use commperf_predict::gen::{self, Pattern};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenFormat {
    /// commperf's own trace format
    Own,
    /// GOAL, LogGOPSim's schedule format
    Goal,
}

fn patterns_help() -> String {
    format!(
        "The pattern: {} (bcast: binomial broadcast from rank 0; ring: shift by one; halo: a \
         periodic X×Y grid, four neighbours; pairwise: the alltoall collective)",
        Pattern::NAMES.join(", ")
    )
}

#[derive(Debug, Args)]
pub struct GenTraceArgs {
    #[arg(value_name = "PATTERN", help = patterns_help())]
    pub pattern: String,
    /// Number of ranks (for halo: X·Y)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=16_777_216))]
    pub ranks: u32,
    /// Message size (k/M/G suffixes)
    #[arg(long, value_name = "SIZE", default_value = "1k", value_parser = crate::cli::size)]
    pub bytes: u64,
    /// Repetitions of the pattern, each starting when the rank's previous one is complete
    #[arg(long, value_name = "K", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub iters: u32,
    /// Output format [default: goal for bcast, own otherwise]
    #[arg(long = "format-out", value_enum)]
    pub format: Option<GenFormat>,
    /// Write to FILE [default: stdout]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl GenTraceArgs {
    /// The pattern, checked against `--ranks`, `--bytes` and `--iters` (a usage error
    /// otherwise, before any file is created): a workload no reader would take is refused.
    pub fn pattern(&self) -> Result<Pattern, String> {
        let p = Pattern::parse(&self.pattern, self.ranks)?;
        gen::check(p, self.ranks, self.bytes, self.iters).map_err(|e| e.to_string())?;
        Ok(p)
    }
}

pub fn run(a: &GenTraceArgs, pat: Pattern) -> Result<()> {
    crate::output::preflight(&[("-o", a.out.as_deref())])?;
    let format = a.format.unwrap_or(if pat == Pattern::Bcast {
        GenFormat::Goal
    } else {
        GenFormat::Own
    });
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, w);
        match format {
            GenFormat::Own => gen::own_pattern(pat, a.ranks, a.bytes, a.iters, &mut w)?,
            GenFormat::Goal => gen::goal_pattern(
                pat,
                a.ranks,
                a.bytes,
                a.iters,
                &Algorithms::default(),
                &mut w,
            )?,
        }
        w.flush()
    };
    match &a.out {
        // Written in place, as a generated trace can be gigabytes: a temporary copy beside it
        // would need the space twice.
        Some(p) => {
            let mut f =
                std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?;
            write(&mut f).with_context(|| format!("writing {}", p.display()))
        }
        // A reader that closes the pipe early ends the generation quietly (see `main`).
        None => write(&mut std::io::stdout().lock()).map_err(|e| StdoutError(e).into()),
    }
}
