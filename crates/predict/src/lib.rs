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
//! output.

pub mod collectives;
pub mod engine;
pub mod gen;
pub mod netgauge;
pub mod output;
pub mod parse;
pub mod rng;
pub mod topology;
pub mod workload;

// The cost models live in `commperf-model` (shared with `bench`); re-exported under their old
// paths so that `commperf_predict::tcom::Tcom` and the others keep working.
pub use commperf_model::{pipeline, profile, tcom};
