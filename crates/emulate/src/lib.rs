//! LogGP emulation: [`Emulated<E>`] slows one LogGP parameter of any commperf transport by a set
//! amount, leaving the others alone, so that a program's sensitivity to each can be measured
//! (Martin 1999, the apparatus of Figure 2.2).
//!
//! Why a decorator: the knobs must sit *inside* the communication layer, where Martin put them
//! (host library and NIC firmware), not around the program. A scenario adapter (EPOS, Fröhlich et
//! al. 2000) wraps any realization without the realization knowing, so the same knobs apply to shm,
//! TCP, Unix sockets, io_uring and the model transport. Each knob is applied the way Martin
//! applies it:
//!
//! - **o**: each side spins Δo (busy CPU): the sender before handing a message over, the
//!   receiver after taking one, before returning it;
//! - **g**: successive injections from one sender, and successive receptions at one receiver
//!   (LogP's g bounds both), are at least Δg further apart than the transport makes them: the
//!   wait is taken after each send (receive) returned, before the next, and only when needed,
//!   so an endpoint under the rate never waits. Martin stalls only its NIC's transmit loop,
//!   which on Myrinet is the stream's bottleneck; a software stream may be bound by either end
//!   (shm's by the receiver's copy), so both ends are paced and the knob adds to whichever
//!   binds: g + G·s becomes g + G·s + Δg, not max(g + G·s, Δg);
//! - **G**: likewise ΔG·s longer at both ends, and the message is delivered ΔG·s later (Martin
//!   stalls ΔG per 100 bytes of each fragment after injecting it; a fragment of s bytes
//!   costs ΔG·s in all, which is what pacing by ΔG·s gives without splitting messages);
//! - **L**: a delay queue at the receiver: a message is not delivered before its arrival +
//!   ΔL (+ ΔG·s); later messages queue behind with their own due times, so gap and bandwidth
//!   are untouched (a plain sleep would lower both).
//!
//! Delays are timed on the calibrated TSC ([`commperf_transport::clock::Clock`]) or, over the
//! model transport, in its virtual time, and never sleep. With every knob at zero an endpoint
//! takes the pass-through path (one predictable branch per call).
//!
//! The knobs are read as `commperf emulate` reads them ([`parse_knob_list`]), and the decorator
//! wraps both ends. Over the model transport (exact LogGP costs in virtual time) a message's
//! delivery moves by exactly the ΔL set:
//!
//! ```
//! use commperf_emulate::{parse_knob_list, EmulateConfig, Emulated, Knob, Knobs};
//! use commperf_transport::clock::Timer;
//! use commperf_transport::sys::model::{self, LogGp, ModelParams};
//! use commperf_transport::{Endpoint, EndpointConfig};
//!
//! let (knob, values) = parse_knob_list("L=0,5us")?;
//! assert_eq!((knob, values.clone()), (Knob::L, vec![0.0, 5000.0]));
//! let given = LogGp { o_s_ns: 300.0, o_r_ns: 400.0, l_ns: 1000.0, ..LogGp::default() };
//! let arrival = |delta_l: f64| -> Result<f64, Box<dyn std::error::Error>> {
//!     let (a, b) = model::pair(ModelParams { small: given, large: None },
//!                              EndpointConfig::default());
//!     let (ta, tb) = (a.timer(), b.timer());
//!     let cfg = EmulateConfig::new(Knobs::only(Knob::L, delta_l));
//!     let mut a = Emulated::with_timer(a, cfg, ta)?;
//!     let mut b = Emulated::with_timer(b, cfg, tb.clone())?;
//!     a.send(1, &[0u8; 8])?;
//!     b.recv(&mut [0u8; 8])?;
//!     Ok(tb.now_ns())
//! };
//! // o_s + L + o_r = 1.7 µs on the model; 5 µs later with ΔL = 5 µs.
//! assert_eq!(arrival(values[0])?, 1700.0);
//! assert_eq!(arrival(values[1])?, 6700.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same knobs inside an unmodified MPI program: [`mpi::run_emulated`] runs an MPI launch
//! command under commperf's interposer, which applies them on its point-to-point calls and its
//! collectives. [`sweep`] runs a program once per setting and fits its sensitivity to each knob;
//! [`state`] probes the machine around each run, so that a run in another state is said.
//! [`calibrate`] checks the knobs on a real transport (Martin's calibration): each knob alone,
//! LogGP measured on a local pair of processes and judged against LogGP's expectation.

pub mod calibrate;
mod emulated;
mod knobs;
pub mod mpi;
mod probe;
pub mod state;
pub mod sweep;

pub use emulated::Emulated;
pub use knobs::{parse_duration_ns, parse_knob_list, EmulateConfig, EmulateError, Knob, Knobs};
pub use probe::Probe;
