//! Prediction of communication time with network contention: Papaefstathiou's (2001) CCMOD,
//! calibrated from commperf's own measurements, and a LogGP model of the same workloads for
//! comparison.
//!
//! It needs only `core`, `stats` and `model` (the cost models it shares with `bench`): a
//! prediction is made from files (a trace, a topology, a profile) and can be made and tested
//! without any transport. The pieces follow CCMOD's three
//! customization points — workload ([`parse`] into one [`workload::Workload`]), network
//! ([`topology::Network`] plus link classes and the quiet-network cost [`tcom::Tcom`]) and output
//! ([`output`]) — around one engine ([`engine`]). Everything runs in virtual time with seeded
//! randomness and (time, sequence) tie-breaking, so the same input and seed give byte-identical
//! output. Beside them: [`collectives`] (a collective expanded into point-to-point operations
//! by a named algorithm), [`netgauge`] (Netgauge's `loggp` output read as a profile), [`gen`]
//! (generators that write trace text), [`rng`] (the seeded generator) and [`values`] (a
//! prediction's settings read from text as the command line gives them, and assembled).
//!
//! The entry point is [`engine::predict`]: a workload (here a two-rank trace in commperf's own
//! format), a network and where the ranks run, a cost model, a configuration.
//!
//! ```
//! use commperf_predict::engine::{predict, Inputs, LogGp, Model, PredictConfig};
//! use commperf_predict::parse::{parse_str, ParseOptions, TraceFormat};
//! use commperf_predict::tcom::Tcom;
//! use commperf_predict::topology::{Crossbar, RankMap};
//!
//! // Rank 0 computes 1 µs, then sends rank 1 a message of 1000 bytes.
//! let trace = "ranks 2\n\
//!              rank 0\n  compute 1000ns\n  send 1 1000B tag 0\n\
//!              rank 1\n  recv 0 1000B tag 0\n";
//! let workload = parse_str(trace, "two.trace", TraceFormat::Own, &ParseOptions::default())?;
//! let network = Crossbar::new(2);
//! let ranks = RankMap::identity(2, &network)?;
//! // LogGOPSim's defaults: L = 2.5 µs, o = 1.5 µs, g = 1 µs, G = 6 ns/B.
//! let loggp = LogGp { L_ns: 2500.0, o_s_ns: 1500.0, o_r_ns: 1500.0, g_ns: 1000.0,
//!                     G_ns_per_byte: 6.0, O_ns_per_byte: 0.0 };
//! let inputs = Inputs {
//!     workload: &workload,
//!     network: &network,
//!     rank_map: &ranks,
//!     tcom: &Tcom::from_loggp(&loggp),
//!     loggp: Some(&loggp),
//!     trace_name: "two.trace",
//!     trace_format: "own",
//!     profile_name: "LogGOPSim defaults",
//! };
//! let cfg = PredictConfig { model: Model::LogGp, ..PredictConfig::default() };
//! let p = predict(&inputs, &cfg)?.prediction;
//! // The send starts at 1 µs; its first byte arrives o_s + L later (5 µs); the receive holds
//! // rank 1's CPU for o_r + G·(s − 1) = 1.5 µs + 5.994 µs (LogGOPSim's rule): 12.494 µs.
//! assert_eq!(p.ranks[1].finish_us, 12.494);
//! assert_eq!(p.total_us, 12.494);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod collectives;
pub mod engine;
pub mod gen;
pub mod netgauge;
pub mod output;
pub mod parse;
pub mod rng;
pub mod topology;
pub mod values;
pub mod workload;

// The cost models live in `commperf-model` (shared with `bench`); re-exported under their old
// paths so that `commperf_predict::tcom::Tcom` and the others keep working.
pub use commperf_model::{pipeline, profile, tcom};
