//! The benchmarks of commperf and the machinery that runs them.
//!
//! - [`patterns`]: the timed loops (latency ping-pong, windowed bandwidth, bi-directional
//!   bandwidth, message rate), generic over `E: Endpoint` so each is compiled per transport and
//!   contains nothing but the measured work.
//! - [`session`]: the two roles of a run. The client ([`run`]) decides everything, drives the
//!   peer over the control channel and collects rows; the peer ([`serve_session`]) follows.
//! - [`limits`]: what this machine can physically do (cache-line ping-pong, memcpy), so shm
//!   results can say how close they come.
//! - [`pipeline`]: the pipeline model's inputs (Fröhlich et al. 2000, §3.2): each stage of the shm
//!   and socket transports timed one packet at a time and fitted to β + P·τ, the pipelined probe
//!   that caps the fragment size, and the fragment plan handed to the transports.
//! - [`loggp`]: LogGOPS parameters by Netgauge's parametrized round trips (PRTT), and their
//!   decomposition into o_s, o_r, g, G, L per piece of sizes.
//! - [`extended`] and [`cost`]: the extended suite (each test the latency test with one thing
//!   changed) and the cost it reports over the standard latency, judged against the noise.
//! - [`calibrate`]: measuring a path into the [`commperf_model::profile`] `predict` reads.
//! - [`machine`] and [`buf`]: what machine ran the local end (for the result file), and the
//!   page-aligned buffers every loop uses.
//! - [`config`]: the validated configuration the CLI hands in (library crates never see clap).
//!
//! The client's entry point [`run`] needs a peer process; every measurement under it is generic
//! over [`commperf_transport::Endpoint`], so it also runs over the model transport, which
//! charges exact LogGP costs in virtual time. `bench loggp`'s measurement, there:
//!
//! ```
//! use commperf_bench::loggp::{extract, prtt_pair};
//! use commperf_transport::sys::model::{self, LogGp, ModelParams};
//! use commperf_transport::EndpointConfig;
//!
//! let given = LogGp { o_s_ns: 300.0, o_r_ns: 400.0, g_ns: 500.0, gap_per_byte_ns: 0.25,
//!                     l_ns: 1000.0, ..LogGp::default() };
//! let cfg = EndpointConfig { max_message: 1 << 16, ..EndpointConfig::default() };
//! let (mut a, b) = model::pair(ModelParams { small: given, large: None }, cfg);
//! let (ta, tb) = (a.timer(), b.timer());
//! let sizes: Vec<u64> = (0..=16).map(|p| 1u64 << p).collect();
//! let points = prtt_pair(&mut a, &ta, b, tb, &sizes, 1 << 16)?;
//! // PRTT(1, 0, 1 KiB) is a round trip: twice o_s + L + o_r + G·s = 2 · (1700 + 256) ns.
//! assert_eq!(points[10].size, 1024);
//! assert_eq!(points[10].p1.ns, 3912.0);
//! // And the decomposition recovers what the model was given.
//! let fit = extract(&points).expect("a fit");
//! let piece = &fit.pieces[0];
//! for (got, want) in [(piece.o_s_ns, 300.0), (piece.o_r_ns, 400.0), (piece.g_ns, 500.0),
//!                     (piece.gap_per_byte_ns, 0.25), (piece.l_ns, 1000.0)] {
//!     assert!((got.unwrap() - want).abs() < 1e-6 * want, "{got:?} against {want}");
//! }
//! # Ok::<(), commperf_bench::patterns::LoopError>(())
//! ```

pub mod buf;
pub mod calibrate;
pub mod config;
pub mod cost;
pub mod extended;
pub mod limits;
pub mod loggp;
pub mod machine;
pub mod patterns;
pub mod pipeline;
pub mod session;

pub use config::{BenchConfig, ConfigError, FragmentSetting, Launcher, MAX_ITERS, MAX_SIZE};
pub use session::{run, serve_session, BenchError, Progress};
