//! commperf-otf2: OTF2, the trace format of Score-P, Vampir and Scalasca, in and out of
//! commperf. It owns the two conversions and the C library they need, so that neither the
//! interposer's reader (commperf-pmpi) nor the predictor (commperf-predict) links C:
//!
//! - **out**: a monitored MPI run ([`commperf_pmpi::Run`]) as an OTF2 archive ([`write_run`]),
//!   rendered from the run's replay ([`commperf_pmpi::replay`]), the same one the own trace
//!   is written from ([`from_run`] says how);
//! - **in**: an OTF2 archive as predict's [`Workload`] ([`read_workload`]), through commperf's
//!   own trace format so that both formats mean one thing ([`to_own`] says how, and what is
//!   refused by name).
//!
//! libotf2 (Debian: libotf2-trace-dev) is linked when the build finds it; without it both
//! directions return [`Otf2Error::Missing`], naming the package. No crate on crates.io binds
//! OTF2, so the few functions used are declared by hand (`ffi.rs`).

pub mod from_run;
pub mod model;
pub mod to_own;

#[cfg(commperf_libotf2)]
mod ffi;
#[cfg(commperf_libotf2)]
mod io;

use commperf_predict::parse::{self, ParseError, ParseOptions, TraceFormat};
use commperf_predict::workload::Workload;
pub use from_run::{archive_of, WriteStats};
pub use model::Archive;
use std::path::{Path, PathBuf};

/// The archive name commperf writes: `DIR/traces.otf2` is the anchor file (Score-P's name).
pub const ARCHIVE_NAME: &str = "traces";

/// Why an OTF2 archive could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum Otf2Error {
    #[error(
        "this commperf was built without libotf2, so it cannot {0} OTF2: install libotf2-trace-dev \
         (Debian, Ubuntu; otf2 elsewhere) and rebuild commperf"
    )]
    Missing(&'static str),
    #[error("{}: libotf2 could not open it as an OTF2 archive", path.display())]
    Open { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("libotf2: {call} failed ({code}): {message}")]
    Library {
        call: &'static str,
        code: u32,
        message: String,
    },
    #[error("{}: {message}", path.display())]
    Refused { path: PathBuf, message: String },
    /// The converted trace did not read as the own format: a bug of the conversion.
    #[error("{}: the trace converted from OTF2 does not read: {source}", path.display())]
    Converted { path: PathBuf, source: ParseError },
}

/// Whether this build can write and read OTF2.
pub fn available() -> bool {
    cfg!(commperf_libotf2)
}

/// Writes `a` as `dir/NAME.otf2`, `dir/NAME.def` and `dir/NAME/`, replacing an archive of that
/// name; returns the anchor file's path.
pub fn write_archive(a: &Archive, dir: &Path, name: &str) -> Result<PathBuf, Otf2Error> {
    #[cfg(commperf_libotf2)]
    {
        io::write(a, dir, name)?;
        Ok(dir.join(format!("{name}.otf2")))
    }
    #[cfg(not(commperf_libotf2))]
    {
        let _ = (a, dir, name);
        Err(Otf2Error::Missing("write"))
    }
}

/// Reads the archive whose anchor file is `anchor`. Timestamps are each location's own unless
/// `apply_clock_offsets` (then they are on the global clock the ClockOffset definitions give).
pub fn read_archive(anchor: &Path, apply_clock_offsets: bool) -> Result<Archive, Otf2Error> {
    #[cfg(commperf_libotf2)]
    {
        io::read(anchor, apply_clock_offsets)
    }
    #[cfg(not(commperf_libotf2))]
    {
        let _ = (anchor, apply_clock_offsets);
        Err(Otf2Error::Missing("read"))
    }
}

/// A monitored run as `dir/traces.otf2` (with `traces.def` and `traces/`).
pub fn write_run(run: &commperf_pmpi::Run, dir: &Path) -> Result<(PathBuf, WriteStats), Otf2Error> {
    let (a, stats) = archive_of(run);
    let anchor = write_archive(&a, dir, ARCHIVE_NAME)?;
    Ok((anchor, stats))
}

/// The own-format trace text an archive reads as, or the refusal naming what it cannot model.
pub fn own_text_of(a: &Archive, anchor: &Path) -> Result<String, Otf2Error> {
    to_own::own_text(a).map_err(|message| Otf2Error::Refused {
        path: anchor.to_path_buf(),
        message,
    })
}

/// Reads an OTF2 archive (its anchor file, `….otf2`) into predict's workload.
pub fn read_workload(anchor: &Path, opts: &ParseOptions) -> Result<Workload, Otf2Error> {
    let a = read_archive(anchor, false)?;
    let text = own_text_of(&a, anchor)?;
    parse::parse_str(&text, &anchor.display().to_string(), TraceFormat::Own, opts).map_err(
        |source| Otf2Error::Converted {
            path: anchor.to_path_buf(),
            source,
        },
    )
}

/// Whether `path` names an OTF2 anchor file (by its extension, as Score-P names them).
pub fn is_anchor(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "otf2")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Built without libotf2 (none found, or COMMPERF_OTF2_DISABLE=1), both directions refuse
    /// naming the package; the conversions that need no C library still work.
    #[test]
    #[cfg(not(commperf_libotf2))]
    fn without_libotf2_both_directions_name_the_package() {
        assert!(!available());
        let dir = std::env::temp_dir();
        let e = write_archive(&Archive::default(), &dir, "never").unwrap_err();
        assert!(matches!(e, Otf2Error::Missing("write")), "{e}");
        assert!(e.to_string().contains("install libotf2-trace-dev"), "{e}");
        assert!(!dir.join("never.otf2").exists());
        let e = read_workload(&dir.join("x.otf2"), &ParseOptions::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("this commperf was built without libotf2, so it cannot read OTF2"),
            "{e}"
        );
    }

    #[test]
    fn anchor_files_are_told_by_their_extension() {
        assert!(is_anchor(Path::new("mon/traces.otf2")));
        assert!(!is_anchor(Path::new("mon/trace.txt")));
        assert!(!is_anchor(Path::new("otf2")));
    }
}
