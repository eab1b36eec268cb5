//! How commperf runs programs as its children, for every verb that launches one (`monitor`,
//! `emulate`, `app`, `bench -t mpi`) and for a Rust program that does the same.
//!
//! - [`preload`]: which MPI a command's program uses, and the command rewritten so that its
//!   ranks (not the launcher) load commperf's interposer with the variables they are given.
//! - [`interrupt`]: children that die with this process, and Ctrl-C passed on to the child in
//!   hand so that a run stops at a boundary and saves what finished.
//! - [`run_dir`]: private directories a launched command writes into, removed even when this
//!   process is killed outright, by a guard process (`commperf __reap DIR`: a program embedding
//!   this crate must answer that command with [`run_dir::reap`]).
//!
//! Why a crate of its own: these are the parts of a launch that must be the same for every
//! verb (a child that outlives a killed commperf, or a preload that reaches mpirun itself, is a
//! fault whichever verb made it), and the study, the emulation and the monitor are libraries
//! that launch programs.

pub mod interrupt;
pub mod preload;
pub mod run_dir;

use std::path::PathBuf;

/// What stops a launch before it starts.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The command's first word or its program is not there.
    #[error("{0}")]
    NoProgram(String),
    /// The launcher and the program belong to different MPIs, or the MPI cannot be told.
    #[error("{0}")]
    WhichMpi(String),
    /// The interposer for the program's MPI cannot be installed.
    #[error(transparent)]
    Install(#[from] commperf_pmpi::install::InstallError),
    /// A run directory or its guard could not be made.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// `__reap` was given a directory that is not one of ours.
    #[error("{} is not a run directory of commperf", .0.display())]
    NotARunDir(PathBuf),
    /// No free run-directory name.
    #[error("cannot create a run directory in {}", .0.display())]
    NoRunDir(PathBuf),
}

/// One line on stderr, best effort: `eprintln!` panics when stderr cannot be written, and the
/// last message of a failing run must not turn into a panic. Every line commperf's libraries
/// and binary write to stderr goes through here.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The last `n` non-empty lines of a program's output, joined by ` | ` (for one-line errors).
pub fn last_lines(b: &[u8], n: usize) -> String {
    let t = String::from_utf8_lossy(b);
    let v: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(n)..].join(" | ")
}
