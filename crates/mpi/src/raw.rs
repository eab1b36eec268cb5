//! The MPI calls the timed loops make, as thin safe functions over the C API (`mpi::ffi`).
//!
//! rsmpi's safe layer allocates per operation (request collections, status vectors) and its
//! scopes add bookkeeping to every request; a loop that times MPI itself must make exactly the
//! calls OSU and NetPIPE make and nothing else. So the loops call these wrappers, each one MPI
//! call (or one fixed sequence of them) with the buffer borrowed for the whole call: every
//! non-blocking request posted here is completed before the function returns, which is what
//! makes them safe. The communicator's error handler is MPI_ERRORS_RETURN, so a failure comes
//! back as an [`MpiCallError`] instead of killing the job from inside the library.

use mpi::ffi;
use std::os::raw::{c_int, c_void};

/// An MPI call that returned an error code.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{call} failed: {text} (MPI error {code})")]
pub struct MpiCallError {
    pub call: &'static str,
    pub code: i32,
    pub text: String,
}

type R<T> = Result<T, MpiCallError>;

fn check(call: &'static str, code: c_int) -> R<()> {
    if code == ffi::MPI_SUCCESS as c_int {
        return Ok(());
    }
    let mut buf = vec![0 as std::os::raw::c_char; 512];
    let mut len: c_int = 0;
    // SAFETY: MPI_Error_string writes at most MPI_MAX_ERROR_STRING (256 in both libraries)
    // characters into our 512-byte buffer and their count into `len`.
    let text = unsafe {
        if ffi::MPI_Error_string(code, buf.as_mut_ptr(), &mut len) == 0 {
            let bytes: Vec<u8> = buf[..len.clamp(0, 512) as usize]
                .iter()
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            "unknown error".into()
        }
    };
    Err(MpiCallError { call, code, text })
}

/// Element counts are C ints: a message of more than 2^31 − 1 bytes is refused here, not
/// truncated (the suite's own bound, 1 GiB, is far below).
fn count(len: usize, call: &'static str) -> R<c_int> {
    c_int::try_from(len).map_err(|_| MpiCallError {
        call,
        code: -1,
        text: format!("{len} bytes exceed the largest count an MPI call takes"),
    })
}

fn byte() -> ffi::MPI_Datatype {
    // SAFETY: reading an immutable handle exported by rsmpi's C shim.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// `MPI_ANY_SOURCE`.
pub fn any_source() -> i32 {
    // SAFETY: reading an immutable constant exported by rsmpi's C shim.
    unsafe { ffi::RSMPI_ANY_SOURCE }
}

/// `MPI_ANY_TAG`.
pub fn any_tag() -> i32 {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_ANY_TAG }
}

fn zeroed_status() -> ffi::MPI_Status {
    // SAFETY: MPI_Status is a plain C struct of integers, valid when zeroed.
    unsafe { std::mem::zeroed() }
}

fn null_request() -> ffi::MPI_Request {
    // SAFETY: reading an immutable handle exported by rsmpi's C shim.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// A communicator handle. Not owned: the world (or a duplicate) outlives every use.
#[derive(Debug, Clone, Copy)]
pub struct Comm(pub(crate) ffi::MPI_Comm);

/// What a receive delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub source: i32,
    pub tag: i32,
    pub len: usize,
}

fn received(st: &ffi::MPI_Status, call: &'static str) -> R<Received> {
    let mut n: c_int = 0;
    // SAFETY: `st` was filled by a completed receive; MPI_Get_count reads it.
    check(call, unsafe { ffi::MPI_Get_count(st, byte(), &mut n) })?;
    Ok(Received {
        source: st.MPI_SOURCE,
        tag: st.MPI_TAG,
        len: n.max(0) as usize,
    })
}

impl Comm {
    /// Makes errors on this communicator return codes instead of aborting the job.
    pub fn errors_return(&self) -> R<()> {
        // SAFETY: a valid communicator and the predefined handler.
        check("MPI_Comm_set_errhandler", unsafe {
            ffi::MPI_Comm_set_errhandler(self.0, ffi::RSMPI_ERRORS_RETURN)
        })
    }

