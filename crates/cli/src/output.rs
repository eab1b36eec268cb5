//! Where results go: stdout and/or a file, in the chosen format. Files are written to a
//! temporary name and renamed, so a full disk or a crash never leaves half a result file.

use anyhow::{Context, Result};
use clap::Args;
use commperf_core::Report;
pub use commperf_report::Format;
use std::io::Write;
use std::path::Path;

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output format: table, json, csv, md [default: table, or from the -o file's extension]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Write the results to FILE (the table still goes to stdout)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    /// Also draw O_s and O_r against message size from the loggp results (seed 004 Figure
    /// 3.6) as an SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot_loggp: Option<std::path::PathBuf>,
}

fn format_for(path: &Path) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => Format::Json,
        Some("csv") => Format::Csv,
        Some("md") => Format::Md,
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
        None => {
            let text = render(format.unwrap_or(Format::Table));
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())
                .and_then(|_| o.flush())
                .context("writing to stdout")?;
        }
        Some(path) => {
            let f = format.unwrap_or_else(|| format_for(path));
            write_atomically(path, render(f).as_bytes())?;
            print!("{}", render(Format::Table));
            eprintln!("commperf: wrote {} ({})", path.display(), f.as_str());
        }
    }
    Ok(())
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
    eprintln!("commperf: wrote {} (svg)", path.display());
    Ok(())
}

pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    // A device, pipe or socket (`-o /dev/stdout`) is written in place: renaming a temporary
    // file over it would replace the device node.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        let r = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()));
        return r.with_context(|| format!("writing {}", path.display()));
    }
    let tmp = path.with_file_name(format!(
        ".{}.tmp{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let r = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}
