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
//! - [`config`]: the validated configuration the CLI hands in (library crates never see clap).

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
