//! commperf's MPI layer (Kutluğ 2000, chapter 4): the whole suite measured with MPI calls, the
//! transports measured between ranks that mpirun placed, and OSU-style multi-pair runs.
//!
//! Why a crate of its own, apart from `transport` and `bench`: building against MPI needs an MPI
//! library and libclang (rsmpi generates its bindings), which a fresh machine does not have. All
//! of that sits behind this crate's `mpi` feature, off by default, so only this crate changes
//! when it is on; without it the crate still offers what needs no MPI (the start-up verdicts,
//! combining pairs, finding and starting mpirun), and [`AVAILABLE`] says MPI is missing.
//!
//! Shape, with the feature:
//! - `raw`: the MPI calls the timed loops make, thin and allocation-free over `mpi::ffi`;
//! - [`endpoint::MpiEndpoint`]: MPI as one more realization of the `Endpoint` trait, so the
//!   generic loops (bufmgmt's rotating buffers, loggp's PRTT rounds) run unchanged over MPI;
//! - `suite`: the MPI-layer benchmarks, SPMD: both ranks of a pair run the same schedule;
//! - `launched`: `--launcher mpi`, the ordinary client/peer session between placed ranks,
//!   addresses and session tokens exchanged over MPI;
//! - [`MpiWorld`]: MPI_Init, the start-up agreement (rank count, versions, options), control
//!   messages, abort.

pub mod aggregate;
pub mod spawn;
// Used by `world` (with the feature); its verdicts are tested without.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod startup;

#[cfg(feature = "mpi")]
pub mod endpoint;
#[cfg(feature = "mpi")]
mod launched;
#[cfg(feature = "mpi")]
mod raw;
#[cfg(feature = "mpi")]
mod suite;
#[cfg(feature = "mpi")]
mod world;

pub use startup::Pair;
#[cfg(feature = "mpi")]
pub use world::{library_version, MpiWorld};

use commperf_bench::BenchError;
use commperf_core::TransportKind;
use commperf_transport::launch::LaunchError;

/// Whether this build can run MPI (the `mpi` feature).
pub const AVAILABLE: bool = cfg!(feature = "mpi");

/// What `--transport mpi` and `--launcher mpi` need and this build lacks.
pub const NOT_BUILT: &str = "this commperf was built without MPI support; build it with \
     `cargo build --release --features mpi` (needs libopenmpi-dev or libmpich-dev, and libclang-dev)";

/// What can end an MPI run.
#[derive(Debug, thiserror::Error)]
pub enum MpiError {
    #[error("{}", NOT_BUILT)]
    NotBuilt,
    #[error("MPI was initialized twice in one process")]
    AlreadyInitialized,
    #[error("{0}")]
    Startup(String),
    #[cfg(feature = "mpi")]
    #[error(transparent)]
    Call(#[from] raw::MpiCallError),
    #[error("{0}")]
    Protocol(String),
    /// A transfer that failed, or corruption `--validate` found: reported as the transport
    /// layer's session reports them.
    #[error(transparent)]
    Bench(#[from] BenchError),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("combining the pairs' results: {0}")]
    Combine(String),
}

/// One layer of a run: the MPI layer itself, or transports between MPI-placed ranks.
pub fn layer_name(layer: &[TransportKind]) -> String {
    layer
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(feature = "mpi")]
pub use run::run;

#[cfg(feature = "mpi")]
mod run {
    use super::*;
    use commperf_bench::{BenchConfig, Progress};
    use commperf_core::Report;

    /// Runs each layer in turn between the ranks of `world` (a layer is `[mpi]`, the MPI
    /// suite, or transports run by the ordinary session between placed ranks). Rank 0 gets
    /// one report per layer, multi-pair results combined; the other ranks get `None`.
    pub fn run(
        world: &MpiWorld,
        cfg: &BenchConfig,
        layers: &[Vec<TransportKind>],
        progress: &mut dyn Progress,
    ) -> Result<Option<Vec<Report>>, MpiError> {
        let mut out = Vec::new();
        for layer in layers {
            world.barrier();
            let report = if layer.as_slice() == [TransportKind::Mpi] {
                crate::suite::run(world, cfg, progress)?
            } else {
                let mut c = cfg.clone();
                c.transports = layer.clone();
                crate::launched::run(world, &c, progress)?
            };
            out.extend(report);
        }
        Ok((world.rank() == 0).then_some(out))
    }
}
