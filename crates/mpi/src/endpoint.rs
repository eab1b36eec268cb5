//! MPI as a realization of commperf's [`Endpoint`]: the copying `send`/`recv` are MPI_Send and
//! MPI_Recv on the caller's buffer, so the generic loops (ping-pong with validation, the PRTT
//! rounds of the LogGP method, the rotating buffers of bufmgmt) run at the MPI layer with
//! exactly the calls a hand-written MPI benchmark makes, and the same methodology as every
//! other transport: a layer comparison then compares layers, not two different harnesses.
//!
//! The lending pair (`send_with`/`recv_with`) goes through a staging buffer: MPI does not lend
//! its memory. Nothing in the timed MPI loops uses it.

use crate::raw::{any_tag, Comm, MpiCallError};
use commperf_core::{Mode, TransportKind};
use commperf_transport::{
    Endpoint, EndpointInfo, Fragment, RecvInfo, Tag, TransportError, VectoredSend,
};

/// The largest tag every MPI library accepts (MPI_TAG_UB is at least this).
const TAG_UB: Tag = 32767;

/// One end of an MPI pair.
#[derive(Debug)]
pub struct MpiEndpoint {
    comm: Comm,
    peer: i32,
    info: EndpointInfo,
    stage: Vec<u8>,
    nonblocking: bool,
}

/// An MPI call's failure as the transport error the generic loops report.
pub(crate) fn transport_error(e: MpiCallError) -> TransportError {
    TransportError::io(e.call, std::io::Error::other(e.text))
}

impl MpiEndpoint {
    /// The endpoint to rank `peer` of `comm`, carrying at most `max_message` bytes.
    pub fn new(comm: Comm, peer: i32, peer_desc: String, max_message: usize) -> Self {
        MpiEndpoint {
            comm,
            peer,
            info: EndpointInfo {
                transport: TransportKind::Mpi,
                mode: Mode::Poll,
                peer: peer_desc,
                max_message,
            },
            stage: Vec::new(),
            nonblocking: false,
        }
    }

    /// Sends and receives (`send`, `recv`) as MPI_Isend / MPI_Irecv each followed by MPI_Wait,
    /// the calls nonblocking programs make, instead of MPI_Send / MPI_Recv: some libraries
    /// charge a request more than a blocking call (MPICH's shared memory: MPI_Isend 0.16 µs,
    /// MPI_Wait 0.61 µs in cg's monitored run, against Open MPI's 0.05 and 0.22).
    pub fn with_nonblocking(mut self, nonblocking: bool) -> Self {
        self.nonblocking = nonblocking;
        self
    }

    fn tag(&self, tag: Tag) -> Result<i32, TransportError> {
        if tag > TAG_UB {
            return Err(TransportError::Protocol {
                peer: self.info.peer.clone(),
                what: format!("tag {tag} above MPI's guaranteed maximum {TAG_UB}"),
            });
        }
        Ok(tag as i32)
    }

    fn check_len(&self, len: usize) -> Result<(), TransportError> {
        if len > self.info.max_message {
            return Err(TransportError::SendTooLarge {
                len,
                max: self.info.max_message,
            });
        }
        Ok(())
    }
}

impl Endpoint for MpiEndpoint {
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        mut fill: F,
    ) -> Result<(), TransportError> {
        self.check_len(len)?;
        let t = self.tag(tag)?;
        if self.stage.len() < len {
            self.stage.resize(len, 0);
        }
        fill(0, &mut self.stage[..len]);
        self.comm
            .send(self.peer, t, &self.stage[..len])
            .map_err(transport_error)
    }

    fn recv_with<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<RecvInfo, TransportError> {
        let p = self
            .comm
            .probe(self.peer, any_tag())
            .map_err(transport_error)?;
        if p.len > self.info.max_message {
            // Never allocated: a peer's announcement is bounded by the negotiated maximum.
            return Err(TransportError::TooLarge {
                peer: self.info.peer.clone(),
                len: p.len as u64,
                max: self.info.max_message,
            });
        }
        if self.stage.len() < p.len {
            self.stage.resize(p.len, 0);
        }
        let got = self
            .comm
            .recv(self.peer, p.tag, &mut self.stage[..p.len])
            .map_err(transport_error)?;
        sink(Fragment {
            tag: got.tag as Tag,
            total_len: got.len,
            offset: 0,
            data: &self.stage[..got.len],
        });
        Ok(RecvInfo {
            tag: got.tag as Tag,
            len: got.len,
        })
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        self.check_len(data.len())?;
        let t = self.tag(tag)?;
        let got = self
            .comm
            .sendrecv(self.peer, t, data, buf)
            .map_err(transport_error)?;
        Ok(RecvInfo {
            tag: got.tag as Tag,
            len: got.len,
        })
    }

    fn info(&self) -> &EndpointInfo {
        &self.info
    }

    #[inline]
    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.check_len(data.len())?;
        let t = self.tag(tag)?;
        if self.nonblocking {
            return self
                .comm
                .isend_wait(self.peer, t, data)
                .map_err(transport_error);
        }
        self.comm.send(self.peer, t, data).map_err(transport_error)
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        let got = if self.nonblocking {
            self.comm.irecv_wait_status(self.peer, any_tag(), buf)
        } else {
            self.comm.recv(self.peer, any_tag(), buf)
        }
        .map_err(transport_error)?;
        Ok(RecvInfo {
            tag: got.tag as Tag,
            len: got.len,
        })
    }
}

/// Gathered by packing into the staging buffer: MPI's own non-contiguous sends go through
/// derived datatypes, which the noncontig benchmark measures directly.
impl VectoredSend for MpiEndpoint {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.send_with(tag, len, |off, piece| {
            commperf_transport::gather(parts, off, piece)
        })
    }
}
