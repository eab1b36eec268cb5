//! Trace readers: commperf's own text format, GOAL schedules (LogGOPSim) and SimGrid
//! time-independent traces, all into one [`Workload`].
//!
//! Every error names file:line:column and the offending token; no input makes a reader panic
//! (the readers are fuzzed in `tests/fuzz.rs`).

mod goal;
mod own;
mod simgrid;

pub use own::is_name;

use crate::collectives::Algorithms;
use crate::workload::Workload;
use std::fmt;
use std::path::Path;

/// The trace formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    Own,
    Goal,
    SimGrid,
}

impl TraceFormat {
    /// Every format, as `--format-in` lists them.
    pub const ALL: &'static [TraceFormat] =
        &[TraceFormat::Own, TraceFormat::Goal, TraceFormat::SimGrid];
}

impl std::str::FromStr for TraceFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "own" => Ok(TraceFormat::Own),
            "goal" => Ok(TraceFormat::Goal),
            "simgrid" => Ok(TraceFormat::SimGrid),
            _ => Err(format!(
                "unknown trace format `{s}` (expected own, goal or simgrid)"
            )),
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceFormat::Own => "own",
            TraceFormat::Goal => "goal",
            TraceFormat::SimGrid => "simgrid",
        })
    }
}

/// Options every reader takes.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseOptions {
    /// Host speed for SimGrid `compute` (flop/s). Default 1e9.
    pub host_speed_flops: f64,
    /// Collective algorithms.
    pub algorithms: Algorithms,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            host_speed_flops: 1e9,
            algorithms: Algorithms::default(),
        }
    }
}

/// A syntax or meaning error at a place in a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}{}", token_suffix(.token))]
pub struct ParseError {
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// The offending token (empty at end of input).
    pub token: String,
    pub message: String,
}

fn token_suffix(t: &str) -> String {
    if t.is_empty() {
        String::new()
    } else {
        format!(" (at `{t}`)")
    }
}

/// Longest token quoted in an error; longer ones (a megabyte of digits) are cut.
const MAX_TOKEN_CHARS: usize = 64;

/// The error for the token at bytes `start..end` of `text`. Parsers keep byte offsets only and
/// pay for line and column counting when they fail, which keeps the fast paths fast. Offsets
/// need not be on character boundaries: columns count characters, never bytes.
pub(crate) fn error_at(
    name: &str,
    text: &str,
    start: usize,
    end: usize,
    message: impl Into<String>,
) -> ParseError {
    let bytes = text.as_bytes();
    let start = start.min(bytes.len());
    let end = end.clamp(start, bytes.len());
    let before = &bytes[..start];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    // Characters are the bytes that do not continue a UTF-8 sequence.
    let column = 1 + bytes[line_start..start]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count();
    // Control characters are quoted (`\0`, `\u{1b}`): an error is printed to a terminal, and
    // a raw NUL or escape sequence from the input would garble or drive it.
    let tok = String::from_utf8_lossy(&bytes[start..end]);
    let (mut token, mut chars) = (String::new(), 0);
    for c in tok.chars() {
        let quoted = c.is_control().then(|| c.escape_debug().to_string());
        let n = quoted.as_ref().map_or(1, |q| q.chars().count());
        if chars + n > MAX_TOKEN_CHARS {
            token.push('…');
            break;
        }
        chars += n;
        match quoted {
            Some(q) => token.push_str(&q),
            None => token.push(c),
        }
    }
    ParseError {
        file: name.to_string(),
        line,
        column,
        token,
        message: message.into(),
    }
}

/// Largest message size any reader accepts (2^48 bytes): sums of many sizes stay far from
/// overflowing u64.
pub const MAX_BYTES: u64 = 1 << 48;
/// Largest number of ranks any reader accepts (2^24).
pub const MAX_RANKS: u64 = 1 << 24;
/// Largest duration in virtual nanoseconds any reader accepts (about 31 years).
pub const MAX_NS: u64 = 1 << 60;

/// Most operations a trace may expand into (2^26, twenty times the million-rank broadcast):
/// collectives multiply a few bytes of text into many operations, and a reader must refuse an
/// input that would exhaust memory rather than die trying.
pub const MAX_OPS: u64 = 1 << 26;

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read, or is not text (it names the first byte that is not UTF-8).
    #[error(transparent)]
    Text(#[from] commperf_core::TextError),
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Guesses the format from the first meaningful line: `num_ranks` → GOAL; `<rank> <action>` →
/// SimGrid; otherwise commperf's own.
pub fn detect(text: &str) -> TraceFormat {
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with("//") {
            continue;
        }
        let mut words = l.split_whitespace();
        let first = words.next().unwrap_or("");
        if first == "num_ranks" {
            return TraceFormat::Goal;
        }
        if first.parse::<u64>().is_ok() && words.next().is_some() {
            return TraceFormat::SimGrid;
        }
        return TraceFormat::Own;
    }
    TraceFormat::Own
}

/// Reads a trace file (format detected when `format` is None). SimGrid index files (a list of
/// per-rank trace files) are followed relative to the index's directory.
pub fn read_trace(
    path: &Path,
    format: Option<TraceFormat>,
    opts: &ParseOptions,
) -> Result<Workload, TraceError> {
    read_trace_as(path, format, opts).map(|(w, _)| w)
}

/// [`read_trace`], also saying which format was read (detected or given).
pub fn read_trace_as(
    path: &Path,
    format: Option<TraceFormat>,
    opts: &ParseOptions,
) -> Result<(Workload, TraceFormat), TraceError> {
    let text = commperf_core::read_text(path)?;
    let name = path.display().to_string();
    // An index of SimGrid per-rank files reads like words to `detect`; only the file system
    // can tell it apart.
    let format = format.unwrap_or_else(|| match detect(&text) {
        TraceFormat::Own if simgrid::is_existing_index(path, &text) => TraceFormat::SimGrid,
        f => f,
    });
    let w = match format {
        TraceFormat::SimGrid => simgrid::parse_file(path, &text, opts)?,
        _ => parse_str(&text, &name, format, opts)?,
    };
    Ok((w, format))
}

/// Parses text already in memory (`name` is used in errors).
pub fn parse_str(
    text: &str,
    name: &str,
    format: TraceFormat,
    opts: &ParseOptions,
) -> Result<Workload, ParseError> {
    match format {
        TraceFormat::Own => own::parse(text, name, opts),
        TraceFormat::Goal => goal::parse(text, name, opts),
        TraceFormat::SimGrid => simgrid::parse_single(text, name, opts),
    }
}
