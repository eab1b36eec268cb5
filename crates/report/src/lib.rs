//! Exporters for commperf results: every [`Report`] can be rendered as an aligned text table
//! (the default, OSU style), Markdown, CSV or JSON, and a saved JSON file can be read back with
//! [`load_json`] and rendered again (`commperf report`).
//!
//! The crate needs only `commperf-core`, so results can be re-rendered without any transport.
//! As in hyperfine's `export/`, every tabular format goes through one [`Table`] with three
//! renderers, so column names, order and number formatting are decided in one place per format:
//!
//! * **table** — `#` machine lines (CPU, timer, placement, physical limits), then one block per
//!   (benchmark, transport, mode) in the order the rows appear, each under a
//!   `# commperf latency | transport shm | mode poll` comment and a `# Size …` column header, so
//!   the output is both readable and loadable by gnuplot. Latencies in µs with 3 decimals below
//!   10 µs and 2 above, MB/s with 2 decimals, msgs/s as an integer, efficiency as a percent;
//!   absent figures are `-`.
//! * **md** — the same blocks under `##` headings as pipe tables; machine lines as a bullet list.
//! * **csv** — one flat table of every row with every field (named as in the JSON), empty cells
//!   for absent figures, numbers at full precision.
//! * **json** — the [`Report`] itself, pretty-printed.
//! * **svg** — a figure rather than a table: latency and bandwidth against message size
//!   ([`bench_svg`]; for a comparison, both layers' curves).
//!
//! Every figure is drawn by one chart layer, [`plot`]. Loggp results also have a figure of
//! their own, Kutluğ's Figure 3.6 (o_s and o_r against size, per transport and mode): a small
//! ASCII chart after each loggp block of the table format, and a standalone SVG document from
//! [`loggp_svg`].
//!
//! Two reports of the same suite, one measured at a lower layer (a transport) and one at an
//! upper layer (MPI), can be compared point by point with [`compare`] and the result rendered in
//! the same formats with [`render_comparison`] (`commperf compare`, after Kutluğ's chapter 4).
//!
//! Kutluğ: N. S. Kutluğ, "Performance Evaluation and Analysis of User Level Networking
//! Protocols in Clusters", MS thesis, The Ohio State University, 2000.

mod blocks;
mod compare;
mod csv;
pub mod plot;
pub mod svg;
mod table;
pub mod timeline;
pub mod units;

pub use compare::{
    compare, render_comparison, BenchmarkComparison, CompareError, Comparison, LayerInfo,
    NotCompared, Point, ProtocolChange, Role, COMPARE_SCHEMA_VERSION,
};
pub use plot::{bench_svg, loggp_svg, PlotError};
pub use table::{Align, Table};

use commperf_core::{Report, UnknownName, SCHEMA_VERSION};
use std::fmt;
use std::str::FromStr;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// Aligned text, one block per benchmark × transport × mode (the default).
    #[default]
    Table,
    /// The result schema, pretty-printed.
    Json,
    /// One flat table of all rows.
    Csv,
    /// Markdown headings and pipe tables.
    Md,
    /// A figure: latency and bandwidth against message size (SVG).
    Svg,
}

impl Format {
    /// Every format, in the order they are listed to users.
    pub const ALL: &'static [Format] = &[
        Format::Table,
        Format::Json,
        Format::Csv,
        Format::Md,
        Format::Svg,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Md => "md",
            Format::Svg => "svg",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Format, UnknownName> {
        Format::ALL
            .iter()
            .copied()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: "format",
                given: s.to_string(),
                allowed: "table json csv md svg",
            })
    }
}

/// Renders a report in the given format. The result always ends with a newline.
///
/// For [`Format::Svg`], a report with nothing to draw against size gives a figure that says
/// so; [`bench_svg`] is the same figure with that case as an error, for callers that can refuse
/// the input by name before writing anything.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Svg => bench_svg(report).unwrap_or_else(|e| plot::empty(&e.to_string())),
        Format::Table => blocks::render_text(report),
        Format::Md => blocks::render_markdown(report),
        Format::Csv => csv::render_csv(&flag_impossible(report)),
        Format::Json => {
            // Cannot fail: every map key in the schema is a string and no Serialize impl errors.
            let mut s = serde_json::to_string_pretty(&flag_impossible(report))
                .expect("Report serializes to JSON");
            s.push('\n');
            s
        }
    }
}

/// The report with a note on every row whose figures are impossible as a measurement (what the
/// tables mark `!`), so that the machine-readable formats say it too: a script reading the
/// JSON or CSV must not take a negative median for a measurement. Idempotent: a file already
/// flagged is not flagged twice.
fn flag_impossible(report: &Report) -> std::borrow::Cow<'_, Report> {
    let flags: Vec<(usize, String)> = report
        .results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let note = format!(
                "impossible figures ({}): not a measurement",
                blocks::impossible(&r.flat())?
            );
            (!r.notes.contains(&note)).then_some((i, note))
        })
        .collect();
    if flags.is_empty() {
        return std::borrow::Cow::Borrowed(report);
    }
    let mut flagged = report.clone();
    for (i, note) in flags {
        flagged.results[i].notes.push(note);
    }
    std::borrow::Cow::Owned(flagged)
}

/// Why a saved result file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Not JSON, or JSON that does not fit the result schema.
    #[error("invalid result file at {line}:{column}: {message}")]
    Parse {
        /// 1-based line of the error (0 when unknown).
        line: usize,
        /// 1-based column of the error (0 when unknown).
        column: usize,
        message: String,
    },
    /// Written with a schema this build does not know.
    #[error(
        "result file has schema_version {found}, which this commperf cannot read (it reads \
         versions 1 to {supported}){hint}",
        hint = if *found > u64::from(*supported) {
            "; it was written by a newer commperf"
        } else {
            ""
        }
    )]
    UnsupportedVersion { found: u64, supported: u32 },
    /// A version this build reads whose content it cannot carry over (result version 1's
    /// loggp rows).
    #[error("{0}")]
    Meaning(commperf_formats::VersionError),
}

impl From<serde_json::Error> for ReportError {
    fn from(e: serde_json::Error) -> ReportError {
        let full = e.to_string();
        // serde_json appends the position to its message; it is reported separately here.
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
        ReportError::Parse {
            line: e.line(),
            column: e.column(),
            message,
        }
    }
}

/// Reads a result file written by [`render`] with [`Format::Json`] (or by any commperf whose
/// schema version this build knows).
///
/// The `schema_version` is checked before the rest of the file, so a file from a newer commperf
/// is refused by version (naming the version found and the one supported) rather than by
/// whichever field happened to change.
pub fn load_json(text: &str) -> Result<Report, ReportError> {
    use commperf_formats::{Kind, VersionError};
    let mut value: serde_json::Value = serde_json::from_str(text)?;
    // A file without a numeric version is left to the parser, which names the field.
    if value
        .get("schema_version")
        .is_some_and(serde_json::Value::is_u64)
    {
        // The result's upgrade only refuses (version 1 loggp rows); it changes nothing, so the
        // text below is what was checked.
        match commperf_formats::upgrade(Kind::Result, &mut value) {
            Ok(_) => {}
            Err(VersionError::Unsupported { found, .. }) => {
                return Err(ReportError::UnsupportedVersion {
                    found,
                    supported: SCHEMA_VERSION,
                })
            }
            Err(e) => return Err(ReportError::Meaning(e)),
        }
    }
    // Parsed again from the text (not from `value`) so that errors keep their line and column.
    Ok(serde_json::from_str(text)?)
}

#[cfg(test)]
mod tests;
