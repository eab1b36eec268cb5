//! `commperf gen-trace`: writes workloads of any size whose shape is known — for benchmarks of
//! the predictor, for the testbed, and for other tools (LogGOPSim reads the GOAL ones).

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use commperf_predict::gen::{self, Pattern};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenFormat {
    Own,
    Goal,
}

#[derive(Debug, Args)]
pub struct GenTraceArgs {
    /// The pattern: bcast (binomial broadcast from rank 0; GOAL), incast, alltoall, ring,
    /// halo:XxY, pairwise (the alltoall collective)
    #[arg(value_name = "PATTERN")]
    pub pattern: String,
    /// Number of ranks (for halo: X·Y)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=16_777_216))]
    pub ranks: u32,
    /// Message size (k/M/G suffixes)
    #[arg(long, value_name = "SIZE", default_value = "1k", value_parser = crate::cli::size)]
    pub bytes: u64,
    /// Repetitions (own format)
    #[arg(long, value_name = "K", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub iters: u32,
    /// Output format [default: goal for bcast, own otherwise]
    #[arg(long = "format-out", value_enum)]
    pub format: Option<GenFormat>,
    /// Write to FILE [default: stdout]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

fn pattern(s: &str, ranks: u32) -> Result<Option<Pattern>> {
    Ok(Some(match s {
        "bcast" => return Ok(None),
        "incast" => Pattern::Incast,
        "alltoall" => Pattern::AllToAll,
        "ring" => Pattern::RingShift,
        "pairwise" => Pattern::PairwiseAllToAll,
        _ => match s.strip_prefix("halo:").and_then(|d| d.split_once('x')) {
            Some((x, y)) => {
                let (x, y): (u32, u32) = (
                    x.parse().context("halo:XxY needs whole numbers")?,
                    y.parse().context("halo:XxY needs whole numbers")?,
                );
                if x as u64 * y as u64 != ranks as u64 {
                    bail!("halo:{x}x{y} needs --ranks {}", x as u64 * y as u64);
                }
                Pattern::Halo2D { x, y }
            }
            None => bail!(
                "unknown pattern `{s}` (expected bcast, incast, alltoall, ring, halo:XxY, pairwise)"
            ),
        },
    }))
}

pub fn run(a: &GenTraceArgs) -> Result<()> {
    let pat = pattern(&a.pattern, a.ranks)?;
    let format = a.format.unwrap_or(if pat.is_none() {
        GenFormat::Goal
    } else {
        GenFormat::Own
    });
    let mut sink: Box<dyn Write> = match &a.out {
        Some(p) => {
            Box::new(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut sink);
    let r = match (pat, format) {
        (None, GenFormat::Goal) => gen::goal_binomial_bcast(a.ranks, a.bytes, &mut w),
        (Some(p), GenFormat::Own) => gen::own_pattern(p, a.ranks, a.bytes, a.iters, &mut w),
        (None, GenFormat::Own) => bail!("bcast is written as GOAL only (--format-out goal)"),
        (Some(_), GenFormat::Goal) => bail!("only bcast is written as GOAL"),
    };
    r.and_then(|()| w.flush()).with_context(|| {
        a.out.as_ref().map_or("writing stdout".into(), |p| {
            format!("writing {}", p.display())
        })
    })?;
    Ok(())
}
