//! commperf's communication layer: one small [`Endpoint`] trait and its realizations.
//!
//! Shaped after EPOS (Fröhlich et al. 2000): one network-adapter interface, several realizations
//! chosen by a key at the top of a run ([`TransportKind`]), each under `sys/` with the same shape
//! (mio's idea). Benchmarks are generic over `E: Endpoint`, so the timed loops are statically
//! dispatched; the runtime choice happens once, outside them.

pub mod affinity;
pub mod backoff;
pub mod bounds;
pub mod clock;
#[doc(hidden)]
pub mod conformance;
pub mod cq;
pub mod endpoint;
pub mod error;
pub mod fault;
pub mod fragments;
pub mod launch;
pub mod serve;
pub mod sys;
pub mod text;

pub use commperf_core::{Mode, TransportKind};
pub use endpoint::{
    gather, Endpoint, EndpointConfig, EndpointInfo, Fragment, Readiness, RecvInfo, Side, SideBand,
    SwitchMode, Tag, VectoredSend, SIDE_WORDS,
};
pub use error::TransportError;
pub use fault::{FaultConfig, FaultInjector};
pub use fragments::FragmentPlan;