    /// MPI_Send of `buf` as bytes.
    #[inline]
    pub fn send(&self, dest: i32, tag: i32, buf: &[u8]) -> R<()> {
        let n = count(buf.len(), "MPI_Send")?;
        // SAFETY: `buf` is valid for reading `n` bytes for the whole blocking call.
        check("MPI_Send", unsafe {
            ffi::MPI_Send(buf.as_ptr().cast(), n, byte(), dest, tag, self.0)
        })
    }

    /// MPI_Recv into `buf`, the status written to `st` (or MPI_STATUS_IGNORE).
    ///
    /// # Safety
    /// `st` is MPI_STATUS_IGNORE or points to a status the caller owns.
    #[inline]
    unsafe fn recv_status(
        &self,
        source: i32,
        tag: i32,
        buf: &mut [u8],
        st: *mut ffi::MPI_Status,
    ) -> R<()> {
        let n = count(buf.len(), "MPI_Recv")?;
        // SAFETY: `buf` is valid for writing `n` bytes for the whole blocking call; `st` as the
        // caller promised.
        check("MPI_Recv", unsafe {
            ffi::MPI_Recv(buf.as_mut_ptr().cast(), n, byte(), source, tag, self.0, st)
        })
    }

    /// MPI_Recv into `buf` (a longer message is an MPI_ERR_TRUNCATE error).
    #[inline]
    pub fn recv(&self, source: i32, tag: i32, buf: &mut [u8]) -> R<Received> {
        let mut st = zeroed_status();
        // SAFETY: `st` is ours.
        unsafe { self.recv_status(source, tag, buf, &mut st) }?;
        received(&st, "MPI_Recv")
    }

    /// MPI_Recv into `buf` without a status (MPI_STATUS_IGNORE), as a benchmark loop that
    /// knows the length it expects calls it: no MPI_Get_count after every receive.
    #[inline]
    pub fn recv_into(&self, source: i32, tag: i32, buf: &mut [u8]) -> R<()> {
        // SAFETY: MPI's "ignore" sentinel.
        unsafe { self.recv_status(source, tag, buf, ffi::RSMPI_STATUS_IGNORE) }
    }

    /// MPI_Probe: waits for a message and says where from and how long it is.
    pub fn probe(&self, source: i32, tag: i32) -> R<Received> {
        let mut st = zeroed_status();
        // SAFETY: a valid communicator; `st` is ours.
        check("MPI_Probe", unsafe {
            ffi::MPI_Probe(source, tag, self.0, &mut st)
        })?;
        received(&st, "MPI_Probe")
    }

    /// MPI_Sendrecv: `data` to `peer` and one message from `peer` into `buf`, together.
    pub fn sendrecv(&self, peer: i32, tag: i32, data: &[u8], buf: &mut [u8]) -> R<Received> {
        let (ns, nr) = (
            count(data.len(), "MPI_Sendrecv")?,
            count(buf.len(), "MPI_Sendrecv")?,
        );
        let mut st = zeroed_status();
        // SAFETY: both buffers are valid for the whole blocking call and do not overlap
        // (`&[u8]` and `&mut [u8]` cannot).
        check("MPI_Sendrecv", unsafe {
            ffi::MPI_Sendrecv(
                data.as_ptr().cast(),
                ns,
                byte(),
                peer,
                tag,
                buf.as_mut_ptr().cast(),
                nr,
                byte(),
                peer,
                any_tag(),
                self.0,
                &mut st,
            )
        })?;
        received(&st, "MPI_Sendrecv")
    }

    /// Posts MPI_Irecv into `buf` and lets `complete` finish the request.
    ///
    /// # Safety
    /// `complete` must leave the request completed (or freed) when it returns, error or not:
    /// `buf` is only borrowed until then.
    #[inline]
    unsafe fn irecv_then(
        &self,
        source: i32,
        tag: i32,
        buf: &mut [u8],
        complete: impl FnOnce(&mut ffi::MPI_Request) -> R<()>,
    ) -> R<()> {
        let n = count(buf.len(), "MPI_Irecv")?;
        let mut req = null_request();
        // SAFETY: `buf` is valid for writing `n` bytes and stays borrowed until `complete`
        // has completed the request (the caller's promise).
        let rc = unsafe {
            ffi::MPI_Irecv(
                buf.as_mut_ptr().cast(),
                n,
                byte(),
                source,
                tag,
                self.0,
                &mut req,
            )
        };
        check("MPI_Irecv", rc)?;
        complete(&mut req)
    }

