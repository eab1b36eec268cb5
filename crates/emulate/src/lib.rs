//! LogGP emulation: [`Emulated<E>`] slows one LogGP parameter of any commperf transport by a set
//! amount, leaving the others alone, so that a program's sensitivity to each can be measured
//! (seed 001, Martin's apparatus, Figure 2.2).
//!
//! Why a decorator: the knobs must sit *inside* the communication layer, where the seed put them
//! (host library and NIC firmware), not around the program. A scenario adapter (EPOS, seed 002)
//! wraps any realization without the realization knowing, so the same knobs apply to shm, TCP,
//! Unix sockets, io_uring and the model transport. Each knob is applied the way the seed applies
//! it:
//!
//! - **o**: each side spins Δo (busy CPU) before handing a message over and, once one has
//!   arrived, before taking it;
//! - **g**: successive injections from one sender are at least Δg further apart than the
//!   transport makes them; the wait is taken before the *next* injection and only when needed,
//!   so a sender under the rate never waits (the seed stalls its firmware after injection, which
//!   never blocks the host);
//! - **G**: the sender's wire is occupied ΔG·s longer (the next injection waits that much more),
//!   and the message is delivered ΔG·s later;
//! - **L**: a delay queue at the receiver: a message is not delivered before its arrival +
//!   ΔL (+ ΔG·s); later messages queue behind with their own due times, so gap and bandwidth
//!   are untouched (a plain sleep would lower both).
//!
//! Delays are timed on the calibrated TSC ([`commperf_transport::clock::Clock`]) or, over the
//! model transport, in its virtual time, and never sleep. With every knob at zero an endpoint
//! takes the pass-through path (one predictable branch per call).

mod emulated;
mod knobs;
mod probe;
pub mod sweep;

pub use emulated::Emulated;
pub use knobs::{parse_duration_ns, parse_knob_list, EmulateConfig, EmulateError, Knob, Knobs};
pub use probe::Probe;
