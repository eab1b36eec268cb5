//! Where results go: stdout and/or a file, in the chosen format. Files are written to a
//! temporary name and renamed, so a full disk or a crash never leaves half a result file.
//!
//! Every write to standard output goes through [`print`]: `print!` panics when the write fails
//! (`> /dev/full`), and a measuring tool that ran for minutes must end with one line saying what
//! went wrong, not a panic.

use anyhow::{Context, Result};
use clap::Args;
use commperf_core::Report;
pub use commperf_report::Format;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

pub use commperf_core::file::OutDir;

#[derive(Debug, Args)]
pub struct OutputArgs {
    #[arg(long, value_name = "FORMAT", help = format_help())]
    pub format: Option<Format>,
    /// Write the results to FILE (the table still goes to stdout)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    /// Also draw O_s and O_r against message size from the loggp results (after Kutluğ 2000,
    /// Figure 3.6) as an SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot_loggp: Option<std::path::PathBuf>,
}

fn format_help() -> String {
    format!(
        "Output format: {} [default: table, or from the -o file's extension]",
        crate::cli::names(Format::ALL)
    )
}

fn format_for(path: &Path) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => Format::Json,
        Some("csv") => Format::Csv,
        Some("md") => Format::Md,
        Some("svg") => Format::Svg,
        _ => Format::Table,
    }
}

/// Prints and/or writes `report` as asked.
pub fn emit(report: &Report, format: Option<Format>, out: Option<&Path>) -> Result<()> {
    emit_with(|f| commperf_report::render(report, f), format, out)
}

/// Prints and/or writes whatever `render` makes in a format: without `out`, `format` (default
/// table) to stdout; with it, `format` (default: from the file's extension) to the file and the
/// table to stdout.
pub fn emit_with(
    render: impl Fn(Format) -> String,
    format: Option<Format>,
    out: Option<&Path>,
) -> Result<()> {
    match out {
        None => print(&render(format.unwrap_or(Format::Table)))?,
        Some(path) => {
            let f = format.unwrap_or_else(|| format_for(path));
            write_atomically(path, render(f).as_bytes())?;
            print(&render(Format::Table))?;
            crate::say(&format!(
                "commperf: wrote {} ({})",
                path.display(),
                f.as_str()
            ));
        }
    }
    Ok(())
}

/// A write to standard output that failed. `main` prints it as one line and exits 1, except
/// for a closed pipe (`commperf … | head -1`), which ends the program quietly (exit 0): the
/// reader took what it wanted.
#[derive(Debug)]
pub struct StdoutError(pub std::io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

impl StdoutError {
    /// Whether `e` (or anything it wraps) is a write to a pipe whose reader has gone.
    pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
        e.chain().any(|c| {
            c.downcast_ref::<StdoutError>()
                .is_some_and(|s| s.0.kind() == std::io::ErrorKind::BrokenPipe)
        })
    }
}

/// Set once standard output turned out to be a pipe without a reader.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output and flushes it; a failure is a [`StdoutError`]. A pipe
/// whose reader has gone is not a failure: what follows for stdout is dropped, and the rest of
/// the work (files after the table) is still done.
pub fn print(text: &str) -> Result<()> {
    print_bytes(text.as_bytes())
}

/// [`print`] for bytes that need not be text (another process's output).
pub fn print_bytes(bytes: &[u8]) -> Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut o = std::io::stdout().lock();
    match o.write_all(bytes).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        r => r.map_err(|e| StdoutError(e).into()),
    }
}

/// The loggp figure of `report` as SVG, for `--plot-loggp path`; `source` names where the
/// results came from, so an error says which file lacked loggp results.
pub fn loggp_svg(report: &Report, path: &Path, source: &str) -> Result<String> {
    commperf_report::loggp_svg(report)
        .with_context(|| format!("--plot-loggp {}: {source}", path.display()))
}

/// Writes a figure made by [`loggp_svg`], as result files are written.
pub fn write_plot(path: &Path, svg: &str) -> Result<()> {
    write_atomically(path, svg.as_bytes())?;
    crate::say(&format!("commperf: wrote {} (svg)", path.display()));
    Ok(())
}

/// Writes a result file whole or not at all, keeping an existing file's mode, owner, links
/// and permissions ([`commperf_core::file::write_file`]).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(commperf_core::file::write_file(path, bytes)?)
}

/// Checks every output a verb will write, and standard output, before it measures anything:
/// `outputs` pairs each option with its path (None when not given). A run's results must not be
/// lost at its end for a path that was never going to work.
pub fn preflight(outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    for (flag, path) in outputs {
        if let Some(p) = path {
            commperf_core::file::check_writable(p).map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
        }
    }
    commperf_core::file::check_stdout()?;
    Ok(())
}