    /// MPI_Irecv, then MPI_Wait: completion left to the library's blocking wait.
    #[inline]
    pub fn irecv_wait(&self, source: i32, tag: i32, buf: &mut [u8]) -> R<()> {
        // SAFETY: MPI_Wait completes the request before returning, on success or error.
        unsafe {
            self.irecv_then(source, tag, buf, |req| {
                check("MPI_Wait", ffi::MPI_Wait(req, ffi::RSMPI_STATUS_IGNORE))
            })
        }
    }

    /// MPI_Irecv, then MPI_Wait, with the status: a receive as nonblocking programs make it.
    #[inline]
    pub fn irecv_wait_status(&self, source: i32, tag: i32, buf: &mut [u8]) -> R<Received> {
        let mut st = zeroed_status();
        // SAFETY: MPI_Wait completes the request before returning, on success or error; `st`
        // is ours.
        unsafe {
            self.irecv_then(source, tag, buf, |req| {
                check("MPI_Wait", ffi::MPI_Wait(req, &mut st))
            })
        }?;
        received(&st, "MPI_Wait")
    }

    /// MPI_Isend, then MPI_Wait: a send as nonblocking programs make it.
    #[inline]
    pub fn isend_wait(&self, dest: i32, tag: i32, buf: &[u8]) -> R<()> {
        let n = count(buf.len(), "MPI_Isend")?;
        let mut req = null_request();
        // SAFETY: `buf` is valid for reading `n` bytes and stays borrowed until MPI_Wait below
        // has completed the request.
        let rc = unsafe {
            ffi::MPI_Isend(
                buf.as_ptr() as *const c_void,
                n,
                byte(),
                dest,
                tag,
                self.0,
                &mut req,
            )
        };
        check("MPI_Isend", rc)?;
        // SAFETY: the request MPI_Isend returned; MPI_Wait completes it, on success or error.
        check("MPI_Wait", unsafe {
            ffi::MPI_Wait(&mut req, ffi::RSMPI_STATUS_IGNORE)
        })
    }

    /// MPI_Irecv, then MPI_Test until it completes: completion detected by polling.
    #[inline]
    pub fn irecv_test(&self, source: i32, tag: i32, buf: &mut [u8]) -> R<()> {
        // SAFETY: the loop ends only when MPI_Test reports the request complete; on an error
        // MPI_Wait completes it before the error is returned.
        unsafe {
            self.irecv_then(source, tag, buf, |req| {
                let mut done: c_int = 0;
                while done == 0 {
                    let rc = ffi::MPI_Test(req, &mut done, ffi::RSMPI_STATUS_IGNORE);
                    if rc != 0 {
                        ffi::MPI_Wait(req, ffi::RSMPI_STATUS_IGNORE);
                        return check("MPI_Test", rc);
                    }
                }
                Ok(())
            })
        }
    }

    /// One message of the derived datatype `dt` from `base` (MPI packs it, or sends it
    /// gathered, as the library chooses).
    pub fn send_typed(&self, dest: i32, tag: i32, base: &[u8], dt: &Datatype) -> R<()> {
        dt.fits(base.len(), "MPI_Send")?;
        // SAFETY: `fits` checked that the type's extent lies inside `base`, which stays
        // borrowed for the whole blocking call.
        check("MPI_Send", unsafe {
            ffi::MPI_Send(base.as_ptr().cast(), 1, dt.raw, dest, tag, self.0)
        })
    }

    /// Receives one message into the layout `dt` describes inside `base`.
    pub fn recv_typed(&self, source: i32, tag: i32, base: &mut [u8], dt: &Datatype) -> R<()> {
        dt.fits(base.len(), "MPI_Recv")?;
        let mut st = zeroed_status();
        // SAFETY: `fits` checked the extent; `base` stays mutably borrowed for the call.
        check("MPI_Recv", unsafe {
            ffi::MPI_Recv(
                base.as_mut_ptr().cast(),
                1,
                dt.raw,
                source,
                tag,
                self.0,
                &mut st,
            )
        })
    }
}

/// A window of non-blocking operations with its request array allocated once, so the timed
/// loops post and complete windows without allocating.
#[derive(Debug)]
pub struct Window {
    reqs: Vec<ffi::MPI_Request>,
}

impl Window {
    /// Room for `n` requests in flight.
    pub fn new(n: usize) -> Self {
        Window {
            reqs: vec![null_request(); n],
        }
    }

