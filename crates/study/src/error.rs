//! What can go wrong in a study's runs: [`StudyError`], one variant per cause, and the context
//! a step adds on top of the error it met (the file it was reading, the directory it could not
//! create), printed as `context: cause` the way the binary prints every error (`{:#}`).
//!
//! A cell's error is kept in the study as one line, [`chain`]: the error and its sources.

use crate::micro::BenchRowError;
use crate::verdict::Failed;
use std::fmt::Display;

/// An error of a study's runs.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A step's context on top of the error it met.
    #[error("{what}")]
    Context {
        what: String,
        #[source]
        source: Box<StudyError>,
    },
    /// A run the verdict failed (its failures, by name).
    #[error(transparent)]
    Failed(#[from] Failed),
    /// A micro-benchmark's result file without what the study needs of it.
    #[error(transparent)]
    BenchRow(#[from] BenchRowError),
    /// Why a program cannot run on a stack: its network, its binary, its build, its input.
    #[error("{0}")]
    Refused(String),
    /// A run that did not end within `--timeout` (seconds).
    #[error("stopped after {0} s (--timeout)")]
    Timeout(u64),
    /// The user interrupted the study during the step named.
    #[error("interrupted: the study stopped during {0}")]
    Interrupted(String),
    /// A bench launch that exited with a failure: the command, its status and the last lines
    /// of its stderr.
    #[error("{command} exited with {status}: {stderr}")]
    BenchExit {
        command: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    /// Ranks of a monitored run that never reached MPI_Finalize.
    #[error("the monitor's record is cut short (ranks {0:?} never reached MPI_Finalize)")]
    CutShort(Vec<u32>),
    /// A monitored run whose trace lost events.
    #[error(
        "the monitored run on the reference dropped {0} events (its call rate outran the \
         monitor's writer): its trace is not the program"
    )]
    Dropped(u64),
    /// A monitored run (its directory) without a rank.
    #[error("{0}: no rank recorded")]
    NoRank(String),
    /// What the loop needs and does not have (no run, no rank, no replayed rank).
    #[error("{0}")]
    Missing(&'static str),
    /// `emulate sweep` wrote no result: its exit, the last line of its log, and the log.
    #[error("emulate sweep exited with {status}: {why} (log {log})")]
    Sweep {
        status: std::process::ExitStatus,
        why: String,
        log: String,
    },
    /// Every cell of the study failed.
    #[error("every run of the study failed (the cells above say why)")]
    AllFailed,
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Text(#[from] commperf_core::TextError),
    #[error(transparent)]
    Output(#[from] commperf_core::file::OutputError),
    #[error(transparent)]
    Launch(#[from] commperf_launch::LaunchError),
    #[error(transparent)]
    Read(#[from] commperf_pmpi::ReadError),
    #[error(transparent)]
    Report(#[from] commperf_report::ReportError),
    #[error(transparent)]
    Emulate(#[from] commperf_emulate::EmulateError),
    #[error(transparent)]
    Parse(#[from] commperf_predict::parse::ParseError),
    #[error(transparent)]
    Topology(#[from] commperf_predict::topology::TopologyError),
    #[error(transparent)]
    Predict(#[from] commperf_predict::engine::PredictError),
}

/// A [`Result`] with a [`StudyError`].
pub type Result<T, E = StudyError> = std::result::Result<T, E>;

/// The error and its sources on one line, `error: source: source…` (what `{:#}` prints of the
/// binary's errors): a cell's error in the study.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Context on a step's error, as `anyhow::Context` adds it.
pub(crate) trait Context<T> {
    fn context(self, what: impl Display) -> Result<T>;
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Into<StudyError>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.with_context(|| what)
    }

    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| StudyError::Context {
            what: what().to_string(),
            source: Box::new(e.into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell's error reads as the binary prints one: the context, then each cause.
    #[test]
    fn the_chain_joins_context_and_causes() {
        let e: Result<()> = Err(StudyError::Timeout(300));
        let e = e.context("cannot run halo").unwrap_err();
        assert_eq!(e.to_string(), "cannot run halo");
        assert_eq!(
            chain(&e),
            "cannot run halo: stopped after 300 s (--timeout)"
        );
        let io: std::result::Result<(), _> =
            Err(std::io::Error::new(std::io::ErrorKind::NotFound, "gone"));
        let e = io
            .with_context(|| format!("cannot create {}", "/x"))
            .unwrap_err();
        assert_eq!(chain(&e), "cannot create /x: gone");
    }
}
