//! commperf's cost models of communication, shared by measurement (`commperf-bench`) and
//! prediction (`commperf-predict`):
//!
//! - [`loggp::LogGp`]: LogGP parameters with LogGOPS's per-byte overhead O — what `bench loggp`
//!   extracts, `emulate` injects and `predict`'s LogGP model charges;
//! - [`tcom::Tcom`]: the quiet-network cost of a message by size (Papaefstathiou 2001), a
//!   piecewise-linear function and its inverse, and [`profile::profile_from_points`], its fit
//!   from measured one-way times (`commperf calibrate`);
//! - [`pipeline::PipelineModel`]: the communication-pipeline model of Fröhlich et al. (2000)
//!   (`T(L, P)`, `P_opt`) that chooses the shared-memory transport's fragment size per message.
//!
//! Why a crate of its own: `bench` fits these models and the transports use the pipeline's
//! plan, while `predict` replays workloads with them; with the models inside `predict`,
//! measurement depended on prediction. Here they depend on nothing but `core` (the profile's
//! schema) and `stats` (the regression), so both sides use them and the crate graph points
//! one way.
//!
//! ```
//! use commperf_core::TcomPiece;
//! use commperf_model::{LogGp, Tcom};
//!
//! // A profile's two pieces: 10 µs + 0.01 µs/B up to 2 KiB, then 30 µs + 0.005 µs/B.
//! let piece = |from_bytes, to_bytes, intercept_us, slope_us_per_byte| TcomPiece {
//!     from_bytes,
//!     to_bytes,
//!     intercept_us,
//!     slope_us_per_byte,
//! };
//! let tcom = Tcom::from_pieces(&[
//!     piece(0, 2048, 10.0, 0.01),
//!     piece(2049, u64::MAX, 30.0, 0.005),
//! ])?;
//! assert_eq!(tcom.quiet_ns(1000), 20_000.0); // 10 µs + 1000 B · 10 ns/B
//! assert_eq!(tcom.quiet_ns(4000), 50_000.0); // 30 µs + 4000 B · 5 ns/B
//!
//! // From LogGP parameters: a lone message costs o_s + L + o_r + G·s end to end.
//! let p = LogGp { L_ns: 1500.0, o_s_ns: 1000.0, o_r_ns: 500.0, g_ns: 1000.0,
//!                 G_ns_per_byte: 0.25, O_ns_per_byte: 0.0 };
//! assert_eq!(Tcom::from_loggp(&p).quiet_ns(4096), 4_024.0);
//! # Ok::<(), commperf_model::tcom::TcomError>(())
//! ```

pub mod loggp;
pub mod pipeline;
pub mod profile;
pub mod tcom;

pub use loggp::LogGp;
pub use pipeline::{PipelineModel, Plan, Rule};
pub use tcom::Tcom;
