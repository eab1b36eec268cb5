//! What [`crate::Emulated`] needs to know of the endpoint below it beyond [`Endpoint`].
//!
//! A real transport only tells whether a message is waiting ([`Readiness`]): the decorator then
//! drains it eagerly and stamps the arrival with the TSC. The model transport knows each
//! message's arrival time in virtual time and its sender's NIC schedule, so emulation over it
//! is exact, which is what lets the knob arithmetic be checked against known answers. A trait
//! of this crate rather than of the transport crate, so no realization needs to change for it.
//!
//! A receiver sees a message only when it enters the decorator: one that arrived while the
//! program computed would be dated late and held ΔL past when it should be delivered. Where the
//! transport's header has room (shm's side band), the sender's TSC stamp travels with the
//! message ([`Probe::send_stamped`]), and the decorator dates the arrival from it.

use commperf_transport::sys::model::ModelEndpoint;
use commperf_transport::sys::shm::ShmEndpoint;
use commperf_transport::sys::socket::StreamEndpoint;
use commperf_transport::sys::uring::UringEndpoint;
use commperf_transport::{Endpoint, Fragment, Readiness, RecvInfo, SideBand, Tag, TransportError};

/// Capability: how an endpoint reports arrivals to the emulation above it.
pub trait Probe: Endpoint {
    /// Whether a message has (begun to) arrive, without waiting.
    fn message_waiting(&mut self) -> Result<bool, TransportError>;

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

    /// [`Endpoint::send_with`] with the sender's clock stamp beside the message, where the
    /// transport's own header has room for one (shm's side band); elsewhere a plain send.
    /// `stamp` is taken just before the hand-over.
    fn send_stamped<F: FnMut(usize, &mut [u8]), S: FnOnce() -> u64>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
        stamp: S,
    ) -> Result<(), TransportError> {
        let _ = stamp;
        self.send_with(tag, len, fill)
    }

    /// [`Endpoint::recv_with`], with the sender's stamp if it sent one.
    fn recv_stamped<F: FnMut(Fragment<'_>)>(
        &mut self,
        sink: F,
    ) -> Result<(RecvInfo, Option<u64>), TransportError> {
        self.recv_with(sink).map(|i| (i, None))
    }
}

/// Marks a side value as an emulation stamp (a monitor below might send its own).
const STAMP_MARK: u64 = 0x454d_554c_5354_414d; // "EMULSTAM"

impl Probe for ShmEndpoint {
    #[inline]
    fn message_waiting(&mut self) -> Result<bool, TransportError> {
        self.readable_now()
    }
    #[inline]
    fn send_stamped<F: FnMut(usize, &mut [u8]), S: FnOnce() -> u64>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
        stamp: S,
    ) -> Result<(), TransportError> {
        self.send_with_side(tag, len, fill, || [stamp(), STAMP_MARK, 0])
    }
    #[inline]
    fn recv_stamped<F: FnMut(Fragment<'_>)>(
        &mut self,
        sink: F,
    ) -> Result<(RecvInfo, Option<u64>), TransportError> {
        let (info, side) = self.recv_with_side(sink)?;
        Ok((info, side.filter(|s| s[1] == STAMP_MARK).map(|s| s[0])))
    }
}

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
            fn send_stamped<F: FnMut(usize, &mut [u8]), S: FnOnce() -> u64>(
                &mut self,
                tag: Tag,
                len: usize,
                fill: F,
                stamp: S,
            ) -> Result<(), TransportError> {
                (**self).send_stamped(tag, len, fill, stamp)
            }
            fn recv_stamped<F: FnMut(Fragment<'_>)>(
                &mut self,
                sink: F,
            ) -> Result<(RecvInfo, Option<u64>), TransportError> {
                (**self).recv_stamped(sink)
            }
        }
    )+};
}

forward_probe!(Box<P>, &mut P);