    /// Posts the requests `post(i, &mut request)` for i in 0..n, then MPI_Waitall. If a post
    /// fails, the requests already posted are completed before returning the error.
    ///
    /// # Safety
    /// Every buffer a posted request uses must stay valid (and, for receives, unaliased) until
    /// this function returns.
    unsafe fn run(
        &mut self,
        n: usize,
        mut post: impl FnMut(usize, *mut ffi::MPI_Request) -> (c_int, &'static str),
    ) -> R<()> {
        assert!(
            n <= self.reqs.len(),
            "window of {n} in room for {}",
            self.reqs.len()
        );
        for i in 0..n {
            let (rc, call) = post(i, &mut self.reqs[i]);
            if rc != 0 {
                // SAFETY: the first i requests were posted; completing them ends their use of
                // the buffers before the caller's borrows end.
                unsafe {
                    ffi::MPI_Waitall(
                        i as c_int,
                        self.reqs.as_mut_ptr(),
                        ffi::RSMPI_STATUSES_IGNORE,
                    )
                };
                return check(call, rc);
            }
        }
        // SAFETY: n requests were posted into the array we own.
        check("MPI_Waitall", unsafe {
            ffi::MPI_Waitall(
                n as c_int,
                self.reqs.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            )
        })
    }

    /// `w` MPI_Isend of `buf` to `dest`, then MPI_Waitall (osu_bw's sender).
    #[inline]
    pub fn send_all(&mut self, comm: Comm, dest: i32, tag: i32, buf: &[u8], w: usize) -> R<()> {
        let n = count(buf.len(), "MPI_Isend")?;
        let p = buf.as_ptr() as *const c_void;
        // SAFETY: `buf` is borrowed for the whole call, which completes every request.
        unsafe {
            self.run(w, |_, req| {
                (
                    ffi::MPI_Isend(p, n, byte(), dest, tag, comm.0, req),
                    "MPI_Isend",
                )
            })
        }
    }

    /// `w` MPI_Irecv from `source`, into consecutive `slot`-byte slots of `buf` (slot 0 for
    /// every receive when `slot` is 0, as osu_bw does), then MPI_Waitall.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn recv_all(
        &mut self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: &mut [u8],
        len: usize,
        slot: usize,
        w: usize,
    ) -> R<()> {
        let n = count(len, "MPI_Irecv")?;
        assert!(
            slot * (w.max(1) - 1) + len <= buf.len(),
            "receive slots outside the buffer"
        );
        let p = buf.as_mut_ptr();
        // SAFETY: every slot lies inside `buf` (asserted), which is mutably borrowed for the
        // whole call; the call completes every request.
        unsafe {
            self.run(w, |i, req| {
                (
                    ffi::MPI_Irecv(p.add(i * slot).cast(), n, byte(), source, tag, comm.0, req),
                    "MPI_Irecv",
                )
            })
        }
    }

    /// osu_bibw's step: `w` MPI_Irecv into slots of `rbuf` and `w` MPI_Isend of `sbuf`, then
    /// one MPI_Waitall over all 2w.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn exchange_all(
        &mut self,
        comm: Comm,
        peer: i32,
        tag: i32,
        sbuf: &[u8],
        rbuf: &mut [u8],
        slot: usize,
        w: usize,
    ) -> R<()> {
        let n = count(sbuf.len(), "MPI_Isend")?;
        assert!(
            slot * (w.max(1) - 1) + sbuf.len() <= rbuf.len(),
            "receive slots outside the buffer"
        );
        let (sp, rp) = (sbuf.as_ptr() as *const c_void, rbuf.as_mut_ptr());
        // SAFETY: as in `send_all` and `recv_all`; the two borrows cannot overlap.
        unsafe {
            self.run(2 * w, |i, req| {
                if i < w {
                    (
                        ffi::MPI_Irecv(rp.add(i * slot).cast(), n, byte(), peer, tag, comm.0, req),
                        "MPI_Irecv",
                    )
                } else {
                    (
                        ffi::MPI_Isend(sp, n, byte(), peer, tag, comm.0, req),
                        "MPI_Isend",
                    )
                }
            })
        }
    }
}

