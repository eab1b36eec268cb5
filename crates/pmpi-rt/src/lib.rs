//! commperf-pmpi-rt: the half of commperf's MPI interposer that is written in Rust.
//!
//! - [`runtime`]: the recording runtime, this crate's cdylib (`libcommperf_pmpi_rt.so`). It is
//!   preloaded into every rank beside the per-MPI C shim (built by `commperf-pmpi`), which calls
//!   its exported `cpmpi_rt_*` functions: per-thread bounded rings, a writer thread draining them
//!   into `DIR/rank-N.cpmpi`.
//! - [`guard`]: the fence every exported function runs behind (a panic stops the runtime,
//!   never the rank).
//! - [`format`]: the rank file format the runtime writes and `commperf-pmpi`'s reader reads.
//!
//! Why a crate of its own: the commperf binary must carry the runtime inside it (an installed
//! binary has no build tree beside it to find a shared library in). Cargo cannot hand a
//! cdylib to another crate's build, so `commperf-pmpi`'s build script builds this crate with a
//! cargo of its own and embeds the result; a small crate keeps that second build short.

pub mod format;
pub mod guard;
pub mod runtime;
mod sync;
