//! `commperf compare LOWER UPPER`: two saved result files, the same suite at a lower layer (a
//! transport) and at an upper one (MPI), compared by the report crate; this module only reads
//! the files and names them in errors.

use crate::output::{emit_with, Format};
use anyhow::{Context, Result};
use clap::Args;
use commperf_core::Report;
use commperf_report::{compare, render_comparison, Role};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results of the lower layer (a transport: shm, tcp, …), from `bench --format json`
    #[arg(value_name = "LOWER.json")]
    pub lower: PathBuf,
    /// Results of the upper layer built on it (MPI), same benchmarks and sizes
    #[arg(value_name = "UPPER.json")]
    pub upper: PathBuf,
    /// Output format: table, json, csv, md, or svg (both layers' latency and bandwidth against
    /// size) [default: table, or from the -o file's extension]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Write the comparison to FILE (the table still goes to stdout)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// A result file, with errors (unreadable, not JSON, unknown schema) prefixed by its path.
fn load(path: &Path) -> Result<Report> {
    let name = || path.display().to_string();
    let text = commperf_core::read_text(path)?;
    commperf_report::load_json(&text).with_context(name)
}

pub fn run(a: &CompareArgs) -> Result<()> {
    crate::output::preflight(&[("-o", a.out.as_deref())])?;
    let lower = load(&a.lower)?;
    let upper = load(&a.upper)?;
    let mut c = compare(&lower, &upper).map_err(|e| {
        // The error says which layer; the user knows the layer by its file.
        let file = match e.role() {
            Some(Role::Lower) => a.lower.display().to_string(),
            Some(Role::Upper) => a.upper.display().to_string(),
            None => format!("{} and {}", a.lower.display(), a.upper.display()),
        };
        anyhow::Error::new(e).context(file)
    })?;
    c.lower.source = Some(a.lower.display().to_string());
    c.upper.source = Some(a.upper.display().to_string());
    emit_with(|f| render_comparison(&c, f), a.format, a.out.as_deref())
}
