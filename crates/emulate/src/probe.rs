//! What [`crate::Emulated`] needs to know of the endpoint below it beyond [`Endpoint`].
//!
//! A real transport only tells whether a message is waiting ([`Readiness`]): the decorator then
//! drains it eagerly and stamps the arrival with the TSC. The model transport knows each
//! message's arrival time in virtual time and its sender's NIC schedule, so emulation over it
//! is exact, which is what lets the knob arithmetic be checked against known answers. A trait
//! of this crate rather than of the transport crate, so no realization needs to change for it.

use commperf_transport::sys::model::ModelEndpoint;
use commperf_transport::sys::shm::ShmEndpoint;
use commperf_transport::sys::socket::StreamEndpoint;
use commperf_transport::sys::uring::UringEndpoint;
use commperf_transport::{Endpoint, Readiness, TransportError};

/// Capability: how an endpoint reports arrivals to the emulation above it.
pub trait Probe: Endpoint {
    /// Whether a message has (begun to) arrive, without waiting.
    fn message_waiting(&mut self) -> Result<bool, TransportError>;

    /// Whether the peer is still there (for a receiver polling [`Probe::message_waiting`]).
    fn still_alive(&self) -> Result<(), TransportError> {
        Ok(())
    }

    /// Whether this endpoint keeps virtual time and reports arrivals exactly; the methods below
    /// are used only when it does.
    fn exact_arrivals(&self) -> bool {
        false
    }

    /// The next message's arrival time (ns, on the endpoint's timer) and length, waiting for it.
    fn next_arrival(&mut self) -> Result<(f64, usize), TransportError> {
        Err(TransportError::Protocol {
            peer: self.info().peer.clone(),
            what: "this transport does not report arrival times".into(),
        })
    }

    /// Moves the next message's arrival later by `ns`.
    fn defer_next_arrival(&mut self, _ns: f64) -> Result<(), TransportError> {
        Ok(())
    }

    /// When the transport's own NIC can start the next send (ns, on the endpoint's timer).
    fn nic_free_ns(&self) -> f64 {
        0.0
    }
}

macro_rules! by_readiness {
    ($($t:ty),+) => {$(
        impl Probe for $t {
            #[inline]
            fn message_waiting(&mut self) -> Result<bool, TransportError> {
                self.readable_now()
            }
            fn still_alive(&self) -> Result<(), TransportError> {
                self.check_alive()
            }
        }
    )+};
}

by_readiness!(ShmEndpoint);

impl<S> Probe for StreamEndpoint<S> {
    #[inline]
    fn message_waiting(&mut self) -> Result<bool, TransportError> {
        self.readable_now()
    }
}

impl<S> Probe for UringEndpoint<S> {
    #[inline]
    fn message_waiting(&mut self) -> Result<bool, TransportError> {
        self.readable_now()
    }
}

impl Probe for ModelEndpoint {
    fn message_waiting(&mut self) -> Result<bool, TransportError> {
        // Virtual time: a message the peer has sent is there (the exact path never asks).
        Ok(true)
    }
    fn exact_arrivals(&self) -> bool {
        true
    }
    fn next_arrival(&mut self) -> Result<(f64, usize), TransportError> {
        ModelEndpoint::next_arrival(self)
    }
    fn defer_next_arrival(&mut self, ns: f64) -> Result<(), TransportError> {
        ModelEndpoint::defer_next_arrival(self, ns)
    }
    fn nic_free_ns(&self) -> f64 {
        ModelEndpoint::nic_free_ns(self)
    }
}

/// Forwarding impls, as for [`Endpoint`]: a caller that owns its endpoint (the CLI keeps one
/// connection for a whole calibration) emulates over a borrow, one setting after another.
macro_rules! forward_probe {
    ($($wrapper:ty),+) => {$(
        impl<P: Probe + ?Sized> Probe for $wrapper {
            fn message_waiting(&mut self) -> Result<bool, TransportError> {
                (**self).message_waiting()
            }
            fn still_alive(&self) -> Result<(), TransportError> {
                (**self).still_alive()
            }
            fn exact_arrivals(&self) -> bool {
                (**self).exact_arrivals()
            }
            fn next_arrival(&mut self) -> Result<(f64, usize), TransportError> {
                (**self).next_arrival()
            }
            fn defer_next_arrival(&mut self, ns: f64) -> Result<(), TransportError> {
                (**self).defer_next_arrival(ns)
            }
            fn nic_free_ns(&self) -> f64 {
                (**self).nic_free_ns()
            }
        }
    )+};
}

forward_probe!(Box<P>, &mut P);