impl Window {
    /// One message of `out` to each of `peers` and one from each into consecutive
    /// `out.len()`-byte slots of `inbox`, all in flight together, then MPI_Waitall.
    pub fn scatter_gather(
        &mut self,
        comm: Comm,
        peers: &[i32],
        tag: i32,
        out: &[u8],
        inbox: &mut [u8],
    ) -> R<()> {
        let (len, k) = (out.len(), peers.len());
        let n = count(len, "MPI_Isend")?;
        assert!(len * k <= inbox.len(), "receive slots outside the buffer");
        if 2 * k > self.reqs.len() {
            self.reqs.resize(2 * k, null_request());
        }
        let (sp, rp) = (out.as_ptr() as *const c_void, inbox.as_mut_ptr());
        // SAFETY: every slot lies inside `inbox` (asserted); both buffers stay borrowed for the
        // whole call, which completes every request.
        unsafe {
            self.run(2 * k, |i, req| {
                if i < k {
                    (
                        ffi::MPI_Irecv(
                            rp.add(i * len).cast(),
                            n,
                            byte(),
                            peers[i],
                            tag,
                            comm.0,
                            req,
                        ),
                        "MPI_Irecv",
                    )
                } else {
                    (
                        ffi::MPI_Isend(sp, n, byte(), peers[i - k], tag, comm.0, req),
                        "MPI_Isend",
                    )
                }
            })
        }
    }
}

/// A committed derived datatype describing scattered byte segments (freed on drop).
#[derive(Debug)]
pub struct Datatype {
    raw: ffi::MPI_Datatype,
    /// One past the last byte the layout touches, from the start of the buffer.
    extent: usize,
    /// Bytes the layout carries.
    pub size: usize,
    /// `vector` or `indexed`: which constructor described the layout.
    pub kind: &'static str,
}

impl Datatype {
    /// The layout of `ranges` (byte ranges of one buffer, in order): MPI_Type_vector when the
    /// segments have one length and one stride (every power-of-two size and segment count),
    /// MPI_Type_indexed otherwise.
    pub fn segments(ranges: &[std::ops::Range<usize>]) -> R<Datatype> {
        let call = "MPI_Type_vector";
        let first = ranges.first().ok_or(MpiCallError {
            call,
            code: -1,
            text: "no segments".into(),
        })?;
        let len = first.len();
        let stride = ranges.get(1).map_or(len, |r| r.start - first.start);
        let uniform = first.start == 0
            && ranges
                .iter()
                .enumerate()
                .all(|(i, r)| r.len() == len && r.start == i * stride);
        let mut raw = byte();
        let kind = if uniform {
            let (k, l, s) = (
                count(ranges.len(), call)?,
                count(len, call)?,
                count(stride, call)?,
            );
            // SAFETY: plain integers in, a new handle out into `raw`.
            check(call, unsafe {
                ffi::MPI_Type_vector(k, l, s, byte(), &mut raw)
            })?;
            "vector"
        } else {
            let call = "MPI_Type_indexed";
            let lens: Vec<c_int> = ranges
                .iter()
                .map(|r| count(r.len(), call))
                .collect::<R<_>>()?;
            let displs: Vec<c_int> = ranges
                .iter()
                .map(|r| count(r.start, call))
                .collect::<R<_>>()?;
            // SAFETY: the two arrays hold `ranges.len()` entries each and outlive the call.
            check(call, unsafe {
                ffi::MPI_Type_indexed(
                    count(ranges.len(), call)?,
                    lens.as_ptr(),
                    displs.as_ptr(),
                    byte(),
                    &mut raw,
                )
            })?;
            "indexed"
        };
        let mut dt = Datatype {
            raw,
            extent: ranges.iter().map(|r| r.end).max().unwrap_or(0),
            size: ranges.iter().map(|r| r.len()).sum(),
            kind,
        };
        // SAFETY: `dt.raw` is the handle just created.
        check("MPI_Type_commit", unsafe {
            ffi::MPI_Type_commit(&mut dt.raw)
        })?;
        Ok(dt)
    }

    fn fits(&self, len: usize, call: &'static str) -> R<()> {
        if self.extent <= len {
            Ok(())
        } else {
            Err(MpiCallError {
                call,
                code: -1,
                text: format!(
                    "a layout reaching byte {} in a {len}-byte buffer",
                    self.extent
                ),
            })
        }
    }
}

impl Drop for Datatype {
    fn drop(&mut self) {
        // SAFETY: the handle was created and committed by `segments` and is freed once.
        unsafe { ffi::MPI_Type_free(&mut self.raw) };
    }
}
