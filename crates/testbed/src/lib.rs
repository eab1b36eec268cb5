//! A real network to check predictions against: N network namespaces joined by a Linux bridge,
//! every host link rate-limited in both directions (tbf or htb; these kernels have no netem),
//! real communication patterns over commperf's TCP transport between them, and the same
//! patterns predicted by the contention engine with a profile calibrated on that same testbed.
//!
//! The pieces: [`netns`] builds and removes the cluster, [`pattern`] describes what each rank
//! sends and receives, [`rank`] is the process that runs in each namespace (the same binary,
//! re-executed), [`run`] orchestrates calibration, measurement and prediction, and
//! [`predict`] turns a pattern into the engine's workload. Everything this crate makes carries
//! a per-run name prefix so that it can be removed after any failure.

pub mod mpirank;
pub mod netns;
pub mod pattern;
pub mod predict;
pub mod proto;
pub mod rank;
pub mod run;

use commperf_transport::launch::LaunchError;
use commperf_transport::TransportError;

/// Everything that can go wrong in a testbed run.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    #[error(transparent)]
    Netns(#[from] netns::NetnsError),
    #[error(transparent)]
    Pattern(#[from] pattern::PatternError),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("rank {rank}: {message}")]
    Rank { rank: u32, message: String },
    #[error("timed out after {secs} s waiting for {what}")]
    Timeout { what: String, secs: u64 },
    #[error("interrupted (signal); everything this run made was removed")]
    Interrupted,
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("{what}: {cause}")]
    Io { what: String, cause: std::io::Error },
    #[error("calibration: {0}")]
    Calibration(String),
    #[error("bad configuration: {0}")]
    Config(String),
}

impl TestbedError {
    pub(crate) fn io(what: impl Into<String>, cause: std::io::Error) -> Self {
        TestbedError::Io {
            what: what.into(),
            cause,
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds. Every namespace shares this clock (network namespaces do
/// not virtualize time), so timestamps taken by different ranks compare directly.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reads `t_ns` (returns at once if it already has).
pub fn sleep_until_ns(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid absolute time; a null remainder is allowed with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        // Only EINTR repeats; with an absolute time the retry needs no remainder.
        if r != libc::EINTR {
            break;
        }
    }
}
